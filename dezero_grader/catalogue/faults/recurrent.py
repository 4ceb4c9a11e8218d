"""Faults of steps 59-60: the RNN and LSTM layers, truncated BPTT, and SeqDataLoader.

Each patch replaces or wraps one name of the book's API (`layers.RNN`, `layers.LSTM`,
`Variable.unchain_backward`, `SeqDataLoader.__next__`) and imports what it needs inside its
body: its source is copied verbatim into single-fault variants.

None relies on the names of a layer's insides (`self.x2h`, `self.h2f`): a fault of the layers'
computation acts on what any implementation's step does — the `functions.tanh` and
`functions.sigmoid` it calls (`recurrent_step_hook`, an instrument composed with each such
fault), the state it keeps in `h` and `c` (the book's public state, which the grader reads) —
and where an implementation gives it nothing to act on it raises, saying that it does not
apply. `recurrent_renamed` renames a layer's inner layers, so that every fault of the layers has
a variant under names that are not the book's (`*_renamed`).

`lstm_gate_swap` exchanges the input and forget gates only once there is a state: exchanging
two gates' projections at every step is a relabelling (the book's function, its parameters
under other labels), which a grader that finds roles by shape rightly accepts.
"""
from dezero_grader.catalogue.faults import COMPOSITES, compose, patch


# -- instruments: not faults, composed with them -------------------------------------------------
@patch('recurrent_step_hook')
def recurrent_step_hook(dz):
    # While an RNN's or LSTM's step runs, each call of the package's functions.tanh and
    # functions.sigmoid (through the module, or a name the layers' module imported from it)
    # goes through the class's `_fault_hook(layer, name, index, x, original)`, index counting
    # that name's calls in this step; the hook sees whether the step began with a state
    # (`layer._fault_had_state`). Calls made inside a hooked call are left alone.
    import sys
    F = dz.functions
    originals = {'tanh': F.tanh, 'sigmoid': F.sigmoid}
    for cls in (dz.layers.RNN, dz.layers.LSTM):
        homes = [F.__dict__, sys.modules[cls.__module__].__dict__]

        def hooked(self, x, _forward=cls.forward, _homes=homes):
            hook = getattr(type(self), '_fault_hook', None)
            if hook is None:
                return _forward(self, x)
            counts, busy = {'tanh': 0, 'sigmoid': 0}, []

            def through(name):
                def call(v):
                    if busy:
                        return originals[name](v)
                    busy.append(name)
                    try:
                        counts[name] += 1
                        return hook(self, name, counts[name] - 1, v, originals[name])
                    finally:
                        busy.pop()
                return call
            swapped = [(home, key, name) for home in _homes for key, value in list(home.items())
                       for name, f in originals.items() if value is f]
            for home, key, name in swapped:
                home[key] = through(name)
            self.__dict__['_fault_had_state'] = getattr(self, 'h', None) is not None
            try:
                out = _forward(self, x)
            finally:
                for home, key, name in swapped:
                    home[key] = originals[name]
            if not any(counts.values()):
                raise RuntimeError('this fault does not apply to your {}: its step calls neither '
                                   'functions.tanh nor functions.sigmoid'.format(type(self).__name__))
            return out
        cls.forward = hooked


@patch('recurrent_renamed')
def recurrent_renamed(dz):
    # The RNN's and LSTM's inner layers renamed p0, p1, ... (in the order of their old names):
    # outside a step only the new names exist; during a step the old ones too, for the layer's
    # own code. Applies to a Layer that keeps its sub-layers as attributes (registered, if at
    # all, in a list or set `_params`, as the book's Layer does); raises otherwise.
    Layer = dz.layers.Layer
    for cls in (dz.layers.RNN, dz.layers.LSTM):
        def __init__(self, *args, _init=cls.__init__, **kwargs):
            _init(self, *args, **kwargs)
            registry = self.__dict__.get('_params')
            if registry is not None and not isinstance(registry, (list, set)):
                raise RuntimeError('recurrent_renamed does not apply: your Layer keeps its '
                                   'parameters in a {}'.format(type(registry).__name__))
            old = sorted(n for n, v in vars(self).items() if isinstance(v, Layer))
            renamed = {name: 'p{}'.format(k) for k, name in enumerate(old)}
            for name, new in renamed.items():
                value = self.__dict__.pop(name)
                if isinstance(registry, list):   # the new name where the old one was
                    registry[registry.index(name)] = new
                elif registry is not None:
                    registry.discard(name)
                setattr(self, new, value)
            self.__dict__['_fault_renamed'] = renamed

        def forward(self, x, _forward=cls.forward):
            renamed = self.__dict__.get('_fault_renamed', {})
            for name, new in renamed.items():
                self.__dict__[name] = getattr(self, new)
            try:
                return _forward(self, x)
            finally:
                for name in renamed:
                    self.__dict__.pop(name, None)
        cls.__init__, cls.forward = __init__, forward


