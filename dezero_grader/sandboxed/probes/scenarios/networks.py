"""Tensors, shapes, regression, layers, models and optimizers (steps 37-46), through the public
API, as the people who build models from layers rely on them.

Weights are set from the seed before anything is compared (`set_params`, i.e.
`fixtures.set_weights`: float64, by role and shape), so the learner's random initialisation, its
default dtype, its parameters' names and the order of `params()` never matter; what comes back is sorted by
shape or by attribute path. Composite expressions for `graph.trajectory` are registered here
too.
"""
import numpy as np

from dezero_grader.contracts.expressions import expression
from dezero_grader.sandboxed.probes.registry import scenario
from dezero_grader.sandboxed.probes.scenarios.fixtures import book_class, set_weights
from dezero_grader.sandboxed.probes.scenarios.fn_before_core import export
from dezero_grader.sandboxed.probes.scenarios.single_file import phase

_array = np.array


# -- expressions for graph.trajectory -------------------------------------------------------------
@expression('graph.trace', 'tensor_ops')  # step 37: element-wise functions on (2, 3) tensors
def _tensor_ops(ctx, F, x, y):
    return F.sin(x) * y + F.tanh(x) * x - y / (x * x + 1.0)


@expression('graph.trace', 'sum_axes')    # step 39: tuple axes, keepdims, negative axes
def _sum_axes(ctx, F, x):
    # no broadcasting arithmetic here: step 40's faults must not reach step 39's checks
    a = F.sum(x, axis=(0, 2), keepdims=True)
    b = F.sum(x, axis=-1)
    return F.sum(a ** 2) + F.sum(b ** 3)


@expression('graph.trace', 'mlp_mse')     # step 43: a two-layer network and a squared error
def _mlp_mse(ctx, F, x, W1, b1, W2, b2, t):
    h = F.sigmoid(F.linear(x, W1, b1))
    return F.mean_squared_error(F.linear(h, W2, b2), t)


# -- helpers --------------------------------------------------------------------------------------
def set_params(ctx, layer, salt, scale=0.3):
    """Deterministic float64 weights from the seed, keyed by each parameter's role and shape,
    whatever the learner's initialisation, dtype, names and params() order (`set_weights`)."""
    set_weights(ctx, layer, salt=salt, scale=scale)


def by_shape(ctx, values):
    """[shape, array] pairs sorted by shape then values: an order every implementation gives."""
    pairs = [(list(ctx.host(v).shape), ctx.host(v).copy()) for v in values]
    pairs.sort(key=lambda p: (p[0], p[1].ravel().tolist()))
    return [[shape, ctx.export(a)] for shape, a in pairs]


def param_paths(layer, Layer, Parameter, prefix=''):
    """{path: parameter} for the Parameters reachable through a layer's attributes."""
    found = {}
    for name, value in sorted(vars(layer).items()):
        if isinstance(value, Parameter):
            found[prefix + name] = value
        elif isinstance(value, Layer):
            found.update(param_paths(value, Layer, Parameter, prefix + name + '/'))
    return found


# -- step 37 --------------------------------------------------------------------------------------
@scenario('tensor.seed')
def tensor_seed(ctx, shape):
    """backward() on a tensor output seeds a gradient of the output's shape."""
    V = ctx.api.Variable
    F = ctx.api.get('functions')
    a = ctx.rng(30).standard_normal(shape)
    x = V(a.copy())
    y = F.sin(x)
    y.backward(retain_grad=True)
    return {'seed_shape': list(ctx.host(y.grad).shape), 'grad_shape': list(ctx.host(x.grad).shape),
            'grad': export(ctx, x.grad)}


# -- step 38 --------------------------------------------------------------------------------------
@scenario('tensor.shape_methods')
def shape_methods(ctx):
    """Variable.reshape in all the book's spellings, .transpose() and .T (what the book's step-38
    text writes): the result's shape and values, and the gradient's shape after a backward."""
    rng = ctx.rng(31)
    a2, a3 = rng.standard_normal((2, 3)), rng.standard_normal((2, 3, 4))
    return _shape_cases(ctx, {
        'reshape_ints': (a2, lambda x: x.reshape(3, 2)),
        'reshape_one_int': (a2, lambda x: x.reshape(6)),
        'reshape_tuple': (a2, lambda x: x.reshape((6,))),
        'reshape_list': (a2, lambda x: x.reshape([3, 2])),
        'transpose_none': (a3, lambda x: x.transpose()),
        'T': (a2, lambda x: x.T),
    })


