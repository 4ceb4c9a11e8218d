"""The device array of the simulated device: ``cupy.ndarray``, a strict wrapper over NumPy.

Data flow: every device array holds a private NumPy array (``_a``), the id of the device it
lives on (``_dev``) and where it was created (``_site``). Operators, methods and indexing unwrap
device operands, run NumPy on them (so results are bit-identical to the host) and wrap the
result again. Anything that would cross the host/device boundary implicitly in CuPy raises as
CuPy does (``__array__``, host operands of kernels, host values assigned through basic
indexing); explicit transfers (``get``, ``set``, host index arrays) are counted in
``state.STATS``. The module-level functions live in ``module.py`` and reach this class through
``wrap``/``wrap_any``/``kernel_arg``.
"""

from __future__ import annotations

import pickle
import warnings

import numpy

from . import errors, quiet, state

_NPND = numpy.ndarray
_asarray = numpy.asarray
_new = object.__new__
_site = state.caller_site
_CONF = state.CONF
_cur = state.current_device
_enter = quiet.enter
_leave = quiet.leave
_count_h2d = state.count_h2d
_count_d2h = state.count_d2h


def _numpy_scalar_types():
    unsupported = {numpy.longdouble, numpy.clongdouble} - {numpy.float64, numpy.complex128}
    out = set()
    for t in set(numpy.sctypeDict.values()):
        if issubclass(t, (numpy.bool_, numpy.number)) and t not in unsupported:
            out.add(t)
    return out


# Types CuPy's kernels accept as scalar operands (`_scalar.scalar_type_set`).
SCALAR_TYPES = frozenset({int, float, bool, complex} | _numpy_scalar_types())

_SUPPORTED_KINDS = frozenset("biufc")
_UNSUPPORTED_ITEMSIZE = {("f", numpy.dtype(numpy.longdouble).itemsize)} - {("f", 8)}
_UNSUPPORTED_ITEMSIZE |= {("c", numpy.dtype(numpy.clongdouble).itemsize)} - {("c", 16)}


def check_dtype(dtype, op: str):
    """The dtype as a numpy.dtype, or CuPy's ValueError for dtypes a GPU array cannot hold."""
    dt = numpy.dtype(dtype)
    if dt.kind not in _SUPPORTED_KINDS or (dt.kind, dt.itemsize) in _UNSUPPORTED_ITEMSIZE:
        raise errors.unsupported_dtype(dt, op)
    return dt


# ---------------------------------------------------------------------------- wrapping
def wrap(a, dev=None):
    """A new device array around the NumPy array (or NumPy scalar) `a`."""
    if a.__class__ is not _NPND:
        a = _asarray(a)
    o = _new(ndarray)
    o._a = a
    if dev is None:
        dev = _cur() if _CONF.multi else 0
    o._dev = dev
    o._site = _site(2)
    return o


def wrap_any(r, dev=None):
    """Wrap what a NumPy routine returned: arrays and NumPy scalars become device arrays
    (reductions give 0-d device arrays, never host scalars); tuples and lists are mapped;
    anything else (shapes, dtypes, Python bools) passes through."""
    c = r.__class__
    if c is _NPND:
        return wrap(r, dev)
    if isinstance(r, numpy.generic):
        return wrap(_asarray(r), dev)
    if c is tuple or c is list:
        return c(wrap_any(x, dev) for x in r)
    if isinstance(r, tuple) and hasattr(r, "_fields"):  # namedtuple results (linalg)
        return c(*[wrap_any(x, dev) for x in r])
    return r


def check_device(x) -> None:
    cur = _cur()
    if x._dev != cur:
        errors.check_peer_access(x, cur)


def kernel_arg(x, op, position, operands=()):
    """CuPy's `_preprocess_arg`: device arrays and scalars only."""
    t = type(x)
    if t is ndarray:
        if _CONF.multi:
            check_device(x)
        return x._a
    if t in SCALAR_TYPES:
        return x
    raise errors.unsupported_type(op, x, position, operands)


