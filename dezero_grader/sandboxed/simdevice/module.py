"""The routines of ``cupy`` (and ``cupy.linalg``, ``cupy.fft``) on the simulated device.

Most of NumPy's public routines are exposed by *generic delegation*: the wrapper unwraps device
arrays, refuses host arrays with CuPy's ``TypeError: Unsupported type <class
'numpy.ndarray'>``, runs the NumPy routine with floating-point warnings silenced, and wraps
every array in the result (reductions give 0-d device arrays). NumPy's ufuncs become
``ufunc.ufunc`` objects. Routines whose CuPy behaviour differs from that rule are written out
here: the host/device transfers (``array``, ``asarray``, ``asnumpy``), ``get_array_module``,
the concatenation family, ``dot``/``tensordot``, ``where``/``clip``, the 0-d results of
``allclose``/``array_equal``, ``scatter_add`` of the book era, and I/O. ``loader.py`` turns the
dictionaries built by ``build_namespaces`` into modules.
"""

from __future__ import annotations

import types

import numpy

from dezero_grader.sandboxed.probes import compat

from . import cuda, errors, kernels, quiet, state
from . import conv_kernels  # noqa: F401  (registers the im2col/col2im emulations)
from .ndarray import check_device, check_dtype, kernel_arg, ndarray, plain_arg, wrap, wrap_any
from .ufunc import ufunc

_NPND = numpy.ndarray
_CONF = state.CONF
_enter = quiet.enter
_leave = quiet.leave

SCATTER_ADD = compat.SCATTER_ADD   # what the book-era `cupy.scatter_add` records

# NumPy names the simulated device does not expose: host-only I/O and configuration, routines
# that call back into Python with host arrays, classes CuPy does not have, and the polynomial
# routines (absent from the CuPy versions DeZero targets; NumPy then reports "no
# implementation found" through __array_function__, as with a real CuPy).
EXCLUDED = frozenset("""
vectorize frompyfunc piecewise apply_along_axis apply_over_axes
savetxt loadtxt genfromtxt fromfile fromregex memmap tofile recfromcsv recfromtxt
set_printoptions get_printoptions printoptions set_string_function seterr geterr seterrcall
geterrcall errstate setbufsize getbufsize info show_config show_runtime test lookfor source who
asmatrix bmat matrix mat recarray record chararray nditer nested_iters ndenumerate ndindex
broadcast flatiter busday_count busday_offset is_busday busdaycalendar datetime_as_string
datetime_data deprecate deprecate_with_doc safe_eval disp byte_bounds get_include add_newdoc
add_docstring add_newdoc_ufunc format_parser typename mintypecode asfarray
poly poly1d polyadd polyder polydiv polyfit polyint polymul polysub polyval roots
object_ str_ bytes_ void datetime64 timedelta64 character flexible unicode_ string_ longdouble
clongdouble longfloat clongfloat float128 complex256 float96 complex192
""".split())

_HOST_PASSTHROUGH = (numpy.dtype, numpy.finfo, numpy.iinfo)


# ---------------------------------------------------------------------------- delegation
def delegate(np_func, qualname: str):
    """A cupy routine running `np_func` on unwrapped device arrays (host arrays refused)."""
    opname = f"cupy.{qualname}"

    def f(*args, **kwargs):
        given = args
        if args:
            args = [plain_arg(a, opname, f"argument {i + 1}", args) for i, a in enumerate(args)]
        out = None
        if kwargs:
            out = kwargs.get("out")
            for k, v in kwargs.items():
                tv = type(v)
                if tv is ndarray or tv is _NPND or tv is list or tv is tuple:
                    kwargs[k] = plain_arg(v, opname, f"argument {k!r}", args)
            dt = kwargs.get("dtype")
            if dt is not None:
                check_dtype(dt, opname)
        tok = _enter()
        try:
            r = np_func(*args, **kwargs)
        except Exception as e:
            raise errors.add_note(e, errors.context(opname, given))
        finally:
            _leave(tok)
        if out is not None and type(out) is ndarray:
            return out
        return wrap_any(r)

    f.__name__ = getattr(np_func, "__name__", qualname)
    f.__qualname__ = qualname
    f.__doc__ = f"``{opname}`` on the simulated device (NumPy underneath).\n\n" + (
        getattr(np_func, "__doc__", None) or "")
    return f


