"""The worker sandbox: where the trusted grader hands learner code to a process of its own.

The grader never imports a submission. ``Worker`` starts ``dezero_grader.sandboxed.worker`` in the submission's
scratch folder (through a ``-c`` bootstrap that first takes the working folder off ``sys.path``,
so a ``dezero_grader/`` folder in a submission cannot stand in for it) and exchanges plain-data requests
and answers with it (length-prefixed JSON frames on two private pipes; values inside are encoded
by ``dezero_grader.wire``). Whatever the
learner's code does -- loop, exhaust memory, fork, exit, crash, print megabytes, write garbage
on the channel -- comes back as a ``WorkerFailure`` with a reason and a message a learner can read;
a bug of ours comes back as a ``GraderError``.

Limits (``Limits``, defaults in brackets). The limits that judge the code are CPU time: what the
worker's processes (the worker and everything it started) used, measured from /proc, so a loaded
machine that runs the code slowly does not make it fail. The wall clock only catches code that
waits without end (a sleep, a lock, a pipe nobody writes to), at ``hang_factor`` times the CPU
limit:

* ``call_s`` [30]     CPU seconds for one request; the worker is killed when it has used them.
                      The request's wall clock is ``hang_factor`` times as long (at least 5 s).
* ``total_s`` [300]   CPU seconds for the worker's whole life (every request and the start count
                      against it; ``dezero_grader.grading.worker_session`` gives a restarted worker only what is left,
                      so this bounds a whole submission). Its wall clock: ``wall_s``, by default
                      ``hang_factor`` times as long.
* ``hang_factor`` [10] how many times its CPU limit a wall-clock limit is.
* ``cpu_s`` [300]     CPU seconds of each process (RLIMIT_CPU: SIGXCPU at the limit, SIGKILL one
                      second later): the kernel's backstop under the measured limits.
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

A timeout on the wall clock says how much CPU time the code used and whether its processes spent
the time waiting for a CPU the machine did not give them (``WorkerFailure.busy``: a loaded
machine, not a hang; ``dezero_grader.grading.run`` grades such a run again). Without /proc (macOS) the CPU
time cannot be measured: the wall-clock limits are then the CPU limits themselves.

A limit set to ``None`` is not applied. The worker gets a scrubbed environment (PATH; LANG and
LC_ALL=C.UTF-8; HOME=the scratch folder; TMPDIR inside it; PYTHONHASHSEED=0;
PYTHONDONTWRITEBYTECODE=1; PYTHONNOUSERSITE=1; one BLAS/OpenMP thread; MPLBACKEND=Agg;
PYTHONPATH = the folder holding ``dezero_grader`` unless it is already a site folder, then the user's
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

One job per module: this one starts the worker and speaks with it (its pipes, its output, its
environment); ``dezero_grader.isolation.confinement`` holds ``Limits`` and what the forked child applies before
it runs (rlimits, the network namespace, death with the grader); ``dezero_grader.isolation.process_tree`` finds,
measures and kills the worker's processes (``Worker.tree``); ``dezero_grader.isolation.call_clock`` says when a
call is out of time (``Worker.clock``); ``dezero_grader.isolation.worker_end`` tells why a worker ended and
words its failure.
"""

from __future__ import annotations

import errno
import json
import os
import select
import site
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import NamedTuple

from dezero_grader import wire
from dezero_grader.errors import GraderError, WorkerFailure
from dezero_grader.isolation import bwrap, worker_end
from dezero_grader.isolation.call_clock import CallClock
from dezero_grader.isolation.confinement import Limits, child_setup
from dezero_grader.isolation.process_tree import ProcessTree, own_network_namespace, proc_table

try:
    import resource
except ImportError:  # Windows: the sandbox needs POSIX
    resource = None

__all__ = ["Answers", "Limits", "Worker", "on_progress"]

