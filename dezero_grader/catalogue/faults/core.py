"""Faults of stages 1-4 (the core pack), injected while grading later steps: a stage-5
submission that carries one of them must end in rollback, caught by the earlier step's checks.
"""
from dezero_grader.catalogue.faults import patch


@patch('backward_generation_order')
def backward_generation_order(dz):
    # Step-8 style backward kept after step 16: functions in discovery order, no generations,
    # no "seen" set -- a function after a diamond runs once per path.
    import numpy as np

    def backward(self, retain_grad=False, create_graph=False):
        if self.grad is None:
            xp = dz.cuda.get_array_module(self.data) if hasattr(dz, 'cuda') else np
            self.grad = dz.Variable(xp.ones_like(self.data))
        funcs = [self.creator] if self.creator is not None else []
        while funcs:
            f = funcs.pop()
            gys = [o().grad for o in f.outputs]
            with dz.using_config('enable_backprop', create_graph):
                gxs = f.backward(*gys)
                if not isinstance(gxs, tuple):
                    gxs = (gxs,)
                for x, gx in zip(f.inputs, gxs):
                    x.grad = gx if x.grad is None else x.grad + gx
                    if x.creator is not None:
                        funcs.append(x.creator)
            if not retain_grad:
                for o in f.outputs:
                    o().grad = None
    dz.Variable.backward = backward


@patch('grad_overwrite')
def grad_overwrite(dz):
    # Gradients assigned instead of accumulated: a variable used twice keeps one contribution.
    original = dz.Function.__call__

    def __call__(self, *inputs):
        outputs = original(self, *inputs)
        if not getattr(type(self), '_fault_wrapped', False):
            backward = type(self).backward

            def overwriting(fself, *gys):
                gxs = backward(fself, *gys)
                for x in fself.inputs:
                    x.grad = None
                return gxs
            type(self).backward = overwriting
            type(self)._fault_wrapped = True
        return outputs
    dz.Function.__call__ = __call__


@patch('no_grad_ignored')
def no_grad_ignored(dz):
    import contextlib

    def no_grad():
        return contextlib.nullcontext()
    dz.no_grad = no_grad


@patch('sum_to_wrong_axes')
def sum_to_wrong_axes(dz):
    def sum_to(x, shape):
        # forgets the leading axes that broadcasting added
        axis = tuple(i for i, s in enumerate(shape) if s == 1 and i < x.ndim)
        y = x.sum(axis, keepdims=True)
        return y.reshape(shape) if y.size == int(__import__('numpy').prod(shape)) else y
    dz.utils.sum_to = sum_to


@patch('broadcast_grad_missing')
def broadcast_grad_missing(dz):
    # The arithmetic backward rules of step 40 without sum_to: a broadcast operand gets a
    # gradient of the broadcast shape.
    import numpy as np

    def binary(forward, backward):
        class Op(dz.Function):
            def forward(self, x0, x1):
                return forward(x0, x1)

            def backward(self, gy):
                return backward(gy, *self.inputs)

        def call(x0, x1):
            if not isinstance(x1, dz.Variable):
                x1 = dz.as_array(x1, dz.cuda.get_array_module(x0.data) if hasattr(dz, 'cuda')
                                 else np)
            return Op()(x0, x1)
        return call

    add = binary(lambda a, b: a + b, lambda gy, a, b: (gy, gy))
    mul = binary(lambda a, b: a * b, lambda gy, a, b: (gy * b, gy * a))
    div = binary(lambda a, b: a / b, lambda gy, a, b: (gy / b, gy * (-a / b ** 2)))
    dz.Variable.__add__ = dz.Variable.__radd__ = add
    dz.Variable.__mul__ = dz.Variable.__rmul__ = mul
    dz.Variable.__truediv__ = div


@patch('matmul_grad_transpose')
def matmul_grad_transpose(dz):
    F = dz.functions

    class MatMul(dz.Function):
        def forward(self, x, W):
            return x.dot(W)

        def backward(self, gy):
            x, W = self.inputs
            return F.matmul(gy, W.T), F.matmul(gy.T, x)   # gW transposed

    def matmul(x, W):
        return MatMul()(x, W)
    F.matmul = matmul
    dz.Variable.matmul = matmul
    dz.Variable.dot = matmul


@patch('softmax_ce_unstable')
def softmax_ce_unstable(dz):
    import numpy as np
    F = dz.functions

    def softmax_cross_entropy(x, t):
        x = dz.as_variable(x)
        t_data = t.data if isinstance(t, dz.Variable) else t
        e = F.exp(x)                                  # overflows for large logits
        p = e / F.sum(e, axis=1, keepdims=True)
        n = x.shape[0]
        log_p = F.log(p)
        return -F.sum(log_p[np.arange(n), t_data]) / n
    F.softmax_cross_entropy = softmax_cross_entropy


@patch('linear_lazy_in_size')
def linear_lazy_in_size(dz):
    Linear = dz.layers.Linear
    original = Linear.__init__

    def __init__(self, out_size, nobias=False, dtype=None, in_size=None, **kwargs):
        import numpy as np
        original(self, out_size, nobias=nobias, dtype=dtype or np.float32,
                 in_size=in_size if in_size is not None else out_size, **kwargs)
    Linear.__init__ = __init__


@patch('pow_backward_uses_data')
def pow_backward_uses_data(dz):
    class Pow(dz.Function):
        def __init__(self, c):
            self.c = c

        def forward(self, x):
            return x ** self.c

        def backward(self, gy):
            x = self.inputs[0].data      # a raw array: create_graph records nothing through x
            return gy * (self.c * x ** (self.c - 1))

    def pow(x, c):
        return Pow(c)(x)
    dz.Variable.__pow__ = pow
