"""What a selftest proves about each check: does it fail *by judgment* on a fault of its own?

A check earns its place when a fault of its own step that names it (`caught_by`) makes it fail
with status `failed`: the grader ran the learner's code, compared a value and found it wrong.
Failing only by a crash (`error`, `timeout`) shows that the check notices code that raises, not
that it can tell a wrong value from a right one; failing only on a fault that does not name it,
or only on another step's fault, is collateral and proves nothing about this check.

Pure functions over the rows of a selftest: each row is a fault and, per check that did not
pass, its status and the sub-check cases (`Finding.case`) that failed.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from dezero_grader.checks.gradients import BATTERY_CASES, BATTERY_CHECKS

JUDGED, CRASH, COLLATERAL, NEVER = 'judged', 'crash only', 'collateral only', 'never'
KINDS = (JUDGED, CRASH, COLLATERAL, NEVER)

# Checks still without a wrong-value fault of their own step, each with why: they are counted
# and printed as pending, not reported as gaps. Keep this list short and shrinking; a check
# that becomes proven must leave it (a pending check that is proven is a gap too).
PENDING: dict = {}


@dataclass(frozen=True)
class Failure:
    """How one check did not pass on one fault variant."""
    status: str               # failed | error | timeout
    cases: tuple = ()         # the sub-check cases that failed (failed, error or timeout)


def failures_of(doc) -> dict:
    """check id -> Failure, for every check of a scorecard that did not pass."""
    from dezero_grader.records.status import FAILING
    out = {}
    for c in doc['checks']:
        if c['status'] in FAILING:
            cases = tuple(sorted({f.get('case') for f in c.get('evidence', {}).get('findings', ())
                                  if f.get('status') in FAILING and f.get('case')}))
            out[c['id']] = Failure(c['status'], cases)
    return out


@dataclass
class Proof:
    step: int
    kind: dict = field(default_factory=dict)         # own check id -> one of KINDS
    battery: bool = False                              # the step has gradient-battery checks
    battery_cases: dict = field(default_factory=dict)  # case -> fault ids that made it fail

    def of(self, kind):
        return sorted(c for c, k in self.kind.items() if k == kind)

    @property
    def counts(self):
        return {k: len(self.of(k)) for k in KINDS}


def prove(step: int, own_checks, rows, owner_steps=None) -> Proof:
    """`own_checks`: the step's CheckUses; `rows`: (fault, {check id: Failure}) per variant.

    A check is `judged` when a fault of this step naming it made it fail with status `failed`;
    `crash only` when such faults made it fail, but only by an error or a timeout; `collateral
    only` when it failed only on faults that do not name it or belong to other steps; `never`
    when no variant made it fail. `owner_steps` are the steps whose faults count as the check's
    own: this step alone, or for a step without code of its own (`no_code`: it grades what
    earlier steps wrote) the steps it names for regression."""
    owners = {step} if owner_steps is None else set(owner_steps)
    proof = Proof(step)
    battery = {u.id for u in own_checks if u.check in BATTERY_CHECKS}
    proof.battery = bool(battery)
    for use in own_checks:
        named, failed_any = [], False
        for fault, failures in rows:
            f = failures.get(use.id)
            if f is None:
                continue
            failed_any = True
            if fault.step in owners and use.id in fault.caught_by:
                named.append(f.status)
        if 'failed' in named:
            proof.kind[use.id] = JUDGED
        elif named:
            proof.kind[use.id] = CRASH
        elif failed_any:
            proof.kind[use.id] = COLLATERAL
        else:
            proof.kind[use.id] = NEVER
    for fault, failures in rows:
        for check_id, f in failures.items():
            if check_id in battery and f.status == 'failed':
                for case in f.cases:
                    proof.battery_cases.setdefault(case, []).append(fault.id)
    return proof


def problems(proof: Proof, pending=None) -> list:
    pending = PENDING if pending is None else pending
    out = []
    for check_id in proof.of(JUDGED):
        if check_id in pending:
            out.append('check {} fails by judgment now: remove it from check_proofs.PENDING'.format(
                check_id))
    for check_id in [c for c in proof.of(CRASH) if c not in pending]:
        out.append('check {} fails only by a crash (error or timeout) on the faults that name it: '
                   'no fault of step {} makes it judge a wrong value'.format(check_id, proof.step))
    for check_id in [c for c in proof.of(COLLATERAL) if c not in pending]:
        out.append('check {} fails only on faults that do not name it (collateral): no fault of '
                   'step {} naming it makes it fail'.format(check_id, proof.step))
    return out


def render(proof: Proof, pending=None) -> list:
    pending = PENDING if pending is None else pending
    c = proof.counts
    lines = ['  judgment: {} check(s) fail by judgment on a fault of their own, {} only by a crash, '
             '{} only collaterally, {} never'.format(c[JUDGED], c[CRASH], c[COLLATERAL], c[NEVER])]
    for check_id in sorted(set(proof.kind) & set(pending)):
        if proof.kind[check_id] != JUDGED:
            lines.append('  pending: {} ({}): {}'.format(check_id, proof.kind[check_id],
                                                         pending[check_id]))
    if proof.battery:
        shown = [case for case in BATTERY_CASES if case in proof.battery_cases]
        lines.append('  gradient-battery sub-checks shown failing here: {}/{} ({})'.format(
            len(shown), len(BATTERY_CASES), ', '.join(shown)))
    return lines
