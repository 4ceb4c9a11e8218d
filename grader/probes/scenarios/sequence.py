"""Recurrent layers and sequences (steps 59-60) through the public API: `layers.RNN`,
`layers.LSTM`, truncated BPTT with `Variable.unchain_backward`, hidden state across calls and
devices, and `SeqDataLoader` on the device.

Weights are set by role (`x2h.W`, `h2f.W`, ...) from the probe's seed, never through the order of
`params()`, after two warm-up steps that let lazily sized layers create their weights; then
`reset_state()` starts the sequence the scenario reports. `kind` is 'rnn' or 'lstm'. RNN layers
are always created with `in_size=None`: the book's `RNN(hidden, in_size=...)` builds h2h with the
wrong size (a known bug a learner may keep or fix).
"""
import numpy as np

from grader.probes.registry import scenario
from grader.probes.scenarios.fixtures import (graph_functions, phase, role_grads, seeded,
                                              set_roles, sorted_shapes)

GATES = ('f', 'i', 'o', 'u')


def roles(kind, hidden, in_size, prefix=''):
    """The parameters of an RNN or LSTM layer by role, with their shapes."""
    H, I = hidden, in_size
    if kind == 'rnn':
        found = {'x2h.W': (I, H), 'x2h.b': (H,), 'h2h.W': (H, H)}
    else:
        found = {}
        for g in GATES:
            found['x2{}.W'.format(g)] = (I, H)
            found['x2{}.b'.format(g)] = (H,)
            found['h2{}.W'.format(g)] = (H, H)
    return {prefix + r: s for r, s in found.items()}


def _layer_class(ctx, kind):
    return ctx.api.get('layers.RNN' if kind == 'rnn' else 'layers.LSTM')


def _inputs(ctx, steps, batch, in_size, salt=1):
    rng = ctx.rng(salt)
    return [rng.standard_normal((batch, in_size)) for _ in range(steps)]


def _seeded_layer(ctx, kind, hidden, in_size, batch, device=None):
    """An RNN/LSTM whose weights are set by role, state reset."""
    layer = _layer_class(ctx, kind)(hidden)
    warm = _inputs(ctx, 2, batch, in_size, salt=99)
    layer(warm[0])
    layer(warm[1])
    layer.reset_state()
    set_roles(ctx, layer, roles(kind, hidden, in_size), device='cpu')
    if device == 'gpu':
        layer.to_gpu()
    return layer


def _state(ctx, layer, name):
    v = getattr(layer, name, None)
    return None if v is None else ctx.export(v)


def _model(ctx, kind, hidden, out):
    Layer = ctx.api.get('Layer')
    Linear = ctx.api.get('layers.Linear')
    Recurrent = _layer_class(ctx, kind)

    class Net(Layer):
        def __init__(self):
            super().__init__()
            self.rnn = Recurrent(hidden)
            self.fc = Linear(out)

        def reset_state(self):
            self.rnn.reset_state()

        def forward(self, x):
            return self.fc(self.rnn(x))

    return Net()


def _seeded_model(ctx, kind, hidden, in_size, out, batch):
    model = _model(ctx, kind, hidden, out)
    warm = _inputs(ctx, 2, batch, in_size, salt=99)
    model(warm[0])
    model(warm[1])
    model.reset_state()
    rs = roles(kind, hidden, in_size, prefix='rnn.')
    rs.update({'fc.W': (hidden, out), 'fc.b': (out,)})
    set_roles(ctx, model, rs, device='cpu')
    return model, rs


