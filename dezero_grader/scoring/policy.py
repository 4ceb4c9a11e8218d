"""The course's grading policy, as data: read, validated and fingerprinted here, applied in
`score.py` (which holds all scoring), recorded in every scorecard and batch receipt.

A policy file is JSON (`schemas/policy.schema.json`); every field is optional, so `{"schema_version":
"1.0"}` is the default policy, the one used without `--policy`:

* rollback: `deduct_regression` — this step's earned points minus what the failing regression
  checks are worth (each its points in its own step, at least one point), or `cap` — at most a
  fraction (below 1) of the possible points. Either way a rollback never keeps full marks;
* unjudged checks earn nothing (`not_applicable`, a check that needs a real GPU on a machine
  without one, is credited: it is not unjudged);
* late: a fraction of the earned points per started day after the due time and its grace,
  capped; the due time is Gradescope's when its metadata gives one, else the policy's;
* visibility: per check (fnmatch patterns on check ids), for regression checks, by default,
  and for the whole result, in Gradescope's terms;
* language: the language of the course's reports (`dezero_grader.i18n.LANGUAGES`), where no
  `--lang` names one.

Nothing here grades or scores; `Policy` is a frozen record `score.decide` takes.
"""
from __future__ import annotations

import datetime
import fnmatch
import hashlib
import json
import re
from dataclasses import dataclass, field
from pathlib import Path

from dezero_grader.records import schema

SCHEMA = 'policy'
VISIBILITIES = ('visible', 'hidden', 'after_due_date', 'after_published')
DEFAULT_DOCUMENT = {'schema_version': '1.0'}


class PolicyError(ValueError):
    """The policy file cannot be used; the message says what was expected and found."""


@dataclass(frozen=True)
class Late:
    due: datetime.datetime | None = None
    grace_minutes: float = 0.0
    penalty_per_day: float = 0.0
    max_penalty: float = 1.0


@dataclass(frozen=True)
class Policy:
    document: dict = field(default_factory=lambda: dict(DEFAULT_DOCUMENT), compare=False)
    name: str = 'default'
    sha256: str = ''
    rollback: str = 'deduct_regression'      # deduct_regression | cap
    rollback_cap: float = 1.0                 # with cap: the fraction of the possible points
    late: Late = Late()
    results_visibility: str = 'visible'
    default_visibility: str = 'visible'
    regression_visibility: str | None = None
    check_visibility: tuple = ()              # ((pattern, visibility), ...) in order
    language: str | None = None               # the reports' language (None: not the policy's say)

    def visibility(self, check_id: str, regression: bool) -> str:
        """When learners see this check's test (Gradescope's values)."""
        for pattern, value in self.check_visibility:
            if fnmatch.fnmatchcase(check_id, pattern):
                return value
        if regression and self.regression_visibility:
            return self.regression_visibility
        return self.default_visibility

    def record(self) -> dict:
        """What a scorecard says about the policy it was scored with."""
        return {'name': self.name, 'sha256': self.sha256, 'document': self.document}


def sha256_of(document: dict) -> str:
    text = json.dumps(document, sort_keys=True, separators=(',', ':'), ensure_ascii=False)
    return 'sha256:' + hashlib.sha256(text.encode('utf-8')).hexdigest()


# Gradescope's grades export and Ruby's YAML write `2026-05-02 10:30:00 -0700`, Ruby down to
# nanoseconds: the offset after a space, and more fraction digits than Python reads
_SPACED = re.compile(r'^(\d{4}-\d\d-\d\d[ T]\d\d:\d\d(?::\d\d)?)(\.\d+)?\s*'
                     r'([+-]\d\d):?(\d\d)$')


def parse_time(text: str, what: str = 'a time') -> datetime.datetime:
    """An RFC 3339 time with its UTC offset (`Z` or `+09:00`; Gradescope writes microseconds),
    also as Gradescope's exports write it (`2026-05-02 10:30:00 -0700`)."""
    value = str(text).strip()
    if value.endswith(('Z', 'z')):
        value = value[:-1] + '+00:00'
    spaced = _SPACED.match(value)
    if spaced:
        moment, fraction, hours, minutes = spaced.groups()
        value = '{}{}{}:{}'.format(moment, (fraction or '')[:7], hours, minutes)
    try:
        moment = datetime.datetime.fromisoformat(value)
    except ValueError:
        raise PolicyError('{} must be a date and time such as 2026-05-01T23:59:00+09:00, '
                          'found {!r}'.format(what, text)) from None
    if moment.tzinfo is None:
        raise PolicyError('{} must say its UTC offset (Z or +09:00, say), found {!r}: a time '
                          'without one means different moments on different machines'.format(
                              what, text))
    return moment


