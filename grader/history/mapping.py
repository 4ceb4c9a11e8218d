"""Which commit is which step: a mapping file the learner writes (`--map FILE`, or
`.dezero-steps` / `dezero-steps.json` in the newest commit), tags and branches named after steps
(`step23`, `step-23`), commit messages that name a step (`Done step23`, `step 24 finished`,
`steps 25-27`), and the commit that adds a step's file (`stepNN.py`). Each step gets the last
commit of its stretch of history: for a message, the last commit naming the step before one
names a later step; for a file, the last commit before a later step's file is added. Every
mapping says how it was found; `show_mapping` prints them (`--dry-run`).
"""
from __future__ import annotations

import json
import re
import tempfile
from dataclasses import dataclass
from pathlib import Path

from grader import report
from grader.gitrepo import Repo, RepoError

MAP_FILES = ('.dezero-steps', 'dezero-steps.json', '.dezero-steps.json')
HOW_ORDER = ('map', 'tag', 'branch', 'message', 'file')     # which evidence wins for a step


FIRST_STEP, LAST_STEP = 1, 60


STEP_FILE = re.compile(r'^step0*(\d{1,2})\.py$')
_BRANCH = re.compile(r'^step[-_]?0*(\d{1,2})(?:$|[-_/])', re.IGNORECASE)
_RANGE = re.compile(r'(?<![a-z])steps?[\s_#.-]*0*(\d{1,2})\s*(?:-|~|〜|to|\.\.)\s*(?:step[\s_-]*)?0*(\d{1,2})(?!\d)',
                    re.IGNORECASE)
_ONE = re.compile(r'(?<![a-z])steps?[\s_#.-]*0*(\d{1,2})(?!\d)(?![\s_-]*part)|ステップ\s*0*(\d{1,2})(?!\d)'
                  r'|第\s*0*(\d{1,2})\s*步', re.IGNORECASE)


class HistoryError(Exception):
    """The history cannot be graded as asked (the message says what was expected and found)."""


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
            m = STEP_FILE.match(p.rsplit('/', 1)[-1])
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


def count_how(mapped):
    counts = {}
    for m in mapped:
        counts[m.how] = counts.get(m.how, 0) + 1
    return sorted(counts.items(), key=lambda kv: HOW_ORDER.index(kv[0]))
