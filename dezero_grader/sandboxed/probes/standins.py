"""Stand-ins for the third-party modules a submission imports and the grader's machine lacks.

Learners' packages import what their own machine had: `memory_profiler` in `core.py`, `psutil`
in a step file's demo, a plotting library at the top of a module. Most never use it while the
grader runs. An import of a module that is not installed, made by the learner's own code outside
a ``try`` that catches ImportError, therefore gives a stand-in module instead of an
ImportError: taking names from it works, and using any of them (calling it, reading its value,
subclassing it) raises ModuleNotFoundError, with where it was imported and where it was used.
Each such import is a compatibility finding (``memory_profiler imported at dezero/core.py:6 but
not installed; unused, so not counted``); the finding says when the stand-in was used, and
then the test that reached it fails with that error.

An import inside ``try ... except ImportError`` (or ``ModuleNotFoundError``, ``Exception``, a
bare ``except``, ``contextlib.suppress(ImportError)``) sees the ImportError, as it would on a
machine without the module: that code has its own way without it. Never stood in: the standard
library, NumPy and CuPy (CuPy's absence is the book's own environment before step 52), the
submission's own modules and packages, the grader's, and imports made by any code that is not the
learner's (a library's optional imports keep their own fallbacks). The finder is the last on
``sys.meta_path``: it is asked only about what no other finder found.
"""
from __future__ import annotations

import ast
import importlib.abc
import importlib.machinery
import os
import sys
import types

from dezero_grader.sandboxed.probes import compat

_NEVER = frozenset({'numpy', 'cupy', 'cupyx', 'cupy_backends', 'dezero', 'dezero_grader', 'reference',
                    '__main__'})
_CATCHES_IMPORT_ERROR = frozenset({'ImportError', 'ModuleNotFoundError', 'Exception',
                                   'BaseException'})
_getframe = sys._getframe
_any = any   # the builtin as it was before learner code ran (which may patch builtins)


class _State:
    own = frozenset()       # top-level names of the submission's own modules and packages
    guarded = {}            # filename -> lines inside a try that catches ImportError
    imports = {}            # top-level module name -> its finding (the first import of it)
    used_at = {}            # top-level module name -> where the learner's code first used it


_S = _State()


def _handler_catches(handler) -> bool:
    names = []
    stack = [handler.type]
    while stack:
        node = stack.pop()
        if node is None:
            return True   # a bare except
        if isinstance(node, ast.Tuple):
            stack.extend(node.elts)
        elif isinstance(node, ast.Name):
            names.append(node.id)
        elif isinstance(node, ast.Attribute):
            names.append(node.attr)
    return _any(n in _CATCHES_IMPORT_ERROR for n in names)


def _suppresses(item) -> bool:
    """`with contextlib.suppress(ImportError):` (or `suppress(...)` imported by name)."""
    call = item.context_expr
    if not isinstance(call, ast.Call):
        return False
    fn = call.func
    name = fn.attr if isinstance(fn, ast.Attribute) else getattr(fn, 'id', '')
    return name == 'suppress' and _any(
        getattr(a, 'id', getattr(a, 'attr', '')) in _CATCHES_IMPORT_ERROR for a in call.args)


def guarded_lines(source: str) -> frozenset:
    """The line numbers of `source` that lie in the body of a ``try`` whose handlers catch
    ImportError, or of a ``with suppress(ImportError)``."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return frozenset()
    lines = set()
    for node in ast.walk(tree):
        body = None
        if isinstance(node, (ast.Try, getattr(ast, 'TryStar', ast.Try))):
            if _any(_handler_catches(h) for h in node.handlers):
                body = node.body
        elif isinstance(node, (ast.With, ast.AsyncWith)):
            if _any(_suppresses(item) for item in node.items):
                body = node.body
        for stmt in body or ():
            lines.update(range(stmt.lineno, (stmt.end_lineno or stmt.lineno) + 1))
    return frozenset(lines)


def _guarded(filename: str, line: int) -> bool:
    lines = _S.guarded.get(filename)
    if lines is None:
        try:
            with open(filename, encoding='utf-8', errors='replace') as f:
                lines = guarded_lines(f.read())
        except OSError:
            lines = frozenset()
        _S.guarded[filename] = lines
    return line in lines


def _import_site(frame):
    """(filename, line, 'file:line' relative to the submission) of the learner's statement that
    made this import, or None when the import is not the learner's own."""
    where = compat.learner_site(frame)
    if where is None:
        return None
    while frame is not None:   # the same frame learner_site stopped at
        name = frame.f_code.co_filename
        if not (name.startswith('<frozen') or name.startswith(compat._IMPORTLIB)):
            return name, frame.f_lineno, where
        frame = frame.f_back
    return None


def _message(name, finding) -> str:
    used = _S.used_at.get(name)
    if used:
        return '{} imported at {} but not installed; used at {}, so what reached it fails'.format(
            name, finding['where'], used)
    return '{} imported at {} but not installed; unused, so not counted'.format(
        name, finding['where'])


def _fix(name) -> str:
    return ('delete the import if nothing uses it (the grader\'s machine does not have {0}); '
            'code that can do without it imports it inside try: ... except ImportError'.format(name))


