"""Faults of the single-file steps (1-19).

A patch here receives the learner's step module (`step09`, ...), whose namespace holds
`Variable`, `Function`, `Square`, `square`, `numerical_diff`, ... as that step defines them.
Each patch replaces or wraps one public name and imports what it needs in its own body: its
source is copied verbatim into single-fault variants. The operator faults, which apply from step
20 on, are in `dezero_grader.catalogue.faults.operators`.
"""
from dezero_grader.catalogue.faults import patch


# -- step 1 ---------------------------------------------------------------------------------------
@patch('variable_data_typo')
def variable_data_typo(dz):
    # self.date = data: the box keeps its content under the wrong name.
    original = dz.Variable.__init__

    def __init__(self, data, *args, **kwargs):
        original(self, data, *args, **kwargs)
        self.date = self.__dict__.pop('data')
    dz.Variable.__init__ = __init__


@patch('variable_data_shared')
def variable_data_shared(dz):
    # Variable.data = data: one box for every Variable, the last one created wins.
    original = dz.Variable.__init__

    def __init__(self, data, *args, **kwargs):
        original(self, data, *args, **kwargs)
        type(self).data = self.__dict__.pop('data')
    dz.Variable.__init__ = __init__


# -- steps 2-3 ------------------------------------------------------------------------------------
@patch('call_returns_array')
def call_returns_array(dz):
    original = dz.Function.__call__

    def __call__(self, *args, **kwargs):
        output = original(self, *args, **kwargs)
        return output.data if isinstance(output, dz.Variable) else output
    dz.Function.__call__ = __call__


@patch('square_forward_doubles')
def square_forward_doubles(dz):
    def forward(self, x):
        return x * 2                       # x ** 2 mistyped
    dz.Square.forward = forward


@patch('call_passes_variable')
def call_passes_variable(dz):
    def __call__(self, input):
        y = self.forward(input)            # the Variable itself, not input.data
        return dz.Variable(y)
    dz.Function.__call__ = __call__


@patch('exp_math_exp')
def exp_math_exp(dz):
    def forward(self, x):
        import math
        return math.exp(x)                 # fine for one number, a TypeError for an array
    dz.Exp.forward = forward


@patch('call_overwrites_input')
def call_overwrites_input(dz):
    def __call__(self, input):
        input.data = self.forward(input.data)   # the result put back in the input's box
        return input
    dz.Function.__call__ = __call__


@patch('exp_forward_exp2')
def exp_forward_exp2(dz):
    import numpy as np

    def forward(self, x):
        return np.exp2(x)                  # picked from the completion list: 2 ** x, not e ** x
    dz.Exp.forward = forward


# -- step 4 ---------------------------------------------------------------------------------------
@patch('numdiff_forward')
def numdiff_forward(dz):
    def numerical_diff(f, x, eps=1e-4):
        y0 = f(x)
        y1 = f(dz.Variable(x.data + eps))
        return (y1.data - y0.data) / eps   # a forward difference
    dz.numerical_diff = numerical_diff


@patch('numdiff_half_step')
def numdiff_half_step(dz):
    def numerical_diff(f, x, eps=1e-4):
        y0 = f(dz.Variable(x.data - eps))
        y1 = f(dz.Variable(x.data + eps))
        return (y1.data - y0.data) / eps   # the points are 2·eps apart
    dz.numerical_diff = numerical_diff


@patch('call_forgets_output')
def call_forgets_output(dz):
    original = dz.Function.__call__

    def __call__(self, *args, **kwargs):
        output = original(self, *args, **kwargs)
        self.__dict__.pop('output', None)
        return output
    dz.Function.__call__ = __call__


# -- step 6 ---------------------------------------------------------------------------------------
@patch('square_backward_ignores_gy')
def square_backward_ignores_gy(dz):
    def backward(self, gy):
        x = self.inputs[0].data if hasattr(self, 'inputs') else self.input.data
        return 2 * x                       # gy forgotten
    dz.Square.backward = backward


@patch('square_backward_no_two')
def square_backward_no_two(dz):
    def backward(self, gy):
        x = self.inputs[0].data if hasattr(self, 'inputs') else self.input.data
        return x * gy                      # the factor 2 forgotten
    dz.Square.backward = backward


@patch('exp_backward_times_x')
def exp_backward_times_x(dz):
    def backward(self, gy):
        x = self.inputs[0].data if hasattr(self, 'inputs') else self.input.data
        return x * gy                      # the power rule's habit: exp'(x) is exp(x), not x
    dz.Exp.backward = backward


