"""The book's recurrent layers, computed on the trusted side from what a worker reported.

A worker reports a recurrent layer's parameters (place and value, in `params()` order), its
outputs and state, and gradients, for inputs drawn from the probe's seed. Nothing here trusts a
name: the parameters are assigned to the book's roles by their shapes, and the book's
recurrence is computed here, in NumPy, for each assignment that fits.

Roles. The RNN has an input projection (W_x: I×H, b: H) and a hidden one (W_h: H×H, and no
bias in the book); the LSTM has the same two per gate f, i, o (sigmoid) and u (tanh). A weight of
shape (I, k·H) is an input projection of k gates (k = 4: the four gates fused into one Linear),
(k·H, I) the same stored transposed; (H, k·H) a hidden projection ((H, H) is tried both ways
round). A bias (k·H,) belongs to the weight beside it (the same layer holds both), or, held
loose, to the gates whose projections have none, input side first. The blocks of a fused weight
and the separate weights are given to the gates in every order (the gates' labels are
interchangeable: four projections initialised alike are told apart only by what they compute).
The sizes must make shapes unambiguous (`in_size` not a multiple of `hidden`).

Search. The first step depends on the input side only (h and c start empty), so the input
side's assignment is chosen on the first output, the hidden side's on the whole sequence: at
most a few thousand candidates, each a few small matrix products. The layer is right when the
best candidate reproduces every output within tolerance.
"""
from __future__ import annotations

import itertools
import zlib
from dataclasses import dataclass, field

import numpy as np

GATES = ('f', 'i', 'o', 'u')
MAX_CANDIDATES = 20000


# -- the grader's own numbers, drawn as the worker draws them ----------------------------------
def generator(seed, salt):
    return np.random.Generator(np.random.PCG64([seed, salt]))


def inputs(seed, steps, batch, in_size, salt=1):
    """The sequence the scenarios feed the layer (`sequence._inputs`)."""
    rng = generator(seed, salt)
    return [rng.standard_normal((batch, in_size)) for _ in range(steps)]


def seeded(seed, key, shape, scale=0.5):
    """The values `fixtures.seeded` gives `key` (a weight set by `set_weights`, a loss weight)."""
    return scale * generator(seed, zlib.crc32(key.encode('utf-8'))).standard_normal(tuple(shape))


def sigmoid(x):
    return 0.5 * (np.tanh(0.5 * x) + 1.0)


# -- parameters and roles ------------------------------------------------------------------------
@dataclass(frozen=True)
class Block:
    """H columns of one reported parameter: `param` (its index), block `j`, stored transposed."""
    param: int
    j: int = 0
    transposed: bool = False

    def take(self, value, H):
        if value.ndim == 1:
            return value[self.j * H:(self.j + 1) * H]
        if self.transposed:
            return value[self.j * H:(self.j + 1) * H, :].T
        return value[:, self.j * H:(self.j + 1) * H]

    def put(self, grad_of_param, g, H):
        if grad_of_param.ndim == 1:
            grad_of_param[self.j * H:(self.j + 1) * H] += g
        elif self.transposed:
            grad_of_param[self.j * H:(self.j + 1) * H, :] += g.T
        else:
            grad_of_param[:, self.j * H:(self.j + 1) * H] += g


@dataclass
class Layout:
    """What the reported parameters are, by shape: input-side and hidden-side weight blocks,
    the bias block attached to each (None: none), loose biases, and what fits no role."""
    x_blocks: list = field(default_factory=list)
    h_blocks: list = field(default_factory=list)
    x_bias: list = field(default_factory=list)   # per x block: a bias Block or None
    h_bias: list = field(default_factory=list)
    loose: list = field(default_factory=list)    # bias Blocks held by no weight's layer
    square: bool = False                         # the hidden weights are H×H (orientation tried)
    unknown: list = field(default_factory=list)  # parameter indices that fit no role


def _parent(place):
    return place.rsplit('/', 1)[0] if '/' in place else ''


