"""Recurrent layers and sequences (steps 59-60) through the public API: `layers.RNN`,
`layers.LSTM`, truncated BPTT with `Variable.unchain_backward`, hidden state across calls and
devices, and `SeqDataLoader` on the device.

A layer is created, run for two warm-up steps (lazily sized layers create their weights), and
then every parameter of `params()` gets seeded values by its place (`fixtures.set_weights(
key='path')`), whatever the layer calls its inner projections; `reset_state()` starts the
sequence the scenario reports. `kind` is 'rnn' or 'lstm'. RNN layers are always created with
`in_size=None`: the book's `RNN(hidden, in_size=...)` builds h2h with the wrong size (a known bug
a learner may keep or fix).

The scenarios decide nothing. They report raw values: every parameter (its place and value),
the outputs, the state and the gradients for the grader's inputs. The trusted side
(`dezero_grader.checks.recurrent_math`, judged by `recurrent.match`) assigns the parameters to the book's roles
by shape and computes the book's recurrence itself, forward and backward through time.
"""
import numpy as np

from dezero_grader.sandboxed.probes.registry import scenario
from dezero_grader.sandboxed.probes.scenarios.fixtures import (PlainDataset, book_class, graph_functions,
                                                               parameter_places, phase, seeded, set_weights,
                                                               sorted_shapes)


def _layer_class(ctx, kind):
    return ctx.api.get('layers.RNN' if kind == 'rnn' else 'layers.LSTM')


def _inputs(ctx, steps, batch, in_size, salt=1):
    rng = ctx.rng(salt)
    return [rng.standard_normal((batch, in_size)) for _ in range(steps)]


def _warmed(ctx, layer, batch, in_size, kind, device=None):
    """`layer` after two warm-up steps, every parameter seeded by its place, state reset."""
    warm = _inputs(ctx, 2, batch, in_size, salt=99)
    layer(warm[0])
    layer(warm[1])
    layer.reset_state()
    set_weights(ctx, layer, salt=kind, device='cpu', key='path')
    if device == 'gpu':
        layer.to_gpu()
    return layer


def _seeded_layer(ctx, kind, hidden, in_size, batch, device=None):
    """An RNN/LSTM whose every parameter is seeded by its place, state reset."""
    return _warmed(ctx, _layer_class(ctx, kind)(hidden), batch, in_size, kind, device)


def _built(ctx, res, make):
    """The layer (or model) `make()` builds and seeds, its parameters reported as the phase
    `params`; None where building it raised (the phase says what)."""
    holder = {}

    def build():
        holder['it'] = make()
        return _parameters(ctx, holder['it'])
    phase(res, 'params', build)
    return holder.get('it')


def _parameters(ctx, model):
    """Every parameter of `params()`: its place (`fixtures.parameter_places`) and its value."""
    return [{'place': place, 'value': ctx.export(p)} for place, p in parameter_places(ctx, model)]


def _grads(ctx, model):
    """The gradient of every parameter, in the order of `_parameters` (None where there is none)."""
    return [None if p.grad is None else ctx.export(p.grad) for _, p in parameter_places(ctx, model)]


def _state(ctx, layer, name):
    v = getattr(layer, name, None)
    return None if v is None else ctx.export(v)


def _creator(v):
    """What a Variable's creator is, as raw data: None for none, else its type's name."""
    creator = getattr(v, 'creator', None)
    return None if creator is None else type(creator).__name__


def _held(v):
    """A state variable as the judges read it: None when it is not set, else {'creator'}."""
    return None if v is None else {'creator': _creator(v)}


def _model(ctx, kind, hidden, out):
    Layer = book_class(ctx, 'Layer')
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


@scenario('sequence.forward')
def forward(ctx, kind, hidden, in_size, batch, steps):
    """The parameters, then the outputs and the state (h, and c for an LSTM) after every step
    of a sequence; then reset_state(), the state, and the first step again."""
    res = {}
    layer = _built(ctx, res, lambda: _seeded_layer(ctx, kind, hidden, in_size, batch))
    if layer is None:   # building it raised: every phase says so
        return dict(res, sequence=res['params'], reset=res['params'])
    xs = _inputs(ctx, steps, batch, in_size)

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
        out = {'h': _state(ctx, layer, 'h')}
        if kind == 'lstm':
            out['c'] = _state(ctx, layer, 'c')
        out['first_again'] = ctx.export(layer(ctx.to_device(xs[0])))
        return out
    phase(res, 'reset', reset)
    return res


