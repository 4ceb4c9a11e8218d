"""Generators of hostile and broken submissions for the corpus in ``test_hostile.py``.

Every submission is written by code, into a folder the test gives: a copy of the reference
DeZero (optionally with one fault injected through ``dezero_grader.catalogue.faults.inject``) plus a few lines of
misbehaviour appended to its ``dezero/__init__.py``, or a broken package, or a crafted zip. No
binary blob is committed. Processes a submission starts carry a unique marker in their command
line, so the tests can prove that none of them outlives grading.
"""
import os
import random
import shutil
import stat
import textwrap
import time
import zipfile
from pathlib import Path

from dezero_grader import reference
from dezero_grader.catalogue import assignments, faults
from dezero_grader.intake import load

STEP = 52
LAYER_FAULT = 'gpu-layer-shallow'        # caught by step52/device.layer: reject
MATMUL_FAULT = 'matmul-grad-transpose'   # caught by step41/matmul (regression): rollback


# -- bases ----------------------------------------------------------------------------------------

def reference_copy(dest: Path) -> Path:
    """A copy of the reference package: a correct submission."""
    dest.mkdir(parents=True)
    shutil.copytree(reference.ROOT / 'dezero', dest / 'dezero',
                    ignore=shutil.ignore_patterns('__pycache__', '*.pyc'))
    return dest


def faulty_copy(dest: Path, fault_id: str) -> Path:
    """The reference with one real bug from the fault catalogue."""
    fault = {f.id: f for f in assignments.fault_catalogue(assignments.load(STEP))}[fault_id]
    base = reference_copy(dest.parent / ('.base-' + dest.name))
    out = faults.inject(base, dest, fault, load.find_entry(base, STEP))
    shutil.rmtree(base)
    return out


def append_to_init(sub: Path, code: str) -> Path:
    init = sub / 'dezero' / '__init__.py'
    init.write_text(init.read_text(encoding='utf-8') + '\n\n# --- hostile addition ---\n'
                    + textwrap.dedent(code), encoding='utf-8')
    return sub


def in_backward(sub: Path, body: str) -> Path:
    """Make every ``Variable.backward`` run ``body`` (misbehaviour inside a check)."""
    return append_to_init(sub, (
        'import dezero as _dz\n\n\n'
        'def _hostile_backward(self, *args, **kwargs):\n'
        '{}\n\n'
        '_dz.Variable.backward = _hostile_backward\n').format(
            textwrap.indent(textwrap.dedent(body).strip('\n'), '    ')))


# -- processes that try to outlive the worker ------------------------------------------------------

def marker() -> str:
    return 'dezero-hostile-{}-{}'.format(os.getpid(), time.monotonic_ns())


def survivors(mark: str, wait_s: float = 60.0) -> list:
    """Live (not zombie) processes whose command line holds ``mark``, once there are none or
    after ``wait_s`` (a limit that only a process that outlives its worker reaches; a loaded
    machine can take a while to deliver the kill)."""
    end = time.monotonic() + wait_s
    while True:
        found = []
        for name in os.listdir('/proc'):
            if not name.isdigit():
                continue
            try:
                with open('/proc/{}/cmdline'.format(name), 'rb') as f:
                    cmdline = f.read()
                with open('/proc/{}/stat'.format(name), 'rb') as f:
                    state = f.read().rsplit(b')', 1)[1].split()[0]
            except OSError:
                continue
            if mark.encode() in cmdline and state not in (b'Z', b'X'):
                found.append(int(name))
        if not found or time.monotonic() > end:
            return found
        time.sleep(0.05)


SPAWN_LINGERING = '''
import os as _os, subprocess as _sp, sys as _sys
_SLEEPER = "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(600)"
_DAEMON = (
    "import os, signal, sys, time\\n"
    "if os.fork(): os._exit(0)\\n"
    "os.setsid()\\n"
    "if os.fork(): os._exit(0)\\n"
    "signal.signal(signal.SIGTERM, signal.SIG_IGN)\\n"
    "time.sleep(600)\\n")
# a child in its own session that ignores SIGTERM, and a double-forked daemon
_sp.Popen([_sys.executable, "-c", _SLEEPER, {mark!r}], start_new_session=True)
_sp.Popen([_sys.executable, "-c", _DAEMON, {mark!r}]).wait()
'''


# -- zips -----------------------------------------------------------------------------------------

def zip_with(path: Path, entries) -> Path:
    """``entries``: (name, bytes) pairs, or (name, bytes, unix mode) for links and special files."""
    with zipfile.ZipFile(path, 'w', zipfile.ZIP_DEFLATED) as z:
        for entry in entries:
            name, data = entry[0], entry[1]
            info = zipfile.ZipInfo(name)
            info.compress_type = zipfile.ZIP_DEFLATED
            if len(entry) > 2:
                info.external_attr = entry[2] << 16
            z.writestr(info, data)
    return path


def zip_bomb(path: Path, megabytes: int = 20) -> Path:
    """One entry of zeros: megabytes of data in a few kilobytes (a ratio near 1000)."""
    with zipfile.ZipFile(path, 'w', zipfile.ZIP_DEFLATED) as z:
        z.writestr('dezero/__init__.py', 'x = 1\n')
        with z.open('dezero/data.bin', 'w', force_zip64=True) as f:
            block = b'\0' * 2**20
            for _ in range(megabytes):
                f.write(block)
    return path


