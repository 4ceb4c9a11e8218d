"""The worker's request handlers: `setup` loads the submission, `probe` runs one scenario.

`dezero_grader.sandboxed.worker` reads each request frame and calls `HANDLERS[op](msg)`; what a handler returns
is sent back as plain data. An exception raised by learner code inside a handler travels back as
an error answer (the worker formats it), never as a verdict: the trusted process decides.

Learner code shares this process, so it can reach the grader's modules. Two defences against
code that patches them (not against a determined attacker; see docs/threat-model.md): the
handlers call scenarios and the wire encoder through private references taken before learner
code ran, and a tripwire compares every function, class and registry of the grader's modules
with a snapshot taken just before the submission is imported, after `setup` and after every
`probe`; a difference is answered as a `GraderModified` error, which the trusted process turns
into an `invalid` scorecard.
"""
import importlib
import importlib.abc
import os
import signal
import sys
import time
import types

from dezero_grader import wire
from dezero_grader.sandboxed.probes import SCENARIOS, compat, standins, stepfile
from dezero_grader.sandboxed.probes.context import Api, Ctx
import dezero_grader.sandboxed.probes.scenarios  # noqa: F401  (fills SCENARIOS)

_state = {}
_SCENARIOS = dict(SCENARIOS)   # private: learner code that edits the registry changes nothing here
_encode = wire.encode


class GraderModified(Exception):
    """Learner code changed one of the grader's own modules inside the worker."""


SAME_TIMEOUT = 'SameTimeout'   # the error type of a probe stopped in code that timed out before


class SameTimeout(BaseException):
    """A probe found running, for `after` seconds in one call, a function where an earlier probe
    ran out of time: stopped now rather than after its own time limit. A BaseException, so that
    the learner's `except Exception` does not swallow it."""


WORKER_MODULE = 'dezero_grader.sandboxed.worker'


def _worker_module():
    """The worker's own module, which runs as `__main__` (see `dezero_grader.isolation.worker_process`), or None where
    this is imported elsewhere (a test, the trusted side)."""
    main = sys.modules.get('__main__')
    spec = getattr(main, '__spec__', None)
    return main if getattr(spec, 'name', None) == WORKER_MODULE else None


# taken when the worker imports this module, before any learner code ran
_WORKER = _worker_module()
# the standard library's JSON, which frames every answer: the worker's encoder and decoder are
# objects of these modules, and their functions do the work
_JSON_MODULES = ('json', 'json.encoder', 'json.decoder', 'json.scanner')


def _ident(value):
    """What a bound name is, for the tripwire: the object's identity and, for a function, its
    code and defaults (patching a function's code in place changes no identity); None for a
    value the tripwire does not follow (data)."""
    if isinstance(value, types.FunctionType):
        return (id(value), id(value.__code__), id(value.__defaults__), id(value.__kwdefaults__))
    if isinstance(value, (types.ModuleType, types.BuiltinFunctionType)) or callable(value):
        return (id(value),)
    return None


def _plain(value):
    return ('value', repr(value)) if isinstance(value, (bool, int, float, str, tuple, type(None))) \
        else None


def _owner(value):
    return (id(value), id(type(value)))


class _Print(dict):
    """A fingerprint: label -> what it binds. `where[label]` = (namespace, key, read): where
    the value lives and how it is turned into what is stored, so that `_changes` reads only
    those places again instead of walking every module (a probe pays for one read per label)."""

    def __init__(self):
        super().__init__()
        self.where = {}

    def note(self, label, space, key, read=_ident):
        ident = read(space.get(key))
        if ident is not None:
            self[label] = ident
            self.where[label] = (space, key, read)


def _member_of(value):
    """A class member as the tripwire follows it: a classmethod's or staticmethod's function."""
    return _ident(getattr(value, '__func__', value))


