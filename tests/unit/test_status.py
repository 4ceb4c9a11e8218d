"""The statuses and verdicts are defined once, and the scorecard's schema speaks of the same ones."""
from dezero_grader.records import schema, status


def _enum(node, name):
    return node['properties'][name]['enum']


def test_the_schema_names_exactly_the_statuses_and_verdicts_of_the_grader():
    doc = schema.validator('scorecard').schema
    check = doc['$defs']['check']
    assert _enum(check, 'status') == list(status.STATUSES)
    assert _enum(doc, 'verdict') == list(status.VERDICTS)


def test_every_status_is_either_judged_skipped_or_not_applicable():
    rest = set(status.STATUSES) - set(status.JUDGED)
    assert rest == {status.SKIPPED, status.NOT_APPLICABLE}
    assert set(status.FAILING) < set(status.JUDGED)
    # what earns points: a pass, and what only a real GPU could run; never an unjudged check
    assert [s for s in status.STATUSES if status.credited(s)] == [status.PASSED,
                                                                   status.NOT_APPLICABLE]
    assert not any(status.failing(s) for s in status.CREDITED)
