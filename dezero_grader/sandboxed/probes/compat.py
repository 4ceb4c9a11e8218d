"""The book's 2020 environment inside a learner's worker: NumPy and CuPy names that have drifted.

The book was written against the NumPy and CuPy of early 2020. A learner who followed it writes
code that breaks on today's stack in a few known places; that is a drift of the environment, not
a bug of the learner's framework. `install(era, root)` runs in the worker before the submission
is imported:

* era ``book`` (the default grading): the removed NumPy aliases resolve to what they meant in
  2020 (``np.int`` is ``int``), the NumPy modules that were made private or removed import again
  (served from their private successors, or from a small stand-in for ``numpy.compat``), and a
  real CuPy gets ``cupy.scatter_add`` back (the simulated device provides it itself). Each use
  is recorded once per (API, ``file:line``) as a compatibility finding;
* era ``current``: the same uses fail, with the finding's text in the error message.

Only the learner's own code is served: a use whose calling frame lies outside ``root`` (NumPy's
own modules, the grader) behaves exactly as today's NumPy does. `DRIFTS` is the catalogue: what
each API meant, what happens to it today, since which release, and the one-line fix.
"""
from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import os
import sys
import types

ERAS = ('book', 'current')
DEFAULT_ERA = 'book'


class Drift:
    """One API of the 2020 code that today's stack no longer has."""
    __slots__ = ('api', 'breaks', 'since', 'fix')

    def __init__(self, api, breaks, since, fix):
        self.api, self.breaks, self.since, self.fix = api, breaks, since, fix

    @property
    def text(self) -> str:
        """The finding's text; the error of the current era carries the same words."""
        return '{} ({}); fix: {}'.format(self.breaks, self.since, self.fix)


def _alias(name, builtin, since):
    return Drift('numpy.' + name, '`np.{}` was an alias of the built-in `{}` and is gone from '
                 'NumPy'.format(name, builtin), since,
                 'write `{}` (or a sized type such as `np.{}64`)'.format(builtin, builtin)
                 if builtin in ('int', 'float', 'complex') else 'write `{}`'.format(builtin))


def _renamed(name, today, since):
    return Drift('numpy.' + name, '`np.{}` is gone from NumPy'.format(name), since,
                 'write `np.{}`'.format(today))


_REMOVED_1_24 = 'deprecated in NumPy 1.20, removed in NumPy 1.24'
_REMOVED_2_0 = 'removed in NumPy 2.0'

# name -> (the value it had in 2020, given today's numpy module; the drift)
ALIASES = {
    'int': (lambda np: int, _alias('int', 'int', _REMOVED_1_24)),
    'float': (lambda np: float, _alias('float', 'float', _REMOVED_1_24)),
    'complex': (lambda np: complex, _alias('complex', 'complex', _REMOVED_1_24)),
    'object': (lambda np: object, _alias('object', 'object', _REMOVED_1_24)),
    'str': (lambda np: str, _alias('str', 'str', _REMOVED_1_24)),
    'unicode': (lambda np: str, _alias('unicode', 'str', 'deprecated in NumPy 1.20, ' + _REMOVED_2_0)),
    'float_': (lambda np: np.float64, _renamed('float_', 'float64', _REMOVED_2_0)),
    'complex_': (lambda np: np.complex128, _renamed('complex_', 'complex128', _REMOVED_2_0)),
    'string_': (lambda np: np.bytes_, _renamed('string_', 'bytes_', _REMOVED_2_0)),
    'unicode_': (lambda np: np.str_, _renamed('unicode_', 'str_', _REMOVED_2_0)),
    'product': (lambda np: np.prod, _renamed('product', 'prod', 'deprecated in NumPy 1.25, ' + _REMOVED_2_0)),
    'cumproduct': (lambda np: np.cumprod, _renamed('cumproduct', 'cumprod',
                                                   'deprecated in NumPy 1.25, ' + _REMOVED_2_0)),
    'alltrue': (lambda np: np.all, _renamed('alltrue', 'all', 'deprecated in NumPy 1.25, ' + _REMOVED_2_0)),
    'sometrue': (lambda np: np.any, _renamed('sometrue', 'any', 'deprecated in NumPy 1.25, ' + _REMOVED_2_0)),
    'round_': (lambda np: np.round, _renamed('round_', 'round', 'deprecated in NumPy 1.25, ' + _REMOVED_2_0)),
    'asscalar': (lambda np: (lambda a: a.item()),
                 Drift('numpy.asscalar', '`np.asscalar` is gone from NumPy',
                       'deprecated in NumPy 1.16, removed in NumPy 1.23', 'write `a.item()`')),
    'NaN': (lambda np: np.nan, _renamed('NaN', 'nan', _REMOVED_2_0)),
    'Inf': (lambda np: np.inf, _renamed('Inf', 'inf', _REMOVED_2_0)),
    'Infinity': (lambda np: np.inf, _renamed('Infinity', 'inf', _REMOVED_2_0)),
    'infty': (lambda np: np.inf, _renamed('infty', 'inf', _REMOVED_2_0)),
    'PINF': (lambda np: np.inf, _renamed('PINF', 'inf', _REMOVED_2_0)),
    'NINF': (lambda np: -np.inf, _renamed('NINF', '-np.inf', _REMOVED_2_0)),
}