@scenario('tensor.transpose_axes')
def transpose_axes(ctx):
    """Variable.transpose with axes, as ints and as one tuple (the book's dezero/core.py; its
    step-38 text has transpose() alone): shapes, values, the gradient's shape."""
    a3 = ctx.rng(31).standard_normal((2, 3, 4))
    return _shape_cases(ctx, {
        'transpose_ints': (a3, lambda x: x.transpose(1, 2, 0)),
        'transpose_tuple': (a3, lambda x: x.transpose((2, 0, 1))),
    })


def _shape_cases(ctx, cases):
    V = ctx.api.Variable
    res = {}
    for name, (a, fn) in cases.items():
        def run(a=a, fn=fn):
            x = V(a.copy())
            y = fn(x)
            y.grad = V(np.ones(ctx.host(y).shape))
            y.backward()
            return {'shape': list(ctx.host(y).shape), 'value': export(ctx, y),
                    'grad_shape': list(ctx.host(x.grad).shape)}
        phase(res, name, run)
    return res


# -- step 42 --------------------------------------------------------------------------------------
@scenario('train.linear_regression')
def linear_regression(ctx, n, iters, lr):
    """Fit y = 5 + 2x + noise with matmul and mean_squared_error, updating `.data` by hand."""
    V = ctx.api.Variable
    F = ctx.api.get('functions')
    rng = ctx.rng(32)
    x = rng.uniform(0, 1, size=(n, 1))
    y = 5 + 2 * x + rng.uniform(0, 1, size=(n, 1))
    W, b = V(np.zeros((1, 1))), V(np.zeros(1))
    losses = []
    for _ in range(iters):
        loss = F.mean_squared_error(y, F.matmul(x, W) + b)
        W.cleargrad()
        b.cleargrad()
        loss.backward()
        W.data -= lr * W.grad.data
        b.data -= lr * b.grad.data
        losses.append(ctx.scalar(loss))
    return {'W': export(ctx, W), 'b': export(ctx, b), 'losses': losses[::10] + losses[-1:]}


# -- step 43 --------------------------------------------------------------------------------------
@scenario('train.nn_fit')
def nn_fit(ctx, n, hidden, iters, lr):
    """A 1-hidden-layer network (linear, sigmoid, linear) fitted to a noisy sine with plain
    gradient descent on Variables: the loss trajectory and the final weights."""
    V = ctx.api.Variable
    F = ctx.api.get('functions')
    rng = ctx.rng(33)
    x = rng.uniform(0, 1, size=(n, 1))
    y = np.sin(2 * np.pi * x) + rng.uniform(0, 1, size=(n, 1))
    W1, b1 = V(0.5 * rng.standard_normal((1, hidden))), V(np.zeros(hidden))
    W2, b2 = V(0.5 * rng.standard_normal((hidden, 1))), V(np.zeros(1))
    params = (W1, b1, W2, b2)
    losses = []
    for _ in range(iters):
        h = F.sigmoid(F.linear(x, W1, b1))
        loss = F.mean_squared_error(y, F.linear(h, W2, b2))
        for p in params:
            p.cleargrad()
        loss.backward()
        for p in params:
            p.data -= lr * p.grad.data
        losses.append(ctx.scalar(loss))
    return {'losses': losses[::5] + losses[-1:], 'params': [export(ctx, p) for p in params]}


# -- step 44 --------------------------------------------------------------------------------------
@scenario('layer.registration')
def registration(ctx):
    """A custom layer's Parameters are registered by assignment (plain Variables, arrays and
    None are not parameters); Linear has W and b (W only with nobias); every parameter is a
    Variable whose metadata agrees with its data."""
    V = ctx.api.Variable
    Layer, Parameter = book_class(ctx, 'Layer'), book_class(ctx, 'Parameter')
    Linear = ctx.api.get('layers.Linear')

    class Custom(Layer):
        def __init__(self):
            super().__init__()
            self.p1 = Parameter(np.ones((2, 3)), name='p1')
            self.p2 = Parameter(np.zeros(4), name='p2')
            self.v = V(np.ones(2))
            self.a = np.ones(3)
            self.n = None

        def forward(self, x):
            return x * self.p2

    res = {}

    def custom():
        layer = Custom()
        params = list(layer.params())
        # identities as they are: the trusted side compares them
        return {'count': len(params), 'names': sorted(str(p.name) for p in params),
                'param_ids': [id(p) for p in params], 'attribute_ids': [id(layer.p1), id(layer.p2)]}
    phase(res, 'custom', custom)
    phase(res, 'linear', lambda: len(list(Linear(3, in_size=2).params())))
    phase(res, 'linear_nobias', lambda: len(list(Linear(3, nobias=True, in_size=2).params())))

    def metadata():
        layer = Linear(3, in_size=5)
        found, expected = [], []
        for p in layer.params():
            d = ctx.host(p)
            found.append([list(p.shape), int(p.ndim), int(p.size), str(p.dtype), len(p),
                          isinstance(p, V)])
            expected.append([list(d.shape), d.ndim, int(d.size), str(d.dtype), len(d), True])
        return {'found': sorted(found), 'expected': sorted(expected)}
    phase(res, 'metadata', metadata)
    return res


