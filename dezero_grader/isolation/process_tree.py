"""The processes of a worker, found through /proc and stopped (``ProcessTree``, an object a
``dezero_grader.isolation.worker_process.Worker`` holds as ``Worker.tree``).

The tree is the worker's process group and session, its parent chain (the worker is a child
subreaper, so daemonised grandchildren stay its descendants), every descendant seen while waiting
on a request, and every process inside the worker's private user or network namespace, which no
process can leave. It is stopped with SIGSTOP, so that it cannot fork further, and killed with
SIGKILL. Without /proc (macOS) only the process group is killed.

The same look at /proc measures the tree's CPU time (``cpu_time``): each live or zombie member's
own user and system time plus what its reaped children used, so a process that ended counts once,
in the parent that reaped it. With it, how long the tree's processes waited for a CPU they were
ready to run on (``/proc/PID/schedstat``): what tells a loaded machine from code that hangs."""

from __future__ import annotations

import os
import signal
import sys
import time
from dataclasses import dataclass

_TRACK_EVERY_S = 0.25
try:
    _TICK_S = 1.0 / os.sysconf("SC_CLK_TCK")
except (AttributeError, ValueError, OSError):
    _TICK_S = 0.01


@dataclass(frozen=True)
class Proc:
    pid: int
    ppid: int
    pgid: int
    sid: int
    start: int  # clock ticks since boot: (pid, start) names a process even if pids are reused
    zombie: bool
    cpu_s: float = 0.0  # its own user + system time, and that of the children it reaped


def _each_process(leaf: str) -> list[tuple[int, str]] | None:
    """(pid, text of /proc/PID/``leaf``) for every process that can be read, or None where /proc
    does not exist."""
    try:
        names = os.listdir("/proc")
    except OSError:
        return None
    out = []
    for name in names:   # raw reads: a scan runs once per request of every worker
        if not name.isdigit():
            continue
        try:
            fd = os.open(f"/proc/{name}/{leaf}", os.O_RDONLY)
        except OSError:
            continue
        try:
            data = os.read(fd, 1 << 16)   # a stat or status file is far shorter
        except OSError:
            continue
        finally:
            os.close(fd)
        out.append((int(name), data.decode("ascii", "replace")))
    return out


def proc_table() -> dict[int, Proc] | None:
    """Every process on the machine from /proc, or None where /proc does not exist."""
    stats = _each_process("stat")
    if stats is None:
        return None
    table = {}
    for pid, text in stats:
        fields = text[text.rfind(")") + 2:].split()
        # after "pid (comm) ": state ppid pgrp session ... starttime is the 20th
        # utime stime cutime cstime are the 12th to 15th
        ticks = sum(int(t) for t in fields[11:15])
        table[pid] = Proc(pid, int(fields[1]), int(fields[2]), int(fields[3]), int(fields[19]),
                          fields[0] in ("Z", "X"), ticks * _TICK_S)
    return table


def run_queue_wait_s(pid: int) -> float | None:
    """How long the process has waited, ready to run, for a CPU (seconds), or None where the
    kernel does not say (/proc/PID/schedstat: time on a CPU, time waiting for one, slices)."""
    try:
        with open(f"/proc/{pid}/schedstat", "rb") as f:
            return int(f.read().split()[1]) / 1e9
    except (OSError, IndexError, ValueError):
        return None


def machine_busy() -> bool:
    """Whether the machine runs more than it has cores for (the last minute's load average),
    for where /proc/PID/schedstat is missing."""
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:
        cores = os.cpu_count() or 1
    try:
        return os.getloadavg()[0] >= cores
    except OSError:
        return False


def user_tasks() -> int | None:
    """How many processes and threads the current user runs (what RLIMIT_NPROC counts)."""
    statuses = _each_process("status")
    if statuses is None:
        return None
    uid, count = os.getuid(), 0
    for _, status in statuses:
        fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
        if int(fields.get("Uid", "-1 ").split()[0]) == uid:
            count += int(fields.get("Threads", "1").strip() or 1)
    return count


def namespace_of(pid, kind: str):
    try:
        st = os.stat(f"/proc/{pid}/ns/{kind}")
    except OSError:
        return None
    return st.st_dev, st.st_ino


def private_namespace(pid: int) -> tuple:
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
        if ident != namespace_of("self", kind):
            return (kind, ident), fd
        os.close(fd)
    return None, None


def own_network_namespace(pid: int) -> bool:
    try:
        return os.readlink(f"/proc/{pid}/ns/net") != os.readlink("/proc/self/ns/net")
    except OSError:
        return False


