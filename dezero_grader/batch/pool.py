"""The process pool that batch and history grade in, and what keeps it honest: a pool process
that dies takes only its in-flight gradings with it (they are graded again one at a time, and
one that kills its process twice on its own is reported as `grader-crashed`); a grading that
shows no progress for longer than its watchdog allows is stopped as `grader-stuck`; so the pool
always ends. Progress is what the sandbox reports (`dezero_grader.isolation.worker_process.on_progress`: a worker of the
grading answered, or was stopped), written by the pool process where the batch reads it (the
time of a file under the pool's scratch folder), so a healthy grading that a loaded machine
makes slow is never taken for a stuck one: the wall clock between two answers is bounded by the
sandbox's own limits, however slow the machine.

A process pool rather than one `dezero-grade check --json` subprocess per submission: a fresh
interpreter pays for its imports, the assignment, the checks and the schema validators on every
submission, a pool once per process (`bench/bench_batch.py --subprocess`: the pool grades 1.3 to
1.5 times as many step-52 submissions per minute on 2 cores). Each grading already runs the
learner's code in sandboxed worker processes of its own, so the pool adds throughput, not
isolation. Pool processes are started with one BLAS/OpenMP thread each (`THREAD_ENV`; the
sandbox does the same for its workers): `--jobs` is the parallelism, and oversubscribed BLAS
threads only slow a 2-core runner down. On Linux they die with the batch.

A task is any picklable object with an `id` (the label of its progress line); `grade_one(task)`
runs in a pool process and returns {'id', 'ok': True, 'verdict', 'earned', 'possible'} or
{'id', 'ok': False, 'code', 'reason', 'traceback'}.
"""
from __future__ import annotations

import collections
import concurrent.futures
import contextlib
import multiprocessing
import os
import signal
import sys
import tempfile
import textwrap
import time
import traceback
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path

from dezero_grader.batch.records import Failure
from dezero_grader.present import terminal

THREAD_ENV = {'OMP_NUM_THREADS': '1', 'OPENBLAS_NUM_THREADS': '1', 'MKL_NUM_THREADS': '1',
              'VECLIB_MAXIMUM_THREADS': '1', 'NUMEXPR_NUM_THREADS': '1'}
MAX_ATTEMPTS = 2
_WATCH_EVERY_S = 2.0
_PROGRESS_FILE = '.progress'   # in a pool process's scratch folder: the task it grades, touched
_BEAT_EVERY_S = 1.0
_NOT_STARTED_S = 600.0


def silence_limit_s(limits) -> float:
    """The longest a healthy grading goes without progress: the wall clock of one request of a
    worker (its start, one probe: each answers or is stopped within it), plus the judging and
    writing after the last one, with room to spare on a loaded machine."""
    return limits.call_wall_s() + 300.0


def _graded_with_progress(grade_one, task):
    """In a pool process: `grade_one(task)`, with every sign of progress of its workers marked
    on this process's progress file (at most once a second), which names the task."""
    from dezero_grader.isolation import worker_process
    path = Path(tempfile.gettempdir()) / _PROGRESS_FILE
    try:
        path.write_text(task.id, encoding='utf-8')
    except OSError:
        pass
    last = [time.monotonic()]

    def mark():
        now = time.monotonic()
        if now - last[0] >= _BEAT_EVERY_S:
            last[0] = now
            os.utime(path)

    worker_process.on_progress(mark)
    try:
        return grade_one(task)
    finally:
        worker_process.on_progress(None)


def _last_progress(work: Path) -> dict:
    """{task id: when its pool process last marked progress (seconds since the epoch)}."""
    out = {}
    for path in work.glob('*/' + _PROGRESS_FILE):
        try:
            ident = path.read_text(encoding='utf-8')
            out[ident] = max(out.get(ident, 0.0), path.stat().st_mtime)
        except (OSError, UnicodeDecodeError):
            continue
    return out


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


def graded(task_id: str, doc: dict, **extra) -> dict:
    """What `grade_one` returns for a grading that made the scorecard `doc`."""
    return {'id': task_id, 'ok': True, 'verdict': doc['verdict'], 'earned': doc['score']['earned'],
            'possible': doc['score']['possible'], **extra}


