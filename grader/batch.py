"""Batch grading: a folder of submissions → one scorecard each, and a summary of the class.

Where it sits: around `run.grade`, once per submission, in a pool of processes; after it, the
exporters read what it wrote. Each grading already runs the learner's code in sandboxed worker
processes of its own, so the pool adds throughput, not isolation. A process pool rather than one
`dezero-grade check --json` subprocess per submission: a fresh interpreter pays for its imports,
the assignment, the checks and the schema validators on every submission, a pool once per
process (`bench/bench_batch.py --subprocess`: the pool grades 1.3 to 1.5 times as many step-52
submissions per minute on 2 cores). A pool process that dies takes only its in-flight
submissions with it: they are graded again one at a time, and one that kills its process twice
on its own is reported as `grader-crashed`. Pool processes are started with one BLAS/OpenMP
thread each (`THREAD_ENV`; the sandbox does the same for its workers): `--jobs` is the
parallelism, and oversubscribed BLAS threads only slow a 2-core runner down. On Linux they die
with the batch, and a restarted batch stops the sandbox workers a killed one left running.

The output folder:

    scorecards/<id>.json   one per graded submission, written atomically (complete or absent)
    receipts/<id>.json     written after the scorecard: the source fingerprint and options it
                           answers, the assignment's content hash, the grader's version and
                           code hash, the grading policy's hash, and the scorecard's sha256
    summary.json           the class summary (schemas/batch-summary.schema.json)
    roster.json            the roster, when one was given
    .work/                 scratch copies of a running batch (cleared at start and end)
    .lock                  held (flock) while a batch or merge writes here

Resuming: a submission is skipped when its receipt matches the submission as it is now (content
hash of a folder, sha256 of a zip), the options of this run, the assignment files (points or
checks edited: graded again), the grader (its version and code), the grading policy, and the
bytes of its scorecard; any other submission is graded again. A summary is made only of
scorecards of one assignment version, one grader and one policy. A batch killed at any point (SIGKILL included) therefore loses
at most the gradings in flight, and a restart grades exactly what is missing or out of date.
`--force` grades everything again.

Sharding (`--shard I/N`, 1-based): a submission belongs to shard `h mod N + 1`, h the first
8 bytes of sha256(id) read big-endian, so every CI job computes its share alone, and a
submission stays in its shard when others are added or removed. `merge` recombines shard outputs into one folder and one summary.
"""
from __future__ import annotations

import collections
import concurrent.futures
import contextlib
import datetime
import functools
import hashlib
import json
import multiprocessing
import os
import shutil
import signal
import statistics
import sys
import tempfile
import time
import traceback
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from pathlib import Path

from grader import bwrap, load, report, schema, scorecard
from grader.errors import GraderError, SubmissionError
from grader.export import roster as roster_mod
from grader.model import FAILING, VERDICTS
from grader.sandbox import Limits

try:
    import fcntl
except ImportError:   # Windows: no advisory locks; the sandbox needs POSIX anyway
    fcntl = None

SCHEMA_VERSION = '1.0'
THREAD_ENV = {'OMP_NUM_THREADS': '1', 'OPENBLAS_NUM_THREADS': '1', 'MKL_NUM_THREADS': '1',
              'VECLIB_MAXIMUM_THREADS': '1', 'NUMEXPR_NUM_THREADS': '1'}
SCORECARDS, RECEIPTS, SUMMARY, ROSTER, WORK, LOCK = (
    'scorecards', 'receipts', 'summary.json', 'roster.json', '.work', '.lock')
MAX_ATTEMPTS = 2
_WATCH_EVERY_S = 2.0
_SKIPPED_NAMES = frozenset({'__MACOSX', '__pycache__'})


class BatchError(Exception):
    """The batch (or merge) cannot run as asked; the message says what was expected and found."""


# -- records --------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Entry:
    """One submission of the folder: a sub-folder or a .zip, named by its id."""
    id: str
    path: Path
    kind: str          # 'folder' | 'zip'


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
    policy: object = None         # grader.policy.Policy (None: the default policy)

    @classmethod
    def from_cli(cls, step: int, *, profile: str = 'book', era: str = 'book',
                 device: str = 'auto', seed: int | None = None, timeout_s: float | None = None,
                 memory_mb: int | None = None, sandbox: str | None = None,
                 policy=None) -> 'BatchOptions':
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
                   Limits.memory_mb if memory_mb is None else memory_mb, sandbox, policy)

    def limits(self) -> Limits:
        """--timeout is the limit of one request (call_s); as in `check`, a longer one also
        stretches the worker's whole-life and CPU budgets to ten times as much."""
        return Limits.with_options(timeout_s=self.timeout_s, memory_mb=self.memory_mb,
                                   sandbox=self.sandbox)

    def run_options(self):
        from grader import run
        return run.Options(device=self.device, seed=self.seed, profile=self.profile,
                           era=self.era, limits=self.limits(), policy=self.grading_policy())

    def grading_policy(self):
        from grader import policy
        return self.policy or policy.DEFAULT

    def versions(self) -> dict:
        """What else a receipt must match: the assignment files, the grader, the policy."""
        from grader import assignments
        return {'assignment_sha256': assignments.content_hash(self.step),
                'grader': {'version': scorecard.TOOL_VERSION, 'code_sha256': grader_code_sha256()},
                'policy_sha256': self.grading_policy().sha256}

    def to_json(self) -> dict:
        return {'profile': self.profile, 'era': self.era, 'device': self.device, 'seed': self.seed,
                'timeout_s': self.timeout_s, 'memory_mb': self.memory_mb, 'sandbox': self.sandbox}


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


