"""Data-driven checks over any scenario: `expect` (stated expectations on what the learner's
code reported) and `reference.match` (the learner's report equals the reference's).

An expectation names a path into the scenario's report (`train_step.params[*]`), an operator
and a value, and says in words what it means. An assignment author writes new checks of this
kind without touching the engine. A phase of a scenario that raised (reported as
`{"raised": ..., "message": ...}`) fails every expectation that looks inside it, with the
exception as the message.
"""
from __future__ import annotations

import json

import numpy as np

from dezero_grader import contracts
from dezero_grader.checks import Plan, learner_error_finding, register
from dezero_grader.checks.compare import compare, tolerance_for
from dezero_grader.contracts.shapes import split_path as _split
from dezero_grader.records.dataflow import Finding, Probe
from dezero_grader.wire import Array


class Raised(Exception):
    def __init__(self, path, info):
        super().__init__(path)
        self.path = path
        self.info = info


def resolve(tree, path):
    """Values at a dotted path; `[*]` spreads over a list, `[3]` indexes it."""
    values = [tree]
    for part in _split(path):
        nxt = []
        for v in values:
            if isinstance(v, dict) and 'raised' in v and part != 'raised':
                raise Raised(path, v)
            if part == '*':
                if isinstance(v, dict):
                    nxt.extend(v.values())
                else:
                    nxt.extend(v)
            elif isinstance(part, int):
                nxt.append(v[part])
            else:
                if not isinstance(v, dict) or part not in v:
                    raise KeyError(path)
                nxt.append(v[part])
        values = nxt
    for v in values:
        if isinstance(v, dict) and 'raised' in v:
            raise Raised(path, v)
    return values


def _plain(v):
    if isinstance(v, Array):
        return v.data
    return v


OPS = {
    'eq': lambda a, b, tol: _eq(a, b),
    'ne': lambda a, b, tol: not _eq(a, b),
    'true': lambda a, b, tol: bool(a) is True,
    'false': lambda a, b, tol: bool(a) is False,
    'none': lambda a, b, tol: a is None,
    'not_none': lambda a, b, tol: a is not None,
    'in': lambda a, b, tol: a in b,
    'ge': lambda a, b, tol: a >= b,
    'le': lambda a, b, tol: a <= b,
    'len': lambda a, b, tol: len(a) == b,
    'close': lambda a, b, tol: compare(_plain(a), np.asarray(b), **tol).ok,
    'finite': lambda a, b, tol: bool(np.all(np.isfinite(np.asarray(_plain(a), dtype=float)))),
}


def _eq(a, b):
    a = _plain(a)
    if isinstance(a, np.ndarray):
        return a.shape == np.asarray(b).shape and bool(np.all(a == np.asarray(b)))
    return a == b


def raised_phases(tree, path='', depth=12):
    """(path, {'raised', 'message', 'where'}) of every phase of a report that raised, in order
    (scenario reports are shallow; deeper than `depth` is not looked at)."""
    if _raised(tree):
        return [(path, tree)]
    out = []
    if depth <= 0:
        return out
    if isinstance(tree, dict):
        for key, value in tree.items():
            out.extend(raised_phases(value, '{}.{}'.format(path, key) if path else str(key),
                                     depth - 1))
    elif isinstance(tree, list):
        for i, value in enumerate(tree):
            out.extend(raised_phases(value, '{}[{}]'.format(path, i), depth - 1))
    return out


def _at(info):
    return ' at {}'.format(info['where']) if info.get('where') else ''


def _raised_text(info):
    return 'your code raised {}: {}{}'.format(info.get('raised'), info.get('message', ''), _at(info))


def _because(report, reference=None):
    """Why a value is missing from the learner's report, when a phase of it raised (and the same
    phase of the reference's did not): the first such exception as text and evidence."""
    theirs = {p for p, _ in raised_phases(reference)} if reference is not None else set()
    for path, info in raised_phases(report):
        if path not in theirs:
            return (' because {} (in {})'.format(_raised_text(info), path or 'the scenario'),
                    {'raised': info.get('raised'), 'exception_message': info.get('message', ''),
                     'where': info.get('where', ''), 'raised_in': path})
    return '', {}


def _judge_expectation(report, exp, tol):
    path, op = exp['path'], exp['op']
    try:
        found = resolve(report, path)
    except Raised as r:
        return _raised_finding(exp, path, r)
    except (KeyError, IndexError, TypeError):
        return _nothing(report, exp, path)
    if not found:
        return _nothing(report, exp, path)
    # Resolving the other side and comparing are part of judging what the learner's code gave:
    # a value of an unexpected kind there fails this expectation; it never escapes the judge.
    try:
        bad = _mismatches(report, exp, found, tol)
    except Raised as r:
        return _raised_finding(exp, path, r)
    except (KeyError, IndexError):
        return _nothing(report, exp, exp.get('other', path))
    except Exception as e:
        return Finding('failed', '{}: the value reported at {} cannot be compared ({}: {})'.format(
            exp.get('failure', 'expected: ' + exp['message']), path, type(e).__name__,
            str(e)[:200]), evidence={'path': path, 'op': op, 'found': _shown(found[0])},
            hint=exp.get('hint', ''), case=exp.get('case', path))
    ok = not bad
    evidence = {'path': path, 'op': op}
    because = ''
    if bad and op in _SAID:   # nothing to compare with: the message says what was expected
        evidence['found'] = _SAID[op](bad[0][0])
        evidence['mismatches'] = len(bad)
        evidence['checked'] = len(found)
    elif bad:
        evidence['found'] = _show(bad[0][0])
        evidence['expected'] = _show(bad[0][1])
        evidence['mismatches'] = len(bad)
        evidence['checked'] = len(found)
        if op == 'len':   # a list cut short: by an exception, when a phase raised
            because, more = _because(report)
            evidence.update(more)
    return Finding('passed' if ok else 'failed', exp['message'] if ok else
                   exp.get('failure', 'expected: ' + exp['message']) + because,
                   evidence=evidence, hint='' if ok else exp.get('hint', ''),
                   case=exp.get('case', path))


