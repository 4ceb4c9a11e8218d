"""The gradient battery of the reference DeZero: every function of `dezero.functions` (and the
arithmetic operators of `dezero.core`), on every device.

Each entry of `OPS` draws a small `Problem` (differentiable float64 inputs described by seeded
`strategies.Sample`s, constants closed over, and a NumPy oracle of the forward). The checks:

* forward equals the NumPy oracle, output float64 and on the device;
* one backward pass with a RANDOM upstream gradient v equals, per input element j, the central
  difference <v, f(x + h e_j) - f(x - h e_j)> / 2h (a backward that ignores gy fails here, which
  the book's sum-only `gradient_check` would miss); grads have the input's shape, float64, and
  live on the device; the finite differences also detect a kink (one-sided slopes disagree), which
  means the input domain is wrong, not the gradient;
* zero upstream gives zero gradients; a second backward on the same graph gives bit-identical
  grads and leaves the upstream array untouched; `no_grad` builds no graph;
* second order: the gradient of <w, J^T v> with respect to every input, built with
  `create_graph=True`, against central differences of the first-order pass;
* on the simulated device, forward and grads are bit-identical to the host's.

Convolution functions are tested with the convolution code, not here.
"""
from dataclasses import dataclass
from typing import Callable, Dict, Tuple

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dezero
import dezero.functions as F
from dezero import Variable

import strategies as S
from strategies import SUITE_SETTINGS, Sample

MAX_EXAMPLES = 8
MAX_EXAMPLES_SECOND_ORDER = 4


@dataclass(frozen=True)
class Tolerance:
    """Finite-difference step and the allclose-style bound |a - n| <= atol + rtol * |n|."""

    h: float
    atol: float
    rtol: float


# Measured on the reference: max abs error 3.7e-9, worst err/bound ratio 1.4e-3 (over 700 margin).
TOLERANCES: Dict[str, Tolerance] = {
    'float64': Tolerance(h=1e-6, atol=1e-6, rtol=1e-4),
}
TOL = TOLERANCES['float64']


@dataclass(frozen=True)
class Problem:
    """A function of differentiable host inputs. `fn(device, *variables)` returns the output
    Variable (constants such as labels are closed over and moved with `device`); `oracle(*arrays)`
    computes the expected forward with NumPy (None where the forward is random)."""

    fn: Callable
    inputs: Tuple[Sample, ...]
    oracle: Callable = None


@dataclass(frozen=True)
class Op:
    name: str
    build: Callable  # build(draw) -> Problem
    second_order: bool = True


OPS = []


def op(name, second_order=True):
    def register(build):
        OPS.append(Op(name, build, second_order))
        return build
    return register


# -----------------------------------------------------------------------------
# Numerical machinery
# -----------------------------------------------------------------------------
def _forward(problem, device, arrays):
    xs = [Variable(device.to_device(a)) for a in arrays]
    y = problem.fn(device, *xs)
    return y, xs


def _evaluate(problem, device, arrays):
    y, _ = _forward(problem, device, arrays)
    return device.to_host(y).astype(np.float64)


def _first_order(problem, device, arrays, v, create_graph=False):
    y, xs = _forward(problem, device, arrays)
    y.grad = Variable(device.to_device(v))
    y.backward(create_graph=create_graph)
    return y, xs


def numeric_vjp(f, arrays, k, v, h=TOL.h):
    """Central differences of <v, f(arrays)> with respect to arrays[k], element by element.
    Raises AssertionError at a kink (the one-sided slopes disagree)."""
    base = [a.copy() for a in arrays]
    f0 = np.sum(v * f(base))
    grad = np.zeros_like(arrays[k], dtype=np.float64)
    for idx in np.ndindex(*arrays[k].shape):
        plus = [a.copy() for a in arrays]
        minus = [a.copy() for a in arrays]
        plus[k][idx] += h
        minus[k][idx] -= h
        fp = np.sum(v * f(plus))
        fm = np.sum(v * f(minus))
        d_plus, d_minus = (fp - f0) / h, (f0 - fm) / h
        if abs(d_plus - d_minus) > 1e-3 * (1 + abs(d_plus) + abs(d_minus)):
            raise AssertionError(
                'kink at input {} index {}: one-sided slopes {!r} and {!r} disagree; the input '
                'domain of this op is wrong (not necessarily the gradient)'.format(
                    k, idx, d_plus, d_minus))
        grad[idx] = (fp - fm) / (2 * h)
    return grad


