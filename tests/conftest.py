"""Repository-wide test setup: import paths, the simulated device, and the `device` fixture.

Runs before any test module: it makes `dezero_grader` importable from the checkout (its
reference, `dezero_grader.reference`, is the checkout's reference/ folder, mapped in by the
editable install), puts the reference DeZero's folder on ``sys.path`` so that ``import dezero``
means the reference, and installs the simulated device *before* DeZero is imported, because
``dezero.cuda`` decides ``gpu_enable`` (and which array types a Variable accepts) at import time.

The `device` fixture makes the device a test parameter: ``"cpu"`` (NumPy) and ``"sim"`` (the
simulated CuPy). A test receives a `Device` and moves its inputs with ``device.to_device`` and its
results back with ``device.to_host``, which refuses an array that is not on that device, so a
result silently left on the wrong device fails the test instead of passing it. `host_device`
is the host alone, for tests that compare a device's results with the host's.
"""
import importlib
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest
from hypothesis import HealthCheck, settings

_REPO_ROOT = Path(__file__).resolve().parent.parent
if str(_REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(_REPO_ROOT))

from dezero_grader.isolation import bwrap as _bwrap  # noqa: E402
from dezero_grader.reference import ROOT as _DEZERO_ROOT  # noqa: E402

# Hypothesis profiles for every property test and fuzz target of the suite: "ci" (the default)
# runs the same examples on every run and keeps no database; "soak" runs 20,000 examples
# ($DEZERO_GRADER_FUZZ_EXAMPLES) and keeps what it finds in .hypothesis/. Choose with
# `pytest --hypothesis-profile=soak` or DEZERO_GRADER_FUZZ_PROFILE=soak. A fuzz target takes a
# share of `max_examples` (the costly ones less than the whole).
_HEALTH = [HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much]
settings.register_profile('ci', max_examples=100, derandomize=True, database=None, deadline=None,
                          print_blob=True, suppress_health_check=_HEALTH)
settings.register_profile('soak', max_examples=int(os.environ.get('DEZERO_GRADER_FUZZ_EXAMPLES', 20_000)),
                          deadline=None, print_blob=True,
                          suppress_health_check=_HEALTH)
settings.load_profile(os.environ.get('DEZERO_GRADER_FUZZ_PROFILE', 'ci'))

# A private grader cache for the whole test run (the reference's cached answers, for this process
# and every `dezero-grade` it starts): never the user's own, which a test run and a developer's
# gradings would otherwise share. DEZERO_GRADER_TEST_CACHE names a folder to keep between runs.
_CACHE = os.environ.get('DEZERO_GRADER_TEST_CACHE')
if not _CACHE:
    import atexit
    import shutil
    import tempfile
    _CACHE = tempfile.mkdtemp(prefix='dezero-grader-test-cache-')
    atexit.register(shutil.rmtree, _CACHE, True)
    os.environ['DEZERO_GRADER_TEST_CACHE'] = _CACHE   # pytest-xdist's workers share it
os.environ['DEZERO_GRADER_CACHE'] = _CACHE

# the reports are written in the locale's language where no --lang names one: the suite reads
# English whatever the machine's locale (LANGUAGE is read first; every `dezero-grade` a test starts
# inherits it). The tests of other languages name theirs.
os.environ['LANGUAGE'] = 'en'

if _bwrap.unavailable() is not None:
    # a machine without bubblewrap still runs the suite, in the basic sandbox (batch refuses to
    # start without bubblewrap unless told): the bubblewrap tests skip and say why
    os.environ.setdefault(_bwrap.ENV, 'basic')


def pytest_report_header(config):
    why = _bwrap.unavailable()
    return ['worker sandbox: ' + ('bubblewrap' if why is None else 'basic ({})'.format(why)),
            'grader cache: ' + _CACHE]

if str(_DEZERO_ROOT) not in sys.path:
    sys.path.insert(0, str(_DEZERO_ROOT))


def _install_simulated_device():
    """Install the simulated device; returns (cupy module or None, skip reason, error).

    Absent (not importable, or without ``install``) means the "sim" tests skip; present but
    raising means they fail with the error, while the host tests still run."""
    try:
        simdevice = importlib.import_module('dezero_grader.sandboxed.simdevice')
    except ImportError as exc:
        return None, 'simulated device not importable yet ({}: {})'.format(
            type(exc).__name__, exc), None
    except Exception as exc:
        return None, None, 'importing dezero_grader.sandboxed.simdevice raised {}: {}'.format(
            type(exc).__name__, exc)
    install = getattr(simdevice, 'install', None)
    if install is None:
        return None, 'simulated device has no install() yet (dezero_grader.sandboxed.simdevice is incomplete)', None
    try:
        install(era='current')
        return importlib.import_module('cupy'), None, None
    except Exception as exc:
        return None, None, 'dezero_grader.sandboxed.simdevice.install(era="current") raised {}: {}'.format(
            type(exc).__name__, exc)


# DEZERO_TEST_DEVICE=cuda (on a machine with an NVIDIA GPU and CuPy's CUDA build): the device
# tests run on the real GPU instead of the simulated one; nothing is simulated then
REAL_GPU = os.environ.get('DEZERO_TEST_DEVICE') == 'cuda'
if REAL_GPU:
    _SIM_CUPY, _SIM_SKIP_REASON, _SIM_ERROR = importlib.import_module('cupy'), None, None
else:
    _SIM_CUPY, _SIM_SKIP_REASON, _SIM_ERROR = _install_simulated_device()


@dataclass(frozen=True)
class Device:
    """Where a test's arrays live: ``cpu`` (NumPy) or ``sim`` (the simulated CuPy)."""

    name: str
    xp: ModuleType

    def to_device(self, array):
        """A copy of the host array `array` on this device."""
        if not isinstance(array, np.ndarray):
            raise TypeError('to_device expects a NumPy array, found {}'.format(type(array)))
        if self.xp is np:
            return array.copy()
        return self.xp.asarray(array)

    def is_on_device(self, array) -> bool:
        return isinstance(array, self.xp.ndarray)

    def to_host(self, array) -> np.ndarray:
        """`array` (or a Variable's data) as a NumPy array; refuses an array held elsewhere."""
        from dezero import Variable  # imported late: the simulated device must come first

        if isinstance(array, Variable):
            array = array.data
        if not self.is_on_device(array):
            raise AssertionError('expected an array on device {!r} ({}.ndarray), found {}'.format(
                self.name, self.xp.__name__, type(array)))
        if self.xp is np:
            return array
        return self.xp.asnumpy(array)

    def seed(self, seed: int) -> None:
        """Seed NumPy's global generator and this device's (dropout, lazy layer init)."""
        np.random.seed(seed)
        if self.xp is not np:
            self.xp.random.seed(seed)


CPU = Device('cpu', np)
SIM = Device('cuda' if REAL_GPU else 'sim', _SIM_CUPY) if _SIM_CUPY is not None else None


@pytest.fixture(scope='session', params=['cpu', 'cuda' if REAL_GPU else 'sim'])
def device(request) -> Device:
    """The device under test; "sim" skips (with the reason) while the simulated device is absent;
    "cuda" is the real GPU (DEZERO_TEST_DEVICE=cuda)."""
    if request.param == 'cpu':
        return CPU
    if _SIM_ERROR is not None:
        pytest.fail(_SIM_ERROR)
    if SIM is None:
        pytest.skip(_SIM_SKIP_REASON)
    return SIM


@pytest.fixture(scope='session')
def host_device() -> Device:
    """The host (NumPy), for tests that compare a device's results with the host's."""
    return CPU
