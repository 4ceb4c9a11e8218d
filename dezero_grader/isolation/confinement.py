"""What confines a worker's process from the moment it exists: its limits (``Limits``, the
options behind ``--timeout``, ``--memory`` and ``--sandbox``) and what the forked child applies
before it runs the worker (``child_setup``): a network namespace of its own, the resource limits
(rlimits), and death with the grader. ``dezero_grader.isolation.worker_process`` describes every limit."""

from __future__ import annotations

import dataclasses
import os
import signal
import sys
from dataclasses import dataclass

from dezero_grader.errors import GraderError
from dezero_grader.isolation import bwrap
from dezero_grader.isolation.process_tree import user_tasks

try:
    import resource
except ImportError:  # Windows: the sandbox needs POSIX
    resource = None


@dataclass(frozen=True)
class Limits:
    """Resource limits of one worker (see ``dezero_grader.isolation.worker_process`` for what each one means): the time
    limits that judge the code, ``call_s`` and ``total_s``, are CPU time of the worker's processes;
    the wall-clock limits only catch code that waits without end, ``hang_factor`` times as long."""

    call_s: float = 30.0
    total_s: float = 300.0
    cpu_s: int | None = 300
    memory_mb: int | None = 4096
    nproc: int | None = 128
    fsize_mb: int | None = 64
    output_kb: int = 64
    frame_mb: int = 64
    grace_s: float = 0.5
    sandbox: str = "auto"  # auto | bubblewrap | basic (see dezero_grader.isolation.bwrap)
    hang_factor: float = 10.0
    wall_s: float | None = None  # the whole life's wall clock (None: hang_factor * total_s)

    def call_wall_s(self, call_s: float | None = None) -> float:
        """The wall-clock limit of one request whose CPU-time limit is ``call_s`` (default: the
        limits' own): ``hang_factor`` times as long, and never under 5 s, so that a process
        given a tenth of a core or less still has the time it needs."""
        return max(5.0, self.hang_factor * (self.call_s if call_s is None else call_s))

    @property
    def total_wall_s(self) -> float:
        """The wall-clock limit of the worker's whole life."""
        return self.wall_s if self.wall_s is not None else max(5.0, self.hang_factor * self.total_s)

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
        if not self.hang_factor >= 1:
            raise GraderError(f"Limits.hang_factor must be at least 1, found {self.hang_factor!r}")
        if self.wall_s is not None and not self.wall_s > 0:
            raise GraderError(f"Limits.wall_s must be positive or None, found {self.wall_s!r}")
        if self.grace_s < 0:
            raise GraderError(f"Limits.grace_s must be >= 0, found {self.grace_s!r}")
        if self.sandbox not in bwrap.MODES:
            raise GraderError(f"Limits.sandbox must be one of {bwrap.MODES}, found {self.sandbox!r}")


def child_setup(limits: Limits, isolate_network: bool):
    """The worker's preexec_fn: the network namespace first (the user namespace it may need must
    be made before the limits apply), then the resource limits, then death with the grader: the
    kernel kills the worker when the grader (the thread that started it) dies, by any signal,
    SIGKILL included, so a stopped `check` leaves no learner code running."""
    set_limits = rlimit_setter(limits)
    isolate = network_isolator() if isolate_network else None
    die_with_parent = parent_death_signal()

    def apply() -> None:
        if isolate is not None:
            isolate()
        set_limits()
        if die_with_parent is not None:
            die_with_parent()

    return apply


def parent_death_signal():
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


def network_isolator():
    """A function that moves the calling (forked, not yet exec'd) process into a network namespace
    of its own -- only a loopback device, no route anywhere -- or None where Linux namespaces are
    unavailable. It is made inside a new user namespace that maps the caller's own uid and gid (files
    keep their owner), or without one where that is refused but a plain network namespace is not
    (root without user namespaces). Where the kernel refuses both (namespaces disabled, seccomp in a
    container), the worker keeps the network and only Landlock (TCP, Linux 6.7+) and the audit hook
    in ``dezero_grader.sandboxed.worker`` (Python code) refuse connections."""
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


def rlimit_setter(limits: Limits):
    """A preexec_fn applying the limits; everything it needs is computed before the fork."""
    plan = [(resource.RLIMIT_CORE, 0, 0)]
    if limits.cpu_s is not None:
        plan.append((resource.RLIMIT_CPU, limits.cpu_s, limits.cpu_s + 1))
    if limits.memory_mb is not None:
        plan.append((resource.RLIMIT_AS, limits.memory_mb * 2**20, limits.memory_mb * 2**20))
    if limits.fsize_mb is not None:
        plan.append((resource.RLIMIT_FSIZE, limits.fsize_mb * 2**20, limits.fsize_mb * 2**20))
    if limits.nproc is not None and hasattr(resource, "RLIMIT_NPROC"):
        running = user_tasks()
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
