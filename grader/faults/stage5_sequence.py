"""Faults of steps 59-60: the RNN and LSTM layers, truncated BPTT, and SeqDataLoader.

Each patch replaces or wraps one name of the book's API (`layers.RNN`, `layers.LSTM`,
`Variable.unchain_backward`, `SeqDataLoader.__next__`) and imports what it needs inside its
body: its source is copied verbatim into single-fault variants.
"""
from grader.faults import patch


# -- step 59: RNN --------------------------------------------------------------------------------
@patch('rnn_reset_noop')
def rnn_reset_noop(dz):
    def reset_state(self):
        pass
    dz.layers.RNN.reset_state = reset_state


@patch('rnn_h2h_bias')
def rnn_h2h_bias(dz):
    # h2h built with a bias: the layer has four parameters instead of the book's three.
    original = dz.layers.RNN.__init__

    def __init__(self, hidden_size, in_size=None):
        original(self, hidden_size, in_size)
        self.h2h = dz.layers.Linear(hidden_size)
    dz.layers.RNN.__init__ = __init__


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
    import numpy as np
    original = dz.layers.RNN.forward

    def forward(self, x):
        if self.h is None:
            self.h = dz.Variable(np.zeros((len(x), self.h2h.out_size)))
        return original(self, x)
    dz.layers.RNN.forward = forward


# -- step 60: LSTM and SeqDataLoader -------------------------------------------------------------
@patch('lstm_gate_swap')
def lstm_gate_swap(dz):
    # The input and forget gates swapped.
    def forward(self, x):
        F = dz.functions
        if self.h is None:
            f = F.sigmoid(self.x2i(x))
            i = F.sigmoid(self.x2f(x))
            o = F.sigmoid(self.x2o(x))
            u = F.tanh(self.x2u(x))
        else:
            f = F.sigmoid(self.x2i(x) + self.h2i(self.h))
            i = F.sigmoid(self.x2f(x) + self.h2f(self.h))
            o = F.sigmoid(self.x2o(x) + self.h2o(self.h))
            u = F.tanh(self.x2u(x) + self.h2u(self.h))
        c_new = i * u if self.c is None else f * self.c + i * u
        h_new = o * F.tanh(c_new)
        self.h, self.c = h_new, c_new
        return h_new
    dz.layers.LSTM.forward = forward


@patch('lstm_cell_not_reset')
def lstm_cell_not_reset(dz):
    def reset_state(self):
        self.h = None
        if not hasattr(self, 'c'):   # the constructor's call still creates the attribute
            self.c = None
    dz.layers.LSTM.reset_state = reset_state


@patch('lstm_h2x_bias')
def lstm_h2x_bias(dz):
    # h2f, h2i, h2o, h2u built with biases: 16 parameters instead of the book's 12.
    original = dz.layers.LSTM.__init__

    def __init__(self, hidden_size, in_size=None):
        original(self, hidden_size, in_size)
        for gate in ('f', 'i', 'o', 'u'):
            setattr(self, 'h2' + gate, dz.layers.Linear(hidden_size, in_size=hidden_size))
    dz.layers.LSTM.__init__ = __init__


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
    import numpy as np
    original = dz.layers.LSTM.forward

    def forward(self, x):
        if self.h is None:
            zeros = np.zeros((len(x), self.h2f.out_size))
            self.h, self.c = dz.Variable(zeros), dz.Variable(zeros.copy())
        return original(self, x)
    dz.layers.LSTM.forward = forward


@patch('lstm_cell_computed_twice')
def lstm_cell_computed_twice(dz):
    # The cell update written out twice: once inside tanh for h, once for the stored state.
    # Every value and gradient is the book's, but the stored c is not the one the loss's graph
    # holds, so loss.unchain_backward() never reaches it and it keeps its creator.
    def forward(self, x):
        F = dz.functions
        gate = {}
        for g in ('f', 'i', 'o', 'u'):
            pre = getattr(self, 'x2' + g)(x)
            if self.h is not None:
                pre = pre + getattr(self, 'h2' + g)(self.h)
            gate[g] = F.tanh(pre) if g == 'u' else F.sigmoid(pre)
        f, i, o, u = gate['f'], gate['i'], gate['o'], gate['u']
        if self.c is None:
            h_new = o * F.tanh(i * u)
            self.c = i * u
        else:
            h_new = o * F.tanh(f * self.c + i * u)
            self.c = f * self.c + i * u
        self.h = h_new
        return h_new
    dz.layers.LSTM.forward = forward


@patch('seqloader_jump')
def seqloader_jump(dz):
    # Streams start batch_size samples apart instead of jump = data_size // batch_size.
    import numpy as np

    def __next__(self):
        if self.iteration >= self.max_iter:
            self.reset()
            raise StopIteration
        batch_index = [(i * self.batch_size + self.iteration) % self.data_size
                       for i in range(self.batch_size)]
        batch = [self.dataset[i] for i in batch_index]
        xp = dz.cuda.cupy if self.gpu else np
        x = xp.array([example[0] for example in batch])
        t = xp.array([example[1] for example in batch])
        self.iteration += 1
        return x, t
    dz.dataloaders.SeqDataLoader.__next__ = __next__


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
