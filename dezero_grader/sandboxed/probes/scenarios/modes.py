"""Train/test mode and dropout (step 54): `Config.train`, `test_mode()`, `using_config` and
`F.dropout`, through the public API.

Dropout is random, so nothing here compares masks with the reference's: the scenarios report the
outputs (and gradients) the learner's code produced for inputs the trusted process chose, and
the checks judge them statistically or by relations that hold for every mask (a kept unit is
scaled by 1/(1 - ratio); the gradient is the forward's mask times the upstream gradient). Every
scenario puts `Config.train` back as it found it, so one broken context manager does not leak
into the probes that follow.
"""
import numpy as np

from dezero_grader.contracts.modes import dropout_inputs, ratio_key
from dezero_grader.sandboxed.probes.context import upstream_gradient
from dezero_grader.sandboxed.probes.registry import scenario
from dezero_grader.sandboxed.probes.scenarios.fixtures import book_class, phase


class _Flag:
    """Read and restore `Config.train` (missing → None)."""

    def __init__(self, ctx):
        self.Config = ctx.api.get('Config', None)
        self.saved = self.read()

    def read(self):
        return None if self.Config is None else getattr(self.Config, 'train', None)

    def restore(self):
        if self.Config is not None and self.saved is not None:
            self.Config.train = self.saved


def _seed_all(ctx, seed):
    np.random.seed(seed % (2 ** 32))
    if ctx.xp_device is not None:
        ctx.xp_device.random.seed(seed % (2 ** 32))


@scenario('modes.dropout_sample')
def dropout_sample(ctx, n, ratios):
    """Training-mode dropout of `dropout_inputs(n)` once per ratio: the outputs, for the
    statistical check."""
    F = ctx.api.get('functions')
    x = dropout_inputs(n)
    flag = _Flag(ctx)
    _seed_all(ctx, ctx.seed)
    res = {'train_flag': flag.read()}
    try:
        for r in ratios:
            phase(res, ratio_key(r),
                  lambda r=r: ctx.export(F.dropout(ctx.var(x.copy()), r)))
    finally:
        flag.restore()
    return res


@scenario('modes.dropout_test')
def dropout_test(ctx, shape, ratios):
    """Inside test_mode() dropout is the identity (on Variables and on plain arrays); in
    training, a ratio of 0 keeps everything."""
    F = ctx.api.get('functions')
    test_mode = ctx.api.get('test_mode')
    x = ctx.rng(1).uniform(0.5, 1.5, size=shape)
    flag = _Flag(ctx)
    res = {'x': x}
    try:
        def inside():
            with test_mode():
                out = {'flag': flag.read()}
                for r in ratios:
                    out['variable_' + ratio_key(r)] = ctx.host(F.dropout(ctx.var(x.copy()), r))
                    out['array_' + ratio_key(r)] = ctx.host(F.dropout(ctx.to_device(x.copy()), r))
            return out
        phase(res, 'test_mode', inside)
        flag.restore()
        phase(res, 'ratio_zero', lambda: ctx.host(F.dropout(ctx.var(x.copy()), 0.0)))
    finally:
        flag.restore()
    return res


@scenario('modes.dropout_backward')
def dropout_backward(ctx, shape, ratio):
    """Backward of training-mode dropout with the probe's upstream gradient gy: each input's
    gradient must be gy times what the forward did to that input (y / x)."""
    F = ctx.api.get('functions')
    flag = _Flag(ctx)
    _seed_all(ctx, ctx.seed)
    x = ctx.rng(2).uniform(0.5, 1.5, size=shape)
    res = {}
    try:
        def run():
            xv = ctx.var(x.copy())
            y = F.dropout(xv, ratio)
            host_y = ctx.host(y)
            gy = upstream_gradient(ctx.seed, host_y.shape, host_y.dtype)
            y.grad = ctx.api.Variable(ctx.to_device(gy))
            y.backward()
            # the output as it is: the trusted side counts what was dropped
            return {'grad': ctx.export(xv.grad), 'expected': gy * host_y / x, 'y': host_y}
        phase(res, 'backward', run)
    finally:
        flag.restore()
    return res


