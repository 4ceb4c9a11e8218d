"""`recurrent.match`: a recurrent layer graded by what it computes, under any names.

The sequence scenarios (`sequence.forward`, `sequence.through_time`, `sequence.bptt`) report raw
values only: the parameters the worker seeded (place and value, `params()` order), the outputs
and state of every step and the gradients, for inputs drawn from the probe's seed. Here, on the
trusted side, the inputs are drawn again from the seed, the parameters are checked to hold the
values the grader set, assigned to the book's roles by shape (`dezero_grader.checks.recurrent_math`), and the
book's recurrence is computed in NumPy: the layer is right when the assignment closest to its
outputs reproduces them, its state and its gradients within tolerance. Every finding says
which equation it checks; the first says how the roles were found.

No reference run is needed, and there is no other path: a layer with the book's names and one
with any others go through the same role finding.
"""
from __future__ import annotations

import numpy as np

from dezero_grader.checks import recurrent_math as R
from dezero_grader.checks import Plan, learner_error_finding, register
from dezero_grader.checks.compare import compare, tolerance_for
from dezero_grader.errors import GraderError
from dezero_grader.records.dataflow import Finding, Probe
from dezero_grader.wire import Array

SCENARIOS = ('sequence.forward', 'sequence.through_time', 'sequence.bptt')


def _plan(params, seed):
    args = dict(params.get('args', {}))
    hidden, in_size = args.get('hidden'), args.get('in_size')
    if isinstance(hidden, int) and isinstance(in_size, int) and (
            hidden <= 0 or in_size <= 0 or in_size % hidden == 0):
        raise GraderError('recurrent.match needs in_size ({}) that is not a multiple of hidden ({}): '
                          'otherwise the parameters\' roles cannot be told apart by shape'.format(
                              in_size, hidden))
    if params['scenario'] not in SCENARIOS:
        raise GraderError('recurrent.match judges {}, not {}'.format(', '.join(SCENARIOS),
                                                                     params['scenario']))
    return Plan(learner=(Probe(params['scenario'], args, seed, params.get('device', 'cpu')),))


class Missing(Exception):
    """A value the judge needs is not in the report (or a phase raised): a failed finding."""

    def __init__(self, finding):
        super().__init__(finding.message)
        self.finding = finding


def _raised(v):
    return isinstance(v, dict) and 'raised' in v


def _part(report, key, what):
    """`report[key]`, or Missing with what was raised there / that it is not there."""
    v = report.get(key) if isinstance(report, dict) else None
    if _raised(v):
        where = ' at {}'.format(v['where']) if v.get('where') else ''
        raise Missing(Finding('failed', '{}: your code raised {}: {}{} (in {})'.format(
            what, v.get('raised'), v.get('message', ''), where, key),
            evidence={'raised': v.get('raised'), 'exception_message': v.get('message', ''),
                      'where': v.get('where', ''), 'raised_in': key}, case='run'))
    if v is None:
        raise Missing(Finding('failed', '{}: nothing was reported at {}'.format(what, key),
                              evidence={'path': key}, case='run'))
    return v


def _array(v, what, path):
    if isinstance(v, Array):
        v = v.data
    if not isinstance(v, np.ndarray) or v.dtype.kind not in 'fiu':
        raise Missing(Finding('failed', '{}: {} is not an array of numbers'.format(what, path),
                              evidence={'path': path}, case='run'))
    return v


def _list(v, n, what, path):
    if not isinstance(v, list) or len(v) != n:
        raise Missing(Finding('failed', '{}: {} holds {} value(s) instead of {}'.format(
            what, path, len(v) if isinstance(v, list) else 0, n), evidence={'path': path},
            case='run'))
    return v


def _parameters(report, what):
    entries = _part(report, 'params', what)
    if not isinstance(entries, list) or not entries:
        raise Missing(Finding('failed', '{}: the layer reported no parameters'.format(what),
                              case='params'))
    places, values = [], []
    for n, e in enumerate(entries):
        if not isinstance(e, dict) or not isinstance(e.get('place'), str):
            raise Missing(Finding('failed', '{}: params[{}] has no place'.format(what, n),
                                  case='params'))
        places.append(e['place'])
        values.append(np.asarray(_array(e.get('value'), what, 'params[{}]'.format(n)),
                                 dtype=np.float64))
    return places, values


