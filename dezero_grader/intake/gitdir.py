"""A learner's git directory found and read inside the folder given, and nowhere else.

Where it sits: under `gitrepo`, before any git command runs. A local repository is a folder a
learner controls, so everything in it that names another place is checked here first: the
`.git` file of a worktree or submodule (`gitdir: PATH`), a worktree's `commondir`, the
`objects/info/alternates` that lend a repository another one's objects. Each must lead to a
place inside the folder given, by a path with no symbolic link on it; a link to elsewhere (a
classmate's repository, a file of the grading machine) is refused with the reason. Nothing
inside the git directory is followed through a symbolic link either: a link among the objects
refuses the repository, a link among the refs (or as `HEAD`, `packed-refs`, `shallow`) is left
out and said so.

The learner's refs are not read by git in place: `copy_refs` copies the ref files (regular
files only, bounded in size and number) into a git directory of the grader's own, so no git
command ever reads the learner's configuration. git reads the learner's objects, through an
alternate, only after `locate` has checked the folders they are in.

The checks hold for a folder that does not change while it is read (a classroom download); a
learner racing the grader on the same machine is not covered.
"""
from __future__ import annotations

import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path

from dezero_grader.errors import GraderError

MAX_LINK_FILE = 4096              # a `.git` file, `commondir`, `HEAD`, one loose ref
MAX_LIST_FILE = 1 << 20           # `objects/info/alternates`, `shallow`
MAX_PACKED_REFS = 64 << 20
MAX_REF_FILES = 100_000
MAX_REF_DEPTH = 32
MAX_ALTERNATES_DEPTH = 5          # as git itself follows them
MAX_OBJECT_ENTRIES = 2_000_000    # files and folders under objects/ that are looked at
_HEX = re.compile(rb'^[0-9a-f]{40}(?:[0-9a-f]{24})?$')


class RepoError(GraderError):
    """The repository cannot be read as asked: what was expected and what was found, in the
    grader's words (never git's own output, which may quote a file of the machine)."""


@dataclass(frozen=True)
class Layout:
    """Where a repository's parts are, each checked to be inside `root`."""
    root: Path            # the folder given
    git_dir: Path         # where its HEAD is (the `.git` folder, a worktree's own, or root)
    common: Path          # where its refs and objects are (git_dir, or a worktree's commondir)
    object_dirs: tuple    # common/objects and every alternate it names, in that order


def _show(text: str) -> str:
    return repr(text[:120])[1:-1]


