"""The protocols of the single-file steps (1-22), through the names each step has.

Each scenario drives a learner's `stepNN.py` namespace (`Variable`, `Function`, `Square`,
`square`, `add`, `numerical_diff`, ...) the way that step's API allows, and reports what it saw:
values with the values they should equal (computed here with NumPy captured before any learner
code ran), identities, raised exceptions. A phase that may raise is wrapped (`phase`), so its
exception is reported and the other phases still run. The gradient battery of these steps is
`early.fn` (module `fn_before_core`); what is here is what a battery cannot see: the box, the call
protocol, creator links, the seed, deep chains, unit tests, reuse, memory, modes, metadata and
mixed operands.
"""
import gc
import io
import unittest
import weakref

import numpy as np

from dezero_grader.sandboxed import capture
from dezero_grader.sandboxed.probes.registry import scenario
from dezero_grader.sandboxed.probes.scenarios import fixtures
from dezero_grader.sandboxed.probes.scenarios.fixtures import raised
from dezero_grader.sandboxed.probes.scenarios.fn_before_core import Names, export, host_value, is_variable

_all = all   # the builtin as it was before learner code ran (which may patch builtins)

_array = np.array
_asarray = np.asarray
_exp = np.exp
_ndarray = np.ndarray
_generic = np.generic
builtin_repr = repr   # `meta` has a parameter named repr


def phase(results, name, fn):
    """Run one phase; record its outcome or the exception it raised (type, message)."""
    fixtures.phase(results, name, fn)
    return results


def outcome(fn):
    """'accepted', or the name of the exception `fn` raised."""
    call = capture.Call.of(fn, catch=Exception)
    return 'accepted' if call.ok else type(call.exception).__name__


# -- step 1: the box ------------------------------------------------------------------------------
@scenario('early.variable')
def variable(ctx, shape):
    """A Variable hands back the array it was given, takes a new one, and each Variable keeps
    its own."""
    V = ctx.api.Variable
    rng = ctx.rng(1)
    a, b, c = (rng.standard_normal(shape) for _ in range(3))
    res = {}

    def box():
        x = V(a.copy())
        return {'data': export(ctx, x.data), 'input': a}
    phase(res, 'box', box)

    def reassign():
        x = V(a.copy())
        x.data = b.copy()
        return {'data': export(ctx, x.data), 'assigned': b}
    phase(res, 'reassign', reassign)

    def two():
        x1 = V(a.copy())
        x2 = V(c.copy())
        return {'first': export(ctx, x1.data), 'first_input': a,
                'second': export(ctx, x2.data), 'second_input': c}
    phase(res, 'two', two)
    return res


@scenario('early.type_check')
def type_check(ctx):
    """Which data a Variable accepts: None and ndarrays, never a Python float (from step 9)."""
    V = ctx.api.Variable
    return {'none': outcome(lambda: V(None)), 'array': outcome(lambda: V(_array(1.0))),
            'float': outcome(lambda: V(1.0))}


# -- steps 2-4: the call protocol, chains, links --------------------------------------------------
@scenario('early.protocol')
def protocol(ctx, shape):
    """`Function.__call__` takes a Variable, hands `forward` the raw array and wraps the
    result in a new Variable."""
    V = ctx.api.Variable
    Function = ctx.api.get('Function')
    seen = []

    class Twice(Function):
        def forward(self, x):
            seen.append('array' if isinstance(x, (_ndarray, _generic)) else
                        'Variable' if isinstance(x, V) else type(x).__name__)
            return x * 2

    a = ctx.rng(2).standard_normal(shape)
    res = {}

    def call():
        y = Twice()(V(a.copy()))
        return {'output_is_variable': is_variable(ctx, y), 'value': export(ctx, y),
                'expected': a * 2, 'forward_got': seen[0] if seen else None}
    phase(res, 'call', call)
    return res


@scenario('early.chain')
def chain(ctx, names, shape):
    """Functions applied in turn: each output is a new Variable and the input stays as it was."""
    V = ctx.api.Variable
    N = Names(ctx, 'single')
    a = ctx.rng(3).standard_normal(shape) * 0.5
    res = {}

    def run():
        x = V(a.copy())
        v = x
        outputs = []
        for name in names:
            v = N.fn(name)(v)
            outputs.append(v)
        # the identities as they are (the input's first): the trusted side compares them
        return {'input_after': export(ctx, x), 'input': a,
                'identities': [id(o) for o in [x] + outputs]}
    phase(res, 'run', run)
    return res