@dataclass(frozen=True)
class _Task:
    entry: Entry
    fingerprint: str
    options: BatchOptions
    out: str


# -- the submissions folder -----------------------------------------------------------------------

def _shown(name: str) -> str:
    """A file name as text for JSON and terminals: bytes that are not UTF-8 written as escapes."""
    return report.printable(name.encode('utf-8', 'surrogateescape').decode('utf-8', 'backslashreplace'),
                            lines=False)


def discover(folder: Path, *, exclude=()):
    """(entries sorted by id, duplicate-id failures, names of ignored entries)."""
    folder = Path(folder)
    skip = {Path(p).resolve() for p in exclude}
    found, ignored = [], []
    for e in sorted(os.scandir(folder), key=lambda e: e.name):
        if e.name.startswith('.') or e.name in _SKIPPED_NAMES:
            continue
        path = Path(e.path)
        if path.resolve() in skip:
            continue
        if e.is_symlink():
            ignored.append(load.safe_id(e.name) + ' (a symbolic link: not followed)')
        elif e.is_dir(follow_symlinks=False):
            found.append(Entry(load.safe_id(e.name), path, 'folder'))
        elif e.is_file(follow_symlinks=False) and e.name.lower().endswith('.zip') and len(e.name) > 4:
            found.append(Entry(load.safe_id(e.name[:-4]), path, 'zip'))
        else:
            ignored.append(load.safe_id(e.name))
    by_id = collections.defaultdict(list)
    for entry in found:
        by_id[entry.id].append(entry)
    entries, duplicates = [], []
    for ident in sorted(by_id):
        group = by_id[ident]
        if len(group) == 1:
            entries.append(group[0])
        else:
            names = ' and '.join(_shown(g.path.name) + ('/' if g.kind == 'folder' else '') for g in group)
            duplicates.append(Failure(ident, 'duplicate-id', 'two submissions share the id {!r} '
                                      '({}); keep one of them'.format(ident, names)))
    return entries, duplicates, ignored


def fingerprint(entry: Entry) -> str:
    """Identity of a submission as it is now: what a receipt must match to skip regrading."""
    try:
        if entry.kind == 'zip':
            digest = hashlib.sha256()
            with open(entry.path, 'rb') as f:
                for chunk in iter(lambda: f.read(1 << 20), b''):
                    digest.update(chunk)
            return 'zip-sha256:' + digest.hexdigest()
        return load.content_hash(entry.path)
    except (OSError, SubmissionError):
        return 'unreadable'   # grading it says why


@functools.lru_cache(maxsize=None)
def grader_code_sha256() -> str:
    """sha256 of the grader's own code and data (grader/, reference/, schemas/, names and bytes):
    a receipt records it, so that a fixed check or scenario regrades what it graded."""
    import grader
    import reference
    digest = hashlib.sha256()
    roots = [Path(grader.__file__).resolve().parent, Path(reference.ROOT).resolve(),
             schema.data_dir('schemas').resolve()]
    for root in roots:
        for path in sorted(root.rglob('*')):
            if path.is_file() and path.suffix in ('.py', '.json') and '__pycache__' not in path.parts:
                digest.update(path.relative_to(root).as_posix().encode() + b'\0'
                              + path.read_bytes() + b'\0')
    return 'sha256:' + digest.hexdigest()


def _sha256_file(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def is_done(out: Path, entry: Entry, fp: str, options: BatchOptions) -> bool:
    """Whether `out` holds a scorecard of `entry`, as it is now, graded with `options`."""
    try:
        with open(out / RECEIPTS / (entry.id + '.json'), encoding='utf-8') as f:
            receipt = json.load(f)
        card = out / SCORECARDS / (entry.id + '.json')
        if schema.errors('batch-receipt', receipt):
            return False
        return (receipt['id'] == entry.id and receipt['fingerprint'] == fp
                and receipt['step'] == options.step and receipt['options'] == options.to_json()
                and all(receipt[k] == v for k, v in options.versions().items())
                and receipt['scorecard_sha256'] == _sha256_file(card))
    except (OSError, ValueError):
        return False


# -- grading, in pool processes -------------------------------------------------------------------

def _die_with_parent(parent_pid: int) -> None:
    """Linux: the kernel kills this pool process when the batch dies (even by SIGKILL of the
    batch alone), so that no orphan can write a scorecard behind the back of a restarted batch."""
    if not sys.platform.startswith('linux'):
        return
    try:
        import ctypes
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL, 0, 0, 0)   # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        return
    if os.getppid() != parent_pid:   # the batch died before the request took effect
        os._exit(1)


def _init_pool_process(work: str, parent_pid: int) -> None:
    _die_with_parent(parent_pid)
    os.environ.update(THREAD_ENV)
    scratch = Path(work) / str(os.getpid())
    scratch.mkdir(parents=True, exist_ok=True)
    tempfile.tempdir = str(scratch)   # scratch copies land where a restart can clear them
    signal.signal(signal.SIGINT, signal.SIG_IGN)   # the batch stops its pool itself


