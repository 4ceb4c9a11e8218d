"""Recurrent layers and sequences (steps 59-60) through the public API: `layers.RNN`,
`layers.LSTM`, truncated BPTT with `Variable.unchain_backward`, hidden state across calls and
devices, and `SeqDataLoader` on the device.

Weights are set by role (`x2h.W`, `h2f.W`, ...) from the probe's seed, never through the order of
`params()`, after two warm-up steps that let lazily sized layers create their weights; then
`reset_state()` starts the sequence the scenario reports. `kind` is 'rnn' or 'lstm'. RNN layers
are always created with `in_size=None`: the book's `RNN(hidden, in_size=...)` builds h2h with the
wrong size (a known bug a learner may keep or fix).

The book's names of a layer's inner projections (`x2h`, `h2h`, `x2f`, ...) are not part of its
contract: a layer that computes the same function another way (the four gates fused into one
`Linear(4H)` per input) is correct. When those names do not resolve, the weights are set by the
layer's own places instead (`fixtures.set_weights(key='path')`), the reference's numbers cannot
be compared, and the reports carry an `unreferenced` section instead: central differences of
the unrolled computation with respect to every input and every parameter, beside the analytic
gradients, and properties of the outputs and the state (`checks/expect.py` judges it and says so
in the scorecard).
"""
import numpy as np

from grader.sandboxed import capture
from grader.sandboxed.probes.registry import scenario
from grader.sandboxed.probes.scenarios.fixtures import (PlainDataset, book_class, graph_functions,
                                              parameter_places, phase, role_grads, seeded,
                                              set_roles, set_weights, sorted_shapes)

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


def book_names(ctx, layer, kind, hidden, in_size, prefix=''):
    """Whether every inner projection of the book's layer resolves, by role, with its shape."""
    from grader.sandboxed.probes.scenarios.fixtures import resolve_path
    for role, shape in roles(kind, hidden, in_size, prefix).items():
        try:
            p = resolve_path(ctx, layer, role)
        except Exception:
            return False
        if p is None or getattr(p, 'data', None) is None or tuple(ctx.host(p).shape) != shape:
            return False
    return True


def _seeded_layer(ctx, kind, hidden, in_size, batch, device=None):
    """An RNN/LSTM whose weights are set by role, state reset; and whether the book's names of
    its projections resolve (otherwise its weights are set by its own parameters' places)."""
    layer = _layer_class(ctx, kind)(hidden)
    warm = _inputs(ctx, 2, batch, in_size, salt=99)
    layer(warm[0])
    layer(warm[1])
    layer.reset_state()
    named = book_names(ctx, layer, kind, hidden, in_size)
    if named:
        set_roles(ctx, layer, roles(kind, hidden, in_size), device='cpu')
    else:
        set_weights(ctx, layer, salt=kind, device='cpu', key='path')
    if device == 'gpu':
        layer.to_gpu()
    return layer, named


def _state(ctx, layer, name):
    v = getattr(layer, name, None)
    return None if v is None else ctx.export(v)


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


def _seeded_model(ctx, kind, hidden, in_size, out, batch):
    model = _model(ctx, kind, hidden, out)
    warm = _inputs(ctx, 2, batch, in_size, salt=99)
    model(warm[0])
    model(warm[1])
    model.reset_state()
    named = book_names(ctx, model, kind, hidden, in_size, prefix='rnn.')
    if named:
        rs = roles(kind, hidden, in_size, prefix='rnn.')
        rs.update({'fc.W': (hidden, out), 'fc.b': (out,)})
        set_roles(ctx, model, rs, device='cpu')
    else:
        rs = None
        set_weights(ctx, model, salt=kind, device='cpu', key='path')
    return model, rs


# -- grading without the reference's numbers ----------------------------------------------------------
EPS = 1e-5


def _numeric_vs_analytic(ctx, loss_of, params, inputs):
    """Central differences of `loss_of()` (a float; it runs the whole unrolled computation
    afresh) with respect to every element of every parameter and input (host float64 arrays
    held in `.data`), beside the analytic gradients the caller's backward left in `.grad`."""
    out = []
    for name, v in list(params) + list(inputs):
        analytic = None if v.grad is None else np.array(ctx.host(v.grad), dtype=np.float64)
        base = np.array(ctx.host(v.data), dtype=np.float64)
        numeric = np.zeros_like(base)
        for idx in np.ndindex(base.shape):
            for sign in (1, -1):
                moved = base.copy()
                moved[idx] += sign * EPS
                v.data = moved
                numeric[idx] += sign * loss_of()
            numeric[idx] /= 2 * EPS
        v.data = base
        out.append({'name': name, 'analytic': analytic, 'numeric': numeric})
    return out


def _places(ctx, layer, prefix=''):
    return [(prefix + place, p) for place, p in parameter_places(ctx, layer)]