_MISSING = object()


def holds(f, v):
    """Whether the Function object `f` keeps the Variable `v` in one of its attributes -- itself,
    in a list or tuple, or behind a weak reference -- whatever the attribute is called (the book
    calls it `input`, `output`, `inputs` or `outputs`; the name is the learner's choice)."""
    def same(value):
        if value is v:
            return True
        if isinstance(value, weakref.ref):
            return value() is v
        return False
    for value in list(getattr(f, '__dict__', {}).values()):
        if same(value):
            return True
        if isinstance(value, (list, tuple)):
            for item in value:   # a loop, not any(): the builtins are the learner's to patch
                if same(item):
                    return True
    return False


@scenario('early.links')
def links(ctx, creator=False):
    """x → Square → a → Exp → b → Square → y: each Function keeps its input and its output (in
    attributes of any name; the book's are `input` and `output`) and, from step 7, each Variable
    its creator (`creator`, which the book's own code reads)."""
    V = ctx.api.Variable
    Square, Exp = ctx.api.get('Square'), ctx.api.get('Exp')
    A, B, C = Square(), Exp(), Square()
    x = V(_array(0.5))
    a = A(x)
    b = B(a)
    y = C(b)
    # per function, as it is: the trusted side decides for all three
    res = {'inputs': [holds(f, v) for f, v in ((A, x), (B, a), (C, b))],
           'outputs': [holds(f, v) for f, v in ((A, a), (B, b), (C, y))]}
    if creator:
        res['creators'] = [getattr(v, 'creator', _MISSING) is f for f, v in ((A, a), (B, b), (C, y))]
        res['leaf_creator_none'] = getattr(x, 'creator', _MISSING) is None
    return res


# -- steps 4, 10: numerical differentiation -------------------------------------------------------
def _central(f, x, eps):
    return (f(x + eps) - f(x - eps)) / (2 * eps)


@scenario('early.numerical_diff')
def numerical_diff(ctx, cases, shape=(3,)):
    """`numerical_diff(f, x, eps=1e-4)` on functions of the learner's Variables: a cube with an
    explicit eps, a steep exponential with the default eps (the central difference's error
    shows which eps was used), the book's composite at 0.5, and `square` against its own
    backward (step 10's gradient check)."""
    V = ctx.api.Variable
    nd = ctx.api.get('numerical_diff')
    x = ctx.rng(4).uniform(0.5, 1.5, size=shape)
    res = {}

    def cube():
        eps = 1e-2
        got = nd(lambda v: V(_asarray(v.data ** 3)), V(x.copy()), eps)
        return {'value': export(ctx, got), 'expected': _central(lambda t: t ** 3, x, eps)}

    def steep():
        z = x - 1.0
        got = nd(lambda v: V(_asarray(_exp(20.0 * v.data))), V(z.copy()))
        return {'value': export(ctx, got), 'expected': _central(lambda t: _exp(20.0 * t), z, 1e-4)}

    def book():
        Square, Exp = ctx.api.get('Square'), ctx.api.get('Exp')
        return {'value': export(ctx, nd(lambda v: Square()(Exp()(Square()(v))), V(_array(0.5))))}

    def square():
        sq = ctx.api.get('square')
        xv = V(x.copy())
        y = sq(xv)
        y.backward()
        return {'numeric': export(ctx, nd(sq, V(x.copy()))), 'backward': export(ctx, xv.grad)}

    for name in cases:
        phase(res, name, {'cube': cube, 'steep': steep, 'book': book, 'square': square}[name])
    return res


# -- steps 8-10: loops, seeds, tests --------------------------------------------------------------
@scenario('early.deep_chain')
def deep_chain(ctx, depth, name='Square', value=0.0):
    """`depth` functions in a row, then backward: a loop handles any depth, a recursion
    stops at Python's recursion limit."""
    V = ctx.api.Variable
    f = ctx.api.get(name)
    res = {}

    def run():
        x = V(_array(value))
        y = x
        for _ in range(depth):
            y = f()(y)
        y.grad = np.ones_like(host_value(ctx, y))
        y.backward()
        return {'grad_is_set': x.grad is not None, 'grad': export(ctx, x.grad)}
    phase(res, 'backward', run)
    return res


