"""The scenarios of `dezero_grader.sandboxed.probes.scenarios.sequence`: parameters and report shapes."""
from dezero_grader.contracts import P, declare
from dezero_grader.contracts.shapes import ARRAY, INT, NONE, STR, Opt, Or, Phase

# the recurrent layer every scenario here builds: `kind` is rnn or lstm
LAYER = {'kind': P('str', doc='rnn or lstm'), 'hidden': P('int'), 'in_size': P('int'),
         'batch': P('int')}

# Every parameter of the layer (or model) the scenario seeded, in `params()` order: its place
# (`fixtures.parameter_places`) and value. The judges assign them to the book's roles by shape.
PARAMS = Phase([{'place': STR, 'value': ARRAY}])
# a state variable after unchain_backward: None when unset, else its creator's type name or None
HELD = Or(NONE, {'creator': STR | NONE})


declare(
    'sequence.bptt',
    "The book's truncated-BPTT loop over the book's model (the recurrent layer, then a Linear; "
    'loss accumulated over the epoch; at the end of each window: cleargrads, backward, '
    'unchain_backward)',
    params=dict(LAYER, out=P('int'), window=P('int'), windows=P('int')),
    report={
        'params': PARAMS,
        # per window; where the loop raised at once, both are what it raised
        'structure': Phase([{'size': INT, 'loss_creator': STR | NONE, 'h': HELD, 'c': HELD}]),
        'numbers': Phase([{'loss': ARRAY, 'y': [ARRAY], 'grads': [ARRAY | NONE]}]),
        'graph': Phase({'sizes': [INT], 'growth': INT}),
    })


declare(
    'sequence.device',
    'The layer moved to the device before the sequence starts: outputs, state and '
    "gradients on the device, with the host's values",
    params=dict(LAYER, steps=P('int')),
    report={
        'host': Phase(ARRAY),
        'device': Phase({'y': [STR], 'values': ARRAY, 'h': STR, 'grads': [STR]}),
    })


declare(
    'sequence.forward',
    'The parameters, then the outputs and the state (h, and c for an LSTM) after every step '
    'of a sequence; then reset_state(), the state, and the first step again',
    params=dict(LAYER, steps=P('int')),
    report={
        'params': PARAMS,
        'sequence': Phase({'y': [ARRAY], 'h': [ARRAY | NONE], 'c': [ARRAY | NONE]}),
        'reset': Phase({'h': ARRAY | NONE, 'first_again': ARRAY, 'c': Opt(ARRAY | NONE)}),
    })


declare(
    'sequence.params',
    "How many values the layer's parameters hold after two steps (and their shapes, "
    "sorted), and the number of values of the book's script model (the recurrent layer + "
    'Linear(1)) for one input feature',
    params=dict(LAYER, model_hidden=P('int')),
    report={
        'layer': Phase({'shapes': [[INT]], 'count': INT, 'values': INT}),
        'script_model_values': Phase(INT),
    })


declare(
    'sequence.seqloader_device',
    "SeqDataLoader batches on the device (gpu=True, and after to_gpu), with the host's "
    'values (fed a plain data set: len and [i])',
    params={'n': P('int'), 'batch': P('int')},
    report={
        'host': Phase({'x': STR, 't': STR, 'x_values': ARRAY, 't_values': ARRAY}),
        'gpu_flag': Phase({'x': STR, 't': STR, 'x_values': ARRAY, 't_values': ARRAY}),
        'to_gpu': Phase({'x': STR, 't': STR, 'x_values': ARRAY, 't_values': ARRAY}),
    })


declare(
    'sequence.through_time',
    'One window of `steps` steps, loss = Σ_t sum(w_t · h_t) with seeded w_t, one '
    "backward: the parameters, the outputs, the loss, the gradient of every parameter and of "
    "every step's input",
    params=dict(LAYER, steps=P('int')),
    report={
        'params': PARAMS,
        'window': Phase({'y': [ARRAY], 'loss': ARRAY, 'grads': [ARRAY | NONE],
                         'inputs': [ARRAY | NONE]}),
    })


declare(
    'sequence.to_gpu_mid',
    '`steps_before` steps on the host, `to_gpu()`, `steps_after` more on the device, '
    'against the same sequence kept on the host: the state moves with the layer',
    params=dict(LAYER, steps_before=P('int'), steps_after=P('int')),
    report={
        'host': Phase(ARRAY),
        'moved': Phase({'h': STR, 'y': [STR], 'values': ARRAY, 'c': Opt(STR)}),
        'host_after_move': Opt(ARRAY),   # absent when the host run raised (its phase says why)
    })
