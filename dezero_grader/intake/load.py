"""Loading a submission: the first stage of the data flow, and one of the two that touch files.

``prepare`` turns what a learner handed in (a folder, or a ``.zip`` of one) into a private
scratch copy that the worker runs in -- the original is never touched -- and records its
identity (``content_hash``) and its entry point (``find_entry``): the ``dezero/`` package for
steps 23-60, a ``stepNN.py`` file for steps 1-22. Zips are extracted by ``safe_extract``,
which refuses path traversal, links, device files and archive bombs before writing a byte.

Bounds (both for zips and for folder copies): at most ``MAX_TOTAL_BYTES`` (200 MiB) of file
data and ``MAX_FILES`` (10 000) files; zip entries over 1 MiB may not be compressed more than
``MAX_RATIO`` (200) times, nor the archive as a whole. Symbolic links and special files inside a
submission folder are skipped, never followed (``Submission.skipped`` names them); so are Python
caches, version-control folders, macOS metadata and virtual environments (folders holding
``pyvenv.cfg``). Zip extraction and its bounds live in ``dezero_grader.intake.archive``. Everything is refused with a ``SubmissionError`` whose message a learner can act on.
"""

from __future__ import annotations

import ast
import hashlib
import os
import re
import shutil
import stat
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

from dezero_grader.errors import GraderError, SubmissionError
from dezero_grader.intake import notebook
from dezero_grader.intake.archive import CHUNK as _CHUNK, MAX_FILES, MAX_TOTAL_BYTES, safe_extract

FIRST_PACKAGE_STEP = 23
LAST_STEP = 60
# Steps whose text has no code (the book's step file says only "# No code"): a single-file step of
# these is graded on the latest earlier step file when its own file is absent or holds no code.
# The assignments mark the same steps `no_code`.
NO_CODE_STEPS = frozenset({5, 15, 25, 30, 31, 32, 56})

_IGNORED_DIRS = frozenset({"__pycache__", ".git", ".hg", ".svn", "__MACOSX"})
_IGNORED_FILES = frozenset({".DS_Store"})
_IGNORED_SUFFIXES = (".pyc", ".pyo")
MAX_DEPTH = 64     # folders inside folders: no DeZero needs more, and walking deeper costs the grader
_LISTED = 8  # entries named in a "what the folder contains" message


@dataclass(frozen=True)
class Entry:
    """Where the learner's code starts, relative to the submission root."""

    kind: str          # "package" | "single-file"
    module: str        # import name: "dezero" or e.g. "step09"
    path: str          # relative posix path of the package folder or the step file
    sys_path_dir: str  # relative posix folder to put on sys.path ("." for the root)


@dataclass(frozen=True)
class Submission:
    """A submission ready to be graded: a scratch copy and what it holds."""

    id: str
    source: Path
    root: Path             # the scratch copy the worker runs in
    entry: Entry
    content_hash: str      # "sha256:<hex>" of the submitted content (see content_hash)
    files: int
    skipped: tuple[str, ...] = ()  # relative paths of links and special files not copied
    notebooks: notebook.Expansion = notebook.Expansion()  # the code its notebooks held, if any
    # what was graded, as it was read (not the hand-in as it is now, which may have changed):
    # the content hash of the copy made of a folder, "zip-sha256:<hex>" of the archive's bytes
    # that were extracted; a batch's receipt records it (`fingerprint_of`)
    fingerprint: str = ""


# -- entry ----------------------------------------------------------------------------------------

