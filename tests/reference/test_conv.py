"""The convolution functions of the reference DeZero (step 57): im2col/col2im, conv2d, deconv2d,
max and average pooling.

Every forward is compared with a naive loop written here (one output element at a time, nothing
shared with the code under test); every backward with central differences in float64 under a
RANDOM upstream gradient (a backward that ignored gy would fail); the weight gradient is
differentiated once more (double backprop, broken in the book's code). The portable array path
that device modules run is checked against the host's fast path, and on the simulated device
when it is installed. Shapes are small: the suite runs in seconds.
"""
import itertools

import numpy as np
import pytest

import dezero.functions as F
import dezero.functions_conv as C
from dezero import Variable


# =============================================================================
# Naive oracles: one output element at a time
# =============================================================================
def _pair(v):
    return (v, v) if isinstance(v, int) else tuple(v)


def _out(size, k, s, p):
    return (size + 2 * p - k) // s + 1


def naive_im2col(x, k, s, p):
    """The matrix layout: rows (n, oh, ow), columns (c, kh, kw)."""
    (KH, KW), (SH, SW), (PH, PW) = _pair(k), _pair(s), _pair(p)
    N, Cn, H, W = x.shape
    OH, OW = _out(H, KH, SH, PH), _out(W, KW, SW, PW)
    xp = np.pad(x, ((0, 0), (0, 0), (PH, PH), (PW, PW)))
    rows = []
    for n in range(N):
        for oh in range(OH):
            for ow in range(OW):
                rows.append([xp[n, c, oh * SH + kh, ow * SW + kw]
                             for c in range(Cn) for kh in range(KH) for kw in range(KW)])
    return np.array(rows)


def naive_conv2d(x, W, b, s, p):
    (SH, SW), (PH, PW) = _pair(s), _pair(p)
    N, Cn, H, Wd = x.shape
    OC, _, KH, KW = W.shape
    OH, OW = _out(H, KH, SH, PH), _out(Wd, KW, SW, PW)
    xp = np.pad(x, ((0, 0), (0, 0), (PH, PH), (PW, PW)))
    y = np.zeros((N, OC, OH, OW))
    for n, oc, oh, ow in itertools.product(range(N), range(OC), range(OH), range(OW)):
        patch = xp[n, :, oh * SH:oh * SH + KH, ow * SW:ow * SW + KW]
        y[n, oc, oh, ow] = np.sum(patch * W[oc]) + (0.0 if b is None else b[oc])
    return y


def naive_deconv2d(x, W, b, s, p, outsize=None):
    """Scatter every input pixel times the kernel (the adjoint of the convolution)."""
    (SH, SW), (PH, PW) = _pair(s), _pair(p)
    N, Cn, H, Wd = x.shape
    _, OC, KH, KW = W.shape
    if outsize is None:
        out_h, out_w = SH * (H - 1) + KH - 2 * PH, SW * (Wd - 1) + KW - 2 * PW
    else:
        out_h, out_w = outsize
    full = np.zeros((N, OC, max(out_h + 2 * PH, SH * (H - 1) + KH),
                     max(out_w + 2 * PW, SW * (Wd - 1) + KW)))
    for n, c, h, w in itertools.product(range(N), range(Cn), range(H), range(Wd)):
        full[n, :, h * SH:h * SH + KH, w * SW:w * SW + KW] += x[n, c, h, w] * W[c]
    y = full[:, :, PH:PH + out_h, PW:PW + out_w]
    if b is not None:
        y = y + b.reshape(1, -1, 1, 1)
    return y


def naive_pool(x, k, s, p, reduce):
    """Max or mean over each window of the ZERO-padded input (the book's convention)."""
    (KH, KW), (SH, SW), (PH, PW) = _pair(k), _pair(s), _pair(p)
    N, Cn, H, W = x.shape
    OH, OW = _out(H, KH, SH, PH), _out(W, KW, SW, PW)
    xp = np.pad(x, ((0, 0), (0, 0), (PH, PH), (PW, PW)))
    y = np.zeros((N, Cn, OH, OW))
    for n, c, oh, ow in itertools.product(range(N), range(Cn), range(OH), range(OW)):
        y[n, c, oh, ow] = reduce(xp[n, c, oh * SH:oh * SH + KH, ow * SW:ow * SW + KW])
    return y


