"""Where the reference's answers are kept, and under which key: by probe and device mode, and a
version over everything else an answer depends on -- NumPy's version, the reference package
(its code and data), every file of the grader that runs in the worker, and the trusted side's
files that build what the worker is sent. The probe's own key holds all that an assignment gives
a probe (scenario, parameters, seed, device), so an assignment edit that changes what a check
asks misses by itself, and one that changes only titles or points keeps the answers. Set
$DEZERO_GRADER_CACHE to move it; a learner's worker may not read it (`dezero_grader.grading.trust`).
The answers are asked, retried and stored by `dezero_grader.grading.reference_answers`.

The worker's files are derived (`dezero_grader.grading.codeset.closure` of the worker's entry modules): the
sandboxed package (scenarios, simulated device), the contracts, the wire format, the errors and
whatever else they import, so a module the worker comes to import joins the key without an edit
here."""
from __future__ import annotations

import hashlib
import os
from pathlib import Path

import numpy as np

from dezero_grader.grading import codeset

# What the worker runs: its main module and the handler module it imports (`dezero_grader.isolation.worker_process`).
WORKER_ROOTS = ('dezero_grader.sandboxed.worker', 'dezero_grader.sandboxed.probes.handlers')
# The trusted side of the boundary: the requests (setup's entry, device mode and era; each
# probe's encoding), the reference's entry, and the worker's process and environment are made here.
REQUEST_FILES = ('grading/worker_session.py', 'grading/reference_answers.py', 'isolation/worker_process.py',
                 'isolation/bwrap.py')


def key_files(grader_dir: Path = codeset.GRADER_DIR) -> list:
    """The grader's files the reference's answers depend on, sorted."""
    grader_dir = Path(grader_dir)
    files = set(codeset.closure(WORKER_ROOTS, grader_dir))
    files.update(grader_dir / name for name in REQUEST_FILES)
    return sorted(files)


def version_of(grader_dir: Path, reference_dir: Path) -> str:
    """The version of the answers made by the grader at `grader_dir` (the `dezero_grader` package's
    folder) from the reference package at `reference_dir` (the folder holding `dezero`)."""
    return version_over(key_files(grader_dir), grader_dir, reference_dir)


def version_over(files, grader_dir: Path, reference_dir: Path) -> str:
    """`version_of` with the grader's files given (`key_files`)."""
    grader_dir, reference_dir = Path(grader_dir), Path(reference_dir)
    return '{}-{}-np{}'.format(
        codeset.digest(codeset.files_under(reference_dir / 'dezero'), reference_dir)[:16],
        codeset.digest(files, grader_dir)[:16], np.__version__)


_VERSION = None


def reference_version() -> str:
    global _VERSION
    if _VERSION is None:
        from dezero_grader import reference
        _VERSION = version_of(codeset.GRADER_DIR, reference.ROOT)
    return _VERSION


def cache_dir() -> Path:
    base = os.environ.get('DEZERO_GRADER_CACHE')
    if base:
        return Path(base)
    return Path(os.environ.get('XDG_CACHE_HOME', Path.home() / '.cache')) / 'dezero-grader'


def cache_path(probe, device_mode: str):
    """The file of the reference's answer to `probe` in `device_mode` (the same probe has another
    answer without a device, where its device phases skip)."""
    key = hashlib.sha256('{}:{}:{}'.format(reference_version(), device_mode, probe.key).encode()
                         ).hexdigest()
    return cache_dir() / 'reference' / key[:2] / (key + '.json')
