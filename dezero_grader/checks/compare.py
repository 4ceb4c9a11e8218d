"""Numeric comparisons that explain themselves.

Every comparison returns the numbers a learner needs to judge a failure: max absolute error,
max relative error, worst index, the values there and the tolerance used — and, for gradients,
a guess at the pattern (sign flipped, constant factor, zeros, permuted). Tolerances are data:
`tolerance_for` picks them by dtype from what the assignment (or the check's default) says.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

# Keyed by the lower precision of the two sides compared (the learner's values and the
# reference's, or two of the learner's); assignments override per check.
DEFAULT_TOLERANCES = {
    'float64': {'rtol': 1e-7, 'atol': 1e-9},
    'float32': {'rtol': 1e-4, 'atol': 1e-5},
}
# An analytic gradient against central differences (step 1e-5, float64; the atol scales with
# the largest difference); assignments override with numeric_rtol / numeric_atol.
NUMERIC_TOLERANCE = {'rtol': 1e-4, 'atol': 1e-6}


def _low_precision(dtype):
    try:
        return np.dtype(dtype) in (np.float16, np.float32, np.complex64)
    except TypeError:
        return False


def tolerance_for(dtype, overrides=None, other=None):
    """The tolerance for comparing values of `dtype` with values of `other` (by default the
    same dtype): float32 tolerances when either side is float32 or lower, float64 otherwise."""
    low = _low_precision(dtype) or (other is not None and _low_precision(other))
    kind = 'float32' if low else 'float64'
    tol = dict(DEFAULT_TOLERANCES[kind])
    overrides = overrides or {}
    for key in ('rtol', 'atol'):
        if kind + '_' + key in overrides:
            tol[key] = overrides[kind + '_' + key]
        elif key in overrides:
            tol[key] = overrides[key]
    return tol


@dataclass(frozen=True)
class Comparison:
    ok: bool
    evidence: dict


def compare(found, expected, rtol, atol) -> Comparison:
    found = np.asarray(found)
    expected = np.asarray(expected)
    if found.shape != expected.shape:
        return Comparison(False, {'problem': 'shape', 'found_shape': list(found.shape),
                                  'expected_shape': list(expected.shape)})
    if found.size == 0:
        return Comparison(True, {})
    with np.errstate(all='ignore'):
        return _compare(found.astype(np.float64), expected.astype(np.float64), rtol, atol)


def _compare(f, e, rtol, atol):
    bad_nan = np.isnan(f) != np.isnan(e)
    diff = np.abs(f - e)
    diff = np.where(np.isnan(f) & np.isnan(e), 0.0, diff)
    diff = np.where(bad_nan, np.inf, diff)
    limit = atol + rtol * np.abs(e)
    ok = bool(np.all(diff <= limit))
    worst = np.unravel_index(int(np.argmax(np.where(np.isfinite(diff), diff / limit, np.inf))),
                             diff.shape) if diff.ndim else ()
    rel = diff / np.maximum(np.maximum(np.abs(f), np.abs(e)), 1e-12)
    evidence = {
        'max_abs_error': _num(np.max(diff)),
        'max_rel_error': _num(np.max(rel)),
        'worst_index': [int(i) for i in worst],
        'found_at_worst': _num(f[worst]),
        'expected_at_worst': _num(e[worst]),
        'tolerance': {'rtol': rtol, 'atol': atol},
        'bad_elements': int(np.sum(diff > limit)),
        'elements': int(diff.size),
    }
    if not ok:
        pattern = gradient_pattern(f, e)
        if pattern:
            evidence['pattern'] = pattern
    return Comparison(ok, evidence)


def _num(x):
    x = float(x)
    return x if np.isfinite(x) else str(x)


def gradient_pattern(found, expected):
    """Name the shape of a mismatch, when it has a recognisable one."""
    f, e = found.ravel(), expected.ravel()
    scale = max(np.max(np.abs(e)), 1e-300)
    if np.all(np.abs(f) <= 1e-12 * scale) and np.any(np.abs(e) > 1e-9):
        return 'all zeros: the backward returns zeros, or the value never reached this input'
    if np.allclose(f, -e, rtol=1e-5, atol=1e-8 * scale):
        return 'sign flipped: found ≈ −expected'
    nz = np.abs(e) > 1e-9 * scale
    if nz.sum() >= 2:
        ratio = f[nz] / e[nz]
        if np.allclose(ratio, ratio[0], rtol=1e-5) and not np.isclose(ratio[0], 1.0):
            return 'off by a constant factor: found ≈ {:.6g} × expected'.format(ratio[0])
    if f.size > 1 and np.allclose(np.sort(f), np.sort(e), rtol=1e-5, atol=1e-8 * scale):
        return 'the right values in the wrong places (a transpose, permutation or flip)'
    return ''
