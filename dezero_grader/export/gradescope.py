"""Gradescope: a scorecard → the `results.json` of Gradescope's autograder specification.

Format only. The top-level `score` is the scorecard's book-tier score; each check becomes a test
with the scorecard's status, message, hint, matched fault and reproduction snippet, in the
scorecard's order. This step's book-tier checks carry their points (`score`/`max_score`); its
extension-tier checks and the regression checks of earlier steps are reported with no points,
as the scorecard counts them. A failing check that does not count (advice: the extension tier
under the book profile) is no red test: its test is `passed`, named and tagged as advice, and its
output says it is not counted. The top-level `score` is the scorecard's final score (after the
grading policy's rollback cost and late penalty; the adjustments are in `extra_data`). Each test's
`visibility` is the policy's (recorded in the scorecard) for that check, the top-level one the
policy's `visibility.results` unless the caller names one. The learner-visible `output` is the
terminal report of the scorecard cut down to the checks whose tests are visible; where a test is
not, nothing in it names or counts that test (the verdict, its reason and the score are withheld,
as Gradescope withholds the total score, and the root causes count the visible checks only); a
test for what the policy took is shown when the checks it names are. The autograder writes it
in Gradescope's `md` format (its `html` is sanitised and gets no styles); the commands in it
run on the learner's own machine, in the folder that holds their code. Nothing from the grader's
own logs goes in. An invalid submission gets one failed test that says why. A scorecard of the
grader's own failure (`grader-error`) is no grade: its results.json has no score at all and one
test "Grading failed (not your code's fault); it will be regraded". Validated against
`schemas/gradescope-results.schema.json` before writing.

The autograder folder that runs this on Gradescope is written by `dezero_grader.export.autograder`.
"""
from __future__ import annotations

import math
from pathlib import Path

from dezero_grader.export import Written, check_text, is_advice_failure, no_scorecard
from dezero_grader.grading import diagnose
from dezero_grader.grading import repro_snippets
from dezero_grader.present import terminal
from dezero_grader.records import schema
from dezero_grader.scoring import policy as policy_mod
from dezero_grader.scoring.scorecard_read import Adjustment, CheckRecord, Scorecard

SCHEMA = 'gradescope-results'
VISIBILITIES = ('visible', 'hidden', 'after_due_date', 'after_published')
OUTPUT_FORMATS = ('text', 'md')


def _test(check: CheckRecord, number: str, visibility: str = 'visible', card=None) -> dict:
    counted = check.counts_in_book_score
    advice = card is not None and is_advice_failure(check, card)
    name = '{} ({})'.format(check.title, check.id)
    if check.regression:
        name += ' [regression: step {}]'.format(check.step)
    if advice:   # not a red test beside full marks: a neutral note, said to be advice
        name += ' [advice: beyond the book, not counted]'
    elif check.tier == 'extension' and not check.regression:
        name += ' [extension tier, scored separately]'
    tags = [check.category, check.tier] + (['regression'] if check.regression else []) + (
        ['advice'] if advice else [])
    return {
        'score': float(check.earned) if counted else 0.0,
        'max_score': float(check.points) if counted else 0.0,
        'status': 'passed' if check.credited or advice else 'failed',
        'name': name,
        'number': number,
        'output': check_text(check, card),
        'tags': tags,
        'visibility': visibility,
    }


def _adjustment_test(adj: Adjustment, number: str, visibility: str = 'visible') -> dict:
    """What the grading policy took (a rollback's cost, a late penalty), as a test of its own so
    that the tests add up to the score; shown when the checks it names are."""
    return {'score': float(adj.points), 'max_score': 0.0,
            'status': 'failed' if adj.points < 0 else 'passed',
            'name': 'Course policy: {}'.format('rollback (earlier steps broken)'
                                               if adj.kind == 'rollback' else 'late submission'),
            'number': number, 'tags': ['policy', adj.kind],
            'output': adj.reason + (': ' + ', '.join(adj.checks) if adj.checks else ''),
            'visibility': visibility}


