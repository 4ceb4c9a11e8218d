"""`dezero-grade` (and `python -m grader`): the command line.

Exit status of `check`: 0 accept, 1 rollback / reject / incomplete / invalid, 2 usage error. Every other
command: 0 on success, 1 when what it checks fails (selftest gaps), 2 on a usage error.

A usage error is a message on stderr, never a traceback, and is found before any grading where it
can be: output paths are checked for writability first (the writes themselves stay atomic), and a
mistyped `--only` id is named with the ids it is close to.
"""
from __future__ import annotations

import argparse
import difflib
import os
import sys
import tempfile
import time
from pathlib import Path

from grader import assignments, report, score, scorecard
from grader import bwrap
from grader import progress as progress_display
from grader.errors import GraderError, SubmissionError
from grader.outpaths import OutputError, writable_file, writable_folder

USAGE_ERROR = 2


def _unknown_checks(only, step):
    """The ids of `--only` that are no check of `step` (its own or a regression check), each with
    the closest ids it may have meant."""
    own, regression = assignments.with_regression(assignments.load(step))
    known = [u.id for u in own] + [u.id for u in regression]
    return [(name, difflib.get_close_matches(name, known, n=3, cutoff=0.6))
            for name in only if name not in known]


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


def version() -> str:
    """The installed grader's version (the package metadata; the source tree's pyproject when
    run from a checkout that was never installed)."""
    from importlib import metadata
    try:
        return metadata.version('dezero-grader')
    except metadata.PackageNotFoundError:
        return 'unknown (not installed)'
def _policy_argument(c, when='default: the default policy'):
    c.add_argument('--policy', metavar='FILE',
                   help='the course\'s grading policy (JSON, schemas/policy.schema.json): how a '
                        'rollback is scored, the late penalty, which checks learners see; ' + when)


