"""The scenarios of `dezero_grader.sandboxed.probes.scenarios.datasets`: parameters and report shapes."""
import numpy as np

from dezero_grader.contracts import P, declare
from dezero_grader.contracts.derived import kind, phase, same, values
from dezero_grader.contracts.shapes import ARRAY, BOOL, INT, NONE, NUM, STR, Or, Phase


def _spiral(r, params):
    t = values(r['t'])
    return dict(r, x_is_float=kind(r['x']) == 'f', t_is_int=t.dtype.kind in 'iu',
                class_counts=counts(t),
                repeatable=same(r['x'], r['x_again']) and same(r['t'], r['t_again']),
                test_differs=not same(r['x'], r['x_test']))


def counts(labels, most=1000):
    """How many labels each class 0, 1, ... has; None for labels that are not whole numbers
    from 0 to `most` (counting them would say nothing, or take the memory of the machine)."""
    if labels.dtype.kind not in 'iuf' or labels.size == 0 or not np.all(np.isfinite(labels)):
        return None
    as_int = labels.astype(np.int64).ravel()
    if as_int.min() < 0 or as_int.max() > most:
        return None
    return np.bincount(as_int).tolist()


def _spiral_dataset(r, params):
    return dict(r, t_is_int=kind(r['t']) in 'iu',
                test_differs=not same(r['train_first'], r['test_first']),
                transform_applied=bool(np.all(values(r['zeroed']) == 0)))


def _raw_pixels(raw):
    x, expected = values(raw['x']), values(raw['expected'])
    return dict(raw, same_pixels=x.size == expected.size and same(x.reshape(expected.shape),
                                                                   expected))


declare(
    'data.accuracy',
    'accuracy(y, t): the share of rows whose largest score is at the label, as a Variable',
    params={'batch': P('int'), 'classes': P('int')},
    report={'value': ARRAY, 'is_variable': BOOL})


declare(
    'data.dataset',
    'A Dataset subclass filled in prepare(): len(), items (x, t) with transform and '
    'target_transform applied, (x, None) without labels, and `for x, t in dataset` ends',
    params={'n': P('int')},
    report={
        'plain': Phase({
            'len': INT, 'x': ARRAY, 'x_expected': ARRAY, 't': INT, 't_expected': INT,
        }),
        'transformed': Phase({'x': ARRAY, 'x_expected': ARRAY, 't': INT, 't_expected': INT}),
        'unlabelled': Phase({'t_is_none': BOOL, 'x': ARRAY, 'x_expected': ARRAY}),
        'iterated': Phase(INT),
    })


MNIST = {
    'default': Phase({
        'len': INT, 'shape': [INT], 'dtype': STR, 'x': ARRAY, 'x_expected': ARRAY,
        'label': INT, 'label_expected': INT,
    }),
    'test_len': Phase(INT),
    # the raw image and the one written to the file: the trusted side compares them
    'raw': Phase({'shape': [INT], 'x': ARRAY, 'expected': ARRAY}),
}
declare(
    'data.mnist',
    'MNIST(train) read from small IDX files placed where get_file caches downloads: '
    'length, each item float32 (784,) in [0, 1] by default, the label, the raw (1, 28, '
    '28) uint8 image without a transform',
    params={'train_size': P('int'), 'test_size': P('int')},
    report=MNIST,
    derive=lambda r, params: phase(dict(r), 'raw', _raw_pixels),
    judged=dict(MNIST, raw=Phase({'shape': [INT], 'x': ARRAY, 'expected': ARRAY,
                                  'same_pixels': BOOL})))


# three calls of get_spiral as they came back: the trusted side counts and compares
SPIRAL = {'x_shape': [INT], 't_shape': [INT], 'x': ARRAY, 't': ARRAY, 'x_again': ARRAY,
          't_again': ARRAY, 'x_test': ARRAY}
declare(
    'data.spiral',
    'get_spiral(train): 300 points in the plane, 3 classes of 100, integer labels; the '
    'same data at every call (it seeds its own generator); the test split differs',
    report=SPIRAL,
    derive=_spiral,
    judged=dict(SPIRAL, x_is_float=BOOL, t_is_int=BOOL, class_counts=Or([INT], NONE),
                repeatable=BOOL, test_differs=BOOL))


SPIRAL_DATASET = {'len': INT, 'x_shape': [INT], 't': ARRAY, 'train_first': ARRAY,
                  'test_first': ARRAY, 'zeroed': ARRAY}
declare(
    'data.spiral_dataset',
    'Spiral(train): 300 items (x of shape (2,), an integer label), the test split '
    'differs, and a transform is applied to each item',
    report=SPIRAL_DATASET,
    derive=_spiral_dataset,
    judged=dict(SPIRAL_DATASET, t_is_int=BOOL, test_differs=BOOL, transform_applied=BOOL))


declare(
    'train.spiral',
    "MLP((hidden, 3)) and SGD on the learner's spiral in mini-batches (a permutation "
    'drawn from the seed each epoch): the average loss of the first and the last epoch',
    params={'epochs': P('int'), 'batch': P('int'), 'lr': P('number'), 'hidden': P('int')},
    report={'first': NUM, 'last': NUM, 'ratio': NUM})
