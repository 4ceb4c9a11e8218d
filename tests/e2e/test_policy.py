"""End to end: grades an instructor can publish. For every verdict and every grading policy, the
number is the same in the scorecard, the terminal report, the batch summary and every export
(Gradescope, Canvas, LTI, JUnit); receipts regrade exactly what a change touches; and the
Gradescope autograder, run the way Gradescope runs it (a flat upload, submission_metadata.json,
hidden tests), gives the result the policy says.
"""
import csv
import io
import json
import os
import shutil
import statistics
import sys
import xml.etree.ElementTree as ET
import zipfile
from pathlib import Path

import pytest

from dezero_grader import batch
from dezero_grader.catalogue import assignments, faults
from dezero_grader.intake import load
from dezero_grader.present import terminal
from dezero_grader.proof import selftest
from dezero_grader.records import schema
from dezero_grader.records.status import FAILING
from grade_cli import run_to_end

ROOT = Path(__file__).resolve().parents[2]
STEP = 52
POSSIBLE = sum(c.points for c in assignments.load(STEP).checks if c.tier == 'book')
ROSTER = '''submission,student,id,sis_user_id,lti_user_id
alice,"Liddell, Alice",1001,S-1,lti-alice
carol,"Cooper, Carol",1003,S-3,lti-carol
dave,"Dent, Dave",1004,S-4,lti-dave
erin,"Eve, Erin",1005,S-5,lti-erin
'''
POLICIES = {
    'default': None,
    'cap': {'schema_version': '1.0', 'name': 'capped rollbacks',
            'rollback': {'score': 'cap', 'fraction': 0.5},
            'visibility': {'checks': {'step52/device.fn.*': 'hidden'}}},
}
EXPECTED = {'alice': 'accept', 'carol': 'reject', 'dave': 'rollback', 'erin': 'invalid'}


def _cli(*args, check=True):
    proc = run_to_end([sys.executable, '-m', 'dezero_grader', *map(str, args)], cwd=ROOT,
                      env=dict(os.environ, PYTHONPATH=str(ROOT)), capture_output=True,
                      text=True)
    if check and proc.returncode != 0:
        raise AssertionError('dezero-grade {} exited {}:\n{}\n{}'.format(
            ' '.join(map(str, args)), proc.returncode, proc.stdout, proc.stderr))
    return proc


def _fault(step_of_fault, name=None):
    catalogue = assignments.fault_catalogue(assignments.load(STEP))
    return next(f for f in catalogue if f.step == step_of_fault and f.tier == 'book'
                and (name is None or f.id == name))


@pytest.fixture(scope='module')
def course(tmp_path_factory):
    """A class with one submission per verdict (incomplete: the accepted one graded without a
    device), graded under each policy."""
    root = tmp_path_factory.mktemp('policy')
    subs = root / 'submissions'
    subs.mkdir()
    base = load.prepare(selftest.reference_source(STEP), STEP, root / 'work')
    shutil.copytree(base.root, subs / 'alice')
    faults.inject(base.root, subs / 'carol', _fault(STEP), base.entry)
    # the diamond-graph gradient bug: an earlier step's, so a rollback
    faults.inject(base.root, subs / 'dave', _fault(16, 'backward-generation-order'), base.entry)
    shutil.copytree(base.root, subs / 'erin')
    with open(subs / 'erin' / 'dezero' / '__init__.py', 'a') as f:
        f.write('\ndef oops(:\n')
    (root / 'roster.csv').write_text(ROSTER, encoding='utf-8')
    outs = {}
    for name, document in POLICIES.items():
        args = ['batch', subs, '--step', STEP, '--out', root / name, '--jobs', 2,
                '--roster', root / 'roster.csv', '--sandbox', 'basic']
        if document is not None:
            (root / (name + '.json')).write_text(json.dumps(document))
            args += ['--policy', root / (name + '.json')]
        proc = _cli(*args, check=False)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        outs[name] = (root / name, proc)
    cpu = root / 'cpu-subs'
    cpu.mkdir()
    shutil.copytree(base.root, cpu / 'alice')
    proc = _cli('batch', cpu, '--step', STEP, '--out', root / 'cpu', '--device', 'cpu',
                '--sandbox', 'basic', '--roster', root / 'roster.csv')
    outs['incomplete'] = (root / 'cpu', proc)
    return root, outs


def _cards(out):
    return {p.stem: json.loads(p.read_text()) for p in (out / 'scorecards').glob('*.json')}


