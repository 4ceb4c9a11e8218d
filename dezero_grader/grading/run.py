"""Grade one submission for one step: the whole data flow, in order.

submission → (load) scratch copy → (checks' plans) probes → (observe: learner and reference
workers, side by side) observations → (checks' judges) findings → check results → (score)
verdict → (scorecard) document. Nothing here decides a verdict itself and nothing here runs
learner code.
"""
from __future__ import annotations

import concurrent.futures
import dataclasses
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from dezero_grader import contracts
from dezero_grader.catalogue import assignments
from dezero_grader.checks import CHECKS, JudgeInput, environment
from dezero_grader.errors import GraderError, SubmissionError
from dezero_grader.grading import diagnose, fingerprints, stepfile_reach
from dezero_grader.grading.reference_answers import believe_skips, observe_reference
from dezero_grader.grading.trust import forged_reports, misshapen_reports, more_text
from dezero_grader.grading.worker_session import observe
from dezero_grader.grading.repro_snippets import repro_for
from dezero_grader.intake import load
from dezero_grader.isolation import bwrap
from dezero_grader.isolation.worker_process import Limits
from dezero_grader.records.dataflow import CheckResult, Finding, Target
from dezero_grader.records.status import FAILING
from dezero_grader.scoring import score, scorecard_write
# the course secret and the seeds it gives live in dezero_grader.grading.seeds (the worker's host and the repro
# lines read them too, without importing the pipeline); re-exported here for callers of run
from dezero_grader.grading.seeds import (NO_SECRET, SECRET_ENV, SECRET_FILE_ENV, check_seed,  # noqa: F401
                                         course_secret, course_secret_digest, default_seed)


@dataclass(frozen=True)
class Options:
    device: str = 'auto'          # auto | sim | cuda | cpu
    seed: int | None = None
    profile: str = 'book'         # book | extension: which tiers decide the verdict
    era: str = 'book'             # book | current: the environment the code must run in
    limits: Limits = field(default_factory=Limits)
    use_cache: bool = True
    only: tuple = ()              # check ids to run (empty: all)
    policy: object = None         # dezero_grader.scoring.policy.Policy (None: the default policy)
    timing: object = None         # dezero_grader.scoring.policy.Timing: when handed in and due (late penalty)
    language: str | None = None   # the report's language, recorded in the scorecard (None: the policy's, else none)


def resolve_device(device: str) -> str:
    if device in ('sim', 'cpu'):
        return device
    if device == 'cuda' or device == 'auto':
        if _real_gpu():
            return 'cuda'
        if device == 'cuda':
            raise SystemExit('--device cuda: no usable CuPy and GPU here; use --device sim')
        return 'sim'
    raise ValueError('unknown device {!r}'.format(device))


def _real_gpu() -> bool:
    """A real CuPy with at least one usable device (the simulated one, when this process has it
    installed, does not count; CuPy importable without a driver does not either)."""
    simulated = sys.modules.get('dezero_grader.sandboxed.simdevice')   # only ever imported by tests here
    if simulated is not None and simulated.installed():
        return False
    try:
        import cupy
        return cupy.cuda.runtime.getDeviceCount() > 0 and bool(cupy.zeros(1).get() == 0)
    except Exception:
        return False


def grade(source, step: int, options: Options = Options(), progress=None,
          on_grader_error=None, on_prepared=None) -> dict:
    """The scorecard of `source` at `step`. Never raises for anything a submission holds: what
    the learner handed in that cannot be graded is an `invalid` scorecard with its reason, and a
    failure of the grader itself (its reference, a judge, a bug on any input) a `grader-error`
    scorecard that says so and is never a grade. Only a usage error stops it before grading (an
    unknown step, --device cuda without a GPU, bubblewrap asked for and missing).
    `on_grader_error(exc)` hears of the exception behind a `grader-error` scorecard (a batch logs
    its traceback for the instructor; the learner's document never holds one).
    `on_prepared(submission)` hears of the scratch copy once it is made (`load.Submission`: a
    batch's receipt records the fingerprint of what was graded, not of the hand-in now)."""
    started = time.perf_counter()
    assignment = assignments.load(step)
    device_mode = resolve_device(options.device)
    # which sandbox, decided once: every worker of this grading gets it, the scorecard says it
    options = dataclasses.replace(options, limits=dataclasses.replace(
        options.limits, sandbox=bwrap.resolve(options.limits.sandbox)))
    try:
        return _grade(source, step, assignment, device_mode, options, progress, started,
                      on_grader_error, on_prepared)
    except Exception as e:   # the boundary: a bug of ours on any input is a scorecard, not a crash
        if on_grader_error is not None:
            on_grader_error(e)
        return scorecard_write.grader_error(source, assignment, options, device_mode, e,
                                      seed=options.seed or 0, started=started)


