"""The worker sandbox: where the trusted grader hands learner code to a process of its own.

The grader never imports a submission. ``Worker`` starts ``grader.sandboxed.worker`` in the submission's
scratch folder (through a ``-c`` bootstrap that first takes the working folder off ``sys.path``,
so a ``grader/`` folder in a submission cannot stand in for it) and exchanges plain-data requests
and answers with it (length-prefixed JSON frames on two private pipes; values inside are encoded
by ``grader.wire``). Whatever the
learner's code does -- loop, exhaust memory, fork, exit, crash, print megabytes, write garbage
on the channel -- comes back as a ``WorkerFailure`` with a reason and a message a learner can read;
a bug of ours comes back as a ``GraderError``.

Limits (``Limits``, defaults in brackets):

* ``call_s`` [30]     wall clock for one request; the worker is killed when it runs out.
* ``total_s`` [300]   wall clock for the worker's whole life (every request counts against it;
                      ``grader.observe`` gives a restarted worker only what is left, so this
                      bounds a whole submission).
* ``cpu_s`` [300]     CPU seconds (RLIMIT_CPU: SIGXCPU at the limit, SIGKILL one second later).
* ``memory_mb`` [4096] address space (RLIMIT_AS). Generous on purpose: NumPy and BLAS reserve
                      address space they never touch (importing NumPy with one BLAS thread takes
                      about 100 MB of address space; with a thread per core about 140 MB).
* ``nproc`` [128]     RLIMIT_NPROC, as *headroom*: the number of processes and threads the user
                      already runs plus this many, because the kernel counts every task of the
                      user, not only the worker's. The kernel does not enforce it for root; there
                      (and everywhere) the time limits and the kill sweep below are the backstop.
* ``fsize_mb`` [64]   largest file the code may write (RLIMIT_FSIZE).
* ``output_kb`` [64]  how much of the worker's stdout+stderr is kept (the end); the rest is read
                      and dropped, so printing never blocks the worker.
* ``frame_mb`` [64]   largest request or answer frame.
* ``grace_s`` [0.5]   time between SIGTERM and SIGKILL when stopping the worker.

A limit set to ``None`` is not applied. The worker gets a scrubbed environment (PATH; LANG and
LC_ALL=C.UTF-8; HOME=the scratch folder; TMPDIR inside it; PYTHONHASHSEED=0;
PYTHONDONTWRITEBYTECODE=1; PYTHONNOUSERSITE=1; one BLAS/OpenMP thread; MPLBACKEND=Agg;
PYTHONPATH = the folder holding ``grader`` unless it is already a site folder, then the user's
site folder; the given folders travel apart, in ``DEZERO_GRADER_PATH``, and the worker puts them
first on ``sys.path`` only once its own code is imported -- so no ``sitecustomize``, ``.pth`` or
shadowing module of a submission runs before the worker's protections; ``hidden`` folders, which
the code may not read, in ``DEZERO_GRADER_HIDDEN``; plus the caller's extras), its own session
and process group, stdin from /dev/null, no core dumps. On Linux it also gets a network namespace
of its own (only a loopback device), inside a user namespace that maps the caller's uid, where
the kernel allows it (``network_isolated`` says whether it did; ``network=True`` keeps the
network); the worker then confines itself with Landlock (``landlock``: the ABI, 0 without).

Stopping is thorough without cgroups: the process tree is found through /proc (the worker's
process group and session, the parent chain -- the worker is a child subreaper, so daemonised
grandchildren stay its descendants -- every descendant seen while waiting on a request, and
every process inside the worker's private user or network namespace, which no process can
leave: this finds the orphans of a worker that died before they were seen), stopped with SIGSTOP
so it cannot fork further, and killed with SIGKILL. Without /proc (macOS) only the process group
is killed. POSIX only.
"""

from __future__ import annotations

import dataclasses
import errno
import json
import os
import re
import select
import signal
import site
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from grader import bwrap, wire
from grader.errors import GraderError, WorkerFailure

try:
    import resource
except ImportError:  # Windows: the sandbox needs POSIX
    resource = None

