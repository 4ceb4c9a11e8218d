"""When each submission of a batch was handed in, for the course policy's late penalty.

Where it sits: read before a batch grades (`batch --times FILE`, or the roster's own column), it
gives each submission a `policy.Timing` that `score.apply_policy` turns into a late penalty in
the scorecard; the summary and the exports read the lateness from there. Nothing here scores.

The times come from what instructors have, read as the platforms write them:

* a roster column: a roster CSV (`--roster`) with a `submitted_at` column (or `submission_time`,
  `submitted`), and optionally `due`, each learner's own due time (an extension); Gradescope's
  grades export of an assignment is such a roster as it comes (`Submission Time`);
* a times file (`--times times.csv`): the same columns, a `submission` column (or any id of the
  roster's people: SID, email, Canvas ID) and `submitted_at`;
* Gradescope's `submission_metadata.yml`, in the folder "Export Submissions" downloads: one entry
  per submission folder (`submission_123456`) with its `:created_at:` time and its
  `:submitters:` (`:sid:`, `:email:`), by which a folder renamed after its learner is found too;
* Canvas's submissions, as its API lists them (`GET .../assignments/:id/submissions`, saved as
  JSON): `user_id`, `submitted_at` and `cached_due_date` (the learner's own due date, overrides
  included) of each; a submission is found by the user id, the roster person whose Canvas ID it
  is, or the user id in the file names of Canvas's "Download Submissions"
  (`doejane_1234_56789_step52.zip`, `doejane_late_1234_...`).

A time must say its UTC offset (a time without one is a different moment on each machine). A
submission the times do not name is graded without a lateness and listed as such in the summary.
"""
from __future__ import annotations

import datetime
import json
import re
from dataclasses import dataclass
from pathlib import Path

from dezero_grader.intake import roster as roster_mod
from dezero_grader.scoring import policy as policy_mod

# Canvas's "Download Submissions" names each file `lastfirst[_late]_USERID_SUBMISSIONID_name`
_CANVAS_DOWNLOAD = re.compile(r'^[^_]*?(?:_late)?_(\d+)_\d+(?:_|$)', re.I)


class TimesError(ValueError):
    """The times cannot be used; the message says what was expected and what was found."""


@dataclass(frozen=True)
class HandIn:
    """When one submission was handed in, and its own due time where the source gives one."""
    submitted_at: datetime.datetime
    due: datetime.datetime | None = None


@dataclass(frozen=True)
class Times:
    """The hand-in times a source gives, by every id that names a submission."""
    source: str                 # the file they were read from (or the roster's)
    by_id: tuple                # ((id, HandIn), ...)

    def of(self, submission_id: str, roster=None) -> HandIn | None:
        """The time of the submission `submission_id`: by that id, the Canvas user id in a file
        name Canvas gave it, or any id of the roster person it belongs to."""
        table = dict(self.by_id)
        ids = [submission_id]
        canvas = _CANVAS_DOWNLOAD.match(submission_id)
        if canvas:
            ids.append(canvas.group(1))
        if roster is not None:
            person = roster.by_submission().get(submission_id)
            if person is not None:
                ids += person.ids
        return next((table[i] for i in ids if i in table), None)

    def timing(self, submission_id: str, course, roster=None) -> policy_mod.Timing | None:
        """The `policy.Timing` of one submission (its own due time first, else the policy's),
        None where the times do not name it."""
        found = self.of(submission_id, roster)
        if found is None:
            return None
        return policy_mod.Timing(found.submitted_at, found.due or course.late.due, self.source)

    def to_json(self) -> dict:
        return {'source': self.source, 'known': len(self.by_id)}


def _time(text, what) -> datetime.datetime:
    try:
        return policy_mod.parse_time(text, what)
    except policy_mod.PolicyError as e:
        raise TimesError(str(e)) from None


def from_roster(roster) -> Times | None:
    """The times a roster's own `submitted_at` column gives (None when it has none)."""
    pairs = []
    for person in roster.people:
        if person.submitted_at:
            hand_in = HandIn(_time(person.submitted_at, '{}: the submission time of {}'.format(
                roster.source, person.submission)),
                _time(person.due, '{}: the due time of {}'.format(roster.source, person.submission))
                if person.due else None)
            pairs += [(i, hand_in) for i in person.ids]
    return Times('roster ' + roster.source, _unique(pairs)) if pairs else None