def _exports(out, dest):
    """Every export format of the batch folder: {format: {submission id: (score, maximum)}}."""
    found = {}
    _cli('export', out, '--format', 'gradescope', '--out', dest / 'gs')
    found['gradescope'] = {}
    for path in (dest / 'gs').iterdir():
        results = json.loads((path / 'results.json').read_text())
        assert sum(t['score'] for t in results['tests']) == pytest.approx(results['score'])
        found['gradescope'][path.name] = (results['score'], None)
    _cli('export', out, '--format', 'canvas', '--out', dest / 'canvas.csv')
    rows = list(csv.reader(io.StringIO((dest / 'canvas.csv').read_text(encoding='utf-8'))))
    assert rows[1][0].strip() == 'Points Possible'
    names = {'Liddell, Alice': 'alice', 'Cooper, Carol': 'carol', 'Dent, Dave': 'dave',
             'Eve, Erin': 'erin'}
    found['canvas'] = {names[r[0]]: (float(r[5]), float(rows[1][5])) for r in rows[2:]}
    _cli('export', out, '--format', 'lti', '--out', dest / 'lti.json')
    lti = json.loads((dest / 'lti.json').read_text())
    found['lti'] = {s['userId'][4:]: (s['scoreGiven'], s['scoreMaximum']) for s in lti['scores']}
    assert all(s['scoreMaximum'] == lti['lineitem']['scoreMaximum'] for s in lti['scores'])
    _cli('export', out, '--format', 'junit', '--out', dest / 'junit.xml')
    found['junit'] = {}
    for suite in ET.parse(dest / 'junit.xml').getroot().findall('testsuite'):
        props = {p.get('name'): p.get('value') for p in suite.iter('property')}
        earned, possible = props['score'].split('/')
        found['junit'][suite.get('name')] = (float(earned), float(possible))
    return found


@pytest.mark.parametrize('name', ['default', 'cap', 'incomplete'])
def test_one_number_everywhere_for_every_verdict(course, name, tmp_path):
    root, outs = course
    out, proc = outs[name]
    cards = _cards(out)
    verdicts = {i: d['verdict'] for i, d in cards.items()}
    assert verdicts == ({'alice': 'incomplete'} if name == 'incomplete' else EXPECTED)
    summary = json.loads((out / 'summary.json').read_text())
    exported = _exports(out, tmp_path)
    for ident, doc in cards.items():
        earned, possible = doc['score']['earned'], doc['score']['possible']
        assert possible == POSSIBLE == summary['assignment']['possible']
        if doc['verdict'] != 'accept':
            assert earned < possible, '{} {} exports full marks'.format(doc['verdict'], ident)
        assert 'score {:g}/{:g}'.format(earned, possible) in terminal.render(doc)
        assert '{} {:g}/{:g}'.format(doc['verdict'], earned, possible) in proc.stderr
        row = next(r for r in summary['submissions'] if r['id'] == ident)
        assert (row['earned'], row['possible']) == (earned, possible)
        for fmt, scores in exported.items():
            got, maximum = scores[ident]
            assert got == earned, (fmt, ident)
            assert maximum in (None, possible), (fmt, ident)
        assert doc['policy']['sha256'] == summary['policy']['sha256']
    assert summary['scores']['mean'] == pytest.approx(
        statistics.fmean(d['score']['earned'] for d in cards.values()))


def test_a_rollback_costs_what_the_policy_says(course):
    _, outs = course
    default = _cards(outs['default'][0])['dave']
    capped = _cards(outs['cap'][0])['dave']
    failing = [c for c in default['checks'] if c['regression'] and c['status'] != 'passed']
    assert failing and default['score']['checks_earned'] == POSSIBLE
    cost = sum(max(1.0, c['points']) for c in failing)   # regression checks: 0 points of their own
    assert default['score']['earned'] == POSSIBLE - len(failing) * 1.0 == POSSIBLE - cost
    assert capped['score']['earned'] == POSSIBLE / 2
    assert capped['policy']['name'] == 'capped rollbacks'
    results = json.loads(json.dumps(capped))
    from dezero_grader.export import gradescope
    out = gradescope.results(results)
    hidden = [t for t in out['tests'] if 'device.fn.' in t['name']]
    assert hidden and all(t['visibility'] == 'hidden' for t in hidden)
    assert 'device.fn.' not in out['output'] and 'not shown yet' in out['output']