@scenario('sequence.forward')
def forward(ctx, kind, hidden, in_size, batch, steps):
    """The outputs and the state (h, and c for an LSTM) after every step of a sequence; then
    reset_state() and the first step again."""
    layer = _seeded_layer(ctx, kind, hidden, in_size, batch)
    xs = _inputs(ctx, steps, batch, in_size)
    res = {}

    def sequence():
        out = {'y': [], 'h': [], 'c': []}
        for x in xs:
            out['y'].append(ctx.export(layer(ctx.to_device(x))))
            out['h'].append(_state(ctx, layer, 'h'))
            if kind == 'lstm':
                out['c'].append(_state(ctx, layer, 'c'))
        return out
    phase(res, 'sequence', sequence)

    def reset():
        layer.reset_state()
        out = {'h_none': getattr(layer, 'h', None) is None}
        if kind == 'lstm':
            out['c_none'] = getattr(layer, 'c', None) is None
        out['first_again'] = ctx.export(layer(ctx.to_device(xs[0])))
        return out
    phase(res, 'reset', reset)
    return res


@scenario('sequence.params')
def params(ctx, kind, hidden, in_size, batch, model_hidden):
    """The layer's parameter shapes after two steps (sorted), and the number of values of the
    book's script model (the recurrent layer + Linear(1)) for one input feature."""
    res = {}

    def layer_params():
        layer = _layer_class(ctx, kind)(hidden)
        for x in _inputs(ctx, 2, batch, in_size):
            layer(ctx.to_device(x))
        return {'shapes': sorted_shapes(ctx, layer), 'count': len(list(layer.params()))}
    phase(res, 'layer', layer_params)

    def script_model():
        model = _model(ctx, kind, model_hidden, 1)
        for x in _inputs(ctx, 2, 1, 1):
            model(ctx.to_device(x))
        return int(sum(ctx.host(p).size for p in model.params()))
    phase(res, 'script_model_values', script_model)
    return res


@scenario('sequence.through_time')
def through_time(ctx, kind, hidden, in_size, batch, steps):
    """One window of `steps` steps, loss = Σ_t sum(w_t · h_t) with seeded w_t, one backward:
    the gradients of every weight (by role) and of every step's input."""
    V = ctx.api.Variable
    F = ctx.api.get('functions')
    layer = _seeded_layer(ctx, kind, hidden, in_size, batch)
    xs = [ctx.var(x) for x in _inputs(ctx, steps, batch, in_size)]
    res = {}

    def run():
        loss = None
        for t, x in enumerate(xs):
            h = layer(x)
            w = V(ctx.to_device(seeded(ctx, 'w{}'.format(t), (batch, hidden), 1.0)))
            term = F.sum(h * w)
            loss = term if loss is None else loss + term
        loss.backward()
        return {'loss': ctx.export(loss),
                'weights': role_grads(ctx, layer, roles(kind, hidden, in_size)),
                'inputs': [None if x.grad is None else ctx.export(x.grad) for x in xs]}
    phase(res, 'window', run)
    return res


@scenario('sequence.bptt')
def bptt(ctx, kind, hidden, in_size, out, batch, window, windows):
    """The book's truncated-BPTT loop (loss accumulated over the epoch; at the end of each
    window: cleargrads, backward, unchain_backward). Reports, per window, the size of the graph
    behind the loss, whether the state lost its creator while the loss kept its own, and the
    gradients (by role)."""
    F = ctx.api.get('functions')
    model, rs = _seeded_model(ctx, kind, hidden, in_size, out, batch)
    xs = _inputs(ctx, window * windows + 1, batch, in_size)
    res = {'structure': [], 'numbers': []}

    def run():
        loss, count = 0, 0
        for t in range(window * windows):
            y = model(ctx.to_device(xs[t]))
            loss += F.mean_squared_error(y, ctx.to_device(xs[t + 1][:, :out]))
            count += 1
            if count % window == 0:
                size = graph_functions(loss)
                model.cleargrads()
                loss.backward()
                loss.unchain_backward()
                h, c = getattr(model.rnn, 'h', None), getattr(model.rnn, 'c', None)
                res['structure'].append({
                    'size': size, 'loss_kept': loss.creator is not None,
                    'h_cut': h is not None and h.creator is None,
                    'c_cut': c is None if kind == 'rnn' else (c is not None
                                                              and c.creator is None)})
                res['numbers'].append({'loss': float(ctx.host(loss)),
                                       'grads': role_grads(ctx, model, rs)})
        sizes = [s['size'] for s in res['structure']]
        return {'sizes': sizes, 'growth': sizes[-1] - sizes[1] if len(sizes) > 2 else 0}
    phase(res, 'graph', run)
    return res


