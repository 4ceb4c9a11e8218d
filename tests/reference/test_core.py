"""The core API of the reference DeZero at the granularity of the book's steps, on every device.

Operators and their scalar / ndarray operands (steps 20-23), the book's printed outputs of steps
20-28 and 37-42, the shape methods of Variable (38-40), the helpers `as_array` / `as_variable`,
the abstract `Function`, and the device helpers of `dezero.cuda` (step 52).
"""
import numpy as np
import pytest

import dezero
import dezero.functions as F
from dezero import Function, Parameter, Variable, as_array, as_variable, cuda


def var(device, data):
    return Variable(device.to_device(np.asarray(data, dtype=np.float64)))


def host(device, v):
    return device.to_host(v)


# -----------------------------------------------------------------------------
# Steps 20-23: operators
# -----------------------------------------------------------------------------
def test_step20_mul_add(device):
    a, b, c = var(device, 3.0), var(device, 2.0), var(device, 1.0)
    y = a * b + c
    y.backward()
    assert float(host(device, y)) == 7.0
    assert (float(host(device, a.grad)), float(host(device, b.grad))) == (2.0, 3.0)


def test_step21_scalar_and_ndarray_operands(device):
    x = var(device, 2.0)
    assert float(host(device, x + device.to_device(np.array(3.0)))) == 5.0
    assert float(host(device, x + 3.0)) == 5.0
    assert float(host(device, 3.0 * x + 1.0)) == 7.0
    assert float(host(device, x + np.float64(3.0))) == 5.0  # NumPy scalar operand
    assert float(host(device, x * 3)) == 6.0  # Python int operand


def test_step22_neg_sub_div_pow(device):
    x = var(device, 2.0)
    results = [-x, 2.0 - x, x - 1.0, 3.0 / x, x / 4.0, x ** 3]
    assert [float(host(device, r)) for r in results] == [-2.0, 0.0, 1.0, 1.5, 0.5, 8.0]


def test_step23_square_of_sum(device):
    x = var(device, 1.0)
    y = (x + 3) ** 2
    y.backward()
    assert float(host(device, y)) == 16.0 and float(host(device, x.grad)) == 8.0


def test_pow_has_no_variable_exponent_and_no_rpow(device):
    x = var(device, 2.0)
    with pytest.raises(TypeError):
        2.0 ** x


def test_operators_keep_the_device_of_the_variable(device):
    x = var(device, [1.0, 2.0])
    for y in (x + 1, 1 + x, x - 1, 1 - x, x * 2, 2 * x, x / 2, 2 / x, -x, x ** 2):
        assert device.is_on_device(y.data), 'result left the device: {}'.format(type(y.data))


def test_arithmetic_results_are_never_bare_scalars(device):
    """0-d results stay 0-d arrays (the book's test_datatype): `np.isscalar` is False."""
    x = var(device, 2.0)
    for y in (x ** 2, x + x, F.sum(var(device, [1.0, 2.0]))):
        assert isinstance(y, Variable) and not np.isscalar(y.data)


# -----------------------------------------------------------------------------
# Steps 24, 27, 28: functions written with operators only
# -----------------------------------------------------------------------------
def my_sin(x, threshold=1e-4):
    """sin by its Maclaurin series, summed until a term is below `threshold` (step 27)."""
    y, i, term_scale = 0, 0, 1.0
    while True:
        c = (-1) ** i / term_scale
        t = c * x ** (2 * i + 1)
        y = y + t
        if abs(float(np.asarray(cuda.as_numpy(t.data)))) < threshold:
            return y
        i += 1
        term_scale *= (2 * i) * (2 * i + 1)


def test_step27_taylor_sin(device):
    x = var(device, np.pi / 4)
    y = my_sin(x)
    y.backward()
    assert float(host(device, y)) == pytest.approx(0.7071064695751781, abs=1e-15)
    assert float(host(device, x.grad)) == pytest.approx(0.7071032148228457, abs=1e-15)


def test_step28_rosenbrock_gradient(device):
    x0, x1 = var(device, 0.0), var(device, 2.0)
    y = 100 * (x1 - x0 ** 2) ** 2 + (x0 - 1) ** 2
    y.backward()
    assert (float(host(device, x0.grad)), float(host(device, x1.grad))) == (-2.0, 400.0)


