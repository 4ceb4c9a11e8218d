"""Batch throughput: submissions graded per minute by `dezero-grade batch`, per --jobs.

Generates a class of step-N submissions — copies of the reference and single-fault variants
(each catalogued fault in turn, injected as `selftest` makes them) — then times a full batch of
it (a fresh output folder each time, so nothing is resumed) for each --jobs value, in the same
run, after one grading that warms the reference cache. With --subprocess it also times the
alternative the batch does not use, one `dezero-grade check --json` process per submission, to
show what the process pool saves. Figures are printed as rates and as ratios to the first
configuration; on a shared machine, read the ratios.

    python bench/bench_batch.py [--step 52] [--size 40] [--jobs 1 2] [--subprocess]
    python bench/bench_batch.py --sandbox bubblewrap basic --rounds 2   # the cost of bubblewrap

With several --sandbox values each configuration is timed in every round, in alternating order,
so that a machine whose load changes during the run weighs on both alike.
"""
import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from dezero_grader.catalogue import assignments, faults
from dezero_grader.intake import load
from dezero_grader.proof import selftest  # noqa: E402


def make_class(dest: Path, step: int, size: int, work: Path) -> dict:
    """`size` submissions in `dest`: a third reference copies, the rest fault variants."""
    dest.mkdir(parents=True)
    base = load.prepare(selftest.reference_source(step), step, work / 'base')
    catalogue = [f for f in assignments.fault_catalogue(assignments.load(step))]
    kinds = {'reference': 0, 'fault': 0}
    for i in range(size):
        if i % 3 == 0 or not catalogue:
            shutil.copytree(base.root, dest / 'learner-{:03d}'.format(i))
            kinds['reference'] += 1
        else:
            fault = catalogue[kinds['fault'] % len(catalogue)]
            faults.inject(base.root, dest / 'learner-{:03d}'.format(i), fault, base.entry)
            kinds['fault'] += 1
    return kinds


def _env():
    return dict(os.environ, PYTHONPATH=str(ROOT))


def time_batch(submissions: Path, step: int, jobs: int, out: Path, sandbox: str = 'auto') -> float:
    started = time.perf_counter()
    proc = subprocess.run([sys.executable, '-m', 'dezero_grader', 'batch', str(submissions), '--step',
                           str(step), '--out', str(out), '--jobs', str(jobs), '--sandbox', sandbox],
                          cwd=ROOT, env=_env(), capture_output=True, text=True)
    elapsed = time.perf_counter() - started
    if proc.returncode != 0:
        raise SystemExit('batch failed:\n' + proc.stdout + proc.stderr)
    return elapsed


def time_subprocesses(submissions: Path, step: int, jobs: int, out: Path) -> float:
    out.mkdir(parents=True)
    entries = sorted(submissions.iterdir())

    def one(path):
        subprocess.run([sys.executable, '-m', 'dezero_grader', 'check', str(path), '--step', str(step),
                        '--json', str(out / (path.name + '.json'))], cwd=ROOT, env=_env(),
                       capture_output=True)

    started = time.perf_counter()
    with ThreadPoolExecutor(jobs) as pool:
        list(pool.map(one, entries))
    return time.perf_counter() - started


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument('--step', type=int, default=52)
    p.add_argument('--size', type=int, default=40, help='submissions in the generated class')
    p.add_argument('--jobs', type=int, nargs='+', default=[1, 2])
    p.add_argument('--subprocess', action='store_true',
                   help='also time one `check` process per submission')
    p.add_argument('--sandbox', nargs='+', default=['auto'], choices=('auto', 'bubblewrap', 'basic'),
                   help='time the batch in each of these sandboxes')
    p.add_argument('--rounds', type=int, default=1, help='rounds of every configuration')
    args = p.parse_args()
    work = Path(tempfile.mkdtemp(prefix='dezero-bench-batch-'))
    try:
        kinds = make_class(work / 'class', args.step, args.size, work)
        print('class: {} submissions of step {} ({} reference copies, {} fault variants); '
              '{} CPUs, load average {:.1f}'.format(args.size, args.step, kinds['reference'],
                                                    kinds['fault'], os.cpu_count(),
                                                    os.getloadavg()[0]))
        subprocess.run([sys.executable, '-m', 'dezero_grader', 'check',
                        str(selftest.reference_source(args.step)), '--step', str(args.step)],
                       cwd=ROOT, env=_env(), capture_output=True)   # warm the reference cache
        rows, runs = [], 0
        for round_ in range(args.rounds):
            order = args.sandbox if round_ % 2 == 0 else list(reversed(args.sandbox))
            for jobs in args.jobs:
                for sandbox in order:
                    runs += 1
                    rows.append(('batch --jobs {} --sandbox {}'.format(jobs, sandbox),
                                 time_batch(work / 'class', args.step, jobs,
                                            work / 'out-{}'.format(runs), sandbox)))
        if args.rounds > 1 or len(args.sandbox) > 1:
            totals = {}
            for name, seconds in rows:
                totals.setdefault(name, []).append(seconds)
            rows = [(name, sum(t) / len(t)) for name, t in totals.items()]
        if args.subprocess:
            for jobs in args.jobs:
                rows.append(('check per submission x{}'.format(jobs),
                             time_subprocesses(work / 'class', args.step, jobs,
                                               work / 'sub-{}'.format(jobs))))
        first = rows[0][1]
        for name, seconds in rows:
            print('{:40} {:6.1f} s  {:6.1f} submissions/min  x{:.2f}'.format(
                name, seconds, 60.0 * args.size / seconds, first / seconds))
        print('load average at the end {:.1f}'.format(os.getloadavg()[0]))
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == '__main__':
    main()
