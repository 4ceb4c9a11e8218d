"""Tests of the reference models: MLP and Sequential, the recurrent models of steps 59-60 with
truncated BPTT, VGG16 (architecture, flatten order, preprocessing, pretrained loading) and ResNet.

The architecture tests run the networks with shape-only stand-ins for the convolution and
pooling functions (seeded random outputs of the right shape), so they check how the model wires
its layers in well under a second; the tests marked `real convolutions` run the reference's
own functions on small inputs.
"""
import os
import subprocess
import sys

import numpy as np
import pytest

import dezero
import dezero.functions as F
import dezero.layers as L
from dezero import Variable, models, utils
from dezero.models import (MLP, VGG16, BetterRNN, BottleneckA, BottleneckB, BuildingBlock,
                           ResNet, ResNet50, ResNet101, ResNet152, Sequential, SimpleRNN)


def count(model):
    return sum(p.data.size for p in model.params())


# =============================================================================
# MLP / Sequential / Model.plot
# =============================================================================
class TestMLP:
    def test_layers_and_parameters(self):
        model = MLP((10, 3))
        model(np.random.randn(5, 4))
        assert model._params == ['l0', 'l1']
        assert [p.shape for p in model.params()] == [(4, 10), (10,), (10, 3), (3,)]

    def test_activation_between_layers_not_after_the_last(self):
        model = MLP((4, 3, 2), activation=F.relu)
        x = np.random.RandomState(0).randn(5, 3)
        model(x)   # the layers take their input sizes
        # every output of the last layer is then negative, whatever the weights were drawn as (the
        # global generator's state depends on which tests ran before in this process)
        model.layers[-1].b.data[...] = -100.0
        y = model(x)
        h = x
        for i, layer in enumerate(model.layers):
            h = h.dot(layer.W.data) + layer.b.data
            if i < 2:
                h = np.maximum(h, 0)
        assert np.allclose(y.data, h, atol=1e-5)
        assert (y.data < 0).all()  # no ReLU at the end

    def test_default_activation_is_sigmoid(self):
        assert MLP((3,)).activation is F.sigmoid


def test_sequential_applies_layers_in_order():
    seq = Sequential(L.Linear(4, in_size=3), L.Linear(2, in_size=4))
    assert seq._params == ['l0', 'l1']
    x = np.random.randn(2, 3)
    assert np.allclose(seq(x).data, seq.l1(seq.l0(x)).data)


def test_plot_renders_the_forward_output(monkeypatch):
    captured = {}

    def plot_dot_graph(y, verbose=True, to_file='graph.png'):
        captured.update(y=y, verbose=verbose, to_file=to_file)
        return 'image'

    monkeypatch.setattr(utils, 'plot_dot_graph', plot_dot_graph)
    model = MLP((3, 2))
    x = np.random.randn(1, 4)
    assert model.plot(x, to_file='m.png') == 'image'
    assert captured['verbose'] is True and captured['to_file'] == 'm.png'
    assert np.allclose(captured['y'].data, model(x).data)