def _note_module(name, module, out, own=None):
    """Every name `module` binds (classes of its own with their members, dicts of functions
    with their functions), labelled `name.attr`. `own`: the module name its classes carry."""
    space = vars(module)
    for attr, value in list(space.items()):
        label = '{}.{}'.format(name, attr)
        out.note(label, space, attr)
        if isinstance(value, type) and getattr(value, '__module__', '') == (own or name):
            members = vars(value)            # a live view of the class's namespace
            for key in list(members):
                out.note('{}.{}'.format(label, key), members, key, _member_of)
        elif isinstance(value, dict):
            for key, member in list(value.items()):
                if isinstance(member, types.FunctionType):
                    out.note('{}[{!r}]'.format(label, key), value, key)


def _note_codec(label, space, key, out):
    """The worker's JSON encoder or decoder (a bound method): the object, its settings and the
    functions it holds, which an attribute set on it would replace."""
    bound = space.get(key)
    out.note(label, space, key)
    owner = getattr(bound, '__self__', None)
    if owner is None:
        return
    out.note(label + '.__self__', {'self': owner}, 'self', _owner)
    state = vars(owner)
    for attr, value in list(state.items()):
        out.note('{}.{}'.format(label, attr), state, attr, _ident if callable(value) else _plain)


def _fingerprint():
    """What the grader's modules bind: for each name, the object's identity and, for functions,
    their code and defaults. The worker's own module (`__main__`: its dispatch `_handle`, the
    table `_HANDLERS`, the framing), its JSON encoder and decoder and the standard library's
    `json` they run on are part of it. Each module itself is noted where `sys.modules` holds it."""
    out = _Print()
    for name, module in list(sys.modules.items()):
        if module is None or not (name == 'dezero_grader' or name.startswith('dezero_grader.')):
            continue
        out.note(name, sys.modules, name)
        _note_module(name, module, out)
    main = _WORKER
    if main is not None:
        out.note('__main__', sys.modules, '__main__')
        _note_module(WORKER_MODULE, main, out, own='__main__')
        for codec in ('_encode_json', '_decode_json'):
            _note_codec('{}.{}'.format(WORKER_MODULE, codec), vars(main), codec, out)
        for name in _JSON_MODULES:
            module = sys.modules.get(name)
            if module is not None:
                out.note(name, sys.modules, name)
                _note_module(name, module, out)
    return out


def _changes(before):
    """The labels of `before` (a `_Print`) whose binding differs now: each read again where it
    was found. What the places hold is all that is read, so a name rebound, a function's code
    swapped, a class member replaced, a module taken out of `sys.modules` all show."""
    changed = []
    for label, ident in before.items():
        space, key, read = before.where[label]
        try:
            now = read(space.get(key))
        except Exception:    # a namespace the learner's code made unreadable: changed
            now = None
        if now != ident:
            changed.append(label)
    return sorted(changed)


def _verify(before):
    if before is None:
        return
    changed = _changes(before)
    if changed:
        more = ' and {} more'.format(len(changed) - 3) if len(changed) > 3 else ''
        raise GraderModified('the submission changed the grader\'s own code inside the worker ({}{}); '
                             'a submission must not patch the grader'.format(', '.join(changed[:3]), more))


class _BlockReference(importlib.abc.MetaPathFinder):
    """Learner code must not borrow the reference implementation: by the name it installs under,
    nor by the top-level name of its folder in a source checkout. Written with methods of `str`
    and `tuple` alone: the builtins (`any`, `all`) are the learner's to patch."""
    NAMES = ('dezero_grader.reference', 'reference')
    PREFIXES = tuple(n + '.' for n in NAMES)

    def find_spec(self, fullname, path=None, target=None):
        if fullname in self.NAMES or fullname.startswith(self.PREFIXES):
            raise ModuleNotFoundError(
                'the grader\'s reference implementation is not available to submissions',
                name=fullname)
        return None