@scenario('sequence.forward')
def forward(ctx, kind, hidden, in_size, batch, steps):
    """The outputs and the state (h, and c for an LSTM) after every step of a sequence; then
    reset_state() and the first step again. Without the book's names: properties instead of
    the reference's numbers (`unreferenced`)."""
    layer, named = _seeded_layer(ctx, kind, hidden, in_size, batch)
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
    if not named:
        res['unreferenced'] = _forward_properties(ctx, layer, kind, hidden, batch, xs, res)
    return res


def _forward_properties(ctx, layer, kind, hidden, batch, xs, res):
    """What a recurrent layer's outputs must satisfy whatever its weights are called."""
    props = []

    def prop(name, ok, message, hint=''):
        props.append({'name': name, 'ok': bool(ok), 'message': message, 'hint': hint})

    seq = res.get('sequence')
    if not isinstance(seq, dict) or 'raised' in seq:
        return {'why': _WHY, 'raised': seq}
    ys = [_reported(ctx, y) for y in seq['y']]
    prop('shape', all(y.shape == (batch, hidden) for y in ys),
         'every output has shape (batch, hidden) = ({}, {})'.format(batch, hidden))
    prop('finite', all(np.all(np.isfinite(y)) for y in ys), 'every output is finite')
    prop('bounded', all(np.all(np.abs(y) <= 1 + 1e-12) for y in ys),
         'every output lies in [-1, 1] (tanh of the pre-activation, or o·tanh(c))')
    hs = seq['h']
    prop('state_is_output', all(h is not None and np.allclose(_reported(ctx, h), y, rtol=1e-12, atol=0)
                                for h, y in zip(hs, ys)),
         'after every step the hidden state h is the output of that step',
         'self.h = h_new; return h_new')
    if kind == 'lstm':
        prop('cell_state', all(c is not None for c in seq['c']),
             'after every step the cell state c is set')

    def fresh_second():
        layer.reset_state()
        return ctx.host(layer(ctx.to_device(xs[1])))
    try:
        second = fresh_second()
        prop('state_carried', not np.allclose(second, ys[1], rtol=1e-9, atol=1e-12),
             'the state carries over: the second step differs from the same input on a fresh '
             'state', 'feed the previous h (and c) into the next step')
    except Exception as e:
        prop('state_carried', False, 'running the layer after reset_state() raised {}: {}'.format(
            type(e).__name__, capture.text(e, 200)))
    reset = res.get('reset')
    ok = isinstance(reset, dict) and 'raised' not in reset and np.allclose(
        _reported(ctx, reset['first_again']), ys[0], rtol=1e-9, atol=1e-12)
    prop('reset', ok, 'after reset_state() the first input gives the first output again',
         'reset_state sets h (and c) to None')
    return {'why': _WHY, 'properties': props}


def _reported(ctx, value):
    """The host array of what a phase reported (an exported array, or an array)."""
    data = getattr(value, 'data', None)
    return data if isinstance(data, np.ndarray) else ctx.host(value)


_WHY = ("the layer's inner projections are not the book's (x2h, h2h / x2f, x2i, x2o, x2u, h2f, ...): "
        "its weights cannot be set like the reference's, so it was graded without the reference's "
        "numbers (central differences of the unrolled computation, state properties)")


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


def _window_loss(ctx, layer, xs, ws):
    """Σ_t sum(w_t · h_t) over one window from a fresh state."""
    F = ctx.api.get('functions')
    loss = None
    for x, w in zip(xs, ws):
        term = F.sum(layer(x) * w)
        loss = term if loss is None else loss + term
    return loss


@scenario('sequence.through_time')
def through_time(ctx, kind, hidden, in_size, batch, steps):
    """One window of `steps` steps, loss = Σ_t sum(w_t · h_t) with seeded w_t, one backward:
    the gradients of every weight (by role) and of every step's input. Without the book's names:
    those gradients beside central differences (`unreferenced`)."""
    V = ctx.api.Variable
    layer, named = _seeded_layer(ctx, kind, hidden, in_size, batch)
    xs = [ctx.var(x) for x in _inputs(ctx, steps, batch, in_size)]
    ws = [V(ctx.to_device(seeded(ctx, 'w{}'.format(t), (batch, hidden), 1.0)))
          for t in range(steps)]
    res = {}

    def run():
        loss = _window_loss(ctx, layer, xs, ws)
        loss.backward()
        return {'loss': ctx.export(loss),
                'weights': role_grads(ctx, layer, roles(kind, hidden, in_size)),
                'inputs': [None if x.grad is None else ctx.export(x.grad) for x in xs]}

    def unreferenced():
        layer.cleargrads()
        loss = _window_loss(ctx, layer, xs, ws)
        loss.backward()

        def loss_of():
            layer.reset_state()
            return ctx.scalar(_window_loss(ctx, layer, xs, ws))
        pairs = _numeric_vs_analytic(ctx, loss_of, _places(ctx, layer),
                                     [('x{}'.format(t), x) for t, x in enumerate(xs)])
        return {'why': _WHY, 'gradients': pairs}
    if named:
        phase(res, 'window', run)
    else:
        phase(res, 'unreferenced', unreferenced)
    return res