def from_document(document, source: str = 'the policy') -> Policy:
    problems = schema.errors(SCHEMA, document)
    if isinstance(document, dict) and any(p.startswith('at rollback:') for p in problems):
        raise PolicyError('{}: rollback is {{"score": "deduct_regression"}} or {{"score": "cap", '
                          '"fraction": F}} with F from 0 to below 1, found {}'.format(
                              source, json.dumps(document.get('rollback'))))
    if problems:
        raise PolicyError('{} does not follow the policy schema: {}'.format(
            source, '; '.join(problems[:3])))
    rollback = document.get('rollback', {'score': 'deduct_regression'})
    late = document.get('late', {})
    vis = document.get('visibility', {})
    return Policy(
        document=document, name=document.get('name', 'default' if document == DEFAULT_DOCUMENT
                                              else 'unnamed'),
        sha256=sha256_of(document), rollback=rollback['score'],
        rollback_cap=float(rollback.get('fraction', 1.0)),
        late=Late(due=parse_time(late['due'], '{}: late.due'.format(source)) if 'due' in late
                  else None,
                  grace_minutes=float(late.get('grace_minutes', 0)),
                  penalty_per_day=float(late.get('penalty_per_day', 0)),
                  max_penalty=float(late.get('max_penalty', 1))),
        results_visibility=vis.get('results', 'visible'),
        default_visibility=vis.get('default', 'visible'),
        regression_visibility=vis.get('regression'),
        check_visibility=tuple(vis.get('checks', {}).items()),
        language=document.get('language'))


DEFAULT = from_document(dict(DEFAULT_DOCUMENT))


def load(path) -> Policy:
    """The policy in a JSON file (None: the default policy)."""
    if path is None:
        return DEFAULT
    try:
        document = schema.read_document(path, SCHEMA)   # read and validated as every grader document
    except schema.DocumentError as exc:
        raise PolicyError('the policy file: {}'.format(exc)) from None
    return from_document(document, Path(path).name)


def from_record(record: dict | None) -> Policy:
    """The policy a scorecard recorded (scorecards written without one: the default)."""
    if not record:
        return DEFAULT
    return from_document(record['document'], 'the scorecard\'s policy')


@dataclass(frozen=True)
class Timing:
    """When a submission was handed in and when it was due (either may be unknown)."""
    submitted_at: datetime.datetime | None = None
    due: datetime.datetime | None = None
    source: str = ''        # where the times came from, for the scorecard


def timing(policy: Policy, submitted_at=None, metadata: dict | None = None) -> Timing:
    """The times the late penalty needs: Gradescope's submission_metadata.json when given (its
    `created_at`; the due date of the submitting user's own assignment — an extension — else of
    the assignment), else --submitted-at and the policy's `late.due`."""
    due, submitted, source = policy.late.due, None, 'policy'
    if submitted_at is not None:
        submitted = (submitted_at if isinstance(submitted_at, datetime.datetime)
                     else parse_time(submitted_at, '--submitted-at'))
        source = 'command line'
    if metadata:
        try:
            if metadata.get('created_at'):
                submitted = parse_time(metadata['created_at'], 'submission_metadata.json created_at')
            own = [parse_time(u['assignment']['due_date'], 'submission_metadata.json due_date')
                   for u in metadata.get('users') or ()
                   if isinstance(u, dict) and isinstance(u.get('assignment'), dict)
                   and u['assignment'].get('due_date')]
            meta_due = (metadata.get('assignment') or {}).get('due_date')
            if own:
                due = max(own)   # a group's latest extension
            elif meta_due:
                due = parse_time(meta_due, 'submission_metadata.json due_date')
            source = 'submission_metadata.json'
        except AttributeError:
            raise PolicyError('submission_metadata.json does not have the form Gradescope '
                              'writes (an object with created_at and assignment.due_date)') from None
    return Timing(submitted, due, source)