def assert_close(analytic, numeric, what, tol=TOL):
    assert analytic.shape == numeric.shape, '{}: expected shape {}, found {}'.format(
        what, numeric.shape, analytic.shape)
    err = np.abs(analytic - numeric)
    bound = tol.atol + tol.rtol * np.abs(numeric)
    if err.size and not np.all(err <= bound):
        worst = np.unravel_index(np.argmax(err / bound), err.shape)
        rel = err / np.maximum(np.maximum(np.abs(analytic), np.abs(numeric)), 1e-12)
        raise AssertionError(
            '{}: backward disagrees with central differences: max abs err {:.3g}, max rel err '
            '{:.3g}, worst index {} (analytic {!r}, numeric {!r}), tolerance atol={} rtol={}'
            .format(what, err.max(), rel.max(), worst, analytic[worst], numeric[worst],
                    tol.atol, tol.rtol))


def _host_grad(device, x, what):
    assert x.grad is not None, '{}: expected a gradient, found None'.format(what)
    assert isinstance(x.grad, Variable), '{}: expected the grad to be a Variable, found {}'.format(
        what, type(x.grad))
    g = device.to_host(x.grad)
    assert g.shape == x.shape, '{}: grad shape {} != input shape {}'.format(what, g.shape, x.shape)
    assert g.dtype == np.float64, '{}: grad dtype {} != float64'.format(what, g.dtype)
    return g


def _upstream(seed, shape):
    """A random upstream gradient (cotangent): a backward that ignores gy cannot match it."""
    return np.random.RandomState(seed % 2 ** 32).standard_normal(size=shape)


# -----------------------------------------------------------------------------
# Element-wise functions
# -----------------------------------------------------------------------------
def _sigmoid(x):
    return 1 / (1 + np.exp(-x))


def _unary(name, fn, oracle, domain='any'):
    @op(name)
    def build(draw):
        x = draw(S.samples(domain))
        return Problem(lambda dev, x: fn(x), (x,), oracle)


_unary('sin', F.sin, np.sin)
_unary('cos', F.cos, np.cos)
_unary('tanh', F.tanh, np.tanh)
_unary('exp', F.exp, np.exp)
_unary('log', F.log, np.log, domain='positive')
_unary('sigmoid', F.sigmoid, _sigmoid)
_unary('sigmoid_simple', F.sigmoid_simple, _sigmoid)
_unary('relu', F.relu, lambda x: np.maximum(x, 0), domain='kinkfree')
_unary('neg', lambda x: -x, np.negative)
_unary('F.neg', F.neg, np.negative)


@op('leaky_relu')
def _leaky_relu(draw):
    x = draw(S.samples('kinkfree', S.shapes()))
    slope = draw(st.sampled_from([None, 0.01, 0.3]))
    if slope is None:
        return Problem(lambda dev, x: F.leaky_relu(x), (x,),
                       lambda x: np.where(x > 0, x, 0.2 * x))
    return Problem(lambda dev, x: F.leaky_relu(x, slope), (x,),
                   lambda x: np.where(x > 0, x, slope * x))


# -----------------------------------------------------------------------------
# Shape functions
# -----------------------------------------------------------------------------
@op('reshape')
def _reshape(draw):
    x = draw(S.samples('any', S.shapes(min_dims=1)))
    shape = x.shape
    size = int(np.prod(shape))
    target = draw(st.sampled_from([(size,), tuple(reversed(shape)), (1,) + shape, shape + (1,),
                                   (-1,), (size, -1)]))
    return Problem(lambda dev, x: F.reshape(x, target), (x,),
                   lambda x: x.reshape(target))


@op('Variable.reshape')
def _variable_reshape(draw):
    x = draw(S.samples('any', S.shapes(min_dims=2, max_dims=2)))
    a, b = x.shape
    form = draw(st.sampled_from(['varargs', 'tuple', 'list']))
    if form == 'varargs':
        fn = lambda dev, x: x.reshape(b, a)  # noqa: E731
    elif form == 'tuple':
        fn = lambda dev, x: x.reshape((b, a))  # noqa: E731
    else:
        fn = lambda dev, x: x.reshape([a * b])  # noqa: E731
    expected = (a * b,) if form == 'list' else (b, a)
    return Problem(fn, (x,), lambda x: x.reshape(expected))


@op('transpose')
def _transpose(draw):
    x = draw(S.samples('any'))
    axes = draw(S.permutations(len(x.shape)))
    return Problem(lambda dev, x: F.transpose(x, axes), (x,),
                   lambda x: np.transpose(x, axes))


