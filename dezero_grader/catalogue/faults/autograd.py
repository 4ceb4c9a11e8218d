"""Faults of the package's autograd, steps 23-36: packaging, the graph export, the operators the
optimisation examples lean on, the full core's Variable gradients and higher-order derivatives.

Each patch receives the loaded `dezero` package and replaces or wraps one public name
(`dz.Variable.__sub__`, `dz.utils.get_dot_graph`, `dz.functions.tanh`, ...), importing what it
needs in its own body (its source is copied into single-fault variants). Patches that replace
an operator build their Function from `dz.Function` and read gradients whether they are
ndarrays (core_simple) or Variables (the full core).
"""
from dezero_grader.catalogue.faults import patch


# -- step 23 --------------------------------------------------------------------------------------
@patch('setup_variable_not_called')
def setup_variable_not_called(dz):
    for name in ('__add__', '__radd__', '__mul__', '__rmul__', '__neg__', '__sub__', '__rsub__',
                 '__truediv__', '__rtruediv__', '__pow__'):
        if name in vars(dz.Variable):
            delattr(dz.Variable, name)


@patch('init_missing_exports')
def init_missing_exports(dz):
    # __init__.py forgets to re-export the mode switches of core_simple / core.
    for name in ('no_grad', 'using_config'):
        if name in vars(dz):
            delattr(dz, name)


@patch('setup_add_as_mul')
def setup_add_as_mul(dz):
    # setup_variable, written by copy-paste: Variable.__add__ = mul
    dz.Variable.__add__ = dz.Variable.__mul__


@patch('add_grad_from_sub')
def add_grad_from_sub(dz):
    # Add written by copying Sub: the minus of the second input's gradient kept.
    class Add(dz.Function):
        def forward(self, x0, x1):
            return x0 + x1

        def backward(self, gy):
            return gy, -gy

    def add(x0, x1):
        return Add()(x0, dz.as_array(x1))
    dz.Variable.__add__ = dz.Variable.__radd__ = add


# -- step 26 --------------------------------------------------------------------------------------
@patch('dot_edges_reversed')
def dot_edges_reversed(dz):
    import re
    original = dz.utils.get_dot_graph

    def get_dot_graph(output, verbose=True):
        text = original(output, verbose)
        return re.sub(r'(\S+) -> (\S+)', r'\2 -> \1', text)   # every arrow the wrong way
    dz.utils.get_dot_graph = get_dot_graph


@patch('dot_ignores_names')
def dot_ignores_names(dz):
    import re
    original = dz.utils.get_dot_graph

    def get_dot_graph(output, verbose=True):
        text = original(output, verbose)
        # variable nodes (orange) labelled with their shape and type only, never their name
        return re.sub(r'label="[^"]*: ([^"]*)", color=orange', r'label="\1", color=orange',
                      re.sub(r'label="[^":]*", color=orange', 'label="", color=orange', text))
    dz.utils.get_dot_graph = get_dot_graph


# -- steps 28-29 ----------------------------------------------------------------------------------
@patch('sub_grad_sign')
def sub_grad_sign(dz):
    import numpy as np

    class Sub(dz.Function):
        def forward(self, x0, x1):
            return x0 - x1

        def backward(self, gy):
            return gy, gy                  # -gy intended for the second operand

    def as_var(x, like):
        if isinstance(x, dz.Variable):
            return x
        return dz.Variable(np.asarray(x, dtype=like.data.dtype))

    def sub(x0, x1):
        return Sub()(x0, as_var(x1, x0))

    def rsub(x0, x1):
        return Sub()(as_var(x1, x0), x0)
    dz.Variable.__sub__ = sub
    dz.Variable.__rsub__ = rsub


@patch('pow_grad_assumes_square')
def pow_grad_assumes_square(dz):
    class Pow(dz.Function):
        def __init__(self, c):
            self.c = c

        def forward(self, x):
            return x ** self.c

        def backward(self, gy):
            x, = self.inputs
            if not isinstance(gy, dz.Variable):
                x = x.data
            return 2 * x * gy              # Square's rule, right for c = 2 only

    def pow(x, c):
        return Pow(c)(x)
    dz.Variable.__pow__ = pow