def plain_arg(x, op, position, operands=()):
    """Arguments of non-kernel routines: unwrap device arrays, refuse host arrays, recurse
    into lists/tuples (shapes, axes, pad widths and sequences of arrays pass through)."""
    t = type(x)
    if t is ndarray:
        if _CONF.multi:
            check_device(x)
        return x._a
    if t is _NPND:
        raise errors.unsupported_type(op, x, position, operands)
    if t is list or t is tuple:
        for e in x:
            te = type(e)
            if te is ndarray or te is _NPND or te is list or te is tuple:
                return t(plain_arg(e, op, position, operands) for e in x)
        return x
    return x


def _should_use_rop(x, y):
    try:
        y_ufunc = y.__array_ufunc__
    except AttributeError:
        return getattr(x, "__array_priority__", 0) < getattr(y, "__array_priority__", 0)
    return y_ufunc is None


# ---------------------------------------------------------------------------- operators
def _binary(uf, sym):
    opname = f"`{sym}` (cupy.{uf.__name__})"

    def op(self, other):
        t = type(other)
        if t is ndarray:
            if _CONF.multi:
                check_device(self)
                check_device(other)
            tok = _enter()
            try:
                r = uf(self._a, other._a)
            except ValueError as e:  # shapes that do not broadcast
                raise errors.add_note(e, errors.context(opname, (self, other)))
            finally:
                _leave(tok)
            return wrap(r)
        if t in SCALAR_TYPES:
            if _CONF.multi:
                check_device(self)
            tok = _enter()
            try:
                r = uf(self._a, other)
            finally:
                _leave(tok)
            return wrap(r)
        if _should_use_rop(self, other):
            return NotImplemented
        # As CuPy: let NumPy try every `__array_ufunc__`; ours then refuses host arrays.
        return uf(self, other)

    def rop(self, other):
        o = kernel_arg(other, opname, "left operand", (self,))
        if _CONF.multi:
            check_device(self)
        tok = _enter()
        try:
            r = uf(o, self._a)
        finally:
            _leave(tok)
        return wrap(r)

    def iop(self, other):
        o = kernel_arg(other, f"`{sym}=` (cupy.{uf.__name__} with out=)", "right operand",
                       (self,))
        if _CONF.multi:
            check_device(self)
        a = self._a
        tok = _enter()
        try:
            uf(a, o, out=a)
        finally:
            _leave(tok)
        return self

    return op, rop, iop


def _comparison(uf, kind):
    def op(self, other):
        t = type(other)
        if t is ndarray:
            o = other._a
            if _CONF.multi:
                check_device(other)
        elif t in SCALAR_TYPES:
            o = other
        elif _should_use_rop(self, other):
            return NotImplemented
        else:
            if isinstance(other, _NPND) and other.ndim == 0:
                other = other.item()
                if type(other) in SCALAR_TYPES:
                    return op(self, other)
            if kind in ("eq", "ne"):
                ot = type(other)
                if other is None or ot.__eq__ is object.__eq__ and (
                        kind == "eq" or ot.__ne__ is object.__ne__):
                    fill = numpy.zeros if kind == "eq" else numpy.ones
                    return wrap(fill(self._a.shape, dtype=numpy.bool_))
            return uf(self, other)
        if _CONF.multi:
            check_device(self)
        tok = _enter()
        try:
            r = uf(self._a, o)
        finally:
            _leave(tok)
        return wrap(r)

    return op


def _unary(uf):
    def op(self):
        if _CONF.multi:
            check_device(self)
        tok = _enter()
        try:
            r = uf(self._a)
        finally:
            _leave(tok)
        return wrap(r)

    return op