def find_entry(root: Path, step: int) -> Entry:
    """Find the learner's entry point for ``step`` in the folder ``root``.

    Steps 23-60: a ``dezero/`` folder with ``__init__.py`` at the root or, failing that, inside
    one top-level folder (a zip of ``alice/dezero/...``). Steps 1-22: ``stepNN.py`` (or
    ``stepN.py``) at the root or in ``steps/`` or, failing that, the same inside one top-level
    folder; the file's folder goes on ``sys.path`` so helper modules beside it import. At a step
    without code (``NO_CODE_STEPS``: 5, 15) a step file that is absent or holds only comments
    stands for the state of the latest earlier step with code (4, 14), whose file is graded
    instead. Several
    candidates at the same level are refused as ambiguous rather than guessed between.
    """
    if not isinstance(step, int) or isinstance(step, bool) or not 1 <= step <= LAST_STEP:
        raise GraderError(f"step must be an int from 1 to {LAST_STEP}, found {step!r}")
    root = Path(root)
    levels = [[""], [f"{name}/" for name in _top_dirs(root)]]
    if step >= FIRST_PACKAGE_STEP:
        for bases in levels:
            found = [base for base in bases if (root / base / "dezero" / "__init__.py").is_file()]
            if len(found) > 1:
                raise SubmissionError("ambiguous-entry", f"found a dezero/ package in several top-level folders "
                                      f"({', '.join(found)}); for step {step} keep exactly one")
            if found:
                return Entry("package", "dezero", f"{found[0]}dezero", found[0].rstrip("/") or ".")
        hint = ""
        if any((root / base / "dezero").is_dir() for bases in levels for base in bases):
            hint = " (a dezero/ folder is there but has no __init__.py)"
        elif any((root / m).is_file() for m in _CORE_MODULES) and not (root / "__init__.py").is_file():
            hint = (" (the files of a dezero/ package seem to be at the top, but its __init__.py is "
                    "not among them: upload every file of dezero/, or the folder itself)")
        raise SubmissionError("no-entry", f"step {step} expects your dezero/ package (a folder named dezero holding "
                              f"__init__.py) at the top of the submission or inside one top-level folder{hint}; "
                              f"found {_listing(root)}")
    names = _step_names(step)
    for bases in levels:
        found = _step_files(root, bases, step)
        if found and step in NO_CODE_STEPS and not _has_code(root / found[0]):
            found = []   # the book's "# No code": the state of the latest step with code is graded
        if not found and step in NO_CODE_STEPS:
            found = _step_files(root, bases, _state_step(step))
        if found:
            folder, _, name = found[0].rpartition("/")
            return Entry("single-file", name[:-3], found[0], folder or ".")
    wanted = " or ".join(names)
    if step in NO_CODE_STEPS:
        wanted += (f" holding code, or step{_state_step(step):02d}.py (step {step} has no code: the file of step "
                   f"{_state_step(step)} is graded in its place)")
    raise SubmissionError("no-entry", f"step {step} expects {wanted} at the top of the submission or in steps/ "
                          f"(or inside one top-level folder); found {_listing(root)}"
                          f"{_near_misses(root, [''] + levels[1])}")


def _step_names(step: int) -> list[str]:
    return [f"step{step:02d}.py"] + ([f"step{step}.py"] if step < 10 else [])


def _state_step(step: int) -> int:
    """The step whose state a step without code stands for: the latest earlier step with code."""
    return max(n for n in range(1, step) if n not in NO_CODE_STEPS)


def _step_files(root: Path, bases: list[str], step: int) -> list[str]:
    """The step files of ``step`` at one level (the root, or inside each top-level folder)."""
    found = [folder + name for base in bases for folder in (base, f"{base}steps/") for name in _step_names(step)
             if (root / folder / name).is_file()]
    if len(found) > 1:
        raise SubmissionError("ambiguous-entry", f"found several files for step {step}: {', '.join(found)}; "
                              "keep exactly one")
    return found


def _has_code(path: Path) -> bool:
    """Whether a step file holds a statement (not only comments, blank lines or a docstring).
    A file that does not parse counts as code: importing it reports the syntax error. So does a
    file that nests deeper than the parser goes (MemoryError, RecursionError): the learner's
    input, never the grader's crash."""
    try:
        tree = ast.parse(path.read_bytes())
    except (SyntaxError, ValueError, OSError, RecursionError, MemoryError):
        return True
    return any(not (isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)) for node in tree.body)


PARSE_AT_MOST = 8 * 2**20   # bytes of one submitted file this side parses


def syntax_tree(path) -> ast.Module | None:
    """The syntax tree of one of the submission's Python files, parsed on this side, or None
    where the file is larger than PARSE_AT_MOST, cannot be read or is not Python. A file nested
    deeper than Python's parser goes raises RecursionError or MemoryError: what that means is
    the caller's to say."""
    try:
        if os.stat(path).st_size > PARSE_AT_MOST:
            return None
        return ast.parse(Path(path).read_bytes(), str(path))
    except (SyntaxError, ValueError, OSError):
        return None


