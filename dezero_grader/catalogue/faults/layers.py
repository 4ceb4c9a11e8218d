"""Faults of the layers and models (steps 44-45): parameters registered and gathered, gradients
cleared, the Linear layer's bias, the MLP.

Each patch receives the loaded `dezero` package and replaces or wraps one public name
(`dz.Layer.params`, `dz.Layer.cleargrads`, `dz.models.MLP.forward`, ...), importing what it
needs in its own body (its source is copied into single-fault variants).
"""
from dezero_grader.catalogue.faults import patch


# -- step 44 --------------------------------------------------------------------------------------
@patch('layer_registers_variables')
def layer_registers_variables(dz):
    # Every Variable assigned to a layer is taken for a parameter.
    Layer = dz.Layer
    original_setattr = Layer.__setattr__
    original_params = Layer.params

    def __setattr__(self, name, value):
        original_setattr(self, name, value)
        if isinstance(value, dz.Variable) and not isinstance(value, dz.Parameter):
            extra = self.__dict__.setdefault('_fault_variables', [])
            if name not in extra:
                extra.append(name)

    def params(self):
        yield from original_params(self)
        for name in self.__dict__.get('_fault_variables', []):
            yield self.__dict__[name]
    Layer.__setattr__ = __setattr__
    Layer.params = params


@patch('cleargrads_noop')
def cleargrads_noop(dz):
    def cleargrads(self):
        pass
    dz.Layer.cleargrads = cleargrads


@patch('linear_bias_row')
def linear_bias_row(dz):
    Linear = dz.layers.Linear
    original = Linear.__init__

    def __init__(self, *args, **kwargs):
        original(self, *args, **kwargs)
        b = getattr(self, 'b', None)
        if b is not None and b.data is not None:
            b.data = b.data.reshape(1, -1)   # a (1, out) row: it broadcasts, but b is not (out,)
    Linear.__init__ = __init__


# -- step 45 --------------------------------------------------------------------------------------
@patch('nested_params_missing')
def nested_params_missing(dz):
    def params(self):
        for value in list(vars(self).values()):
            if isinstance(value, dz.Parameter):   # sub-layers are not searched
                yield value
    dz.Layer.params = params


@patch('mlp_activation_on_last')
def mlp_activation_on_last(dz):
    def forward(self, x):
        for layer in self.layers:
            x = self.activation(layer(x))  # also after the output layer
        return x
    dz.models.MLP.forward = forward


@patch('mlp_layers_not_registered')
def mlp_layers_not_registered(dz):
    original = dz.models.MLP.__init__

    def __init__(self, *args, **kwargs):
        original(self, *args, **kwargs)
        for i, layer in enumerate(self.layers):      # kept in the list only
            name = 'l' + str(i)
            if self.__dict__.get(name) is layer:
                object.__delattr__(self, name)
        registry = self.__dict__.get('_params')
        if registry is not None:
            for name in [n for n in registry if str(n).startswith('l') and str(n)[1:].isdigit()]:
                registry.remove(name)
    dz.models.MLP.__init__ = __init__