def _grade_one(task: _Task) -> dict:
    from grader import run
    started = time.perf_counter()
    entry, out = task.entry, Path(task.out)
    try:
        doc = run.grade(entry.path, task.options.step, task.options.run_options())
        card = out / SCORECARDS / (entry.id + '.json')
        scorecard.write(card, doc)
        if doc.get('invalid', {}).get('code') != 'grader-error':
            # a scorecard of the grader's own failure has no receipt: resuming grades it again
            receipt = {'schema_version': SCHEMA_VERSION, 'id': entry.id, 'source': _shown(entry.path.name),
                       'fingerprint': task.fingerprint, 'step': task.options.step,
                       'options': task.options.to_json(), **task.options.versions(),
                       'scorecard_sha256': _sha256_file(card)}
            schema.write_json(out / RECEIPTS / (entry.id + '.json'), receipt, 'batch-receipt')
    except Exception as exc:   # a bug of ours: loud, but it costs only this submission
        return {'id': entry.id, 'ok': False, 'code': 'grader-error',
                'reason': 'the grader failed on this submission ({}: {}); this is a bug of the '
                          'grader, not of the submission'.format(type(exc).__name__, exc),
                'traceback': traceback.format_exc(), 'seconds': time.perf_counter() - started}
    return {'id': entry.id, 'ok': True, 'verdict': doc['verdict'],
            'earned': doc['score']['earned'], 'possible': doc['score']['possible'],
            'seconds': time.perf_counter() - started}


def default_jobs() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:
        return max(1, os.cpu_count() or 1)


@contextlib.contextmanager
def pinned_threads():
    """THREAD_ENV in this process's environment for as long as pool processes may be started:
    a spawned process inherits it before it first imports NumPy (and its BLAS), which is the
    only moment the thread count can be set. The environment is restored afterwards."""
    saved = {name: os.environ.get(name) for name in THREAD_ENV}
    os.environ.update(THREAD_ENV)
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def open_pool(jobs: int, work: Path) -> concurrent.futures.ProcessPoolExecutor:
    """The pool the batch grades in: `jobs` fresh ('spawn') processes, each with one BLAS
    thread when started under `pinned_threads()`, scratch under `work`, and dying with us."""
    work.mkdir(parents=True, exist_ok=True)
    return concurrent.futures.ProcessPoolExecutor(
        max_workers=jobs, mp_context=multiprocessing.get_context('spawn'),
        initializer=_init_pool_process, initargs=(str(work), os.getpid()))


def _stop_pool(pool, *, wait: bool) -> None:
    if wait:
        pool.shutdown(wait=True)
        return
    processes = list((getattr(pool, '_processes', None) or {}).values())
    pool.shutdown(wait=False, cancel_futures=True)
    for p in processes:
        if p.is_alive():
            p.terminate()
    for p in processes:
        p.join(5)


def watchdog_s(task) -> float:
    """How long one grading may take before the batch stops it: the learner's and the
    reference's workers are each bounded by the whole-submission budget, and the reference is
    tried twice; anything longer is the grader stuck, not the learner's code."""
    return 3 * task.options.limits().total_s + 120


def _grade_all(tasks, jobs, work: Path, progress, grade_one=None, watchdog=watchdog_s) -> list:
    """Grade `tasks` in a pool of `jobs` processes; returns the failures (no scorecard).

    When a pool process dies, every submission in flight with it is a suspect: suspects are then
    graded one at a time, so that a submission that kills its process again is caught alone
    (and reported as `grader-crashed` after MAX_ATTEMPTS deaths) while the others go on. A
    grading still running after `watchdog(task)` seconds is stopped with its pool process and
    reported as `grader-stuck`; the submissions in flight beside it are graded again, so the
    batch always ends and writes its summary."""
    grade_one = grade_one or _grade_one   # tests pass a stand-in that crashes or hangs
    failures = []
    pending = collections.deque(tasks)
    attempts = collections.Counter()
    suspects = set()
    pool = open_pool(jobs, work)
    inflight = {}
    started = {}
    finished_cleanly = False

    def finished(result):
        suspects.discard(result['id'])
        if result['ok']:
            progress.update(result['id'], '{} {:g}/{:g}'.format(
                result['verdict'], result['earned'], result['possible']))
            return
        progress.note('{}: {}\n{}'.format(result['id'], result['reason'], result['traceback']))
        failures.append(Failure(result['id'], result['code'], result['reason']))
        progress.update(result['id'], result['code'])

    def crashed(task, alone):
        ident = task.entry.id
        if alone:
            attempts[ident] += 1
            if attempts[ident] >= MAX_ATTEMPTS:
                suspects.discard(ident)
                failures.append(Failure(ident, 'grader-crashed', 'the grading process died {} '
                                        'times on this submission, graded alone'.format(MAX_ATTEMPTS)))
                progress.update(ident, 'grader-crashed')
                return
        suspects.add(ident)
        pending.appendleft(task)

    def fill():
        while pending and len(inflight) < jobs:
            if any(t.entry.id in suspects for t in inflight.values()):
                return                      # a suspect runs alone
            if pending[0].entry.id in suspects and inflight:
                return
            task = pending.popleft()
            future = pool.submit(grade_one, task)
            inflight[future] = task
            started[future] = time.monotonic()

    def stuck_ones():
        now = time.monotonic()
        return [f for f, task in inflight.items() if now - started[f] > watchdog(task)]

    try:
        with pinned_threads():
            while pending or inflight:
                fill()
                done, _ = concurrent.futures.wait(inflight, timeout=_WATCH_EVERY_S,
                                                  return_when=concurrent.futures.FIRST_COMPLETED)
                lost = []
                for future in done:
                    task = inflight.pop(future)
                    try:
                        finished(future.result())
                    except BrokenProcessPool:
                        lost.append(task)
                if lost:
                    # the pool fails every future still in flight: collect them, start a new pool
                    for future, task in list(inflight.items()):
                        try:
                            finished(future.result())
                        except BrokenProcessPool:
                            lost.append(task)
                    inflight.clear()
                    for task in reversed(lost):
                        crashed(task, alone=len(lost) == 1)
                    _stop_pool(pool, wait=False)
                    pool = open_pool(jobs, work)
                stuck = stuck_ones()
                if stuck:
                    for future in stuck:
                        task = inflight.pop(future)
                        failures.append(Failure(task.entry.id, 'grader-stuck', 'grading this '
                                                'submission took more than {:g} s, far beyond its '
                                                'time limits, and was stopped: a fault of the '
                                                'grader or of this machine'.format(watchdog(task))))
                        progress.update(task.entry.id, 'grader-stuck')
                    _stop_pool(pool, wait=False)
                    for future, task in list(inflight.items()):   # graded again, not suspects
                        pending.appendleft(task)
                    inflight.clear()
                    pool = open_pool(jobs, work)
        finished_cleanly = True
    finally:
        _stop_pool(pool, wait=finished_cleanly)
    return failures