def symlink_mode() -> int:
    return stat.S_IFLNK | 0o777


def garbage(n: int = 4096, seed: int = 7) -> bytes:
    return random.Random(seed).randbytes(n)


def with_faults(dest: Path, fault_ids, step: int = STEP) -> Path:
    """The reference with several real bugs of the catalogue at once, each applied through the
    public API as `dezero_grader.catalogue.faults.inject` applies one (a module per fault, called at import)."""
    catalogue = {f.id: f for f in assignments.fault_catalogue(assignments.load(step))}
    sub = reference_copy(dest)
    init = sub / 'dezero' / '__init__.py'
    text = init.read_text(encoding='utf-8').rstrip('\n') + '\n\n'
    for k, fault_id in enumerate(fault_ids):
        fault = catalogue[fault_id]
        (sub / 'dezero' / '_fault_{}.py'.format(k)).write_text(
            faults.source_of(fault.patch), encoding='utf-8')
        text += ('import dezero as _dz_variant\nfrom dezero._fault_{k} import {fn} as _dz_fault\n'
                 '_dz_fault(_dz_variant)\ndel _dz_variant, _dz_fault\n').format(
                     k=k, fn=faults.PATCHES[fault.patch].__name__)
    init.write_text(text, encoding='utf-8')
    return sub


# Rewrites the worker's answers from inside it: the worker runs as `__main__`, and its dispatch
# (`_handle`) is a module global the main loop looks up on every request. Drops what the
# gradient checks need from `fn.eval`, empties `graph.trace`'s gradients and adds an
# `unreferenced` section (judged on its own claims) to every other report.
DISPATCH_SHIM = '''
import json as _json, sys as _sys
_main = _sys.modules['__main__']
_real_handle = _main._handle
_CLAIM = {'why': 'graded on its own', 'gradients': [],
          'properties': [{'name': 'fine', 'ok': True, 'message': 'all is well'}]}


def _forging_handle(handlers, payload):
    answer = _real_handle(handlers, payload)
    try:
        request = _json.loads(payload.decode('utf-8'))
    except ValueError:
        return answer
    if not (isinstance(answer, dict) and answer.get('ok') and request.get('op') == 'probe'
            and isinstance(answer.get('result'), dict)):
        return answer
    report = answer['result']
    if request.get('scenario') == 'fn.eval':
        for key in ('grads', 'grad_info', 'zero_grads'):
            report.pop(key, None)
        report['points'] = []
    elif request.get('scenario') == 'graph.trace':
        report['grads'] = []
    else:
        report['unreferenced'] = dict(_CLAIM)
    return answer


_main._handle = _forging_handle
'''


# NumPy's comparisons and reductions and the builtins all/any, patched to answer "yes" to the
# grader's own code (any caller in a file under a `dezero_grader` folder) and truthfully to everyone
# else, so that the learner's own arithmetic is what it was: a worker that decided anything
# itself would now decide in the learner's favour. `ndarray.__eq__` cannot be replaced (NumPy's
# types are immutable); the attempt is made anyway.
LYING_COMPARISONS = '''
import builtins as _builtins
import os as _os
import sys as _sys
import numpy as _np


def _asked_by_the_grader():
    frame = _sys._getframe(2)
    return (_os.sep + 'dezero_grader' + _os.sep) in frame.f_code.co_filename


def _liar(real, yes):
    def answer(*args, **kwargs):
        return yes(*args, **kwargs) if _asked_by_the_grader() else real(*args, **kwargs)
    return answer


def _all_true(a, b, *args, **kwargs):
    return _np.ones(_np.broadcast(_np.asarray(a), _np.asarray(b)).shape, dtype=bool)


for _name in ('allclose', 'array_equal', 'array_equiv', 'all', 'any'):
    setattr(_np, _name, _liar(getattr(_np, _name), lambda *a, **k: True))
_np.isclose = _liar(_np.isclose, _all_true)
_builtins.all = _liar(_builtins.all, lambda *a, **k: True)
_builtins.any = _liar(_builtins.any, lambda *a, **k: True)
try:
    _np.ndarray.__eq__ = _liar(_np.ndarray.__eq__, _all_true)
except TypeError:
    pass
'''


def variant(dest: Path, step: int, fault_id: str, tail: str = '') -> Path:
    """The reference of `step` (its step file before step 23, else its package) with one fault
    of the catalogue injected, and `tail` appended to what is imported (the package's
    `__init__.py`, or the step file)."""
    from dezero_grader.proof import selftest
    fault = {f.id: f for f in assignments.fault_catalogue(assignments.load(step))}[fault_id]
    base = load.prepare(selftest.reference_source(step), step, dest.parent / ('.base-' + dest.name))
    out = faults.inject(base.root, dest, fault, base.entry)
    shutil.rmtree(base.root)
    if tail:
        target = out / base.entry.path
        if target.is_dir():
            target = target / '__init__.py'
        target.write_text(target.read_text(encoding='utf-8') + '\n\n' + textwrap.dedent(tail),
                          encoding='utf-8')
    return out
