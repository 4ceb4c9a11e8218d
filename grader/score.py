"""Scoring policy, in one pure function: check results + profile → verdict and points.

* invalid — the submission could not be loaded or graded (decided before any check runs);
* rollback — a regression check of an earlier step fails: the increment broke what worked
  before, so the learner goes back to the previous snapshot. It wins over reject: a bug in
  earlier code usually breaks this step's checks too, and the earlier failure is its cause;
* reject — this step's own contract fails (and every regression check passes);
* accept — everything deciding passes.

Deciding checks: book-tier ones always; extension-tier ones only under the `extension` profile
(under `book` they are reported and scored separately, never decisive). `skipped` never costs
anything ("cannot judge" is not "failed"). Regression checks carry no points.
"""
from __future__ import annotations

from grader.model import PROFILES, Verdict


def decide(results, profile: str = 'book') -> Verdict:
    if profile not in PROFILES:
        raise ValueError('unknown profile {!r}'.format(profile))

    def deciding(r):
        return r.use.tier == 'book' or profile == 'extension'

    own_failed = [r for r in results if not r.regression and deciding(r) and not r.passed]
    reg_failed = [r for r in results if r.regression and deciding(r) and not r.passed]
    earned = sum(r.use.points for r in results if not r.regression and r.use.tier == 'book'
                 and r.passed)
    possible = sum(r.use.points for r in results if not r.regression and r.use.tier == 'book')
    ext_earned = sum(r.use.points for r in results if not r.regression
                     and r.use.tier == 'extension' and r.passed)
    ext_possible = sum(r.use.points for r in results if not r.regression
                       and r.use.tier == 'extension')
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
    else:
        verdict = 'accept'
        reason = 'every check of this step and every regression check passes'
    return Verdict(verdict, reason, earned, possible, ext_earned, ext_possible)


def invalid(reason: str) -> Verdict:
    return Verdict('invalid', reason, 0.0, 0.0, 0.0, 0.0)


def status_of(findings) -> str:
    """One status for a check from its findings: the worst one wins."""
    statuses = {f.status for f in findings}
    for status in ('error', 'timeout', 'failed'):
        if status in statuses:
            return status
    if statuses and statuses <= {'skipped'}:
        return 'skipped'
    return 'passed'
