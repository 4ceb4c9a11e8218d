"""A learner's git repository, read safely: commits, trees, diffs, through the `git` tool.

Everything runs in a private bare repository that the grader makes and owns: a local repository
lends it its objects (an alternate) and refs, a URL is fetched from, so nothing in the learner's
own configuration (hooks, filters, fsmonitor, external diff drivers, aliases) ever runs. Every git command gets
a clean environment: no system or user configuration, no prompts, hooks pointed at /dev/null,
external diff and textconv off. A commit's files are read from git's object store
(`ls-tree`, `cat-file --batch`) into scratch folders, regular files only (no links, no
submodules, no path that leaves the folder): no checkout, no filters, and the learner's working
tree is never touched. A blob the repository lacks (a mirror without its largest files) is
reported, not fatal.

git does the work (it is the tool for it, and learners' histories are git histories); this
module only drives it.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import threading
from dataclasses import dataclass
from pathlib import Path

from grader.errors import GraderError

_SAFE_CONFIG = ('-c', 'core.hooksPath=/dev/null', '-c', 'core.fsmonitor=false',
                '-c', 'diff.external=', '-c', 'core.pager=cat', '-c', 'protocol.ext.allow=never',
                '-c', 'advice.detachedHead=false', '-c', 'safe.directory=*')
_SEP = '\x1f'
_SHA = re.compile(r'^[0-9a-f]{40}$')


class RepoError(GraderError):
    """The repository cannot be read as asked: what was expected and what was found."""


@dataclass(frozen=True)
class Commit:
    sha: str
    parents: tuple
    date: str          # committer date, ISO 8601
    author: str
    subject: str
    body: str

    @property
    def short(self) -> str:
        return self.sha[:10]


def git_env() -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith('GIT_')}
    env.update({'GIT_CONFIG_NOSYSTEM': '1', 'GIT_CONFIG_GLOBAL': os.devnull,
                'GIT_TERMINAL_PROMPT': '0', 'GIT_ASKPASS': '/bin/false', 'SSH_ASKPASS': '/bin/false',
                'GIT_ATTR_NOSYSTEM': '1', 'LC_ALL': 'C', 'GIT_PAGER': 'cat'})
    return env


def _git(args, *, cwd=None, git_dir=None, check=True, binary=False, timeout=300):
    if shutil.which('git') is None:
        raise RepoError('the history needs the git command-line tool, and it is not installed '
                        '(apt-get install git)')
    cmd = ['git', *_SAFE_CONFIG]
    if git_dir is not None:
        cmd += ['--git-dir', str(git_dir)]
    cmd += list(args)
    try:
        proc = subprocess.run(cmd, cwd=cwd, env=git_env(), stdin=subprocess.DEVNULL,
                              capture_output=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise RepoError('git {} took more than {} s'.format(args[0], timeout)) from None
    if check and proc.returncode != 0:
        raise RepoError('git {} failed: {}'.format(
            args[0], proc.stderr.decode('utf-8', 'replace').strip()[-500:]))
    return proc if binary else proc.stdout.decode('utf-8', 'replace')


def looks_like_repo(path: Path) -> bool:
    """A working tree with .git (folder or file), or a bare repository."""
    path = Path(path)
    return (path / '.git').exists() or ((path / 'HEAD').is_file() and (path / 'objects').is_dir())


def is_url(text: str) -> bool:
    return bool(re.match(r'^(https?|git|ssh)://|^[\w.-]+@[\w.-]+:', text))


class Repo:
    """The grader's own bare copy of a learner's repository, with every ref of the original."""

    def __init__(self, source: str, scratch: Path):
        self.source = str(source)
        self.git_dir = Path(scratch) / 'repo.git'
        _git(['init', '--bare', '--quiet', str(self.git_dir)])
        if is_url(self.source):
            self._fetch(self.source)
        else:
            self._borrow(Path(self.source))

    def _fetch(self, url: str) -> None:
        """Every branch and tag of a remote repository, under refs/src/."""
        proc = _git(['fetch', '--quiet', '--no-tags', '--no-write-fetch-head', url,
                     '+refs/heads/*:refs/src/heads/*', '+refs/tags/*:refs/src/tags/*',
                     '+HEAD:refs/src/HEAD'], git_dir=self.git_dir, check=False, binary=True,
                    timeout=900)
        if proc.returncode != 0:
            raise RepoError('cannot fetch the repository {}: {}'.format(
                url, proc.stderr.decode('utf-8', 'replace').strip()[-400:]))

    def _borrow(self, path: Path) -> None:
        """A local repository (a clone, a bare mirror, a worktree): its objects are read in place
        (an alternate of the grader's copy: nothing is copied, and a mirror that lacks a few
        large blobs still serves every other commit) and its refs copied under refs/src/."""
        if not path.exists():
            raise RepoError('there is no folder at {}'.format(path))
        if not looks_like_repo(path):
            raise RepoError('{} is not a git repository (no .git in it); pass the folder of your '
                            'clone, or its URL'.format(path))
        dot = path / '.git'
        if dot.is_file():      # a worktree or submodule: "gitdir: <path>"
            text = dot.read_text(encoding='utf-8', errors='replace').strip()
            gd = (path / text.partition(':')[2].strip()).resolve()
        else:
            gd = (dot if dot.is_dir() else path).resolve()
        common = gd
        if (gd / 'commondir').is_file():
            common = (gd / (gd / 'commondir').read_text().strip()).resolve()
        if not (common / 'objects').is_dir():
            raise RepoError('{} is not a git repository that can be read (no objects '
                            'folder)'.format(path))
        info = self.git_dir / 'objects' / 'info'
        info.mkdir(parents=True, exist_ok=True)
        (info / 'alternates').write_text(str(common / 'objects') + '\n')
        if (common / 'shallow').is_file():
            shutil.copyfile(common / 'shallow', self.git_dir / 'shallow')
        refs = _git(['for-each-ref', '--format=%(objectname) %(refname)',
                     'refs/heads', 'refs/tags', 'refs/remotes'], git_dir=common)
        lines = []
        for line in refs.splitlines():
            sha, _, name = line.partition(' ')
            if _SHA.match(sha) and name.startswith('refs/'):
                lines.append('update refs/src/{} {}'.format(name[len('refs/'):], sha))
        head = _git(['rev-parse', '--verify', '--quiet', 'HEAD'], git_dir=gd, check=False)
        if _SHA.match(head.strip()):
            lines.append('update refs/src/HEAD {}'.format(head.strip()))
        proc = subprocess.run(['git', *_SAFE_CONFIG, '--git-dir', str(self.git_dir), 'update-ref',
                               '--stdin'], input='\n'.join(lines).encode() + b'\n', env=git_env(),
                              capture_output=True, timeout=300)
        if proc.returncode != 0:
            raise RepoError('cannot read the refs of {}: {}'.format(
                path, proc.stderr.decode('utf-8', 'replace').strip()[-400:]))

    def git(self, *args, **kw):
        return _git(list(args), git_dir=self.git_dir, **kw)

    def refs(self) -> dict:
        """name (as in the original: `main`, `origin/step23`, `tags/v1`) -> sha."""
        out = {}
        for line in self.git('for-each-ref', '--format=%(objectname) %(refname)',
                             'refs/src/').splitlines():
            sha, _, name = line.partition(' ')
            name = name[len('refs/src/'):]
            for prefix in ('heads/', 'remotes/'):
                if name.startswith(prefix):
                    name = name[len(prefix):]
            out[name] = sha
        return out

    def head(self) -> str:
        """The original's HEAD; else its main/master branch; else its newest branch tip."""
        refs = self.refs()
        for name in ('HEAD', 'main', 'master'):
            if name in refs:
                return self.resolve(refs[name])
        if not refs:
            raise RepoError('the repository {} has no commits'.format(self.source))
        return max(refs.values(), key=lambda sha: self.commit(sha).date)

    def resolve(self, rev: str) -> str:
        """A commit named by sha (or its prefix), branch or tag of the original -> its sha."""
        rev = str(rev).strip()
        if not rev or rev.startswith('-'):
            raise RepoError('{!r} does not name a commit'.format(rev))
        refs = self.refs()
        candidates = [refs[rev]] if rev in refs else []
        candidates.append(rev)
        for cand in candidates:
            proc = self.git('rev-parse', '--verify', '--quiet', cand + '^{commit}', check=False,
                            binary=True)
            if proc.returncode == 0:
                return proc.stdout.decode().strip()
        raise RepoError('{!r} is not a commit of the repository (neither a sha nor a branch '
                        'or tag)'.format(rev))

    def log(self, tip: str, *, first_parent=True) -> list:
        """Commits reachable from `tip`, oldest first (first-parent chain by default)."""
        fmt = _SEP.join(('%H', '%P', '%cI', '%an', '%s', '%b')) + '\x1e'
        args = ['log', '--reverse', '--format=' + fmt] + (['--first-parent'] if first_parent else [])
        out = []
        for rec in self.git(*args, tip).split('\x1e'):
            rec = rec.strip('\n')
            if not rec:
                continue
            sha, parents, date, author, subject, body = (rec.split(_SEP) + [''] * 6)[:6]
            out.append(Commit(sha, tuple(parents.split()), date, author, subject, body.strip()))
        return out

    def commit(self, sha: str) -> Commit:
        fmt = _SEP.join(('%H', '%P', '%cI', '%an', '%s', '%b'))
        sha_, parents, date, author, subject, body = (
            self.git('show', '-s', '--format=' + fmt, sha, '--').split(_SEP) + [''] * 6)[:6]
        return Commit(sha_.strip(), tuple(parents.split()), date, author, subject, body.strip())

    def added_files(self, sha: str) -> list:
        """Paths a commit adds (against its first parent; every path for a root commit)."""
        out = self.git('diff-tree', '--root', '--no-commit-id', '-r', '--name-only',
                       '--diff-filter=A', '-z', '-m', '--first-parent', sha)
        return sorted({p for p in out.split('\0') if p})

    def files(self, sha: str) -> list:
        return [p for p in self.git('ls-tree', '-r', '--name-only', '-z', sha).split('\0') if p]

    def show_file(self, sha: str, path: str) -> bytes | None:
        proc = self.git('cat-file', 'blob', '{}:{}'.format(sha, path), check=False, binary=True)
        return proc.stdout if proc.returncode == 0 else None

    def is_ancestor(self, older: str, newer: str) -> bool:
        return self.git('merge-base', '--is-ancestor', older, newer, check=False,
                        binary=True).returncode == 0

    def between(self, older: str, newer: str) -> list:
        """The commits after `older` up to and including `newer`, oldest first: the ancestry
        path when `older` is an ancestor of `newer`."""
        out = self.git('rev-list', '--reverse', '--topo-order', '--ancestry-path',
                       '{}..{}'.format(older, newer))
        return out.split()

    def extract(self, sha: str, dest: Path) -> list:
        """Write the regular files of the commit's tree to the new folder `dest` (links and
        submodules are left out, as grading skips them); returns the paths whose content the
        repository lacks (a mirror without its largest files), which are left out too."""
        dest = Path(dest)
        dest.mkdir(parents=True)
        entries = []
        for rec in self.git('ls-tree', '-r', '-z', '--full-tree', sha).split('\0'):
            if not rec:
                continue
            meta, _, path = rec.partition('\t')
            mode, kind, obj = meta.split()
            parts = path.split('/')
            if kind != 'blob' or mode not in ('100644', '100755') or path.startswith('/') or \
                    any(p in ('', '.', '..', '.git') for p in parts):
                continue
            entries.append((obj, path))
        missing = []
        try:
            proc = subprocess.Popen(['git', *_SAFE_CONFIG, '--git-dir', str(self.git_dir),
                                     'cat-file', '--batch'], env=git_env(), stdin=subprocess.PIPE,
                                    stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
            feeder = threading.Thread(target=self._feed, args=(proc.stdin, entries), daemon=True)
            feeder.start()
            for obj, path in entries:
                header = proc.stdout.readline().decode('ascii', 'replace').split()
                if len(header) < 3 or header[1] != 'blob':
                    missing.append(path)
                    continue
                data = proc.stdout.read(int(header[2]))
                proc.stdout.read(1)   # the newline after each object
                target = dest / path
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(data)
            feeder.join()
            proc.stdout.close()
            proc.wait(timeout=60)
        except BaseException:
            shutil.rmtree(dest, ignore_errors=True)
            raise
        return missing

    @staticmethod
    def _feed(stdin, entries):
        try:
            for obj, _ in entries:
                stdin.write(obj.encode() + b'\n')
            stdin.close()
        except (BrokenPipeError, OSError):
            pass

    def diff(self, old: str, new: str, paths, *, max_chars=20000) -> dict:
        """`git diff` of two commits limited to `paths` (and a spec `old_commit:path` pair when
        the file was renamed between steps): {'files': [...], 'text', 'truncated'}."""
        args = ['diff', '--no-ext-diff', '--no-textconv', '--no-color', '--stat=200',
                '--patch', old, new, '--'] + sorted(paths)
        text = self.git(*args)
        names = self.git('diff', '--no-ext-diff', '--name-only', old, new, '--', *sorted(paths))
        truncated = len(text) > max_chars
        return {'files': [n for n in names.splitlines() if n], 'text': text[:max_chars],
                'truncated': truncated}