# ---------------------------------------------------------------------------- indexing helpers
def _index_part(k):
    t = type(k)
    if t is ndarray:
        if _CONF.multi:
            check_device(k)
        a = k._a
    elif t is _NPND:
        _count_h2d()
        a = k
    else:  # a list: CuPy copies it to the device as an index array
        _count_h2d()
        return k
    if a.dtype.kind not in "iub":
        raise errors.add_note(
            IndexError("arrays used as indices must be of integer or boolean type. "
                       f"(actual: {a.dtype})"),
            f"simulated device: index array is {errors.describe(k)}")
    return a


def _convert_index(key):
    """(key for NumPy, advanced?) with device index arrays unwrapped, host ones counted."""
    t = type(key)
    if t is tuple:
        parts = None
        for i, k in enumerate(key):
            tk = type(k)
            if tk is ndarray or tk is _NPND or tk is list:
                if parts is None:
                    parts = list(key)
                parts[i] = _index_part(k)
        if parts is None:
            return key, False
        return tuple(parts), True
    if t is ndarray or t is _NPND or t is list:
        return _index_part(key), True
    return key, False


def _with_ellipsis(key):
    if type(key) is tuple:
        for k in key:
            if k is Ellipsis:
                return key
        return key + (Ellipsis,)
    return (key, Ellipsis)


def _is_full_slice(key):
    return type(key) is slice and key == slice(None, None, None)


def _ctx(exc, op, arr):
    """Attach the operation and the array's description to an exception (message unchanged)."""
    return errors.add_note(exc, f"simulated device: {op} on {errors.describe(arr)}")


def _method(name, view=False):
    """A method delegated to numpy.ndarray.<name> with CuPy's argument strictness."""
    f = getattr(_NPND, name)
    opname = f"cupy.ndarray.{name}"

    def m(self, *args, **kwargs):
        if args:
            args = tuple(plain_arg(a, opname, f"argument {i + 1}", (self,))
                         for i, a in enumerate(args))
        out = None
        if kwargs:
            out = kwargs.get("out")
            for k, v in kwargs.items():
                tv = type(v)
                if tv is ndarray or tv is _NPND or tv is list or tv is tuple:
                    kwargs[k] = plain_arg(v, opname, f"argument {k!r}", (self,))
        if _CONF.multi and not view:
            check_device(self)
        tok = _enter()
        try:
            r = f(self._a, *args, **kwargs)
        except Exception as e:
            raise _ctx(e, opname, self)
        finally:
            _leave(tok)
        if out is not None and type(out) is ndarray:
            return out
        return wrap_any(r, self._dev if view else None)

    m.__name__ = name
    m.__qualname__ = f"ndarray.{name}"
    return m


