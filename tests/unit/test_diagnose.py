"""The diagnosis on synthetic check results: root causes matched against fingerprints, the code's
own errors grouped into one cause, and the stored fingerprints kept true. No worker is started."""
import copy

import pytest

from dezero_grader.batch import summary
from dezero_grader.catalogue import assignments
from dezero_grader.grading import diagnose, fingerprints, run
from dezero_grader.present import terminal
from dezero_grader.records import schema
from dezero_grader.scoring.scorecard_read import Scorecard


def finding(status='failed', case='', **evidence):
    return {'case': case, 'status': status, 'message': 'm', **({'evidence': evidence} if evidence else {})}


def check(id, status='failed', findings=None):
    return {'id': id, 'status': status,
            'evidence': {'findings': findings if findings is not None else [finding(status)]}}


def passed(id):
    return {'id': id, 'status': 'passed', 'evidence': {'findings': [finding('passed')]}}


def sig(status='failed', cases=('',), exceptions=(), divergent=(), messages=()):
    return {'status': status, 'cases': sorted(cases), 'exceptions': sorted(exceptions),
            'messages': sorted(messages), 'divergent': sorted(divergent)}


CATALOGUE = {name: {'title': 'the {} bug'.format(name), 'hint': 'look at {}'.format(name),
                    'step': step}
             for name, step in (('early', 40), ('late-a', 52), ('late-b', 52), ('wide', 52),
                                ('twin-1', 52), ('twin-2', 52))}


def test_a_fault_whose_fingerprint_matches_is_the_one_cause_with_every_check_under_it():
    checks = [check('s/a'), check('s/b'), passed('s/c')]
    prints = {'late-a': {'s/a': sig(), 's/b': sig()}, 'late-b': {'s/a': sig()}}
    d = diagnose.diagnose(checks, prints, CATALOGUE)
    assert [c['faults'][0]['id'] for c in d['causes']] == ['late-a']
    assert d['causes'][0]['checks'] == ['s/a', 's/b'] and d['causes'][0]['exact']
    assert d['unexplained'] == []
    assert d['causes'][0]['summary'] == 'the late-a bug: 2 checks fail because of it'
    assert diagnose.top_faults(d) == ['late-a']


def test_one_earlier_fault_that_covers_the_failures_beats_later_faults_that_each_explain_a_part():
    checks = [check('s/a'), check('s/b'), check('s/c')]
    prints = {'early': {'s/a': sig(), 's/b': sig(), 's/c': sig()},
              'late-a': {'s/a': sig(), 's/b': sig()}, 'late-b': {'s/c': sig()}}
    d = diagnose.diagnose(checks, prints, CATALOGUE)
    assert [c['faults'][0]['id'] for c in d['causes']] == ['early']


def test_a_fault_that_predicts_failures_which_passed_loses_to_one_that_does_not():
    checks = [check('s/a'), passed('s/b'), passed('s/c')]
    prints = {'wide': {'s/a': sig(), 's/b': sig(), 's/c': sig()}, 'late-a': {'s/a': sig()}}
    d = diagnose.diagnose(checks, prints, CATALOGUE)
    assert diagnose.top_faults(d) == ['late-a']
    # alone, the wide fault is refused: most of what it predicts did not happen
    d = diagnose.diagnose(checks, {'wide': prints['wide']}, CATALOGUE)
    assert d['causes'] == [] and d['unexplained'] == ['s/a']


def test_two_causes_are_found_when_no_single_fault_explains_the_set():
    checks = [check('s/a'), check('s/b', 'error', [finding('error', exception='TypeError')])]
    prints = {'late-a': {'s/a': sig()},
              'late-b': {'s/b': sig('error', exceptions=('TypeError',))}}
    d = diagnose.diagnose(checks, prints, CATALOGUE)
    assert sorted(diagnose.top_faults(d) + [d['causes'][1]['faults'][0]['id']]) == ['late-a', 'late-b']
    assert [c['rank'] for c in d['causes']] == [1, 2]


