"""LTI 1.3 Assignment and Grade Services: a batch's scorecards → AGS Score objects.

Format only. Each graded submission becomes one Score (`userId`, `scoreGiven`, `scoreMaximum`,
`comment`, `timestamp`, `activityProgress`, `gradingProgress`) that a tool POSTs as is to the
line item's `/scores` endpoint (media type application/vnd.ims.lis.v1.score+json); the document
also carries the line item the scores belong to. `scoreGiven` is the scorecard's book-tier
score, `timestamp` the time the scorecard was written, the comment the verdict and the first
failing checks. A grade is final (`FullyGraded`, `Completed`) for every verdict: an invalid
submission's 0 is its grade.

`userId` comes from the roster's `lti_user_id`; without a roster, the submission id is taken to
be the learner's LTI user id (name submission folders after it). Validated against
`schemas/lti-ags-scores.schema.json` before writing.
"""
from __future__ import annotations

import datetime
from pathlib import Path

from grader import schema
from grader.export import ExportError, Written
from grader.record import Scorecard

SCHEMA = 'lti-ags-scores'
COMMENT_CHARS = 1000


def timestamp(generated_at: str) -> str:
    """The scorecard's UTC time as ISO 8601 with sub-second precision, as AGS asks."""
    moment = datetime.datetime.strptime(generated_at, '%Y-%m-%dT%H:%M:%SZ').replace(
        tzinfo=datetime.timezone.utc)
    return moment.isoformat(timespec='milliseconds')


def comment(card: Scorecard) -> str:
    score = card.score
    text = '{}: {:g}/{:g}. {}'.format(card.verdict.upper(), score.earned, score.possible,
                                      card.reason)
    failing = card.failing
    if failing:
        text += ' Failing: ' + '; '.join('{} ({})'.format(c.title, c.id)
                                         for c in failing[:5])
        if len(failing) > 5:
            text += '; and {} more'.format(len(failing) - 5)
    if len(text) > COMMENT_CHARS:
        text = text[:COMMENT_CHARS - 1] + '…'
    return text


def document(graded, roster=None):
    """(the validated AGS document, warnings)."""
    if not graded.possible > 0:
        raise ExportError('step {} has no points: an AGS scoreMaximum must be positive'.format(
            graded.step))
    people = roster.by_submission() if roster is not None else None
    scores, warnings = [], []
    for sub in graded.submissions:
        if people is None:
            user = sub.id
        else:
            person = people.get(sub.id)
            user = person.lti_user_id if person is not None else ''
            if not user:
                warnings.append('{}: {} in the roster, left out of the LTI scores'.format(
                    sub.id, 'no lti_user_id' if person is not None else 'not'))
                continue
        card = sub.card
        scores.append({
            'userId': user,
            'scoreGiven': float(card.score.earned),
            'scoreMaximum': float(card.score.possible),
            'comment': comment(card),
            'timestamp': timestamp(card.generated_at),
            'activityProgress': 'Completed',
            'gradingProgress': 'FullyGraded',
        })
    for u in graded.without_scorecard:
        warnings.append('{}: no scorecard, no score ({})'.format(u['id'], u['reason']))
    scores.sort(key=lambda s: s['userId'])
    out = {'schema_version': '1.0',
           'lineitem': {'label': 'DeZero step {}: {}'.format(graded.step, graded.title),
                        'scoreMaximum': float(graded.possible),
                        'resourceId': 'dezero-step{:02d}'.format(graded.step),
                        'tag': 'dezero-grader'},
           'scores': scores}
    schema.validate(SCHEMA, out)
    return out, warnings


def export(graded, out, roster=None) -> Written:
    doc, warnings = document(graded, roster)
    out = Path(out)
    schema.write_json(out, doc, SCHEMA)
    return Written((out,), tuple(warnings))
