"""Layers (steps 44-60): objects that hold Parameters and apply functions to their inputs.

A Layer records every Parameter or sub-Layer assigned to it as an attribute, so a model can list
its parameters (`params()`), clear their gradients, move them between devices and save or load
them as a flat `parent/child/name` archive. Optimizers read the parameters; models are Layers.
The state that the book's code leaves behind on a device switch (nested parameters' grads, RNN
and LSTM hidden states) moves with the layer here, and saving never moves the model.
"""
import os
import uuid
import weakref

import numpy as np

import dezero.functions as F
from dezero import cuda
from dezero.core import Parameter, Variable
from dezero.utils import pair


# =============================================================================
# Layer (base class)
# =============================================================================
class Layer:
    def __init__(self):
        # Attribute names in assignment order (the book uses a set, whose order changes
        # between processes); the order fixes `params()` and the keys of saved files.
        self._params = []

    def __setattr__(self, name, value):
        if isinstance(value, (Parameter, Layer)):
            if name not in self._params:
                self._params.append(name)
        elif name != '_params' and name in self._params:
            self._params.remove(name)  # rebound to a plain value: no longer a parameter
        super().__setattr__(name, value)

    def __call__(self, *inputs):
        outputs = self.forward(*inputs)
        if not isinstance(outputs, tuple):
            outputs = (outputs,)
        self.inputs = [weakref.ref(x) for x in inputs]
        self.outputs = [weakref.ref(y) for y in outputs]
        return outputs if len(outputs) > 1 else outputs[0]

    def forward(self, inputs):
        raise NotImplementedError()

    def params(self):
        for name in self._params:
            obj = self.__dict__[name]
            if isinstance(obj, Layer):
                yield from obj.params()
            else:
                yield obj

    def cleargrads(self):
        for param in self.params():
            param.cleargrad()

    def to_cpu(self):
        # Each child moves itself, so sub-layers with state of their own (RNN, LSTM) move it too.
        for name in self._params:
            self.__dict__[name].to_cpu()

    def to_gpu(self):
        for name in self._params:
            self.__dict__[name].to_gpu()

    def _flatten_params(self, params_dict, parent_key=""):
        for name in self._params:
            obj = self.__dict__[name]
            key = parent_key + '/' + name if parent_key else name
            if isinstance(obj, Layer):
                obj._flatten_params(params_dict, key)
            else:
                params_dict[key] = obj

    def save_weights(self, path):
        """Write every parameter to `path` (`.npz` appended when missing) as host arrays.

        The model stays on its device. The file appears complete or not at all: it is written
        under a temporary name in the same folder and renamed into place, and removed again
        on any error, Ctrl-C included."""
        params_dict = {}
        self._flatten_params(params_dict)
        array_dict = {}
        for key, param in params_dict.items():
            if param.data is None:
                raise ValueError(
                    'cannot save parameter {!r}: it was never initialised (its size is inferred '
                    'from the first input); run a forward pass before saving'.format(key))
            array_dict[key] = cuda.as_numpy(param.data)

        path = os.fspath(path)
        if not path.endswith('.npz'):
            path += '.npz'  # what np.savez_compressed does with a file name
        tmp_path = '{}.{}.tmp'.format(path, uuid.uuid4().hex)
        try:
            with open(tmp_path, 'xb') as f:
                np.savez_compressed(f, **array_dict)
            os.replace(tmp_path, path)
        except BaseException:
            if os.path.exists(tmp_path):
                os.remove(tmp_path)
            raise

    def load_weights(self, path):
        """Copy the arrays of a `save_weights` file (with or without `.npz` in `path`) into the
        parameters, on the device where the model lives. Extra keys in the file are ignored; a
        missing key or a shape that differs raises before any parameter is changed."""
        path = os.fspath(path)
        if not os.path.exists(path) and os.path.exists(path + '.npz'):
            path += '.npz'
        params_dict = {}
        self._flatten_params(params_dict)

        arrays = {}
        with np.load(path, allow_pickle=False) as npz:
            for key, param in params_dict.items():
                if key not in npz.files:
                    raise KeyError('parameter {!r} is missing from {} (the file holds {})'.format(
                        key, path, sorted(npz.files)))
                array = npz[key]
                if param.data is not None and array.shape != param.data.shape:
                    raise ValueError(
                        'parameter {!r} in {}: expected shape {}, found {}'.format(
                            key, path, param.data.shape, array.shape))
                arrays[key] = array

        model_xp = _model_array_module(params_dict.values())
        for key, param in params_dict.items():
            xp = model_xp if param.data is None else cuda.get_array_module(param.data)
            param.data = xp.array(arrays.pop(key))  # a copy of its own, on the model's device


