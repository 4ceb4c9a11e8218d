"""Every named sub-check of the gradient battery can fail on its own.

The battery's judge is fed what a worker would report for a correct `sin` (computed here with
NumPy, so the reference and the learner agree), then one thing is broken at a time: the named
case that must fail is exactly the one for that break. The faults of the catalogue show most
cases failing on real variants (`selftest` prints which); this shows all of them, including
those no realistic fault reaches on the simulated device.
"""
import ast
import inspect

import numpy as np
import pytest

from dezero_grader.checks import JudgeInput
from dezero_grader.checks import gradients
from dezero_grader.checks.gradients import BATTERY_CASES, _battery_judge, _battery_plan, upstream
from dezero_grader.records.dataflow import Observation
from dezero_grader.wire import Array

SEED = 11
PARAMS = {'fn': 'F.sin', 'inputs': [{'shape': [2, 3], 'domain': 'any'}]}


def _report(probe, f, df):
    """What `fn.eval` reports for a correct implementation of f (derivative df)."""
    x = np.asarray(probe.params['args'][0], dtype=np.float64)
    y = f(x)
    value = {'y': Array(y, probe.device), 'y_info': {'type': 'Variable', 'device': probe.device},
             'output_is_variable': True}
    if probe.params.get('gy'):
        gy = upstream(probe.seed, y.shape, y.dtype)
        value['grads'] = [Array(gy * df(x), probe.device)]
        value['grad_info'] = [{'type': 'Variable', 'device': probe.device}]
        value['inputs_after'] = [Array(x.copy(), probe.device)]
    if probe.params.get('points'):
        value['points'] = [Array(f(np.asarray(p[0], dtype=np.float64)), probe.device)
                           for p in probe.params['points']]
    if probe.params.get('zero_gy'):
        value['zero_grads'] = [Array(np.zeros_like(x), probe.device)]
    return value


def judge(break_it=None):
    plan = _battery_plan(PARAMS, SEED)
    learner = _report(plan.learner[0], np.sin, np.cos)
    if break_it:
        break_it(learner)
    reference = _report(plan.reference[0], np.sin, np.cos)
    inp = JudgeInput(params=PARAMS, tolerance={}, plan=plan,
                     learner={plan.learner[0]: Observation(plan.learner[0], learner)},
                     reference={plan.reference[0]: Observation(plan.reference[0], reference)})
    return _battery_judge(inp)


def failing_cases(findings):
    return {f.case for f in findings if f.status == 'failed'}


def _grad(v, fn):
    v['grads'][0] = fn(v['grads'][0])


BREAKS = {
    'forward.type': lambda v: v.update(output_is_variable=False),
    'forward.device': lambda v: v.update(y=Array(v['y'].data, 'gpu')),
    'forward.value': lambda v: v.update(y=Array(v['y'].data + 0.5, 'cpu')),
    'grad.present': lambda v: v['grads'].__setitem__(0, None),
    'grad.shape': lambda v: _grad(v, lambda g: Array(g.data.ravel(), g.device)),
    'grad.dtype': lambda v: _grad(v, lambda g: Array(np.round(g.data).astype(np.int64), g.device)),
    'grad.device': lambda v: _grad(v, lambda g: Array(g.data, 'gpu')),
    'input.unchanged': lambda v: v['inputs_after'].__setitem__(
        0, Array(np.maximum(v['inputs_after'][0].data, 0), 'cpu')),
    'grad.reference': lambda v: _grad(v, lambda g: Array(-g.data, g.device)),
    'grad.numeric': lambda v: _grad(v, lambda g: Array(-g.data, g.device)),
    'grad.zero_upstream': lambda v: v['zero_grads'].__setitem__(0, Array(np.ones((2, 3)), 'cpu')),
}


def test_a_correct_report_passes_every_sub_check():
    findings = judge()
    assert failing_cases(findings) == set()
    assert {'forward.value', 'grad.reference', 'grad.numeric', 'grad.zero_upstream'} <= {
        f.case for f in findings}


@pytest.mark.parametrize('case', BATTERY_CASES)
def test_each_named_sub_check_fails_on_its_own_break(case):
    failed = failing_cases(judge(BREAKS[case]))
    assert case in failed
    # the break is about this case: the forward stays right when only the gradient is broken
    if case.startswith('grad.') or case == 'input.unchanged':
        assert not any(c.startswith('forward.') for c in failed), failed


def test_the_case_list_is_the_battery_s_own():
    """BATTERY_CASES names exactly the cases the battery's judge can report (read from its
    source), so a new sub-check cannot be added without a proof that it fails."""
    source = inspect.getsource(gradients._battery_judge) + inspect.getsource(gradients._numeric)
    named = {kw.value.value for node in ast.walk(ast.parse(source)) if isinstance(node, ast.Call)
             for kw in node.keywords if kw.arg == 'case' and isinstance(kw.value, ast.Constant)}
    assert named == set(BATTERY_CASES) == set(BREAKS)


def test_the_large_domain_overflows_a_naive_softmax_on_every_draw():
    """Logits of the `large` domain exist to catch a softmax without the max subtracted: drawn as
    N(0, 1) × 400 alone, only about a third of the seeds had a logit past exp's overflow."""
    import numpy as np
    from dezero_grader.checks.gradients import draw
    for seed in range(200):
        x = draw({'shape': [3, 4], 'domain': 'large'}, np.random.default_rng(seed))
        with np.errstate(over='ignore', invalid='ignore'):
            naive = np.exp(x) / np.exp(x).sum(axis=1, keepdims=True)
        assert not np.isfinite(naive).all(), seed
