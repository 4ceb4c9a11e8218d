"""The scenarios of `dezero_grader.sandboxed.probes.scenarios.vgg`: parameters and report shapes."""
from dezero_grader.contracts import P, declare
from dezero_grader.contracts.shapes import ARRAY, INT, STR, Phase

LAYERS = tuple('conv{}_{}'.format(block, i) for block, n in ((1, 2), (2, 2), (3, 3), (4, 3), (5, 3))
               for i in range(1, n + 1)) + ('fc6', 'fc7', 'fc8')


declare(
    'vgg.architecture',
    "Every layer's parameter shapes after one 32×32 forward, the output shape, fc6's "
    'input size there, and the parameter count this implies for 224×224 images',
    report={
        'model': Phase({
            'layers': {name: {'W': [INT], 'b': [INT]} for name in LAYERS}, 'n_arrays': INT,
            'out': [INT], 'fc6_in_at_32': INT, 'fc6_out': INT, 'total_at_224': INT,
        }),
    })


declare(
    'vgg.device',
    "The miniature VGG16 on the device: test-mode outputs equal the host's; loading the "
    'weights file again while the model lives on the device keeps it there',
    params={'batch': P('int')},
    report={
        'host': ARRAY, 'to_gpu': Phase({'y': STR, 'value': ARRAY}),
        'load_on_device': Phase({'params': [STR], 'y': STR, 'value': ARRAY}),
    })


declare(
    'vgg.preprocess',
    'VGG16.preprocess on generated Pillow images: RGB at the default size, RGBA at its '
    'own size, and the shape of a resized one',
    report={
        'rgb_224': Phase(ARRAY), 'rgba_own_size': Phase(ARRAY), 'resized_shape': Phase([INT]),
    })   # or {'__skipped__': why}, where Pillow is not installed


declare(
    'vgg.pretrained_file',
    "A fresh VGG16 loaded from a miniature weights file in the book's format: its outputs"
    ' in test mode (twice), and two forwards in training mode (dropout active)',
    params={'batch': P('int')},
    report={
        'model': Phase({
            'file_names': STR, 'test': {'y': ARRAY, 'shape': [INT]}, 'test_repeat': ARRAY,
            'train': {'first': ARRAY, 'second': ARRAY},
        }),
    })
