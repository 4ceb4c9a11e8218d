"""The fault library: named single bugs, injected into any submission through the public API.

A patch is a plain function `patch(dz)` that receives the submission's loaded `dezero` package
and wraps or replaces one public function, method or class attribute — never an edit of source
lines — so it applies to any implementation written to the book's API, ours or a learner's.
That is how `inject` (and `selftest`) apply it. `inject_into_source` (what `dezero-grade
inject` does) writes it instead into the learner's own function where the patch's form allows
(`dezero_grader.catalogue.faults.source`), so that a learner practising finds the fault where the book's code is.
Each patch must be self-contained (it may import only the standard library and NumPy inside its
body): `inject` copies its source into the variant, so a single-fault variant is an ordinary
submission that grades like any other. Faults that differ only in parameters (the near misses of
`dezero_grader.catalogue.faults.near_miss`: which function's gradient is off, and by how much) share one body,
registered under each fault's patch name with `patch_with`; the variant then holds the body and
a call of it with the parameters written out.

For a package the patch receives `dezero` and runs at the end of `dezero/__init__.py`. For a
single step file (steps 1-22) it receives the step module, whose namespace holds `Variable`,
`Function`, `square`, ...: the variant's `stepNN.py` runs the learner's original file (kept
beside it as `_original_stepNN.py`) in its own namespace and applies the patch in a `finally:`,
so the learner's demo still runs and the fault is in place even when the demo ends in an error
(the book's step 9 does, on purpose), which then propagates as before.
"""
from __future__ import annotations

import inspect
import math
import shutil
import textwrap
from pathlib import Path

from dezero_grader.errors import GraderError

PATCHES: dict = {}
# name -> the patches a composite patch applies, in order (`compose`)
COMPOSITES: dict = {}
# the text of each module that registers patches, read once when it registers its first one, so
# that a variant is made from the code this process runs even if the file is edited meanwhile
_MODULE_LINES: dict = {}

MARKER = '# --- single-fault variant made by dezero-grade inject ---'


def patch(name):
    def register(fn):
        if name in PATCHES:
            raise ValueError('patch {!r} registered twice'.format(name))
        PATCHES[name] = fn
        filename = fn.__code__.co_filename
        if filename not in _MODULE_LINES:
            with open(filename, encoding='utf-8') as f:
                _MODULE_LINES[filename] = f.readlines()
        return fn
    return register


# name -> (the patch body, its parameters), for the patches registered by `patch_with`
_WITH: dict = {}


def patch_with(name, body, **params):
    """Register `name` as the patch `body(dz, **params)`: one body serving several faults that
    differ only in its parameters (which function, by how much). The parameters are literals
    (str, int, float); a variant's copy is `body`'s source followed by a function of `dz` alone
    that calls it with the parameters written out, so it stays self-contained."""
    if name in PATCHES:
        raise ValueError('patch {!r} registered twice'.format(name))
    if not name.isidentifier():
        raise ValueError('patch name {!r} is not an identifier'.format(name))
    for key, value in params.items():
        if type(value) not in (str, int, float) or (type(value) is float
                                                    and not math.isfinite(value)):
            raise ValueError('patch {!r}: parameter {}={!r} is not a plain literal'.format(
                name, key, value))

    def bound(dz):
        return body(dz, **params)
    bound.__name__ = bound.__qualname__ = name
    PATCHES[name] = bound
    _WITH[name] = (body, dict(params))
    filename = body.__code__.co_filename
    if filename not in _MODULE_LINES:
        with open(filename, encoding='utf-8') as f:
            _MODULE_LINES[filename] = f.readlines()
    return bound


def compose(name, *parts):
    """Register the patch `name` that applies the registered patches `parts` in order (an
    instrument and a fault, a renaming and a fault): a variant gets each part's source and a
    function that calls them, so it stays self-contained."""
    if name in PATCHES:
        raise ValueError('patch {!r} registered twice'.format(name))
    missing = [p for p in parts if p not in PATCHES]
    if missing:
        raise ValueError('patch {!r} is made of unknown patches {}'.format(name, missing))

    def composite(dz):
        for part in parts:
            PATCHES[part](dz)
    composite.__name__ = name
    PATCHES[name] = composite
    COMPOSITES[name] = tuple(parts)
    return composite


def _function_source(fn) -> str:
    lines = _MODULE_LINES[fn.__code__.co_filename]
    # a decorated function's first line is its first decorator's
    src = textwrap.dedent(''.join(inspect.getblock(lines[fn.__code__.co_firstlineno - 1:])))
    lines = [line for line in src.splitlines() if not line.startswith('@patch(')]
    return '\n'.join(lines) + '\n'


def source_of(name: str) -> str:
    if name in COMPOSITES:
        parts = COMPOSITES[name]
        calls = ''.join('    {}(dz)\n'.format(PATCHES[p].__name__) for p in parts)
        return '\n\n'.join(source_of(p) for p in parts) + '\n\ndef {}(dz):\n{}'.format(name, calls)
    if name in _WITH:
        body, params = _WITH[name]
        return '{}\n\ndef {}(dz):\n    return {}(dz, {})\n'.format(
            _function_source(body), name, body.__name__,
            ', '.join('{}={!r}'.format(k, v) for k, v in sorted(params.items())))
    return _function_source(PATCHES[name])


