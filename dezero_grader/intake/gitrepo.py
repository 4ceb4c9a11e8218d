"""A learner's git repository, read safely: commits, trees, diffs, through the `git` tool.

Everything runs in a private bare repository that the grader makes and owns. A local repository
is first checked by `gitdir` (its `gitdir:`, `commondir` and alternates inside the folder given,
no symbolic link followed); its ref files are copied into a second private git directory, read
there by git, and each ref whose commit the repository has is copied under `refs/src/` of the
grader's copy, which borrows the learner's objects (an alternate). A URL is fetched from. So
nothing of the learner's own configuration (hooks, filters, fsmonitor, external diff drivers,
aliases, includes) is ever read, and no git command runs in the learner's folder. Every git
command gets a clean environment: no system or user configuration, no prompts, hooks pointed at
/dev/null, external diff and textconv off, pathspecs literal, the commit-graph unused.

Commits are read as raw objects (`cat-file --batch`) and parsed here, so no text of a commit
message can be taken for a separator or an option. A commit's files are read from git's object
store (`ls-tree`, `cat-file --batch`) into scratch folders, regular files only (no links, no
submodules, no path that leaves the folder, no name the file system cannot hold): no checkout,
no filters, and the learner's working tree is never touched. Only the files grading can read
get their content (Python files, and everything in a `dezero/` folder), within `load`'s bounds;
the others are written empty, so the folder keeps its shape.

What the repository lacks is skipped, never fatal: a ref to an object that is not there is
left out (and said so in `notes`), a commit whose parent is missing ends the history there, a
blob that is missing (a mirror without its largest files) is reported by `extract`. git's own
messages never reach the learner: a failure is said in the grader's words.

git does the work (it is the tool for it, and learners' histories are git histories); this
module only drives it.
"""
from __future__ import annotations

import contextlib
import datetime as _dt
import errno
import os
import re
import shutil
import subprocess
import threading
from dataclasses import dataclass
from pathlib import Path

from dezero_grader.intake import gitdir
from dezero_grader.intake.archive import MAX_TOTAL_BYTES
from dezero_grader.intake.gitdir import RepoError, looks_like_repo

__all__ = ['RepoError', 'Commit', 'Repo', 'git_env', 'looks_like_repo', 'is_url']

_SAFE_CONFIG = ('-c', 'core.hooksPath=/dev/null', '-c', 'core.fsmonitor=false',
                '-c', 'diff.external=', '-c', 'core.pager=cat', '-c', 'protocol.ext.allow=never',
                '-c', 'advice.detachedHead=false', '-c', 'safe.directory=*',
                '-c', 'core.commitGraph=false', '-c', 'gc.auto=0', '-c', 'maintenance.auto=false',
                '--literal-pathspecs')
_SHA = re.compile(r'^[0-9a-f]{40}$')
# what a map file may name: a sha (prefix), a branch or tag, and ~N / ^N after it
_REV = re.compile(r'^[A-Za-z0-9][A-Za-z0-9._/+-]{0,199}(?:[~^][0-9]{0,4})*$')
MAX_COMMITS = 10_000      # of the first-parent chain read, the newest
MAX_TREE_ENTRIES = 100_000
MAX_PATH_BYTES = 1024     # a path inside a commit; the scratch folder's own path comes on top
MAX_NAME_BYTES = 255
MAX_COMMIT_BYTES = 1 << 20


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


def _command(git_dir) -> list:
    if shutil.which('git') is None:
        raise RepoError('the history needs the git command-line tool, and it is not installed '
                        '(apt-get install git)')
    return ['git', *_SAFE_CONFIG] + (['--git-dir', str(git_dir)] if git_dir is not None else [])