class _IndexHelper:
    """``cupy.r_``/``c_``/``mgrid``/``ogrid``: NumPy's index tricks returning device arrays."""

    def __init__(self, np_obj, name):
        self._np = np_obj
        self._name = name

    def __getitem__(self, key):
        key = plain_arg(key if type(key) is tuple else (key,), f"cupy.{self._name}", "index")
        return wrap_any(self._np[key if len(key) != 1 else key[0]])


def _fill_from(ns: dict, source, prefix: str) -> None:
    for name in dir(source):
        if name.startswith("_") or name in ns or name in EXCLUDED:
            continue
        obj = getattr(source, name)
        if isinstance(obj, numpy.ufunc):
            ns[name] = ufunc(obj)
        elif isinstance(obj, type):
            if (obj is numpy.generic or issubclass(obj, (numpy.number, numpy.bool_))
                    or obj in _HOST_PASSTHROUGH or issubclass(obj, BaseException)):
                ns[name] = obj
        elif isinstance(obj, types.ModuleType):
            continue
        elif callable(obj):
            ns[name] = delegate(obj, prefix + name)
        elif obj is None or type(obj) in (int, float, bool):
            ns[name] = obj


# ---------------------------------------------------------------------------- transfers
def _nested_kind(seq) -> tuple:
    """(has device arrays, has anything else) over a nested list/tuple."""
    dev = host = False
    for e in seq:
        t = type(e)
        if t is ndarray:
            dev = True
        elif t is list or t is tuple:
            d, h = _nested_kind(e)
            dev |= d
            host |= h
        else:
            host = True
        if dev and host:
            break
    return dev, host


def _unwrap_nested(seq):
    return [e._a if type(e) is ndarray else _unwrap_nested(e) for e in seq]


def _first_device_array(seq):
    for e in seq:
        if type(e) is ndarray:
            return e
        if type(e) in (list, tuple):
            r = _first_device_array(e)
            if r is not None:
                return r
    return None


def _to_device(obj, dtype, order, ndmin, op):
    t = type(obj)
    if t is list or t is tuple:
        dev, host = _nested_kind(obj)
        if dev and not host:  # CuPy concatenates nested device arrays on the device
            a = numpy.array(_unwrap_nested(obj), dtype=dtype, order=order, ndmin=ndmin)
            check_dtype(a.dtype, op)
            return wrap(a)
        if dev:
            raise errors.implicit_conversion(_first_device_array(obj))
    a = numpy.array(obj, dtype=dtype, copy=True, order=order, ndmin=ndmin)
    check_dtype(a.dtype, op)
    state.count_h2d()
    return wrap(a)


def array(obj, dtype=None, copy=True, order="K", subok=False, ndmin=0, *, blocking=False):
    if type(obj) is ndarray:
        if _CONF.multi:
            check_device(obj)
        dt = obj._a.dtype if dtype is None else check_dtype(dtype, "cupy.array")
        a = obj._a
        if copy or dt != a.dtype or a.ndim < ndmin:
            return wrap(numpy.array(a, dtype=dt, order=order, ndmin=ndmin))
        return obj
    return _to_device(obj, dtype, order, ndmin, "cupy.array")


def asarray(a, dtype=None, order=None, *, blocking=False):
    if type(a) is ndarray:
        if dtype is None or numpy.dtype(dtype) == a._a.dtype:
            if order is None or order in "KA" or (order == "C" and a._a.flags.c_contiguous) \
                    or (order == "F" and a._a.flags.f_contiguous):
                return a
        return array(a, dtype=dtype, copy=False, order=order or "K")
    return _to_device(a, dtype, order or "K", 0, "cupy.asarray")


def asanyarray(a, dtype=None, order=None):
    return asarray(a, dtype, order)


def ascontiguousarray(a, dtype=None):
    if type(a) is ndarray:
        r = numpy.ascontiguousarray(a._a, dtype=dtype)
        return a if r is a._a else wrap(r)
    return _to_device(a, dtype, "C", 0, "cupy.ascontiguousarray")


