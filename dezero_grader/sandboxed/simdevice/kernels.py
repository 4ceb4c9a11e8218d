"""User-defined CUDA kernels on the simulated device: contract checks and host emulations.

``cupy.ElementwiseKernel`` is defined without compiling anything (as in CuPy, where compilation
is lazy). A call validates the contract CuPy validates — argument count, argument types
(``_preprocess_args``), placeholder/declared dtypes, output arrays — and then runs the body
only if a *host emulation* is registered for the kernel's fingerprint: its signature (parameter
lists and name, whitespace-insensitive) plus tokens the body must contain. Any other kernel, and
every ``RawKernel``/``RawModule``/``ReductionKernel``, raises ``NeedsRealGPU``, which graders
report as "needs a real GPU" without penalty. Emulations register through
``register_emulation``; the bundled im2col/col2im ones live in ``conv_kernels.py``.
"""

from __future__ import annotations

import functools
import hashlib
import re
from dataclasses import dataclass
from typing import Callable

import numpy

from . import errors, quiet, state
from .ndarray import SCALAR_TYPES, check_device, ndarray, wrap

_all = all   # the builtin as it was before learner code ran (which may patch builtins)

_IDENT = re.compile(r"[A-Za-z_]\w*")


@dataclass(frozen=True)
class Param:
    """One parameter of a kernel signature, e.g. ``raw T img`` or ``int32 h``."""

    name: str
    ctype: str            # placeholder letter ('T') or dtype name ('int32')
    dtype: object         # numpy.dtype for declared types, None for placeholders
    raw: bool


def parse_params(text: str) -> tuple:
    """Parse a CuPy parameter list ('raw T img, int32 h') into Params."""
    text = text.strip()
    if not text:
        return ()
    out = []
    for item in text.split(","):
        words = item.split()
        if len(words) < 2:
            raise Exception(f"Syntax error: {item}")
        t, name = words[-2:]
        raw = False
        for w in words[:-2]:
            if w == "raw":
                raw = True
            elif w != "_non_const":
                raise Exception(f'Unknown keyword "{w}"')
        if len(t) == 1:
            dtype = None
        else:
            try:
                dtype = numpy.dtype(t)
            except TypeError:
                raise ValueError(f"Wrong type {t}") from None
            if dtype.name != t:
                raise ValueError(f"Wrong type {t}")
        out.append(Param(name, t, dtype, raw))
    return tuple(out)


def normalise_params(text: str) -> str:
    return ", ".join(" ".join(item.split()) for item in text.strip().split(",") if item.strip())


def fingerprint(in_params: str, out_params: str, name: str) -> str:
    """Stable id of a kernel signature: whitespace-insensitive parameter lists and name."""
    key = f"{normalise_params(in_params)} -> {normalise_params(out_params)} :: {name.strip()}"
    return hashlib.sha256(key.encode()).hexdigest()[:16]


@dataclass(frozen=True)
class Emulation:
    """A host implementation of one known kernel.

    `run(args, outs)` gets the arguments by parameter name (device data as NumPy arrays in
    logical C order, scalars cast to their declared type) and writes into the output arrays.
    The operation must contain every identifier in `tokens` and assign every name in
    `assigns`; otherwise the body was edited and cannot be trusted to match the emulation.
    """

    label: str
    tokens: frozenset
    assigns: tuple
    run: Callable


_REGISTRY: dict = {}


def register_emulation(in_params: str, out_params: str, name: str, run: Callable,
                       tokens=(), label: str | None = None) -> str:
    """Register `run` as the host emulation of the kernel with this signature.

    `tokens` default to every parameter name plus the loop index ``i``; every output
    parameter must be assigned in the body. Returns the fingerprint.
    """
    params = parse_params(in_params) + parse_params(out_params)
    outs = parse_params(out_params)
    toks = frozenset(tokens) | {p.name for p in params} | {"i"}
    fp = fingerprint(in_params, out_params, name)
    _REGISTRY[fp] = Emulation(label or name, toks, tuple(p.name for p in outs), run)
    _analyse.cache_clear()
    return fp