@scenario('sequence.to_gpu_mid')
def to_gpu_mid(ctx, kind, hidden, in_size, batch, steps_before, steps_after):
    """`steps_before` steps on the host, `to_gpu()`, `steps_after` more on the device, against
    the same sequence kept on the host: the state moves with the layer."""
    xs = _inputs(ctx, steps_before + steps_after, batch, in_size)
    res = {}

    def host_only():
        layer = _seeded_layer(ctx, kind, hidden, in_size, batch)
        return np.stack([ctx.host(layer(x)) for x in xs])
    phase(res, 'host', host_only)

    def moved():
        layer = _seeded_layer(ctx, kind, hidden, in_size, batch)
        for x in xs[:steps_before]:
            layer(x)
        layer.to_gpu()
        found = {'h': ctx.device_of(getattr(layer, 'h', None))}
        if kind == 'lstm':
            found['c'] = ctx.device_of(getattr(layer, 'c', None))
        ys = [layer(ctx.on_device(x, 'gpu')) for x in xs[steps_before:]]
        found['y'] = [ctx.device_of(y) for y in ys]
        found['values'] = np.stack([ctx.host(y) for y in ys])
        return found
    phase(res, 'moved', moved)
    if isinstance(res.get('host'), np.ndarray):
        res['host_after_move'] = res['host'][steps_before:]
    return res


@scenario('sequence.device')
def device(ctx, kind, hidden, in_size, batch, steps):
    """The layer moved to the device before the sequence starts: outputs, state and gradients
    on the device, with the host's values."""
    F = ctx.api.get('functions')
    xs = _inputs(ctx, steps, batch, in_size)
    res = {}

    def host_run():
        layer = _seeded_layer(ctx, kind, hidden, in_size, batch)
        return np.stack([ctx.host(layer(x)) for x in xs])
    phase(res, 'host', host_run)

    def device_run():
        layer = _seeded_layer(ctx, kind, hidden, in_size, batch, device='gpu')
        ys = [layer(ctx.on_device(x, 'gpu')) for x in xs]
        loss = F.sum(ys[-1])
        layer.cleargrads()
        loss.backward()
        return {'y': [ctx.device_of(y) for y in ys], 'values': np.stack([ctx.host(y) for y in ys]),
                'h': ctx.device_of(layer.h),
                'grads': sorted(ctx.device_of(p.grad) for p in layer.params())}
    phase(res, 'device', device_run)
    return res


@scenario('sequence.seqloader_device')
def seqloader_device(ctx, n, batch):
    """SeqDataLoader batches on the device (gpu=True, and after to_gpu), with the host's
    values."""
    Dataset = ctx.api.get('Dataset')
    SeqDataLoader = ctx.api.get('SeqDataLoader')

    class Series(Dataset):
        def prepare(self):
            self.data = np.arange(n, dtype=np.float64).reshape(n, 1)
            self.label = np.arange(1, n + 1, dtype=np.float64).reshape(n, 1)

    res = {}

    def first(loader):
        x, t = next(iter(loader))
        return {'x': ctx.device_of(x), 't': ctx.device_of(t), 'x_values': ctx.host(x),
                't_values': ctx.host(t)}
    phase(res, 'host', lambda: first(SeqDataLoader(Series(), batch)))
    phase(res, 'gpu_flag', lambda: first(SeqDataLoader(Series(), batch, gpu=True)))

    def moved():
        loader = SeqDataLoader(Series(), batch)
        loader.to_gpu()
        return first(loader)
    phase(res, 'to_gpu', moved)
    return res