@scenario('layer.cleargrads')
def cleargrads(ctx, in_size, out_size, batch):
    """Gradients accumulate over backward passes until cleargrads(): a second backward without
    it doubles them, with it they are those of one pass; after cleargrads() none is left."""
    Linear = ctx.api.get('layers.Linear')
    F = ctx.api.get('functions')
    layer = Linear(out_size, in_size=in_size)
    set_params(ctx, layer, salt=40)
    x = ctx.rng(41).standard_normal((batch, in_size))

    def grads():
        return by_shape(ctx, [p.grad for p in layer.params()])

    layer.cleargrads()
    F.sum(layer(x) * layer(x)).backward()
    single = grads()
    F.sum(layer(x) * layer(x)).backward()
    accumulated = grads()
    layer.cleargrads()
    none_left = [p.grad is None for p in layer.params()]   # per parameter, as it is
    F.sum(layer(x) * layer(x)).backward()
    cleared = grads()
    twice = [[shape, ctx.export(2 * g.data)] for shape, g in single]
    return {'single': single, 'accumulated': accumulated, 'twice_single': twice,
            'cleared': cleared, 'none_left': none_left}


@scenario('layer.linear')
def linear(ctx, in_size, out_size, batch):
    """A Linear layer (lazy input size) with weights set from the seed: the output and the
    gradients of W and b."""
    Linear = ctx.api.get('layers.Linear')
    F = ctx.api.get('functions')
    x = ctx.rng(42).standard_normal((batch, in_size))
    layer = Linear(out_size)
    layer(x)
    set_params(ctx, layer, salt=43)
    layer.cleargrads()
    y = layer(x)
    F.sum(y * y).backward()
    return {'y': export(ctx, y), 'params': by_shape(ctx, layer.params()),
            'grads': by_shape(ctx, [p.grad for p in layer.params()])}


# -- step 45 --------------------------------------------------------------------------------------
@scenario('layer.nested')
def nested(ctx, in_size, hidden, out, batch):
    """Layers inside layers: params() yields every Parameter reachable through attributes, each
    once (found by path, e.g. block/fc/W); cleargrads() clears the nested ones too."""
    Layer, Parameter = book_class(ctx, 'Layer'), book_class(ctx, 'Parameter')
    Linear = ctx.api.get('layers.Linear')
    F = ctx.api.get('functions')

    class Inner(Layer):
        def __init__(self):
            super().__init__()
            self.fc = Linear(hidden)
            self.scale = Parameter(np.ones(1), name='scale')

        def forward(self, x):
            return F.sigmoid(self.fc(x)) * self.scale

    class Outer(Layer):
        def __init__(self):
            super().__init__()
            self.block = Inner()
            self.head = Linear(out)

        def forward(self, x):
            return self.head(self.block(x))

    model = Outer()
    x = ctx.rng(44).standard_normal((batch, in_size))
    res = {}

    def params():
        model(x)
        paths = param_paths(model, Layer, Parameter)
        by_id = {id(p): path for path, p in paths.items()}
        found = [by_id.get(id(p), 'not an attribute') for p in model.params()]
        return {'paths': sorted(paths), 'found': sorted(found)}
    phase(res, 'params', params)

    def clear():
        F.sum(model(x)).backward()
        # per parameter, as it is: the trusted side decides for them all
        had = [p.grad is not None for p in param_paths(model, Layer, Parameter).values()]
        model.cleargrads()
        return {'had_grads': had,
                'cleared': [p.grad is None for p in param_paths(model, Layer, Parameter).values()]}
    phase(res, 'cleargrads', clear)
    return res


