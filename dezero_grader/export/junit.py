"""JUnit XML: a batch's scorecards → the report CI dashboards read.

Format only. One `<testsuite>` per submission (properties: verdict, score, seed, content hash),
one `<testcase>` per check of its scorecard: a failed check is a `<failure>`, a check where the
learner's code raised or ran too long an `<error>`, a check that could not judge `<skipped>`. A
failing check that does not count (advice: the extension tier under the book profile) is never
a `<failure>` or an `<error>`: it is `<skipped>` with a message that says it is advice, not
counted, and the suite's properties count such checks (`advice_failing`).
A submission that could not be graded is one `<error>` case named `load` (invalid verdict) or
`grade` (no scorecard, or a scorecard of the grader's own failure, `grader-error`: verdict
`ungraded`, never a grade), so a dashboard shows it red rather than empty.

Built as an intermediate record validated against `schemas/junit-report.schema.json`, rendered
with the standard library, then parsed back and checked structurally (root `testsuites`,
counts that add up, one outcome element at most per case).
"""
from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from pathlib import Path

from dezero_grader.export import ADVICE_NOTE, ExportError, Written, check_text, is_advice_failure, lateness
from dezero_grader.records import schema, status

SCHEMA = 'junit-report'
_OUTCOME = {'passed': 'passed', 'failed': 'failure', 'error': 'error', 'timeout': 'error',
            'skipped': 'skipped', 'not_applicable': 'skipped'}
# XML 1.0 cannot hold most control characters nor lone surrogates, which learner output may
# contain: each is written as its escape (`\x1b`, `\udc80`), so nothing is lost
_NOT_XML = re.compile('[^\u0009\u000a\u000d\u0020-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]')
_CLASS_PART = re.compile(r'[^A-Za-z0-9_]+')


def _clean(text: str) -> str:
    return _NOT_XML.sub(lambda m: ('\\x{:02x}' if ord(m.group()) < 256 else '\\u{:04x}').format(
        ord(m.group())), text)


def _classname(step: int, submission_id: str) -> str:
    return 'dezero.step{:02d}.{}'.format(step, _CLASS_PART.sub('_', submission_id) or 'submission')


def _ungraded(step: int, ident: str, code: str, reason: str, timestamp=None, time=0.0) -> dict:
    """The suite of a submission that has no grade: one `grade` case, an error."""
    return {'name': ident, 'timestamp': timestamp, 'time': time,
            'properties': {'verdict': 'ungraded', 'code': code},
            'cases': [{'classname': _classname(step, ident), 'name': 'grade', 'time': time,
                       'outcome': 'error', 'message': '{}: {}'.format(code, reason),
                       'detail': ''}]}


def _suite(sub, step) -> dict:
    card = sub.card
    if card.grader_failed:   # the grader's failure: not graded, whatever the checks said
        return _ungraded(step, sub.id, card.invalid.code, 'not graded: ' + card.reason,
                         card.generated_at.rstrip('Z'), float(card.duration_s))
    score = card.score
    props = {'verdict': card.verdict, 'score': '{:g}/{:g}'.format(score.earned, score.possible),
             'extension_score': '{:g}/{:g}'.format(score.extension_earned,
                                                   score.extension_possible),
             'seed': str(card.seed), 'content_hash': card.content_hash, 'reason': card.reason}
    if lateness(card):
        props['late'] = lateness(card)
    classname = _classname(step, sub.id)
    cases = []
    if card.is_invalid:
        invalid = card.invalid
        cases.append({'classname': classname, 'name': 'load', 'time': float(card.duration_s),
                      'outcome': 'error',
                      'message': '{}: {}'.format(invalid.code if invalid else 'invalid',
                                                 card.reason),
                      'detail': invalid.output_tail if invalid else ''})
    advice = [c.id for c in card.checks if is_advice_failure(c, card)]
    if advice:
        props['advice_failing'] = '{}: {}'.format(len(advice), ', '.join(advice))
    for c in card.checks:
        if c.id in advice:
            outcome, message = 'skipped', '{}: {}'.format(ADVICE_NOTE, c.message)
        else:
            outcome, message = _OUTCOME[c.status], c.message
        cases.append({'classname': classname, 'name': c.id, 'time': float(c.duration_s),
                      'outcome': outcome, 'message': message,
                      'detail': check_text(c, card) if c.status != status.PASSED else ''})
    return {'name': sub.id, 'timestamp': card.generated_at.rstrip('Z'),
            'time': float(card.duration_s), 'properties': props, 'cases': cases}


