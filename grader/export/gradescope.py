"""Gradescope: a scorecard → the `results.json` of Gradescope's autograder specification.

Format only. The top-level `score` is the scorecard's book-tier score; each check becomes a test
with the scorecard's status, message, hint, matched fault and reproduction snippet, in the
scorecard's order. This step's book-tier checks carry their points (`score`/`max_score`); its
extension-tier checks and the regression checks of earlier steps are reported with no points,
as the scorecard counts them. The learner-visible `output` is the terminal report of the
scorecard; nothing from the grader's own logs goes in. An invalid submission gets one failed
test that says why. Validated against `schemas/gradescope-results.schema.json` before writing.

The autograder folder that runs this on Gradescope is written by `grader.export.autograder`.
"""
from __future__ import annotations

import math
from pathlib import Path

from grader import report, schema
from grader.export import Written, check_text

SCHEMA = 'gradescope-results'
VISIBILITIES = ('visible', 'hidden', 'after_due_date', 'after_published')


def _test(check, number: str) -> dict:
    counted = not check['regression'] and check['tier'] == 'book'
    name = '{} ({})'.format(check['title'], check['id'])
    if check['regression']:
        name += ' [regression: step {}]'.format(check['step'])
    elif check['tier'] == 'extension':
        name += ' [extension tier, scored separately]'
    tags = [check['category'], check['tier']] + (['regression'] if check['regression'] else [])
    return {
        'score': float(check['earned']) if counted else 0.0,
        'max_score': float(check['points']) if counted else 0.0,
        'status': 'passed' if check['status'] in ('passed', 'not_applicable') else 'failed',
        'name': name,
        'number': number,
        'output': check_text(check),
        'tags': tags,
        'visibility': 'visible',
    }


def _invalid_test(doc) -> dict:
    invalid = doc.get('invalid', {})
    text = [doc['reason']]
    tail = invalid.get('output_tail', '').strip()
    if tail:
        text += ['', 'what your code printed last:'] + tail.splitlines()[-20:]
    return {
        'score': 0.0,
        'max_score': float(doc['score']['possible']),
        'status': 'failed',
        'name': 'Your submission loads and can be graded ({})'.format(invalid.get('code', 'invalid')),
        'number': '0',
        'output': '\n'.join(text),
        'tags': ['invalid'],
        'visibility': 'visible',
    }


def results(doc: dict, *, visibility: str = 'visible') -> dict:
    """The Gradescope results.json for one scorecard (validated)."""
    if visibility not in VISIBILITIES:
        raise ValueError('visibility must be one of {}, found {!r}'.format(VISIBILITIES, visibility))
    tests = []
    if doc['verdict'] == 'invalid':
        tests.append(_invalid_test(doc))
    own = [c for c in doc['checks'] if not c['regression']]
    regression = [c for c in doc['checks'] if c['regression']]
    for i, check in enumerate(own + regression, start=1):
        tests.append(_test(check, str(i)))
    out = {
        'score': float(doc['score']['earned']),
        'execution_time': int(math.ceil(doc['duration_s'])),
        'output': report.render(doc, colour=False),
        'output_format': 'text',
        'test_output_format': 'text',
        'visibility': visibility,
        'stdout_visibility': 'hidden',
        'extra_data': {
            'verdict': doc['verdict'], 'step': doc['assignment']['step'],
            'profile': doc['profile'], 'era': doc.get('era', 'book'), 'seed': doc['seed'],
            'compatibility': len(doc.get('compatibility', ())),
            'content_hash': doc['submission']['content_hash'],
            'extension': dict(doc['score']['extension']),
            'tool_version': doc['tool']['version'],
        },
        'tests': tests,
    }
    schema.validate(SCHEMA, out)
    return out


def html_output(out: dict, doc: dict) -> dict:
    """A results.json whose top-level `output` is the HTML report of `doc` (the page's body:
    verdict, failing checks, the graph of a failing gradient check) instead of the text one."""
    from grader import htmlreport
    out = dict(out, output=htmlreport.fragment(doc), output_format='html')
    schema.validate(SCHEMA, out)
    return out


def write(path, doc: dict, *, visibility: str = 'visible') -> Path:
    path = Path(path)
    schema.write_json(path, results(doc, visibility=visibility), SCHEMA)
    return path


def export(graded, out, *, visibility: str = 'visible') -> Written:
    """Write results.json files: `out` itself for a single scorecard, `out/<id>/results.json`
    for each submission of a batch."""
    out = Path(out)
    if graded.summary is None:
        return Written((write(out, graded.submissions[0].scorecard, visibility=visibility),))
    paths = tuple(write(out / s.id / 'results.json', s.scorecard, visibility=visibility)
                  for s in graded.submissions)
    warnings = tuple('{}: no scorecard, no results.json ({})'.format(u['id'], u['reason'])
                     for u in graded.without_scorecard)
    return Written(paths, warnings)