def _raised_finding(exp, path, r):
    return Finding('failed', '{}: {} raised {}: {}{}'.format(
        exp['message'], r.path.split('.')[0], r.info.get('raised'), r.info.get('message', ''),
        _at(r.info)),
        evidence={'path': path, 'raised': r.info.get('raised'),
                  'exception_message': r.info.get('message', ''),
                  'where': r.info.get('where', '')},
        hint=exp.get('hint', ''), case=exp.get('case', path))


def _mismatches(report, exp, found, tol):
    """(found, expected) pairs where the expectation does not hold."""
    op = exp['op']
    if 'other' in exp:   # compare with another path of the same report
        expected_values = resolve(report, exp['other'])
        if len(expected_values) != len(found):
            raise KeyError(exp['other'])
    else:
        expected_values = [exp.get('value')] * len(found)
    bad = []
    for a, b in zip(found, expected_values):
        t = tol
        if op == 'close':   # the lower precision of the two sides decides
            pa, pb = _plain(a), _plain(b)
            t = tolerance_for(pa.dtype if isinstance(pa, np.ndarray) else np.float64, tol,
                              pb.dtype if isinstance(pb, np.ndarray) else np.float64)
        if not OPS[op](a, _plain(b), t):
            bad.append((a, b))
    return bad


def _shown(v):
    try:
        return _show(v)
    except Exception:
        return type(v).__name__


# the expectations that compare with no value, and what was found instead, as a sentence
_SAID = {
    'true': lambda a: 'it is not so (the code reports {})'.format(_said_value(a)),
    'false': lambda a: 'it is so (the code reports {})'.format(_said_value(a)),
    'none': lambda a: 'a value where None was expected: {}'.format(_said_value(a)),
    'not_none': lambda a: 'None, where a value was expected',
}


def _said_value(a):
    shown = _show(a)
    if isinstance(shown, bool):
        return 'false' if not shown else 'true'
    text = json.dumps(shown, default=str) if not isinstance(shown, str) else shown
    return text if len(text) <= 80 else text[:77] + '...'


def _nothing(report, exp, path):
    """An expectation whose path holds nothing: say which exception left it empty, if one did."""
    because, evidence = _because(report)
    return Finding('failed', '{}: nothing was reported at {}{}'.format(exp['message'], path, because),
                   evidence=dict(evidence, path=path), hint=exp.get('hint', ''),
                   case=exp.get('case', path))


def _show(v):
    v = _plain(v)
    if isinstance(v, np.ndarray):
        flat = v.ravel()[:8]
        return {'shape': list(v.shape), 'dtype': str(v.dtype), 'head': [float(x) for x in flat]
                if v.dtype.kind in 'fiub' else [str(x) for x in flat]}
    if isinstance(v, (list, tuple)) and len(v) > 12:
        return list(v[:12]) + ['…']
    return v


def _scenario_plan(params, seed, reference):
    probe = Probe(params['scenario'], dict(params.get('args', {})), seed, params.get('device', 'cpu'))
    ref = (Probe(params['scenario'], dict(params.get('args', {})), seed,
                 params.get('reference_device', 'cpu')),) if reference else ()
    return Plan(learner=(probe,), reference=ref)


def _learner_report(inp):
    obs = inp.learner[inp.plan.learner[0]]
    if not obs.ok:
        return None, [learner_error_finding(obs, inp.params.get('what', inp.params['scenario']))]
    if isinstance(obs.value, dict) and '__skipped__' in obs.value:
        return None, [Finding('skipped', obs.value['__skipped__'])]
    return obs.value, []


def _expect_judge(inp):
    report, early = _learner_report(inp)
    if early:
        return early
    return [_judge_expectation(report, exp, inp.tolerance) for exp in inp.params['expect']]


EXPECTATION = {
    'type': 'object',
    'properties': {
        'path': {'type': 'string'}, 'op': {'enum': sorted(OPS)}, 'value': {},
        'other': {'type': 'string'}, 'message': {'type': 'string'},
        'failure': {'type': 'string'}, 'hint': {'type': 'string'}, 'case': {'type': 'string'},
    },
    'required': ['path', 'op', 'message'],
    'additionalProperties': False,
}
SCENARIO_PARAMS = {
    'scenario': {'type': 'string'},
    'args': {'type': 'object'},
    'device': {'enum': ['cpu', 'gpu']},
    'what': {'type': 'string', 'description': 'what the scenario does, for messages'},
}

