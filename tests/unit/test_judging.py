"""Whose fault a failing judge is: a learner's report of another form than its scenario declares
was forged in the learner's worker (an error of the check); a judge that fails on reports of the
declared form is the grader's own bug (a GraderError, an `invalid` scorecard coded grader-error)."""
import dataclasses

import pytest

import reference
from grader import assignments, load, recurrence, run
from grader.checks import JudgeInput, Plan
from grader.errors import GraderError
from grader.model import Observation, Probe
from grader.wire import Array
from grader.observe import WorkerRun

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
    assert result.status == 'error'
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
    params = [{'place': place, 'value': Array(recurrence.seeded(1, 'rnn:' + place, shape), 'cpu')}
              for place, shape in (('x2h/W', (2, 3)), ('x2h/b', (3,)), ('h2h/W', (3, 3)))]
    report = {'params': params, 'window': {'raised': 'TypeError', 'message': 'expected an array'}}
    assert run.misshapen_reports([Observation(plan.learner[0], value=report)]) == []
    findings = definition.judge(JudgeInput(
        params=use.params, tolerance=dict(definition.tolerance, **use.tolerance), plan=plan,
        learner={plan.learner[0]: Observation(plan.learner[0], value=report)}, reference={}))
    assert [f.status for f in findings] == ['passed', 'failed']   # the parameters, then the window
    assert 'raised TypeError: expected an array' in findings[1].message
