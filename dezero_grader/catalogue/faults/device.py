"""Faults of the device (step 52 on): CuPy at import, arrays, layers, loaders and optimizers on
the GPU, and the device faults of the convolution (step 57) and of Adam (step 59).

Every patch reads only public names (`dz.Variable`, `dz.Layer`, `dz.functions.exp`,
`dz.cuda.get_array_module`, ...) and imports what it needs inside its own body: its source is
copied verbatim into single-fault variants.
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


@patch('cuda_as_cupy_missing')
def cuda_as_cupy_missing(dz):
    del dz.cuda.as_cupy


# -- steps 57-59: convolution, pooling and Adam on the GPU ----------------------------------------
@patch('max_on_host')
def max_on_host(dz):
    # Max over an axis brings device data to the host and computes there (pooling_simple, which
    # takes its window maxima with Variable.max, then gives host outputs for device inputs).
    import numpy as np
    original = dz.functions.max

    def max_(x, axis=None, keepdims=False):
        x = dz.as_variable(x)
        if dz.cuda.get_array_module(x) is not np:
            x = dz.Variable(dz.cuda.as_numpy(x.data))
        return original(x, axis=axis, keepdims=keepdims)
    dz.functions.max = max_
    dz.Variable.max = max_


@patch('conv2d_to_gpu_new_params')
def conv2d_to_gpu_new_params(dz):
    # Conv2d moves its weights by building new Parameters from device copies (written to cope
    # with a W that is still None): the values move, but an optimizer's state is kept per
    # parameter object, so the moved layer's momentum silently starts again from zero.
    def to_gpu(self):
        for name in ('W', 'b'):
            param = getattr(self, name, None)
            if param is not None and param.data is not None:
                setattr(self, name, dz.Parameter(dz.cuda.as_cupy(param.data), name=name))
    dz.layers.Conv2d.to_gpu = to_gpu


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