def build_parser():
    p = argparse.ArgumentParser(
        prog='dezero-grade',
        description='The acceptance gate for a DeZero rebuilt step by step: gradient checks, '
                    'device / mode / state / serialization invariants and fault detection.')
    p.add_argument('--version', action='version', version='dezero-grade ' + version())
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
    c.add_argument('--profile', choices=('book', 'extension'), default='book',
                   help='which checks decide the verdict: book (default) or also the extension tier')
    c.add_argument('--era', choices=('book', 'current'), default='book',
                   help='the environment your code must run in. book (default): the book\'s 2020 NumPy and '
                        'CuPy -- removed APIs it used (np.int, cupy.scatter_add, numpy.lib.* imports) '
                        'still work and are listed as compatibility findings; current: today\'s '
                        'NumPy 2 and CuPy 14, where the same uses fail')
    c.add_argument('--graph-dir', metavar='DIR', help='write graph snapshots (DOT) there')
    c.add_argument('--html', metavar='OUT', help='write the report as one self-contained HTML '
                   'file there (the graph of a failing gradient check drawn)')
    c.add_argument('--repro-dir', metavar='DIR', help='write one repro_<check>.py per failing check '
                   'there: python DIR/repro_<check>.py runs it again against your code')
    c.add_argument('--only', action='append', default=[], metavar='CHECK',
                   help='run only this check id (repeatable)')
    c.add_argument('--verbose', '-v', action='store_true', help='also list passing checks')
    _policy_argument(c)
    c.add_argument('--submitted-at', metavar='TIME',
                   help='when the submission was handed in (2026-05-02T10:00:00+09:00), for the '
                        'policy\'s late penalty')
    c.add_argument('--no-cache', action='store_true', help='recompute the reference observations')
    c.add_argument('--timeout', type=float, metavar='S',
                   help='time limit for one test of your code, in seconds (default 30; the whole '
                        'submission gets ten times as much, at least 300 s)')
    c.add_argument('--memory', type=int, metavar='MB',
                   help='memory limit of the process running your code, in MB (default 4096)')
    c.add_argument('--sandbox', choices=bwrap.MODES, default=None,
                   help='what confines your code: auto (bubblewrap where it runs, else the basic '
                        'sandbox), bubblewrap (refuse to grade without it), basic (default: '
                        '$DEZERO_GRADER_SANDBOX, else auto)')

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
    c.add_argument('--write-fingerprints', action='store_true',
                   help='store the fingerprints measured (what each fault makes fail) for the '
                        'diagnosis, instead of checking the stored ones against them')

    c = sub.add_parser('batch', help='grade a folder of submissions (resumable, shardable)')
    c.add_argument('submissions', metavar='SUBMISSIONS_DIR',
                   help='one sub-folder or .zip per learner; its name is the submission id')
    c.add_argument('--step', type=_step, required=True)
    c.add_argument('--out', required=True, metavar='DIR',
                   help='scorecards/, receipts/ and summary.json go there; run again to resume')
    c.add_argument('--jobs', '-j', type=int, metavar='J',
                   help='submissions graded at once (default: the number of CPUs)')
    c.add_argument('--timeout', type=float, metavar='S',
                   help='time limit for one test of a submission, in seconds (default 30)')
    c.add_argument('--memory', type=int, metavar='MB',
                   help='memory limit of the process running a submission, in MB (default 4096)')
    c.add_argument('--shard', metavar='I/N', help='grade only shard I of N (1-based), for CI matrices')
    c.add_argument('--roster', metavar='CSV', help='who handed in which submission (for exports)')
    c.add_argument('--force', action='store_true', help='grade everything again, even what is done')
    _policy_argument(c)
    c.add_argument('--device', choices=('auto', 'sim', 'cuda', 'cpu'), default='auto')
    c.add_argument('--seed', type=_seed, help='one seed for every submission (default: each '
                   'submission\'s own, from its code\'s hash)')
    c.add_argument('--profile', choices=('book', 'extension'), default='book')
    c.add_argument('--sandbox', choices=bwrap.MODES, default=None,
                   help='a batch grades many learners\' code on one machine, so it needs bubblewrap '
                        '(auto and bubblewrap refuse to start without it); basic opts out (default: '
                        '$DEZERO_GRADER_SANDBOX, else auto)')
    c.add_argument('--era', choices=('book', 'current'), default='book',
                   help='see check --era')

    c = sub.add_parser('history', help='grade a git history step by step: the commit that broke '
                       'an earlier step, named')
    c.add_argument('repo', metavar='REPO', help='a git repository (a local clone, or its URL); with '
                   '--classroom, a folder of them (one per student)')
    c.add_argument('--out', default='dezero-history', metavar='DIR',
                   help='history.json, history.html, scorecards/ and the cache go there; run again '
                        'to resume (default: dezero-history)')
    c.add_argument('--map', metavar='FILE', help='step -> commit, one "23 a1b2c3d" per line (or JSON); '
                   'default: .dezero-steps or dezero-steps.json in the repository, if any')
    c.add_argument('--steps', metavar='LIST', help='only these steps, e.g. 23-30,40')
    c.add_argument('--rev', metavar='REV', help='read the history of this branch or commit '
                   '(default: HEAD)')
    c.add_argument('--jobs', '-j', type=int, metavar='J', help='gradings at once (default: CPUs)')
    c.add_argument('--cache', metavar='DIR', help='the content cache (default: OUT/cache); share '
                   'it between runs and repositories')
    c.add_argument('--json', metavar='OUT', help='also write the history document there')
    c.add_argument('--html', metavar='OUT', help='also write the HTML timeline there')
    c.add_argument('--diff', action='store_true', help='print the diff of each first bad commit')
    c.add_argument('--dry-run', action='store_true', help='show which commit is which step, and '
                   'how that was found; grade nothing')
    c.add_argument('--classroom', action='store_true',
                   help='REPO is a folder of repositories (a GitHub Classroom download): grade '
                        'each, and write per-step batch folders for summaries and exports')
    c.add_argument('--force', action='store_true', help='grade again what the cache holds')
    c.add_argument('--deep', action='store_true', help='also grade every earlier step\'s passed '
                   'checks at the newest step\'s commit (beyond the regression steps each '
                   'assignment names) and name the commit that broke any that fails there')
    c.add_argument('--device', choices=('auto', 'sim', 'cuda', 'cpu'), default='auto')
    c.add_argument('--seed', type=_seed, help='one seed for every commit (default: from each '
                   'commit\'s graded files)')
    c.add_argument('--profile', choices=('book', 'extension'), default='book')
    c.add_argument('--era', choices=('book', 'current'), default='book', help='see check --era')
    c.add_argument('--timeout', type=float, metavar='S', help='see check --timeout')
    c.add_argument('--memory', type=int, metavar='MB', help='see check --memory')
    c.add_argument('--sandbox', choices=bwrap.MODES, default=None,
                   help='as for check; --classroom, like batch, needs bubblewrap unless basic')

    c = sub.add_parser('merge', help='merge batch shards into one summary')
    c.add_argument('folders', nargs='+', metavar='DIR', help='--out folders of batch shards')
    c.add_argument('--out', default='merged', metavar='DIR',
                   help='where the merged scorecards and summary go (default: merged)')

    c = sub.add_parser('export', help='export grades to Gradescope, Canvas, LTI or JUnit')
    c.add_argument('source', nargs='?', metavar='DIR',
                   help='a batch --out folder, or one scorecard file (check --json)')
    c.add_argument('--format', required=True,
                   choices=('gradescope', 'canvas', 'lti', 'junit', 'html'))
    c.add_argument('--out', metavar='PATH', help='file (or folder, for gradescope from a batch) to '
                   'write; default: DIR/exports/...')
    c.add_argument('--roster', metavar='CSV', help='roster to use instead of the batch\'s')
    c.add_argument('--assignment-name', metavar='NAME',
                   help='canvas: the assignment column (default: DeZero step N: title)')
    c.add_argument('--assignment-id', metavar='ID',
                   help='canvas: the Canvas assignment id; without it the import creates a new '
                        'assignment')
    c.add_argument('--visibility', default=None,
                   choices=('visible', 'hidden', 'after_due_date', 'after_published'),
                   help='gradescope: when learners see the results (default: the policy\'s '
                        'visibility.results, else visible)')
    c.add_argument('--autograder', action='store_true',
                   help='gradescope: write the autograder folder (setup.sh, run_autograder) for '
                        '--step to --out, and a zip of it, instead of exporting grades')
    c.add_argument('--step', type=_step, help='with --autograder: the step it grades')
    c.add_argument('--timeout', type=float, metavar='S', help='with --autograder: see batch')
    c.add_argument('--memory', type=int, metavar='MB', help='with --autograder: see batch')
    c.add_argument('--profile', choices=('book', 'extension'), default='book',
                   help='with --autograder: scoring profile')
    c.add_argument('--sandbox', choices=bwrap.MODES, default='auto',
                   help='with --autograder: auto and bubblewrap require bubblewrap on Gradescope '
                        '(setup.sh installs it); basic opts out')
    _policy_argument(c, 'with --autograder: copied into the folder, and every submission '
                        'is scored by it')
    c.add_argument('--secret-file', metavar='FILE',
                   help='with --autograder: the course secret that keys every seed (a file of '
                        'random text; keep it out of what students see)')
    c.add_argument('--era', choices=('book', 'current'), default='book',
                   help='with --autograder: the environment the code must run in (see check --era)')
    return p


