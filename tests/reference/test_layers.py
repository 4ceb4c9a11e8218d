"""Tests of the reference layers: parameter registration, lazy initialisation, recurrent state,
saving and loading weights, and what moves when a model changes device.

Convolutions are replaced by shape-only stand-ins where a test is about the layer rather than
the convolution itself. Device moves are smoke-tested with a tiny stand-in for CuPy (an ndarray
subclass marks "on the device"); the simulated device has its own, stricter tests.
"""
import os
import types
import weakref

import numpy as np
import pytest

import dezero
import dezero.functions as F
import dezero.layers as L
from dezero import Layer, Parameter, Variable, cuda, optimizers
from dezero.models import MLP, SimpleRNN


def numerical_grad_of(f, array, eps=1e-6):
    """Central differences of the scalar f() with respect to every element of `array`."""
    grad = np.zeros_like(array)
    for idx in np.ndindex(*array.shape):
        old = array[idx]
        array[idx] = old + eps
        y1 = f()
        array[idx] = old - eps
        y2 = f()
        array[idx] = old
        grad[idx] = (y1 - y2) / (2 * eps)
    return grad


# =============================================================================
# Registration and parameter order
# =============================================================================
class TestRegistration:
    def test_only_parameters_and_layers_are_registered(self):
        layer = Layer()
        layer.p1 = Parameter(np.array(1.0))
        layer.v = Variable(np.array(2.0))
        layer.a = np.array(3.0)
        layer.sub = L.Linear(2, in_size=3)
        layer.p0 = Parameter(np.array(4.0))
        assert layer._params == ['p1', 'sub', 'p0']

    def test_params_follow_assignment_order_and_recurse(self):
        layer = Layer()
        layer.z = Parameter(np.array(1.0))
        layer.inner = Layer()
        layer.inner.b = Parameter(np.array(2.0))
        layer.inner.a = Parameter(np.array(3.0))
        layer.a = Parameter(np.array(4.0))
        values = [float(p.data) for p in layer.params()]
        assert values == [1.0, 2.0, 3.0, 4.0]

    def test_rebinding_to_a_plain_value_unregisters(self):
        layer = Layer()
        layer.W = Parameter(np.array(1.0))
        layer.W = None
        assert list(layer.params()) == []
        layer.W = Parameter(np.array(2.0))
        assert layer._params == ['W']

    def test_cleargrads_clears_nested_layers(self):
        model = MLP((4, 2))
        loss = F.sum(model(np.random.randn(3, 5)))
        loss.backward()
        assert all(p.grad is not None for p in model.params())
        model.cleargrads()
        assert all(p.grad is None for p in model.params())

    def test_call_keeps_weak_references_to_inputs_and_outputs(self):
        layer = L.Linear(2, in_size=3)
        x = Variable(np.ones((1, 3)))
        y = layer(x)
        assert layer.inputs[0]() is x
        assert layer.outputs[0]() is y
        assert isinstance(layer.inputs[0], weakref.ref)

    def test_tied_layer_used_twice_accumulates_both_gradients(self):
        np.random.seed(0)
        model = Layer()
        model.l = L.Linear(3, in_size=3, nobias=True, dtype=np.float64)
        x = np.random.randn(2, 3)

        def loss():
            return F.sum(model.l(model.l(x)) ** 2)

        loss().backward()
        expected = numerical_grad_of(lambda: float(loss().data), model.l.W.data)
        assert len(list(model.params())) == 1
        assert np.allclose(model.l.W.grad.data, expected, rtol=1e-5, atol=1e-6)


