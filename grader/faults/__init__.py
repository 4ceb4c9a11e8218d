"""The fault library: named single bugs, injected into any submission through the public API.

A patch is a plain function `patch(dz)` that receives the submission's loaded `dezero` package
and wraps or replaces one public function, method or class attribute — never an edit of source
lines — so it applies to any implementation written to the book's API, ours or a learner's.
Each patch must be self-contained (it may import only the standard library and NumPy inside its
body): `inject` copies its source into the variant, so a single-fault variant is an ordinary
submission that grades like any other.
"""
from __future__ import annotations

import inspect
import shutil
import textwrap
from pathlib import Path

from grader.errors import GraderError

PATCHES: dict = {}

MARKER = '# --- single-fault variant made by dezero-grade inject ---'


def patch(name):
    def register(fn):
        if name in PATCHES:
            raise ValueError('patch {!r} registered twice'.format(name))
        PATCHES[name] = fn
        return fn
    return register


def source_of(name: str) -> str:
    fn = PATCHES[name]
    src = textwrap.dedent(inspect.getsource(fn))
    lines = [line for line in src.splitlines() if not line.startswith('@patch(')]
    return '\n'.join(lines) + '\n'


def inject(source: Path, out: Path, fault, entry) -> Path:
    """Copy the submission at `source` (a prepared scratch copy or a folder) to `out` with the
    fault's patch applied when the package is imported."""
    out = Path(out)
    if out.exists():
        raise GraderError('{} exists already; choose a new folder for the variant'.format(out))
    shutil.copytree(source, out, symlinks=False,
                    ignore=shutil.ignore_patterns('__pycache__', '*.pyc'))
    body = source_of(fault.patch)
    fn_name = PATCHES[fault.patch].__name__
    if entry.kind != 'package':
        raise GraderError('fault {} patches a dezero package; step files are not supported '
                          'yet'.format(fault.id))
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


def load_all():
    """Import every module of this package (patches register themselves at import)."""
    from grader.checks import _import_package
    _import_package(__name__, __path__)
    return PATCHES
