"""Autograd behaviour through the public API: diamonds, reuse, no_grad, higher order, layers,
and a snapshot of the computational graph with every variable's gradient (the trajectory).
"""
import numpy as np

from dezero_grader.contracts import expressions
from dezero_grader.contracts.expressions import expression
from dezero_grader.sandboxed.probes.context import upstream_gradient
from dezero_grader.sandboxed.probes.registry import scenario
from dezero_grader.sandboxed.probes.scenarios.fixtures import by_role


def _deref(ref, Variable):
    return ref if isinstance(ref, Variable) else ref()


NAME_CHARS = 40      # a learner's Variable.name is cut to this
HEAD = 4             # elements of a value shown in its summary


def value_summary(a):
    """A few numbers that show what an array holds without shipping it: its first elements,
    minimum, maximum and mean (None for an array that is not numeric or is empty)."""
    a = np.asarray(a)
    if a.dtype.kind not in 'biuf' or a.size == 0:
        return None
    flat = a.reshape(-1).astype(np.float64)
    with np.errstate(all='ignore'):
        return {'head': [_short(v) for v in flat[:HEAD]], 'size': int(a.size),
                'min': _short(np.min(flat)), 'max': _short(np.max(flat)),
                'mean': _short(np.mean(flat))}


def _short(x):
    """Six significant digits: enough to see a value, small in the evidence."""
    return float('{:.6g}'.format(float(x)))


def _labels(variables, inputs, output, V):
    """A label per variable: the learner's `name` where set, else one by its role: x0, x1, ...
    for the expression's inputs (in argument order), y for its output, h0, h1, ... for what
    functions computed in between and c0, c1, ... for constants the expression made."""
    position = {id(x): i for i, x in enumerate(inputs)}
    labels, hidden, const = [], [], []
    for v in variables:
        name = getattr(v, 'name', None)
        if isinstance(name, str) and name:
            labels.append(name[:NAME_CHARS])
        elif v is output:
            labels.append('y')
        elif id(v) in position:
            labels.append('x{}'.format(position[id(v)]))
        else:
            (hidden if getattr(v, 'creator', None) is not None else const).append(len(labels))
            labels.append(None)
    # `variables` run from the output back to the inputs: number the others in the order they
    # were computed (by their creator's generation), so that h0 is the first
    def generation(i):
        g = getattr(getattr(variables[i], 'creator', None), 'generation', 0)
        return g if isinstance(g, int) else 0
    hidden.sort(key=lambda i: (generation(i), -i))
    for prefix, found in (('h', hidden), ('c', const[::-1])):
        for k, i in enumerate(found):
            labels[i] = '{}{}'.format(prefix, k)
    return labels


def snapshot(ctx, output, inputs=()):
    """The graph behind `output` as nodes (functions) and variables, in a deterministic order:
    functions by decreasing generation, ties by discovery order. Only public attributes
    (`creator`, `inputs`, `outputs`, `generation`, `name`, `data`, `grad`) are read. Each
    variable gets a label (see `_labels`; `inputs` are the expression's arguments) and a short
    summary of its value and of its gradient."""
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
    for v, label in zip(variables, _labels(variables, inputs, output, V)):
        info = ctx.describe(v)
        name = getattr(v, 'name', None)
        info['name'] = name[:NAME_CHARS] if isinstance(name, str) else None
        info['label'] = label
        g = getattr(v, 'grad', None)
        info['grad'] = None if g is None else ctx.host(g)
        info['data_summary'] = _summary_of(ctx, v)
        info['grad_summary'] = None if g is None else _summary_of(ctx, g)
        var_info.append(info)
    return {'nodes': nodes, 'variables': var_info}


def _summary_of(ctx, v):
    try:
        return value_summary(ctx.host(v))
    except (TypeError, ValueError):   # not an array: the shape and type already say so
        return None


# -- expressions (`expr`, registered in `dezero_grader.contracts.expressions`) --------------------
@expression('graph.trace', 'diamond')
def _diamond(ctx, F, x):
    a = x ** 2
    return a ** 2 + a ** 2


@expression('graph.trace', 'deep_diamond')
def _deep_diamond(ctx, F, x):
    a = x * x
    b = a + x
    c = a * b
    d = b * c + a
    return d * x


@expression('graph.trace', 'tanh_chain')
def _tanh_chain(ctx, F, x):
    return F.sum(F.tanh(F.exp(x * 0.5)) * x)


@expression('graph.trace', 'mlp_loss')
def _mlp_loss(ctx, F, x, W1, b1, W2, b2, t):
    h = F.sigmoid(F.linear(x, W1, b1))
    return F.softmax_cross_entropy(F.linear(h, W2, b2), t)


@expression('graph.trace', 'broadcast_ops')
def _broadcast_ops(ctx, F, a, b):
    return F.sum((a + b) * b - a / (b * b + 1.0))


@expression('graph.trace', 'reshape_transpose_sum')
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
    y = expressions.body('graph.trace', expr)(ctx, F, *xs)
    host_y = ctx.host(y)
    y.grad = ctx.api.Variable(ctx.to_device(upstream_gradient(ctx.seed, host_y.shape, host_y.dtype)))
    y.backward(retain_grad=True)
    return {'y': ctx.host(y), 'grads': [None if i in labels or x.grad is None
                                        else ctx.host(x.grad) for i, x in enumerate(xs)],
            'graph': snapshot(ctx, y, xs)}


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
            derivs.append(ctx.scalar(gx))
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
