"""The roster: which person handed in which submission, read from the instructor's CSV.

It sits beside the exporters: a batch stores it (validated, as `roster.json`) so that the
summary can say who has not submitted, and the Canvas and LTI exporters use it to turn a
submission id into the identities an LMS matches grades on. Nothing here grades or scores.

The CSV needs a header. Column names are matched case-insensitively, spaces and hyphens read as
underscores, so a Canvas gradebook export with a `Submission` column added works as is:

* `submission` (required; also `submission_id`, `folder`): the folder name or zip stem;
* `student` (or `name`): the display name, "Last, First" for Canvas;
* `id` (or `canvas_id`, `canvas_user_id`): the Canvas user ID;
* `sis_user_id`, `sis_login_id`, `section`;
* `lti_user_id` (or `lti_id`, `sub`): the LTI 1.3 user id of the learner.

Other columns are ignored. A row with an empty submission cell is skipped (Canvas exports carry
a "Points Possible" row and test students); two rows naming the same submission are an error.
"""
from __future__ import annotations

import csv
import io
import json
from dataclasses import dataclass
from pathlib import Path

from grader import schema

SCHEMA_VERSION = '1.0'
FIELDS = ('submission', 'student', 'canvas_id', 'sis_user_id', 'sis_login_id', 'section',
          'lti_user_id')
_ALIASES = {
    'submission': 'submission', 'submission_id': 'submission', 'folder': 'submission',
    'student': 'student', 'name': 'student', 'student_name': 'student',
    'id': 'canvas_id', 'canvas_id': 'canvas_id', 'canvas_user_id': 'canvas_id',
    'sis_user_id': 'sis_user_id', 'sis_login_id': 'sis_login_id', 'section': 'section',
    'lti_user_id': 'lti_user_id', 'lti_id': 'lti_user_id', 'sub': 'lti_user_id',
}


class RosterError(ValueError):
    """The roster CSV cannot be used; the message says what was expected and what was found."""


@dataclass(frozen=True)
class Person:
    submission: str
    student: str = ''
    canvas_id: str = ''
    sis_user_id: str = ''
    sis_login_id: str = ''
    section: str = ''
    lti_user_id: str = ''

    def to_json(self) -> dict:
        return {name: getattr(self, name) for name in FIELDS}


@dataclass(frozen=True)
class Roster:
    source: str
    people: tuple

    def by_submission(self) -> dict:
        return {p.submission: p for p in self.people}

    def to_json(self) -> dict:
        return {'schema_version': SCHEMA_VERSION, 'source': self.source,
                'people': [p.to_json() for p in self.people]}


def _column(name: str) -> str:
    return name.strip().lower().replace(' ', '_').replace('-', '_')


def parse_csv(text: str, source: str = 'roster.csv') -> Roster:
    reader = csv.reader(io.StringIO(text))
    try:
        header = next(reader)
    except StopIteration:
        raise RosterError('{} is empty; expected a header row with at least a "submission" '
                          'column'.format(source)) from None
    columns = {}
    for i, name in enumerate(header):
        field = _ALIASES.get(_column(name))
        if field is not None and field not in columns:
            columns[field] = i
    if 'submission' not in columns:
        raise RosterError('{} has no "submission" column (the folder name or zip stem each person '
                          'handed in); found columns: {}'.format(
                              source, ', '.join(repr(h) for h in header) or 'none'))
    people, seen = [], {}
    for line, row in enumerate(reader, start=2):
        def cell(field):
            i = columns.get(field)
            return row[i].strip() if i is not None and i < len(row) else ''
        submission = cell('submission')
        if not submission:
            continue
        if submission in seen:
            raise RosterError('{}: submission {!r} appears on lines {} and {}; each submission '
                              'belongs to one person'.format(source, submission, seen[submission],
                                                             line))
        seen[submission] = line
        people.append(Person(**{f: cell(f) for f in FIELDS}))
    roster = Roster(source, tuple(people))
    schema.validate('roster', roster.to_json())
    return roster


def read_csv(path) -> Roster:
    path = Path(path)
    try:
        text = path.read_text(encoding='utf-8-sig')
    except FileNotFoundError:
        raise RosterError('there is no roster file at {}'.format(path)) from None
    except UnicodeDecodeError as exc:
        raise RosterError('{} is not UTF-8 text ({}); save the roster as CSV UTF-8'.format(
            path, exc.reason)) from None
    return parse_csv(text, path.name)


def from_json(document: dict) -> Roster:
    problems = schema.errors('roster', document)
    if problems:
        raise RosterError('roster.json does not follow its schema: ' + '; '.join(problems[:3]))
    return Roster(document['source'], tuple(Person(**p) for p in document['people']))


def load_json(path) -> Roster:
    try:
        with open(path, encoding='utf-8') as f:
            return from_json(json.load(f))
    except (OSError, ValueError) as exc:
        if isinstance(exc, RosterError):
            raise
        raise RosterError('cannot read {}: {}'.format(path, exc)) from None


def write_json(path, roster: Roster) -> None:
    schema.write_json(path, roster.to_json(), 'roster')