# -----------------------------------------------------------------------------
# Steps 37-42: tensors, shapes, sums, broadcasting, matmul, linear regression
# -----------------------------------------------------------------------------
def test_step37_int_data_gives_int_seed(device):
    x = Variable(device.to_device(np.array([[1, 2, 3], [4, 5, 6]])))
    c = Variable(device.to_device(np.array([[10, 20, 30], [40, 50, 60]])))
    y = F.sum(x + c)
    y.backward(retain_grad=True)
    assert y.grad.dtype.kind == 'i' and int(host(device, y.grad)) == 1
    np.testing.assert_array_equal(host(device, x.grad), np.ones((2, 3)))


def test_step38_reshape_forms_and_identity(device):
    x = var(device, np.arange(6.0).reshape(2, 3))
    assert x.reshape(6).shape == x.reshape((6,)).shape == (6,)
    assert x.reshape([3, 2]).shape == (3, 2)
    assert x.reshape(3, 2).shape == (3, 2)
    assert F.reshape(x, (2, 3)) is x


def test_step38_transpose_forms(device):
    data = np.arange(24.0).reshape(2, 3, 4)
    x = var(device, data)
    assert x.T.shape == x.transpose().shape == (4, 3, 2)
    assert x.transpose(None).shape == (4, 3, 2)
    assert x.transpose(1, 0, 2).shape == x.transpose((1, 0, 2)).shape == (3, 2, 4)
    np.testing.assert_array_equal(host(device, x.transpose([2, 0, 1])), data.transpose(2, 0, 1))


def test_step39_sum_outputs(device):
    x = var(device, [[1, 2, 3], [4, 5, 6]])
    y = F.sum(x)
    y.backward()
    assert float(host(device, y)) == 21.0
    np.testing.assert_array_equal(host(device, x.grad), np.ones((2, 3)))
    np.testing.assert_array_equal(host(device, F.sum(x, axis=0)), [5, 7, 9])
    assert F.sum(var(device, np.ones((2, 3, 4, 5))), keepdims=True).shape == (1, 1, 1, 1)
    assert x.sum(axis=1, keepdims=True).shape == (2, 1)


def test_step40_broadcast_add(device):
    x0 = var(device, [1, 2, 3])
    x1 = var(device, [10])
    y = x0 + x1
    y.backward()
    np.testing.assert_array_equal(host(device, y), [11, 12, 13])
    np.testing.assert_array_equal(host(device, x1.grad), [3])


def test_step40_bias_grad_has_the_bias_shape(device):
    x = var(device, np.random.RandomState(0).randn(1, 10))
    b = var(device, np.random.RandomState(1).randn(10))
    F.sum(x + b).backward()
    assert b.grad.shape == b.shape and x.grad.shape == x.shape


def test_step40_sum_to_and_broadcast_to_return_the_input_for_the_same_shape(device):
    x = var(device, np.ones((2, 3)))
    assert F.sum_to(x, (2, 3)) is x
    assert F.broadcast_to(x, (2, 3)) is x


def test_step41_matmul_grad_shapes(device):
    x = var(device, np.random.RandomState(0).randn(2, 3))
    W = var(device, np.random.RandomState(1).randn(3, 4))
    y = F.matmul(x, W)
    y.backward()
    assert (x.grad.shape, W.grad.shape) == ((2, 3), (3, 4))


def test_step42_linear_regression(device):
    """100 noisy points of y = 5 + 2x + noise, 100 steps of gradient descent (lr 0.1): the
    book prints W = 2.118, b = 5.466, loss = 0.0791 after the loop."""
    rng = np.random.RandomState(0)
    x_host = rng.rand(100, 1)
    y_host = 5 + 2 * x_host + rng.rand(100, 1)
    x, y = device.to_device(x_host), device.to_device(y_host)
    W = Variable(device.to_device(np.zeros((1, 1))))
    b = Variable(device.to_device(np.zeros(1)))
    for _ in range(100):
        loss = F.mean_squared_error(y, F.matmul(x, W) + b)
        W.cleargrad()
        b.cleargrad()
        loss.backward()
        W.data -= 0.1 * W.grad.data
        b.data -= 0.1 * b.grad.data
    assert host(device, W).item() == pytest.approx(2.118, abs=5e-4)
    assert host(device, b).item() == pytest.approx(5.466, abs=5e-4)
    assert float(host(device, loss)) == pytest.approx(0.0791, abs=5e-5)


