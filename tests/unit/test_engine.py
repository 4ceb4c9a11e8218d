"""The pure parts of the engine: verdicts, the expectation language, comparisons, assignment
validation. No worker is started here."""
import copy
import json

import numpy as np
import pytest

from dezero_grader.catalogue import assignments
from dezero_grader.checks import compare as cmp
from dezero_grader.checks.expect import Raised, _judge_expectation, resolve
from dezero_grader.records import schema
from dezero_grader.records.dataflow import CheckResult, CheckUse, Finding
from dezero_grader.scoring import score
from dezero_grader.wire import Array


def use(id='step52/a', tier='book', points=2.0, step=52):
    return CheckUse(id=id, check='expect', step=step, title='t', tier=tier, category='device',
                    points=points, params={}, tolerance={})


def result(status, regression=False, **kw):
    return CheckResult(use=use(**kw), status=status, message='m', regression=regression)


@pytest.mark.parametrize('results, profile, verdict', [
    ([result('passed'), result('passed', regression=True, step=16)], 'book', 'accept'),
    ([result('failed'), result('passed', regression=True, step=16)], 'book', 'reject'),
    ([result('passed'), result('failed', regression=True, step=16)], 'book', 'rollback'),
    ([result('error'), result('timeout', regression=True, step=16)], 'book', 'rollback'),
    ([result('passed'), result('failed', tier='extension')], 'book', 'accept'),
    ([result('passed'), result('failed', tier='extension')], 'extension', 'reject'),
    # unjudged is not passed: a deciding check the grader could not judge blocks the accept
    ([result('skipped'), result('passed')], 'book', 'incomplete'),
    ([result('skipped', regression=True, step=16), result('passed')], 'book', 'incomplete'),
    ([result('skipped', tier='extension'), result('passed')], 'book', 'accept'),
    ([result('skipped', tier='extension'), result('passed')], 'extension', 'incomplete'),
    # a failure says more than what was not judged
    ([result('skipped'), result('failed')], 'book', 'reject'),
    ([result('skipped'), result('failed', regression=True, step=16)], 'book', 'rollback'),
    # not applicable on this machine (needs a real GPU): credited, never blocks
    ([result('not_applicable'), result('passed')], 'book', 'accept'),
])
def test_decide(results, profile, verdict):
    assert score.decide(results, profile).verdict == verdict


def test_points_count_this_steps_checks_only():
    v = score.decide([result('passed', points=2), result('failed', points=3),
                      result('passed', regression=True, step=16, points=5),
                      result('passed', tier='extension', points=1)])
    assert (v.earned, v.possible) == (2, 5)
    assert (v.extension_earned, v.extension_possible) == (1, 1)


def test_unjudged_checks_earn_nothing_and_not_applicable_ones_are_credited():
    v = score.decide([result('passed', points=2), result('skipped', points=3),
                      result('not_applicable', points=4)])
    assert v.verdict == 'incomplete'
    assert (v.earned, v.possible) == (6, 9)
    assert 'step52/a' in v.reason and 'not an accept' in v.reason


def test_status_of_takes_the_worst_finding():
    f = lambda s: Finding(s, 'x')  # noqa: E731
    assert score.status_of([f('passed'), f('failed'), f('error')]) == 'error'
    assert score.status_of([f('passed'), f('timeout')]) == 'timeout'
    assert score.status_of([f('skipped'), f('skipped')]) == 'skipped'
    assert score.status_of([f('skipped'), f('passed')]) == 'passed'
    assert score.status_of([f('not_applicable')]) == 'not_applicable'
    assert score.status_of([f('not_applicable'), f('skipped')]) == 'skipped'
    assert score.status_of([f('not_applicable'), f('failed')]) == 'failed'
    with pytest.raises(ValueError):
        f('maybe')


def test_resolve_paths_and_raised_phases():
    report = {'a': {'b': [1, 2, 3]}, 'p': {'raised': 'TypeError', 'message': 'no'},
              'rows': [{'v': 1}, {'v': 2}]}
    assert resolve(report, 'a.b[*]') == [1, 2, 3]
    assert resolve(report, 'a.b[1]') == [2]
    assert resolve(report, 'rows[*].v') == [1, 2]
    with pytest.raises(Raised):
        resolve(report, 'p.devices[*]')


def exp(**kw):
    return dict({'message': 'contract'}, **kw)


def test_expectations_pass_and_fail_with_evidence():
    report = {'devs': ['gpu', 'cpu'], 'x': Array(np.array([1.0, 2.0]), 'cpu'),
              'y': Array(np.array([1.0, 2.0 + 1e-12]), 'cpu'), 'phase': {'raised': 'TypeError',
                                                                        'message': 'Unsupported'}}
    bad = _judge_expectation(report, exp(path='devs[*]', op='eq', value='gpu', hint='h'), {})
    assert bad.status == 'failed' and bad.evidence['found'] == 'cpu' and bad.hint == 'h'
    assert _judge_expectation(report, exp(path='x', op='close', other='y'), {}).status == 'passed'
    far = _judge_expectation(report, exp(path='x', op='close', value=[1.0, 2.1]), {})
    assert far.status == 'failed'
    raised = _judge_expectation(report, exp(path='phase.z', op='eq', value=1), {})
    assert raised.status == 'failed' and 'TypeError' in raised.message
    missing = _judge_expectation(report, exp(path='nothing', op='true'), {})
    assert missing.status == 'failed' and 'nothing was reported' in missing.message


