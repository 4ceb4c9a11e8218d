"""Higher-order derivatives of the reference DeZero (steps 32-36), on every device.

Closed forms rather than finite differences: the n-th derivative of sin is sin(x + n pi/2), those
of tanh are polynomials in t = tanh(x); Newton's method with an automatic second derivative
reproduces the book's printed iterates; double backprop gives the book's 100. Also: what
`create_graph` leaves behind, and that the simple core (steps 23-31) gives ndarray grads with the
same first derivatives. (The numerical second-order check of every function is in
test_functions_grad.py.)
"""
import numpy as np
import pytest

import dezero
import dezero.core_simple as simple
import dezero.functions as F
from dezero import Function, Variable

POINTS = np.array([-2.0, -0.5, 0.0, 1.0, 2.5])


def nth_grad(f, x, n):
    """d^n f / dx^n at x (element-wise f), by repeated backward with create_graph=True."""
    y = f(x)
    y.backward(create_graph=True)
    for _ in range(n - 1):
        gx = x.grad
        x.cleargrad()
        gx.backward(create_graph=True)
    return x.grad


@pytest.mark.parametrize('n', [1, 2, 3, 4])
def test_nth_derivative_of_sin_is_a_shifted_sin(device, n):
    x = Variable(device.to_device(POINTS.copy()))
    found = device.to_host(nth_grad(F.sin, x, n))
    np.testing.assert_allclose(found, np.sin(POINTS + n * np.pi / 2), rtol=1e-12, atol=1e-15)


def test_derivatives_of_sin_at_1_match_the_book(device):
    book = {2: -0.8414709848078965, 3: -0.5403023058681398, 4: 0.8414709848078965}
    for n, value in book.items():
        x = Variable(device.to_device(np.array(1.0)))
        assert float(device.to_host(nth_grad(F.sin, x, n))) == pytest.approx(value, abs=1e-15)


def test_second_and_third_derivatives_of_tanh(device):
    t = np.tanh(POINTS)
    closed = {2: -2 * t * (1 - t ** 2), 3: (1 - t ** 2) * (6 * t ** 2 - 2)}
    for n, expected in closed.items():
        x = Variable(device.to_device(POINTS.copy()))
        found = device.to_host(nth_grad(F.tanh, x, n))
        np.testing.assert_allclose(found, expected, rtol=1e-12, atol=1e-15,
                                   err_msg='derivative {} of tanh'.format(n))


def test_second_derivative_of_tanh_at_1_matches_the_book(device):
    x = Variable(device.to_device(np.array(1.0)))
    assert float(device.to_host(nth_grad(F.tanh, x, 2))) == pytest.approx(
        -0.6397000084492246, abs=1e-15)


def test_newton_method_with_automatic_second_derivative(device):
    """f(x) = x^4 - 2x^2 from 2.0: x <- x - f'(x) / f''(x), both derivatives by backprop."""
    book = [2.0, 1.4545454545454546, 1.1510467893775467, 1.0253259289766978,
            1.0009084519430513, 1.0000012353089454, 1.000000000002289, 1.0, 1.0, 1.0]
    x = Variable(device.to_device(np.array(2.0)))
    iterates = []
    for _ in range(len(book)):
        iterates.append(float(device.to_host(x)))
        y = x ** 4 - 2 * x ** 2
        x.cleargrad()
        y.backward(create_graph=True)
        gx = x.grad
        if not iterates[1:]:
            assert float(device.to_host(gx)) == 24.0
        x.cleargrad()
        gx.backward()
        gx2 = x.grad
        if not iterates[1:]:
            assert float(device.to_host(gx2)) == 44.0
        x.data -= gx.data / gx2.data  # in place: keeps a 0-d array on its device
    np.testing.assert_allclose(iterates, book, rtol=1e-14, atol=0)  # a few ulps: libm pow


