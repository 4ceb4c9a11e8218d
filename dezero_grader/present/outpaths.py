"""The places a user asks the grader to write to, checked before any grading starts.

A scorecard, an HTML report, a folder of repro snippets or graphs, a batch folder, an export:
each is checked here first, so that a typo in a path costs a message, not a grading (the write
itself stays atomic where it happens). A missing folder is made; what cannot be made or written
is an ``OutputError`` naming the option and the path.
"""
from __future__ import annotations

import os
import tempfile
from pathlib import Path


class OutputError(Exception):
    """A place the user asked us to write to cannot be written (a folder where a file is meant,
    a folder that cannot be made, no permission)."""


def writable_file(option: str, path) -> Path:
    """Check, before any grading, that a file can be written at `path`: `path` is not a folder,
    and its folder exists (made, with its parents, if it is not there yet) and takes new files.
    The write itself stays atomic."""
    path = Path(path)
    if path.is_dir():
        raise OutputError('{} {}: that is a folder; name a file, e.g. {}'.format(
            option, path, path / 'scorecard.json' if option == '--json' else path / 'out'))
    writable_folder(option, path.parent, shown=path)
    return path


def writable_folder(option: str, path, shown=None) -> Path:
    """Check that `path` is a folder we may create files in (made, with its parents, if it is
    not there yet). `shown`: the path the user gave, when `path` is its folder."""
    path = Path(path)
    said = '{} {}: '.format(option, shown or path)
    if path.exists() and not path.is_dir():
        raise OutputError(said + ('that is a file, not a folder' if shown is None else
                                  '{} is a file, not a folder'.format(path)))
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise OutputError(said + 'cannot make the folder {} ({})'.format(
            path, e.strerror or e)) from None
    _check_can_create(option, shown or path, path)
    return path


def _check_can_create(option, path, folder):
    try:
        fd, probe = tempfile.mkstemp(prefix='.dezero-grade-', dir=folder)
    except OSError as e:
        raise OutputError('{} {}: cannot write in {} ({})'.format(
            option, path, folder, e.strerror or e)) from None
    os.close(fd)
    os.unlink(probe)
