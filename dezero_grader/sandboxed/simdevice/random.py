"""``cupy.random`` of the simulated device: one ``RandomState`` per device, a stream of its own.

CuPy draws from cuRAND, so the same seed gives different numbers on the host and on a GPU.
The simulated device keeps that property on purpose: its generator is PCG64 seeded with the
user's seed *mixed with a constant*, so code (or a test) that expects ``cupy.random.seed(s)``
to reproduce ``numpy.random.seed(s)`` fails here as it would on a GPU, while the same seed still
reproduces the same device stream. Results are device arrays (0-d when no size is given), and
``dtype=`` is accepted where CuPy accepts it. The loader exposes ``MODULE_NAMES``.
"""

from __future__ import annotations

import os

import numpy

from . import errors, state
from .ndarray import check_device, kernel_arg, ndarray, wrap

# Mixed into every seed so the device stream never equals NumPy's for the same seed.
_SEED_SALT = 0x5EED_C0DE_D0_0D_CAFE


def _seed_sequence(seed):
    if seed is None:
        return numpy.random.SeedSequence()
    if type(seed) is ndarray:
        seed = seed.get()
    if isinstance(seed, numpy.ndarray):
        words = [int(v) % 2 ** 64 for v in seed.ravel()]
    else:
        words = [int(seed) % 2 ** 64]
    return numpy.random.SeedSequence([_SEED_SALT, *words])


def _float_dtype(dtype):
    dt = numpy.dtype(dtype)
    if dt.char not in "fd":
        raise TypeError(f"cupy.random only supports float32 and float64 (got {dt})")
    return dt


def _size(size):
    if size is None:
        return ()
    if isinstance(size, (int, numpy.integer)):
        return (int(size),)
    return tuple(size)


def _param(x, op, name):
    """A distribution parameter: a scalar, or a device array (host arrays are refused)."""
    if type(x) is ndarray:
        if state.CONF.multi:
            check_device(x)
        return x._a
    return kernel_arg(x, op, name)


