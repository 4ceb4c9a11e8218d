"""Device behaviour (step 52 onward): where data, gradients, parameters, batches, optimizer
state and hidden state live after each move, and whether work on the device gives the host's
numbers. Every phase reports its own outcome, so one failure does not hide the others.
"""
import numpy as np

from dezero_grader.sandboxed.probes.registry import scenario
from dezero_grader.sandboxed.probes.scenarios.fixtures import PlainDataset, nested_model, phase, set_weights


@scenario('device.variable')
def variable(ctx, shape):
    """Variable.to_gpu / backward seed / to_cpu."""
    V = ctx.api.Variable
    F = ctx.api.get('functions')
    host = ctx.rng(3).uniform(0.5, 1.5, size=shape)
    out = {}
    x = V(host.copy())

    def to_gpu():
        x.to_gpu()
        return {'data': ctx.device_of(x.data)}
    phase(out, 'to_gpu', to_gpu)

    def backward():
        y = F.sum(F.exp(x) * x)
        y.backward(retain_grad=True)
        return {'seed': ctx.device_of(y.grad), 'grad': ctx.device_of(x.grad),
                'grad_value': ctx.host(x.grad)}
    phase(out, 'backward', backward)

    def to_cpu():
        x.to_cpu()
        return {'data': ctx.device_of(x.data), 'value': ctx.host(x)}
    phase(out, 'to_cpu', to_cpu)
    out['expected_value'] = host
    out['expected_grad'] = (np.exp(host) * (1 + host))
    return out


@scenario('device.array_module')
def array_module(ctx):
    """cuda.get_array_module / as_numpy / as_cupy on Variables, arrays and scalars."""
    cuda = ctx.api.get('cuda')
    V = ctx.api.Variable
    dev = ctx.to_device(np.arange(6.0).reshape(2, 3))
    host = np.arange(6.0).reshape(2, 3)
    out = {}

    def module_name(m):
        return 'cupy' if m is ctx.xp_device else ('numpy' if m is np else repr(m)[:80])
    phase(out, 'gam_variable_gpu', lambda: module_name(cuda.get_array_module(V(dev))))
    phase(out, 'gam_array_gpu', lambda: module_name(cuda.get_array_module(dev)))
    phase(out, 'gam_variable_cpu', lambda: module_name(cuda.get_array_module(V(host))))
    phase(out, 'gam_scalar', lambda: module_name(cuda.get_array_module(1.5)))
    phase(out, 'as_numpy_variable_gpu', lambda: ctx.describe(cuda.as_numpy(V(dev))))
    phase(out, 'as_numpy_scalar', lambda: ctx.describe(cuda.as_numpy(2.0)))
    phase(out, 'as_cupy_array', lambda: ctx.describe(cuda.as_cupy(host)))
    phase(out, 'as_cupy_variable', lambda: ctx.describe(cuda.as_cupy(V(host))))
    phase(out, 'variable_of_device_array', lambda: ctx.describe(V(dev)))
    phase(out, 'as_array_device', lambda: ctx.describe(ctx.api.get('as_array')(dev)))
    return out


@scenario('device.layer')
def layer(ctx, in_size, hidden, out, batch):
    """A model with nested layers: to_gpu moves every parameter; forward, backward and an SGD
    update then run on the device; to_cpu brings everything back."""
    Outer = nested_model(ctx)
    SGD = ctx.api.get('optimizers.SGD')
    F = ctx.api.get('functions')
    model = Outer(hidden, out)
    x = ctx.rng(5).standard_normal((batch, in_size))
    t = ctx.rng(6).integers(0, out, size=batch)
    model(x)                                   # lazy shapes
    res = {'n_params': len(list(model.params()))}

    def to_gpu():
        model.to_gpu()
        return sorted(ctx.device_of(p.data) for p in model.params())
    phase(res, 'to_gpu', to_gpu)

    def train_step():
        xd, td = ctx.on_device(x, 'gpu'), ctx.on_device(t, 'gpu')
        y = model(xd)
        loss = F.softmax_cross_entropy(y, td)
        model.cleargrads()
        loss.backward()
        SGD(0.1).setup(model).update()
        return {'y': ctx.device_of(y), 'loss': ctx.device_of(loss),
                'grads': sorted(ctx.device_of(p.grad) for p in model.params()),
                'params': sorted(ctx.device_of(p.data) for p in model.params())}
    phase(res, 'train_step', train_step)

    def to_cpu():
        model.to_cpu()
        y = model(x)
        return {'params': sorted(ctx.device_of(p.data) for p in model.params()),
                'y': ctx.device_of(y)}
    phase(res, 'to_cpu', to_cpu)
    return res