FDS_ENV = "DEZERO_GRADER_FDS"  # keep in step with grader.sandboxed.worker
PATH_ENV = "DEZERO_GRADER_PATH"  # the learner's import folders (grader.sandboxed.worker puts them on sys.path)
HIDDEN_ENV = "DEZERO_GRADER_HIDDEN"  # folders the code may not read (grader.sandboxed.worker's audit hook)
# Started with -c rather than -m: -m puts the working folder -- the submission -- first on sys.path
# before anything of ours runs, so a submission holding a grader/ package would replace the worker.
_BOOTSTRAP = ("import os, sys; sys.path[:] = [p for p in sys.path if p not in ('', '.', os.getcwd())]; "
              "import runpy; runpy.run_module('grader.sandboxed.worker', run_name='__main__', alter_sys=True)")
EXIT_CHANNEL_LOST = 86
EXIT_BAD_START = 87
_GRADER_ROOT = Path(__file__).resolve().parent.parent
_POLL_S = 0.05
_TRACK_EVERY_S = 0.25
_DUMP_WAIT_S = 0.2
_MEMORY_TEXT = re.compile(r"MemoryError|Cannot allocate memory|out of memory|std::bad_alloc|ENOMEM", re.IGNORECASE)
_FRAME_LINE = re.compile(r'^\s*File "(?P<file>[^"]+)", line (?P<line>\d+) in (?P<func>\S+)', re.MULTILINE)


@dataclass(frozen=True)
class Limits:
    """Resource limits of one worker (see the module docstring for what each one means)."""

    call_s: float = 30.0
    total_s: float = 300.0
    cpu_s: int | None = 300
    memory_mb: int | None = 4096
    nproc: int | None = 128
    fsize_mb: int | None = 64
    output_kb: int = 64
    frame_mb: int = 64
    grace_s: float = 0.5
    sandbox: str = "auto"  # auto | bubblewrap | basic (see grader.bwrap)

    @classmethod
    def with_options(cls, timeout_s: float | None = None, memory_mb: int | None = None,
                     sandbox: str = "auto") -> "Limits":
        """The limits behind `--timeout`, `--memory` and `--sandbox` (check and batch alike): a
        per-request timeout also stretches the whole-life and CPU budgets to ten times as much,
        never below the defaults."""
        limits = cls(sandbox=sandbox)
        if timeout_s is not None:
            budget = max(limits.total_s, 10 * timeout_s)
            cpu_s = max(limits.cpu_s, int(budget) + 1) if budget > limits.total_s else limits.cpu_s
            limits = dataclasses.replace(limits, call_s=timeout_s, total_s=budget, cpu_s=cpu_s)
        if memory_mb is not None:
            limits = dataclasses.replace(limits, memory_mb=memory_mb)
        return limits

    def __post_init__(self) -> None:
        for name in ("call_s", "total_s", "output_kb", "frame_mb"):
            if not getattr(self, name) > 0:
                raise GraderError(f"Limits.{name} must be positive, found {getattr(self, name)!r}")
        for name in ("cpu_s", "memory_mb", "nproc", "fsize_mb"):
            value = getattr(self, name)
            if value is not None and not (isinstance(value, int) and value > 0):
                raise GraderError(f"Limits.{name} must be a positive int or None, found {value!r}")
        if self.grace_s < 0:
            raise GraderError(f"Limits.grace_s must be >= 0, found {self.grace_s!r}")
        if self.sandbox not in bwrap.MODES:
            raise GraderError(f"Limits.sandbox must be one of {bwrap.MODES}, found {self.sandbox!r}")


# -- the process table ----------------------------------------------------------------------------

@dataclass(frozen=True)
class _Proc:
    pid: int
    ppid: int
    pgid: int
    sid: int
    start: int  # clock ticks since boot: (pid, start) names a process even if pids are reused
    zombie: bool


def _proc_table() -> dict[int, _Proc] | None:
    """Every process on the machine from /proc, or None where /proc does not exist."""
    try:
        names = os.listdir("/proc")
    except OSError:
        return None
    table = {}
    for name in names:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                text = f.read().decode("ascii", "replace")
        except OSError:
            continue
        fields = text[text.rfind(")") + 2:].split()
        # after "pid (comm) ": state ppid pgrp session ... starttime is the 20th
        table[int(name)] = _Proc(int(name), int(fields[1]), int(fields[2]), int(fields[3]), int(fields[19]),
                                 fields[0] in ("Z", "X"))
    return table


def _user_tasks() -> int | None:
    """How many processes and threads the current user runs (what RLIMIT_NPROC counts)."""
    uid, count = os.getuid(), 0
    try:
        names = os.listdir("/proc")
    except OSError:
        return None
    for name in names:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/status", "rb") as f:
                status = f.read().decode("ascii", "replace")
        except OSError:
            continue
        fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
        if int(fields.get("Uid", "-1 ").split()[0]) == uid:
            count += int(fields.get("Threads", "1").strip() or 1)
    return count


