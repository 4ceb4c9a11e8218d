"""Scoring policy, in one pure module: check results + profile → verdict and points.

* invalid — the submission could not be loaded or graded (decided before any check runs);
* rollback — a regression check of an earlier step fails: code this step still carries no
  longer keeps an earlier step's contract (every earlier step's book-tier checks are re-run:
  `dezero_grader.catalogue.assignments.regression_of`). It wins over reject: a bug in earlier code usually
  breaks this step's checks too, and the earlier failure is its cause. The reason names the
  earliest step whose contract broke. It does not claim that step once passed: one grading
  cannot know that (`history` can);
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
(`skipped`) earns nothing: unjudged is not passed. Regression checks carry no points of their
own: they decide the rollback, and the course's policy (`dezero_grader.scoring.policy`) says what a rollback
costs — by default each failing regression check takes away what it is worth in its own step
(at least one point), or the course caps a rollback at a fraction of the possible points; either
way a rollback never keeps full marks. Then the policy's late penalty, a fraction of what is
left. What the policy changed is listed in `Verdict.adjustments`, and `earned` is the final
number every report and export shows.
"""
from __future__ import annotations

import math

from dezero_grader.records import status
from dezero_grader.records.dataflow import PROFILES, Verdict

ROLLBACK_MIN_COST = 1.0


def earned(result) -> float:
    """The points one check result earns (the scorecard shows this per check)."""
    return result.use.points if (result.credited and not result.regression) else 0.0


def possible(result) -> float:
    """The points one check result can earn: a regression check carries none of its own."""
    return 0.0 if result.regression else result.use.points


def counts_in_book_score(check) -> bool:
    """Whether a check (a result, or a scorecard's check record) adds to the book-tier score:
    its own step's, of the book tier (extension-tier points are scored separately)."""
    return not check.regression and check.tier == 'book'


def counts(tier: str, profile: str) -> bool:
    """Whether a check of `tier` decides the verdict under `profile`: book-tier ones always,
    extension-tier ones only under the `extension` profile (under `book` they are advice: shown
    apart, scored separately, never decisive)."""
    return tier == 'book' or profile == 'extension'


def assignment_possible(assignment, tier: str = 'book') -> float:
    """The points an assignment's own checks of `tier` are worth."""
    return sum(c.points for c in assignment.checks if c.tier == tier)


def decide(results, profile: str = 'book', policy=None, timing=None, step=None) -> Verdict:
    """The verdict and the score of a submission's check results under `policy` (None: the
    default policy), `timing` (a `policy.Timing`, None: not late); `step` is the step graded
    (for the words of a rollback)."""
    if profile not in PROFILES:
        raise ValueError('unknown profile {!r}'.format(profile))

    def deciding(r):
        return counts(r.use.tier, profile)

    own_failed = [r for r in results if not r.regression and deciding(r) and r.failing]
    reg_failed = [r for r in results if r.regression and deciding(r) and r.failing]
    unjudged = [r for r in results if deciding(r) and r.unjudged]

    def total(tier, f):
        return sum(f(r) for r in results if r.use.tier == tier)

    if reg_failed:
        verdict = 'rollback'
        reason = rollback_reason(reg_failed, own_failed, step)
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
        advice = [r for r in results if not deciding(r) and r.failing]
        reason = 'every check of this step and every regression check passes'
        if advice:   # true of the checks that count; the others are advice
            reason = ('every counted check of this step and every counted regression check '
                      'passes ({} advice check{} beyond the book, not counted, fail{})').format(
                len(advice), '' if len(advice) == 1 else 's', 's' if len(advice) == 1 else '')
    checks_earned, book_possible = total('book', earned), total('book', possible)
    final, adjustments = apply_policy(verdict, checks_earned, book_possible, reg_failed, policy,
                                      timing)
    return Verdict(verdict, reason, final, book_possible,
                   total('extension', earned), total('extension', possible),
                   tuple(adjustments), checks_earned)