@op('Variable.transpose/T')
def _variable_transpose(draw):
    x = draw(S.samples('any', S.shapes(min_dims=3, max_dims=3)))
    form = draw(st.sampled_from(['T', 'noargs', 'varargs', 'tuple']))
    fns = {
        'T': (lambda dev, x: x.T, None),
        'noargs': (lambda dev, x: x.transpose(), None),
        'varargs': (lambda dev, x: x.transpose(1, 2, 0), (1, 2, 0)),
        'tuple': (lambda dev, x: x.transpose((2, 0, 1)), (2, 0, 1)),
    }
    fn, axes = fns[form]
    return Problem(fn, (x,), lambda x: np.transpose(x, axes))


@op('get_item')
def _get_item(draw):
    x = draw(S.samples('any', S.shapes(min_dims=1)))
    shape = x.shape
    n0 = shape[0]
    kinds = ['int', 'slice', 'fancy', 'ellipsis']
    if len(shape) >= 2:
        kinds += ['slice_int', 'fancy_pair']
    kind = draw(st.sampled_from(kinds))
    if kind == 'int':
        index = draw(st.integers(-n0, n0 - 1))
    elif kind == 'slice':
        index = draw(st.slices(n0))
    elif kind == 'ellipsis':
        index = (Ellipsis, draw(st.integers(0, shape[-1] - 1)))
    elif kind == 'slice_int':
        index = (draw(st.slices(n0)), draw(st.integers(0, shape[1] - 1)))
    elif kind == 'fancy':
        # repeated indices: the backward must scatter-ADD, not assign
        index = np.array(draw(st.lists(st.integers(0, n0 - 1), min_size=1, max_size=5)))
    else:
        rows = draw(st.lists(st.integers(0, n0 - 1), min_size=1, max_size=5))
        cols = draw(st.lists(st.integers(0, shape[1] - 1), min_size=len(rows),
                             max_size=len(rows)))
        index = (np.array(rows), np.array(cols))

    def on(dev, index):
        if isinstance(index, np.ndarray):
            return dev.to_device(index)
        if isinstance(index, tuple):
            return tuple(on(dev, i) for i in index)
        return index

    return Problem(lambda dev, x: F.get_item(x, on(dev, index)), (x,), lambda x: x[index])


@op('Variable.__getitem__')
def _variable_getitem(draw):
    x = draw(S.samples('any', S.shapes(min_dims=2, max_dims=2)))
    i = draw(st.integers(0, x.shape[0] - 1))
    return Problem(lambda dev, x: x[i, ::-1], (x,), lambda x: x[i, ::-1])


@op('expand_dims')
def _expand_dims(draw):
    x = draw(S.samples('any'))
    axis = draw(st.integers(0, len(x.shape)))
    return Problem(lambda dev, x: F.expand_dims(x, axis), (x,),
                   lambda x: np.expand_dims(x, axis))


@op('flatten')
def _flatten(draw):
    x = draw(S.samples('any', S.shapes(min_dims=1)))
    return Problem(lambda dev, x: F.flatten(x), (x,), lambda x: x.reshape(x.shape[0], -1))


# -----------------------------------------------------------------------------
# Sums and broadcasting
# -----------------------------------------------------------------------------
@op('sum')
def _sum(draw):
    x = draw(S.samples('any'))
    axis = draw(S.axes(len(x.shape)))
    keepdims = draw(st.booleans())
    return Problem(lambda dev, x: F.sum(x, axis=axis, keepdims=keepdims), (x,),
                   lambda x: np.sum(x, axis=axis, keepdims=keepdims))


@op('Variable.sum')
def _variable_sum(draw):
    x = draw(S.samples('any', S.shapes(min_dims=1)))
    axis = draw(S.axes(len(x.shape)))
    return Problem(lambda dev, x: x.sum(axis), (x,), lambda x: np.sum(x, axis=axis))


@op('average')
def _average(draw):
    x = draw(S.samples('any'))
    axis = draw(S.axes(len(x.shape)))
    keepdims = draw(st.booleans())
    fn = draw(st.sampled_from([F.average, F.mean]))
    return Problem(lambda dev, x: fn(x, axis=axis, keepdims=keepdims), (x,),
                   lambda x: np.mean(x, axis=axis, keepdims=keepdims))


def _reduced_shape(draw, shape):
    """`shape` with some sides set to 1 and some leading axes dropped (a broadcastable shape)."""
    small = tuple(1 if draw(st.booleans()) else s for s in shape)
    drop = draw(st.integers(0, len(shape)))
    return small[drop:]


