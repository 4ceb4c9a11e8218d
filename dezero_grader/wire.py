"""Plain-data encoding of values that cross the worker boundary (never pickle).

Probes running inside the worker turn what the learner's code produced into JSON-able data with
``encode``; the trusted grader process turns the answer back with ``decode``. The format:

* ``None``, ``bool``, ``int``, ``str`` as themselves; finite ``float`` as itself;
* non-finite floats as ``{"__float__": "nan" | "inf" | "-inf"}`` (JSON has none);
* lists and tuples as lists (tuples come back as lists);
* dicts with ``str`` keys as objects; a dict whose only key is one of the tags below is wrapped as
  ``{"__dict__": {...}}`` so it cannot be mistaken for a tagged value;
* NumPy scalars as ``{"__npscalar__": {"dtype": str, "b64": str}}`` -- they come back as NumPy
  scalars of the same dtype, because "returned a scalar, not an array" is itself evidence;
* arrays as ``{"__nd__": {"dtype", "shape", "b64" (C-order bytes), "device"}}`` where ``device``
  is ``"cpu"`` for a ``numpy.ndarray`` and ``"gpu"`` for a device array: any object whose type
  lives in a module named ``cupy...`` and whose ``.get()`` returns a ``numpy.ndarray`` (the real
  CuPy or the simulated device; nothing is imported from cupy here). They come back as
  :class:`Array` records holding a read-only ``numpy.ndarray`` and the device.

Object and structured dtypes are refused at encode time (``GraderError``: a probe must not ship
them). ``decode`` treats its input as untrusted -- learner code runs in the worker -- and refuses
malformed tags or more than ``max_bytes`` of array data with ``WorkerFailure("protocol")``.
"""

from __future__ import annotations

import base64
import binascii
import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from dezero_grader.errors import GraderError, WorkerFailure

ND, FLOAT, SCALAR, DICT = "__nd__", "__float__", "__npscalar__", "__dict__"
_TAGS = frozenset({ND, FLOAT, SCALAR, DICT})
_DEVICES = frozenset({"cpu", "gpu"})
# Kinds that round-trip through raw bytes: bool, ints, floats, complex, fixed strings, datetimes.
_KINDS = frozenset("biufcUSmM")
_NONFINITE = {"nan": math.nan, "inf": math.inf, "-inf": -math.inf}

MAX_DEPTH = 64
MAX_DECODE_BYTES = 256 * 1024 * 1024
MAX_DIMS = 32                  # NumPy allows 64; no probe sends more than a handful
MAX_ELEMENTS = 2 ** 27         # per array, whatever its item size (a zero-size dtype has no bytes)
MAX_VALUES = 2_000_000         # JSON values in one answer (each costs the trusted side ~100 bytes)


@dataclass(frozen=True, eq=False)
class Array:
    """An array that crossed the boundary: its host copy and the device it lived on."""

    data: np.ndarray
    device: str  # "cpu" | "gpu"

    @property
    def shape(self) -> tuple[int, ...]:
        return self.data.shape

    @property
    def dtype(self) -> np.dtype:
        return self.data.dtype


def encode(obj: Any) -> Any:
    """Return a JSON-able form of ``obj`` (see the module docstring for the format)."""
    return _encode(obj, 0)


def count_values(payload: bytes) -> int:
    """An upper bound on the number of JSON values in ``payload`` (separators and openings, in
    strings too), cheap enough to check before parsing an untrusted frame."""
    return payload.count(b",") + payload.count(b"[") + payload.count(b"{") + 1


def decode(obj: Any, *, max_bytes: int = MAX_DECODE_BYTES) -> Any:
    """Inverse of :func:`encode` on parsed JSON; refuses malformed or oversized data."""
    budget = [max_bytes, max_bytes]  # [left, bound]
    return _decode(obj, 0, budget)


# -- encode ---------------------------------------------------------------------------------------

def _encode(obj: Any, depth: int) -> Any:
    if depth > MAX_DEPTH:
        raise GraderError(f"value nested deeper than {MAX_DEPTH} levels (a cycle?) cannot cross the worker boundary")
    if obj is None or obj is True or obj is False:
        return obj
    if isinstance(obj, np.generic):  # before float: np.float64 is a float subclass
        return {SCALAR: _array_fields(np.asarray(obj), with_shape=False)}
    if isinstance(obj, bool):
        return bool(obj)
    if isinstance(obj, int):
        return int(obj)
    if isinstance(obj, float):
        value = float(obj)
        if math.isfinite(value):
            return value
        return {FLOAT: "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")}
    if isinstance(obj, str):
        return str.__str__(obj)
    if isinstance(obj, Array):
        return {ND: {**_array_fields(obj.data, with_shape=True), "device": obj.device}}
    if isinstance(obj, np.ndarray):
        return {ND: {**_array_fields(obj, with_shape=True), "device": "cpu"}}
    if isinstance(obj, dict):
        out = {}
        for key, value in obj.items():
            if not isinstance(key, str):
                raise GraderError(f"dict keys crossing the worker boundary must be str, "
                                  f"found {type(key).__name__} {key!r}")
            out[str.__str__(key)] = _encode(value, depth + 1)
        if len(out) == 1 and next(iter(out)) in _TAGS:
            return {DICT: out}
        return out
    if isinstance(obj, (list, tuple)):
        return [_encode(item, depth + 1) for item in obj]
    if _is_device_array(obj):
        host = obj.get()
        if not isinstance(host, np.ndarray):
            raise GraderError(f"{type(obj).__module__}.{type(obj).__name__}.get() returned "
                              f"{type(host).__name__}, expected numpy.ndarray")
        return {ND: {**_array_fields(host, with_shape=True), "device": "gpu"}}
    raise GraderError(
        f"cannot send a {type(obj).__module__}.{type(obj).__qualname__} across the worker boundary; "
        "expected None, bool, int, float, str, list, tuple, dict, a NumPy scalar or array, or a device array"
    )


