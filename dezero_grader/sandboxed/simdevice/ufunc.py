"""Universal functions of the simulated device (``cupy.exp``, ``cupy.add``, ``cupy.add.at`` …).

Each ``ufunc`` wraps the NumPy ufunc of the same name. A call validates its operands the way
CuPy's ``_preprocess_args`` does (device arrays and scalars only: host arrays and lists raise
``TypeError: Unsupported type …``), runs NumPy on the unwrapped data with floating-point
warnings silenced, and wraps the result on the current device. ``module.py`` puts one of these
in the ``cupy`` namespace for every NumPy ufunc; ``ndarray.__array_ufunc__`` finds them there.
"""

from __future__ import annotations

import numpy

from . import errors, quiet, state
from .ndarray import (SCALAR_TYPES, _convert_index, check_device, kernel_arg, ndarray, wrap,
                      wrap_any)

_all = all   # the builtin as it was before learner code ran (which may patch builtins)

_CONF = state.CONF
_NPND = numpy.ndarray
_enter = quiet.enter
_leave = quiet.leave

# CuPy implements `ufunc.at` through its scatter kernels (add, maximum, minimum) only.
_AT_SUPPORTED = frozenset({"add", "maximum", "minimum"})


class ufunc:
    """A CuPy universal function (device arrays and scalars in, device arrays out)."""

    __slots__ = ("_np", "name", "__name__", "nin", "nout", "nargs", "_opname")

    def __init__(self, np_ufunc):
        self._np = np_ufunc
        self.name = self.__name__ = np_ufunc.__name__
        self.nin = np_ufunc.nin
        self.nout = np_ufunc.nout
        self.nargs = np_ufunc.nin + np_ufunc.nout
        self._opname = f"cupy.{self.name}"

    def __repr__(self):
        return f"<ufunc '{self.name}'>"

    @property
    def types(self):
        return self._np.types

    @property
    def identity(self):
        return self._np.identity

    def __call__(self, *args, **kwargs):
        if not kwargs and len(args) == self.nin:
            # Fast path (the common call): inputs only.
            multi = _CONF.multi
            conv = []
            for i, x in enumerate(args):
                t = type(x)
                if t is ndarray:
                    if multi:
                        check_device(x)
                    conv.append(x._a)
                elif t in SCALAR_TYPES:
                    conv.append(x)
                else:
                    raise errors.unsupported_type(self._opname, x, f"argument {i + 1}", args)
            tok = _enter()
            try:
                r = self._np(*conv)
            except Exception as e:
                raise errors.add_note(e, errors.context(self._opname, args))
            finally:
                _leave(tok)
            if r.__class__ is _NPND:
                return wrap(r)
            return wrap_any(r)
        return self._call(args, kwargs)

    def _call(self, args, kwargs):
        n = len(args)
        nin = self.nin
        if n < nin or n > self.nargs:
            raise TypeError(
                f"Wrong number of arguments for {self.name!r}. It must be either {nin} or "
                f"{self.nargs} (with outputs), but given {n}.")
        multi = _CONF.multi
        conv = []
        for i in range(nin):
            x = args[i]
            t = type(x)
            if t is ndarray:
                if multi:
                    check_device(x)
                conv.append(x._a)
            elif t in SCALAR_TYPES:
                conv.append(x)
            else:
                raise errors.unsupported_type(self._opname, x, f"argument {i + 1}", args)
        outs = args[nin:]
        if kwargs:
            out = kwargs.pop("out", None)
            if out is not None:
                if outs:
                    raise ValueError("Cannot specify 'out' as both a positional and keyword "
                                     "argument")
                if isinstance(out, tuple):
                    if len(out) != self.nout:
                        raise ValueError("The 'out' tuple must have exactly one entry per "
                                         "ufunc output")
                    outs = out
                else:
                    if self.nout != 1:
                        raise ValueError("'out' must be a tuple of arrays")
                    outs = (out,)
            np_kw = {}
            dtype = kwargs.pop("dtype", None)
            if dtype is not None:
                np_kw["dtype"] = dtype
            casting = kwargs.pop("casting", None)
            if casting is not None:
                np_kw["casting"] = casting
            where = kwargs.pop("_where", None)
            if where is not None:
                np_kw["where"] = kernel_arg(where, self._opname, "_where", args)
            if kwargs:
                raise TypeError("Wrong arguments %s" % kwargs)
        else:
            np_kw = None
        if outs:
            np_outs = []
            for o in outs:
                if o is None:
                    np_outs.append(None)
                    continue
                if type(o) is not ndarray:
                    if type(o) in SCALAR_TYPES:
                        raise TypeError("Output arguments type must be cupy.ndarray")
                    raise errors.unsupported_type(self._opname, o, "out", args)
                if multi:
                    check_device(o)
                np_outs.append(o._a)
            if np_kw is None:
                np_kw = {}
            np_kw["out"] = tuple(np_outs)
        tok = _enter()
        try:
            r = self._np(*conv, **np_kw) if np_kw else self._np(*conv)
        except Exception as e:
            raise errors.add_note(e, errors.context(self._opname, args + tuple(outs)))
        finally:
            _leave(tok)
        if outs:
            if self.nout == 1 and outs[0] is not None:
                return outs[0]
            if _all(o is not None for o in outs):
                return tuple(outs)
        return wrap_any(r)

    # ------------------------------------------------------------------ methods
    def at(self, a, indices, b=None):
        if self.name not in _AT_SUPPORTED:
            raise NotImplementedError(
                f"cupy.{self.name}.at is not supported by CuPy (only add, maximum and minimum "
                f"have .at)")
        if type(a) is not ndarray:
            raise errors.unsupported_type(f"cupy.{self.name}.at", a, "argument 1 (a)", ())
        if b is None:
            raise TypeError(f"cupy.{self.name}.at needs the values argument b")
        if _CONF.multi:
            check_device(a)
        key, _ = _convert_index(indices)
        tb = type(b)
        if tb is ndarray:
            v = b._a
        elif tb in SCALAR_TYPES:
            v = b
        elif isinstance(b, (numpy.ndarray, list, tuple)):
            state.count_h2d()  # CuPy copies host values to the device (`core.array`)
            v = b
        else:
            raise errors.unsupported_type(f"cupy.{self.name}.at", b, "argument 3 (b)", (a,))
        tok = _enter()
        try:
            self._np.at(a._a, key, v)
        finally:
            _leave(tok)

    def _delegate(self, method, args, kwargs):
        opname = f"cupy.{self.name}.{method}"
        conv = [kernel_arg(x, opname, f"argument {i + 1}", args) for i, x in enumerate(args)]
        out = kwargs.get("out")
        if out is not None:
            kwargs["out"] = kernel_arg(out, opname, "out", args)
        tok = _enter()
        try:
            r = getattr(self._np, method)(*conv, **kwargs)
        finally:
            _leave(tok)
        return out if out is not None else wrap_any(r)

    def reduce(self, *args, **kwargs):
        return self._delegate("reduce", args, kwargs)

    def accumulate(self, *args, **kwargs):
        return self._delegate("accumulate", args, kwargs)

    def outer(self, *args, **kwargs):
        return self._delegate("outer", args, kwargs)

    def reduceat(self, a, indices, *args, **kwargs):
        opname = f"cupy.{self.name}.reduceat"
        key = kernel_arg(indices, opname, "indices", (a,)) if type(indices) is ndarray \
            else indices
        conv = [kernel_arg(a, opname, "argument 1", ())]
        out = kwargs.get("out")
        if out is not None:
            kwargs["out"] = kernel_arg(out, opname, "out", (a,))
        r = self._np.reduceat(conv[0], key, *args, **kwargs)
        return out if out is not None else wrap_any(r)