def test_an_expectations_comparison_never_escapes_the_judge():
    # what the learner's code reported decides these; none may crash the judge (a grader-error)
    report = {'value': Array(np.array([1.0]), 'cpu'), 'expected': {'raised': 'TypeError',
                                                                   'message': 'only 0-dimensional'},
              'n': None, 'pair': [1.0, 2.0], 'one': [1.0], 'label': 'cat'}
    other_raised = _judge_expectation(report, exp(path='value', op='close', other='expected'), {})
    assert other_raised.status == 'failed' and 'only 0-dimensional' in other_raised.message
    other_missing = _judge_expectation(report, exp(path='value', op='close', other='nowhere'), {})
    assert other_missing.status == 'failed' and 'nowhere' in other_missing.message
    uneven = _judge_expectation(report, exp(path='pair[*]', op='close', other='one[*]'), {})
    assert uneven.status == 'failed'
    for op, path, value in (('ge', 'n', 1.0), ('len', 'n', 2), ('in', 'label', 3),
                            ('close', 'label', 1.0)):
        got = _judge_expectation(report, exp(path=path, op=op, value=value), {})
        assert got.status == 'failed' and 'cannot be compared' in got.message, (op, got)


def test_compare_reports_error_measures_and_patterns():
    e = np.array([1.0, -2.0, 3.0])
    ok = cmp.compare(e + 1e-12, e, rtol=1e-7, atol=1e-9)
    assert ok.ok and ok.evidence['max_abs_error'] < 1e-11
    assert 'sign flipped' in cmp.compare(-e, e, 1e-7, 1e-9).evidence['pattern']
    assert 'constant factor' in cmp.compare(0.5 * e, e, 1e-7, 1e-9).evidence['pattern']
    assert 'all zeros' in cmp.compare(0 * e, e, 1e-7, 1e-9).evidence['pattern']
    assert 'wrong places' in cmp.compare(e[::-1], e, 1e-7, 1e-9).evidence['pattern']
    shape = cmp.compare(np.zeros((2, 3)), np.zeros(3), 1e-7, 1e-9)
    assert not shape.ok and shape.evidence['problem'] == 'shape'
    nan = cmp.compare(np.array([np.nan, 1.0]), np.array([0.0, 1.0]), 1e-7, 1e-9)
    assert not nan.ok


def test_tolerances_are_keyed_by_dtype_and_overridable():
    assert cmp.tolerance_for(np.float32)['rtol'] > cmp.tolerance_for(np.float64)['rtol']
    assert cmp.tolerance_for(np.float64, {'rtol': 0.5})['rtol'] == 0.5
    assert cmp.tolerance_for(np.float32, {'float32_rtol': 0.25})['rtol'] == 0.25


def test_every_assignment_file_loads_and_follows_its_schema():
    steps = assignments.available_steps()
    assert 52 in steps and 55 in steps
    for step in steps:
        a = assignments.load(step)
        assert a.step == step and a.checks or a.no_code
        own, regression = assignments.with_regression(a)
        ids = [u.id for u in own + regression]
        assert len(ids) == len(set(ids)), 'duplicate check ids at step {}'.format(step)


def _doc():
    with open(schema.data_dir('assignments') / 'step55.json', encoding='utf-8') as f:
        return json.load(f)


@pytest.mark.parametrize('mutate, words', [
    (lambda d: d['checks'][0].update(check='no.such.check'), 'unknown check'),
    (lambda d: d['checks'][0]['params'].update(bogus=1), 'parameters'),
    (lambda d: d['checks'][0].update(tier='gold'), 'schema'),
    (lambda d: d['faults'][0].update(patch='no_such_patch'), 'unknown patch'),
    (lambda d: d['faults'][0].update(caught_by=['step55/nothing']), 'does not define'),
    (lambda d: d['checks'].append(copy.deepcopy(d['checks'][0])), 'twice'),
])
def test_bad_assignments_are_refused_before_grading(mutate, words):
    doc = _doc()
    mutate(doc)
    with pytest.raises(assignments.AssignmentError, match=words):
        assignments.from_document(doc, 'step55.json')


def test_an_unknown_pack_is_a_clear_error():
    with pytest.raises(assignments.AssignmentError, match='no assignment for step no-such-pack'):
        assignments.load('no-such-pack')


def test_reference_match_judges_mixed_precision_at_the_coarser_dtype():
    """A float64 result next to a reference array computed in float32 differs by float32
    rounding, which is not a fault; a real difference still is."""
    from dezero_grader.checks import expect
    ref = np.array([0.1, -0.2, 0.3], dtype=np.float32)
    close = ref.astype(np.float64) * (1 + 3e-7)
    out = []
    expect._diff({'y': Array(close, 'cpu')}, {'y': Array(ref, 'cpu')}, '', (), None, out)
    assert out == []
    expect._diff({'y': Array(close * 1.01, 'cpu')}, {'y': Array(ref, 'cpu')}, '', (), None, out)
    assert [m['path'] for m in out] == ['y']
    out = []
    both64 = ref.astype(np.float64)
    expect._diff({'y': Array(both64 * (1 + 3e-7), 'cpu')}, {'y': Array(both64, 'cpu')}, '', (),
                 None, out)
    assert [m['path'] for m in out] == ['y']