class ProcessTree:
    """The processes of one started worker: reaping the one started, remembering and finding the
    others, signalling and killing them all, and measuring their CPU time and their wait for a CPU.

    ``dezero_grader.isolation.worker_process.Worker`` makes one once its process is started
    (``Worker.tree``). What the tree found is public, for the worker's clocks and for the words of
    its end (``dezero_grader.isolation.worker_end``): ``reaped`` and ``status`` (the wait status of
    the process started), ``cpu_reaped`` (what wait4 said it and all it reaped used), ``cpu_seen``
    (sampled from /proc while it runs), ``waited`` and ``wait_known`` (how long its processes
    waited, ready to run, for a CPU; whether the kernel said)."""

    def __init__(self, proc, *, sandbox: str, grace_s: float) -> None:
        self.proc = proc             # the subprocess.Popen started (bubblewrap's, when it confines)
        self.pid: int = proc.pid
        self.sandbox = sandbox
        self.grace_s = grace_s       # between SIGTERM and SIGKILL
        self.status: int | None = None
        self.reaped = False
        self.cpu_reaped = 0.0        # from wait4, once reaped
        self.cpu_seen = 0.0          # sampled from /proc while it runs
        self.waited = 0.0            # how long its processes waited for a CPU (sampled)
        self.wait_known = True
        self.tracked: set[tuple[int, int]] = set()
        # (kind, identity) of a namespace only the worker's tree is in, and the file that holds
        # it alive, so that its identity is never reused while the sweep matches on it
        self.namespace, self.namespace_fd = private_namespace(self.pid)
        self._last_track = 0.0

    def find_worker_pid(self) -> int:
        """The worker's own process (this machine's pid): the started process itself, or inside
        bubblewrap the Python process below bubblewrap's own two."""
        if self.sandbox != "bubblewrap":
            return self.pid
        table = proc_table() or {}
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

    def alive(self) -> bool:
        self.reap(block=False)
        return not self.reaped

    def reap(self, block: bool) -> None:
        if self.reaped:
            return
        try:
            pid, status, usage = os.wait4(self.pid, 0 if block else os.WNOHANG)
        except ChildProcessError:
            self.reaped = True
            return
        if pid == 0:
            return
        self.reaped = True
        self.status = status
        # what the process started (and all it reaped) used; bubblewrap reaps the worker
        self.cpu_reaped = usage.ru_utime + usage.ru_stime
        self.proc.returncode = os.waitstatus_to_exitcode(status)

    def exit_code(self) -> int:
        """How the worker ended, as ``os.waitstatus_to_exitcode`` says it (negative: the signal
        that killed it). bubblewrap reports a sandboxed process killed by signal N as exit status
        128 + N; that is read back as the signal."""
        code = os.waitstatus_to_exitcode(self.status)
        if self.sandbox == "bubblewrap" and 128 < code < 128 + signal.NSIG:
            return -(code - 128)
        return code

    def wait_exit(self, deadline: float) -> None:
        while not self.reaped and time.monotonic() < deadline:
            self.reap(block=False)
            if not self.reaped:
                time.sleep(0.01)

    def track(self, force: bool = False) -> None:
        """Remember every process descending from the worker, in case it dies before them."""
        now = time.monotonic()
        if not force and now - self._last_track < _TRACK_EVERY_S:
            return
        self._last_track = now
        table = proc_table()
        if table is None:
            return
        family = self._family(table, zombies=True)
        if len(self.tracked) < 10_000:
            self.tracked |= {(p.pid, p.start) for p in family.values()
                             if not p.zombie or p.pid == self.pid}
        self.cpu_seen = max(self.cpu_seen, sum(p.cpu_s for p in family.values()))
        waits = [run_queue_wait_s(pid) for pid, p in family.items() if not p.zombie]
        if None in waits:
            self.wait_known = False
        elif waits:
            self.waited = max(self.waited, sum(waits))

    def cpu_time(self) -> float:
        """The CPU seconds the tree used as far as it was looked at (every process of the tree,
        those that ended included): exact once the worker is reaped."""
        return max(self.cpu_seen, self.cpu_reaped)

    def _family(self, table: dict[int, Proc], zombies: bool = False) -> dict[int, Proc]:
        """The worker and every live process that belongs to it, by session, group, lineage, memory
        or namespace (and, with ``zombies``, its members that ended and wait to be reaped)."""
        me = os.getpid()
        seeds = {p.pid for p in table.values() if p.sid == self.pid or p.pgid == self.pid}
        if self.namespace is not None:
            # a process cannot leave a user namespace: whatever the worker started and lost (an
            # orphan of a worker that died before it was seen) is still in the worker's
            kind, ident = self.namespace
            seeds |= {pid for pid in table if pid != me and namespace_of(pid, kind) == ident}
        seeds |= {pid for pid, start in self.tracked if pid in table and table[pid].start == start}
        if not self.reaped and self.pid in table:
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
        return {pid: p for pid, p in family.items() if zombies or not p.zombie or pid == self.pid}

    def _signal_family(self, sig: int) -> int:
        """Send ``sig`` to the worker's process group and family; return how many were alive."""
        table = proc_table()
        targets = self._family(table) if table is not None else {}
        if table is None and not self.reaped:
            targets = {self.pid: None}
        # once the worker is reaped its pid is free: signal the group only while a member of the
        # worker's own group is still there, never a newcomer that was given the same number
        if not self.reaped or table is None or any(p.pgid == self.pid for p in targets.values()):
            try:
                os.killpg(self.pid, sig)
            except (ProcessLookupError, PermissionError):
                pass
        for pid in targets:
            if pid == self.pid and self.reaped:
                continue
            try:
                os.kill(pid, sig)
            except (ProcessLookupError, PermissionError):
                pass
        return len(targets)

    def kill(self) -> None:
        """SIGTERM to the whole tree, ``grace_s`` to go, then SIGSTOP and SIGKILL until none is
        left; the process started is reaped."""
        if self._signal_family(signal.SIGTERM):
            end = time.monotonic() + self.grace_s
            while time.monotonic() < end:
                self.reap(block=False)
                table = proc_table()
                if (table is None and self.reaped) or (table is not None and not self._family(table)):
                    break
                time.sleep(0.01)
        for _ in range(20):
            self._signal_family(signal.SIGSTOP)  # frozen processes cannot fork any more
            alive = self._signal_family(signal.SIGKILL)
            self.reap(block=False)
            if not alive:
                break
            time.sleep(0.005)
        if not self.reaped:
            self.wait_exit(time.monotonic() + 2.0)
            if not self.reaped:
                self.reap(block=True)

    def let_namespace_go(self) -> None:
        """Close the file that holds the worker's namespace alive: only after the last sweep, since
        its identity can be another's once freed (``namespace`` is kept, to say what it was)."""
        if self.namespace_fd is not None:
            os.close(self.namespace_fd)
            self.namespace_fd = None
