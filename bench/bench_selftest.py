"""How long `selftest` takes with its fault variants graded one at a time and several at once.

    python bench/bench_selftest.py [--step 54 ...] [--jobs 1 2]

Self-tests each step once per `--jobs` value, one configuration after the other in this run,
and prints each one's wall time as a share of the first's, with the load average before and
after (on a machine others use, only the ratio means much). It also says whether every
configuration found the same thing: the same rows (fault, verdict, failing checks), problems,
diagnoses and proof counts as the first; `jobs` may change the time only.
"""
import argparse
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from dezero_grader.proof import selftest  # noqa: E402


def findings(outcome):
    rows = [(fault.id, expected, verdict, tuple(failed), tuple(missing))
            for fault, expected, verdict, failed, missing in outcome.rows]
    return rows, outcome.problems, outcome.diagnoses, outcome.proof.counts


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--step', type=int, action='append', help='steps to self-test (default: 54)')
    parser.add_argument('--jobs', type=int, nargs='+', default=[1, 2],
                        help='variants graded at once, per configuration')
    parser.add_argument('--seed', type=int, default=2026)
    args = parser.parse_args()
    steps = args.step or [54]
    print('{} cores; selftest of step(s) {}'.format(os.cpu_count(), ', '.join(map(str, steps))))
    first_wall = first_found = None
    for jobs in args.jobs:
        load_before = os.getloadavg()[0]
        t0 = time.perf_counter()
        outcomes = [selftest.run_step(step, seed=args.seed, jobs=jobs) for step in steps]
        wall = time.perf_counter() - t0
        found = [findings(o) for o in outcomes]
        first_wall, first_found = first_wall or wall, first_found or found
        variants = sum(len(o.rows) for o in outcomes)
        print('--jobs {}: {} variants, {:.1f} s wall ({:.0%} of the first), {}, load average {:.1f} '
              'before, {:.1f} after; findings {} the first\'s'.format(
                  jobs, variants, wall, wall / first_wall,
                  'passed' if all(o.ok for o in outcomes) else 'FAILED',
                  load_before, os.getloadavg()[0], 'the same as' if found == first_found else 'DIFFERENT from'))


if __name__ == '__main__':
    main()
