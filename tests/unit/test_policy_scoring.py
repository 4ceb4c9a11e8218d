"""The grading policy: read and validated as data, applied by score.py alone, for every verdict.

The invariants a course publishes grades on: the final score is the checks' points plus the
policy's adjustments (never more), a rollback never keeps full marks whichever way it is scored,
unjudged checks earn nothing while not_applicable ones are credited, and lateness takes the
fraction the policy says, from Gradescope's metadata or a due date and a submission time.
"""
import datetime
import json

import pytest

from dezero_grader.records.dataflow import CheckResult, CheckUse
from dezero_grader.records.status import credited
from dezero_grader.scoring import policy, score

UTC = datetime.timezone.utc


def _use(ident, points=2.0, step=52, tier='book'):
    return CheckUse(id='step{:02d}/{}'.format(step, ident), check='x', step=step, title=ident,
                    tier=tier, category='c', points=points, params={}, tolerance={})


def _result(ident, status, points=2.0, step=52, regression=False, tier='book'):
    return CheckResult(use=_use(ident, points, step, tier), status=status, message='',
                       regression=regression)


# one set of results per verdict: (results, verdict)
CASES = {
    'accept': [_result('a', 'passed'), _result('b', 'passed', 3.0),
               _result('gpu', 'not_applicable', 1.0),
               _result('diamond', 'passed', 1.0, 16, True)],
    'rollback': [_result('a', 'passed'), _result('b', 'passed', 3.0),
                 _result('diamond', 'failed', 1.0, 16, True),
                 _result('deep', 'error', 1.0, 16, True)],
    'rollback_free_regression': [_result('a', 'passed'), _result('b', 'passed', 3.0),
                                 _result('diamond', 'failed', 0.0, 16, True)],
    'reject': [_result('a', 'failed'), _result('b', 'passed', 3.0),
               _result('diamond', 'passed', 1.0, 16, True)],
    'incomplete': [_result('a', 'skipped'), _result('b', 'passed', 3.0),
                   _result('diamond', 'passed', 1.0, 16, True)],
}
POSSIBLE = 6.0   # a + b + gpu of the accepted case, the step's own book-tier points

POLICIES = {
    'default': policy.DEFAULT,
    'cap': policy.from_document({'schema_version': '1.0', 'name': 'cap',
                                 'rollback': {'score': 'cap', 'fraction': 0.5}}),
    'late': policy.from_document({'schema_version': '1.0', 'name': 'late',
                                  'late': {'due': '2026-05-01T23:59:00+09:00', 'grace_minutes': 10,
                                           'penalty_per_day': 0.25, 'max_penalty': 0.6}}),
}
TWO_DAYS_LATE = policy.Timing(datetime.datetime(2026, 5, 3, 15, 0, tzinfo=UTC),
                              datetime.datetime(2026, 5, 1, 14, 59, tzinfo=UTC), 'test')


@pytest.mark.parametrize('case', sorted(CASES))
@pytest.mark.parametrize('name', sorted(POLICIES))
def test_every_verdict_under_every_policy(case, name):
    course = POLICIES[name]
    timing = TWO_DAYS_LATE if name == 'late' else None
    v = score.decide(CASES[case], 'book', course, timing)
    assert v.verdict == case.split('_')[0]
    own = [r for r in CASES[case] if not r.regression]
    assert v.possible == sum(r.use.points for r in own)
    # the checks earn their points: passed and not_applicable do, skipped and failed do not
    assert v.checks_earned == sum(r.use.points for r in own if credited(r.status))
    # the final number is the checks' points plus what the policy took, and never negative
    assert v.earned == pytest.approx(v.checks_earned + sum(a['points'] for a in v.adjustments))
    assert all(a['points'] <= 0 for a in v.adjustments)
    assert 0 <= v.earned <= v.possible
    if v.verdict != 'accept':
        assert v.earned < v.possible, 'a {} must not export full marks'.format(v.verdict)
    if name == 'late' and v.checks_earned:
        late = [a for a in v.adjustments if a['kind'] == 'late']
        # 2 days and 1 minute after the due time, 10 minutes of grace: 2 started days, 25% each
        assert late and late[0]['days_late'] == 2 and late[0]['fraction'] == 0.5


def test_a_rollback_costs_its_failing_regression_checks_by_default():
    v = score.decide(CASES['rollback'], 'book')
    assert (v.checks_earned, v.earned) == (5.0, 3.0)          # two failing checks of 1 point
    assert [a['kind'] for a in v.adjustments] == ['rollback']
    assert v.adjustments[0]['checks'] == ['step16/diamond', 'step16/deep']
    # a regression check worth nothing in its own step still costs a point
    assert score.decide(CASES['rollback_free_regression'], 'book').earned == 4.0


def test_a_capped_rollback_keeps_at_most_the_fraction():
    v = score.decide(CASES['rollback'], 'book', POLICIES['cap'])
    assert v.earned == v.possible * 0.5
    below = score.decide([_result('a', 'failed'), _result('b', 'passed', 1.0),
                          _result('d', 'failed', 1.0, 16, True)], 'book', POLICIES['cap'])
    assert below.earned == below.checks_earned == 1.0 and not below.adjustments