@op('sum_to')
def _sum_to(draw):
    big = draw(S.shapes())
    x = draw(S.samples('any', big))
    target = _reduced_shape(draw, big)

    def oracle(x):
        lead = x.ndim - len(target)
        y = x.sum(axis=tuple(range(lead))) if lead else x
        axes = tuple(i for i, s in enumerate(target) if s == 1)
        return y.sum(axis=axes, keepdims=True)

    return Problem(lambda dev, x: F.sum_to(x, target), (x,), oracle)


@op('broadcast_to')
def _broadcast_to(draw):
    big = draw(S.shapes())
    x = draw(S.samples('any', _reduced_shape(draw, big)))
    return Problem(lambda dev, x: F.broadcast_to(x, big), (x,),
                   lambda x: np.broadcast_to(x, big))


@op('matmul')
def _matmul(draw):
    n, k, m = draw(st.tuples(*[st.integers(1, 4)] * 3))
    x = draw(S.samples('any', (n, k)))
    w = draw(S.samples('any', (k, m)))
    form = draw(st.sampled_from(['F.matmul', 'Variable.matmul', 'Variable.dot']))
    fns = {'F.matmul': lambda dev, x, w: F.matmul(x, w),
           'Variable.matmul': lambda dev, x, w: x.matmul(w),
           'Variable.dot': lambda dev, x, w: x.dot(w)}
    return Problem(fns[form], (x, w), np.dot)


@op('linear')
def _linear(draw):
    n, k, m = draw(st.tuples(*[st.integers(1, 4)] * 3))
    x = draw(S.samples('any', (n, k)))
    w = draw(S.samples('any', (k, m)))
    fn = draw(st.sampled_from([F.linear, F.linear_simple]))
    if draw(st.booleans()):
        b = draw(S.samples('any', (m,)))
        return Problem(lambda dev, x, w, b: fn(x, w, b), (x, w, b),
                       lambda x, w, b: x.dot(w) + b)
    return Problem(lambda dev, x, w: fn(x, w), (x, w), np.dot)


# -----------------------------------------------------------------------------
# Softmax family and losses
# -----------------------------------------------------------------------------
def _softmax(x, axis):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


@op('softmax')
def _softmax_op(draw):
    x = draw(S.samples('any', S.shapes(min_dims=2, max_dims=3)))
    axis = draw(st.integers(0, len(x.shape) - 1))
    fn = draw(st.sampled_from([F.softmax, F.softmax_simple]))
    return Problem(lambda dev, x: fn(x, axis), (x,), lambda x: _softmax(x, axis))


@op('softmax[default axis]')
def _softmax_default(draw):
    x = draw(S.samples('any', S.shapes(min_dims=2, max_dims=2)))
    return Problem(lambda dev, x: F.softmax(x), (x,), lambda x: _softmax(x, 1))


@op('log_softmax')
def _log_softmax(draw):
    x = draw(S.samples('any', S.shapes(min_dims=2, max_dims=3)))
    axis = draw(st.integers(0, len(x.shape) - 1))
    return Problem(lambda dev, x: F.log_softmax(x, axis), (x,),
                   lambda x: np.log(_softmax(x, axis)))


@op('mean_squared_error')
def _mse(draw):
    shape = draw(S.shapes(min_dims=1, max_dims=2))
    x0 = draw(S.samples('any', shape))
    x1 = draw(S.samples('any', shape))
    fn = draw(st.sampled_from([F.mean_squared_error, F.mean_squared_error_simple]))
    return Problem(lambda dev, a, b: fn(a, b), (x0, x1),
                   lambda a, b: np.sum((a - b) ** 2) / len(a))


def _softmax_cross_entropy(x, t):
    log_p = np.log(_softmax(x, 1))
    return -np.mean(log_p[np.arange(len(t)), t])


@op('softmax_cross_entropy')
def _sce(draw):
    n, c = draw(st.integers(1, 4)), draw(st.integers(2, 4))
    x = draw(S.samples('any', (n, c)))
    t = draw(S.labels((n,), c)).array()
    fn = draw(st.sampled_from([F.softmax_cross_entropy, F.softmax_cross_entropy_simple]))
    return Problem(lambda dev, x: fn(x, dev.to_device(t)), (x,),
                   lambda x: _softmax_cross_entropy(x, t))


def _bce(p, t):
    return -np.sum(t * np.log(p) + (1 - t) * np.log(1 - p)) / len(p)