@patch('pow_exponent_shared')
def pow_exponent_shared(dz):
    class Pow(dz.Function):
        c = None

        def __init__(self, c):
            type(self).c = c               # on the class: the last exponent wins

        def forward(self, x):
            return x ** self.c

        def backward(self, gy):
            x = self.inputs[0].data
            return self.c * x ** (self.c - 1) * gy

    def pow(x, c):
        return Pow(c)(x)
    dz.Variable.__pow__ = pow


# -- step 32 --------------------------------------------------------------------------------------
@patch('grad_not_variable')
def grad_not_variable(dz):
    # The simple core's habit kept in core.py: gradients end up as bare ndarrays.
    original = dz.Variable.backward

    def backward(self, *args, **kwargs):
        original(self, *args, **kwargs)
        seen, stack = set(), [self]
        while stack:
            v = stack.pop()
            if id(v) in seen:
                continue
            seen.add(id(v))
            if isinstance(v.grad, dz.Variable):
                v.grad = v.grad.data
            if v.creator is not None:
                stack.extend(v.creator.inputs)
    dz.Variable.backward = backward


@patch('create_graph_ignored')
def create_graph_ignored(dz):
    original = dz.Variable.backward

    def backward(self, retain_grad=False, create_graph=False):
        return original(self, retain_grad, False)   # never records the backward pass
    dz.Variable.backward = backward


# -- steps 34-35 ----------------------------------------------------------------------------------
@patch('cos_grad_sign')
def cos_grad_sign(dz):
    F = dz.functions
    xp_of = dz.cuda.get_array_module

    class Cos(dz.Function):
        def forward(self, x):
            return xp_of(x).cos(x)

        def backward(self, gy):
            x, = self.inputs
            return gy * F.sin(x)           # d cos = -sin: the minus lost

    def cos(x):
        return Cos()(x)
    F.cos = cos


@patch('sin_backward_detached')
def sin_backward_detached(dz):
    F = dz.functions
    xp_of = dz.cuda.get_array_module

    class Sin(dz.Function):
        def forward(self, x):
            return xp_of(x).sin(x)

        def backward(self, gy):
            x, = self.inputs
            return gy * xp_of(x.data).cos(x.data)   # an array: nothing recorded for create_graph

    def sin(x):
        return Sin()(x)
    F.sin = sin


@patch('sin_backward_ignores_gy')
def sin_backward_ignores_gy(dz):
    F = dz.functions
    xp_of = dz.cuda.get_array_module

    class Sin(dz.Function):
        def forward(self, x):
            return xp_of(x).sin(x)

        def backward(self, gy):
            x, = self.inputs
            return F.cos(x)                # gy * cos(x) intended

    def sin(x):
        return Sin()(x)
    F.sin = sin


@patch('tanh_grad_uses_input')
def tanh_grad_uses_input(dz):
    F = dz.functions
    xp_of = dz.cuda.get_array_module

    class Tanh(dz.Function):
        def forward(self, x):
            return xp_of(x).tanh(x)

        def backward(self, gy):
            x, = self.inputs
            return gy * (1 - x * x)        # 1 - y² intended, y the output

    def tanh(x):
        return Tanh()(x)
    F.tanh = tanh


@patch('tanh_backward_detached')
def tanh_backward_detached(dz):
    F = dz.functions
    xp_of = dz.cuda.get_array_module

    class Tanh(dz.Function):
        def forward(self, x):
            return xp_of(x).tanh(x)

        def backward(self, gy):
            y = self.outputs[0]().data     # the array, not the Variable
            return gy * (1 - y * y)

    def tanh(x):
        return Tanh()(x)
    F.tanh = tanh


# -- step 39's sum (its gradient is graded from step 40) --------------------------------------------
@patch('sum_keepdims_ignored')
def sum_keepdims_ignored(dz):
    F = dz.functions
    original = F.sum

    def sum(x, axis=None, keepdims=False):
        return original(x, axis, False)    # keepdims never reaches the array's sum
    F.sum = sum


@patch('sum_grad_ignores_gy')
def sum_grad_ignores_gy(dz):
    F = dz.functions
    original = F.sum

    def sum(x, axis=None, keepdims=False):
        y = original(x, axis, keepdims)
        book_backward = y.creator.backward
        y.creator.backward = lambda gy: book_backward(gy ** 0)   # ones in place of the upstream gradient
        return y
    F.sum = sum
    dz.Variable.sum = lambda self, axis=None, keepdims=False: sum(self, axis, keepdims)
