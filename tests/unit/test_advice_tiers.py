"""Checks that do not count (advice: the extension tier under the book profile) never drown or
outrank what decided the verdict: not in the diagnosis, the terminal and HTML reports, JUnit,
Gradescope, LTI or the class summary. Synthetic scorecards; no worker is started."""
import xml.etree.ElementTree as ET
from pathlib import Path

from dezero_grader.batch import summary
from dezero_grader.export import Graded, Submission, gradescope, junit, lti
from dezero_grader.grading import diagnose
from dezero_grader.present import html_page, terminal
from dezero_grader.scoring.scorecard_read import Scorecard


def finding(status='failed', case='', **evidence):
    return {'case': case, 'status': status, 'message': 'm',
            **({'evidence': evidence} if evidence else {})}


def check(id, tier='book', status='failed', regression=False):
    earned = 1.0 if status == 'passed' else 0.0
    return {'id': id, 'step': 53 if regression else 57, 'title': 'what {} checks'.format(id),
            'tier': tier, 'category': 'state', 'status': status,
            'points': 0.0 if regression else 1.0, 'earned': 0.0 if regression else earned,
            'regression': regression, 'message': '{} went wrong'.format(id),
            'hint': 'look at {}'.format(id), 'repro': 'print(1)\n' if status != 'passed' else '',
            'faults': [], 'duration_s': 0.1,
            'evidence': {'findings': [finding(status)]}}


def sig():
    return {'status': 'failed', 'cases': [''], 'exceptions': [], 'messages': [], 'divergent': []}


CATALOGUE = {'bias-bug': {'title': 'the bias gradient is doubled', 'hint': 'gb', 'step': 57},
             'state-stale': {'title': 'optimizer state stays on the host', 'hint': 'move it',
                             'step': 52}}
# the advice fault explains more failing checks than the bug that decides the verdict
PRINTS = {'bias-bug': {'step57/conv': sig()},
          'state-stale': {'step57/state.a': sig(), 'step53/state.b': sig(),
                          'step53/state.c': sig()}}


def scorecard(book_fails, profile='book'):
    checks = [check('step57/conv', status='failed' if book_fails else 'passed'),
              check('step57/pool', status='passed'),
              check('step57/state.a', 'extension'),
              check('step53/state.b', 'extension', regression=True),
              check('step53/state.c', 'extension', regression=True)]
    d = diagnose.diagnose(checks, PRINTS, CATALOGUE,
                          counted=diagnose.counted_ids(checks, profile))
    for c in checks:
        cause = diagnose.cause_of(d, c['id'])
        c['faults'] = list(cause['faults']) if cause else []
    verdict = 'reject' if book_fails else 'accept'
    return {'assignment': {'step': 57, 'title': 'conv2d'},
            'submission': {'id': 'learner', 'content_hash': 'sha256:' + '0' * 64},
            'environment': {'device_mode': 'sim', 'sandbox': 'basic'}, 'seed': 1,
            'profile': profile, 'era': 'book', 'verdict': verdict,
            'reason': 'because', 'tool': {'name': 'dezero-grade', 'version': '0'},
            'score': {'earned': 1.0 if book_fails else 2.0, 'possible': 2.0,
                      'extension': {'earned': 0.0, 'possible': 1.0}},
            'duration_s': 1.0, 'generated_at': '2026-01-01T00:00:00Z', 'checks': checks,
            'compatibility': [], 'diagnosis': d}


def test_the_bug_that_decides_a_reject_is_root_cause_1_and_advice_comes_after():
    d = scorecard(book_fails=True)['diagnosis']
    assert [c['faults'][0]['id'] for c in d['causes']] == ['bias-bug', 'state-stale']
    assert [c['advice'] for c in d['causes']] == [False, True]
    assert diagnose.top_faults(d) == ['bias-bug']
    # under the extension profile every check counts: the fault that explains most comes first
    d = scorecard(book_fails=True, profile='extension')['diagnosis']
    assert [c['faults'][0]['id'] for c in d['causes']] == ['state-stale', 'bias-bug']
    assert not any(c['advice'] for c in d['causes'])


def test_an_accepted_report_shows_no_cross_and_lists_advice_apart():
    doc = scorecard(book_fails=False)
    text = terminal.render(doc)
    assert '✗' not in text
    assert 'checks: all 2 counted pass; advice, not counted: 3 failed' in text
    assert 'root causes' not in text   # nothing that counts failed
    advice = text.index(terminal.ADVICE_HEAD)
    assert advice < text.index('· step57/state.a [extension, state, 1 pts, not counted]')
    assert text.index('optimizer state stays on the host') > advice