def beyond_the_parser(root: Path) -> str | None:
    """The first Python file under `root` (relative posix path) that nests deeper than Python's
    parser goes (it raises MemoryError or RecursionError, not SyntaxError), or None. Asked only
    after importing the code failed that way, to tell the learner which file and why: an
    out-of-memory at import and a file Python cannot parse look the same from the worker."""
    for rel, path in _walk_files(Path(root)):
        if not rel.endswith(".py"):
            continue
        try:
            syntax_tree(path)
        except (RecursionError, MemoryError):
            return rel
    return None


def _top_dirs(root: Path) -> list[str]:
    """Top-level folders that may wrap the submission (a zip of a folder)."""
    try:
        return sorted(e.name for e in os.scandir(root) if e.is_dir(follow_symlinks=False)
                      and not e.name.startswith(".") and e.name not in _IGNORED_DIRS and e.name != "steps")
    except OSError:
        return []


def _listing(root: Path) -> str:
    try:
        entries = sorted((e.name + ("/" if e.is_dir(follow_symlinks=False) else ""))
                         for e in os.scandir(root) if e.name not in _IGNORED_DIRS | _IGNORED_FILES)
    except OSError as exc:
        return f"a folder that cannot be read ({exc.strerror})"
    if not entries:
        return "an empty folder"
    shown = ", ".join(entries[:_LISTED])
    more = f" and {len(entries) - _LISTED} more" if len(entries) > _LISTED else ""
    return f"{shown}{more}"


def _near_misses(root: Path, bases: list[str]) -> str:
    pattern = re.compile(r"step\d+\.py$", re.IGNORECASE)
    seen = []
    for base in bases:
        for folder in (base, f"{base}steps/"):
            try:
                seen += [folder + e.name for e in os.scandir(root / folder) if pattern.match(e.name)]
            except OSError:
                pass
    if not seen:
        return ""
    seen.sort()
    return f" (step files present: {', '.join(seen[:_LISTED])}{' ...' if len(seen) > _LISTED else ''})"


# -- the flat upload -------------------------------------------------------------------------------

# a package's own files; a flat upload must have __init__.py and one of the core modules
_CORE_MODULES = ("core.py", "core_simple.py")


def is_flat_package(root: Path) -> bool:
    """Whether ``root`` holds the files of a ``dezero/`` package without the folder (what
    Gradescope's drag and drop uploads: ``__init__.py``, ``core.py``, ``layers.py``, ... at the
    top): ``__init__.py`` and ``core.py`` (or ``core_simple.py``) at the top, no ``dezero/``
    folder anywhere a package is looked for, and no step file beside them (a folder of
    ``stepNN.py`` scripts is not a package)."""
    root = Path(root)
    if not (root / "__init__.py").is_file() or not any((root / m).is_file() for m in _CORE_MODULES):
        return False
    if (root / "dezero").exists() or any((root / d / "dezero").is_dir() for d in _top_dirs(root)):
        return False
    try:
        names = [e.name for e in os.scandir(root)]
    except OSError:
        return False
    return not any(re.fullmatch(r"step\d+\.py", n, re.IGNORECASE) for n in names)


def _wrap_in_package(root: Path) -> None:
    """Move everything at the top of the scratch copy into ``dezero/``: the same layout, and the
    same content hash, as the folder uploaded with its package folder. The staging folder gets a
    name no file of the upload has (the learner chooses every name there is)."""
    staging = Path(tempfile.mkdtemp(prefix=".dezero-flat-", dir=root))
    for e in list(os.scandir(root)):
        if e.name != staging.name:
            os.rename(e.path, staging / e.name)
    os.rename(staging, root / "dezero")


# -- identity -------------------------------------------------------------------------------------

_ID_KEEP = frozenset('._-+@')
_ID_MAX = 80