# -- progress -------------------------------------------------------------------------------------

def _clock(seconds) -> str:
    if seconds is None:
        return '--:--'
    seconds = int(round(seconds))
    return '{}:{:02d}'.format(seconds // 60, seconds % 60) if seconds < 3600 else \
        '{}:{:02d}:{:02d}'.format(seconds // 3600, seconds // 60 % 60, seconds % 60)


class Progress:
    """Counts and ETA on stderr: one redrawn bar on a terminal, one line per submission in a
    log (CI). The ETA is what is left times this run's pace so far."""

    def __init__(self, total: int, already: int, stream=sys.stderr, label: str = ''):
        self.total, self.done, self.already = total, already, already
        self.stream, self.label = stream, label
        self.tty = hasattr(stream, 'isatty') and stream.isatty()
        self.started = time.monotonic()
        self.outcomes = collections.Counter()
        self._drawn = False

    def eta(self):
        ran = self.done - self.already
        if ran <= 0:
            return None
        return (time.monotonic() - self.started) / ran * (self.total - self.done)

    def update(self, submission_id: str, outcome: str) -> None:
        self.done += 1
        self.outcomes[outcome.split(' ')[0]] += 1
        elapsed = time.monotonic() - self.started
        if self.tty:
            width = 24
            filled = int(width * self.done / self.total) if self.total else width
            counts = ' '.join('{} {}'.format(k, v) for k, v in sorted(self.outcomes.items()))
            line = '\r{}[{}{}] {}/{} {}  {} elapsed, ETA {}'.format(
                self.label, '#' * filled, '.' * (width - filled), self.done, self.total, counts,
                _clock(elapsed), _clock(self.eta()))
            self.stream.write(line[:200] + '\033[K')
            self._drawn = True
        else:
            self.stream.write('[{:>{w}}/{}] {}: {}  (ETA {})\n'.format(
                self.done, self.total, report.printable(submission_id, lines=False),
                report.printable(outcome, lines=False), _clock(self.eta()),
                w=len(str(self.total))))
        self.stream.flush()

    def note(self, text: str) -> None:
        if self._drawn:
            self.stream.write('\n')
            self._drawn = False
        self.stream.write(text.rstrip('\n') + '\n')
        self.stream.flush()

    def finish(self) -> None:
        if self._drawn:
            self.stream.write('\n')
            self.stream.flush()
            self._drawn = False


# -- the summary ----------------------------------------------------------------------------------

def _now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).strftime('%Y-%m-%dT%H:%M:%SZ')


def _round(x):
    return None if x is None else round(float(x), 4)


def _score_stats(graded, possible) -> dict:
    earned = [doc['score']['earned'] for _, doc in graded]
    extension = [doc['score']['extension']['earned'] for _, doc in graded]
    histogram = []
    if possible > 0:
        bins = [0] * 10
        for e in earned:
            bins[min(int(100.0 * e / possible // 10), 9)] += 1
        histogram = [{'from_percent': 10 * i, 'to_percent': 10 * (i + 1), 'count': n}
                     for i, n in enumerate(bins)]
    return {
        'count': len(earned), 'possible': possible,
        'mean': _round(statistics.fmean(earned)) if earned else None,
        'median': _round(statistics.median(earned)) if earned else None,
        'min': _round(min(earned)) if earned else None,
        'max': _round(max(earned)) if earned else None,
        'stdev': _round(statistics.pstdev(earned)) if earned else None,
        'full_marks': sum(1 for e in earned if possible > 0 and e >= possible),
        'histogram': histogram,
        'extension_mean': _round(statistics.fmean(extension)) if extension else None,
    }


def _check_rates(graded) -> list:
    table = {}
    for _, doc in graded:
        for c in doc['checks']:
            row = table.get(c['id'])
            if row is None:
                row = table[c['id']] = {
                    'id': c['id'], 'title': c['title'], 'step': c['step'], 'tier': c['tier'],
                    'regression': c['regression'], 'points': c['points'], 'runs': 0,
                    'passed': 0, 'failed': 0, 'error': 0, 'timeout': 0, 'skipped': 0,
                    'not_applicable': 0}
            row['runs'] += 1
            row[c['status']] += 1
    rows = list(table.values())
    for row in rows:
        judged = row['runs'] - row['skipped'] - row['not_applicable']
        row['pass_rate'] = _round(row['passed'] / judged) if judged else None
    rows.sort(key=lambda r: r['regression'])   # stable: scorecard order within each group
    return rows


def _fault_counts(graded) -> list:
    """Catalogued root causes, most frequent first: a submission counts once for each cause its
    scorecard's diagnosis names (not once per failing check that a fault could explain)."""
    table = {}
    for _, doc in graded:
        seen = set()
        for cause in _diagnosed_causes(doc):
            if cause['kind'] != 'fault':
                continue
            best = cause['faults'][0]
            row = table.setdefault(best['id'], {'id': best['id'], 'title': best['title'],
                                                'submissions': 0, 'checks': set(), 'with': set()})
            row['checks'].update(cause['checks'])
            row['with'].update(f['id'] for f in cause['faults'][1:])
            if best['id'] not in seen:
                seen.add(best['id'])
                row['submissions'] += 1
    rows = sorted(table.values(), key=lambda r: (-r['submissions'], r['id']))
    out = []
    for r in rows:
        row = dict(r, checks=sorted(r['checks']))
        together = sorted(row.pop('with'))
        if together:
            row['indistinguishable_from'] = together
        out.append(row)
    return out


def _diagnosed_causes(doc) -> list:
    """The root causes of a scorecard; one written before the diagnosis existed counts the
    fault its failing checks name, once."""
    if 'diagnosis' in doc:
        return doc['diagnosis']['causes']
    causes = {}
    for c in doc.get('checks', ()):
        if c['status'] in FAILING and c['faults']:
            causes.setdefault(c['faults'][0]['id'], {'kind': 'fault', 'faults': [c['faults'][0]],
                                                     'checks': []})['checks'].append(c['id'])
    return list(causes.values())


def _uncatalogued(graded) -> dict:
    """Submissions with failing checks that no catalogued fault explains (errors of their own code
    shared by several checks, or failures nothing matches)."""
    subs = causes = 0
    for _, doc in graded:
        diagnosis = doc.get('diagnosis')
        if not diagnosis:
            continue
        n = sum(1 for c in diagnosis['causes'] if c['kind'] != 'fault') + bool(diagnosis['unexplained'])
        causes += n
        subs += bool(n)
    return {'submissions': subs, 'causes': causes}


def _drift_counts(graded) -> list:
    """Per API of the 2020 stack the scorecards list: how many submissions and places met it."""
    table = {}
    for submission_id, doc in graded:
        for f in doc.get('compatibility', ()):
            row = table.setdefault(f['api'], {'api': f['api'], 'since': f.get('since', ''),
                                              'fix': f.get('fix', ''), 'ids': set(), 'places': 0})
            row['ids'].add(submission_id)
            row['places'] += 1
    rows = sorted(table.values(), key=lambda r: (-len(r['ids']), r['api']))
    return [{'api': r['api'], 'since': r['since'], 'fix': r['fix'], 'submissions': len(r['ids']),
             'places': r['places']} for r in rows]


def _roster_report(roster, considered, shards) -> dict | None:
    if roster is None:
        return None
    # a person's submission may be named by any of their ids (a Canvas or Gradescope export)
    named = roster.by_submission()
    handed_in = {id(named[i]): i for i in sorted(considered) if i in named}
    people = [p for p in roster.people
              if shard_of(handed_in.get(id(p), p.submission), shards['count']) in shards['included']]
    return {'people': len(people),
            'without_submission': [{'submission': p.submission, 'student': p.student}
                                   for p in people if id(p) not in handed_in],
            'not_in_roster': sorted(i for i in considered if i not in named)}


def _one_version(graded, assignment: dict, policy: dict | None) -> None:
    """A summary never mixes versions: every scorecard must answer this assignment (its content
    hash and possible points), this grader version and this policy."""
    for ident, doc in graded:
        found = []
        if doc['assignment'].get('sha256', assignment.get('sha256')) != assignment.get('sha256'):
            found.append('another version of the assignment files')
        if doc['score']['possible'] != assignment['possible']:
            found.append('{:g} points possible instead of {:g}'.format(doc['score']['possible'],
                                                                      assignment['possible']))
        if doc['tool']['version'] != scorecard.TOOL_VERSION:
            found.append('grader version {} instead of {}'.format(doc['tool']['version'],
                                                                  scorecard.TOOL_VERSION))
        if policy is not None and doc.get('policy', policy)['sha256'] != policy['sha256']:
            found.append('the policy {!r} instead of {!r}'.format(doc['policy']['name'],
                                                                  policy['name']))
        if found:
            raise BatchError('the scorecard of {} was graded with {}: a summary never mixes two '
                             'versions; grade it again (batch ... --force, or remove its receipt)'
                             .format(ident, ', '.join(found)))


def summarize(*, assignment: dict, options: dict, shards: dict, graded, failures, ignored=(),
              roster=None, policy: dict | None = None) -> dict:
    """The batch summary, from finished scorecards only: `graded` is [(id, scorecard)], `failures`
    the submissions left without a scorecard. Validated."""
    graded = sorted(graded, key=lambda item: item[0])
    if policy is None and graded:
        policy = graded[0][1].get('policy')   # the first scorecard's; the others must agree
    _one_version(graded, assignment, policy)
    verdicts = collections.Counter(doc['verdict'] for _, doc in graded)
    ungraded = [{'id': i, 'code': doc.get('invalid', {}).get('code', 'invalid'),
                 'reason': doc['reason'], 'scorecard': True}
                for i, doc in graded if doc['verdict'] == 'invalid']
    ungraded += [{'id': f.id, 'code': f.code, 'reason': f.reason, 'scorecard': False}
                 for f in failures]
    ungraded.sort(key=lambda u: u['id'])
    considered = {i for i, _ in graded} | {f.id for f in failures}
    summary = {
        'schema_version': SCHEMA_VERSION,
        'tool': {'name': 'dezero-grader', 'version': scorecard.TOOL_VERSION},
        'assignment': dict(assignment),
        'options': dict(options),
        'shards': {'count': shards['count'], 'included': sorted(shards['included']),
                   'missing': sorted(set(range(1, shards['count'] + 1)) - set(shards['included']))},
        'generated_at': _now(),
        'counts': {'submissions': len(considered), 'graded': len(graded),
                   'ungraded': len(ungraded),
                   'verdicts': {v: verdicts.get(v, 0) for v in VERDICTS}},
        'scores': _score_stats(graded, assignment['possible']),
        'checks': _check_rates(graded),
        'faults': _fault_counts(graded),
        'uncatalogued': _uncatalogued(graded),
        'compatibility': _drift_counts(graded),
        'ungraded': ungraded,
        'submissions': [{'id': i, 'scorecard': '{}/{}.json'.format(SCORECARDS, i),
                         'content_hash': doc['submission']['content_hash'],
                         'verdict': doc['verdict'], 'earned': doc['score']['earned'],
                         'possible': doc['score']['possible'],
                         'extension_earned': doc['score']['extension']['earned']}
                        for i, doc in graded],
        'ignored': sorted(ignored),
        'roster': _roster_report(roster, considered, shards),
    }
    if policy is not None:
        summary['policy'] = {'name': policy['name'], 'sha256': policy['sha256']}
    schema.validate('batch-summary', summary)
    return summary


def assignment_info(step: int) -> dict:
    from grader import assignments
    a = assignments.load(step)
    return {'step': a.step, 'title': a.title, 'sha256': assignments.content_hash(step),
            'possible': float(sum(c.points for c in a.checks if c.tier == 'book')),
            'extension_possible': float(sum(c.points for c in a.checks if c.tier == 'extension'))}


# -- the output folder ----------------------------------------------------------------------------

@contextlib.contextmanager
def _locked(out: Path):
    out.mkdir(parents=True, exist_ok=True)
    if fcntl is None:
        yield
        return
    with open(out / LOCK, 'a') as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            raise BatchError('another batch or merge is writing to {} right now; wait for it or '
                             'choose another --out'.format(out)) from None
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _stop_leftover_workers(work: Path) -> list:
    """Sandbox workers of a killed batch that still run (each in a session of its own, so a
    kill of the batch's process group does not reach them; learner code stuck in a loop never
    notices that nobody listens any more): found by their working folder, inside this batch's
    scratch, and killed with their process group. Returns their pids. Needs /proc."""
    try:
        names = os.listdir('/proc')
    except OSError:
        return []
    root = str(work.resolve()) + os.sep
    uid, killed = os.getuid(), []
    for name in names:
        if not name.isdigit() or int(name) == os.getpid():
            continue
        try:
            if os.stat('/proc/' + name).st_uid != uid:
                continue
            cwd = os.readlink('/proc/{}/cwd'.format(name))
        except OSError:
            continue
        if cwd.endswith(' (deleted)'):
            cwd = cwd[:-len(' (deleted)')]
        if not (cwd + os.sep).startswith(root):
            continue
        pid = int(name)
        with contextlib.suppress(OSError):
            if os.getpgid(pid) == pid:
                os.killpg(pid, signal.SIGKILL)
            else:
                os.kill(pid, signal.SIGKILL)
            killed.append(pid)
    return killed


def _clear_leftovers(out: Path) -> None:
    """What a killed run left behind: its sandbox workers, its scratch folder and half-written
    temporary files (the atomic writes' `.name.*.tmp`); complete scorecards and receipts are
    never touched."""
    if (out / WORK).is_dir():
        _stop_leftover_workers(out / WORK)
    shutil.rmtree(out / WORK, ignore_errors=True)
    for folder in (out, out / SCORECARDS, out / RECEIPTS):
        if folder.is_dir():
            for path in folder.glob('.*.tmp'):
                with contextlib.suppress(OSError):
                    path.unlink()


@contextlib.contextmanager
def _terminate_as_exit():
    """SIGTERM becomes SystemExit(143) while the pool runs, so that the batch stops its pool
    and the sandboxes under it instead of vanishing and leaving them running."""
    def stop(signum, frame):
        sys.stderr.write('dezero-grade: terminated\n')
        raise SystemExit(128 + signum)

    try:
        previous = signal.signal(signal.SIGTERM, stop)
    except ValueError:   # not the main thread: leave signals alone
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def read_scorecard(path: Path) -> dict:
    with open(path, encoding='utf-8') as f:
        doc = json.load(f)
    schema.validate('scorecard', doc)
    return doc


def run_batch(submissions, out, options: BatchOptions, *, jobs: int | None = None,
              shard: Shard | None = None, roster=None, force: bool = False,
              stream=sys.stderr) -> BatchResult:
    """Grade every submission of the folder `submissions` (of this shard) that `out` does not
    already hold a current scorecard of; write the summary."""
    from grader import run
    submissions, out = Path(submissions), Path(out)
    if not submissions.is_dir():
        raise BatchError('expected a folder of submissions (one sub-folder or .zip per learner), '
                         'found {}'.format('nothing' if not submissions.exists() else 'a file')
                         + ' at {}'.format(submissions))
    info = assignment_info(options.step)
    run.resolve_device(options.device)   # --device cuda without a GPU stops here
    jobs = jobs or default_jobs()
    shard = shard or Shard(1, 1)
    with _locked(out):
        _clear_leftovers(out)
        entries, duplicates, ignored = discover(submissions, exclude=(out,))
        entries = [e for e in entries if shard.contains(e.id)]
        duplicates = [f for f in duplicates if shard.contains(f.id)]
        if roster is not None:
            roster_mod.write_json(out / ROSTER, roster)
        elif (out / ROSTER).is_file():
            roster = roster_mod.load_json(out / ROSTER)
        tasks, resumed = [], 0
        for entry in entries:
            fp = fingerprint(entry)
            if not force and is_done(out, entry, fp, options):
                resumed += 1
            else:
                tasks.append(_Task(entry, fp, options, str(out)))
        progress = Progress(len(entries), resumed, stream,
                            label='step {} '.format(options.step))
        if tasks:
            progress.note('grading {} of {} submission(s) of step {} with {} job(s){}'.format(
                len(tasks), len(entries), options.step, jobs,
                ', {} already graded'.format(resumed) if resumed else ''))
        try:
            with _terminate_as_exit():
                failures = _grade_all(tasks, jobs, out / WORK, progress) if tasks else []
        except BaseException:   # Ctrl-C, SIGTERM (a cancelled CI job): leave nothing running
            progress.finish()
            _clear_leftovers(out)
            raise
        progress.finish()
        failed = {f.id for f in failures}
        graded = [(e.id, read_scorecard(out / SCORECARDS / (e.id + '.json')))
                  for e in entries if e.id not in failed]
        summary = summarize(assignment=info, options=options.to_json(),
                            shards={'count': shard.count, 'included': [shard.index]},
                            graded=graded, failures=duplicates + failures, ignored=ignored,
                            roster=roster, policy=options.grading_policy().record())
        schema.write_json(out / SUMMARY, summary, 'batch-summary')
        shutil.rmtree(out / WORK, ignore_errors=True)
    return BatchResult(summary, out, len(tasks) - len(failures), resumed,
                       tuple(duplicates + failures))


# -- merging shards -------------------------------------------------------------------------------

def _read_summary(folder: Path) -> dict:
    path = folder / SUMMARY
    try:
        with open(path, encoding='utf-8') as f:
            doc = json.load(f)
    except FileNotFoundError:
        raise BatchError('{} has no {}: is it the --out folder of a batch?'.format(folder, SUMMARY)) from None
    except (OSError, ValueError) as exc:
        raise BatchError('{} cannot be read: {}'.format(path, exc)) from None
    problems = schema.errors('batch-summary', doc)
    if problems:
        raise BatchError('{} is not a valid batch summary: {}'.format(path, '; '.join(problems[:3])))
    return doc


def merge(folders, out, *, stream=sys.stderr) -> BatchResult:
    """Combine the output folders of shards (or of earlier merges) into `out`: their scorecards
    copied, one summary recomputed from them."""
    folders = [Path(f) for f in folders]
    out = Path(out)
    if not folders:
        raise BatchError('merge needs at least one batch output folder')
    if out.resolve() in {f.resolve() for f in folders}:
        raise BatchError('--out {} is one of the folders being merged; choose a new folder'.format(out))
    summaries = [_read_summary(f) for f in folders]
    base = summaries[0]
    for folder, s in zip(folders[1:], summaries[1:]):
        for key in ('assignment', 'options', 'policy'):
            if s.get(key) != base.get(key):
                raise BatchError('{} and {} were graded differently ({}: {} vs {}); only outputs '
                                 'of the same batch can be merged'.format(
                                     folders[0], folder, key, base[key], s[key]))
        if s['shards']['count'] != base['shards']['count']:
            raise BatchError('{} is split in {} shards but {} in {}'.format(
                folders[0], base['shards']['count'], folder, s['shards']['count']))
    owner = {}
    for folder, s in zip(folders, summaries):
        for index in s['shards']['included']:
            if index in owner:
                raise BatchError('shard {}/{} is in both {} and {}'.format(
                    index, base['shards']['count'], owner[index], folder))
            owner[index] = folder
    graded, failures, ignored, rosters = {}, [], set(), []
    for folder, s in zip(folders, summaries):
        for row in s['submissions']:
            if row['id'] in graded:
                raise BatchError('submission {!r} is in two of the merged folders'.format(row['id']))
            graded[row['id']] = read_scorecard(folder / row['scorecard'])
        failures += [Failure(u['id'], u['code'], u['reason']) for u in s['ungraded']
                     if not u['scorecard']]
        ignored.update(s['ignored'])
        if (folder / ROSTER).is_file():
            rosters.append((folder, roster_mod.load_json(folder / ROSTER)))
    roster = rosters[0][1] if rosters else None
    for folder, other in rosters[1:]:
        if other.to_json() != roster.to_json():
            raise BatchError('{} and {} hold different rosters'.format(rosters[0][0], folder))
    policy = None
    if base.get('policy'):
        policy = next((doc['policy'] for doc in graded.values() if 'policy' in doc),
                      dict(base['policy'], document={}))
    summary = summarize(assignment=base['assignment'], options=base['options'],
                        shards={'count': base['shards']['count'], 'included': sorted(owner)},
                        graded=list(graded.items()), failures=failures, ignored=ignored,
                        roster=roster, policy=policy)
    with _locked(out):
        _clear_leftovers(out)
        for ident, doc in graded.items():
            scorecard.write(out / SCORECARDS / (ident + '.json'), doc)
        if roster is not None:
            roster_mod.write_json(out / ROSTER, roster)
        schema.write_json(out / SUMMARY, summary, 'batch-summary')
    if summary['shards']['missing']:
        stream.write('merge: shard(s) {} of {} missing: their submissions are not in the '
                     'summary\n'.format(', '.join(map(str, summary['shards']['missing'])),
                                        summary['shards']['count']))
    return BatchResult(summary, out, 0, len(graded), tuple(failures), merged=True)


# -- the terminal report --------------------------------------------------------------------------

def render(summary: dict, out, *, merged: bool = False) -> str:
    """The summary for a person: counts, scores, frequent root causes, what could not be graded;
    for a merge, the shards that are missing."""
    summary = report.printable_tree(summary)
    a, c, s = summary['assignment'], summary['counts'], summary['scores']
    shards = summary['shards']
    where = '' if shards['count'] == 1 else ' (shard{} {} of {})'.format(
        's' if len(shards['included']) > 1 else '', ','.join(map(str, shards['included'])),
        shards['count'])
    lines = ['step {} {}: {} submission(s){} → {}'.format(a['step'], a['title'], c['submissions'],
                                                        where, out)]
    lines.append('  ' + ' · '.join('{} {}'.format(v, c['verdicts'][v]) for v in VERDICTS)
                 + (' · no scorecard {}'.format(c['submissions'] - c['graded'])
                    if c['submissions'] > c['graded'] else ''))
    if s['count']:
        lines.append('  score: mean {:g}/{:g}, median {:g}, min {:g}, max {:g}; {} full mark(s)'.format(
            s['mean'], s['possible'], s['median'], s['min'], s['max'], s['full_marks']))
    hardest = sorted((r for r in summary['checks'] if r['pass_rate'] is not None and not r['regression']),
                     key=lambda r: (r['pass_rate'], r['id']))[:3]
    if hardest and hardest[0]['pass_rate'] < 1:
        lines.append('  hardest checks: ' + ', '.join('{} {:.0%}'.format(r['id'], r['pass_rate'])
                                                      for r in hardest))
    if summary['faults']:
        lines.append('  most frequent root causes (submissions): ' + ', '.join(
            '{} ({})'.format(f['id'], f['submissions']) for f in summary['faults'][:5]))
    uncatalogued = summary.get('uncatalogued') or {}
    if uncatalogued.get('submissions'):
        lines.append('  no catalogued fault matches: {} submission(s) fail for reasons of their own '
                     '({} cause(s): see their scorecards)'.format(uncatalogued['submissions'],
                                                                  uncatalogued['causes']))
    if summary.get('compatibility'):
        era = summary['options'].get('era', 'book')
        lines.append('  drifts of the environment ({}): '.format(
            'graded as in 2020, not failures' if era == 'book' else 'required to run on today\'s stack')
            + ', '.join('{} ({} submission{})'.format(d['api'], d['submissions'],
                                                   '' if d['submissions'] == 1 else 's')
                        for d in summary['compatibility'][:6]))
    if summary['ungraded']:
        lines.append('  could not be graded:')
        for u in summary['ungraded']:
            lines.append('    {}: [{}] {}'.format(u['id'], u['code'], u['reason'][:200]))
    if summary['ignored']:
        lines.append('  not submissions (ignored): ' + ', '.join(summary['ignored'][:10]))
    roster = summary['roster']
    if roster and roster['without_submission']:
        lines.append('  in the roster without a submission: ' + ', '.join(
            p['student'] or p['submission'] for p in roster['without_submission'][:20]))
    if roster and roster['not_in_roster']:
        lines.append('  submissions the roster does not name: ' + ', '.join(roster['not_in_roster'][:20]))
    if merged and shards['missing']:
        lines.append('  MISSING shard(s): ' + ', '.join(map(str, shards['missing'])))
    lines.append('  summary: {}'.format(Path(out) / SUMMARY))
    return '\n'.join(lines) + '\n'