def layout(places, shapes, kind, hidden, in_size):
    """Classify the parameters (`places`, `shapes`: lists in report order) by shape."""
    H, I = hidden, in_size
    out = Layout()
    weights, biases = [], []
    for n, shape in enumerate(shapes):
        shape = tuple(shape)
        if len(shape) == 2:
            a, b = shape
            if a == I and b % H == 0:
                weights.append((n, 'x', b // H, False))
            elif b == I and a % H == 0:
                weights.append((n, 'x', a // H, True))
            elif a == H and b % H == 0:
                weights.append((n, 'h', b // H, False))
                out.square = out.square or b == H
            elif b == H and a % H == 0:
                weights.append((n, 'h', a // H, True))
            else:
                out.unknown.append(n)
        elif len(shape) == 1 and shape[0] % H == 0 and shape[0] > 0:
            biases.append((n, shape[0] // H))
        else:
            out.unknown.append(n)
    attached = {}
    for n, k in biases:
        mates = [w for w in weights if _parent(places[w[0]]) == _parent(places[n])]
        if len(mates) == 1 and mates[0][2] == k and sum(
                1 for m, _ in biases if _parent(places[m]) == _parent(places[n])) == 1:
            attached[mates[0][0]] = n
        else:
            out.loose.extend(Block(n, j) for j in range(k))
    for n, side, k, transposed in weights:
        blocks = [Block(n, j, transposed) for j in range(k)]
        bias = attached.get(n)
        bias_blocks = [Block(bias, j) if bias is not None else None for j in range(k)]
        if side == 'x':
            out.x_blocks.extend(blocks)
            out.x_bias.extend(bias_blocks)
        else:
            out.h_blocks.extend(blocks)
            out.h_bias.extend(bias_blocks)
    return out


def _fills(gaps, free):
    """Every way to give the `gaps` distinct blocks of `free` (None where too few): (choice per
    gap, blocks of `free` left over)."""
    if not gaps:
        return [((), tuple(free))]
    pool = list(free) + [None] * max(0, len(gaps) - len(free))
    seen, out = set(), []
    for choice in itertools.permutations(pool, len(gaps)):
        if choice in seen:
            continue
        seen.add(choice)
        left = list(free)
        for c in choice:
            if c is not None:
                left.remove(c)
        out.append((choice, tuple(left)))
    return out


@dataclass(frozen=True)
class Side:
    """One side's assignment: the weight block and the bias block (or None) of each gate."""
    weights: tuple
    biases: tuple
    transposed: bool = False   # square hidden weights used as h·Wᵀ


def side_candidates(blocks, attached, loose, n_gates, square=False):
    """Every assignment of one side's blocks to the gates, with the loose biases filling the
    gates that have none; each with the loose blocks it left."""
    if len(blocks) != n_gates:
        return []
    out = []
    for order in itertools.permutations(range(n_gates)):
        ws = tuple(blocks[k] for k in order)
        bs = [attached[k] for k in order]
        gaps = [g for g, b in enumerate(bs) if b is None]
        for choice, left in _fills(gaps, loose):
            full = list(bs)
            for g, c in zip(gaps, choice):
                full[g] = c
            for t in ((False, True) if square else (False,)):
                out.append((Side(ws, tuple(full), t), left))
        if len(out) > MAX_CANDIDATES:
            break
    return out


# -- the book's recurrence -----------------------------------------------------------------------
@dataclass(frozen=True)
class Roles:
    """Concrete weights per gate (RNN: one gate), from an assignment and the reported values."""
    Wx: tuple
    bx: tuple
    Wh: tuple
    bh: tuple


def roles_of(x_side, h_side, values, H):
    def w(block, transposed=False):
        m = block.take(values[block.param], H)
        return m.T if transposed else m

    def b(block):
        return np.zeros(H) if block is None else block.take(values[block.param], H)
    return Roles(tuple(w(k) for k in x_side.weights), tuple(b(k) for k in x_side.biases),
                 tuple(w(k, h_side.transposed) for k in h_side.weights),
                 tuple(b(k) for k in h_side.biases))


def _acts(kind):
    return (np.tanh,) if kind == 'rnn' else (sigmoid, sigmoid, sigmoid, np.tanh)


def step(kind, r, x, h=None, c=None):
    """One step of the book's layer: (h', c', cache for the backward)."""
    pre = [x @ Wx + bx for Wx, bx in zip(r.Wx, r.bx)]
    if h is not None:
        pre = [p + h @ Wh + bh for p, Wh, bh in zip(pre, r.Wh, r.bh)]
    act = [f(p) for f, p in zip(_acts(kind), pre)]
    if kind == 'rnn':
        return act[0], None, (x, h, c, act)
    f, i, o, u = act
    c_new = i * u if c is None else f * c + i * u
    return o * np.tanh(c_new), c_new, (x, h, c, act)


def run(kind, r, xs, h=None, c=None):
    """The whole sequence from state (h, c): [(h_t, c_t, cache_t)]."""
    out = []
    for x in xs:
        h, c, cache = step(kind, r, x, h, c)
        out.append((h, c, cache))
    return out


def backward(kind, r, steps, dh_out, c_end=None):
    """BPTT through `steps` (what `run` returned), given dL/dh_t from outside for each step:
    (grads of Wx, bx, Wh, bh per gate, dL/dx_t per step). The state the window started from is
    a constant (truncated there)."""
    n = len(r.Wx)
    gWx = [np.zeros_like(w) for w in r.Wx]
    gbx = [np.zeros_like(b) for b in r.bx]
    gWh = [np.zeros_like(w) for w in r.Wh]
    gbh = [np.zeros_like(b) for b in r.bh]
    dxs = [None] * len(steps)
    dh_next = np.zeros_like(steps[-1][0])
    dc_next = None if kind == 'rnn' else np.zeros_like(steps[-1][0])
    for t in range(len(steps) - 1, -1, -1):
        h_t, c_t, (x, h_prev, c_prev, act) = steps[t]
        dh = dh_out[t] + dh_next
        if kind == 'rnn':
            dpre = [dh * (1 - act[0] ** 2)]
        else:
            f, i, o, u = act
            tc = np.tanh(c_t)
            dc = dc_next + dh * o * (1 - tc ** 2)
            do, di, du = dh * tc, dc * u, dc * i
            df = dc * c_prev if c_prev is not None else np.zeros_like(dc)
            dpre = [df * f * (1 - f), di * i * (1 - i), do * o * (1 - o), du * (1 - u ** 2)]
            dc_next = dc * f if c_prev is not None else np.zeros_like(dc)
        dx = np.zeros_like(x)
        dh_prev = np.zeros_like(dh)
        for g in range(n):
            gWx[g] += x.T @ dpre[g]
            gbx[g] += dpre[g].sum(axis=0)
            dx += dpre[g] @ r.Wx[g].T
            if h_prev is not None:
                gWh[g] += h_prev.T @ dpre[g]
                gbh[g] += dpre[g].sum(axis=0)
                dh_prev += dpre[g] @ r.Wh[g].T
        dxs[t] = dx
        dh_next = dh_prev if h_prev is not None else np.zeros_like(dh)
        if h_prev is None and dc_next is not None:
            dc_next = np.zeros_like(dc_next)
    return (gWx, gbx, gWh, gbh), dxs


def param_grads(role_grads, x_side, h_side, shapes, H):
    """The gradients of the reported parameters (zeros where a parameter plays no role)."""
    gWx, gbx, gWh, gbh = role_grads
    out = [np.zeros(tuple(s)) for s in shapes]
    for g, (blk, bias) in enumerate(zip(x_side.weights, x_side.biases)):
        blk.put(out[blk.param], gWx[g], H)
        if bias is not None:
            bias.put(out[bias.param], gbx[g], H)
    for g, (blk, bias) in enumerate(zip(h_side.weights, h_side.biases)):
        blk.put(out[blk.param], gWh[g].T if h_side.transposed else gWh[g], H)
        if bias is not None:
            bias.put(out[bias.param], gbh[g], H)
    return out


# -- finding the roles ---------------------------------------------------------------------------
def error(found, expected, rtol, atol):
    """How far `found` is from `expected`, in tolerances (≤ 1: within); inf for a wrong shape
    or a value that is not a number."""
    try:
        f = np.asarray(found, dtype=np.float64)
    except (TypeError, ValueError):
        return np.inf
    e = np.asarray(expected, dtype=np.float64)
    if f.shape != e.shape:
        return np.inf
    if f.size == 0:
        return 0.0
    with np.errstate(all='ignore'):
        d = np.abs(f - e) / (atol + rtol * np.abs(e))
    d = np.where(np.isnan(d), np.inf, d)
    return float(np.max(d))


@dataclass
class Found:
    """The assignment that reproduces the observations best: its sides, its error (in
    tolerances), how many candidates were tried, and what of the layout fits no role."""
    x_side: Side | None
    h_side: Side | None
    err: float
    tried: int
    layout: Layout
    problem: str = ''
    left: tuple = ()


def find(kind, values, places, hidden, in_size, xs, observed, readout, rtol, atol):
    """The assignment of the reported parameters (`values`, host float64, and their `places`)
    whose book recurrence on `xs`, read out by `readout(h)`, comes closest to `observed` (one
    array per step)."""
    H = hidden
    n_gates = 1 if kind == 'rnn' else 4
    lay = layout(places, [v.shape for v in values], kind, hidden, in_size)
    name = 'RNN' if kind == 'rnn' else 'LSTM'
    if len(lay.x_blocks) != n_gates or len(lay.h_blocks) != n_gates:
        return Found(None, None, np.inf, 0, lay, problem=(
            'the {} needs {} input-side block(s) of shape ({}, {}) and {} hidden-side of ({}, {}); '
            'its parameters give {} and {}'.format(
                name, n_gates, in_size, H, n_gates, H, H, len(lay.x_blocks), len(lay.h_blocks))))
    tried = 0
    best_x, best_x_err, best_left = None, np.inf, ()
    for x_side, left in side_candidates(lay.x_blocks, lay.x_bias, lay.loose, n_gates):
        tried += 1
        r = roles_of(x_side, Side((), ()), values, H)
        r = Roles(r.Wx, r.bx, tuple(np.zeros((H, H)) for _ in range(n_gates)),
                  tuple(np.zeros(H) for _ in range(n_gates)))
        h, _, _ = step(kind, r, xs[0])
        e = error(observed[0], readout(h), rtol, atol)
        if e < best_x_err or best_x is None:
            best_x, best_x_err, best_left = x_side, e, left
    best, best_err, left_over = None, np.inf, best_left
    for h_side, left in side_candidates(lay.h_blocks, lay.h_bias, best_left, n_gates, lay.square):
        tried += 1
        r = roles_of(best_x, h_side, values, H)
        e = max(error(o, readout(s[0]), rtol, atol) for o, s in zip(observed, run(kind, r, xs)))
        if e < best_err or best is None:
            best, best_err, left_over = h_side, e, left
    return Found(best_x, best, best_err, tried, lay, left=left_over)


def describe(found, places, kind, H):
    """In words: which parameter plays which role (what the report says about the roles)."""
    if found.x_side is None:
        return found.problem

    def where(block):
        if block is None:
            return 'none'
        place = places[block.param]
        return place if block.j == 0 and _whole(found, block) else '{}[{}:{}]'.format(
            place, block.j * H, (block.j + 1) * H)
    gates = ('',) if kind == 'rnn' else GATES
    parts = []
    for g, name in enumerate(gates):
        xw, xb = found.x_side.weights[g], found.x_side.biases[g]
        hw, hb = found.h_side.weights[g], found.h_side.biases[g]
        x_role, h_role = ('x2h', 'h2h') if kind == 'rnn' else ('x2' + name, 'h2' + name)
        text = '{}.W ← {}{}, {}.b ← {}; {}.W ← {}{}'.format(
            x_role, where(xw), 'ᵀ' if xw.transposed else '', x_role, where(xb), h_role, where(hw),
            'ᵀ' if (hw.transposed or found.h_side.transposed) else '')
        if hb is not None:
            text += ', {}.b ← {} (the book\'s has no bias)'.format(h_role, where(hb))
        parts.append(text)
    return ('roles found by shape ({} assignment(s) tried, the one closest to your outputs '
            'kept): {}'.format(found.tried, '; '.join(parts)))


def _whole(found, block):
    """Whether `block` is its parameter's only block (a separate projection, not fused)."""
    blocks = (list(found.x_side.weights) + list(found.x_side.biases) + list(found.h_side.weights)
              + list(found.h_side.biases))
    return sum(1 for b in blocks if b is not None and b.param == block.param) == 1