@scenario('sequence.bptt')
def bptt(ctx, kind, hidden, in_size, out, batch, window, windows):
    """The book's truncated-BPTT loop (loss accumulated over the epoch; at the end of each
    window: cleargrads, backward, unchain_backward). Reports, per window, the size of the graph
    behind the loss, whether the state lost its creator while the loss kept its own, and the
    gradients (by role). Without the book's names: the first window's gradients beside central
    differences, and every window's gradients finite (`unreferenced`)."""
    F = ctx.api.get('functions')
    model, rs = _seeded_model(ctx, kind, hidden, in_size, out, batch)
    xs = _inputs(ctx, window * windows + 1, batch, in_size)
    res = {'structure': [], 'numbers': []}
    first_window = {}

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
                if rs is None and not first_window:
                    first_window['grads'] = {place: None if p.grad is None else
                                             np.array(ctx.host(p.grad), dtype=np.float64)
                                             for place, p in _places(ctx, model)}
                loss.unchain_backward()
                h, c = getattr(model.rnn, 'h', None), getattr(model.rnn, 'c', None)
                res['structure'].append({
                    'size': size, 'loss_kept': loss.creator is not None,
                    'h_cut': h is not None and h.creator is None,
                    'c_cut': c is None if kind == 'rnn' else (c is not None
                                                              and c.creator is None)})
                if rs is None:
                    res['numbers'].append({'loss': ctx.scalar(loss), 'finite': all(
                        p.grad is not None and bool(np.all(np.isfinite(ctx.host(p.grad))))
                        for p in model.params())})
                else:
                    res['numbers'].append({'loss': ctx.scalar(loss),
                                           'grads': role_grads(ctx, model, rs)})
        sizes = [s['size'] for s in res['structure']]
        return {'sizes': sizes, 'growth': sizes[-1] - sizes[1] if len(sizes) > 2 else 0}
    phase(res, 'graph', run)
    if 'raised' in res['graph'] and not res['structure']:
        res['structure'] = res['numbers'] = res['graph']   # say what raised, where it is read
    if rs is None:
        res['unreferenced'] = _bptt_unreferenced(ctx, model, xs, window, out, first_window, res)
    return res


def _bptt_unreferenced(ctx, model, xs, window, out, first_window, res):
    F = ctx.api.get('functions')
    if 'grads' not in first_window:
        return {'why': _WHY, 'raised': res.get('graph')}

    def loss_of():
        model.reset_state()
        loss = 0
        for t in range(window):
            loss += F.mean_squared_error(model(ctx.to_device(xs[t])),
                                         ctx.to_device(xs[t + 1][:, :out]))
        return ctx.scalar(loss)

    held = [(place, _Proxy(p, first_window['grads'].get(place)))
            for place, p in _places(ctx, model)]
    pairs = _numeric_vs_analytic(ctx, loss_of, held, [])
    props = [{'name': 'finite', 'ok': all(n.get('finite') for n in res['numbers']),
              'message': 'every window gives finite gradients for every parameter'}]
    return {'why': _WHY, 'gradients': pairs, 'properties': props}


class _Proxy:
    """A parameter seen by `_numeric_vs_analytic`: its `.data` is the parameter's (setting it
    sets the parameter's), its `.grad` a gradient recorded earlier."""

    def __init__(self, param, grad):
        object.__setattr__(self, '_param', param)
        object.__setattr__(self, 'grad', grad)

    @property
    def data(self):
        return self._param.data

    @data.setter
    def data(self, value):
        self._param.data = value


@scenario('sequence.to_gpu_mid')
def to_gpu_mid(ctx, kind, hidden, in_size, batch, steps_before, steps_after):
    """`steps_before` steps on the host, `to_gpu()`, `steps_after` more on the device, against
    the same sequence kept on the host: the state moves with the layer."""
    xs = _inputs(ctx, steps_before + steps_after, batch, in_size)
    res = {}

    def host_only():
        layer, _ = _seeded_layer(ctx, kind, hidden, in_size, batch)
        return np.stack([ctx.host(layer(x)) for x in xs])
    phase(res, 'host', host_only)

    def moved():
        layer, _ = _seeded_layer(ctx, kind, hidden, in_size, batch)
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
        layer, _ = _seeded_layer(ctx, kind, hidden, in_size, batch)
        return np.stack([ctx.host(layer(x)) for x in xs])
    phase(res, 'host', host_run)

    def device_run():
        layer, _ = _seeded_layer(ctx, kind, hidden, in_size, batch, device='gpu')
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
