"""VGG16 (step 58) through the public API, in seconds rather than minutes.

* The architecture: one forward of a 32×32 image through `models.VGG16()` initialises every
  layer (the book's VGG16 sizes them all lazily); the layers' shapes are then read, and fc6's
  input size for 224×224 images follows from the one measured here (512·1·1 after five 2×2
  poolings, so 512·7·7 = 25088 at 224×224). NumPy's random generators are replaced by zeros
  while the layers initialise: the values do not matter for counting, and drawing 37 million
  normal numbers would take longer than everything else together.
* The forward pass: a miniature weights file in the book's format — the 32 keys `conv1_1/W` …
  `fc8/b`, with a few channels per layer — is written here with `np.savez_compressed` and
  loaded with `load_weights` into a fresh `VGG16()` whose parameters were first emptied (data
  None, as the book's lazy layers are before their first call; the book's pretrained loading
  fills such parameters too), so that the file decides every shape. The input (2, 3, 32, 64)
  leaves a 1×2 feature map before fc6, so the flatten order shows.
* `VGG16.preprocess` on Pillow images generated here at the target size (no resampling involved).
"""
import os

import numpy as np

from dezero_grader.sandboxed.probes.registry import scenario
from dezero_grader.sandboxed.probes.scenarios.fixtures import (BookNameMismatch, ScratchDir, by_role,
                                                               check_book_names, devices, phase)

CONVS = ('conv1_1', 'conv1_2', 'conv2_1', 'conv2_2', 'conv3_1', 'conv3_2', 'conv3_3',
         'conv4_1', 'conv4_2', 'conv4_3', 'conv5_1', 'conv5_2', 'conv5_3')
FCS = ('fc6', 'fc7', 'fc8')
# A miniature VGG16: channels per block, and the widths of fc6, fc7 and fc8.
MINI_CHANNELS = (2, 3, 3, 4, 4)
MINI_FC = (16, 16, 5)
MINI_INPUT = (3, 32, 64)


