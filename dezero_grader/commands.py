"""What each `dezero-grade` command does, once its arguments are parsed (`dezero_grader.cli` parses
them and maps each command name to its function here).

Each function takes the parsed arguments and returns the exit status: 0 on success, 1 when what
it checks fails (a verdict other than accept, selftest gaps), `USAGE_ERROR` (2) on a usage error,
which is printed on stderr before any grading where it can be found.
"""
from __future__ import annotations

import collections
import difflib
import os
import sys
import tempfile
import time
from pathlib import Path

from dezero_grader.catalogue import assignments
from dezero_grader.errors import GraderError
from dezero_grader.isolation import bwrap
from dezero_grader.present import terminal
from dezero_grader.present import progress as progress_display
from dezero_grader.present.outpaths import writable_file, writable_folder
from dezero_grader.scoring import score, scorecard_write

USAGE_ERROR = 2


def say(text: str) -> None:
    """`text` on stdout, where a reader that went away (`check ... | head`) stops the printing
    but not the work: the files asked for are still written, and the exit status is still the
    verdict's. Flushed at once, so a closed pipe shows here and not at the interpreter's exit."""
    try:
        sys.stdout.write(text)
        sys.stdout.flush()
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())


def _unknown_checks(only, step):
    """The ids of `--only` that are no check of `step` (its own or a regression check), each with
    the closest ids it may have meant."""
    if not only:
        return []
    from dezero_grader.grading import run
    own, regression = run.checks_of(assignments.load(step), every=True)
    known = [u.id for u in own] + [u.id for u in regression]
    return [(name, difflib.get_close_matches(name, known, n=3, cutoff=0.6))
            for name in only if name not in known]


def cmd_list(args):
    from dezero_grader.grading import run
    for step in assignments.available_steps():
        a = assignments.load(step)
        own, reg = run.checks_of(a)
        points = score.assignment_possible(a)
        print('step {:2d}  {}'.format(step, a.title))
        print('         {} checks ({:g} points), {} regression checks, {} faults'.format(
            len(own), points, len(reg), len(assignments.fault_catalogue(a))))
        cats = sorted({c.category for c in a.checks})
        print('         checks: ' + ', '.join(cats))
    if args.checks:
        from dezero_grader.checks import load_all
        print('\nregistered checks:')
        for name, d in sorted(load_all().items()):
            print('  {:18} {}'.format(name, d.summary))
    return 0


def cmd_check(args):
    from dezero_grader.grading import run
    from dezero_grader.isolation.worker_process import Limits
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
    from dezero_grader.scoring import policy as policy_mod
    try:
        course_policy = policy_mod.load(args.policy)
        timing = policy_mod.timing(course_policy, args.submitted_at)
    except policy_mod.PolicyError as e:
        return _usage(e)
    from dezero_grader import i18n
    language = args.lang or course_policy.language or i18n.default_language()
    options = run.Options(device=args.device, seed=args.seed, profile=args.profile,
                          era=args.era, use_cache=not args.no_cache, only=tuple(args.only),
                          limits=limits, policy=course_policy, timing=timing, language=language)
    progress = progress_display.of_probes('step {}'.format(args.step))
    try:
        doc = run.grade(args.submission, args.step, options, progress=progress)
    finally:
        progress.finish()
    say(terminal.render(doc, colour=terminal.use_colour(sys.stdout), verbose=args.verbose,
                        submission=args.submission, lang=language))
    status = 0 if doc['verdict'] == 'accept' else 1
    # checked before grading, but the disk can still fill up or a folder vanish meanwhile: the
    # report above is printed first, so the grading is never lost for want of a file
    try:
        if args.json:
            scorecard_write.write(args.json, doc)
        if args.graph_dir:
            _write_graphs(doc, Path(args.graph_dir))
        if args.html:
            from dezero_grader.present import html_page
            html_page.write_report(args.html, doc, submission=Path(args.submission).resolve())
            say('html report: {}\n'.format(args.html))
        if args.repro_dir:
            from dezero_grader.grading import repro_snippets
            for path in repro_snippets.write_all(doc, Path(args.repro_dir), args.submission):
                say('repro: {}\n'.format(path))
    except OSError as e:
        print('dezero-grade: could not write {}: {}'.format(
            e.filename or args.json or args.graph_dir or args.html or args.repro_dir,
            e.strerror or e), file=sys.stderr)
        return USAGE_ERROR
    return status


def _write_graphs(doc, folder):
    from dezero_grader.present import graph_dot
    notes = []
    written = graph_dot.write_all(doc, folder, notes)
    for path in written:
        say('graph: {}\n'.format(path))
    for note in notes:
        say('graph: {}\n'.format(note))


def cmd_faults(args):
    a = assignments.load(args.step)
    print('faults of step {} ({}):'.format(a.step, a.title))
    for f in assignments.fault_catalogue(a):
        where = '' if f.step == a.step else '  [step {} — ends in rollback]'.format(f.step)
        print('  {:30} {:9} {}{}'.format(f.id, f.tier, f.title, where))
        print('  {:30} caught by: {}'.format('', ', '.join(f.caught_by)))
    return 0


def cmd_inject(args):
    from dezero_grader.catalogue import faults
    from dezero_grader.intake import load
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
    fault = catalogue[args.fault]
    with tempfile.TemporaryDirectory(prefix='dezero-inject-') as tmp:
        sub = load.prepare(Path(args.submission), args.step, Path(tmp))
        if args.as_patch:
            out, where, why = faults.inject(sub.root, Path(args.out), fault, sub.entry), '', ''
        else:
            out, where, why = faults.inject_into_source(sub.root, Path(args.out), fault, sub.entry)
    print('wrote {} with fault {}: {}'.format(out, args.fault, fault.title))
    if where:
        print('  written into your code: {}'.format(where))
    else:
        print('  added as a patch module run when your package is imported ({}){}'.format(
            faults.FAULT_FILE, '' if args.as_patch else ': it cannot be written into your code, as '
            + why))
    return 0