def _read_small(path: Path, limit: int, what: str) -> bytes:
    """The bytes of the regular file `path` (never through a symbolic link), at most `limit`."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, 'O_NOFOLLOW', 0) | getattr(os, 'O_NONBLOCK', 0))
    except OSError as e:
        if os.path.islink(path):
            raise RepoError('{} is a symbolic link: nothing in a repository is followed through a '
                            'link'.format(what)) from None
        raise RepoError('{} cannot be read ({})'.format(what, e.strerror or e)) from None
    with os.fdopen(fd, 'rb') as f:
        if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
            raise RepoError('{} is not a regular file'.format(what))
        data = f.read(limit + 1)
    if len(data) > limit:
        raise RepoError('{} is larger than {} bytes'.format(what, limit))
    return data


def _text(data: bytes, what: str) -> str:
    if b'\0' in data:
        raise RepoError('{} holds a NUL byte: it is not a path'.format(what))
    try:
        return data.decode('utf-8')
    except UnicodeDecodeError:
        raise RepoError('{} is not UTF-8 text'.format(what)) from None


def _inside(root: Path, base: Path, target: str, what: str) -> Path:
    """`target` (relative to `base`, or absolute) as a path inside `root` reached without a
    symbolic link, or a RepoError saying why not."""
    if not target:
        raise RepoError('{} names no path'.format(what))
    joined = Path(os.path.normpath(os.path.join(str(base), target)))
    rel = None
    for prefix in (root, Path(os.path.realpath(root))):
        try:
            rel = joined.relative_to(prefix)
            break
        except ValueError:
            continue
    if rel is None or '..' in rel.parts:
        raise RepoError('{} leads to {}, outside the folder given: a repository is read only from '
                        'its own folder (for a worktree or a submodule, grade the repository it '
                        'belongs to, with --rev for its branch)'.format(what, _show(target)))
    here = root
    for part in rel.parts:
        here = here / part
        try:
            st = os.lstat(here)
        except OSError:
            raise RepoError('{} leads to {}, which does not exist'.format(what, _show(target))) from None
        if stat.S_ISLNK(st.st_mode):
            raise RepoError('{} leads through the symbolic link {}: nothing in a repository is '
                            'followed through a link'.format(what, _show(str(here.relative_to(root)))))
    return here


def _is_dir(path: Path) -> bool:
    try:
        return stat.S_ISDIR(os.lstat(path).st_mode)
    except OSError:
        return False


def _is_file(path: Path) -> bool:
    try:
        return stat.S_ISREG(os.lstat(path).st_mode)
    except OSError:
        return False


def _exists(path: Path) -> bool:
    return os.path.lexists(path)


def looks_like_repo(path: Path) -> bool:
    """A working tree with .git (folder, file or link: `locate` says what is wrong with it), or
    a bare repository."""
    path = Path(path)
    return _exists(path / '.git') or (_is_file(path / 'HEAD') and _is_dir(path / 'objects'))


def locate(path: Path) -> Layout:
    """The layout of the repository in the folder `path`, every part inside it; a RepoError
    with the reason when a part is elsewhere, behind a link, or not what git writes."""
    root = Path(os.path.abspath(path))
    dot = root / '.git'
    if os.path.islink(dot):
        raise RepoError('.git is a symbolic link: a repository is read only from its own folder')
    if _is_file(dot):      # a worktree or a submodule: "gitdir: <path>"
        text = _text(_read_small(dot, MAX_LINK_FILE, 'the .git file'), 'the .git file').strip()
        key, sep, target = text.partition(':')
        if not sep or key.strip() != 'gitdir' or '\n' in target.strip():
            raise RepoError('the .git file does not say "gitdir: PATH" (found {})'.format(_show(text)))
        git_dir = _inside(root, root, target.strip(), 'the .git file')
    elif _is_dir(dot):
        git_dir = dot
    elif _is_file(root / 'HEAD') and _is_dir(root / 'objects'):
        git_dir = root
    else:
        raise RepoError('{} is not a git repository (no .git in it); pass the folder of your '
                        'clone, or its URL'.format(path))
    if not _is_dir(git_dir):
        raise RepoError('the git directory of {} is not a folder'.format(path))
    common = git_dir
    if _exists(git_dir / 'commondir'):
        text = _text(_read_small(git_dir / 'commondir', MAX_LINK_FILE, 'commondir'),
                     'commondir').strip()
        common = _inside(root, git_dir, text, 'commondir')
    if _is_dir(common / 'reftable'):
        raise RepoError('{} keeps its refs in the reftable format, which the grader does not read; '
                        '`git refs migrate --ref-format=files` converts it'.format(path))
    objects = common / 'objects'
    if '\n' in str(objects):    # git reads alternates one per line: this one would be two
        raise RepoError('the path of the repository holds a newline: git cannot be lent its '
                        'objects; rename the folder')
    if os.path.islink(objects):
        raise RepoError('objects/ of the repository is a symbolic link: a repository is read only '
                        'from its own folder')
    if not _is_dir(objects):
        raise RepoError('{} is not a git repository that can be read (no objects '
                        'folder)'.format(path))
    dirs = []
    _object_dirs(root, objects, dirs, 0)
    return Layout(root, git_dir, common, tuple(dirs))


def _object_dirs(root: Path, objects: Path, out: list, depth: int) -> None:
    """`objects` and the alternates it names, recursively, each checked: inside `root`, no
    symbolic link anywhere under it."""
    if objects in out:
        return
    if depth > MAX_ALTERNATES_DEPTH:
        raise RepoError('the repository\'s alternates name one another more than {} deep'.format(
            MAX_ALTERNATES_DEPTH))
    _no_links(root, objects)
    out.append(objects)
    alternates = objects / 'info' / 'alternates'
    if not _exists(alternates):
        return
    text = _text(_read_small(alternates, MAX_LIST_FILE, 'objects/info/alternates'),
                 'objects/info/alternates')
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith('#'):
            continue
        if line.startswith('"'):
            raise RepoError('objects/info/alternates names a quoted path ({}): not read'.format(
                _show(line)))
        other = _inside(root, objects, line, 'objects/info/alternates')
        if not _is_dir(other):
            raise RepoError('objects/info/alternates names {}, which is not a folder'.format(
                _show(line)))
        _object_dirs(root, other, out, depth + 1)


def _no_links(root: Path, objects: Path) -> None:
    seen = 0
    todo = [objects]
    while todo:
        folder = todo.pop()
        try:
            with os.scandir(folder) as it:
                entries = list(it)
        except OSError as e:
            raise RepoError('{} of the repository cannot be read ({})'.format(
                _show(str(Path(folder).relative_to(root))), e.strerror or e)) from None
        for e in entries:
            seen += 1
            if seen > MAX_OBJECT_ENTRIES:
                raise RepoError('the repository\'s objects folder holds more than {} entries '
                                '(git gc packs them)'.format(MAX_OBJECT_ENTRIES))
            if e.is_symlink():
                raise RepoError('{} is a symbolic link: the objects of a repository are read only '
                                'from its own folder'.format(_show(os.path.relpath(e.path, root))))
            if e.is_dir(follow_symlinks=False):
                todo.append(e.path)


def copy_refs(layout: Layout, dest: Path) -> list:
    """Copy the repository's `HEAD`, `packed-refs` and loose refs (regular files only, each
    bounded) into the git directory `dest` the grader made; returns notes on what was left out
    and why. git then reads them there, with the grader's configuration, never the learner's."""
    notes = []
    dest = Path(dest)
    head = layout.git_dir / 'HEAD'
    try:
        data = _read_small(head, MAX_LINK_FILE, 'HEAD').strip()
        if data.startswith(b'ref: refs/') and len(data.split()) == 2 or _HEX.match(data):
            (dest / 'HEAD').write_bytes(data + b'\n')
        else:
            notes.append('HEAD is not a ref or a commit id: the newest branch is read instead')
            (dest / 'HEAD').write_bytes(b'ref: refs/heads/.no-head\n')
    except RepoError as e:
        notes.append('{}: the newest branch is read instead'.format(e))
        (dest / 'HEAD').write_bytes(b'ref: refs/heads/.no-head\n')
    packed = layout.common / 'packed-refs'
    if _exists(packed):
        try:
            (dest / 'packed-refs').write_bytes(_read_small(packed, MAX_PACKED_REFS, 'packed-refs'))
        except RepoError as e:
            notes.append('{}: the refs in it are left out'.format(e))
    count = 0
    todo = [(layout.common / 'refs', dest / 'refs', 0)]
    while todo:
        src, dst, depth = todo.pop()
        if depth > MAX_REF_DEPTH:
            notes.append('refs nested more than {} folders deep are left out'.format(MAX_REF_DEPTH))
            continue
        try:
            with os.scandir(src) as it:
                entries = sorted(it, key=lambda e: e.name)
        except OSError:
            continue
        dst.mkdir(parents=True, exist_ok=True)
        for e in entries:
            rel = os.path.relpath(e.path, layout.common)
            shown = _show(os.fsdecode(rel).encode('utf-8', 'replace').decode('utf-8'))
            if e.is_symlink():
                notes.append('{} is a symbolic link: left out (nothing in a repository is followed '
                             'through a link)'.format(shown))
            elif e.is_dir(follow_symlinks=False):
                todo.append((Path(e.path), dst / e.name, depth + 1))
            elif e.is_file(follow_symlinks=False):
                count += 1
                if count > MAX_REF_FILES:
                    notes.append('more than {} ref files: the rest are left out'.format(MAX_REF_FILES))
                    return notes
                try:
                    (dst / e.name).write_bytes(_read_small(Path(e.path), MAX_LINK_FILE, shown))
                except RepoError as err:
                    notes.append('{}: left out'.format(err))
                except OSError:
                    notes.append('{} cannot be copied: left out'.format(shown))
    return notes


def shallow_lines(layout: Layout) -> tuple:
    """(the commit ids of the repository's `shallow` file, a note or None): a shallow clone's
    boundary, without which git looks for parents it never had. Lines that are not commit ids
    are dropped (a file of the machine linked there must never reach git, whose complaint
    would quote it)."""
    path = layout.common / 'shallow'
    if not _exists(path):
        return (), None
    try:
        data = _read_small(path, MAX_LIST_FILE, 'shallow')
    except RepoError as e:
        return (), '{}: left out'.format(e)
    lines = [line.strip() for line in data.splitlines() if line.strip()]
    kept = tuple(line.decode('ascii') for line in lines if _HEX.match(line))
    note = None if len(kept) == len(lines) else (
        'shallow holds {} line(s) that are not commit ids: left out'.format(len(lines) - len(kept)))
    return kept, note
