"""The three kinds of trouble the grader tells apart, as exception types.

Everything downstream of loading and of the worker boundary sorts failures into these:
``GraderError`` is a bug of ours and is raised loudly (it never becomes a learner's verdict);
``SubmissionError`` means the submission could not be loaded at all (it becomes an ``invalid``
scorecard with the message shown to the learner); ``WorkerFailure`` means the process running
the learner's code died, hung or broke a limit (also ``invalid`` or a failed check, with the
reason and the end of what the code printed). A wrong answer is none of these: it is a verdict.
"""

from __future__ import annotations


class GraderError(Exception):
    """A bug in the grader (or in an assignment file): never the learner's fault."""


class SubmissionError(Exception):
    """The submission cannot be loaded; ``message`` says what was expected and what was found.

    ``code`` is a short stable slug that scorecards and tests match on:

    * ``not-found``          -- nothing exists at the given path;
    * ``not-a-submission``   -- a path that is neither a folder nor a zip archive;
    * ``unreadable``         -- a file or folder of the submission cannot be read (permissions);
    * ``bad-archive``        -- a zip that cannot be read (corrupt, encrypted, duplicate names);
    * ``unsafe-archive``     -- a zip entry that would land outside the scratch folder or is not
                                a plain file or folder (absolute path, drive letter, ``..``,
                                symbolic link, device file);
    * ``archive-too-large``  -- too many files, too many bytes, or a suspicious compression ratio
                                (the same bounds apply when copying a folder);
    * ``no-entry``           -- no ``dezero/`` package or ``stepNN.py`` where the step expects it;
    * ``ambiguous-entry``    -- several candidates and no rule to prefer one;
    * ``too-deep``           -- folders nested deeper than any package needs;
    * ``bad-notebook``       -- a notebook that holds the code but cannot be read as one;
    * ``bad-map``            -- a ``.dezero-notebooks`` map file that cannot be read or names
                                nothing of the submission.
    """

    CODES = frozenset({
        "not-found", "not-a-submission", "unreadable", "bad-archive", "unsafe-archive",
        "archive-too-large", "no-entry", "ambiguous-entry", "too-deep", "bad-notebook", "bad-map",
    })

    def __init__(self, code: str, message: str) -> None:
        if code not in self.CODES:
            raise GraderError(f"unknown SubmissionError code {code!r}; expected one of {sorted(self.CODES)}")
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message


class WorkerFailure(Exception):
    """The worker process running learner code failed as a whole (not one request's exception).

    ``reason`` is one of a closed set:

    * ``timeout``      -- a request used up its CPU time (``clock == "cpu"``: the code computes
                          without end) or ran past the far longer wall-clock limit that catches
                          code waiting for something that never comes (``clock == "wall"``), or
                          the worker's whole lifetime did (``scope == "total"``); the worker was
                          killed. ``cpu_s`` is the CPU time the worker's processes used in it;
                          ``busy`` is True when a wall-clock timeout came while the processes
                          waited for a CPU the machine did not give them (a loaded machine, not
                          code that hangs: ``dezero_grader.grading.run`` grades such a run again);
    * ``cpu-time``     -- the worker used up its CPU-time limit (SIGXCPU);
    * ``memory``       -- the learner's code hit the memory limit (MemoryError, or a native crash
                          that reported running out of memory, or a kill we did not send);
    * ``exited``       -- the process ended by itself, e.g. learner code called ``os._exit``;
                          ``exit_code`` holds the status;
    * ``crashed``      -- killed by a signal we did not send (SIGSEGV, SIGABRT, ...);
                          ``signal`` holds its number;
    * ``protocol``     -- the worker answered something that is not a well-formed answer
                          (garbage or oversized frame, closed channel);
    * ``output-limit`` -- the code wrote a file beyond the file-size limit (SIGXFSZ / EFBIG).

    After a ``WorkerFailure`` the worker has been stopped: start a new one to go on.
    ``output_tail`` is the end of what the worker printed (stdout and stderr together).
    """

    REASONS = frozenset({"timeout", "cpu-time", "memory", "exited", "crashed", "protocol", "output-limit"})

    def __init__(
        self,
        reason: str,
        message: str,
        *,
        exit_code: int | None = None,
        signal: int | None = None,
        output_tail: str = "",
        clock: str | None = None,
        scope: str = "call",
        cpu_s: float | None = None,
        busy: bool = False,
    ) -> None:
        if reason not in self.REASONS:
            raise GraderError(f"unknown WorkerFailure reason {reason!r}; expected one of {sorted(self.REASONS)}")
        super().__init__(f"{reason}: {message}")
        self.reason = reason
        self.message = message
        self.exit_code = exit_code
        self.signal = signal
        self.output_tail = output_tail
        self.clock = clock
        self.scope = scope
        self.cpu_s = cpu_s
        self.busy = busy
