"""What the trusted side computes from a scenario's raw values before judges read them.

A scenario reports raw values (arrays, shapes, identities); a comparison, a count or a statistic
that a judge takes as a verdict is computed here, in the trusted process, never in the worker
where the learner's code could have patched NumPy or the builtins. A declaration names its
`derive` function and the shape of the result (`dezero_grader.contracts.declare`); these are the
pieces such functions are made of.
"""
from __future__ import annotations

import numpy as np


def values(a):
    """The host array a raw value holds (a wire `Array`, or what NumPy makes of the value)."""
    return np.asarray(getattr(a, 'data', a))


def same(a, b) -> bool:
    """The same shape and the same values."""
    a, b = values(a), values(b)
    return a.shape == b.shape and bool(np.array_equal(a, b))


def kind(a) -> str:
    """The dtype kind of a raw array: 'f', 'i', 'u', 'b', ..."""
    return values(a).dtype.kind


def raised(v) -> bool:
    """A phase that raised (`{"raised", "message"}`): judged as the exception, not derived."""
    return isinstance(v, dict) and 'raised' in v and 'message' in v


def phase(report, key, derive):
    """`report[key]` replaced by `derive(report[key])` unless that phase raised."""
    if key in report and not raised(report[key]):
        report[key] = derive(report[key])
    return report


def every(flags) -> bool:
    """Every one of a list of raw booleans holds (and there is a list)."""
    return isinstance(flags, list) and all(bool(f) for f in flags)