@op('sigmoid_cross_entropy')
def _sigmoid_ce(draw):
    n = draw(st.integers(1, 5))
    x_shape = draw(st.sampled_from([(n,), (n, 1)]))
    x = draw(S.samples('any', x_shape))
    t = draw(S.labels((n,), 2)).array()
    return Problem(lambda dev, x: F.sigmoid_cross_entropy(x, dev.to_device(t)), (x,),
                   lambda x: _bce(_sigmoid(x), t.reshape(x.shape)))


@op('binary_cross_entropy')
def _binary_ce(draw):
    n = draw(st.integers(1, 5))
    p = draw(S.samples('probability', (n,)))
    t = draw(S.labels((n,), 2)).array()
    return Problem(lambda dev, p: F.binary_cross_entropy(p, dev.to_device(t)), (p,),
                   lambda p: _bce(p, t))


# -----------------------------------------------------------------------------
# max / min / clip / dropout / batch_norm / embed_id
# -----------------------------------------------------------------------------
@op('max')
def _max(draw):
    x = draw(S.samples('kinkfree'))
    axis = draw(S.axes(len(x.shape)))
    keepdims = draw(st.booleans())
    return Problem(lambda dev, x: F.max(x, axis, keepdims), (x,),
                   lambda x: np.max(x, axis=axis, keepdims=keepdims))


@op('min')
def _min(draw):
    x = draw(S.samples('kinkfree'))
    axis = draw(S.axes(len(x.shape)))
    keepdims = draw(st.booleans())
    return Problem(lambda dev, x: F.min(x, axis, keepdims), (x,),
                   lambda x: np.min(x, axis=axis, keepdims=keepdims))


@op('Variable.max/min')
def _variable_max_min(draw):
    x = draw(S.samples('kinkfree', S.shapes(min_dims=2, max_dims=2)))
    if draw(st.booleans()):
        return Problem(lambda dev, x: x.max(axis=1), (x,), lambda x: x.max(axis=1))
    return Problem(lambda dev, x: x.min(axis=0), (x,), lambda x: x.min(axis=0))


@op('clip')
def _clip(draw):
    x = draw(S.samples('kinkfree', S.shapes(min_dims=1)))
    lo, hi = S.between_values(x.array(), 0.25, 0.75)
    return Problem(lambda dev, x: F.clip(x, lo, hi), (x,), lambda x: np.clip(x, lo, hi))


@op('dropout[train, seeded]')
def _dropout_train(draw):
    x = draw(S.samples('any', S.shapes(min_dims=1)))
    ratio = draw(st.sampled_from([0.0, 0.3, 0.5, 0.99]))
    seed = draw(S.SEEDS)

    def fn(dev, x):
        dev.seed(seed)  # the same mask at every evaluation of the finite differences
        return F.dropout(x, ratio)

    oracle = (lambda x: x) if ratio == 0.0 else None
    return Problem(fn, (x,), oracle)


@op('dropout[test mode]')
def _dropout_test(draw):
    x = draw(S.samples('any', S.shapes(min_dims=1)))

    def fn(dev, x):
        with dezero.test_mode():
            return F.dropout(x, 0.5)

    return Problem(fn, (x,), lambda x: x)


def _batch_norm_oracle(x, gamma, beta, mean, var, eps):
    axes = (0,) if x.ndim == 2 else (0, 2, 3)
    shape = (1, -1) if x.ndim == 2 else (1, -1, 1, 1)
    if mean is None:
        mean, var = x.mean(axis=axes), x.var(axis=axes)
    return ((x - mean.reshape(shape)) / np.sqrt(var.reshape(shape) + eps)
            * gamma.reshape(shape) + beta.reshape(shape))


def _batch_norm(train):
    def build(draw):
        c = draw(st.integers(1, 3))
        x_shape = draw(st.sampled_from([(draw(st.integers(3, 5)), c), (2, c, 2, 2)]))
        x = draw(S.samples('any', x_shape))
        gamma = draw(S.samples('positive', (c,)))
        beta = draw(S.samples('any', (c,)))
        mean = draw(S.samples('any', (c,))).array()
        var = draw(S.samples('positive', (c,))).array()
        name = draw(st.sampled_from(['batch_norm', 'batch_nrom']))

        def fn(dev, x, gamma, beta):
            # fresh running statistics per call: the train-mode forward updates them in place
            with dezero.using_config('train', train):
                return getattr(F, name)(x, gamma, beta, dev.to_device(mean), dev.to_device(var))

        def oracle(x, gamma, beta):
            return _batch_norm_oracle(x, gamma, beta, None if train else mean,
                                      None if train else var, 2e-5)

        return Problem(fn, (x, gamma, beta), oracle)
    return build


