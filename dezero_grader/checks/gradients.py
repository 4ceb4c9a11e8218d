"""The gradient battery (`grad.battery`).

`grad.battery` checks one function of the submission as JAX's `check_grads` and PyTorch's
`gradcheck` do, as a battery of small named findings: forward against the reference; the
gradient's presence, shape, dtype and device; the backward's vector-Jacobian product with a
RANDOM upstream gradient against central differences of the learner's own forward (float64,
per element for small inputs, random directions for large ones); the same product against the
reference; zero upstream gives zero gradient; inputs not modified. The inputs, the perturbed
points and the upstream gradient are drawn here, in the trusted process, from the check's seed;
the worker only evaluates. `grad.early` (`gradients_before_core`) judges with the same code;
`graph.trajectory` (`trajectory`) draws its inputs with `draw`.
"""
from __future__ import annotations

import numpy as np

from dezero_grader.checks import Plan, learner_error_finding, register
from dezero_grader.checks.compare import NUMERIC_TOLERANCE, compare, tolerance_for
from dezero_grader.contracts.upstream import upstream_gradient
from dezero_grader.records.dataflow import Finding, Probe

FLOAT_DOMAINS = ('kinkfree', 'positive', 'any', 'unit', 'spread', 'large')
H = 1e-5                 # central-difference step (float64)
FULL_JACOBIAN_MAX = 64   # up to this many input elements, differentiate element by element
DIRECTIONS = 4           # otherwise, this many random directions

# the checks that judge with the battery, and the named sub-checks (`Finding.case`) it can fail
BATTERY_CHECKS = ('grad.battery', 'grad.early')
BATTERY_CASES = ('forward.type', 'forward.device', 'forward.value', 'grad.present', 'grad.shape',
                 'grad.dtype', 'grad.device', 'input.unchanged', 'grad.reference', 'grad.numeric',
                 'grad.zero_upstream')


def draw(spec, rng):
    """One input from its spec: a float domain, integer labels, or a literal constant."""
    if 'value' in spec:
        return spec['value']
    shape = tuple(spec.get('shape', ()))
    domain = spec.get('domain', 'any')
    n = int(np.prod(shape)) if shape else 1
    if domain == 'kinkfree':      # |x| in [0.1, 1], all values distinct, random signs
        magnitudes = np.linspace(0.1, 1.0, n) if n > 1 else rng.uniform(0.1, 1.0, size=1)
        x = rng.permutation(magnitudes) * rng.choice([-1.0, 1.0], size=n)
    elif domain == 'positive':
        x = rng.uniform(0.5, 2.0, size=n)
    elif domain == 'unit':
        x = rng.uniform(0.1, 0.9, size=n)
    elif domain == 'spread':      # distinct and far apart: no ties in max/pooling windows
        x = rng.permutation(np.arange(n, dtype=np.float64)) * 0.37 - n * 0.18
    elif domain == 'large':       # logits that overflow a naive exp (e^x is inf past x = 709.8)
        x = rng.standard_normal(n) * 400.0
        # on every draw, not a third of them: the largest is at least 800
        x[int(np.argmax(x))] = max(float(x.max()), 800.0)
    elif domain == 'labels':
        return rng.integers(0, spec['classes'], size=shape).astype(np.int64)
    else:
        x = rng.standard_normal(n)
    return np.asarray(x, dtype=np.float64).reshape(shape)


def upstream(seed, shape, dtype):
    """The upstream gradient both sides use; the worker derives the same from the probe's seed
    (`dezero_grader.contracts.upstream`), so it never has to be trusted or shipped."""
    return upstream_gradient(seed, shape, dtype)


def _wrt(params):
    if 'wrt' in params:
        return list(params['wrt'])
    return [i for i, s in enumerate(params['inputs'])
            if 'value' not in s and s.get('domain', 'any') in FLOAT_DOMAINS]


