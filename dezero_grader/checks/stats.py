"""`dropout.statistics`: inverted dropout judged statistically, with a stated confidence.

The inputs x are n positive values (`dezero_grader.contracts.modes.dropout_inputs`); the learner's `F.dropout` runs once
per ratio r in training mode, its generator seeded from the check's seed. No mask is compared with the reference's (a learner may draw it
any way the book allows). Three findings per ratio:

* the share of kept units is 1 − r within z standard errors of a binomial proportion,
  sqrt(r(1 − r)/n);
* every kept unit equals x / (1 − r) (the scale of *inverted* dropout; tolerance by dtype);
* the expectation is preserved: mean(y / x) is 1 within z standard errors, sqrt(r / ((1 − r) n)).

With z = 5 a correct dropout fails a finding with probability below 6e-7 (two-sided normal
tail); the faults it targets (no rescaling, dropping in test mode) are off by far more.
"""
from __future__ import annotations

import math

import numpy as np

from dezero_grader.checks import Plan, learner_error_finding, register
from dezero_grader.checks.compare import compare, tolerance_for
from dezero_grader.contracts.modes import dropout_inputs, ratio_key
from dezero_grader.records.dataflow import Finding, Probe


def _two_sided_tail(z):
    return math.erfc(z / math.sqrt(2.0))


def _plan(params, seed):
    args = {'n': int(params['n']), 'ratios': list(params['ratios'])}
    return Plan(learner=(Probe('modes.dropout_sample', args, seed, params.get('device', 'cpu')),))


def _judge(inp):
    probe = inp.plan.learner[0]
    obs = inp.learner[probe]
    if not obs.ok:
        return [learner_error_finding(obs, 'calling F.dropout in training mode')]
    if '__skipped__' in obs.value:
        return [Finding('skipped', obs.value['__skipped__'])]
    z = float(inp.params.get('z', 5.0))
    n = probe.params['n']
    x = dropout_inputs(n)
    confidence = 'z = {:g} standard errors; a correct dropout fails this with probability ' \
                 '{:.1g}'.format(z, _two_sided_tail(z))
    findings = []
    if obs.value.get('train_flag') is False:
        findings.append(Finding('failed', 'Config.train is False when no test_mode() is active: '
                                'the default mode must be training', case='default_mode',
                                hint='class Config: train = True'))
    for r in inp.params['ratios']:
        key = ratio_key(r)
        found = obs.value.get(key)
        case = 'dropout[ratio={:g}]'.format(r)
        if isinstance(found, dict) and 'raised' in found:
            findings.append(Finding('failed', 'F.dropout(x, {:g}) raised {}: {}'.format(
                r, found['raised'], found.get('message', '')), case=case))
            continue
        y = found.data
        if y.shape != x.shape:
            findings.append(Finding('failed', 'F.dropout(x, {:g}) has shape {}, x has shape '
                                    '{}'.format(r, list(y.shape), list(x.shape)),
                                    case=case + '.shape'))
            continue
        if probe.device != found.device:
            findings.append(Finding('failed', 'the output of dropout is on the {}, x on the '
                                    '{}'.format(found.device, probe.device), case=case + '.device',
                                    hint='draw the mask with xp = cuda.get_array_module(x)'))
        kept = y != 0
        keep = 1.0 - r
        share = float(np.mean(kept))
        se = math.sqrt(r * keep / n)
        ok = abs(share - keep) <= z * se
        findings.append(Finding(
            'passed' if ok else 'failed',
            'share of kept units {:.4f}, expected {:.4f} ± {:.4f} ({})'.format(
                share, keep, z * se, confidence), case=case + '.kept_share',
            evidence={'n': n, 'kept': int(kept.sum()), 'expected_share': keep,
                      'standard_error': se, 'z': z},
            hint='' if ok else 'in training, keep each unit with probability 1 - ratio '
                               '(mask = rand(*x.shape) > ratio); in test mode, drop nothing'))
        if kept.any():
            c = compare(y[kept], x[kept] / keep, **tolerance_for(y.dtype, inp.tolerance))
            findings.append(Finding(
                'passed' if c.ok else 'failed',
                'kept units are {} x / (1 - ratio)'.format(
                    'scaled to' if c.ok else 'not scaled to'),
                case=case + '.scale', evidence=c.evidence,
                hint='' if c.ok else 'inverted dropout: y = x * mask / (1 - ratio), so that the '
                                     'expectation of y is x and test mode needs no rescaling'))
        mean = float(np.mean(y / x))
        se_mean = math.sqrt(r / (keep * n))
        ok = abs(mean - 1.0) <= z * se_mean
        findings.append(Finding(
            'passed' if ok else 'failed',
            'mean of y / x over {} units is {:.4f}, expected 1 ± {:.4f}: the expectation is {} '
            '({})'.format(n, mean, z * se_mean, 'preserved' if ok else 'not preserved',
                          confidence), case=case + '.expectation',
            evidence={'mean_ratio': mean, 'standard_error': se_mean, 'z': z},
            hint='' if ok else 'scale the kept units by 1 / (1 - ratio) in training'))
    return findings


register(
    'dropout.statistics',
    summary='training-mode dropout: share of kept units, inverted scaling and preserved '
            'expectation, judged within z standard errors',
    params={'n': {'type': 'integer', 'minimum': 1000},
            'ratios': {'type': 'array', 'minItems': 1,
                       'items': {'type': 'number', 'exclusiveMinimum': 0, 'exclusiveMaximum': 1}},
            'z': {'type': 'number', 'minimum': 3},
            'device': {'enum': ['cpu', 'gpu']}},
    required=('n', 'ratios'),
    plan=_plan,
    judge=_judge,
)