def _copy(source: Path, out: Path) -> Path:
    out = Path(out)
    if out.exists():
        raise GraderError('{} exists already; choose a new folder for the variant'.format(out))
    shutil.copytree(source, out, symlinks=False,
                    ignore=shutil.ignore_patterns('__pycache__', '*.pyc'))
    return out


def inject_into_source(source: Path, out: Path, fault, entry):
    """Copy the submission at `source` to `out` with the fault written into the function it
    replaces, where the submission defines it (`dezero_grader.catalogue.faults.source`): (out, what was edited,
    ''). A fault that cannot be written there is added as a module, as `inject` does:
    (out, '', why)."""
    from dezero_grader.catalogue.faults import source as in_source
    out = _copy(source, out)
    if fault.patch in COMPOSITES:
        _add_patch(out, fault, entry)
        return out, '', 'it is several patches applied together'
    if fault.patch in _WITH:
        _add_patch(out, fault, entry)
        return out, '', 'it wraps what your code computes rather than replacing one function'
    try:
        edits = in_source.plan(source_of(fault.patch), out, entry)
    except in_source.NotInSource as why:
        _add_patch(out, fault, entry)
        return out, '', str(why)
    in_source.apply(out, edits)
    return out, in_source.where(edits), ''


def inject(source: Path, out: Path, fault, entry) -> Path:
    """Copy the submission at `source` (a prepared scratch copy or a folder) to `out` with the
    fault's patch applied when the package (or the step file, for steps 1-22) is imported."""
    return _add_patch(_copy(source, out), fault, entry)


def _add_patch(out: Path, fault, entry) -> Path:
    body = source_of(fault.patch)
    fn_name = PATCHES[fault.patch].__name__
    if entry.kind == 'single-file':
        return _inject_step_file(out, fault, entry, body, fn_name)
    if entry.kind != 'package':
        raise GraderError('fault {} cannot be injected into a {} entry'.format(fault.id, entry.kind))
    package = out / entry.path
    (package / '_injected_fault.py').write_text(
        '"""Fault {id}: {title}\n\nInjected through the public API by dezero-grade inject."""\n'
        '{body}'.format(id=fault.id, title=fault.title, body=body), encoding='utf-8')
    init = package / '__init__.py'
    text = init.read_text(encoding='utf-8')
    init.write_text('{}\n\n{}\nimport {pkg} as _dz_variant\nfrom {pkg}._injected_fault import {fn} '
                    'as _dz_fault\n_dz_fault(_dz_variant)\ndel _dz_variant, _dz_fault\n'.format(
                        text.rstrip('\n'), MARKER, pkg=entry.module, fn=fn_name),
                    encoding='utf-8')
    return out


ORIGINAL_PREFIX = '_original_'
FAULT_FILE = '_injected_fault.py'

# The variant's step file. Names it leaves in the module start with `_dz_`; the learner's code
# runs first, so a name of theirs cannot shadow the fault.
_STEP_WRAPPER = '''{marker}
"""Single-fault variant of {name}: fault {id}: {title}

Runs the original step file, {original}, in this module's namespace, then injects the fault
into this module -- also when the original's demo ends in an error, which then propagates.
"""
import os as _dz_os
import sys as _dz_sys

_dz_here = _dz_os.path.dirname(_dz_os.path.abspath(__file__))
_dz_path = _dz_os.path.join(_dz_here, {original!r})
with open(_dz_path, 'rb') as _dz_file:
    _dz_code = compile(_dz_file.read(), _dz_path, 'exec', dont_inherit=True)
try:
    exec(_dz_code, globals())
finally:
    import importlib.util as _dz_util
    _dz_spec = _dz_util.spec_from_file_location(
        '_dz_injected_fault', _dz_os.path.join(_dz_here, {fault_file!r}))
    _dz_fault = _dz_util.module_from_spec(_dz_spec)
    _dz_spec.loader.exec_module(_dz_fault)
    _dz_fault.{fn}(_dz_sys.modules[__name__])
    [globals().pop(_n) for _n in [_n for _n in globals() if _n.startswith('_dz_')]]
'''


def _inject_step_file(out: Path, fault, entry, body: str, fn_name: str) -> Path:
    step_file = out / entry.path
    original = step_file.with_name(ORIGINAL_PREFIX + step_file.name)
    fault_file = step_file.with_name(FAULT_FILE)
    for path in (original, fault_file):
        if path.exists():
            raise GraderError('cannot inject fault {}: {} exists already (is this a variant '
                              'already?)'.format(fault.id, path.name))
    step_file.rename(original)
    fault_file.write_text(
        '"""Fault {id}: {title}\n\nInjected through the public API by dezero-grade inject."""\n'
        '{body}'.format(id=fault.id, title=fault.title, body=body), encoding='utf-8')
    step_file.write_text(_STEP_WRAPPER.format(
        marker=MARKER, name=step_file.name, id=fault.id, title=fault.title,
        original=original.name, fault_file=FAULT_FILE, fn=fn_name), encoding='utf-8')
    return out


def load_all():
    """Import every module of this package (patches register themselves at import)."""
    from dezero_grader.checks import _import_package
    _import_package(__name__, __path__)
    return PATCHES
