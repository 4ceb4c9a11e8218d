"""Evaluate one differentiable function of the submission: forward, backward, perturbed points.

The trusted process sends the inputs, the upstream gradient and the perturbed input sets; this
scenario only calls the learner's function and reports what came out. The numerical
derivatives, the comparisons with the reference and every judgement happen in the trusted
process, so nothing the submission monkeypatches here can change a verdict.
"""
import numpy as np

from dezero_grader.sandboxed.probes.context import upstream_gradient
from dezero_grader.sandboxed.probes.registry import scenario


def _slices(spec):
    """JSON index spec → a Python index: ints, [start, stop, step] slices, lists, Ellipsis."""
    def one(item):
        if isinstance(item, dict):
            if 'slice' in item:
                return slice(*item['slice'])
            if 'array' in item:
                return np.array(item['array'])
            if item.get('ellipsis'):
                return Ellipsis
        return item
    if isinstance(spec, list):
        return tuple(one(i) for i in spec)
    return one(spec)


def _functions(api, name):
    return api.get('functions.' + name)


# name -> fn(api, *args, **kwargs); the arguments come in the order the assignment lists them.
OPERATORS = {
    'add': lambda a, b: a + b, 'radd': lambda a, b: b + a,
    'sub': lambda a, b: a - b, 'rsub': lambda a, b: b - a,
    'mul': lambda a, b: a * b, 'rmul': lambda a, b: b * a,
    'div': lambda a, b: a / b, 'rdiv': lambda a, b: b / a,
    'neg': lambda a: -a, 'pow': lambda a, c: a ** c,
    'matmul_method': lambda a, b: a.matmul(b),
}


def resolve(api, name):
    kind, _, rest = name.partition('.')
    if kind == 'op':
        op = OPERATORS[rest]
        return lambda *xs, **kw: op(*xs, **kw)
    if kind == 'F':
        fn = _functions(api, rest)
        if rest == 'get_item':
            return lambda x, slices: fn(x, _slices(slices))
        return fn
    if kind == 'method':
        return lambda x, *args, **kw: getattr(x, rest)(*args, **kw)
    raise LookupError('unknown function name {!r}'.format(name))


@scenario('fn.eval')
def fn_eval(ctx, fn, args, wrt, kwargs=None, gy=False, points=(), zero_gy=False, reseed=None):
    """Forward at `args`; with `gy`, backward with the probe's random upstream gradient; and
    forward at each of `points` (each a full argument list). `wrt` lists the argument positions
    given as Variables."""
    kwargs = kwargs or {}
    f = resolve(ctx.api, fn)

    def call(values):
        if reseed is not None:
            np.random.seed(reseed)
            if ctx.xp_device is not None:
                ctx.xp_device.random.seed(reseed)
        inputs = []
        for i, a in enumerate(values):
            if isinstance(a, np.ndarray):
                a = ctx.to_device(a.copy())  # a fresh copy: in-place bugs must not leak
                inputs.append(ctx.api.Variable(a) if i in wrt else a)
            else:
                inputs.append(a)
        return inputs, f(*inputs, **kwargs)

    inputs, y = call(args)
    out = {'y': ctx.export(y), 'y_info': ctx.describe(y),
           'output_is_variable': isinstance(y, ctx.api.Variable)}
    if gy:
        host_y = ctx.host(y)
        y.grad = ctx.api.Variable(ctx.to_device(
            upstream_gradient(ctx.seed, host_y.shape, host_y.dtype)))
        y.backward()
        out['grads'] = [None if inputs[i].grad is None else ctx.export(inputs[i].grad)
                         for i in wrt]
        out['grad_info'] = [ctx.describe(inputs[i].grad) for i in wrt]
    out['inputs_after'] = [ctx.host(inputs[i]) for i in wrt]
    out['points'] = [ctx.host(call(p)[1]) for p in points]
    if zero_gy and gy:
        inputs, y = call(args)
        y.grad = ctx.api.Variable(ctx.to_device(np.zeros(ctx.host(y).shape, ctx.host(y).dtype)))
        y.backward()
        out['zero_grads'] = [None if inputs[i].grad is None else ctx.host(inputs[i].grad)
                             for i in wrt]
    return out
