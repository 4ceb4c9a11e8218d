"""The strict simulated CUDA device: a CuPy stand-in for machines without a GPU.

``install()`` makes ``import cupy`` (and ``cupyx``, ``cupy.cuda``, ``cupy.random`` …) give a
stand-in that behaves like CuPy where DeZero and learners' stage-5 code depend on it: device
arrays are their own type, implicit host/device conversions raise CuPy's errors, results are
bit-identical to NumPy's, and transfers are counted. The reference test-suite runs on it as
the "sim" device, and grading workers install it before importing a learner's package, so a
device leak that would crash on a GPU crashes the same way here. See docs/simulated-device.md.

Public API::

    install(era="current") -> module      uninstall()            installed() -> bool
    simulated(era="current")  (context manager: install, then restore the previous state)
    stats() -> dict (h2d, d2h, sync)      reset_stats()
    findings() -> list[dict]              clear_findings()
    NeedsRealGPU                          register_emulation(...)
"""

from __future__ import annotations

from .errors import NeedsRealGPU
from .kernels import register_emulation
from .loader import install, installed, simulated, uninstall
from .state import ERAS, clear_findings, reset_stats


def stats() -> dict:
    """Counts of host-to-device copies, device-to-host copies and synchronisations so far."""
    from .state import STATS
    return dict(STATS)


def findings() -> list:
    """Compatibility findings: dicts with `api`, `message`, `where` (file:line) and `count`."""
    from .state import findings as _findings
    return _findings()


__all__ = ["install", "uninstall", "installed", "simulated", "stats", "reset_stats", "findings",
           "clear_findings", "NeedsRealGPU", "register_emulation", "ERAS"]