def _grade(source, step, assignment, device_mode, options, progress, started,
           on_grader_error, on_prepared) -> dict:
    scratch = Path(tempfile.mkdtemp(prefix='dezero-grade-'))
    try:
        try:
            sub = load.prepare(Path(source), step, scratch)
        except SubmissionError as e:
            return scorecard_write.invalid(source, assignment, options, device_mode, e.code, e.message,
                                     seed=options.seed or 0, started=started)
        if on_prepared is not None:
            on_prepared(sub)
        seed = options.seed if options.seed is not None else default_seed(
            sub.content_hash, step, course_secret())
        work = plan(assignment, seed, options.only, sub)
        if progress:
            progress.start(len(work.learner_probes))
            progress.phase('starting the sandbox and importing your code')

        regraded = None

        def grader_failed(e):
            # the grader's own failure (its reference, or a judge): the learner still gets a
            # scorecard, and it says whose failure it was
            if on_grader_error is not None:
                on_grader_error(e)
            return scorecard_write.grader_error(source, assignment, options, device_mode, e, seed=seed,
                                          started=started, submission=sub,
                                          regraded=regraded)

        target = Target(cwd=sub.root, sys_path=(sub.root / sub.entry.sys_path_dir,),
                        entry={'kind': sub.entry.kind, 'module': sub.entry.module,
                               'path': str(sub.root / sub.entry.path)})
        with concurrent.futures.ThreadPoolExecutor(2) as pool:
            ref_future = pool.submit(observe_reference, work.reference_probes,
                                     limits=options.limits, use_cache=options.use_cache)
            learner = observe(target, work.learner_probes, device_mode=device_mode,
                              limits=options.limits, era=options.era,
                              progress=progress.advance if progress else None)
            if learner.busy:
                # out of wall-clock time while the machine kept the code waiting for a CPU: the
                # machine's fault, not the code's; graded again, once, and the scorecard says so
                regraded = regrade_record(learner)
                if progress:
                    progress.phase('the machine is busy: grading your code again')
                    progress.start(len(work.learner_probes))
                learner = observe(target, work.learner_probes, device_mode=device_mode,
                                  limits=options.limits, era=options.era,
                                  progress=progress.advance if progress else None)
            if progress and not ref_future.done():
                progress.phase('waiting for the reference\'s answers (computed once, then cached)')
            try:
                reference = ref_future.result()
                # trust, decided once both sides are observed
                learner = believe_skips(learner, reference, limits=options.limits,
                                        device_mode=device_mode)
            except GraderError as e:
                return grader_failed(e)
        if learner.failure is None:
            learner = forged_reports(learner)
        if learner.failure is not None:
            f = _parser_limit(learner.failure, sub)
            return scorecard_write.invalid(source, assignment, options, device_mode, f.code, f.message,
                                     seed=seed, started=started, submission=sub,
                                     output_tail=f.output_tail, regraded=regraded)
        try:
            results = judge(work, assignment, learner, reference, device_mode, seed, sub,
                            options=options)
        except GraderError as e:   # a judge's own bug: loud
            return grader_failed(e)
        diagnosis = diagnose_results(results, assignment, options.profile)
        results = _with_causes(results, diagnosis)
        verdict = score.decide(results, options.profile, options.policy, options.timing,
                               assignment.step)
        return scorecard_write.build(sub, assignment, options, device_mode, seed, verdict, results,
                               learner, started, diagnosis=diagnosis, regraded=regraded)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def regrade_record(first) -> dict:
    """What the scorecard says of a grading done again because the machine was busy: why, and
    what the first run met (its first wall-clock timeout on a busy machine)."""
    return {'reason': 'busy-machine',
            'message': 'the first grading ran out of wall-clock time while the machine kept the '
                       'code waiting for a CPU ({} time{}); it was graded again and this is the '
                       'second grading'.format(len(first.busy), '' if len(first.busy) == 1 else 's'),
            'first': first.busy[0][:2000]}


