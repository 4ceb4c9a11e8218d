"""Grading (step, commit[, only]) through a content cache, many at a time in batch's process
pool (its crash and watchdog handling). Each scorecard is cached under a key of the graded
files' hash, the step, the options and the grader's and assignment's versions, so an
interrupted run resumes from the cache.
"""
from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path

from dezero_grader.batch import pool
from dezero_grader.batch.folder import read_scorecard
from dezero_grader.catalogue import assignments
from dezero_grader.errors import SubmissionError
from dezero_grader.history.subset import Trees, graded_subset, lacking
from dezero_grader.intake import load
from dezero_grader.intake.gitrepo import Repo, RepoError
from dezero_grader.present.progress import Progress
from dezero_grader.scoring import scorecard_write
from dezero_grader.scoring.scorecard_read import Scorecard

@functools.lru_cache(maxsize=None)
def _grader_digest() -> str:
    """The grader's version: its release and a hash of the code that makes scorecards (a cache
    never outlives a change of it)."""
    import dezero_grader
    digest = hashlib.sha256(scorecard_write.TOOL_VERSION.encode())
    root = Path(dezero_grader.__file__).resolve().parent
    for path in sorted(root.rglob('*.py')):
        if path.parent == root / 'history' or path.name in ('gitrepo.py', 'gitdir.py'):
            continue   # they read scorecards, never make them
        digest.update(path.as_posix().rsplit('/dezero_grader/', 1)[-1].encode() + b'\0' + path.read_bytes())
    return digest.hexdigest()[:16]


def options_json(options) -> dict:
    from dezero_grader.grading import run
    from dezero_grader.isolation import bwrap
    lim = options.limits
    return {'device': run.resolve_device(options.device), 'seed': options.seed,
            'profile': options.profile, 'era': options.era, 'timeout_s': lim.call_s,
            'memory_mb': lim.memory_mb, 'sandbox': bwrap.resolve(lim.sandbox)}


def cache_key(content_hash: str, step: int, options, only=()) -> str:
    """The content cache's key of a grading: what was graded, how, by which grader, and under
    which course secret (its digest: a secret set or changed grades everything again, since the
    seeds it keys are others)."""
    from dezero_grader.grading import run
    doc = {'content': content_hash, 'step': step, 'options': options_json(options),
           'only': sorted(only), 'grader': _grader_digest(), 'assignment': assignments.content_hash(step),
           'secret': run.course_secret_digest()}
    return hashlib.sha256(json.dumps(doc, sort_keys=True).encode()).hexdigest()[:32]


@dataclass(frozen=True)
class GradeTask:
    """One graded subset, as a pool process receives it."""
    id: str                # a label for the progress lines
    path: Path             # the graded subset
    step: int
    options: object        # run.Options
    cache_file: str


def grade_task(task: GradeTask) -> dict:
    """In a pool process: grade one subset, write its scorecard to the cache (atomically)."""
    from dezero_grader.grading import run
    try:
        doc = run.grade(task.path, task.step, task.options)
        if doc.get('invalid', {}).get('code') != 'grader-error':   # the grader's failure: not kept
            scorecard_write.write(task.cache_file, doc)
    except Exception as exc:
        return pool.grader_failed(task.id, 'the grader failed ({}: {}); a bug of the grader, not '
                                  'of the code'.format(type(exc).__name__, exc))
    return pool.graded(task.id, doc)


def watchdog_s(task) -> float:
    """As batch's watchdog (`dezero_grader.batch.grading.watchdog_s`), for run.Options."""
    return pool.silence_limit_s(task.options.limits)


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

    @property
    def card(self) -> Scorecard | None:
        """The scorecard read as a record; None until it is graded (or when it cannot be)."""
        return None if self.doc is None else Scorecard.from_document(self.doc)


class Grader:
    """Grades (step, commit[, only]) through the content cache, many at a time."""

    def __init__(self, repo: Repo, options, work: Path, cache: Path, *, jobs: int,
                 force: bool = False, stream=sys.stderr, trees: Trees | None = None):
        self.repo, self.options, self.work, self.cache = repo, options, Path(work), Path(cache)
        self.jobs, self.force, self.stream = jobs, force, stream
        self.graded_now = 0
        self.from_cache = 0
        self.trees = trees or Trees(repo, self.work / 'trees')

    def prepare(self, step: int, sha: str, only=()) -> Grading:
        g = Grading(step, sha, tuple(sorted(only)))
        dest = self.work / 'subsets' / '{}-step{:02d}{}'.format(
            sha[:12], step, '-' + hashlib.sha256(' '.join(g.only).encode()).hexdigest()[:8]
            if g.only else '')
        if dest.exists():
            shutil.rmtree(dest)
        try:
            tree, left_out = self.trees.get(sha)
            g.entry, paths = graded_subset(tree, step, dest)
            missing = lacking(g.entry, left_out)
            if not missing:
                g.content_hash = load.content_hash(dest)
        except SubmissionError as e:
            g.problem = {'code': e.code, 'message': e.message}
            return g
        except RepoError as e:   # a mirror without some objects, say
            g.problem = {'code': 'unreadable', 'message': str(e)}
            return g
        except OSError as e:
            g.problem = {'code': 'unreadable', 'message': 'the files of this commit cannot be '
                         'copied for grading ({})'.format(e.strerror or type(e).__name__)}
            return g
        except (RecursionError, MemoryError):   # the learner's files, beyond what parses
            g.problem = {'code': 'unreadable', 'message': 'a file of this commit nests deeper '
                         'than the Python parser can read'}
            return g
        except Exception as e:   # the boundary: a commit's files never end the history
            g.problem = {'code': 'grader-error', 'message': 'the grader failed on the files of '
                         'this commit ({}); a bug of the grader, not of the code'.format(
                             type(e).__name__)}
            return g
        g.paths = tuple(paths)
        if missing:
            too_large = [p for p, why in missing if why == 'too-large']
            g.problem = {'code': 'unreadable', 'message': (
                '{} at this commit {} larger than a submission may be ({} MiB in all)'.format(
                    ', '.join(too_large[:5]), 'is' if len(too_large) == 1 else 'are',
                    load.MAX_TOTAL_BYTES >> 20) if too_large else
                'the repository lacks the content of {} at this commit (a copy without its '
                'largest files?)'.format(', '.join(p for p, _ in missing[:5])))}
            return g
        g.key = cache_key(g.content_hash, step, self.options, g.only)
        g.subset = dest
        return g

    def grade(self, gradings) -> None:
        """Fill in `doc` of each grading: from the cache, else graded in the pool."""
        from dezero_grader.grading import run
        tasks, by_key = [], {}
        for g in gradings:
            if g.problem is not None or g.doc is not None:
                continue
            card = self.cache / (g.key + '.json')
            if not self.force and card.is_file():
                try:
                    g.doc, g.cached = read_scorecard(card), True
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
            tasks.append(GradeTask(label, g.subset, g.step, options, str(card)))
        if tasks:
            run.resolve_device(self.options.device)
            progress = Progress(len(tasks), 0, self.stream, label='history ')
            try:
                failures = pool.grade_all(tasks, self.jobs, self.work / 'pool', progress,
                                          grade_one=grade_task, watchdog=watchdog_s)
            finally:
                progress.finish()
            failed = {f.id: f for f in failures}
            for task in tasks:
                group = by_key[Path(task.cache_file).stem]
                if task.id in failed:
                    f = failed[task.id]
                    for g in group:
                        g.problem = {'code': f.code, 'message': f.reason}
                    continue
                try:
                    doc = read_scorecard(Path(task.cache_file))
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