FDS_ENV = "DEZERO_GRADER_FDS"  # keep in step with dezero_grader.sandboxed.worker
PATH_ENV = "DEZERO_GRADER_PATH"  # the learner's import folders (dezero_grader.sandboxed.worker puts them on sys.path)
HIDDEN_ENV = "DEZERO_GRADER_HIDDEN"  # folders the code may not read (dezero_grader.sandboxed.worker's audit hook)
# Started with -c rather than -m: -m puts the working folder -- the submission -- first on sys.path
# before anything of ours runs, so a submission holding a dezero_grader/ package would replace the worker.
_BOOTSTRAP = ("import os, sys; sys.path[:] = [p for p in sys.path if p not in ('', '.', os.getcwd())]; "
              "import runpy; runpy.run_module('dezero_grader.sandboxed.worker', run_name='__main__', alter_sys=True)")
EXIT_BAD_START = 87
_GRADER_ROOT = Path(__file__).resolve().parents[2]
_POLL_S = 0.05


# -- progress --------------------------------------------------------------------------------------

_beats: list = []


def on_progress(listener) -> None:
    """Call ``listener()`` whenever a worker of this process answers a request or is stopped (a
    grading making progress, for a watchdog that must not mistake a slow machine for a hang);
    ``on_progress(None)`` removes every listener."""
    if listener is None:
        _beats.clear()
    else:
        _beats.append(listener)


def beat() -> None:
    for listener in list(_beats):
        try:
            listener()
        except Exception:
            pass   # a watchdog's trouble must not become the grading's


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


class Answers(NamedTuple):
    """What a batch of requests got (``Worker.requests``)."""
    answers: list            # answer dicts, or the GraderError of a refused request
    failure: WorkerFailure | None
    seconds: list            # per answer (and, after a failure, for the request it stopped)