# Train mode has no second order: like the book's, its backward treats the batch statistics
# (inv_std, computed by the forward as a raw array) as constants, so the gradient it builds
# under create_graph=True is not the derivative of the first-order gradient.
op('batch_norm[train]', second_order=False)(_batch_norm(train=True))
op('batch_norm[test]')(_batch_norm(train=False))


@op('embed_id')
def _embed_id(draw):
    v, d = draw(st.integers(1, 5)), draw(st.integers(1, 3))
    w = draw(S.samples('any', (v, d)))
    ids = draw(S.labels(draw(st.sampled_from([(4,), (2, 3)])), v)).array()
    return Problem(lambda dev, w: F.embed_id(dev.to_device(ids), w), (w,), lambda w: w[ids])


# -----------------------------------------------------------------------------
# Arithmetic operators: broadcasting, reflected forms, pow
# -----------------------------------------------------------------------------
_BINARY = {
    'add': (lambda a, b: a + b, np.add, 'any'),
    'sub': (lambda a, b: a - b, np.subtract, 'any'),
    'mul': (lambda a, b: a * b, np.multiply, 'any'),
    'div': (lambda a, b: a / b, np.divide, 'positive'),
    'F.add': (F.add, np.add, 'any'),
    'F.sub': (F.sub, np.subtract, 'any'),
    'F.mul': (F.mul, np.multiply, 'any'),
    'F.div': (F.div, np.divide, 'positive'),
}


def _binary_op(name):
    fn, ref, rhs_domain = _BINARY[name]

    @op(name + '[broadcast]')
    def build(draw):
        big = draw(S.shapes(max_side=3))
        small = _reduced_shape(draw, big)
        if draw(st.booleans()):
            big, small = small, big
        a = draw(S.samples('any', big))
        b = draw(S.samples(rhs_domain, small))
        return Problem(lambda dev, a, b: fn(a, b), (a, b), ref)


for _name in _BINARY:
    _binary_op(_name)

_REFLECTED = {
    'radd': (lambda c, x: c + x, np.add, 'any'),
    'rsub': (lambda c, x: c - x, np.subtract, 'any'),
    'rmul': (lambda c, x: c * x, np.multiply, 'any'),
    'rdiv': (lambda c, x: c / x, np.divide, 'positive'),
    'F.rsub': (lambda c, x: F.rsub(x, c), np.subtract, 'any'),
    'core.rdiv': (lambda c, x: dezero.core.rdiv(x, c), np.divide, 'positive'),
}


def _reflected_op(name):
    fn, ref, x_domain = _REFLECTED[name]

    @op(name + '[constant]')
    def build(draw):
        shape = draw(S.shapes())
        x = draw(S.samples(x_domain, shape))
        kind = draw(st.sampled_from(['python float', 'python int', 'device array',
                                     'device array, broadcast']))
        if kind == 'python float':
            c = draw(st.floats(-3, 3, allow_nan=False).filter(lambda c: c != 0))
            return Problem(lambda dev, x: fn(c, x), (x,), lambda x: ref(c, x))
        if kind == 'python int':
            c = draw(st.integers(-3, 3))
            return Problem(lambda dev, x: fn(c, x), (x,), lambda x: ref(c, x))
        c_shape = shape if kind == 'device array' else _reduced_shape(draw, shape)
        c = draw(S.samples('any', c_shape)).array()
        # `device array (op) Variable` must dispatch to the Variable (__array_priority__)
        return Problem(lambda dev, x: fn(dev.to_device(c), x), (x,), lambda x: ref(c, x))


for _name in _REFLECTED:
    _reflected_op(_name)


@op('binary with constant right operand')
def _constant_right(draw):
    shape = draw(S.shapes())
    x = draw(S.samples('positive', shape))
    name = draw(st.sampled_from(['add', 'sub', 'mul', 'div']))
    fn, ref, _ = _BINARY[name]
    c = draw(st.floats(0.5, 3, allow_nan=False))
    return Problem(lambda dev, x: fn(x, c), (x,), lambda x: ref(x, c))


@op('pow')
def _pow(draw):
    c = draw(st.sampled_from([0, 1, 2, 3, -1, 0.5, 2.5, -1.5]))
    domain = 'any' if isinstance(c, int) and c > 0 else 'positive'
    x = draw(S.samples(domain))
    fn = draw(st.sampled_from([lambda x: x ** c, lambda x: F.pow(x, c)]))
    return Problem(lambda dev, x: fn(x), (x,), lambda x: np.power(x, float(c)))


