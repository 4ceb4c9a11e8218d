"""Faults of steps 53-54: saved parameters (keys, copies, devices, failures midway) and
train/test mode (dropout, `test_mode`).

Every patch replaces or wraps a public name of the book's API (`Layer.save_weights`,
`Layer.load_weights`, `Layer._flatten_params`, `functions.dropout`, `test_mode`) and imports
what it needs inside its body: its source is copied verbatim into single-fault variants.
"""
from dezero_grader.catalogue.faults import patch


# -- step 53: saving and loading -----------------------------------------------------------------
@patch('save_flatten_shallow')
def save_flatten_shallow(dz):
    # Only the layer's own Parameters: nested layers are never saved nor loaded.
    def _flatten_params(self, params_dict, parent_key=''):
        for name, value in vars(self).items():
            if isinstance(value, dz.Parameter):
                params_dict[parent_key + '/' + name if parent_key else name] = value
    dz.Layer._flatten_params = _flatten_params


@patch('save_key_format')
def save_key_format(dz):
    # Keys joined with '.', not the book's '/': files do not interoperate with the book's.
    def _flatten_params(self, params_dict, parent_key=''):
        for name, value in vars(self).items():
            key = parent_key + '.' + name if parent_key else name
            if isinstance(value, dz.Layer):
                value._flatten_params(params_dict, key)
            elif isinstance(value, dz.Parameter):
                params_dict[key] = value
    dz.Layer._flatten_params = _flatten_params


@patch('load_no_copy')
def load_no_copy(dz):
    # Arrays read once per file and assigned by reference (two models loaded from one file
    # share them); keys that are missing or do not fit are skipped without a word.
    import os

    import numpy as np

    def load_weights(self, path):
        if not os.path.exists(path) and os.path.exists(path + '.npz'):
            path += '.npz'
        store = dz.Layer.__dict__.get('_fault_loaded_files')
        if store is None:
            store = {}
            dz.Layer._fault_loaded_files = store
        key = os.path.abspath(path)
        if key not in store:
            with np.load(path) as npz:
                store[key] = {name: npz[name] for name in npz.files}
        arrays = store[key]
        params_dict = {}
        self._flatten_params(params_dict)
        for name, param in params_dict.items():
            array = arrays.get(name)
            if array is not None and (param.data is None or array.shape == param.data.shape):
                param.data = array
    dz.Layer.load_weights = load_weights


@patch('save_device_moved')
def save_device_moved(dz):
    # The book's save_weights: to_cpu() first, so a device model is left on the host.
    original = dz.Layer.save_weights

    def save_weights(self, path):
        self.to_cpu()
        return original(self, path)
    dz.Layer.save_weights = save_weights


@patch('load_device_stale')
def load_device_stale(dz):
    # The book's load_weights: host arrays go into the parameters, whatever the model's device.
    original = dz.Layer.load_weights

    def load_weights(self, path):
        original(self, path)
        for param in self.params():
            if param.data is not None:
                param.data = dz.cuda.as_numpy(param.data)
    dz.Layer.load_weights = load_weights


@patch('load_shape_unchecked')
def load_shape_unchecked(dz):
    # The book's load_weights: no shape check; a missing key raises KeyError only after the
    # parameters before it were overwritten.
    import os

    import numpy as np

    def load_weights(self, path):
        if not os.path.exists(path) and os.path.exists(path + '.npz'):
            path += '.npz'
        npz = np.load(path)
        params_dict = {}
        self._flatten_params(params_dict)
        for key, param in params_dict.items():
            param.data = npz[key]
    dz.Layer.load_weights = load_weights


@patch('save_partial_file')
def save_partial_file(dz):
    # Written straight to the path, no cleanup: a failure midway leaves a truncated archive.
    import numpy as np

    def save_weights(self, path):
        params_dict = {}
        self._flatten_params(params_dict)
        arrays = {key: dz.cuda.as_numpy(param.data) for key, param in params_dict.items()
                  if param.data is not None}
        np.savez_compressed(path, **arrays)
    dz.Layer.save_weights = save_weights


@patch('load_weights_missing')
def load_weights_missing(dz):
    del dz.Layer.load_weights


# -- step 54: dropout and test mode --------------------------------------------------------------
@patch('dropout_ignores_mode')
def dropout_ignores_mode(dz):
    def dropout(x, dropout_ratio=0.5):
        x = dz.as_variable(x)
        xp = dz.cuda.get_array_module(x)
        mask = xp.random.rand(*x.shape) > dropout_ratio
        scale = xp.array(1.0 - dropout_ratio).astype(x.dtype)
        return x * mask / scale
    dz.functions.dropout = dropout


@patch('dropout_no_rescale')
def dropout_no_rescale(dz):
    def dropout(x, dropout_ratio=0.5):
        x = dz.as_variable(x)
        if dz.Config.train:
            xp = dz.cuda.get_array_module(x)
            mask = xp.random.rand(*x.shape) > dropout_ratio
            return x * mask
        return x
    dz.functions.dropout = dropout


@patch('dropout_mask_resampled')
def dropout_mask_resampled(dz):
    class Dropout(dz.Function):
        def __init__(self, ratio):
            self.ratio = ratio

        def forward(self, x):
            xp = dz.cuda.get_array_module(x)
            mask = xp.random.rand(*x.shape) > self.ratio
            return (x * mask / (1.0 - self.ratio)).astype(x.dtype)

        def backward(self, gy):
            xp = dz.cuda.get_array_module(gy)
            mask = xp.random.rand(*gy.shape) > self.ratio   # a new mask, not the forward's
            return gy * mask / (1.0 - self.ratio)

    def dropout(x, dropout_ratio=0.5):
        if dz.Config.train:
            return Dropout(dropout_ratio)(x)
        return dz.as_variable(x)
    dz.functions.dropout = dropout


@patch('mode_not_restored')
def mode_not_restored(dz):
    # No try/finally: an exception inside the block leaves the framework in test mode.
    import contextlib

    @contextlib.contextmanager
    def test_mode():
        old = dz.Config.train
        dz.Config.train = False
        yield
        dz.Config.train = old
    dz.test_mode = test_mode
    dz.core.test_mode = test_mode


@patch('dropout_mask_host')
def dropout_mask_host(dz):
    # The mask is always drawn with NumPy, whatever the data's device.
    import numpy as np

    def dropout(x, dropout_ratio=0.5):
        x = dz.as_variable(x)
        if dz.Config.train:
            mask = np.random.rand(*x.shape) > dropout_ratio
            scale = np.array(1.0 - dropout_ratio).astype(x.dtype)
            return x * mask / scale
        return x
    dz.functions.dropout = dropout


@patch('no_test_mode')
def no_test_mode(dz):
    del dz.test_mode