def _invalid_test(card: Scorecard) -> dict:
    invalid = card.invalid
    text = [card.reason]
    tail = invalid.output_tail.strip() if invalid else ''
    if tail:
        text += ['', 'what your code printed last:'] + tail.splitlines()[-20:]
    return {
        'score': 0.0,
        'max_score': float(card.score.possible),
        'status': 'failed',
        'name': 'Your submission loads and can be graded ({})'.format(
            invalid.code if invalid else 'invalid'),
        'number': '0',
        'output': '\n'.join(text),
        'tags': ['invalid'],
        'visibility': 'visible',
    }


GRADING_FAILED_TEST = 'Grading failed (not your code\'s fault); it will be regraded'


def grading_failed(output: str, error: str, output_format: str = 'text') -> dict:
    """The results.json of a grading the grader failed (`grader-error`, or the grader crashing
    on Gradescope): no score anywhere, so that Gradescope keeps nothing of it as a grade, and one
    test that says so in words. `error` names the failure for the instructor (`extra_data`)."""
    out = {'output': output, 'output_format': output_format, 'visibility': 'visible',
           'stdout_visibility': 'hidden', 'extra_data': {'grader_error': error},
           'tests': [{'status': 'failed', 'name': GRADING_FAILED_TEST, 'number': '0',
                      'output': output, 'tags': ['grader-error'], 'visibility': 'visible'}]}
    schema.validate(SCHEMA, out)
    return out


def _output(doc: dict, withheld: bool, output_format: str = 'text') -> str:
    """The learner-visible report of the checks whose tests are visible: the terminal report as
    text, or in Markdown (Gradescope renders its `md`; its `html` is sanitised and unstyled, so
    the report page would show bare). Where some tests are not visible, the verdict and score are
    withheld as Gradescope withholds the total score, and no number says how many are hidden."""
    note = ('Some tests are not shown yet (the course shows them later or not at all): the '
            'verdict and the score count them, and are shown with them.') if withheld else ''
    text = terminal.render(doc, colour=False, withheld=withheld)
    if output_format == 'md':
        card = Scorecard.from_document(doc)
        head = ('## Results of the tests shown' if withheld else '## {} · score {:g}/{:g}'.format(
            card.verdict.upper(), card.score.earned, card.score.possible))
        # the report as an indented code block: learner text in it is shown, never rendered
        body = '\n'.join('    ' + line if line.strip() else '' for line in text.splitlines())
        graph = ('\n\nThe graph of a failing gradient check is drawn by `{} --html report.html`, '
                 'run {}.'.format(repro_snippets.check_command(card.step, card.seed,
                                                      device_mode=card.environment.get(
                                                          'device_mode', 'sim'), era=card.era),
                                  repro_snippets.IN_YOUR_FOLDER)
                 if any((f.get('evidence') or {}).get('graph') for c in card.failing
                        for f in c.failing_findings) else '')
        return head + '\n\n' + body + graph + ('\n\n' + note if note else '') + '\n'
    return text + ('\n' + note + '\n' if note else '')


def _visible_diagnosis(diagnosis: dict, shown_ids: set) -> dict:
    """The root causes as far as the visible checks show them: each cause with its visible
    checks only, and a cause none of whose checks is visible left out (naming it would tell what
    the hidden tests test); ranks renumbered."""
    causes = []
    for cause in diagnosis['causes']:
        checks = [i for i in cause['checks'] if i in shown_ids]
        if checks:
            visible = dict(cause, rank=len(causes) + 1, checks=checks,
                           contradicted=[i for i in cause['contradicted'] if i in shown_ids])
            visible['summary'] = diagnose.summary(visible)   # its count, of the visible checks
            causes.append(visible)
    return dict(diagnosis, causes=causes,
                unexplained=[i for i in diagnosis['unexplained'] if i in shown_ids],
                unexplained_advice=[i for i in diagnosis.get('unexplained_advice', ())
                                    if i in shown_ids])