# =============================================================================
# Gradient checks: central differences with a random upstream gradient
# =============================================================================
H_STEP = 1e-6
ATOL, RTOL = 1e-7, 1e-6  # measured errors are ~1e-9: two orders of margin


def numeric_grads(f, arrays, gy):
    """d<gy, f(*arrays)>/d(array) for each array, by central differences."""
    grads = []
    for a in arrays:
        g = np.zeros_like(a)
        for idx in np.ndindex(*a.shape):
            orig = a[idx]
            a[idx] = orig + H_STEP
            plus = np.sum(f(*arrays) * gy)
            a[idx] = orig - H_STEP
            minus = np.sum(f(*arrays) * gy)
            a[idx] = orig
            g[idx] = (plus - minus) / (2 * H_STEP)
        grads.append(g)
    return grads


def backprop_grads(fn, arrays, gy):
    """Gradients of fn(*Variables) under the upstream gradient gy."""
    xs = [Variable(a.copy()) for a in arrays]
    y = fn(*xs)
    y.grad = Variable(gy.copy())
    y.backward()
    return [x.grad.data for x in xs]


def assert_grads_match(fn, arrays, seed=0):
    rng = np.random.RandomState(seed)
    y = fn(*[Variable(a) for a in arrays]).data
    gy = rng.uniform(-1, 1, size=y.shape)
    expected = numeric_grads(lambda *a: fn(*a).data, [a.copy() for a in arrays], gy)
    actual = backprop_grads(fn, arrays, gy)
    for i, (got, want) in enumerate(zip(actual, expected)):
        assert got.shape == want.shape, 'input {}: gradient shape {} != input shape {}'.format(
            i, got.shape, want.shape)
        np.testing.assert_allclose(got, want, atol=ATOL, rtol=RTOL,
                                   err_msg='gradient of input {}'.format(i))


def distinct(shape, seed, low=0.1, high=1.0):
    """Values whose magnitudes are distinct and at least `low` (random signs): no ties, no
    zeros, so max pooling is differentiable at every input."""
    rng = np.random.RandomState(seed)
    n = int(np.prod(shape))
    values = np.linspace(low, high, n)
    rng.shuffle(values)
    return (values * rng.choice([-1.0, 1.0], size=n)).reshape(shape)


def rand(shape, seed):
    return np.random.RandomState(seed).uniform(-1, 1, size=shape)


# =============================================================================
# im2col / col2im
# =============================================================================
def test_im2col_official_fixture():
    x = np.arange(9, dtype=np.float64).reshape(1, 1, 3, 3)
    y = F.im2col(x, 3, 3, 0, to_matrix=True)
    np.testing.assert_array_equal(y.data, [[0, 1, 2, 3, 4, 5, 6, 7, 8]])


def test_im2col_col2im_shapes_in_both_layouts():
    x = rand((2, 3, 7, 7), 0)
    matrix = F.im2col(x, 3, 2, 1, to_matrix=True)
    six_d = F.im2col(x, 3, 2, 1, to_matrix=False)
    assert matrix.shape == (2 * 4 * 4, 3 * 3 * 3) == (32, 27)
    assert six_d.shape == (2, 3, 3, 3, 4, 4)
    assert F.col2im(matrix, x.shape, 3, 2, 1, to_matrix=True).shape == x.shape
    assert F.col2im(six_d, x.shape, 3, 2, 1, to_matrix=False).shape == x.shape


@pytest.mark.parametrize('k,s,p', [(3, 2, 1), ((2, 3), (1, 2), (1, 0)), (1, 1, 0), (3, 3, 0)])
def test_im2col_values_match_naive_layout(k, s, p):
    x = rand((2, 3, 5, 6), 1)
    np.testing.assert_array_equal(F.im2col(x, k, s, p).data, naive_im2col(x, k, s, p))
    # the 6-D layout holds the same numbers: [n, c, kh, kw, oh, ow]
    six_d = F.im2col(x, k, s, p, to_matrix=False).data
    N, Cn, KH, KW, OH, OW = six_d.shape
    np.testing.assert_array_equal(six_d.transpose(0, 4, 5, 1, 2, 3).reshape(N * OH * OW, -1),
                                  naive_im2col(x, k, s, p))


