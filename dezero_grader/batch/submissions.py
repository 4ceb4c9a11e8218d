"""The folder of submissions a batch grades, and what it remembers of each: discovery (one
`HandIn` per sub-folder or .zip, named by its id), the fingerprint of a submission as it is now,
and the receipt that lets a restarted batch skip what is graded and current.

A receipt (receipts/<id>.json) is written after the scorecard: the source fingerprint and
options it answers, the assignment's content hash, the grader's version and code hash, the
grading policy's hash, the hand-in and due time it was scored with (where known), and the
scorecard's sha256. A submission is skipped only when all of
them match it as it is now (content hash of a folder, sha256 of a zip).
"""
from __future__ import annotations

import collections
import datetime
import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path

from dezero_grader.batch.folder import RECEIPTS, SCORECARDS
from dezero_grader.batch.records import SCHEMA_VERSION, BatchOptions, Failure
from dezero_grader.errors import SubmissionError
from dezero_grader.intake import load
from dezero_grader.present import terminal
from dezero_grader.records import schema

_SKIPPED_NAMES = frozenset({'__MACOSX', '__pycache__'})


@dataclass(frozen=True)
class HandIn:
    """One submission as the folder holds it: a sub-folder or a .zip, named by its id."""
    id: str
    path: Path
    kind: str          # 'folder' | 'zip'


def shown(name: str) -> str:
    """A file name as text for JSON and terminals: bytes that are not UTF-8 written as escapes."""
    return terminal.printable(name.encode('utf-8', 'surrogateescape').decode('utf-8', 'backslashreplace'),
                            lines=False)


def discover(folder: Path, *, exclude=()):
    """(hand-ins sorted by id, duplicate-id failures, names of ignored entries)."""
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
            found.append(HandIn(load.safe_id(e.name), path, 'folder'))
        elif e.is_file(follow_symlinks=False) and e.name.lower().endswith('.zip') and len(e.name) > 4:
            found.append(HandIn(load.safe_id(e.name[:-4]), path, 'zip'))
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
            names = ' and '.join(shown(g.path.name) + ('/' if g.kind == 'folder' else '') for g in group)
            duplicates.append(Failure(ident, 'duplicate-id', 'two submissions share the id {!r} '
                                      '({}); keep one of them'.format(ident, names)))
    return entries, duplicates, ignored


def fingerprint(entry: HandIn) -> str:
    """Identity of a submission as it is now: what a receipt must match to skip regrading (the
    receipt records the same of what was graded: `load.Submission.fingerprint`)."""
    try:
        return load.fingerprint_of(entry.path)
    except (OSError, SubmissionError):
        return 'unreadable'   # grading it says why


def sha256_file(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def timing_json(timing) -> dict | None:
    """What a receipt records of when a submission was handed in (and due): a new time grades it
    again, since its late penalty may change."""
    if timing is None:
        return None

    def moment(t):   # the same moment, whatever offset a source wrote it with
        return t.astimezone(datetime.timezone.utc).isoformat() if t else None
    return {'submitted_at': moment(timing.submitted_at), 'due': moment(timing.due)}


def is_done(out: Path, entry: HandIn, fp: str, options: BatchOptions, timing=None) -> bool:
    """Whether `out` holds a scorecard of `entry`, as it is now, graded with `options` (and
    handed in at `timing`)."""
    try:
        with open(out / RECEIPTS / (entry.id + '.json'), encoding='utf-8') as f:
            receipt = json.load(f)
        card = out / SCORECARDS / (entry.id + '.json')
        if schema.errors('batch-receipt', receipt):
            return False
        return (receipt['id'] == entry.id and receipt['fingerprint'] == fp
                and receipt['step'] == options.step and receipt['options'] == options.to_json()
                and all(receipt[k] == v for k, v in options.versions().items())
                and receipt.get('timing') == timing_json(timing)
                and receipt['scorecard_sha256'] == sha256_file(card))
    except (OSError, ValueError):
        return False


def write_receipt(out: Path, entry: HandIn, fp: str, options: BatchOptions, timing=None) -> None:
    """The receipt of the scorecard just written for `entry` (after it: a receipt never
    vouches for a scorecard that is not complete)."""
    card = out / SCORECARDS / (entry.id + '.json')
    receipt = {'schema_version': SCHEMA_VERSION, 'id': entry.id, 'source': shown(entry.path.name),
               'fingerprint': fp, 'step': options.step, 'options': options.to_json(),
               **options.versions(), 'scorecard_sha256': sha256_file(card)}
    if timing is not None:
        receipt['timing'] = timing_json(timing)
    schema.write_json(out / RECEIPTS / (entry.id + '.json'), receipt, 'batch-receipt')
