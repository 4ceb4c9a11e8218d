"""Seeded, named input generators for the reference DeZero's test-suite.

Hypothesis draws small *descriptions* of inputs (a domain name, a shape, a seed); the arrays are
derived from them with a seeded NumPy generator. A failing example therefore prints as a short,
readable record (``Sample(domain='kinkfree', shape=(2, 3), seed=17)``) that rebuilds the exact same
array anywhere, on NumPy 1.26 as on 2.x (the legacy ``RandomState`` streams never change).

Domains are explicit about where a function is smooth:

* ``any``         uniform in [-2, 2]: smooth functions (sin, exp, softmax, arithmetic).
* ``kinkfree``    distinct magnitudes in [0.1, 1] with random signs: no zeros, no ties, so ReLU,
                  leaky ReLU, max/min and clip are differentiable at every element.
* ``positive``    uniform in [0.5, 2]: log, division denominators, non-integer powers.
* ``probability`` uniform in [0.05, 0.95]: the ``p`` of binary cross-entropy (clip-free region).
* ``binary``      0.0 or 1.0: targets of the binary cross-entropies.
* ``labels``      integers in [0, classes): class ids of softmax cross-entropy, embed_id indices.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Dict, Tuple

import numpy as np
from hypothesis import HealthCheck, Phase, settings
from hypothesis import strategies as st

Shape = Tuple[int, ...]

SEEDS = st.integers(min_value=0, max_value=2 ** 32 - 1)

#: The settings every property test of the suite uses: derandomised so the suite is the same
#: on every run (a failure reproduces by re-running the test), no example database on disk.
SUITE_SETTINGS = settings(
    deadline=None,
    derandomize=True,
    database=None,
    # no "explain" phase: its "or any other generated value" notes misreport seeded samples
    phases=[Phase.explicit, Phase.reuse, Phase.generate, Phase.target, Phase.shrink],
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


def _any(rng: np.random.RandomState, shape: Shape, classes: int) -> np.ndarray:
    return rng.uniform(-2.0, 2.0, size=shape)


def _kinkfree(rng: np.random.RandomState, shape: Shape, classes: int) -> np.ndarray:
    n = int(np.prod(shape, dtype=np.int64))
    magnitudes = np.linspace(0.1, 1.0, n) if n > 1 else np.array([0.55])
    rng.shuffle(magnitudes)
    signs = np.where(rng.uniform(size=n) < 0.5, -1.0, 1.0)
    return (magnitudes * signs).reshape(shape)


def _positive(rng: np.random.RandomState, shape: Shape, classes: int) -> np.ndarray:
    return rng.uniform(0.5, 2.0, size=shape)


def _probability(rng: np.random.RandomState, shape: Shape, classes: int) -> np.ndarray:
    return rng.uniform(0.05, 0.95, size=shape)


def _binary(rng: np.random.RandomState, shape: Shape, classes: int) -> np.ndarray:
    return (rng.uniform(size=shape) < 0.5).astype(np.float64)


def _labels(rng: np.random.RandomState, shape: Shape, classes: int) -> np.ndarray:
    if classes < 1:
        raise ValueError('the "labels" domain needs classes >= 1, found {}'.format(classes))
    return rng.randint(0, classes, size=shape).astype(np.int64)


DOMAINS: Dict[str, Callable[[np.random.RandomState, Shape, int], np.ndarray]] = {
    'any': _any,
    'kinkfree': _kinkfree,
    'positive': _positive,
    'probability': _probability,
    'binary': _binary,
    'labels': _labels,
}


@dataclass(frozen=True)
class Sample:
    """One input, described by its generator: rebuilds the same host array every time."""

    domain: str
    shape: Shape
    seed: int
    classes: int = 0

    def __post_init__(self):
        if self.domain not in DOMAINS:
            raise ValueError('unknown input domain {!r}; expected one of {}'.format(
                self.domain, sorted(DOMAINS)))

    def array(self) -> np.ndarray:
        """A fresh, contiguous host array (float64, or int64 for labels)."""
        rng = np.random.RandomState(self.seed)
        # np.array, not np.ascontiguousarray: the latter turns a 0-d array into a 1-d one
        return np.array(DOMAINS[self.domain](rng, tuple(self.shape), self.classes), order="C")


def shapes(min_dims: int = 0, max_dims: int = 3, min_side: int = 1,
           max_side: int = 4) -> st.SearchStrategy:
    """Small array shapes: a few elements, so per-element finite differences stay cheap."""
    return st.lists(st.integers(min_side, max_side), min_size=min_dims,
                    max_size=max_dims).map(tuple)


def samples(domain: str, shape=None, classes: int = 0) -> st.SearchStrategy:
    """`Sample`s of `domain`; `shape` is a fixed tuple or a strategy (default: `shapes()`)."""
    if shape is None:
        shape = shapes()
    elif isinstance(shape, tuple):
        shape = st.just(shape)
    return st.builds(Sample, domain=st.just(domain), shape=shape, seed=SEEDS,
                     classes=st.just(classes))


def labels(shape, classes: int) -> st.SearchStrategy:
    """Integer class ids in [0, classes) of the given shape (repeats allowed and likely)."""
    return samples('labels', shape, classes=classes)


def axes(ndim: int) -> st.SearchStrategy:
    """An `axis` argument for reductions over an `ndim`-array: None, an int or a tuple of
    distinct ints, each possibly negative."""
    if ndim == 0:
        return st.none()
    one = st.integers(-ndim, ndim - 1)
    several = st.lists(st.integers(0, ndim - 1), min_size=1, max_size=ndim,
                       unique=True).flatmap(
        lambda axs: st.tuples(*[st.sampled_from([a, a - ndim]) for a in axs]))
    return st.one_of(st.none(), one, several)


def permutations(ndim: int) -> st.SearchStrategy:
    """`axes` arguments of transpose: None or a permutation, axes possibly negative."""
    perm = st.permutations(list(range(ndim))).flatmap(
        lambda p: st.tuples(*[st.sampled_from([a, a - ndim]) for a in p]))
    return st.one_of(st.none(), perm)


def between_values(x: np.ndarray, lo_quantile: float, hi_quantile: float) -> Tuple[float, float]:
    """Two bounds that fall midway between neighbouring distinct values of `x` (so a clip at
    these bounds has no element on a kink). `x` must come from the ``kinkfree`` domain."""
    s = np.unique(x.ravel())
    if s.size < 2:
        return float(s[0]) - 0.05, float(s[0]) + 0.05
    i = min(int(lo_quantile * (s.size - 1)), s.size - 2)
    j = max(min(int(hi_quantile * (s.size - 1)), s.size - 2), i)
    return float((s[i] + s[i + 1]) / 2), float((s[j] + s[j + 1]) / 2)