@scenario('modes.restore')
def restore(ctx):
    """test_mode() and using_config() put the flag back on exit, on an exception, and when
    nested; dropout reads the flag at call time."""
    F = ctx.api.get('functions')
    test_mode = ctx.api.get('test_mode')
    using_config = ctx.api.get('using_config')
    flag = _Flag(ctx)
    x = np.ones(400)
    res = {'before': flag.read()}

    def drops():
        # dropout's output as it is: whether it dropped anything is the trusted side's to see
        return ctx.host(F.dropout(ctx.var(x.copy()), 0.5))
    try:
        def normal():
            with test_mode():
                inside = flag.read()
                inside_drops = drops()
            return {'inside': inside, 'inside_drops': inside_drops, 'after': flag.read(),
                    'after_drops': drops()}
        phase(res, 'exit', normal)
        flag.restore()

        def on_exception():
            try:
                with test_mode():
                    raise KeyError('probe')
            except KeyError:
                pass
            return {'after': flag.read(), 'after_drops': drops()}
        phase(res, 'exception', on_exception)
        flag.restore()

        def nested():
            with test_mode():
                with using_config('train', True):
                    inner = flag.read()
                middle = flag.read()
            return {'inner': inner, 'middle': middle, 'after': flag.read()}
        phase(res, 'nested', nested)
        flag.restore()

        def config_exception():
            try:
                with using_config('train', False):
                    raise ValueError('probe')
            except ValueError:
                pass
            return {'after': flag.read()}
        phase(res, 'using_config_exception', config_exception)
    finally:
        flag.restore()
    return res


@scenario('modes.dropout_device')
def dropout_device(ctx, shape, ratio):
    """Dropout of device data: output and gradient on the device, units dropped in training,
    the identity in test mode."""
    F = ctx.api.get('functions')
    test_mode = ctx.api.get('test_mode')
    flag = _Flag(ctx)
    _seed_all(ctx, ctx.seed)
    x = ctx.rng(3).uniform(0.5, 1.5, size=shape)
    res = {}
    try:
        def train():
            xv = ctx.var(x.copy())
            y = F.dropout(xv, ratio)
            y.backward()
            host_y = ctx.host(y)
            return {'y': ctx.device_of(y), 'grad': ctx.device_of(xv.grad), 'y_value': host_y,
                    'grad_value': ctx.host(xv.grad), 'expected_grad': host_y / x}
        phase(res, 'train', train)
        flag.restore()

        def test():
            with test_mode():
                y = F.dropout(ctx.var(x.copy()), ratio)
            return {'y': ctx.device_of(y), 'value': ctx.host(y)}
        phase(res, 'test', test)
        res['x'] = x
    finally:
        flag.restore()
    return res


@scenario('modes.dropout_model_follows')
def dropout_model_follows(ctx, hidden, out, batch, steps_before, steps_after):
    """A model with dropout trained with MomentumSGD on the host, moved to the device mid-
    training, trained on: the updates work (the optimizer's state followed the parameters),
    and in test mode the device model computes the host model's outputs."""
    Layer = book_class(ctx, 'Layer')
    Linear = ctx.api.get('layers.Linear')
    F = ctx.api.get('functions')
    test_mode = ctx.api.get('test_mode')
    MomentumSGD = ctx.api.get('optimizers.MomentumSGD')
    flag = _Flag(ctx)
    _seed_all(ctx, ctx.seed)

    class Net(Layer):
        def __init__(self):
            super().__init__()
            self.l1 = Linear(hidden)
            self.l2 = Linear(out)

        def forward(self, x):
            return self.l2(F.dropout(F.relu(self.l1(x)), 0.3))

    rng = ctx.rng(4)
    x = rng.standard_normal((batch, 5))
    t = rng.integers(0, out, size=batch)
    model = Net()
    model(x)
    opt = MomentumSGD(0.1).setup(model)

    def step(xx, tt):
        loss = F.softmax_cross_entropy(model(xx), tt)
        model.cleargrads()
        loss.backward()
        opt.update()
        return ctx.scalar(loss)
    res = {}
    try:
        phase(res, 'host_steps', lambda: [step(x, t) for _ in range(steps_before)])

        def device_steps():
            model.to_gpu()
            xd, td = ctx.on_device(x, 'gpu'), ctx.on_device(t, 'gpu')
            losses = [step(xd, td) for _ in range(steps_after)]
            with test_mode():
                y1, y2 = model(xd), model(xd)
            found = {'losses': losses, 'params': sorted(ctx.device_of(p.data)
                                                        for p in model.params()),
                     'test_y': ctx.device_of(y1), 'test_repeat': ctx.host(y2),
                     'test_value': ctx.host(y1)}
            model.to_cpu()
            with test_mode():
                found['host_test_value'] = ctx.host(model(x))
            return found
        phase(res, 'device_steps', device_steps)
    finally:
        flag.restore()
    return res
