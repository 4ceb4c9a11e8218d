"""Errors of the simulated device, and the context they carry.

Every failure the simulated device raises goes through here. Where CuPy has an exact message
(``Unsupported type …``, ``Implicit conversion to a NumPy array is not allowed …``) the message
is kept verbatim, so code and graders matching CuPy's text keep working, and the context is
attached as an exception note (``add_note``; ``__notes__`` on Python 3.10). Elsewhere the
message itself names the operation, the offending value's shape, dtype and device, and where
a device array was created, so a learner sees which array stayed on the host.
"""

from __future__ import annotations

import warnings

import numpy

from . import state


class NeedsRealGPU(NotImplementedError):
    """The operation runs CUDA code that the simulated device cannot emulate.

    Graders report it as "needs a real GPU" and never count it against a submission.
    """


class PerformanceWarning(RuntimeWarning):
    """Warning for performance issues (CuPy's ``cupy._util.PerformanceWarning``)."""


IMPLICIT_CONVERSION = (
    "Implicit conversion to a NumPy array is not allowed. "
    "Please use `.get()` to construct a NumPy array explicitly."
)


def add_note(exc: BaseException, text: str) -> BaseException:
    if hasattr(exc, "add_note"):
        exc.add_note(text)
    else:  # Python 3.10: same attribute that 3.11 tracebacks and pytest display
        notes = list(getattr(exc, "__notes__", []))
        notes.append(text)
        exc.__notes__ = notes
    return exc


def describe(x) -> str:
    """One line naming a value's kind, shape, dtype, device and (device arrays) origin."""
    cls = type(x)
    if cls is state.NDARRAY:
        a = x._a
        return (
            f"cupy.ndarray shape={a.shape} dtype={a.dtype} on <CUDA Device {x._dev}>, "
            f"created at {state.format_site(x._site)}"
        )
    if isinstance(x, numpy.ndarray):
        return f"numpy.ndarray shape={x.shape} dtype={x.dtype} (host memory)"
    if isinstance(x, (list, tuple)):
        return f"a Python {cls.__name__} of length {len(x)} (host memory)"
    return f"{cls.__module__}.{cls.__qualname__} object"


def context(op: str, operands) -> str:
    """A note naming an operation and the device arrays it was given."""
    lines = [f"simulated device: in {op}"]
    for i, o in enumerate(operands):
        if type(o) is state.NDARRAY:
            lines.append(f"  argument {i + 1}: {describe(o)}")
    return "\n".join(lines)


def unsupported_type(op: str, bad, position, operands=()) -> TypeError:
    """CuPy's `Unsupported type <class …>` with a note naming the operation and operands."""
    exc = TypeError("Unsupported type %s" % type(bad))
    lines = [
        f"simulated device: {op} got a value it cannot use on the device as {position}: "
        f"{describe(bad)}."
    ]
    others = [o for o in operands if o is not bad and type(o) is state.NDARRAY]
    for o in others[:3]:
        lines.append(f"  device operand: {describe(o)}")
    if isinstance(bad, numpy.ndarray) or isinstance(bad, (list, tuple)):
        lines.append("  Move host data with cupy.asarray(...) first, or keep the computation "
                     "on one device.")
    add_note(exc, "\n".join(lines))
    return exc


def implicit_conversion(x) -> TypeError:
    exc = TypeError(IMPLICIT_CONVERSION)
    add_note(exc, f"simulated device: NumPy tried to convert a device array to a host array "
                  f"implicitly: {describe(x)}. Use x.get() or cupy.asnumpy(x) where the host "
                  f"copy is intended.")
    return exc


def incorrect_argument(op: str, argname: str, bad, operands=()) -> TypeError:
    """The Cython signature check of typed CuPy routines (`dot`, `tensordot`)."""
    got = f"{type(bad).__module__}.{type(bad).__qualname__}"
    if type(bad).__module__ == "builtins":
        got = type(bad).__qualname__
    exc = TypeError(
        f"Argument '{argname}' has incorrect type "
        f"(expected cupy._core.core._ndarray_base, got {got})"
    )
    note = [f"simulated device: {op} argument '{argname}' is {describe(bad)}."]
    for o in operands:
        if o is not bad and type(o) is state.NDARRAY:
            note.append(f"  device operand: {describe(o)}")
    add_note(exc, "\n".join(note))
    return exc


def check_peer_access(x, current: int) -> None:
    """CuPy's `_check_peer_access`: an array used by a kernel on a device it does not live on."""
    msg = (f"The device where the array resides ({x._dev}) is "
           f"different from the current device ({current}).")
    if state.CONF.peer_access:
        warnings.warn(f"{msg} Peer access has been activated automatically.",
                      PerformanceWarning, stacklevel=4)
        return
    exc = ValueError(f"{msg} Peer access is unavailable between these devices.")
    add_note(exc, f"simulated device: the array is {describe(x)}.")
    raise exc


def unsupported_dtype(dtype, op: str) -> ValueError:
    return ValueError(f"Unsupported dtype {numpy.dtype(dtype)} (in {op}: the device supports "
                      f"bool, integer, float16/32/64 and complex64/128 arrays only)")