# =============================================================================
# SimpleRNN / BetterRNN and truncated BPTT
# =============================================================================
class TestRecurrentModels:
    def test_simple_rnn_parameters_after_two_steps(self):
        model = SimpleRNN(100, 1)
        x = np.random.randn(1, 1)
        model(x)
        model(x)
        assert count(model) == 10301
        assert [p.shape for p in model.params()] == [(1, 100), (100,), (100, 100),
                                                    (100, 1), (1,)]

    def test_better_rnn_parameters_after_two_steps(self):
        model = BetterRNN(100, 1)
        x = np.random.randn(1, 1)
        model(x)
        model(x)
        assert count(model) == 40901

    @pytest.mark.parametrize('model_class', [SimpleRNN, BetterRNN])
    def test_reset_state(self, model_class):
        model = model_class(3, 1)
        x = np.random.randn(2, 1)
        y1 = model(x)
        assert not np.allclose(model(x).data, y1.data)  # the state changes the output
        model.reset_state()
        assert model.rnn.h is None
        assert getattr(model.rnn, 'c', None) is None
        assert np.allclose(model(x).data, y1.data)

    @pytest.mark.parametrize('model_class', [SimpleRNN, BetterRNN])
    def test_gradients_flow_back_through_time(self, model_class):
        model = model_class(3, 1)
        x1 = Variable(np.random.randn(2, 1))
        model(x1)
        y2 = model(np.random.randn(2, 1))
        F.sum(y2).backward()
        assert x1.grad is not None and np.abs(x1.grad.data).sum() > 0

    @pytest.mark.parametrize('model_class', [SimpleRNN, BetterRNN])
    def test_truncated_bptt(self, model_class):
        model = model_class(3, 1)
        x1 = Variable(np.random.randn(2, 1))
        loss = F.mean_squared_error(model(x1), np.zeros((2, 1)))
        loss += F.mean_squared_error(model(np.random.randn(2, 1)), np.zeros((2, 1)))
        model.cleargrads()
        loss.backward()
        loss.unchain_backward()
        assert model.rnn.h.creator is None
        assert getattr(model.rnn, 'c', None) is None or model.rnn.c.creator is None
        assert loss.creator is not None

        # the next window's backward stops at the cut: nothing reaches the first window
        x1.cleargrad()
        x3 = Variable(np.random.randn(2, 1))
        loss += F.mean_squared_error(model(x3), np.zeros((2, 1)))
        model.cleargrads()
        loss.backward()
        assert x1.grad is None
        assert x3.grad is not None


# =============================================================================
# Shape-only stand-ins for convolution and pooling
# =============================================================================
@pytest.fixture
def fake_conv(monkeypatch):
    """conv2d / pooling / average_pooling that return seeded random arrays of the right shape
    and record what they returned, so the wiring of a network can be checked cheaply."""
    rng = np.random.RandomState(0)
    record = {'pooling': []}

    def outsize(x, kernel_size, stride, pad):
        KH, KW = utils.pair(kernel_size)
        SH, SW = utils.pair(stride)
        PH, PW = utils.pair(pad)
        return (utils.get_conv_outsize(x.shape[2], KH, SH, PH),
                utils.get_conv_outsize(x.shape[3], KW, SW, PW))

    def conv2d(x, W, b=None, stride=1, pad=0):
        assert x.shape[1] == W.shape[1], 'channels of the input and of W differ'
        OH, OW = outsize(x, W.shape[2:], stride, pad)
        return Variable(rng.randn(x.shape[0], W.shape[0], OH, OW).astype(np.float32))

    def pooling(x, kernel_size, stride=1, pad=0):
        OH, OW = outsize(x, kernel_size, stride, pad)
        y = Variable(rng.randn(x.shape[0], x.shape[1], OH, OW).astype(np.float32))
        record['pooling'].append((kernel_size, stride, y))
        return y

    def average_pooling(x, kernel_size, stride=1, pad=0):
        OH, OW = outsize(x, kernel_size, stride, pad)
        return Variable(rng.randn(x.shape[0], x.shape[1], OH, OW).astype(np.float32))

    monkeypatch.setattr(F, 'conv2d', conv2d)
    monkeypatch.setattr(F, 'pooling', pooling)
    monkeypatch.setattr(F, 'average_pooling', average_pooling)
    return record


def real_convolutions():
    """Skip when the convolution functions are not written yet."""
    try:
        F.conv2d(np.zeros((1, 1, 3, 3)), np.zeros((1, 1, 3, 3)))
        F.pooling(np.zeros((1, 1, 2, 2)), 2, 2)
        F.average_pooling(np.zeros((1, 1, 2, 2)), 2, 2)
    except NotImplementedError:
        pytest.skip('functions_conv is not implemented yet')


# =============================================================================
# VGG16
# =============================================================================
CONV_NAMES = ['conv1_1', 'conv1_2', 'conv2_1', 'conv2_2', 'conv3_1', 'conv3_2', 'conv3_3',
              'conv4_1', 'conv4_2', 'conv4_3', 'conv5_1', 'conv5_2', 'conv5_3']
CONV_CHANNELS = [64, 64, 128, 128, 256, 256, 256, 512, 512, 512, 512, 512, 512]


