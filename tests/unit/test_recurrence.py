"""The trusted side's recurrence (`dezero_grader.checks.recurrent_math`): roles found by shape in every layout a
correct layer may use, a wrong formula fitting none, and BPTT gradients that agree with central
differences of the recurrence itself."""
import numpy as np
import pytest

from dezero_grader.checks import recurrent_math as R

H, I, B, T = 3, 2, 2, 4
TOL = {'rtol': 1e-7, 'atol': 1e-9}


def _book(kind, rng):
    """A book-layout layer: places and values, by gate."""
    gates = ('',) if kind == 'rnn' else R.GATES
    places, values = [], []
    for g in gates:
        x, h = ('x2h', 'h2h') if kind == 'rnn' else ('x2' + g, 'h2' + g)
        places += [x + '/W', x + '/b', h + '/W']
        values += [rng.standard_normal((I, H)), rng.standard_normal(H), rng.standard_normal((H, H))]
    return places, values


def _observed(kind, places, values, act=None):
    """What a layer computes (the book's, or with `act` for tanh in the RNN / the LSTM's
    candidate), from the book layout."""
    n = 1 if kind == 'rnn' else 4
    r = R.Roles(tuple(values[3 * g] for g in range(n)), tuple(values[3 * g + 1] for g in range(n)),
                tuple(values[3 * g + 2] for g in range(n)), tuple(np.zeros(H) for _ in range(n)))
    xs = R.inputs(7, T, B, I)
    if act is not None:
        saved = R._acts
        R._acts = lambda k: (act,) if k == 'rnn' else (R.sigmoid, R.sigmoid, R.sigmoid, act)
        try:
            return xs, [s[0] for s in R.run(kind, r, xs)]
        finally:
            R._acts = saved
    return xs, [s[0] for s in R.run(kind, r, xs)]


def _fused(values, order):
    """The LSTM's 12 book parameters as one input Linear (4H, with bias) and one hidden Linear
    (4H, none), gates in `order`; and one more layout: the input weight stored transposed."""
    k = {g: i for i, g in enumerate(R.GATES)}
    Wx = np.concatenate([values[3 * k[g]] for g in order], axis=1)
    bx = np.concatenate([values[3 * k[g] + 1] for g in order])
    Wh = np.concatenate([values[3 * k[g] + 2] for g in order], axis=1)
    return (['from_x/W', 'from_x/b', 'from_h/W'], [Wx, bx, Wh]), \
        (['layer/kernel', 'layer/offset', 'layer/loop'], [Wx.T.copy(), bx, Wh])


@pytest.mark.parametrize('kind', ['rnn', 'lstm'])
def test_the_book_layout_is_found(kind):
    places, values = _book(kind, np.random.default_rng(1))
    xs, ys = _observed(kind, places, values)
    found = R.find(kind, values, places, H, I, xs, ys, lambda h: h, **TOL)
    assert found.err <= 1
    assert 'roles found by shape' in R.describe(found, places, kind, H)


@pytest.mark.parametrize('order', [('i', 'f', 'u', 'o'), ('u', 'o', 'f', 'i')])
def test_fused_and_transposed_lstm_layouts_are_found(order):
    places, values = _book('lstm', np.random.default_rng(2))
    xs, ys = _observed('lstm', places, values)
    for fplaces, fvalues in _fused(values, order):
        found = R.find('lstm', fvalues, fplaces, H, I, xs, ys, lambda h: h, **TOL)
        assert found.err <= 1, fplaces
        text = R.describe(found, fplaces, 'lstm', H)
        assert '[0:3]' in text and fplaces[0] in text


def test_loose_biases_and_shuffled_parameters_are_found():
    places, values = _book('lstm', np.random.default_rng(3))
    xs, ys = _observed('lstm', places, values)
    rng = np.random.default_rng(4)
    order = rng.permutation(len(values))
    loose = ['p{}'.format(i) for i in order]   # one layer holding all twelve: no Linear groups
    found = R.find('lstm', [values[i] for i in order], loose, H, I, xs, ys, lambda h: h, **TOL)
    assert found.err <= 1


@pytest.mark.parametrize('kind', ['rnn', 'lstm'])
def test_sigmoid_for_tanh_fits_no_assignment(kind):
    places, values = _book(kind, np.random.default_rng(5))
    xs, ys = _observed(kind, places, values, act=R.sigmoid)
    found = R.find(kind, values, places, H, I, xs, ys, lambda h: h, **TOL)
    assert found.err > 1e3


@pytest.mark.parametrize('kind', ['rnn', 'lstm'])
def test_bptt_gradients_agree_with_central_differences(kind):
    places, values = _book(kind, np.random.default_rng(6))
    xs = R.inputs(7, T, B, I)
    ws = [np.random.default_rng(8 + t).standard_normal((B, H)) for t in range(T)]
    found = R.find(kind, values, places, H, I, xs, _observed(kind, places, values)[1],
                   lambda h: h, **TOL)

    def loss(vals, inputs):
        r = R.roles_of(found.x_side, found.h_side, vals, H)
        return sum(float(np.sum(w * s[0])) for w, s in zip(ws, R.run(kind, r, inputs)))
    r = R.roles_of(found.x_side, found.h_side, values, H)
    role_grads, dxs = R.backward(kind, r, R.run(kind, r, xs), ws)
    grads = R.param_grads(role_grads, found.x_side, found.h_side, [v.shape for v in values], H)
    eps = 1e-6
    for n, v in enumerate(values + xs):
        numeric = np.zeros_like(v)
        for idx in np.ndindex(v.shape):
            for sign in (1, -1):
                moved = [a.copy() for a in values + xs]
                moved[n][idx] += sign * eps
                numeric[idx] += sign * loss(moved[:len(values)], moved[len(values):])
        numeric /= 2 * eps
        analytic = grads[n] if n < len(values) else dxs[n - len(values)]
        np.testing.assert_allclose(analytic, numeric, rtol=1e-5, atol=1e-7)
