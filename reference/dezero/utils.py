"""Helpers of the framework: graph export (step 26), shape helpers for backward rules (39, 40),
`logsumexp` (47), convolution arithmetic (55, 57), the book's test helpers, and cached files.
"""
import os
import shutil
import subprocess
import urllib.request

import numpy as np

from dezero import as_variable
from dezero import Variable
from dezero import cuda


# =============================================================================
# Visualise the computational graph (DOT language)
# =============================================================================
def _dot_var(v, verbose=False):
    name = '' if v.name is None else v.name
    if verbose and v.data is not None:
        if v.name is not None:
            name += ': '
        name += str(v.shape) + ' ' + str(v.dtype)
    return '{} [label="{}", color=orange, style=filled]\n'.format(id(v), name)


def _dot_func(f):
    lines = ['{} [label="{}", color=lightblue, style=filled, shape=box]\n'.format(
        id(f), f.__class__.__name__)]
    for x in f.inputs:
        lines.append('{} -> {}\n'.format(id(x), id(f)))
    for y in f.outputs:
        lines.append('{} -> {}\n'.format(id(f), id(y())))
    return ''.join(lines)


def get_dot_graph(output, verbose=True):
    """The graph that produced `output`, as DOT text (`digraph g { ... }`)."""
    txt = ''
    funcs = []
    seen = set()

    def add_func(f):
        if f not in seen:
            funcs.append(f)
            seen.add(f)

    txt += _dot_var(output, verbose)
    if output.creator is not None:
        add_func(output.creator)
    while funcs:
        func = funcs.pop()
        txt += _dot_func(func)
        for x in func.inputs:
            txt += _dot_var(x, verbose)
            if x.creator is not None:
                add_func(x.creator)
    return 'digraph g {\n' + txt + '}'


def plot_dot_graph(output, verbose=True, to_file='graph.png'):
    """Write the graph as DOT to the cache folder and render it with Graphviz's `dot` when it
    exists. Returns the DOT text (rendering is skipped, with a message, without Graphviz)."""
    dot_graph = get_dot_graph(output, verbose)
    os.makedirs(cache_dir, exist_ok=True)
    graph_path = os.path.join(cache_dir, 'tmp_graph.dot')
    with open(graph_path, 'w') as f:
        f.write(dot_graph)

    dot = shutil.which('dot')
    if dot is None:
        print('Graphviz `dot` not found: wrote {} only'.format(graph_path))
        return dot_graph
    extension = os.path.splitext(to_file)[1][1:] or 'png'
    subprocess.run([dot, graph_path, '-T', extension, '-o', to_file], check=False)
    try:
        from IPython import display
        return display.Image(filename=to_file)
    except ImportError:
        return dot_graph


# =============================================================================
# Shape helpers of the backward rules
# =============================================================================
def sum_to(x, shape):
    """Sum `x` down to `shape` (the inverse of broadcasting)."""
    ndim = len(shape)
    lead = x.ndim - ndim
    lead_axis = tuple(range(lead))
    axis = tuple(i + lead for i, sx in enumerate(shape) if sx == 1)
    y = x.sum(lead_axis + axis, keepdims=True)
    if lead > 0:
        y = y.squeeze(lead_axis)
    return y


def reshape_sum_backward(gy, x_shape, axis, keepdims):
    """Reshape the gradient of a sum so that it broadcasts back to `x_shape`."""
    ndim = len(x_shape)
    tupled_axis = axis
    if axis is None:
        tupled_axis = None
    elif not isinstance(axis, tuple):
        tupled_axis = (axis,)

    if not (ndim == 0 or tupled_axis is None or keepdims):
        actual_axis = [a if a >= 0 else a + ndim for a in tupled_axis]
        shape = list(gy.shape)
        for a in sorted(actual_axis):
            shape.insert(a, 1)
    else:
        shape = gy.shape
    return gy.reshape(shape)


def logsumexp(x, axis=1):
    xp = cuda.get_array_module(x)
    m = x.max(axis=axis, keepdims=True)
    y = x - m
    xp.exp(y, out=y)
    s = y.sum(axis=axis, keepdims=True)
    xp.log(s, out=s)
    m += s
    return m


def max_backward_shape(x, axis):
    if axis is None:
        axis = range(x.ndim)
    elif isinstance(axis, int):
        axis = (axis,)
    axis = [a if a >= 0 else a + x.ndim for a in axis]
    return [s if ax not in axis else 1 for ax, s in enumerate(x.shape)]