# =============================================================================
# Linear / Conv2d / Deconv2d
# =============================================================================
class TestLinear:
    def test_parameter_count_with_and_without_bias(self):
        assert len(list(L.Linear(3).params())) == 2
        assert len(list(L.Linear(3, nobias=True).params())) == 1

    def test_lazy_weight_is_created_at_the_first_call(self):
        layer = L.Linear(5)
        assert layer.W.data is None
        assert layer.b.shape == (5,)
        y = layer(np.random.randn(4, 3).astype(np.float32))
        assert layer.W.shape == (3, 5)
        assert layer.in_size == 3
        assert y.shape == (4, 5)

    def test_eager_weight_when_in_size_is_given(self):
        layer = L.Linear(5, in_size=3)
        assert layer.W.shape == (3, 5)

    def test_weights_keep_the_declared_dtype(self):
        assert L.Linear(5, in_size=3).W.dtype == np.float32
        assert L.Linear(5, in_size=3, dtype=np.float64).W.dtype == np.float64

    def test_forward_is_x_W_plus_b(self):
        layer = L.Linear(2, in_size=3, dtype=np.float64)
        layer.b.data = np.array([1.0, -1.0])
        x = np.random.randn(4, 3)
        assert np.allclose(layer(x).data, x.dot(layer.W.data) + layer.b.data)

    def test_init_scale_is_sqrt_one_over_in_size(self):
        np.random.seed(1)
        W = L.Linear(300, in_size=400).W.data
        assert abs(W.mean()) < 0.002
        assert abs(W.std() - np.sqrt(1 / 400)) < 0.05 * np.sqrt(1 / 400)


@pytest.fixture
def fake_conv(monkeypatch):
    """Shape-only conv2d / deconv2d that record their arguments (the layer is under test)."""
    calls = []

    def conv2d(x, W, b=None, stride=1, pad=0):
        calls.append(('conv2d', W, b, stride, pad))
        N, C, H, Wd = x.shape
        OC, _, KH, KW = W.shape
        s, p = dezero.utils.pair(stride), dezero.utils.pair(pad)
        OH = dezero.utils.get_conv_outsize(H, KH, s[0], p[0])
        OW = dezero.utils.get_conv_outsize(Wd, KW, s[1], p[1])
        return Variable(np.zeros((N, OC, OH, OW), dtype=W.dtype))

    def deconv2d(x, W, b=None, stride=1, pad=0, outsize=None):
        calls.append(('deconv2d', W, b, stride, pad))
        return Variable(np.zeros((x.shape[0], W.shape[1], 1, 1), dtype=W.dtype))

    monkeypatch.setattr(F, 'conv2d', conv2d)
    monkeypatch.setattr(F, 'deconv2d', deconv2d)
    return calls


class TestConv2d:
    def test_lazy_weight_shape_and_arguments(self, fake_conv):
        layer = L.Conv2d(8, kernel_size=(3, 5), stride=2, pad=1)
        assert layer.W.data is None and layer.b.shape == (8,)
        y = layer(np.zeros((2, 4, 9, 9), dtype=np.float32))
        assert layer.W.shape == (8, 4, 3, 5)
        assert layer.in_channels == 4
        assert y.shape == (2, 8, 5, 4)
        name, W, b, stride, pad = fake_conv[0]
        assert (name, W, b, stride, pad) == ('conv2d', layer.W, layer.b, 2, 1)

    def test_nobias(self, fake_conv):
        layer = L.Conv2d(8, 3, nobias=True, in_channels=2)
        assert layer.b is None
        assert [p.shape for p in layer.params()] == [(8, 2, 3, 3)]

    def test_init_scale_uses_the_fan_in(self):
        np.random.seed(2)
        W = L.Conv2d(64, kernel_size=5, in_channels=16).W.data
        scale = np.sqrt(1 / (16 * 5 * 5))
        assert W.dtype == np.float32
        assert abs(W.std() - scale) < 0.05 * scale


class TestDeconv2d:
    def test_lazy_weight_shape_is_in_out_kh_kw(self, fake_conv):
        layer = L.Deconv2d(6, kernel_size=4, stride=2, pad=1)
        layer(np.zeros((1, 3, 5, 5), dtype=np.float32))
        assert layer.W.shape == (3, 6, 4, 4)
        assert layer.b.shape == (6,)
        assert fake_conv[0][0] == 'deconv2d'
        assert fake_conv[0][3:] == (2, 1)