def test_newton_iterates_without_cleargrad_differ(device):
    """The book's pitfall: without `x.cleargrad()` between the two passes the second
    derivative is added to the first, so the first step is not the book's."""
    x = Variable(device.to_device(np.array(2.0)))
    y = x ** 4 - 2 * x ** 2
    y.backward(create_graph=True)
    gx = x.grad
    gx.backward()
    assert float(device.to_host(x.grad)) == 24.0 + 44.0


def test_double_backprop(device):
    """y = x^2, gx = dy/dx, z = gx^3 + y: dz/dx = 24x^2 + 2x = 100 at x = 2."""
    x = Variable(device.to_device(np.array(2.0)))
    y = x ** 2
    y.backward(create_graph=True)
    gx = x.grad
    x.cleargrad()
    z = gx ** 3 + y
    z.backward()
    assert float(device.to_host(x.grad)) == 100.0


def test_create_graph_false_leaves_a_detached_grad(device):
    x = Variable(device.to_device(np.array(3.0)))
    y = F.sin(x) * x ** 2
    y.backward()
    assert isinstance(x.grad, Variable)
    assert x.grad.creator is None
    assert device.is_on_device(x.grad.data)


def test_create_graph_true_records_the_gradient_computation(device):
    x = Variable(device.to_device(np.array(3.0)))
    y = x ** 2
    y.backward(create_graph=True)
    assert isinstance(x.grad.creator, Function)
    # and the flag is back: the forward after backward records a graph as usual
    assert dezero.Config.enable_backprop is True
    assert (x * 2).creator is not None


def test_backward_without_create_graph_builds_no_graph_inside(device):
    """With create_graph=False the gradient Variables have no creator even for a nonlinear f,
    so a second backward through them is impossible (and x.grad stays a plain value)."""
    x = Variable(device.to_device(np.array(0.5)))
    y = F.tanh(F.exp(x))
    y.backward()
    assert x.grad.creator is None
    x.cleargrad()
    y = F.tanh(F.exp(x))
    y.backward(create_graph=True)
    assert x.grad.creator is not None


def _simple_variable(value):
    """A one-element 1-d simple-core Variable: NumPy turns 0-d results into NumPy scalars, so
    only a 1-d input makes every grad of the simple core an ndarray."""
    simple.setup_variable()  # idempotent: installs the operators on the simple Variable
    return simple.Variable(np.array([value]))


def _sphere(x, y):
    return x ** 2 + y ** 2


def _matyas(x, y):
    return 0.26 * (x ** 2 + y ** 2) - 0.48 * x * y


def _goldstein(x, y):
    return ((1 + (x + y + 1) ** 2 * (19 - 14 * x + 3 * x ** 2 - 14 * y + 6 * x * y + 3 * y ** 2))
            * (30 + (2 * x - 3 * y) ** 2
               * (18 - 32 * x + 12 * x ** 2 + 48 * y - 36 * x * y + 27 * y ** 2)))


@pytest.mark.parametrize('f, book', [
    (_sphere, (2.0, 2.0)),
    (_matyas, (0.040000000000000036, 0.040000000000000036)),
    (_goldstein, (-5376.0, 8064.0)),
], ids=['sphere', 'matyas', 'goldstein'])
def test_simple_core_grads_are_ndarrays_equal_to_the_full_core(f, book):
    x, y = _simple_variable(1.0), _simple_variable(1.0)
    z = f(x, y)
    z.backward()
    assert type(x.grad) is np.ndarray and type(y.grad) is np.ndarray

    fx, fy = Variable(np.array([1.0])), Variable(np.array([1.0]))
    fz = f(fx, fy)
    fz.backward()
    assert isinstance(fx.grad, Variable)
    assert (x.grad.item(), y.grad.item()) == (fx.grad.data.item(), fy.grad.data.item()) == book


def test_simple_core_backward_has_no_create_graph():
    x = _simple_variable(2.0)
    y = x ** 3
    with pytest.raises(TypeError):
        y.backward(create_graph=True)
    y.backward()
    assert type(x.grad) is np.ndarray and x.grad.item() == 12.0