# =============================================================================
# Gradient check (the book's learner tool; the grader has its own, stricter battery)
# =============================================================================
def gradient_check(f, x, *args, rtol=1e-4, atol=1e-5, **kwargs):
    x = as_variable(x)
    x.data = x.data.astype(np.float64)

    num_grad = numerical_grad(f, x, *args, **kwargs)
    y = f(x, *args, **kwargs)
    y.backward()
    bp_grad = x.grad.data

    assert bp_grad.shape == num_grad.shape
    res = array_allclose(num_grad, bp_grad, atol=atol, rtol=rtol)
    if not res:
        print('========== FAILED (Gradient Check) ==========')
        print('Numerical Grad\n shape: {}\n values: {} ...'.format(
            num_grad.shape, str(num_grad.flatten()[:10])))
        print('Backprop Grad\n shape: {}\n values: {} ...'.format(
            bp_grad.shape, str(bp_grad.flatten()[:10])))
    return res


def numerical_grad(f, x, *args, **kwargs):
    """Central differences of sum(f(x)) with eps = 1e-4, one element at a time."""
    eps = 1e-4
    x = x.data if isinstance(x, Variable) else x
    xp = cuda.get_array_module(x)
    np_x = cuda.as_numpy(x) if xp is not np else x
    grad = xp.zeros_like(x)

    for idx in np.ndindex(*np_x.shape):
        tmp_val = x[idx].copy()

        x[idx] = tmp_val + eps
        y1 = f(x, *args, **kwargs)
        if isinstance(y1, Variable):
            y1 = y1.data
        y1 = y1.copy()

        x[idx] = tmp_val - eps
        y2 = f(x, *args, **kwargs)
        if isinstance(y2, Variable):
            y2 = y2.data
        y2 = y2.copy()

        diff = (y1 - y2).sum()
        grad[idx] = diff / (2 * eps)
        x[idx] = tmp_val
    return grad


def array_equal(a, b):
    a = a.data if isinstance(a, Variable) else a
    b = b.data if isinstance(b, Variable) else b
    a, b = cuda.as_numpy(a), cuda.as_numpy(b)
    return np.array_equal(a, b)


def array_allclose(a, b, rtol=1e-4, atol=1e-5):
    a = a.data if isinstance(a, Variable) else a
    b = b.data if isinstance(b, Variable) else b
    a, b = cuda.as_numpy(a), cuda.as_numpy(b)
    return np.allclose(a, b, atol=atol, rtol=rtol)


# =============================================================================
# Cached files (MNIST, VGG16 weights): read from the cache; download only when absent
# =============================================================================
cache_dir = os.path.join(os.path.expanduser('~'), '.dezero')


def show_progress(block_num, block_size, total_size):
    bar_template = '\r[{}] {:.2f}%'
    downloaded = block_num * block_size
    p = downloaded / total_size * 100 if total_size > 0 else 100.0
    i = int(min(downloaded / total_size, 1.0) * 30) if total_size > 0 else 30
    print(bar_template.format('#' * i + '.' * (30 - i), min(p, 100.0)), end='')


def get_file(url, file_name=None):
    """Path of `url`'s file in the cache folder; downloads it only when it is not there yet.
    A failed download leaves no partial file behind."""
    if file_name is None:
        file_name = url[url.rfind('/') + 1:]
    file_path = os.path.join(cache_dir, file_name)
    os.makedirs(cache_dir, exist_ok=True)
    if os.path.exists(file_path):
        return file_path

    print('Downloading: ' + file_name)
    try:
        urllib.request.urlretrieve(url, file_path, show_progress)
    except (Exception, KeyboardInterrupt):
        if os.path.exists(file_path):
            os.remove(file_path)
        raise
    print(' Done')
    return file_path


# =============================================================================
# Convolution arithmetic
# =============================================================================
def get_conv_outsize(input_size, kernel_size, stride, pad):
    return (input_size + pad * 2 - kernel_size) // stride + 1


def get_deconv_outsize(size, k, s, p):
    return s * (size - 1) + k - 2 * p


def pair(x):
    if isinstance(x, int):
        return (x, x)
    elif isinstance(x, tuple):
        assert len(x) == 2
        return x
    else:
        raise ValueError('expected an int or a 2-tuple, got {!r}'.format(x))
