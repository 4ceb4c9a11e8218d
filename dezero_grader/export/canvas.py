"""Canvas: a batch's scorecards → a gradebook CSV that Canvas's "Import" takes.

Format only. The columns are Canvas's own gradebook layout — `Student`, `ID`, `SIS User ID`,
`SIS Login ID`, `Section` — then one assignment column headed `Name (ID)` (or just `Name`, which
makes the import create a new assignment), with the "Points Possible" row Canvas exports under
the header. The score is the scorecard's book-tier score. The roster maps submission ids to
people (a person is found by any of their ids, `Roster.match`); submissions it does not name,
people without a Canvas id, people with no scorecard, and submissions the grader failed on
(`grader-error`: no grade) are left out (the import leaves their grades as they are) and said to
be. A gradebook with no row is not written.

The rows are built as an intermediate record validated against
`schemas/canvas-gradebook.schema.json`, rendered, then read back and checked structurally. A
text cell that a spreadsheet would run as a formula (a roster name `=HYPERLINK(...)`) is written
with a leading `'` (`dezero_grader.export.spreadsheet_text`).
"""
from __future__ import annotations

import csv
import io
from pathlib import Path

from dezero_grader.export import ExportError, Written, lateness, spreadsheet_text, without_scorecard
from dezero_grader.records import schema

SCHEMA = 'canvas-gradebook'
HEADER = ('Student', 'ID', 'SIS User ID', 'SIS Login ID', 'Section')
POINTS_ROW = '    Points Possible'   # as Canvas writes it in its own exports


def default_name(graded) -> str:
    return 'DeZero step {}: {}'.format(graded.step, graded.title)


def record(graded, roster, *, name: str | None = None, assignment_id: str | None = None):
    """(the validated record, left out as (who, why))."""
    if roster is None:
        raise ExportError('the Canvas export needs a roster to know who each submission belongs '
                          'to: pass --roster CSV (columns: submission, student, id, sis_user_id, '
                          'sis_login_id, section) here or to batch')
    name = (name or default_name(graded)).strip()
    if not name or '\n' in name or '\r' in name:
        raise ExportError('the assignment name must be one non-empty line, found {!r}'.format(name))
    if assignment_id is not None and not str(assignment_id).isdigit():
        raise ExportError('the Canvas assignment id is a number (the end of the assignment\'s '
                          'URL), found {!r}'.format(assignment_id))
    column = '{} ({})'.format(name, assignment_id) if assignment_id else name
    found, without, _ = roster.match(s.id for s in graded.submissions)
    rows, left_out = [], []
    for sub in graded.submissions:
        person = found.get(sub.id)
        if person is None:
            left_out.append((sub.id, 'not in the roster'))
            continue
        if sub.card.grader_failed:   # no grade: the import keeps the one Canvas has
            left_out.append((sub.id, 'not graded: the grader failed on it (grader-error), not '
                             'the submission; grade it again'))
            continue
        if not (person.canvas_id or person.sis_user_id or person.sis_login_id):
            left_out.append((sub.id, 'no ID, SIS User ID or SIS Login ID in the roster ({}): '
                             'Canvas cannot match it to a student'.format(
                                 person.student or 'no name')))
            continue
        rows.append({'student': person.student, 'id': person.canvas_id,
                     'sis_user_id': person.sis_user_id, 'sis_login_id': person.sis_login_id,
                     'section': person.section,
                     'score': float(sub.card.score.earned)})
    left_out += without_scorecard(graded, roster, without)
    rows.sort(key=lambda r: (r['student'].lower(), r['id'], r['sis_user_id']))
    doc = {'schema_version': '1.0',
           'assignment': {'name': name, 'id': str(assignment_id) if assignment_id else None,
                          'points_possible': float(graded.possible), 'column': column},
           'rows': rows}
    schema.validate(SCHEMA, doc)
    return doc, left_out


def _number(x: float) -> str:
    return '{:g}'.format(x)


_TEXT_COLUMNS = ('student', 'id', 'sis_user_id', 'sis_login_id', 'section')


def _cells(r: dict) -> list:
    """A record row's text cells as written: a formula neutralised (`spreadsheet_text`)."""
    return [spreadsheet_text(r[k]) for k in _TEXT_COLUMNS]


def render(doc: dict) -> str:
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator='\r\n')
    writer.writerow(HEADER + (spreadsheet_text(doc['assignment']['column']),))
    writer.writerow((POINTS_ROW, '', '', '', '', _number(doc['assignment']['points_possible'])))
    for r in doc['rows']:
        writer.writerow(_cells(r) + [_number(r['score'])])
    return buf.getvalue()


def check(text: str, doc: dict) -> None:
    """Read the CSV back: Canvas's header, the points row, one row per record row with the same
    identities and score. Raises ExportError (our bug) when it does not hold."""
    rows = list(csv.reader(io.StringIO(text)))
    expected_header = list(HEADER) + [spreadsheet_text(doc['assignment']['column'])]
    problems = []
    if not rows or rows[0] != expected_header:
        problems.append('header {} instead of {}'.format(rows[0] if rows else None, expected_header))
    elif len(rows) != len(doc['rows']) + 2:
        problems.append('{} data rows instead of {}'.format(len(rows) - 2, len(doc['rows'])))
    else:
        if rows[1][0].strip() != 'Points Possible' or float(rows[1][5]) != doc['assignment']['points_possible']:
            problems.append('the second row is not the Points Possible row: {}'.format(rows[1]))
        for got, want in zip(rows[2:], doc['rows']):
            if len(got) != 6 or got[:5] != _cells(want) \
                    or float(got[5]) != want['score']:
                problems.append('row {} does not match {}'.format(got, want))
                break
    if problems:
        raise ExportError('the Canvas CSV failed its structural check: ' + '; '.join(problems))


def export(graded, out, roster, *, name: str | None = None,
           assignment_id: str | None = None) -> Written:
    """Write the gradebook CSV; nothing at all when it holds no row (an import of it would
    change nothing and look fine)."""
    doc, left_out = record(graded, roster, name=name, assignment_id=assignment_id)
    text = render(doc)
    check(text, doc)
    out = Path(out)
    if doc['rows']:
        schema.write_text_atomic(out, text)
    # Canvas's import takes a score per column and nothing else: the lateness is said here
    late = ['{}: late work, its score is after the penalty: {}'.format(s.id, lateness(s.card))
            for s in graded.submissions if lateness(s.card)]
    return Written((out,) if doc['rows'] else (), tuple(late), len(doc['rows']), 'row',
                   tuple(left_out))
