"""Run one failed check again, in this process, against the learner's own code: what a repro
snippet (`dezero_grader.grading.repro_snippets`) calls.

It plans the check exactly as grading did (same check id, same seed, so the same inputs drawn
again, never shipped as literals), asks the reference for its answers the way grading does (its
own worker, its cache), then loads the learner's code here -- in the same era and on the same
(simulated) device as the grading -- and runs each probe of the check in this process, so that
the learner's own traceback shows and a debugger can stop in their code. The check's own judge
decides; what it found is printed next to what was expected.

Exit status: 1 when the failure reproduces, 0 when every sub-check now passes, 2 when it cannot
run (no submission found, no such check).
"""
from __future__ import annotations

import os
import signal
import sys
import tempfile
import traceback
from pathlib import Path

SUBMISSION_ENV = 'DEZERO_REPRO_SUBMISSION'
REPRODUCES, FIXED, CANNOT_RUN = 1, 0, 2


class _Stopped(BaseException):
    """The probe ran past the time limit (an endless loop): stopped here as grading stops it --
    after `timeout` s of CPU time, or ten times as long on the wall clock (code that waits)."""


def locate(snippet_file, recorded, argv, step=None):
    """The submission: the first command-line argument, else $DEZERO_REPRO_SUBMISSION, else the
    recorded path relative to the snippet's own folder, then to the current folder, else the
    snippet's folder or the current folder themselves: the first that holds code for the step."""
    if argv:
        return Path(argv[0]), 'given on the command line'
    if os.environ.get(SUBMISSION_ENV):
        return Path(os.environ[SUBMISSION_ENV]), 'from ${}'.format(SUBMISSION_ENV)
    candidates = []
    if snippet_file:
        candidates.append(Path(snippet_file).resolve().parent / recorded)
    candidates.append(Path.cwd() / recorded)
    # saved inside the submission, or run from inside it
    candidates += ([Path(snippet_file).resolve().parent] if snippet_file else []) + [Path.cwd()]
    for c in candidates:
        if c.exists() and (step is None or not c.is_dir() or _holds_entry(c, step)):
            return c, 'recorded in the snippet'
    return candidates[0], 'recorded in the snippet'


def _holds_entry(folder, step):
    from dezero_grader.intake import load
    from dezero_grader.errors import SubmissionError
    try:
        load.find_entry(folder.resolve(), step)
        return True
    except SubmissionError:   # code kept in notebooks is found once they are read
        return _has_notebooks(folder)


def _has_notebooks(folder):
    return any(folder.glob('*.ipynb')) or any(folder.glob('*/*.ipynb'))


def _find_use(step, check_id):
    from dezero_grader.catalogue import assignments
    from dezero_grader.grading.run import checks_of
    own, regression = checks_of(assignments.load(step), every=True)
    for use in own + regression:
        if use.id == check_id:
            return use
    return None


def main(snippet_file, recorded, *, step, check, seed, device='sim', era='book', timeout=30.0,
         argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] in ('-h', '--help'):
        print(__doc__.strip().splitlines()[0])
        print('usage: python {} [SUBMISSION_FOLDER]   (or set ${})'.format(
            os.path.basename(snippet_file or 'repro.py'), SUBMISSION_ENV))
        return FIXED
    from dezero_grader.intake import load
    from dezero_grader.errors import SubmissionError
    source, how = locate(snippet_file, recorded, argv, step)
    if not source.exists():
        print('repro: no submission at {} ({}); pass the folder that holds your code: python {} '
              'FOLDER'.format(source, how, os.path.basename(snippet_file or 'repro.py')),
              file=sys.stderr)
        return CANNOT_RUN
    use = _find_use(step, check)
    if use is None:
        print('repro: step {} has no check {}; was the snippet made by another version of '
              'dezero-grader?'.format(step, check), file=sys.stderr)
        return CANNOT_RUN
    try:
        expansion = entry = None
        if source.is_dir():
            root = source.resolve()
            try:
                entry = load.find_entry(root, step)
            except SubmissionError:
                if not _has_notebooks(root):
                    raise
        if entry is None:
            # an archive, or code kept in notebooks: graded as prepared, so run it prepared
            sub = load.prepare(source, step, Path(tempfile.mkdtemp(prefix='dezero-repro-')))
            root, entry, expansion = sub.root, sub.entry, sub.notebooks
            if expansion:
                print('your notebooks ({}) run as the files their code cells make ({}); places '
                      'below are the notebooks\' cells'.format(', '.join(expansion.notebooks),
                                                              ', '.join(p for p, _ in expansion.files)))
    except SubmissionError as e:
        print('repro: {} ({}): {}\npass the folder that holds your code: python {} FOLDER'.format(
            source, how, e.message, os.path.basename(snippet_file or 'repro.py')), file=sys.stderr)
        return CANNOT_RUN
    return _run(use, root, entry, step=step, seed=seed, device=device, era=era, timeout=timeout,
                expansion=expansion)


