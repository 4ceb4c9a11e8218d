"""The scorecard as records: every field the schema requires of a check is carried, values are
kept as the document holds them, and the status rules answer for the record."""
import dataclasses

from dezero_grader.records import schema, status
from dezero_grader.scoring.scorecard_read import CheckRecord, Scorecard


def _check(ident, st, **kw):
    c = {'id': ident, 'step': 9, 'title': 't', 'tier': 'book', 'category': 'gradient',
         'status': st, 'points': 2, 'earned': 2.0 if status.credited(st) else 0.0,
         'regression': False, 'message': ident + ' says so', 'hint': '', 'repro': '',
         'evidence': {'findings': [{'status': st, 'message': 'm', 'case': 'numeric'}]},
         'faults': [{'id': 'f', 'title': 'a fault', 'hint': ''}], 'duration_s': 0.25}
    c.update(kw)
    return c


def _doc(checks, **score):
    return {'assignment': {'step': 9, 'title': 'T'}, 'submission': {'id': 'x', 'content_hash': 'h'},
            'environment': {'device_mode': 'sim', 'sandbox': 'basic'}, 'seed': 3,
            'profile': 'book', 'era': 'book', 'verdict': 'reject', 'reason': 'r',
            'score': dict({'earned': 2.7, 'possible': 6,
                           'extension': {'earned': 0, 'possible': 1}}, **score),
            'duration_s': 1.5, 'checks': checks, 'compatibility': []}


def test_a_check_record_carries_every_field_the_schema_requires_as_the_document_holds_it():
    required = schema.validator('scorecard').schema['$defs']['check']['required']
    fields = {f.name for f in dataclasses.fields(CheckRecord)}
    assert set(required) <= fields
    c = _check('step09/square', 'failed')
    record = CheckRecord.from_document(c)
    for name in required:
        want = c[name]
        assert getattr(record, name) == (tuple(want) if isinstance(want, list) else want), name
    assert type(record.points) is int   # no number is converted on the way


def test_the_records_answer_the_status_rules():
    checks = [_check('a', 'passed'), _check('b', 'failed'), _check('c', 'error'),
              _check('d', 'skipped'), _check('e', 'not_applicable'),
              _check('f', 'timeout', regression=True, points=0)]
    card = Scorecard.from_document(_doc(checks))
    assert [c.id for c in card.failing] == ['b', 'c', 'f']
    assert [c.id for c in card.credited] == ['a', 'e']
    assert [c.id for c in card.unjudged] == ['d']
    assert [c.id for c in card.checks if c.counts_in_book_score] == ['a', 'b', 'c', 'd', 'e']
    assert card.checks[1].failing_findings == tuple(checks[1]['evidence']['findings'])
    assert card.checks[0].failing_findings == ()
    assert not card.is_invalid and card.invalid is None and card.diagnosis is None


def test_the_score_keeps_what_the_policy_changed_with_its_details():
    late = {'kind': 'late', 'points': -0.3, 'reason': 'late', 'minutes_late': 2900.0,
            'days_late': 2, 'fraction': 0.1}
    card = Scorecard.from_document(_doc([], checks_earned=3.0, adjustments=[late]))
    assert (card.score.earned, card.score.possible, card.score.checks_earned) == (2.7, 6, 3.0)
    assert (card.score.extension_earned, card.score.extension_possible) == (0, 1)
    (adj,) = card.score.adjustments
    assert (adj.kind, adj.points, adj.reason, adj.checks) == ('late', -0.3, 'late', ())
    assert adj.details == {'minutes_late': 2900.0, 'days_late': 2, 'fraction': 0.1}