class _NoCupy(importlib.abc.MetaPathFinder):
    """A machine without CuPy: importing it (or a module of it) raises what Python raises there."""
    ROOTS = ('cupy', 'cupyx', 'cupy_backends')

    def find_spec(self, fullname, path=None, target=None):
        root = fullname.partition('.')[0]
        if root in self.ROOTS:
            raise ModuleNotFoundError('No module named {!r}'.format(root), name=root)
        return None


def _gpu_flag(api):
    """What the submission's `cuda.gpu_enable` is, as it is: a bool, None when there is no
    `cuda` module or no such name, else the name of its type (the trusted side decides)."""
    value = getattr(api.get('cuda', None), 'gpu_enable', None)
    return value if value is None or isinstance(value, bool) else type(value).__name__


def _exec_single_file(module_name, path):
    """Run a step file as a module (see dezero_grader.sandboxed.probes.stepfile): a demo that ends in an error
    keeps the names defined before it, and the error is reported."""
    return stepfile.run(module_name, path)


def setup(msg):
    device_mode = msg.get('device_mode', 'cpu')   # cpu | sim | cuda
    entry = msg['entry']                           # {'kind', 'module', 'path'}
    era = msg.get('era', compat.DEFAULT_ERA)       # book | current: the stack the code runs on
    if era not in compat.ERAS:
        raise ValueError('unknown era {!r}'.format(era))
    xp_device = None
    if device_mode == 'sim':
        from dezero_grader.sandboxed import simdevice
        xp_device = simdevice.install(era=era)
    elif device_mode == 'cuda':
        import cupy
        xp_device = cupy
    else:
        # Without a device, `import cupy` fails the way it does on a machine without CuPy (a
        # real CuPy installed here is hidden too): the book's machine before step 52.
        for name in [n for n in sys.modules if n.partition('.')[0] in _NoCupy.ROOTS]:
            del sys.modules[name]
        sys.meta_path.insert(0, _NoCupy())

    if entry['kind'] != 'reference':
        sys.meta_path.insert(0, _BlockReference())
        # the learner's code runs in the chosen era (the reference is the same in either)
        compat.install(era, os.getcwd(), cupy=xp_device if device_mode == 'cuda' else None)
        # a third-party module the learner's code imports and this machine lacks: a stand-in
        standins.install(folders=(os.getcwd(), os.path.dirname(os.path.abspath(entry['path']))),
                         own=(entry['module'],))

    _state['pristine'] = _fingerprint() if entry['kind'] != 'reference' else None
    verify = _verify
    started = time.perf_counter()
    demo_error = None
    if entry['kind'] == 'single-file':
        module, demo_error = _exec_single_file(entry['module'], os.path.abspath(entry['path']))
    else:
        module = importlib.import_module(entry['module'])
    _state['api'] = Api(module, entry['kind'])
    _state['xp_device'] = xp_device
    _state['device_mode'] = device_mode
    verify(_state['pristine'])
    return _encode({
        'import_s': time.perf_counter() - started,
        'findings': _findings(),
        'demo_error': demo_error,
        'gpu_enable': bool(getattr(_state['api'].get('cuda', None), 'gpu_enable', False)),
        'gpu_flag': _gpu_flag(_state['api']),
        'scenarios': sorted(SCENARIOS),
    })


def probe(msg, _verify=_verify, _encode=_encode):
    if 'api' not in _state:
        raise RuntimeError('probe before setup')
    pristine = _state['pristine']
    name = msg['scenario']
    fn = _SCENARIOS.get(name)
    if fn is None:
        raise LookupError('unknown scenario {!r}'.format(name))
    device = msg.get('device', 'cpu')
    if device == 'gpu' and _state['xp_device'] is None:
        # dezero_grader.grading.worker_session skips these itself; a worker's own "skipped" is tampering there
        raise RuntimeError('a device probe reached a worker without a device')
    ctx = Ctx(_state['api'], device, int(msg['seed']), _state['xp_device'])
    _seed_global_rngs(ctx)
    params = _host_arrays(wire.decode(msg.get('params') or {}))
    stop = _watch(msg.get('stuck') or (), float(msg.get('stuck_after') or 1.0), msg.get('token'),
                  float(msg.get('stuck_wall_after') or 0.0))
    try:
        answer = _encode(fn(ctx, **params))
    finally:
        stop()
    if msg.get('tripwire') != 'later':
        _verify(pristine)
    return answer