def _points(args, wrt, rng):
    """Perturbed argument lists and how to read them back: per element, or random directions."""
    sizes = [args[i].size for i in wrt]
    points, layout = [], []
    if sum(sizes) <= FULL_JACOBIAN_MAX:
        for k, i in enumerate(wrt):
            for j in range(sizes[k]):
                for sign in (1.0, -1.0):
                    p = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
                    p[i].flat[j] += sign * H
                    points.append(p)
                layout.append(('element', k, j))
    else:
        for d in range(DIRECTIONS):
            u = [rng.standard_normal(args[i].shape) for i in wrt]
            for sign in (1.0, -1.0):
                p = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
                for k, i in enumerate(wrt):
                    p[i] = p[i] + sign * H * u[k]
                points.append(p)
            layout.append(('direction', u))
    return points, layout


def _draw_all(params, seed):
    """The inputs and the perturbed points, replayable from the seed alone."""
    rng = np.random.Generator(np.random.PCG64(seed))
    args = [draw(s, rng) for s in params['inputs']]
    wrt = _wrt(params)
    points, layout = _points(args, wrt, rng)
    return args, wrt, points, layout


def _battery_plan(params, seed):
    args, wrt, points, _ = _draw_all(params, seed)
    base = {'fn': params['fn'], 'args': args, 'wrt': wrt, 'kwargs': params.get('kwargs', {}),
            'gy': True, 'reseed': params.get('reseed')}
    learner = dict(base, zero_gy=params.get('zero_gy', True))
    if params.get('numeric', True):
        learner['points'] = points
    device = params.get('device', 'cpu')
    plan = Plan(learner=(Probe('fn.eval', learner, seed, device),),
                reference=(Probe('fn.eval', base, seed, 'cpu'),)
                if params.get('differential', True) else ())
    return plan


