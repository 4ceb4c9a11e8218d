"""Autograd behaviour through the public API: diamonds, reuse, no_grad, higher order, layers,
and a snapshot of the computational graph with every variable's gradient (the trajectory).
"""
import numpy as np

from grader.probes.context import upstream_gradient
from grader.probes.registry import scenario
from grader.probes.scenarios.fixtures import by_role


def _deref(ref, Variable):
    return ref if isinstance(ref, Variable) else ref()


def snapshot(ctx, output):
    """The graph behind `output` as nodes (functions) and variables, in a deterministic order:
    functions by decreasing generation, ties by discovery order. Only public attributes
    (`creator`, `inputs`, `outputs`, `generation`) are read."""
    V = ctx.api.Variable
    var_ids, variables, funcs, func_ids = {}, [], [], {}

    def var_id(v):
        if id(v) not in var_ids:
            var_ids[id(v)] = len(variables)
            variables.append(v)
        return var_ids[id(v)]

    var_id(output)
    frontier = [output.creator] if output.creator is not None else []
    while frontier:
        f = frontier.pop(0)
        if id(f) in func_ids:
            continue
        func_ids[id(f)] = len(funcs)
        funcs.append(f)
        for x in f.inputs:
            var_id(x)
            if x.creator is not None and id(x.creator) not in func_ids:
                frontier.append(x.creator)
    order = sorted(range(len(funcs)), key=lambda i: (-getattr(funcs[i], 'generation', 0), i))
    nodes = []
    for i in order:
        f = funcs[i]
        outs = [_deref(o, V) for o in getattr(f, 'outputs', [])]
        nodes.append({
            'type': type(f).__name__,
            'generation': int(getattr(f, 'generation', 0)),
            'inputs': [var_id(x) for x in f.inputs],
            'outputs': [var_id(o) for o in outs if o is not None],
        })
    var_info = []
    for v in variables:
        info = ctx.describe(v)
        info['name'] = v.name if isinstance(getattr(v, 'name', None), str) else None
        g = getattr(v, 'grad', None)
        info['grad'] = None if g is None else ctx.host(g)
        var_info.append(info)
    return {'nodes': nodes, 'variables': var_info}


EXPRESSIONS = {}


def expression(name):
    def register(fn):
        EXPRESSIONS[name] = fn
        return fn
    return register


@expression('diamond')
def _diamond(ctx, F, x):
    a = x ** 2
    return a ** 2 + a ** 2


@expression('deep_diamond')
def _deep_diamond(ctx, F, x):
    a = x * x
    b = a + x
    c = a * b
    d = b * c + a
    return d * x


@expression('tanh_chain')
def _tanh_chain(ctx, F, x):
    return F.sum(F.tanh(F.exp(x * 0.5)) * x)


@expression('mlp_loss')
def _mlp_loss(ctx, F, x, W1, b1, W2, b2, t):
    h = F.sigmoid(F.linear(x, W1, b1))
    return F.softmax_cross_entropy(F.linear(h, W2, b2), t)


@expression('broadcast_ops')
def _broadcast_ops(ctx, F, a, b):
    return F.sum((a + b) * b - a / (b * b + 1.0))


@expression('reshape_transpose_sum')
def _reshape_transpose_sum(ctx, F, x, W):
    y = F.matmul(F.transpose(F.reshape(x, (3, 4))), W)
    return F.sum(F.sum_to(y, (1, 2)) * y)


@scenario('graph.trace')
def trace(ctx, expr, args, labels=(), gy=None):
    """Evaluate a named composite expression, back-propagate the probe's random upstream
    gradient keeping every gradient, and snapshot the graph."""
    F = ctx.api.get('functions', None)
    xs = [ctx.to_device(np.array(a)) if i in labels else ctx.var(np.array(a))
          for i, a in enumerate(args)]
    y = EXPRESSIONS[expr](ctx, F, *xs)
    host_y = ctx.host(y)
    y.grad = ctx.api.Variable(ctx.to_device(upstream_gradient(ctx.seed, host_y.shape, host_y.dtype)))
    y.backward(retain_grad=True)
    return {'y': ctx.host(y), 'grads': [None if i in labels or x.grad is None
                                        else ctx.host(x.grad) for i, x in enumerate(xs)],
            'graph': snapshot(ctx, y)}


@scenario('graph.reuse')
def reuse(ctx, value):
    """A variable used several times receives every contribution, and the seed is not
    modified in place by the accumulation."""
    V = ctx.api.Variable
    x = V(ctx.to_device(np.array(value)))
    y = x + x
    y.backward(retain_grad=True)
    twice = ctx.host(x.grad).copy()
    seed_after = ctx.host(y.grad).copy()
    x2 = V(ctx.to_device(np.array(value)))
    y2 = (x2 + x2) + x2
    y2.backward()
    x3 = V(ctx.to_device(np.array(value)))
    y3 = x3 * x3 * x3
    y3.backward()
    x3.cleargrad()
    y4 = x3 * 2.0
    y4.backward()
    return {'x_plus_x': twice, 'seed_after': seed_after, 'x_plus_x_plus_x': ctx.host(x2.grad),
            'cube': ctx.host(y3), 'after_cleargrad': ctx.host(x3.grad)}


@scenario('graph.no_grad')
def no_grad(ctx, value):
    """Under `no_grad` no graph is recorded; the mode is restored on exit and on an exception."""
    V = ctx.api.Variable
    no_grad = ctx.api.get('no_grad')
    x = V(ctx.to_device(np.array(value)))
    with no_grad():
        y = x * 2.0 + 1.0
    inside = {'creator': y.creator is not None, 'value': ctx.host(y)}
    try:
        with no_grad():
            raise KeyError('probe')
    except KeyError:
        pass
    z = x * 3.0
    return {'inside_records_graph': inside['creator'], 'inside_value': inside['value'],
            'after_exception_records_graph': z.creator is not None}


@scenario('graph.higher_order')
def higher_order(ctx, value, order):
    """Derivatives of sin and of x⁴ − 2x² up to `order`, through create_graph=True."""
    V = ctx.api.Variable
    F = ctx.api.get('functions')
    results = {}
    for name, build in (('sin', lambda x: F.sin(x)), ('poly', lambda x: x ** 4 - 2 * x ** 2),
                        ('tanh', lambda x: F.tanh(x))):
        x = V(ctx.to_device(np.array(value)))
        y = build(x)
        y.backward(create_graph=True)
        derivs = []
        for _ in range(order):
            gx = x.grad
            derivs.append(float(ctx.host(gx)))
            x.cleargrad()
            gx.backward(create_graph=True)
        results[name] = derivs
    return results


@scenario('layer.linear_lazy')
def linear_lazy(ctx, in_size, out_size, batch):
    """`Linear(out)` without in_size creates W from the first input's shape, only then."""
    Linear = ctx.api.get('layers.Linear')
    layer = Linear(out_size)
    weight = by_role(ctx, layer, 'W')   # the weight by its role, whatever its name
    before = None if weight.data is None else list(ctx.host(weight).shape)
    x = ctx.to_device(ctx.rng(1).standard_normal((batch, in_size)))
    y = layer(x)
    bias = by_role(ctx, layer, 'b')     # None: no parameter plays the bias (a vector)
    return {'W_before': before, 'W_after': list(ctx.host(by_role(ctx, layer, 'W')).shape),
            'b': None if bias is None else list(ctx.host(bias).shape), 'y': list(ctx.host(y).shape),
            'n_params': len(list(layer.params()))}