def test_receipts_regrade_exactly_what_changed(course, tmp_path):
    root, _ = course
    out = tmp_path / 'out'
    shutil.copytree(root / 'default', out)
    args = ['batch', root / 'submissions', '--step', STEP, '--out', out, '--jobs', 2,
            '--sandbox', 'basic']
    again = _cli(*args)
    assert 'grading' not in again.stderr                    # nothing changed, nothing graded
    receipt = json.loads((out / 'receipts' / 'carol.json').read_text())
    assert receipt['assignment_sha256'] == assignments.content_hash(STEP)
    assert receipt['grader'] == {'version': '0.1.0', 'code_sha256': batch.grader_code_sha256()}
    # the receipt of another assignment version, and of another grader: those two, only
    receipt['assignment_sha256'] = 'sha256:' + '0' * 64
    schema.write_json(out / 'receipts' / 'carol.json', receipt, 'batch-receipt')
    other = json.loads((out / 'receipts' / 'dave.json').read_text())
    other['grader']['code_sha256'] = 'sha256:' + '1' * 64
    schema.write_json(out / 'receipts' / 'dave.json', other, 'batch-receipt')
    proc = _cli(*args)
    assert 'grading 2 of 4' in proc.stderr
    # a new policy regrades every submission, and the summary says which policy it is
    (tmp_path / 'p.json').write_text(json.dumps(POLICIES['cap']))
    proc = _cli(*args, '--policy', tmp_path / 'p.json')
    assert 'grading 4 of 4' in proc.stderr
    summary = json.loads((out / 'summary.json').read_text())
    assert summary['policy']['name'] == 'capped rollbacks'


def test_the_assignment_hash_follows_its_files(tmp_path, monkeypatch):
    """Editing the points of step 52 changes its hash (its receipts no longer match), and leaves
    the hash of a step that does not read that file as it was (its grades stay)."""
    from dezero_grader.records import schema as schema_mod
    before = {step: assignments.content_hash(step) for step in (STEP, 51)}
    copy = tmp_path / 'assignments'
    shutil.copytree(schema_mod.data_dir('assignments'), copy)
    doc = json.loads((copy / 'step52.json').read_text())
    doc['checks'][0]['points'] += 2
    (copy / 'step52.json').write_text(json.dumps(doc))
    real = schema_mod.data_dir
    monkeypatch.setattr(schema_mod, 'data_dir',
                        lambda name: copy if name == 'assignments' else real(name))
    assignments.content_hash.cache_clear()
    try:
        assert assignments.content_hash(STEP) != before[STEP]
        assert assignments.content_hash(51) == before[51]
    finally:
        assignments.content_hash.cache_clear()


def test_a_summary_never_mixes_two_versions(course, tmp_path):
    root, _ = course
    a, b = tmp_path / 'a', tmp_path / 'b'
    shutil.copytree(root / 'default', a)
    shutil.copytree(root / 'default', b)
    card = json.loads((b / 'scorecards' / 'carol.json').read_text())
    card['score']['possible'] = POSSIBLE + 2                # graded before the points changed
    card['score']['earned'] = 1.0
    (b / 'scorecards' / 'carol.json').write_text(json.dumps(card))
    summary = json.loads((b / 'summary.json').read_text())
    summary['shards'] = {'count': 2, 'included': [2], 'missing': [1]}
    summary['submissions'] = [r for r in summary['submissions'] if r['id'] == 'carol']
    (b / 'summary.json').write_text(json.dumps(summary))
    first = json.loads((a / 'summary.json').read_text())
    first['shards'] = {'count': 2, 'included': [1], 'missing': [2]}
    first['submissions'] = [r for r in first['submissions'] if r['id'] != 'carol']
    (a / 'summary.json').write_text(json.dumps(first))
    proc = _cli('merge', a, b, '--out', tmp_path / 'm', check=False)
    assert proc.returncode == 2 and 'never mixes two versions' in proc.stderr, proc.stderr
    assert 'carol' in proc.stderr and not (tmp_path / 'm' / 'summary.json').exists()


def test_a_late_submission_loses_the_policy_fraction_in_every_format(course, tmp_path):
    root, _ = course
    (tmp_path / 'late.json').write_text(json.dumps({
        'schema_version': '1.0', 'name': 'late', 'late': {
            'due': '2026-05-01T23:59:00+09:00', 'penalty_per_day': 0.1, 'max_penalty': 0.3}}))
    card = tmp_path / 'alice.json'
    proc = _cli('check', root / 'submissions' / 'alice', '--step', STEP, '--sandbox', 'basic',
                '--policy', tmp_path / 'late.json', '--submitted-at', '2026-05-03T16:00:00+09:00',
                '--json', card, check=False)
    doc = json.loads(card.read_text())
    assert proc.returncode == 0 and doc['verdict'] == 'accept'     # lateness is not a verdict
    assert doc['score']['earned'] == pytest.approx(POSSIBLE * 0.8)   # two started days
    assert 'late -' in proc.stdout and 'score {:g}/'.format(doc['score']['earned']) in proc.stdout
    _cli('export', card, '--format', 'gradescope', '--out', tmp_path / 'r.json')
    assert json.loads((tmp_path / 'r.json').read_text())['score'] == doc['score']['earned']
    _cli('export', card, '--format', 'lti', '--out', tmp_path / 'l.json')
    assert json.loads((tmp_path / 'l.json').read_text())['scores'][0]['scoreGiven'] == doc['score']['earned']
    _cli('export', card, '--format', 'canvas', '--roster', root / 'roster.csv', '--out', tmp_path / 'c.csv')
    rows = list(csv.reader(io.StringIO((tmp_path / 'c.csv').read_text())))
    assert float(rows[2][5]) == doc['score']['earned']


