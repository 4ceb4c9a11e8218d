"""Whose fault a failing judge is: a learner's report of another form than its scenario declares
was forged in the learner's worker (an error of the check); a judge that fails on reports of the
declared form is the grader's own bug (a GraderError, an `invalid` scorecard coded grader-error)."""
import dataclasses

import pytest

from dezero_grader import reference
from dezero_grader.catalogue import assignments
from dezero_grader.checks import recurrent_math
from dezero_grader.checks import JudgeInput, Plan
from dezero_grader.errors import GraderError
from dezero_grader.grading import run, trust
from dezero_grader.intake import load
from dezero_grader.records.dataflow import Observation, Probe, WorkerRun
from dezero_grader.wire import Array

PROBE = Probe('api.names', {'names': ['Variable']}, seed=1)
WELL_FORMED = {'Variable': 'class'}            # api.names reports Map(STR | NONE)
FORGED = {'Variable': {'looks': 'like a class'}}


def _failing_judge(inp):
    raise KeyError('kind')


@pytest.fixture
def setting(tmp_path, monkeypatch):
    use = assignments.load(9).checks[0]
    monkeypatch.setitem(run.CHECKS, use.check, dataclasses.replace(run.CHECKS[use.check], judge=_failing_judge))
    work = run.Work(uses=((use, False),), plans={use.id: Plan(learner=(PROBE,))},
                    learner_probes=(PROBE,), reference_probes=())
    sub = load.prepare(reference.ROOT, 9, tmp_path / 'sub')
    return work, assignments.load(9), sub


def _judge(setting, value):
    work, assignment, sub = setting
    learner = WorkerRun({PROBE: Observation(PROBE, value=value)}, {}, None)
    return run.judge(work, assignment, learner, WorkerRun({}, {}, None), 'sim', 1, sub)


def test_a_report_of_another_form_is_an_error_of_the_check_that_names_what_does_not_fit(setting):
    result, = _judge(setting, FORGED)
    assert result.status == 'failed'
    assert 'does not have the form' in result.message and 'api.names' in result.message
    assert 'Variable' in result.message   # the place in the report that does not fit


def test_a_judge_failing_on_a_well_formed_report_is_a_grader_error(setting):
    with pytest.raises(GraderError, match='bug of the grader'):
        _judge(setting, WELL_FORMED)


def test_a_judge_that_is_wrong_gives_an_invalid_scorecard_coded_grader_error(monkeypatch):
    use = assignments.load(9).checks[0]
    monkeypatch.setitem(run.CHECKS, use.check, dataclasses.replace(run.CHECKS[use.check], judge=_failing_judge))
    doc = run.grade(reference.ROOT, 9, run.Options(only=(use.id,)))
    assert doc['verdict'] == 'invalid' and doc['invalid']['code'] == 'grader-error'
    assert 'bug of the grader' in doc['reason'] and 'KeyError' in doc['reason']


def test_a_recurrent_phase_that_raised_is_judged_as_the_code_raising():
    # sequence.through_time's `window` is a phase: where the learner's layer raised inside it, it
    # holds only what was raised -- a failure of the code, named, not of the grader
    use = next(u for u in assignments.load(59).checks if u.id == 'step59/rnn.through_time')
    definition = run.CHECKS[use.check]
    plan = definition.plan(use.params, 1)
    params = [{'place': place, 'value': Array(recurrent_math.seeded(1, 'rnn:' + place, shape), 'cpu')}
              for place, shape in (('x2h/W', (2, 3)), ('x2h/b', (3,)), ('h2h/W', (3, 3)))]
    report = {'params': params, 'window': {'raised': 'TypeError', 'message': 'expected an array'}}
    assert trust.misshapen_reports([Observation(plan.learner[0], value=report)]) == []
    findings = definition.judge(JudgeInput(
        params=use.params, tolerance=dict(definition.tolerance, **use.tolerance), plan=plan,
        learner={plan.learner[0]: Observation(plan.learner[0], value=report)}, reference={}))
    assert [f.status for f in findings] == ['passed', 'failed']   # the parameters, then the window
    assert 'raised TypeError: expected an array' in findings[1].message


# -- reports are held against their declared shapes before any judge reads them -------------------
SEED = 4343


@pytest.fixture(scope='module')
def step43(tmp_path_factory):
    """Step 43's checks, the learner's probes answered by correct code (the reference run as a
    learner is), and the reference's answers."""
    from dezero_grader.grading.reference_answers import observe_reference, reference_target
    from dezero_grader.grading.worker_session import observe
    from dezero_grader.isolation.worker_process import Limits
    assignment = assignments.load(43)
    work = run.plan(assignment, SEED)
    learner = observe(reference_target(), work.learner_probes, device_mode='sim', limits=Limits())
    reference = observe_reference(work.reference_probes, limits=Limits())
    sub = load.prepare(reference_root(), 43, tmp_path_factory.mktemp('sub') / 'sub')
    return assignment, work, learner, reference, sub


