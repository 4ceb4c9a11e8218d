"""Near misses: a Function's backward that is right but for a small relative error.

The other faults of the catalogue are gross (a sign, a transpose, a missing factor of 2): they
show that each check can fail, not how closely it looks. A near miss multiplies the gradients a
backward returns by 1.01 or by 1.001 -- what a rounded constant or a derivative taken
numerically with a coarse step would give -- so a check with a tolerance loosened past 0.1%
(or 1%) lets it through, and `selftest` says so: the catalogue then proves the tolerances too.

One body serves every near miss; which function and by how much are its parameters
(`dezero_grader.catalogue.faults.patch_with`). It finds its target through the public API alone and wraps it,
so it applies to any implementation: a Function class of the step's API (`Exp` of the step
files), whose `backward` it wraps, or a public function or operator (`Variable.__mul__`,
`functions.matmul`), whose output's `creator` gets the scaled backward -- the node the call
made, whichever class implements it. What it cannot find or wrap raises, naming the target.
"""
from dezero_grader.catalogue.faults import patch_with


def grad_scaled(dz, target, factor):
    # The gradients the backward of `target` returns, times `factor`.
    holder = dz
    *path, name = target.split('.')
    try:
        for part in path:
            holder = getattr(holder, part)
        original = getattr(holder, name)
    except AttributeError:
        raise AttributeError('this near-miss fault does not apply: the submission has no '
                             '{}'.format(target)) from None

    def scaled(backward):
        def backward_scaled(*args, **kwargs):
            gxs = backward(*args, **kwargs)
            if isinstance(gxs, (tuple, list)):
                return type(gxs)(g if g is None else g * factor for g in gxs)
            return gxs if gxs is None else gxs * factor
        return backward_scaled

    if isinstance(original, type):
        # a Function class of the step's API: its backward, however it is called
        original.backward = scaled(original.backward)
        return

    def call(*args, **kwargs):
        # a function or operator: the backward of the node that made its output (not of one
        # that made an input, returned as it is: sum_to of a shape it has already)
        y = original(*args, **kwargs)
        before = {id(getattr(a, 'creator', None)) for a in args}
        done = set()
        for out in y if isinstance(y, (tuple, list)) else (y,):
            node = getattr(out, 'creator', None)
            if node is None or id(node) in before or id(node) in done:
                continue
            done.add(id(node))
            try:
                node.backward = scaled(node.backward)
            except AttributeError:
                raise TypeError('this near-miss fault does not apply: the node {} makes takes no '
                                'attribute'.format(target)) from None
        return y
    setattr(holder, name, call)


# patch name -> (the function of the public API whose backward is off, the factor)
NEAR_MISSES = {
    'exp_grad_off_1_percent': ('Exp', 1.01),
    'exp_grad_off_1_permille': ('Exp', 1.001),
    'mul_grad_off_1_percent': ('Variable.__mul__', 1.01),
    'mul_grad_off_1_permille': ('Variable.__mul__', 1.001),
    'sum_to_grad_off_1_percent': ('functions.sum_to', 1.01),
    'sum_to_grad_off_1_permille': ('functions.sum_to', 1.001),
    'matmul_grad_off_1_percent': ('functions.matmul', 1.01),
    'matmul_grad_off_1_permille': ('functions.matmul', 1.001),
    'linear_grad_off_1_percent': ('functions.linear', 1.01),
    'linear_grad_off_1_permille': ('functions.linear', 1.001),
}

for _name, (_target, _factor) in NEAR_MISSES.items():
    patch_with(_name, grad_scaled, target=_target, factor=_factor)
