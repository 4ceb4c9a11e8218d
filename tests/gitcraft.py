"""Git repositories written object by object, as a hostile learner could craft them: any name in
a tree (not UTF-8, 300 characters, `..`, a file and a folder of one name), a ref to an object
that is not there, a `.git` that is a file or a link, a commit message holding the separators a
log parser might split on. No git command is needed to write them (so nothing git validates
on the way in stops a case), and writing one takes milliseconds.

`Craft(path)` makes the layout git reads as a repository (`HEAD`, `objects/`, `refs/`) under
`path/.git` (or at `path` when bare); `blob`, `tree`, `commit` write loose objects and return
their ids; `ref` writes a loose ref file. `canned_grading` stands in for the worker where a test
is about reading the repository, not about grading code: every step commit gets a scorecard at
once (an invalid one, "graded" without running anything), so the whole history pipeline runs.
"""
from __future__ import annotations

import hashlib
import os
import zlib
from pathlib import Path

REGULAR, EXECUTABLE, LINK, SUBMODULE, FOLDER = b'100644', b'100755', b'120000', b'160000', b'40000'


class Craft:
    def __init__(self, path: Path, *, bare: bool = False):
        self.work = Path(path)
        self.git_dir = self.work if bare else self.work / '.git'
        for sub in ('objects/info', 'objects/pack', 'refs/heads', 'refs/tags'):
            (self.git_dir / sub).mkdir(parents=True, exist_ok=True)
        (self.git_dir / 'HEAD').write_bytes(b'ref: refs/heads/main\n')
        (self.git_dir / 'config').write_bytes(b'[core]\n\trepositoryformatversion = 0\n')
        self._when = 1_600_000_000

    def object(self, kind: str, data: bytes) -> str:
        raw = kind.encode() + b' ' + str(len(data)).encode() + b'\0' + data
        sha = hashlib.sha1(raw).hexdigest()
        path = self.git_dir / 'objects' / sha[:2] / sha[2:]
        if not path.exists():
            path.parent.mkdir(exist_ok=True)
            path.write_bytes(zlib.compress(raw, 1))
        return sha

    def blob(self, data) -> str:
        return self.object('blob', data.encode() if isinstance(data, str) else data)

    def tree(self, entries) -> str:
        """entries: [(mode, name, sha)], names as bytes or str, in the order given (a crafted tree
        need not be sorted, and may name one thing twice)."""
        data = b''.join(mode + b' ' + (name.encode() if isinstance(name, str) else name) + b'\0'
                        + bytes.fromhex(sha) for mode, name, sha in entries)
        return self.object('tree', data)

    def files(self, files: dict) -> str:
        """A tree of nested folders from {'dezero/core.py': text, ...} (str paths, '/' separated)."""
        folders: dict = {}
        for path, content in files.items():
            *dirs, name = path.split('/')
            node = folders
            for d in dirs:
                node = node.setdefault(d, {})
            node[name] = content
        return self._write(folders)

    def _write(self, node: dict) -> str:
        entries = []
        for name in sorted(node, key=lambda n: n + '/' if isinstance(node[n], dict) else n):
            value = node[name]
            if isinstance(value, dict):
                entries.append((FOLDER, name, self._write(value)))
            else:
                entries.append((REGULAR, name, self.blob(value)))
        return self.tree(entries)

    def commit(self, tree: str, message, parents=(), *, when: int | None = None) -> str:
        if when is None:
            self._when += 60
            when = self._when
        lines = [b'tree ' + tree.encode()] + [b'parent ' + p.encode() for p in parents]
        who = b'Learner <learner@example.org> ' + str(when).encode() + b' +0000'
        lines += [b'author ' + who, b'committer ' + who]
        body = message.encode() if isinstance(message, str) else message
        return self.object('commit', b'\n'.join(lines) + b'\n\n' + body + b'\n')

    def ref(self, name: str, target) -> None:
        """A loose ref (`refs/heads/main`) holding `target` (a sha, or any bytes)."""
        path = self.git_dir / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(target.encode() + b'\n' if isinstance(target, str) else target)

    def history(self, snapshots, branch: str = 'refs/heads/main') -> list:
        """Commit each (message, {path: text}) on top of the previous one; the branch names the
        last. Returns the commit ids, oldest first."""
        shas, parent = [], ()
        for message, files in snapshots:
            sha = self.commit(self.files(files), message, parent)
            shas.append(sha)
            parent = (sha,)
        self.ref(branch, shas[-1])
        return shas


def canned_grading(monkeypatch, outcome=None):
    """Replace the grading of `history` by canned scorecards: `outcome(grading)` returns None
    (an invalid scorecard, code `syntax-error`), or a problem code (`grader-error`, ...) that
    the grading gets instead. Returns the list of gradings asked for."""
    import time
    from dezero_grader.catalogue import assignments
    from dezero_grader.grading import run
    from dezero_grader.scoring import scorecard_write
    from dezero_grader.history import grading

    asked = []

    def grade(self, gradings):
        for g in gradings:
            if g.problem is not None or g.doc is not None:
                continue
            asked.append(g)
            code = outcome(g) if outcome else None
            if code:
                g.problem = {'code': code, 'message': 'canned: ' + code}
                continue
            g.doc = scorecard_write.invalid(g.subset, assignments.load(g.step), self.options,
                                      run.resolve_device(self.options.device), 'syntax-error',
                                      'canned: not graded', seed=0, started=time.perf_counter())
            self.graded_now += 1

    monkeypatch.setattr(grading.Grader, 'grade', grade)
    return asked


def snapshot(folder: Path) -> dict:
    """Every path under `folder` (links not followed) with its kind, size and modification time:
    two snapshots differ exactly when something was written there."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(folder):
        for name in dirnames + filenames:
            path = os.path.join(dirpath, name)
            st = os.lstat(path)
            out[os.path.relpath(path, folder)] = (st.st_mode, st.st_size, st.st_mtime_ns)
    return out