def _battery_judge(inp):
    params = inp.params
    probe = inp.plan.learner[0]
    obs = inp.learner[probe]
    what = params['fn']
    if not obs.ok:
        return [learner_error_finding(obs, 'calling {}'.format(what))]
    v = obs.value
    if '__skipped__' in v:
        return [Finding('skipped', v['__skipped__'])]
    findings = []
    wrt = probe.params['wrt']
    args = probe.params['args']
    y = v['y'].data
    ref = None
    if inp.plan.reference:
        robs = inp.reference[inp.plan.reference[0]]
        if not robs.ok:
            raise RuntimeError('the reference failed on {}: {} {}'.format(
                what, robs.error.type, robs.error.message))
        ref = robs.value
    # the lower precision of the two sides decides
    tol = tolerance_for(y.dtype, inp.tolerance, None if ref is None else ref['y'].data.dtype)

    # forward
    if not v['output_is_variable']:
        findings.append(Finding('failed', '{} returned a {}, expected a Variable'.format(
            what, v['y_info']['type']), case='forward.type', evidence={'output': v['y_info']}))
    if probe.device != v['y'].device:
        findings.append(Finding('failed', 'the output of {} is on the {}, its inputs on the {}'.format(
            what, _where(v['y'].device), _where(probe.device)), case='forward.device',
            evidence={'output': v['y_info']}, hint='pick the array module from the input: '
            'xp = cuda.get_array_module(x)'))
    forward_wrong = False
    if ref is not None:
        c = compare(y, ref['y'].data, **tol)
        forward_wrong = not c.ok
        findings.append(Finding('passed' if c.ok else 'failed',
                                'forward value of {} {} the reference'.format(
                                    what, 'matches' if c.ok else 'differs from'),
                                case='forward.value', evidence=dict(c.evidence, output=v['y_info']),
                                hint=FORWARD_HINT.format(what) if forward_wrong else ''))

    asked = probe.params.get('gy', False)
    if not asked:
        return findings
    missing = _missing(v, probe.params, wrt)
    if missing:   # what the probe asked for and did not get fails: it is never a skipped check
        findings.append(Finding('failed', 'the report of {} lacks {}, which this check asked '
                                'for'.format(what, missing), case='grad.present',
                                evidence={'missing': missing}))
        return findings
    gy = upstream(probe.seed, y.shape, y.dtype)
    for k, i in enumerate(wrt):
        g = v['grads'][k]
        name = 'input {}'.format(i)
        if g is None:
            findings.append(Finding('failed', 'after backward, {} of {} has no gradient (grad is '
                                    'None)'.format(name, what), case='grad.present',
                                    hint=NO_GRADIENT_HINT.format(what=what, i=i)))
            continue
        x = np.asarray(args[i])
        if g.shape != x.shape:
            findings.append(Finding('failed', 'the gradient of {} has shape {}, the input has shape '
                                    '{}'.format(name, list(g.shape), list(x.shape)),
                                    case='grad.shape', hint='a broadcast input needs its gradient '
                                    'summed back to its shape (sum_to)'))
            continue
        if g.dtype.kind != 'f':
            findings.append(Finding('failed', 'the gradient of {} has dtype {}, expected floating '
                                    'point'.format(name, g.dtype), case='grad.dtype'))
        if g.device != probe.device:
            findings.append(Finding('failed', 'the gradient of {} is on the {}, its input on the '
                                    '{}'.format(name, _where(g.device), _where(probe.device)),
                                    case='grad.device', evidence={'grad': v['grad_info'][k]},
                                    hint='backward must create its arrays on the data\'s device'))
        after = v['inputs_after'][k].data
        if not np.array_equal(after, x):
            findings.append(Finding('failed', '{} modified its input {} in place'.format(what, i),
                                    case='input.unchanged'))
        if ref is not None:
            rg = ref['grads'][k]
            if rg is not None:
                c = compare(g.data, rg.data, **tolerance_for(g.dtype, inp.tolerance, rg.data.dtype))
                findings.append(Finding('passed' if c.ok else 'failed',
                                        'gradient of {} wrt {} {} the reference'.format(
                                            what, name, 'matches' if c.ok else 'differs from'),
                                        case='grad.reference', evidence=c.evidence,
                                        hint='' if c.ok else _hint(c.evidence, forward_wrong)))
    if probe.params.get('points'):
        layout = _draw_all(params, probe.seed)[3]
        findings.extend(_numeric(v, gy, wrt, args, layout, inp.tolerance, what, forward_wrong))
    if probe.params.get('zero_gy'):
        bad = [i for k, i in enumerate(wrt) if v['zero_grads'][k] is not None
               and np.any(v['zero_grads'][k].data != 0)]
        findings.append(Finding('failed' if bad else 'passed',
                                'with a zero upstream gradient, inputs {} still get a non-zero '
                                'gradient'.format(bad) if bad else
                                'zero upstream gradient gives zero gradients',
                                case='grad.zero_upstream',
                                hint='multiply by gy in backward' if bad else ''))
    return findings


def _missing(v, params, wrt):
    """What a gradient probe asked for and its report lacks (a gradient per argument of `wrt`,
    a forward value per perturbed point, the zero-upstream gradients), in words; '' if nothing."""
    expected = len(params.get('wrt') or wrt)
    if params.get('backward') == 'manual':
        expected = 1
    out = []
    for key, asked, n in (('grads', True, expected), ('grad_info', True, expected),
                          ('points', bool(params.get('points')), len(params.get('points') or ())),
                          ('zero_grads', bool(params.get('zero_gy')), expected),
                          ('inputs_after', True, len(params.get('wrt') or wrt))):
        if asked and (not isinstance(v.get(key), list) or len(v[key]) != n):
            out.append('{} ({} expected)'.format(key, n))
    return ', '.join(out)