def test_im2col_returns_a_fresh_array():
    # 1x1 kernel, stride 1, no pad: the windows are the image itself, yet no memory is shared
    x = rand((1, 2, 3, 3), 2)
    col = C.im2col_array(x, 1, 1, 0, to_matrix=False)
    col[...] = 0
    assert np.all(x != 0)


ADJOINT_GRID = [(k, s, p) for k in (1, 2, 3, (3, 2)) for s in (1, 2, 3, (2, 1))
                for p in (0, 1, (0, 2))]


@pytest.mark.parametrize('to_matrix', [True, False])
@pytest.mark.parametrize('k,s,p', ADJOINT_GRID)
def test_col2im_is_the_adjoint_of_im2col(k, s, p, to_matrix):
    x = rand((2, 2, 6, 5), 3)
    col = C.im2col_array(x, k, s, p, to_matrix=to_matrix)
    c = rand(col.shape, 4)
    lhs = np.sum(col * c)
    rhs = np.sum(x * C.col2im_array(c, x.shape, k, s, p, to_matrix=to_matrix))
    assert lhs == pytest.approx(rhs, rel=1e-12, abs=1e-12)


def test_col2im_of_im2col_counts_coverage():
    # 3x3 windows, stride 1, no pad on a 4x4 image: the centre pixels are in 4 windows
    x = np.ones((1, 1, 4, 4))
    y = C.col2im_array(C.im2col_array(x, 3, 1, 0), x.shape, 3, 1, 0)
    np.testing.assert_array_equal(y[0, 0], [[1, 2, 2, 1], [2, 4, 4, 2], [2, 4, 4, 2], [1, 2, 2, 1]])


def test_col2im_rejects_columns_of_the_wrong_shape():
    with pytest.raises(ValueError, match=r'\(32, 27\)'):
        C.col2im_array(np.zeros((31, 27)), (2, 3, 7, 7), 3, 2, 1, to_matrix=True)
    with pytest.raises(ValueError, match='6-D'):
        C.col2im_array(np.zeros((2, 3, 3, 3, 4, 5)), (2, 3, 7, 7), 3, 2, 1, to_matrix=False)


def test_a_kernel_larger_than_the_padded_image_is_refused():
    with pytest.raises(ValueError, match='does not fit'):
        F.im2col(np.zeros((1, 1, 3, 3)), 5, 1, 0)


@pytest.mark.parametrize('to_matrix', [True, False])
def test_im2col_and_col2im_gradients(to_matrix):
    shape, k, s, p = (1, 2, 5, 4), (3, 2), (2, 1), 1
    x = rand(shape, 5)
    assert_grads_match(lambda v: F.im2col(v, k, s, p, to_matrix), [x])
    col_shape = C.im2col_array(x, k, s, p, to_matrix).shape
    assert_grads_match(lambda v: F.col2im(v, shape, k, s, p, to_matrix), [rand(col_shape, 6)])


def test_the_portable_path_matches_the_host_fast_path():
    # device modules build the columns offset by offset; NumPy copies one strided view
    x = rand((2, 3, 7, 6), 7)
    for k, s, p in [(3, 1, 1), ((2, 3), (2, 1), (0, 1)), (1, 2, 0)]:
        for axes in [(0, 1, 2, 3, 4, 5), (1, 2, 3, 0, 4, 5)]:
            fast = C._columns(x, k, s, p, axes)
            portable = C._columns_by_offset(x, k, s, p, axes)
            np.testing.assert_array_equal(fast, portable)
            assert portable.flags.c_contiguous


# =============================================================================
# conv2d / deconv2d
# =============================================================================
CONV_CASES = [
    # (x shape, W shape, stride, pad)
    pytest.param((2, 3, 6, 5), (4, 3, 3, 3), 1, 0, id='3x3-s1-p0'),
    pytest.param((2, 3, 6, 5), (4, 3, 3, 3), 1, 1, id='3x3-s1-p1'),
    pytest.param((2, 3, 7, 7), (4, 3, 3, 3), 2, 1, id='3x3-s2-p1'),
    pytest.param((2, 3, 7, 7), (4, 3, 3, 3), 2, 0, id='3x3-s2-p0'),
    pytest.param((1, 2, 8, 6), (3, 2, 5, 3), 1, 1, id='5x3-s1-p1'),
    pytest.param((1, 2, 8, 7), (3, 2, 5, 3), 2, 0, id='5x3-s2-p0'),
    pytest.param((1, 2, 7, 8), (3, 2, 3, 2), (2, 1), (1, 0), id='3x2-s(2,1)-p(1,0)'),
]
# the gradient checks take a subset: every stride and pad form, both kernel shapes
CONV_GRAD_CASES = [case for case in CONV_CASES
                   if case.id in ('3x3-s1-p1', '3x3-s2-p1', '5x3-s1-p1', '3x2-s(2,1)-p(1,0)')]


