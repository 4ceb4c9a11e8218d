"""Which of the grader's files a piece of it runs: the key of what is stored apart from the code.

Two stored things describe the code that made them: the reference's answers to probes
(`dezero_grader.grading.reference_cache`) and the mutation figure (`dezero_grader.proof.mutation_record`). Each is keyed on
a digest of the files it depends on, and the files are derived here, not listed by hand: from
root modules, their imports within the `dezero_grader` package are followed, statically (imports in
functions too), to every module they can run. A package that loads its modules by name at run
time (the scenarios, the contracts, the checks: its `__init__.py` hands `__path__` to a call),
which no import statement shows, counts whole. A package's `__init__.py` runs before any of its
modules, so the parents of every module count too, and a data file beside a module counts with
it. Only the source text is read; nothing is imported.
"""
from __future__ import annotations

import ast
import functools
import hashlib
from pathlib import Path

PACKAGE = 'dezero_grader'
GRADER_DIR = Path(__file__).resolve().parents[1]


def _module_path(name: str, root: Path) -> Path | None:
    """The file of module `name` (a `dezero_grader.` name) under `root` (the package's folder), or None."""
    parts = name.split('.')[1:]
    base = root.joinpath(*parts)
    if base.with_suffix('.py').is_file():
        return base.with_suffix('.py')
    if (base / '__init__.py').is_file():
        return base / '__init__.py'
    return None


def _module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root).with_suffix('').parts)
    if parts[-1] == '__init__':
        parts.pop()
    return '.'.join([PACKAGE] + parts)


def _imported(path: Path, root: Path) -> set:
    """The `dezero_grader` modules a file's import statements name (those that exist under `root`)."""
    names = _names_imported(path.read_text(encoding='utf-8'), str(path),
                            _module_name(path, root), path.name == '__init__.py')
    return {n for n in names if _module_path(n, root) is not None}


@functools.lru_cache(maxsize=1024)
def _names_imported(text: str, where: str, module: str, is_package: bool) -> frozenset:
    """The `dezero_grader` names a module's text imports (modules or not): parsed once per text."""
    tree = ast.parse(text, where)
    here = module.split('.')
    if not is_package:
        here = here[:-1]             # the package a relative import is relative to
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = '.'.join(here[:len(here) - node.level + 1] + ([node.module] if node.module else []))
            else:
                base = node.module or ''
            found.add(base)
            # `from dezero_grader.sandboxed import capture`: the names may be modules themselves
            found.update('{}.{}'.format(base, alias.name) for alias in node.names)
    return frozenset(n for n in found if n == PACKAGE or n.startswith(PACKAGE + '.'))


def _loads_by_name(init: Path) -> bool:
    """Whether a package's `__init__.py` hands its own `__path__` to a call (pkgutil's
    `iter_modules(__path__)`, the checks' `_import_package(__name__, __path__)`): it imports its
    modules by name, which no import statement shows."""
    return _hands_path(init.read_text(encoding='utf-8'), str(init))


@functools.lru_cache(maxsize=256)
def _hands_path(text: str, where: str) -> bool:
    tree = ast.parse(text, where)
    return any(isinstance(node, ast.Call) and any(
        isinstance(a, ast.Name) and a.id == '__path__' for a in node.args)
        for node in ast.walk(tree))


def _reached(name: str, root: Path) -> set:
    """The files that importing module `name` runs by itself: the module, the `__init__.py` of
    each package above it, every module of a package that loads its modules by name, and the
    data files beside them."""
    parts = name.split('.')
    out = {_module_path('.'.join(parts[:i]), root) for i in range(1, len(parts) + 1)}
    out.discard(None)
    for path in list(out):
        if path.name == '__init__.py' and path.parent != root and _loads_by_name(path):
            out.update(files_under(path.parent))
    for path in list(out):
        out.update(p for p in path.parent.iterdir() if p.is_file() and p.suffix not in
                   ('.py', '.pyc', '.pyo'))
    return out


def files_under(folder: Path) -> list:
    """Every file below `folder` (data files too: a scenario may read one), less bytecode."""
    return [p for p in Path(folder).rglob('*') if p.is_file() and '__pycache__' not in p.parts
            and p.suffix not in ('.pyc', '.pyo')]


def closure(roots, root: Path = GRADER_DIR) -> list:
    """The files (under `root`, the `dezero_grader` package's folder) that the modules `roots` can run,
    sorted: see the module docstring."""
    root = Path(root)
    files, todo, names = set(), list(roots), set()
    while todo:
        name = todo.pop()
        if name in names:
            continue
        names.add(name)
        for path in _reached(name, root):
            if path not in files:
                files.add(path)
                if path.suffix == '.py':
                    todo.extend(_imported(path, root))
    return sorted(files)


def digest(files, base: Path) -> str:
    """sha256 over the files' paths (relative to `base`) and bytes."""
    h = hashlib.sha256()
    for path in sorted(files, key=lambda p: str(Path(p).relative_to(base))):
        h.update(str(Path(path).relative_to(base)).encode() + b'\0')
        h.update(Path(path).read_bytes() + b'\0')
    return h.hexdigest()