def _set_values(seed, kind, places, values, what):
    """The finding that every parameter holds what the worker was told to set."""
    for place, value in zip(places, values):
        expected = R.seeded(seed, '{}:{}'.format(kind, place), value.shape)
        if not np.array_equal(value, expected):
            return Finding('failed', '{}: the parameter at {} does not hold the values the grader '
                           'set'.format(what, place), case='params',
                           hint='a layer must not change its weights while it computes',
                           evidence={'place': place})
    return Finding('passed', 'every parameter holds the values the grader set ({} parameter(s))'
                   .format(len(places)), case='params')


def _tol(inp, *arrays):
    dtypes = [a.dtype for a in arrays if isinstance(a, np.ndarray)] or [np.float64]
    low = [d for d in dtypes if d in (np.float16, np.float32)]
    return tolerance_for(low[0] if low else np.float64, inp.tolerance)


def _roles_finding(found, places, kind, H, what):
    text = R.describe(found, places, kind, H)
    extra = [i for i in found.layout.unknown] + [b.param for b in found.left]
    if extra:
        text += '; fitting no role: {}'.format(', '.join(sorted({places[i] for i in extra})))
    evidence = {'roles': text, 'assignments_tried': found.tried,
                'closest_error_in_tolerances': float(found.err) if np.isfinite(found.err) else 'inf'}
    if found.x_side is None:
        return Finding('failed', '{}: {}'.format(what, text), evidence=evidence, case='roles',
                       hint='the book\'s layer is an input projection (with bias) and a hidden one '
                            '(without) per gate')
    if found.err <= 1:
        return Finding('passed', text, evidence=evidence, case='roles')
    return Finding('failed', '{}: no assignment of your parameters to the book\'s roles reproduces '
                   'your outputs; {}'.format(what, text), evidence=evidence, case='roles')


def _equation(case, equation, pairs, tol, what, hint=''):
    """One finding for one equation over the steps: `pairs` is [(step, found, expected)]; it
    fails at the first step where they differ."""
    for t, found, expected in pairs:
        c = compare(found, expected, **tol)
        if not c.ok:
            return Finding('failed', '{}: {} fails at step {}'.format(what, equation, t + 1),
                           evidence=dict(c.evidence, step=t + 1, equation=equation), case=case,
                           hint=hint)
    return Finding('passed', '{} holds at every step'.format(equation), case=case)


def _learner(inp):
    obs = inp.learner[inp.plan.learner[0]]
    what = inp.params.get('what', inp.params['scenario'])
    if not obs.ok:
        return None, what, [learner_error_finding(obs, what)]
    if isinstance(obs.value, dict) and '__skipped__' in obs.value:
        return None, what, [Finding('skipped', obs.value['__skipped__'])]
    if not isinstance(obs.value, dict):
        return None, what, [Finding('failed', '{}: the scenario reported nothing'.format(what))]
    return obs.value, what, []


def _judge(inp):
    report, what, early = _learner(inp)
    if early:
        return early
    args = inp.params.get('args', {})
    seed = inp.plan.learner[0].seed
    findings = []   # what was judged before a missing value stopped the judge is kept
    try:
        places, values = _parameters(report, what)
        findings.append(_set_values(seed, args['kind'], places, values, what))
        JUDGES[inp.params['scenario']](inp, report, args, seed, places, values, what, findings)
    except Missing as m:
        findings.append(m.finding)
    return _once_per_case(findings)


