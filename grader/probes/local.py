"""Run one scenario in this process, against the `dezero` package (or step file) in the current
folder — what a failure reproduction calls. It is the worker's code path without the worker:
for a learner debugging their own code, not for grading."""
import importlib
import os
import sys

from grader.probes.context import Api, Ctx


def run_scenario(name, params, *, seed, device='cpu', step=60, module='dezero'):
    from grader.probes import SCENARIOS
    import grader.probes.scenarios  # noqa: F401
    xp_device = None
    if device == 'gpu':
        from grader import simdevice
        xp_device = simdevice.install()
    sys.path.insert(0, os.getcwd())
    if module == 'dezero':
        mod, kind = importlib.import_module(module), 'package'
    else:   # a step file: its demo runs, and an error at its end keeps the names defined before
        from grader.probes.handlers import _exec_single_file
        mod, demo_error = _exec_single_file(module, os.path.join(os.getcwd(), module + '.py'))
        kind = 'single-file'
        if demo_error:
            print('(the demo code of {}.py ended in {}: {})'.format(
                module, demo_error['type'], demo_error['message']))
    import numpy as np
    params = dict(params)
    if name == 'fn.eval':   # arrays arrive as nested lists in a snippet
        params['args'] = [np.array(a) if isinstance(a, list) else a for a in params['args']]
        params['points'] = [[np.array(a) if isinstance(a, list) else a for a in p]
                            for p in params.get('points', [])]
    return SCENARIOS[name](Ctx(Api(mod, kind), device, seed, xp_device), **params)
