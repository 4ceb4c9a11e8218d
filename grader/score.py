"""Scoring policy, in one pure module: check results + profile → verdict and points.

* invalid — the submission could not be loaded or graded (decided before any check runs);
* rollback — a regression check of an earlier step fails: the increment broke what worked
  before, so the learner goes back to the previous snapshot. It wins over reject: a bug in
  earlier code usually breaks this step's checks too, and the earlier failure is its cause;
* reject — this step's own contract fails (and every regression check passes);
* incomplete — nothing that was judged fails, but some deciding checks could not be judged here
  (graded with `--device cpu`, an optional package missing): not an accept, since what was not
  judged may be wrong;
* accept — every deciding check was judged and passes.

Deciding checks: book-tier ones always; extension-tier ones only under the `extension` profile
(under `book` they are reported and scored separately, never decisive).

Points: a check earns its points when it passed, or when the assignment marks it as not
applicable on this machine (`needs_real_gpu` without a real GPU: `not_applicable`, credited, as
the product never penalises what only a real GPU can run). A check the grader could not judge
(`skipped`) earns nothing: unjudged is not passed. Regression checks carry no points.
"""
from __future__ import annotations

from grader.model import FAILING, PROFILES, Verdict


def earned(result) -> float:
    """The points one check result earns (the scorecard shows this per check)."""
    return result.use.points if (result.passed and not result.regression) else 0.0


def possible(result) -> float:
    return 0.0 if result.regression else result.use.points


def decide(results, profile: str = 'book') -> Verdict:
    if profile not in PROFILES:
        raise ValueError('unknown profile {!r}'.format(profile))

    def deciding(r):
        return r.use.tier == 'book' or profile == 'extension'

    own_failed = [r for r in results if not r.regression and deciding(r) and r.failing]
    reg_failed = [r for r in results if r.regression and deciding(r) and r.failing]
    unjudged = [r for r in results if deciding(r) and r.unjudged]

    def total(tier, f):
        return sum(f(r) for r in results if r.use.tier == tier)

    if reg_failed:
        verdict = 'rollback'
        steps = sorted({r.use.step for r in reg_failed})
        reason = ('{} check(s) of earlier steps now fail (steps {}){}: the increment broke '
                  'earlier behaviour; go back to your previous snapshot').format(
            len(reg_failed), ', '.join(map(str, steps)),
            ', and {} of this step\'s'.format(len(own_failed)) if own_failed else '')
    elif own_failed:
        verdict = 'reject'
        reason = '{} of this step\'s checks failed (first: {})'.format(
            len(own_failed), own_failed[0].use.id)
    elif unjudged:
        verdict = 'incomplete'
        reason = ('{} check(s) could not be judged here and earn nothing (first: {}: {}); what was '
                  'judged passes, but this is not an accept').format(
            len(unjudged), unjudged[0].use.id, unjudged[0].message)
    else:
        verdict = 'accept'
        reason = 'every check of this step and every regression check passes'
    return Verdict(verdict, reason, total('book', earned), total('book', possible),
                   total('extension', earned), total('extension', possible))


def invalid(reason: str) -> Verdict:
    return Verdict('invalid', reason, 0.0, 0.0, 0.0, 0.0)


def status_of(findings) -> str:
    """One status for a check from its findings: the worst one wins. A check none of whose
    findings could be judged is skipped; one whose other sub-checks were judged and passed is
    passed (a sub-check that cannot judge, e.g. finite differences of a float32 forward, is
    inconclusive and says so in its finding)."""
    statuses = {f.status for f in findings}
    for status in FAILING:
        if status in statuses:
            return status
    if statuses and statuses <= {'not_applicable'}:
        return 'not_applicable'
    if statuses and statuses <= {'skipped', 'not_applicable'}:
        return 'skipped'
    return 'passed'
