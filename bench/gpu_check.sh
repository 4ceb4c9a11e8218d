#!/usr/bin/env bash
# The real-CuPy path, end to end, on a machine with an NVIDIA GPU, in a few minutes:
#
#   1. CuPy's CUDA build is installed (from PyPI, or offline from a folder of wheels);
#   2. the reference DeZero's tests run with the real GPU as their device (DEZERO_TEST_DEVICE=cuda),
#      and the rows of the simulated device's semantics table run against real CuPy: each row
#      that fails there is a place where the simulation and the device differ;
#   3. the reference and three device fault variants are graded at step 52 with --device cuda
#      and with --device sim, and the failing checks of the two are compared.
#
# usage: bench/gpu_check.sh [OUT_DIR] [WHEEL_DIR]
#   OUT_DIR    where the logs and scorecards go (default: gpu-check/)
#   WHEEL_DIR  install CuPy (and fastrlock) from these wheels, without network
# Environment: CUPY_PACKAGE (default cupy-cuda13x, the CUDA 13 build; cupy-cuda12x for CUDA 12).
# Exit status: 0 when every part ran and the verdicts agree with the simulated device's.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-gpu-check}
WHEELS=${2:-}
mkdir -p "$OUT"
status=0
started=$(date +%s)
step() { echo; echo "== $* ($(( $(date +%s) - started )) s)"; }

step "install"
if [ ! -x .venv/bin/python ]; then python3 -m venv .venv || exit 1; fi
.venv/bin/pip install -q -e . || exit 1
if [ -n "$WHEELS" ]; then
    .venv/bin/pip install -q --no-index --find-links "$WHEELS" "${CUPY_PACKAGE:-cupy-cuda13x}" || exit 1
else
    .venv/bin/pip install -q "${CUPY_PACKAGE:-cupy-cuda13x}" || exit 1
fi
.venv/bin/python - <<'PY' | tee "$OUT/device.txt" || exit 1
import cupy
x = cupy.arange(6, dtype=cupy.float32).reshape(2, 3)
props = cupy.cuda.runtime.getDeviceProperties(0)
print('cupy', cupy.__version__, '| CUDA runtime', cupy.cuda.runtime.runtimeGetVersion(),
      '| devices', cupy.cuda.runtime.getDeviceCount(), '|', props['name'].decode())
print('a kernel ran:', float((x * 2).sum()) == 30.0)
PY

step "reference tests on the real device"
DEZERO_TEST_DEVICE=cuda .venv/bin/python -m pytest tests/reference -q -k cuda \
    2>&1 | tail -n 25 | tee "$OUT/reference-tests.txt"
[ "${PIPESTATUS[0]}" -eq 0 ] || status=1

step "the simulated device's semantics rows against real CuPy"
DEZERO_TEST_DEVICE=cuda .venv/bin/python -m pytest tests/device/test_semantics.py -q -k row \
    -rfE 2>&1 | tail -n 40 | tee "$OUT/semantics-rows.txt"
[ "${PIPESTATUS[0]}" -eq 0 ] || status=1

step "grading at step 52: --device cuda against --device sim"
for fault in "" gpu-layer-shallow gpu-grad-on-host gpu-function-hardcodes-numpy; do
    name=${fault:-reference}
    sub=reference
    if [ -n "$fault" ]; then
        rm -rf "$OUT/$name"
        .venv/bin/dezero-grade inject reference --step 52 --fault "$fault" --out "$OUT/$name" \
            >/dev/null || { status=1; continue; }
        sub="$OUT/$name"
    fi
    for device in cuda sim; do
        .venv/bin/dezero-grade check "$sub" --step 52 --device "$device" --seed 52 \
            --json "$OUT/$name.$device.json" >"$OUT/$name.$device.txt" 2>&1
        head -n 2 "$OUT/$name.$device.txt" | tail -n 1 | sed "s/^/  $name on $device: /"
    done
done
.venv/bin/python - "$OUT" <<'PY' || status=1
import json, sys
from pathlib import Path
out, differ = Path(sys.argv[1]), 0
for cuda in sorted(out.glob('*.cuda.json')):
    sim = cuda.with_name(cuda.name.replace('.cuda.', '.sim.'))
    a, b = (json.loads(p.read_text()) for p in (cuda, sim))
    def failing(doc):
        return {c['id']: c['status'] for c in doc['checks'] if c['status'] in ('failed', 'error')}
    fa, fb = failing(a), failing(b)
    same = a['verdict'] == b['verdict'] and fa == fb
    differ += not same
    print('  {:32} cuda {:8} sim {:8} {}'.format(cuda.name.split('.')[0], a['verdict'],
                                                b['verdict'], 'same' if same else 'DIFFER'))
    for cid in sorted(set(fa) | set(fb)):
        if fa.get(cid) != fb.get(cid):
            print('      {}: cuda {} / sim {}'.format(cid, fa.get(cid, 'passed'), fb.get(cid, 'passed')))
sys.exit(1 if differ else 0)
PY

step "done: status $status"
exit $status