def safe_id(name: str) -> str:
    """A submission's id from its file name, safe as a file name, in JSON and on a terminal: the
    name itself when it is made of letters, digits and `._-+@` (not starting with a dot) and at
    most 80 characters; otherwise the safe part of it and a short hash of the whole name, so that
    different names keep different ids (bytes that are not UTF-8 count as their own)."""
    try:
        raw = name.encode('utf-8', 'surrogateescape')
    except UnicodeEncodeError:   # a lone surrogate no file name decodes to (text of a learner's)
        raw = name.encode('utf-8', 'surrogatepass')
    text = raw.decode('utf-8', 'replace')
    kept = ''.join(ch if ch.isalnum() or ch in _ID_KEEP else '_' for ch in text).lstrip('.')
    if kept == name and 0 < len(kept) <= _ID_MAX:
        return name
    return '{}-{}'.format(kept[:_ID_MAX - 13] or 'submission', hashlib.sha256(raw).hexdigest()[:12])



def _ignored(name: str, is_dir: bool) -> bool:
    if is_dir:
        return name in _IGNORED_DIRS
    return name in _IGNORED_FILES or name.endswith(_IGNORED_SUFFIXES)


def _is_venv(path: str) -> bool:
    return os.path.isfile(os.path.join(path, "pyvenv.cfg"))


def _too_deep(rel: str) -> SubmissionError:
    return SubmissionError("too-deep", f"the submission nests folders more than {MAX_DEPTH} deep "
                           f"(at {rel[:120]}...); a DeZero package needs two or three")


def _walk_files(root: Path, folders: bool = False):
    """Yield (relative posix path, absolute path) of regular files, sorted, links never followed;
    with `folders`, each folder too (its path ending in `/`), before what it holds."""
    def walk(folder: str, rel: str):
        if rel.count("/") > MAX_DEPTH:
            raise _too_deep(rel)
        with os.scandir(folder) as it:
            entries = sorted(it, key=lambda e: e.name)
        for e in entries:
            if e.is_symlink():
                continue
            if e.is_dir(follow_symlinks=False):
                if not _ignored(e.name, True) and not _is_venv(e.path):
                    if folders:
                        yield f"{rel}{e.name}/", e.path
                    yield from walk(e.path, f"{rel}{e.name}/")
            elif e.is_file(follow_symlinks=False) and not _ignored(e.name, False):
                yield f"{rel}{e.name}", e.path
    yield from walk(str(root), "")


def _prune(root: Path) -> None:
    """Remove from an extracted archive what the content hash leaves out (caches, compiled files,
    version control, virtual environments), so that the scratch copy holds exactly the files that
    were hashed: a `__pycache__/*.pyc` would otherwise run instead of its source, and two
    submissions that differ only there would share one hash and one seed."""
    for folder, dirs, names in os.walk(root, topdown=True):
        rel = os.path.relpath(folder, root)
        if rel != "." and rel.count(os.sep) >= MAX_DEPTH:
            raise _too_deep(rel.replace(os.sep, "/"))
        for d in list(dirs):
            path = os.path.join(folder, d)
            if os.path.islink(path) or _ignored(d, True) or _is_venv(path):
                dirs.remove(d)
                if os.path.islink(path):
                    os.unlink(path)
                else:
                    shutil.rmtree(path)
        for name in names:
            if _ignored(name, False):
                os.unlink(os.path.join(folder, name))


def content_hash(root: Path) -> str:
    """``"sha256:<hex>"`` over the tree the worker sees: every folder's relative posix path (an
    empty folder the code reads, `os.listdir` of a folder, tells one tree from another) and every
    regular file's path and bytes, in path order.

    Ignores Python caches (``__pycache__``, ``*.pyc``), version-control and macOS metadata
    (``.git``, ``.hg``, ``.svn``, ``__MACOSX``, ``.DS_Store``), virtual environments and links
    (none of which the scratch copy holds); file modes and times do not count, so the hash is
    the same on every machine.
    """
    digest = hashlib.sha256()
    items = sorted(_walk_files(Path(root), folders=True))
    for rel, path in items:
        name = rel.encode("utf-8", "surrogateescape")
        digest.update(len(name).to_bytes(8, "big") + name)
        if rel.endswith("/"):
            continue   # a folder: its name is all there is (a file's name never ends in /)
        size = os.stat(path).st_size
        digest.update(size.to_bytes(8, "big"))
        with open(path, "rb") as f:
            for chunk in iter(lambda: f.read(_CHUNK), b""):
                digest.update(chunk)
    return f"sha256:{digest.hexdigest()}"


# -- prepare --------------------------------------------------------------------------------------