# =============================================================================
# RNN / LSTM
# =============================================================================
class TestRNN:
    def test_parameters_after_two_steps(self):
        rnn = L.RNN(4)
        x = np.random.randn(3, 2)
        rnn(x)
        rnn(x)
        shapes = {k: p.shape for k, p in _flat(rnn).items()}
        assert shapes == {'x2h/W': (2, 4), 'x2h/b': (4,), 'h2h/W': (4, 4)}

    def test_forward_formula(self):
        rnn = L.RNN(4, in_size=2)
        x1, x2 = np.random.randn(3, 2), np.random.randn(3, 2)
        W, b, U = rnn.x2h.W.data, rnn.x2h.b.data, rnn.h2h.W.data
        h1 = rnn(x1)
        assert np.allclose(h1.data, np.tanh(x1.dot(W) + b), atol=1e-6)
        h2 = rnn(x2)
        assert np.allclose(h2.data, np.tanh(x2.dot(W) + b + h1.data.dot(U)), atol=1e-6)
        assert rnn.h is h2

    def test_explicit_in_size_differs_from_hidden_size(self):
        # the book builds h2h with in_size, so this fails at its second step
        rnn = L.RNN(10, in_size=1)
        x = np.random.randn(2, 1)
        rnn(x)
        assert rnn(x).shape == (2, 10)
        assert rnn.h2h.W.shape == (10, 10)

    def test_reset_state(self):
        rnn = L.RNN(4)
        rnn(np.random.randn(1, 2))
        assert rnn.h is not None
        rnn.reset_state()
        assert rnn.h is None


class TestLSTM:
    def test_parameters_after_two_steps(self):
        lstm = L.LSTM(5)
        x = np.random.randn(3, 2)
        lstm(x)
        lstm(x)
        shapes = {k: p.shape for k, p in _flat(lstm).items()}
        expected = {}
        for g in 'fiou':
            expected['x2' + g + '/W'] = (2, 5)
            expected['x2' + g + '/b'] = (5,)
            expected['h2' + g + '/W'] = (5, 5)
        assert shapes == expected
        assert lstm.h.shape == (3, 5) and lstm.c.shape == (3, 5)

    def test_forward_formula(self):
        lstm = L.LSTM(3, in_size=2)
        x1, x2 = np.random.randn(4, 2), np.random.randn(4, 2)

        def sigmoid(a):
            return 1 / (1 + np.exp(-a))

        def gate(g, x, h):
            lin = getattr(lstm, 'x2' + g)
            a = x.dot(lin.W.data) + lin.b.data
            if h is not None:
                a = a + h.dot(getattr(lstm, 'h2' + g).W.data)
            return a

        h1 = lstm(x1)
        i, o, u = (sigmoid(gate('i', x1, None)), sigmoid(gate('o', x1, None)),
                   np.tanh(gate('u', x1, None)))
        c1 = i * u
        assert np.allclose(lstm.c.data, c1, atol=1e-6)
        assert np.allclose(h1.data, o * np.tanh(c1), atol=1e-6)

        h2 = lstm(x2)
        f, i, o, u = (sigmoid(gate('f', x2, h1.data)), sigmoid(gate('i', x2, h1.data)),
                      sigmoid(gate('o', x2, h1.data)), np.tanh(gate('u', x2, h1.data)))
        c2 = f * c1 + i * u
        assert np.allclose(lstm.c.data, c2, atol=1e-6)
        assert np.allclose(h2.data, o * np.tanh(c2), atol=1e-6)

    def test_reset_state_clears_h_and_c(self):
        lstm = L.LSTM(3)
        lstm(np.random.randn(1, 2))
        lstm.reset_state()
        assert lstm.h is None and lstm.c is None


# =============================================================================
# EmbedID / BatchNorm
# =============================================================================
def test_embed_id_picks_rows():
    embed = L.EmbedID(10, 4)
    assert embed.W.shape == (10, 4)
    idx = np.array([3, 0, 3])
    y = embed(idx)
    assert np.array_equal(y.data, embed.W.data[idx])
    F.sum(y).backward()
    assert embed.W.grad.data[3].tolist() == [2.0] * 4
    assert embed.W.grad.data[1].tolist() == [0.0] * 4


class TestBatchNorm:
    def test_lazy_parameters_follow_the_input(self):
        bn = L.BatchNorm()
        assert all(p.data is None for p in bn.params())
        x = np.random.randn(6, 3, 2, 2).astype(np.float32)
        bn(x)
        flat = _flat(bn)
        assert list(flat) == ['avg_mean', 'avg_var', 'gamma', 'beta']
        assert all(p.shape == (3,) and p.dtype == np.float32 for p in flat.values())

    def test_running_statistics_update_in_training_only(self):
        bn = L.BatchNorm()
        x = np.random.randn(50, 3) * 2 + 5
        y = bn(x)
        assert np.allclose(y.data.mean(axis=0), 0, atol=1e-6)
        assert np.allclose(bn.avg_mean.data, 0.1 * x.mean(axis=0))
        mean = bn.avg_mean.data.copy()
        with dezero.test_mode():
            bn(x)
        assert np.array_equal(bn.avg_mean.data, mean)

    def test_statistics_get_no_gradient(self):
        bn = L.BatchNorm()
        F.sum(bn(np.random.randn(4, 2)) ** 2).backward()
        assert bn.avg_mean.grad is None and bn.avg_var.grad is None
        assert bn.gamma.grad is not None and bn.beta.grad is not None


