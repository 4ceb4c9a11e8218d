"""The statuses of a check (and of each finding it makes) and the verdicts of a submission, with
their rules, spelled out once.

* passed — judged, and right;
* failed — judged, and wrong;
* error — the learner's code raised while the check ran;
* timeout — the learner's code ran too long;
* skipped — the grader could not judge it here (`--device cpu`, an optional package missing): it
  earns nothing, and it is not a pass;
* not_applicable — the assignment says the check cannot run on this machine (it needs a real
  GPU): it is credited, as the product never penalises what only a real GPU can run.

Every reader asks these rules (`failing`, `credited`, `judged`) instead of naming statuses.
"""
from __future__ import annotations

PASSED, FAILED, ERROR, SKIPPED, TIMEOUT, NOT_APPLICABLE = (
    'passed', 'failed', 'error', 'skipped', 'timeout', 'not_applicable')
STATUSES = (PASSED, FAILED, ERROR, SKIPPED, TIMEOUT, NOT_APPLICABLE)
# statuses of a check that did not pass, worst first: the code raised, ran too long, answered wrong
FAILING = (ERROR, TIMEOUT, FAILED)
# statuses that earn a check its points
CREDITED = (PASSED, NOT_APPLICABLE)
# statuses of a check the grader judged here, right or wrong
JUDGED = (PASSED,) + FAILING

VERDICTS = ('accept', 'rollback', 'reject', 'incomplete', 'invalid')


def failing(status: str) -> bool:
    return status in FAILING


def credited(status: str) -> bool:
    return status in CREDITED


def judged(status: str) -> bool:
    return status in JUDGED


class Rules:
    """The rules of a record's `status`, as properties (a check result, a scorecard's check)."""
    status: str

    @property
    def failing(self) -> bool:
        return failing(self.status)

    @property
    def credited(self) -> bool:
        """Earns its points: judged and passed, or not applicable on this machine."""
        return credited(self.status)

    @property
    def unjudged(self) -> bool:
        return self.status == SKIPPED


def combine(statuses) -> str:
    """One status for a check from the statuses of its findings: the worst failing one wins. A
    check none of whose findings could be judged is skipped (not applicable when every one is);
    one whose other sub-checks were judged and passed is passed (a sub-check that cannot judge,
    e.g. finite differences of a float32 forward, is inconclusive and says so in its finding)."""
    statuses = set(statuses)
    for status in FAILING:
        if status in statuses:
            return status
    if statuses and statuses <= {NOT_APPLICABLE}:
        return NOT_APPLICABLE
    if statuses and statuses <= {SKIPPED, NOT_APPLICABLE}:
        return SKIPPED
    return PASSED
