"""The upstream gradient a gradient probe seeds its backward pass with, derived from the probe's
seed alone. Both sides need it: the scenario inside the worker feeds it to the learner's
`backward`, and the trusted judge computes the same one to check the result, so the worker never
has to report it (and a forged report cannot change it)."""
import numpy as np

# Captured at import, which inside the worker is before any learner code has run.
_Generator = np.random.Generator
_PCG64 = np.random.PCG64

GY_SALT = 7919


def upstream_gradient(seed, shape, dtype):
    rng = _Generator(_PCG64([seed, GY_SALT]))
    return rng.standard_normal(tuple(shape)).astype(dtype)
