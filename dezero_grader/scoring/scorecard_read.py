"""The scorecard as records, for everything that reads one: the terminal and HTML reports, the
exporters, the batch summary, history's judging and selftest.

The JSON document (`schemas/scorecard`) stays the wire format: `scorecard_write.py` writes it,
validated, and exporters read stored files of it. `Scorecard.from_document(doc)` turns a
document into these frozen records, so that readers ask `check.failing` or `card.score.earned`
instead of indexing dicts and naming statuses. The records hold the document's values as they
are (no number is recomputed or reformatted: the points are `dezero_grader.scoring.score`'s), and a
`Scorecard` keeps its `document` for what no reader needs typed.

The evidence of a check and the diagnosis stay plain data: their shape is each check's and the
diagnosis's own (`dezero_grader.grading.diagnose` reads and writes it).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

from dezero_grader.records import status
from dezero_grader.scoring import score


@dataclass(frozen=True)
class CheckRecord(status.Rules):
    """One check as the scorecard records it: what it found, and what it earned."""
    id: str
    step: int
    title: str
    tier: str
    category: str
    status: str
    points: float        # what it can earn (0 for a regression check)
    earned: float
    regression: bool
    message: str
    hint: str
    evidence: Mapping[str, Any]
    repro: str
    faults: tuple         # ({id, title, hint}, ...): its root cause, or the catalogue's guess
    duration_s: float

    @classmethod
    def from_document(cls, c: Mapping) -> 'CheckRecord':
        return cls(c['id'], c['step'], c['title'], c['tier'], c['category'], c['status'],
                   c['points'], c['earned'], c['regression'], c['message'], c['hint'],
                   c['evidence'], c['repro'], tuple(c['faults']), c['duration_s'])

    @property
    def counts_in_book_score(self) -> bool:
        return score.counts_in_book_score(self)

    @property
    def findings(self) -> tuple:
        """The findings its evidence lists (plain data: status, message, evidence, case)."""
        return tuple(self.evidence.get('findings', ()))

    @property
    def failing_findings(self) -> tuple:
        return tuple(f for f in self.findings if status.failing(f['status']))


@dataclass(frozen=True)
class Adjustment:
    """What the course policy changed after the checks were counted (a rollback, lateness)."""
    kind: str
    points: float
    reason: str
    checks: tuple = ()                 # the failing regression checks a rollback counts
    details: Mapping[str, Any] = field(default_factory=dict)   # lateness: minutes, days, ...

    @classmethod
    def from_document(cls, a: Mapping) -> 'Adjustment':
        rest = {k: v for k, v in a.items() if k not in ('kind', 'points', 'reason', 'checks')}
        return cls(a['kind'], a['points'], a['reason'], tuple(a.get('checks') or ()), rest)


@dataclass(frozen=True)
class Score:
    earned: float
    possible: float
    extension_earned: float
    extension_possible: float
    checks_earned: float | None = None   # the book-tier points of the checks, before adjustments
    adjustments: tuple = ()              # Adjustment

    @classmethod
    def from_document(cls, s: Mapping) -> 'Score':
        return cls(s['earned'], s['possible'], s['extension']['earned'],
                   s['extension']['possible'], s.get('checks_earned'),
                   tuple(Adjustment.from_document(a) for a in s.get('adjustments', ())))


@dataclass(frozen=True)
class Drift:
    """An API of the book's 2020 environment that the code used and that has since changed."""
    api: str
    message: str
    where: str
    since: str | None = None
    fix: str | None = None

    @classmethod
    def from_document(cls, d: Mapping) -> 'Drift':
        return cls(d['api'], d['message'], d['where'], d.get('since'), d.get('fix'))


@dataclass(frozen=True)
class Invalid:
    """Why a submission could not be graded."""
    code: str
    message: str
    output_tail: str = ''

    @classmethod
    def from_document(cls, d: Mapping) -> 'Invalid':
        return cls(d.get('code', ''), d.get('message', ''), d.get('output_tail', ''))


@dataclass(frozen=True)
class Scorecard:
    step: int
    title: str
    submission_id: str
    content_hash: str
    entry: str | None
    environment: Mapping[str, Any]
    profile: str
    era: str
    seed: int
    verdict: str
    reason: str
    score: Score
    checks: tuple                 # CheckRecord, in the scorecard's order
    compatibility: tuple          # Drift
    diagnosis: Mapping[str, Any] | None
    invalid: Invalid | None
    duration_s: float
    generated_at: str
    document: Mapping[str, Any]   # the JSON document it was read from

    @classmethod
    def from_document(cls, doc: Mapping) -> 'Scorecard':
        a, sub = doc['assignment'], doc['submission']
        invalid = doc.get('invalid')
        return cls(
            a['step'], a['title'], sub['id'], sub['content_hash'], sub.get('entry'),
            doc['environment'], doc['profile'], doc.get('era', 'book'), doc['seed'],
            doc['verdict'], doc['reason'], Score.from_document(doc['score']),
            tuple(CheckRecord.from_document(c) for c in doc['checks']),
            tuple(Drift.from_document(d) for d in doc.get('compatibility') or ()),
            doc.get('diagnosis'),
            Invalid.from_document(invalid) if invalid is not None else None,
            doc['duration_s'], doc.get('generated_at', ''), doc)

    @property
    def is_invalid(self) -> bool:
        return self.verdict == 'invalid'

    @property
    def grader_failed(self) -> bool:
        """The grader failed on the submission (`grader-error`): the document is no grade, and
        every export says it is not graded."""
        return self.is_invalid and self.invalid is not None and self.invalid.code == 'grader-error'

    @property
    def notebook(self) -> Mapping[str, Any] | None:
        """What the graded code's notebooks gave (`dezero_grader.intake.notebook.Expansion.to_json`), or None
        when no notebook was read."""
        return self.document.get('notebook')

    def check(self, check_id: str) -> CheckRecord | None:
        """The check of that id, or None when this grading did not run it."""
        return next((c for c in self.checks if c.id == check_id), None)

    def counts(self, check: CheckRecord) -> bool:
        """Whether a check decides the verdict under this grading's profile (the others are
        advice: shown apart, never as a failure beside the verdict)."""
        return score.counts(check.tier, self.profile)

    @property
    def failing(self) -> tuple:
        return tuple(c for c in self.checks if c.failing)

    @property
    def counted_failing(self) -> tuple:
        """The failing checks that decide the verdict."""
        return tuple(c for c in self.checks if c.failing and self.counts(c))

    @property
    def advice_failing(self) -> tuple:
        """The failing checks that do not count (advice)."""
        return tuple(c for c in self.checks if c.failing and not self.counts(c))

    @property
    def unjudged(self) -> tuple:
        return tuple(c for c in self.checks if c.unjudged)

    @property
    def credited(self) -> tuple:
        return tuple(c for c in self.checks if c.credited)