def read(path) -> Times:
    """The times in a file: a times or roster CSV, Gradescope's submission_metadata.yml, or
    Canvas's submissions JSON (told apart by their content)."""
    path = Path(path)
    try:
        text = path.read_text(encoding='utf-8-sig')
    except FileNotFoundError:
        raise TimesError('there is no times file at {}'.format(path)) from None
    except (OSError, UnicodeDecodeError) as e:
        raise TimesError('{} cannot be read as UTF-8 text: {}'.format(path, e)) from None
    if path.suffix.lower() in ('.yml', '.yaml'):
        return _gradescope_metadata(text, path.name)
    if path.suffix.lower() == '.json':
        return _canvas_submissions(text, path.name)
    return _csv_times(text, path.name)


def _csv_times(text, source) -> Times:
    try:
        roster = roster_mod.parse_csv(text, source)
    except roster_mod.RosterError as e:
        raise TimesError('{} is not a times file: {}'.format(source, e)) from None
    times = from_roster(roster)
    if times is None:
        raise TimesError('{} has no submission times: expected a submitted_at column (or '
                         'submission_time, or Gradescope\'s Submission Time) beside the '
                         'submission ids'.format(source))
    return Times(source, times.by_id)


def _gradescope_metadata(text, source) -> Times:
    try:
        import yaml
    except ImportError:   # pragma: no cover - a dependency of the grader
        raise TimesError('reading {} needs PyYAML (pip install PyYAML)'.format(source)) from None
    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError as e:
        raise TimesError('{} is not the YAML Gradescope writes: {}'.format(
            source, str(e).splitlines()[0])) from None
    if not isinstance(doc, dict):
        raise TimesError('{} is not Gradescope\'s submission_metadata.yml (one entry per '
                         'submission folder, each with :created_at: and :submitters:)'.format(source))
    pairs = []
    for folder, entry in doc.items():
        if not isinstance(entry, dict) or ':created_at' not in entry:
            raise TimesError('{}: the entry {!r} has no :created_at: time'.format(source, folder))
        hand_in = HandIn(_moment(entry[':created_at'], '{}: :created_at: of {}'.format(
            source, folder)))
        ids = [str(folder)]
        for who in entry.get(':submitters') or ():
            if isinstance(who, dict):
                email = str(who.get(':email') or '')
                ids += [str(who.get(':sid') or ''), email, email.split('@')[0] if '@' in email
                        else '']
        pairs += [(i, hand_in) for i in ids if i]
    return Times(source, _unique(pairs))


def _canvas_submissions(text, source) -> Times:
    try:
        doc = json.loads(text)
    except ValueError as e:
        raise TimesError('{} is not JSON: {}'.format(source, e)) from None
    if isinstance(doc, dict) and isinstance(doc.get('submissions'), list):
        doc = doc['submissions']
    if not isinstance(doc, list) or not all(isinstance(s, dict) for s in doc):
        raise TimesError('{} is not Canvas\'s list of submissions (objects with user_id and '
                         'submitted_at)'.format(source))
    pairs = []
    for s in doc:
        if not s.get('submitted_at') or s.get('user_id') is None:
            continue   # nothing handed in (Canvas lists every learner)
        what = '{}: the submission of user {}'.format(source, s['user_id'])
        hand_in = HandIn(_time(s['submitted_at'], what + ' (submitted_at)'),
                         _time(s['cached_due_date'], what + ' (cached_due_date)')
                         if s.get('cached_due_date') else None)
        user = s.get('user') if isinstance(s.get('user'), dict) else {}
        ids = [str(s['user_id'])] + [str(user[k]) for k in ('login_id', 'sis_user_id', 'email')
                                     if user.get(k)]
        pairs += [(i, hand_in) for i in ids]
    if not pairs:
        raise TimesError('{} lists no submission with a submitted_at time'.format(source))
    return Times(source, _unique(pairs))


def _moment(value, what) -> datetime.datetime:
    """A time YAML read (a datetime) or left as text (Ruby writes `2026-05-02 10:30:00.123 -07:00`)."""
    if isinstance(value, datetime.datetime):
        if value.tzinfo is None:
            raise TimesError('{} says no UTC offset: {}'.format(what, value))
        return value
    return _time(str(value), what)


def _unique(pairs) -> tuple:
    """(id, HandIn) pairs where each id names one time; an id given two times names neither."""
    seen = {}
    for key, hand_in in pairs:
        seen.setdefault(key, set()).add(hand_in)
    return tuple(sorted((k, next(iter(v))) for k, v in seen.items() if len(v) == 1))