def grader_failed(task_id: str, reason: str, **extra) -> dict:
    """What `grade_one` returns, from inside its `except`, when a bug of the grader stopped the
    grading: `reason` for the summary, the traceback for the instructor."""
    return {'id': task_id, 'ok': False, 'code': 'grader-error', 'reason': reason,
            'traceback': traceback.format_exc(), **extra}


def traceback_of(error: BaseException) -> str:
    """The traceback of an exception already handled (behind a `grader-error` scorecard)."""
    return ''.join(traceback.format_exception(type(error), error, error.__traceback__))


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


def stop_pool(pool, *, wait: bool) -> None:
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


def grade_all(tasks, jobs, work: Path, progress, *, grade_one, watchdog) -> list:
    """Grade `tasks` with `grade_one` in a pool of `jobs` processes; returns the failures (no
    scorecard). `progress` (a `dezero_grader.present.progress.Progress`) hears of each finished task.

    When a pool process dies, every submission in flight with it is a suspect: suspects are then
    graded one at a time, so that a submission that kills its process again is caught alone
    (and reported as `grader-crashed` after MAX_ATTEMPTS deaths) while the others go on. A
    grading still running after `watchdog(task)` seconds is stopped with its pool process and
    reported as `grader-stuck`; the submissions in flight beside it are graded again, so the
    batch always ends and writes its summary. `watchdog(task)`: how many seconds without
    progress (no answer from the grading's workers) make a grading stuck."""
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
        if not result['ok'] or result.get('traceback'):
            # learner text may be in both (an exception's message): the reason is one line, the
            # traceback's lines are indented, so neither can forge a progress line
            progress.note('{}: {}\n{}'.format(
                terminal.printable(result['id'], lines=False),
                terminal.printable(str(result.get('reason') or 'the grader failed'), lines=False),
                textwrap.indent(terminal.printable(str(result.get('traceback') or '')), '    ')))
        if result['ok']:
            progress.update(result['id'], '{} {:g}/{:g}'.format(
                result['verdict'], result['earned'], result['possible']))
            return
        failures.append(Failure(result['id'], result['code'], result['reason']))
        progress.update(result['id'], result['code'])

    def crashed(task, alone):
        ident = task.id
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
            if any(t.id in suspects for t in inflight.values()):
                return                      # a suspect runs alone
            if pending[0].id in suspects and inflight:
                return
            task = pending.popleft()
            future = pool.submit(_graded_with_progress, grade_one, task)
            inflight[future] = task
            started[future] = time.time()

    def stuck_ones():
        # silence counts from the task's last sign of progress, the first being its start in a
        # pool process; one that has not started yet (a pool process still starting on a busy
        # machine) gets the longer of its watchdog and a default grading's
        now, signs, out = time.time(), _last_progress(work), []
        for future, task in inflight.items():
            sign = signs.get(task.id, 0.0)
            if sign >= started[future] - 1.0:   # (a file's time may be a little coarse)
                silent, limit = now - max(sign, started[future]), watchdog(task)
            else:   # not started yet; a sign of an earlier try in a pool gone does not count
                silent, limit = now - started[future], max(watchdog(task), _NOT_STARTED_S)
            if silent > limit:
                out.append(future)
        return out

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
                    stop_pool(pool, wait=False)
                    pool = open_pool(jobs, work)
                stuck = stuck_ones()
                if stuck:
                    for future in stuck:
                        task = inflight.pop(future)
                        failures.append(Failure(task.id, 'grader-stuck', 'grading this '
                                                'submission showed no progress for more than {:g} s '
                                                '(no answer from the processes running it), far '
                                                'beyond its time limits, and was stopped: a fault '
                                                'of the grader or of this machine'.format(
                                                    watchdog(task))))
                        progress.update(task.id, 'grader-stuck')
                    stop_pool(pool, wait=False)
                    for future, task in list(inflight.items()):   # graded again, not suspects
                        pending.appendleft(task)
                    inflight.clear()
                    pool = open_pool(jobs, work)
        finished_cleanly = True
    finally:
        stop_pool(pool, wait=finished_cleanly)
    return failures


@contextlib.contextmanager
def terminate_as_exit():
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
