"""The full core (step 32 onward): Variable, Function, Config and the arithmetic operators.

Gradients are Variables, and every backward rule is written with Variables, so that running a
backward pass under `create_graph=True` records a graph of its own: that is what makes
higher-order derivatives work. Device-aware from step 52 (the array module is chosen from the
data), train/test mode from step 54, truncated BPTT (`unchain_backward`) from step 59.
"""
import contextlib
import heapq
import itertools
import weakref

import numpy as np

import dezero
from dezero import cuda


# =============================================================================
# Config
# =============================================================================
class Config:
    enable_backprop = True
    train = True


@contextlib.contextmanager
def using_config(name, value):
    old_value = getattr(Config, name)
    setattr(Config, name, value)
    try:
        yield
    finally:
        setattr(Config, name, old_value)


def no_grad():
    return using_config('enable_backprop', False)


def test_mode():
    return using_config('train', False)


# =============================================================================
# Variable / Parameter
# =============================================================================
class Variable:
    __array_priority__ = 200

    def __init__(self, data, name=None):
        if data is not None and not isinstance(data, cuda.array_types):
            raise TypeError('{} is not supported'.format(type(data)))
        self.data = data
        self.name = name
        self.grad = None
        self.creator = None
        self.generation = 0

    @property
    def shape(self):
        return self.data.shape

    @property
    def ndim(self):
        return self.data.ndim

    @property
    def size(self):
        return self.data.size

    @property
    def dtype(self):
        return self.data.dtype

    def __len__(self):
        return len(self.data)

    def __repr__(self):
        if self.data is None:
            return 'variable(None)'
        body = str(self.data).replace('\n', '\n' + ' ' * 9)
        return 'variable(' + body + ')'

    def set_creator(self, func):
        self.creator = func
        self.generation = func.generation + 1

    def unchain(self):
        self.creator = None

    def cleargrad(self):
        self.grad = None

    def backward(self, retain_grad=False, create_graph=False):
        if self.grad is None:
            xp = cuda.get_array_module(self.data)
            self.grad = Variable(xp.ones_like(self.data))
        if self.creator is None:
            return

        # Functions are taken highest generation first; the counter keeps the heap from ever
        # comparing two Function objects and makes the order deterministic.
        pending = []
        seen = set()
        order = itertools.count()

        def add_func(f):
            if f not in seen:
                seen.add(f)
                heapq.heappush(pending, (-f.generation, next(order), f))

        add_func(self.creator)
        while pending:
            f = heapq.heappop(pending)[2]
            gys = [output().grad for output in f.outputs]

            with using_config('enable_backprop', create_graph):
                gxs = f.backward(*gys)
                if not isinstance(gxs, tuple):
                    gxs = (gxs,)
                for x, gx in zip(f.inputs, gxs):
                    # A new object, never in place: the same gradient may be shared elsewhere.
                    x.grad = gx if x.grad is None else x.grad + gx
                    if x.creator is not None:
                        add_func(x.creator)

            if not retain_grad:
                for output in f.outputs:
                    output().grad = None

    def unchain_backward(self):
        """Cut the graph behind this variable (truncated BPTT); this variable keeps its creator."""
        if self.creator is None:
            return
        funcs = [self.creator]
        visited = {id(self.creator)}
        while funcs:
            f = funcs.pop()
            for x in f.inputs:
                creator = x.creator
                if creator is not None:
                    x.unchain()
                    if id(creator) not in visited:
                        visited.add(id(creator))
                        funcs.append(creator)

    def reshape(self, *shape):
        if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
            shape = shape[0]
        return dezero.functions.reshape(self, shape)

    def transpose(self, *axes):
        if len(axes) == 0:
            axes = None
        elif len(axes) == 1 and (isinstance(axes[0], (tuple, list)) or axes[0] is None):
            axes = axes[0]
        return dezero.functions.transpose(self, axes)

    @property
    def T(self):
        return dezero.functions.transpose(self)

    def sum(self, axis=None, keepdims=False):
        return dezero.functions.sum(self, axis, keepdims)

    def to_cpu(self):
        if self.data is not None:
            self.data = cuda.as_numpy(self.data)
        if self.grad is not None:
            self.grad.to_cpu()

    def to_gpu(self):
        if self.data is not None:
            self.data = cuda.as_cupy(self.data)
        if self.grad is not None:
            self.grad.to_gpu()


