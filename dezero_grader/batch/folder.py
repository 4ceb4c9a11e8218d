"""The output folder of a batch (or a merge, or a history): its layout, the lock that keeps a
second writer out, and clearing what a killed run left behind.

    scorecards/<id>.json   one per graded submission, written atomically (complete or absent)
    receipts/<id>.json     written after the scorecard (see `dezero_grader.batch.submissions`)
    summary.json           the class summary (schemas/batch-summary.schema.json)
    roster.json            the roster, when one was given
    .work/                 scratch copies of a running batch (cleared at start and end)
    .lock                  held (flock) while a batch or merge writes here
"""
from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
from pathlib import Path

from dezero_grader.batch.records import BatchError
from dezero_grader.records import schema

try:
    import fcntl
except ImportError:   # Windows: no advisory locks; the sandbox needs POSIX anyway
    fcntl = None

SCORECARDS, RECEIPTS, SUMMARY, ROSTER, WORK, LOCK = (
    'scorecards', 'receipts', 'summary.json', 'roster.json', '.work', '.lock')


@contextlib.contextmanager
def locked(out: Path):
    """Hold the folder's lock (made with the folder) while the block runs; another holder
    is a BatchError."""
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


def stop_leftover_workers(work: Path) -> list:
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


def clear_leftovers(out: Path) -> None:
    """What a killed run left behind: its sandbox workers, its scratch folder and half-written
    temporary files (the atomic writes' `.name.*.tmp`); complete scorecards and receipts are
    never touched."""
    if (out / WORK).is_dir():
        stop_leftover_workers(out / WORK)
    shutil.rmtree(out / WORK, ignore_errors=True)
    for folder in (out, out / SCORECARDS, out / RECEIPTS):
        if folder.is_dir():
            for path in folder.glob('.*.tmp'):
                with contextlib.suppress(OSError):
                    path.unlink()


def read_scorecard(path: Path) -> dict:
    """A scorecard file, validated against its schema."""
    with open(path, encoding='utf-8') as f:
        doc = json.load(f)
    schema.validate('scorecard', doc)
    return doc