# -- sequence.forward ----------------------------------------------------------------------------
def _sequence(inp, report, part, args, seed, places, values, what, findings):
    """The outputs of `report[part].y` (one per step), the grader's inputs, the tolerance and the
    roles found for them (the finding that says how is added); roles None where none fit."""
    kind, H, I, B, T = (args[k] for k in ('kind', 'hidden', 'in_size', 'batch', 'steps'))
    section = _part(report, part, what)
    ys = [_array(y, what, '{}.y[{}]'.format(part, t))
          for t, y in enumerate(_list(section.get('y'), T, what, part + '.y'))]
    xs = R.inputs(seed, T, B, I)
    tol = _tol(inp, *ys)
    found = R.find(kind, values, places, H, I, xs, ys, lambda h: h, tol['rtol'], tol['atol'])
    findings.append(_roles_finding(found, places, kind, H, what))
    r = None if found.x_side is None else R.roles_of(found.x_side, found.h_side, values, H)
    return section, ys, xs, tol, found, r


def _forward(inp, report, args, seed, places, values, what, findings):
    kind, T = args['kind'], args['steps']
    seq, ys, xs, tol, found, r = _sequence(inp, report, 'sequence', args, seed, places, values,
                                           what, findings)
    hs = _list(seq.get('h'), T, what, 'sequence.h')
    if r is None:
        return
    book = R.run(kind, r, xs)
    hint = inp.params.get('hint', '')
    state = [(t, _array(h, what, 'sequence.h[{}]'.format(t)) if h is not None else np.array(np.nan),
              ys[t]) for t, h in enumerate(hs)]
    if kind == 'rnn':
        first = R.step(kind, r, xs[0])[0]
        findings.append(_equation('first_step', 'h₁ = tanh(x₁·W_x + b) (the first step, no state '
                                  'yet)', [(0, ys[0], first)], tol, what, hint))
        findings.append(_equation(
            'recurrence', 'h_t = tanh(x_t·W_x + b + h_{t−1}·W_h), from your h_{t−1}',
            [(t, ys[t], R.step(kind, r, xs[t], ys[t - 1])[0]) for t in range(1, T)], tol, what,
            hint))
    else:
        cs_reported = _list(seq.get('c'), T, what, 'sequence.c')
        cs = [None if c is None else _array(c, what, 'sequence.c[{}]'.format(t))
              for t, c in enumerate(cs_reported)]
        findings.append(_equation(
            'cell_state', 'c_t = f·c_{t−1} + i·u (c₁ = i·u), u = tanh(…), f, i = σ(…), from your '
            'h_{t−1} and c_{t−1}',
            [(t, cs[t] if cs[t] is not None else np.array(np.nan), _lstm_step(
                r, xs, t, ys, cs, book)[1]) for t in range(T)], tol, what,
            hint + ' (layer.c holds the cell state after every step)'))
        findings.append(_equation(
            'output', 'h_t = o·tanh(c_t), o = σ(x_t·W_xo + b_o + h_{t−1}·W_ho), from your h_{t−1} and '
            'c_t', [(t, ys[t], _lstm_output(r, xs, t, ys, cs, book)) for t in range(T)], tol,
            what, hint))
    findings.append(_equation('state', 'the state h after each step is that step\'s output',
                              state, tol, what, 'self.h = the new h; return it'))
    findings.append(_equation('sequence', 'the whole sequence is the book\'s {} from an empty '
                              'state'.format(kind.upper()),
                              [(t, ys[t], book[t][0]) for t in range(T)], tol, what, hint))


def _lstm_step(r, xs, t, ys, cs, book):
    """The book's step t from the learner's own previous h and c (the book's c where the
    learner's is not there)."""
    if t == 0:
        return R.step('lstm', r, xs[0])
    c_prev = cs[t - 1] if cs[t - 1] is not None else book[t - 1][1]
    return R.step('lstm', r, xs[t], ys[t - 1], c_prev)


def _lstm_output(r, xs, t, ys, cs, book):
    """o·tanh(c_t) with the learner's c_t (the book's where it is not there)."""
    _, _, (_, _, _, act) = _lstm_step(r, xs, t, ys, cs, book)
    c = cs[t] if cs[t] is not None else book[t][1]
    return act[2] * np.tanh(c)


