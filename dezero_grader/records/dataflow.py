"""Records that flow through the grader: probes → observations → findings → check results.

Everything a stage hands to the next is one of these frozen dataclasses; dicts appear only at
the JSON edge (`scoring/scorecard_write.py`, `wire.py`). The closed sets of values are spelled out once: the
statuses and verdicts with their rules in `dezero_grader.records.status`, the rest here.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

from dezero_grader.records import status as _status
from dezero_grader.records.status import STATUSES

TIERS = ('book', 'extension')
PROFILES = ('book', 'extension')
DEVICES = ('cpu', 'gpu')


def canonical_json(value: Any) -> str:
    """Plain data, arrays included, as canonical JSON text: keys sorted, no spaces (used as a key
    and for hashing)."""
    from dezero_grader import wire
    return json.dumps(wire.encode(value), sort_keys=True, separators=(',', ':'))


@dataclass(frozen=True)
class Probe:
    """One request to a worker: run `scenario` with `params` on `device` with `seed`.

    `params` hold only JSON-able data (arrays travel in wire form). Probes are compared and
    hashed through their canonical text, so two checks asking for the same thing share one run.
    """
    scenario: str
    params: Mapping[str, Any]
    seed: int
    device: str = 'cpu'

    def __post_init__(self):
        key = canonical_json({'scenario': self.scenario, 'params': dict(self.params),
                      'seed': self.seed, 'device': self.device})
        object.__setattr__(self, 'key', key)

    def __hash__(self):
        return hash(self.key)

    def __eq__(self, other):
        return isinstance(other, Probe) and self.key == other.key


@dataclass(frozen=True)
class LearnerError:
    """Learner code raised, looped or died while a probe ran: captured as data."""
    type: str
    message: str
    where: str = ''
    traceback: tuple = ()
    kind: str = 'exception'   # exception | timeout | worker (the worker died: memory, exit...) |
    #                           not-run (stopped early where an earlier probe timed out)


@dataclass(frozen=True)
class Observation:
    """What a worker answered for one probe: a value tree (arrays decoded) or an error."""
    probe: Probe
    value: Any = None
    error: LearnerError | None = None
    duration_s: float = 0.0

    @property
    def ok(self) -> bool:
        return self.error is None


@dataclass(frozen=True)
class Target:
    """What a worker loads: the submission's entry, or the reference."""
    cwd: Path
    sys_path: tuple
    entry: dict            # {'kind', 'module', 'path'}


@dataclass(frozen=True)
class SetupFailure:
    """What ends one side's observing as a whole (the code did not load, its worker broke the
    time budget, or it answered what only a changed grader sends: `tampered`)."""
    code: str              # import-error | syntax-error | timeout | memory | exited | tampered | ...
    message: str
    output_tail: str = ''


@dataclass(frozen=True)
class WorkerRun:
    """What observing one side (the learner's code or the reference) in its worker gave: each
    probe's Observation, what setup reported, the failure that ended it (None when it ran), the
    compatibility findings, the end of what it printed, and the skips its worker claimed (believed
    only once the reference is seen: `dezero_grader.grading.reference_answers.believe_skips`)."""
    observations: dict     # Probe -> Observation
    setup: dict | None     # what setup reported (demo_error, gpu_enable, import_s)
    failure: SetupFailure | None
    findings: tuple = ()   # compatibility findings: book-era NumPy and CuPy APIs the code used
    output_tail: str = ''
    claimed_skips: tuple = ()   # probes the learner's worker answered with `__skipped__`
    busy: tuple = ()            # messages of wall-clock timeouts on a machine that was busy
    cpu_s: float = 0.0          # the CPU time its workers used, all of them together
    # the learner's first import, without CuPy: {'gpu_flag': ...} from its setup, or
    # {'failure': SetupFailure} when the code imports only where CuPy is (None: not tried)
    cupyless: dict | None = None


@dataclass(frozen=True)
class Finding:
    """One judgement a check makes; `status` is one of `dezero_grader.records.status.STATUSES` (what each means,
    and which earn points, is said there)."""
    status: str
    message: str
    evidence: Mapping[str, Any] = field(default_factory=dict)
    hint: str = ''
    case: str = ''

    def __post_init__(self):
        if self.status not in STATUSES:
            raise ValueError('unknown finding status {!r}'.format(self.status))


@dataclass(frozen=True)
class CheckUse:
    """A check as an assignment uses it: which registered check, with what, worth what."""
    id: str
    check: str
    step: int
    title: str
    tier: str
    category: str
    points: float
    params: Mapping[str, Any]
    tolerance: Mapping[str, float]
    faults: tuple = ()
    needs_gpu: bool = False        # needs a device (the simulated one will do)
    needs_real_gpu: bool = False   # cannot run on the simulated device: not applicable without a GPU
    # a step file's check re-run on a later step file: ((from_step, args), ...), the arguments
    # the later API asks for to keep the same contract, or None where it retires the check
    # (`dezero_grader.grading.stepfile_reach.at_step`)
    later: tuple = ()


@dataclass(frozen=True)
class CheckResult(_status.Rules):
    use: CheckUse
    status: str
    message: str
    hint: str = ''
    evidence: Mapping[str, Any] = field(default_factory=dict)
    repro: str = ''
    faults: tuple = ()
    duration_s: float = 0.0
    regression: bool = False


@dataclass(frozen=True)
class Fault:
    id: str
    step: int
    title: str
    tier: str
    hint: str
    caught_by: tuple     # ids of the checks that must fail when the fault is injected
    patch: str           # name of the patch function in dezero_grader.catalogue.faults


@dataclass(frozen=True)
class Assignment:
    step: int
    title: str
    stage: int
    summary: str
    adds: tuple
    entry: str               # 'package' | 'single-file' | 'none'
    checks: tuple            # CheckUse, this step's own
    regression: tuple        # earlier steps and packs whose checks also run (derived)
    faults: tuple            # Fault
    no_code: bool = False
    faults_from: tuple = ()  # earlier steps and packs whose faults join the catalogue


@dataclass(frozen=True)
class Verdict:
    verdict: str
    reason: str
    earned: float
    possible: float
    extension_earned: float
    extension_possible: float
    # what the policy changed after the checks were counted: ({kind, points, reason, ...}, ...)
    adjustments: tuple = ()
    checks_earned: float | None = None   # the book-tier points the checks earned, before them
