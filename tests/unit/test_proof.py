"""dezero_grader/proof/check_proofs.py: a check counts as proven only when a fault of its own step that names it makes
it fail by judgment; crashes and collateral failures are told apart."""
from dezero_grader.proof import check_proofs
from dezero_grader.records.dataflow import CheckUse, Fault


def use(check_id, check='expect'):
    return CheckUse(id=check_id, check=check, step=7, title=check_id, tier='book',
                    category='forward', points=1, params={}, tolerance={})


def fault(fault_id, step, *caught_by):
    return Fault(id=fault_id, step=step, title=fault_id, tier='book', hint='', caught_by=caught_by,
                 patch=fault_id)


CHECKS = [use('step07/a', 'grad.early'), use('step07/b'), use('step07/c'), use('step07/d'),
          use('step07/e')]


def test_each_check_is_classified_by_how_its_own_faults_make_it_fail():
    rows = [
        # names a and b: a fails by judgment, b only raises
        (fault('f1', 7, 'step07/a', 'step07/b'),
         {'step07/a': check_proofs.Failure('failed', ('grad.numeric',)),
          'step07/b': check_proofs.Failure('error'), 'step07/c': check_proofs.Failure('failed')}),
        # an earlier step's fault naming c: collateral for step 7 all the same
        (fault('f0', 6, 'step07/c'), {'step07/c': check_proofs.Failure('failed')}),
        # b fails by judgment here, but f2 does not name it
        (fault('f2', 7, 'step07/d'), {'step07/b': check_proofs.Failure('failed'),
                                      'step07/d': check_proofs.Failure('timeout')}),
    ]
    p = check_proofs.prove(7, CHECKS, rows)
    assert not check_proofs.problems(p, pending={'step07/a': 'x', 'step07/b': 'x', 'step07/c': 'x',
                                          'step07/d': 'x'})[1:]
    assert 'remove it from check_proofs.PENDING' in check_proofs.problems(p, pending={'step07/a': 'x'})[0]
    assert p.kind == {'step07/a': check_proofs.JUDGED, 'step07/b': check_proofs.CRASH,
                      'step07/c': check_proofs.COLLATERAL, 'step07/d': check_proofs.CRASH,
                      'step07/e': check_proofs.NEVER}
    assert p.counts == {check_proofs.JUDGED: 1, check_proofs.CRASH: 2, check_proofs.COLLATERAL: 1, check_proofs.NEVER: 1}
    assert p.battery and p.battery_cases == {'grad.numeric': ['f1']}
    gaps = check_proofs.problems(p, pending={})
    assert len(gaps) == 3 and all(any(c in g for g in gaps)
                                  for c in ('step07/b', 'step07/c', 'step07/d'))
    text = '\n'.join(check_proofs.render(p, pending={'step07/c': 'why'}))
    assert '1 check(s) fail by judgment' in text and '2 only by a crash' in text
    assert '1/11' in text
    assert 'pending: step07/c (collateral only): why' in text


def test_failures_are_read_from_a_scorecard_with_their_failing_cases():
    doc = {'checks': [
        {'id': 'step07/a', 'status': 'failed', 'evidence': {'findings': [
            {'case': 'forward.value', 'status': 'passed'},
            {'case': 'grad.reference', 'status': 'failed'},
            {'case': '', 'status': 'failed'}]}},
        {'id': 'step07/b', 'status': 'passed', 'evidence': {'findings': []}},
        {'id': 'step07/c', 'status': 'error', 'evidence': {}},
    ]}
    assert check_proofs.failures_of(doc) == {'step07/a': check_proofs.Failure('failed', ('grad.reference',)),
                                      'step07/c': check_proofs.Failure('error', ())}


def test_a_step_without_code_counts_the_faults_of_the_steps_it_grades():
    checks = [use('step07/a')]
    rows = [(fault('f6', 6, 'step07/a'), {'step07/a': check_proofs.Failure('failed')})]
    assert check_proofs.prove(7, checks, rows).kind == {'step07/a': check_proofs.COLLATERAL}
    assert check_proofs.prove(7, checks, rows, owner_steps={7, 6}).kind == {'step07/a': check_proofs.JUDGED}