# =============================================================================
# Saving and loading
# =============================================================================
def _flat(layer):
    params_dict = {}
    layer._flatten_params(params_dict)
    return params_dict


class Block(Layer):
    def __init__(self):
        super().__init__()
        self.inner = L.Linear(3, in_size=2)
        self.scale = Parameter(np.array([2.0]), name='scale')

    def forward(self, x):
        return self.inner(x) * self.scale


class Nested(Layer):
    def __init__(self):
        super().__init__()
        self.block = Block()
        self.out = L.Linear(2, in_size=3)

    def forward(self, x):
        return self.out(F.tanh(self.block(x)))


def _trained_mlp(seed=0):
    np.random.seed(seed)
    model = MLP((5, 3))
    x = np.random.randn(4, 2)
    model(x)
    for p in model.params():
        p.data = p.data + np.random.randn(*p.shape).astype(p.dtype)  # not the initial values
    return model, x


class TestSaveLoad:
    def test_mlp_round_trip_into_a_fresh_model(self, tmp_path):
        model, x = _trained_mlp()
        path = str(tmp_path / 'mlp.npz')
        model.save_weights(path)

        fresh = MLP((5, 3))  # lazy: nothing initialised yet
        fresh.load_weights(path)
        assert np.array_equal(fresh(x).data, model(x).data)

    def test_round_trip_into_an_initialised_model(self, tmp_path):
        model, x = _trained_mlp()
        path = str(tmp_path / 'mlp.npz')
        model.save_weights(path)
        fresh = MLP((5, 3))
        fresh(x)
        assert not np.array_equal(fresh(x).data, model(x).data)
        fresh.load_weights(path)
        assert np.array_equal(fresh(x).data, model(x).data)

    def test_file_keys_and_values(self, tmp_path):
        model, _ = _trained_mlp()
        path = str(tmp_path / 'mlp.npz')
        model.save_weights(path)
        with np.load(path, allow_pickle=False) as npz:
            assert sorted(npz.files) == ['l0/W', 'l0/b', 'l1/W', 'l1/b']
            assert npz['l0/W'].shape == (2, 5) and npz['l1/b'].shape == (3,)
            assert type(npz['l0/W']) is np.ndarray
            assert np.array_equal(npz['l1/W'], model.l1.W.data)

    def test_nested_layers(self, tmp_path):
        np.random.seed(3)
        model = Nested()
        model.block.scale.data = np.array([-1.5])
        path = str(tmp_path / 'nested.npz')
        model.save_weights(path)
        with np.load(path) as npz:
            assert npz.files == ['block/inner/W', 'block/inner/b', 'block/scale',
                                 'out/W', 'out/b']
        fresh = Nested()
        fresh.load_weights(path)
        x = np.random.randn(3, 2)
        assert np.array_equal(fresh(x).data, model(x).data)

    def test_rnn_keys(self, tmp_path):
        model = SimpleRNN(4, 1)
        model(np.zeros((1, 1)))
        model.save_weights(str(tmp_path / 'rnn.npz'))
        with np.load(str(tmp_path / 'rnn.npz')) as npz:
            assert npz.files == ['rnn/x2h/W', 'rnn/x2h/b', 'rnn/h2h/W', 'fc/W', 'fc/b']

    def test_path_without_suffix(self, tmp_path):
        model, x = _trained_mlp()
        model.save_weights(str(tmp_path / 'weights'))
        assert os.listdir(tmp_path) == ['weights.npz']
        fresh = MLP((5, 3))
        fresh.load_weights(str(tmp_path / 'weights'))
        assert np.array_equal(fresh(x).data, model(x).data)

    def test_loaded_arrays_are_copies(self, tmp_path):
        model, x = _trained_mlp()
        path = str(tmp_path / 'mlp.npz')
        model.save_weights(path)
        a, b = MLP((5, 3)), MLP((5, 3))
        a.load_weights(path)
        b.load_weights(path)
        for pa, pb in zip(a.params(), b.params()):
            assert not np.shares_memory(pa.data, pb.data)
        a.l0.W.data[...] = 0
        assert np.array_equal(b(x).data, model(x).data)

    def test_missing_key_raises_and_changes_nothing(self, tmp_path):
        small = MLP((5,))
        small(np.zeros((1, 2)))
        path = str(tmp_path / 'small.npz')
        small.save_weights(path)

        model, x = _trained_mlp()
        before = model(x).data.copy()
        with pytest.raises(KeyError) as info:
            model.load_weights(path)
        assert 'l1/W' in str(info.value) and 'small.npz' in str(info.value)
        assert np.array_equal(model(x).data, before)

    def test_wrong_shape_raises_and_changes_nothing(self, tmp_path):
        other = MLP((6, 3))
        other(np.zeros((1, 2)))
        path = str(tmp_path / 'other.npz')
        other.save_weights(path)

        model, x = _trained_mlp()
        before = model(x).data.copy()
        with pytest.raises(ValueError) as info:
            model.load_weights(path)
        message = str(info.value)
        assert 'l0/W' in message and '(2, 5)' in message and '(2, 6)' in message
        assert np.array_equal(model(x).data, before)

    def test_extra_keys_are_ignored(self, tmp_path):
        model, x = _trained_mlp()
        path = str(tmp_path / 'extra.npz')
        arrays = {k: p.data for k, p in _flat(model).items()}
        arrays['unused/W'] = np.ones(3)
        np.savez_compressed(path, **arrays)
        fresh = MLP((5, 3))
        fresh.load_weights(path)
        assert np.array_equal(fresh(x).data, model(x).data)

    def test_uninitialised_parameter_is_a_clear_error(self, tmp_path):
        model = MLP((5, 3))
        with pytest.raises(ValueError, match='l0/W'):
            model.save_weights(str(tmp_path / 'lazy.npz'))
        assert os.listdir(tmp_path) == []

    @pytest.mark.parametrize('error', [RuntimeError('disk full'), KeyboardInterrupt()])
    def test_failing_save_leaves_no_partial_file(self, tmp_path, monkeypatch, error):
        model, _ = _trained_mlp()
        path = str(tmp_path / 'mlp.npz')

        def savez_compressed_that_fails(file, **arrays):
            file.write(b'PK\x03\x04 half an archive')
            raise error

        monkeypatch.setattr(np, 'savez_compressed', savez_compressed_that_fails)
        with pytest.raises(type(error)):
            model.save_weights(path)
        assert os.listdir(tmp_path) == []

    def test_failing_save_keeps_the_previous_file(self, tmp_path, monkeypatch):
        model, x = _trained_mlp()
        path = str(tmp_path / 'mlp.npz')
        model.save_weights(path)

        def fails(file, **arrays):
            file.write(b'garbage')
            raise OSError('disk full')

        monkeypatch.setattr(np, 'savez_compressed', fails)
        with pytest.raises(OSError):
            _trained_mlp(seed=1)[0].save_weights(path)
        monkeypatch.undo()
        assert os.listdir(tmp_path) == ['mlp.npz']
        fresh = MLP((5, 3))
        fresh.load_weights(path)
        assert np.array_equal(fresh(x).data, model(x).data)

    def test_failing_conversion_writes_nothing(self, tmp_path, monkeypatch):
        model, _ = _trained_mlp()

        def as_numpy(x):
            raise RuntimeError('device lost')

        monkeypatch.setattr(cuda, 'as_numpy', as_numpy)
        with pytest.raises(RuntimeError):
            model.save_weights(str(tmp_path / 'mlp.npz'))
        assert os.listdir(tmp_path) == []


