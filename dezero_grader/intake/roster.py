"""The roster: which person handed in which submission, read from the instructor's CSV.

An input of the instructor's, like the policy: a batch stores it (validated, as `roster.json`) so
that the summary can say who has not submitted, and the Canvas and LTI exporters use it to turn
a submission id into the identities an LMS matches grades on. Nothing here grades or scores.

The CSV needs a header. Column names are matched case-insensitively, spaces and hyphens read as
underscores, so a Canvas gradebook export with a `Submission` column added works as is:

* `submission` (required; also `submission_id`, `folder`): the folder name or zip stem;
* `student` (or `name`): the display name, "Last, First" for Canvas;
* `id` (or `canvas_id`, `canvas_user_id`): the Canvas user ID;
* `sis_user_id`, `sis_login_id`, `section`;
* `lti_user_id` (or `lti_id`, `sub`): the LTI 1.3 user id of the learner;
* `email`, and `sid` (Gradescope's student id, read as the SIS User ID);
* `submitted_at` (or `submission_time`, `submitted`): when the submission was handed in, for the
  policy's late penalty (RFC 3339 with its UTC offset, or Gradescope's `2026-05-02 10:30:00 -0700`),
  and `due` (or `due_at`, `due_date`): that learner's own due time, where it is not the policy's.

Other columns are ignored. A row with an empty submission cell is skipped (Canvas exports carry
a "Points Possible" row and test students); two rows naming the same submission are an error.

Two exports are also read as they come, without a submission column (a BOM and quoting as
spreadsheets write them are fine):

* Canvas's gradebook export (`Student`, `ID`, `SIS User ID`, `SIS Login ID`, `Section`, then one
  column per assignment): the "Points Possible" row, other rows without a student id and the
  test student ("Student, Test") are skipped. A submission may be named by any of the person's
  ids: SIS Login ID (the submission id the roster records when there is one), SIS User ID, or
  Canvas ID;
* Gradescope's roster export (`First Name`, `Last Name`, `SID`, `Email`, `Role`, ...), and its
  grades export of one assignment (the same columns, then `Submission ID`, `Submission Time`,
  `Lateness (H:M:S)`, ...): staff rows are skipped; a submission may be named by the SID (recorded
  when there is one), the email, the email's part before the @, or `submission_<Submission ID>`
  (the folder name of Gradescope's "Export Submissions"); `Submission Time` is read as
  `submitted_at`.

An instructor may add columns to either export for what it lacks -- `lti_user_id` for the LTI
scores, `email`, `submitted_at`, `due` -- under any of the names above; they are read as in a
roster of one's own.

Whatever the roster was read from, a person is found by any of their ids (`match`): the
submission id, the aliases, the Canvas ID, SIS User ID, SIS Login ID, LTI user id, the email and
its part before the @ -- an id two people share names neither.
"""
from __future__ import annotations

import csv
import io
import json
from dataclasses import dataclass, replace
from pathlib import Path

from dezero_grader.records import schema

SCHEMA_VERSION = '1.0'
FIELDS = ('submission', 'student', 'canvas_id', 'sis_user_id', 'sis_login_id', 'section',
          'lti_user_id', 'email')
OPTIONAL = ('submitted_at', 'due')   # written to roster.json only when set
_ALIASES = {
    'submission': 'submission', 'submission_id': 'submission', 'folder': 'submission',
    'student': 'student', 'name': 'student', 'student_name': 'student',
    'id': 'canvas_id', 'canvas_id': 'canvas_id', 'canvas_user_id': 'canvas_id',
    'sis_user_id': 'sis_user_id', 'sis_login_id': 'sis_login_id', 'section': 'section',
    'lti_user_id': 'lti_user_id', 'lti_id': 'lti_user_id', 'sub': 'lti_user_id',
    'email': 'email', 'e_mail': 'email', 'sid': 'sis_user_id',
    'submitted_at': 'submitted_at', 'submission_time': 'submitted_at', 'submitted': 'submitted_at',
    'due': 'due', 'due_at': 'due', 'due_date': 'due',
}
CANVAS_COLUMNS = ('student', 'id', 'sis_user_id', 'sis_login_id', 'section')
GRADESCOPE_COLUMNS = ('first_name', 'last_name', 'email')
TEST_STUDENTS = frozenset({'student, test', 'test student'})


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
    email: str = ''
    aliases: tuple = ()
    submitted_at: str = ''   # when they handed in, as the roster says it (late penalty)
    due: str = ''            # their own due time, where the roster gives one

    def to_json(self) -> dict:
        return dict({name: getattr(self, name) for name in FIELDS}, aliases=list(self.aliases),
                    **{name: getattr(self, name) for name in OPTIONAL if getattr(self, name)})

    @property
    def keys(self) -> tuple:
        """Every submission id that names this person."""
        return (self.submission,) + tuple(a for a in self.aliases if a != self.submission)

    @property
    def ids(self) -> tuple:
        """Every id of this person, the submission ids first: what `Roster.match` finds them by."""
        local = self.email.split('@')[0] if '@' in self.email else ''
        found = self.keys + (self.canvas_id, self.sis_login_id, self.sis_user_id,
                             self.lti_user_id, self.email, local)
        return tuple(dict.fromkeys(i for i in found if i))


