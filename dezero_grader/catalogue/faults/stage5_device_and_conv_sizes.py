"""Faults of step 52 (the device: arrays, layers, loaders and optimizers on the GPU) and step 55
(the convolution arithmetic: `get_conv_outsize`, `pair`); a few of them serve other steps too
(the loader faults step 50, `pair_tuple` step 57, `gpu_optimizer_state_host` step 59).

Every patch reads only public names (`dz.Variable`, `dz.Layer`, `dz.functions.exp`,
`dz.cuda.get_array_module`, `dz.utils.get_conv_outsize`, ...) and imports what it needs inside
its own body: its source is copied verbatim into single-fault variants.
"""
from dezero_grader.catalogue.faults import patch


# -- any step: the book's machine has no CuPy -----------------------------------------------------
@patch('cupy_needed_at_import')
def cupy_needed_at_import(dz):
    # an unguarded import, as in a package written on a machine with a GPU: on the book's
    # machine (no CuPy) the package does not import; where CuPy is, nothing else changes
    import cupy
    dz.__dict__.setdefault('_dz_cupy', cupy)


# -- step 52: GPU --------------------------------------------------------------------------------
@patch('gpu_grad_on_host')
def gpu_grad_on_host(dz):
    import numpy as np
    Variable = dz.Variable
    original = Variable.backward

    def backward(self, *args, **kwargs):
        if self.grad is None:
            self.grad = Variable(np.ones(self.data.shape, dtype=self.data.dtype))
        return original(self, *args, **kwargs)
    Variable.backward = backward


@patch('gpu_layer_shallow')
def gpu_layer_shallow(dz):
    def to_gpu(self):
        for value in list(vars(self).values()):
            if isinstance(value, dz.Parameter):
                value.to_gpu()
    dz.Layer.to_gpu = to_gpu


@patch('gpu_loader_ignores_device')
def gpu_loader_ignores_device(dz):
    original = dz.DataLoader.__next__

    def __next__(self):
        x, t = original(self)
        return dz.cuda.as_numpy(x), dz.cuda.as_numpy(t)

    def to_gpu(self):
        pass
    dz.DataLoader.__next__ = __next__
    dz.DataLoader.to_gpu = to_gpu


@patch('gpu_function_hardcodes_numpy')
def gpu_function_hardcodes_numpy(dz):
    import numpy as np
    F = dz.functions
    original = F.exp

    def exp(x):
        y = original(x)
        y.data = np.exp(dz.cuda.as_numpy(x.data if hasattr(x, 'data') else x))
        return y
    F.exp = exp


@patch('gpu_getitem_grad_host')
def gpu_getitem_grad_host(dz):
    import numpy as np
    F = dz.functions

    class HostGetItem(dz.Function):
        def __init__(self, slices):
            self.slices = slices

        def forward(self, x):
            self.in_shape, self.in_dtype = x.shape, x.dtype
            return x[self.slices]

        def backward(self, gy):
            gx = np.zeros(self.in_shape, dtype=self.in_dtype)
            np.add.at(gx, self.slices, np.asarray(gy.data))
            return dz.Variable(gx)

    def get_item(x, slices):
        return HostGetItem(slices)(x)
    F.get_item = get_item
    dz.Variable.__getitem__ = get_item


@patch('gpu_to_cpu_noop')
def gpu_to_cpu_noop(dz):
    def to_cpu(self):
        pass
    dz.Variable.to_cpu = to_cpu


@patch('gpu_array_module_variable')
def gpu_array_module_variable(dz):
    import numpy as np
    original = dz.cuda.get_array_module

    def get_array_module(x):
        if isinstance(x, dz.Variable):
            return np
        return original(x)
    dz.cuda.get_array_module = get_array_module


@patch('gpu_as_array_rejects_device')
def gpu_as_array_rejects_device(dz):
    import numpy as np
    original = dz.Variable.__init__

    def __init__(self, data, *args, **kwargs):
        if data is not None and not isinstance(data, np.ndarray):
            raise TypeError('{} is not supported'.format(type(data)))
        original(self, data, *args, **kwargs)
    dz.Variable.__init__ = __init__


