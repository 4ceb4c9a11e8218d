"""Silence NumPy's floating-point warnings around device kernels, cheaply.

CuPy kernels never emit ``RuntimeWarning`` for ``log(0)`` or ``0/0``; the simulated device runs
NumPy underneath, so every kernel it runs is bracketed by ``enter()``/``leave(token)``. A plain
``numpy.errstate`` costs about a microsecond per operation, which training loops would feel, so
this uses the cheap primitive of the installed NumPy: the error-state context variable on
NumPy 2, ``seterrobj`` on NumPy 1.x, and ``errstate`` only as a last resort.
"""

from __future__ import annotations

import numpy


def _make():
    try:  # NumPy >= 2: the error state is a context variable
        from numpy._core import umath as _um
        cv = _um._extobj_contextvar
        with numpy.errstate(all="ignore"):
            ignore = cv.get()
        return (lambda: cv.set(ignore)), cv.reset
    except (ImportError, AttributeError):
        pass
    try:  # NumPy 1.x: a thread-local error object
        from numpy.core import umath as _um
        geterrobj, seterrobj = _um.geterrobj, _um.seterrobj
        with numpy.errstate(all="ignore"):
            ignore = list(geterrobj())  # the stored list is mutated in place later

        def _enter():
            old = geterrobj()
            seterrobj(ignore)
            return old

        return _enter, seterrobj
    except (ImportError, AttributeError):
        pass

    def _enter():
        ctx = numpy.errstate(all="ignore")
        ctx.__enter__()
        return ctx

    def _leave(ctx):
        ctx.__exit__(None, None, None)

    return _enter, _leave


enter, leave = _make()