class _Missing:
    """A name taken from a stand-in module: anything done with it raises ModuleNotFoundError."""
    __slots__ = ('_standin_name', '_standin_root')

    def __init__(self, name, root):
        object.__setattr__(self, '_standin_name', name)
        object.__setattr__(self, '_standin_root', root)

    def __getattr__(self, attr):
        if attr.startswith('__') and attr.endswith('__'):
            raise AttributeError(attr)
        return _Missing('{}.{}'.format(self._standin_name, attr), self._standin_root)

    def __repr__(self):
        return '<stand-in for {} ({} is not installed)>'.format(self._standin_name,
                                                                self._standin_root)

    def _standin_used(self, *args, **kwargs):
        raise used(self._standin_name, self._standin_root, _getframe(1))

    def __mro_entries__(self, bases):
        raise used(self._standin_name, self._standin_root, _getframe(1))


for _dunder in ('call', 'getitem', 'setitem', 'delitem', 'iter', 'len', 'bool', 'contains',
                'enter', 'exit', 'setattr', 'delattr', 'index', 'int', 'float', 'complex',
                'add', 'radd', 'sub', 'rsub', 'mul', 'rmul', 'matmul', 'rmatmul', 'truediv',
                'rtruediv', 'floordiv', 'rfloordiv', 'mod', 'rmod', 'pow', 'rpow', 'neg', 'pos',
                'abs', 'lt', 'le', 'gt', 'ge', 'array', 'fspath', 'await', 'aiter'):
    setattr(_Missing, '__{}__'.format(_dunder), _Missing._standin_used)
_Missing.__eq__ = lambda self, other: self is other
_Missing.__ne__ = lambda self, other: self is not other
_Missing.__hash__ = object.__hash__


def used(name, root, frame) -> ModuleNotFoundError:
    """The error of using `name` of the stand-in for `root`, with the use recorded on its
    finding (the place in the learner's code that used it, when it is theirs)."""
    finding = _S.imports.get(root)
    where = compat.learner_site(frame)
    imported = ''
    if finding is not None:
        imported = ' (imported at {})'.format(finding['where'])
        _S.used_at.setdefault(root, where or 'a call from outside the submission')
        finding['count'] += 1
        finding['message'] = _message(root, finding)
    return ModuleNotFoundError(
        'No module named {!r}: {} is used here, and {} is not installed where your code is '
        'graded{}; only an unused import of it is tolerated'.format(root, name, root, imported),
        name=root)


class StandIn(types.ModuleType):
    """The module given for an import of a third-party module that is not installed."""

    def __getattr__(self, attr):
        if attr.startswith('__') and attr.endswith('__'):
            raise AttributeError(attr)
        return _Missing('{}.{}'.format(self.__name__, attr), self.__name__.partition('.')[0])


class _Finder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def find_spec(self, fullname, path=None, target=None):
        root = fullname.partition('.')[0]
        if root in _NEVER or root in _S.own or root in sys.stdlib_module_names:
            return None
        if '.' in fullname and not isinstance(sys.modules.get(root), StandIn):
            return None   # a module missing from an installed package: its ImportError stands
        site = _import_site(_getframe(1))
        if site is None:
            return None
        filename, line, where = site
        if _guarded(filename, line):
            return None
        if root not in _S.imports:
            finding = compat.note(root, where, '', '', _fix(root))
            finding['message'] = _message(root, finding)
            _S.imports[root] = finding
        return importlib.machinery.ModuleSpec(fullname, self, is_package=True)

    def create_module(self, spec):
        module = StandIn(spec.name, 'Stand-in for {}, which is not installed where this code is '
                                    'graded.'.format(spec.name))
        module.__path__ = []
        return module

    def exec_module(self, module):
        return None


_FINDER = _Finder()


def _top_level_names(folders) -> frozenset:
    names = set()
    for folder in folders:
        try:
            entries = os.listdir(folder)
        except OSError:
            continue
        for entry in entries:
            stem, ext = os.path.splitext(entry)
            if ext in ('.py', '.pyc', '.so', '.pyd') or (not ext and
                                                         os.path.isdir(os.path.join(folder, entry))):
                names.add(stem.partition('.')[0])
    return frozenset(names)


def install(folders=(), own=()) -> None:
    """Serve stand-ins to the learner's code; `folders` are the submission's import folders
    (every module and package in them is the submission's own), `own` more names of its own."""
    _S.own = _top_level_names(folders) | frozenset(n.partition('.')[0] for n in own if n)
    _S.guarded = {}
    _S.imports = {}
    _S.used_at = {}
    while _FINDER in sys.meta_path:
        sys.meta_path.remove(_FINDER)
    sys.meta_path.append(_FINDER)


def uninstall() -> None:
    """Undo `install` (for tests): the finder out, the stand-in modules out of `sys.modules`."""
    while _FINDER in sys.meta_path:
        sys.meta_path.remove(_FINDER)
    for name in [n for n, m in sys.modules.items() if isinstance(m, StandIn)]:
        del sys.modules[name]
