"""A learner's history graded step by step: which commit is which step, each step graded at its
commit, and the commit that first broke what an earlier step got right.

Where it sits: around `run.grade`, like `batch`, but over the commits of one git repository
(`gitrepo`). The data flow, in order:

1. **map** the steps to commits (`find_steps`): a mapping file the learner writes
   (`--map FILE`, or `.dezero-steps` / `dezero-steps.json` in the newest commit), tags and
   branches named after steps (`step23`, `step-23`), commit messages that name a step (`Done step23`,
   `step 24 finished`, `steps 25-27`), and the commit that adds a step's file (`stepNN.py`).
   Each step gets the last commit of its stretch of history: for a message, the last commit
   naming the step before one names a later step; for a file, the last commit before a later
   step's file is added. Every mapping says how it was found.
2. **cut** each step's graded files out of its commit's tree (`graded_subset`): the `dezero/`
   package for steps 23-60; the step file and the modules of the repository it imports for steps
   1-22. That subset is the submission graded, so its content hash is both the seed and the
   cache key: a commit whose graded files did not change is never graded again.
3. **grade** every step at its commit, in a pool of processes (batch's pool: its crash and
   watchdog handling), each scorecard cached under a key of the graded files' hash, the step,
   the options and the grader's and assignment's versions. An interrupted run resumes from the
   cache.
4. **judge** the history: a step whose regression checks fail is a **rollback** only where the
   earlier step's check passed at that step's own commit (`--deep` also grades every check that
   passed at its own step again at the newest step's commit, and a failing one is a rollback
   of the first step whose commit holds the commit that broke it); then the commits in between are
   bisected with that check alone (`Options(only=...)`) for the first one that breaks it, and
   the diff of the graded files between the last good and the first bad commit is kept. A
   regression check that never passed at its own step "never worked": the later step is a
   reject, not a rollback.
5. **report**: the history document (`schemas/history.schema.json`), the terminal timeline
   (`render`), HTML (`history_html`).
"""
from __future__ import annotations

import dataclasses
import datetime
import functools
import hashlib
import json
import os
import re
import shutil
import sys
import tempfile
import traceback
from dataclasses import dataclass, field
from pathlib import Path

from grader import assignments, batch, load, report, schema, scorecard
from grader.errors import SubmissionError
from grader.gitrepo import Repo, RepoError
from grader.model import FAILING

SCHEMA_VERSION = '1.0'
MAP_FILES = ('.dezero-steps', 'dezero-steps.json', '.dezero-steps.json')
HOW_ORDER = ('map', 'tag', 'branch', 'message', 'file')     # which evidence wins for a step
DOCUMENT, HTML, SCORECARDS, CACHE = 'history.json', 'history.html', 'scorecards', 'cache'
FIRST_STEP, LAST_STEP = 1, 60

_STEP_FILE = re.compile(r'^step0*(\d{1,2})\.py$')
_BRANCH = re.compile(r'^step[-_]?0*(\d{1,2})(?:$|[-_/])', re.IGNORECASE)
_RANGE = re.compile(r'(?<![a-z])steps?[\s_#.-]*0*(\d{1,2})\s*(?:-|~|〜|to|\.\.)\s*(?:step[\s_-]*)?0*(\d{1,2})(?!\d)',
                    re.IGNORECASE)
_ONE = re.compile(r'(?<![a-z])steps?[\s_#.-]*0*(\d{1,2})(?!\d)(?![\s_-]*part)|ステップ\s*0*(\d{1,2})(?!\d)'
                  r'|第\s*0*(\d{1,2})\s*步', re.IGNORECASE)


class HistoryError(Exception):
    """The history cannot be graded as asked (the message says what was expected and found)."""


# -- 1. which commit is which step ------------------------------------------------------------------

@dataclass(frozen=True)
class StepCommit:
    step: int
    sha: str
    how: str          # map | branch | message | file
    detail: str       # the evidence: the line of the map, the branch, the message, the file


def steps_in_message(text: str) -> set:
    """The steps a commit message names: `Done step23`, `step 24 finished`, `steps 25-27`."""
    found = set()
    for m in _RANGE.finditer(text):
        lo, hi = int(m.group(1)), int(m.group(2))
        if FIRST_STEP <= lo <= hi <= LAST_STEP and hi - lo < 10:
            found.update(range(lo, hi + 1))
    for m in _ONE.finditer(text):
        n = int(next(g for g in m.groups() if g))
        if FIRST_STEP <= n <= LAST_STEP:
            found.add(n)
    return found


def parse_map(text: str, name: str) -> dict:
    """A mapping file: JSON (`{"23": "a1b2c3d", ...}`, or under "steps") or lines
    `23 a1b2c3d` / `step23: main~4` (`#` starts a comment). step -> revision."""
    text = text.strip()
    out = {}
    if text.startswith('{'):
        try:
            doc = json.loads(text)
        except ValueError as e:
            raise HistoryError('{}: not valid JSON ({})'.format(name, e)) from None
        doc = doc.get('steps', doc) if isinstance(doc, dict) else doc
        if not isinstance(doc, dict):
            raise HistoryError('{}: expected an object of step -> commit'.format(name))
        items = list(doc.items())
    else:
        items = []
        for number, line in enumerate(text.splitlines(), 1):
            line = line.split('#', 1)[0].strip()
            if not line:
                continue
            m = re.match(r'^(?:step\s*)?0*(\d{1,2})\s*[:=\s]\s*(\S+)$', line, re.IGNORECASE)
            if not m:
                raise HistoryError('{} line {}: expected "STEP COMMIT" (for example "23 a1b2c3d"), '
                                   'found {!r}'.format(name, number, line[:80]))
            items.append((m.group(1), m.group(2)))
    for key, rev in items:
        try:
            step = int(str(key).lower().replace('step', '').strip())
        except ValueError:
            raise HistoryError('{}: {!r} is not a step number'.format(name, key)) from None
        if not FIRST_STEP <= step <= LAST_STEP or not isinstance(rev, str) or not rev:
            raise HistoryError('{}: step {!r} -> {!r}: steps run from 1 to 60 and each names a '
                               'commit'.format(name, key, rev))
        out[step] = rev
    return out


