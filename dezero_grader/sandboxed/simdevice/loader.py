"""Import machinery: makes ``import cupy`` / ``import cupyx`` give the simulated device.

``install`` builds the module objects once (``cupy``, ``cupy.cuda``, ``cupy.cuda.runtime``,
``cupy.cuda.memory``, ``cupy.random``, ``cupy.linalg``, ``cupy.fft``, ``cupy._util``,
``cupyx``), purges any CuPy already imported, registers them in ``sys.modules`` and puts a
meta-path finder first in ``sys.meta_path``, so the stand-in also shadows a real CuPy (which
imports fine on a machine without a GPU and then fails at the first allocation). A submodule
the stand-in does not provide fails to import, as a missing module would. ``uninstall`` undoes
all of it; objects already handed out keep working.
"""

from __future__ import annotations

import contextlib
import importlib.abc
import importlib.machinery
import sys
import types

from dezero_grader.sandboxed.probes import compat

from . import cuda, cupyx, errors, random, state
from .module import build_namespaces, scatter_add

VERSIONS = {"current": "14.0.0", "book": "7.8.0"}
_PURGED_ROOTS = ("cupy", "cupyx", "cupy_backends")

_modules: dict = {}


class _Finder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Serves the prebuilt modules."""

    def find_spec(self, fullname, path=None, target=None):
        mod = _modules.get(fullname)
        if mod is None:
            # Other `cupy.*` names: the packages' empty `__path__` makes them missing modules,
            # so a real CuPy's files are never found.
            return None
        return importlib.machinery.ModuleSpec(fullname, self,
                                              is_package=hasattr(mod, "__path__"))

    def create_module(self, spec):
        return _modules[spec.name]

    def exec_module(self, module):
        return None


_FINDER = _Finder()


def _new_module(name: str, namespace: dict, package: bool, source_file: str):
    m = types.ModuleType(name, f"Simulated CUDA device: the `{name}` module of the grader's "
                               f"strict CuPy stand-in.")
    m.__dict__.update(namespace)
    m.__file__ = source_file
    m.__simulated__ = True
    if package:
        m.__path__ = []
    return m


def _build() -> dict:
    from . import module as _module_src
    ns = build_namespaces()
    mods = {
        "cupy": _new_module("cupy", ns["cupy"], True, _module_src.__file__),
        "cupy.cuda": _new_module("cupy.cuda", {n: getattr(cuda, n) for n in cuda.CUDA_NAMES},
                                 True, cuda.__file__),
        "cupy.cuda.runtime": _new_module(
            "cupy.cuda.runtime", {n: getattr(cuda, n) for n in cuda.RUNTIME_NAMES}
            | {"is_hip": False}, False, cuda.__file__),
        "cupy.cuda.memory": _new_module(
            "cupy.cuda.memory", {n: getattr(cuda, n) for n in cuda.MEMORY_NAMES}, False,
            cuda.__file__),
        "cupy.random": _new_module("cupy.random",
                                   {n: getattr(random, n) for n in random.MODULE_NAMES},
                                   False, random.__file__),
        "cupy.linalg": _new_module("cupy.linalg", ns["cupy.linalg"], False,
                                   _module_src.__file__),
        "cupy.fft": _new_module("cupy.fft", ns["cupy.fft"], False, _module_src.__file__),
        "cupy._util": _new_module("cupy._util",
                                  {"PerformanceWarning": errors.PerformanceWarning}, False,
                                  errors.__file__),
        "cupyx": _new_module("cupyx", {n: getattr(cupyx, n) for n in cupyx.MODULE_NAMES}, True,
                             cupyx.__file__),
    }
    cp = mods["cupy"]
    for sub in ("cuda", "random", "linalg", "fft", "_util"):
        setattr(cp, sub, mods[f"cupy.{sub}"])
    cp._cupyx = mods["cupyx"]   # CuPy's own private alias (`import cupyx as _cupyx`), which code uses
    mods["cupy.cuda"].runtime = mods["cupy.cuda.runtime"]
    mods["cupy.cuda"].memory = mods["cupy.cuda.memory"]
    state.MODULES.update(mods)
    return mods


def _module_getattr(name):
    """`cupy.<missing>`: CuPy's AttributeError; for the book's `cupy.scatter_add` (current era)
    it also says what happened and the fix, in the words of the book era's finding."""
    if name == "scatter_add":
        raise compat.missing_attribute("cupy", name, compat.SCATTER_ADD)
    raise AttributeError(f"module 'cupy' has no attribute {name!r}", name=name)


def _apply_era(cp, era: str) -> None:
    cp.__version__ = VERSIONS[era]
    cp.__getattr__ = _module_getattr
    if era == "book":
        cp.scatter_add = scatter_add
    elif "scatter_add" in vars(cp):
        del cp.scatter_add


def _purge_foreign() -> None:
    ours = {id(m) for m in _modules.values()}
    for name in list(sys.modules):
        root = name.partition(".")[0]
        if root in _PURGED_ROOTS and id(sys.modules[name]) not in ours:
            del sys.modules[name]


def _activate() -> None:
    _purge_foreign()
    while _FINDER in sys.meta_path:
        sys.meta_path.remove(_FINDER)
    sys.meta_path.insert(0, _FINDER)
    sys.modules.update(_modules)


def install(era: str = "current"):
    """Make `cupy`/`cupyx` imports resolve to the simulated device; returns the `cupy` module.

    Idempotent (a second call changes nothing but the era and the settings read from the
    environment). A fresh installation starts on device 0 with fresh random states.
    """
    fresh = not installed()
    state.CONF.load_env(era)
    if not _modules:
        _modules.update(_build())
    _apply_era(_modules["cupy"], era)
    _activate()
    if fresh:
        state.set_current_device(0)
        random.reset_states()
    return _modules["cupy"]


def uninstall() -> None:
    """Remove the finder and the stand-in modules from `sys.modules` (no-op if not installed)."""
    while _FINDER in sys.meta_path:
        sys.meta_path.remove(_FINDER)
    for name, mod in _modules.items():
        if sys.modules.get(name) is mod:
            del sys.modules[name]


def installed() -> bool:
    return _FINDER in sys.meta_path


@contextlib.contextmanager
def simulated(era: str = "current"):
    """Install the simulated device for a block, then restore exactly what was there before:
    installed or not, the era and settings, the current device and the random states."""
    snap = (installed(), state.CONF.snapshot(), dict(random._states), state.current_device())
    try:
        yield install(era)
    finally:
        was_installed, conf, states, dev = snap
        state.CONF.restore(conf)
        if _modules:
            _apply_era(_modules["cupy"], state.CONF.era)
        if was_installed:
            _activate()
        else:
            uninstall()
        random._states.clear()
        random._states.update(states)
        state.set_current_device(dev)