# =============================================================================
# Device moves, with a tiny stand-in for CuPy
# =============================================================================
class DeviceArray(np.ndarray):
    """An ndarray that counts as living on the stand-in device."""


@pytest.fixture
def fake_device(monkeypatch):
    """Route dezero.cuda to a stand-in device whose arrays are `DeviceArray`s. It only tells
    where arrays are; it does not refuse mixed operations like a real device would."""
    def unwrap(x):
        return x.data if isinstance(x, Variable) else x

    def to_device(x):
        return np.array(unwrap(x)).view(DeviceArray)

    fake = types.SimpleNamespace(
        ndarray=DeviceArray,
        zeros_like=lambda a: np.zeros_like(np.asarray(a)).view(DeviceArray),
        array=lambda a, **kw: np.array(a, **kw).view(DeviceArray),
        asarray=to_device, sqrt=np.sqrt, tanh=np.tanh, exp=np.exp,
        ones_like=lambda a: np.ones_like(np.asarray(a)).view(DeviceArray),
        random=types.SimpleNamespace(
            randn=lambda *shape: np.random.randn(*shape).view(DeviceArray)),
    )

    def get_array_module(x):
        return fake if isinstance(unwrap(x), DeviceArray) else np

    monkeypatch.setattr(cuda, 'gpu_enable', True)
    monkeypatch.setattr(cuda, 'get_array_module', get_array_module)
    monkeypatch.setattr(cuda, 'as_cupy', to_device)
    monkeypatch.setattr(cuda, 'as_numpy', lambda x: np.array(unwrap(x)))
    return fake