def _code_root(root: Path, entry: Entry) -> Path:
    """Where the content hash starts: inside the one top-level folder the code was found in (a
    zip of `alice/` holds `alice/dezero/...`) when that folder is all the submission holds, so
    that the same code has the same hash, and so the same seed, zipped or not and whatever its
    wrapper is called; else the submission's root."""
    top, _, rest = entry.path.partition("/")
    at_root = (entry.kind == "package" and entry.path == "dezero") or (
        entry.kind == "single-file" and (not rest or top == "steps" and "/" not in rest))
    if at_root:
        return root
    try:
        names = [e.name for e in os.scandir(root) if not _ignored(e.name, e.is_dir(follow_symlinks=False))]
    except OSError:
        return root
    return root / top if names == [top] else root


def prepare(source: Path, step: int, scratch_parent: Path, *, max_total_bytes: int = MAX_TOTAL_BYTES,
            max_files: int = MAX_FILES) -> Submission:
    """Copy or extract ``source`` into a fresh folder under ``scratch_parent`` and find its entry."""
    source = Path(source)
    if not source.exists():
        raise SubmissionError("not-found", f"there is no file or folder at {source}")
    is_dir = source.is_dir()
    if not is_dir and not source.is_file():
        raise SubmissionError("not-a-submission", f"expected a folder or a .zip archive of one, found {source.name}, "
                              "which is neither a folder nor a regular file")
    if not is_dir and not zipfile.is_zipfile(source):
        what = "a zip archive that cannot be read" if source.suffix.lower() == ".zip" else "a file"
        code = "bad-archive" if source.suffix.lower() == ".zip" else "not-a-submission"
        raise SubmissionError(code, f"expected a folder or a .zip archive of one, found {what} ({source.name}); "
                              "pass the folder that holds your code, or a zip of it")
    ident = safe_id(source.resolve().name if is_dir else source.stem)
    Path(scratch_parent).mkdir(parents=True, exist_ok=True)
    prefix = re.sub(r"[^A-Za-z0-9._-]+", "_", ident)[:40] or "submission"
    root = Path(tempfile.mkdtemp(prefix=f"{prefix}-", dir=Path(scratch_parent).resolve()))  # absolute: the worker runs from inside it
    try:
        if is_dir:
            try:
                files, skipped = _copy_tree(source, root, max_total_bytes, max_files)
            except OSError as exc:
                name = exc.filename if isinstance(exc.filename, str) else ""
                if not name.startswith(str(source)):
                    raise  # writing the scratch copy failed: not the learner's doing
                raise SubmissionError("unreadable", f"{os.path.relpath(name, source)} in the submission cannot be "
                                      f"read ({exc.strerror or exc}); check its permissions") from None
            fingerprint = content_hash(root)   # of the copy: exactly the files hashed
        else:
            fingerprint = _extract_private_copy(source, root, Path(scratch_parent),
                                                max_total_bytes, max_files)
            _prune(root)
            files, skipped = sum(1 for _ in _walk_files(root)), []  # counted as for folders
        expansion = notebook.expand(root, step, first_package_step=FIRST_PACKAGE_STEP,
                                    top_dirs=_top_dirs(root))
        if step >= FIRST_PACKAGE_STEP and is_flat_package(root):
            _wrap_in_package(root)
        try:
            entry = find_entry(root, step)
        except SubmissionError as exc:
            if exc.code == "no-entry" and skipped:
                raise SubmissionError("no-entry", f"{exc.message}; symbolic links and special files are not "
                                      f"followed, and these were skipped: {', '.join(skipped[:_LISTED])}") from None
            raise
        digest = content_hash(_code_root(root, entry))
    except BaseException:
        shutil.rmtree(root, ignore_errors=True)
        raise
    return Submission(id=ident, source=source, root=root, entry=entry, content_hash=digest,
                      files=files, skipped=tuple(skipped), notebooks=expansion,
                      fingerprint=fingerprint)