_PRIVATE = ('arraypad', 'arraysetops', 'arrayterator', 'function_base', 'histograms',
            'index_tricks', 'nanfunctions', 'polynomial', 'shape_base', 'twodim_base',
            'type_check', 'ufunclike', 'utils')


_PUBLIC_EXAMPLE = {'arraysetops': 'np.isin', 'index_tricks': 'np.ix_', 'function_base': 'np.diff',
                   'shape_base': 'np.expand_dims', 'type_check': 'np.iscomplexobj',
                   'twodim_base': 'np.eye', 'nanfunctions': 'np.nansum', 'histograms': 'np.histogram',
                   'ufunclike': 'np.fix', 'polynomial': 'np.polyfit', 'arraypad': 'np.pad',
                   'utils': 'np.info', 'arrayterator': 'np.lib.Arrayterator'}


def _private_drift(name):
    return Drift('numpy.lib.' + name, '`numpy.lib.{}` is private in NumPy 2 and no longer '
                 'imports'.format(name), 'made private in NumPy 2.0',
                 'delete the import if nothing uses it (an editor\'s auto-import), else take the '
                 'function from `numpy` itself (`{}`)'.format(_PUBLIC_EXAMPLE[name]))


_COMPAT_DRIFT = Drift('numpy.compat', '`numpy.compat` (Python 2 helpers) is gone from NumPy',
                      'deprecated in NumPy 1.26, removed in NumPy 2.0',
                      'delete the import (an editor\'s auto-import) or use the standard library')

# module name -> (where its 2020 contents live today, or None for the stand-in; the drift)
MODULES = {'numpy.lib.' + n: ('numpy.lib._{}_impl'.format(n), _private_drift(n)) for n in _PRIVATE}
MODULES['numpy.compat'] = (None, _COMPAT_DRIFT)
MODULES['numpy.compat.py3k'] = (None, _COMPAT_DRIFT)

SCATTER_ADD = Drift('cupy.scatter_add', '`cupy.scatter_add` is gone from CuPy',
                    'removed in CuPy 8',
                    'call `cupyx.scatter_add(a, slices, value)`, or `xp.add.at(a, slices, value)` '
                    'on both devices')

DRIFTS = [d for _, d in ALIASES.values()] + [d for _, d in MODULES.values()
                                             if d is not _COMPAT_DRIFT] + [_COMPAT_DRIFT, SCATTER_ADD]


def missing_attribute(module: str, name: str, drift: Drift) -> AttributeError:
    return AttributeError('module {!r} has no attribute {!r}: {}'.format(module, name, drift.text),
                          name=name)


# -- findings -------------------------------------------------------------------------------------

class _State:
    era = None
    roots = ()
    findings = []        # dicts: api, where, message, since, fix, count
    index = {}
    learner_files = {}   # filename -> relative path, or None outside the submission


_S = _State()
_getframe = sys._getframe
_IMPORTLIB = os.path.dirname(importlib.__file__) + os.sep
_realpath = os.path.realpath


