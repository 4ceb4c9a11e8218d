"""The self-proof sees weak checks: near-miss faults and loosened tolerances.

The catalogue's near misses (`dezero_grader/catalogue/faults/near_miss.py`) scale a Function's gradients by 1.01
or 1.001. At the grader's tolerances every one is rejected, caught by the checks its entry
names; with the gradient tolerances loosened on the trusted side -- the judges' constants in
`dezero_grader.checks.compare`, monkeypatched here, nothing in the worker -- they end in `accept` and
`selftest` fails, naming them: a check weakened past a fault's error is a gap selftest reports,
not a change it absorbs. Step 6 (a single step file: `Exp`'s backward by hand) and step 41 (the
package: `F.matmul`'s node, and step 40's `Mul` and `SumTo` in its regression) stand for both
kinds of target. Each of the two comparisons -- against central differences and against the
reference -- sees even the 0.1% error on its own.
"""
import pytest

from dezero_grader.catalogue import assignments
from dezero_grader.catalogue.faults import near_miss
from dezero_grader.checks import compare
from dezero_grader.proof import selftest

SEED = 2026


def _loosen(mp, rtol):
    """Every gradient tolerance the judges use loosened to `rtol`: against the reference (both
    precisions) and against central differences."""
    for kind in ('float64', 'float32'):
        mp.setitem(compare.DEFAULT_TOLERANCES, kind, dict(compare.DEFAULT_TOLERANCES[kind],
                                                          rtol=rtol))
    mp.setitem(compare.NUMERIC_TOLERANCE, 'rtol', rtol)


def _run(step, rtol=None):
    with pytest.MonkeyPatch.context() as mp:
        if rtol is not None:
            _loosen(mp, rtol)
        return selftest.run_step(step, seed=SEED)


def _verdicts(outcome):
    return {fault.id: (expected, verdict, missing)
            for fault, expected, verdict, _, missing in outcome.rows}


def _near_misses(outcome):
    return sorted(fault.id for fault, *_ in outcome.rows if fault.patch in near_miss.NEAR_MISSES)


def _ended_in_accept(outcome):
    return sorted(fid for fid, (_, verdict, _) in _verdicts(outcome).items() if verdict == 'accept')


def _reference_accepted(outcome):
    return all(verdict == 'accept' and earned == possible
               for verdict, earned, possible, _, _ in outcome.reference.values())


@pytest.fixture(scope='module', params=(6, 41))
def graded(request):
    """(step, its selftest at the grader's tolerances, the same with them loosened to 5%)."""
    return request.param, _run(request.param), _run(request.param, rtol=0.05)


def test_near_misses_are_caught_at_the_graders_tolerances(graded):
    step, outcome, _ = graded
    assert _near_misses(outcome), 'no near-miss fault in the catalogue of step {}'.format(step)
    for fid, (expected, verdict, missing) in _verdicts(outcome).items():
        assert verdict == expected and not missing, (fid, verdict, missing)
    assert not [p for p in outcome.problems if ' ended in ' in p or 'not caught' in p]
    assert _reference_accepted(outcome)
    # each of the two comparisons sees even the 0.1% error on its own: central differences
    # (rtol 1e-4) and the reference (rtol 1e-7)
    for row, failures in zip(outcome.rows, outcome.failures):
        fault = row[0]
        if fault.patch in near_miss.NEAR_MISSES:
            for check_id in fault.caught_by:
                cases = set(failures[check_id].cases)
                assert {'grad.numeric', 'grad.reference'} <= cases, (fault.id, check_id, cases)


def test_a_tolerance_loosened_to_5_percent_fails_selftest(graded):
    step, _, outcome = graded
    assert not outcome.ok
    # every near miss gets through, and only they: the gross faults are still caught
    missed = _ended_in_accept(outcome)
    assert missed and missed == _near_misses(outcome), selftest.render(outcome)
    for fid in missed:
        assert any(p.startswith('fault {} ended in accept'.format(fid)) for p in outcome.problems)
    # the reference itself is still accepted: what fails is the proof, not the reference
    assert _reference_accepted(outcome)


def test_a_tolerance_between_the_two_near_misses_lets_only_the_smaller_through():
    # at 0.5% the 1% error is still seen and the 0.1% error is not: each magnitude measures
    outcome = _run(6, rtol=0.005)
    assert _ended_in_accept(outcome) == ['exp-grad-off-1-permille']
    assert _verdicts(outcome)['exp-grad-off-1-percent'][1] == 'reject'


def test_every_near_miss_is_catalogued_at_both_magnitudes():
    used = {f.patch: f for step in assignments.available_steps()
            for f in assignments.load(step).faults}
    assert set(near_miss.NEAR_MISSES) <= set(used), sorted(set(near_miss.NEAR_MISSES) - set(used))
    targets = {}
    for name, (target, factor) in near_miss.NEAR_MISSES.items():
        targets.setdefault(target, set()).add(factor)
    assert all(factors == {1.01, 1.001} for factors in targets.values()), targets