# -- output capture -------------------------------------------------------------------------------

class _Drain(threading.Thread):
    """Reads the worker's stdout+stderr until EOF or stop, keeping only the last ``cap`` bytes."""

    def __init__(self, fd: int, cap: int) -> None:
        super().__init__(name="worker-output", daemon=True)
        self._fd, self._cap = fd, cap
        self._buf = bytearray()
        self._lock = threading.Lock()
        self._halt = threading.Event()
        self.total = 0

    def run(self) -> None:
        try:
            while not self._halt.is_set():
                ready, _, _ = select.select([self._fd], [], [], 0.1)
                if not ready:
                    continue
                chunk = os.read(self._fd, 1 << 16)
                if not chunk:
                    return
                with self._lock:
                    self.total += len(chunk)
                    self._buf += chunk
                    if len(self._buf) > 2 * self._cap:
                        del self._buf[:-self._cap]
        except (OSError, ValueError):
            return

    def stop(self, wait_s: float) -> None:
        self.join(wait_s)  # give EOF a chance to arrive so the tail is complete
        self._halt.set()
        self.join(1.0)

    def tail(self) -> str:
        with self._lock:
            return bytes(self._buf[-self._cap:]).decode("utf-8", "replace")


# -- the worker -----------------------------------------------------------------------------------

