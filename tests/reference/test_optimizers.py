"""Tests of the reference optimizers and hooks: update rules against hand-computed values, the
selection of parameters, per-parameter state, and hooks that must not touch shared gradients.

How optimizer state follows a parameter to another device is tested with the layers' device
stand-in (test_layers.py, TestDeviceMoves).
"""
import numpy as np
import pytest

import dezero.functions as F
import dezero.layers as L
from dezero import Layer, Parameter, Variable
from dezero import optimizers as O


class OneParam(Layer):
    def __init__(self, value=1.0):
        super().__init__()
        self.W = Parameter(np.array([value]))


def step(opt, model, grad, times=1):
    for _ in range(times):
        model.W.grad = Variable(np.array([grad]))
        opt.update()
    return float(model.W.data[0])


class TestUpdateRules:
    def test_sgd(self):
        model = OneParam()
        assert step(O.SGD(lr=0.1).setup(model), model, 3.0) == pytest.approx(0.7)

    def test_momentum_sgd_two_steps(self):
        model = OneParam()
        assert step(O.MomentumSGD(lr=0.1).setup(model), model, 1.0, times=2) == \
            pytest.approx(0.71)

    def test_adagrad(self):
        model = OneParam()
        assert step(O.AdaGrad(lr=0.1).setup(model), model, 3.0) == pytest.approx(0.9)

    def test_adadelta(self):
        model = OneParam()
        assert step(O.AdaDelta().setup(model), model, 3.0) == pytest.approx(0.99552787)

    def test_adam_first_step(self):
        model = OneParam()
        opt = O.Adam().setup(model)
        assert step(opt, model, 3.0) == pytest.approx(0.999, abs=1e-9)
        assert opt.t == 1
        assert opt.lr == pytest.approx(0.000316227766)

    def test_adam_counts_updates_not_parameters(self):
        model = MLPLike()
        opt = O.Adam().setup(model)
        for _ in range(2):
            model.cleargrads()
            F.sum(model(np.ones((1, 2)))).backward()
            opt.update()
        assert opt.t == 2
        assert len(opt.ms) == len(opt.vs) == 4

    def test_defaults(self):
        assert O.SGD().lr == 0.01
        assert (O.MomentumSGD().lr, O.MomentumSGD().momentum) == (0.01, 0.9)
        assert (O.AdaGrad().lr, O.AdaGrad().eps) == (0.001, 1e-8)
        assert (O.AdaDelta().rho, O.AdaDelta().eps) == (0.95, 1e-6)
        adam = O.Adam()
        assert (adam.alpha, adam.beta1, adam.beta2, adam.eps) == (0.001, 0.9, 0.999, 1e-8)


class MLPLike(Layer):
    def __init__(self):
        super().__init__()
        self.l0 = L.Linear(3, in_size=2)
        self.l1 = L.Linear(1, in_size=3)

    def forward(self, x):
        return self.l1(F.sigmoid(self.l0(x)))


class TestOptimizer:
    def test_setup_returns_the_optimizer(self):
        opt = O.SGD()
        assert opt.setup(OneParam()) is opt

    def test_parameters_without_grad_are_skipped(self):
        model = MLPLike()
        model.l1.W.grad = Variable(np.ones_like(model.l1.W.data))
        before = model.l0.W.data.copy()
        seen = []
        opt = O.MomentumSGD().setup(model)
        opt.add_hook(lambda params: seen.append(list(params)))
        opt.update()
        assert np.array_equal(model.l0.W.data, before)
        assert [p is model.l1.W for p in seen[0]] == [True]
        assert list(opt.vs) == [id(model.l1.W)]

    def test_state_is_zeros_like_the_parameter(self):
        model = OneParam()
        model.W.data = np.ones((2, 3), dtype=np.float32)
        model.W.grad = Variable(np.zeros((2, 3), dtype=np.float32))
        opt = O.MomentumSGD().setup(model)
        opt.update()
        v = opt.vs[id(model.W)]
        assert v.shape == (2, 3) and v.dtype == np.float32 and not v.any()

    def test_hooks_run_in_order_before_the_update(self):
        model = OneParam()
        calls = []
        opt = O.SGD(lr=0.1).setup(model)
        opt.add_hook(lambda params: calls.append(('a', float(params[0].data[0]))))
        opt.add_hook(lambda params: calls.append(('b', float(params[0].data[0]))))
        step(opt, model, 1.0)
        assert calls == [('a', 1.0), ('b', 1.0)]


