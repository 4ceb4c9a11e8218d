"""The scenarios of `dezero_grader.sandboxed.probes.scenarios.single_file`: parameters and report shapes."""
from dezero_grader.contracts import P, declare
from dezero_grader.contracts.derived import every, phase
from dezero_grader.contracts.shapes import ARRAY, BOOL, INT, NONE, NUM, STR, Opt, Phase, Sized, When


def _three(params):
    return 3   # x → Square → a → Exp → b → Square → y


declare(
    'early.chain',
    'Functions applied in turn: each output is a new Variable and the input stays as it '
    'was',
    params={'names': P('list'), 'shape': P('list')},
    # `identities`: of the input and of each output, as they are
    report={'run': Phase({'input_after': ARRAY, 'input': ARRAY, 'identities': [INT]})},
    derive=lambda r, params: phase(dict(r), 'run', lambda run: dict(
        run, outputs_distinct=len(set(run['identities'])) == len(run['identities']))),
    judged={'run': Phase({'input_after': ARRAY, 'input': ARRAY, 'identities': [INT],
                          'outputs_distinct': BOOL})})


declare(
    'early.deep_chain',
    '`depth` functions in a row, then backward: a loop handles any depth, a recursion '
    "stops at Python's recursion limit",
    params={'depth': P('int'), 'name': P('str', 'Square'), 'value': P('number', 0.0)},
    report={'backward': Phase({'grad_is_set': BOOL, 'grad': ARRAY})})


declare(
    'early.links',
    'x → Square → a → Exp → b → Square → y: each Function keeps its input and its output '
    "(in attributes of any name; the book's are `input` and `output`) and, from step 7, "
    "each Variable its creator (`creator`, which the book's own code reads)",
    params={'creator': P('bool', False)},
    # per function of the three, as it is: the trusted side decides for them all
    report={
        'inputs': Sized(BOOL, _three), 'outputs': Sized(BOOL, _three),
        'creators': When('creator', Sized(BOOL, _three)), 'leaf_creator_none': When('creator', BOOL),
    },
    derive=lambda r, params: dict(r, **{k: every(r[k]) for k in ('inputs', 'outputs', 'creators')
                                        if k in r}),
    judged={'inputs': BOOL, 'outputs': BOOL, 'creators': Opt(BOOL),
            'leaf_creator_none': Opt(BOOL)})


declare(
    'early.list_call',
    'Step 11: `Add()([x0, x1])` returns the list of outputs and records inputs and '
    'outputs',
    params={'shape': P('list')},
    report={
        'call': Phase({
            'returns_list': BOOL, 'length': INT, 'value': ARRAY, 'expected': ARRAY,
            'records_inputs': BOOL,
        }),
    })


declare(
    'early.memory',
    'With the cyclic garbage collector off, a graph must be freed as soon as its output '
    'is dropped: a Function that held its outputs strongly would form a reference cycle',
    params={'size': P('int', 1000)},
    report={'output_freed': BOOL, 'function_freed': BOOL})


declare(
    'early.meta',
    'shape, ndim, size, dtype and len() agree with the data (len only where there is a '
    "first axis); a name is kept; repr is `variable(...)` around the data's text "
    '(whitespace free)',
    params={'shapes': P('list'), 'repr': P('bool', True)},
    report={
        'cases': [{
            'expected': {
                'shape': [INT], 'ndim': INT, 'size': INT, 'dtype': STR, 'len': Opt(INT),
            },
            'found': Phase({
                'shape': [INT], 'ndim': INT, 'size': INT, 'dtype': STR, 'len': Opt(INT),
            }),
            'repr': Opt({'expected': STR, 'found': Phase(STR)}),
        }],
        'name': Phase({'given': STR | NONE, 'default': STR | NONE}),
        'repr_none': Opt(Phase(STR)),
    })


declare(
    'early.no_grad',
    "Step 18: no_grad() and using_config('enable_backprop', False) record no graph; the "
    'mode comes back on exit, also when the block raised',
    params={'value': P('number')},
    report={
        'no_grad': Phase({'records_graph': BOOL, 'value': ARRAY, 'expected': NUM}),
        'using_config': Phase({'records_graph': BOOL}),
        'after_exception': Phase({'records_graph': BOOL, 'flag': BOOL}),
    })


declare(
    'early.numerical_diff',
    "`numerical_diff(f, x, eps=1e-4)` on functions of the learner's Variables: a cube "
    'with an explicit eps, a steep exponential with the default eps (the central '
    "difference's error shows which eps was used), the book's composite at 0.5, and "
    "`square` against its own backward (step 10's gradient check)",
    params={'cases': P('list'), 'shape': P('list', (3,))},
    report={
        'cube': Opt(Phase({'value': ARRAY, 'expected': ARRAY})),
        'steep': Opt(Phase({'value': ARRAY, 'expected': ARRAY})),
        'book': Opt(Phase({'value': ARRAY})),
        'square': Opt(Phase({'numeric': ARRAY, 'backward': ARRAY})),
    })


