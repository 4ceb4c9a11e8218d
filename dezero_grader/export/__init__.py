"""Exporters: finished scorecards → where grades go (Gradescope, Canvas, LTI 1.3 AGS, JUnit).

The last stage of the data flow. An exporter reads what a batch (or `check --json`) wrote —
scorecards and the batch summary, both validated on reading — and only formats it: it never
runs a check, never decides a verdict and never changes a score. Each format has its schema in
`schemas/`; JSON exports are validated before they are written, and CSV and XML exports are
built as a validated intermediate record, rendered, then checked structurally.

`load(path)` reads either a batch folder (`summary.json`, `scorecards/`, `roster.json`) or a
single scorecard file into a `Graded` record the format modules take; each submission's `card`
is its scorecard as records (`dezero_grader.scoring.scorecard_read.Scorecard`).
"""
from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path

from dezero_grader.intake import roster as roster_mod
from dezero_grader.records import schema, status

FORMATS = ('gradescope', 'canvas', 'lti', 'junit', 'html')
from dezero_grader.scoring.scorecard_read import CheckRecord, Scorecard


class ExportError(ValueError):
    """What was asked cannot be exported; the message says what was expected and found."""


@dataclass(frozen=True)
class Written:
    """What an export wrote: its files and how many `unit`s (rows, scores, suites, pages) they
    hold; what it left out, each `(who, why)`; and other warnings. All of it is said to the
    instructor, and an export that wrote no row fails (`commands.cmd_export`)."""
    paths: tuple
    warnings: tuple = ()
    rows: int = 0
    unit: str = 'row'
    left_out: tuple = ()

    @property
    def left_out_lines(self) -> tuple:
        return tuple('{}: {}'.format(who, why) for who, why in self.left_out)


# what a spreadsheet takes for the start of a formula (OWASP's list for CSV injection)
_FORMULA_START = ('=', '+', '-', '@', '\t', '\r')


def spreadsheet_text(cell: str) -> str:
    """A text cell of a CSV the grader writes, as a spreadsheet shows it and never runs: a cell
    that starts like a formula (`=HYPERLINK(...)`, `+`, `-`, `@`, a tab or a carriage return)
    gets a leading `'`, which spreadsheets read as "this is text" (OWASP's rule)."""
    cell = str(cell)
    return "'" + cell if cell.startswith(_FORMULA_START) else cell


def no_scorecard(graded) -> list:
    """(id, why) of the batch's submissions left without a scorecard: nothing to export."""
    return [(u['id'], 'no scorecard ({}: {})'.format(u['code'], u['reason']))
            for u in graded.without_scorecard]


def without_scorecard(graded, roster, people) -> list:
    """(who, why) of the rostered `people` no scorecard belongs to (each named with their
    submission id), and of the submissions without a scorecard that no one is found by."""
    ungraded = {u['id']: u for u in graded.without_scorecard}
    reached, _, lone = roster.match(ungraded)
    handed = {id(p): ungraded[i] for i, p in reached.items()}
    out = []
    for person in people:
        u = handed.get(id(person))
        out.append(('{} ({})'.format(person.student or person.submission, person.submission),
                    'no scorecard ({}: {})'.format(u['code'], u['reason']) if u else
                    'no scorecard: nothing handed in under any of their ids'))
    return out + [(i, 'no scorecard ({}: {})'.format(ungraded[i]['code'], ungraded[i]['reason']))
                  for i in lone]


@dataclass(frozen=True)
class Submission:
    """One graded submission: its batch id (scorecard file name) and its scorecard."""
    id: str
    scorecard: dict        # the JSON document, as stored

    @functools.cached_property
    def card(self) -> Scorecard:
        return Scorecard.from_document(self.scorecard)


