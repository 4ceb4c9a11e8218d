"""The gradient trajectory (`graph.trajectory`): where in the graph a backward goes wrong.

It runs a composite expression (`dezero_grader.contracts.expressions`) on both sides through
`graph.trace` and compares its value and input gradients with the reference's; on a mismatch it
walks the learner's graph in backward order: the first function whose output gradients agree
with the reference while an input gradient does not is where the backward bug most likely is.
The inputs are drawn here, in the trusted process, as the gradient battery draws them
(`dezero_grader.checks.gradients.draw`).
"""
from __future__ import annotations

import numpy as np

from dezero_grader.checks import Plan, learner_error_finding, register
from dezero_grader.checks.compare import compare, tolerance_for
from dezero_grader.checks.gradients import _hint, draw
from dezero_grader.records.dataflow import Finding, Probe


def _trajectory_plan(params, seed):
    rng = np.random.Generator(np.random.PCG64(seed))
    args = [np.asarray(draw(s, rng)) if 'value' not in s else np.asarray(s['value'], dtype=float)
            for s in params['inputs']]
    labels = [i for i, s in enumerate(params['inputs']) if s.get('domain') == 'labels']
    probe_params = {'expr': params['expr'], 'args': args, 'labels': labels}
    device = params.get('device', 'cpu')
    return Plan(learner=(Probe('graph.trace', probe_params, seed, device),),
                reference=(Probe('graph.trace', probe_params, seed, 'cpu'),))


def _same_structure(a, b):
    return [n['type'] for n in a['nodes']] == [n['type'] for n in b['nodes']] and \
        len(a['variables']) == len(b['variables'])


def _grad_ok(g, rg, tol):
    if g is None or rg is None:
        return g is None and rg is None
    g = g.data if hasattr(g, 'data') and not isinstance(g, np.ndarray) else g
    rg = rg.data if hasattr(rg, 'data') and not isinstance(rg, np.ndarray) else rg
    return compare(np.asarray(g), np.asarray(rg), **tolerance_for(np.asarray(g).dtype, tol,
                                                                  np.asarray(rg).dtype)).ok


def _trajectory_judge(inp):
    probe = inp.plan.learner[0]
    obs = inp.learner[probe]
    what = inp.params.get('what', inp.params['expr'])
    if not obs.ok:
        return [learner_error_finding(obs, 'evaluating {}'.format(what))]
    robs = inp.reference[inp.plan.reference[0]]
    if not robs.ok:
        raise RuntimeError('the reference failed on {}: {}'.format(what, robs.error.message))
    v, r = obs.value, robs.value
    findings = []
    c = compare(v['y'].data, r['y'].data, **tolerance_for(v['y'].dtype, inp.tolerance,
                                                           r['y'].data.dtype))
    findings.append(Finding('passed' if c.ok else 'failed', 'the value of {} {} the reference'.format(
        what, 'matches' if c.ok else 'differs from'), case='value', evidence=c.evidence))
    bad_inputs = []
    if len(v['grads']) != len(r['grads']):   # one gradient per argument, or nothing is judged
        findings.append(Finding('failed', 'the report of {} holds {} input gradients for {} '
                                'inputs'.format(what, len(v['grads']), len(r['grads'])),
                                case='grad'))
        return findings
    for i, (g, rg) in enumerate(zip(v['grads'], r['grads'])):
        if rg is None:
            continue
        if g is None:
            bad_inputs.append(i)
            continue
        ci = compare(g.data, rg.data, **tolerance_for(g.dtype, inp.tolerance, rg.data.dtype))
        if not ci.ok:
            bad_inputs.append(i)
            findings.append(Finding('failed', 'the gradient of input {} of {} differs from the '
                                    'reference'.format(i, what), case='grad', evidence=ci.evidence,
                                    hint=_hint(ci.evidence)))
    if not bad_inputs:
        findings.append(Finding('passed', 'every input gradient of {} matches the reference'.format(
            what), case='grad'))
        return findings
    graph = v['graph']
    evidence = {'graph': _graph_summary(graph)}
    if _same_structure(graph, r['graph']):
        lv, rv = graph['variables'], r['graph']['variables']
        ok = [_grad_ok(a['grad'], b['grad'], inp.tolerance) for a, b in zip(lv, rv)]
        evidence['graph'] = _graph_summary(graph, r['graph'], ok)
        for k, node in enumerate(graph['nodes']):
            outs_ok = all(ok[o] for o in node['outputs'])
            ins_ok = all(ok[i] for i in node['inputs'])
            if outs_ok and not ins_ok:
                evidence['divergent_node'] = k
                evidence['graph']['nodes'][k]['divergent'] = True
                findings.append(Finding(
                    'failed', 'backward of {} (node {}, generation {}) receives the right output '
                    'gradient but produces a wrong input gradient'.format(
                        node['type'], k, node['generation']), case='trajectory', evidence=evidence,
                    hint='look at {}.backward'.format(node['type'])))
                break
        else:
            findings.append(Finding('failed', 'the gradients diverge, but no single function is to '
                                    'blame (the traversal order or the accumulation is wrong)',
                                    case='trajectory', evidence=evidence,
                                    hint='check Variable.backward: generations, the seen set, '
                                         'accumulation'))
    else:
        findings.append(Finding('failed', 'your graph has a different structure from the reference\'s '
                                '(allowed), so the faulty function cannot be located by comparison',
                                case='trajectory', evidence=evidence))
    return findings