def _parser_limit(failure, sub):
    """An import that ran out of memory or recursed without end may be Python's parser giving up
    on a file nested too deep (`x = ----...1`, 100,000 deep): then that file is named, as for a
    syntax error, instead of blaming a memory limit the code never reached."""
    if failure.code not in ('memory', 'import-error') or (
            failure.code == 'import-error' and 'RecursionError' not in failure.message):
        return failure
    rel = load.beyond_the_parser(sub.root)
    if rel is None:
        return failure
    return dataclasses.replace(failure, code='syntax-error', message=(
        'Python cannot read {}: it nests deeper than Python\'s parser goes (an expression or '
        'block nested thousands of levels deep); write it as smaller pieces'.format(
            rel)))


@dataclass(frozen=True)
class Work:
    uses: tuple          # (CheckUse, is_regression)
    plans: dict          # check id -> Plan
    learner_probes: tuple
    reference_probes: tuple


def plan(assignment, seed: int, only=(), submission=None) -> Work:
    """Every check of the step and of its regression steps → the probes to run."""
    own, regression = checks_of(assignment, submission)
    uses = [(u, False) for u in own] + [(u, True) for u in regression]
    if only:
        uses = [(u, r) for u, r in uses if u.id in only or u.id.split('/', 1)[1] in only]
    return plan_uses(uses, seed)


def checks_of(assignment, submission=None, every=False) -> tuple:
    """(this step's checks, with the environment checks every grading has -- which never
    regress, `dezero_grader.checks.environment` --, the regression checks a grading of it runs): see
    `assignments.regression_of` for which earlier steps those are. A step file answers for the
    earlier step files' checks its code still carries (`dezero_grader.grading.stepfile_reach`): read from
    `submission` (a `load.Submission`); `every` gives all that any step file could answer for
    (to look a check up by its id)."""
    own, regression = assignments.with_regression(assignment)
    if assignment.entry == 'single-file' and (every or submission is not None):
        seen = {u.id for u in own} | {u.id for u in regression}
        if every:
            extra = stepfile_reach.any_regression(assignment.step, seen)
        else:
            extra = stepfile_reach.regression(assignment.step, _defined(submission), seen)
        regression = tuple(sorted(tuple(regression) + extra, key=lambda u: u.step))
    return tuple(own) + environment.uses_for(assignment), tuple(regression)


def _defined(submission):
    """What a submission's step file defines, as `stepfile_reach` reads it (None: not a step
    file, or not readable here)."""
    if submission.entry.kind != 'single-file':
        return None
    path = submission.root / submission.entry.path
    return stepfile_reach.defined_names(path, (path.parent, submission.root))


def plan_uses(uses, seed: int) -> Work:
    """(CheckUse, is_regression) pairs → their plans and the probes to run, each probe once (two
    checks asking for the same call share its observation)."""
    plans = {u.id: CHECKS[u.check].plan(u.params, check_seed(seed, u.id)) for u, _ in uses}
    return Work(tuple(uses), plans,
                tuple(_unique(p for pl in plans.values() for p in pl.learner)),
                tuple(_unique(p for pl in plans.values() for p in pl.reference)))


def judge(work: Work, assignment, learner, reference, device_mode, seed, sub,
          options: Options = Options()) -> list:
    """Observations → one result per check (judges are pure functions of the observations)."""
    results = []
    # what a repro snippet needs to run the check again the same way
    again = {'device_mode': device_mode, 'era': options.era,
             'timeout_s': options.limits.call_s or Limits().call_s}
    for use, is_regression in work.uses:
        t0 = time.perf_counter()
        pl = work.plans[use.id]
        definition = CHECKS[use.check]
        if use.needs_real_gpu and device_mode != 'cuda':
            findings = [Finding('not_applicable', 'needs a real GPU, and this run has none: '
                                'credited, not judged')]
        elif use.needs_gpu and device_mode == 'cpu':
            findings = [Finding('skipped', 'needs a device, and --device cpu grades without one: '
                                'not judged, so it earns nothing (grade with --device sim, the '
                                'default without a GPU)')]
        else:
            findings = _judged(use, definition, pl, learner, reference)
        probe_time = sum(learner.observations[p].duration_s for p in pl.learner)
        results.append(_result(use, findings, is_regression, seed, sub,
                               time.perf_counter() - t0 + probe_time, assignment.step, again))
    return results


def _judged(use, definition, pl, learner, reference) -> list:
    """The findings of one check's judge. Every learner report the judge would read is held
    against the shape its scenario declares (`dezero_grader.contracts`) first: one that does not fit is
    not judged, and the check fails (what only a forged answer gives
    ends the grading as `tampered` before: `forged_reports`). A judge that fails on reports of
    the declared form is itself wrong -- a GraderError, never blamed on the learner."""
    return judge_check(use, definition, pl, {p: learner.observations[p] for p in pl.learner},
                       {p: reference.observations[p] for p in pl.reference})