def _mini_shapes():
    shapes, c_in = {}, 3
    for name in CONVS:
        c_out = MINI_CHANNELS[int(name[4]) - 1]
        shapes[name] = ((c_out, c_in, 3, 3), (c_out,))
        c_in = c_out
    features = c_in * (MINI_INPUT[1] // 32) * (MINI_INPUT[2] // 32)
    for name, width in zip(FCS, MINI_FC):
        shapes[name] = ((features, width), (width,))
        features = width
    return shapes


def mini_weights(ctx):
    """The 32 arrays of the miniature file, drawn from the probe's seed (He-scaled, so the
    activations neither vanish nor explode through 16 layers)."""
    rng = ctx.rng(58)
    arrays = {}
    for name, (w_shape, b_shape) in _mini_shapes().items():
        fan_in = int(np.prod(w_shape[1:])) if len(w_shape) == 4 else w_shape[0]
        arrays[name + '/W'] = rng.standard_normal(w_shape) * np.sqrt(2.0 / fan_in)
        arrays[name + '/b'] = 0.1 * rng.standard_normal(b_shape)
    return arrays


def _loaded_model(ctx, folder):
    """A fresh VGG16 that reads the miniature file with `load_weights`, and what its file names
    are: the book's (`conv1_1/W`, ...), or the exact difference (a layer whose weight is called
    otherwise gets the file's arrays set by role instead, so that the checks that are not about
    the file still run)."""
    VGG16 = ctx.api.get('models.VGG16')
    path = os.path.join(folder, 'vgg16_mini.npz')
    arrays = mini_weights(ctx)
    np.savez_compressed(path, **arrays)
    model = VGG16()
    problem, held = None, {}
    for name in CONVS + FCS:
        layer = getattr(model, name)
        if problem is None:
            try:
                check_book_names(ctx, layer, name)
            except BookNameMismatch as e:
                problem = str(e)
        held[name] = by_role(ctx, layer, 'W'), by_role(ctx, layer, 'b')
        for p in held[name]:
            p.data = None
    if problem is None:
        model.load_weights(path)
    else:
        for name, (weight, bias) in held.items():
            weight.data, bias.data = arrays[name + '/W'], arrays[name + '/b']
    return model, path, problem or BOOK_NAMES


BOOK_NAMES = "the book's names (conv1_1/W, conv1_1/b, ..., fc8/b)"


def _input(ctx, batch):
    return ctx.rng(59).standard_normal((batch,) + MINI_INPUT)


@scenario('vgg.pretrained_file')
def pretrained_file(ctx, batch):
    """A fresh VGG16 loaded from a miniature weights file in the book's format: its outputs in
    test mode (twice), and two forwards in training mode (dropout active)."""
    test_mode = ctx.api.get('test_mode')
    x = ctx.to_device(_input(ctx, batch))
    res = {}
    with ScratchDir() as folder:
        def run():
            model, _, names = _loaded_model(ctx, folder)
            with test_mode():
                y = model(x)
                again = model(x)
            np.random.seed(ctx.seed % (2 ** 32))
            first, second = model(x), model(x)
            return {'file_names': names,
                    'test': {'y': ctx.export(y), 'shape': list(ctx.host(y).shape)},
                    'test_repeat': ctx.export(again),
                    'train': {'first': ctx.export(first), 'second': ctx.export(second)}}
        phase(res, 'model', run)
    return res


class _ZeroRandom:
    """Replace NumPy's global random generators by zeros while a model initialises (the shapes
    are what is measured; drawing the values would dominate the scenario's time)."""

    @staticmethod
    def _by_dims(*dims):
        return np.zeros(dims)

    @staticmethod
    def _by_size(size=None, **kwargs):
        return np.zeros(() if size is None else size)

    @staticmethod
    def _by_params(a=0.0, b=1.0, size=None):
        return np.zeros(() if size is None else size)

    STUBS = {'randn': '_by_dims', 'rand': '_by_dims', 'standard_normal': '_by_size',
             'random': '_by_size', 'random_sample': '_by_size', 'normal': '_by_params',
             'uniform': '_by_params'}

    def __enter__(self):
        self.saved = {name: getattr(np.random, name) for name in self.STUBS}
        for name, stub in self.STUBS.items():
            setattr(np.random, name, getattr(self, stub))
        return self

    def __exit__(self, *exc):
        for name, fn in self.saved.items():
            setattr(np.random, name, fn)
        return False


@scenario('vgg.architecture')
def architecture(ctx):
    """Every layer's parameter shapes after one 32×32 forward, the output shape, fc6's input
    size there, and the parameter count this implies for 224×224 images."""
    VGG16 = ctx.api.get('models.VGG16')
    test_mode = ctx.api.get('test_mode')
    res = {}

    def run():
        with _ZeroRandom():
            model = VGG16()
            with test_mode():
                y = model(ctx.to_device(np.zeros((1, 3, 32, 32), dtype=np.float32)))
        layers = {}
        for name in CONVS + FCS:
            layer = getattr(model, name)
            layers[name] = {'W': list(ctx.host(by_role(ctx, layer, 'W')).shape),
                            'b': list(ctx.host(by_role(ctx, layer, 'b')).shape)}
        params = list(model.params())
        fc6_weight = by_role(ctx, model.fc6, 'W')
        fc6_W = ctx.host(fc6_weight)
        fc6_in = int(fc6_W.shape[0])
        others = sum(int(ctx.host(p).size) for p in params if p is not fc6_weight)
        area = (224 // 32) ** 2   # the 224×224 feature map is 7×7 where the 32×32 one is 1×1
        return {'layers': layers, 'n_arrays': len(params), 'out': list(ctx.host(y).shape),
                'fc6_in_at_32': fc6_in, 'fc6_out': int(fc6_W.shape[1]),
                'total_at_224': others + fc6_in * area * int(fc6_W.shape[1])}
    phase(res, 'model', run)
    return res


@scenario('vgg.preprocess')
def preprocess(ctx):
    """VGG16.preprocess on generated Pillow images: RGB at the default size, RGBA at its own
    size, and the shape of a resized one."""
    try:
        from PIL import Image
    except ImportError:
        return {'__skipped__': 'Pillow is not installed, so VGG16.preprocess cannot be tried'}
    VGG16 = ctx.api.get('models.VGG16')
    rng = ctx.rng(60)
    res = {}
    rgb = Image.fromarray(rng.integers(0, 256, size=(224, 224, 3), dtype=np.uint8), 'RGB')
    rgba = Image.fromarray(rng.integers(0, 256, size=(30, 40, 4), dtype=np.uint8), 'RGBA')
    big = Image.fromarray(rng.integers(0, 256, size=(40, 50, 3), dtype=np.uint8), 'RGB')
    phase(res, 'rgb_224', lambda: ctx.export(np.asarray(VGG16.preprocess(rgb))))
    phase(res, 'rgba_own_size', lambda: ctx.export(np.asarray(VGG16.preprocess(rgba,
                                                                               size=(40, 30)))))
    phase(res, 'resized_shape', lambda: list(np.shape(VGG16.preprocess(big, size=(32, 24)))))
    return res


@scenario('vgg.device')
def device(ctx, batch):
    """The miniature VGG16 on the device: test-mode outputs equal the host's; loading the
    weights file again while the model lives on the device keeps it there."""
    test_mode = ctx.api.get('test_mode')
    x = _input(ctx, batch)
    xd = ctx.on_device(x, 'gpu')
    res = {}
    with ScratchDir() as folder:
        model, path, _ = _loaded_model(ctx, folder)
        with test_mode():
            res['host'] = ctx.host(model(x))

        def moved():
            model.to_gpu()
            with test_mode():
                y = model(xd)
            return {'y': ctx.device_of(y), 'value': ctx.host(y)}
        phase(res, 'to_gpu', moved)

        def reload():
            model.load_weights(path)
            found = {'params': devices(ctx, model)}
            with test_mode():
                y = model(xd)
            found.update(y=ctx.device_of(y), value=ctx.host(y))
            return found
        phase(res, 'load_on_device', reload)
    return res