def _run(use, root, entry, *, step, seed, device, era, timeout, expansion=None):
    from dezero_grader import wire
    from dezero_grader.checks import CHECKS, load_all
    from dezero_grader.errors import GraderError
    from dezero_grader.intake import notebook
    from dezero_grader.records.dataflow import LearnerError, Observation
    from dezero_grader.records.status import FAILING
    from dezero_grader.grading.reference_answers import observe_reference
    from dezero_grader.grading.run import judge_check
    from dezero_grader.grading.seeds import check_seed
    from dezero_grader.isolation.worker_process import Limits
    load_all()
    definition = CHECKS[use.check]
    plan = definition.plan(use.params, check_seed(seed, use.id))
    print('reproducing {} (seed {}) against {}'.format(use.id, seed, root))
    print('  {}'.format(use.title))
    # as grading asks it (its answers are cached by probe)
    try:
        reference = observe_reference(plan.reference, limits=Limits()).observations \
            if plan.reference else {}
    except GraderError as e:
        print('repro: {}'.format(e), file=sys.stderr)
        return CANNOT_RUN
    if device == 'cuda' and not _cupy_usable():
        print('  (graded on a real GPU; no usable CuPy here, so the simulated device stands in)')
        device = 'sim'
    os.chdir(root)   # grading runs the code from the submission's top folder
    sys.path.insert(0, str(root / entry.sys_path_dir))
    from dezero_grader.sandboxed import worker   # after chdir: it names files relative to the current folder
    from dezero_grader.sandboxed.probes import handlers
    from dezero_grader.checks.environment import NO_CUPY
    if any(p.scenario == NO_CUPY for p in plan.learner):
        device = 'cpu'   # the check is the import itself, on a machine without CuPy
    try:
        handlers.setup({'entry': {'kind': entry.kind, 'module': entry.module,
                                  'path': str(root / entry.path)},
                        'device_mode': device, 'era': era})
        import_error = None
    except BaseException as e:   # noqa: B902 (the learner's import may raise anything)
        traceback.print_exc()
        err = worker._error(e)['error']
        print('\nimporting your code failed: {}: {} at {}'.format(err['type'], err['message'],
                                                                 err['where']))
        # every probe of the check fails as grading's would on a worker that cannot start
        import_error = LearnerError(err['type'], err['message'], err['where'] or '',
                                    tuple(err['traceback']))
    learner = {}
    for probe in plan.learner:
        if import_error is not None:
            learner[probe] = Observation(probe, error=import_error)
        elif probe.scenario == NO_CUPY:
            learner[probe] = Observation(probe, value={'gpu_flag': handlers._gpu_flag(
                handlers._state['api'])})
        else:
            learner[probe] = _observe(probe, handlers, worker, wire, timeout, Observation)
    # held against the declared shapes and derived on this side, as grading does
    findings = judge_check(use, definition, plan, learner,
                           {p: reference[p] for p in plan.reference})
    failing = [f for f in findings if f.status in FAILING]
    for f in findings:
        mark = '✗' if f.status in FAILING else ('✓' if f.status == 'passed' else '·')
        print('{} [{}] {}'.format(mark, f.status, notebook.relocate(f.message, expansion)))
        if f.status in FAILING:
            for line in _expected_found(f.evidence):
                print('      ' + notebook.relocate(line, expansion))
    _show_arrays(plan, learner, reference)
    if failing:
        print('\nREPRODUCED: {} of {} sub-check(s) of {} fail'.format(len(failing), len(findings),
                                                                       use.id))
        return REPRODUCES
    print('\nnot reproduced: every sub-check of {} passes now'.format(use.id))
    return FIXED


def _cupy_usable():
    try:
        import cupy
        return cupy.cuda.runtime.getDeviceCount() > 0
    except Exception:
        return False