class RandomState:
    """Per-device random state (``cupy.random.RandomState``)."""

    def __init__(self, seed=None, method=None):
        self.seed(seed)

    def seed(self, seed=None):
        self._gen = numpy.random.Generator(numpy.random.PCG64(_seed_sequence(seed)))

    # ------------------------------------------------------------------ floats
    def random_sample(self, size=None, dtype=float):
        return wrap(self._gen.random(_size(size), dtype=_float_dtype(dtype)))

    random = random_sample

    def rand(self, *size, **kwarg):
        dtype = kwarg.pop("dtype", float)
        if kwarg:
            raise TypeError(f"rand() got unexpected keyword arguments {', '.join(kwarg)}")
        return self.random_sample(size=size, dtype=dtype)

    def standard_normal(self, size=None, dtype=float):
        return wrap(self._gen.standard_normal(_size(size), dtype=_float_dtype(dtype)))

    def randn(self, *size, **kwarg):
        dtype = kwarg.pop("dtype", float)
        if kwarg:
            raise TypeError(f"randn() got unexpected keyword arguments {', '.join(kwarg)}")
        return self.standard_normal(size=size, dtype=dtype)

    def normal(self, loc=0.0, scale=1.0, size=None, dtype=float):
        dt = _float_dtype(dtype)
        loc = _param(loc, "cupy.random.normal", "loc")
        scale = _param(scale, "cupy.random.normal", "scale")
        if size is None:
            size = numpy.broadcast_shapes(numpy.shape(loc), numpy.shape(scale))
        z = self._gen.standard_normal(_size(size), dtype=dt)
        return wrap((z * scale + loc).astype(dt, copy=False))

    def uniform(self, low=0.0, high=1.0, size=None, dtype=float):
        dt = _float_dtype(dtype)
        low = _param(low, "cupy.random.uniform", "low")
        high = _param(high, "cupy.random.uniform", "high")
        if size is None:
            size = numpy.broadcast_shapes(numpy.shape(low), numpy.shape(high))
        u = self._gen.random(_size(size), dtype=dt)
        return wrap((low + (high - low) * u).astype(dt, copy=False))

    def exponential(self, scale=1.0, size=None, dtype=float):
        dt = _float_dtype(dtype)
        scale = _param(scale, "cupy.random.exponential", "scale")
        if size is None:
            size = numpy.shape(scale)
        e = self._gen.standard_exponential(_size(size), dtype=dt)
        return wrap((e * scale).astype(dt, copy=False))

    # ------------------------------------------------------------------ integers
    def randint(self, low, high=None, size=None, dtype="l"):
        if high is None:
            low, high = 0, low
        return wrap(self._gen.integers(low, high, size=_size(size), dtype=numpy.dtype(dtype)))

    def binomial(self, n, p, size=None, dtype=int):
        n = _param(n, "cupy.random.binomial", "n")
        p = _param(p, "cupy.random.binomial", "p")
        if size is None:
            size = numpy.broadcast_shapes(numpy.shape(n), numpy.shape(p))
        return wrap(self._gen.binomial(n, p, _size(size)).astype(dtype, copy=False))

    def poisson(self, lam=1.0, size=None, dtype=int):
        lam = _param(lam, "cupy.random.poisson", "lam")
        if size is None:
            size = numpy.shape(lam)
        return wrap(self._gen.poisson(lam, _size(size)).astype(dtype, copy=False))

    # ------------------------------------------------------------------ permutations
    def permutation(self, num):
        if type(num) is ndarray:
            if state.CONF.multi:
                check_device(num)
            idx = self._gen.permutation(num._a.shape[0]) if num.ndim else None
            if idx is None:
                raise TypeError("permutation of a 0-d array is not supported")
            return wrap(num._a[idx])
        if isinstance(num, (int, numpy.integer)):
            return wrap(self._gen.permutation(int(num)))
        raise errors.unsupported_type("cupy.random.permutation", num, "num")

    def shuffle(self, a):
        if type(a) is not ndarray:
            raise errors.add_note(TypeError("The array must be cupy.ndarray"),
                                  f"simulated device: cupy.random.shuffle got "
                                  f"{errors.describe(a)}")
        if a.ndim == 0:
            raise TypeError("An array whose ndim is 0 is not supported")
        idx = self._gen.permutation(a._a.shape[0])
        a._a[...] = a._a[idx]

    def choice(self, a, size=None, replace=True, p=None):
        if type(a) is ndarray:
            pool = a._a
        elif isinstance(a, (int, numpy.integer)):
            pool = int(a)
        else:
            raise errors.unsupported_type("cupy.random.choice", a, "a")
        if p is not None:
            if type(p) is not ndarray:
                raise errors.unsupported_type("cupy.random.choice", p, "p")
            p = p._a
        return wrap(numpy.asarray(
            self._gen.choice(pool, size=_size(size), replace=replace, p=p)))


# ---------------------------------------------------------------------------- module level
_states: dict = {}


def get_random_state() -> RandomState:
    dev = state.current_device()
    rs = _states.get(dev)
    if rs is None:
        env = os.environ.get("CUPY_SEED")
        rs = _states[dev] = RandomState(None if env in (None, "") else int(env))
    return rs


def set_random_state(rs: RandomState) -> None:
    if not isinstance(rs, RandomState):
        raise TypeError(f"Random state must be an instance of RandomState, found {type(rs)}")
    _states[state.current_device()] = rs


def reset_states() -> None:
    _states.clear()


def seed(seed=None) -> None:
    get_random_state().seed(seed)


def _forward(name):
    def f(*args, **kwargs):
        return getattr(get_random_state(), name)(*args, **kwargs)
    f.__name__ = name
    f.__qualname__ = name
    f.__doc__ = f"``cupy.random.{name}`` on the current device's random state."
    return f


_DRAWS = ("random_sample", "random", "rand", "randn", "standard_normal", "normal", "uniform",
          "exponential", "randint", "binomial", "poisson", "permutation", "shuffle", "choice")
for _name in _DRAWS:
    globals()[_name] = _forward(_name)
ranf = sample = globals()["random_sample"]

MODULE_NAMES = ("RandomState", "get_random_state", "set_random_state", "reset_states", "seed",
                "ranf", "sample") + _DRAWS