class Worker:
    """A worker process running learner code; use as a context manager.

    ``request(msg)`` sends one request (a dict with an ``"op"``) and returns the worker's answer
    dict, ``{"ok": True, "result": ...}`` or ``{"ok": False, "error": {...}}`` for an exception
    raised by the request (including ``SystemExit``). It raises ``WorkerFailure`` when the worker
    dies, hangs, hits a limit (an answered ``MemoryError`` or a file-size ``OSError`` counts as
    hitting the limit) or breaks the protocol -- the worker is then stopped, with everything it
    started -- and ``GraderError`` for our own mistakes (unknown op, unencodable answer).

    Once started it holds its processes as ``tree`` (a ``ProcessTree``) and the clocks of its calls
    as ``clock`` (a ``CallClock``); ``dezero_grader.isolation.worker_end`` tells why it ended.
    """

    def __init__(self, cwd: Path, sys_path: list[Path], limits: Limits = Limits(), env: dict | None = None,
                 handler: str = "dezero_grader.sandboxed.probes.handlers", *, hidden: tuple = (), network: bool = False) -> None:
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
        self.tree: ProcessTree | None = None   # set by start(): the worker's processes
        self.clock = CallClock(limits, measured=proc_table() is not None)
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
            preexec = child_setup(self.limits, isolate_network=False)
            argv = bwrap.command(cwd=self.cwd, grader_dir=_GRADER_ROOT / "dezero_grader", sys_path=self.sys_path,
                                 hidden=self.hidden, network=self.network) + argv
        else:
            preexec = child_setup(self.limits, isolate_network=not self.network)
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
        self.network_isolated = own_network_namespace(self.pid) or (
            self.sandbox == "bubblewrap" and not self.network)
        self.tree = ProcessTree(self._proc, sandbox=self.sandbox, grace_s=self.limits.grace_s)
        self.clock.start(self.tree)
        self._drain = _Drain(self._proc.stdout.fileno(), self.limits.output_kb * 1024)
        self._drain.start()
        self.clock.begin(self.limits.call_s)
        hello = self._receive(min(self.clock.started + self.clock.wall(self.limits.call_s), self.clock.deadline),
                              "call")
        self.clock.end()
        if not hello.get("ok"):
            self.close()
            error = hello.get("error") or {}
            raise GraderError(f"the worker could not import its handler {self.handler!r}: "
                              f"{error.get('type')}: {error.get('message')} (at {error.get('where')})")
        self._made_progress()
        result = hello.get("result") or {}
        self.worker_pid = self.tree.find_worker_pid()
        self.effective_limits = result.get("limits") or {}
        self.landlock = int(result.get("landlock") or 0)

    def close(self) -> None:
        """Ask the worker to exit, then kill whatever is left of its process tree."""
        if self._closed or self._proc is None:
            self._closed = True
            return
        self._closed = True
        self.clock.end()
        if self.failure is None and self.tree.alive():
            self.tree.track(force=True)
            try:
                deadline = time.monotonic() + max(self.limits.grace_s, 0.2)
                self._send(b'{"op":"exit"}', deadline, "call")
                self._receive(deadline, "call")
                self.tree.wait_exit(deadline)
            except (WorkerFailure, GraderError):
                self.failure = None  # a worker slow to say goodbye is not a failure of the code
        self.tree.kill()
        self._release()

    @property
    def output_tail(self) -> str:
        """The end of what the worker printed so far (at most ``output_kb`` KiB).

        Complete only once the worker is closed: an answer can arrive before the last output
        printed ahead of it has been read from the pipe.
        """
        return self._drain.tail() if self._proc is not None else ""

    @property
    def output_bytes(self) -> int:
        """How many bytes the worker printed in all (kept or dropped); complete once closed."""
        return self._drain.total if self._proc is not None else 0

    def cpu_time(self) -> float:
        """The CPU seconds the worker's processes used so far (every process of the tree, those
        that ended included); exact once the worker is reaped, sampled every 0.25 s before."""
        if self.tree is None:
            return 0.0
        if not self._closed:
            # (once closed, its namespace's identity may be another worker's)
            self.tree.track(force=True)
        return self.tree.cpu_time()

    # -- requests --

    def request(self, msg: dict, timeout: float | None = None) -> dict:
        """Send ``msg`` and return the answer; ``timeout`` overrides ``call_s`` for this request."""
        payload = self._payload(msg)
        self.clock.begin(self.limits.call_s if timeout is None else timeout)
        try:
            self._send(payload, *self.clock.call_deadline())
            answer = self._receive(*self.clock.call_deadline())
        finally:
            self.clock.end()
        self.clock.answered()  # remembers what the request started, in case the worker dies first
        self._made_progress()
        return self._answered(msg, answer)

    def requests(self, msgs: list, timeout: float | None = None) -> "Answers":
        """Send ``msgs`` in one frame (the worker's ``batch``). The ``Answers``: each as ``request``
        gives it or the GraderError it raises (a refusal: the worker goes on), in order, up to the
        one the worker failed under; ``failure`` is that WorkerFailure (the worker is stopped), or
        None; ``seconds``, how long each answer took after the one before. Each answer is a call of its own under ``call_s`` (or
        ``timeout``), timed from the one before; the worker's processes are looked at once, after
        the last (a call's CPU time counts from the last look, so it may hold some of the call
        before it: at most a look's period, 0.25 s)."""
        parts = [self._payload(m).decode("utf-8") for m in msgs]
        # encoded with "op" first: the worker tells a batch by its first bytes (sandboxed.worker._batch)
        payload = self._payload({"op": "batch", "requests": parts})
        limit = self.limits.call_s if timeout is None else timeout
        answers, seconds, last = [], [], time.monotonic()
        try:
            for i, msg in enumerate(msgs):
                self.clock.begin(limit, in_batch=i > 0)
                if i == 0:
                    self._send(payload, *self.clock.call_deadline())
                answer = self._receive(*self.clock.call_deadline())
                self.clock.end()
                self._made_progress()
                now = time.monotonic()
                seconds.append(now - last)
                last = now
                try:
                    answers.append(self._answered(msg, answer))
                except GraderError as refusal:
                    answers.append(refusal)
        except WorkerFailure as failure:
            return Answers(answers, failure, seconds + [time.monotonic() - last])
        finally:
            self.clock.end()
        self.clock.answered()
        return Answers(answers, None, seconds)

    def _payload(self, msg: dict) -> bytes:
        """``msg`` as the bytes of one frame, once the worker can take it."""
        if self._proc is None or self._closed or self.failure is not None:
            raise GraderError(f"request() on a worker that is not running (failure: {self.failure})")
        if not isinstance(msg, dict) or not isinstance(msg.get("op"), str):
            raise GraderError(f"a request must be a dict with a string 'op', found {msg!r:.200}")
        try:
            payload = json.dumps(msg, allow_nan=False, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
        except (TypeError, ValueError) as exc:
            raise GraderError(f"request {msg['op']!r} is not plain JSON data (encode it with dezero_grader.wire): "
                              f"{exc}") from None
        if len(payload) + 4 > self.limits.frame_mb * 2**20:
            raise GraderError(f"request {msg['op']!r} is {len(payload)} bytes, over the "
                              f"{self.limits.frame_mb} MiB frame limit")
        return payload

    def _answered(self, msg: dict, answer: dict) -> dict:
        """The answer to ``msg``, once the worker's refusals and broken limits are told apart."""
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
                self.tree.track()
                if not self.tree.alive():
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
            self.tree.track()
            if not self.tree.alive():
                # it may have written its last bytes just before dying: look once more
                if not select.select([self._ans_r], [], [], 0)[0]:
                    self._died()
        return b"".join(chunks)

    # -- the clocks, and the end --

    @staticmethod
    def _made_progress() -> None:
        beat()

    def _check_time(self, deadline: float, which: str) -> None:
        ran_out = self.clock.ran_out(deadline, which)
        if ran_out is not None:
            scope, clock = ran_out
            self._stop("timeout", scope=scope, clock=clock)

    def _stop(self, reason: str, detail: str = "", scope: str = "call", clock: str | None = None) -> None:
        """Kill the worker's tree and raise the failure ``reason`` (a timeout: of which ``scope``,
        on which ``clock``)."""
        busy = False
        if reason == "timeout":
            busy = clock == "wall" and self.clock.starved()
            if self.tree.alive():
                self._dump_stacks()
        self.tree.kill()
        self._raise(reason, detail, scope, clock=clock, busy=busy)

    def _died(self) -> None:
        """The worker ended by itself: decide why from its status and output, then raise."""
        self.tree.wait_exit(time.monotonic() + 1.0)
        self.tree.kill()  # whatever it started goes too
        tail = self._finish_output()
        reason, detail, how = worker_end.why_it_ended(self.tree, self.limits, tail)
        self._raise(reason, detail, **how)

    def _raise(self, reason: str, detail: str = "", scope: str = "call", **how) -> None:
        tail = self._finish_output()
        used = self.cpu_time() if reason == "timeout" and not self._closed else None
        if used is not None and scope == "call":
            used = max(0.0, used - self.clock.cpu0)
        self.failure = worker_end.failure(reason, detail, scope, limits=self.limits, cwd=self.cwd, tree=self.tree,
                                          tail=tail, call_limit=self.clock.limit, used=used, **how)
        self._release()
        self._made_progress()   # a stopped worker is news too
        raise self.failure

    def _dump_stacks(self) -> None:
        pid = self.worker_pid or self.tree.find_worker_pid()   # a worker stopped before its hello
        if pid == self.pid and self.sandbox == "bubblewrap":
            return   # the Python process is not there (yet): bubblewrap's own would just die
        worker_end.dump_stacks(pid, self._drain)

    def _channel_closed(self, deadline: float) -> None:
        self.tree.wait_exit(min(deadline, time.monotonic() + 1.0))
        if not self.tree.alive():
            self._died()
        self._stop("protocol", "it closed its answer channel while still running (does the code close file "
                               "descriptors it did not open?)")

    def _finish_output(self) -> str:
        if getattr(self, "_drain", None) is None:
            return ""
        if self._drain.is_alive():
            self._drain.stop(0.5 if self.tree.reaped else 0.05)
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
        if self.tree is not None:
            # only now, after the last sweep: the identity the sweep matches can be reused once freed
            self.tree.let_namespace_go()
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