def cmd_selftest(args):
    from dezero_grader.proof import mutation_record, selftest
    from dezero_grader.batch.pool import default_jobs
    steps = args.step or assignments.available_steps()
    ok = True
    started = time.perf_counter()
    outcomes = []
    for step in steps:
        t0 = time.perf_counter()
        outcome = selftest.run_step(step, seed=args.seed, jobs=args.jobs or default_jobs(),
                                    write_fingerprints=args.write_fingerprints)
        outcomes.append(outcome)
        sys.stdout.write(selftest.render(outcome))
        print('  ({:.1f} s)'.format(time.perf_counter() - t0))
        ok = ok and outcome.ok
    if len(outcomes) > 1:
        for line in selftest.totals(outcomes):
            print(line)
    print(mutation_record.summary())
    print('selftest {} for {} step(s) in {:.1f} s'.format(
        'passed' if ok else 'FAILED', len(steps), time.perf_counter() - started))
    return 0 if ok else 1


def _usage(message):
    print('dezero-grade: {}'.format(message), file=sys.stderr)
    return USAGE_ERROR


def cmd_batch(args):
    from dezero_grader import batch
    from dezero_grader.scoring import policy as policy_mod
    from dezero_grader.batch import times as times_mod
    from dezero_grader.intake import roster as roster_mod
    try:
        options = batch.BatchOptions.from_cli(args.step, profile=args.profile, era=args.era,
                                              device=args.device,
                                              seed=args.seed, timeout_s=args.timeout,
                                              memory_mb=args.memory, sandbox=args.sandbox,
                                              policy=policy_mod.load(args.policy),
                                              language=args.lang)
        shard = batch.Shard.parse(args.shard) if args.shard else None
        writable_folder('--out', args.out)
        roster = roster_mod.read_csv(args.roster) if args.roster else None
        times = times_mod.read(args.times) if args.times else None
        result = batch.run_batch(args.submissions, args.out, options, jobs=args.jobs, shard=shard,
                                 roster=roster, force=args.force, times=times)
    except (batch.BatchError, roster_mod.RosterError, policy_mod.PolicyError,
            times_mod.TimesError) as e:
        return _usage(e)
    sys.stdout.write(batch.render(result.summary, result.out))
    return 0 if result.complete else 1


def cmd_merge(args):
    from dezero_grader import batch
    try:
        writable_folder('--out', args.out)
        result = batch.merge(args.folders, args.out)
    except batch.BatchError as e:
        return _usage(e)
    sys.stdout.write(batch.render(result.summary, result.out, merged=True))
    return 0 if result.complete else 1


def cmd_history(args):
    from dezero_grader import batch, history
    from dezero_grader.grading import run
    from dezero_grader.history import html as history_html
    from dezero_grader.isolation.worker_process import Limits
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
        from dezero_grader.records import schema
        schema.write_json(args.json, result.document, 'history')
    html_text = history_html.render(result.document)
    from dezero_grader.records import schema
    schema.write_text_atomic(Path(args.out) / history.HTML, html_text)
    if args.html:
        schema.write_text_atomic(args.html, html_text)
    sys.stdout.write(history.render(result.document, diffs=args.diff))
    verdicts = {r['verdict'] for r in result.document['steps']}
    return 0 if verdicts == {'accept'} else 1


_EXPORT_DEFAULTS = {'gradescope': 'gradescope', 'canvas': 'canvas.csv', 'lti': 'lti-scores.json',
                    'junit': 'junit.xml', 'html': 'html'}


def cmd_export(args):
    from dezero_grader import export
    from dezero_grader.export import autograder, canvas, gradescope, junit, lti
    from dezero_grader.intake import roster as roster_mod
    if args.autograder:
        if args.format != 'gradescope' or args.step is None or not args.out or args.source:
            return _usage('--autograder writes the Gradescope autograder folder: use '
                          'export --format gradescope --autograder --step N --out FOLDER')
        from dezero_grader import batch
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
            from dezero_grader.export import html as html_export
            written = html_export.export(graded, out)
        else:
            written = junit.export(graded, out)
    except (export.ExportError, roster_mod.RosterError) as e:
        return _usage(e)
    except OSError as e:
        return _usage('could not write the {} export to {}: {}'.format(
            args.format, e.filename or out, e.strerror or e))
    for line in written.warnings + written.left_out_lines:
        print('dezero-grade export: {}'.format(line), file=sys.stderr)
    print(export_summary(args.format, out, written))
    if not written.rows:
        print('dezero-grade export: wrote nothing: no {} could be made{}'.format(
            written.unit, ' (every submission was left out, see above)' if written.left_out
            else ''), file=sys.stderr)
        return 1
    return 0


def export_summary(fmt, out, written) -> str:
    """One line: what an export wrote, how much of it, and how much it left out for what."""
    where = out if len(written.paths) <= 1 else '{} ({} files)'.format(out, len(written.paths))
    text = 'wrote the {} export: {} {}{}'.format(fmt, written.rows, written.unit,
                                                '' if written.rows == 1 else 's')
    if written.rows:
        text += ' to {}'.format(where)
    if written.left_out:
        kinds = collections.Counter(why.split(' (')[0].split(':')[0]
                                    for _, why in written.left_out)
        text += '; left out {}: {}'.format(len(written.left_out), ', '.join(
            '{} {}'.format(n, why) for why, n in sorted(kinds.items())))
    return text
