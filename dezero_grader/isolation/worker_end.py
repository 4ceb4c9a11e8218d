"""How a worker ended, told: the stack dump asked of it when it ran out of time (``dump_stacks``),
why it ended by itself (``why_it_ended``: its exit status, the signal, what it printed), and the
``WorkerFailure`` in words a learner can read, naming the limit and where the code was
(``failure``, ``where_from_dump``). Functions of what
``dezero_grader.isolation.worker_process.Worker`` hands them (its limits, its process tree, the
end of its output); the worker stops itself and raises what they give."""

from __future__ import annotations

import os
import re
import signal
import time
from pathlib import Path

from dezero_grader.errors import WorkerFailure

EXIT_CHANNEL_LOST = 86   # keep in step with dezero_grader.sandboxed.worker
_GRADER_ROOT = Path(__file__).resolve().parents[2]
_DUMP_WAIT_S = 0.2
_MEMORY_TEXT = re.compile(r"MemoryError|Cannot allocate memory|out of memory|std::bad_alloc|ENOMEM", re.IGNORECASE)
_FRAME_LINE = re.compile(r'^\s*File "(?P<file>[^"]+)", line (?P<line>\d+) in (?P<func>\S+)', re.MULTILINE)


def dump_stacks(pid: int, drain) -> None:
    """Ask the worker's Python process ``pid`` for a dump of its stacks (SIGUSR1: faulthandler) and
    wait, briefly, until ``drain`` (its output) holds it."""
    try:
        os.kill(pid, signal.SIGUSR1)
    except (ProcessLookupError, AttributeError):
        return
    end, before = time.monotonic() + _DUMP_WAIT_S, drain.total
    while time.monotonic() < end:
        time.sleep(0.02)
        if drain.total > before and "Current thread" in drain.tail()[-4096:]:
            time.sleep(0.02)
            return


def why_it_ended(tree, limits, tail: str) -> tuple[str, str, dict]:
    """Why a worker that ended by itself ended, from its process ``tree`` (reaped, or its status
    unread) and the end of what it printed: (reason, detail, the keywords ``failure`` takes)."""
    if tree.status is None:
        return "crashed", "its exit status could not be read", {}
    code = tree.exit_code()
    if code < 0:
        sig = -code
        if sig == signal.SIGXCPU:
            return "cpu-time", "", {}
        if sig == signal.SIGXFSZ:
            return "output-limit", "", {}
        if sig == signal.SIGKILL:
            if limits.cpu_s is not None and tree.cpu_reaped >= limits.cpu_s:
                return "cpu-time", "", {}
            return "memory", "it was killed with SIGKILL, most likely by the system for using too much memory", {}
        if _MEMORY_TEXT.search(tail):
            return "memory", "", {}
        return "crashed", "", {"signal_number": sig}
    if code == EXIT_CHANNEL_LOST:
        return "protocol", "it lost its answer channel (does the code close file descriptors it did not open?)", {}
    if code != 0 and _MEMORY_TEXT.search(tail[-2000:]):
        return "memory", "", {}
    return "exited", "", {"exit_code": code}


def failure(reason: str, detail: str = "", scope: str = "call", *, limits, cwd: Path, tree, tail: str,
            call_limit: float, used: float | None = None, exit_code: int | None = None,
            signal_number: int | None = None, clock: str | None = None, busy: bool = False) -> WorkerFailure:
    """The ``WorkerFailure`` of ``reason`` in words a learner can read: the limit it broke
    (``limits``, the call's ``call_limit``; ``used``: the CPU seconds of the ``scope`` that ran
    out of time), where the code was (from a stack dump in ``tail``, its files under ``cwd``), and
    the exit status or signal that ended the worker's process ``tree``."""
    lim = limits
    if reason == "timeout":
        message = _timeout_words(lim, scope, clock, call_limit, used, busy)
    elif reason == "cpu-time":
        message = f"your code used more than the {lim.cpu_s} s of CPU time allowed"
    elif reason == "memory":
        message = f"your code used more memory than the {lim.memory_mb} MB limit"
    elif reason == "output-limit":
        message = f"your code wrote a file larger than the {lim.fsize_mb} MB limit"
    elif reason == "exited":
        message = (f"the process running your code ended with exit status {exit_code} in the middle of a "
                   "request; does the code call os._exit() or end the process some other way?")
    elif reason == "crashed" and signal_number is not None:
        message = (f"the process running your code was killed by {signal_name(signal_number)} (a crash in "
                   "native code, very deep recursion, or running out of memory)")
    elif reason == "crashed":
        message = "the process running your code crashed"
    else:
        message = "the process running your code broke the grader's protocol"
    if detail:
        message += f": {detail}"
    if reason in ("timeout", "cpu-time"):
        where = where_from_dump(tail, cwd)
        if where:
            message += f" (it was running {where})"
    code = None
    if tree.status is not None and tree.exit_code() >= 0:
        code = tree.exit_code()
    sig = signal_number
    if sig is None and tree.status is not None and tree.exit_code() < 0:
        sig = -tree.exit_code()
    return WorkerFailure(reason, message, exit_code=exit_code if exit_code is not None else code,
                         signal=sig, output_tail=tail, clock=clock, scope=scope, cpu_s=used, busy=busy)


def where_from_dump(tail: str, cwd: Path) -> str | None:
    """Where the code was in a faulthandler dump (most recent call first): the innermost frame
    of the submission's own files (under ``cwd``: the learner's loop, not the library it calls),
    else the innermost one outside the grader."""
    block = tail[tail.rfind("Current thread"):] if "Current thread" in tail else tail
    grader_dir = str(_GRADER_ROOT / "dezero_grader") + os.sep
    top = str(cwd) + os.sep
    outside = None
    for m in _FRAME_LINE.finditer(block):
        path = m["file"]
        if path.startswith(grader_dir) or path.startswith("<"):
            continue
        if path.startswith(top):
            return f"{path[len(top):]}:{m['line']} in {m['func']}"
        outside = outside or f"{path}:{m['line']} in {m['func']}"
    return outside


def _timeout_words(lim, scope: str, clock: str | None, call_limit: float, used: float | None,
                   busy: bool) -> str:
    """What ran out: the CPU time of one request or of the whole run, or the wall clock that
    catches code waiting without end (with how little CPU time it used, and whether the
    machine kept it waiting for a CPU)."""
    if clock == "cpu":
        if scope == "total":
            return f"your code used up the {lim.total_s:g} s of CPU time allowed for the whole grading run"
        return f"your code used more than the {call_limit:g} s of CPU time allowed for one request"
    if clock is None:   # CPU time not measurable here: the wall clock is the limit
        if scope == "total":
            return f"your code used up the {lim.total_s:g} s limit for the whole grading run"
        return f"your code ran longer than the {call_limit:g} s limit for one request"
    spent = "" if used is None else f", using only {used:.1f} s of CPU time"
    if scope == "total":
        what = f"the {lim.total_wall_s:g} s of wall-clock time allowed for the whole grading run"
    else:
        what = f"{lim.call_wall_s(call_limit):g} s of wall-clock time in one request (its CPU-time limit is {call_limit:g} s)"
    if busy:
        return (f"your code did not finish within {what}{spent}: the machine was busy and kept it "
                "waiting for a CPU")
    return f"your code waited without end: it did not finish within {what}{spent}"


def signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"