@dataclass(frozen=True)
class Roster:
    source: str
    people: tuple

    def by_submission(self) -> dict:
        """Id -> person, for every id that names one person (`Person.ids`): each person's
        submission id first, then their aliases, then their other ids, an id taken at an earlier
        level never given to another person, and an id two people share at its level left out."""
        out = {}
        for level in (lambda p: (p.submission,), lambda p: p.keys[1:], lambda p: p.ids):
            owners = {}
            for p in self.people:
                for key in level(p):
                    if key not in out:
                        owners.setdefault(key, []).append(p)
            out.update({k: ps[0] for k, ps in owners.items() if len(ps) == 1})
        return out

    def match(self, ids):
        """(submission id -> person for the `ids` a person is found by, the people none of them
        names, the ids no one is found by). A person named by several ids is found by the first
        in sorted order."""
        named = self.by_submission()
        found, owner = {}, {}
        for i in sorted(ids):
            person = named.get(i)
            if person is not None and id(person) not in owner:
                owner[id(person)] = i
                found[i] = person
        return (found, [p for p in self.people if id(p) not in owner],
                sorted(i for i in ids if i not in found))

    @property
    def has_lti_ids(self) -> bool:
        return any(p.lti_user_id for p in self.people)

    def to_json(self) -> dict:
        return {'schema_version': SCHEMA_VERSION, 'source': self.source,
                'people': [p.to_json() for p in self.people]}


def _column(name: str) -> str:
    return name.strip().lower().replace(' ', '_').replace('-', '_')


def parse_csv(text: str, source: str = 'roster.csv') -> Roster:
    text = text.lstrip('\ufeff')
    reader = csv.reader(io.StringIO(text))
    try:
        header = next(reader)
    except StopIteration:
        raise RosterError('{} is empty; expected a header row with at least a "submission" '
                          'column'.format(source)) from None
    except csv.Error as exc:
        raise RosterError('{} is not a CSV file a spreadsheet writes: {}'.format(source, exc)) from None
    names = [_column(h) for h in header]
    if 'submission' not in names:
        if all(c in names for c in CANVAS_COLUMNS):
            return _from_export(reader, names, source, _canvas_person)
        if all(c in names for c in GRADESCOPE_COLUMNS):
            return _from_export(reader, names, source, _gradescope_person)
    columns = {}
    for i, name in enumerate(header):
        field = _ALIASES.get(_column(name))
        if field is not None and field not in columns:
            columns[field] = i
    if 'submission' not in columns:
        raise RosterError('{} has no "submission" column (the folder name or zip stem each person '
                          'handed in), and is neither a Canvas gradebook export (Student, ID, SIS '
                          'User ID, SIS Login ID, Section) nor a Gradescope roster (First Name, '
                          'Last Name, SID, Email, Role); found columns: {}'.format(
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
        people.append(Person(**{f: cell(f) for f in FIELDS + OPTIONAL}))
    roster = Roster(source, tuple(people))
    schema.validate('roster', roster.to_json())
    return roster


def _canvas_person(cell):
    student = cell('student')
    if student.strip().lower() in ('points possible', '') or student.lower() in TEST_STUDENTS:
        return None
    ids = [cell('sis_login_id'), cell('sis_user_id'), cell('id')]
    ids = [i for i in ids if i]
    if not ids:
        return None   # a row of Canvas's own (manual posting, muted...) rather than a person
    return Person(submission=ids[0], student=student, canvas_id=cell('id'),
                  sis_user_id=cell('sis_user_id'), sis_login_id=cell('sis_login_id'),
                  section=cell('section'), aliases=tuple(ids[1:]))


def _gradescope_person(cell):
    role = cell('role').lower()
    if role and role != 'student':
        return None   # instructors, TAs, readers
    email = cell('email')
    # a grades export's Submission ID names the folder of Gradescope's "Export Submissions"
    export_folder = 'submission_{}'.format(cell('submission_id')) if cell('submission_id') else ''
    ids = [cell('sid'), email, email.split('@')[0] if '@' in email else '', export_folder]
    ids = list(dict.fromkeys(i for i in ids if i))
    if not ids:
        return None
    first, last = cell('first_name'), cell('last_name')
    student = ', '.join(n for n in (last, first) if n) or cell('name')
    sections = cell('sections') or cell('section')
    return Person(submission=ids[0], student=student, section=sections, email=email,
                  sis_user_id=cell('sid'), aliases=tuple(ids[1:]),
                  submitted_at=cell('submission_time'))


ADDED = ('lti_user_id', 'email', 'submitted_at', 'due')   # columns an instructor adds to an export


def _from_export(reader, names, source, person_of):
    """People from a Canvas gradebook or Gradescope roster export, with the `ADDED` columns an
    instructor put in; every id that names someone names one person only."""
    index, added = {}, {}
    for i, name in enumerate(names):
        index.setdefault(name, i)
        if _ALIASES.get(name) in ADDED:
            added.setdefault(_ALIASES[name], i)
    people, owner = [], {}
    try:
        for line, row in enumerate(reader, start=2):
            def cell(field):
                i = index.get(field)
                return row[i].strip() if i is not None and i < len(row) else ''
            person = person_of(cell)
            if person is None:
                continue
            extra = {field: row[i].strip() for field, i in added.items()
                     if i < len(row) and row[i].strip() and not getattr(person, field)}
            person = replace(person, **extra) if extra else person
            for key in person.keys:
                if key in owner:
                    raise RosterError('{}: {!r} names the people on lines {} and {}; each id '
                                      'belongs to one person'.format(source, key, owner[key], line))
                owner[key] = line
            people.append(person)
    except csv.Error as exc:
        raise RosterError('{} cannot be read as CSV: {}'.format(source, exc)) from None
    if not people:
        raise RosterError('{} lists no students (only its header, the points row, test students '
                          'or staff)'.format(source))
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
    return Roster(document['source'], tuple(
        Person(**dict(p, aliases=tuple(p.get('aliases', ())))) for p in document['people']))


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
