"""Stage 5 on the device: training parity for a CNN and an LSTM with truncated BPTT, and the
invariants the reference keeps where the book's 2020 code leaves state behind (save/load keep
the device, `to_gpu` mid-sequence moves the hidden state, optimizer state follows the model).

Every test runs on the host and on the simulated device (`device` fixture); parity tests also
compare the device's numbers with the host's, bit for bit (the simulated device computes with
NumPy).
"""
import numpy as np
import pytest

import dezero
import dezero.functions as F
import dezero.layers as L
from dezero import Model
from dezero.models import BetterRNN, MLP
from dezero.optimizers import Adam, MomentumSGD, SGD


class SmallCNN(Model):
    def __init__(self):
        super().__init__()
        self.conv = L.Conv2d(4, kernel_size=3, stride=1, pad=1)
        self.fc = L.Linear(3)

    def forward(self, x):
        h = F.pooling(F.relu(self.conv(x)), 2, 2)
        return self.fc(F.reshape(h, (h.shape[0], -1)))


def _init(model, device, *inputs):
    """Materialise lazy weights on the host with fixed values, then move to the device."""
    with dezero.no_grad():
        model(*inputs)
    rng = np.random.RandomState(0)
    for p in sorted(model.params(), key=lambda p: (p.data.shape, p.data.size)):
        p.data = (0.3 * rng.standard_normal(p.data.shape)).astype(np.float64)
    if device.name != 'cpu':
        model.to_gpu()


def _cnn_losses(device, steps=5):
    rng = np.random.RandomState(1)
    x_host = rng.standard_normal((6, 2, 8, 8))
    t_host = rng.randint(0, 3, size=6)
    model = SmallCNN()
    _init(model, device, x_host)
    optimizer = MomentumSGD(lr=0.05).setup(model)
    x, t = device.to_device(x_host), device.to_device(t_host)
    losses = []
    for _ in range(steps):
        loss = F.softmax_cross_entropy(model(x), t)
        model.cleargrads()
        loss.backward()
        optimizer.update()
        losses.append(device.to_host(loss).item())
    for p in model.params():
        assert device.is_on_device(p.data)
    return losses


def test_cnn_training_is_identical_on_host_and_device(device, host_device):
    host = _cnn_losses(host_device)
    assert _cnn_losses(device) == host
    assert host[-1] < host[0]


def _lstm_losses(device, windows=3, bptt=5):
    """BetterRNN (LSTM + Linear) on a noiseless sine, Adam, truncated BPTT every `bptt` steps."""
    xs = np.sin(np.linspace(0, 4 * np.pi, windows * bptt + 1)).reshape(-1, 1, 1)
    model = BetterRNN(6, 1)
    _init(model, device, xs[0])
    model.reset_state()
    optimizer = Adam(alpha=0.01).setup(model)
    losses, loss, count = [], 0, 0
    for k in range(windows * bptt):
        y = model(device.to_device(xs[k]))
        loss += F.mean_squared_error(y, device.to_device(xs[k + 1]))
        count += 1
        if count % bptt == 0:
            model.cleargrads()
            loss.backward()
            loss.unchain_backward()
            optimizer.update()
            assert model.rnn.h.creator is None and model.rnn.c.creator is None
            assert loss.creator is not None
            losses.append(device.to_host(loss).item())
    return losses


def test_lstm_truncated_bptt_is_identical_on_host_and_device(device, host_device):
    host = _lstm_losses(host_device)
    assert _lstm_losses(device) == host
    assert len(host) == 3


def _sim(device):
    if device.name == 'cpu':
        pytest.skip('moves between host and device need the device')


def test_save_and_load_keep_the_model_on_its_device(device, tmp_path):
    _sim(device)
    model = MLP((5, 2))
    _init(model, device, np.zeros((1, 3)))
    x = device.to_device(np.ones((2, 3)))
    before = device.to_host(model(x)).copy()
    model.save_weights(str(tmp_path / 'w.npz'))
    assert all(device.is_on_device(p.data) for p in model.params()), 'save moved the model'
    with np.load(tmp_path / 'w.npz') as f:
        assert sorted(f.files) == ['l0/W', 'l0/b', 'l1/W', 'l1/b']
    fresh = MLP((5, 2))
    _init(fresh, device, np.zeros((1, 3)))
    fresh.load_weights(str(tmp_path / 'w.npz'))
    assert all(device.is_on_device(p.data) for p in fresh.params()), 'load put host arrays in'
    np.testing.assert_array_equal(device.to_host(fresh(x)), before)


def test_to_gpu_mid_sequence_moves_the_hidden_state(device, host_device):
    _sim(device)
    model = BetterRNN(4, 1)
    _init(model, host_device, np.zeros((1, 1)))
    model.reset_state()
    model(np.ones((1, 1)))
    model(np.ones((1, 1)))
    model.to_gpu()
    assert device.is_on_device(model.rnn.h.data) and device.is_on_device(model.rnn.c.data)
    y = model(device.to_device(np.ones((1, 1))))
    assert device.is_on_device(y.data)
    model.to_cpu()
    assert isinstance(model.rnn.h.data, np.ndarray) and isinstance(model.rnn.c.data, np.ndarray)


@pytest.mark.parametrize('optimizer', [lambda: MomentumSGD(0.1), lambda: Adam(0.01),
                                       lambda: SGD(0.1)])
def test_optimizer_state_follows_the_model_mid_training(device, optimizer):
    _sim(device)
    rng = np.random.RandomState(3)
    x, t = rng.standard_normal((8, 4)), rng.randint(0, 2, size=8)
    model = MLP((5, 2))
    opt = optimizer().setup(model)

    def step(xx, tt):
        loss = F.softmax_cross_entropy(model(xx), tt)
        model.cleargrads()
        loss.backward()
        opt.update()
        return loss

    step(x, t)
    step(x, t)
    model.to_gpu()
    loss = step(device.to_device(x), device.to_device(t))
    assert device.is_on_device(loss.data)
    assert all(device.is_on_device(p.data) for p in model.params())
