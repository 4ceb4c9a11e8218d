"""The trust rules: what a learner's worker may see, and what its answers must look like to be
believed, beyond raw observations.

They sit between the worker session (`dezero_grader.grading.worker_session`, which applies the
rules on each answer as it comes) and the judges (`dezero_grader.grading.run`, which holds every
report against its declared shape before any judge reads it). A learner's worker may not read the
reference implementation, the cache of its answers or the course's secret file
(`hidden_from_learners`). An answer the grader's own worker never sends -- an error record of
another form (`error_problem`), a setup report that is not the flat one the worker writes
(`setup_shaped`), a report whose parts the scenario's own code always or never writes
(`forged_reports`) -- is forged: the learner's whole side ends as `tampered` (`forged`). A report
of the declared form's kind but not its details, which unusual honest code may give, fails the
check that reads it (`misshapen_reports`), never passes. Compatibility findings of another form
than the worker writes are dropped (`compat_finding`). A skip the learner's worker claims is
believed only when the reference skips the same probe too (`skips_believed`; the reference is
asked by `dezero_grader.grading.reference_answers.believe_skips`).
"""
from __future__ import annotations

import dataclasses
import os
from pathlib import Path

from dezero_grader import contracts
from dezero_grader.checks import environment
from dezero_grader.grading.reference_cache import cache_dir
from dezero_grader.grading.seeds import SECRET_FILE_ENV
from dezero_grader.records.dataflow import LearnerError, SetupFailure, WorkerRun

_GRADER_DIR = Path(__file__).resolve().parents[1]


# -- what a learner's worker may not see ------------------------------------------------------

def hidden_from_learners(cwd: Path) -> tuple:
    """Folders (and files) a learner's worker may not read: the reference implementation (the
    oracle), the cache of its answers and the course's secret file -- except a folder that holds
    the submission or the grader itself."""
    from dezero_grader import reference
    own = [Path(cwd).resolve(), _GRADER_DIR.resolve()]
    hidden = []
    secret_file = os.environ.get(SECRET_FILE_ENV)
    for folder in (Path(reference.ROOT), cache_dir()) + ((Path(secret_file),) if secret_file else ()):
        folder = Path(os.path.realpath(folder))
        if not any(p == folder or folder in p.parents for p in own):
            hidden.append(folder)
    return tuple(hidden)


# -- the form of each answer --------------------------------------------------------------------

def forged(what, tail) -> SetupFailure:
    """A learner's worker answered what the grader's own worker never sends: the whole submission
    is `tampered`, not one test."""
    return SetupFailure('tampered', 'the process running your code answered {}; was the grader '
                        'changed from inside it?'.format(what), tail)


def learner_error(error: dict) -> LearnerError:
    """An error answer of a worker (`dezero_grader.sandboxed.capture.describe`'s record) as the trusted
    side keeps it; the worker's text is cut to 2000 characters."""
    return LearnerError(type=str(error.get('type', 'Exception')),
                        message=str(error.get('message', ''))[:2000],
                        where=str(error.get('where') or ''), traceback=tuple(error.get('traceback') or ()))


def error_problem(error) -> str:
    """'' if `error` has the form `dezero_grader.sandboxed.capture.describe` (or the worker's own
    refusals) give an error answer, else what does not fit: `type` and `message` are text,
    `traceback` a list of text, `where` text or None, `errno` a whole number."""
    if not isinstance(error, dict):
        return 'the error is not a record'
    for key in ('type', 'message'):
        if not isinstance(error.get(key, ''), str):
            return '{} is not text'.format(key)
    trace = error.get('traceback', [])
    if not isinstance(trace, list) or not all(isinstance(line, str) for line in trace):
        return 'traceback is not a list of text'
    if error.get('where') is not None and not isinstance(error['where'], str):
        return 'where is neither text nor null'
    if 'errno' in error and (not isinstance(error['errno'], int) or isinstance(error['errno'], bool)):
        return 'errno is not a whole number'
    return ''


