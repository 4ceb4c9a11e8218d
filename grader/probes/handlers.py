"""The worker's request handlers: `setup` loads the submission, `probe` runs one scenario.

`grader.worker` reads each request frame and calls `HANDLERS[op](msg)`; what a handler returns
is sent back as plain data. An exception raised by learner code inside a handler travels back as
an error answer (the worker formats it), never as a verdict: the trusted process decides.
"""
import importlib
import importlib.abc
import os
import sys
import time
import types

from grader import wire
from grader.probes import SCENARIOS
from grader.probes.context import Api, Ctx
import grader.probes.scenarios  # noqa: F401  (fills SCENARIOS)

_state = {}


class _BlockReference(importlib.abc.MetaPathFinder):
    """Learner code must not borrow the reference implementation."""

    def find_spec(self, fullname, path=None, target=None):
        if fullname == 'reference' or fullname.startswith('reference.'):
            raise ModuleNotFoundError(
                'the grader\'s reference implementation is not available to submissions',
                name=fullname)
        return None


def _exec_single_file(module_name, path):
    """Run a step file as a module. A step file's demo may end in an error on purpose (the
    book's step 9 does): the names defined before it stay usable, and the error is reported."""
    module = types.ModuleType(module_name)
    module.__file__ = path
    sys.modules[module_name] = module
    with open(path, 'rb') as f:
        source = f.read()
    code = compile(source, path, 'exec')
    demo_error = None
    try:
        exec(code, module.__dict__)
    except SyntaxError:
        raise
    except BaseException as e:  # noqa: B902 - SystemExit in a demo is recorded, not obeyed
        demo_error = {'type': type(e).__name__, 'message': str(e)[:500]}
    return module, demo_error


def setup(msg):
    device_mode = msg.get('device_mode', 'cpu')   # cpu | sim | cuda
    entry = msg['entry']                           # {'kind', 'module', 'path'}
    xp_device = None
    if device_mode == 'sim':
        from grader import simdevice
        xp_device = simdevice.install(era=msg.get('era', 'current'))
    elif device_mode == 'cuda':
        import cupy
        xp_device = cupy
    else:
        # Without a device, `import cupy` fails the way it does on a machine without CuPy.
        sys.modules['cupy'] = None
        sys.modules['cupyx'] = None

    if entry['kind'] != 'reference':
        sys.meta_path.insert(0, _BlockReference())

    started = time.perf_counter()
    demo_error = None
    if entry['kind'] == 'single-file':
        module, demo_error = _exec_single_file(entry['module'], os.path.abspath(entry['path']))
    else:
        module = importlib.import_module(entry['module'])
    _state['api'] = Api(module, entry['kind'])
    _state['xp_device'] = xp_device
    _state['device_mode'] = device_mode
    return wire.encode({
        'import_s': time.perf_counter() - started,
        'demo_error': demo_error,
        'gpu_enable': bool(getattr(_state['api'].get('cuda', None), 'gpu_enable', False)),
        'scenarios': sorted(SCENARIOS),
    })


def probe(msg):
    if 'api' not in _state:
        raise RuntimeError('probe before setup')
    name = msg['scenario']
    fn = SCENARIOS.get(name)
    if fn is None:
        raise LookupError('unknown scenario {!r}'.format(name))
    device = msg.get('device', 'cpu')
    if device == 'gpu' and _state['xp_device'] is None:
        return wire.encode({'__skipped__': 'needs a device, and this worker has none'})
    ctx = Ctx(_state['api'], device, int(msg['seed']), _state['xp_device'])
    params = _host_arrays(wire.decode(msg.get('params') or {}))
    return wire.encode(fn(ctx, **params))


def _host_arrays(value):
    """Arrays arrive as read-only records; scenarios get ordinary, writable NumPy arrays."""
    if isinstance(value, wire.Array):
        return value.data.copy()
    if isinstance(value, dict):
        return {k: _host_arrays(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_host_arrays(v) for v in value]
    return value


def simdevice_findings(msg):
    """Compatibility findings the simulated device recorded (book-era API uses)."""
    if _state.get('device_mode') != 'sim':
        return []
    from grader import simdevice
    return wire.encode(simdevice.findings())


HANDLERS = {'setup': setup, 'probe': probe, 'findings': simdevice_findings}
