"""Faults of the functions on tensors (steps 37-51): element-wise functions and operators on
tensors, the shape functions, sums, matmul, linear, the losses, the activations, slicing and
accuracy.

Each patch receives the loaded `dezero` package and replaces or wraps one public name
(`dz.functions.transpose`, `dz.functions.mean_squared_error`, `dz.Variable.__getitem__`, ...),
importing what it needs in its own body (its source is copied into single-fault variants).
Functions are rebuilt from `dz.Function` with backward rules written in Variables, as the full
core requires.
"""
from dezero_grader.catalogue.faults import patch, patch_with


# -- step 37 --------------------------------------------------------------------------------------
@patch('seed_scalar')
def seed_scalar(dz):
    import numpy as np
    original = dz.Variable.backward

    def backward(self, *args, **kwargs):
        if self.grad is None:
            self.grad = dz.Variable(np.array(1.0, dtype=self.data.dtype))   # not ones_like(data)
        return original(self, *args, **kwargs)
    dz.Variable.backward = backward


@patch('sin_math_module')
def sin_math_module(dz):
    F = dz.functions

    class Sin(dz.Function):
        def forward(self, x):
            import math
            return math.sin(x)             # one number only: a TypeError for a tensor

        def backward(self, gy):
            x, = self.inputs
            return gy * F.cos(x)

    def sin(x):
        return Sin()(x)
    F.sin = sin


@patch('mul_grad_summed')
def mul_grad_summed(dz):
    import numpy as np

    class Mul(dz.Function):
        def forward(self, x0, x1):
            return x0 * x1

        def backward(self, gy):
            x0, x1 = self.inputs
            return (gy * x1).sum(), (gy * x0).sum()   # scalar thinking: one number per input

    def mul(x0, x1):
        if not isinstance(x1, dz.Variable):
            x1 = dz.Variable(np.asarray(x1, dtype=x0.data.dtype))
        return Mul()(x0, x1)
    dz.Variable.__mul__ = mul
    dz.Variable.__rmul__ = mul


@patch('sin_grad_sign')
def sin_grad_sign(dz):
    F = dz.functions

    class Sin(dz.Function):
        def forward(self, x):
            return dz.cuda.get_array_module(x).sin(x)

        def backward(self, gy):
            x, = self.inputs
            return gy * -F.cos(x)          # the sign of cos' = -sin carried over to sin' = cos

    def sin(x):
        return Sin()(x)
    F.sin = sin


# -- step 38 --------------------------------------------------------------------------------------
def transpose_wrong_backward(dz, backward):
    """F.transpose replaced by a Transpose whose forward is right and whose backward is wrong:
    'as_is' hands the output's gradient back untransposed, 'same_axes' transposes it with the
    same axes again instead of their inverse."""
    F = dz.functions

    class Transpose(dz.Function):
        def __init__(self, axes=None):
            self.axes = axes

        def forward(self, x):
            return x.transpose(self.axes)

        def backward(self, gy):
            if backward == 'as_is':
                return gy
            return F.transpose(gy, self.axes)

    def transpose(x, axes=None):
        return Transpose(axes)(x)
    F.transpose = transpose


patch_with('transpose_grad_untransposed', transpose_wrong_backward, backward='as_is')
patch_with('transpose_grad_axes', transpose_wrong_backward, backward='same_axes')


@patch('reshape_grad_missing')
def reshape_grad_missing(dz):
    F = dz.functions

    class Reshape(dz.Function):
        def __init__(self, shape):
            self.shape = tuple(shape)

        def forward(self, x):
            return x.reshape(self.shape)

        def backward(self, gy):
            return gy                      # left in the output's shape

    def reshape(x, shape):
        return Reshape(shape)(x)
    F.reshape = reshape


@patch('variable_reshape_no_tuple')
def variable_reshape_no_tuple(dz):
    def reshape(self, *shape):
        return dz.functions.reshape(self, shape)   # reshape((6,)) passes ((6,),)
    dz.Variable.reshape = reshape


# -- step 39 --------------------------------------------------------------------------------------
@patch('sum_grad_keepdims')
def sum_grad_keepdims(dz):
    F = dz.functions

    class Sum(dz.Function):
        def __init__(self, axis, keepdims):
            self.axis, self.keepdims = axis, keepdims

        def forward(self, x):
            self.x_shape = x.shape
            return x.sum(axis=self.axis, keepdims=self.keepdims)

        def backward(self, gy):
            # the summed axes are not put back before broadcasting (reshape_sum_backward)
            return F.broadcast_to(gy, self.x_shape)

    def sum(x, axis=None, keepdims=False):
        return Sum(axis, keepdims)(x)
    F.sum = sum