def test_step47_accuracy(device):
    y = var(device, [[0.2, 0.8, 0.0], [0.1, 0.9, 0.0], [0.8, 0.1, 0.1]])
    t = device.to_device(np.array([1, 2, 0]))
    acc = F.accuracy(y, t)
    assert isinstance(acc, Variable)
    assert float(host(device, acc)) == pytest.approx(2 / 3)


# -----------------------------------------------------------------------------
# Helpers and the abstract Function
# -----------------------------------------------------------------------------
def test_as_array_wraps_scalars_on_the_requested_module(device):
    a = as_array(2.0, device.xp)
    assert device.is_on_device(a) and a.shape == ()
    assert isinstance(as_array(3), np.ndarray)
    arr = device.to_device(np.ones(2))
    assert as_array(arr, device.xp) is arr


def test_as_variable(device):
    x = var(device, 1.0)
    assert as_variable(x) is x
    arr = device.to_device(np.ones(2))
    v = as_variable(arr)
    assert isinstance(v, Variable) and v.data is arr


def test_functions_accept_plain_arrays(device):
    y = F.sin(device.to_device(np.array([0.0, np.pi / 2])))
    assert isinstance(y, Variable)
    np.testing.assert_allclose(host(device, y), [0.0, 1.0])


def test_parameter_is_a_variable(device):
    p = Parameter(device.to_device(np.ones(3)), name='W')
    assert isinstance(p, Variable) and p.name == 'W'
    assert not isinstance(var(device, 1.0), Parameter)


def test_function_forward_and_backward_are_abstract():
    with pytest.raises(NotImplementedError):
        Function()(Variable(np.array(1.0)))
    with pytest.raises(NotImplementedError):
        Function().backward(Variable(np.array(1.0)))


def test_backward_of_a_leaf_seeds_ones(device):
    x = var(device, [1.0, 2.0])
    x.backward()
    np.testing.assert_array_equal(host(device, x.grad), [1.0, 1.0])


def test_multi_output_function(device):
    class Swap(Function):
        def forward(self, a, b):
            return b, a

        def backward(self, ga, gb):
            return gb, ga

    a, b = var(device, 1.0), var(device, 2.0)
    p, q = Swap()(a, b)
    y = p * 3 + q * 5
    y.backward()
    assert (float(host(device, p)), float(host(device, q))) == (2.0, 1.0)
    assert (float(host(device, a.grad)), float(host(device, b.grad))) == (5.0, 3.0)


def test_config_defaults():
    assert dezero.Config.enable_backprop is True and dezero.Config.train is True


# -----------------------------------------------------------------------------
# Step 52: the device helpers
# -----------------------------------------------------------------------------
def test_get_array_module(device):
    arr = device.to_device(np.ones(2))
    assert cuda.get_array_module(arr) is device.xp
    assert cuda.get_array_module(Variable(arr)) is device.xp
    assert cuda.get_array_module(np.ones(2)) is np


def test_as_numpy_and_as_cupy_round_trip(device):
    if device.name == 'cpu':
        assert cuda.as_numpy(np.ones(2)).shape == (2,)
        assert isinstance(cuda.as_numpy(3.0), np.ndarray)
        pytest.skip('as_cupy needs a device')
    assert cuda.gpu_enable is True
    on = cuda.as_cupy(np.arange(3.0))
    assert device.is_on_device(on)
    back = cuda.as_numpy(on)
    assert isinstance(back, np.ndarray)
    np.testing.assert_array_equal(back, [0.0, 1.0, 2.0])
    assert isinstance(cuda.as_numpy(Variable(on)), np.ndarray)


def test_variable_to_gpu_and_back_moves_data_and_grad(device):
    if device.name == 'cpu':
        pytest.skip('moving to a device needs a device')
    x = Variable(np.array([1.0, 2.0]))
    y = x * x
    y.backward()
    x.to_gpu()
    assert device.is_on_device(x.data) and device.is_on_device(x.grad.data)
    z = F.sum(x * 3)
    assert device.is_on_device(z.data)
    x.to_cpu()
    assert isinstance(x.data, np.ndarray) and isinstance(x.grad.data, np.ndarray)
    np.testing.assert_array_equal(x.grad.data, [2.0, 4.0])


def test_variable_accepts_device_arrays_only_when_a_device_is_enabled(device):
    arr = device.to_device(np.ones(2))
    assert Variable(arr).data is arr
    assert isinstance(arr, cuda.array_types)