# -- sequence.through_time -----------------------------------------------------------------------
def _through_time(inp, report, args, seed, places, values, what, findings):
    kind, H, B, T = (args[k] for k in ('kind', 'hidden', 'batch', 'steps'))
    window, ys, xs, tol, found, r = _sequence(inp, report, 'window', args, seed, places, values,
                                              what, findings)
    if r is None:
        return
    ws = [R.seeded(seed, 'w{}'.format(t), (B, H), 1.0) for t in range(T)]
    steps = R.run(kind, r, xs)
    findings.append(_equation('forward', 'the outputs are the book\'s {} (the gradients below are '
                              'its gradients)'.format(kind.upper()),
                              [(t, ys[t], steps[t][0]) for t in range(T)], tol, what,
                              inp.params.get('hint', '')))
    role_grads, dxs = R.backward(kind, r, steps, ws)
    grads = R.param_grads(role_grads, found.x_side, found.h_side, [v.shape for v in values], H)
    loss = sum(float(np.sum(w * s[0])) for w, s in zip(ws, steps))
    findings.append(_value('loss', 'the loss Σ_t sum(w_t·h_t)',
                           _array(window.get('loss'), what, 'window.loss'), np.asarray(loss),
                           tol, what))
    findings += _gradients(inp, window.get('grads'), places, grads, tol, what, 'window.grads')
    reported = _list(window.get('inputs'), T, what, 'window.inputs')
    for t in range(T):
        findings.append(_grad('x{}'.format(t), 'the input of step {}'.format(t + 1), reported[t],
                              dxs[t], tol, what, inp.params.get('hint', '')))


def _value(case, name, found, expected, tol, what):
    c = compare(np.reshape(found, np.shape(expected)) if np.size(found) == np.size(expected)
                else found, expected, **tol)
    if c.ok:
        return Finding('passed', '{} is the book\'s'.format(name), case=case)
    return Finding('failed', '{}: {} differs from the book\'s'.format(what, name),
                   evidence=c.evidence, case=case)


def _grad(case, name, found, expected, tol, what, hint):
    if found is None:
        return Finding('failed', '{}: {} has no gradient after backward()'.format(what, name),
                       case='grad:' + case,
                       hint='every parameter and input the loss depends on gets a gradient')
    found = _array(found, what, case)
    c = compare(found, expected, **tol)
    if c.ok:
        return Finding('passed', 'the gradient of {} is the book\'s BPTT gradient'.format(name),
                       case='grad:' + case)
    return Finding('failed', '{}: the gradient of {} differs from the book\'s backpropagation '
                   'through time'.format(what, name), evidence=c.evidence, case='grad:' + case,
                   hint=hint)


def _gradients(inp, reported, places, expected, tol, what, path):
    reported = _list(reported, len(places), what, path)
    return [_grad(place, place, g, e, tol, what, inp.params.get('hint', ''))
            for place, g, e in zip(places, reported, expected)]