def _on_device(array):
    return isinstance(array, DeviceArray)


class TestDeviceMoves:
    def test_nested_parameters_and_grads_move_both_ways(self, fake_device):
        model = Nested()
        F.sum(model(np.random.randn(2, 2))).backward()
        model.to_gpu()
        assert all(_on_device(p.data) and _on_device(p.grad.data) for p in model.params())
        model.to_cpu()
        assert not any(_on_device(p.data) or _on_device(p.grad.data) for p in model.params())

    def test_rnn_hidden_state_moves_mid_sequence(self, fake_device):
        model = SimpleRNN(3, 1)
        model(np.random.randn(2, 1))
        model.to_gpu()
        assert _on_device(model.rnn.h.data)
        assert model.rnn.h.creator is None  # the host graph behind it stays on the host
        model.to_cpu()
        assert not _on_device(model.rnn.h.data)

    def test_lstm_hidden_and_cell_move(self, fake_device):
        lstm = L.LSTM(3)
        lstm(np.random.randn(2, 1))
        lstm.to_gpu()
        assert _on_device(lstm.h.data) and _on_device(lstm.c.data)
        lstm.to_cpu()
        assert not _on_device(lstm.h.data) and not _on_device(lstm.c.data)

    def test_state_already_on_the_device_is_kept(self, fake_device):
        rnn = L.RNN(3)
        rnn.to_gpu()
        h = rnn(np.random.randn(2, 1).view(DeviceArray))
        rnn.to_gpu()
        assert rnn.h is h and h.creator is not None

    def test_lazy_weight_is_created_on_the_input_device(self, fake_device):
        layer = L.Linear(4)
        layer.to_gpu()
        layer(np.random.randn(2, 3).view(DeviceArray))
        assert _on_device(layer.W.data) and _on_device(layer.b.data)

    def test_save_leaves_the_model_on_the_device(self, fake_device, tmp_path):
        model, x = _trained_mlp()
        model.to_gpu()
        path = str(tmp_path / 'mlp.npz')
        model.save_weights(path)
        assert all(_on_device(p.data) for p in model.params())
        with np.load(path) as npz:
            assert all(type(npz[k]) is np.ndarray for k in npz.files)

    def test_load_puts_arrays_on_the_model_device(self, fake_device, tmp_path):
        model, x = _trained_mlp()
        path = str(tmp_path / 'mlp.npz')
        model.save_weights(path)
        fresh = MLP((5, 3))
        fresh(x)
        fresh.to_gpu()
        fresh.load_weights(path)
        assert all(_on_device(p.data) for p in fresh.params())
        lazy = MLP((5, 3))
        lazy.to_gpu()  # moves the biases; the weights do not exist yet
        lazy.load_weights(path)
        assert all(_on_device(p.data) for p in lazy.params())

    def test_optimizer_state_follows_the_parameters(self, fake_device):
        model, x = _trained_mlp()
        opt = optimizers.Adam().setup(model)
        F.sum(model(x)).backward()
        opt.update()
        assert not any(_on_device(m) for m in opt.ms.values())
        model.to_gpu()
        opt.update()
        assert opt.ms and all(_on_device(m) for m in opt.ms.values())
        assert all(_on_device(v) for v in opt.vs.values())
        assert all(_on_device(p.data) for p in model.params())
        model.to_cpu()
        opt.update()
        assert not any(_on_device(m) for m in opt.ms.values())