def _is_device_array(obj: Any) -> bool:
    module = getattr(type(obj), "__module__", "") or ""
    return module.startswith("cupy") and callable(getattr(obj, "get", None))


def _array_fields(arr: np.ndarray, *, with_shape: bool) -> dict:
    if arr.dtype.kind not in _KINDS:
        raise GraderError(f"arrays of dtype {arr.dtype} (kind {arr.dtype.kind!r}) cannot cross the worker boundary; "
                          "expected a numeric, bool, string or datetime dtype")
    if not arr.dtype.isnative:
        arr = arr.astype(arr.dtype.newbyteorder("="))
    # not np.ascontiguousarray: it turns a 0-d array into a 1-d one
    data = arr if arr.flags.c_contiguous else np.array(arr, order="C")
    fields = {"dtype": data.dtype.str}
    if with_shape:
        fields["shape"] = list(data.shape)
    fields["b64"] = base64.b64encode(data.tobytes(order="C")).decode("ascii")
    return fields


# -- decode ---------------------------------------------------------------------------------------

def _bad(message: str) -> WorkerFailure:
    return WorkerFailure("protocol", f"the worker sent malformed data: {message}")


def _decode(obj: Any, depth: int, budget: list[int]) -> Any:
    if depth > MAX_DEPTH:
        raise _bad(f"nested deeper than {MAX_DEPTH} levels")
    if obj is None or isinstance(obj, (bool, int, str)):
        return obj
    if isinstance(obj, float):
        return obj
    if isinstance(obj, list):
        return [_decode(item, depth + 1, budget) for item in obj]
    if not isinstance(obj, dict):
        raise _bad(f"unexpected {type(obj).__name__}")
    if len(obj) == 1:
        (tag, body), = obj.items()
        if tag == ND:
            return _decode_array(body, budget)
        if tag == SCALAR:
            return _decode_scalar(body, budget)
        if tag == FLOAT:
            if body not in _NONFINITE:
                raise _bad(f"{FLOAT} must be one of {sorted(_NONFINITE)}, found {body!r}")
            return _NONFINITE[body]
        if tag == DICT:
            if not isinstance(body, dict):
                raise _bad(f"{DICT} must hold an object, found {type(body).__name__}")
            return {key: _decode(value, depth + 1, budget) for key, value in body.items()}
    return {key: _decode(value, depth + 1, budget) for key, value in obj.items()}


def _raw(body: Any, budget: list[int], what: str) -> tuple[np.dtype, bytes]:
    if not isinstance(body, dict) or not isinstance(body.get("dtype"), str) or not isinstance(body.get("b64"), str):
        raise _bad(f"{what} needs string fields 'dtype' and 'b64'")
    try:
        dtype = np.dtype(body["dtype"])
    except (TypeError, ValueError):
        raise _bad(f"{what} has unknown dtype {body['dtype'][:40]!r}") from None
    if dtype.kind not in _KINDS:
        raise _bad(f"{what} has refused dtype {dtype}")
    text = body["b64"]
    size = len(text) // 4 * 3 - text[-2:].count("=")  # exact for valid base64
    if size > budget[0]:
        raise WorkerFailure("protocol", f"the worker sent more array data than the bound of {budget[1]} bytes "
                            f"for one answer (at least {size} more bytes, {budget[0]} left)")
    try:
        raw = base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        raise _bad(f"{what} has invalid base64 data") from None
    budget[0] -= len(raw)
    return dtype, raw


def _decode_array(body: Any, budget: list[int]) -> Array:
    dtype, raw = _raw(body, budget, ND)
    shape = body.get("shape")
    device = body.get("device")
    if device not in _DEVICES:
        raise _bad(f"{ND} device must be one of {sorted(_DEVICES)}, found {device!r}")
    if not isinstance(shape, list) or len(shape) > MAX_DIMS or \
            not all(isinstance(n, int) and not isinstance(n, bool) and 0 <= n <= MAX_ELEMENTS for n in shape):
        raise _bad(f"{ND} shape must be a list of at most {MAX_DIMS} non-negative ints, "
                   f"found {str(shape)[:80]}")
    count = math.prod(shape)
    if count > MAX_ELEMENTS:
        raise _bad(f"{ND} of shape {str(shape)[:80]} has {count} elements, over the bound of {MAX_ELEMENTS}")
    if count * dtype.itemsize != len(raw):
        raise _bad(f"{ND} of shape {shape} and dtype {dtype} needs {count * dtype.itemsize} bytes, found {len(raw)}")
    if dtype.itemsize == 0:
        data = np.zeros(shape, dtype=dtype)
        data.flags.writeable = False
    else:
        data = np.frombuffer(raw, dtype=dtype).reshape(shape)
    return Array(data=data, device=device)


def _decode_scalar(body: Any, budget: list[int]) -> np.generic:
    dtype, raw = _raw(body, budget, SCALAR)
    if dtype.itemsize == 0 or len(raw) != dtype.itemsize:
        raise _bad(f"{SCALAR} of dtype {dtype} needs {dtype.itemsize} bytes, found {len(raw)}")
    return np.frombuffer(raw, dtype=dtype)[0]