def main(argv=None):
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return USAGE_ERROR
    try:
        return COMMANDS[args.command](args)
    except BrokenPipeError:
        # the reader went away (`dezero-grade list | head`): stop quietly, as other tools do;
        # point stdout at nothing so the interpreter's final flush does not complain again
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    except OutputError as e:
        print('dezero-grade: {}'.format(e), file=sys.stderr)
        return USAGE_ERROR
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
        points = score.assignment_possible(a)
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
    from grader.sandbox import Limits
    if args.timeout is not None and not 0 < args.timeout <= 86400:
        print('dezero-grade: --timeout takes seconds above 0 (at most a day), found {:g}'.format(
            args.timeout), file=sys.stderr)
        return USAGE_ERROR
    if args.memory is not None and args.memory < 256:
        print('dezero-grade: --memory takes megabytes, at least 256 (Python and NumPy alone '
              'need about 150), found {}'.format(args.memory), file=sys.stderr)
        return USAGE_ERROR
    try:
        sandbox = args.sandbox or bwrap.default_mode()
        bwrap.resolve(sandbox)
    except GraderError as e:
        return _usage(e)
    if not os.path.lexists(args.submission):
        return _usage('there is no file or folder at {}: pass the folder (or .zip) that holds '
                      'your dezero/ package or stepNN.py'.format(args.submission))
    unknown = _unknown_checks(args.only, args.step)
    if unknown:
        name, close = unknown[0]
        return _usage('--only {}: step {} has no such check{}; the scorecard (--json) and '
                      '`dezero-grade faults --step {}` name its checks'.format(
                          name, args.step, ' (did you mean {}?)'.format(' or '.join(close))
                          if close else '', args.step))
    if args.json:
        writable_file('--json', args.json)
    if args.graph_dir:
        writable_folder('--graph-dir', args.graph_dir)
    if args.html:
        writable_file('--html', args.html)
    if args.repro_dir:
        writable_folder('--repro-dir', args.repro_dir)
    limits = Limits.with_options(timeout_s=args.timeout, memory_mb=args.memory, sandbox=sandbox)
    from grader import policy as policy_mod
    try:
        course_policy = policy_mod.load(args.policy)
        timing = policy_mod.timing(course_policy, args.submitted_at)
    except policy_mod.PolicyError as e:
        return _usage(e)
    options = run.Options(device=args.device, seed=args.seed, profile=args.profile,
                          era=args.era, use_cache=not args.no_cache, only=tuple(args.only),
                          limits=limits, policy=course_policy, timing=timing)
    progress = progress_display.of_probes('step {}'.format(args.step))
    try:
        doc = run.grade(args.submission, args.step, options, progress=progress)
    finally:
        progress.finish()
    sys.stdout.write(report.render(doc, colour=report.use_colour(sys.stdout),
                                   verbose=args.verbose))
    status = 0 if doc['verdict'] == 'accept' else 1
    # checked before grading, but the disk can still fill up or a folder vanish meanwhile: the
    # report above is printed first, so the grading is never lost for want of a file
    try:
        if args.json:
            scorecard.write(args.json, doc)
        if args.graph_dir:
            _write_graphs(doc, Path(args.graph_dir))
        if args.html:
            from grader import htmlreport
            htmlreport.write_report(args.html, doc)
            print('html report: {}'.format(args.html))
        if args.repro_dir:
            from grader import repro
            for path in repro.write_all(doc, Path(args.repro_dir), args.submission):
                print('repro: {}'.format(path))
    except OSError as e:
        print('dezero-grade: could not write {}: {}'.format(
            e.filename or args.json or args.graph_dir or args.html or args.repro_dir,
            e.strerror or e), file=sys.stderr)
        return USAGE_ERROR
    return status


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
        print('  {:30} caught by: {}'.format('', ', '.join(f.caught_by)))
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
    outcomes = []
    for step in steps:
        t0 = time.perf_counter()
        outcome = selftest.run_step(step, seed=args.seed,
                                    write_fingerprints=args.write_fingerprints)
        outcomes.append(outcome)
        sys.stdout.write(selftest.render(outcome))
        print('  ({:.1f} s)'.format(time.perf_counter() - t0))
        ok = ok and outcome.ok
    if len(outcomes) > 1 and selftest.diagnosis_total(outcomes):
        print(selftest.diagnosis_total(outcomes))
    print('selftest {} for {} step(s) in {:.1f} s'.format(
        'passed' if ok else 'FAILED', len(steps), time.perf_counter() - started))
    return 0 if ok else 1


