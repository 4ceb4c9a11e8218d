"""The scenarios of `dezero_grader.sandboxed.probes.scenarios.modes`: parameters and report shapes, and the two
facts the dropout scenarios and the statistical check share (the inputs, the report keys)."""
import numpy as np

from dezero_grader.contracts import P, declare
from dezero_grader.contracts.derived import phase, values
from dezero_grader.contracts.shapes import ARRAY, BOOL, INT, NONE, NUM, STR, Open, Phase


def ratio_key(ratio):
    """`ratio_50` for 0.5: report keys must not contain dots (expectation paths split there)."""
    return 'ratio_{}'.format(int(round(ratio * 100)))


def dropout_inputs(n):
    """The inputs of the statistical dropout check: n positive values spread over [0.5, 1.5],
    rebuilt from n alone on both sides of the worker boundary (a failure's reproduction stays
    short)."""
    return 0.5 + (np.arange(n) % 101) / 100.0


FLAG = BOOL | NONE   # Config.train, None where the submission has no Config


def zeros(a) -> int:
    """How many elements of a raw array are 0 (dropped, for dropout's output)."""
    return int(np.count_nonzero(values(a) == 0))


def restore_report(drops):
    return {
        'before': FLAG,
        'exit': Phase({'inside': FLAG, 'inside_drops': drops, 'after': FLAG, 'after_drops': drops}),
        'exception': Phase({'after': FLAG, 'after_drops': drops}),
        'nested': Phase({'inner': FLAG, 'middle': FLAG, 'after': FLAG}),
        'using_config_exception': Phase({'after': FLAG}),
    }


def _restore(r, params):
    def dropped(part):
        return {k: zeros(v) > 0 if k.endswith('_drops') else v for k, v in part.items()}
    r = dict(r)
    for key in ('exit', 'exception'):
        phase(r, key, dropped)
    return r

declare(
    'modes.dropout_backward', "Backward of training-mode dropout with the probe's upstream "
    "gradient gy: each input's gradient is gy times the forward's scaling",
    params={'shape': P('list'), 'ratio': P('number')},
    report={'backward': Phase({'grad': ARRAY, 'expected': ARRAY, 'y': ARRAY})},
    derive=lambda r, params: phase(dict(r), 'backward', lambda b: dict(b, dropped=zeros(b['y']))),
    judged={'backward': Phase({'grad': ARRAY, 'expected': ARRAY, 'y': ARRAY, 'dropped': INT})})

DEVICE_TRAIN = {'y': STR, 'grad': STR, 'y_value': ARRAY, 'grad_value': ARRAY,
                'expected_grad': ARRAY}
DEVICE = {'train': Phase(DEVICE_TRAIN), 'test': Phase({'y': STR, 'value': ARRAY}), 'x': ARRAY}
declare(
    'modes.dropout_device', 'Dropout of device data: output and gradient on the device, units '
    'dropped in training, the identity in test mode',
    params={'shape': P('list'), 'ratio': P('number')},
    report=DEVICE,
    derive=lambda r, params: phase(dict(r), 'train', lambda t: dict(
        t, dropped_share=zeros(t['y_value']) / max(values(t['y_value']).size, 1))),
    judged=dict(DEVICE, train=Phase(dict(DEVICE_TRAIN, dropped_share=NUM))))

declare(
    'modes.dropout_model_follows', 'A model with dropout trained with MomentumSGD on the host, '
    'moved to the device mid-training and trained on; in test mode it computes the host model\'s '
    'outputs',
    params={'hidden': P('int'), 'out': P('int'), 'batch': P('int'), 'steps_before': P('int'),
            'steps_after': P('int')},
    report={
        'host_steps': Phase([NUM]),
        'device_steps': Phase({'losses': [NUM], 'params': [STR], 'test_y': STR,
                               'test_repeat': ARRAY, 'test_value': ARRAY,
                               'host_test_value': ARRAY}),
    })

declare(
    'modes.dropout_sample', 'Training-mode dropout of `dropout_inputs(n)` once per ratio: the '
    'outputs, for the statistical check',
    params={'n': P('int'), 'ratios': P('list')},
    # one key per ratio, `ratio_key(r)`
    report=Open({'train_flag': FLAG}, rest=Phase(ARRAY)))

declare(
    'modes.dropout_test', 'Inside test_mode() dropout is the identity (on Variables and on plain '
    'arrays); in training a ratio of 0 keeps everything',
    params={'shape': P('list'), 'ratios': P('list')},
    report={
        'x': ARRAY,
        # `variable_<ratio_key>` and `array_<ratio_key>` per ratio
        'test_mode': Phase(Open({'flag': FLAG}, rest=ARRAY)),
        'ratio_zero': Phase(ARRAY),
    })

declare(
    'modes.restore', 'test_mode() and using_config() put the flag back on exit, on an exception, '
    'and when nested',
    # `*_drops`: dropout's outputs as they came back; the trusted side sees whether it dropped
    report=restore_report(ARRAY),
    derive=_restore,
    judged=restore_report(BOOL))