@pytest.mark.parametrize('with_bias', [True, False])
@pytest.mark.parametrize('x_shape,W_shape,s,p', CONV_CASES)
def test_conv2d_matches_naive_loop(x_shape, W_shape, s, p, with_bias):
    x, W = rand(x_shape, 10), rand(W_shape, 11)
    b = rand(W_shape[:1], 12) if with_bias else None
    y = F.conv2d(x, W, b, stride=s, pad=p)
    expected = naive_conv2d(x, W, b, s, p)
    assert y.shape == expected.shape
    np.testing.assert_allclose(y.data, expected, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(F.conv2d_simple(x, W, b, stride=s, pad=p).data, expected,
                               rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize('x_shape,W_shape,s,p', CONV_GRAD_CASES)
def test_conv2d_gradients(x_shape, W_shape, s, p):
    x, W, b = rand(x_shape, 13), rand(W_shape, 14), rand(W_shape[:1], 15)
    assert_grads_match(lambda x, W, b: F.conv2d(x, W, b, stride=s, pad=p), [x, W, b])
    assert_grads_match(lambda x, W: F.conv2d(x, W, None, stride=s, pad=p), [x, W])


def test_conv2d_without_bias_leaves_no_bias_gradient():
    x, W = Variable(rand((1, 2, 4, 4), 16)), Variable(rand((3, 2, 3, 3), 17))
    y = F.conv2d(x, W)
    y.backward()
    assert x.grad.shape == x.shape and W.grad.shape == W.shape


def test_conv2d_simple_gradients_match_conv2d():
    x, W, b = rand((1, 2, 5, 5), 18), rand((3, 2, 3, 3), 19), rand((3,), 20)
    gy = rand((1, 3, 3, 3), 21)
    simple = backprop_grads(lambda x, W, b: F.conv2d_simple(x, W, b, 2, 1), [x, W, b], gy)
    fast = backprop_grads(lambda x, W, b: F.conv2d(x, W, b, 2, 1), [x, W, b], gy)
    for a, e in zip(simple, fast):
        np.testing.assert_allclose(a, e, rtol=1e-12, atol=1e-12)


DECONV_CASES = [
    # (x shape, W shape (C_in, C_out, KH, KW), stride, pad, outsize)
    ((2, 3, 4, 3), (3, 2, 3, 3), 1, 0, None),
    ((2, 3, 4, 3), (3, 2, 3, 3), 2, 1, None),
    ((1, 2, 3, 4), (2, 3, 5, 3), (2, 1), (1, 0), None),
    ((1, 2, 4, 4), (2, 3, 3, 3), 2, 1, (8, 8)),  # outsize one larger than the default 7
]


@pytest.mark.parametrize('x_shape,W_shape,s,p,outsize', DECONV_CASES)
def test_deconv2d_matches_naive_scatter(x_shape, W_shape, s, p, outsize):
    x, W, b = rand(x_shape, 22), rand(W_shape, 23), rand(W_shape[1:2], 24)
    y = F.deconv2d(x, W, b, stride=s, pad=p, outsize=outsize)
    expected = naive_deconv2d(x, W, b, s, p, outsize)
    assert y.shape == expected.shape
    np.testing.assert_allclose(y.data, expected, rtol=1e-12, atol=1e-12)


def test_deconv2d_default_output_size():
    y = F.deconv2d(np.zeros((1, 2, 4, 5)), np.zeros((2, 3, 3, 2)), stride=2, pad=1)
    assert y.shape == (1, 3, 2 * 3 + 3 - 2, 2 * 4 + 2 - 2)  # stride*(in-1) + k - 2*pad


def test_deconv2d_refuses_an_outsize_its_input_cannot_come_from():
    with pytest.raises(ValueError, match='outsize'):
        F.deconv2d(np.zeros((1, 2, 4, 4)), np.zeros((2, 3, 3, 3)), stride=2, pad=1,
                   outsize=(9, 7))  # 7 and 8 fit (stride 2 floors); 9 does not


def test_deconv2d_is_the_adjoint_of_conv2d():
    x, W = rand((2, 3, 7, 6), 25), rand((4, 3, 3, 2), 26)
    y = F.conv2d(x, W, stride=2, pad=1)
    u = rand(y.shape, 27)
    lhs = np.sum(y.data * u)
    rhs = np.sum(x * F.deconv2d(u, W, stride=2, pad=1, outsize=x.shape[2:]).data)
    assert lhs == pytest.approx(rhs, rel=1e-12)


@pytest.mark.parametrize('x_shape,W_shape,s,p,outsize', DECONV_CASES)
def test_deconv2d_gradients(x_shape, W_shape, s, p, outsize):
    x, W, b = rand(x_shape, 28), rand(W_shape, 29), rand(W_shape[1:2], 30)
    assert_grads_match(lambda x, W, b: F.deconv2d(x, W, b, s, p, outsize), [x, W, b])


@pytest.mark.parametrize('s,p', [(1, 1), (2, 0), ((2, 1), (0, 1))])
def test_double_backprop_through_the_weight_gradient(s, p):
    """z = sum(gW**2), where gW is the weight gradient of sum(y**2)/2, y = conv2d(x, W, b):
    dz/dx and dz/dW by backprop through gW (the book's code raises here) against central
    differences of the first-order gradient."""
    x0, W0, b0 = rand((1, 2, 5, 4), 31), rand((3, 2, 3, 2), 32), rand((3,), 33)

    def weight_grad(x, W):
        xv, Wv = Variable(x), Variable(W)
        y = F.conv2d(xv, Wv, Variable(b0), stride=s, pad=p)
        loss = F.sum(y * y) / 2
        loss.backward()
        return Wv.grad.data

    def z_of(x, W):
        return np.array(np.sum(weight_grad(x, W) ** 2))

    xv, Wv = Variable(x0.copy()), Variable(W0.copy())
    y = F.conv2d(xv, Wv, Variable(b0), stride=s, pad=p)
    loss = F.sum(y * y) / 2
    loss.backward(create_graph=True)
    gW = Wv.grad
    xv.cleargrad()
    Wv.cleargrad()
    z = F.sum(gW ** 2)
    z.backward()

    want_x, want_W = numeric_grads(z_of, [x0.copy(), W0.copy()], np.array(1.0))
    np.testing.assert_allclose(xv.grad.data, want_x, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(Wv.grad.data, want_W, rtol=1e-5, atol=1e-6)


def test_double_backprop_through_the_deconv2d_weight_gradient():
    x0, W0 = rand((1, 2, 3, 3), 34), rand((2, 3, 3, 3), 35)
    gy = rand((1, 3, 7, 7), 36)

    def z_of(x):
        xv, Wv = Variable(x), Variable(W0)
        y = F.deconv2d(xv, Wv, stride=2, pad=0)
        y.grad = Variable(gy)
        y.backward()
        return np.array(np.sum(Wv.grad.data ** 2))

    xv, Wv = Variable(x0.copy()), Variable(W0.copy())
    y = F.deconv2d(xv, Wv, stride=2, pad=0)
    y.grad = Variable(gy)
    y.backward(create_graph=True)
    gW = Wv.grad
    xv.cleargrad()
    F.sum(gW ** 2).backward()
    want, = numeric_grads(z_of, [x0.copy()], np.array(1.0))
    np.testing.assert_allclose(xv.grad.data, want, rtol=1e-5, atol=1e-6)


# =============================================================================
# pooling / average_pooling
# =============================================================================
POOL_CASES = [
    # (x shape, kernel, stride, pad)
    ((2, 3, 6, 6), 2, 2, 0),
    ((1, 2, 4, 6), 2, 1, 0),           # the book's default stride is 1
    ((1, 2, 5, 5), 3, 2, 1),
    ((1, 2, 5, 7), (2, 3), (1, 2), (1, 1)),
    ((1, 1, 6, 6), 3, 3, 0),
]


@pytest.mark.parametrize('x_shape,k,s,p', POOL_CASES)
def test_pooling_matches_naive_max(x_shape, k, s, p):
    x = distinct(x_shape, 40)
    y = F.pooling(x, k, s, p)
    expected = naive_pool(x, k, s, p, np.max)
    assert y.shape == expected.shape
    np.testing.assert_array_equal(y.data, expected)
    np.testing.assert_array_equal(F.pooling_simple(x, k, s, p).data, expected)


def test_pooling_padding_zeros_take_part_in_the_max():
    x = -np.ones((1, 1, 2, 2)) - rand((1, 1, 2, 2), 41) ** 2  # all negative
    y = F.pooling(x, 2, 1, 1)
    assert y.shape == (1, 1, 3, 3)
    # every window but the centre one meets a padding zero, which beats the negative inputs
    expected = np.zeros((1, 1, 3, 3))
    expected[0, 0, 1, 1] = x.max()
    np.testing.assert_array_equal(y.data, expected)
    np.testing.assert_array_equal(y.data, naive_pool(x, 2, 1, 1, np.max))


def test_pooling_output_sizes():
    x = np.zeros((1, 1, 4, 6))
    assert F.pooling(x, 2).shape == (1, 1, 3, 5)
    assert F.pooling(x, 2, 2).shape == (1, 1, 2, 3)


def test_pooling_gradient_goes_to_the_first_max_of_a_tie():
    x = Variable(np.array([[[[1., 1., 0., 2.],
                             [1., 0., 2., 2.]]]]))
    y = F.pooling(x, 2, 2)
    y.grad = Variable(np.array([[[[5., 7.]]]]))
    y.backward()
    np.testing.assert_array_equal(x.grad.data, [[[[5., 0., 0., 7.],
                                                   [0., 0., 0., 0.]]]])


@pytest.mark.parametrize('x_shape,k,s,p', POOL_CASES)
def test_pooling_gradients(x_shape, k, s, p):
    x = distinct(x_shape, 42)
    assert_grads_match(lambda v: F.pooling(v, k, s, p), [x])


def test_pooling_second_order_gathers_at_the_max_positions():
    """d/dR of <S, dL/dx> with L = <R, pooling(x)>: Pooling2DGrad's backward (gather at the
    argmax) must give S read at each window's max position."""
    x = distinct((1, 2, 4, 4), 43)
    R0, S = rand((1, 2, 3, 3), 44), rand((1, 2, 4, 4), 45)
    xv, R = Variable(x), Variable(R0)
    L = F.sum(F.pooling(xv, 2, 1) * R)
    L.backward(create_graph=True)
    gx = xv.grad
    R.cleargrad()
    F.sum(gx * S).backward()

    expected = np.zeros_like(R0)
    for c, oh, ow in itertools.product(range(2), range(3), range(3)):
        window = x[0, c, oh:oh + 2, ow:ow + 2]
        kh, kw = np.unravel_index(np.argmax(window), window.shape)
        expected[0, c, oh, ow] = S[0, c, oh + kh, ow + kw]
    np.testing.assert_allclose(R.grad.data, expected, rtol=1e-12)


@pytest.mark.parametrize('x_shape,k,s,p', POOL_CASES)
def test_average_pooling_matches_naive_mean(x_shape, k, s, p):
    x = rand(x_shape, 46)
    y = F.average_pooling(x, k, s, p)
    np.testing.assert_allclose(y.data, naive_pool(x, k, s, p, np.mean), rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize('x_shape,k,s,p', POOL_CASES)
def test_average_pooling_gradients(x_shape, k, s, p):
    # POOL_CASES holds a (2, 3) kernel: the book's backward swaps KH/KW there
    x = rand(x_shape, 47)
    assert_grads_match(lambda v: F.average_pooling(v, k, s, p), [x])


def test_average_pooling_second_order():
    x = rand((1, 1, 5, 6), 48)
    R0, S = rand((1, 1, 4, 2), 49), rand((1, 1, 5, 6), 50)
    xv, R = Variable(x), Variable(R0)
    F.sum(F.average_pooling(xv, (2, 3), (1, 2), 0) * R).backward(create_graph=True)
    gx = xv.grad
    R.cleargrad()
    F.sum(gx * S).backward()
    # <S, A^T R> = <A S, R>: the gradient w.r.t. R is the average pooling of S
    np.testing.assert_allclose(R.grad.data, naive_pool(S, (2, 3), (1, 2), 0, np.mean),
                               rtol=1e-12)


# =============================================================================
# dtypes, argument forms, composition
# =============================================================================
@pytest.mark.parametrize('op', [
    lambda x: F.conv2d(x, np.ones((2, 2, 3, 3), np.float32), np.ones(2, np.float32), 1, 1),
    lambda x: F.deconv2d(x, np.ones((2, 3, 3, 3), np.float32), None, 2, 1),
    lambda x: F.pooling(x, 2, 2),
    lambda x: F.average_pooling(x, 3, 1, 1),
    lambda x: F.im2col(x, 2, 1, 0),
], ids=['conv2d', 'deconv2d', 'pooling', 'average_pooling', 'im2col'])
def test_float32_stays_float32(op):
    x = Variable(rand((2, 2, 5, 5), 51).astype(np.float32))
    y = op(x)
    assert y.dtype == np.float32
    y.backward()
    assert x.grad.dtype == np.float32


def test_int_and_pair_arguments_are_equivalent():
    x, W = rand((1, 2, 6, 6), 52), rand((3, 2, 3, 3), 53)
    np.testing.assert_array_equal(F.conv2d(x, W, None, 2, 1).data,
                                  F.conv2d(x, W, None, (2, 2), (1, 1)).data)
    np.testing.assert_array_equal(F.pooling(x, 3, 2, 1).data,
                                  F.pooling(x, (3, 3), (2, 2), (1, 1)).data)


def test_lenet_shape_chain():
    rng = np.random.RandomState(54)
    x = Variable(rng.randn(2, 1, 32, 32))
    W1, W2 = rng.randn(6, 1, 5, 5), rng.randn(16, 6, 5, 5)
    h = F.conv2d(x, W1)
    assert h.shape == (2, 6, 28, 28)
    h = F.pooling(h, 2, 2)
    assert h.shape == (2, 6, 14, 14)
    h = F.conv2d(h, W2)
    assert h.shape == (2, 16, 10, 10)
    h = F.pooling(h, 2, 2)
    assert h.shape == (2, 16, 5, 5)
    h = F.reshape(h, (h.shape[0], -1))
    assert h.shape == (2, 16 * 5 * 5) == (2, 400)
    F.sum(h).backward()
    assert x.grad.shape == x.shape


def test_public_names_are_reexported_by_functions():
    for name in ['conv2d', 'deconv2d', 'conv2d_simple', 'im2col', 'col2im', 'pooling_simple',
                 'pooling', 'average_pooling']:
        assert getattr(F, name) is getattr(C, name)


# =============================================================================
# On the simulated device (skips while it is not installed)
# =============================================================================
DEVICE_OPS = {
    'conv2d': (lambda x, W: F.conv2d(x, W, None, 2, 1), [(2, 3, 6, 5), (4, 3, 3, 2)]),
    'deconv2d': (lambda x, W: F.deconv2d(x, W, None, 2, 1), [(2, 3, 3, 4), (3, 2, 3, 3)]),
    'pooling': (lambda x: F.pooling(x, 3, 2, 1), [(2, 3, 6, 5)]),
    'average_pooling': (lambda x: F.average_pooling(x, (2, 3), 1, 1), [(2, 3, 6, 5)]),
    'im2col': (lambda x: F.im2col(x, 3, 2, 1), [(2, 3, 6, 5)]),
}


@pytest.mark.parametrize('name', sorted(DEVICE_OPS))
def test_same_results_on_the_device(name, device):
    fn, shapes = DEVICE_OPS[name]
    host = [distinct(shape, 60 + i) for i, shape in enumerate(shapes)]
    y_host = fn(*[Variable(a) for a in host])
    gy = rand(y_host.shape, 70)
    grads_host = backprop_grads(fn, host, gy)

    xs = [Variable(device.to_device(a)) for a in host]
    y = fn(*xs)
    y.grad = Variable(device.to_device(gy))
    y.backward()
    np.testing.assert_allclose(device.to_host(y), y_host.data, rtol=1e-12, atol=1e-12)
    for x, want in zip(xs, grads_host):
        np.testing.assert_allclose(device.to_host(x.grad), want, rtol=1e-12, atol=1e-12)