def judge_check(use, definition, pl, mine, theirs) -> list:
    """One check's findings from the learner's observations (`mine`) and the reference's
    (`theirs`): the learner's reports held against their declared shapes, both sides' derived
    on this side (`dezero_grader.contracts.Declaration.judged_report`), then judged."""
    problems = misshapen_reports(mine.values())
    if problems:   # a failed contract: what honest but unusual code may give, never a pass
        return [Finding('failed', 'what the process running your code reported for this check '
                        'does not have the form the grader reads ({}){}'.format(
                            problems[0][:200], more_text(problems)),
                        evidence={'report_problems': [str(p)[:200] for p in problems[:8]]})]
    try:
        mine, theirs = _derived(mine), _derived(theirs)
    except Exception as e:   # raw values of the declared form that cannot be read: the code's
        return [Finding('error', 'what the process running your code reported for this check '
                        'cannot be read ({}: {})'.format(type(e).__name__, str(e)[:200]))]
    try:
        return definition.judge(JudgeInput(
            params=use.params, tolerance=dict(definition.tolerance, **use.tolerance), plan=pl,
            learner=mine, reference=theirs))
    except Exception as e:
        raise GraderError('the grader failed judging check {} on reports of the declared form '
                          '({}: {}); this is a bug of the grader, not of the submission: report '
                          'it'.format(use.id, type(e).__name__, str(e)[:200])) from e


def _derived(observations) -> dict:
    """Observations with their reports as judges read them: what a scenario declares to derive
    from its raw values (a comparison, a count) is computed here, on the trusted side."""
    declared = contracts.load_all()
    out = {}
    for probe, obs in observations.items():
        declaration = declared.get(probe.scenario)
        if obs.ok and declaration is not None and declaration.derive is not None:
            obs = dataclasses.replace(obs, value=declaration.judged_report(obs.value, probe.params))
        out[probe] = obs
    return out


def diagnose_results(results, assignment, profile='book') -> dict:
    """Check results → the root causes of their failures, matched against the step's stored
    fingerprints (`diagnose.py`: a pure function of the results' records); the causes of the
    checks that decide the verdict under `profile` come first, those of advice after."""
    records = [{'id': r.use.id, 'status': r.status,
                'evidence': scorecard_write.jsonable(dict(r.evidence))} for r in results]
    catalogue = fingerprints.catalogue_of(assignment)
    prints = fingerprints.prints_of(fingerprints.load(assignment.step))
    return diagnose.diagnose(records, {k: v for k, v in prints.items() if k in catalogue},
                             catalogue, counted={r.use.id for r in results
                                                 if score.counts(r.use.tier, profile)})


def _with_causes(results, diagnosis):
    """Each failing check names the catalogued fault(s) of the root cause it belongs to (none
    when no catalogued fault explains it); a check without a hint of its own gets the fault's."""
    out = []
    for r in results:
        cause = diagnose.cause_of(diagnosis, r.use.id)
        faults = tuple(cause['faults']) if cause else ()
        hint = r.hint or (faults[0]['hint'] if faults else '')
        out.append(dataclasses.replace(r, faults=faults, hint=hint))
    return out


def _unique(probes):
    seen, out = set(), []
    for p in probes:
        if p not in seen:
            seen.add(p)
            out.append(p)
    return out


def _result(use, findings, is_regression, seed, sub, duration, step, again=None):
    status = score.status_of(findings)
    failing = [f for f in findings if f.status in FAILING]
    if failing:
        message = failing[0].message
        if len(failing) > 1:
            message += ' (and {} more finding{})'.format(len(failing) - 1,
                                                        's' if len(failing) > 2 else '')
        hint = next((f.hint for f in failing if f.hint), '')
    elif status == 'skipped':
        message = findings[0].message if findings else 'skipped'
        hint = ''
    else:
        message = '{} sub-check{} passed'.format(len(findings), '' if len(findings) == 1 else 's')
        hint = ''
    evidence = {'findings': [{'case': f.case, 'status': f.status, 'message': f.message,
                              **({'hint': f.hint} if f.hint else {}),
                              **({'evidence': dict(f.evidence)} if f.evidence else {})}
                             for f in findings]}
    repro = repro_for(use, seed, sub, step, **(again or {})) if status in FAILING else ''
    return CheckResult(use=use, status=status, message=message, hint=hint, evidence=evidence,
                       repro=repro, faults=(), duration_s=duration, regression=is_regression)
