"""Which commit is which step: a mapping file the learner writes (`--map FILE`, or
`.dezero-steps` / `dezero-steps.json` in the newest commit), tags and branches named after steps
(`step23`, `step-23`), commit messages that name a step (`Done step23`, `step 24 finished`,
`steps 25-27`), and the commit that adds a step's file (`stepNN.py`). What the learner names
(map, tag, branch) is taken as named. What is inferred is a commit that holds the step's file:
for a message, the last commit naming the step (before one names a later step) that holds the
step's package or step file, else nothing (the evidence is kept, refused, with the reason); for
a file, the last commit holding it before a later step's file is added. Every mapping says how
it was found; `show_mapping` prints them in commit order (`--dry-run`).
"""
from __future__ import annotations

import json
import re
import tempfile
from dataclasses import dataclass
from pathlib import Path

from dezero_grader.history.subset import STEP_FILE, Trees
from dezero_grader.intake.gitrepo import Repo, RepoError
from dezero_grader.intake.load import FIRST_PACKAGE_STEP, NO_CODE_STEPS, _state_step
from dezero_grader.present import terminal

MAP_FILES = ('.dezero-steps', 'dezero-steps.json', '.dezero-steps.json')
HOW_ORDER = ('map', 'tag', 'branch', 'message', 'file')     # which evidence wins for a step

FIRST_STEP, LAST_STEP = 1, 60
MAX_MAP_BYTES = 1 << 20
MAX_MESSAGE_CHARS = 64 * 1024     # of a commit message, read for the steps it names
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
    how: str          # map | tag | branch | message | file
    detail: str       # the evidence: the line of the map, the branch, the message, the file
    refused: str = ''  # why this evidence maps the step to no commit (it holds no step file)


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
        except RecursionError:
            raise HistoryError('{}: JSON nested deeper than a mapping of steps to commits '
                               'is'.format(name)) from None
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


def _stretches(marks) -> dict:
    """marks: [(index, set of steps)] in history order -> step -> the indices of the commits that
    mark it in its stretch, oldest first: those marking the step before a commit marks a later
    step (and not this one)."""
    first, out = {}, {}
    for i, steps in marks:
        for s in steps:
            first.setdefault(s, i)
    for s, start in first.items():
        end = next((i for i, steps in marks if i > start and s not in steps and max(steps) > s),
                   None)
        out[s] = [i for i, steps in marks if s in steps and (end is None or i < end)]
    return out


def _step_of(path: str) -> int | None:
    m = STEP_FILE.match(path.rsplit('/', 1)[-1])
    return int(m.group(1)) if m and FIRST_STEP <= int(m.group(1)) <= LAST_STEP else None


def _file_stretches(repo: Repo, commits) -> dict:
    """step -> (index of its state commit, path, index of the commit that added it): a step
    file's state is the last commit that holds the file before the next commit that adds the
    file of a later step (a file added and then deleted maps to the last commit holding it)."""
    if not commits:
        return {}
    changes = repo.changes([c.sha for c in commits])
    try:
        present = {p: 0 for p in repo.files(commits[0].sha) if _step_of(p)}
    except RepoError:
        present = {}
    marks, held = [], []       # held[i]: step-file path -> index of the commit that added it
    for i, c in enumerate(commits):
        steps = set()
        for status, p in changes.get(c.sha, []):
            if _step_of(p) is None:
                continue
            if status == 'A':
                steps.add(_step_of(p))
                present[p] = i
            else:
                present.pop(p, None)
        held.append(dict(present))
        if steps:
            marks.append((i, steps))
    out, firsts = {}, {}
    for i, steps in marks:
        for s in steps:
            firsts.setdefault(s, i)
    for s, start in firsts.items():
        nxt = next((i for i, steps in marks if i > start and max(steps) > s), None)
        end = (nxt - 1) if nxt is not None else len(commits) - 1
        for i in range(end, start - 1, -1):
            paths = sorted(p for p in held[i] if _step_of(p) == s)
            if paths:
                out[s] = (i, paths[0], held[i][paths[0]])
                break
    return out


def _read_map(repo: Repo, tip: str, map_file: str | None):
    """(the text of the mapping file, its name), or (None, None) when there is none."""
    if map_file is not None:
        try:
            text = Path(map_file).read_text(encoding='utf-8')
        except (OSError, UnicodeDecodeError) as e:
            raise HistoryError('--map {} cannot be read: {}'.format(map_file, e)) from None
        return text, str(map_file)
    for name in MAP_FILES:
        try:
            blob = repo.show_file(tip, name, max_bytes=MAX_MAP_BYTES)
        except RepoError as e:
            raise HistoryError('{}: {}'.format(name, e)) from None
        if blob is not None:
            return blob.decode('utf-8', 'replace'), name
    return None, None