def asfortranarray(a, dtype=None):
    if type(a) is ndarray:
        r = numpy.asfortranarray(a._a, dtype=dtype)
        return a if r is a._a else wrap(r)
    return _to_device(a, dtype, "F", 0, "cupy.asfortranarray")


def asnumpy(a, stream=None, order="C", out=None, *, blocking=True):
    if type(a) is ndarray:
        return a.get(stream=stream, order=order, out=out, blocking=blocking)
    if hasattr(a, "__cuda_array_interface__"):
        raise errors.NeedsRealGPU("cupy.asnumpy of a foreign GPU array needs a real GPU")
    if out is None:
        return numpy.asarray(a, order=order)
    out[...] = a
    return out


def get_array_module(*args):
    for a in args:
        if type(a) is ndarray:
            return state.MODULES["cupy"]
    return numpy


# ---------------------------------------------------------------------------- special routines
def _only_device(tup, op):
    if type(tup) is ndarray:
        return tup._a  # NumPy iterates the first axis; so does CuPy
    out = []
    for x in tup:
        if type(x) is not ndarray:
            exc = TypeError("Only cupy arrays can be concatenated")
            raise errors.add_note(exc, f"simulated device: {op} got {errors.describe(x)} among "
                                       f"its inputs; move it with cupy.asarray(...) first")
        if _CONF.multi:
            check_device(x)
        out.append(x._a)
    return out


def _joiner(np_func, name):
    op = f"cupy.{name}"

    def f(tup, *args, **kwargs):
        arrays = _only_device(tup, op)
        out = kwargs.get("out")
        if out is not None:
            kwargs["out"] = kernel_arg(out, op, "out", ())
        tok = _enter()
        try:
            r = np_func(arrays, *args, **kwargs)
        finally:
            _leave(tok)
        return out if out is not None else wrap(r)

    f.__name__ = f.__qualname__ = name
    return f


def dot(a, b, out=None):
    if type(a) is not ndarray:
        if isinstance(a, _NPND) and type(b) is ndarray:
            raise errors.implicit_conversion(b)  # CuPy calls a.dot(b): NumPy converts b
        raise errors.incorrect_argument("cupy.dot", "a", a, (b,))
    return a.dot(b, out)


def tensordot(a, b, axes=2):
    if type(a) is not ndarray:
        raise errors.incorrect_argument("cupy.tensordot", "a", a, (b,))
    if type(b) is not ndarray:
        raise errors.incorrect_argument("cupy.tensordot", "b", b, (a,))
    if _CONF.multi:
        check_device(a)
        check_device(b)
    tok = _enter()
    try:
        return wrap(numpy.tensordot(a._a, b._a, axes))
    finally:
        _leave(tok)


def where(condition, x=None, y=None):
    if x is None and y is None:
        c = kernel_arg(condition, "cupy.where", "condition")
        return wrap_any(numpy.nonzero(c))
    if x is None or y is None:
        raise ValueError("Must provide both 'x' and 'y' or neither.")
    args = (condition, x, y)
    c, xv, yv = (kernel_arg(v, "cupy.where", n, args)
                 for v, n in zip(args, ("condition", "x", "y")))
    tok = _enter()
    try:
        return wrap(numpy.where(c, xv, yv))
    finally:
        _leave(tok)


def clip(a, a_min=None, a_max=None, out=None, **kwargs):
    if kwargs:  # NumPy 2 spells them min=/max=
        a_min = kwargs.pop("min", a_min)
        a_max = kwargs.pop("max", a_max)
        if kwargs:
            raise TypeError("Wrong arguments %s" % kwargs)
    if type(a) is not ndarray:
        raise errors.unsupported_type("cupy.clip", a, "argument 1 (a)")
    return a.clip(a_min, a_max, out)


def _device_bool(np_func, name):
    def f(*args, **kwargs):
        args = [plain_arg(a, f"cupy.{name}", f"argument {i + 1}", args)
                for i, a in enumerate(args)]
        return wrap(numpy.asarray(np_func(*args, **kwargs)))  # CuPy >= 8: a 0-d device array

    f.__name__ = f.__qualname__ = name
    return f