@patch('sum_axis_ignored')
def sum_axis_ignored(dz):
    F = dz.functions
    original = F.sum

    def sum(x, axis=None, keepdims=False):
        return original(x)                 # always the total
    F.sum = sum


# -- step 41 --------------------------------------------------------------------------------------
@patch('matmul_grad_x_untransposed')
def matmul_grad_x_untransposed(dz):
    F = dz.functions

    class MatMul(dz.Function):
        def forward(self, x, W):
            return x.dot(W)

        def backward(self, gy):
            x, W = self.inputs
            return F.matmul(gy, W), F.matmul(x.T, gy)   # gy·Wᵀ intended

    def matmul(x, W):
        return MatMul()(x, W)
    F.matmul = matmul


# -- step 42 --------------------------------------------------------------------------------------
@patch('mse_grad_sign')
def mse_grad_sign(dz):
    F = dz.functions

    class MeanSquaredError(dz.Function):
        def forward(self, x0, x1):
            diff = x0 - x1
            return (diff ** 2).sum() / len(diff)

        def backward(self, gy):
            x0, x1 = self.inputs
            diff = x0 - x1
            gx0 = gy * diff * (2. / len(diff))
            return gx0, gx0                # -gx0 intended for x1

    def mean_squared_error(x0, x1):
        return MeanSquaredError()(x0, x1)
    F.mean_squared_error = mean_squared_error


@patch('mse_grad_factor')
def mse_grad_factor(dz):
    F = dz.functions

    class MeanSquaredError(dz.Function):
        def forward(self, x0, x1):
            diff = x0 - x1
            return (diff ** 2).sum() / len(diff)

        def backward(self, gy):
            x0, x1 = self.inputs
            diff = x0 - x1
            gx0 = gy * diff * (1. / len(diff))  # the 2 of d(diff²) forgotten
            return gx0, -gx0

    def mean_squared_error(x0, x1):
        return MeanSquaredError()(x0, x1)
    F.mean_squared_error = mean_squared_error


# -- step 43 --------------------------------------------------------------------------------------
@patch('linear_bias_grad_unsummed')
def linear_bias_grad_unsummed(dz):
    F = dz.functions

    class Linear(dz.Function):
        def forward(self, x, W, b):
            y = x.dot(W)
            return y if b is None else y + b

        def backward(self, gy):
            x, W, b = self.inputs
            gb = None if b.data is None else gy   # sum_to(gy, b.shape) forgotten
            return F.matmul(gy, W.T), F.matmul(x.T, gy), gb

    def linear(x, W, b=None):
        return Linear()(x, W, b)
    F.linear = linear


@patch('linear_nobias_crash')
def linear_nobias_crash(dz):
    F = dz.functions

    class Linear(dz.Function):
        def forward(self, x, W, b):
            return x.dot(W) + b            # b is None without a bias: a TypeError

        def backward(self, gy):
            x, W, b = self.inputs
            return F.matmul(gy, W.T), F.matmul(x.T, gy), F.sum_to(gy, b.shape)

    def linear(x, W, b=None):
        return Linear()(x, W, b)
    F.linear = linear


@patch('linear_grad_w_torch_layout')
def linear_grad_w_torch_layout(dz):
    F = dz.functions
    original = F.linear

    def linear(x, W, b=None):
        y = original(x, W, b)
        f = y.creator
        backward = f.backward

        def torch_layout(gy):
            grads = list(backward(gy))
            grads[1] = F.matmul(gy.T, f.inputs[0])   # gy.T @ x: PyTorch's (out, in) weight
            return tuple(grads)
        f.backward = torch_layout
        return y
    F.linear = linear


@patch('exp_grad_uses_input')
def exp_grad_uses_input(dz):
    F = dz.functions
    xp_of = dz.cuda.get_array_module

    class Exp(dz.Function):
        def forward(self, x):
            return xp_of(x).exp(x)

        def backward(self, gy):
            x, = self.inputs
            return gy * x                  # gy * y intended, y = exp(x) the output

    def exp(x):
        return Exp()(x)
    F.exp = exp


@patch('sigmoid_grad_uses_input')
def sigmoid_grad_uses_input(dz):
    F = dz.functions
    xp_of = dz.cuda.get_array_module

    class Sigmoid(dz.Function):
        def forward(self, x):
            return xp_of(x).tanh(x * 0.5) * 0.5 + 0.5

        def backward(self, gy):
            x, = self.inputs
            return gy * x * (1 - x)        # y(1 - y) intended, y the output

    def sigmoid(x):
        return Sigmoid()(x)
    F.sigmoid = sigmoid