@scenario('early.seed')
def seed(ctx, shape):
    """From step 9: backward() without a seed starts from ones, and 0-d results are ndarrays."""
    V = ctx.api.Variable
    square, exp = ctx.api.get('square'), ctx.api.get('exp')
    a = ctx.rng(5).standard_normal(shape)
    res = {}

    def book():
        x = V(_array(0.5))
        y = square(exp(square(x)))
        y.backward()
        return {'grad': export(ctx, x.grad)}
    phase(res, 'book', book)

    def vector():
        x = V(a.copy())
        y = square(x)
        y.backward()
        return {'grad': export(ctx, x.grad), 'expected': 2 * a}
    phase(res, 'vector', vector)

    def zero_d():
        return {'square': isinstance(square(V(_array(2.0))).data, _ndarray),
                'exp': isinstance(exp(V(_array(2.0))).data, _ndarray)}
    phase(res, 'zero_d_is_ndarray', zero_d)
    return res


@scenario('early.unittests')
def unittests(ctx):
    """Run the tests the step file defines: its unittest.TestCase classes (the book's step 10
    writes SquareTest) and, written for pytest, `Test*` classes and `test_*` functions that take
    no arguments; report how many ran and how they ended (an AssertionError is a failure, any
    other exception an error)."""
    module = ctx.api.module
    names = sorted(vars(module).items())
    cases = [(name, obj) for name, obj in names if isinstance(obj, type) and issubclass(obj, unittest.TestCase)
             and obj.__module__.split('.')[0] != 'unittest']
    own = [(name, obj) for name, obj in names if getattr(obj, '__module__', None) == module.__name__]
    suite = unittest.TestSuite()
    loader = unittest.TestLoader()
    for _, case in cases:
        suite.addTests(loader.loadTestsFromTestCase(case))
    np.random.seed(ctx.seed % (2 ** 31))
    result = unittest.TextTestRunner(stream=io.StringIO(), verbosity=0).run(suite)
    ran, failures, errors = result.testsRun, len(result.failures), len(result.errors)
    problems = [str(test) + ': ' + text.strip().splitlines()[-1]
                for test, text in result.failures + result.errors]
    for label, test in _pytest_style(own):
        ran += 1
        try:
            test()
        except AssertionError as e:
            failures += 1
            problems.append('{}: AssertionError {}'.format(label, capture.text(e)).rstrip())
        except Exception as e:
            errors += 1
            problems.append('{}: {}: {}'.format(label, type(e).__name__, capture.text(e)))
    classes = [name for name, _ in cases] + sorted({label.split('.')[0] for label, _ in _pytest_style(own)})
    return {'classes': classes, 'ran': ran, 'failures': failures, 'errors': errors, 'problems': problems[:5]}


def _pytest_style(own):
    """(label, callable) for each test written the pytest way: a method `test_*` of a class
    `Test*` (one fresh instance per test), or a module-level function `test_*`, that needs no
    argument (a test that asks for a pytest fixture is left out)."""
    import inspect
    found = []

    def plain(fn, skip=0):
        try:
            params = list(inspect.signature(fn).parameters.values())[skip:]
        except (TypeError, ValueError):
            return False
        return _all(p.default is not p.empty or p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) for p in params)

    for name, obj in own:
        if isinstance(obj, type) and name.startswith('Test') and not issubclass(obj, unittest.TestCase):
            if '__init__' in vars(obj):
                continue            # pytest does not collect a class with __init__
            for attr in sorted(vars(obj)):
                method = vars(obj)[attr]
                if attr.startswith('test') and callable(method) and plain(method, skip=1):
                    found.append(('{}.{}'.format(name, attr),
                                  lambda cls=obj, attr=attr: getattr(cls(), attr)()))
        elif name.startswith('test') and inspect.isfunction(obj) and plain(obj):
            found.append((name, obj))
    return found