# -- step 59: RNN --------------------------------------------------------------------------------
@patch('rnn_reset_noop')
def rnn_reset_noop(dz):
    def reset_state(self):
        pass
    dz.layers.RNN.reset_state = reset_state


@patch('rnn_h2h_bias_hook')
def rnn_h2h_bias_hook(dz):
    # The hidden-to-hidden projection with a bias: once there is a state, the step's tanh gets
    # a bias of its own added (a fourth parameter beside the book's three).
    def hook(layer, name, index, x, original):
        if name != 'tanh' or not layer._fault_had_state:
            return original(x)
        if getattr(layer, 'h_bias', None) is None:
            import numpy as np
            layer.h_bias = dz.Parameter(np.zeros(x.shape[-1]), name='h_bias')
        return original(x + layer.h_bias)
    dz.layers.RNN._fault_hook = hook


compose('rnn_h2h_bias', 'recurrent_step_hook', 'rnn_h2h_bias_hook')


@patch('rnn_no_truncation')
def rnn_no_truncation(dz):
    def unchain_backward(self):
        pass
    dz.Variable.unchain_backward = unchain_backward


@patch('rnn_hidden_stale_device')
def rnn_hidden_stale_device(dz):
    # The book's behaviour: to_gpu moves the parameters only; the hidden state stays behind.
    def to_gpu(self):
        dz.Layer.to_gpu(self)
    dz.layers.RNN.to_gpu = to_gpu


@patch('rnn_state_detached')
def rnn_state_detached(dz):
    # The stored state is cut from the graph at every step: no gradient flows back in time.
    original = dz.layers.RNN.forward

    def forward(self, x):
        h = original(self, x)
        self.h = dz.Variable(h.data)
        return h
    dz.layers.RNN.forward = forward


@patch('no_unchain_backward')
def no_unchain_backward(dz):
    del dz.Variable.unchain_backward


@patch('rnn_zero_state_host')
def rnn_zero_state_host(dz):
    # The first step starts from a zero hidden state made with NumPy: h2h(0) adds nothing, so
    # every host number is the book's, but on the device the host zeros meet device weights.
    # (The state's shape is the first step's output's.)
    import numpy as np
    original = dz.layers.RNN.forward

    def forward(self, x):
        if self.h is None:
            shape = original(self, x).shape
            self.h = dz.Variable(np.zeros(shape))
        return original(self, x)
    dz.layers.RNN.forward = forward


@patch('rnn_sigmoid_for_tanh_hook')
def rnn_sigmoid_for_tanh_hook(dz):
    # sigmoid where the RNN's tanh belongs.
    def hook(layer, name, index, x, original):
        return dz.functions.sigmoid(x) if name == 'tanh' else original(x)
    dz.layers.RNN._fault_hook = hook


