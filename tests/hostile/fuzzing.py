"""What every fuzz target of `tests/hostile/` holds each example to: a folder of its own with a
private temporary folder, and afterwards nothing left in that temporary folder, nothing written
in the example's folder but what it may write, and no process left that the example started.
The number of examples a target runs is a share of the Hypothesis profile's `max_examples`
(profiles in `tests/conftest.py`)."""
from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path

from hypothesis import settings


def examples(share: float) -> int:
    return max(1, int(settings.default.max_examples * share))


def children() -> dict:
    """Processes whose parent is this one (a leftover git, a worker), with their command lines."""
    mine, out = str(os.getpid()), {}
    for pid in os.listdir('/proc'):
        if not pid.isdigit():
            continue
        try:
            with open('/proc/{}/stat'.format(pid)) as f:
                fields = f.read().rsplit(')', 1)[1].split()
        except OSError:
            continue
        if fields[1] == mine:
            with contextlib.suppress(OSError):
                with open('/proc/{}/cmdline'.format(pid), 'rb') as f:
                    out[pid] = f.read().replace(b'\0', b' ').decode('utf-8', 'replace').strip()
    return out


@contextlib.contextmanager
def arena(prefix: str, allowed):
    """(base, root) for one example: `root` is where it works, `base` beside it holds what it
    must not touch, and `tempfile` hands out folders of a private one. Afterwards: that private
    folder is empty, `root` holds only names in `allowed`, and no process the example started is
    left (a test run earlier in this pytest worker may have left children of its own: they were
    there before and are not this example's)."""
    before = set(children())
    with tempfile.TemporaryDirectory(prefix=prefix) as base:
        base = Path(base)
        root, tmp = base / 'root', base / 'tmp'
        root.mkdir()
        tmp.mkdir()
        saved = tempfile.tempdir
        tempfile.tempdir = str(tmp)
        try:
            yield base, root
        finally:
            tempfile.tempdir = saved
        assert list(tmp.iterdir()) == [], 'left in the temporary folder: {}'.format(
            sorted(p.name for p in tmp.iterdir()))
        assert {p.name for p in root.iterdir()} <= set(allowed), sorted(
            p.name for p in root.iterdir())
        left = {pid: cmd for pid, cmd in children().items() if pid not in before}
        assert left == {}, 'processes left by this example: {}'.format(left)