def _observe(probe, handlers, worker, wire, timeout, Observation):
    """One probe in this process, answered as the grader's worker answers it."""
    from dezero_grader.records.dataflow import LearnerError
    import time
    started = time.perf_counter()
    timed = hasattr(signal, 'setitimer') and hasattr(signal, 'SIGPROF')
    if timed:
        previous = (signal.signal(signal.SIGPROF, _stop), signal.signal(signal.SIGALRM, _stop))
        signal.setitimer(signal.ITIMER_PROF, timeout)            # CPU time, as grading counts it
        signal.setitimer(signal.ITIMER_REAL, _HANG_FACTOR * timeout)   # code that waits
    try:
        answer = handlers.probe({'scenario': probe.scenario, 'params': wire.encode(dict(probe.params)),
                                 'seed': probe.seed, 'device': probe.device})
        return Observation(probe, value=wire.decode(answer), duration_s=time.perf_counter() - started)
    except _Stopped as stopped:
        where = _innermost(sys.exc_info()[2])
        at = ' (it was running {})'.format(where) if where else ''
        if stopped.args and stopped.args[0] == signal.SIGALRM:
            text = 'did not finish within {:g} s of wall-clock time{}: look for code that waits ' \
                   'for something that never comes'.format(_HANG_FACTOR * timeout, at)
        else:
            text = 'did not finish within the {:g} s CPU-time limit{}: look for an endless ' \
                   'loop'.format(timeout, at)
        return Observation(probe, error=LearnerError('WorkerFailure', text, where=where,
                                                     kind='timeout'))
    except BaseException as e:   # noqa: B902 (the learner's code may raise anything)
        print('--- your code raised (traceback, innermost last) ---')
        traceback.print_exc(file=sys.stdout)
        err = worker._error(e)['error']
        return Observation(probe, error=LearnerError(err['type'], err['message'], err['where'] or '',
                                                     tuple(err['traceback'])))
    finally:
        if timed:
            signal.setitimer(signal.ITIMER_PROF, 0)
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGPROF, previous[0])
            signal.signal(signal.SIGALRM, previous[1])


_HANG_FACTOR = 10   # the default of dezero_grader.isolation.worker_process.Limits.hang_factor


def _stop(signum, frame):
    raise _Stopped(signum)


def _innermost(tb):
    where = ''
    cwd = os.getcwd() + os.sep
    while tb is not None:
        f = tb.tb_frame.f_code.co_filename
        if f.startswith(cwd):
            where = '{}:{} in {}'.format(f[len(cwd):], tb.tb_lineno, tb.tb_frame.f_code.co_name)
        tb = tb.tb_next
    return where


_PAIRS = (('expected', 'found'), ('expected_at_worst', 'found_at_worst'),
          ('expected_shape', 'found_shape'))


def _expected_found(evidence):
    """What was expected next to what was found, from a finding's evidence."""
    lines = []
    ev = dict(evidence or {})
    if isinstance(ev.get('first_mismatch'), dict):
        ev.update(ev.pop('first_mismatch'))
    for exp, found in _PAIRS:
        if exp in ev or found in ev:
            lines.append('expected: {}'.format(_short(ev.get(exp))))
            lines.append('found:    {}'.format(_short(ev.get(found))))
    for key in ('path', 'problem', 'worst_index', 'max_abs_error', 'pattern', 'exception', 'where',
                'raised', 'exception_message', 'missing'):
        if key in ev and ev[key] not in ('', None, []):
            lines.append('{}: {}'.format(key.replace('_', ' '), _short(ev[key])))
    return lines


def _short(value, limit=300):
    text = str(value)
    return text if len(text) <= limit else text[:limit - 3] + '...'


def _show_arrays(plan, learner, reference):
    """For a function evaluated on both sides: its output and gradients, yours beside the
    reference's (small arrays only)."""
    import numpy as np
    if not plan.reference or plan.learner[0].scenario != 'fn.eval':
        return
    mine, ref = learner[plan.learner[0]], reference.get(plan.reference[0])
    if not mine.ok or ref is None or not ref.ok:
        return
    pairs = [('y', mine.value.get('y'), ref.value.get('y'))]
    for k, (g, rg) in enumerate(zip(mine.value.get('grads') or (), ref.value.get('grads') or ())):
        pairs.append(('grad of input {}'.format(plan.learner[0].params['wrt'][k]), g, rg))
    print('\n  values (yours, then the reference\'s):')
    for name, a, b in pairs:
        a = None if a is None else np.asarray(getattr(a, 'data', a))
        b = None if b is None else np.asarray(getattr(b, 'data', b))
        if (a is not None and a.size > 64) or (b is not None and b.size > 64):
            continue
        print('    {} found:    {}'.format(name, _array_text(a)))
        print('    {} expected: {}'.format(name, _array_text(b)))


def _array_text(a):
    import numpy as np
    if a is None:
        return 'None'
    return np.array2string(a, precision=6, separator=', ', max_line_width=200).replace('\n', ' ')