@patch('rnn_recurrence_minus_half_hook')
def rnn_recurrence_minus_half_hook(dz):
    # x2h(x) - 0.5 * h2h(h) where x2h(x) + h2h(h) belongs. Whatever the layer's insides, its
    # step is tanh(a + r) with r the recurrent term: the step is run with the state (tanh gets
    # a + r) and without it (tanh gets a), and returns tanh(a - 0.5 r) = tanh(1.5 a - 0.5 (a + r)).
    seen = []

    def hook(layer, name, index, x, original):
        if name == 'tanh':
            seen.append(x)
        return original(x)
    dz.layers.RNN._fault_hook = hook
    forward = dz.layers.RNN.forward

    def patched(self, x):
        state = self.h
        if state is None:
            return forward(self, x)
        del seen[:]
        forward(self, x)
        self.h = None
        forward(self, x)
        if len(seen) != 2:
            raise RuntimeError('rnn_recurrence_minus_half does not apply: your RNN\'s step calls '
                               'functions.tanh {} times'.format(len(seen) // 2))
        with_state, without = seen
        self.h = dz.functions.tanh(1.5 * without - 0.5 * with_state)
        return self.h
    dz.layers.RNN.forward = patched


compose('rnn_sigmoid_for_tanh', 'recurrent_step_hook', 'rnn_sigmoid_for_tanh_hook')
compose('rnn_recurrence_minus_half', 'recurrent_step_hook', 'rnn_recurrence_minus_half_hook')


# -- step 60: LSTM and SeqDataLoader -------------------------------------------------------------
@patch('lstm_gate_swap_hook')
def lstm_gate_swap_hook(dz):
    # The forget and input gates (the step's first two sigmoids) exchanged once there is a
    # state: c = i·c + f·u. The first step, which uses i alone, is the book's. The step is run
    # once to see the two gates' inputs, then again from the same state with them exchanged.
    record = {}

    def hook(layer, name, index, x, original):
        if name != 'sigmoid' or index > 1 or not layer._fault_had_state:
            return original(x)
        if 'replay' in record:
            return original(record['replay'][1 - index])
        record.setdefault('seen', []).append(x)
        return original(x)
    dz.layers.LSTM._fault_hook = hook
    forward = dz.layers.LSTM.forward

    def patched(self, x):
        if getattr(self, 'h', None) is None:
            return forward(self, x)
        h, c = self.h, self.c
        record.clear()
        forward(self, x)
        if len(record.get('seen', ())) < 2:
            raise RuntimeError('lstm_gate_swap does not apply: your LSTM\'s step calls '
                               'functions.sigmoid fewer than twice')
        self.h, self.c = h, c
        record['replay'] = record['seen'][:2]
        try:
            return forward(self, x)
        finally:
            record.clear()
    dz.layers.LSTM.forward = patched


compose('lstm_gate_swap', 'recurrent_step_hook', 'lstm_gate_swap_hook')


@patch('lstm_candidate_sigmoid_hook')
def lstm_candidate_sigmoid_hook(dz):
    # The cell candidate u through sigmoid where tanh belongs. The candidate is the step's first
    # tanh (the second, tanh(c), needs the candidate first).
    def hook(layer, name, index, x, original):
        if name == 'tanh' and index == 0:
            return dz.functions.sigmoid(x)
        return original(x)
    dz.layers.LSTM._fault_hook = hook


compose('lstm_candidate_sigmoid', 'recurrent_step_hook', 'lstm_candidate_sigmoid_hook')


@patch('lstm_cell_not_reset')
def lstm_cell_not_reset(dz):
    def reset_state(self):
        self.h = None
        if not hasattr(self, 'c'):   # the constructor's call still creates the attribute
            self.c = None
    dz.layers.LSTM.reset_state = reset_state


@patch('lstm_h2x_bias_hook')
def lstm_h2x_bias_hook(dz):
    # The hidden projections with biases: once there is a state, each gate's nonlinearity (the
    # step's first four calls: three sigmoids and the candidate's tanh, in whatever order) gets
    # a bias of its own added — four parameters beyond the book's twelve.
    def hook(layer, name, index, x, original):
        gate = index if name == 'sigmoid' else 3 + index
        if not layer._fault_had_state or gate > 3:
            return original(x)
        attr = 'h_bias{}'.format(gate)
        if getattr(layer, attr, None) is None:
            import numpy as np
            setattr(layer, attr, dz.Parameter(np.zeros(x.shape[-1]), name=attr))
        return original(x + getattr(layer, attr))
    dz.layers.LSTM._fault_hook = hook


compose('lstm_h2x_bias', 'recurrent_step_hook', 'lstm_h2x_bias_hook')


@patch('lstm_cell_stale_device')
def lstm_cell_stale_device(dz):
    # to_gpu moves h but leaves the cell state c on the host.
    original = dz.layers.LSTM.to_gpu

    def to_gpu(self):
        original(self)
        if getattr(self, 'c', None) is not None:
            self.c = dz.Variable(dz.cuda.as_numpy(self.c.data))
    dz.layers.LSTM.to_gpu = to_gpu


@patch('lstm_zero_state_host')
def lstm_zero_state_host(dz):
    # The first step starts from zero h and c made with NumPy: h2f(0)... and f·0 add nothing,
    # so every host number is the book's, but on the device the host zeros meet device weights.
    # (The state's shape is the first step's output's.)
    import numpy as np
    original = dz.layers.LSTM.forward

    def forward(self, x):
        if self.h is None:
            zeros = np.zeros(original(self, x).shape)
            self.h, self.c = dz.Variable(zeros), dz.Variable(zeros.copy())
        return original(self, x)
    dz.layers.LSTM.forward = forward


@patch('lstm_cell_computed_twice')
def lstm_cell_computed_twice(dz):
    # The cell update written out twice: once inside tanh for h, once for the stored state.
    # Every value and gradient is the book's, but the stored c is not the one the loss's graph
    # holds, so loss.unchain_backward() never reaches it and it keeps its creator. (Here: the
    # stored c is the step's c times one, a new variable beside the graph's.)
    original = dz.layers.LSTM.forward

    def forward(self, x):
        h = original(self, x)
        self.c = self.c * 1.0
        return h
    dz.layers.LSTM.forward = forward


@patch('seqloader_jump')
def seqloader_jump(dz):
    # Streams start batch_size samples apart instead of jump = data_size // batch_size: element
    # i of batch k is sample (i * batch_size + k) mod N. Made of what the constructor was given
    # (the data set, the batch size) and the array module of the loader's own batch.
    SeqDataLoader = dz.dataloaders.SeqDataLoader
    init, step, start = SeqDataLoader.__init__, SeqDataLoader.__next__, SeqDataLoader.__iter__

    def __init__(self, dataset, batch_size, *args, **kwargs):
        init(self, dataset, batch_size, *args, **kwargs)
        self.__dict__['_fault_given'] = (dataset, batch_size)
        self.__dict__['_fault_k'] = 0

    def __iter__(self):
        self.__dict__['_fault_k'] = 0
        return start(self)

    def __next__(self):
        try:
            x, _ = step(self)
        except StopIteration:
            self.__dict__['_fault_k'] = 0
            raise
        dataset, batch = self._fault_given
        k = self._fault_k
        self.__dict__['_fault_k'] = k + 1
        examples = [dataset[(i * batch + k) % len(dataset)] for i in range(batch)]
        xp = dz.cuda.get_array_module(x)
        return xp.array([e[0] for e in examples]), xp.array([e[1] for e in examples])
    SeqDataLoader.__init__, SeqDataLoader.__iter__ = __init__, __iter__
    SeqDataLoader.__next__ = __next__


@patch('seqloader_not_exported')
def seqloader_not_exported(dz):
    # `from dezero.dataloaders import SeqDataLoader` missing from dezero/__init__.py.
    del dz.SeqDataLoader


@patch('seqloader_ignores_gpu')
def seqloader_ignores_gpu(dz):
    # The batch is stacked with np.array whatever self.gpu says.
    SeqDataLoader = dz.dataloaders.SeqDataLoader
    original = SeqDataLoader.__next__

    def __next__(self):
        x, t = original(self)
        return dz.cuda.as_numpy(x), dz.cuda.as_numpy(t)
    SeqDataLoader.__next__ = __next__


# -- the same faults in layers whose inner layers are not named as the book's --------------------
# (the faults of unchain_backward and SeqDataLoader touch no layer's insides: no such variant)
for _name in ('rnn_reset_noop', 'rnn_h2h_bias', 'rnn_hidden_stale_device', 'rnn_state_detached',
              'rnn_zero_state_host', 'rnn_sigmoid_for_tanh', 'rnn_recurrence_minus_half',
              'lstm_gate_swap', 'lstm_candidate_sigmoid', 'lstm_cell_not_reset', 'lstm_h2x_bias',
              'lstm_cell_stale_device', 'lstm_zero_state_host', 'lstm_cell_computed_twice'):
    compose(_name + '_renamed', 'recurrent_renamed', *COMPOSITES.get(_name, (_name,)))