OP_IDS = [o.name for o in OPS]


# -----------------------------------------------------------------------------
# The checks
# -----------------------------------------------------------------------------
@pytest.mark.parametrize('op', OPS, ids=OP_IDS)
@settings(SUITE_SETTINGS, max_examples=MAX_EXAMPLES)
@given(data=st.data())
def test_forward_matches_numpy_oracle(op, device, data):
    problem = op.build(data.draw)
    arrays = [s.array() for s in problem.inputs]
    y, xs = _forward(problem, device, arrays)
    assert isinstance(y, Variable), 'expected a Variable, found {}'.format(type(y))
    found = device.to_host(y)
    assert found.dtype == np.float64, 'expected float64 output, found {}'.format(found.dtype)
    if problem.oracle is not None:
        expected = np.asarray(problem.oracle(*arrays))
        assert found.shape == expected.shape, 'shape: expected {}, found {}'.format(
            expected.shape, found.shape)
        np.testing.assert_allclose(found, expected, rtol=1e-10, atol=1e-12)
    for k, (a, x) in enumerate(zip(arrays, xs)):
        np.testing.assert_array_equal(device.to_host(x), a,
                                      err_msg='the forward mutated its input {}'.format(k))


@pytest.mark.parametrize('op', OPS, ids=OP_IDS)
@settings(SUITE_SETTINGS, max_examples=MAX_EXAMPLES)
@given(data=st.data(), v_seed=S.SEEDS)
def test_vjp_matches_central_differences(op, device, data, v_seed):
    problem = op.build(data.draw)
    arrays = [s.array() for s in problem.inputs]
    y, _ = _forward(problem, device, arrays)
    v = _upstream(v_seed, y.shape)
    _, xs = _first_order(problem, device, arrays, v)
    f = lambda arrs: _evaluate(problem, device, arrs)  # noqa: E731
    for k, x in enumerate(xs):
        what = '{} input {} on {}'.format(op.name, k, device.name)
        analytic = _host_grad(device, x, what)
        assert_close(analytic, numeric_vjp(f, arrays, k, v), what)


@pytest.mark.parametrize('op', OPS, ids=OP_IDS)
@settings(SUITE_SETTINGS, max_examples=MAX_EXAMPLES)
@given(data=st.data())
def test_zero_upstream_gives_zero_gradient(op, device, data):
    problem = op.build(data.draw)
    arrays = [s.array() for s in problem.inputs]
    y, _ = _forward(problem, device, arrays)
    _, xs = _first_order(problem, device, arrays, np.zeros(y.shape))
    for k, x in enumerate(xs):
        g = _host_grad(device, x, '{} input {}'.format(op.name, k))
        assert not np.any(g), '{} input {}: zero upstream gave a non-zero grad (max |g| {})'.format(
            op.name, k, np.abs(g).max())


@pytest.mark.parametrize('op', OPS, ids=OP_IDS)
@settings(SUITE_SETTINGS, max_examples=MAX_EXAMPLES)
@given(data=st.data(), v_seed=S.SEEDS)
def test_second_backward_is_identical_and_keeps_upstream(op, device, data, v_seed):
    problem = op.build(data.draw)
    arrays = [s.array() for s in problem.inputs]
    y, xs = _forward(problem, device, arrays)
    v = _upstream(v_seed, y.shape)
    v_device = device.to_device(v)
    grads = []
    for _ in range(2):
        for x in xs:
            x.cleargrad()
        y.grad = Variable(v_device)
        y.backward()  # retain_grad=False clears every intermediate grad for the next pass
        grads.append([device.to_host(x.grad).copy() for x in xs])
    np.testing.assert_array_equal(device.to_host(v_device), v,
                                  err_msg='backward mutated the upstream gradient in place')
    for k, (g1, g2) in enumerate(zip(*grads)):
        np.testing.assert_array_equal(g1, g2, err_msg='input {}: second backward differs'.format(k))


@pytest.mark.parametrize('op', OPS, ids=OP_IDS)
@settings(SUITE_SETTINGS, max_examples=3)
@given(data=st.data())
def test_no_graph_under_no_grad(op, device, data):
    problem = op.build(data.draw)
    arrays = [s.array() for s in problem.inputs]
    with dezero.no_grad():
        y, xs = _forward(problem, device, arrays)
    assert y.creator is None, 'no_grad: expected no creator, found {}'.format(y.creator)
    assert dezero.Config.enable_backprop is True