# -- steps 11-12: several inputs and outputs ------------------------------------------------------
@scenario('early.list_call')
def list_call(ctx, shape):
    """Step 11: `Add()([x0, x1])` returns the list of outputs and records inputs and outputs."""
    V = ctx.api.Variable
    Add = ctx.api.get('Add')
    rng = ctx.rng(6)
    a, b = rng.standard_normal(shape), rng.standard_normal(shape)
    res = {}

    def run():
        x0, x1 = V(a.copy()), V(b.copy())
        f = Add()
        ys = f([x0, x1])
        is_list = isinstance(ys, (list, tuple))
        kept = [value for value in vars(f).values() if isinstance(value, (list, tuple)) and len(value) == 2
                and value[0] is x0 and value[1] is x1]
        return {'returns_list': is_list, 'length': len(ys) if is_list else None,
                'value': export(ctx, ys[0]) if is_list else None, 'expected': a + b,
                'records_inputs': bool(kept)}
    phase(res, 'call', run)
    return res


@scenario('early.varargs')
def varargs(ctx, shape):
    """Step 12: f(x0, x1) returns one Variable for one output, the list for several, and a
    forward that returns a bare array is wrapped."""
    V = ctx.api.Variable
    Function = ctx.api.get('Function')
    add = ctx.api.get('add')
    rng = ctx.rng(7)
    a, b, c = (rng.standard_normal(shape) for _ in range(3))

    class Pair(Function):
        def forward(self, x):
            return x, x * 2

    class Sum3(Function):
        def forward(self, x0, x1, x2):
            return x0 + x1 + x2

    res = {}

    def one():
        y = add(V(a.copy()), V(b.copy()))
        return {'is_variable': is_variable(ctx, y), 'value': export(ctx, y), 'expected': a + b}
    phase(res, 'one_output', one)

    def two():
        ys = Pair()(V(a.copy()))
        return {'length': len(ys), 'second': export(ctx, ys[1]), 'expected': a * 2}
    phase(res, 'two_outputs', two)

    def three():
        y = Sum3()(V(a.copy()), V(b.copy()), V(c.copy()))
        return {'value': export(ctx, y), 'expected': a + b + c}
    phase(res, 'three_inputs', three)
    return res


# -- steps 14-18: reuse, memory, modes ------------------------------------------------------------
@scenario('early.reuse')
def reuse(ctx, value, retain=False):
    """add(x, x), add(add(x, x), x) and a fresh start after cleargrad(); the seed gradient must
    survive the accumulation (no in-place +=). `retain`: pass retain_grad=True (step 18 on)."""
    V = ctx.api.Variable
    add = ctx.api.get('add')
    kw = {'retain_grad': True} if retain else {}
    res = {}

    def twice():
        x = V(_array(value))
        y = add(x, x)
        y.backward(**kw)
        return {'grad': export(ctx, x.grad), 'seed_after': export(ctx, y.grad)}
    phase(res, 'x_plus_x', twice)

    def three_times():
        x = V(_array(value))
        y = add(add(x, x), x)
        y.backward()
        return export(ctx, x.grad)
    phase(res, 'x_plus_x_plus_x', three_times)

    def cleared():
        x = V(_array(value))
        add(add(x, x), x).backward()
        x.cleargrad()
        add(x, x).backward()
        return export(ctx, x.grad)
    phase(res, 'after_cleargrad', cleared)
    return res


@scenario('early.memory')
def memory(ctx, size=1000):
    """With the cyclic garbage collector off, a graph must be freed as soon as its output is
    dropped: a Function that held its outputs strongly would form a reference cycle."""
    V = ctx.api.Variable
    square = ctx.api.get('square')
    was_enabled = gc.isenabled()
    gc.collect()
    gc.disable()
    try:
        x = V(ctx.rng(8).standard_normal(size))
        y = square(square(square(x)))
        output_ref = weakref.ref(y)
        function_ref = weakref.ref(y.creator)
        del y
        freed = {'output_freed': output_ref() is None, 'function_freed': function_ref() is None}
    finally:
        if was_enabled:
            gc.enable()
    gc.collect()
    return freed


@scenario('early.retain')
def retain(ctx, shape):
    """Step 18: backward() drops the gradients of intermediate variables unless
    retain_grad=True; leaves keep theirs."""
    V = ctx.api.Variable
    add = ctx.api.get('add')
    rng = ctx.rng(9)
    a, b = rng.standard_normal(shape), rng.standard_normal(shape)
    res = {}

    def run(**kw):
        x0, x1 = V(a.copy()), V(b.copy())
        t = add(x0, x1)
        y = add(x0, t)
        y.backward(**kw)
        return {'t_grad_is_none': t.grad is None, 'y_grad_is_none': y.grad is None,
                't_grad': None if t.grad is None else export(ctx, t.grad),
                'x0_grad': export(ctx, x0.grad), 'x1_grad': export(ctx, x1.grad),
                'twos': np.full(shape, 2.0), 'ones': np.ones(shape)}
    phase(res, 'default', run)
    phase(res, 'retained', lambda: run(retain_grad=True))
    return res


