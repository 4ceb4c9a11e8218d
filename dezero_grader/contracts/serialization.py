"""The scenarios of `dezero_grader.sandboxed.probes.scenarios.serialization`: parameters and report shapes."""
from dezero_grader.contracts import P, declare
from dezero_grader.contracts.derived import same
from dezero_grader.contracts.shapes import ARRAY, BOOL, DESCRIBED, INT, NONE, STR, Map, Open, Opt, Phase

# every scenario here builds the same small models: an MLP and a nested one
MODEL = {'in_size': P('int'), 'hidden': P('int'), 'out': P('int'), 'batch': P('int')}
# parameters by their path in the model, as the book's files name them
MLP = {'l0/W': ARRAY, 'l0/b': ARRAY, 'l1/W': ARRAY, 'l1/b': ARRAY}
NESTED = {'block/fc/W': ARRAY, 'block/fc/b': ARRAY, 'head/W': ARRAY, 'head/b': ARRAY}
ERROR = Open({'type': STR, 'message': STR})   # an exception's details; more may come
# loading a file that does not fit: whether load or the forward after it raised, and with what
# `before`, `after`: the model's parameters by role, around the load that must not change them
LOADED = {'load_raised': BOOL, 'forward_raised': BOOL, 'load_error': Opt(ERROR),
          'forward_error': Opt(ERROR), 'before': Map(ARRAY), 'after': Map(ARRAY),
          'raised_somewhere': BOOL}


def _unchanged(case):
    before, after = case['before'], case['after']
    return dict(case, unchanged=set(before) == set(after) and all(
        same(after[k], before[k]) for k in before))


declare(
    'serialization.book_file',
    "Files written the book's way (np.savez_compressed with `l0/W`... and `block/fc/W`... "
    "keys) load into the learner's MLP and nested model, which then compute with those "
    'weights',
    params=MODEL,
    report={
        'mlp_expected_y': ARRAY, 'mlp_expected': MLP, 'mlp': Phase({'y': ARRAY, 'params': MLP}),
        'nested_expected_y': ARRAY, 'nested_expected': NESTED,
        'nested': Phase({'y': ARRAY, 'params': NESTED}),
    })


declare(
    'serialization.device',
    'Saving a model that lives on the device, and loading into one',
    params=MODEL,
    report={
        'expected': NESTED, 'y_device': ARRAY, 'save': Phase({'params': [STR]}),
        'file': Phase(NESTED), 'forward_after_save': Phase(DESCRIBED),
        'reload_then_to_gpu': Phase({'y': STR, 'value': ARRAY}),
        'load_into_device_model': Phase({'params': [STR], 'y': STR, 'value': ARRAY}),
    })


declare(
    'serialization.independent',
    "Two models loaded from one file own their arrays: updating one model's parameters in"
    ' place (as an optimizer does) leaves the other, and the file, unchanged; no two '
    'parameters of one model share memory',
    params=MODEL,
    report={
        'file': NESTED,
        'models': Phase({'other_model': NESTED, 'reloaded': NESTED, 'shared_within': INT}),
    })


declare(
    'serialization.mismatch',
    'Files that do not fit the model: one key missing, one array of the wrong shape',
    params=MODEL,
    report={'missing': LOADED, 'wrong_shape': LOADED},
    derive=lambda r, params: {k: _unchanged(v) for k, v in r.items()},
    judged={'missing': dict(LOADED, unchanged=BOOL), 'wrong_shape': dict(LOADED, unchanged=BOOL)})


declare(
    'serialization.partial_file',
    'A save that fails midway (one parameter holds an object array that cannot be '
    'written) must raise and leave no file at the path',
    params=MODEL,
    report={'save_error': STR | NONE, 'file_left': BOOL})


declare(
    'serialization.round_trip',
    'Save, then load into a fresh model (initialised with its own random values, or not '
    'run yet at all): the outputs must be those of the saved model',
    params=MODEL,
    report={
        'y_saved': ARRAY, 'save': Phase(NONE), 'initialised': Phase(ARRAY), 'lazy': Phase(ARRAY),
    })


declare(
    'serialization.written_file',
    'Save a nested model and read the file back with np.load: its keys and arrays',
    params=MODEL,
    report={
        'expected_keys': [STR], 'expected': NESTED, 'save': Phase({'exists': BOOL}),
        'file': Phase({'keys': [STR], 'by_role': NESTED}),
    })