def tripwire(msg, _verify=_verify):
    """The tripwire alone: the last request of a batch of probes asked with `tripwire: later`,
    whose answers the trusted side takes only once this says the grader's code is unchanged."""
    _verify(_state.get('pristine'))
    return True


def _seed_global_rngs(ctx):
    """The global NumPy (and device) generator seeded from the probe's seed: what the learner's
    code draws from them (a layer's initial weights, a loader's shuffle) is then the same
    whatever probes this worker ran before, so an answer never depends on the order probes
    reach a worker."""
    import numpy as np
    seed = ctx.seed % (2 ** 32)
    np.random.seed(seed)
    if ctx.xp_device is not None:
        ctx.xp_device.random.seed(seed)


def _watch(stuck, after, token, wall_after=0.0):
    """While a probe runs: every `after`/4 s, look at the stack; a function of `stuck` (each
    `[file relative to the submission, function name]`, where earlier probes ran out of time)
    found in the same call after it used `after` seconds of this process's CPU time (or, when
    `wall_after` is given, stayed there that long on the wall clock: code that waits) raises
    SameTimeout. CPU time, so that a busy machine does not make a slow call look stuck.
    Returns the undo."""
    places = {(str(f), str(n)) for f, n in stuck}
    if not places or not hasattr(signal, 'setitimer') or after <= 0:
        return lambda: None
    top = os.getcwd() + os.sep
    seen = {'frame': None, 'since': 0.0, 'wall': 0.0}

    def sample(signum, frame):
        hit = None
        while frame is not None:
            code = frame.f_code
            name = code.co_filename
            rel = name[len(top):] if name.startswith(top) else name
            if (rel, code.co_name) in places:
                hit = frame   # the outermost call of it: an endless loop's own call
            frame = frame.f_back
        now, wall = time.process_time(), time.monotonic()
        if hit is None or hit is not seen['frame']:
            seen['frame'], seen['since'], seen['wall'] = hit, now, wall
        elif now - seen['since'] >= after or (wall_after > 0 and wall - seen['wall'] >= wall_after):
            seen['frame'] = None
            raise SameTimeout('{} {}:{} in {}'.format(token, _rel_of(hit, top), hit.f_lineno,
                                                      hit.f_code.co_name))

    previous = signal.signal(signal.SIGALRM, sample)
    signal.setitimer(signal.ITIMER_REAL, after / 4, after / 4)

    def undo():
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous if previous is not None else signal.SIG_DFL)
        seen['frame'] = None
    return undo


def _rel_of(frame, top):
    name = frame.f_code.co_filename
    return name[len(top):] if name.startswith(top) else name


def _host_arrays(value):
    """Arrays arrive as read-only records; scenarios get ordinary, writable NumPy arrays."""
    if isinstance(value, wire.Array):
        return value.data.copy()
    if isinstance(value, dict):
        return {k: _host_arrays(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_host_arrays(v) for v in value]
    return value


def _findings():
    """Compatibility findings so far, in every device mode: the book-era NumPy names and modules
    the learner's code used, and the book-era CuPy API the simulated device served; each with
    its `file:line` relative to the submission's top."""
    found = compat.findings()
    if _state.get('device_mode') == 'sim':
        from dezero_grader.sandboxed import simdevice
        for f in simdevice.findings():
            where = compat.relative_where(f['where'])
            if where != f['where'] or not os.path.isabs(where.rpartition(':')[0]):
                found.append(dict(f, where=where))   # the grader's own uses are not the learner's
    return found


def findings(msg):
    return wire.encode(_findings())


HANDLERS = {'setup': setup, 'probe': probe, 'tripwire': tripwire, 'findings': findings}