@dataclass(frozen=True)
class Graded:
    """What exporters format: scorecards sorted by id, the summary of their batch (None for a
    single scorecard file), and the batch's roster when one was given."""
    submissions: tuple
    summary: dict | None
    roster: roster_mod.Roster | None
    source: Path

    @property
    def step(self) -> int:
        if self.summary is not None:
            return self.summary['assignment']['step']
        return self.submissions[0].card.step

    @property
    def title(self) -> str:
        if self.summary is not None:
            return self.summary['assignment']['title']
        return self.submissions[0].card.title

    @property
    def possible(self) -> float:
        if self.summary is not None:
            return self.summary['assignment']['possible']
        return self.submissions[0].card.score.possible

    @property
    def without_scorecard(self) -> list:
        """Ungraded entries of the summary that have no scorecard (nothing to export)."""
        if self.summary is None:
            return []
        return [u for u in self.summary['ungraded'] if not u['scorecard']]


def read_document(path, schema_name: str) -> dict:
    """A JSON document written by the grader, validated against its schema."""
    try:
        return schema.read_document(path, schema_name)
    except schema.DocumentError as exc:
        raise ExportError(str(exc)) from None


def load(path) -> Graded:
    """A batch folder (or one scorecard file) as a `Graded` record."""
    path = Path(path)
    if path.is_file():
        doc = read_document(path, 'scorecard')
        return Graded((Submission(doc['submission']['id'], doc),), None, None, path)
    if not path.is_dir():
        raise ExportError('expected a batch folder (holding summary.json) or a scorecard file, '
                          'found nothing at {}'.format(path))
    summary_path = path / 'summary.json'
    if not summary_path.is_file():
        raise ExportError('{} has no summary.json: run `dezero-grade batch ... --out {}` (or '
                          '`merge`) first, or pass a scorecard file'.format(path, path))
    summary = read_document(summary_path, 'batch-summary')
    subs = []
    for row in summary['submissions']:
        sub = Submission(row['id'], read_document(path / row['scorecard'], 'scorecard'))
        if sub.card.score.possible != summary['assignment']['possible']:
            # a gradebook's points possible must be every row's: never export two versions
            raise ExportError('{} is out of date: its scorecard counts {:g} points possible, the '
                              'summary {:g}; run the batch again (it regrades what changed)'.format(
                                  row['id'], sub.card.score.possible,
                                  summary['assignment']['possible']))
        subs.append(sub)
    roster = None
    if (path / 'roster.json').is_file():
        roster = roster_mod.load_json(path / 'roster.json')
    return Graded(tuple(sorted(subs, key=lambda s: s.id)), summary, roster, path)


def lateness(card: Scorecard) -> str:
    """The scorecard's late penalty in words ('' when on time or no time was known)."""
    for adj in card.score.adjustments:
        if adj.kind == 'late':
            return '{} ({:g} points)'.format(adj.reason, adj.points)
    return ''


# what an export says of a failing check that does not count (advice), wherever it shows one
ADVICE_NOTE = 'advice, not counted (beyond the book; it never changes the verdict or the score)'


def is_advice_failure(check: CheckRecord, card: Scorecard) -> bool:
    """A failing check that does not count under the card's profile: never shown as a failure."""
    return check.failing and not card.counts(check)


def check_text(check: CheckRecord, card: Scorecard | None = None) -> str:
    """A check of a scorecard as the few lines a learner reads: what was expected and found,
    the hint, the catalogued fault behind it, and how to reproduce it (with `card`, the scorecard
    it is a check of, also the command that grades it again on the learner's own machine)."""
    lines = [check.message]
    if card is not None and check.failing and not card.counts(check):
        lines[0] = '{}: {}'.format(ADVICE_NOTE, check.message)
    elif check.unjudged:
        lines[0] = 'not judged here, so it earns nothing: ' + check.message
    elif check.status == status.NOT_APPLICABLE:
        lines[0] = 'not applicable on the grading machine (credited): ' + check.message
    if check.hint:
        lines.append('hint: ' + check.hint)
    for fault in check.faults[:1]:   # its root cause, where the scorecard has a diagnosis
        lines.append('root cause: {} — {}'.format(fault['id'], fault['title']))
    if check.repro:
        lines.append('')
        if card is not None:
            from dezero_grader.present import terminal
            lines.append(terminal.reproduce_line(card, check.id))
        lines.append('reproduce it against your own code:')
        lines.append(check.repro.rstrip('\n'))
    return '\n'.join(lines)