def find_steps(repo: Repo, tip: str, map_file: str | None = None, trees: Trees | None = None) -> tuple:
    """(chosen StepCommit per step, every mapping found) from the history reachable from `tip`.
    A mapping the learner wrote (a map file, a tag, a branch) is taken as written; one inferred
    from messages or files is made only to a commit that holds the step's file, and one that
    finds none is kept among those found, refused, with the reason."""
    if trees is None:
        with tempfile.TemporaryDirectory(prefix='dezero-history-') as work:
            return find_steps(repo, tip, map_file, Trees(repo, Path(work)))
    commits = repo.log(tip)
    found = []
    text, source = _read_map(repo, tip, map_file)
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
            try:
                sha = repo.resolve(sha)
            except RepoError:
                continue     # an annotated tag of something that is not a commit
            found.append(StepCommit(int(m.group(1)), sha, how,
                                    name[len('tags/'):] if how == 'tag' else name))
    marks = [(i, steps_in_message((c.subject + '\n' + c.body)[:MAX_MESSAGE_CHARS]))
             for i, c in enumerate(commits)]
    marks = [(i, s) for i, s in marks if s]
    for step, stretch in sorted(_stretches(marks).items()):
        held = next((i for i in reversed(stretch) if trees.holds(commits[i].sha, step)), None)
        if held is not None:
            found.append(StepCommit(step, commits[held].sha, 'message', commits[held].subject[:120]))
        else:
            last = commits[stretch[-1]]
            found.append(StepCommit(step, last.sha, 'message', last.subject[:120],
                                    refused=_why_not_held(step, len(stretch))))
    for step, (i, path, added) in sorted(_file_stretches(repo, commits).items()):
        detail = 'adds ' + path if added == i else 'holds {} (added in {})'.format(
            path, commits[added].short)
        found.append(StepCommit(step, commits[i].sha, 'file', detail))
    chosen = {}
    for sc in sorted(found, key=lambda s: HOW_ORDER.index(s.how)):
        if not sc.refused:
            chosen.setdefault(sc.step, sc)
    return [chosen[s] for s in sorted(chosen)], found


def _why_not_held(step: int, commits: int) -> str:
    if step >= FIRST_PACKAGE_STEP:
        what = 'a dezero/ package (a folder dezero with __init__.py, at the top or in one top-level folder)'
    else:
        what = 'step{:02d}.py{} (at the top, in steps/, or in one top-level folder)'.format(
            step, ' or step{:02d}.py'.format(_state_step(step)) if step in NO_CODE_STEPS else '')
    return '{} commit(s) name step {}, and none of them holds {}'.format(commits, step, what)


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


def commit_order(repo: Repo, head: str, items, sha=lambda x: x.sha, step=lambda x: x.step):
    """`items` (mapped steps, timeline rows) in the order of their commits in the history of
    `head`, oldest first (steps of one commit in step order); commits outside it last."""
    position = repo.order(head)
    return sorted(items, key=lambda x: (position.get(sha(x), len(position)), step(x)))


def sharing(items, sha=lambda x: x.sha, step=lambda x: x.step) -> dict:
    """sha -> the steps mapped to it, for every commit that two steps or more share."""
    steps = {}
    for x in items:
        steps.setdefault(sha(x), []).append(step(x))
    return {k: sorted(v) for k, v in steps.items() if len(v) > 1}


def show_mapping(source: str, *, map_file=None, tip=None, steps=None) -> str:
    """What `--dry-run` prints: every mapping found and the one chosen per step, in commit
    order; the evidence refused and why; nothing graded."""
    with tempfile.TemporaryDirectory(prefix='dezero-history-') as work:
        repo = Repo(source, Path(work))
        head = repo.resolve(tip) if tip else repo.head()
        mapped, found = find_steps(repo, head, map_file, Trees(repo, Path(work) / 'trees'))
        commits = len(repo.log(head))
        mapped = commit_order(repo, head, [m for m in mapped if steps is None or m.step in steps])
        notes = list(repo.notes)

    def shown(text):
        return terminal.printable(text, lines=False)

    lines = ['{}: {} step(s) mapped from {} commit(s)'.format(shown(str(source)), len(mapped),
                                                                commits)]
    lines += ['  note: {}'.format(shown(n)[:200]) for n in notes]
    shared = sharing(mapped)
    for m in mapped:
        others = ['{} {}'.format(f.how, f.sha[:10]) for f in found
                  if f.step == m.step and f != m and not f.refused]
        group = shared.get(m.sha, [])
        lines.append('  step {:2d}  {}  {:7}  {}{}{}'.format(
            m.step, m.sha[:10], m.how, shown(m.detail[:70]),
            '  (also: {})'.format(', '.join(others)) if others else '',
            '  (steps {} share this commit)'.format(', '.join(map(str, group)))
            if group and group[0] == m.step else ''))
    for f in found:
        if f.refused and (steps is None or f.step in steps):
            lines.append('  step {:2d}  not by {} "{}": {}'.format(
                f.step, f.how, shown(f.detail[:50]), shown(f.refused)))
    return '\n'.join(lines) + '\n'


def count_how(mapped):
    counts = {}
    for m in mapped:
        counts[m.how] = counts.get(m.how, 0) + 1
    return sorted(counts.items(), key=lambda kv: HOW_ORDER.index(kv[0]))
