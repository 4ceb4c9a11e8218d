"""How long the quick test run (`pytest -m "not slow"`) takes, serial and spread over workers.

    python bench/bench_tests.py [--jobs 0 2] [--top 10] [PYTEST_ARGS...]

Runs the quick run once per `--jobs` value (0: one process, as plain `pytest`; N: `-n N`, the
tests spread over N pytest-xdist workers), one after the other in this run, and prints for each
its wall time, the tests it ran (passed, failed, skipped), its ten slowest tests (`--durations`)
and its wall time as a share of the first configuration's. The load average before and after each
configuration is printed too: on a machine others use, only the ratio between configurations of
the same run means much. PYTEST_ARGS (a test folder, `-k ...`) narrow every configuration alike,
so that a quick comparison need not run the whole suite.
"""
import argparse
import os
import re
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
_DURATION = re.compile(r'^\s*([0-9.]+)s (call|setup|teardown)\s+(\S+)', re.MULTILINE)


def run_once(jobs, top, extra):
    argv = [sys.executable, '-m', 'pytest', '-m', 'not slow', '--durations', str(top),
            '-n', str(jobs), '--dist', 'loadfile'] + list(extra)
    load_before = os.getloadavg()[0]
    t0 = time.perf_counter()
    done = subprocess.run(argv, cwd=REPO, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    tail = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else ''
    durations = [(float(s), when, test) for s, when, test in _DURATION.findall(done.stdout)]
    return {'jobs': jobs, 'wall': wall, 'status': done.returncode,
            'durations': sorted(durations, reverse=True)[:top], 'tail': tail,
            'load': (load_before, os.getloadavg()[0])}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--jobs', type=int, nargs='+', default=[0, 2],
                        help='pytest-xdist workers per configuration (0: one process)')
    parser.add_argument('--top', type=int, default=10, help='how many of the slowest tests to show')
    args, extra = parser.parse_known_args()
    print('{} cores; quick run: pytest -m "not slow" {}'.format(os.cpu_count(), ' '.join(extra)))
    first = None
    for jobs in args.jobs:
        r = run_once(jobs, args.top, extra)
        first = first or r['wall']
        print('\n-n {}: {:.0f} s wall ({:.0%} of the first), exit status {}, load average {:.1f} '
              'before, {:.1f} after'.format(jobs, r['wall'], r['wall'] / first, r['status'],
                                            *r['load']))
        print('  ' + (r['tail'] or '(no summary line)'))
        for seconds, when, test in r['durations']:
            print('  {:7.1f} s {:8} {}'.format(seconds, when, test))


if __name__ == '__main__':
    main()
