"""Convolutions (step 57) through the public API: im2col/col2im, conv2d and pooling with tuple
arguments, the `Conv2d` layer (lazy channels, initial scale), a LeNet-shaped chain, and a small
CNN moved to the device mid-training.

Inputs and weights come from the probe's seed (weights set by role, float64), so the reference
computes the same numbers; the initial scale is the one thing reported as a statistic, because a
learner's random initial values are their own.
"""
import numpy as np

from dezero_grader.sandboxed.probes.context import upstream_gradient
from dezero_grader.sandboxed.probes.registry import scenario
from dezero_grader.sandboxed.probes.scenarios.fixtures import book_class, by_role, phase, set_roles, sorted_shapes


def _arg(v):
    """JSON lists → the tuples the book's `pair()` accepts."""
    return tuple(v) if isinstance(v, list) else v


def _pair(v):
    v = _arg(v)
    return v if isinstance(v, tuple) else (v, v)


def _out(size, k, s, p):
    return (size + 2 * p - k) // s + 1


@scenario('conv.im2col')
def im2col(ctx, cases):
    """im2col of seeded images, and col2im of seeded column arrays, for each case
    {shape, kernel, stride, pad, to_matrix, arange?}."""
    F = ctx.api.get('functions')
    res = []
    for i, case in enumerate(cases):
        shape = tuple(case['shape'])
        k, s, p = _arg(case['kernel']), _arg(case.get('stride', 1)), _arg(case.get('pad', 0))
        to_matrix = case.get('to_matrix', True)
        if case.get('arange'):
            x = np.arange(int(np.prod(shape)), dtype=np.float64).reshape(shape)
        else:
            x = ctx.rng(100 + i).standard_normal(shape)
        (KH, KW), (SH, SW), (PH, PW) = _pair(k), _pair(s), _pair(p)
        N, C, H, W = shape
        OH, OW = _out(H, KH, SH, PH), _out(W, KW, SW, PW)
        col_shape = (N * OH * OW, C * KH * KW) if to_matrix else (N, C, KH, KW, OH, OW)
        col = ctx.rng(200 + i).standard_normal(col_shape)
        out = {}
        phase(out, 'im2col', lambda: ctx.export(F.im2col(ctx.var(x), k, s, p, to_matrix)))
        phase(out, 'col2im', lambda: ctx.export(F.col2im(ctx.var(col), shape, k, s, p,
                                                         to_matrix)))
        res.append(out)
    return res


@scenario('conv.tuple_args')
def tuple_args(ctx):
    """conv2d with a rectangular kernel and (stride, pad) tuples, and max pooling with a
    rectangular window: forward and backward with the probe's upstream gradient."""
    F = ctx.api.get('functions')
    V = ctx.api.Variable
    rng = ctx.rng(7)
    res = {}

    def conv():
        x = ctx.var(rng.standard_normal((2, 2, 5, 6)))
        W = ctx.var(0.5 * rng.standard_normal((3, 2, 2, 3)))
        b = ctx.var(rng.standard_normal(3))
        y = F.conv2d(x, W, b, stride=(2, 1), pad=(1, 0))
        host_y = ctx.host(y)
        y.grad = V(ctx.to_device(upstream_gradient(ctx.seed, host_y.shape, host_y.dtype)))
        y.backward()
        return {'y': ctx.export(y), 'gx': ctx.export(x.grad), 'gW': ctx.export(W.grad),
                'gb': ctx.export(b.grad)}
    phase(res, 'conv2d', conv)

    def pool():
        n = 2 * 3 * 6 * 7
        values = ctx.rng(8).permutation(n).astype(np.float64) * 0.37 - n * 0.18
        x = ctx.var(values.reshape(2, 3, 6, 7))
        y = F.pooling(x, (2, 3), stride=(2, 1))
        host_y = ctx.host(y)
        y.grad = V(ctx.to_device(upstream_gradient(ctx.seed + 1, host_y.shape, host_y.dtype)))
        y.backward()
        return {'y': ctx.export(y), 'gx': ctx.export(x.grad)}
    phase(res, 'pooling', pool)
    return res


@scenario('conv.layer')
def layer(ctx, out_channels, kernel, stride, pad, shape):
    """A Conv2d layer with lazy input channels: W's shape after the first call, b's, the
    output's; with weights set from the seed, the output's values; nobias."""
    Conv2d = ctx.api.get('layers.Conv2d')
    k = _arg(kernel)
    KH, KW = _pair(k)
    C = shape[1]
    x = ctx.rng(9).standard_normal(tuple(shape))
    res = {}

    def lazy():
        conv = Conv2d(out_channels, k, stride=stride, pad=pad)
        before = by_role(ctx, conv, 'W').data is None
        y = conv(ctx.to_device(x))
        found = {'W_none_before_call': before, 'W': list(ctx.host(by_role(ctx, conv, 'W')).shape),
                 'b': list(ctx.host(by_role(ctx, conv, 'b')).shape), 'y': list(ctx.host(y).shape),
                 'n_params': len(list(conv.params()))}
        set_roles(ctx, conv, {'W': (out_channels, C, KH, KW), 'b': (out_channels,)})
        found['value'] = ctx.export(conv(ctx.to_device(x)))
        return found
    phase(res, 'lazy', lazy)

    def nobias():
        conv = Conv2d(out_channels, k, stride=stride, pad=pad, nobias=True)
        conv(ctx.to_device(x))
        set_roles(ctx, conv, {'W': (out_channels, C, KH, KW)})
        return {'n_params': len(list(conv.params())),
                'value': ctx.export(conv(ctx.to_device(x)))}
    phase(res, 'nobias', nobias)

    def given_channels():
        conv = Conv2d(out_channels, k, stride=stride, pad=pad, in_channels=C)
        y = conv(ctx.to_device(x))
        return {'W': list(ctx.host(by_role(ctx, conv, 'W')).shape), 'y': list(ctx.host(y).shape)}
    phase(res, 'in_channels_given', given_channels)
    return res