def _last_of_stretch(marks) -> dict:
    """marks: [(index, set of steps)] in history order -> step -> index of its last commit: the
    last one marking the step before a commit marks a later step (and not this one)."""
    first, out = {}, {}
    for i, steps in marks:
        for s in steps:
            first.setdefault(s, i)
    for s, start in first.items():
        end = next((i for i, steps in marks if i > start and s not in steps and max(steps) > s),
                   None)
        out[s] = max(i for i, steps in marks if s in steps and (end is None or i < end))
    return out


def _file_stretches(repo: Repo, commits) -> dict:
    """step -> (index of its state commit, path): a step file's state is the last commit before
    the next commit that adds the file of a later step."""
    marks, paths = [], {}
    for i, c in enumerate(commits):
        steps = set()
        for p in repo.added_files(c.sha):
            m = _STEP_FILE.match(p.rsplit('/', 1)[-1])
            if m and FIRST_STEP <= int(m.group(1)) <= LAST_STEP:
                steps.add(int(m.group(1)))
                paths.setdefault(int(m.group(1)), p)
        if steps:
            marks.append((i, steps))
    out = {}
    firsts = {}
    for i, steps in marks:
        for s in steps:
            firsts.setdefault(s, i)
    for s, start in firsts.items():
        nxt = next((i for i, steps in marks if i > start and max(steps) > s), None)
        out[s] = ((nxt - 1) if nxt is not None else len(commits) - 1, paths[s])
    return out


def find_steps(repo: Repo, tip: str, map_file: str | None = None) -> tuple:
    """(chosen StepCommit per step, every mapping found) from the history reachable from `tip`."""
    commits = repo.log(tip)
    found = []
    if map_file is not None:
        try:
            text = Path(map_file).read_text(encoding='utf-8')
        except (OSError, UnicodeDecodeError) as e:
            raise HistoryError('--map {} cannot be read: {}'.format(map_file, e)) from None
        source = str(map_file)
    else:
        text, source = None, None
        for name in MAP_FILES:
            blob = repo.show_file(tip, name)
            if blob is not None:
                text, source = blob.decode('utf-8', 'replace'), name
                break
    if text is not None:
        for step, rev in sorted(parse_map(text, source).items()):
            try:
                sha = repo.resolve(rev)
            except RepoError as e:
                raise HistoryError('{}: step {}: {}'.format(source, step, e)) from None
            found.append(StepCommit(step, sha, 'map', '{}: {} {}'.format(source, step, rev)))
    for name, sha in sorted(repo.refs().items()):
        m = _BRANCH.match(name.rsplit('/', 1)[-1])
        if m and FIRST_STEP <= int(m.group(1)) <= LAST_STEP and name != 'HEAD':
            how = 'tag' if name.startswith('tags/') else 'branch'
            found.append(StepCommit(int(m.group(1)), repo.resolve(sha), how,
                                    name[len('tags/'):] if how == 'tag' else name))
    marks = [(i, steps_in_message(c.subject + '\n' + c.body)) for i, c in enumerate(commits)]
    marks = [(i, s) for i, s in marks if s]
    for step, i in sorted(_last_of_stretch(marks).items()):
        found.append(StepCommit(step, commits[i].sha, 'message', commits[i].subject[:120]))
    for step, (i, path) in sorted(_file_stretches(repo, commits).items()):
        found.append(StepCommit(step, commits[i].sha, 'file', 'adds ' + path))
    chosen = {}
    for sc in sorted(found, key=lambda s: HOW_ORDER.index(s.how)):
        chosen.setdefault(sc.step, sc)
    return [chosen[s] for s in sorted(chosen)], found


# -- 2. the graded files of a step at a commit ----------------------------------------------------

def _module_files(name: str, dirs) -> list:
    """The files of the repository's own module `name` (a .py or a package folder), or []."""
    for d in dirs:
        single = d / (name + '.py')
        if single.is_file() and not single.is_symlink():
            return [single]
        package = d / name
        if package.is_dir() and not package.is_symlink() and (package / '__init__.py').is_file():
            return [Path(p) for _, p in load._walk_files(package)]
    return []


