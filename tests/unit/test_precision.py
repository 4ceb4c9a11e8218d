"""Tolerances follow the lower precision of the two sides compared."""
import numpy as np

from dezero_grader.checks.compare import DEFAULT_TOLERANCES, compare, tolerance_for


def test_either_side_in_float32_gives_float32_tolerances():
    assert tolerance_for(np.float64) == DEFAULT_TOLERANCES['float64']
    assert tolerance_for(np.float64, None, np.float64) == DEFAULT_TOLERANCES['float64']
    assert tolerance_for(np.float64, None, np.float32) == DEFAULT_TOLERANCES['float32']
    assert tolerance_for(np.float32, None, np.float64) == DEFAULT_TOLERANCES['float32']
    assert tolerance_for(np.int64, None, np.float64) == DEFAULT_TOLERANCES['float64']


def test_overrides_apply_to_the_precision_chosen():
    tol = tolerance_for(np.float64, {'float32_rtol': 1e-3}, np.float32)
    assert tol['rtol'] == 1e-3 and tol['atol'] == DEFAULT_TOLERANCES['float32']['atol']


def test_a_float64_result_matches_its_float32_computation_only_at_float32_tolerance():
    x = np.random.default_rng(3).standard_normal((4, 5))
    exact = np.exp(3 * x) @ x.T                                  # float64 throughout
    rounded = np.exp(3 * x.astype(np.float32)) @ x.astype(np.float32).T   # float32 arithmetic
    assert not compare(exact, rounded, **tolerance_for(exact.dtype)).ok
    assert compare(exact, rounded, **tolerance_for(exact.dtype, None, rounded.dtype)).ok