@scenario('sequence.params')
def params(ctx, kind, hidden, in_size, batch, model_hidden):
    """How many values the layer's parameters hold after two steps (and their shapes, sorted),
    and the number of values of the book's script model (the recurrent layer + Linear(1)) for
    one input feature. Counting values, not parameters, lets a layer fuse its projections."""
    res = {}

    def layer_params():
        layer = _layer_class(ctx, kind)(hidden)
        for x in _inputs(ctx, 2, batch, in_size):
            layer(ctx.to_device(x))
        return {'shapes': sorted_shapes(ctx, layer), 'count': len(list(layer.params())),
                'values': int(sum(ctx.host(p).size for p in layer.params()))}
    phase(res, 'layer', layer_params)

    def script_model():
        model = _model(ctx, kind, model_hidden, 1)
        for x in _inputs(ctx, 2, 1, 1):
            model(ctx.to_device(x))
        return int(sum(ctx.host(p).size for p in model.params()))
    phase(res, 'script_model_values', script_model)
    return res


def _window_loss(ctx, layer, xs, ws, ys):
    """Σ_t sum(w_t · h_t) over one window from a fresh state; each h_t's value into `ys`."""
    F = ctx.api.get('functions')
    loss = None
    for x, w in zip(xs, ws):
        y = layer(x)
        ys.append(ctx.export(y))
        term = F.sum(y * w)
        loss = term if loss is None else loss + term
    return loss


@scenario('sequence.through_time')
def through_time(ctx, kind, hidden, in_size, batch, steps):
    """One window of `steps` steps, loss = Σ_t sum(w_t · h_t) with seeded w_t, one backward:
    the parameters, the outputs, the loss, the gradient of every parameter and of every step's
    input."""
    V = ctx.api.Variable
    res = {}
    layer = _built(ctx, res, lambda: _seeded_layer(ctx, kind, hidden, in_size, batch))
    if layer is None:
        return dict(res, window=res['params'])
    xs = [ctx.var(x) for x in _inputs(ctx, steps, batch, in_size)]
    ws = [V(ctx.to_device(seeded(ctx, 'w{}'.format(t), (batch, hidden), 1.0)))
          for t in range(steps)]

    def run():
        ys = []
        loss = _window_loss(ctx, layer, xs, ws, ys)
        loss.backward()
        return {'y': ys, 'loss': ctx.export(loss), 'grads': _grads(ctx, layer),
                'inputs': [None if x.grad is None else ctx.export(x.grad) for x in xs]}
    phase(res, 'window', run)
    return res


@scenario('sequence.bptt')
def bptt(ctx, kind, hidden, in_size, out, batch, window, windows):
    """The book's truncated-BPTT loop over the book's model (the recurrent layer, then a
    Linear; loss accumulated over the epoch; at the end of each window: cleargrads, backward,
    unchain_backward). Reports the model's parameters and, per window, the size of the graph
    behind the loss, the creators of the loss and of the state, the outputs of every step, the
    loss and the gradient of every parameter."""
    F = ctx.api.get('functions')
    xs = _inputs(ctx, window * windows + 1, batch, in_size)
    res = {'structure': [], 'numbers': []}
    model = _built(ctx, res, lambda: _warmed(ctx, _model(ctx, kind, hidden, out), batch, in_size,
                                             kind))
    if model is None:
        return dict(res, structure=res['params'], numbers=res['params'], graph=res['params'])

    def run():
        loss, ys = 0, []
        for t in range(window * windows):
            y = model(ctx.to_device(xs[t]))
            ys.append(ctx.export(y))
            loss += F.mean_squared_error(y, ctx.to_device(xs[t + 1][:, :out]))
            if (t + 1) % window == 0:
                size = graph_functions(loss)
                model.cleargrads()
                loss.backward()
                loss.unchain_backward()
                res['structure'].append({
                    'size': size, 'loss_creator': _creator(loss),
                    'h': _held(getattr(model.rnn, 'h', None)),
                    'c': _held(getattr(model.rnn, 'c', None))})
                res['numbers'].append({'loss': ctx.export(loss), 'y': ys, 'grads': _grads(ctx, model)})
                ys = []
        sizes = [s['size'] for s in res['structure']]
        return {'sizes': sizes, 'growth': sizes[-1] - sizes[1] if len(sizes) > 2 else 0}
    phase(res, 'graph', run)
    if 'raised' in res['graph'] and not res['structure']:
        res['structure'] = res['numbers'] = res['graph']   # say what raised, where it is read
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
    values (fed a plain data set: len and [i])."""
    SeqDataLoader = ctx.api.get('SeqDataLoader')

    def Series():
        return PlainDataset(np.arange(n, dtype=np.float64).reshape(n, 1),
                            np.arange(1, n + 1, dtype=np.float64).reshape(n, 1))

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
