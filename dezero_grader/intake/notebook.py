"""Notebook submissions: a learner's Jupyter (or Colab) notebooks turned into the files a grading
runs, while the submission is loaded (`dezero_grader.intake.load.prepare`), before anything else sees it.

Two patterns are read, both the way Jupyter would run them, code cells only, in order:

* a step notebook for the single-file steps: `stepNN.ipynb` where a `stepNN.py` could stand (at
  the top, in `steps/`, or inside one top-level folder), or any notebook a `.dezero-notebooks` map
  file names for a step (`9 notebooks/chapter2.ipynb`, or `1-10 all.ipynb`, one per line). Its code
  cells become `stepNN.py` beside it;
* a package written by a notebook (the common Colab pattern): cells that begin with
  `%%writefile dezero/core.py` (or `-a`, to append) write those files, relative to the notebook's
  folder, when the submission has no `dezero/` package of its own.

Shell and magic lines (`!pip install ...`, `%matplotlib inline`) are not run: each is replaced by
`pass` (so the cell keeps its shape) and reported, and so is a cell under another cell magic
(`%%time`, ...). Every generated line keeps a map back to its notebook, cell (counted among all
cells, from 1, as the notebook shows them) and line, so that what a learner reads says
`step09.ipynb, cell 7, line 3`, never the generated file. The notebooks that were turned into code
are removed from the scratch copy: what is graded, and hashed for the seed, is the code alone
(outputs and metadata that change on every run do not change the seed).

Notebooks are a learner's files: anything nbformat cannot read, or a cell that would write outside
the submission, is refused with a `SubmissionError` or a reported line, never a traceback.
"""
from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass, field
from pathlib import Path

from dezero_grader.errors import SubmissionError

MAP_FILE = '.dezero-notebooks'
_WRITEFILE = re.compile(r'^%%writefile(?P<append>\s+-a)?\s+(?P<path>\S.*?)\s*$')
_MAP_LINE = re.compile(r'^\s*(?P<first>\d{1,2})(?:\s*-\s*(?P<last>\d{1,2}))?\s+(?P<path>\S.*?)\s*$')
MAX_MAP_BYTES = 64 * 1024


@dataclass(frozen=True)
class Place:
    """Where a generated line came from."""
    notebook: str          # the notebook's path, relative to the submission's top
    cell: int              # the cell's position among all cells, from 1
    line: int              # the line within the cell, from 1

    def __str__(self):
        return '{}, cell {}, line {}'.format(self.notebook, self.cell, self.line)


@dataclass(frozen=True)
class NotRun:
    """A line (or a whole cell) of a notebook the grader does not run."""
    place: Place
    text: str
    why: str

    def to_json(self):
        return {'where': str(self.place), 'line': self.text[:200], 'why': self.why}


@dataclass(frozen=True)
class Expansion:
    """What reading the notebooks of a submission gave: the files written (relative path → the
    place of each of their lines, in order), the notebooks read, and the lines not run."""
    files: tuple = ()        # ((relative path, (Place, ...)), ...)
    notebooks: tuple = ()    # relative paths of the notebooks turned into code
    not_run: tuple = ()      # NotRun

    def __bool__(self):
        return bool(self.files)

    def place(self, relpath: str, line: int) -> Place | None:
        for path, places in self.files:
            if path == relpath and 1 <= line <= len(places):
                return places[line - 1]
        return None

    def to_json(self):
        return {'notebooks': list(self.notebooks),
                'files': [path for path, _ in self.files],
                'not_run': [n.to_json() for n in self.not_run]}


# -- reading ------------------------------------------------------------------------------------

def code_cells(path: Path, shown: str) -> list:
    """(cell number, source text) of every code cell of the notebook at `path`, in order;
    `shown` is its name as the learner knows it, for messages."""
    try:
        import nbformat
    except ImportError:   # pragma: no cover - a dependency of the grader
        raise SubmissionError('bad-notebook', 'reading {} needs nbformat, which is not installed '
                              'with this grader'.format(shown)) from None
    try:
        with open(path, encoding='utf-8') as f:
            nb = nbformat.read(f, as_version=4)
        cells = list(nb.cells)
    except Exception as exc:   # nbformat, json and the reader raise many kinds on a bad file
        raise SubmissionError('bad-notebook', '{} is not a notebook Jupyter can open ({}: {})'.format(
            shown, type(exc).__name__, _short(exc))) from None
    out = []
    for number, cell in enumerate(cells, 1):
        if not isinstance(cell, dict) or cell.get('cell_type') != 'code':
            continue
        source = cell.get('source', '')
        if isinstance(source, list):
            source = ''.join(str(part) for part in source)
        out.append((number, str(source)))
    return out