class Worker:
    """A worker process running learner code; use as a context manager.

    ``request(msg)`` sends one request (a dict with an ``"op"``) and returns the worker's answer
    dict, ``{"ok": True, "result": ...}`` or ``{"ok": False, "error": {...}}`` for an exception
    raised by the request (including ``SystemExit``). It raises ``WorkerFailure`` when the worker
    dies, hangs, hits a limit (an answered ``MemoryError`` or a file-size ``OSError`` counts as
    hitting the limit) or breaks the protocol -- the worker is then stopped, with everything it
    started -- and ``GraderError`` for our own mistakes (unknown op, unencodable answer).
    """

    def __init__(self, cwd: Path, sys_path: list[Path], limits: Limits = Limits(), env: dict | None = None,
                 handler: str = "grader.sandboxed.probes.handlers", *, hidden: tuple = (), network: bool = False) -> None:
        if resource is None:
            raise GraderError("the worker sandbox needs a POSIX system (Linux or macOS)")
        self.cwd = Path(cwd).resolve()
        if not self.cwd.is_dir():
            raise GraderError(f"worker folder {self.cwd} does not exist")
        self.sys_path = [p if Path(p).is_absolute() else self.cwd / p for p in map(Path, sys_path)]
        self.limits = limits
        self.handler = handler
        self.extra_env = dict(env or {})
        self.hidden = tuple(Path(p) for p in hidden)
        self.network = network
        self.network_isolated = False  # set by start(): the worker got a network namespace of its own
        self.sandbox = bwrap.resolve(limits.sandbox)  # 'bubblewrap' or 'basic': what confines it
        self.landlock = 0              # set by start(): the Landlock ABI confining its writes (0: none)
        self.pid: int | None = None         # the process started (bubblewrap's, when it confines)
        self.worker_pid: int | None = None  # the worker's Python process
        self.effective_limits: dict = {}
        self.failure: WorkerFailure | None = None
        self._proc: subprocess.Popen | None = None
        self._status: int | None = None
        self._reaped = False
        self._cpu_used = 0.0
        self._call_limit = limits.call_s
        self._tracked: set[tuple[int, int]] = set()
        self._namespace: tuple | None = None  # (kind, identity) of a namespace only the worker's tree is in
        self._namespace_fd: int | None = None  # holds that namespace alive, so its identity is never reused
        self._last_track = 0.0
        self._closed = False

    # -- lifecycle --

    def __enter__(self) -> "Worker":
        self.start()
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()

    def start(self) -> None:
        """Start the worker and wait for it to report ready (within ``call_s``)."""
        if self._proc is not None:
            raise GraderError("Worker.start() called twice")
        # a fresh folder, whatever the submission holds (a file named .tmp, say)
        tmpdir = Path(tempfile.mkdtemp(prefix=".tmp-", dir=self.cwd))
        req_r, req_w = os.pipe()
        ans_r, ans_w = os.pipe()
        env = self._environment(tmpdir)
        env[FDS_ENV] = f"{req_r},{ans_w}"
        argv = [sys.executable, "-c", _BOOTSTRAP, "--handler", self.handler,
                "--max-frame", str(self.limits.frame_mb * 2**20)]
        if self.sandbox == "bubblewrap":
            # bubblewrap makes the namespaces itself (the network one included)
            preexec = _preexec(self.limits, isolate_network=False)
            argv = bwrap.command(cwd=self.cwd, grader_dir=_GRADER_ROOT / "grader", sys_path=self.sys_path,
                                 hidden=self.hidden, network=self.network) + argv
        else:
            preexec = _preexec(self.limits, isolate_network=not self.network)
        try:
            self._proc = subprocess.Popen(
                argv, cwd=self.cwd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT, pass_fds=(req_r, ans_w), start_new_session=True,
                preexec_fn=preexec, close_fds=True,
            )
        except BaseException:
            os.close(req_w)
            os.close(ans_r)
            raise
        finally:
            os.close(req_r)
            os.close(ans_w)
        self._req_w, self._ans_r = req_w, ans_r
        os.set_blocking(req_w, False)
        self.pid = self._proc.pid
        self.network_isolated = _own_network_namespace(self.pid) or (
            self.sandbox == "bubblewrap" and not self.network)
        self._namespace, self._namespace_fd = _private_namespace(self.pid)
        self._started = time.monotonic()
        self._deadline = self._started + self.limits.total_s
        self._drain = _Drain(self._proc.stdout.fileno(), self.limits.output_kb * 1024)
        self._drain.start()
        hello = self._receive(min(self._started + self.limits.call_s, self._deadline), "call")
        if not hello.get("ok"):
            self.close()
            error = hello.get("error") or {}
            raise GraderError(f"the worker could not import its handler {self.handler!r}: "
                              f"{error.get('type')}: {error.get('message')} (at {error.get('where')})")
        result = hello.get("result") or {}
        self.worker_pid = self._find_worker_pid()
        self.effective_limits = result.get("limits") or {}
        self.landlock = int(result.get("landlock") or 0)

    def close(self) -> None:
        """Ask the worker to exit, then kill whatever is left of its process tree."""
        if self._closed or self._proc is None:
            self._closed = True
            return
        self._closed = True
        if self.failure is None and self._alive():
            self._track(force=True)
            try:
                deadline = time.monotonic() + max(self.limits.grace_s, 0.2)
                self._send(b'{"op":"exit"}', deadline, "call")
                self._receive(deadline, "call")
                self._wait_exit(deadline)
            except (WorkerFailure, GraderError):
                self.failure = None  # a worker slow to say goodbye is not a failure of the code
        self._kill_tree()
        self._release()

    @property
    def output_tail(self) -> str:
        """The end of what the worker printed so far (at most ``output_kb`` KiB)."""
        return self._drain.tail() if self._proc is not None else ""

    @property
    def output_bytes(self) -> int:
        """How many bytes the worker printed in all (kept or dropped)."""
        return self._drain.total if self._proc is not None else 0

    # -- requests --

    def request(self, msg: dict, timeout: float | None = None) -> dict:
        """Send ``msg`` and return the answer; ``timeout`` overrides ``call_s`` for this request."""
        if self._proc is None or self._closed or self.failure is not None:
            raise GraderError(f"request() on a worker that is not running (failure: {self.failure})")
        if not isinstance(msg, dict) or not isinstance(msg.get("op"), str):
            raise GraderError(f"a request must be a dict with a string 'op', found {msg!r:.200}")
        try:
            payload = json.dumps(msg, allow_nan=False, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
        except (TypeError, ValueError) as exc:
            raise GraderError(f"request {msg['op']!r} is not plain JSON data (encode it with grader.wire): "
                              f"{exc}") from None
        if len(payload) + 4 > self.limits.frame_mb * 2**20:
            raise GraderError(f"request {msg['op']!r} is {len(payload)} bytes, over the "
                              f"{self.limits.frame_mb} MiB frame limit")
        now = time.monotonic()
        self._call_limit = self.limits.call_s if timeout is None else timeout
        call_deadline = now + self._call_limit
        deadline, which = (call_deadline, "call") if call_deadline <= self._deadline else (self._deadline, "total")
        self._send(payload, deadline, which)
        answer = self._receive(deadline, which)
        self._track(force=True)  # remember what the request started, in case the worker dies first
        if answer.get("ok") is True:
            return answer
        error = answer["error"]
        if error.get("internal"):
            raise GraderError(f"the worker refused request {msg['op']!r}: {error.get('message')}")
        if error.get("type") == "MemoryError":
            self._stop("memory")
        if error.get("errno") == errno.EFBIG:
            self._stop("output-limit")
        return answer

    # -- framing with deadlines --

    def _send(self, payload: bytes, deadline: float, which: str) -> None:
        data = memoryview(len(payload).to_bytes(4, "big") + payload)
        while data:
            self._check_time(deadline, which)
            try:
                _, ready, _ = select.select([], [self._req_w], [], _POLL_S)
                if ready:
                    data = data[os.write(self._req_w, data):]
            except BlockingIOError:
                continue
            except (BrokenPipeError, OSError):
                self._died()
            if not ready:
                self._track()
                if not self._alive():
                    self._died()

    def _receive(self, deadline: float, which: str) -> dict:
        header = self._read_exact(4, deadline, which)
        size = int.from_bytes(header, "big")
        limit = self.limits.frame_mb * 2**20
        if size > limit:
            self._stop("protocol", f"it announced an answer of {size} bytes, over the {self.limits.frame_mb} MiB limit")
        body = self._read_exact(size, deadline, which)
        try:
            if wire.count_values(body) > wire.MAX_VALUES:
                self._stop("protocol", f"the answer holds more than {wire.MAX_VALUES} values")
            answer = json.loads(body.decode("utf-8"))
        except RecursionError:
            self._stop("protocol", "the answer is nested too deeply to read")
        except (UnicodeDecodeError, ValueError):
            self._stop("protocol", f"the answer is not UTF-8 JSON (starts with {body[:40]!r})")
        if not isinstance(answer, dict) or not isinstance(answer.get("ok"), bool) or \
                (answer["ok"] is False and not isinstance(answer.get("error"), dict)):
            self._stop("protocol", f"the answer is not an {{'ok': ...}} object (found {body[:80]!r})")
        return answer

    def _read_exact(self, n: int, deadline: float, which: str) -> bytes:
        chunks, left = [], n
        while left:
            self._check_time(deadline, which)
            ready, _, _ = select.select([self._ans_r], [], [], _POLL_S)
            if ready:
                chunk = os.read(self._ans_r, min(left, 1 << 20))
                if not chunk:
                    self._channel_closed(deadline)
                chunks.append(chunk)
                left -= len(chunk)
                continue
            self._track()
            if not self._alive():
                # it may have written its last bytes just before dying: look once more
                if not select.select([self._ans_r], [], [], 0)[0]:
                    self._died()
        return b"".join(chunks)

    def _check_time(self, deadline: float, which: str) -> None:
        if time.monotonic() >= deadline:
            self._stop("timeout", scope=which)

    def _channel_closed(self, deadline: float) -> None:
        self._wait_exit(min(deadline, time.monotonic() + 1.0))
        if not self._alive():
            self._died()
        self._stop("protocol", "it closed its answer channel while still running (does the code close file "
                               "descriptors it did not open?)")

    # -- failure --

    def _stop(self, reason: str, detail: str = "", scope: str = "call") -> None:
        """Kill the worker's tree and raise the failure ``reason``."""
        if reason == "timeout" and self._alive():
            self._dump_stacks()
        self._kill_tree()
        self._raise(reason, detail, scope)

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
               signal_number: int | None = None) -> None:
        tail = self._finish_output()
        lim = self.limits
        if reason == "timeout" and scope == "total":
            message = f"your code used up the {lim.total_s:g} s limit for the whole grading run"
        elif reason == "timeout":
            message = f"your code ran longer than the {self._call_limit:g} s limit for one request"
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
            message = (f"the process running your code was killed by {_signal_name(signal_number)} (a crash in "
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
                                     signal=sig, output_tail=tail)
        self._release()
        raise self.failure

    def _where_from_dump(self, tail: str) -> str | None:
        """Where the code was in a faulthandler dump (most recent call first): the innermost frame
        of the submission's own files (the learner's loop, not the library it calls), else the
        innermost one outside the grader."""
        block = tail[tail.rfind("Current thread"):] if "Current thread" in tail else tail
        grader_dir = str(_GRADER_ROOT / "grader") + os.sep
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

    def _find_worker_pid(self) -> int:
        """The worker's own process (this machine's pid): the started process itself, or inside
        bubblewrap the Python process below bubblewrap's own two."""
        if self.sandbox != "bubblewrap":
            return self.pid
        table = _proc_table() or {}
        python = os.path.realpath(sys.executable)
        todo = [self.pid]
        while todo:
            pid = todo.pop(0)
            try:
                if pid != self.pid and os.path.realpath(f"/proc/{pid}/exe") == python:
                    return pid
            except OSError:
                pass
            todo.extend(p.pid for p in table.values() if p.ppid == pid)
        return self.pid

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

    # -- processes --

    def _alive(self) -> bool:
        self._reap(block=False)
        return not self._reaped

    def _reap(self, block: bool) -> None:
        if self._reaped or self._proc is None:
            return
        try:
            pid, status, usage = os.wait4(self.pid, 0 if block else os.WNOHANG)
        except ChildProcessError:
            self._reaped = True
            return
        if pid == 0:
            return
        self._reaped = True
        self._status = status
        self._cpu_used = usage.ru_utime + usage.ru_stime
        self._proc.returncode = os.waitstatus_to_exitcode(status)

    def _exit_code(self) -> int:
        """How the worker ended, as ``os.waitstatus_to_exitcode`` says it (negative: the signal
        that killed it). bubblewrap reports a sandboxed process killed by signal N as exit status
        128 + N; that is read back as the signal."""
        code = os.waitstatus_to_exitcode(self._status)
        if self.sandbox == "bubblewrap" and 128 < code < 128 + signal.NSIG:
            return -(code - 128)
        return code

    def _wait_exit(self, deadline: float) -> None:
        while not self._reaped and time.monotonic() < deadline:
            self._reap(block=False)
            if not self._reaped:
                time.sleep(0.01)

    def _track(self, force: bool = False) -> None:
        """Remember every process descending from the worker, in case it dies before them."""
        now = time.monotonic()
        if not force and now - self._last_track < _TRACK_EVERY_S:
            return
        self._last_track = now
        table = _proc_table()
        if table is not None and len(self._tracked) < 10_000:
            self._tracked |= {(p.pid, p.start) for p in self._family(table).values()}

    def _family(self, table: dict[int, _Proc]) -> dict[int, _Proc]:
        """The worker and every live process that belongs to it, by session, group, lineage, memory
        or namespace."""
        me = os.getpid()
        seeds = {p.pid for p in table.values() if p.sid == self.pid or p.pgid == self.pid}
        if self._namespace is not None:
            # a process cannot leave a user namespace: whatever the worker started and lost (an
            # orphan of a worker that died before it was seen) is still in the worker's
            kind, ident = self._namespace
            seeds |= {pid for pid in table if pid != me and _namespace_of(pid, kind) == ident}
        seeds |= {pid for pid, start in self._tracked if pid in table and table[pid].start == start}
        if not self._reaped and self.pid in table:
            seeds.add(self.pid)
        children: dict[int, list[int]] = {}
        for p in table.values():
            children.setdefault(p.ppid, []).append(p.pid)
        family, todo = {}, list(seeds)
        while todo:
            pid = todo.pop()
            if pid in family or pid == me or pid not in table:
                continue
            family[pid] = table[pid]
            todo.extend(children.get(pid, ()))
        return {pid: p for pid, p in family.items() if not p.zombie or pid == self.pid}

    def _signal_family(self, sig: int) -> int:
        """Send ``sig`` to the worker's process group and family; return how many were alive."""
        table = _proc_table()
        targets = self._family(table) if table is not None else {}
        if table is None and not self._reaped:
            targets = {self.pid: None}
        # once the worker is reaped its pid is free: signal the group only while a member of the
        # worker's own group is still there, never a newcomer that was given the same number
        if not self._reaped or table is None or any(p.pgid == self.pid for p in targets.values()):
            try:
                os.killpg(self.pid, sig)
            except (ProcessLookupError, PermissionError):
                pass
        for pid in targets:
            if pid == self.pid and self._reaped:
                continue
            try:
                os.kill(pid, sig)
            except (ProcessLookupError, PermissionError):
                pass
        return len(targets)

    def _kill_tree(self) -> None:
        if self._proc is None:
            return
        if self._signal_family(signal.SIGTERM):
            end = time.monotonic() + self.limits.grace_s
            while time.monotonic() < end:
                self._reap(block=False)
                table = _proc_table()
                if (table is None and self._reaped) or (table is not None and not self._family(table)):
                    break
                time.sleep(0.01)
        for _ in range(20):
            self._signal_family(signal.SIGSTOP)  # frozen processes cannot fork any more
            alive = self._signal_family(signal.SIGKILL)
            self._reap(block=False)
            if not alive:
                break
            time.sleep(0.005)
        if not self._reaped:
            self._wait_exit(time.monotonic() + 2.0)
            if not self._reaped:
                self._reap(block=True)

    def _finish_output(self) -> str:
        if getattr(self, "_drain", None) is None:
            return ""
        if self._drain.is_alive():
            self._drain.stop(0.5 if self._reaped else 0.05)
        return self._drain.tail()

    def _release(self) -> None:
        self._closed = True
        self._finish_output()
        for fd in (getattr(self, "_req_w", None), getattr(self, "_ans_r", None)):
            if fd is not None:
                try:
                    os.close(fd)
                except OSError:
                    pass
        self._req_w = self._ans_r = None
        if self._namespace_fd is not None:
            # only now, after the last sweep: the identity the sweep matches can be reused once freed
            os.close(self._namespace_fd)
            self._namespace_fd = None
        if self._proc is not None and self._proc.stdout is not None and not self._drain.is_alive():
            self._proc.stdout.close()

    # -- environment --

    def _environment(self, tmpdir: Path) -> dict[str, str]:
        path = []
        site_dirs = {os.path.realpath(p) for p in _site_dirs()}
        if os.path.realpath(_GRADER_ROOT) not in site_dirs:
            path.append(str(_GRADER_ROOT))
        user_site = site.getusersitepackages() if site.ENABLE_USER_SITE else None
        if user_site and os.path.isdir(user_site) and user_site in sys.path:
            path.append(user_site)  # HOME changes in the worker, so its own user site would differ
        env = {
            "PATH": os.environ.get("PATH", os.defpath),
            "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8",
            "HOME": str(self.cwd), "TMPDIR": str(tmpdir),
            "PYTHONHASHSEED": "0", "PYTHONDONTWRITEBYTECODE": "1",
            # HOME is the scratch folder: its user site (and .pth files there) would run at startup
            "PYTHONNOUSERSITE": "1",
            "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
            "MPLBACKEND": "Agg",
            "PYTHONPATH": os.pathsep.join(path),
            PATH_ENV: os.pathsep.join(str(p) for p in self.sys_path),
        }
        if self.hidden:
            env[HIDDEN_ENV] = os.pathsep.join(str(p) for p in self.hidden)
        env.update({str(k): str(v) for k, v in self.extra_env.items()})
        return env