@patch('call_forgets_input')
def call_forgets_input(dz):
    original = dz.Function.__call__

    def __call__(self, *args, **kwargs):
        output = original(self, *args, **kwargs)
        self.__dict__.pop('input', None)
        return output
    dz.Function.__call__ = __call__


# -- steps 7-9 ------------------------------------------------------------------------------------
@patch('set_creator_missing')
def set_creator_missing(dz):
    original = dz.Function.__call__

    def __call__(self, *args, **kwargs):
        output = original(self, *args, **kwargs)
        output.creator = None              # set_creator never called
        return output
    dz.Function.__call__ = __call__


@patch('backward_no_recursion')
def backward_no_recursion(dz):
    def backward(self):
        f = self.creator
        if f is not None:
            f.input.grad = f.backward(self.grad)   # stops after one function
    dz.Variable.backward = backward


@patch('backward_recursive')
def backward_recursive(dz):
    # Step 7's recursion kept: one Python frame per function, so deep graphs hit the limit.
    def backward(self):
        f = self.creator
        if f is not None:
            x = f.input
            x.grad = f.backward(self.grad)
            x.backward()
    dz.Variable.backward = backward


@patch('backward_loop_one_step')
def backward_loop_one_step(dz):
    def backward(self):
        funcs = [self.creator]
        while funcs:
            f = funcs.pop()
            f.input.grad = f.backward(f.output.grad)   # the input's creator is never queued
    dz.Variable.backward = backward


@patch('seed_missing')
def seed_missing(dz):
    # Step 8's backward: the caller must still set y.grad.
    def backward(self):
        funcs = [self.creator]
        while funcs:
            f = funcs.pop()
            x, y = f.input, f.output
            x.grad = f.backward(y.grad)
            if x.creator is not None:
                funcs.append(x.creator)
    dz.Variable.backward = backward


@patch('as_array_missing')
def as_array_missing(dz):
    # Step 9's __call__ without as_array: a 0-d result stays a NumPy scalar, which the
    # Variable then refuses.
    def __call__(self, input):
        y = self.forward(input.data)
        output = dz.Variable(y)
        output.set_creator(self)
        self.input = input
        self.output = output
        return output
    dz.Function.__call__ = __call__
    del dz.as_array


@patch('exp_calls_square')
def exp_calls_square(dz):
    def exp(x):
        return dz.Square()(x)              # copied from square() and not finished
    dz.exp = exp


@patch('type_check_missing')
def type_check_missing(dz):
    original = dz.Variable.__init__

    def __init__(self, data, *args, **kwargs):
        original(self, None, *args, **kwargs)
        self.data = data                   # anything goes
    dz.Variable.__init__ = __init__


# -- steps 11-13 ----------------------------------------------------------------------------------
@patch('call_returns_first_output')
def call_returns_first_output(dz):
    original = dz.Function.__call__

    def __call__(self, inputs):
        return original(self, inputs)[0]
    dz.Function.__call__ = __call__


@patch('add_forward_not_tuple')
def add_forward_not_tuple(dz):
    def forward(self, xs):
        return xs[0] + xs[1]               # an array, not a tuple: iterating it gives its rows
    dz.Add.forward = forward


@patch('call_always_list')
def call_always_list(dz):
    original = dz.Function.__call__

    def __call__(self, *inputs):
        outputs = original(self, *inputs)
        return outputs if isinstance(outputs, list) else [outputs]
    dz.Function.__call__ = __call__


@patch('forward_not_unpacked')
def forward_not_unpacked(dz):
    def __call__(self, *inputs):
        xs = [x.data for x in inputs]
        ys = self.forward(xs)              # the list itself, not *xs
        if not isinstance(ys, tuple):
            ys = (ys,)
        outputs = [dz.Variable(dz.as_array(y)) for y in ys]
        for output in outputs:
            output.set_creator(self)
        self.inputs = inputs
        self.outputs = outputs
        return outputs if len(outputs) > 1 else outputs[0]
    dz.Function.__call__ = __call__


@patch('add_backward_single')
def add_backward_single(dz):
    def backward(self, gy):
        return gy                          # one gradient for two inputs
    dz.Add.backward = backward


@patch('backward_gys_not_unpacked')
def backward_gys_not_unpacked(dz):
    import numpy as np

    def backward(self):
        if self.grad is None:
            self.grad = np.ones_like(self.data)
        funcs = [self.creator]
        while funcs:
            f = funcs.pop()
            gys = [output.grad for output in f.outputs]
            gxs = f.backward(gys)          # the list, not *gys
            if not isinstance(gxs, tuple):
                gxs = (gxs,)
            for x, gx in zip(f.inputs, gxs):
                x.grad = gx
                if x.creator is not None:
                    funcs.append(x.creator)
    dz.Variable.backward = backward