def _git(args, *, git_dir=None, check=True, binary=False, timeout=300, input=None):
    """Run git; a failure raises a RepoError that names the command and its exit status, never
    git's own words (they may quote a file the repository pointed at)."""
    try:
        proc = subprocess.run(_command(git_dir) + list(args), env=git_env(), input=input,
                              stdin=None if input is not None else subprocess.DEVNULL,
                              capture_output=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise RepoError('git {} took more than {} s'.format(args[0], timeout)) from None
    except OSError as e:
        raise RepoError('git {} could not be started ({})'.format(args[0], e.strerror or e)) from None
    if check and proc.returncode != 0:
        raise RepoError('git {} failed (exit status {})'.format(args[0], proc.returncode))
    return proc if binary else proc.stdout.decode('utf-8', 'replace')


def is_url(text: str) -> bool:
    return bool(re.match(r'^(https?|git|ssh)://|^[\w.-]+@[\w.-]+:', text))


_FETCH_WORDS = (('could not resolve host', 'the host cannot be found'),
                ('unable to access', 'the host cannot be reached'),
                ('authentication', 'it asks for credentials (a private repository?)'),
                ('could not read username', 'it asks for credentials (a private repository?)'),
                ('terminal prompts disabled', 'it asks for credentials (a private repository?)'),
                ('not found', 'there is no repository at that address'),
                ('does not appear to be a git repository', 'there is no repository at that address'))


def _fetch_failure(stderr: bytes) -> str:
    """Why a fetch failed, in the grader's words (git's text is matched, never shown)."""
    text = stderr.decode('utf-8', 'replace').lower()
    return next((words for key, words in _FETCH_WORDS if key in text), 'git could not fetch it')


def _iso(when: bytes, tz: bytes) -> str:
    try:
        sign = -1 if tz[:1] == b'-' else 1
        minutes = sign * (int(tz[-4:-2]) * 60 + int(tz[-2:]))
        zone = _dt.timezone(_dt.timedelta(minutes=minutes))
    except (ValueError, IndexError):
        zone = _dt.timezone.utc
    try:
        return _dt.datetime.fromtimestamp(int(when), zone).isoformat()
    except (ValueError, OverflowError, OSError):
        return ''


def parse_commit(sha: str, raw: bytes) -> Commit:
    """A commit object's bytes -> Commit: headers to the first blank line (continuation lines
    start with a space), the message after it; its subject is the first paragraph on one line,
    as git shows it."""
    head, _, message = raw.partition(b'\n\n')
    parents, date, author, encoding = [], '', '', 'utf-8'
    for line in head.split(b'\n'):
        key, _, value = line.partition(b' ')
        if key == b'parent' and _SHA.match(value.decode('ascii', 'replace')):
            parents.append(value.decode('ascii'))
        elif key in (b'author', b'committer'):
            name, _, rest = value.partition(b' <')
            fields = rest.rpartition(b'>')[2].split()
            if key == b'author':
                author = name.decode('utf-8', 'replace').strip()
            elif len(fields) >= 2:
                date = _iso(fields[0], fields[1])
        elif key == b'encoding':
            encoding = value.decode('ascii', 'replace').strip() or 'utf-8'
    try:
        text = message.decode(encoding, 'replace')
    except LookupError:
        text = message.decode('utf-8', 'replace')
    text = text.replace('\0', '')
    lines = text.split('\n')
    first = []
    while lines and not lines[0].strip():
        lines.pop(0)
    while lines and lines[0].strip():
        first.append(lines.pop(0).strip())
    return Commit(sha, tuple(parents), date, author, ' '.join(first), '\n'.join(lines).strip())


class Repo:
    """The grader's own bare copy of a learner's repository, with every readable ref of the
    original; `notes` says what of the original was left out and why."""

    def __init__(self, source: str, scratch: Path):
        self.source = str(source)
        self.git_dir = Path(scratch) / 'repo.git'
        self.notes = []
        self._refs = None
        self._commits = {}
        self._logs = {}
        _git(['init', '--bare', '--quiet', '--template=', str(self.git_dir)])
        if is_url(self.source):
            self._fetch(self.source)
        else:
            self._borrow(Path(self.source), Path(scratch) / 'source.git')

    def _fetch(self, url: str) -> None:
        """Every branch and tag of a remote repository, under refs/src/."""
        proc = _git(['fetch', '--quiet', '--no-tags', '--no-write-fetch-head', url,
                     '+refs/heads/*:refs/src/heads/*', '+refs/tags/*:refs/src/tags/*',
                     '+HEAD:refs/src/HEAD'], git_dir=self.git_dir, check=False, binary=True,
                    timeout=900)
        if proc.returncode != 0:
            raise RepoError('cannot fetch the repository {}: {}'.format(
                url, _fetch_failure(proc.stderr)))

    def _borrow(self, path: Path, shadow: Path) -> None:
        """A local repository (a clone, a bare mirror, a worktree inside its folder): its objects
        are read in place (an alternate of the grader's copy: nothing is copied, and a mirror
        that lacks a few large blobs still serves every other commit); its ref files are copied
        into `shadow`, a git directory of the grader's, read there, and each ref that names a
        commit the repository has is copied under refs/src/."""
        if not os.path.lexists(path):
            raise RepoError('there is no folder at {}'.format(path))
        layout = gitdir.locate(path)
        alternates = str(layout.object_dirs[0]) + '\n'
        lines, note = gitdir.shallow_lines(layout)
        if note:
            self.notes.append(note)
        _git(['init', '--bare', '--quiet', '--template=', str(shadow)])
        for repo in (self.git_dir, shadow):
            info = repo / 'objects' / 'info'
            info.mkdir(parents=True, exist_ok=True)
            (info / 'alternates').write_text(alternates)
            if lines:
                (repo / 'shallow').write_text(''.join(line + '\n' for line in lines))
        self.notes += gitdir.copy_refs(layout, shadow)
        fmt = '--format=%(objectname)%00%(refname)'
        listed = _git(['for-each-ref', fmt, 'refs/heads', 'refs/tags', 'refs/remotes'],
                      git_dir=shadow, check=False, binary=True)
        if listed.returncode != 0 and (shadow / 'packed-refs').exists():
            (shadow / 'packed-refs').unlink()
            self.notes.append('packed-refs cannot be read by git: the refs in it are left out')
            listed = _git(['for-each-ref', fmt, 'refs/heads', 'refs/tags', 'refs/remotes'],
                          git_dir=shadow, check=False, binary=True)
        if listed.returncode != 0:
            raise RepoError('the refs of {} cannot be read (git for-each-ref failed with exit '
                            'status {})'.format(path, listed.returncode))
        refs = []
        for line in listed.stdout.split(b'\n'):
            sha, _, name = line.partition(b'\0')
            try:
                name = name.decode('utf-8')
            except UnicodeDecodeError:
                self.notes.append('a ref whose name is not UTF-8 is left out')
                continue
            if _SHA.match(sha.decode('ascii', 'replace')) and name.startswith('refs/'):
                refs.append((name[len('refs/'):], sha.decode('ascii')))
        head = _git(['rev-parse', '--verify', '--quiet', 'HEAD'], git_dir=shadow, check=False)
        if _SHA.match(head.strip()):
            refs.append(('HEAD', head.strip()))
        commits = self._peel([sha for _, sha in refs])
        updates = []
        for name, sha in refs:
            if commits.get(sha) is None:
                self.notes.append('{} names {}, which is not a commit the repository has: left '
                                  'out'.format(name if name == 'HEAD' else 'refs/' + name, sha[:10]))
            else:
                updates.append('update refs/src/{} {}\n'.format(name, sha))
        proc = _git(['update-ref', '--stdin'], git_dir=self.git_dir, check=False, binary=True,
                    input=''.join(updates).encode())
        if proc.returncode != 0:     # one ref git will not write (its name): the others still go
            for line in updates:
                if _git(['update-ref', '--stdin'], git_dir=self.git_dir, check=False, binary=True,
                        input=line.encode()).returncode != 0:
                    self.notes.append('{} cannot be copied: left out'.format(line.split()[1][9:]))

    def _peel(self, shas) -> dict:
        """sha -> the commit it names (a commit, or an annotated tag of one), or None when the
        repository lacks it or it names no commit."""
        wanted = sorted(set(shas))
        if not wanted:
            return {}
        out = _git(['cat-file', '--batch-check=%(objectname) %(objecttype)'], git_dir=self.git_dir,
                   input=''.join(s + '^{commit}\n' for s in wanted).encode(), check=False)
        result = {}
        for sha, line in zip(wanted, out.splitlines()):
            fields = line.split()
            result[sha] = fields[0] if len(fields) == 2 and fields[1] == 'commit' and \
                _SHA.match(fields[0]) else None
        return result

    def git(self, *args, **kw):
        return _git(list(args), git_dir=self.git_dir, **kw)

    def refs(self) -> dict:
        """name (as in the original: `main`, `origin/step23`, `tags/v1`) -> sha."""
        if self._refs is None:
            out = {}
            listed = self.git('for-each-ref', '--format=%(objectname)%00%(refname)', 'refs/src/',
                              binary=True)
            for line in listed.stdout.split(b'\n'):
                sha, _, name = line.partition(b'\0')
                name = name.decode('utf-8', 'replace')[len('refs/src/'):]
                for prefix in ('heads/', 'remotes/'):
                    if name.startswith(prefix):
                        name = name[len(prefix):]
                if name:
                    out[name] = sha.decode('ascii', 'replace')
            self._refs = out
        return dict(self._refs)

    def head(self) -> str:
        """The original's HEAD; else its main/master branch; else its newest branch tip."""
        refs = self.refs()
        for name in ('HEAD', 'main', 'master'):
            if name in refs:
                return self.resolve(refs[name])
        if not refs:
            raise RepoError('the repository {} has no commits that can be read'.format(self.source))
        return max((self.resolve(sha) for sha in refs.values()), key=lambda s: self.commit(s).date)

    def resolve(self, rev: str) -> str:
        """A commit named by sha (or its prefix), branch or tag of the original -> its sha."""
        rev = str(rev).strip()
        refs = self.refs()
        candidates = [refs[rev]] if rev in refs else []
        if _REV.match(rev):
            candidates.append(rev)
        if not candidates:
            raise RepoError('{!r} does not name a commit (a sha, a branch or a tag, with ~N or ^N '
                            'after it)'.format(rev[:80]))
        for cand in candidates:
            proc = self.git('rev-parse', '--verify', '--quiet', '--end-of-options',
                            cand + '^{commit}', check=False, binary=True)
            sha = proc.stdout.decode('ascii', 'replace').strip()
            if proc.returncode == 0 and _SHA.match(sha):
                return sha
        raise RepoError('{!r} is not a commit of the repository (neither a sha nor a branch '
                        'or tag)'.format(rev[:80]))

    def _read_commits(self, shas) -> None:
        wanted = [s for s in dict.fromkeys(shas) if s not in self._commits]
        if not wanted:
            return
        with contextlib.closing(self._objects(wanted, MAX_COMMIT_BYTES)) as objects:
            for sha, kind, data in objects:
                if kind == 'commit':
                    self._commits[sha] = parse_commit(sha, data)

    def _objects(self, shas, limit):
        """(sha, type or None, the first `limit` bytes) of each object, through one cat-file."""
        proc = subprocess.Popen(_command(self.git_dir) + ['cat-file', '--batch'], env=git_env(),
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=subprocess.DEVNULL)
        feeder = threading.Thread(target=_feed, args=(proc.stdin, shas), daemon=True)
        feeder.start()
        try:
            for sha in shas:
                header = proc.stdout.readline().decode('ascii', 'replace').split()
                if len(header) < 3 or not header[2].isdigit():
                    yield sha, None, b''
                    continue
                size = int(header[2])
                data = proc.stdout.read(min(size, limit))
                _skip(proc.stdout, size - len(data))
                proc.stdout.read(1)   # the newline after each object
                yield sha, header[1], data
        finally:
            proc.stdout.close()
            feeder.join(timeout=60)
            try:
                proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()

    def commit(self, sha: str) -> Commit:
        self._read_commits([sha])
        if sha not in self._commits:
            raise RepoError('the repository lacks the commit {}'.format(sha[:10]))
        return self._commits[sha]

    def log(self, tip: str, *, first_parent=True) -> list:
        """Commits reachable from `tip`, oldest first (first-parent chain by default), at most
        MAX_COMMITS of the newest; a missing commit ends the history there (`notes` says so)."""
        key = (tip, first_parent)
        if key not in self._logs:
            args = ['rev-list', '--max-count={}'.format(MAX_COMMITS)] + \
                (['--first-parent'] if first_parent else []) + ['--end-of-options', tip]
            proc = self.git(*args, check=False, binary=True)
            shas = [s for s in proc.stdout.decode('ascii', 'replace').split() if _SHA.match(s)]
            self._read_commits(shas)
            kept, lacking = [], None
            for sha in shas:
                if sha not in self._commits:
                    lacking = sha
                    break
                kept.append(self._commits[sha])
            if proc.returncode != 0 and lacking is None and first_parent:
                # git stops a little before the missing commit: walk the rest of the way
                lacking = kept[-1].parents[0] if kept and kept[-1].parents else (None if kept else tip)
                while lacking and len(kept) < MAX_COMMITS:
                    self._read_commits([lacking])
                    if lacking not in self._commits:
                        break
                    kept.append(self._commits[lacking])
                    lacking = kept[-1].parents[0] if kept[-1].parents else None
            if lacking is not None and len(kept) < MAX_COMMITS or proc.returncode != 0 and not kept:
                self.notes.append('the history of {} stops after {} commit(s): the repository '
                                  'lacks the one before'.format(tip[:10], len(kept)))
            elif len(kept) == MAX_COMMITS:
                self.notes.append('only the newest {} commits of {} are read'.format(
                    MAX_COMMITS, tip[:10]))
            self._logs[key] = kept[::-1]
        return list(self._logs[key])

    def order(self, tip: str) -> dict:
        """sha -> its place among the commits reachable from `tip`, oldest first (topological:
        a commit after its parents), of the newest MAX_COMMITS."""
        if ('order', tip) not in self._logs:
            proc = self.git('rev-list', '--topo-order', '--max-count={}'.format(MAX_COMMITS),
                            '--end-of-options', tip, check=False, binary=True)
            shas = [s for s in proc.stdout.decode('ascii', 'replace').split() if _SHA.match(s)]
            self._logs[('order', tip)] = {s: i for i, s in enumerate(reversed(shas))}
        return dict(self._logs[('order', tip)])

    def changes(self, shas) -> dict:
        """sha -> [(status 'A' or 'D', path)] of each commit against its first parent (every path
        added for a root commit), read by one git process; a commit whose trees the repository
        lacks has none."""
        if not shas:
            return {}
        proc = self.git('diff-tree', '--stdin', '-r', '--root', '-m', '--first-parent',
                        '--name-status', '--diff-filter=AD', '-z', check=False, binary=True,
                        input=''.join(s + '\n' for s in shas).encode(), timeout=900)
        out = {s: [] for s in shas}
        tokens = proc.stdout.split(b'\0')
        current, i = None, 0
        while i < len(tokens):
            tok = tokens[i].strip(b'\n')
            text = tok.decode('ascii', 'replace')
            if _SHA.match(text) and text in out:
                current = text
                i += 1
            elif tok in (b'A', b'D') and current is not None and i + 1 < len(tokens):
                try:
                    out[current].append((tok.decode(), tokens[i + 1].decode('utf-8')))
                except UnicodeDecodeError:
                    pass
                i += 2
            else:
                i += 1
        return out

    def added_files(self, sha: str) -> list:
        """Paths a commit adds (against its first parent; every path for a root commit)."""
        return sorted(p for status, p in self.changes([sha])[sha] if status == 'A')

    def files(self, sha: str) -> list:
        out = self.git('ls-tree', '-r', '--name-only', '-z', '--end-of-options', sha, binary=True)
        return [p.decode('utf-8', 'replace') for p in out.stdout.split(b'\0') if p]

    def show_file(self, sha: str, path: str, *, max_bytes: int = 1 << 20) -> bytes | None:
        """The content of the regular file `path` at commit `sha`, or None when there is none;
        a RepoError when it is larger than `max_bytes`."""
        spec = '{}:{}'.format(sha, path)
        out = self.git('cat-file', '--batch-check=%(objecttype) %(objectsize)',
                       input=(spec + '\n').encode(), check=False).split()
        if len(out) != 2 or out[0] != 'blob':
            return None
        if int(out[1]) > max_bytes:
            raise RepoError('{} is larger than {} bytes'.format(path, max_bytes))
        proc = self.git('cat-file', 'blob', spec, check=False, binary=True)
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

    def reachable(self) -> frozenset:
        """Every commit reachable from the refs read (at most MAX_COMMITS × 10; a missing commit
        ends a line of history)."""
        proc = self.git('rev-list', '--max-count={}'.format(MAX_COMMITS * 10), '--glob=refs/src/*',
                        check=False, binary=True)
        return frozenset(s for s in proc.stdout.decode('ascii', 'replace').split() if _SHA.match(s))

    def extract(self, sha: str, dest: Path) -> dict:
        """Write the regular files of the commit's tree to the new folder `dest`: the content
        of those grading can read (Python files, everything in a `dezero/` folder) within load's
        bound on a submission, the others empty. Links, submodules and names the file system
        cannot hold are left out. Returns {path: 'missing' | 'too-large'} of the files whose
        content is not there: the repository lacks it (a mirror without its largest files), or
        it is beyond the bound. A commit whose tree the repository lacks is a RepoError."""
        dest = Path(dest)
        listing = self.git('ls-tree', '-r', '-z', '-l', '--full-tree', '--end-of-options', sha,
                           check=False, binary=True)
        if listing.returncode != 0:
            raise RepoError('the repository lacks the files of commit {}'.format(sha[:10]))
        records = [r for r in listing.stdout.split(b'\0') if r]
        if len(records) > MAX_TREE_ENTRIES:
            raise RepoError('commit {} holds more than {} files'.format(sha[:10], MAX_TREE_ENTRIES))
        dest.mkdir(parents=True)
        wanted, left_out, budget = [], {}, MAX_TOTAL_BYTES
        try:
            for rec in records:
                meta, _, raw = rec.partition(b'\t')
                fields = meta.split()
                path = _writable(raw)
                if len(fields) != 4 or fields[1] != b'blob' or not fields[0].startswith(b'100') \
                        or path is None:
                    continue
                parts = path.split('/')
                if not fields[3].isdigit():
                    left_out[path] = 'missing'
                elif not (path.endswith('.py') or 'dezero' in parts[:-1]):
                    _write(dest, path, b'')
                elif int(fields[3]) > budget:
                    left_out[path] = 'too-large'
                else:
                    budget -= int(fields[3])
                    wanted.append((fields[2].decode('ascii'), path))
            with contextlib.closing(self._objects([obj for obj, _ in wanted],
                                                  MAX_TOTAL_BYTES)) as objects:
                for (obj, path), (_, kind, data) in zip(wanted, objects):
                    if kind != 'blob':
                        left_out[path] = 'missing'
                    else:
                        _write(dest, path, data)
        except BaseException:
            shutil.rmtree(dest, ignore_errors=True)
            raise
        return left_out

    def diff(self, old: str, new: str, paths, *, max_chars=20000) -> dict:
        """`git diff` of two commits limited to `paths`: {'files': [...], 'text', 'truncated'};
        a diff git cannot make (the repository lacks a file's content) says so in its text."""
        args = ['diff', '--no-ext-diff', '--no-textconv', '--no-color', '--stat=200',
                '--patch', old, new, '--'] + sorted(paths)
        try:
            text = self.git(*args)
            names = self.git('diff', '--no-ext-diff', '--name-only', '-z', old, new, '--',
                             *sorted(paths), binary=True).stdout
        except RepoError:
            return {'files': [], 'text': '(no diff: the repository lacks the content of some of '
                    'these files)', 'truncated': False}
        truncated = len(text) > max_chars
        return {'files': [n.decode('utf-8', 'replace') for n in names.split(b'\0') if n],
                'text': text[:max_chars], 'truncated': truncated}


def _writable(raw: bytes) -> str | None:
    """A tree path as a relative path the scratch folder can hold, or None: UTF-8, no empty,
    `.`, `..` or `.git` part, no part longer than a file name may be."""
    try:
        path = raw.decode('utf-8')
    except UnicodeDecodeError:
        return None
    parts = path.split('/')
    if len(raw) > MAX_PATH_BYTES or any(p in ('', '.', '..', '.git') or
                                        len(p.encode()) > MAX_NAME_BYTES for p in parts):
        return None
    return path


_UNWRITABLE = {errno.ENAMETOOLONG, errno.EEXIST, errno.ENOTDIR, errno.EISDIR, errno.EINVAL,
               errno.EILSEQ}


def _write(dest: Path, path: str, data: bytes) -> None:
    """One file of a tree; a name the file system refuses (too long, a file where the tree
    also has a folder) is left out. Any other failure (a full disk) is raised."""
    target = dest / path
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        with open(target, 'xb') as f:
            f.write(data)
    except OSError as e:
        if e.errno not in _UNWRITABLE:
            raise RepoError('the files of a commit cannot be written to the scratch folder '
                            '({})'.format(e.strerror or e)) from None


def _skip(stream, n: int) -> None:
    while n > 0:
        chunk = stream.read(min(n, 1 << 20))
        if not chunk:
            return
        n -= len(chunk)


def _feed(stdin, lines):
    try:
        for line in lines:
            stdin.write(line.encode() + b'\n')
        stdin.close()
    except (BrokenPipeError, OSError):
        pass