SECOND_ORDER_OPS = [o for o in OPS if o.second_order]


@pytest.mark.parametrize('op', SECOND_ORDER_OPS, ids=[o.name for o in SECOND_ORDER_OPS])
@settings(SUITE_SETTINGS, max_examples=MAX_EXAMPLES_SECOND_ORDER)
@given(data=st.data(), v_seed=S.SEEDS, w_seed=S.SEEDS)
def test_second_order_matches_central_differences(op, device, data, v_seed, w_seed):
    """The gradient of s(x) = sum_k <w_k, (J^T v)_k>, built with create_graph=True, against
    central differences of s computed by first-order passes."""
    problem = op.build(data.draw)
    arrays = [s.array() for s in problem.inputs]
    y, _ = _forward(problem, device, arrays)
    v = _upstream(v_seed, y.shape)
    ws = [_upstream(w_seed + k, a.shape) for k, a in enumerate(arrays)]

    def s_numeric(arrs):
        _, xs = _first_order(problem, device, arrs, v)
        return np.array(sum(np.sum(w * device.to_host(x.grad)) for w, x in zip(ws, xs)))

    _, xs = _first_order(problem, device, arrays, v, create_graph=True)
    s = None
    for w, x in zip(ws, xs):
        term = F.sum(x.grad * device.to_device(w))
        s = term if s is None else s + term
    for x in xs:
        x.cleargrad()
    s.backward()
    for k, x in enumerate(xs):
        what = '{} second order, input {} on {}'.format(op.name, k, device.name)
        analytic = (np.zeros(x.shape) if x.grad is None else _host_grad(device, x, what))
        assert_close(analytic, numeric_vjp(s_numeric, arrays, k, np.array(1.0)), what)


@pytest.mark.parametrize('op', OPS, ids=OP_IDS)
@settings(SUITE_SETTINGS, max_examples=3)
@given(data=st.data(), v_seed=S.SEEDS)
def test_device_results_equal_host_bit_for_bit(op, device, host_device, data, v_seed):
    if device.name == host_device.name:
        pytest.skip('compares a device with the host; vacuous on the host itself')
    if op.name.startswith('dropout[train'):
        pytest.skip('the device generator differs from the host one by design (CuPy cuRAND)')
    problem = op.build(data.draw)
    arrays = [s.array() for s in problem.inputs]
    results = {}
    for dev in (host_device, device):
        y, _ = _forward(problem, dev, arrays)
        out = dev.to_host(y).copy()
        _, xs = _first_order(problem, dev, arrays, _upstream(v_seed, y.shape))
        results[dev.name] = [out] + [dev.to_host(x.grad).copy() for x in xs]
    for k, (h, d) in enumerate(zip(results[host_device.name], results[device.name])):
        np.testing.assert_array_equal(d, h, err_msg='{} (0 = forward, k = grad of input k-1)'
                                      .format(k))


# -----------------------------------------------------------------------------
# Fixed cases the random draws must not leave to chance
# -----------------------------------------------------------------------------
@pytest.mark.parametrize('pair', [False, True], ids=['rows', 'row-column pairs'])
def test_get_item_scatter_adds_repeated_indices(device, pair):
    x_host = np.arange(6.0).reshape(3, 2)
    rows = np.array([0, 2, 0, 0])
    cols = np.array([1, 0, 1, 0])
    index = (rows, cols) if pair else rows
    v = _upstream(7, x_host[index].shape)
    expected = np.zeros_like(x_host)
    np.add.at(expected, index, v)
    x = Variable(device.to_device(x_host))
    device_index = tuple(device.to_device(i) for i in index) if pair else device.to_device(rows)
    y = F.get_item(x, device_index)
    np.testing.assert_array_equal(device.to_host(y), x_host[index])
    y.grad = Variable(device.to_device(v))
    y.backward()
    np.testing.assert_array_equal(device.to_host(x.grad), expected)


def test_leaky_relu_backward_of_a_0d_input(host_device):
    """The book's LeakyReLU.backward fails on a 0-d host input (its mask is a NumPy scalar,
    which cannot be assigned into); the reference builds the mask with xp.where."""
    x = Variable(np.array(-0.5))
    y = F.leaky_relu(x, 0.2)
    assert float(y.data) == pytest.approx(-0.1)
    y.backward()
    assert float(x.grad.data) == pytest.approx(0.2)