def _expectation_paths(params):
    out = []
    for i, exp in enumerate(params['expect']):
        out.append(('expect[{}].path'.format(i), exp['path']))
        if 'other' in exp:
            out.append(('expect[{}].other'.format(i), exp['other']))
    return out


register(
    'expect',
    summary='stated expectations on what a scenario reports about the learner\'s code',
    params=dict(SCENARIO_PARAMS, expect={'type': 'array', 'items': EXPECTATION, 'minItems': 1}),
    required=('scenario', 'expect'),
    plan=lambda params, seed: _scenario_plan(params, seed, reference=False),
    judge=_expect_judge,
    report_paths=_expectation_paths,
)


def _match_judge(inp):
    report, early = _learner_report(inp)
    if early:
        return early
    if isinstance(report, dict) and 'unreferenced' in report:
        # no scenario grades without the reference's numbers any more (recurrent layers are
        # judged on raw values by recurrent.match), so this is a forged answer
        # (`dezero_grader.grading.trust.forged_reports` ends the grading before a judge sees one: the second line)
        if not contracts.load_all()[inp.params['scenario']].may_send('unreferenced'):
            return [Finding('error', '{}: the process running your code answered with a section '
                            'its scenario never sends'.format(
                                inp.params.get('what', inp.params['scenario'])))]
    robs = inp.reference[inp.plan.reference[0]]
    if not robs.ok:
        raise RuntimeError('the reference failed on scenario {}: {}: {}'.format(
            inp.params['scenario'], robs.error.type, robs.error.message))
    ignore = set(inp.params.get('ignore', ()))
    mismatches = []
    _diff(report, robs.value, '', ignore, inp.tolerance, mismatches)
    if not mismatches:
        return [Finding('passed', '{} matches the reference'.format(
            inp.params.get('what', inp.params['scenario'])))]
    first = mismatches[0]
    because, more = ('', {}) if 'raised' in first else _because(report, robs.value)
    return [Finding('failed', '{} differs from the reference at {}: {}{}'.format(
        inp.params.get('what', inp.params['scenario']), first['path'] or '(top)', first['problem'],
        because),
        evidence=dict({'first_mismatch': first, 'mismatches': len(mismatches),
                       'paths': [m['path'] for m in mismatches[:10]]}, **more),
        hint=inp.params.get('hint', ''))]


def _raised(v):
    return isinstance(v, dict) and 'raised' in v and set(v) <= {'raised', 'message', 'where'}


def _diff(a, b, path, ignore, tol, out):
    if path in ignore or len(out) >= 50:
        return
    if _raised(a) and not _raised(b):   # a phase of the learner's raised: say what it raised
        out.append({'path': path, 'problem': _raised_text(a), 'raised': a['raised'],
                    'exception_message': a.get('message', ''), 'where': a.get('where', '')})
        return
    if isinstance(b, dict) and isinstance(a, dict):
        for key in b:
            sub = '{}.{}'.format(path, key) if path else key
            if sub in ignore:
                continue
            if key not in a:
                out.append({'path': sub, 'problem': 'missing'})
            else:
                _diff(a[key], b[key], sub, ignore, tol, out)
        return
    if isinstance(b, list) and isinstance(a, list):
        if len(a) != len(b):
            out.append({'path': path, 'problem': 'length {} instead of {}'.format(len(a), len(b))})
            return
        for i, (x, y) in enumerate(zip(a, b)):
            _diff(x, y, '{}[{}]'.format(path, i), ignore, tol, out)
        return
    if isinstance(b, Array) or isinstance(b, (float, np.floating)):
        fa, fb = _plain(a), _plain(b)
        try:
            fa_arr = np.asarray(fa, dtype=np.float64)
        except (TypeError, ValueError):
            out.append({'path': path, 'problem': 'found {!r}, expected a number'.format(fa)})
            return
        dtype = fa.dtype if isinstance(fa, np.ndarray) else np.float64
        other = fb.dtype if isinstance(fb, np.ndarray) else np.float64
        c = compare(fa_arr, np.asarray(fb, dtype=np.float64), **tolerance_for(dtype, tol, other))
        if not c.ok:
            out.append({'path': path, 'problem': 'values differ', **c.evidence})
        return
    if _plain(a) != _plain(b):
        out.append({'path': path, 'problem': 'found {!r}, expected {!r}'.format(
            _show(a), _show(b))})


register(
    'reference.match',
    summary='what a scenario reports about the learner\'s code equals the reference\'s report',
    params=dict(SCENARIO_PARAMS, ignore={'type': 'array', 'items': {'type': 'string'}},
                hint={'type': 'string'}),
    required=('scenario',),
    plan=lambda params, seed: _scenario_plan(params, seed, reference=True),
    judge=_match_judge,
    report_paths=lambda params: [('ignore[{}]'.format(i), p)
                                 for i, p in enumerate(params.get('ignore', ()))],
)