@functools.lru_cache(maxsize=256)
def _analyse(in_params: str, out_params: str, operation: str, name: str) -> tuple:
    """(in Params, out Params, fingerprint, emulation or None, signature known?), memoised:
    the book's code defines its kernels anew on every call."""
    ins, outs = parse_params(in_params), parse_params(out_params)
    fp = fingerprint(in_params, out_params, name)
    em = _REGISTRY.get(fp)
    return ins, outs, fp, (em if em is not None and _body_matches(em, operation) else None), \
        em is not None


def _body_matches(em: Emulation, operation: str) -> bool:
    idents = set(_IDENT.findall(operation))
    if not em.tokens <= idents:
        return False
    return _all(re.search(rf"\b{re.escape(n)}\s*(\[[^\]]*\]\s*)?[-+*/]?=(?!=)", operation)
               for n in em.assigns)


def _needs_gpu(kind: str, name: str, why: str) -> errors.NeedsRealGPU:
    return errors.NeedsRealGPU(
        f"{kind} {name!r} needs a real GPU: {why}. The simulated device only runs kernels it "
        f"has a host emulation for (the bundled im2col/col2im); this is not counted against "
        f"the submission.")


def _preprocess(args, kname):
    """CuPy's `_preprocess_args` for kernel calls: device arrays and scalars only."""
    multi = state.CONF.multi
    for i, a in enumerate(args):
        t = type(a)
        if t is ndarray:
            if multi:
                check_device(a)
        elif t not in SCALAR_TYPES:
            raise errors.unsupported_type(f"kernel {kname!r}", a, f"argument {i + 1}", args)


class ElementwiseKernel:
    """``cupy.ElementwiseKernel``: defined freely, run only through a registered emulation."""

    def __init__(self, in_params, out_params, operation, name="kernel", reduce_dims=True,
                 preamble="", no_return=False, return_tuple=False, **kwargs):
        if not re.fullmatch(r"[A-Za-z_]\w*", name or ""):
            raise ValueError(f'Invalid kernel name: "{name}"')
        (self.in_params, self.out_params, self.fingerprint, self._emulation,
         self._signature_known) = _analyse(in_params, out_params, operation, name)
        self.nin = len(self.in_params)
        self.nout = len(self.out_params)
        self.nargs = self.nin + self.nout
        self.params = self.in_params + self.out_params
        self.operation = operation
        self.name = self.__name__ = name
        self.reduce_dims = reduce_dims
        self.preamble = preamble
        self.no_return = no_return
        self.return_tuple = return_tuple
        self.kwargs = kwargs
        if "i" in [p.name for p in self.params]:
            raise ValueError("Can not use 'i' as a parameter name")

    def __call__(self, *args, **kwargs):
        size = kwargs.pop("size", -1)
        kwargs.pop("stream", None)
        block_size = kwargs.pop("block_size", 128)
        if kwargs:
            raise TypeError("Wrong arguments %s" % kwargs)
        if block_size <= 0:
            raise ValueError("block_size must be greater than zero")
        n = len(args)
        if n != self.nin and n != self.nargs:
            raise TypeError(
                f"Wrong number of arguments for {self.name!r}. It must be either {self.nin} "
                f"or {self.nargs} (with outputs), but given {n}.")
        _preprocess(args, self.name)
        in_args, out_args = list(args[:self.nin]), list(args[self.nin:])

        # Loop shape: broadcast of the non-raw array arguments, or `size`.
        nonraw = [a._a.shape for a, p in zip(args, self.params)
                  if type(a) is ndarray and not p.raw]
        if size != -1:
            if nonraw:
                raise ValueError("Specified 'size' can be used only if all of the ndarray "
                                 "are 'raw'.")
            shape = (int(size),)
        else:
            if not nonraw:
                raise ValueError("Loop size is undecided.")
            shape = numpy.broadcast_shapes(*nonraw)

        types = self._decide_types(in_args, out_args)
        if out_args:
            for a, p in zip(out_args, self.out_params):
                if type(a) is not ndarray:
                    raise TypeError("Output arguments type must be cupy.ndarray")
                if not p.raw and a._a.shape != shape:
                    raise ValueError("Out shape is mismatched")
        else:
            for p in self.out_params:
                if p.raw and size == -1:
                    raise ValueError("Output array size is Undecided")
            out_args = [wrap(numpy.empty(shape, dtype=types[p.ctype] if p.dtype is None
                                         else p.dtype)) for p in self.out_params]

        if self.no_return:
            ret = None
        elif not self.return_tuple and self.nout == 1:
            ret = out_args[0]
        else:
            ret = tuple(out_args)
        if 0 in shape:
            return ret

        em = self._emulation
        if em is None:
            why = ("its body differs from the bundled kernel with this signature"
                   if self._signature_known else "its CUDA C body cannot run without a GPU")
            raise _needs_gpu("ElementwiseKernel", self.name, why)
        bound = {}
        for a, p in zip(in_args, self.in_params):
            if type(a) is ndarray:
                bound[p.name] = a._a
            else:
                t = p.dtype if p.dtype is not None else types.get(p.ctype)
                bound[p.name] = a if t is None else t.type(a)
        outs = {p.name: a._a for a, p in zip(out_args, self.out_params)}
        tok = quiet.enter()
        try:
            em.run(bound, outs)
        finally:
            quiet.leave(tok)
        return ret

    def _decide_types(self, in_args, out_args) -> dict:
        """CuPy's `_decide_params_type_core`: placeholder letters -> dtypes, with its errors."""
        type_dict: dict = {}
        for a, p in zip(out_args, self.out_params):
            if type(a) is not ndarray:
                raise TypeError("Output arguments type must be cupy.ndarray")
            self._bind(type_dict, p, a._a.dtype)
        for a, p in zip(in_args, self.in_params):
            if type(a) is ndarray:
                self._bind(type_dict, p, a._a.dtype)
        return type_dict

    @staticmethod
    def _bind(type_dict, p: Param, dt) -> None:
        if p.dtype is not None:
            if dt != p.dtype:
                raise TypeError(f"Type is mismatched. {p.name} {dt.type} {p.dtype.type}")
        elif p.ctype in type_dict:
            t = type_dict[p.ctype]
            if t != dt:
                raise TypeError(f"Type is mismatched. {p.name} {dt.type} {t.type} {p.ctype}")
        else:
            type_dict[p.ctype] = dt


