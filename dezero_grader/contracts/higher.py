"""The scenarios of `dezero_grader.sandboxed.probes.scenarios.higher`: parameters and report shapes."""
from dezero_grader.contracts import P, declare
from dezero_grader.contracts.shapes import ARRAY, BOOL, INT, NUM, Opt, Phase


declare(
    'grad.double_backprop',
    'Step 36: z = (dy/dx)³ + y for y = x², differentiated again: dz/dx = 24x² + 2x, at '
    "the book's x = 2 (100) and at a point drawn from the seed",
    report={'book': Phase(ARRAY), 'random': Phase(ARRAY)})


declare(
    'grad.higher_order',
    'The first `order` derivatives of each of `fns` at a point drawn from the seed, by '
    "repeated backward(create_graph=True), and how many functions each derivative's graph"
    ' holds (it grows with the order: the derivatives are themselves graphs)',
    params={'fns': P('list'), 'order': P('int')},
    report={
        'x': NUM,
        **{name: Opt(Phase({'derivatives': [NUM], 'graph_sizes': [INT]}))
           for name in ('sin', 'cos', 'tanh', 'poly')},   # one per name of `fns`
    })


declare(
    'grad.kind',
    'Step 32: a gradient is a Variable; plain backward() records no graph for it, and '
    'backward(create_graph=True) does (for a function that is not linear)',
    params={'shape': P('list')},
    report={
        'plain': Phase({
            'is_variable': BOOL, 'has_graph': BOOL, 'value': ARRAY, 'expected': ARRAY,
        }),
        'create_graph': Phase({'has_graph': BOOL, 'value': ARRAY, 'expected': ARRAY}),
    })


declare(
    'opt.descent',
    "Step 28: gradient descent on Rosenbrock's function, updating `.data` in place and "
    'clearing the gradients before each backward',
    params={'iters': P('int'), 'lr': P('number'), 'start': P('list')},
    report={'first_gradient': Phase([ARRAY]), 'final': Phase([ARRAY])})


declare(
    'opt.newton',
    "Newton's method on x⁴ − 2x²: the second derivative by hand (`manual`, step 29) or by"
    ' differentiating the gradient (`auto`, step 33, backward(create_graph=True)); the '
    'iterates, and both derivatives at a point drawn from the seed',
    params={'iters': P('int'), 'start': P('number'), 'second': P('str', 'manual')},
    report={
        'iterates': Phase([NUM]), 'at_point': Phase({'first': ARRAY, 'second': ARRAY}),
    })
