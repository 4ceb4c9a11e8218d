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
    mod = importlib.import_module(module)
    kind = 'package' if hasattr(mod, '__path__') else 'single-file'
    import numpy as np
    params = dict(params)
    if name == 'fn.eval':   # arrays arrive as nested lists in a snippet
        params['args'] = [np.array(a) if isinstance(a, list) else a for a in params['args']]
        params['points'] = [[np.array(a) if isinstance(a, list) else a for a in p]
                            for p in params.get('points', [])]
    return SCENARIOS[name](Ctx(Api(mod, kind), device, seed, xp_device), **params)