def test_faults_with_the_same_fingerprint_are_one_cause_with_both_names():
    checks = [check('s/a')]
    prints = {'twin-1': {'s/a': sig()}, 'twin-2': {'s/a': sig()}}
    d = diagnose.diagnose(checks, prints, CATALOGUE)
    assert len(d['causes']) == 1
    assert diagnose.top_faults(d) == ['twin-1', 'twin-2']
    assert d['causes'][0]['summary'].startswith('one of: the twin-1 bug; or the twin-2 bug')


def test_the_signature_separates_faults_that_fail_the_same_check_differently():
    checks = [check('s/a', findings=[finding(case='grad'), finding(case='value')])]
    prints = {'late-a': {'s/a': sig(cases=('value',))},
              'late-b': {'s/a': sig(cases=('grad', 'value'))}}
    assert diagnose.top_faults(diagnose.diagnose(checks, prints, CATALOGUE)) == ['late-b']


def test_another_exception_type_or_another_blamed_function_is_evidence_against_the_fault():
    raised = check('s/a', 'error', [finding('error', exception='NameError', where='pkg/f.py:3 in g')])
    prints = {'late-a': {'s/a': sig('error', exceptions=('TypeError',))}}
    d = diagnose.diagnose([raised], prints, CATALOGUE)
    assert d['causes'][0]['kind'] == 'error'   # the code's own NameError, not the fault
    assert 'NameError' in d['causes'][0]['summary'] and 'no catalogued fault' in d['causes'][0]['summary']
    graph = {'nodes': [{'type': 'Mul'}, {'type': 'Sum'}]}
    blamed = check('s/g', findings=[finding(case='trajectory', graph=graph, divergent_node=1)])
    assert diagnose.signature(blamed)['divergent'] == ['Sum']
    prints = {'late-a': {'s/g': sig(cases=('trajectory',), divergent=('MatMul',))},
              'late-b': {'s/g': sig(cases=('trajectory',), divergent=('Sum',))}}
    assert diagnose.top_faults(diagnose.diagnose([blamed], prints, CATALOGUE)) == ['late-b']


def test_the_same_error_of_the_code_in_many_checks_is_one_cause():
    checks = [check('s/{}'.format(i), 'error', [finding(
        'error', exception='NameError', where='dezero/layers.py:110 in forward')]) for i in range(5)]
    # a phase that reports the error by message only joins the same cause
    checks.append(check('s/run', findings=[finding(
        'failed', case='host', raised='NameError', exception_message="name 'cuda' is not defined")]))
    for c in checks[:5]:
        c['evidence']['findings'][0]['message'] = (
            "calling it: your code raised NameError: name 'cuda' is not defined at "
            "dezero/layers.py:110 in forward")
    d = diagnose.diagnose(checks + [check('s/other')], {}, CATALOGUE)
    assert len(d['causes']) == 1
    cause = d['causes'][0]
    assert cause['kind'] == 'error' and len(cause['checks']) == 6
    assert cause['error'] == {'type': 'NameError', 'message': "name 'cuda' is not defined",
                              'where': 'dezero/layers.py:110 in forward'}
    assert d['unexplained'] == ['s/other']


def test_names_the_package_lacks_are_one_cause_whatever_the_checks_say():
    checks = [
        check('s/api', findings=[finding(missing=['Variable.to_gpu', 'DataLoader.to_gpu'])]),
        check('s/a', 'error', [dict(finding('error', exception='AttributeError', where=''),
                                    message='x: your code raised AttributeError: the submission '
                                            'has no `Variable` (looked for `Variable`)')]),
        check('s/b', 'error', [dict(finding('error', exception='ImportError',
                                            where='dezero/utils.py:11 in <module>'),
                                    message="y: your code raised ImportError: cannot import name "
                                            "'as_variable' from 'dezero' (/tmp/x/dezero/__init__.py)")]),
    ]
    d = diagnose.diagnose(checks, {}, CATALOGUE)
    assert len(d['causes']) == 1 and d['causes'][0]['checks'] == ['s/api', 's/a', 's/b']
    names = d['causes'][0]['error']['names']
    # the missing class is named, not each of its methods the api check lists
    assert names[:2] == ['Variable', 'as_variable'] and 'Variable.to_gpu' not in names
    assert 'DataLoader.to_gpu' in names