# -- Gradescope, as it is used ------------------------------------------------------------------

def test_the_autograder_as_gradescope_runs_it(course, tmp_path):
    """A flat upload (dezero/'s files without the folder) of the diamond-bug variant, a day and a
    bit late by Gradescope's metadata, under a policy that hides the device function tests."""
    root, _ = course
    (tmp_path / 'policy.json').write_text(json.dumps({
        'schema_version': '1.0', 'name': 'spring',
        'late': {'penalty_per_day': 0.25},
        'visibility': {'checks': {'step52/device.fn.*': 'hidden'}, 'regression': 'after_due_date'}}))
    folder = tmp_path / 'autograder'
    _cli('export', '--format', 'gradescope', '--autograder', '--step', STEP, '--out', folder,
         '--policy', tmp_path / 'policy.json', '--sandbox', 'basic', '--timeout', 20)
    box = tmp_path / 'box'
    with zipfile.ZipFile(folder.parent / 'autograder.zip') as z:
        z.extractall(box / 'source')
        assert 'policy.json' in z.namelist()
    shutil.copytree(root / 'submissions' / 'dave' / 'dezero', box / 'submission')   # flat
    assert (box / 'submission' / 'core.py').is_file() and not (box / 'submission' / 'dezero').exists()
    (box / 'results').mkdir()
    (box / 'submission_metadata.json').write_text(json.dumps({
        'id': 1, 'created_at': '2026-05-02T10:30:00.000000-07:00', 'submission_method': 'upload',
        'assignment': {'due_date': '2026-05-01T23:00:00.000000-07:00', 'late_due_date': None,
                       'title': 'Step 52', 'total_points': str(POSSIBLE)},
        'users': [{'email': 'dave@example.org', 'id': 4, 'name': 'Dave'}],
        'previous_submissions': []}))
    shutil.copy2(box / 'source' / 'run_autograder', box / 'run_autograder')
    (box / 'run_autograder').chmod(0o755)    # as Gradescope makes it
    env = {k: v for k, v in os.environ.items() if k != 'PYTHONPATH'}
    env.update(DEZERO_AUTOGRADER_ROOT=str(box), DEZERO_PYTHON=sys.executable)
    proc = run_to_end([str(box / 'run_autograder')], cwd=box, env=env, capture_output=True,
                      text=True)
    assert proc.returncode == 0
    results = json.loads((box / 'results' / 'results.json').read_text())
    assert not schema.errors('gradescope-results', results)
    assert results['extra_data']['verdict'] == 'rollback', proc.stdout[-3000:]
    kinds = [a['kind'] for a in results['extra_data']['adjustments']]
    assert kinds == ['rollback', 'late']
    regression_failing = [t for t in results['tests'] if 'regression' in t['tags']
                          and t['status'] == 'failed']
    # the checks' points, minus a point per failing regression check, minus a day late (25%)
    assert results['score'] == pytest.approx((POSSIBLE - len(regression_failing)) * 0.75)
    assert results['output_format'] == 'md'   # the report in Markdown, as the autograder writes it
    by_tag = {t['name']: t['visibility'] for t in results['tests']}
    assert all(v == 'hidden' for n, v in by_tag.items() if 'device.fn.' in n)
    assert all(v == 'after_due_date' for n, v in by_tag.items() if '[regression' in n)
    assert 'device.fn.' not in results['output'] and 'step16/diamond' not in results['output']
    assert sum(t['score'] for t in results['tests']) == pytest.approx(results['score'])


def test_a_hidden_check_is_named_nowhere_the_learner_reads(course):
    from dezero_grader.scoring import policy
    from dezero_grader.export import gradescope
    _, outs = course
    doc = _cards(outs['default'][0])['carol']
    failing = [c['id'] for c in doc['checks'] if c['status'] in FAILING]
    assert failing and failing[0] in doc['reason']
    hidden = policy.from_document({'schema_version': '1.0', 'visibility': {
        'checks': {i: 'after_published' for i in failing}}})
    results = gradescope.results(dict(doc, policy=hidden.record()))
    assert not any(i in results['output'] for i in failing)
    assert 'not shown yet' in results['output']
    page = gradescope.results(dict(doc, policy=hidden.record()), output_format='md')['output']
    assert not any(i in page for i in failing) and 'not shown yet' in page
    assert {t['visibility'] for t in results['tests'] if t['status'] == 'failed'} == {'after_published'}
    assert results['score'] == doc['score']['earned']