def _usage(message):
    print('dezero-grade: {}'.format(message), file=sys.stderr)
    return USAGE_ERROR


def cmd_batch(args):
    from grader import batch
    from grader import policy as policy_mod
    from grader.export import roster as roster_mod
    if args.jobs is not None and args.jobs < 1:
        return _usage('--jobs takes a number of processes, at least 1, found {}'.format(args.jobs))
    try:
        options = batch.BatchOptions.from_cli(args.step, profile=args.profile, era=args.era,
                                              device=args.device,
                                              seed=args.seed, timeout_s=args.timeout,
                                              memory_mb=args.memory, sandbox=args.sandbox,
                                              policy=policy_mod.load(args.policy))
        shard = batch.Shard.parse(args.shard) if args.shard else None
        writable_folder('--out', args.out)
        roster = roster_mod.read_csv(args.roster) if args.roster else None
        result = batch.run_batch(args.submissions, args.out, options, jobs=args.jobs, shard=shard,
                                 roster=roster, force=args.force)
    except (batch.BatchError, roster_mod.RosterError, policy_mod.PolicyError) as e:
        return _usage(e)
    sys.stdout.write(batch.render(result.summary, result.out))
    return 0 if result.complete else 1


def cmd_merge(args):
    from grader import batch
    try:
        writable_folder('--out', args.out)
        result = batch.merge(args.folders, args.out)
    except batch.BatchError as e:
        return _usage(e)
    sys.stdout.write(batch.render(result.summary, result.out, merged=True))
    return 0 if result.complete else 1