# -- step 47 --------------------------------------------------------------------------------------
@patch('getitem_grad_overwrite')
def getitem_grad_overwrite(dz):
    F = dz.functions
    xp_of = dz.cuda.get_array_module

    class GetItem(dz.Function):
        def __init__(self, slices):
            self.slices = slices

        def forward(self, x):
            return x[self.slices]

        def backward(self, gy):
            x, = self.inputs
            gx = xp_of(gy.data).zeros(x.shape, dtype=gy.dtype)
            gx[self.slices] = gy.data      # assigned: repeated indices keep one contribution
            return dz.Variable(gx)

    def get_item(x, slices):
        return GetItem(slices)(x)
    F.get_item = get_item
    dz.Variable.__getitem__ = get_item


@patch('getitem_grad_unscattered')
def getitem_grad_unscattered(dz):
    F = dz.functions

    class GetItem(dz.Function):
        def __init__(self, slices):
            self.slices = slices

        def forward(self, x):
            return x[self.slices]

        def backward(self, gy):
            return gy                      # not put back into an input-shaped array of zeros

    def get_item(x, slices):
        return GetItem(slices)(x)
    F.get_item = get_item
    dz.Variable.__getitem__ = get_item


@patch('clip_grad_unmasked')
def clip_grad_unmasked(dz):
    F = dz.functions
    xp_of = dz.cuda.get_array_module

    class Clip(dz.Function):
        def __init__(self, x_min, x_max):
            self.x_min, self.x_max = x_min, x_max

        def forward(self, x):
            return xp_of(x).clip(x, self.x_min, self.x_max)

        def backward(self, gy):
            return gy                      # clipped elements must get no gradient

    def clip(x, x_min, x_max):
        return Clip(x_min, x_max)(x)
    F.clip = clip


@patch('clip_grad_mask_only')
def clip_grad_mask_only(dz):
    F = dz.functions
    original = F.clip

    def clip(x, x_min, x_max):
        y = original(x, x_min, x_max)
        f = y.creator

        def backward(gy):
            x, = f.inputs
            return dz.Variable((x.data >= x_min) & (x.data <= x_max))   # gy * mask intended
        f.backward = backward
        return y
    F.clip = clip


@patch('log_grad_times_x')
def log_grad_times_x(dz):
    F = dz.functions
    xp_of = dz.cuda.get_array_module

    class Log(dz.Function):
        def forward(self, x):
            return xp_of(x).log(x)

        def backward(self, gy):
            x, = self.inputs
            return gy * x                  # d log(x) = 1/x: gy / x

    def log(x):
        return Log()(x)
    F.log = log


@patch('softmax_wrong_axis')
def softmax_wrong_axis(dz):
    F = dz.functions
    original = F.softmax

    def softmax(x, axis=1):
        return original(x, axis=0)         # normalised over the batch, not the classes
    F.softmax = softmax


@patch('softmax_simple_wrong_axis')
def softmax_simple_wrong_axis(dz):
    F = dz.functions
    original = F.softmax_simple

    def softmax_simple(x, axis=1):
        return original(x, axis=0)         # the first form, normalised over the batch too
    F.softmax_simple = softmax_simple


# -- step 50: accuracy ----------------------------------------------------------------------------
@patch('accuracy_wrong_axis')
def accuracy_wrong_axis(dz):
    F = dz.functions

    def accuracy(y, t):
        y, t = dz.as_variable(y), dz.as_variable(t)
        pred = y.data.argmax(axis=0)[:len(t.data)].reshape(t.shape)   # axis 1 intended
        return dz.Variable(dz.as_array((pred == t.data).mean()))
    F.accuracy = accuracy


@patch('accuracy_counts')
def accuracy_counts(dz):
    F = dz.functions

    def accuracy(y, t):
        y, t = dz.as_variable(y), dz.as_variable(t)
        pred = y.data.argmax(axis=1).reshape(t.shape)
        return dz.Variable(dz.as_array((pred == t.data).sum()))   # .mean() intended
    F.accuracy = accuracy


# -- step 51: ReLU --------------------------------------------------------------------------------
@patch('relu_grad_mask')
def relu_grad_mask(dz):
    F = dz.functions
    xp_of = dz.cuda.get_array_module

    class ReLU(dz.Function):
        def forward(self, x):
            return xp_of(x).maximum(x, 0.0)

        def backward(self, gy):
            return gy                      # the x > 0 mask forgotten

    def relu(x):
        return ReLU()(x)
    F.relu = relu


@patch('relu_in_place')
def relu_in_place(dz):
    F = dz.functions

    class ReLU(dz.Function):
        def forward(self, x):
            x[x < 0] = 0                   # clips the caller's array: x.data changes too
            return x

        def backward(self, gy):
            x, = self.inputs
            return gy * (x.data > 0)

    def relu(x):
        return ReLU()(x)
    F.relu = relu
