"""The clocks of a worker's calls (``CallClock``, an object a
``dezero_grader.isolation.worker_process.Worker`` holds as ``Worker.clock``): when the call now
running and the worker's whole life are out of time, on which clock, and whether a call out of
wall-clock time was starved of CPU by a loaded machine.

The limits that judge the code are CPU time, read from the worker's process tree
(``dezero_grader.isolation.process_tree.ProcessTree.cpu_seen``); each goes with a wall-clock limit
``hang_factor`` times as long, which catches code that waits without end. Where CPU time cannot be
measured (no /proc) the wall-clock limits are the CPU limits themselves. Nothing here stops a
worker: ``ran_out`` says what ran out, and the worker stops itself."""

from __future__ import annotations

import time

from dezero_grader.isolation.confinement import Limits
from dezero_grader.isolation.process_tree import machine_busy


class CallClock:
    """One worker's clocks. ``limit`` is the CPU seconds of the call now running, ``cpu0`` and
    ``wait0`` the tree's CPU time and CPU wait when it began, ``started`` its wall-clock start;
    ``deadline`` is the wall-clock end of the worker's whole life (set by ``start``)."""

    def __init__(self, limits: Limits, measured: bool) -> None:
        self.limits = limits
        self.measured = measured     # CPU time can be measured here
        self.tree = None             # the worker's ProcessTree, from start()
        self.limit = limits.call_s
        self.cpu0 = self.wait0 = 0.0
        self.started = 0.0
        self.deadline = 0.0
        self.judged = False          # a request (or the start) is running under the CPU limits
        self.sampled_at_answer = False

    def start(self, tree) -> None:
        """The worker's life begins: its processes are ``tree``."""
        self.tree = tree
        self.deadline = time.monotonic() + self.wall(self.limits.total_s, self.limits.total_wall_s)

    def wall(self, cpu_limit: float, wall: float | None = None) -> float:
        """The wall-clock limit that goes with a CPU-time limit (itself, where CPU time cannot be
        measured)."""
        if not self.measured:
            return cpu_limit
        return self.limits.call_wall_s(cpu_limit) if wall is None else wall

    def begin(self, cpu_limit: float, in_batch: bool = False) -> None:
        """A call begins, under ``cpu_limit`` CPU seconds. ``in_batch``: a later answer of a batch,
        whose call starts when the answer before came (the tree is looked at once, after the last)."""
        self.limit = cpu_limit
        # the sample taken when the previous answer came is this call's start: the worker has
        # been waiting for a request since (what its threads did meanwhile counts to this call)
        self.tree.track(force=not (self.sampled_at_answer or in_batch))
        self.sampled_at_answer = False
        self.cpu0, self.wait0 = self.tree.cpu_seen, self.tree.waited
        self.started = time.monotonic()
        self.judged = self.measured

    def end(self) -> None:
        """The call is answered (or given up): no CPU limit judges until the next one begins."""
        self.judged = False

    def answered(self) -> None:
        """An answer came: the tree is looked at now (remembering what the call started, in case
        the worker dies first), and that look is the next call's start."""
        self.tree.track(force=True)
        self.sampled_at_answer = True

    def call_deadline(self) -> tuple[float, str]:
        """When the call now running is out of time, and which limit that is."""
        call_deadline = self.started + self.wall(self.limit)
        return (call_deadline, "call") if call_deadline <= self.deadline else (self.deadline, "total")

    def ran_out(self, deadline: float, which: str) -> tuple[str, str | None] | None:
        """(scope, clock) of the limit the worker has run out of -- the CPU time of the call or of
        its whole life, or the wall clock at ``deadline`` (of ``which`` scope) -- or None."""
        if self.judged:
            if self.tree.cpu_seen - self.cpu0 >= self.limit:
                return "call", "cpu"
            if self.tree.cpu_seen >= self.limits.total_s:
                return "total", "cpu"
        if time.monotonic() >= deadline:
            return which, "wall" if self.measured else None
        return None

    def starved(self) -> bool:
        """Whether the request now out of wall-clock time spent at least a quarter of it waiting
        for a CPU (its processes were ready to run, the machine ran others): a loaded machine, not
        code that waits for something. Where the kernel does not say, the load average decides."""
        if not self.measured:
            return False
        self.tree.track(force=True)
        if not self.tree.wait_known:
            return machine_busy()
        elapsed = time.monotonic() - self.started
        return self.tree.waited - self.wait0 >= 0.25 * elapsed