# ---------------------------------------------------------------------------- the class
class ndarray:
    """Multi-dimensional array on a (simulated) CUDA device.

    ``cupy.ndarray(shape, dtype=float, memptr=None, strides=None, order='C')`` allocates an
    uninitialised array on the current device, as CuPy does.
    """

    __slots__ = ("_a", "_dev", "_site", "__weakref__")
    __module__ = "cupy"
    __array_priority__ = 100

    def __init__(self, shape, dtype=float, memptr=None, strides=None, order="C"):
        if memptr is not None or strides is not None:
            raise errors.NeedsRealGPU(
                "cupy.ndarray(memptr=..., strides=...) wraps raw device memory, which needs a "
                "real GPU; the simulated device cannot emulate it")
        dt = check_dtype(dtype, "cupy.ndarray")
        self._a = numpy.empty(shape, dtype=dt, order=order)
        self._dev = _cur() if _CONF.multi else 0
        self._site = _site(2)

    # ------------------------------------------------------------------ attributes
    @property
    def shape(self):
        return self._a.shape

    @shape.setter
    def shape(self, value):
        self._a.shape = value

    @property
    def dtype(self):
        return self._a.dtype

    @property
    def ndim(self):
        return self._a.ndim

    @property
    def size(self):
        return self._a.size

    @property
    def strides(self):
        return self._a.strides

    @property
    def itemsize(self):
        return self._a.itemsize

    @property
    def nbytes(self):
        return self._a.nbytes

    @property
    def flags(self):
        return self._a.flags

    @property
    def base(self):
        b = self._a.base
        return wrap(b, self._dev) if b.__class__ is _NPND else None

    @property
    def T(self):
        a = self._a
        if a.ndim < 2:
            return self
        return wrap(a.T, self._dev)

    @property
    def mT(self):
        if self._a.ndim < 2:
            raise _ctx(ValueError("matrix transpose with ndim < 2 is undefined"), "x.mT", self)
        return wrap(numpy.swapaxes(self._a, -1, -2), self._dev)

    @property
    def real(self):
        return wrap(self._a.real, self._dev)

    @real.setter
    def real(self, value):
        self._a.real = kernel_arg(value, "cupy.ndarray.real = ...", "value", (self,))

    @property
    def imag(self):
        return wrap(self._a.imag, self._dev)

    @imag.setter
    def imag(self, value):
        self._a.imag = kernel_arg(value, "cupy.ndarray.imag = ...", "value", (self,))

    @property
    def device(self):
        from .cuda import Device
        return Device(self._dev)

    @property
    def data(self):
        from .cuda import MemoryPointer
        return MemoryPointer(self)

    @property
    def __cuda_array_interface__(self):
        a = self._a
        return {
            "shape": a.shape,
            "typestr": a.dtype.str,
            "descr": a.dtype.descr,
            "strides": None if a.flags.c_contiguous else a.strides,
            "data": (a.__array_interface__["data"][0] if a.size else 0, False),
            "version": 3,
        }

    # ------------------------------------------------------------------ NumPy protocols
    def __array__(self, dtype=None, copy=None):
        raise errors.implicit_conversion(self)

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        cp = state.MODULES["cupy"]
        inout = inputs
        if "out" in kwargs:
            out = kwargs["out"]
            if len(out) != 1:
                raise ValueError("The 'out' parameter must have exactly one array value")
            inout += out
            kwargs["out"] = out[0]
        if method not in ("__call__", "outer", "at", "reduce", "accumulate", "reduceat"):
            return NotImplemented
        name = ufunc.__name__
        func = getattr(cp, name, None)
        if func is None:
            return NotImplemented
        if method != "__call__":
            func = getattr(func, method, None)
            if func is None:
                return NotImplemented
        for x in inout:
            t = type(x)
            if not (t is ndarray or t in SCALAR_TYPES or isinstance(x, _NPND)):
                return NotImplemented
        if name in ("greater", "greater_equal", "less", "less_equal", "equal", "not_equal"):
            # CuPy unwraps 0-d NumPy operands of comparisons (numpy/numpy#12142).
            inputs = tuple(x.item() if isinstance(x, _NPND) and x.ndim == 0 else x
                           for x in inputs)
        return func(*inputs, **kwargs)

    def __array_function__(self, func, types, args, kwargs):
        mod = state.MODULES["cupy"]
        try:
            for part in func.__module__.split(".")[1:]:
                mod = getattr(mod, part)
            cupy_func = getattr(mod, func.__name__)
        except AttributeError:
            return NotImplemented
        if cupy_func is func:
            return NotImplemented
        for t in types:
            if not issubclass(t, (ndarray, _NPND)):
                return NotImplemented
        return cupy_func(*args, **kwargs)

    # ------------------------------------------------------------------ conversions (D2H)
    def get(self, stream=None, order="C", out=None, blocking=True):
        a = self._a
        if out is not None:
            if not isinstance(out, _NPND):
                raise _ctx(TypeError("Only numpy.ndarray can be obtained from cupy.ndarray"),
                           f"x.get(out=...) with out {errors.describe(out)}", self)
            if a.dtype != out.dtype:
                raise _ctx(TypeError(f"{out.dtype} array cannot be obtained from {a.dtype} "
                                     f"array"), "x.get(out=...)", self)
            if a.shape != out.shape:
                raise _ctx(ValueError(f"Shape mismatch. Expected shape: {a.shape}, "
                                      f"actual shape: {out.shape}"), "x.get(out=...)", self)
            _count_d2h()
            out[...] = a
            return out
        order = order.upper()
        if order == "A":
            order = "F" if a.flags.f_contiguous and not a.flags.c_contiguous else "C"
        if order not in ("C", "F"):
            raise ValueError(f"unsupported order: {order}")
        if blocking:
            _count_d2h()
        else:
            state.STATS["d2h"] += 1
        return numpy.array(a, order=order, copy=True)

    def set(self, arr, stream=None):
        if not isinstance(arr, _NPND):
            raise _ctx(TypeError("Only numpy.ndarray can be set to cupy.ndarray"),
                       f"x.set(arr) with arr {errors.describe(arr)}", self)
        if self._a.dtype != arr.dtype:
            raise _ctx(TypeError(f"{arr.dtype} array cannot be set to {self._a.dtype} array"),
                       "x.set(arr)", self)
        if self._a.shape != arr.shape:
            raise _ctx(ValueError(f"Shape mismatch. Old shape: {self._a.shape}, "
                                  f"new shape: {arr.shape}"), "x.set(arr)", self)
        _count_h2d()
        self._a[...] = arr

    def item(self):
        if self._a.size != 1:
            raise _ctx(ValueError("can only convert an array of size 1 to a Python scalar"),
                       "x.item()", self)
        _count_d2h()
        return self._a.item()

    def tolist(self):
        _count_d2h()
        return self._a.tolist()

    def tobytes(self, order="C"):
        _count_d2h()
        return self._a.tobytes(order)

    def tofile(self, fid, sep="", format="%s"):
        _count_d2h()
        self._a.tofile(fid, sep, format)

    def dump(self, file):
        pickle.dump(self, file, -1)

    def dumps(self):
        return pickle.dumps(self, -1)

    def __int__(self):
        _count_d2h()
        return int(self._a)

    def __float__(self):
        _count_d2h()
        return float(self._a)

    def __complex__(self):
        _count_d2h()
        return complex(self._a)

    def __bool__(self):
        size = self._a.size
        if size == 0:
            warnings.warn(
                "The truth value of an empty array is ambiguous. Returning False, but in "
                "future this will result in an error. Use `array.size > 0` to check that an "
                "array is not empty.", DeprecationWarning, stacklevel=2)
            return False
        if size == 1:
            _count_d2h()
            return bool(self._a.reshape(()))
        raise _ctx(ValueError("The truth value of an array with more than one element is "
                              "ambiguous. Use a.any() or a.all()"), "bool(x)", self)

    def __repr__(self):
        _count_d2h()
        return repr(self._a)

    def __str__(self):
        _count_d2h()
        return str(self._a)

    def __format__(self, format_spec):
        _count_d2h()
        return format(self._a, format_spec)

    def __reduce__(self):
        return _rebuild, (self.get(),)

    def __copy__(self):
        return self.copy()

    def __deepcopy__(self, memo):
        return self.copy()

    # ------------------------------------------------------------------ container protocol
    def __len__(self):
        a = self._a
        if a.ndim == 0:
            raise _ctx(TypeError("len() of unsized object"), "len(x)", self)
        return a.shape[0]

    def __iter__(self):
        a = self._a
        if a.ndim == 0:
            raise _ctx(TypeError("iteration over a 0-d array"), "iter(x)", self)
        return (self[i] for i in range(a.shape[0]))

    def __getitem__(self, key):
        t = type(key)
        a = self._a
        try:
            if t is int or t is slice:
                r = a[key]
            else:
                key, advanced = _convert_index(key)
                if advanced and _CONF.multi:
                    check_device(self)
                r = a[key]
        except (IndexError, TypeError, ValueError) as e:
            raise _ctx(e, "x[index]", self)
        if r.__class__ is not _NPND:
            # CuPy returns a 0-d *view* for an all-integer index; NumPy a detached scalar.
            r = a[_with_ellipsis(key)]
        return wrap(r, self._dev)

    def __setitem__(self, key, value):
        key, advanced = _convert_index(key)
        tv = type(value)
        if tv is ndarray:
            if _CONF.multi:
                check_device(value)
            v = value._a
        elif tv in SCALAR_TYPES:
            v = value
        elif isinstance(value, _NPND):
            if advanced:
                _count_h2d()
                v = value
            elif value.ndim == 0:
                v = value.item()
            elif _CONF.slice_copy and _is_full_slice(key):
                if value.dtype != self._a.dtype or value.shape != self._a.shape:
                    raise ValueError(
                        "copying a numpy.ndarray to a cupy.ndarray by empty slice assignment "
                        "must ensure arrays have same shape and dtype")
                _count_h2d()
                v = value
            else:
                raise errors.add_note(
                    ValueError("non-scalar numpy.ndarray cannot be used for fill"),
                    f"simulated device: x[...] = value with a host array as value "
                    f"(CuPy refuses host arrays in basic-index assignment, gh-2079).\n"
                    f"  value: {errors.describe(value)}\n  target: {errors.describe(self)}\n"
                    f"  Use x[...] = cupy.asarray(value).")
        elif advanced and isinstance(value, (list, tuple)):
            _count_h2d()
            v = value
        else:
            raise errors.unsupported_type("x[...] = value (cupy fill)", value, "value", (self,))
        if _CONF.multi:
            check_device(self)
        try:
            self._a[key] = v
        except (IndexError, TypeError, ValueError) as e:
            raise _ctx(e, "x[index] = value", self)

    # ------------------------------------------------------------------ methods
    def fill(self, value):
        tv = type(value)
        if tv is ndarray:
            if value._a.shape != ():
                raise _ctx(ValueError("non-scalar cupy.ndarray cannot be used for fill"),
                           f"x.fill(value) with value {errors.describe(value)}", self)
            value = value._a
        elif isinstance(value, _NPND):
            if value.shape != ():
                raise _ctx(ValueError("non-scalar numpy.ndarray cannot be used for fill"),
                           f"x.fill(value) with value {errors.describe(value)}", self)
            value = value.astype(self._a.dtype, copy=False).item()
        elif tv not in SCALAR_TYPES:
            raise errors.unsupported_type("cupy.ndarray.fill", value, "value", (self,))
        self._a.fill(value)

    def reshape(self, *shape, order="C"):
        if len(shape) == 1 and type(shape[0]) is ndarray:
            raise TypeError("'ndarray' object cannot be interpreted as an integer")
        try:
            return wrap(self._a.reshape(*shape, order=order), self._dev)
        except (TypeError, ValueError) as e:
            raise _ctx(e, f"x.reshape{shape}", self)

    def transpose(self, *axes):
        try:
            return wrap(self._a.transpose(*axes), self._dev)
        except (TypeError, ValueError) as e:
            raise _ctx(e, f"x.transpose{axes}", self)

    def swapaxes(self, axis1, axis2):
        return wrap(self._a.swapaxes(axis1, axis2), self._dev)

    def sum(self, axis=None, dtype=None, out=None, keepdims=False):
        if _CONF.multi:
            check_device(self)
        if out is None:
            tok = _enter()
            try:
                r = self._a.sum(axis, dtype, None, keepdims)
            except Exception as e:
                raise _ctx(e, "x.sum()", self)
            finally:
                _leave(tok)
            return wrap(r)
        o = kernel_arg(out, "cupy.ndarray.sum", "out", (self,))
        self._a.sum(axis, dtype, o, keepdims)
        return out

    def astype(self, dtype, order="K", casting=None, subok=None, copy=True):
        if casting is not None:
            raise _ctx(TypeError("casting is not supported yet"), "x.astype(casting=...)", self)
        if subok is not None:
            raise _ctx(TypeError("subok is not supported yet"), "x.astype(subok=...)", self)
        dt = check_dtype(dtype, "cupy.ndarray.astype")
        if not copy and dt == self._a.dtype:
            return self
        if _CONF.multi:
            check_device(self)
        tok = _enter()
        try:
            r = self._a.astype(dt, order=order or "K")
        finally:
            _leave(tok)
        return wrap(r)

    def copy(self, order="C"):
        return wrap(self._a.copy(order=order))

    def view(self, dtype=None, array_class=None):
        if dtype is None:
            return wrap(self._a.view(), self._dev)
        return wrap(self._a.view(check_dtype(dtype, "cupy.ndarray.view")), self._dev)

    def dot(self, b, out=None):
        if type(b) is not ndarray:
            raise errors.incorrect_argument("cupy.ndarray.dot", "b", b, (self,))
        if out is not None and type(out) is not ndarray:
            raise errors.incorrect_argument("cupy.ndarray.dot", "out", out, (self,))
        if _CONF.multi:
            check_device(self)
            check_device(b)
        tok = _enter()
        try:
            if out is None:
                return wrap(numpy.dot(self._a, b._a))
            numpy.dot(self._a, b._a, out=out._a)
            return out
        except ValueError as e:
            raise errors.add_note(e, f"simulated device: x.dot(b) with\n  x: "
                                     f"{errors.describe(self)}\n  b: {errors.describe(b)}")
        finally:
            _leave(tok)

    def clip(self, min=None, max=None, out=None):
        lo = None if min is None else kernel_arg(min, "cupy.ndarray.clip", "min", (self,))
        hi = None if max is None else kernel_arg(max, "cupy.ndarray.clip", "max", (self,))
        if _CONF.multi:
            check_device(self)
        tok = _enter()
        try:
            if out is None:
                return wrap(numpy.clip(self._a, lo, hi))
            numpy.clip(self._a, lo, hi,
                       out=kernel_arg(out, "cupy.ndarray.clip", "out", (self,)))
            return out
        finally:
            _leave(tok)

    def ptp(self, axis=None, out=None, keepdims=False):
        o = None if out is None else kernel_arg(out, "cupy.ndarray.ptp", "out", (self,))
        r = numpy.ptp(self._a, axis=axis, out=o, keepdims=keepdims)
        return out if out is not None else wrap(r)

    def reduced_view(self, dtype=None):
        if dtype is not None:
            warnings.warn("calling reduced_view with dtype is deprecated",
                          DeprecationWarning, stacklevel=2)
            return self.reduced_view().view(dtype)
        a = self._a
        if a.ndim <= 1:
            return self
        if a.flags.c_contiguous:
            return wrap(a.reshape(-1), self._dev)
        return self

    def _scatter(self, key, value, ufunc, name):
        key, _ = _convert_index(key)
        tv = type(value)
        if tv is ndarray:
            v = value._a
        elif tv in SCALAR_TYPES:
            v = value
        elif isinstance(value, (_NPND, list, tuple)):
            _count_h2d()
            v = value
        else:
            raise errors.unsupported_type(f"cupy {name}", value, "value", (self,))
        if _CONF.multi:
            check_device(self)
        tok = _enter()
        try:
            ufunc.at(self._a, key, v)
        finally:
            _leave(tok)

    def scatter_add(self, slices, value):
        if _CONF.era == "current":
            warnings.warn("`ndarray.scatter_add` is deprecated. Please use `cupy.add.at` "
                          "instead.", DeprecationWarning, stacklevel=2)
        self._scatter(slices, value, numpy.add, "scatter_add")

    def scatter_max(self, slices, value):
        if _CONF.era == "current":
            warnings.warn("`ndarray.scatter_max` is deprecated Please use `cupy.maximum.at` "
                          "instead.", DeprecationWarning, stacklevel=2)
        self._scatter(slices, value, numpy.maximum, "scatter_max")

    def scatter_min(self, slices, value):
        if _CONF.era == "current":
            warnings.warn("`ndarray.scatter_min` is deprecated Please use `cupy.minimum.at` "
                          "instead.", DeprecationWarning, stacklevel=2)
        self._scatter(slices, value, numpy.minimum, "scatter_min")

    flatten = _method("flatten")
    ravel = _method("ravel", view=True)
    squeeze = _method("squeeze", view=True)
    diagonal = _method("diagonal", view=True)
    mean = _method("mean")
    var = _method("var")
    std = _method("std")
    prod = _method("prod")
    max = _method("max")
    min = _method("min")
    argmax = _method("argmax")
    argmin = _method("argmin")
    all = _method("all")
    any = _method("any")
    cumsum = _method("cumsum")
    cumprod = _method("cumprod")
    trace = _method("trace")
    round = _method("round")
    conj = _method("conj")
    conjugate = _method("conjugate")
    nonzero = _method("nonzero")
    take = _method("take")
    put = _method("put")
    repeat = _method("repeat")
    compress = _method("compress")
    choose = _method("choose")
    sort = _method("sort")
    argsort = _method("argsort")
    partition = _method("partition")
    argpartition = _method("argpartition")
    searchsorted = _method("searchsorted")