def _short(exc, limit=160):
    text = str(exc).splitlines()[0] if str(exc) else ''
    return text[:limit]


# -- translating --------------------------------------------------------------------------------

def _shell_or_magic(stripped: str) -> str | None:
    if stripped.startswith('!'):
        return 'a shell command: the grader does not run it'
    if stripped.startswith('%') and not stripped.startswith('%%'):
        return 'an IPython magic: the grader does not run it'
    return None


def _python_lines(notebook, cell, text, first_line, not_run):
    """The lines of a cell's Python, with shell and magic lines replaced by `pass` at their
    indentation (and reported), each with its Place."""
    out = []
    for offset, line in enumerate(text.split('\n')):
        place = Place(notebook, cell, first_line + offset)
        stripped = line.lstrip()
        why = _shell_or_magic(stripped)
        if why:
            not_run.append(NotRun(place, stripped, why))
            line = line[:len(line) - len(stripped)] + 'pass'
        out.append((line, place))
    return out


def translate(cells, notebook: str, not_run: list):
    """(lines of the step file, their Places; {path: [(lines, places, append)]} of the
    `%%writefile` cells) of one notebook's code cells."""
    script, writes = [], []
    for number, source in cells:
        first, _, rest = source.partition('\n')
        head = first.strip()
        m = _WRITEFILE.match(head)
        if m:
            body = rest[:-1] if rest.endswith('\n') else rest
            writes.append((m['path'].strip('\'"'), bool(m['append']),
                           [(line, Place(notebook, number, 2 + i))
                            for i, line in enumerate(body.split('\n'))] if body or rest else []))
            continue
        if head.startswith('%%'):
            not_run.append(NotRun(Place(notebook, number, 1), head,
                                  'a cell magic: the grader does not run this cell'))
            continue
        script.extend(_python_lines(notebook, number, source, 1, not_run))
    return script, writes


# -- expanding a submission ---------------------------------------------------------------------

def _rel(root: Path, path: Path) -> str:
    return path.relative_to(root).as_posix()


def _step_notebooks(root: Path, step: int, bases) -> list:
    names = ['step{:02d}.ipynb'.format(step)] + (['step{}.ipynb'.format(step)] if step < 10 else [])
    return [root / base / folder / name for base in bases for folder in ('', 'steps')
            for name in names if (root / base / folder / name).is_file()]