def _open_archive(path: Path):
    """The archive at `path`, opened for reading only if it is a regular file (a FIFO or a device
    put in its place is refused, never waited on; a link is not followed)."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOFOLLOW", 0))
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise SubmissionError("not-a-submission", f"{Path(path).name} is not a regular file")
    return os.fdopen(fd, "rb")


def fingerprint_of(path: Path) -> str:
    """A hand-in's identity as it is now, as `Submission.fingerprint` records it of what was
    graded: the content hash of a folder, "zip-sha256:<hex>" of an archive's bytes."""
    path = Path(path)
    if path.is_dir():
        return content_hash(path)
    digest = hashlib.sha256()
    with _open_archive(path) as f:
        for chunk in iter(lambda: f.read(_CHUNK), b""):
            digest.update(chunk)
    return "zip-sha256:" + digest.hexdigest()


def _extract_private_copy(source: Path, root: Path, scratch_parent: Path, max_total_bytes: int,
                          max_files: int) -> str:
    """Copy the archive aside, hashing it, and extract that copy: what is graded and what the
    fingerprint says are the same bytes, even if the hand-in is replaced meanwhile. An archive
    larger than a submission may be in all is refused before it is copied whole."""
    private = Path(tempfile.mkdtemp(prefix=".archive-", dir=scratch_parent.resolve()))
    try:
        copy = private / source.name
        digest = hashlib.sha256()
        total = 0
        with _open_archive(source) as fin, open(copy, "xb") as fout:
            for chunk in iter(lambda: fin.read(_CHUNK), b""):
                total += len(chunk)
                if total > max_total_bytes:
                    raise SubmissionError("archive-too-large", f"{source.name} is larger than "
                                          f"{max_total_bytes // 2**20} MiB, the limit for a whole "
                                          "submission; is a data set or a copy of a library inside it?")
                digest.update(chunk)
                fout.write(chunk)
        safe_extract(copy, root, max_total_bytes=max_total_bytes, max_files=max_files)
    finally:
        shutil.rmtree(private, ignore_errors=True)
    return "zip-sha256:" + digest.hexdigest()


def _copy_tree(source: Path, dest: Path, max_total: int, max_files: int) -> tuple[int, list[str]]:
    files, total, skipped = 0, 0, []
    sizes: dict[str, int] = {}

    def too_large(what: str) -> SubmissionError:
        biggest = sorted(sizes.items(), key=lambda kv: -kv[1])[:3]
        named = ", ".join(f"{name} ({size // 1024} KiB)" for name, size in biggest)
        return SubmissionError("archive-too-large", f"{source.name} holds {what}; the limits are {max_files} files "
                               f"and {max_total // 2**20} MiB. Largest top-level entries: {named}. "
                               "Is a data set or a copy of a library inside it?")

    def walk(src: str, dst: str, rel: str) -> None:
        nonlocal files, total
        if rel.count("/") > MAX_DEPTH:
            raise _too_deep(rel)
        with os.scandir(src) as it:
            entries = sorted(it, key=lambda e: e.name)
        for e in entries:
            top = (rel + e.name).split("/")[0]
            if e.is_symlink():
                skipped.append(rel + e.name)
            elif e.is_dir(follow_symlinks=False):
                if _ignored(e.name, True) or _is_venv(e.path):
                    continue
                os.mkdir(os.path.join(dst, e.name))
                walk(e.path, os.path.join(dst, e.name), f"{rel}{e.name}/")
            elif e.is_file(follow_symlinks=False):
                if _ignored(e.name, False):
                    continue
                files += 1
                size = e.stat(follow_symlinks=False).st_size
                sizes[top] = sizes.get(top, 0) + size
                if files > max_files:
                    raise too_large(f"more than {max_files} files")
                total += _copy_file(e.path, os.path.join(dst, e.name), max_total - total)
                if total > max_total:
                    raise too_large(f"more than {max_total // 2**20} MiB")
            else:
                skipped.append(rel + e.name)

    walk(str(source), str(dest), "")
    return files, skipped


def _copy_file(src: str, dst: str, allowance: int) -> int:
    """Copy at most ``allowance + 1`` bytes (enough to know the bound is crossed); return the count."""
    copied = 0
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0)
    fd = os.open(src, flags)
    with os.fdopen(fd, "rb") as fin, open(dst, "xb") as fout:
        while copied <= allowance:
            chunk = fin.read(min(_CHUNK, allowance + 1 - copied))
            if not chunk:
                break
            fout.write(chunk)
            copied += len(chunk)
    return copied
