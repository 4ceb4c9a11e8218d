"""Calling learner code and keeping what came of it as plain data: one way, for the whole worker.

Learner code is called in several places inside the worker -- a request's handler
(``dezero_grader.sandboxed.worker``), a step file's demo (``probes.stepfile``), a scenario's phase or
case (``probes.scenarios``) -- and each reports an exception it raised. They all go through
``Call.of`` (the call's value, or the exception it raised, and how long it took) and ``describe``
(an exception as the wire carries it: ``type``, ``message``, ``where``, ``traceback``, and
``errno`` for an ``OSError``). The trusted side turns that record into a
``dezero_grader.records.dataflow.LearnerError``; nothing here decides anything.

Standard library only: the worker imports this before any learner code runs.
"""
import collections
import os
import time

MAX_TRACEBACK = 20   # frames kept, innermost last
MAX_TEXT = 4000      # characters of a message

_THIS_FILE = os.path.abspath(__file__)
_GRADER_DIR = os.path.dirname(os.path.dirname(_THIS_FILE))   # dezero_grader/: the grader's own frames


class Call:
    """The outcome of calling learner code once: its ``value``, or the ``exception`` it raised;
    ``duration_s`` either way."""

    __slots__ = ('value', 'exception', 'duration_s')

    def __init__(self, value, exception, duration_s):
        self.value, self.exception, self.duration_s = value, exception, duration_s

    @classmethod
    def of(cls, fn, *args, catch=BaseException, **kwargs):
        """Call ``fn(*args, **kwargs)``; an exception of ``catch`` (by default any, ``SystemExit``
        and ``KeyboardInterrupt`` too: a learner's ``sys.exit`` is an answer) is kept, not raised."""
        started = time.perf_counter()
        try:
            value = fn(*args, **kwargs)
        except catch as exc:
            return cls(None, exc, time.perf_counter() - started)
        return cls(value, None, time.perf_counter() - started)

    @property
    def ok(self):
        return self.exception is None


def text(value, limit=MAX_TEXT):
    """``str(value)``, even when a learner's ``__str__`` raises, cut at ``limit`` characters."""
    try:
        out = str(value)
    except BaseException:  # a learner's __str__ may itself raise
        out = '<unprintable {}>'.format(type(value).__name__)
    return out if len(out) <= limit else out[:limit] + ' ...'


def _last_frames(tb, keep):
    """The innermost ``keep`` frames of a traceback as (file, line, function). Only these are
    looked at: formatting all of a traceback a million frames deep (a recursion under a raised
    recursion limit) would take longer than the time limit, and the learner would be blamed for
    the grader's slowness."""
    last = collections.deque(maxlen=keep)
    while tb is not None:
        last.append(tb)
        tb = tb.tb_next
    return [(t.tb_frame.f_code.co_filename, t.tb_lineno, t.tb_frame.f_code.co_name) for t in last]


def _ours(filename):
    return filename.startswith(_GRADER_DIR + os.sep) or filename.startswith('<frozen')


def _relative(filename, top):
    return filename[len(top):] if filename.startswith(top) else filename


def learner_where(tb, top=None):
    """The innermost frame of a traceback in the submission's own files (under ``top``, by default
    the worker's folder: the submission's top), as ``file:line in function``; '' when none is."""
    top = os.path.realpath(top or os.getcwd()) + os.sep
    where = ''
    while tb is not None:
        name = tb.tb_frame.f_code.co_filename
        if name.startswith(top) and not _ours(name):
            where = '{}:{} in {}'.format(name[len(top):], tb.tb_lineno, tb.tb_frame.f_code.co_name)
        tb = tb.tb_next
    return where


def describe(exc, top=None, skip=()):
    """``exc`` as the wire carries a learner's exception: ``type``; ``message`` (paths under ``top``
    as the learner knows them); ``traceback``, the innermost ``MAX_TRACEBACK`` frames as
    ``file:line in function`` relative to ``top``, leaving out the files in ``skip`` (the caller's
    own dispatch frames); ``where``, the innermost of them in the submission's own files, else the
    innermost that is not the grader's (a library the code called), else None; and ``errno``
    for an ``OSError``."""
    top = os.path.realpath(top or os.getcwd()) + os.sep
    skip = {_THIS_FILE, *skip}
    frames = [f for f in _last_frames(exc.__traceback__, MAX_TRACEBACK + 8) if f[0] not in skip]
    lines = ['{}:{} in {}'.format(_relative(name, top), line, func) for name, line, func in frames]
    inner = list(zip(reversed(frames), reversed(lines)))
    where = next((line for f, line in inner if f[0].startswith(top) and not _ours(f[0])), None) or \
        next((line for f, line in inner if not _ours(f[0])), None)
    if isinstance(exc, SyntaxError) and exc.filename:
        where = '{}:{} in <module>'.format(_relative(exc.filename, top), exc.lineno)
    if isinstance(exc, SystemExit):
        message = 'the code called sys.exit({!r})'.format(exc.code)
    else:
        message = text(exc).replace(top, '')   # paths as the learner knows them
    error = {'type': type(exc).__name__, 'message': message, 'traceback': lines[-MAX_TRACEBACK:],
             'where': where}
    if isinstance(exc, OSError) and isinstance(exc.errno, int):
        error['errno'] = exc.errno
    return error
