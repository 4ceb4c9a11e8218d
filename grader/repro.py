"""Failure reproductions: a short standalone snippet per failed check, against the learner's own
package, with the seed that produced the failure.

For a gradient check the snippet spells out the inputs and the calls, so it runs with nothing but
NumPy and the learner's code. For a scenario check it re-runs the same scenario in-process through
`grader.probes.local` (the simulated device installed first when the check ran on the device) and
prints the report the check judged.
"""
from __future__ import annotations

import numpy as np

from grader.checks import CHECKS


def _literal(a):
    if isinstance(a, np.ndarray):
        body = np.array2string(a, separator=', ', precision=17, threshold=10 ** 6,
                               max_line_width=96)
        return 'np.array({}, dtype=np.{})'.format(body, a.dtype)
    return repr(a)


def repro_for(use, seed, sub, step) -> str:
    from grader.run import check_seed
    s = check_seed(seed, use.id)
    plan = CHECKS[use.check].plan(use.params, s)
    probe = plan.learner[0] if plan.learner else None
    header = ('# Reproduces {} (seed {}): run it from the folder that holds your {}.\n'
              '# Whole check: dezero-grade check . --step {} --seed {} --only {}\n').format(
        use.id, seed, 'dezero/ package' if sub.entry.kind == 'package' else sub.entry.path,
        step, seed, use.id)
    if probe is not None and probe.scenario == 'fn.eval' and probe.device == 'cpu':
        return header + _fn_snippet(probe, s)
    if probe is None:
        return header
    return header + (
        'from grader.probes.local import run_scenario\n'
        'report = run_scenario({!r}, {!r}, seed={}, device={!r}, step={}, module={!r})\n'
        'print(report)\n').format(probe.scenario, _plain(probe.params), probe.seed, probe.device,
                                  step, sub.entry.module)


def _plain(params):
    return {k: (v.tolist() if isinstance(v, np.ndarray) else v) for k, v in params.items()}


def _fn_snippet(probe, seed):
    p = probe.params
    fn = p['fn']
    lines = ['import numpy as np', 'import dezero', 'import dezero.functions as F',
             'from dezero import Variable', '']
    names = []
    for i, a in enumerate(p['args']):
        name = 'x{}'.format(i)
        names.append(name)
        if i in p['wrt']:
            lines.append('{} = Variable({})'.format(name, _literal(np.asarray(a))))
        else:
            lines.append('{} = {}'.format(name, _literal(a)))
    kwargs = ''.join(', {}={!r}'.format(k, v) for k, v in p.get('kwargs', {}).items())
    kind, _, rest = fn.partition('.')
    if kind == 'F':
        call = 'F.{}({}{})'.format(rest, ', '.join(names), kwargs)
    elif kind == 'op':
        symbols = {'add': '{0} + {1}', 'radd': '{1} + {0}', 'sub': '{0} - {1}',
                   'rsub': '{1} - {0}', 'mul': '{0} * {1}', 'rmul': '{1} * {0}',
                   'div': '{0} / {1}', 'rdiv': '{1} / {0}', 'neg': '-{0}', 'pow': '{0} ** {1}'}
        call = symbols.get(rest, '{0}.' + rest + '({1})').format(*names, '')
    else:
        call = '{}.{}({})'.format(names[0], rest, ', '.join(names[1:]))
    if p.get('reseed') is not None:
        lines.append('np.random.seed({})'.format(p['reseed']))
    lines += ['y = {}'.format(call),
              '# the upstream gradient the check used (random, so a backward that ignores gy shows)',
              'gy = np.random.Generator(np.random.PCG64([{}, 7919])).standard_normal(y.shape)'
              '.astype(y.dtype)'.format(seed),
              'y.grad = Variable(gy)', 'y.backward()', 'print("y =", y)']
    for i in p['wrt']:
        lines.append('print("grad of x{0} =", x{0}.grad)'.format(i))
    return '\n'.join(lines) + '\n'