def _relative(filename):
    """The path of a file of the submission, relative to its root; None for any other file."""
    known = _S.learner_files.get(filename, False)
    if known is not False:
        return known
    rel = None
    if filename and not filename.startswith('<'):
        for candidate in (os.path.abspath(filename), _realpath(filename)):
            for root in _S.roots:
                if candidate.startswith(root + os.sep):
                    rel = candidate[len(root) + 1:].replace(os.sep, '/')
                    break
            if rel is not None:
                break
    _S.learner_files[filename] = rel
    return rel


def learner_site(frame, depth=1):
    """`file:line` of the learner's frame that made this use, or None when the use is not the
    learner's: the first frame outside Python's import machinery must be in the submission."""
    n = 0
    while frame is not None and n < 40:
        filename = frame.f_code.co_filename
        if not (filename.startswith('<frozen') or filename.startswith(_IMPORTLIB)):
            rel = _relative(filename)
            return None if rel is None else '{}:{}'.format(rel, frame.f_lineno)
        frame = frame.f_back
        n += 1
    return None


def record(drift: Drift, where: str) -> None:
    key = (drift.api, where)
    at = _S.index.get(key)
    if at is not None:
        _S.findings[at]['count'] += 1
        return
    _S.index[key] = len(_S.findings)
    _S.findings.append({'api': drift.api, 'where': where, 'message': drift.breaks,
                        'since': drift.since, 'fix': drift.fix, 'count': 1})


def note(api: str, where: str, message: str, since: str, fix: str) -> dict:
    """The finding of (api, where), made on first use (count 1); the caller may update it (the
    stand-ins of missing modules say later whether the module was used)."""
    key = (api, where)
    if key not in _S.index:
        _S.index[key] = len(_S.findings)
        _S.findings.append({'api': api, 'where': where, 'message': message, 'since': since,
                            'fix': fix, 'count': 1})
    return _S.findings[_S.index[key]]


def findings() -> list:
    return [dict(f) for f in _S.findings]


def relative_where(where: str) -> str:
    """A `file:line` recorded elsewhere (the simulated device) made relative to the submission."""
    path, sep, line = where.rpartition(':')
    if not sep:
        return where
    rel = _relative(path)
    return '{}:{}'.format(rel, line) if rel is not None else where


# -- the shim -------------------------------------------------------------------------------------

def _numpy_getattr(np, previous):
    era = _S.era

    def __getattr__(name):
        entry = ALIASES.get(name)
        if entry is not None:
            where = learner_site(_getframe(1))
            if where is not None:
                value, drift = entry
                if era == 'current':
                    raise missing_attribute('numpy', name, drift)
                record(drift, where)
                return value(np)
        if previous is None:
            raise AttributeError('module {!r} has no attribute {!r}'.format(np.__name__, name))
        return previous(name)

    __getattr__.__compat_previous__ = previous
    return __getattr__


class _ServedModule(types.ModuleType):
    """A 2020 module name served from today's private module; every name the learner's code
    takes from it is a use of the drift (recorded once per line)."""

    def __getattr__(self, name):
        target = self.__dict__['__compat_target__']
        value = getattr(target, name)
        if not name.startswith('__'):
            where = learner_site(_getframe(1))
            if where is not None:
                record(self.__dict__['__compat_drift__'], where)
        return value

    def __dir__(self):
        return sorted(set(dir(self.__dict__['__compat_target__'])) | set(self.__dict__))


class _Finder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def find_spec(self, fullname, path=None, target=None):
        entry = MODULES.get(fullname)
        if entry is None:
            return None
        where = learner_site(_getframe(1))
        if where is None:
            return None
        _, drift = entry
        if _S.era == 'current':
            # no `name=`: an import from a package's fromlist must not swallow the explanation
            raise ModuleNotFoundError('No module named {!r}: {}'.format(fullname, drift.text))
        record(drift, where)
        return importlib.machinery.ModuleSpec(fullname, self, is_package=fullname == 'numpy.compat')

    def create_module(self, spec):
        source, drift = MODULES[spec.name]
        module = _ServedModule(spec.name, 'The 2020 module {}, served by the grader\'s book-era '
                                          'environment.'.format(spec.name))
        module.__dict__['__compat_target__'] = (importlib.import_module(source) if source
                                                else _compat_standin())
        module.__dict__['__compat_drift__'] = drift
        return module

    def exec_module(self, module):
        return None


