"""Evaluate one function of an early step (1-31) the way that step's API allows: `early.fn`.

Before step 32 a gradient is a bare ndarray, before step 12 a Function takes one Variable (step
11: a list), before step 9 a 0-d result may be a NumPy scalar, before step 7 backward is done by
hand and before step 20 there are no operators. `early.fn` reports what `fn.eval` reports
(forward value, input gradients for the probe's random upstream gradient, forward values at
perturbed points, gradients for a zero upstream gradient, inputs after the call), so the
gradient battery judges it unchanged; the call convention, the backward style and the kind of
gradient are parameters. On the reference, which is the final package, every early name maps to
the package operation that computes the same thing (`square` is `x ** 2`, `add` is `+`): that
is the oracle the battery compares the learner's values with.

A function name is a name of the step (`Square`, `square`, `add`; a class is instantiated for
each call), a chain of names applied in turn (`Square>Exp>Square`), an operator (`op.mul`) or
one of the composite expressions below (`expr.goldstein`), written with the names a step has.
"""
import numpy as np

from dezero_grader.contracts import expressions
from dezero_grader.contracts.expressions import expression
from dezero_grader.sandboxed.probes.context import upstream_gradient
from dezero_grader.sandboxed.probes.registry import scenario
from dezero_grader.sandboxed.probes.scenarios.functions import OPERATORS, resolve

_asarray = np.asarray
_generic = np.generic
_zeros = np.zeros


# -- names ----------------------------------------------------------------------------------------
def _oracles(api):
    """The package operation for each early name (the reference's side)."""
    F = api.get('functions')
    return {
        'square': lambda x: x ** 2, 'exp': F.exp, 'add': lambda a, b: a + b,
        'mul': lambda a, b: a * b, 'neg': lambda x: -x, 'sub': lambda a, b: a - b,
        'rsub': lambda a, b: b - a, 'div': lambda a, b: a / b, 'rdiv': lambda a, b: b / a,
        'pow': lambda x, c: x ** c,
    }


class Names:
    """The step's functions by name, called with the step's call convention; on the reference,
    the oracles. `instances` collects the Function objects of class names, in call order (a
    backward by hand walks them back)."""

    def __init__(self, ctx, call='varargs'):
        self.ctx = ctx
        self.reference = ctx.api.kind == 'reference'
        self.call = 'varargs' if self.reference else call
        self.oracles = _oracles(ctx.api) if self.reference else None
        self.instances = []

    def fn(self, name):
        if self.reference:
            oracle = self.oracles[name.lower()]
            return lambda *xs: oracle(*xs)
        obj = self.ctx.api.get(name)
        if isinstance(obj, type):
            def apply(*xs):
                f = obj()
                self.instances.append(f)
                return self._call(f, xs)
            return apply
        return lambda *xs: self._call(obj, xs)

    def _call(self, f, xs):
        if self.call == 'list':
            return f(list(xs))[0]
        return f(*xs)

    def __getattr__(self, name):
        if name.startswith('_'):
            raise AttributeError(name)
        return self.fn(name)


# -- expressions (`expr.<name>`, registered in `dezero_grader.contracts.expressions`) -------------
@expression('early.fn', 'sum_of_squares')  # step 13
def _sum_of_squares(N, x, y):
    return N.add(N.square(x), N.square(y))


@expression('early.fn', 'reuse')           # step 14: x on three paths, with step 14's one function
def _reuse(N, x):
    return N.add(N.add(x, x), x)


@expression('early.fn', 'diamond')         # step 16: a = x², y = a² + a²
def _diamond(N, x):
    a = N.square(x)
    return N.add(N.square(a), N.square(a))


@expression('early.fn', 'deep_diamond')    # step 16: shared branches at three levels
def _deep_diamond(N, x):
    a = N.square(x)
    b = N.add(a, x)
    c = N.add(N.square(b), a)
    d = N.add(c, b)
    return N.add(N.square(d), c)


@expression('early.fn', 'abc')             # step 20: a * b + c
def _abc(N, a, b, c):
    return a * b + c


@expression('early.fn', 'plus3_squared')   # step 23: (x + 3) ** 2
def _plus3_squared(N, x):
    return (x + 3) ** 2


@expression('early.fn', 'sphere')          # step 24
def _sphere(N, x, y):
    return x ** 2 + y ** 2


@expression('early.fn', 'matyas')
def _matyas(N, x, y):
    return 0.26 * (x ** 2 + y ** 2) - 0.48 * x * y


@expression('early.fn', 'goldstein')
def _goldstein(N, x, y):
    return (1 + (x + y + 1) ** 2 * (19 - 14 * x + 3 * x ** 2 - 14 * y + 6 * x * y + 3 * y ** 2)) * \
        (30 + (2 * x - 3 * y) ** 2 * (18 - 32 * x + 12 * x ** 2 + 48 * y - 36 * x * y + 27 * y ** 2))


@expression('early.fn', 'my_sin')          # step 27: the Maclaurin series, summed to a threshold
def _my_sin(N, x, threshold=1e-4):
    import math
    y = 0
    for i in range(100000):
        c = (-1) ** i / math.factorial(2 * i + 1)
        t = c * x ** (2 * i + 1)
        y = y + t
        if float(np.max(np.abs(_asarray(t.data)))) < threshold:
            break
    return y


@expression('early.fn', 'rosenbrock')      # step 28
def _rosenbrock(N, x0, x1):
    return 100 * (x1 - x0 ** 2) ** 2 + (x0 - 1) ** 2