def mapped_notebook(root: Path, step: int):
    """The notebook `.dezero-notebooks` names for `step` (None when no map names one)."""
    mapfile = root / MAP_FILE
    if not mapfile.is_file():
        return None
    try:
        if mapfile.stat().st_size > MAX_MAP_BYTES:
            raise SubmissionError('bad-map', '{} is over {} KiB; it holds one "STEP PATH" line per '
                                  'notebook'.format(MAP_FILE, MAX_MAP_BYTES // 1024))
        text = mapfile.read_bytes().decode('utf-8')
    except UnicodeDecodeError:
        raise SubmissionError('bad-map', '{} is not UTF-8 text'.format(MAP_FILE)) from None
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip() or line.lstrip().startswith('#'):
            continue
        m = _MAP_LINE.match(line)
        if not m:
            raise SubmissionError('bad-map', '{} line {}: expected "STEP PATH" or "FIRST-LAST PATH" '
                                  '(e.g. "9 notebooks/step09.ipynb"), found {!r}'.format(
                                      MAP_FILE, number, line.strip()[:80]))
        first, last = int(m['first']), int(m['last'] or m['first'])
        if first <= step <= last:
            target = _inside(root, m['path'])
            if target is None or not target.is_file():
                raise SubmissionError('bad-map', '{} line {} names {}, which is not a file of the '
                                      'submission'.format(MAP_FILE, number, m['path'][:120]))
            return target
    return None


def _inside(root: Path, relpath: str) -> Path | None:
    """`relpath` under `root`, or None when it leaves it (absolute, `..`, a NUL)."""
    if '\0' in relpath or relpath.startswith(('/', '\\')) or re.match(r'^[A-Za-z]:', relpath):
        return None
    parts = posixpath.normpath(relpath.replace('\\', '/')).split('/')
    if not parts or parts[0] in ('..', '') or any(p == '..' for p in parts):
        return None
    return root.joinpath(*parts)


@dataclass
class _Written:
    lines: list = field(default_factory=list)     # (text, Place)


def expand(root: Path, step: int, *, first_package_step: int, top_dirs) -> Expansion:
    """Turn the notebooks of the submission at `root` (its scratch copy) that hold the code of
    `step` into files, and remove them; `top_dirs` are the folders one level down that may hold
    the code. Returns what was written (empty when no notebook is involved)."""
    bases = [''] + ['{}/'.format(d) for d in top_dirs]
    not_run: list = []
    if step < first_package_step:
        mapped = mapped_notebook(root, step)
        notebooks = [mapped] if mapped is not None else _step_notebooks(root, step, bases)
        for nb in notebooks:
            twin = nb.with_suffix('.py') if mapped is None else None
            if twin is not None and twin.exists():
                raise SubmissionError('ambiguous-entry', 'found both {} and {}: keep exactly one'.format(
                    _rel(root, twin), _rel(root, nb)))
        if len(notebooks) > 1:
            raise SubmissionError('ambiguous-entry', 'found several notebooks for step {}: {}; keep '
                                  'exactly one'.format(step, ', '.join(_rel(root, n) for n in notebooks)))
        if not notebooks:
            return Expansion()
        nb = notebooks[0]
        shown = _rel(root, nb)
        script, _ = translate(code_cells(nb, shown), shown, not_run)
        name = 'step{:02d}.py'.format(step)
        target = (nb.parent / name) if mapped is None else (root / name)
        if mapped is not None and target.exists():
            raise SubmissionError('ambiguous-entry', '{} maps step {} to {}, but {} is there too: keep '
                                  'exactly one'.format(MAP_FILE, step, shown, name))
        _write(target, [text for text, _ in script])
        nb.unlink()
        return Expansion(files=((_rel(root, target), tuple(p for _, p in script)),),
                         notebooks=(shown,), not_run=tuple(not_run))
    if any((root / base / 'dezero' / '__init__.py').is_file() for base in bases):
        return Expansion()   # the package is there as files: those are graded
    written: dict = {}
    used = []
    for base in bases:
        for nb in sorted((root / base).glob('*.ipynb')) if (root / base).is_dir() else ():
            shown = _rel(root, nb)
            cells = code_cells(nb, shown)
            if not any(_WRITEFILE.match(src.partition('\n')[0].strip()) for _, src in cells):
                continue
            _, writes = translate(cells, shown, [])   # only the written files are graded
            for path, append, lines in writes:
                target = _inside(nb.parent, path)
                if target is None or not _within(root, target):
                    not_run.append(NotRun(lines[0][1] if lines else Place(shown, 0, 1),
                                          '%%writefile ' + path[:120],
                                          'writes outside the submission: not written'))
                    continue
                record = written.setdefault(target, _Written())
                record.lines = (record.lines if append else []) + list(lines)
            used.append(nb)
    if not written:
        return Expansion()
    files = []
    for target, record in sorted(written.items(), key=lambda kv: str(kv[0])):
        _write(target, [text for text, _ in record.lines])
        files.append((_rel(root, target), tuple(p for _, p in record.lines)))
    for nb in used:
        nb.unlink()
    return Expansion(files=tuple(files), notebooks=tuple(_rel(root, n) for n in used),
                     not_run=tuple(not_run))


def _within(root: Path, target: Path) -> bool:
    try:
        target.resolve().relative_to(root.resolve())
        return True
    except (ValueError, OSError):
        return False


def _write(target: Path, lines):
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text('\n'.join(lines) + '\n', encoding='utf-8', errors='surrogateescape')


# -- what a learner reads -----------------------------------------------------------------------

def relocate(text: str, expansion: Expansion) -> str:
    """`text` with every `GENERATED_FILE:LINE` of the expansion's files written as the notebook
    place it came from."""
    if not expansion or not isinstance(text, str):
        return text
    for path, places in expansion.files:
        if path not in text:
            continue
        pattern = re.compile(r'(?<![\w/.-]){}:(\d+)'.format(re.escape(path)))

        def at(m, places=places):
            line = int(m.group(1))
            return str(places[line - 1]) if 1 <= line <= len(places) else m.group(0)
        text = pattern.sub(at, text)
    return text


def relocate_all(value, expansion: Expansion):
    """`relocate` over every string of a JSON-like value (dicts, lists)."""
    if not expansion:
        return value
    if isinstance(value, str):
        return relocate(value, expansion)
    if isinstance(value, dict):
        return {k: relocate_all(v, expansion) for k, v in value.items()}
    if isinstance(value, list):
        return [relocate_all(v, expansion) for v in value]
    return value
