"""Where the reference's answers are kept, and under which key: by probe and device mode, the reference's sources,
the sandboxed code that produced them and NumPy's version (they depend on nothing else). Set
$DEZERO_GRADER_CACHE to move it; a learner's worker may not read it (`grader.observe`)."""
from __future__ import annotations

import hashlib
import os
from pathlib import Path

import numpy as np

_GRADER_DIR = Path(__file__).resolve().parent


def _tree_hash(folders):
    h = hashlib.sha256()
    for folder in folders:
        for path in sorted(Path(folder).rglob('*.py')):
            h.update(str(path.relative_to(folder)).encode())
            h.update(path.read_bytes())
    return h.hexdigest()[:16]


_VERSION = None


def reference_version() -> str:
    global _VERSION
    if _VERSION is None:
        import reference
        _VERSION = '{}-{}-np{}'.format(
            _tree_hash([reference.ROOT / 'dezero']),
            _tree_hash([_GRADER_DIR / 'sandboxed']), np.__version__)
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