@patch('gpu_optimizer_state_stale')
def gpu_optimizer_state_stale(dz):
    # The book's MomentumSGD: state created on the first update, never moved afterwards.
    def update_one(self, param):
        store = self.__dict__.setdefault('_fault_vs', {})
        key = id(param)
        if key not in store:
            store[key] = dz.cuda.get_array_module(param.data).zeros_like(param.data)
        v = store[key]
        v *= self.momentum
        v -= self.lr * param.grad.data
        param.data += v
    dz.optimizers.MomentumSGD.update_one = update_one


@patch('gpu_training_cross_device')
def gpu_training_cross_device(dz):
    # SGD that updates a host copy: after the first step on the device, the parameters silently
    # live on the host again.
    def update_one(self, param):
        param.data = dz.cuda.as_numpy(param.data) - self.lr * dz.cuda.as_numpy(param.grad.data)
    dz.optimizers.SGD.update_one = update_one


@patch('gpu_variable_keeps_host_copy')
def gpu_variable_keeps_host_copy(dz):
    # Variable(x) normalises its data with cuda.as_numpy "so that printing works": a device
    # array handed to Variable() comes back to the host, and every function computes there.
    original = dz.Variable.__init__

    def __init__(self, data, *args, **kwargs):
        original(self, data, *args, **kwargs)
        if self.data is not None:
            self.data = dz.cuda.as_numpy(self.data)
    dz.Variable.__init__ = __init__


# -- step 55: convolution arithmetic -------------------------------------------------------------
@patch('conv_outsize_off_by_one')
def conv_outsize_off_by_one(dz):
    def get_conv_outsize(input_size, kernel_size, stride, pad):
        return (input_size + pad * 2 - kernel_size) // stride
    dz.utils.get_conv_outsize = get_conv_outsize


@patch('conv_outsize_true_div')
def conv_outsize_true_div(dz):
    def get_conv_outsize(input_size, kernel_size, stride, pad):
        return (input_size + pad * 2 - kernel_size) / stride + 1
    dz.utils.get_conv_outsize = get_conv_outsize


@patch('conv_outsize_pad_once')
def conv_outsize_pad_once(dz):
    def get_conv_outsize(input_size, kernel_size, stride, pad):
        return (input_size + pad - kernel_size) // stride + 1
    dz.utils.get_conv_outsize = get_conv_outsize


@patch('pair_tuple')
def pair_tuple(dz):
    def pair(x):
        if isinstance(x, tuple):
            return x
        return (x, 1)
    dz.utils.pair = pair


@patch('cuda_as_cupy_missing')
def cuda_as_cupy_missing(dz):
    del dz.cuda.as_cupy


@patch('conv_outsize_missing')
def conv_outsize_missing(dz):
    del dz.utils.get_conv_outsize


@patch('gpu_optimizer_state_host')
def gpu_optimizer_state_host(dz):
    # Adam whose moment estimates are created with NumPy whatever the parameter's device.
    import numpy as np

    def update_one(self, param):
        ms = self.__dict__.setdefault('_fault_ms', {})
        vs = self.__dict__.setdefault('_fault_vs', {})
        key = id(param)
        if key not in ms:
            ms[key] = np.zeros(param.data.shape, dtype=param.data.dtype)
            vs[key] = np.zeros(param.data.shape, dtype=param.data.dtype)
        m, v, grad = ms[key], vs[key], param.grad.data
        m += (1 - self.beta1) * (grad - m)
        v += (1 - self.beta2) * (grad * grad - v)
        param.data -= self.lr * m / (v ** 0.5 + self.eps)
    dz.optimizers.Adam.update_one = update_one


@patch('loader_last_batch')
def loader_last_batch(dz):
    # max_iter computed with floor division: the last, smaller batch is dropped.
    original = dz.DataLoader.reset

    def reset(self):
        original(self)
        self.max_iter = self.data_size // self.batch_size
    dz.DataLoader.reset = reset


@patch('loader_reset')
def loader_reset(dz):
    # The order is drawn once: later epochs repeat it (reset does not reshuffle).
    original = dz.DataLoader.reset

    def reset(self):
        first = getattr(self, '_fault_index', None)
        original(self)
        if first is not None:
            self.index = first
        self._fault_index = self.index
    dz.DataLoader.reset = reset