def results(doc: dict, *, visibility: str | None = None, output_format: str = 'text') -> dict:
    """The Gradescope results.json for one scorecard (validated). `visibility`: the top-level
    one (None: the policy's); `output_format`: the top-level output's, text or md."""
    if output_format not in OUTPUT_FORMATS:
        raise ValueError('output_format must be text or md, found {!r}'.format(output_format))
    course = policy_mod.from_record(doc.get('policy'))
    visibility = visibility or course.results_visibility
    if visibility not in VISIBILITIES:
        raise ValueError('visibility must be one of {}, found {!r}'.format(VISIBILITIES, visibility))
    card = Scorecard.from_document(doc)
    if card.grader_failed:
        return grading_failed(_output(doc, False, output_format), card.invalid.code, output_format)
    tests = []
    if card.is_invalid:
        tests.append(_invalid_test(card))
    own = [c for c in card.checks if not c.regression]
    regression = [c for c in card.checks if c.regression]
    seen = {}
    for i, check in enumerate(own + regression, start=1):
        seen[check.id] = course.visibility(check.id, check.regression)
        tests.append(_test(check, str(i), seen[check.id], card))
    shown_ids = {i for i, v in seen.items() if v == 'visible'}
    # what the policy took is shown when the checks it names are
    for j, adj in enumerate(doc['score'].get('adjustments', ()), start=len(tests) + 1):
        later = [seen[i] for i in adj.get('checks', ()) if seen.get(i, 'visible') != 'visible']
        tests.append(_adjustment_test(Adjustment.from_document(adj), str(j),
                                      later[0] if later else 'visible'))
    withheld = len(shown_ids) < len(card.checks)
    # the report the learner reads is rendered from the document cut down to what they may see;
    # with a test not shown, nothing in it counts or names that test: not the verdict, its
    # reason, the score or what the policy took (they say how many checks failed)
    visible_doc = dict(doc, checks=[c for c in doc['checks'] if c['id'] in shown_ids])
    if withheld:
        visible_doc['score'] = dict(doc['score'], adjustments=[])
    if card.diagnosis:
        visible_doc['diagnosis'] = _visible_diagnosis(card.diagnosis, shown_ids)
    out = {
        'score': float(card.score.earned),
        'execution_time': int(math.ceil(card.duration_s)),
        'output': _output(visible_doc, withheld, output_format),
        'output_format': output_format,
        'test_output_format': 'text',
        'visibility': visibility,
        'stdout_visibility': 'hidden',
        'extra_data': {
            'verdict': card.verdict, 'step': card.step,
            'profile': card.profile, 'era': card.era, 'seed': card.seed,
            'compatibility': len(card.compatibility),
            'content_hash': card.content_hash,
            'extension': dict(doc['score']['extension']),
            'tool_version': doc['tool']['version'],
            'policy': (doc.get('policy') or course.record())['name'],
            'adjustments': [dict(a) for a in doc['score'].get('adjustments', ())],
        },
        'tests': tests,
    }
    schema.validate(SCHEMA, out)
    return out


def write(path, doc: dict, *, visibility: str | None = None, output_format: str = 'text') -> Path:
    path = Path(path)
    schema.write_json(path, results(doc, visibility=visibility, output_format=output_format),
                      SCHEMA)
    return path


def export(graded, out, *, visibility: str | None = None) -> Written:
    """Write results.json files: `out` itself for a single scorecard, `out/<id>/results.json`
    for each submission of a batch."""
    out = Path(out)
    if graded.summary is None:
        return Written((write(out, graded.submissions[0].scorecard, visibility=visibility),),
                       rows=1, unit='results.json')
    paths = tuple(write(out / s.id / 'results.json', s.scorecard, visibility=visibility)
                  for s in graded.submissions)
    return Written(paths, (), len(paths), 'results.json', tuple(no_scorecard(graded)))
