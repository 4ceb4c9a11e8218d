"""The scenarios of `dezero_grader.sandboxed.probes.scenarios.conv`: parameters and report shapes."""
import math

import numpy as np

from dezero_grader.contracts import P, declare
from dezero_grader.contracts.derived import phase, values
from dezero_grader.contracts.shapes import ARRAY, BOOL, INT, NONE, NUM, STR, Opt, Or, Phase


def _init_stats(W):
    """The statistics of initial weights: standard deviation against sqrt(1 / fan-in), and the
    mean in standard errors."""
    w = values(W['values']).astype(np.float64)
    std = float(w.std()) if w.size else 0.0
    expected = math.sqrt(1.0 / W['fan_in']) if W['fan_in'] > 0 else float('nan')
    mean = abs(float(w.mean())) if w.size else float('nan')
    return dict(W, std=std, expected_std=expected, ratio=std / expected,
                mean_in_se=mean / max(std / math.sqrt(max(w.size, 1)), 1e-300))


def _lenet_run(run):
    pairs = run['shape_pairs']
    return dict(run, grads_match_params=all(g is not None and g == p for p, g in pairs),
                n_values=int(sum(math.prod(p) for p, _ in pairs)))


declare(
    'conv.im2col',
    'im2col of seeded images, and col2im of seeded column arrays, for each case {shape, '
    'kernel, stride, pad, to_matrix, arange?}',
    params={'cases': P('list')},
    report=[{'im2col': Phase(ARRAY), 'col2im': Phase(ARRAY)}])


# the initial W as it is: the trusted side computes its statistics
INIT = {'shape': [INT], 'fan_in': INT, 'values': ARRAY}
declare(
    'conv.init_scale',
    "The learner's initial weights of Conv2d layers with different fan-ins: their "
    'standard deviation against sqrt(1 / (C·KH·KW)), and their mean in standard errors',
    params={'cases': P('list')},
    report=[{'W': Phase(INIT)}],
    derive=lambda cases, params: [phase(dict(case), 'W', _init_stats) for case in cases],
    judged=[{'W': Phase(dict(INIT, std=NUM, expected_std=NUM, ratio=NUM, mean_in_se=NUM))}])


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


# each parameter's shape beside its gradient's (None: none), in params() order
LENET_RUN = {'params': [[INT]], 'shape_pairs': [([INT], Or([INT], NONE))]}
LENET = {
    'run': Phase(LENET_RUN),
    # filled stage by stage as the forward runs: a stage that raised leaves the rest out
    'shapes': {k: Opt([INT]) for k in ('conv1', 'pool1', 'conv2', 'pool2', 'flat', 'out')},
}
declare(
    'conv.lenet',
    "A LeNet-shaped network built from the learner's layers and functions: the shape "
    'after every stage (32 → 28 → 14 → 10 → 5, 16·5·5 = 400 features), and gradients of '
    'every parameter after a backward pass',
    params={'batch': P('int')},
    report=LENET,
    derive=lambda r, params: phase(dict(r), 'run', _lenet_run),
    judged=dict(LENET, run=Phase(dict(LENET_RUN, grads_match_params=BOOL, n_values=INT))))


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