# -- sequence.bptt -------------------------------------------------------------------------------
def _bptt(inp, report, args, seed, places, values, what, findings):
    kind, H, I, B = (args[k] for k in ('kind', 'hidden', 'in_size', 'batch'))
    out, W, K = args['out'], args['window'], args['windows']
    numbers = _list(_part(report, 'numbers', what), K, what, 'numbers')
    ys = []
    for k, n in enumerate(numbers):
        if not isinstance(n, dict):
            raise Missing(Finding('failed', '{}: numbers[{}] is not a record'.format(what, k)))
        ys += [_array(y, what, 'numbers[{}].y[{}]'.format(k, t))
               for t, y in enumerate(_list(n.get('y'), W, what, 'numbers[{}].y'.format(k)))]
    head = [n for n, p in enumerate(places) if p.startswith('fc/')]
    Wfc = [values[n] for n in head if values[n].ndim == 2]
    bfc = [values[n] for n in head if values[n].ndim == 1]
    if len(Wfc) != 1 or Wfc[0].shape != (H, out) or len(bfc) > 1:
        raise Missing(Finding('failed', '{}: the model\'s Linear({}) (fc) has parameters of shapes '
                              '{}'.format(what, out, [list(values[n].shape) for n in head]),
                              case='params'))
    Wfc, bfc = Wfc[0], (bfc[0] if bfc else np.zeros(out))
    inner = [n for n in range(len(places)) if n not in head]
    r_places, r_values = [places[n] for n in inner], [values[n] for n in inner]
    xs = R.inputs(seed, W * K + 1, B, I)
    tol = _tol(inp, *ys)

    def readout(h):
        return h @ Wfc + bfc
    found = R.find(kind, r_values, r_places, H, I, xs[:W * K], ys, readout, tol['rtol'], tol['atol'])
    findings.append(_roles_finding(found, r_places, kind, H, what))
    if found.x_side is None:
        return
    r = R.roles_of(found.x_side, found.h_side, r_values, H)
    h = c = None
    total, windows, book_ys = 0.0, [], []
    for k in range(K):
        steps = R.run(kind, r, xs[k * W:(k + 1) * W], h, c)
        dWfc, dbfc, dh_out = np.zeros_like(Wfc), np.zeros(out), []
        for j, (h_t, _, _) in enumerate(steps):
            t = k * W + j
            y = readout(h_t)
            book_ys.append(y)
            diff = y - xs[t + 1][:, :out]
            total += float(np.sum(diff ** 2)) / B
            dy = 2 * diff / B
            dWfc += h_t.T @ dy
            dbfc += dy.sum(axis=0)
            dh_out.append(dy @ Wfc.T)
        role_grads, _ = R.backward(kind, r, steps, dh_out)
        inner_grads = R.param_grads(role_grads, found.x_side, found.h_side,
                                    [v.shape for v in r_values], H)
        grads = [None] * len(places)
        for n, g in zip(inner, inner_grads):
            grads[n] = g
        for n in head:
            grads[n] = dWfc if values[n].ndim == 2 else dbfc
        windows.append((total, grads))
        h, c = steps[-1][0], steps[-1][1]
    findings.append(_equation('forward', 'the outputs are the book\'s model (the {} carrying its '
                              'state from window to window, then Linear)'.format(kind.upper()),
                              [(t, y, e) for t, (y, e) in enumerate(zip(ys, book_ys))], tol, what,
                              inp.params.get('hint', '')))
    for k, ((loss, grads), n) in enumerate(zip(windows, numbers)):
        findings.append(_value('loss[{}]'.format(k), 'the loss after window {}'.format(k + 1),
                               _array(n.get('loss'), what, 'numbers[{}].loss'.format(k)),
                               np.asarray(loss), tol, what))
        for f in _gradients(inp, n.get('grads'), places, grads, tol, what,
                            'numbers[{}].grads'.format(k)):
            if f.status != 'passed' or k == K - 1:
                findings.append(Finding(f.status, f.message.replace(
                    'differs', 'differs in window {}'.format(k + 1)) if f.status != 'passed' else
                    f.message + ' in every window', evidence=f.evidence, case=f.case, hint=f.hint))


def _once_per_case(findings):
    """The first finding of each case (a parameter wrong in several windows is named once)."""
    seen, out = set(), []
    for f in findings:
        if f.case in seen:
            continue
        seen.add(f.case)
        out.append(f)
    return out


JUDGES = {'sequence.forward': _forward, 'sequence.through_time': _through_time,
          'sequence.bptt': _bptt}


register(
    'recurrent.match',
    summary='a recurrent layer (RNN, LSTM) computes the book\'s recurrence under some assignment '
            'of its parameters to the book\'s roles by shape: outputs, state and gradients '
            'through time, computed on the trusted side',
    params={'scenario': {'enum': list(SCENARIOS)}, 'args': {'type': 'object'},
            'device': {'enum': ['cpu']},
            'what': {'type': 'string', 'description': 'what the scenario does, for messages'},
            'hint': {'type': 'string'}},
    required=('scenario', 'args'),
    plan=_plan,
    judge=_judge,
)