class ReductionKernel:
    """``cupy.ReductionKernel``: definition works; a call validates arguments, then needs a GPU."""

    def __init__(self, in_params, out_params, map_expr, reduce_expr, post_map_expr,
                 identity, name="reduce_kernel", reduce_type=None, reduce_dims=True,
                 preamble="", options=()):
        self.in_params = parse_params(in_params)
        self.out_params = parse_params(out_params)
        self.nin = len(self.in_params)
        self.nout = len(self.out_params)
        self.nargs = self.nin + self.nout
        self.name = self.__name__ = name

    def __call__(self, *args, **kwargs):
        n = len(args)
        if n != self.nin and n != self.nargs:
            raise TypeError(
                f"Wrong number of arguments for {self.name!r}. It must be either {self.nin} "
                f"or {self.nargs} (with outputs), but given {n}.")
        _preprocess(args, self.name)
        raise _needs_gpu("ReductionKernel", self.name, "its CUDA C body cannot run without a GPU")


class RawKernel:
    """``cupy.RawKernel``: definition works; a launch validates arguments, then needs a GPU."""

    def __init__(self, code, name, options=(), backend="nvrtc", translate_cucomplex=False,
                 enable_cooperative_groups=False, jitify=False):
        self.code = code
        self.name = self.__name__ = name
        self.options = options

    def __call__(self, grid, block, args, *, shared_mem=0, **kwargs):
        if not isinstance(args, tuple):
            raise TypeError("args must be a tuple")
        _preprocess(args, self.name)
        raise _needs_gpu("RawKernel", self.name, "raw CUDA code cannot run without a GPU")


class RawModule:
    """``cupy.RawModule``: ``get_function`` gives RawKernels that need a GPU when launched."""

    def __init__(self, *, code=None, path=None, options=(), backend="nvrtc",
                 translate_cucomplex=False, enable_cooperative_groups=False, name_expressions=None,
                 jitify=False):
        self.code = code
        self.path = path
        self.options = options

    def get_function(self, name):
        return RawKernel(self.code or "", name, self.options)


def fuse(*args, **kwargs):
    """``cupy.fuse``: the simulated device runs the Python function unfused (same results)."""
    if len(args) == 1 and callable(args[0]) and not kwargs:
        return args[0]
    return lambda f: f
