"""The scenarios of `dezero_grader.sandboxed.probes.scenarios.networks`: parameters and report shapes."""
from dezero_grader.contracts import P, declare
from dezero_grader.contracts.derived import every, phase
from dezero_grader.contracts.shapes import ARRAY, BOOL, INT, NUM, STR, Phase

# `by_shape`: [shape, array] pairs sorted by shape, then values (an order any implementation gives)
BY_SHAPE = ([INT], ARRAY)
# a parameter's [shape, ndim, size, dtype, len, is a Variable]
METADATA = ([INT], INT, INT, STR, INT, BOOL)


CLEARGRADS = {'single': [BY_SHAPE], 'accumulated': [BY_SHAPE], 'twice_single': [BY_SHAPE],
              'cleared': [BY_SHAPE]}
declare(
    'layer.cleargrads',
    'Gradients accumulate over backward passes until cleargrads(): a second backward '
    'without it doubles them, with it they are those of one pass; after cleargrads() none'
    ' is left',
    params={'in_size': P('int'), 'out_size': P('int'), 'batch': P('int')},
    report=dict(CLEARGRADS, none_left=[BOOL]),   # per parameter: its grad is None
    derive=lambda r, params: dict(r, none_left=every(r['none_left'])),
    judged=dict(CLEARGRADS, none_left=BOOL))


declare(
    'layer.linear',
    'A Linear layer (lazy input size) with weights set from the seed: the output and the '
    'gradients of W and b',
    params={'in_size': P('int'), 'out_size': P('int'), 'batch': P('int')},
    report={'y': ARRAY, 'params': [BY_SHAPE], 'grads': [BY_SHAPE]})


declare(
    'layer.nested',
    'Layers inside layers: params() yields every Parameter reachable through attributes, '
    'each once (found by path, e.g. block/fc/W); cleargrads() clears the nested ones too',
    params={'in_size': P('int'), 'hidden': P('int'), 'out': P('int'), 'batch': P('int')},
    # `cleargrads`: per parameter, whether it had a gradient and whether cleargrads() cleared it
    report={
        'params': Phase({'paths': [STR], 'found': [STR]}),
        'cleargrads': Phase({'had_grads': [BOOL], 'cleared': [BOOL]}),
    },
    derive=lambda r, params: phase(dict(r), 'cleargrads', lambda c: {
        'had_grads': every(c['had_grads']), 'cleared': every(c['cleared'])}),
    judged={
        'params': Phase({'paths': [STR], 'found': [STR]}),
        'cleargrads': Phase({'had_grads': BOOL, 'cleared': BOOL}),
    })


CUSTOM = {'count': INT, 'names': [STR], 'param_ids': [INT], 'attribute_ids': [INT]}
REGISTRATION = {
    'linear': Phase(INT),
    'linear_nobias': Phase(INT),
    'metadata': Phase({'found': [METADATA], 'expected': [METADATA]}),
}
declare(
    'layer.registration',
    "A custom layer's Parameters are registered by assignment (plain Variables, arrays "
    'and None are not parameters); Linear has W and b (W only with nobias); every '
    'parameter is a Variable whose metadata agrees with its data',
    # `custom`: the identities of params()'s Parameters and of the two attributes, as they are
    report=dict(REGISTRATION, custom=Phase(CUSTOM)),
    derive=lambda r, params: phase(dict(r), 'custom', lambda c: dict(
        c, are_the_attributes=sorted(c['param_ids']) == sorted(c['attribute_ids']))),
    judged=dict(REGISTRATION, custom=Phase(dict(CUSTOM, are_the_attributes=BOOL))))


declare(
    'layer.tied',
    'One Linear layer used twice in a model (tied weights): it is one set of parameters, '
    "and its gradient holds both uses' contributions",
    params={'size': P('int'), 'batch': P('int')},
    report={'count': INT, 'y': ARRAY, 'grads': [BY_SHAPE]})


declare(
    'model.mlp',
    'MLP(sizes): one Linear per size, the activation between layers (not after the last);'
    ' parameter shapes, and the output for weights set from the seed',
    params={'sizes': P('list'), 'in_size': P('int'), 'batch': P('int'),
            'activation': P(('null', 'str'), None)},
    report={'forward': Phase({'shapes': [[INT]], 'y': ARRAY})})


declare(
    'opt.hooks',
    'setup() returns the optimizer; update() skips parameters without a gradient and '
    'calls every hook once with the parameters it updates',
    params={'lr': P('number')},
    report={
        'setup_returns_optimizer': BOOL,
        'update': Phase({'a': ARRAY, 'a_expected': ARRAY, 'b': ARRAY, 'b_expected': ARRAY}),
        'hook_calls': [[STR]],
    })


declare(
    'opt.momentum_book',
    "The book's check of MomentumSGD: W = 1, a constant gradient of 1, lr 0.1, two "
    'updates give 0.71',
    report={'after': [ARRAY]})


declare(
    'opt.optimizer',
    '`steps` updates of an MLP with optimizers.<name>, from weights set from the seed, on'
    ' a squared error: the parameters after each update',
    params={'name': P('str'), 'steps': P('int'), 'kwargs': P(('dict', 'null'), None)},
    report={'history': [[BY_SHAPE]]})


declare(
    'tensor.seed',
    "backward() on a tensor output seeds a gradient of the output's shape",
    params={'shape': P('list')},
    report={'seed_shape': [INT], 'grad_shape': [INT], 'grad': ARRAY})


_SHAPED = Phase({'shape': [INT], 'value': ARRAY, 'grad_shape': [INT]})

declare(
    'tensor.shape_methods',
    "Variable.reshape in all the book's spellings, .transpose() and .T: the result's shape "
    "and values, and the gradient's shape after a backward",
    report={name: _SHAPED for name in ('reshape_ints', 'reshape_one_int', 'reshape_tuple',
                                       'reshape_list', 'transpose_none', 'T')})


declare(
    'tensor.transpose_axes',
    'Variable.transpose with axes, as ints and as one tuple: shapes, values, gradient shapes',
    report={'transpose_ints': _SHAPED, 'transpose_tuple': _SHAPED})


declare(
    'train.linear_regression',
    'Fit y = 5 + 2x + noise with matmul and mean_squared_error, updating `.data` by hand',
    params={'n': P('int'), 'iters': P('int'), 'lr': P('number')},
    report={'W': ARRAY, 'b': ARRAY, 'losses': [NUM]})


declare(
    'train.nn_fit',
    'A 1-hidden-layer network (linear, sigmoid, linear) fitted to a noisy sine with plain'
    ' gradient descent on Variables: the loss trajectory and the final weights',
    params={'n': P('int'), 'hidden': P('int'), 'iters': P('int'), 'lr': P('number')},
    report={'losses': [NUM], 'params': [ARRAY]})
