"""LTI 1.3 Assignment and Grade Services: a batch's scorecards → AGS Score objects.

Format only. Each graded submission becomes one Score (`userId`, `scoreGiven`, `scoreMaximum`,
`comment`, `timestamp`, `activityProgress`, `gradingProgress`) that a tool POSTs as is to the
line item's `/scores` endpoint (media type application/vnd.ims.lis.v1.score+json); the document
also carries the line item the scores belong to. `scoreGiven` is the scorecard's book-tier
score, `timestamp` the time the scorecard was written, the comment the verdict and the first
failing checks. A grade is final (`FullyGraded`, `Completed`) for every verdict: an invalid
submission's 0 is its grade. A scorecard of the grader's own failure (`grader-error`) is no
grade: its Score has `gradingProgress: Failed` and no `scoreGiven`, and the export warns.

`userId` comes from the roster's `lti_user_id` of the person a submission is found by (any of
their ids, `Roster.match`); without a roster, the submission id is taken to be the learner's LTI
user id (name submission folders after it). A submission without one is left out and said to be;
a document with no score is not written. Validated against `schemas/lti-ags-scores.schema.json`
before writing.
"""
from __future__ import annotations

import datetime
from pathlib import Path

from dezero_grader.export import ExportError, Written, lateness, no_scorecard, without_scorecard
from dezero_grader.records import schema
from dezero_grader.scoring.scorecard_read import Scorecard

SCHEMA = 'lti-ags-scores'
COMMENT_CHARS = 1000


def timestamp(generated_at: str) -> str:
    """The scorecard's UTC time as ISO 8601 with sub-second precision, as AGS asks."""
    moment = datetime.datetime.strptime(generated_at, '%Y-%m-%dT%H:%M:%SZ').replace(
        tzinfo=datetime.timezone.utc)
    return moment.isoformat(timespec='milliseconds')


def comment(card: Scorecard) -> str:
    if card.grader_failed:
        return ('Not graded: the grader failed on this submission (not the submission\'s fault); '
                'it will be graded again.')[:COMMENT_CHARS]
    score = card.score
    text = '{}: {:g}/{:g}. {}'.format(card.verdict.upper(), score.earned, score.possible,
                                      card.reason)
    late = lateness(card)
    if late:
        text += '. Late: ' + late
    failing = card.counted_failing
    if failing:
        text += ' Failing: ' + '; '.join('{} ({})'.format(c.title, c.id)
                                         for c in failing[:5])
        if len(failing) > 5:
            text += '; and {} more'.format(len(failing) - 5)
    advice = card.advice_failing
    if advice:   # never a failure: advice, after what counted
        text += ' Advice, not counted (beyond the book): {} check{} to look at ({}).'.format(
            len(advice), '' if len(advice) == 1 else 's', ', '.join(c.id for c in advice[:3])
            + (', ...' if len(advice) > 3 else ''))
    if len(text) > COMMENT_CHARS:
        text = text[:COMMENT_CHARS - 1] + '…'
    return text


def document(graded, roster=None):
    """(the validated AGS document, left out as (who, why), warnings)."""
    if not graded.possible > 0:
        raise ExportError('step {} has no points: an AGS scoreMaximum must be positive'.format(
            graded.step))
    scores, left_out, warnings, found = [], [], [], {}
    if roster is None:
        users = {sub.id: sub.id for sub in graded.submissions}
    else:
        found, without, _ = roster.match(s.id for s in graded.submissions)
        users = {i: p.lti_user_id for i, p in found.items() if p.lti_user_id}
        if not roster.has_lti_ids:
            warnings.append('the roster ({}) has no LTI user ids: LTI scores are posted for a '
                            'learner\'s LTI 1.3 user id (the sub of their launch), so give a '
                            'roster with an lti_user_id column'.format(roster.source))
    for sub in graded.submissions:
        user = users.get(sub.id)
        if not user:
            left_out.append((sub.id, 'no lti_user_id in the roster' if roster is not None
                             and sub.id in found else 'not in the roster'))
            continue
        card = sub.card
        if card.grader_failed:
            # the grader's failure is no grade: AGS's "Failed" grading, and no score to keep
            scores.append({'userId': user, 'comment': comment(card),
                           'timestamp': timestamp(card.generated_at),
                           'activityProgress': 'Submitted', 'gradingProgress': 'Failed'})
            warnings.append('{}: not graded (the grader failed on it): posted as gradingProgress '
                            'Failed with no score; grade it again'.format(sub.id))
            continue
        scores.append({
            'userId': user,
            'scoreGiven': float(card.score.earned),
            'scoreMaximum': float(card.score.possible),
            'comment': comment(card),
            'timestamp': timestamp(card.generated_at),
            'activityProgress': 'Completed',
            'gradingProgress': 'FullyGraded',
        })
    left_out += (no_scorecard(graded) if roster is None
                 else without_scorecard(graded, roster, without))
    scores.sort(key=lambda s: s['userId'])
    out = {'schema_version': '1.0',
           'lineitem': {'label': 'DeZero step {}: {}'.format(graded.step, graded.title),
                        'scoreMaximum': float(graded.possible),
                        'resourceId': 'dezero-step{:02d}'.format(graded.step),
                        'tag': 'dezero-grader'},
           'scores': scores}
    schema.validate(SCHEMA, out)
    return out, left_out, warnings


def export(graded, out, roster=None) -> Written:
    """Write the AGS document; nothing at all when it holds no score (a job that posts it would
    post nothing and look fine)."""
    doc, left_out, warnings = document(graded, roster)
    out = Path(out)
    if doc['scores']:
        schema.write_json(out, doc, SCHEMA)
    return Written((out,) if doc['scores'] else (), tuple(warnings), len(doc['scores']), 'score',
                   tuple(left_out))