def test_lateness_follows_grace_days_and_the_cap():
    late = POLICIES['late'].late
    due = datetime.datetime(2026, 5, 1, 12, 0, tzinfo=UTC)

    def fraction(**delta):
        return score.late_fraction(late, policy.Timing(due + datetime.timedelta(**delta), due))[0]

    assert fraction(minutes=-5) == 0 and fraction(minutes=10) == 0      # early, within grace
    assert fraction(minutes=11) == 0.25                                 # a started day
    assert fraction(days=1, minutes=10) == 0.25
    assert fraction(days=1, minutes=11) == 0.5
    assert fraction(days=30) == 0.6                                     # max_penalty
    assert score.late_fraction(late, policy.Timing(None, due)) == (0.0, None)
    on_time = score.decide(CASES['accept'], 'book', POLICIES['late'],
                           policy.Timing(due - datetime.timedelta(hours=1), due))
    assert on_time.earned == POSSIBLE and not on_time.adjustments


def test_the_extension_tier_is_scored_apart_and_left_alone():
    results = CASES['rollback'] + [_result('ext', 'passed', 2.0, tier='extension')]
    v = score.decide(results, 'book')
    assert (v.extension_earned, v.extension_possible) == (2.0, 2.0)


def test_gradescope_metadata_gives_the_times_and_an_extension_wins():
    course = POLICIES['late']
    meta = {'created_at': '2026-05-02T10:00:00.123456-07:00',
            'assignment': {'due_date': '2026-05-01T23:00:00.000000-07:00', 'late_due_date': None},
            'users': [{'email': 'a@example.org', 'id': 1, 'name': 'A'}]}
    t = policy.timing(course, metadata=meta)
    assert t.submitted_at == datetime.datetime(2026, 5, 2, 17, 0, 0, 123456, tzinfo=UTC)
    assert t.due == datetime.datetime(2026, 5, 2, 6, 0, tzinfo=UTC)
    meta['users'][0]['assignment'] = {'due_date': '2026-05-03T23:00:00-07:00'}
    assert policy.timing(course, metadata=meta).due == datetime.datetime(2026, 5, 4, 6, 0, tzinfo=UTC)
    # without metadata: --submitted-at and the policy's due date
    t = policy.timing(course, '2026-05-02T00:00:00Z')
    assert (t.submitted_at - t.due) == datetime.timedelta(hours=9, minutes=1)
    with pytest.raises(policy.PolicyError, match='UTC offset'):
        policy.timing(course, '2026-05-02T00:00:00')


def test_visibility_per_check_pattern_then_regression_then_default():
    course = policy.from_document({'schema_version': '1.0', 'visibility': {
        'default': 'after_due_date', 'regression': 'visible',
        'checks': {'step52/device.fn.*': 'hidden', 'step16/deep_diamond': 'after_published'}}})
    assert course.visibility('step52/device.fn.exp', False) == 'hidden'
    assert course.visibility('step16/deep_diamond', True) == 'after_published'
    assert course.visibility('step16/diamond', True) == 'visible'
    assert course.visibility('step52/api', False) == 'after_due_date'
    assert policy.DEFAULT.visibility('step52/api', False) == 'visible'


@pytest.mark.parametrize('document, words', [
    ({'schema_version': '1.0', 'rollback': {'score': 'cap', 'fraction': 1.0}}, 'rollback'),
    ({'schema_version': '1.0', 'unjudged': 'half'}, 'unjudged'),
    ({'schema_version': '1.0', 'late': {'penalty_per_day': 2}}, 'late'),
    ({'schema_version': '1.0', 'visibility': {'default': 'sometimes'}}, 'visibility'),
    ({'rollback': {'score': 'cap', 'fraction': 0.5}}, 'schema_version'),
])
def test_a_wrong_policy_is_refused_with_where_it_is_wrong(document, words):
    with pytest.raises(policy.PolicyError, match=words):
        policy.from_document(document)


def test_a_policy_file_is_read_hashed_and_recorded(tmp_path):
    path = tmp_path / 'course.json'
    document = {'schema_version': '1.0', 'name': 'spring', 'rollback': {'score': 'deduct_regression'}}
    path.write_text('\ufeff' + json.dumps(document), encoding='utf-8')   # a BOM, as editors save
    course = policy.load(path)
    assert course.record() == {'name': 'spring', 'sha256': policy.sha256_of(document),
                               'document': document}
    assert course.sha256 != policy.DEFAULT.sha256
    assert policy.from_record(course.record()).sha256 == course.sha256
    assert policy.load(None) is policy.DEFAULT
    (tmp_path / 'naive.json').write_text(json.dumps(
        {'schema_version': '1.0', 'late': {'due': '2026-05-01T23:59:00'}}))
    with pytest.raises(policy.PolicyError, match='UTC offset'):
        policy.load(tmp_path / 'naive.json')
    with pytest.raises(policy.PolicyError, match='does not exist'):
        policy.load(tmp_path / 'missing.json')