def _site_dirs() -> list[str]:
    try:
        return list(site.getsitepackages())
    except AttributeError:  # some virtualenv builds lack it
        return []


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def _preexec(limits: Limits, isolate_network: bool):
    """The worker's preexec_fn: the network namespace first (the user namespace it may need must
    be made before the limits apply), then the resource limits, then death with the grader: the
    kernel kills the worker when the grader (the thread that started it) dies, by any signal,
    SIGKILL included, so a stopped `check` leaves no learner code running."""
    set_limits = _rlimit_setter(limits)
    isolate = _network_isolator() if isolate_network else None
    die_with_parent = _parent_death_signal()

    def apply() -> None:
        if isolate is not None:
            isolate()
        set_limits()
        if die_with_parent is not None:
            die_with_parent()

    return apply


def _parent_death_signal():
    """A function that asks Linux for SIGKILL when the parent dies (PR_SET_PDEATHSIG), or None."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        import ctypes
        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None
    parent = os.getpid()

    def apply() -> None:
        prctl(1, signal.SIGKILL, 0, 0, 0)   # PR_SET_PDEATHSIG
        if os.getppid() != parent:          # the grader died before the request took effect
            os._exit(1)

    return apply


_CLONE_NEWUSER = 0x10000000
_CLONE_NEWNET = 0x40000000


def _network_isolator():
    """A function that moves the calling (forked, not yet exec'd) process into a network namespace
    of its own -- only a loopback device, no route anywhere -- or None where Linux namespaces are
    unavailable. It is made inside a new user namespace that maps the caller's own uid and gid (files
    keep their owner), or without one where that is refused but a plain network namespace is not
    (root without user namespaces). Where the kernel refuses both (namespaces disabled, seccomp in a
    container), the worker keeps the network and only Landlock (TCP, Linux 6.7+) and the audit hook
    in ``grader.sandboxed.worker`` (Python code) refuse connections."""
    if not sys.platform.startswith("linux"):
        return None
    unshare = getattr(os, "unshare", None)  # Python 3.12+
    if unshare is None:
        try:
            import ctypes
            libc = ctypes.CDLL(None, use_errno=True)
            raw = libc.unshare

            def unshare(flags: int) -> None:
                if raw(flags) != 0:
                    raise OSError(ctypes.get_errno(), "unshare failed")
        except (OSError, AttributeError):
            return None
    uid, gid = os.getuid(), os.getgid()
    maps = ((b"/proc/self/setgroups", b"deny"), (b"/proc/self/uid_map", f"{uid} {uid} 1".encode()),
            (b"/proc/self/gid_map", f"{gid} {gid} 1".encode()))

    def isolate() -> None:
        try:
            # a user namespace also takes away root's capabilities over the machine (raising its
            # own limits back, overriding file permissions) from a grader that runs as root
            unshare(_CLONE_NEWUSER | _CLONE_NEWNET)
        except OSError:
            try:
                unshare(_CLONE_NEWNET)
            except OSError:
                pass
            return
        for path, text in maps:
            try:
                fd = os.open(path, os.O_WRONLY)
                try:
                    os.write(fd, text)
                finally:
                    os.close(fd)
            except OSError:
                pass  # unmapped, the code sees uid 65534; files still belong to the real user

    return isolate


def _namespace_of(pid, kind: str):
    try:
        st = os.stat(f"/proc/{pid}/ns/{kind}")
    except OSError:
        return None
    return st.st_dev, st.st_ino


def _private_namespace(pid: int) -> tuple:
    """The worker's own user (else network) namespace, when it has one we do not share, and an open
    file of it: ((kind, identity), fd), or (None, None).

    The sweep finds the worker's processes by the namespace's identity (device and inode of its
    nsfs file). The kernel hands a freed namespace's inode number to the next namespace it makes,
    so once the worker's tree is gone another worker (the reference's, started beside it, or the
    next one of a batch) can have the very same identity -- and a sweep still matching on it would
    kill that worker, which then reads as "killed with SIGKILL ... too much memory". An open file of
    a namespace keeps it alive, so its identity stays ours until the fd is closed after the sweep.
    """
    for kind in ("user", "net"):
        try:
            fd = os.open(f"/proc/{pid}/ns/{kind}", os.O_RDONLY | os.O_CLOEXEC)
        except OSError:
            continue
        st = os.fstat(fd)
        ident = (st.st_dev, st.st_ino)
        if ident != _namespace_of("self", kind):
            return (kind, ident), fd
        os.close(fd)
    return None, None


def _own_network_namespace(pid: int) -> bool:
    try:
        return os.readlink(f"/proc/{pid}/ns/net") != os.readlink("/proc/self/ns/net")
    except OSError:
        return False


def _rlimit_setter(limits: Limits):
    """A preexec_fn applying the limits; everything it needs is computed before the fork."""
    plan = [(resource.RLIMIT_CORE, 0, 0)]
    if limits.cpu_s is not None:
        plan.append((resource.RLIMIT_CPU, limits.cpu_s, limits.cpu_s + 1))
    if limits.memory_mb is not None:
        plan.append((resource.RLIMIT_AS, limits.memory_mb * 2**20, limits.memory_mb * 2**20))
    if limits.fsize_mb is not None:
        plan.append((resource.RLIMIT_FSIZE, limits.fsize_mb * 2**20, limits.fsize_mb * 2**20))
    if limits.nproc is not None and hasattr(resource, "RLIMIT_NPROC"):
        running = _user_tasks()
        if running is not None:
            plan.append((resource.RLIMIT_NPROC, running + limits.nproc, running + limits.nproc))
    setrlimit, getrlimit, infinity = resource.setrlimit, resource.getrlimit, resource.RLIM_INFINITY

    def apply() -> None:
        for which, soft, hard in plan:
            try:
                _, current_hard = getrlimit(which)
                if current_hard != infinity:
                    soft, hard = min(soft, current_hard), min(hard, current_hard)
                setrlimit(which, (soft, hard))
            except (ValueError, OSError):
                pass  # not supported here (e.g. RLIMIT_AS on macOS); effective_limits shows it

    return apply