class TestVGG16:
    def test_layer_names_and_convolution_settings(self):
        model = VGG16()
        assert model._params == CONV_NAMES + ['fc6', 'fc7', 'fc8']
        for name, channels in zip(CONV_NAMES, CONV_CHANNELS):
            conv = getattr(model, name)
            assert (conv.out_channels, conv.kernel_size, conv.stride, conv.pad) == \
                (channels, 3, 1, 1), name
        assert [model.fc6.out_size, model.fc7.out_size, model.fc8.out_size] == [4096, 4096, 1000]

    def test_parameter_count_for_224_input(self, fake_conv):
        np.random.seed(0)
        model = VGG16()
        with dezero.test_mode():
            y = model(np.zeros((1, 3, 32, 32), dtype=np.float32))
        assert y.shape == (1, 1000)
        assert [(k, s) for k, s, _ in fake_conv['pooling']] == [(2, 2)] * 5

        conv_params = sum(count(getattr(model, name)) for name in CONV_NAMES)
        assert conv_params == 14714688
        # fc6 was sized by the 32x32 input (512 * 1 * 1); at 224x224 it reads 512 * 7 * 7
        assert model.fc6.W.shape == (512, 4096)
        fc6_at_224 = 512 * (224 // 2 ** 5) ** 2 * 4096 + 4096
        total = conv_params + fc6_at_224 + count(model.fc7) + count(model.fc8)
        assert total == 138357544
        assert len(list(model.params())) == 32

    def test_flatten_keeps_the_sample_axis_first(self, fake_conv):
        model = VGG16()
        seen = {}
        fc6_forward = model.fc6.forward

        def fc6_spy(x):
            seen['x'] = x
            return fc6_forward(x)

        model.fc6.forward = fc6_spy
        with dezero.test_mode():
            model(np.zeros((2, 3, 64, 64), dtype=np.float32))
        last_pool = fake_conv['pooling'][-1][2].data
        assert last_pool.shape == (2, 512, 2, 2)
        assert np.array_equal(seen['x'].data, last_pool.reshape(2, -1))

    def test_dropout_only_in_training(self, fake_conv):
        np.random.seed(0)
        model = VGG16()
        x = np.zeros((1, 3, 32, 32), dtype=np.float32)
        fc7_inputs = []
        fc7_forward = model.fc7.forward

        def fc7_spy(h):
            fc7_inputs.append(h.data)
            return fc7_forward(h)

        model.fc7.forward = fc7_spy
        with dezero.test_mode():
            model(x)
        model(x)
        assert (fc7_inputs[0] > 0).mean() > 0.3  # ReLU output, nothing dropped
        assert (fc7_inputs[1] == 0).mean() > 0.6  # ReLU zeros plus about half dropped

    def test_weights_path(self):
        assert VGG16.WEIGHTS_PATH == \
            'https://github.com/koki0702/dezero-models/releases/download/v0.1/vgg16.npz'

    def test_pretrained_loads_the_cached_file(self, monkeypatch):
        calls = []
        monkeypatch.setattr(utils, 'get_file', lambda url: calls.append(url) or '/c/vgg16.npz')
        monkeypatch.setattr(VGG16, 'load_weights', lambda self, path: calls.append(path))
        VGG16(pretrained=True)
        assert calls == [VGG16.WEIGHTS_PATH, '/c/vgg16.npz']

    def test_preprocess(self):
        class FakeImage:
            """The part of a PIL image that preprocess uses."""

            def __init__(self, array):
                self.array = array
                self.calls = []

            def convert(self, mode):
                self.calls.append(('convert', mode))
                return self

            def resize(self, size):
                self.calls.append(('resize', size))
                w, h = size
                return FakeImage(self.array[:h, :w])

            def __array__(self, dtype=None, copy=None):
                return self.array.astype(dtype) if dtype else self.array

        rgb = np.random.RandomState(0).randint(0, 256, size=(9, 7, 3)).astype(np.uint8)
        image = FakeImage(rgb)
        x = VGG16.preprocess(image, size=(5, 4))
        assert image.calls == [('convert', 'RGB'), ('resize', (5, 4))]
        assert x.shape == (3, 4, 5) and x.dtype == np.float32
        crop = rgb[:4, :5].astype(np.float32)
        assert np.allclose(x[0], crop[:, :, 2] - 103.939)  # B
        assert np.allclose(x[1], crop[:, :, 1] - 116.779)  # G
        assert np.allclose(x[2], crop[:, :, 0] - 123.68)   # R

    def test_preprocess_with_pillow(self):
        Image = pytest.importorskip('PIL.Image')
        image = Image.new('RGB', (300, 200), (10, 20, 30))
        x = VGG16.preprocess(image)
        assert x.shape == (3, 224, 224)
        assert np.allclose(x[:, 0, 0], [30 - 103.939, 20 - 116.779, 10 - 123.68], atol=1e-4)

    def test_forward_with_real_convolutions(self):
        real_convolutions()
        np.random.seed(0)
        model = VGG16()
        x = np.random.randn(1, 3, 32, 32).astype(np.float32)
        with dezero.test_mode():
            y1 = model(x)
            y2 = model(x)
        assert y1.shape == (1, 1000)
        assert np.array_equal(y1.data, y2.data)


# =============================================================================
# ResNet
# =============================================================================
class TestResNet:
    def test_depths(self):
        for model_class, blocks in [(ResNet50, [3, 4, 6, 3]), (ResNet101, [3, 4, 23, 3]),
                                    (ResNet152, [3, 8, 36, 3])]:
            model = model_class()
            stages = [model.res2, model.res3, model.res4, model.res5]
            assert [len(stage._params) for stage in stages] == blocks
            assert all(isinstance(stage.a, BottleneckA) for stage in stages)
            assert isinstance(model.res4.b1, BottleneckB)

    def test_unknown_depth(self):
        with pytest.raises(ValueError, match='18'):
            ResNet(18)

    def test_resnet50_parameter_count(self, fake_conv):
        np.random.seed(0)
        model = ResNet50()
        with dezero.test_mode():
            y = model(np.zeros((2, 3, 64, 64), dtype=np.float32))
        assert y.shape == (2, 1000)
        statistics = {id(bn.avg_mean) for bn in _batch_norms(model)} | \
            {id(bn.avg_var) for bn in _batch_norms(model)}
        trainable = sum(p.data.size for p in model.params() if id(p) not in statistics)
        # the usual ResNet-50 count (25,557,032) plus the bias of the stem convolution,
        # which the book's ResNet keeps (as Chainer's does)
        assert trainable == 25557032 + 64
        assert model.conv1.b.shape == (64,)
        assert len(_batch_norms(model)) == 53

    def test_stride_goes_on_the_first_1x1_convolution(self):
        a = BottleneckA(64, 32, 128, stride=2)
        assert (a.conv1.stride, a.conv2.stride, a.conv4.stride) == (2, 1, 2)
        fb = BottleneckA(64, 32, 128, stride=2, downsample_fb=True)
        assert (fb.conv1.stride, fb.conv2.stride) == (1, 2)

    def test_building_block_runs_a_then_b_blocks(self, fake_conv):
        block = BuildingBlock(3, 8, 4, 16, 2)
        assert block._params == ['a', 'b1', 'b2']
        y = block(np.zeros((1, 8, 6, 6), dtype=np.float32))
        assert y.shape == (1, 16, 3, 3)

    def test_forward_with_real_convolutions(self):
        real_convolutions()
        np.random.seed(0)
        model = ResNet50()
        x = np.random.randn(2, 3, 32, 32).astype(np.float32)
        y = model(x)  # training mode: batch statistics in every BatchNorm
        assert y.shape == (2, 1000)
        assert np.isfinite(y.data).all()


def _batch_norms(layer):
    found = []
    for name in layer._params:
        obj = getattr(layer, name)
        if isinstance(obj, L.BatchNorm):
            found.append(obj)
        elif isinstance(obj, dezero.Layer):
            found.extend(_batch_norms(obj))
    return found


def test_models_import_no_plotting_or_imaging_library():
    code = ('import sys, dezero, dezero.models; '
            'print([m for m in ("matplotlib", "PIL") if m in sys.modules])')
    reference_root = os.path.dirname(os.path.dirname(os.path.abspath(models.__file__)))
    env = dict(os.environ, PYTHONPATH=reference_root)
    out = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True, env=env)
    assert out.stdout.strip() == '[]', out.stderr