def setup_shaped(info) -> bool:
    """What `dezero_grader.sandboxed.probes.handlers.setup` answers: a flat report of plain values."""
    if not isinstance(info, dict) or not isinstance(info.get('import_s'), (int, float)):
        return False
    flag = info.get('gpu_flag', ())
    return isinstance(info.get('gpu_enable'), bool) and isinstance(info.get('scenarios'), list) \
        and all(isinstance(n, str) for n in info['scenarios']) \
        and (flag is None or isinstance(flag, (bool, str)))


def compat_finding(f) -> dict:
    """A compatibility finding as the worker reported it, in plain text fields; one of another
    form raises (AttributeError, TypeError, ValueError, OverflowError) and is dropped."""
    return {'api': str(f.get('api', '')), 'where': str(f.get('where', '')),
            'message': str(f.get('message', '')), 'since': str(f.get('since', '')),
            'fix': str(f.get('fix', '')), 'count': _count(f.get('count', 1))}


def _count(value) -> int:
    """A finding's count as the worker writes it (a whole number); anything else is garbled."""
    if not isinstance(value, int) or isinstance(value, bool):
        raise ValueError('a count is a whole number')
    return max(1, value)


# -- the reports, against their declared shapes -------------------------------------------------

def more_text(problems) -> str:
    """' and N more' after the first of `problems`, when there are more."""
    return '' if len(problems) == 1 else ' and {} more'.format(len(problems) - 1)


def misshapen_reports(observations) -> list:
    """What, in the reports among `observations`, does not fit the shape their scenario declares
    for their probe (`dezero_grader.contracts.Declaration.report_problems`), as 'scenario: problem'
    `Problem`s (`forged` kept). A report of a scenario nobody declared does not fit at all."""
    declared = contracts.load_all()
    out = []
    for obs in observations:
        if not obs.ok:
            continue
        if obs.probe.scenario == environment.NO_CUPY:   # answered from a setup, not a scenario
            problem = environment.report_problem(obs.value)
            if problem:
                out.append(_as_problem('{}: {}'.format(environment.NO_CUPY, problem), True))
            continue
        declaration = declared.get(obs.probe.scenario)
        if declaration is None:
            out.append(_as_problem('{}: no such scenario is declared'.format(obs.probe.scenario),
                                   True))
            continue
        for problem in declaration.report_problems(obs.value, obs.probe.params):
            out.append(_as_problem('{}: {}'.format(obs.probe.scenario, problem), problem.forged))
    return out


def _as_problem(text, is_forged):
    from dezero_grader.contracts.shapes import Problem
    p = Problem(text)
    p.forged = is_forged
    return p


def forged_reports(learner: WorkerRun) -> WorkerRun:
    """The learner's side, ended as `tampered` where one of its reports has a form only a forged
    answer gives (a part the grader's own scenario code always or never writes for that probe:
    a key missing or undeclared, a list of another length than the probe's parameters fix),
    before any judge reads it."""
    found = [p for p in misshapen_reports(learner.observations.values()) if p.forged]
    if not found:
        return learner
    return dataclasses.replace(learner, failure=SetupFailure(
        'tampered', 'the process running your code answered with a report the grader\'s own code '
        'never writes ({}{}); was the grader changed from inside it?'.format(
            found[0][:200], more_text(found)), learner.output_tail))


# -- skips --------------------------------------------------------------------------------------

def skipped(observation) -> bool:
    """Whether a worker answered the probe with a skip (`__skipped__`)."""
    return observation.ok and isinstance(observation.value, dict) and '__skipped__' in observation.value


def skips_believed(learner: WorkerRun, reference_observations: dict) -> WorkerRun:
    """The learner's side as it stands once each skip its worker claimed is held against the
    reference's answer to the same probe (`reference_observations`, which holds every claimed
    probe the reference was asked): one skip the reference does not make too ends the side in a
    `tampered` failure."""
    for probe in learner.claimed_skips:
        theirs = reference_observations.get(probe)
        if theirs is None or not skipped(theirs):
            why = str(learner.observations[probe].value['__skipped__'])[:200]
            return dataclasses.replace(learner, setup=None, findings=(), failure=SetupFailure(
                'tampered', 'the process running your code claimed it could not run the test {} ({!r}), '
                'which the reference runs here; the grader\'s code was changed from inside it'.format(
                    probe.scenario, why), learner.output_tail))
    return learner
