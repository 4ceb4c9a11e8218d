"""What a batch is asked and what it answers: its options (and the versions a receipt must
match), its shard, the submissions it leaves without a scorecard, its result, its errors."""
from __future__ import annotations

import functools
import hashlib
from dataclasses import dataclass, field
from pathlib import Path

from dezero_grader.errors import GraderError
from dezero_grader.isolation import bwrap
from dezero_grader.isolation.worker_process import Limits
from dezero_grader.records import schema
from dezero_grader.scoring import scorecard_write

SCHEMA_VERSION = '1.0'


class BatchError(Exception):
    """The batch (or merge) cannot run as asked; the message says what was expected and found."""


@dataclass(frozen=True)
class Failure:
    """A submission left without a scorecard, and why."""
    id: str
    code: str          # duplicate-id | grader-error | grader-crashed | grader-stuck
    reason: str


@dataclass(frozen=True)
class Shard:
    index: int         # 1-based
    count: int

    @classmethod
    def parse(cls, text: str) -> 'Shard':
        try:
            index, count = (int(x) for x in text.split('/'))
        except ValueError:
            raise BatchError('--shard expects I/N (for example 2/4), found {!r}'.format(text)) from None
        if not 1 <= index <= count:
            raise BatchError('--shard {}: I runs from 1 to N'.format(text))
        return cls(index, count)

    def contains(self, submission_id: str) -> bool:
        return shard_of(submission_id, self.count) == self.index


def shard_of(submission_id: str, count: int) -> int:
    """The shard (1-based) a submission id belongs to: stable across runs and machines."""
    digest = hashlib.sha256(submission_id.encode('utf-8', 'surrogateescape')).digest()
    return int.from_bytes(digest[:8], 'big') % count + 1


@dataclass(frozen=True)
class BatchOptions:
    """What every scorecard of a batch is graded with (and what a receipt must match)."""
    step: int
    profile: str = 'book'         # which tiers decide
    era: str = 'book'             # the environment the code must run in (book: 2020, current)
    device: str = 'auto'
    seed: int | None = None
    timeout_s: float = Limits.call_s
    memory_mb: int | None = Limits.memory_mb
    sandbox: str = field(default_factory=lambda: bwrap.require_strong(bwrap.default_mode(),
                                                                      'a batch'))
    policy: object = None         # dezero_grader.scoring.policy.Policy (None: the default policy)
    language: str | None = None   # the reports' language (--lang; None: the policy's, else English)

    @classmethod
    def from_cli(cls, step: int, *, profile: str = 'book', era: str = 'book',
                 device: str = 'auto', seed: int | None = None, timeout_s: float | None = None,
                 memory_mb: int | None = None, sandbox: str | None = None,
                 policy=None, language: str | None = None) -> 'BatchOptions':
        """Options from command-line values (None: the default), checked as `check` checks them.
        The code of many learners meets here, so the sandbox is bubblewrap unless `basic` opts
        out (`auto` and `bubblewrap` refuse to start without it)."""
        if timeout_s is not None and not 0 < timeout_s <= 86400:
            raise BatchError('--timeout takes seconds above 0 (at most a day), found {:g}'.format(
                timeout_s))
        if memory_mb is not None and memory_mb < 256:
            raise BatchError('--memory takes megabytes, at least 256 (Python and NumPy alone need '
                             'about 150), found {}'.format(memory_mb))
        if era not in ('book', 'current'):
            raise BatchError('--era is book or current, found {!r}'.format(era))
        try:
            sandbox = bwrap.require_strong(sandbox or bwrap.default_mode(), 'a batch')
        except GraderError as e:
            raise BatchError(str(e)) from None
        return cls(step, profile, era, device, seed,
                   Limits.call_s if timeout_s is None else float(timeout_s),
                   Limits.memory_mb if memory_mb is None else memory_mb, sandbox, policy,
                   language)

    def limits(self) -> Limits:
        """--timeout is the limit of one request (call_s); as in `check`, a longer one also
        stretches the worker's whole-life and CPU budgets to ten times as much."""
        return Limits.with_options(timeout_s=self.timeout_s, memory_mb=self.memory_mb,
                                   sandbox=self.sandbox)

    def run_options(self):
        from dezero_grader.grading import run
        return run.Options(device=self.device, seed=self.seed, profile=self.profile,
                           era=self.era, limits=self.limits(), policy=self.grading_policy(),
                           language=self.language)

    def grading_policy(self):
        from dezero_grader.scoring import policy
        return self.policy or policy.DEFAULT

    def versions(self) -> dict:
        """What else a receipt must match: the assignment files, the grader, the policy, and the
        course secret (a digest of it: a secret set, changed or removed gives other seeds, so
        everything is graded again)."""
        from dezero_grader.catalogue import assignments
        from dezero_grader.grading import run
        return {'assignment_sha256': assignments.content_hash(self.step),
                'grader': {'version': scorecard_write.TOOL_VERSION, 'code_sha256': grader_code_sha256()},
                'policy_sha256': self.grading_policy().sha256,
                'course_secret': run.course_secret_digest()}

    def to_json(self) -> dict:
        out = {'profile': self.profile, 'era': self.era, 'device': self.device, 'seed': self.seed,
               'timeout_s': self.timeout_s, 'memory_mb': self.memory_mb, 'sandbox': self.sandbox}
        if self.language:   # a batch in another language is graded again, not resumed
            out['language'] = self.language
        return out


@dataclass(frozen=True)
class BatchResult:
    summary: dict
    out: Path
    graded_now: int
    resumed: int
    failures: tuple = ()
    merged: bool = False

    @property
    def complete(self) -> bool:
        """Every submission considered has a scorecard (and, for a merge, every shard is in)."""
        return (not any(not u['scorecard'] for u in self.summary['ungraded'])
                and not (self.merged and self.summary['shards']['missing']))


@functools.lru_cache(maxsize=None)
def grader_code_sha256() -> str:
    """sha256 of the grader's own code and data (dezero_grader/, reference/, schemas/, names and bytes):
    a receipt records it, so that a fixed check or scenario regrades what it graded."""
    import dezero_grader
    from dezero_grader import reference
    digest = hashlib.sha256()
    roots = [Path(dezero_grader.__file__).resolve().parent, Path(reference.ROOT).resolve(),
             schema.data_dir('schemas').resolve()]
    for root in roots:
        for path in sorted(root.rglob('*')):
            if path.is_file() and path.suffix in ('.py', '.json') and '__pycache__' not in path.parts:
                digest.update(path.relative_to(root).as_posix().encode() + b'\0'
                              + path.read_bytes() + b'\0')
    return 'sha256:' + digest.hexdigest()