def rollback_reason(reg_failed, own_failed, step=None) -> str:
    """What a rollback says: the earliest earlier step whose contract broke, its first failing
    check, how many more fail; and what is not known (whether that step's code ever passed)."""
    steps = sorted({r.use.step for r in reg_failed})
    first = next(r for r in reg_failed if r.use.step == steps[0])
    more = len(reg_failed) - 1
    text = 'step {}\'s contract, which {} must keep, fails: {}: {}'.format(
        steps[0], 'step {}'.format(step) if step is not None else 'this step', first.use.id,
        first.message.split(' (and ')[0])
    if more:
        text += ' (and {} more check{} of step{} {})'.format(
            more, '' if more == 1 else 's', '' if len(steps) == 1 else 's',
            ', '.join(map(str, steps)))
    if own_failed:
        text += '; {} of this step\'s own check{} fail too'.format(
            len(own_failed), '' if len(own_failed) == 1 else 's')
    return text + ('. Fix the earlier code first (this grading cannot tell whether step {} ever '
                   'passed; `dezero-grade history` can)'.format(steps[0]))


def _points(x: float) -> float:
    return round(x + 0.0, 4)


def apply_policy(verdict, checks_earned, possible, reg_failed, policy=None, timing=None):
    """(the final book-tier points, the adjustments that led there) for a verdict whose checks
    earned `checks_earned` of `possible`; `reg_failed` are the failing deciding regression
    checks. A rollback loses points (never ending at full marks), then lateness a fraction."""
    if policy is None:
        from dezero_grader.scoring.policy import DEFAULT as policy
    points, adjustments = checks_earned, []
    if verdict == 'rollback':
        if policy.rollback == 'cap':
            cap = policy.rollback_cap * possible
            if points > cap:
                adjustments.append({'kind': 'rollback', 'points': _points(cap - points),
                                    'reason': 'a rollback earns at most {:g}% of the points '
                                              '(course policy)'.format(100 * policy.rollback_cap)})
                points = cap
        else:
            cost = sum(max(r.use.points, ROLLBACK_MIN_COST) for r in reg_failed)
            taken = min(cost, points)
            if taken > 0 or cost > 0:
                adjustments.append({'kind': 'rollback', 'points': _points(-taken),
                                    'reason': '{} failing regression check(s) of earlier steps '
                                              'cost {:g} point(s)'.format(len(reg_failed), cost),
                                    'checks': [r.use.id for r in reg_failed]})
            points -= taken
    fraction, late = late_fraction(policy.late, timing)
    if late is not None and points > 0 and fraction > 0:
        taken = points * fraction
        adjustments.append(dict(late, kind='late', points=_points(-taken),
                                reason='handed in {} late: {:g}% taken (course policy)'.format(
                                    _duration(late['minutes_late']), 100 * fraction)))
        points -= taken
    elif late is not None:
        adjustments.append(dict(late, kind='late', points=0.0,
                                reason='handed in {} late: no points taken'.format(
                                    _duration(late['minutes_late']))))
    return _points(max(points, 0.0)), adjustments


def late_fraction(late, timing):
    """(the fraction of the points lateness takes, a record of the lateness or None when the
    submission is on time or its times are unknown)."""
    if timing is None or timing.submitted_at is None or timing.due is None:
        return 0.0, None
    minutes = (timing.submitted_at - timing.due).total_seconds() / 60.0
    if minutes <= late.grace_minutes:
        return 0.0, None
    days = math.ceil((minutes - late.grace_minutes) / 1440.0 - 1e-9)
    fraction = min(late.max_penalty, days * late.penalty_per_day)
    return fraction, {'minutes_late': round(minutes, 2), 'days_late': days,
                      'fraction': round(fraction, 6),
                      'submitted_at': timing.submitted_at.isoformat(),
                      'due': timing.due.isoformat(), 'source': timing.source}


def _duration(minutes: float) -> str:
    if minutes < 120:
        return '{:.0f} min'.format(minutes)
    if minutes < 2 * 1440:
        return '{:.1f} h'.format(minutes / 60)
    return '{:.1f} days'.format(minutes / 1440)


def invalid(reason: str, assignment=None) -> Verdict:
    """The verdict of a submission that could not be graded: nothing earned of what `assignment`
    (None: nothing) is worth."""
    if assignment is None:
        return Verdict('invalid', reason, 0.0, 0.0, 0.0, 0.0)
    return Verdict('invalid', reason, 0.0, assignment_possible(assignment, 'book'), 0.0,
                   assignment_possible(assignment, 'extension'))


def status_of(findings) -> str:
    """One status for a check from its findings (the rule is `dezero_grader.records.status.combine`)."""
    return status.combine(f.status for f in findings)