def _install_operators():
    for name, uf, sym in [
        ("add", numpy.add, "+"), ("sub", numpy.subtract, "-"), ("mul", numpy.multiply, "*"),
        ("truediv", numpy.true_divide, "/"), ("floordiv", numpy.floor_divide, "//"),
        ("mod", numpy.remainder, "%"), ("pow", numpy.power, "**"),
        ("matmul", numpy.matmul, "@"), ("lshift", numpy.left_shift, "<<"),
        ("rshift", numpy.right_shift, ">>"), ("and", numpy.bitwise_and, "&"),
        ("or", numpy.bitwise_or, "|"), ("xor", numpy.bitwise_xor, "^"),
    ]:
        op, rop, iop = _binary(uf, sym)
        for prefix, fn in (("", op), ("r", rop), ("i", iop)):
            fn.__name__ = f"__{prefix}{name}__"
            fn.__qualname__ = f"ndarray.__{prefix}{name}__"
            setattr(ndarray, fn.__name__, fn)
    for name, uf in [("lt", numpy.less), ("le", numpy.less_equal), ("eq", numpy.equal),
                     ("ne", numpy.not_equal), ("gt", numpy.greater),
                     ("ge", numpy.greater_equal)]:
        fn = _comparison(uf, name)
        fn.__name__ = f"__{name}__"
        setattr(ndarray, fn.__name__, fn)
    for name, uf in [("neg", numpy.negative), ("abs", numpy.absolute),
                     ("invert", numpy.invert)]:
        fn = _unary(uf)
        fn.__name__ = f"__{name}__"
        setattr(ndarray, fn.__name__, fn)

    positive = _unary(numpy.positive)

    def __pos__(self):
        if self._a.dtype == numpy.bool_:
            warnings.warn("Applying '+' to a non-numerical array is ill-defined. Returning a "
                          "copy, but in the future this will error.", DeprecationWarning,
                          stacklevel=2)
            return self.copy()
        return positive(self)

    def __divmod__(self, other):
        if type(other) is not ndarray and _should_use_rop(self, other):
            return NotImplemented
        return state.MODULES["cupy"].divmod(self, other)

    def __rdivmod__(self, other):
        return state.MODULES["cupy"].divmod(other, self)

    def __pow__(self, other, modulo=None):
        return pow_(self, other)

    pow_ = ndarray.__pow__
    ndarray.__pos__ = __pos__
    ndarray.__divmod__ = __divmod__
    ndarray.__rdivmod__ = __rdivmod__
    ndarray.__pow__ = __pow__
    # Defining __eq__ drops hashing, as for CuPy and NumPy arrays.
    ndarray.__hash__ = None


_install_operators()
state.NDARRAY = ndarray


def _rebuild(host_array):
    """Unpickle a device array (CuPy pickles through a host copy too)."""
    _count_h2d()
    return wrap(numpy.array(host_array, copy=True))