@expression('early.fn', 'quartic')         # steps 29, 33: x⁴ - 2x²
def _quartic(N, x):
    return x ** 4 - 2 * x ** 2


def build(ctx, fn, call):
    """`fn` as a callable on the step's Variables, and the Names that record Function objects."""
    N = Names(ctx, call)
    kind, _, rest = fn.partition('.')
    if kind == 'op' and rest in OPERATORS:
        return OPERATORS[rest], N
    if kind == 'expr':
        body = expressions.body('early.fn', rest)
        return (lambda *xs: body(N, *xs)), N
    chain = [N.fn(name) for name in fn.split('>')]

    def apply(*xs):
        y = chain[0](*xs)
        for f in chain[1:]:
            y = f(y)
        return y
    return apply, N


# -- reporting ------------------------------------------------------------------------------------
def host_value(ctx, v):
    """A Variable's data or an array as a host ndarray; a NumPy scalar (what a 0-d result is
    before step 9) becomes a 0-d array."""
    raw = ctx.unwrap(v)
    if isinstance(raw, _generic):
        raw = _asarray(raw)
    return raw


def export(ctx, v):
    """A snapshot of a Variable's data or an array for the report (a copy: the learner's code
    may change the array in place afterwards, as an optimizer does)."""
    raw = host_value(ctx, v)
    return ctx.export(raw.copy() if isinstance(raw, np.ndarray) else raw)


def is_variable(ctx, v):
    return isinstance(v, ctx.api.Variable)


def seed(ctx, y, gy, as_variable):
    """Set `y.grad` to the upstream gradient `gy`, as an ndarray or a Variable."""
    y.grad = ctx.api.Variable(gy) if as_variable else gy


def grads_are_variables(ctx, evaluate, args, wrt):
    """Whether backward leaves Variables (the full core) or ndarrays (core_simple) as grads,
    found by one plain backward with the default seed."""
    if not wrt:
        return False
    inputs, y = evaluate(args)
    y.backward()
    return is_variable(ctx, inputs[wrt[0]].grad)


@scenario('early.fn')
def early_fn(ctx, fn, args, wrt, kwargs=None, gy=False, points=(), zero_gy=False, reseed=None,
             call='varargs', backward='method', grad_kind='array'):
    """Forward at `args`; with `gy`, the input gradients for the probe's random upstream gradient
    (`backward`: 'method' sets y.grad and calls y.backward(); 'manual' calls each Function's
    backward in reverse order, as step 6 does); forward at each of `points`."""
    kwargs = kwargs or {}
    if ctx.api.kind == 'reference':
        call, backward, grad_kind = 'varargs', 'method', 'variable'
    last = {}

    def evaluate(values):
        if reseed is not None:
            np.random.seed(reseed)
        f, N = build(ctx, fn, call)
        # a fresh float array per call (in-place bugs must not leak); nested lists come from a
        # failure reproduction, which spells arrays out as lists
        inputs = [ctx.api.Variable(np.array(a, dtype=np.float64)) if i in wrt else a
                  for i, a in enumerate(values)]
        y = f(*inputs, **kwargs)
        last['N'] = N
        return inputs, y

    def gradients(inputs, y, upstream):
        if backward == 'manual':
            g = upstream
            for f in reversed(last['N'].instances):
                g = f.backward(g)
            return [g]
        seed(ctx, y, upstream, as_variable)
        y.backward()
        return [inputs[i].grad for i in wrt]

    inputs, y = evaluate(args)
    out = {'y': export(ctx, y), 'y_info': ctx.describe(y), 'output_is_variable': is_variable(ctx, y)}
    if gy and backward != 'none':
        as_variable = grad_kind == 'variable' or (
            grad_kind == 'auto' and grads_are_variables(ctx, evaluate, args, wrt))
        inputs, y = evaluate(args)
        host_y = host_value(ctx, y)
        grads = gradients(inputs, y, upstream_gradient(ctx.seed, host_y.shape, host_y.dtype))
        out['grads'] = [None if g is None else export(ctx, g) for g in grads]
        out['grad_info'] = [ctx.describe(g) for g in grads]
        if zero_gy:
            inputs_z, y_z = evaluate(args)
            host_z = host_value(ctx, y_z)
            grads_z = gradients(inputs_z, y_z, _zeros(host_z.shape, host_z.dtype))
            out['zero_grads'] = [None if g is None else host_value(ctx, g) for g in grads_z]
    out['inputs_after'] = [host_value(ctx, inputs[i]) for i in wrt]
    out['points'] = [host_value(ctx, evaluate(p)[1]) for p in points]
    return out


@scenario('fn.forward')
def fn_forward(ctx, fn, cases):
    """Forward values only, for a step whose backward needs a function of a later step (the
    book's step-39 `Sum.backward` calls `broadcast_to`, which arrives at step 40). Each case is
    `{"shape": [...], "kwargs": {...}}`; its input is drawn from the probe's seed, so the
    reference sees the same one."""
    f = resolve(ctx.api, fn)
    rng = ctx.rng(11)
    out = []
    for case in cases:
        a = rng.standard_normal(tuple(case['shape']))
        kwargs = dict(case.get('kwargs') or {})
        if isinstance(kwargs.get('axis'), list):
            kwargs['axis'] = tuple(kwargs['axis'])
        y = f(ctx.var(a), **kwargs)
        out.append({'is_variable': is_variable(ctx, y), 'y': ctx.export(y)})
    return out