class Parameter(Variable):
    pass


def as_variable(obj):
    if isinstance(obj, Variable):
        return obj
    return Variable(obj)


def as_array(x, array_module=np):
    if np.isscalar(x):
        return array_module.array(x)
    return x


# =============================================================================
# Function
# =============================================================================
class Function:
    def __call__(self, *inputs):
        inputs = [as_variable(x) for x in inputs]

        xs = [x.data for x in inputs]
        ys = self.forward(*xs)
        if not isinstance(ys, tuple):
            ys = (ys,)
        outputs = [Variable(as_array(y)) for y in ys]

        if Config.enable_backprop:
            self.generation = max([x.generation for x in inputs])
            for output in outputs:
                output.set_creator(self)
            self.inputs = inputs
            self.outputs = [weakref.ref(output) for output in outputs]

        return outputs if len(outputs) > 1 else outputs[0]

    def forward(self, *xs):
        raise NotImplementedError()

    def backward(self, *gys):
        raise NotImplementedError()


# =============================================================================
# Arithmetic operators (broadcast-aware: gradients are summed back to each input's shape)
# =============================================================================
def _sum_to_shape(gx, shape):
    if gx.shape != shape:
        gx = dezero.functions.sum_to(gx, shape)
    return gx


class Add(Function):
    def forward(self, x0, x1):
        self.x0_shape, self.x1_shape = x0.shape, x1.shape
        return x0 + x1

    def backward(self, gy):
        return _sum_to_shape(gy, self.x0_shape), _sum_to_shape(gy, self.x1_shape)


def add(x0, x1):
    x1 = as_array(x1, cuda.get_array_module(x0.data))
    return Add()(x0, x1)


class Mul(Function):
    def forward(self, x0, x1):
        return x0 * x1

    def backward(self, gy):
        x0, x1 = self.inputs
        return _sum_to_shape(gy * x1, x0.shape), _sum_to_shape(gy * x0, x1.shape)


def mul(x0, x1):
    x1 = as_array(x1, cuda.get_array_module(x0.data))
    return Mul()(x0, x1)


class Neg(Function):
    def forward(self, x):
        return -x

    def backward(self, gy):
        return -gy


def neg(x):
    return Neg()(x)


class Sub(Function):
    def forward(self, x0, x1):
        self.x0_shape, self.x1_shape = x0.shape, x1.shape
        return x0 - x1

    def backward(self, gy):
        return _sum_to_shape(gy, self.x0_shape), _sum_to_shape(-gy, self.x1_shape)


def sub(x0, x1):
    x1 = as_array(x1, cuda.get_array_module(x0.data))
    return Sub()(x0, x1)


def rsub(x0, x1):
    x1 = as_array(x1, cuda.get_array_module(x0.data))
    return Sub()(x1, x0)


class Div(Function):
    def forward(self, x0, x1):
        return x0 / x1

    def backward(self, gy):
        x0, x1 = self.inputs
        gx0 = gy / x1
        gx1 = gy * (-x0 / x1 ** 2)
        return _sum_to_shape(gx0, x0.shape), _sum_to_shape(gx1, x1.shape)


def div(x0, x1):
    x1 = as_array(x1, cuda.get_array_module(x0.data))
    return Div()(x0, x1)


def rdiv(x0, x1):
    x1 = as_array(x1, cuda.get_array_module(x0.data))
    return Div()(x1, x0)


class Pow(Function):
    def __init__(self, c):
        self.c = c

    def forward(self, x):
        return x ** self.c

    def backward(self, gy):
        x, = self.inputs
        c = self.c
        return c * x ** (c - 1) * gy


def pow(x, c):
    return Pow(c)(x)


def setup_variable():
    Variable.__add__ = add
    Variable.__radd__ = add
    Variable.__mul__ = mul
    Variable.__rmul__ = mul
    Variable.__neg__ = neg
    Variable.__sub__ = sub
    Variable.__rsub__ = rsub
    Variable.__truediv__ = div
    Variable.__rtruediv__ = rdiv
    Variable.__pow__ = pow
    Variable.__getitem__ = dezero.functions.get_item

    Variable.matmul = dezero.functions.matmul
    Variable.dot = dezero.functions.matmul
    Variable.max = dezero.functions.max
    Variable.min = dezero.functions.min