@scenario('device.loader')
def loader(ctx, n, batch):
    """DataLoader batches follow to_gpu / to_cpu / gpu=True (fed a plain data set: len and [i])."""
    DataLoader = ctx.api.get('DataLoader')
    data = np.arange(n * 2, dtype=np.float32).reshape(n, 2)
    label = np.arange(n) % 3

    def Arrays():
        return PlainDataset(data, label)

    res = {}

    def batches(loader):
        x, t = next(iter(loader))
        return [ctx.device_of(x), ctx.device_of(t)]

    def moved():
        dl = DataLoader(Arrays(), batch, shuffle=False)
        first = batches(dl)
        dl.to_gpu()
        on_gpu = batches(dl)
        dl.to_cpu()
        return {'default': first, 'after_to_gpu': on_gpu, 'after_to_cpu': batches(dl)}
    phase(res, 'moves', moved)
    phase(res, 'gpu_flag', lambda: batches(DataLoader(Arrays(), batch, shuffle=False, gpu=True)))
    return res


def _train(ctx, model_on_gpu, steps, optimizer, lr):
    MLP = ctx.api.get('models.MLP')
    F = ctx.api.get('functions')
    opt_cls = ctx.api.get('optimizers.' + optimizer)
    rng = ctx.rng(11)
    x = rng.standard_normal((24, 6))
    t = rng.integers(0, 3, size=24)
    model = MLP((8, 3))
    model(x)
    set_weights(ctx, model, salt=100, scale=0.3)
    opt = opt_cls(lr).setup(model)
    if model_on_gpu:
        model.to_gpu()
        x, t = ctx.on_device(x, 'gpu'), ctx.on_device(t, 'gpu')
    losses = []
    for _ in range(steps):
        loss = F.softmax_cross_entropy(model(x), t)
        model.cleargrads()
        loss.backward()
        opt.update()
        losses.append(ctx.scalar(loss))
    return losses


@scenario('device.training')
def training(ctx, steps, optimizer, lr):
    """The same seeded training run on the host and on the device: the loss trajectories."""
    res = {}
    phase(res, 'host', lambda: _train(ctx, False, steps, optimizer, lr))
    phase(res, 'device', lambda: _train(ctx, True, steps, optimizer, lr))
    return res


@scenario('device.optimizer_follows')
def optimizer_follows(ctx, optimizer, lr, steps_before, steps_after):
    """Train on the host (optimizer state is created there), move the model to the device
    mid-training and keep training: the update must work and everything stay on the device."""
    MLP = ctx.api.get('models.MLP')
    F = ctx.api.get('functions')
    rng = ctx.rng(12)
    x = rng.standard_normal((10, 4))
    t = rng.integers(0, 2, size=10)
    model = MLP((5, 2))
    opt = ctx.api.get('optimizers.' + optimizer)(lr).setup(model)

    def step(xx, tt):
        loss = F.softmax_cross_entropy(model(xx), tt)
        model.cleargrads()
        loss.backward()
        opt.update()
        return ctx.scalar(loss)

    res = {}
    phase(res, 'host_steps', lambda: [step(x, t) for _ in range(steps_before)])

    def after():
        model.to_gpu()
        xd, td = ctx.on_device(x, 'gpu'), ctx.on_device(t, 'gpu')
        losses = [step(xd, td) for _ in range(steps_after)]
        return {'losses': losses, 'params': sorted(ctx.device_of(p.data) for p in model.params())}
    phase(res, 'device_steps', after)
    return res