def _model_array_module(params):
    """The array module of the model's initialised parameters (NumPy when there are none), used
    for lazy parameters that have no data yet to ask."""
    for param in params:
        if param.data is not None:
            return cuda.get_array_module(param.data)
    return np


def _state_on(state, convert):
    """A recurrent state moved by `convert` (`cuda.as_numpy` or `cuda.as_cupy`).

    A state that really changes device becomes a new leaf Variable: the graph behind it was
    built on the old device and cannot be back-propagated on the new one."""
    if state is None:
        return None
    data = convert(state.data)
    if cuda.get_array_module(data) is cuda.get_array_module(state.data):
        return state  # already there
    return Variable(data)


# =============================================================================
# Linear / Conv2d / Deconv2d
# =============================================================================
class Linear(Layer):
    def __init__(self, out_size, nobias=False, dtype=np.float32, in_size=None):
        super().__init__()
        self.in_size = in_size
        self.out_size = out_size
        self.dtype = dtype

        self.W = Parameter(None, name='W')
        if self.in_size is not None:
            self._init_W()

        if nobias:
            self.b = None
        else:
            self.b = Parameter(np.zeros(out_size, dtype=dtype), name='b')

    def _init_W(self, xp=np):
        I, O = self.in_size, self.out_size
        # Scale before the cast: scaling a float32 array by a NumPy float64 would promote it.
        W_data = (xp.random.randn(I, O) * np.sqrt(1 / I)).astype(self.dtype)
        self.W.data = W_data

    def forward(self, x):
        if self.W.data is None:
            self.in_size = x.shape[1]
            xp = cuda.get_array_module(x)
            self._init_W(xp)

        y = F.linear(x, self.W, self.b)
        return y


class Conv2d(Layer):
    def __init__(self, out_channels, kernel_size, stride=1, pad=0, nobias=False,
                 dtype=np.float32, in_channels=None):
        super().__init__()
        self.in_channels = in_channels
        self.out_channels = out_channels
        self.kernel_size = kernel_size
        self.stride = stride
        self.pad = pad
        self.dtype = dtype

        self.W = Parameter(None, name='W')
        if in_channels is not None:
            self._init_W()

        if nobias:
            self.b = None
        else:
            self.b = Parameter(np.zeros(out_channels, dtype=dtype), name='b')

    def _init_W(self, xp=np):
        C, OC = self.in_channels, self.out_channels
        KH, KW = pair(self.kernel_size)
        scale = np.sqrt(1 / (C * KH * KW))
        W_data = (xp.random.randn(OC, C, KH, KW) * scale).astype(self.dtype)
        self.W.data = W_data

    def forward(self, x):
        if self.W.data is None:
            self.in_channels = x.shape[1]
            xp = cuda.get_array_module(x)
            self._init_W(xp)

        y = F.conv2d(x, self.W, self.b, self.stride, self.pad)
        return y


class Deconv2d(Layer):
    def __init__(self, out_channels, kernel_size, stride=1, pad=0, nobias=False,
                 dtype=np.float32, in_channels=None):
        super().__init__()
        self.in_channels = in_channels
        self.out_channels = out_channels
        self.kernel_size = kernel_size
        self.stride = stride
        self.pad = pad
        self.dtype = dtype

        self.W = Parameter(None, name='W')
        if in_channels is not None:
            self._init_W()

        if nobias:
            self.b = None
        else:
            self.b = Parameter(np.zeros(out_channels, dtype=dtype), name='b')

    def _init_W(self, xp=np):
        C, OC = self.in_channels, self.out_channels
        KH, KW = pair(self.kernel_size)
        scale = np.sqrt(1 / (C * KH * KW))
        W_data = (xp.random.randn(C, OC, KH, KW) * scale).astype(self.dtype)
        self.W.data = W_data

    def forward(self, x):
        if self.W.data is None:
            self.in_channels = x.shape[1]
            xp = cuda.get_array_module(x)
            self._init_W(xp)

        y = F.deconv2d(x, self.W, self.b, self.stride, self.pad)
        return y