@scenario('early.no_grad')
def no_grad(ctx, value):
    """Step 18: no_grad() and using_config('enable_backprop', False) record no graph; the mode
    comes back on exit, also when the block raised."""
    V = ctx.api.Variable
    square = ctx.api.get('square')
    res = {}

    def inside():
        x = V(_array(value))
        with ctx.api.get('no_grad')():
            y = square(x)
        return {'records_graph': y.creator is not None, 'value': export(ctx, y),
                'expected': _array(value) ** 2}
    phase(res, 'no_grad', inside)

    def config():
        x = V(_array(value))
        with ctx.api.get('using_config')('enable_backprop', False):
            y = square(x)
        return {'records_graph': y.creator is not None}
    phase(res, 'using_config', config)

    def after_exception():
        try:
            with ctx.api.get('no_grad')():
                raise KeyError('probe')
        except KeyError:
            pass
        z = square(V(_array(value)))
        return {'records_graph': z.creator is not None,
                'flag': bool(ctx.api.get('Config').enable_backprop)}
    phase(res, 'after_exception', after_exception)
    return res


# -- steps 19-21: metadata, operands --------------------------------------------------------------
def _squash(text):
    return ' '.join(str(text).split())


@scenario('early.meta')
def meta(ctx, shapes, repr=True):
    """shape, ndim, size, dtype and len() agree with the data (len only where there is a first
    axis); a name is kept; repr is `variable(...)` around the data's text (whitespace free)."""
    V = ctx.api.Variable
    rng = ctx.rng(10)
    res = {'cases': []}
    for k, shape in enumerate(shapes):
        data = rng.standard_normal(shape) if k % 2 == 0 else rng.integers(0, 9, size=shape)
        expected = {'shape': list(data.shape), 'ndim': data.ndim, 'size': int(data.size),
                    'dtype': str(data.dtype)}
        if data.ndim:
            expected['len'] = len(data)

        def found(data=data):
            x = V(data.copy())
            got = {'shape': list(x.shape), 'ndim': int(x.ndim), 'size': int(x.size),
                   'dtype': str(x.dtype)}
            if data.ndim:
                got['len'] = len(x)
            return got
        case = phase({'expected': expected}, 'found', found)
        if repr:
            case['repr'] = phase({'expected': 'variable(' + _squash(data) + ')'}, 'found',
                                 lambda data=data: _squash(builtin_repr(V(data.copy()))))
        res['cases'].append(case)

    def names():
        return {'given': V(_array(1.0), name='x').name, 'default': V(_array(1.0)).name}
    phase(res, 'name', names)
    if repr:
        phase(res, 'repr_none', lambda: _squash(builtin_repr(V(None))))
    return res


