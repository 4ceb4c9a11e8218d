"""A grader failure is never a grade: a `grader-error` scorecard (the grader's own bug, here
one injected into the loader) says it is the grader's fault, and every export reports it as
not graded -- LTI `Failed` with no score, Gradescope no score and a test that says grading
failed, Canvas no row, JUnit an `ungraded` error -- and no statistic of a batch counts it."""
import shutil

import pytest

from dezero_grader import reference
from dezero_grader.batch import BatchOptions
from dezero_grader.batch.summary import assignment_info, summarize
from dezero_grader.export import Graded, Submission, canvas, gradescope, junit, lti
from dezero_grader.grading import run
from dezero_grader.intake import load
from dezero_grader.intake import roster as roster_mod
from dezero_grader.records import schema

STEP = 23


def _broken_prepare(*args, **kwargs):
    raise RuntimeError('a bug of the loader')


@pytest.fixture(scope='module')
def cards(tmp_path_factory):
    """(a grader-error scorecard, an accepted one) of the same step."""
    root = tmp_path_factory.mktemp('grader-failure')
    sub = root / 'alice'
    shutil.copytree(reference.ROOT / 'dezero', sub / 'dezero',
                    ignore=shutil.ignore_patterns('__pycache__', '*.pyc'))
    good = run.grade(sub, STEP, run.Options(device='sim', seed=1))
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(load, 'prepare', _broken_prepare)
        failed = run.grade(sub, STEP, run.Options(device='sim', seed=1))
    assert good['verdict'] == 'accept' and failed['invalid']['code'] == 'grader-error'
    return failed, good


def _graded(cards):
    failed, good = cards
    return Graded((Submission('alice', good), Submission('bob', failed)), None, None, None)


def test_its_message_says_whose_failure_it_is(cards):
    failed, _ = cards
    assert "not the submission's fault" in failed['reason'] and 'graded again' in failed['reason']
    assert 'your code' not in failed['reason']


def test_lti_posts_it_as_failed_grading_with_no_score(cards):
    doc, left_out, warnings = lti.document(_graded(cards))
    by_user = {s['userId']: s for s in doc['scores']}
    assert by_user['alice']['gradingProgress'] == 'FullyGraded' and 'scoreGiven' in by_user['alice']
    assert by_user['bob']['gradingProgress'] == 'Failed' and 'scoreGiven' not in by_user['bob']
    assert 'Not graded' in by_user['bob']['comment'] and any('bob' in w for w in warnings)


def test_gradescope_shows_grading_failed_and_no_score(cards):
    failed, good = cards
    out = gradescope.results(failed)
    assert 'score' not in out and not any('score' in t for t in out['tests'])
    assert [t['name'] for t in out['tests']] == [gradescope.GRADING_FAILED_TEST]
    assert not schema.errors('gradescope-results', out)
    assert gradescope.results(good)['score'] > 0   # a real grade keeps its score
    # a document with no score that does not say the grader failed is still refused
    assert schema.errors('gradescope-results', dict(out, extra_data={}))


def test_canvas_leaves_it_out_and_says_why(cards):
    roster = roster_mod.parse_csv('Student,ID,SIS User ID,SIS Login ID,Section,Submission\n'
                                  '"Liddell, Alice",1001,S-1,,A,alice\n'
                                  '"Builder, Bob",1002,S-2,,A,bob\n')
    doc, left_out = canvas.record(_graded(cards), roster)
    assert [r['student'] for r in doc['rows']] == ['Liddell, Alice']
    assert [who for who, why in left_out if 'not graded' in why] == ['bob']


def test_junit_marks_it_ungraded(cards):
    doc = junit.record(_graded(cards))
    bob = next(s for s in doc['suites'] if s['name'] == 'bob')
    assert bob['properties']['verdict'] == 'ungraded'
    assert [c['outcome'] for c in bob['cases']] == ['error']
    assert 'not graded' in bob['cases'][0]['message']


def test_a_batch_counts_it_in_no_score(cards):
    failed, good = cards
    summary = summarize(assignment=assignment_info(STEP), options=BatchOptions(STEP).to_json(), shards={'count': 1, 'included': [1]},
                        graded=[('alice', good), ('bob', failed)], failures=[])
    assert summary['scores']['count'] == 1 and summary['scores']['min'] == good['score']['earned']
    assert [u['id'] for u in summary['ungraded'] if u['code'] == 'grader-error'] == ['bob']