def _imported_names(path: Path) -> set:
    import ast
    try:
        tree = ast.parse(path.read_bytes())
    except (SyntaxError, ValueError, OSError):
        return set()
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(a.name.split('.')[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split('.')[0])
    return names


def graded_files(root: Path, entry) -> list:
    """The files of `root` a step's grading reads (relative posix paths): the package folder;
    or the step file, the other Python files beside it that are not step files (helpers it may
    import or read), and, transitively, the repository's own modules it imports (found beside it or at
    the top, as the worker's import path has them). Other steps' files are left out: adding
    step10.py does not change what step 9 grades."""
    root = Path(root)
    if entry.kind == 'package':
        return ['{}/{}'.format(entry.path, rel) for rel, _ in load._walk_files(root / entry.path)]
    dirs = [root / entry.sys_path_dir, root]
    beside = [Path(e.path) for e in sorted(os.scandir(dirs[0]), key=lambda e: e.name)
              if e.is_file(follow_symlinks=False) and e.name.endswith('.py')
              and not _STEP_FILE.match(e.name)]
    todo, seen = [root / entry.path] + beside, set()
    while todo:
        path = todo.pop()
        if path in seen:
            continue
        seen.add(path)
        if path.suffix == '.py':
            for name in _imported_names(path):
                todo.extend(_module_files(name, dirs))
    return sorted(p.relative_to(root).as_posix() for p in seen)


def graded_subset(tree: Path, step: int, dest: Path):
    """Copy the graded files of `step` from the extracted commit `tree` into the new folder
    `dest`, keeping their paths: (entry, relative paths). Raises SubmissionError when the tree
    has no entry for the step."""
    entry = load.find_entry(tree, step)
    paths = graded_files(tree, entry)
    for rel in paths:
        target = dest / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(tree / rel, target)
    dest.mkdir(parents=True, exist_ok=True)
    return entry, paths


# -- 3. grading, cached by content ----------------------------------------------------------------

def _lacking(entry, missing) -> list:
    """Of the files a repository lacks the content of, those the step would have graded: in
    the package, or (for a step file) any Python module."""
    if entry.kind == 'package':
        inside = [p for p in missing if p.startswith(entry.path + '/')]
    else:
        inside = [p for p in missing if p.endswith('.py')]
    return sorted(inside)


@functools.lru_cache(maxsize=None)
def _grader_digest() -> str:
    """The grader's version: its release and a hash of the code that makes scorecards (a cache
    never outlives a change of it)."""
    digest = hashlib.sha256(scorecard.TOOL_VERSION.encode())
    own = {'history.py', 'history_html.py', 'gitrepo.py'}   # they read scorecards, never make them
    for path in sorted(Path(__file__).resolve().parent.rglob('*.py')):
        if path.parent.name == 'grader' and path.name in own:
            continue
        digest.update(path.as_posix().rsplit('/grader/', 1)[-1].encode() + b'\0' + path.read_bytes())
    return digest.hexdigest()[:16]


@functools.lru_cache(maxsize=None)
def assignment_digest(step: int) -> str:
    """A hash of the assignment files that decide the step's grading (its own, its regression
    steps' and packs')."""
    folder = schema.data_dir('assignments')
    a = assignments.load(step)
    names = ['step{:02d}.json'.format(step)] + [
        'pack-{}.json'.format(r) if isinstance(r, str) else 'step{:02d}.json'.format(r)
        for r in a.regression]
    digest = hashlib.sha256()
    for name in names:
        digest.update(name.encode() + b'\0' + (folder / name).read_bytes())
    return digest.hexdigest()[:16]


def options_json(options) -> dict:
    from grader import bwrap, run
    lim = options.limits
    return {'device': run.resolve_device(options.device), 'seed': options.seed,
            'profile': options.profile, 'era': options.era, 'timeout_s': lim.call_s,
            'memory_mb': lim.memory_mb, 'sandbox': bwrap.resolve(lim.sandbox)}


def cache_key(content_hash: str, step: int, options, only=()) -> str:
    doc = {'content': content_hash, 'step': step, 'options': options_json(options),
           'only': sorted(only), 'grader': _grader_digest(), 'assignment': assignment_digest(step)}
    return hashlib.sha256(json.dumps(doc, sort_keys=True).encode()).hexdigest()[:32]


@dataclass(frozen=True)
class _Task:
    entry: batch.Entry     # id: a label for the progress lines; path: the graded subset
    step: int
    options: object        # run.Options
    cache_file: str


def _grade_task(task: _Task) -> dict:
    """In a pool process: grade one subset, write its scorecard to the cache (atomically)."""
    from grader import run
    try:
        doc = run.grade(task.entry.path, task.step, task.options)
        if doc.get('invalid', {}).get('code') != 'grader-error':   # the grader's failure: not kept
            scorecard.write(task.cache_file, doc)
    except Exception as exc:
        return {'id': task.entry.id, 'ok': False, 'code': 'grader-error',
                'reason': 'the grader failed ({}: {}); a bug of the grader, not of the '
                          'code'.format(type(exc).__name__, exc), 'traceback': traceback.format_exc()}
    return {'id': task.entry.id, 'ok': True, 'verdict': doc['verdict'],
            'earned': doc['score']['earned'], 'possible': doc['score']['possible']}


def _watchdog(task) -> float:
    return 3 * task.options.limits.total_s + 120


@dataclass
class Grading:
    """One step graded at one commit (or a probe of a few checks at a commit in between)."""
    step: int
    sha: str
    only: tuple = ()
    entry: object = None
    paths: tuple = ()
    content_hash: str = ''
    key: str = ''
    doc: dict | None = None
    cached: bool = False
    problem: dict | None = None      # {'code', 'message'} when the tree has no entry for the step
    subset: Path | None = None       # the folder graded


class Grader:
    """Grades (step, commit[, only]) through the content cache, many at a time."""

    def __init__(self, repo: Repo, options, work: Path, cache: Path, *, jobs: int,
                 force: bool = False, stream=sys.stderr):
        self.repo, self.options, self.work, self.cache = repo, options, Path(work), Path(cache)
        self.jobs, self.force, self.stream = jobs, force, stream
        self.graded_now = 0
        self.from_cache = 0
        self._trees = {}

    def _tree(self, sha: str) -> Path:
        if sha not in self._trees:
            dest = self.work / 'trees' / sha
            self._trees[sha] = (dest, set(self.repo.extract(sha, dest)))
        return self._trees[sha][0]

    def prepare(self, step: int, sha: str, only=()) -> Grading:
        g = Grading(step, sha, tuple(sorted(only)))
        dest = self.work / 'subsets' / '{}-step{:02d}{}'.format(
            sha[:12], step, '-' + hashlib.sha256(' '.join(g.only).encode()).hexdigest()[:8]
            if g.only else '')
        if dest.exists():
            shutil.rmtree(dest)
        try:
            g.entry, paths = graded_subset(self._tree(sha), step, dest)
        except SubmissionError as e:
            g.problem = {'code': e.code, 'message': e.message}
            return g
        except RepoError as e:   # a mirror without some objects, say
            g.problem = {'code': 'unreadable', 'message': str(e)}
            return g
        g.paths = tuple(paths)
        lacking = _lacking(g.entry, self._trees[sha][1])
        if lacking:
            g.problem = {'code': 'unreadable', 'message': 'the repository lacks the content of '
                         '{} at this commit (a copy without its largest files?)'.format(
                             ', '.join(lacking[:5]))}
            return g
        g.content_hash = load.content_hash(dest)
        g.key = cache_key(g.content_hash, step, self.options, g.only)
        g.subset = dest
        return g

    def grade(self, gradings) -> None:
        """Fill in `doc` of each grading: from the cache, else graded in the pool."""
        from grader import run
        tasks, by_key = [], {}
        for g in gradings:
            if g.problem is not None or g.doc is not None:
                continue
            card = self.cache / (g.key + '.json')
            if not self.force and card.is_file():
                try:
                    g.doc, g.cached = batch.read_scorecard(card), True
                    self.from_cache += 1
                    continue
                except (OSError, ValueError, Exception):
                    pass
            if g.key in by_key:
                by_key[g.key].append(g)
                continue
            by_key[g.key] = [g]
            options = dataclasses.replace(self.options, only=g.only)
            label = 'step {} at {}{}'.format(g.step, g.sha[:10],
                                             ' ({})'.format(', '.join(g.only)) if g.only else '')
            tasks.append(_Task(batch.Entry(label, g.subset, 'folder'), g.step, options, str(card)))
        if tasks:
            run.resolve_device(self.options.device)
            progress = batch.Progress(len(tasks), 0, self.stream, label='history ')
            try:
                failures = batch._grade_all(tasks, self.jobs, self.work / 'pool', progress,
                                            grade_one=_grade_task, watchdog=_watchdog)
            finally:
                progress.finish()
            failed = {f.id: f for f in failures}
            for task in tasks:
                group = by_key[Path(task.cache_file).stem]
                if task.entry.id in failed:
                    f = failed[task.entry.id]
                    for g in group:
                        g.problem = {'code': f.code, 'message': f.reason}
                    continue
                try:
                    doc = batch.read_scorecard(Path(task.cache_file))
                except OSError:
                    doc = None
                for g in group:
                    g.doc = doc
                    if doc is None:
                        g.problem = {'code': 'grader-error', 'message': 'the grader failed on '
                                     'this commit; grade it again'}
                self.graded_now += 1
        for group in by_key.values():
            for g in group[1:]:
                g.cached = True


# -- 4. verdicts with their evidence --------------------------------------------------------------

def _deciding(check, profile) -> bool:
    return check['tier'] == 'book' or profile == 'extension'


def check_status(g: Grading, check_id: str) -> str | None:
    """The status of one check in a grading: passed/failed/...; 'invalid' when the commit could
    not be graded; None when the grading did not run it."""
    if g.problem is not None or g.doc is None:
        return 'invalid'
    if g.doc['verdict'] == 'invalid':
        return 'invalid'
    for c in g.doc['checks']:
        if c['id'] == check_id:
            return c['status']
    return None


def _commit_info(repo: Repo, sha: str) -> dict:
    c = repo.commit(sha)
    return {'commit': c.sha, 'short': c.short, 'subject': c.subject[:200], 'date': c.date}


def _first_bad(grader: Grader, own: dict, searches) -> None:
    """Bisect, for each search, the commits between the earlier step's (good) commit and the
    later step's (bad) commit for the first one where the check fails; every round grades the
    midpoints of all open searches together, each with only its checks."""
    for s in searches:
        s['commits'] = grader.repo.between(s['good'], s['bad'])
        status = {len(s['commits']) - 1: False}
        # step commits in between already say whether the check passed there
        for n, g in own.items():
            if g.sha in s['commits'] and g.doc is not None and g.doc['verdict'] != 'invalid':
                st = check_status(g, s['check'])   # None: that step's grading did not run it
                if st is not None:
                    status.setdefault(s['commits'].index(g.sha), st == 'passed')
        hi = min(i for i, ok in status.items() if not ok)
        lo = max([i for i, ok in status.items() if ok and i < hi], default=-1)
        s['lo'], s['hi'], s['probes'] = lo, hi, 0
    while True:
        open_ = [s for s in searches if s['hi'] - s['lo'] > 1]
        if not open_:
            break
        wanted = {}
        for s in open_:
            mid = (s['lo'] + s['hi']) // 2
            wanted.setdefault((s['step'], s['commits'][mid]), set()).add(s['check'])
        gradings = {k: grader.prepare(k[0], k[1], only) for k, only in wanted.items()}
        grader.grade(list(gradings.values()))
        for s in open_:
            mid = (s['lo'] + s['hi']) // 2
            ok = check_status(gradings[(s['step'], s['commits'][mid])], s['check']) == 'passed'
            s['probes'] += 1
            if ok:
                s['lo'] = mid
            else:
                s['hi'] = mid


def _deep_searches(grader: Grader, mapped, own: dict, profile: str) -> list:
    """`--deep`: every check that passed at its own step's commit, graded again at the newest
    step's commit (one grading per earlier step, its passed checks only); each that fails there
    is a search for the commit that first broke it. Package steps only (step files are separate
    files, each graded at its own step)."""
    last = max(mapped, key=lambda m: m.step)
    tip = own[last.step]
    if last.step < load.FIRST_PACKAGE_STEP or tip.doc is None:
        return []
    covered = {c['id'] for c in tip.doc['checks']}
    wanted = {}
    for m in mapped:
        g = own[m.step]
        if m.step >= last.step or m.step < load.FIRST_PACKAGE_STEP or g.doc is None:
            continue
        if g.sha == tip.sha or not grader.repo.is_ancestor(g.sha, tip.sha):
            continue
        passed = [c['id'] for c in g.doc['checks'] if not c['regression'] and
                  c['status'] == 'passed' and _deciding(c, profile) and c['id'] not in covered]
        if passed:
            wanted[m.step] = grader.prepare(m.step, tip.sha, passed)
    grader.grade(list(wanted.values()))
    searches = []
    for step, probe in sorted(wanted.items()):
        for check in probe.only:
            status = check_status(probe, check)
            if status not in FAILING and status != 'invalid':
                continue
            card = next((c for c in (probe.doc or {}).get('checks', ()) if c['id'] == check), None)
            reg = {'check': check, 'step': step, 'status': 'broken', 'passed_at': own[step].sha,
                   'message': (card['message'] if card else 'not gradable at {}'.format(
                       tip.sha[:10]))[:500], 'deep': True}
            searches.append({'row': None, 'reg': reg, 'step': step, 'check': check,
                             'good': own[step].sha, 'bad': tip.sha, 'paths': set(probe.paths)})
    return searches


def judge(grader: Grader, mapped, own: dict, profile: str, deep: bool = False) -> list:
    """One timeline row per mapped step, with its verdict and evidence."""
    rows, searches = [], []
    for sc in mapped:
        g = own[sc.step]
        row = {'step': sc.step, 'title': assignments.load(sc.step).title, 'how': sc.how,
               'evidence': sc.detail, **_commit_info(grader.repo, sc.sha),
               'graded_files': list(g.paths), 'content_hash': g.content_hash or None,
               'cached': g.cached, 'engine_verdict': None, 'score': None, 'seed': None,
               'own_failed': [], 'regressions': [], 'scorecard': None}
        rows.append(row)
        if g.problem is not None:
            row.update(verdict='invalid', reason='{}: {}'.format(g.problem['code'],
                                                                 g.problem['message']))
            continue
        doc = g.doc
        row.update(engine_verdict=doc['verdict'], seed=doc['seed'],
                   score={'earned': doc['score']['earned'], 'possible': doc['score']['possible']},
                   scorecard='{}/step{:02d}.json'.format(SCORECARDS, sc.step))
        if doc['verdict'] == 'invalid':
            row.update(verdict='invalid', reason=doc['reason'])
            continue
        failing = [c for c in doc['checks'] if c['status'] in FAILING and _deciding(c, profile)]
        row['own_failed'] = [c['id'] for c in failing if not c['regression']]
        for c in failing:
            if not c['regression']:
                continue
            earlier = own.get(c['step'])
            reg = {'check': c['id'], 'step': c['step'], 'message': c['message'][:500]}
            at_own = check_status(earlier, c['id']) if earlier is not None else None
            ref_step = c['step']
            if earlier is not None and earlier.entry is not None and g.entry is not None and (
                    earlier.entry.kind != g.entry.kind or at_own is None):
                # a step file's check graded on the package (the regression packs of stage 5):
                # what passed in stepNN.py is other code; the package must have passed it at
                # an earlier step's commit (as one of that step's regression checks)
                kind = g.entry.kind
                passed = [m.step for m in mapped if m.step < sc.step and own[m.step].entry is not None
                          and own[m.step].entry.kind == kind
                          and check_status(own[m.step], c['id']) == 'passed']
                if not passed:
                    if at_own is None:
                        there = ('step {}\'s own grading does not run it (a regression pack '
                                 'names it), and'.format(c['step']))
                    elif at_own == 'passed':
                        there = 'it passed at step {}\'s own commit {} in {}, but'.format(
                            c['step'], earlier.sha[:10], earlier.entry.path)
                    else:
                        there = 'it did not pass at step {}\'s own commit {} in {} ({}), and'.format(
                            c['step'], earlier.sha[:10], earlier.entry.path, at_own)
                    reg.update(status='never-worked', passed_at=None,
                               why='{} the package has not passed it at any earlier step\'s '
                                   'commit: it never worked there'.format(there))
                    row['regressions'].append(reg)
                    continue
                ref_step = max(passed)
                earlier, at_own = own[ref_step], 'passed'
            if earlier is None:
                reg.update(status='never-worked', why='step {} has no commit in the history: '
                           'nothing shows that this check ever passed'.format(c['step']))
            elif at_own != 'passed':
                reg.update(status='never-worked', passed_at=None,
                           why='it did not pass at step {}\'s own commit {} ({}): step {} is '
                               'a reject'.format(c['step'], earlier.sha[:10], at_own, c['step']))
            elif earlier.sha == sc.sha:
                reg.update(status='broken', passed_at=earlier.sha, first_bad=None,
                           why='it passed at step {} and fails at step {} on the same commit {}: '
                               'it depends on the seed (reproduce both with check '
                               '--seed)'.format(c['step'], sc.step, sc.sha[:10]))
            elif not grader.repo.is_ancestor(earlier.sha, sc.sha):
                reg.update(status='broken', passed_at=earlier.sha, first_bad=None,
                           why='it passed at step {}\'s commit {}, which is not an earlier '
                               'commit of this one: the commit that broke it cannot be '
                               'searched'.format(c['step'], earlier.sha[:10]))
            else:
                reg.update(status='broken', passed_at=earlier.sha)
                searches.append({'row': row, 'reg': reg, 'step': sc.step, 'check': c['id'],
                                 'good': earlier.sha, 'bad': sc.sha, 'paths': set(g.paths),
                                 'good_step': ref_step})
            row['regressions'].append(reg)
    deep_searches = _deep_searches(grader, mapped, own, profile) if deep and mapped else []
    searches += deep_searches
    _first_bad(grader, own, searches)
    by_step = {r['step']: r for r in rows}
    for s in deep_searches:
        # the rollback belongs to the first step whose commit contains the first bad commit
        bad = s['commits'][s['hi']]
        owner = next((m.step for m in sorted(mapped, key=lambda m: m.step)
                      if m.step > s['step'] and grader.repo.is_ancestor(bad, m.sha)), None)
        if owner is not None and s['check'] not in {r['check'] for r in by_step[owner]['regressions']}:
            s['row'] = by_step[owner]
            by_step[owner]['regressions'].append(s['reg'])
    for s in searches:
        commits, reg = s['commits'], s['reg']
        bad = commits[s['hi']]
        good = commits[s['lo']] if s['lo'] >= 0 else s['good']
        reg['first_bad'] = _commit_info(grader.repo, bad)
        reg['last_good'] = _commit_info(grader.repo, good)
        reg['searched'] = {'commits': len(commits), 'graded': s['probes']}
        paths = set(s['paths'])
        for sha in (good, bad):
            gr = grader.prepare(s['step'], sha)
            paths.update(gr.paths)
        reg['diff'] = grader.repo.diff(good, bad, sorted(paths)) if paths else \
            {'files': [], 'text': '', 'truncated': False}
        reg['why'] = ('it passed at step {}\'s commit {}{} and first fails at {} ("{}"){}'.format(
            s.get('good_step', reg['step']), s['good'][:10],
            '' if s.get('good_step', reg['step']) == reg['step'] else ' (as a regression check)',
            bad[:10], reg['first_bad']['subject'][:80],
            '; found by --deep, still failing at the newest step\'s commit' if reg.get('deep') else ''))
    for row in rows:
        if 'verdict' in row:
            continue
        broken = [r for r in row['regressions'] if r['status'] == 'broken']
        never = [r for r in row['regressions'] if r['status'] == 'never-worked']
        if broken:
            named = sorted({r['first_bad']['short'] for r in broken if r.get('first_bad')})
            row['verdict'] = 'rollback'
            row['reason'] = '{} check(s) of earlier steps that passed at their own step now fail{}'.format(
                len(broken), ' (first broken by {})'.format(', '.join(named)) if named else '')
        elif row['own_failed'] or never:
            row['verdict'] = 'reject'
            parts = []
            if row['own_failed']:
                parts.append('{} of this step\'s checks fail (first: {})'.format(
                    len(row['own_failed']), row['own_failed'][0]))
            if never:
                parts.append('{} check(s) of earlier steps never worked (step{} {})'.format(
                    len(never), 's' if len({r['step'] for r in never}) > 1 else '',
                    ', '.join(str(s) for s in sorted({r['step'] for r in never}))))
            row['reason'] = '; '.join(parts)
        else:
            row['verdict'] = g_verdict = row['engine_verdict']
            row['reason'] = own[row['step']].doc['reason'] if g_verdict else ''
    return rows


# -- the whole command ----------------------------------------------------------------------------

@dataclass
class HistoryResult:
    document: dict
    out: Path
    scorecards: dict = field(default_factory=dict)


def _now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).strftime('%Y-%m-%dT%H:%M:%SZ')