# name -> (the expression as a learner writes it, the expression on a Variable x, its value at a,
# its derivative at a where the other operand is a Python number and x is 0-d, else None)
OPERAND_CASES = {
    # step 21: + and *
    'plus_array': ('x + np.array(3.0)', lambda x: x + _array(3.0), lambda a: a + 3.0, None),
    'plus_float': ('x + 3.0', lambda x: x + 3.0, lambda a: a + 3.0, lambda a: 1.0),
    'plus_int': ('x + 3', lambda x: x + 3, lambda a: a + 3.0, lambda a: 1.0),
    'float_plus': ('3.0 + x', lambda x: 3.0 + x, lambda a: 3.0 + a, lambda a: 1.0),
    'times_float': ('x * 2.0', lambda x: x * 2.0, lambda a: a * 2.0, lambda a: 2.0),
    'float_times': ('2.0 * x', lambda x: 2.0 * x, lambda a: 2.0 * a, lambda a: 2.0),
    'float_times_plus': ('3.0 * x + 1.0', lambda x: 3.0 * x + 1.0, lambda a: 3.0 * a + 1.0, lambda a: 3.0),
    'array_times': ('np.array([2.0, 3.0]) * x', lambda x: _array([2.0, 3.0]) * x,
                    lambda a: _array([2.0, 3.0]) * a, None),
    'array_plus': ('np.array([3.0, 4.0]) + x', lambda x: _array([3.0, 4.0]) + x,
                   lambda a: _array([3.0, 4.0]) + a, None),
    # step 22: - / ** and unary -
    'minus_float': ('x - 1.0', lambda x: x - 1.0, lambda a: a - 1.0, lambda a: 1.0),
    'float_minus': ('1.0 - x', lambda x: 1.0 - x, lambda a: 1.0 - a, lambda a: -1.0),
    'minus_int': ('x - 1', lambda x: x - 1, lambda a: a - 1.0, lambda a: 1.0),
    'minus_array': ('x - np.array(1.0)', lambda x: x - _array(1.0), lambda a: a - 1.0, None),
    'array_minus': ('np.array([3.0, 4.0]) - x', lambda x: _array([3.0, 4.0]) - x,
                    lambda a: _array([3.0, 4.0]) - a, None),
    'div_float': ('x / 2.0', lambda x: x / 2.0, lambda a: a / 2.0, lambda a: 0.5),
    'float_div': ('2.0 / x', lambda x: 2.0 / x, lambda a: 2.0 / a, lambda a: -2.0 / a ** 2),
    'div_array': ('x / np.array(2.0)', lambda x: x / _array(2.0), lambda a: a / 2.0, None),
    'array_div': ('np.array([2.0, 3.0]) / x', lambda x: _array([2.0, 3.0]) / x,
                  lambda a: _array([2.0, 3.0]) / a, None),
    'pow_int': ('x ** 2', lambda x: x ** 2, lambda a: a ** 2, lambda a: 2.0 * a),
    'pow_float': ('x ** 3.0', lambda x: x ** 3.0, lambda a: a ** 3.0, lambda a: 3.0 * a ** 2),
    'neg': ('-x', lambda x: -x, lambda a: -a, lambda a: -1.0),
}
STEP21_OPERANDS = ('plus_array', 'plus_float', 'plus_int', 'float_plus', 'times_float', 'float_times',
                   'float_times_plus', 'array_times', 'array_plus')


def _kind(value):
    """What an operator gave instead of a Variable, in a few words."""
    if isinstance(value, _ndarray):
        return 'an ndarray of dtype {}'.format(value.dtype)
    return 'a {}'.format(type(value).__name__)


@scenario('early.operands')
def operands(ctx, value, cases=STEP21_OPERANDS, add_first=True):
    """Steps 21-22: ndarrays and Python numbers on either side of an operator give Variables
    (an ndarray on the left needs __array_priority__, or NumPy makes an object array; those that
    do not are listed in `not_variables`), with the right value (`values`), and where the other
    side is a number, the right gradient (`grads`).
    `add_first`: also `add(np.array(1.0), x)`, the function called with an ndarray first."""
    V = ctx.api.Variable
    a = float(value)
    res = {'not_variables': [], 'values': {}, 'grads': {}}

    def failed(text, e):
        info = raised(e)
        return dict(info, message='{}: {}'.format(text, info['message']))

    table = {name: OPERAND_CASES[name][:3] for name in cases}
    if add_first:
        table['add_array_first'] = ('add(np.array(1.0), x)', lambda x: ctx.api.get('add')(_array(1.0), x),
                                    lambda a: 1.0 + a)
    for name, (text, fn, expected) in table.items():
        try:
            y = fn(V(_array(a)))
            if is_variable(ctx, y):
                res['values'][name] = {'expression': text, 'value': export(ctx, y),
                                       'expected': _asarray(expected(a))}
            else:
                res['not_variables'].append('{} gave {}'.format(text, _kind(y)))
        except Exception as e:
            res['values'][name] = failed(text, e)
    for name in cases:
        text, fn, _, slope = OPERAND_CASES[name]
        if slope is None:
            continue
        try:
            x = V(_array(a))
            fn(x).backward()
            if x.grad is None:
                raise LookupError('after backward() x.grad is None')
            res['grads'][name] = {'expression': text, 'grad': export(ctx, x.grad),
                                  'expected': _asarray(slope(a))}
        except Exception as e:
            res['grads'][name] = failed(text, e)
    return res