_LABEL_CHARS = 40
_SUMMARY_KEYS = ('min', 'max', 'mean', 'size')


def _bounded_summary(s):
    """A value summary from the worker, kept only in its small known form (it crossed from
    learner code: a name or a summary of another shape is cut or dropped, never trusted)."""
    if not isinstance(s, dict):
        return None
    out = {k: s[k] for k in _SUMMARY_KEYS if isinstance(s.get(k), (int, float))
           and not isinstance(s.get(k), bool)}
    head = s.get('head')
    if isinstance(head, list):
        out['head'] = [x for x in head[:4] if isinstance(x, (int, float)) and not isinstance(x, bool)]
    return out or None


def _text(value):
    return value[:_LABEL_CHARS] if isinstance(value, str) else None


def _graph_summary(graph, reference=None, grads_ok=None):
    """The graph for the evidence: its nodes, and per variable its shape, dtype, name (the
    learner's, if set), label and the summaries of its value and gradient; with the reference's
    graph of the same structure also the reference's gradient and whether they agree."""
    variables = []
    for i, var in enumerate(graph['variables']):
        out = {k: v for k, v in var.items()
               if k not in ('grad', 'name', 'label', 'data_summary', 'grad_summary')}
        out['name'] = _text(var.get('name'))
        out['label'] = _text(var.get('label')) or 'v{}'.format(i)
        for key in ('data_summary', 'grad_summary'):
            summary = _bounded_summary(var.get(key))
            if summary is not None:
                out[key] = summary
        if reference is not None:
            expected = _bounded_summary(reference['variables'][i].get('grad_summary'))
            if expected is not None:
                out['expected_grad_summary'] = expected
            out['grad_ok'] = bool(grads_ok[i])
        variables.append(out)
    return {'nodes': [dict(n) for n in graph['nodes']], 'variables': variables}


register(
    'graph.trajectory',
    summary='a composite expression\'s value and input gradients against the reference; on a '
            'mismatch, the first function whose output gradient agrees but input gradient does not',
    params={'expr': {'type': 'string'}, 'inputs': {'type': 'array', 'items': {'type': 'object'}},
            'device': {'enum': ['cpu', 'gpu']}, 'what': {'type': 'string'}},
    required=('expr', 'inputs'),
    plan=_trajectory_plan,
    judge=_trajectory_judge,
)
