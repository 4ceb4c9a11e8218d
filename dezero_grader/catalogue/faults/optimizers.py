"""Faults of the optimizers (step 46): the update loop and its hooks, SGD and MomentumSGD.

Each patch receives the loaded `dezero` package and replaces one public method
(`dz.optimizers.Optimizer.update`, `dz.optimizers.MomentumSGD.update_one`, ...), importing what
it needs in its own body (its source is copied into single-fault variants).
"""
from dezero_grader.catalogue.faults import patch


# -- step 46 --------------------------------------------------------------------------------------
@patch('optimizer_hooks_not_called')
def optimizer_hooks_not_called(dz):
    def update(self):
        for param in [p for p in self.target.params() if p.grad is not None]:
            self.update_one(param)         # the hooks are never called
    dz.optimizers.Optimizer.update = update


@patch('optimizer_updates_none_grad')
def optimizer_updates_none_grad(dz):
    def update(self):
        params = list(self.target.params())   # parameters without a gradient too
        for f in self.hooks:
            f(params)
        for param in params:
            self.update_one(param)
    dz.optimizers.Optimizer.update = update


@patch('momentum_state_shared')
def momentum_state_shared(dz):
    def update_one(self, param):
        xp = dz.cuda.get_array_module(param.data)
        v = getattr(self, '_fault_v', None)
        if v is None or v.shape != param.data.shape:
            v = xp.zeros_like(param.data)  # one velocity for all parameters, not one each
        v = v * self.momentum - self.lr * param.grad.data
        self._fault_v = v
        param.data = param.data + v
    dz.optimizers.MomentumSGD.update_one = update_one


@patch('momentum_velocity_not_stored')
def momentum_velocity_not_stored(dz):
    def update_one(self, param):
        xp = dz.cuda.get_array_module(param.data)
        v = xp.zeros_like(param.data)      # self.vs[id(param)] is never read or written back
        v = self.momentum * v - self.lr * param.grad.data
        param.data = param.data + v
    dz.optimizers.MomentumSGD.update_one = update_one


@patch('sgd_ascends')
def sgd_ascends(dz):
    def update_one(self, param):
        param.data += self.lr * param.grad.data   # -= intended: a step up the loss
    dz.optimizers.SGD.update_one = update_one
