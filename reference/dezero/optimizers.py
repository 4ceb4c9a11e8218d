"""Optimizers (step 46 onward): update a model's parameters from their gradients.

`Optimizer.update()` takes the parameters of its target that have a gradient, lets the hooks
(weight decay, gradient clipping, freezing) adjust that list, then updates each parameter.
Per-parameter state (momentum, squared-gradient averages) is keyed by `id(param)` and lives on
the parameter's device: when the model moved after the state was created, the state follows
it before it is used (the book's code mixes host and device arrays there).
"""
import math

import numpy as np

from dezero import cuda
from dezero import Parameter
from dezero import Variable


# =============================================================================
# Optimizer (base class)
# =============================================================================
class Optimizer:
    def __init__(self):
        self.target = None
        self.hooks = []

    def setup(self, target):
        self.target = target
        return self

    def update(self):
        params = [p for p in self.target.params() if p.grad is not None]

        for f in self.hooks:
            f(params)

        for param in params:
            if param.grad is not None:  # a hook may have dropped it (FreezeParam)
                self.update_one(param)

    def update_one(self, param):
        raise NotImplementedError()

    def add_hook(self, f):
        self.hooks.append(f)

    def _state(self, states, param):
        """`states[id(param)]`: zeros on the parameter's device the first time, and moved to
        that device again whenever the parameter has moved since."""
        key = id(param)
        xp = cuda.get_array_module(param.data)
        if key not in states:
            states[key] = xp.zeros_like(param.data)
        elif cuda.get_array_module(states[key]) is not xp:
            convert = cuda.as_numpy if xp is np else cuda.as_cupy
            states[key] = convert(states[key])
        return states[key]


# =============================================================================
# SGD / MomentumSGD / AdaGrad / AdaDelta / Adam
# =============================================================================
class SGD(Optimizer):
    def __init__(self, lr=0.01):
        super().__init__()
        self.lr = lr

    def update_one(self, param):
        param.data -= self.lr * param.grad.data


class MomentumSGD(Optimizer):
    def __init__(self, lr=0.01, momentum=0.9):
        super().__init__()
        self.lr = lr
        self.momentum = momentum
        self.vs = {}

    def update_one(self, param):
        v = self._state(self.vs, param)
        v *= self.momentum
        v -= self.lr * param.grad.data
        param.data += v


class AdaGrad(Optimizer):
    def __init__(self, lr=0.001, eps=1e-8):
        super().__init__()
        self.lr = lr
        self.eps = eps
        self.hs = {}

    def update_one(self, param):
        xp = cuda.get_array_module(param.data)
        h = self._state(self.hs, param)

        lr = self.lr
        eps = self.eps
        grad = param.grad.data

        h += grad * grad
        param.data -= lr * grad / (xp.sqrt(h) + eps)


class AdaDelta(Optimizer):
    def __init__(self, rho=0.95, eps=1e-6):
        super().__init__()
        self.rho = rho
        self.eps = eps
        self.msg = {}
        self.msdx = {}

    def update_one(self, param):
        xp = cuda.get_array_module(param.data)
        msg = self._state(self.msg, param)
        msdx = self._state(self.msdx, param)

        rho = self.rho
        eps = self.eps
        grad = param.grad.data

        msg *= rho
        msg += (1 - rho) * grad * grad
        dx = xp.sqrt((msdx + eps) / (msg + eps)) * grad
        msdx *= rho
        msdx += (1 - rho) * dx * dx
        param.data -= dx


class Adam(Optimizer):
    def __init__(self, alpha=0.001, beta1=0.9, beta2=0.999, eps=1e-8):
        super().__init__()
        self.t = 0
        self.alpha = alpha
        self.beta1 = beta1
        self.beta2 = beta2
        self.eps = eps
        self.ms = {}
        self.vs = {}

    def update(self, *args, **kwargs):
        self.t += 1
        super().update(*args, **kwargs)

    @property
    def lr(self):
        fix1 = 1. - math.pow(self.beta1, self.t)
        fix2 = 1. - math.pow(self.beta2, self.t)
        return self.alpha * math.sqrt(fix2) / fix1

    def update_one(self, param):
        xp = cuda.get_array_module(param.data)
        m = self._state(self.ms, param)
        v = self._state(self.vs, param)

        beta1, beta2, eps = self.beta1, self.beta2, self.eps
        grad = param.grad.data

        m += (1 - beta1) * (grad - m)
        v += (1 - beta2) * (grad * grad - v)
        param.data -= self.lr * m / (xp.sqrt(v) + eps)


# =============================================================================
# Hooks: WeightDecay / ClipGrad / FreezeParam
# =============================================================================
# The hooks give a parameter a new gradient instead of changing it in place: backward can hand
# one gradient object to several parameters (e.g. both operands of `W + b`), and an in-place
# change would then be applied to each of them more than once.
class WeightDecay:
    def __init__(self, rate):
        self.rate = rate

    def __call__(self, params):
        for param in params:
            param.grad = Variable(param.grad.data + self.rate * param.data)


class ClipGrad:
    def __init__(self, max_norm):
        self.max_norm = max_norm

    def __call__(self, params):
        total_norm = 0
        for param in params:
            total_norm += (param.grad.data ** 2).sum()
        total_norm = math.sqrt(float(total_norm))

        rate = self.max_norm / (total_norm + 1e-6)
        if rate < 1:
            for param in params:
                param.grad = Variable(param.grad.data * rate)


class FreezeParam:
    def __init__(self, *layers):
        self.freeze_params = []
        for l in layers:
            if isinstance(l, Parameter):
                self.freeze_params.append(l)
            else:
                for p in l.params():
                    self.freeze_params.append(p)

    def __call__(self, params):
        # Drop the frozen parameters from the list itself, so that later hooks and the update
        # skip them (the book only clears their grads, and the update then reads None).
        frozen = {id(p) for p in self.freeze_params}
        for p in self.freeze_params:
            p.grad = None
        params[:] = [p for p in params if id(p) not in frozen]