# =============================================================================
# RNN / LSTM
# =============================================================================
class RNN(Layer):
    def __init__(self, hidden_size, in_size=None):
        super().__init__()
        self.x2h = Linear(hidden_size, in_size=in_size)
        # h2h reads the hidden state, so its input size is hidden_size (the book passes
        # in_size here, which breaks the second step whenever in_size != hidden_size).
        self.h2h = Linear(hidden_size, in_size=hidden_size, nobias=True)
        self.h = None

    def reset_state(self):
        self.h = None

    def forward(self, x):
        if self.h is None:
            h_new = F.tanh(self.x2h(x))
        else:
            h_new = F.tanh(self.x2h(x) + self.h2h(self.h))
        self.h = h_new
        return h_new

    def to_cpu(self):
        super().to_cpu()
        self.h = _state_on(self.h, cuda.as_numpy)

    def to_gpu(self):
        super().to_gpu()
        self.h = _state_on(self.h, cuda.as_cupy)


class LSTM(Layer):
    def __init__(self, hidden_size, in_size=None):
        super().__init__()
        H, I = hidden_size, in_size
        self.x2f = Linear(H, in_size=I)
        self.x2i = Linear(H, in_size=I)
        self.x2o = Linear(H, in_size=I)
        self.x2u = Linear(H, in_size=I)
        self.h2f = Linear(H, in_size=H, nobias=True)
        self.h2i = Linear(H, in_size=H, nobias=True)
        self.h2o = Linear(H, in_size=H, nobias=True)
        self.h2u = Linear(H, in_size=H, nobias=True)
        self.reset_state()

    def reset_state(self):
        self.h = None
        self.c = None

    def forward(self, x):
        if self.h is None:
            f = F.sigmoid(self.x2f(x))
            i = F.sigmoid(self.x2i(x))
            o = F.sigmoid(self.x2o(x))
            u = F.tanh(self.x2u(x))
        else:
            f = F.sigmoid(self.x2f(x) + self.h2f(self.h))
            i = F.sigmoid(self.x2i(x) + self.h2i(self.h))
            o = F.sigmoid(self.x2o(x) + self.h2o(self.h))
            u = F.tanh(self.x2u(x) + self.h2u(self.h))

        if self.c is None:
            c_new = i * u
        else:
            c_new = (f * self.c) + (i * u)

        h_new = o * F.tanh(c_new)

        self.h, self.c = h_new, c_new
        return h_new

    def to_cpu(self):
        super().to_cpu()
        self.h = _state_on(self.h, cuda.as_numpy)
        self.c = _state_on(self.c, cuda.as_numpy)

    def to_gpu(self):
        super().to_gpu()
        self.h = _state_on(self.h, cuda.as_cupy)
        self.c = _state_on(self.c, cuda.as_cupy)


# =============================================================================
# EmbedID / BatchNorm
# =============================================================================
class EmbedID(Layer):
    def __init__(self, in_size, out_size):
        super().__init__()
        self.W = Parameter(np.random.randn(in_size, out_size), name='W')

    def forward(self, x):
        y = F.embed_id(x, self.W)
        return y


class BatchNorm(Layer):
    def __init__(self):
        super().__init__()
        # The running statistics are Parameters so that saving and device moves include them;
        # they never receive a gradient, so optimizers leave them alone.
        self.avg_mean = Parameter(None, name='avg_mean')
        self.avg_var = Parameter(None, name='avg_var')
        self.gamma = Parameter(None, name='gamma')
        self.beta = Parameter(None, name='beta')

    def _init_params(self, x):
        xp = cuda.get_array_module(x)
        D = x.shape[1]
        if self.avg_mean.data is None:
            self.avg_mean.data = xp.zeros(D, dtype=x.dtype)
        if self.avg_var.data is None:
            self.avg_var.data = xp.ones(D, dtype=x.dtype)
        if self.gamma.data is None:
            self.gamma.data = xp.ones(D, dtype=x.dtype)
        if self.beta.data is None:
            self.beta.data = xp.zeros(D, dtype=x.dtype)

    def forward(self, x):
        if self.avg_mean.data is None:
            self._init_params(x)
        # F.batch_norm updates the running statistics in place, during training only.
        return F.batch_norm(x, self.gamma, self.beta, self.avg_mean.data, self.avg_var.data)