# the operand cases `early.operands` knows (its `cases` choose among them)
OPERAND_CASES = ('plus_array', 'plus_float', 'plus_int', 'float_plus', 'times_float',
                 'float_times', 'float_times_plus', 'array_times', 'array_plus', 'minus_float',
                 'float_minus', 'minus_int', 'minus_array', 'array_minus', 'div_float',
                 'float_div', 'div_array', 'array_div', 'pow_int', 'pow_float', 'neg')

declare(
    'early.operands',
    'Steps 21-22: ndarrays and Python numbers on either side of an operator give '
    'Variables, with the right value (`values`), and where the other side is a number, '
    'the right gradient (`grads`); those that are not Variables are listed in `not_variables`',
    params={
        'value': P('number'),
        'cases': P('list', ('plus_array', 'plus_float', 'plus_int', 'float_plus', 'times_float',
                            'float_times', 'float_times_plus', 'array_times', 'array_plus'),
                   'names among OPERAND_CASES'),
        'add_first': P('bool', True, 'also `add` with the ndarray first (`add_array_first`)'),
    },
    report={
        'not_variables': [STR],
        # a case that raised reports {'raised', 'message'}
        'values': {name: Opt(Phase({'expression': STR, 'value': ARRAY, 'expected': ARRAY}))
                   for name in OPERAND_CASES + ('add_array_first',)},
        'grads': {name: Opt(Phase({'expression': STR, 'grad': ARRAY, 'expected': ARRAY}))
                  for name in OPERAND_CASES},
    })


declare(
    'early.protocol',
    '`Function.__call__` takes a Variable, hands `forward` the raw array and wraps the '
    'result in a new Variable',
    params={'shape': P('list')},
    report={
        'call': Phase({
            'output_is_variable': BOOL, 'value': ARRAY, 'expected': ARRAY, 'forward_got': STR,
        }),
    })


declare(
    'early.retain',
    'Step 18: backward() drops the gradients of intermediate variables unless '
    'retain_grad=True; leaves keep theirs',
    params={'shape': P('list')},
    report={
        'default': Phase({
            't_grad_is_none': BOOL, 'y_grad_is_none': BOOL, 't_grad': ARRAY | NONE,
            'x0_grad': ARRAY, 'x1_grad': ARRAY, 'twos': ARRAY, 'ones': ARRAY,
        }),
        'retained': Phase({
            't_grad_is_none': BOOL, 'y_grad_is_none': BOOL, 't_grad': ARRAY | NONE,
            'x0_grad': ARRAY, 'x1_grad': ARRAY, 'twos': ARRAY, 'ones': ARRAY,
        }),
    })


declare(
    'early.reuse',
    'add(x, x), add(add(x, x), x) and a fresh start after cleargrad(); the seed gradient '
    'must survive the accumulation (no in-place +=)',
    params={'value': P('number'), 'retain': P('bool', False)},
    report={
        'x_plus_x': Phase({'grad': ARRAY, 'seed_after': ARRAY}), 'x_plus_x_plus_x': Phase(ARRAY),
        'after_cleargrad': Phase(ARRAY),
    })


declare(
    'early.seed',
    'From step 9: backward() without a seed starts from ones, and 0-d results are '
    'ndarrays',
    params={'shape': P('list')},
    report={
        'book': Phase({'grad': ARRAY}), 'vector': Phase({'grad': ARRAY, 'expected': ARRAY}),
        'zero_d_is_ndarray': Phase({'square': BOOL, 'exp': BOOL}),
    })


declare(
    'early.type_check',
    'Which data a Variable accepts: None and ndarrays, never a Python float (from step 9)',
    report={'none': STR, 'array': STR, 'float': STR})


declare(
    'early.unittests',
    "Run the tests the step file defines: its unittest.TestCase classes (the book's step "
    '10 writes SquareTest) and, written for pytest, `Test*` classes and `test_*` '
    'functions that take no arguments; report how many ran and how they ended (an '
    'AssertionError is a failure, any other exception an error)',
    report={
        'classes': [STR], 'ran': INT, 'failures': INT, 'errors': INT, 'problems': [STR],
    })


declare(
    'early.varargs',
    'Step 12: f(x0, x1) returns one Variable for one output, the list for several, and a '
    'forward that returns a bare array is wrapped',
    params={'shape': P('list')},
    report={
        'one_output': Phase({'is_variable': BOOL, 'value': ARRAY, 'expected': ARRAY}),
        'two_outputs': Phase({'length': INT, 'second': ARRAY, 'expected': ARRAY}),
        'three_inputs': Phase({'value': ARRAY, 'expected': ARRAY}),
    })


declare(
    'early.variable',
    'A Variable hands back the array it was given, takes a new one, and each Variable '
    'keeps its own',
    params={'shape': P('list')},
    report={
        'box': Phase({'data': ARRAY, 'input': ARRAY}),
        'reassign': Phase({'data': ARRAY, 'assigned': ARRAY}),
        'two': Phase({
            'first': ARRAY, 'first_input': ARRAY, 'second': ARRAY, 'second_input': ARRAY,
        }),
    })