def _numeric(v, gy, wrt, args, layout, overrides, what, forward_wrong=False):
    y = v['y'].data
    if y.dtype != np.float64:
        return [Finding('skipped', 'the forward of {} computes in {} for float64 inputs; the '
                        'numerical check needs float64, so it cannot judge (the reference '
                        'comparison still applies)'.format(what, y.dtype), case='grad.numeric')]
    outs = [p.data.astype(np.float64) for p in v['points']]
    tol = {'rtol': overrides.get('numeric_rtol', NUMERIC_TOLERANCE['rtol']),
           'atol': overrides.get('numeric_atol', NUMERIC_TOLERANCE['atol'])}
    findings = []
    if layout and layout[0][0] == 'element':
        numeric = [np.zeros(np.asarray(args[i]).shape) for i in wrt]
        for n, (_, k, j) in enumerate(layout):
            numeric[k].flat[j] = np.sum(gy * (outs[2 * n] - outs[2 * n + 1])) / (2 * H)
        for k, i in enumerate(wrt):
            g = v['grads'][k]
            if g is None or g.shape != numeric[k].shape:
                continue
            c = compare(g.data, numeric[k], **tol)
            findings.append(Finding('passed' if c.ok else 'failed',
                                    'backward of {} wrt input {} {} central differences with a '
                                    'random upstream gradient'.format(
                                        what, i, 'agrees with' if c.ok else 'disagrees with'),
                                    case='grad.numeric', evidence=dict(c.evidence, mode='per element'),
                                    hint='' if c.ok else _hint(c.evidence, forward_wrong)))
    else:
        analytic, numeric = [], []
        for n, (_, u) in enumerate(layout):
            numeric.append(np.sum(gy * (outs[2 * n] - outs[2 * n + 1])) / (2 * H))
            total = 0.0
            for k, i in enumerate(wrt):
                g = v['grads'][k]
                if g is not None and g.shape == u[k].shape:
                    total += float(np.sum(g.data * u[k]))
            analytic.append(total)
        scale = max(1.0, float(np.max(np.abs(numeric))))
        c = compare(np.array(analytic), np.array(numeric), rtol=tol['rtol'], atol=tol['atol'] * scale)
        findings.append(Finding('passed' if c.ok else 'failed',
                                'backward of {} {} directional derivatives (uᵀJᵀv for {} random '
                                'directions)'.format(what, 'agrees with' if c.ok else 'disagrees with',
                                                     len(layout)),
                                case='grad.numeric', evidence=dict(c.evidence, mode='directions')))
    return findings


def _where(device):
    return {'gpu': 'device', 'cpu': 'host'}.get(device, device)


# where the forward's value is wrong the gradients follow from it: the hint is about the forward
FORWARD_HINT = ('the forward of {} computes other values than the reference: look at its forward '
                'first (its gradients are judged against a right forward, so they fail with it)')
NO_GRADIENT_HINT = ('the backward of {what} gave no gradient for input {i}: does it `return` its '
                    'result, one gradient per input (a backward without `return` gives None)?')


def _hint(evidence, forward_wrong=False):
    """A hint for a wrong gradient: about the backward only when the forward matched."""
    if forward_wrong:
        return 'the forward is wrong too (see above): fix it first, then look at the backward'
    pattern = evidence.get('pattern', '')
    if pattern.startswith('all zeros'):
        return 'the backward returns zeros or is not connected to this input'
    if pattern.startswith('sign'):
        return 'a sign error in the backward formula'
    if pattern.startswith('off by'):
        return 'a missing or extra factor in the backward (e.g. 1/N of a mean, or the exponent)'
    if pattern.startswith('the right values'):
        return 'axes mixed up: a transpose or reshape in the backward uses the wrong order'
    return 'compare the backward formula with the derivative of the forward'


register(
    'grad.battery',
    summary='forward vs reference; gradient present, shaped, typed and placed; backward vs '
            'central differences with a random upstream gradient and vs the reference; zero '
            'upstream gives zero; inputs untouched',
    params={
        'fn': {'type': 'string', 'description': 'F.<name>, op.<name> or method.<name>'},
        'inputs': {'type': 'array', 'items': {'type': 'object'}, 'minItems': 1},
        'wrt': {'type': 'array', 'items': {'type': 'integer', 'minimum': 0}},
        'kwargs': {'type': 'object'},
        'device': {'enum': ['cpu', 'gpu']},
        'numeric': {'type': 'boolean'},
        'differential': {'type': 'boolean'},
        'zero_gy': {'type': 'boolean'},
        'reseed': {'type': ['integer', 'null']},
    },
    required=('fn', 'inputs'),
    plan=_battery_plan,
    judge=_battery_judge,
)
