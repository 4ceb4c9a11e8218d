"""Running a learner's step file (steps 1-22) inside the worker, the way learners write them.

A step file defines the step's names and then runs a demo at module level, with no
`if __name__ == "__main__":` guard (the book's own files do so). Three things that real step
files do must not change what the checks see:

* the demo ends in an error on purpose (the book's step 9 calls `Variable(1.0)`): the names
  defined before it stay usable, and the error is recorded, not obeyed;
* the file imports something that cannot be imported (a package that is not installed, a name a
  helper module lacks): nothing after that line was defined, so the import error itself, with the
  file and line, is the reason the grading stops -- not a later "the submission has no Variable";
* the demo leaves a global mode switched (`Config.enable_backprop = False` as its last line): the
  book's default mode is restored before any check runs, in the step module and in the
  submission's helper modules alike.

Names may live in a helper module the step file imports from (`from common import Square,
Variable` with `Function` only in `common.py`): `helper_lookup` finds a name the step module
lacks in the submission's own modules it imported.
"""
import os
import sys
import traceback
import types

from dezero_grader.sandboxed import capture

_any = any   # the builtin as it was before learner code ran (which may patch builtins)

# Global modes of the book's API and their default values (step 18: Config.enable_backprop).
DEFAULT_MODES = {'enable_backprop': True}
_HELPERS = {}   # step module name -> the submission's helper modules it imported


def run(module_name, path):
    """Run the step file at `path` as the module `module_name`: (module, demo_error or None).
    An import error of the file is raised (it is the reason grading cannot go on)."""
    root = os.path.dirname(os.path.abspath(path))
    module = types.ModuleType(module_name)
    module.__file__ = path
    sys.modules[module_name] = module
    with open(path, 'rb') as f:
        source = f.read()
    code = compile(source, path, 'exec')
    demo_error = None
    before = set(sys.modules)
    # SystemExit in a demo is recorded, not obeyed
    call = capture.Call.of(exec, code, module.__dict__)
    if isinstance(call.exception, SyntaxError):
        raise call.exception
    if isinstance(call.exception, ImportError):
        raise _import_failure(call.exception, path) from None
    if not call.ok:
        demo_error = {'type': type(call.exception).__name__, 'message': capture.text(call.exception)[:500]}
    _HELPERS[module_name] = _helpers(module, root, set(sys.modules) - before)
    restored = restore_modes(module)
    if restored:
        demo_error = dict(demo_error or {}, restored_modes=restored)
    return module, demo_error


def _import_failure(exc, path):
    """The import error in words, with the submission's own lines that led to it (the step
    file's import, then each of the submission's modules it went through)."""
    roots = [os.path.dirname(os.path.abspath(path)), os.path.abspath(os.getcwd())]
    base = os.path.commonpath(roots)
    frames = [f for f in traceback.extract_tb(exc.__traceback__)
              if _own_file(types.SimpleNamespace(__file__=f.filename), roots)]
    at = ''
    if frames:
        f = frames[-1]
        at = ' ({}:{}{}'.format(os.path.relpath(f.filename, base), f.lineno, ': ' + f.line if f.line else '')
        chain = ['{}:{}'.format(os.path.relpath(g.filename, base), g.lineno) for g in frames[:-1]]
        at += ', reached from {})'.format(' -> '.join(chain)) if chain else ')'
    name = getattr(exc, 'name', None)
    if isinstance(exc, ModuleNotFoundError) and name:
        text = 'your step file imports {!r}, which cannot be imported where it is graded{}: {}'.format(
            name, at, exc)
    else:
        text = 'an import in your step file failed{}: {}'.format(at, exc)
    new = type(exc)(text)
    new.name = name
    return new


def _own_file(module, roots):
    f = getattr(module, '__file__', None)
    if not isinstance(f, str):
        return False
    f = os.path.abspath(f)
    return _any(os.path.commonpath([f, r]) == r for r in roots if r)


def _helpers(module, root, new_modules):
    """The submission's own modules that the step file imported (directly or through the names
    it took from them), in the order they are first met; never the step module itself."""
    roots = [root, os.path.abspath(os.getcwd())]
    found = []

    def add(m):
        if isinstance(m, types.ModuleType) and m is not module and m not in found and _own_file(m, roots):
            found.append(m)
    for value in list(vars(module).values()):
        if isinstance(value, types.ModuleType):
            add(value)
        else:
            add(sys.modules.get(getattr(value, '__module__', None) or ''))
    for name in sorted(new_modules):
        add(sys.modules.get(name))
    return found


def helper_lookup(module, name, default):
    """`name` from a helper module of the step module, or `default`."""
    for helper in _HELPERS.get(module.__name__, ()):
        if name in vars(helper):
            return vars(helper)[name]
    return default


def restore_modes(module):
    """Set every `Config` mode of the book's API that a demo left switched back to its default;
    return the names restored."""
    restored = []
    for m in [module] + list(_HELPERS.get(module.__name__, ())):
        config = vars(m).get('Config')
        if config is None or isinstance(config, types.ModuleType):
            continue
        try:
            state = vars(config)                # a class, or an instance holding the modes
        except TypeError:
            continue
        for mode, default in DEFAULT_MODES.items():
            if mode in state and state[mode] != default:
                setattr(config, mode, default)
                restored.append('{}.Config.{}'.format(m.__name__, mode))
    return restored
