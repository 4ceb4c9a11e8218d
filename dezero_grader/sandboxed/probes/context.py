"""What a scenario gets: the loaded submission (`Api`) and the run's context (`Ctx`).

`Api` resolves names of the book's public API in whatever the submission is — a `dezero`
package (`functions.tanh`, `layers.Linear`, `cuda.as_cupy`) or a single step file whose
namespace holds `Variable`, `square`, ... — without assuming anything about internals.
`Ctx` carries the device, the seed, a random generator created before any learner code ran,
and the conversions between host arrays and the device.
"""
import difflib
import importlib

import numpy as np

from dezero_grader.contracts.upstream import upstream_gradient  # noqa: F401  (scenarios import it here)
from dezero_grader.sandboxed.probes import stepfile

# Captured when the worker starts, before learner code can monkeypatch anything.
_Generator = np.random.Generator
_PCG64 = np.random.PCG64
_ndarray = np.ndarray
_asarray = np.asarray

MISSING = object()


def scalar(a):
    """The one number an array holds, as a Python float, whatever its shape: a loss of shape
    (1,) as well as the book's 0-d one. `float()` of an array with a dimension is what NumPy 2
    refuses and NumPy 1.x allowed; this gives the same on both. An array of any other size (or
    something that is not an array of numbers) raises TypeError."""
    a = _asarray(a)
    if a.size != 1:
        raise TypeError('expected a single number, found an array of shape {}'.format(
            tuple(a.shape)))
    return float(a.reshape(-1)[0])


def integer(a):
    """The one whole number an array (or a number) holds, as a Python int, whatever its shape:
    a label of shape (1,) as well as a 0-d one (`scalar`'s rule). A fractional value raises
    TypeError rather than being cut to an int."""
    value = scalar(a)
    if not value.is_integer():
        raise TypeError('expected a whole number, found {!r}'.format(value))
    return int(value)


def _near(obj, name):
    """A hint naming what the submission has instead of a missing name (`Var` for `Variable`)."""
    try:
        names = [n for n in vars(obj) if not n.startswith('_')]
    except TypeError:
        return ''
    lower = {n.lower(): n for n in names}
    close = difflib.get_close_matches(name.lower(), list(lower), n=3, cutoff=0.6)
    close += [lower[n] for n in lower if n not in close and len(n) >= 3 and name.lower().startswith(n)]
    found = sorted({lower.get(n, n) for n in close})
    if not found:
        return ''
    return '; it has {}: the checks call the book\'s names'.format(', '.join('`{}`'.format(n) for n in found))


class Api:
    def __init__(self, module, kind):
        self.module = module
        self.kind = kind          # 'package' | 'single-file' | 'reference'

    def get(self, dotted, default=MISSING):
        """`functions.tanh` → dezero.functions.tanh; `Variable.to_gpu` → an attribute."""
        obj = self.module
        parts = dotted.split('.')
        for i, part in enumerate(parts):
            try:
                obj = getattr(obj, part)
            except AttributeError:
                sub = None
                if self.kind != 'single-file' and i == 0:
                    try:
                        sub = importlib.import_module(self.module.__name__ + '.' + part)
                    except ModuleNotFoundError as e:
                        if e.name != self.module.__name__ + '.' + part:
                            raise
                if self.kind == 'single-file' and i == 0:
                    # a name the step file imported a part of from its own helper module
                    sub = stepfile.helper_lookup(self.module, part, None)
                if sub is None:
                    if default is MISSING:
                        raise AttributeError('the submission has no `{}` (looked for `{}`){}'.format(
                            '.'.join(parts[:i + 1]), dotted, _near(obj, part))) from None
                    return default
                obj = sub
        return obj

    def has(self, dotted):
        try:
            return self.get(dotted, None) is not None
        except Exception:
            return False

    @property
    def Variable(self):
        return self.get('Variable')


class Ctx:
    def __init__(self, api, device, seed, xp_device=None):
        self.api = api
        self.device = device      # 'cpu' | 'gpu'
        self.seed = seed
        self.xp_device = xp_device  # the cupy module (real or simulated) when a device exists

    def rng(self, salt=0):
        return _Generator(_PCG64([self.seed, salt]))

    @property
    def xp(self):
        return self.xp_device if self.device == 'gpu' else np

    def to_device(self, a):
        """A host array on this context's device (the host itself for 'cpu')."""
        if self.device == 'gpu':
            return self.xp_device.asarray(a)
        return a

    def on_device(self, host_array, device):
        return self.xp_device.asarray(host_array) if device == 'gpu' else host_array

    def var(self, a, name=None):
        V = self.api.Variable
        a = self.to_device(a)
        return V(a) if name is None else V(a, name=name)

    # -- describing what came out -------------------------------------------------------
    def device_of(self, a):
        """'cpu', 'gpu', or the type name when `a` is not an array at all."""
        a = self.unwrap(a)
        if isinstance(a, _ndarray):
            return 'cpu'
        if self.xp_device is not None and isinstance(a, self.xp_device.ndarray):
            return 'gpu'
        if a is None:
            return 'none'
        return type(a).__name__

    def unwrap(self, v):
        V = self.api.get('Variable', None)
        if V is not None and isinstance(v, V):
            return v.data
        return v

    def host(self, a):
        """A host copy of an array or Variable's data, for reporting."""
        a = self.unwrap(a)
        if self.xp_device is not None and isinstance(a, self.xp_device.ndarray):
            return a.get()
        if isinstance(a, _ndarray):
            return a
        if isinstance(a, (int, float, bool, np.generic)):
            return _asarray(a)
        raise TypeError('expected an array, found {}'.format(type(a).__name__))

    def scalar(self, a):
        """The single number of an array or Variable (on either device) as a float (`scalar`)."""
        return scalar(self.host(a))

    def export(self, a):
        """An array (or Variable) as it should cross the boundary: host values plus its device.
        Anything else (a Python float where the book has an array) raises TypeError, which the
        scenario reports as what the learner's code gave."""
        from dezero_grader.wire import Array
        device = self.device_of(a)
        if device not in ('cpu', 'gpu'):
            raise TypeError('expected an array, found {}'.format(type(self.unwrap(a)).__name__))
        return Array(self.host(a), device)

    def describe(self, a):
        """Type, device, shape and dtype of a Variable or array (evidence for reports)."""
        raw = self.unwrap(a)
        info = {'type': type(a).__name__, 'device': self.device_of(raw)}
        if hasattr(raw, 'shape') and hasattr(raw, 'dtype'):
            info['shape'] = list(raw.shape)
            info['dtype'] = str(raw.dtype)
        return info
