"""Process-wide state of the simulated device: configuration, counters, findings, origins.

Every other module of the simulated device reads and writes this one: the configuration chosen
at ``install`` (era, number of devices, peer access, origin tracking), the per-thread current
device, the transfer/synchronisation counters behind ``stats()``, the compatibility findings
behind ``findings()``, and the cheap "where was this array created" lookup that error messages
quote. Nothing here imports the rest of the package, so it can sit at the bottom of the graph.
"""

from __future__ import annotations

import os
import sys
import threading

_PKG_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep

ERAS = ("current", "book")


class _Config:
    """Mutable settings read on hot paths (attribute access on one object is cheap)."""

    __slots__ = ("era", "num_devices", "multi", "peer_access", "track_origin", "slice_copy")

    def __init__(self):
        self.era = "current"
        self.num_devices = 1
        self.multi = False
        self.peer_access = False
        self.track_origin = True
        self.slice_copy = False

    def snapshot(self) -> tuple:
        return tuple(getattr(self, k) for k in self.__slots__)

    def restore(self, snap: tuple) -> None:
        for k, v in zip(self.__slots__, snap):
            setattr(self, k, v)

    def load_env(self, era: str) -> None:
        if era not in ERAS:
            raise ValueError(f"unknown simulated-device era {era!r}; expected one of {ERAS}")
        self.era = era
        raw = os.environ.get("DEZERO_SIMDEVICE_NUM_DEVICES", "1")
        try:
            n = int(raw)
        except ValueError:
            raise ValueError(
                f"DEZERO_SIMDEVICE_NUM_DEVICES must be a positive integer, found {raw!r}"
            ) from None
        if n < 1:
            raise ValueError(f"DEZERO_SIMDEVICE_NUM_DEVICES must be >= 1, found {n}")
        self.num_devices = n
        self.multi = n > 1
        self.peer_access = _env_flag("DEZERO_SIMDEVICE_PEER_ACCESS", False)
        self.track_origin = _env_flag("DEZERO_SIMDEVICE_TRACK_ORIGIN", True)
        self.slice_copy = _env_flag("CUPY_EXPERIMENTAL_SLICE_COPY", False)


def _env_flag(name: str, default: bool) -> bool:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    return raw.strip().lower() not in ("0", "false", "no", "off")


CONF = _Config()

# ---------------------------------------------------------------------------- current device
_tls = threading.local()


def current_device() -> int:
    return getattr(_tls, "dev", 0)


def set_current_device(dev: int) -> None:
    _tls.dev = dev


# ---------------------------------------------------------------------------- counters
STATS = {"h2d": 0, "d2h": 0, "sync": 0}


def count_d2h() -> None:
    # A device-to-host copy through `.get()` is blocking, hence also a synchronisation.
    STATS["d2h"] += 1
    STATS["sync"] += 1


def count_h2d() -> None:
    STATS["h2d"] += 1


def count_sync() -> None:
    STATS["sync"] += 1


def reset_stats() -> None:
    for k in STATS:
        STATS[k] = 0


# ---------------------------------------------------------------------------- origins
_getframe = sys._getframe
_internal_cache: dict = {}


def _is_internal(filename: str) -> bool:
    v = _internal_cache.get(filename)
    if v is None:
        # Once per file name; abspath covers modules imported through a relative path entry.
        v = filename.startswith(_PKG_DIR) or os.path.abspath(filename).startswith(_PKG_DIR)
        _internal_cache[filename] = v
    return v


def caller_site(depth: int = 2):
    """(filename, lineno) of the first frame outside this package, or None.

    Walks at most a dozen frames: called when a device array is created, so it must stay cheap.
    """
    if not CONF.track_origin:
        return None
    try:
        f = _getframe(depth)
    except ValueError:
        return None
    n = 0
    while f is not None and n < 12:
        fn = f.f_code.co_filename
        if not _is_internal(fn):
            return (fn, f.f_lineno)
        f = f.f_back
        n += 1
    return None


def format_site(site) -> str:
    if site is None:
        return "an unknown place"
    return f"{site[0]}:{site[1]}"


# ---------------------------------------------------------------------------- findings
_findings: list = []
_finding_index: dict = {}


def record_finding(api: str, message: str, since: str = "", fix: str = "") -> None:
    """Record a compatibility finding once per (api, call site); repeated uses bump `count`."""
    where = format_site(caller_site(2))
    key = (api, where)
    idx = _finding_index.get(key)
    if idx is not None:
        _findings[idx]["count"] += 1
        return
    _finding_index[key] = len(_findings)
    _findings.append({"api": api, "message": message, "where": where, "since": since,
                      "fix": fix, "count": 1})


def findings() -> list:
    return [dict(f) for f in _findings]


def clear_findings() -> None:
    _findings.clear()
    _finding_index.clear()


# ---------------------------------------------------------------------------- module registry
# Filled by the module builder; ndarray methods reach `cupy` through it without importing it.
MODULES: dict = {}
# The device array class, set by `ndarray.py` (so low-level helpers can test for it).
NDARRAY = None
