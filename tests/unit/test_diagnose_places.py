"""The diagnosis names the learner's place: errors reached through one frame are one cause there,
arrays of two devices name the caller, a function whose own check shows it wrong is a cause, and
a backward fault is not named where the forward is wrong. Synthetic check records."""
from dezero_grader.grading import diagnose


def raised(id, type, message, where, traceback, status='error'):
    return {'id': id, 'status': status, 'evidence': {'findings': [{
        'case': '', 'status': status,
        'message': 'calling F.x: your code raised {}: {} at {}'.format(type, message, where),
        'evidence': {'exception': type, 'where': where, 'traceback': traceback}}]}}


def failed(id, message, case='', **evidence):
    return {'id': id, 'status': 'failed', 'evidence': {'findings': [
        {'case': case, 'status': 'failed', 'message': message, 'evidence': evidence}]}}


LOOP = 'dezero/core.py:111 in backward'


def test_errors_about_none_in_many_places_through_one_frame_are_one_cause_there():
    checks = [
        raised('s/a', 'TypeError', "unsupported operand type(s) for *: 'NoneType' and 'float'",
               'dezero/functions.py:467 in backward', [LOOP, 'dezero/functions.py:467 in backward']),
        raised('s/b', 'AttributeError', "'NoneType' object has no attribute 'shape'",
               'dezero/functions.py:222 in sum_to',
               ['/grader/probe.py:1 in run', LOOP, 'dezero/functions.py:238 in backward',
                'dezero/functions.py:222 in sum_to']),
        raised('s/c', 'TypeError', "operand type(s) all returned NotImplemented from "
               "__array_ufunc__(<ufunc 'multiply'>, '__call__', array([[1.53044282, 0.24707058],\n"
               "       [0.6577769 , 1.1666093 ]]), None): 'ndarray', 'NoneType'",
               'dezero/core.py:233 in forward', [LOOP, 'dezero/core.py:233 in forward']),
        raised('s/d', 'WorkerFailure', 'did not finish within 30 s', 'dezero/core.py:110 in backward',
               [], status='timeout'),
    ]
    d = diagnose.diagnose(checks, {}, {})
    assert len(d['causes']) == 1
    cause = d['causes'][0]
    assert cause['error']['where'] == LOOP and cause['checks'] == ['s/a', 's/b', 's/c', 's/d']
    assert cause['error']['count'] == 4
    assert 'reached through dezero/core.py:111 in backward' in cause['summary']
    assert 'array([[' not in cause['summary'] and '1.53' not in cause['summary']


def test_two_places_through_one_frame_stay_two_causes():
    # two real bugs in two backwards both reached from Variable.backward: not blamed on it
    checks = [raised('s/a', 'TypeError', "bad 'NoneType'", 'dezero/functions.py:10 in backward',
                     [LOOP, 'dezero/functions.py:10 in backward']),
              raised('s/b', 'TypeError', "bad 'NoneType'", 'dezero/functions.py:20 in backward',
                     [LOOP, 'dezero/functions.py:20 in backward'])]
    d = diagnose.diagnose(checks, {}, {})
    assert [c['error']['where'] for c in d['causes']] == ['dezero/functions.py:10 in backward',
                                                          'dezero/functions.py:20 in backward']


def test_errors_that_are_not_about_none_are_not_merged_through_their_caller():
    checks = [raised('s/{}'.format(n), 'ValueError', 'shapes differ',
                     'dezero/functions.py:{} in backward'.format(n),
                     [LOOP, 'dezero/functions.py:{} in backward'.format(n)]) for n in (1, 2, 3)]
    d = diagnose.diagnose(checks, {}, {})
    assert all('places' not in c['error'] for c in d['causes'])


def test_an_array_dump_never_reaches_a_root_cause_title():
    message = ("operand type(s) all returned NotImplemented from __array_ufunc__(<ufunc 'add'>, "
               "'__call__', array([[1.5, 0.2],\n       [0.6, 1.1]]), None)")
    checks = [raised('s/{}'.format(n), 'TypeError', message, 'dezero/core.py:9 in forward',
                     ['dezero/core.py:9 in forward']) for n in 'ab']
    cause = diagnose.diagnose(checks, {}, {})['causes'][0]
    assert 'array(...), None)' in cause['summary'] and '1.5' not in cause['summary']


def test_arrays_of_two_devices_met_in_a_function_name_the_learners_caller():
    tb = ['dezero/layers.py:118 in forward', 'dezero/functions.py:289 in linear',
          'dezero/core.py:188 in __call__', 'dezero/functions.py:277 in forward']
    checks = [raised('s/{}'.format(n), 'TypeError', "Unsupported type <class 'numpy.ndarray'>",
                     'dezero/functions.py:277 in forward', tb) for n in 'ab']
    cause = diagnose.diagnose(checks, {}, {})['causes'][0]
    assert cause['error']['caller'] == 'dezero/layers.py:118 in forward'
    assert 'passed from dezero/layers.py:118 in forward' in cause['summary']


def sig(status='failed', cases=('',)):
    return {'status': status, 'cases': sorted(cases), 'exceptions': [], 'messages': [],
            'divergent': []}


CATALOGUE = {'detached': {'title': 'the backward uses .data', 'hint': 'use Variables', 'step': 35}}


def test_a_function_that_gives_no_gradient_is_named_before_a_fault_that_explains_the_rest():
    checks = [failed('s/tanh', 'after backward, input 0 of F.tanh has no gradient (grad is None)',
                     'grad.present'),
              failed('s/higher', 'derivatives of tanh differ from the reference at tanh'),
              failed('s/graph', 'the graph of tanh does not grow')]
    prints = {'detached': {'s/higher': sig(), 's/graph': sig()}}
    d = diagnose.diagnose(checks, prints, CATALOGUE)
    first = d['causes'][0]
    assert first['error']['function'] == 'F.tanh' and first['error']['part'] == 'no gradient'
    assert first['checks'] == ['s/tanh', 's/higher', 's/graph'] and len(d['causes']) == 1
    assert 'return' in first['error']['hint']


def test_a_fault_that_explains_the_functions_own_check_is_named_instead():
    checks = [failed('s/tanh', 'gradient of F.tanh wrt input 0 differs from the reference',
                     'grad.reference')]
    prints = {'detached': {'s/tanh': sig(cases=('grad.reference',))}}
    d = diagnose.diagnose(checks, prints, CATALOGUE)
    assert diagnose.top_faults(d) == ['detached']


def test_a_backward_fault_is_not_named_where_the_forward_is_wrong():
    seen = diagnose.signature(failed('s/x', 'forward value of F.sigmoid differs from the reference',
                                     'forward.value'))
    seen['cases'] = ['forward.value', 'grad.numeric', 'grad.reference']
    backward_fault = sig(cases=('grad.numeric', 'grad.reference'))
    assert diagnose.similarity(seen, backward_fault) < diagnose.EXPLAINS_AT
    forward_fault = sig(cases=('forward.value', 'grad.numeric', 'grad.reference'))
    assert diagnose.similarity(seen, forward_fault) == 1.0
