"""How a worker's failure is told: stopping it (with a stack dump first, when it ran out of time),
reading why it ended by itself (its exit status, the signal, what it printed), and the
``WorkerFailure`` in words a learner can read, naming the limit and where the code was
(``FailureReport``, a part of ``dezero_grader.isolation.worker_process.Worker``)."""

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


class FailureReport:
    """Stopping a worker and raising its ``WorkerFailure``. Mixed into ``dezero_grader.isolation.worker_process.Worker``,
    whose state it reads (``limits``, ``cwd``, ``failure``, ``_status``, ``_call_limit``,
    ``_call_cpu0``, ``_drain``), whose clocks it asks (``cpu_time``, ``_starved``) and whose
    process tree it kills."""

    def _stop(self, reason: str, detail: str = "", scope: str = "call", clock: str | None = None) -> None:
        """Kill the worker's tree and raise the failure ``reason`` (a timeout: of which ``scope``,
        on which ``clock``)."""
        busy = False
        if reason == "timeout":
            busy = clock == "wall" and self._starved()
            if self._alive():
                self._dump_stacks()
        self._kill_tree()
        self._raise(reason, detail, scope, clock=clock, busy=busy)

    def _died(self) -> None:
        """The worker ended by itself: decide why from its status and output, then raise."""
        self._wait_exit(time.monotonic() + 1.0)
        self._kill_tree()  # whatever it started goes too
        tail = self._finish_output()
        status = self._status
        if status is None:
            self._raise("crashed", "its exit status could not be read")
        code = self._exit_code()
        if code < 0:
            sig = -code
            if sig == signal.SIGXCPU:
                self._raise("cpu-time")
            if sig == signal.SIGXFSZ:
                self._raise("output-limit")
            if sig == signal.SIGKILL:
                if self.limits.cpu_s is not None and self._cpu_used >= self.limits.cpu_s:
                    self._raise("cpu-time")
                self._raise("memory", "it was killed with SIGKILL, most likely by the system for using too much memory")
            if _MEMORY_TEXT.search(tail):
                self._raise("memory")
            self._raise("crashed", signal_number=sig)
        if code == EXIT_CHANNEL_LOST:
            self._raise("protocol", "it lost its answer channel "
                                    "(does the code close file descriptors it did not open?)")
        if code != 0 and _MEMORY_TEXT.search(tail[-2000:]):
            self._raise("memory")
        self._raise("exited", exit_code=code)

    def _raise(self, reason: str, detail: str = "", scope: str = "call", *, exit_code: int | None = None,
               signal_number: int | None = None, clock: str | None = None, busy: bool = False) -> None:
        tail = self._finish_output()
        lim = self.limits
        used = self.cpu_time() if reason == "timeout" and not self._closed else None
        if used is not None and scope == "call":
            used = max(0.0, used - self._call_cpu0)
        if reason == "timeout":
            message = _timeout_words(lim, scope, clock, self._call_limit, used, busy)
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
            where = self._where_from_dump(tail)
            if where:
                message += f" (it was running {where})"
        code = None
        if self._status is not None and self._exit_code() >= 0:
            code = self._exit_code()
        sig = signal_number
        if sig is None and self._status is not None and self._exit_code() < 0:
            sig = -self._exit_code()
        self.failure = WorkerFailure(reason, message, exit_code=exit_code if exit_code is not None else code,
                                     signal=sig, output_tail=tail, clock=clock, scope=scope, cpu_s=used,
                                     busy=busy)
        self._release()
        self._made_progress()   # a stopped worker is news too
        raise self.failure

    def _where_from_dump(self, tail: str) -> str | None:
        """Where the code was in a faulthandler dump (most recent call first): the innermost frame
        of the submission's own files (the learner's loop, not the library it calls), else the
        innermost one outside the grader."""
        block = tail[tail.rfind("Current thread"):] if "Current thread" in tail else tail
        grader_dir = str(_GRADER_ROOT / "dezero_grader") + os.sep
        top = str(self.cwd) + os.sep
        outside = None
        for m in _FRAME_LINE.finditer(block):
            path = m["file"]
            if path.startswith(grader_dir) or path.startswith("<"):
                continue
            if path.startswith(top):
                return f"{path[len(top):]}:{m['line']} in {m['func']}"
            outside = outside or f"{path}:{m['line']} in {m['func']}"
        return outside

    def _dump_stacks(self) -> None:
        pid = self.worker_pid or self._find_worker_pid()   # a worker stopped before its hello
        if pid == self.pid and self.sandbox == "bubblewrap":
            return   # the Python process is not there (yet): bubblewrap's own would just die
        try:
            os.kill(pid, signal.SIGUSR1)
        except (ProcessLookupError, AttributeError):
            return
        end, before = time.monotonic() + _DUMP_WAIT_S, self._drain.total
        while time.monotonic() < end:
            time.sleep(0.02)
            if self._drain.total > before and "Current thread" in self._drain.tail()[-4096:]:
                time.sleep(0.02)
                return


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
