"""``cupyx`` of the simulated device: the scatter routines and pinned host buffers.

``cupyx.scatter_add`` is the portable replacement for the book's ``cupy.scatter_add`` (removed
in CuPy 8). In the "current" era it warns as CuPy 13+ does, pointing at ``cupy.add.at``; in the
"book" era it is silent. The loader exposes ``MODULE_NAMES`` as the ``cupyx`` module.
"""

from __future__ import annotations

import warnings

import numpy

from . import errors, state
from .ndarray import ndarray


def _scatter(a, slices, value, ufunc, name, replacement):
    if type(a) is not ndarray:
        raise errors.unsupported_type(f"cupyx.{name}", a, "argument 1 (a)")
    if state.CONF.era == "current":
        warnings.warn(f"`ndarray.{name}` is deprecated"
                      f"{'.' if name == 'scatter_add' else ''} Please use `{replacement}` "
                      f"instead.", DeprecationWarning, stacklevel=3)
    a._scatter(slices, value, ufunc, name)


def scatter_add(a, slices, value):
    """Add `value` to `a[slices]`, accumulating repeated indices (``numpy.add.at``)."""
    _scatter(a, slices, value, numpy.add, "scatter_add", "cupy.add.at")


def scatter_max(a, slices, value):
    _scatter(a, slices, value, numpy.maximum, "scatter_max", "cupy.maximum.at")


def scatter_min(a, slices, value):
    _scatter(a, slices, value, numpy.minimum, "scatter_min", "cupy.minimum.at")


def empty_pinned(shape, dtype=float, order="C"):
    return numpy.empty(shape, dtype=dtype, order=order)


def zeros_pinned(shape, dtype=float, order="C"):
    return numpy.zeros(shape, dtype=dtype, order=order)


def empty_like_pinned(a, dtype=None, order="K", subok=None, shape=None):
    return numpy.empty(a.shape if shape is None else shape, dtype=dtype or a.dtype)


def zeros_like_pinned(a, dtype=None, order="K", subok=None, shape=None):
    return numpy.zeros(a.shape if shape is None else shape, dtype=dtype or a.dtype)


MODULE_NAMES = ("scatter_add", "scatter_max", "scatter_min", "empty_pinned", "zeros_pinned",
                "empty_like_pinned", "zeros_like_pinned")
