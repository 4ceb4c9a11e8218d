"""The CPU time of the recurrent layers' checks of steps 59 and 60, check by check.

    python bench/bench_recurrent.py [--repeat 3] [--steps 59 60] [--seed 2026]

Runs `dezero-grade check reference --step N --only ID` once to warm the reference cache, then
`--repeat` more times, and prints for each check the median CPU time (user + system, of the
process and its children) of the warm runs, then the whole step's. CPU time rather than wall
time: the machine is shared, and waiting for a core is not the grader's cost. `--sandbox basic`,
because under bubblewrap the worker is not a child whose time the kernel hands back to us.
"""
import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CHECKS = {59: ['rnn.forward', 'rnn.reset', 'rnn.through_time', 'rnn.bptt', 'rnn.bptt_grads'],
          60: ['lstm.forward', 'lstm.reset', 'lstm.through_time', 'lstm.bptt']}


def cpu_of(cmd):
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def measure(step, only, repeat, seed):
    cmd = [sys.executable, '-m', 'dezero_grader', 'check', str(ROOT / 'reference'), '--step', str(step),
           '--seed', str(seed), '--sandbox', 'basic']
    for check in only:
        cmd += ['--only', check]
    cpu_of(cmd)   # warms the reference cache
    return statistics.median(cpu_of(cmd) for _ in range(repeat))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--repeat', type=int, default=3)
    ap.add_argument('--steps', type=int, nargs='+', default=[59, 60])
    ap.add_argument('--seed', type=int, default=2026)
    args = ap.parse_args(argv)
    rows = {}
    for step in args.steps:
        for check in CHECKS[step]:
            rows['step{}/{}'.format(step, check)] = measure(step, [check], args.repeat, args.seed)
            print('step{}/{}: {:.2f} s'.format(step, check, rows['step{}/{}'.format(step, check)]),
                  flush=True)
        rows['step{} (whole check)'.format(step)] = measure(step, [], args.repeat, args.seed)
        print('step{} (whole check): {:.2f} s'.format(step, rows['step{} (whole check)'.format(step)]),
              flush=True)
    print(json.dumps(rows, indent=1))


if __name__ == '__main__':
    os.environ.setdefault('OMP_NUM_THREADS', '1')
    main()
