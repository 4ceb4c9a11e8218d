"""`dezero-grade` (and `python -m grader`): the command line.

Exit status of `check`: 0 accept, 1 rollback / reject / invalid, 2 usage error. Every other
command: 0 on success, 1 when what it checks fails (selftest gaps), 2 on a usage error.
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

from grader import assignments, report, scorecard
from grader.errors import SubmissionError

USAGE_ERROR = 2


def _seed(text):
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError('the seed must be >= 0')
    return value


def _step(text):
    value = int(text)
    if not 1 <= value <= 60:
        raise argparse.ArgumentTypeError('steps run from 1 to 60')
    return value


def build_parser():
    p = argparse.ArgumentParser(
        prog='dezero-grade',
        description='The acceptance gate for a DeZero rebuilt step by step: gradient checks, '
                    'device / mode / state / serialization invariants and fault detection.')
    sub = p.add_subparsers(dest='command', metavar='COMMAND')

    c = sub.add_parser('list', help='steps, titles and what each checks')
    c.add_argument('--checks', action='store_true', help='also list the registered checks')

    c = sub.add_parser('check', help='grade one submission for one step')
    c.add_argument('submission', help='a folder (or .zip) with your dezero/ package or stepNN.py')
    c.add_argument('--step', type=_step, required=True)
    c.add_argument('--json', metavar='OUT', help='write the scorecard there')
    c.add_argument('--device', choices=('auto', 'sim', 'cuda', 'cpu'), default='auto',
                   help='auto: a real GPU when CuPy finds one, else the simulated device')
    c.add_argument('--seed', type=_seed, help='reproduce a run (default: from your code\'s hash)')
    c.add_argument('--profile', choices=('book', 'extension'), default='book')
    c.add_argument('--graph-dir', metavar='DIR', help='write graph snapshots (DOT) there')
    c.add_argument('--only', action='append', default=[], metavar='CHECK',
                   help='run only this check id (repeatable)')
    c.add_argument('--era', choices=('current', 'book'), default='current',
                   help='simulated CuPy API era: current (CuPy 14) or book (CuPy < 8)')
    c.add_argument('--verbose', '-v', action='store_true', help='also list passing checks')
    c.add_argument('--no-cache', action='store_true', help='recompute the reference observations')

    c = sub.add_parser('faults', help='the fault catalogue of a step')
    c.add_argument('--step', type=_step, required=True)

    c = sub.add_parser('inject', help='write a single-fault variant of a submission')
    c.add_argument('submission')
    c.add_argument('--step', type=_step, required=True)
    c.add_argument('--fault', required=True)
    c.add_argument('--out', required=True, help='a new folder for the variant')

    c = sub.add_parser('selftest', help='reference accepted, every fault caught')
    c.add_argument('--step', type=_step, action='append',
                   help='step to test (repeatable; default: every step with an assignment)')
    c.add_argument('--seed', type=_seed, default=2026)

    for name, text in (('batch', 'grade a folder of submissions'),
                       ('merge', 'merge batch shards into one summary'),
                       ('export', 'export grades to Gradescope, Canvas, LTI or JUnit')):
        c = sub.add_parser(name, help=text + ' (not built yet)')
        c.add_argument('rest', nargs=argparse.REMAINDER)
    return p


def main(argv=None):
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return USAGE_ERROR
    try:
        return COMMANDS[args.command](args)
    except SubmissionError as e:
        print('dezero-grade: {}'.format(e.message), file=sys.stderr)
        return USAGE_ERROR
    except assignments.AssignmentError as e:
        print('dezero-grade: {}'.format(e), file=sys.stderr)
        return USAGE_ERROR
    except KeyboardInterrupt:
        print('dezero-grade: interrupted', file=sys.stderr)
        return 130


def cmd_list(args):
    for step in assignments.available_steps():
        a = assignments.load(step)
        own, reg = assignments.with_regression(a)
        points = sum(c.points for c in a.checks if c.tier == 'book')
        print('step {:2d}  {}'.format(step, a.title))
        print('         {} checks ({:g} points), {} regression checks, {} faults'.format(
            len(own), points, len(reg), len(assignments.fault_catalogue(a))))
        cats = sorted({c.category for c in a.checks})
        print('         checks: ' + ', '.join(cats))
    if args.checks:
        from grader.checks import load_all
        print('\nregistered checks:')
        for name, d in sorted(load_all().items()):
            print('  {:18} {}'.format(name, d.summary))
    return 0


def cmd_check(args):
    from grader import run
    options = run.Options(device=args.device, seed=args.seed, profile=args.profile,
                          era=args.era, use_cache=not args.no_cache, only=tuple(args.only))
    progress = report.Progress('step {}'.format(args.step))
    try:
        doc = run.grade(args.submission, args.step, options, progress=progress)
    finally:
        progress.finish()
    if args.json:
        scorecard.write(args.json, doc)
    if args.graph_dir:
        _write_graphs(doc, Path(args.graph_dir))
    sys.stdout.write(report.render(doc, colour=report.use_colour(sys.stdout),
                                   verbose=args.verbose))
    return 0 if doc['verdict'] == 'accept' else 1


def _write_graphs(doc, folder):
    from grader import graphs
    written = graphs.write_all(doc, folder)
    for path in written:
        print('graph: {}'.format(path))


def cmd_faults(args):
    a = assignments.load(args.step)
    print('faults of step {} ({}):'.format(a.step, a.title))
    for f in assignments.fault_catalogue(a):
        where = '' if f.step == a.step else '  [step {} — ends in rollback]'.format(f.step)
        print('  {:30} {:9} {}{}'.format(f.id, f.tier, f.title, where))
        print('  {:30} caught by: {}'.format('', ', '.join(f.targets)))
    return 0


def cmd_inject(args):
    from grader import faults, load
    a = assignments.load(args.step)
    catalogue = {f.id: f for f in assignments.fault_catalogue(a)}
    if args.fault not in catalogue:
        print('dezero-grade: step {} has no fault {!r}; see dezero-grade faults --step {}'.format(
            args.step, args.fault, args.step), file=sys.stderr)
        return USAGE_ERROR
    if Path(args.out).exists():
        print('dezero-grade: {} exists already; name a new folder'.format(args.out),
              file=sys.stderr)
        return USAGE_ERROR
    with tempfile.TemporaryDirectory(prefix='dezero-inject-') as tmp:
        sub = load.prepare(Path(args.submission), args.step, Path(tmp))
        out = faults.inject(sub.root, Path(args.out), catalogue[args.fault], sub.entry)
    print('wrote {} with fault {}: {}'.format(out, args.fault, catalogue[args.fault].title))
    return 0


def cmd_selftest(args):
    from grader import selftest
    steps = args.step or assignments.available_steps()
    ok = True
    started = time.perf_counter()
    for step in steps:
        t0 = time.perf_counter()
        outcome = selftest.run_step(step, seed=args.seed)
        sys.stdout.write(selftest.render(outcome))
        print('  ({:.1f} s)'.format(time.perf_counter() - t0))
        ok = ok and outcome.ok
    print('selftest {} for {} step(s) in {:.1f} s'.format(
        'passed' if ok else 'FAILED', len(steps), time.perf_counter() - started))
    return 0 if ok else 1


def cmd_not_built(args):
    print('dezero-grade {}: not built yet'.format(args.command), file=sys.stderr)
    return USAGE_ERROR


COMMANDS = {'list': cmd_list, 'check': cmd_check, 'faults': cmd_faults, 'inject': cmd_inject,
            'selftest': cmd_selftest, 'batch': cmd_not_built, 'merge': cmd_not_built,
            'export': cmd_not_built}



if __name__ == '__main__':
    sys.exit(main())
