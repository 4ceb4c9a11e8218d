"""The scenarios of `dezero_grader.sandboxed.probes.scenarios.device`: parameters and report shapes."""
from dezero_grader.contracts import P, declare
from dezero_grader.contracts.shapes import ARRAY, DESCRIBED, INT, NUM, STR, Phase


declare(
    'device.array_module',
    'cuda.get_array_module / as_numpy / as_cupy on Variables, arrays and scalars',
    report={
        'gam_variable_gpu': Phase(STR), 'gam_array_gpu': Phase(STR),
        'gam_variable_cpu': Phase(STR), 'gam_scalar': Phase(STR),
        'as_numpy_variable_gpu': Phase(DESCRIBED), 'as_numpy_scalar': Phase(DESCRIBED),
        'as_cupy_array': Phase(DESCRIBED), 'as_cupy_variable': Phase(DESCRIBED),
        'variable_of_device_array': Phase(DESCRIBED), 'as_array_device': Phase(DESCRIBED),
    })


declare(
    'device.layer',
    'A model with nested layers: to_gpu moves every parameter; forward, backward and an '
    'SGD update then run on the device; to_cpu brings everything back',
    params={'in_size': P('int'), 'hidden': P('int'), 'out': P('int'), 'batch': P('int')},
    report={
        'n_params': INT, 'to_gpu': Phase([STR]),
        'train_step': Phase({'y': STR, 'loss': STR, 'grads': [STR], 'params': [STR]}),
        'to_cpu': Phase({'params': [STR], 'y': STR}),
    })


declare(
    'device.loader',
    'DataLoader batches follow to_gpu / to_cpu / gpu=True (fed a plain data set: len and '
    '[i])',
    params={'n': P('int'), 'batch': P('int')},
    report={
        'moves': Phase({'default': [STR], 'after_to_gpu': [STR], 'after_to_cpu': [STR]}),
        'gpu_flag': Phase([STR]),
    })


declare(
    'device.optimizer_follows',
    'Train on the host (optimizer state is created there), move the model to the device '
    'mid-training and keep training: the update must work and everything stay on the '
    'device',
    params={'optimizer': P('str'), 'lr': P('number'), 'steps_before': P('int'),
            'steps_after': P('int')},
    report={
        'host_steps': Phase([NUM]), 'device_steps': Phase({'losses': [NUM], 'params': [STR]}),
    })


declare(
    'device.training',
    'The same seeded training run on the host and on the device: the loss trajectories',
    params={'steps': P('int'), 'optimizer': P('str'), 'lr': P('number')},
    report={'host': Phase([NUM]), 'device': Phase([NUM])})


declare(
    'device.variable',
    'Variable.to_gpu / backward seed / to_cpu',
    params={'shape': P('list')},
    report={
        'to_gpu': Phase({'data': STR}),
        'backward': Phase({'seed': STR, 'grad': STR, 'grad_value': ARRAY}),
        'to_cpu': Phase({'data': STR, 'value': ARRAY}), 'expected_value': ARRAY,
        'expected_grad': ARRAY,
    })