def test_a_rejected_report_ranks_the_deciding_bug_first_and_advice_after_it():
    doc = scorecard(book_fails=True)
    text = terminal.render(doc)
    causes = text.index('root causes')
    assert text.index('1. the bias gradient is doubled', causes) < text.index('✗ step57/conv')
    assert text.index('✗ step57/conv') < text.index(terminal.ADVICE_HEAD) < text.index(
        '2. optimizer state stays on the host')
    assert '✗ step57/state' not in text and '✗ step53/state' not in text
    assert 'checks: 1 failed, 1 passed (counted); advice, not counted: 3 failed' in text


def test_the_html_page_marks_advice_as_advice_after_the_failing_checks():
    page = html_page.render(scorecard(book_fails=False))
    assert '&#10007;' not in page and 'class="card fail' not in page
    assert page.count('class="card advice check"') == 3
    assert 'checks: all 2 counted pass' in page
    page = html_page.render(scorecard(book_fails=True))
    assert page.count('&#10007;') == 1
    assert page.index('data-check="step57/conv"') < page.index('id="advice"')


def _graded(doc):
    return Graded((Submission('learner', doc),), None, None, Path('.'))


def test_junit_puts_no_failure_in_an_accepted_suite_for_advice():
    text = junit.render(junit.record(_graded(scorecard(book_fails=False))))
    suite = ET.fromstring(text).find('testsuite')
    assert suite.get('failures') == '0' and suite.get('errors') == '0'
    skipped = {c.get('name'): c.find('skipped').get('message') for c in suite.iter('testcase')
               if c.find('skipped') is not None}
    assert set(skipped) == {'step57/state.a', 'step53/state.b', 'step53/state.c'}
    assert all(m.startswith('advice, not counted') for m in skipped.values())
    props = {p.get('name'): p.get('value') for p in suite.iter('property')}
    assert props['advice_failing'].startswith('3: ')
    # the check that decided a reject is still a failure
    suite = ET.fromstring(junit.render(junit.record(_graded(scorecard(True))))).find('testsuite')
    assert suite.get('failures') == '1'


def test_gradescope_shows_no_red_test_for_advice_at_full_marks():
    results = gradescope.results(scorecard(book_fails=False))
    assert [t for t in results['tests'] if t['status'] == 'failed'] == []
    advice = [t for t in results['tests'] if 'advice' in t['tags']]
    assert len(advice) == 3 and all('not counted' in t['name'] and t['max_score'] == 0
                                    and t['output'].startswith('advice, not counted')
                                    for t in advice)
    failed = [t['name'] for t in gradescope.results(scorecard(True))['tests']
              if t['status'] == 'failed']
    assert failed == ['what step57/conv checks (step57/conv)']


def test_the_lti_comment_of_an_accept_names_no_failure():
    text = lti.comment(Scorecard.from_document(scorecard(book_fails=False)))
    assert 'Failing' not in text and 'Advice, not counted' in text
    text = lti.comment(Scorecard.from_document(scorecard(book_fails=True)))
    assert text.index('Failing: what step57/conv checks') < text.index('Advice')
    assert 'state.a' not in text[:text.index('Advice')]


def test_the_class_ranks_causes_of_counted_checks_and_puts_advice_in_its_own_table():
    cards = [('a', Scorecard.from_document(scorecard(False))),
             ('b', Scorecard.from_document(scorecard(False))),
             ('c', Scorecard.from_document(scorecard(True)))]
    assert [(r['id'], r['submissions']) for r in summary.fault_counts(cards)] == [('bias-bug', 1)]
    assert [(r['id'], r['submissions']) for r in summary.fault_counts(cards, advice=True)] == [
        ('state-stale', 3)]
    page = html_page._root_causes({'faults': summary.fault_counts(cards),
                                    'advice_faults': summary.fault_counts(cards, advice=True)}, {})
    assert page.index('bias-bug') < page.index(terminal.ADVICE_HEAD) < page.index('state-stale')


def test_a_diagnosis_written_before_causes_were_marked_is_judged_by_its_checks_tiers():
    doc = scorecard(book_fails=True)
    for cause in doc['diagnosis']['causes']:
        del cause['advice']
    card = Scorecard.from_document(doc)
    assert [r['id'] for r in summary.fault_counts([('x', card)])] == ['bias-bug']
    assert [r['id'] for r in summary.fault_counts([('x', card)], advice=True)] == ['state-stale']
