"""Placeholder: being written."""
from dezero.layers import Layer
class Model(Layer): pass
