"""The scenarios of `grader.sandboxed.probes.scenarios.conv`: parameters and report shapes."""
from grader.contracts import P, declare
from grader.contracts.shapes import ARRAY, BOOL, INT, NUM, STR, Opt, Phase


declare(
    'conv.im2col',
    'im2col of seeded images, and col2im of seeded column arrays, for each case {shape, '
    'kernel, stride, pad, to_matrix, arange?}',
    params={'cases': P('list')},
    report=[{'im2col': Phase(ARRAY), 'col2im': Phase(ARRAY)}])


declare(
    'conv.init_scale',
    "The learner's initial weights of Conv2d layers with different fan-ins: their "
    'standard deviation against sqrt(1 / (C·KH·KW)), and their mean in standard errors',
    params={'cases': P('list')},
    report=[{
        'W': Phase({
            'shape': [INT], 'fan_in': INT, 'std': NUM, 'expected_std': NUM, 'ratio': NUM,
            'mean_in_se': NUM,
        }),
    }])


declare(
    'conv.layer',
    "A Conv2d layer with lazy input channels: W's shape after the first call, b's, the "
    "output's; with weights set from the seed, the output's values; nobias",
    params={'out_channels': P('int'), 'kernel': P('int'), 'stride': P('int'), 'pad': P('int'),
            'shape': P('list')},
    report={
        'lazy': Phase({
            'W_none_before_call': BOOL, 'W': [INT], 'b': [INT], 'y': [INT], 'n_params': INT,
            'value': ARRAY,
        }),
        'nobias': Phase({'n_params': INT, 'value': ARRAY}),
        'in_channels_given': Phase({'W': [INT], 'y': [INT]}),
    })


declare(
    'conv.lenet',
    "A LeNet-shaped network built from the learner's layers and functions: the shape "
    'after every stage (32 → 28 → 14 → 10 → 5, 16·5·5 = 400 features), and gradients of '
    'every parameter after a backward pass',
    params={'batch': P('int')},
    report={
        'run': Phase({'params': [[INT]], 'grads_match_params': BOOL, 'n_values': INT}),
        # filled stage by stage as the forward runs: a stage that raised leaves the rest out
        'shapes': {k: Opt([INT]) for k in ('conv1', 'pool1', 'conv2', 'pool2', 'flat', 'out')},
    })


declare(
    'conv.training_follows',
    'A small CNN trained with MomentumSGD on the host, moved to the device mid-training '
    'and trained on, against the same run kept on the host: same losses, parameters on '
    'the device',
    params={'steps_before': P('int'), 'steps_after': P('int')},
    report={
        'host': Phase({'losses': [NUM], 'params': [STR]}),
        'moved': Phase({'losses': [NUM], 'params': [STR]}),
    })


declare(
    'conv.tuple_args',
    'conv2d with a rectangular kernel and (stride, pad) tuples, and max pooling with a '
    "rectangular window: forward and backward with the probe's upstream gradient",
    report={
        'conv2d': Phase({'y': ARRAY, 'gx': ARRAY, 'gW': ARRAY, 'gb': ARRAY}),
        'pooling': Phase({'y': ARRAY, 'gx': ARRAY}),
    })