def test_an_api_check_alone_is_not_made_a_cause_of_missing_names():
    d = diagnose.diagnose([check('s/api', findings=[finding(missing=['Variable.to_gpu'])])], {},
                          CATALOGUE)
    assert d['causes'] == [] and d['unexplained'] == ['s/api']


def test_a_fault_that_matches_the_codes_error_is_named_and_shows_the_error():
    checks = [check('s/{}'.format(i), 'error', [dict(finding(
        'error', exception='TypeError', where='dezero/core.py:9 in f'),
        message='t: your code raised TypeError: bad operand at dezero/core.py:9 in f')])
        for i in range(3)]
    prints = {'late-a': {c['id']: sig('error', exceptions=('TypeError',)) for c in checks}}
    d = diagnose.diagnose(checks, prints, CATALOGUE)
    assert diagnose.top_faults(d) == ['late-a'] and len(d['causes']) == 1
    assert d['causes'][0]['error']['where'] == 'dezero/core.py:9 in f'


def test_nothing_fails_nothing_is_diagnosed():
    d = diagnose.diagnose([passed('s/a')], {'late-a': {'s/a': sig()}}, CATALOGUE)
    assert d == {'causes': [], 'unexplained': [], 'unexplained_advice': [], 'fingerprints': True}


# -- fingerprints ------------------------------------------------------------------------------

class _Fault:
    def __init__(self, id, step):
        self.id, self.step = id, step


def test_measured_fingerprints_follow_their_schema_and_differences_are_named():
    doc = {'checks': [check('step52/a', 'error', [finding('error', exception='TypeError')]),
                      passed('step52/b')]}
    measured = fingerprints.measure(52, 2026, 'sim', [(_Fault('f', 52), doc)])
    assert schema.errors('fingerprints', measured) == []
    assert measured['faults']['f']['checks'] == {'step52/a': sig('error', exceptions=('TypeError',),
                                                                  messages=('m',))}
    assert fingerprints.differences(measured, copy.deepcopy(measured)) == []
    changed = copy.deepcopy(measured)
    changed['faults']['f']['checks']['step52/b'] = sig()
    assert fingerprints.differences(measured, changed) == [
        'the fingerprint of fault f changed (step52/b)']
    assert fingerprints.differences(None, measured) == ['no fingerprints are stored for step 52']


@pytest.mark.parametrize('step', assignments.available_steps())
def test_every_step_ships_fingerprints_of_its_whole_catalogue(step):
    stored = fingerprints.load(step)
    assert stored is not None, 'run: dezero-grade selftest --step {} --write-fingerprints'.format(step)
    catalogue = {f.id for f in assignments.fault_catalogue(assignments.load(step))}
    assert set(stored['faults']) == catalogue
    # what a grading of the step runs: its checks, the environment checks every grading has,
    # and the regression
    graded = {u.id for part in run.checks_of(assignments.load(step)) for u in part}
    for entry in stored['faults'].values():
        assert entry['checks'] and set(entry['checks']) <= graded


# -- what the learner and the instructor read --------------------------------------------------

def _scorecard(checks, diagnosis):
    full = []
    for c in checks:
        full.append(dict(c, step=52, title='t', tier='book', category='device', points=1.0,
                         earned=0.0, regression=False, message='{} broke'.format(c['id']),
                         hint='', repro='', faults=[], duration_s=0.1))
    return {'assignment': {'step': 52, 'title': 'GPU'},
            'submission': {'id': 'x', 'content_hash': 'sha256:' + '0' * 64},
            'environment': {'device_mode': 'sim', 'sandbox': 'basic'}, 'seed': 1,
            'profile': 'book', 'era': 'book', 'verdict': 'reject', 'reason': 'r',
            'score': {'earned': 0, 'possible': 3, 'extension': {'earned': 0, 'possible': 0}},
            'duration_s': 1.0, 'checks': full, 'compatibility': [], 'diagnosis': diagnosis}