def cmd_history(args):
    from grader import batch, history, run
    from grader.history import html as history_html
    from grader.sandbox import Limits
    if args.jobs is not None and args.jobs < 1:
        return _usage('--jobs takes a number of processes, at least 1, found {}'.format(args.jobs))
    try:
        bopts = batch.BatchOptions.from_cli(1, profile=args.profile, era=args.era,
                                            device=args.device, seed=args.seed,
                                            timeout_s=args.timeout, memory_mb=args.memory,
                                            sandbox=args.sandbox) if args.classroom else None
        sandbox = bopts.sandbox if bopts else (args.sandbox or bwrap.default_mode())
        bwrap.resolve(sandbox)
        steps = history.parse_steps(args.steps)
    except (batch.BatchError, GraderError, history.HistoryError) as e:
        return _usage(e)
    limits = Limits.with_options(timeout_s=args.timeout, memory_mb=args.memory, sandbox=sandbox)
    options = run.Options(device=args.device, seed=args.seed, profile=args.profile, era=args.era,
                          limits=limits)
    kw = dict(jobs=args.jobs, map_file=args.map, tip=args.rev, steps=steps, cache=args.cache,
              force=args.force, deep=args.deep)
    try:
        if args.dry_run:
            sys.stdout.write(history.show_mapping(args.repo, map_file=args.map, tip=args.rev,
                                                  steps=steps))
            return 0
        if args.classroom:
            result = history.grade_classroom(args.repo, args.out, options, **kw)
            sys.stdout.write(history.render_classroom(result))
            return 0
        result = history.grade_history(args.repo, args.out, options, **kw)
    except (history.HistoryError, history.RepoError) as e:
        return _usage(e)
    if args.json:
        from grader import schema
        schema.write_json(args.json, result.document, 'history')
    html_text = history_html.render(result.document)
    from grader import schema
    schema.write_text_atomic(Path(args.out) / history.HTML, html_text)
    if args.html:
        schema.write_text_atomic(args.html, html_text)
    sys.stdout.write(history.render(result.document, diffs=args.diff))
    verdicts = {r['verdict'] for r in result.document['steps']}
    return 0 if verdicts == {'accept'} else 1