def record(graded) -> dict:
    suites = [_suite(s, graded.step) for s in graded.submissions]
    for u in graded.without_scorecard:
        suites.append(_ungraded(graded.step, u['id'], u['code'], u['reason']))
    suites.sort(key=lambda s: s['name'])
    doc = {'schema_version': '1.0',
           'name': 'dezero-grade step {}: {}'.format(graded.step, graded.title),
           'suites': suites}
    schema.validate(SCHEMA, doc)
    return doc


def _counts(cases) -> dict:
    return {'tests': len(cases),
            'failures': sum(c['outcome'] == 'failure' for c in cases),
            'errors': sum(c['outcome'] == 'error' for c in cases),
            'skipped': sum(c['outcome'] == 'skipped' for c in cases)}


def _set_counts(element, counts, time):
    for key, value in counts.items():
        element.set(key, str(value))
    element.set('time', '{:.3f}'.format(time))


def render(doc: dict) -> str:
    root = ET.Element('testsuites', name=_clean(doc['name']))
    all_cases = [c for s in doc['suites'] for c in s['cases']]
    _set_counts(root, _counts(all_cases), sum(s['time'] for s in doc['suites']))
    for s in doc['suites']:
        suite = ET.SubElement(root, 'testsuite', name=_clean(s['name']))
        _set_counts(suite, _counts(s['cases']), s['time'])
        if s['timestamp']:
            suite.set('timestamp', s['timestamp'])
        props = ET.SubElement(suite, 'properties')
        for key, value in s['properties'].items():
            ET.SubElement(props, 'property', name=key, value=_clean(value))
        for c in s['cases']:
            case = ET.SubElement(suite, 'testcase', classname=c['classname'],
                                 name=_clean(c['name']), time='{:.3f}'.format(c['time']))
            if c['outcome'] == 'passed':
                continue
            outcome = ET.SubElement(case, c['outcome'], message=_clean(c['message']))
            if c['outcome'] != 'skipped':
                outcome.set('type', c['outcome'])
            if c['detail']:
                outcome.text = _clean(c['detail'])
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding='unicode') + '\n'


def check(text: str, doc: dict) -> None:
    """Parse the XML back and check its structure against the record (raises ExportError)."""
    problems = []
    try:
        root = ET.fromstring(text.encode('utf-8'))
    except ET.ParseError as exc:
        raise ExportError('the JUnit XML does not parse: {}'.format(exc)) from None
    if root.tag != 'testsuites':
        problems.append('root element is <{}>, not <testsuites>'.format(root.tag))
    suites = root.findall('testsuite')
    if [s.get('name') for s in suites] != [_clean(s['name']) for s in doc['suites']]:
        problems.append('the suites are not the record\'s')
    totals = dict.fromkeys(('tests', 'failures', 'errors', 'skipped'), 0)
    for suite in suites:
        cases = suite.findall('testcase')
        found = {'tests': len(cases), 'failures': 0, 'errors': 0, 'skipped': 0}
        for case in cases:
            outcomes = [child.tag for child in case if child.tag in ('failure', 'error', 'skipped')]
            if len(outcomes) > 1:
                problems.append('case {} has {} outcome elements'.format(case.get('name'), len(outcomes)))
            for tag, key in (('failure', 'failures'), ('error', 'errors'), ('skipped', 'skipped')):
                found[key] += tag in outcomes
        for key, value in found.items():
            if int(suite.get(key, -1)) != value:
                problems.append('suite {} says {}={} but holds {}'.format(
                    suite.get('name'), key, suite.get(key), value))
            totals[key] += value
    for key, value in totals.items():
        if int(root.get(key, -1)) != value:
            problems.append('testsuites says {}={} but holds {}'.format(key, root.get(key), value))
    if problems:
        raise ExportError('the JUnit XML failed its structural check: ' + '; '.join(problems[:5]))


def export(graded, out) -> Written:
    doc = record(graded)
    text = render(doc)
    check(text, doc)
    out = Path(out)
    schema.write_text_atomic(out, text)
    # a submission without a scorecard is a suite of its own (an error), not left out
    return Written((out,), (), len(doc['suites']), 'test suite')