def parse_steps(text: str | None) -> set | None:
    """--steps 23-30,40 -> {23..30, 40}."""
    if not text:
        return None
    out = set()
    for part in text.split(','):
        m = re.match(r'^\s*(\d+)\s*(?:-\s*(\d+))?\s*$', part)
        if not m:
            raise HistoryError('--steps takes steps and ranges such as 23-30,40; found {!r}'.format(part))
        lo, hi = int(m.group(1)), int(m.group(2) or m.group(1))
        if not FIRST_STEP <= lo <= hi <= LAST_STEP:
            raise HistoryError('--steps {}: steps run from 1 to 60'.format(part))
        out.update(range(lo, hi + 1))
    return out


def grade_history(source: str, out, options, *, jobs: int | None = None, map_file=None,
                  tip: str | None = None, steps=None, cache=None, force=False, deep=False,
                  stream=sys.stderr) -> HistoryResult:
    """Map, grade, judge and write the history of the repository `source` to `out`."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    cache = Path(cache) if cache else out / CACHE
    cache.mkdir(parents=True, exist_ok=True)
    available = set(assignments.available_steps())
    with batch._locked(out):
        for stale in out.glob('.history-*'):     # what a killed run left: its workers, its files
            batch._stop_leftover_workers(stale)
            shutil.rmtree(stale, ignore_errors=True)
        work = Path(tempfile.mkdtemp(prefix='.history-', dir=out))
        try:
            repo = Repo(source, work)
            head = repo.resolve(tip) if tip else repo.head()
            mapped, found = find_steps(repo, head, map_file)
            mapped = [m for m in mapped if m.step in available and (steps is None or m.step in steps)]
            grader = Grader(repo, options, work, cache, jobs=jobs or batch.default_jobs(),
                            force=force, stream=stream)
            if mapped:
                stream.write('history: {} step(s) found in {} ({}); grading\n'.format(
                    len(mapped), report.printable(str(source), lines=False),
                    ', '.join('{} by {}'.format(n, how) for how, n in _count_how(mapped))))
            own = {m.step: grader.prepare(m.step, m.sha) for m in mapped}
            grader.grade(list(own.values()))
            rows = judge(grader, mapped, own, options.profile, deep=deep)
            scorecards = {}
            for m in mapped:
                g = own[m.step]
                if g.doc is not None:
                    scorecard.write(out / SCORECARDS / 'step{:02d}.json'.format(m.step), g.doc)
                    scorecards[m.step] = g.doc
            doc = {
                'schema_version': SCHEMA_VERSION,
                'tool': {'name': 'dezero-grader', 'version': scorecard.TOOL_VERSION},
                'repository': {'source': str(source), 'head': head,
                               'commits': len(repo.log(head))},
                'options': options_json(options),
                'generated_at': _now(),
                'mapping': [{'step': f.step, 'commit': f.sha, 'how': f.how, 'evidence': f.detail,
                             'chosen': any(m == f for m in mapped)} for f in found
                            if steps is None or f.step in steps],
                'steps': rows,
                'counts': {'steps': len(rows), 'graded_now': grader.graded_now,
                           'from_cache': grader.from_cache,
                           'verdicts': {v: sum(1 for r in rows if r['verdict'] == v)
                                        for v in ('accept', 'rollback', 'reject', 'incomplete', 'invalid')}},
            }
            schema.write_json(out / DOCUMENT, doc, 'history')
        finally:
            shutil.rmtree(work, ignore_errors=True)
    return HistoryResult(doc, out, scorecards)


def show_mapping(source: str, *, map_file=None, tip=None, steps=None) -> str:
    """What `--dry-run` prints: every mapping found and the one chosen per step; nothing graded."""
    with tempfile.TemporaryDirectory(prefix='dezero-history-') as work:
        repo = Repo(source, Path(work))
        head = repo.resolve(tip) if tip else repo.head()
        mapped, found = find_steps(repo, head, map_file)
        subjects = {c.sha: c.subject for c in repo.log(head)}
    lines = ['{}: {} step(s) mapped from {} commit(s)'.format(
        report.printable(str(source), lines=False), len(mapped), len(subjects))]
    for m in mapped:
        if steps is not None and m.step not in steps:
            continue
        others = ['{} {}'.format(f.how, f.sha[:10]) for f in found if f.step == m.step and f != m]
        lines.append('  step {:2d}  {}  {:7}  {}{}'.format(
            m.step, m.sha[:10], m.how, report.printable(m.detail[:70], lines=False),
            '  (also: {})'.format(', '.join(others)) if others else ''))
    return '\n'.join(lines) + '\n'


def _count_how(mapped):
    counts = {}
    for m in mapped:
        counts[m.how] = counts.get(m.how, 0) + 1
    return sorted(counts.items(), key=lambda kv: HOW_ORDER.index(kv[0]))


# -- 5. the terminal timeline ---------------------------------------------------------------------

def render(doc: dict, *, diffs: bool = False) -> str:
    doc = report.printable_tree(doc)
    rows = doc['steps']
    lines = ['history of {} ({} commits, head {}): {} step(s) mapped'.format(
        doc['repository']['source'], doc['repository']['commits'], doc['repository']['head'][:10],
        len(rows))]
    if not rows:
        lines.append('  no step found: name steps in commit messages ("Done step23"), in branch '
                     'names (step23), or map them in a .dezero-steps file ("23 <commit>" per line)')
        return '\n'.join(lines) + '\n'
    lines.append('  {:>4}  {:10}  {:7}  {:9}  {:>9}  {}'.format('step', 'commit', 'how', 'verdict',
                                                              'score', 'evidence'))
    for r in rows:
        score = '{:g}/{:g}'.format(r['score']['earned'], r['score']['possible']) if r['score'] else '-'
        lines.append('  {:>4}  {:10}  {:7}  {:9}  {:>9}  {}'.format(
            r['step'], r['short'], r['how'], r['verdict'].upper(), score,
            r['evidence'][:60] + (' (cached)' if r['cached'] else '')))
        if r['verdict'] not in ('accept',):
            lines.append('        {}'.format(r['reason'][:200]))
        for reg in r['regressions']:
            if reg['status'] == 'broken' and reg.get('first_bad'):
                fb = reg['first_bad']
                lines.append('        {} (step {}) first broken by {} "{}" (last good {}; {} '
                             'commit(s) between, {} graded){}'.format(
                                 reg['check'], reg['step'], fb['short'], fb['subject'][:60],
                                 reg['last_good']['short'], reg['searched']['commits'],
                                 reg['searched']['graded'],
                                 '; files: ' + ', '.join(reg['diff']['files'][:5])
                                 if reg['diff']['files'] else ''))
                if diffs and reg['diff']['text']:
                    lines.extend('          ' + t for t in reg['diff']['text'].splitlines()[:80])
            else:
                lines.append('        {} (step {}): {}'.format(reg['check'], reg['step'], reg['why']))
    c = doc['counts']
    lines.append('  ' + ' · '.join('{} {}'.format(v, n) for v, n in c['verdicts'].items())
                 + '  ({} graded now, {} from the cache)'.format(c['graded_now'], c['from_cache']))
    return '\n'.join(lines) + '\n'


# -- a classroom: a folder of repositories --------------------------------------------------------

@dataclass
class ClassroomResult:
    out: Path
    histories: dict            # repository id -> history document
    failures: dict             # repository id -> why it could not be read
    step_folders: dict         # step -> batch-style folder (summary.json, scorecards/)


def find_repositories(folder: Path) -> tuple:
    """(id -> path of each repository in the folder, names of entries that are not one)."""
    found, ignored = {}, []
    for e in sorted(Path(folder).iterdir(), key=lambda p: p.name):
        if e.name.startswith('.') or e.is_symlink():
            continue
        from grader.gitrepo import looks_like_repo
        if e.is_dir() and looks_like_repo(e):
            found[load.safe_id(e.name)] = e
        else:
            ignored.append(load.safe_id(e.name))
    return found, ignored


def grade_classroom(folder, out, options, *, jobs=None, map_file=None, tip=None, steps=None,
                    cache=None, force=False, deep=False, stream=sys.stderr) -> ClassroomResult:
    """Every repository of `folder` (one per student, as GitHub Classroom downloads them)
    graded as a history into out/<id>/, with one content cache for all (the same code is graded
    once); then, per step, a batch-style folder out/steps/stepNN/ (scorecards/<id>.json with the
    history's verdict, summary.json) that `export` reads."""
    folder, out = Path(folder), Path(out)
    if not folder.is_dir():
        raise HistoryError('--classroom expects a folder of git repositories, found {}'.format(
            'nothing' if not folder.exists() else 'a file') + ' at {}'.format(folder))
    repos, ignored = find_repositories(folder)
    if not repos:
        raise HistoryError('{} holds no git repository (expected one folder with .git per '
                           'student)'.format(folder))
    cache = Path(cache) if cache else out / CACHE
    histories, failures = {}, {}
    for ident, path in repos.items():
        stream.write('classroom: {} ({}/{})\n'.format(ident, len(histories) + len(failures) + 1,
                                                      len(repos)))
        try:
            result = grade_history(str(path), out / ident, options, jobs=jobs, map_file=map_file,
                                   tip=tip, steps=steps, cache=cache, force=force, deep=deep,
                                   stream=stream)
        except (HistoryError, RepoError) as e:
            failures[ident] = str(e)
            continue
        histories[ident] = result.document
    step_folders = {}
    per_step = {}
    for ident, doc in histories.items():
        for row in doc['steps']:
            if row['scorecard']:
                per_step.setdefault(row['step'], []).append((ident, row))
    bopts = {'profile': options.profile, 'era': options.era, 'device': options.device,
             'seed': options.seed, 'timeout_s': options.limits.call_s,
             'memory_mb': options.limits.memory_mb, 'sandbox': options_json(options)['sandbox']}
    for step, items in sorted(per_step.items()):
        target = out / 'steps' / 'step{:02d}'.format(step)
        graded = []
        for ident, row in items:
            card = batch.read_scorecard(out / ident / row['scorecard'])
            if row['verdict'] != card['verdict']:
                # the history knows more than one snapshot: a rollback whose earlier check never
                # worked is a reject; the points stay the scorecard's
                card = dict(card, verdict=row['verdict'], reason='history: ' + row['reason'])
            scorecard.write(target / batch.SCORECARDS / (ident + '.json'), card)
            graded.append((ident, card))
        summary = batch.summarize(assignment=batch.assignment_info(step), options=bopts,
                                  shards={'count': 1, 'included': [1]}, graded=graded,
                                  failures=[], ignored=ignored)
        schema.write_json(target / batch.SUMMARY, summary, 'batch-summary')
        step_folders[step] = target
    return ClassroomResult(out, histories, failures, step_folders)


def render_classroom(result: ClassroomResult) -> str:
    lines = ['classroom: {} repositor{} graded → {}'.format(
        len(result.histories), 'y' if len(result.histories) == 1 else 'ies', result.out)]
    for ident, doc in sorted(result.histories.items()):
        v = doc['counts']['verdicts']
        rollbacks = ['{} ({})'.format(r['step'], ', '.join(sorted({g['first_bad']['short']
                                                                    for g in r['regressions']
                                                                    if g.get('first_bad')})))
                     for r in doc['steps'] if r['verdict'] == 'rollback']
        lines.append('  {}: {} step(s) · {}{}'.format(
            report.printable(ident, lines=False), len(doc['steps']),
            ' · '.join('{} {}'.format(k, n) for k, n in v.items() if n),
            '; rollbacks at step ' + ', '.join(rollbacks) if rollbacks else ''))
    for ident, why in sorted(result.failures.items()):
        lines.append('  {}: not graded: {}'.format(report.printable(ident, lines=False),
                                                   report.printable(why, lines=False)[:200]))
    if result.step_folders:
        lines.append('  per-step summaries for export: {}'.format(
            ', '.join(str(p) for _, p in sorted(result.step_folders.items())[:3])
            + (' …' if len(result.step_folders) > 3 else '')))
    return '\n'.join(lines) + '\n'