_EXPORT_DEFAULTS = {'gradescope': 'gradescope', 'canvas': 'canvas.csv', 'lti': 'lti-scores.json',
                    'junit': 'junit.xml', 'html': 'html'}


def cmd_export(args):
    from grader import export
    from grader.export import autograder, canvas, gradescope, junit, lti
    from grader.export import roster as roster_mod
    if args.autograder:
        if args.format != 'gradescope' or args.step is None or not args.out or args.source:
            return _usage('--autograder writes the Gradescope autograder folder: use '
                          'export --format gradescope --autograder --step N --out FOLDER')
        from grader import batch
        try:
            # checks the values only: the folder is written here and graded on Gradescope, so
            # bubblewrap is needed there, not on this machine
            options = batch.BatchOptions.from_cli(args.step, profile=args.profile, era=args.era,
                                                  timeout_s=args.timeout, memory_mb=args.memory,
                                                  sandbox='basic')
            folder = autograder.write_folder(args.out, args.step, profile=options.profile,
                                             era=options.era,
                                             timeout_s=options.timeout_s,
                                             memory_mb=options.memory_mb,
                                             visibility=args.visibility, sandbox=args.sandbox,
                                             secret_file=args.secret_file,
                                             policy_file=args.policy)
        except (batch.BatchError, FileExistsError, OSError, ValueError) as e:
            return _usage(e)
        print('wrote the Gradescope autograder for step {} to {}/ and {}.zip: upload the zip as '
              'the assignment\'s autograder'.format(args.step, folder, folder))
        return 0
    if not args.source:
        return _usage('export needs a batch --out folder or a scorecard file')
    try:
        graded = export.load(args.source)
        roster = roster_mod.read_csv(args.roster) if args.roster else graded.roster
        source = Path(args.source)
        base = source / 'exports' if graded.summary is not None else Path('.')
        if args.format == 'gradescope' and graded.summary is None:
            out = Path(args.out or 'results.json')
        elif args.format == 'html' and graded.summary is None:
            out = Path(args.out or 'report.html')
        else:
            out = Path(args.out or base / _EXPORT_DEFAULTS[args.format])
        if args.format in ('gradescope', 'html') and graded.summary is not None:
            writable_folder('--out', out)   # one file per submission
        else:
            writable_file('--out', out)   # its folder (DIR/exports/ by default) made if missing
        if args.format == 'gradescope':
            written = gradescope.export(graded, out, visibility=args.visibility)
        elif args.format == 'canvas':
            written = canvas.export(graded, out, roster, name=args.assignment_name,
                                    assignment_id=args.assignment_id)
        elif args.format == 'lti':
            written = lti.export(graded, out, roster)
        elif args.format == 'html':
            from grader.export import html as html_export
            written = html_export.export(graded, out)
        else:
            written = junit.export(graded, out)
    except (export.ExportError, roster_mod.RosterError) as e:
        return _usage(e)
    except OSError as e:
        return _usage('could not write the {} export to {}: {}'.format(
            args.format, e.filename or out, e.strerror or e))
    for warning in written.warnings:
        print('dezero-grade export: {}'.format(warning), file=sys.stderr)
    where = out if len(written.paths) == 1 else '{} ({} files)'.format(out, len(written.paths))
    print('wrote {} export of {} scorecard(s) to {}'.format(args.format, len(graded.submissions),
                                                            where))
    return 0


COMMANDS = {'list': cmd_list, 'check': cmd_check, 'faults': cmd_faults, 'inject': cmd_inject,
            'selftest': cmd_selftest, 'batch': cmd_batch, 'merge': cmd_merge,
            'export': cmd_export, 'history': cmd_history}



if __name__ == '__main__':
    sys.exit(main())
