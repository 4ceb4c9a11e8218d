"""Faults of the operators (step 20 on): `Variable`'s arithmetic dunder methods, their
gradients, the reflected forms and `as_array` of a scalar operand.

The patches (`mul_grad_swapped`, `rsub_swapped`, ...) work on `Variable`'s dunder methods alone,
so they apply to a step file and to a `dezero` package alike, with either core. Each patch
replaces or wraps one public name and imports what it needs in its own body: its source is
copied verbatim into single-fault variants.
"""
from dezero_grader.catalogue.faults import patch


# -- operators (step 20 on; step files and packages alike) ----------------------------------------
@patch('mul_grad_swapped')
def mul_grad_swapped(dz):
    import numpy as np

    class Mul(dz.Function):
        def forward(self, x0, x1):
            return x0 * x1

        def backward(self, gy):
            x0, x1 = self.inputs
            if isinstance(gy, dz.Variable):
                return gy * x0, gy * x1            # each input gets its own value
            return gy * x0.data, gy * x1.data

    def mul(x0, x1):
        if not isinstance(x1, dz.Variable):
            x1 = np.asarray(x1, dtype=getattr(x0.data, 'dtype', None))
        return Mul()(x0, x1 if isinstance(x1, dz.Variable) else dz.Variable(x1))
    dz.Variable.__mul__ = mul
    dz.Variable.__rmul__ = mul


@patch('mul_operator_missing')
def mul_operator_missing(dz):
    for name in ('__mul__', '__rmul__'):
        if name in vars(dz.Variable):
            delattr(dz.Variable, name)


@patch('reflected_ops_missing')
def reflected_ops_missing(dz):
    for name in ('__radd__', '__rmul__'):
        if name in vars(dz.Variable):
            delattr(dz.Variable, name)


@patch('array_priority_missing')
def array_priority_missing(dz):
    if '__array_priority__' in vars(dz.Variable):
        del dz.Variable.__array_priority__


@patch('scalar_not_as_array')
def scalar_not_as_array(dz):
    def add(x0, x1):
        return dz.Add()(x0, x1)            # a Python number reaches Variable() as it is

    def mul(x0, x1):
        return dz.Mul()(x0, x1)
    dz.Variable.__add__ = dz.Variable.__radd__ = dz.add = add
    dz.Variable.__mul__ = dz.Variable.__rmul__ = dz.mul = mul


@patch('neg_grad_sign')
def neg_grad_sign(dz):
    class Neg(dz.Function):
        def forward(self, x):
            return -x

        def backward(self, gy):
            return gy                      # -gy intended

    def neg(x):
        return Neg()(x)
    dz.Variable.__neg__ = neg


@patch('rsub_swapped')
def rsub_swapped(dz):
    def rsub(x0, x1):
        return x0 - x1                     # c - x computed as x - c
    dz.Variable.__rsub__ = rsub


@patch('div_grad_sign')
def div_grad_sign(dz):
    import numpy as np

    class Div(dz.Function):
        def forward(self, x0, x1):
            return x0 / x1

        def backward(self, gy):
            x0, x1 = self.inputs
            if not isinstance(gy, dz.Variable):
                x0, x1 = x0.data, x1.data
            return gy / x1, gy * (x0 / x1 ** 2)    # the minus sign lost

    def as_var(x, like):
        if isinstance(x, dz.Variable):
            return x
        return dz.Variable(np.asarray(x, dtype=getattr(like.data, 'dtype', None)))

    def div(x0, x1):
        return Div()(x0, as_var(x1, x0))

    def rdiv(x0, x1):
        return Div()(as_var(x1, x0), x0)
    dz.Variable.__truediv__ = div
    dz.Variable.__rtruediv__ = rdiv


@patch('pow_grad_exponent')
def pow_grad_exponent(dz):
    class Pow(dz.Function):
        def __init__(self, c):
            self.c = c

        def forward(self, x):
            return x ** self.c

        def backward(self, gy):
            x = self.inputs[0].data
            return self.c * x ** self.c * gy       # x ** (c - 1) intended

    def pow(x, c):
        return Pow(c)(x)
    dz.Variable.__pow__ = pow


@patch('sub_scalar_not_as_array')
def sub_scalar_not_as_array(dz):
    def sub(x0, x1):
        return dz.Sub()(x0, x1)            # a Python number reaches Variable() as it is
    dz.Variable.__sub__ = dz.sub = sub


@patch('div_scalar_not_as_array')
def div_scalar_not_as_array(dz):
    def div(x0, x1):
        return dz.Div()(x0, x1)            # x / 2.0: the 2.0 reaches Variable() as it is

    def rdiv(x0, x1):
        return dz.Div()(x1, x0)
    dz.Variable.__truediv__ = dz.div = div
    dz.Variable.__rtruediv__ = dz.rdiv = rdiv


@patch('reflected_ops_crossed')
def reflected_ops_crossed(dz):
    # Registered by copy-paste: 2.5 + x multiplies, 1.5 * x adds.
    dz.Variable.__radd__ = dz.mul
    dz.Variable.__rmul__ = dz.add