@patch('add_forward_first_twice')
def add_forward_first_twice(dz):
    def forward(self, x0, x1):
        return x0 + x0                     # copy-paste slip: the second input never used
    dz.Add.forward = forward


# -- steps 14-18 ----------------------------------------------------------------------------------
@patch('grad_inplace_add')
def grad_inplace_add(dz):
    import numpy as np

    def backward(self):
        if self.grad is None:
            self.grad = np.ones_like(self.data)
        funcs = [self.creator]
        while funcs:
            f = funcs.pop()
            gys = [output.grad for output in f.outputs]
            gxs = f.backward(*gys)
            if not isinstance(gxs, tuple):
                gxs = (gxs,)
            for x, gx in zip(f.inputs, gxs):
                if x.grad is None:
                    x.grad = gx
                else:
                    x.grad += gx           # in place: also changes every array x.grad shares
                if x.creator is not None:
                    funcs.append(x.creator)
    dz.Variable.backward = backward


@patch('cleargrad_noop')
def cleargrad_noop(dz):
    def cleargrad(self):
        pass
    dz.Variable.cleargrad = cleargrad


@patch('backward_generation_order_early')
def backward_generation_order_early(dz):
    # Step 14's work list kept after step 16: no generations, no seen set, so a function
    # after a diamond runs once per path, before all its output gradient has arrived.
    import numpy as np

    def backward(self, retain_grad=False):
        if self.grad is None:
            self.grad = np.ones_like(self.data)
        funcs = [self.creator]
        while funcs:
            f = funcs.pop()
            outputs = [o if isinstance(o, dz.Variable) else o() for o in f.outputs]
            gxs = f.backward(*[o.grad for o in outputs])
            if not isinstance(gxs, tuple):
                gxs = (gxs,)
            for x, gx in zip(f.inputs, gxs):
                x.grad = gx if x.grad is None else x.grad + gx
                if x.creator is not None:
                    funcs.append(x.creator)
    dz.Variable.backward = backward


@patch('generation_not_set')
def generation_not_set(dz):
    def set_creator(self, func):
        self.creator = func                # the generation stays 0
    dz.Variable.set_creator = set_creator


@patch('outputs_held_strongly')
def outputs_held_strongly(dz):
    original = dz.Function.__call__

    def __call__(self, *inputs):
        outputs = original(self, *inputs)
        self.output = outputs              # step 7's strong reference, kept: a reference cycle
        return outputs
    dz.Function.__call__ = __call__


@patch('square_backward_uses_output')
def square_backward_uses_output(dz):
    def backward(self, gy):
        y = self.outputs[0]()
        return 2 * y.data * gy             # the output where the input belongs
    dz.Square.backward = backward


@patch('using_config_no_finally')
def using_config_no_finally(dz):
    import contextlib

    @contextlib.contextmanager
    def using_config(name, value):
        old_value = getattr(dz.Config, name)
        setattr(dz.Config, name, value)
        yield                              # no try/finally: an exception leaves the mode set
        setattr(dz.Config, name, old_value)
    dz.using_config = using_config


@patch('retain_grad_ignored')
def retain_grad_ignored(dz):
    original = dz.Variable.backward

    def backward(self, retain_grad=False, *args, **kwargs):
        return original(self, True, *args, **kwargs)   # every gradient kept
    dz.Variable.backward = backward


@patch('retain_grad_frees_inputs')
def retain_grad_frees_inputs(dz):
    # for x in f.inputs: x.grad = None -- the inputs' gradients freed, not the outputs'
    original = dz.Variable.backward

    def backward(self, retain_grad=False, *args, **kwargs):
        result = original(self, retain_grad, *args, **kwargs)
        if not retain_grad:
            todo, seen = [self.creator], set()
            while todo:
                f = todo.pop()
                if f is None or id(f) in seen:
                    continue
                seen.add(id(f))
                for x in f.inputs:
                    x.grad = None
                    todo.append(x.creator)
        return result
    dz.Variable.backward = backward


# -- step 19 --------------------------------------------------------------------------------------
@patch('len_returns_size')
def len_returns_size(dz):
    def __len__(self):
        return self.data.size              # the number of elements, not of rows
    dz.Variable.__len__ = __len__


@patch('repr_no_prefix')
def repr_no_prefix(dz):
    def __repr__(self):
        return str(self.data)
    dz.Variable.__repr__ = __repr__


@patch('name_ignored')
def name_ignored(dz):
    original = dz.Variable.__init__

    def __init__(self, data, name=None):
        original(self, data)
        self.name = None
    dz.Variable.__init__ = __init__