@scenario('conv.init_scale')
def init_scale(ctx, cases):
    """The learner's initial weights of Conv2d layers with different fan-ins: their standard
    deviation against sqrt(1 / (C·KH·KW)), and their mean in standard errors."""
    Conv2d = ctx.api.get('layers.Conv2d')
    np.random.seed(ctx.seed % (2 ** 32))
    res = []
    for case in cases:
        k = _arg(case['kernel'])
        KH, KW = _pair(k)
        C = case['in_channels']
        conv = Conv2d(case['out_channels'], k)
        x = ctx.to_device(np.zeros((1, C, KH + 2, KW + 2)))

        def stats(conv=conv, x=x, C=C, KH=KH, KW=KW):
            conv(x)
            # the weights as they are: their statistics are the trusted side's to compute
            W = np.asarray(ctx.host(by_role(ctx, conv, 'W')))
            return {'shape': list(W.shape), 'fan_in': C * KH * KW, 'values': W}
        out = {}
        phase(out, 'W', stats)
        res.append(out)
    return res


@scenario('conv.lenet')
def lenet(ctx, batch):
    """A LeNet-shaped network built from the learner's layers and functions: the shape after
    every stage (32 → 28 → 14 → 10 → 5, 16·5·5 = 400 features), and gradients of every
    parameter after a backward pass."""
    Layer = book_class(ctx, 'Layer')
    L = ctx.api.get('layers')
    F = ctx.api.get('functions')
    shapes = {}

    class LeNet(Layer):
        def __init__(self):
            super().__init__()
            self.conv1 = L.Conv2d(6, 5)
            self.conv2 = L.Conv2d(16, 5)
            self.fc1 = L.Linear(120)
            self.fc2 = L.Linear(84)
            self.fc3 = L.Linear(10)

        def forward(self, x):
            def seen(name, v):
                shapes[name] = list(ctx.host(v).shape)
                return v
            x = seen('conv1', F.relu(self.conv1(x)))
            x = seen('pool1', F.pooling(x, 2, 2))
            x = seen('conv2', F.relu(self.conv2(x)))
            x = seen('pool2', F.pooling(x, 2, 2))
            x = seen('flat', F.reshape(x, (x.shape[0], -1)))
            x = F.relu(self.fc1(x))
            x = F.relu(self.fc2(x))
            return seen('out', self.fc3(x))

    np.random.seed(ctx.seed % (2 ** 32))
    model = LeNet()
    x = ctx.to_device(ctx.rng(10).standard_normal((batch, 1, 32, 32)))
    res = {}

    def run():
        y = model(x)
        F.sum(y * y).backward()
        params = list(model.params())
        # each parameter's shape beside its gradient's (None: no gradient), as they are
        return {'params': sorted_shapes(ctx, model),
                'shape_pairs': [[list(ctx.host(p).shape),
                                 None if p.grad is None else list(ctx.host(p.grad).shape)]
                                for p in params]}
    phase(res, 'run', run)
    res['shapes'] = shapes
    return res


@scenario('conv.training_follows')
def training_follows(ctx, steps_before, steps_after):
    """A small CNN trained with MomentumSGD on the host, moved to the device mid-training and
    trained on, against the same run kept on the host: same losses, parameters on the device."""
    Layer = book_class(ctx, 'Layer')
    L = ctx.api.get('layers')
    F = ctx.api.get('functions')
    MomentumSGD = ctx.api.get('optimizers.MomentumSGD')
    rng = ctx.rng(11)
    x = rng.standard_normal((6, 2, 6, 6))
    t = rng.integers(0, 3, size=6)

    class Net(Layer):
        def __init__(self):
            super().__init__()
            self.conv = L.Conv2d(4, 3, pad=1)
            self.fc = L.Linear(3)

        def forward(self, x):
            h = F.pooling(F.relu(self.conv(x)), 2, 2)
            return self.fc(F.reshape(h, (h.shape[0], -1)))

    def run(move):
        model = Net()
        model(x)
        set_roles(ctx, model, {'conv.W': (4, 2, 3, 3), 'conv.b': (4,), 'fc.W': (36, 3),
                               'fc.b': (3,)}, device='cpu')
        opt = MomentumSGD(0.1).setup(model)
        xs, ts = x, t
        losses = []
        for i in range(steps_before + steps_after):
            if move and i == steps_before:
                model.to_gpu()
                xs, ts = ctx.on_device(x, 'gpu'), ctx.on_device(t, 'gpu')
            loss = F.softmax_cross_entropy(model(xs), ts)
            model.cleargrads()
            loss.backward()
            opt.update()
            losses.append(ctx.scalar(loss))
        return {'losses': losses, 'params': sorted(ctx.device_of(p.data)
                                                   for p in model.params())}
    res = {}
    phase(res, 'host', lambda: run(False))
    phase(res, 'moved', lambda: run(True))
    return res