class TestHooks:
    def test_weight_decay(self):
        model = OneParam()
        opt = O.SGD(lr=0.1).setup(model)
        opt.add_hook(O.WeightDecay(0.5))
        assert step(opt, model, 3.0) == pytest.approx(0.65)

    def test_clip_grad(self):
        model = OneParam()
        opt = O.SGD(lr=0.1).setup(model)
        opt.add_hook(O.ClipGrad(0.5))
        assert step(opt, model, 3.0) == pytest.approx(0.95)

    def test_clip_grad_leaves_small_gradients(self):
        model = OneParam()
        opt = O.SGD(lr=0.1).setup(model)
        opt.add_hook(O.ClipGrad(5.0))
        assert step(opt, model, 3.0) == pytest.approx(0.7)

    def test_weight_decay_matches_the_penalised_loss(self):
        np.random.seed(0)
        x = np.random.randn(4, 2)
        a = L.Linear(3, in_size=2, nobias=True, dtype=np.float64)
        b = L.Linear(3, in_size=2, nobias=True, dtype=np.float64)
        b.W.data = a.W.data.copy()

        opt_a = O.SGD(lr=0.1).setup(a)
        opt_a.add_hook(O.WeightDecay(0.4))
        F.sum(a(x) ** 2).backward()
        opt_a.update()

        opt_b = O.SGD(lr=0.1).setup(b)
        (F.sum(b(x) ** 2) + 0.2 * F.sum(b.W ** 2)).backward()
        opt_b.update()
        assert np.allclose(a.W.data, b.W.data)

    def test_hooks_do_not_change_a_gradient_shared_by_two_parameters(self):
        # backward hands the same gradient object to both operands of `W + b`
        model = OneParam(1.0)
        model.b = Parameter(np.array([2.0]))
        F.sum(model.W + model.b).backward()
        assert model.W.grad is model.b.grad

        opt = O.SGD(lr=0.1).setup(model)
        opt.add_hook(O.WeightDecay(0.5))
        opt.update()
        assert float(model.W.data[0]) == pytest.approx(1 - 0.1 * (1 + 0.5 * 1))
        assert float(model.b.data[0]) == pytest.approx(2 - 0.1 * (1 + 0.5 * 2))

    def test_clip_grad_scales_a_shared_gradient_once(self):
        model = OneParam(1.0)
        model.b = Parameter(np.array([2.0]))
        F.sum(3 * (model.W + model.b)).backward()
        opt = O.SGD(lr=1.0).setup(model)
        opt.add_hook(O.ClipGrad(1.0))
        opt.update()
        clipped = 3 / (np.sqrt(18) + 1e-6)
        assert float(model.W.data[0]) == pytest.approx(1 - clipped)
        assert float(model.b.data[0]) == pytest.approx(2 - clipped)

    def test_freeze_param_skips_frozen_layers(self):
        model = MLPLike()
        F.sum(model(np.ones((2, 2)))).backward()
        frozen = [p.data.copy() for p in model.l0.params()]
        free = [p.data.copy() for p in model.l1.params()]

        opt = O.SGD(lr=0.1).setup(model)
        opt.add_hook(O.FreezeParam(model.l0))
        opt.add_hook(O.ClipGrad(0.1))  # a later hook must not see the frozen params either
        opt.update()
        assert all(np.array_equal(p.data, v) for p, v in zip(model.l0.params(), frozen))
        assert not any(np.array_equal(p.data, v) for p, v in zip(model.l1.params(), free))

    def test_freeze_param_accepts_single_parameters(self):
        model = MLPLike()
        F.sum(model(np.ones((2, 2)))).backward()
        bias = model.l1.b.data.copy()
        opt = O.MomentumSGD().setup(model)
        opt.add_hook(O.FreezeParam(model.l1.b))
        opt.update()
        assert np.array_equal(model.l1.b.data, bias)
        assert id(model.l1.b) not in opt.vs and len(opt.vs) == 3
