"""Optimisation and higher-order derivatives (steps 28-36) through the package's public API.

The reports are plain numbers that the reference produces too, so most checks compare them with
`reference.match`. Steps 28-31 may use either core (`core_simple`, where a gradient is an
ndarray, or the full core, where it is a Variable): `grad_data` reads both.
"""
import numpy as np

from dezero_grader.contracts import expressions
from dezero_grader.sandboxed.probes.context import scalar
from dezero_grader.sandboxed.probes.registry import scenario
from dezero_grader.sandboxed.probes.scenarios.fn_before_core import export
from dezero_grader.sandboxed.probes.scenarios.single_file import phase

_array = np.array


def grad_data(ctx, g):
    """A gradient's array, whichever core made it."""
    return ctx.unwrap(g)


@scenario('opt.descent')
def descent(ctx, iters, lr, start):
    """Step 28: gradient descent on Rosenbrock's function, updating `.data` in place and
    clearing the gradients before each backward."""
    V = ctx.api.Variable
    rosenbrock = expressions.body('early.fn', 'rosenbrock')
    res = {}

    def first_gradient():
        x0, x1 = V(_array(float(start[0]))), V(_array(float(start[1])))
        rosenbrock(None, x0, x1).backward()
        return [export(ctx, x0.grad), export(ctx, x1.grad)]
    phase(res, 'first_gradient', first_gradient)

    def run():
        x0, x1 = V(_array(float(start[0]))), V(_array(float(start[1])))
        for _ in range(iters):
            y = rosenbrock(None, x0, x1)
            x0.cleargrad()
            x1.cleargrad()
            y.backward()
            x0.data -= lr * grad_data(ctx, x0.grad)
            x1.data -= lr * grad_data(ctx, x1.grad)
        return [export(ctx, x0), export(ctx, x1)]
    phase(res, 'final', run)
    return res


@scenario('opt.newton')
def newton(ctx, iters, start, second='manual'):
    """Newton's method on x⁴ − 2x²: the second derivative by hand (`manual`, step 29) or by
    differentiating the gradient (`auto`, step 33, backward(create_graph=True)); the iterates,
    and both derivatives at a point drawn from the seed."""
    V = ctx.api.Variable
    quartic = expressions.body('early.fn', 'quartic')
    res = {}

    def derivatives(x):
        y = quartic(None, x)
        x.cleargrad()
        if second == 'manual':
            y.backward()
            gx = grad_data(ctx, x.grad)
            return gx, 12 * x.data ** 2 - 4
        y.backward(create_graph=True)
        gx = x.grad
        x.cleargrad()
        gx.backward()
        return grad_data(ctx, gx), grad_data(ctx, x.grad)

    def iterates():
        x = V(_array(float(start)))
        seen = []
        for _ in range(iters):
            seen.append(scalar(x.data))
            gx, gx2 = derivatives(x)
            x.data = x.data - gx / gx2
        return seen
    phase(res, 'iterates', iterates)

    def at_point():
        x = V(_array(ctx.rng(20).uniform(0.5, 2.0)))
        gx, gx2 = derivatives(x)
        return {'first': export(ctx, gx), 'second': export(ctx, gx2)}
    phase(res, 'at_point', at_point)
    return res


def count_functions(v):
    """How many functions the graph behind `v` holds (through `creator` and `inputs`)."""
    seen, stack = set(), [v.creator] if getattr(v, 'creator', None) is not None else []
    while stack:
        f = stack.pop()
        if id(f) in seen:
            continue
        seen.add(id(f))
        for x in f.inputs:
            if x.creator is not None:
                stack.append(x.creator)
    return len(seen)


@scenario('grad.kind')
def grad_kind(ctx, shape):
    """Step 32: a gradient is a Variable; plain backward() records no graph for it, and
    backward(create_graph=True) does (for a function that is not linear)."""
    V = ctx.api.Variable
    a = ctx.rng(21).uniform(0.5, 1.5, size=shape)
    res = {}

    def plain():
        x = V(a.copy())
        (x ** 3).backward()
        return {'is_variable': isinstance(x.grad, V),
                'has_graph': getattr(x.grad, 'creator', None) is not None,
                'value': export(ctx, x.grad), 'expected': 3 * a ** 2}
    phase(res, 'plain', plain)

    def create_graph():
        x = V(a.copy())
        (x ** 3).backward(create_graph=True)
        return {'has_graph': getattr(x.grad, 'creator', None) is not None,
                'value': export(ctx, x.grad), 'expected': 3 * a ** 2}
    phase(res, 'create_graph', create_graph)
    return res


def _build(ctx, name):
    F = ctx.api.get('functions', None)
    return {'sin': lambda x: F.sin(x), 'cos': lambda x: F.cos(x), 'tanh': lambda x: F.tanh(x),
            'poly': lambda x: x ** 4 - 2 * x ** 2}[name]


@scenario('grad.higher_order')
def higher_order(ctx, fns, order):
    """The first `order` derivatives of each of `fns` at a point drawn from the seed, by
    repeated backward(create_graph=True), and how many functions each derivative's graph holds
    (it grows with the order: the derivatives are themselves graphs)."""
    V = ctx.api.Variable
    value = float(ctx.rng(22).uniform(-1.5, 1.5))
    res = {'x': value}
    for name in fns:
        def run(name=name):
            build = _build(ctx, name)
            x = V(_array(value))
            y = build(x)
            y.backward(create_graph=True)
            derivs, sizes = [], []
            for _ in range(order):
                gx = x.grad
                derivs.append(scalar(grad_data(ctx, gx)))
                sizes.append(count_functions(gx))
                x.cleargrad()
                gx.backward(create_graph=True)
            return {'derivatives': derivs, 'graph_sizes': sizes}
        phase(res, name, run)
    return res


@scenario('grad.double_backprop')
def double_backprop(ctx):
    """Step 36: z = (dy/dx)³ + y for y = x², differentiated again: dz/dx = 24x² + 2x, at the
    book's x = 2 (100) and at a point drawn from the seed."""
    V = ctx.api.Variable
    res = {}

    def at(value):
        x = V(_array(value))
        y = x ** 2
        y.backward(create_graph=True)
        gx = x.grad
        x.cleargrad()
        z = gx ** 3 + y
        z.backward()
        return export(ctx, x.grad)
    phase(res, 'book', lambda: at(2.0))
    phase(res, 'random', lambda: at(float(ctx.rng(23).uniform(-2.0, 2.0))))
    return res