@scenario('layer.tied')
def tied(ctx, size, batch):
    """One Linear layer used twice in a model (tied weights): it is one set of parameters, and
    its gradient holds both uses' contributions."""
    Layer = book_class(ctx, 'Layer')
    Linear = ctx.api.get('layers.Linear')
    F = ctx.api.get('functions')

    class Tied(Layer):
        def __init__(self):
            super().__init__()
            self.shared = Linear(size, in_size=size)
            self.head = Linear(1, in_size=size)

        def forward(self, x):
            return self.head(F.sigmoid(self.shared(F.sigmoid(self.shared(x)))))

    model = Tied()
    set_params(ctx, model, salt=45)
    x = ctx.rng(46).standard_normal((batch, size))
    y = model(x)
    F.sum(y).backward()
    return {'count': len(list(model.params())), 'y': export(ctx, y),
            'grads': by_shape(ctx, [p.grad for p in model.params()])}


@scenario('model.mlp')
def mlp(ctx, sizes, in_size, batch, activation=None):
    """MLP(sizes): one Linear per size, the activation between layers (not after the last);
    parameter shapes, and the output for weights set from the seed."""
    MLP = ctx.api.get('models.MLP')
    kwargs = {} if activation is None else {'activation': ctx.api.get('functions.' + activation)}
    model = MLP(tuple(sizes), **kwargs)
    x = ctx.rng(47).standard_normal((batch, in_size))
    res = {}

    def run():
        model(x)
        shapes = sorted(list(ctx.host(p).shape) for p in model.params())
        set_params(ctx, model, salt=48)
        return {'shapes': shapes, 'y': export(ctx, model(x))}
    phase(res, 'forward', run)
    return res


# -- step 46 --------------------------------------------------------------------------------------
@scenario('opt.optimizer')
def optimizer(ctx, name, steps, kwargs=None):
    """`steps` updates of an MLP with optimizers.<name>, from weights set from the seed, on a
    squared error: the parameters after each update."""
    MLP = ctx.api.get('models.MLP')
    F = ctx.api.get('functions')
    opt = ctx.api.get('optimizers.' + name)(**(kwargs or {}))
    rng = ctx.rng(49)
    # one output column: the book's squared error divides by N, a mean by N·C; equal here
    x, t = rng.standard_normal((10, 4)), rng.standard_normal((10, 1))
    model = MLP((6, 1))
    model(x)
    set_params(ctx, model, salt=50)
    opt.setup(model)
    history = []
    for _ in range(steps):
        loss = F.mean_squared_error(model(x), t)
        model.cleargrads()
        loss.backward()
        opt.update()
        history.append(by_shape(ctx, model.params()))
    return {'history': history}


@scenario('opt.momentum_book')
def momentum_book(ctx):
    """The book's check of MomentumSGD: W = 1, a constant gradient of 1, lr 0.1, two updates
    give 0.71."""
    Layer, Parameter = book_class(ctx, 'Layer'), book_class(ctx, 'Parameter')
    V = ctx.api.Variable
    opt_cls = ctx.api.get('optimizers.MomentumSGD')

    class One(Layer):
        def __init__(self):
            super().__init__()
            self.W = Parameter(_array([1.0]), name='W')

    layer = One()
    opt = opt_cls(lr=0.1).setup(layer)
    values = []
    for _ in range(2):
        layer.W.grad = V(_array([1.0]))
        opt.update()
        values.append(export(ctx, layer.W))
    return {'after': values}


@scenario('opt.hooks')
def hooks(ctx, lr):
    """setup() returns the optimizer; update() skips parameters without a gradient and calls
    every hook once with the parameters it updates."""
    Layer, Parameter = book_class(ctx, 'Layer'), book_class(ctx, 'Parameter')
    V = ctx.api.Variable
    SGD = ctx.api.get('optimizers.SGD')
    g = ctx.rng(51).standard_normal(3)

    class Two(Layer):
        def __init__(self):
            super().__init__()
            self.a = Parameter(np.ones(3), name='a')
            self.b = Parameter(np.ones(2), name='b')

    layer = Two()
    opt = SGD(lr)
    res = {'setup_returns_optimizer': opt.setup(layer) is opt}
    calls = []
    opt.add_hook(lambda params: calls.append(sorted(str(p.name) for p in params)))

    def update():
        layer.a.grad = V(g.copy())
        opt.update()
        return {'a': export(ctx, layer.a), 'a_expected': 1.0 - lr * g,
                'b': export(ctx, layer.b), 'b_expected': np.ones(2)}
    phase(res, 'update', update)
    res['hook_calls'] = calls
    return res
