"""The scenarios of `grader.sandboxed.probes.scenarios.datasets`: parameters and report shapes."""
from grader.contracts import P, declare
from grader.contracts.shapes import ARRAY, BOOL, INT, NUM, STR, Phase


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


declare(
    'data.mnist',
    'MNIST(train) read from small IDX files placed where get_file caches downloads: '
    'length, each item float32 (784,) in [0, 1] by default, the label, the raw (1, 28, '
    '28) uint8 image without a transform',
    params={'train_size': P('int'), 'test_size': P('int')},
    report={
        'default': Phase({
            'len': INT, 'shape': [INT], 'dtype': STR, 'x': ARRAY, 'x_expected': ARRAY,
            'label': INT, 'label_expected': INT,
        }),
        'test_len': Phase(INT),
        'raw': Phase({'shape': [INT], 'same_pixels': BOOL}),
    })


declare(
    'data.spiral',
    'get_spiral(train): 300 points in the plane, 3 classes of 100, integer labels; the '
    'same data at every call (it seeds its own generator); the test split differs',
    report={
        'x_shape': [INT], 't_shape': [INT], 'x_is_float': BOOL, 't_is_int': BOOL,
        'class_counts': [INT], 'repeatable': BOOL, 'test_differs': BOOL,
    })


declare(
    'data.spiral_dataset',
    'Spiral(train): 300 items (x of shape (2,), an integer label), the test split '
    'differs, and a transform is applied to each item',
    report={
        'len': INT, 'x_shape': [INT], 't_is_int': BOOL, 'test_differs': BOOL,
        'transform_applied': BOOL,
    })


declare(
    'train.spiral',
    "MLP((hidden, 3)) and SGD on the learner's spiral in mini-batches (a permutation "
    'drawn from the seed each epoch): the average loss of the first and the last epoch',
    params={'epochs': P('int'), 'batch': P('int'), 'lr': P('number'), 'hidden': P('int')},
    report={'first': NUM, 'last': NUM, 'ratio': NUM})