def scatter_add(a, slices, value):
    """``cupy.scatter_add`` of CuPy < 8 (book era only): works, and is recorded as a finding."""
    state.record_finding(SCATTER_ADD.api, SCATTER_ADD.breaks, SCATTER_ADD.since, SCATTER_ADD.fix)
    if type(a) is not ndarray:
        raise errors.unsupported_type("cupy.scatter_add", a, "argument 1 (a)")
    a._scatter(slices, value, numpy.add, "scatter_add")


def isscalar(element):
    return numpy.isscalar(element)


# ---------------------------------------------------------------------------- I/O
def save(file, arr, allow_pickle=None):
    numpy.save(file, asnumpy(arr), allow_pickle=bool(allow_pickle))


def _savez(np_func):
    def f(file, *args, **kwds):
        np_func(file, *[asnumpy(a) for a in args], **{k: asnumpy(v) for k, v in kwds.items()})
    return f


class NpzFile:
    """``cupy.load`` of an ``.npz``: members come back as device arrays."""

    def __init__(self, npz):
        self.npz = npz

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __getitem__(self, key):
        state.count_h2d()
        return wrap(numpy.array(self.npz[key]))

    @property
    def files(self):
        return self.npz.files

    def close(self):
        self.npz.close()


def load(file, mmap_mode=None, allow_pickle=None):
    obj = numpy.load(file, mmap_mode=mmap_mode, allow_pickle=bool(allow_pickle))
    if isinstance(obj, _NPND):
        state.count_h2d()
        return wrap(numpy.array(obj))
    return NpzFile(obj)


# ---------------------------------------------------------------------------- misc
def is_available() -> bool:
    return True


def get_default_memory_pool():
    return cuda.DEFAULT_MEMORY_POOL


def get_default_pinned_memory_pool():
    return cuda.DEFAULT_PINNED_MEMORY_POOL


def show_config():
    print("CuPy: simulated device of dezero-grader (NumPy %s underneath), era %s, %d device(s)"
          % (numpy.__version__, _CONF.era, _CONF.num_devices))


# ---------------------------------------------------------------------------- assembly
def build_namespaces() -> dict:
    """{'cupy': {...}, 'cupy.linalg': {...}, 'cupy.fft': {...}} for the loader."""
    ns = {
        "ndarray": ndarray, "ufunc": ufunc,
        "array": array, "asarray": asarray, "asanyarray": asanyarray,
        "ascontiguousarray": ascontiguousarray, "asfortranarray": asfortranarray,
        "asnumpy": asnumpy, "get_array_module": get_array_module, "isscalar": isscalar,
        "dot": dot, "tensordot": tensordot, "where": where, "clip": clip,
        "save": save, "savez": _savez(numpy.savez),
        "savez_compressed": _savez(numpy.savez_compressed), "load": load,
        "is_available": is_available, "get_default_memory_pool": get_default_memory_pool,
        "get_default_pinned_memory_pool": get_default_pinned_memory_pool,
        "show_config": show_config,
        "ElementwiseKernel": kernels.ElementwiseKernel,
        "ReductionKernel": kernels.ReductionKernel, "RawKernel": kernels.RawKernel,
        "RawModule": kernels.RawModule, "fuse": kernels.fuse,
        "newaxis": None, "dtype": numpy.dtype,
    }
    for name in ("concatenate", "stack", "hstack", "vstack", "dstack", "column_stack"):
        ns[name] = _joiner(getattr(numpy, name), name)
    for name in ("allclose", "array_equal", "array_equiv"):
        ns[name] = _device_bool(getattr(numpy, name), name)
    for name in ("r_", "c_", "mgrid", "ogrid"):
        ns[name] = _IndexHelper(getattr(numpy, name), name)
    ns["s_"] = numpy.s_
    ns["index_exp"] = numpy.index_exp
    _fill_from(ns, numpy, "")

    linalg = {}
    _fill_from(linalg, numpy.linalg, "linalg.")
    fft = {}
    _fill_from(fft, numpy.fft, "fft.")
    return {"cupy": ns, "cupy.linalg": linalg, "cupy.fft": fft}