def test_the_report_names_each_cause_once_above_the_checks_and_folds_a_shared_error():
    checks = [check('step52/{}'.format(i), 'error', [dict(finding(
        'error', exception='NameError', where='dezero/a.py:1 in f'),
        message="c: your code raised NameError: name 'q' is not defined at dezero/a.py:1 in f")])
        for i in 'abcd'] + [check('step52/z')]
    doc = _scorecard(checks, diagnose.diagnose(checks, {}, CATALOGUE))
    text = terminal.render(doc)
    assert text.count("NameError: name 'q' is not defined at dezero/a.py:1 in f (no catalogued") == 1
    assert text.index('root causes') < text.index('✗ step52/a')
    assert '✗ step52/b' not in text and '3 more checks fail the same way (root cause 1' in text
    assert 'no catalogued fault matches: step52/z' in text
    assert 'looks like' not in text
    assert '✗ step52/b' in terminal.render(doc, verbose=True)


def test_a_check_points_to_the_fault_it_belongs_to():
    checks = [check('step52/a'), check('step52/b')]
    doc = _scorecard(checks, diagnose.diagnose(checks, {'late-a': {'step52/a': sig(), 'step52/b': sig()}},
                                               CATALOGUE))
    text = terminal.render(doc)
    assert '1. the late-a bug: 2 checks fail because of it' in text
    assert text.count('root cause 1: late-a — the late-a bug') == 2


def test_the_batch_counts_root_causes_once_per_submission():
    one = [check('step52/a'), check('step52/b')]
    prints = {'late-a': {'step52/a': sig(), 'step52/b': sig()}, 'late-b': {'step52/b': sig()}}
    docs = [('s1', _scorecard(one, diagnose.diagnose(one, prints, CATALOGUE))),
            ('s2', _scorecard([check('step52/b')], diagnose.diagnose([check('step52/b')], prints,
                                                                      CATALOGUE)))]
    errs = [check('step52/c', 'error', [finding('error', exception='E', where='dezero/q.py:1 in h')])]
    docs.append(('s3', _scorecard(errs, diagnose.diagnose(errs, prints, CATALOGUE))))
    cards = [(ident, Scorecard.from_document(doc)) for ident, doc in docs]
    rows = summary.fault_counts(cards)
    assert [(r['id'], r['submissions']) for r in rows] == [('late-a', 1), ('late-b', 1)]
    assert summary.uncatalogued(cards) == {'submissions': 1, 'causes': 1}


def test_the_same_message_raised_at_two_places_is_two_causes():
    def raising(id, where):
        return check(id, 'error', [dict(finding('error', exception='TypeError', where=where),
                                        message='c: your code raised TypeError: bad at ' + where)])
    checks = [raising('s/a', 'dezero/a.py:1 in f'), raising('s/b', 'dezero/a.py:1 in f'),
              raising('s/c', 'dezero/b.py:7 in g'), raising('s/d', 'dezero/b.py:7 in g')]
    d = diagnose.diagnose(checks, {}, CATALOGUE)
    assert [c['checks'] for c in d['causes']] == [['s/a', 's/b'], ['s/c', 's/d']]
    assert [c['error']['where'] for c in d['causes']] == ['dezero/a.py:1 in f', 'dezero/b.py:7 in g']


def test_a_run_over_part_of_the_catalogue_compares_only_what_it_measured():
    doc = {'checks': [check('step52/a')]}
    both = fingerprints.measure(52, 2026, 'sim', [(_Fault('f', 52), doc), (_Fault('g', 52), doc)])
    part = fingerprints.measure(52, 2026, 'sim', [(_Fault('f', 52), doc)])
    assert fingerprints.differences(both, part) == []
    assert fingerprints.differences(part, both) == ['fault g has no stored fingerprint']