def reference_root():
    return reference.ROOT


def _drop_grads(report):
    return {k: v for k, v in report.items() if k not in ('grads', 'grad_info', 'zero_grads')}


# what a worker that rewrites its answers sends: each (scenario it applies to, rewrite)
FORGERIES = {
    'gradients dropped': ('fn.eval', _drop_grads),
    'points emptied': ('fn.eval', lambda r: dict(r, points=[])),
    'one gradient short': ('fn.eval', lambda r: dict(r, grads=r['grads'][:-1])),
    'trace gradients emptied': ('graph.trace', lambda r: dict(r, grads=[])),
    'unreferenced section added': (None, lambda r: dict(r, unreferenced={
        'why': 'graded on its own', 'gradients': [],
        'properties': [{'name': 'fine', 'ok': True, 'message': 'all is well'}]})),
    'a verdict of its own added': (None, lambda r: dict(r, all_correct=True)),
}


def _forge(learner, how):
    """`learner` with every report the forgery applies to rewritten: (the side, those probes)."""
    scenario, rewrite = FORGERIES[how]
    forged = {p for p, obs in learner.observations.items()
              if obs.ok and scenario in (None, p.scenario) and isinstance(obs.value, dict)}
    assert forged
    observations = {p: dataclasses.replace(obs, value=rewrite(dict(obs.value))) if p in forged
                    else obs for p, obs in learner.observations.items()}
    return dataclasses.replace(learner, observations=observations), forged


def test_correct_code_has_reports_of_the_declared_form_and_full_marks(step43):
    assignment, work, learner, reference, sub = step43
    assert trust.forged_reports(learner) is learner
    results = run.judge(work, assignment, learner, reference, 'sim', SEED, sub)
    assert {r.status for r in results} == {'passed'}


@pytest.mark.parametrize('how', sorted(FORGERIES))
def test_a_forged_report_ends_the_grading_as_tampered_before_any_judge(step43, how):
    learner = _forge(step43[2], how)[0]
    failure = trust.forged_reports(learner).failure
    assert failure is not None and failure.code == 'tampered'
    assert 'never writes' in failure.message


@pytest.mark.parametrize('how', sorted(FORGERIES))
def test_no_check_whose_report_was_forged_passes_even_judged_on_its_own(step43, how):
    # the second line: `judge` alone (without `forged_reports` before it) judges no such report
    assignment, work, learner, reference, sub = step43
    forged_learner, forged = _forge(learner, how)
    results = run.judge(work, assignment, forged_learner, reference, 'sim', SEED, sub)
    touched = [r for r in results if set(work.plans[r.use.id].learner) & forged]
    assert touched and all(r.status == 'failed' for r in touched), [
        (r.use.id, r.status, r.message) for r in touched]
    assert all('does not have the form' in r.message for r in touched)


def _judge_alone(step43, check_id, rewrite):
    """One check's judge on a rewritten learner report, without the shape held against it."""
    from dezero_grader.checks import CHECKS
    assignment, work, learner, reference, _ = step43
    use = next(u for u, _ in work.uses if u.id == check_id)
    plan = work.plans[use.id]
    mine = {p: dataclasses.replace(learner.observations[p],
                                   value=rewrite(dict(learner.observations[p].value)))
            for p in plan.learner}
    definition = CHECKS[use.check]
    return definition.judge(JudgeInput(
        params=use.params, tolerance=dict(definition.tolerance, **use.tolerance), plan=plan,
        learner=mine, reference={p: reference.observations[p] for p in plan.reference}))


@pytest.mark.parametrize('rewrite', [_drop_grads, lambda r: dict(r, points=[]),
                                     lambda r: dict(r, zero_grads=[])])
def test_the_gradient_battery_fails_what_it_asked_for_and_did_not_get(step43, rewrite):
    findings = _judge_alone(step43, 'step43/exp', rewrite)
    assert any(f.status == 'failed' and f.case == 'grad.present' for f in findings), findings


def test_the_trajectory_fails_a_trace_without_its_gradients(step43):
    findings = _judge_alone(step43, 'step43/network', lambda r: dict(r, grads=[]))
    assert [f.status for f in findings if f.case == 'grad'] == ['failed']


def test_an_unreferenced_section_from_a_scenario_that_never_sends_one_is_not_believed(step43):
    findings = _judge_alone(step43, 'step43/fit', FORGERIES['unreferenced section added'][1])
    assert [f.status for f in findings] == ['error']