def _compat_standin():
    """What `numpy.compat` offered in 2020 (Python 2/3 helpers), written anew."""
    import contextlib
    import io
    import pathlib
    import pickle
    m = types.ModuleType('numpy.compat')

    def asbytes(s):
        return s if isinstance(s, bytes) else str(s).encode('latin1')

    def asstr(s):
        return s.decode('latin1') if isinstance(s, bytes) else str(s)

    def isfileobj(f):
        return isinstance(f, (io.FileIO, io.BufferedReader, io.BufferedWriter))

    def os_fspath(p):
        return os.fspath(p)

    m.__dict__.update(
        bytes=bytes, unicode=str, long=int, basestring=str, integer_types=(int,),
        asbytes=asbytes, asstr=asstr, asunicode=asstr, isfileobj=isfileobj,
        getexception=lambda: sys.exc_info()[1], strchar='U', sixu=lambda s: s,
        is_pathlib_path=lambda p: isinstance(p, pathlib.PurePath), Path=pathlib.Path,
        pickle=pickle, contextlib_nullcontext=contextlib.nullcontext, os_fspath=os_fspath,
        os_PathLike=os.PathLike, open_latin1=lambda name, mode='r': open(name, mode=mode,
                                                                          encoding='iso-8859-1'))
    m.py3k = m
    return m


def _patch_real_cupy(cupy):
    """A real CuPy (a GPU run): `cupy.scatter_add` of the book era on top of `cupy.add.at`."""
    if 'scatter_add' in vars(cupy):
        return
    previous = vars(cupy).get('__getattr__')
    if _S.era == 'book':
        def scatter_add(a, slices, value):
            where = learner_site(_getframe(1))
            if where is not None:
                record(SCATTER_ADD, where)
            cupy.add.at(a, slices, value)
        cupy.scatter_add = scatter_add
        return

    def __getattr__(name):
        if name == 'scatter_add':
            raise missing_attribute('cupy', name, SCATTER_ADD)
        if previous is None:
            raise AttributeError('module {!r} has no attribute {!r}'.format(cupy.__name__, name))
        return previous(name)
    cupy.__getattr__ = __getattr__


_FINDER = _Finder()


def install(era: str, root, cupy=None) -> None:
    """The worker's environment for the learner's code under `root` (the submission's top)."""
    if era not in ERAS:
        raise ValueError('unknown era {!r}; expected one of {}'.format(era, ', '.join(ERAS)))
    import numpy
    _S.era = era
    root = str(root)
    _S.roots = tuple(dict.fromkeys([os.path.abspath(root), _realpath(root)]))
    _S.learner_files = {}
    previous = vars(numpy).get('__getattr__')
    previous = getattr(previous, '__compat_previous__', previous)
    numpy.__getattr__ = _numpy_getattr(numpy, previous)
    if _FINDER not in sys.meta_path:
        sys.meta_path.insert(0, _FINDER)
    if cupy is not None and not getattr(cupy, '__simulated__', False):
        _patch_real_cupy(cupy)


def uninstall() -> None:
    """Undo `install` (for tests): NumPy's own `__getattr__` back, the finder out, findings kept."""
    import numpy
    current = vars(numpy).get('__getattr__')
    previous = getattr(current, '__compat_previous__', current)
    if previous is None:
        vars(numpy).pop('__getattr__', None)
    else:
        numpy.__getattr__ = previous
    while _FINDER in sys.meta_path:
        sys.meta_path.remove(_FINDER)
    for name in MODULES:
        if isinstance(sys.modules.get(name), _ServedModule):
            del sys.modules[name]
    lib = sys.modules.get('numpy.lib')
    for name in _PRIVATE:
        if lib is not None and isinstance(vars(lib).get(name), _ServedModule):
            delattr(lib, name)
    _S.era = None


def clear_findings() -> None:
    _S.findings.clear()
    _S.index.clear()
