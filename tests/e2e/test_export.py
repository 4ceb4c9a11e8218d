"""End to end: `dezero-grade export` in every format, and the Gradescope autograder folder run
the way Gradescope runs it, on a small graded class (accepted, rejected, rolled back, invalid,
and a submission left without a scorecard), with a roster.
"""
import csv
import io
import json
import os
import re
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
import zipfile
from pathlib import Path

import pytest

from dezero_grader.catalogue import assignments, faults
from dezero_grader.export import ExportError, Graded, Submission, autograder, gradescope, junit
from dezero_grader.grading import diagnose
from dezero_grader.intake import load
from dezero_grader.present import terminal
from dezero_grader.proof import selftest
from dezero_grader.records import schema
from dezero_grader.records.status import FAILING
from grade_cli import dezero_grade, run_to_end

ROOT = Path(__file__).resolve().parents[2]
STEP = 52
# the book-tier points of the step, as its assignment says
POSSIBLE = sum(c.points for c in assignments.load(STEP).checks if c.tier == 'book')
ROSTER = '''Student,ID,SIS User ID,SIS Login ID,Section,Submission,LTI User ID,Email
"Liddell, Alice",1001,S-1,alice@uni,A,alice,lti-alice,alice@example.org
"Builder, Bob",1002,S-2,,A,bob,lti-bob,
"Cooper, Carol",1003,,,B,carol,lti-carol,
"Dent, Dave",,,dave@uni,B,dave,,
"Eve, Erin",1005,S-5,,B,erin,lti-erin,
"Gray, Gina",1007,S-7,,A,gina,lti-gina,
'''


def _cli(*args, check=True):
    return dezero_grade(*args, expect=(0,) if check else None)


def _fault(step_of_fault):
    catalogue = assignments.fault_catalogue(assignments.load(STEP))
    return next(f for f in catalogue if f.step == step_of_fault and f.tier == 'book')


@pytest.fixture(scope='module')
def graded_batch(tmp_path_factory):
    root = tmp_path_factory.mktemp('export')
    subs = root / 'submissions'
    subs.mkdir()
    base = load.prepare(selftest.reference_source(STEP), STEP, root / 'work')
    shutil.copytree(base.root, subs / 'alice')
    shutil.make_archive(str(subs / 'bob'), 'zip', root_dir=base.root)
    faults.inject(base.root, subs / 'carol', _fault(STEP), base.entry)       # reject
    faults.inject(base.root, subs / 'dave', _fault(14), base.entry)          # rollback
    shutil.copytree(base.root, subs / 'erin')
    with open(subs / 'erin' / 'dezero' / '__init__.py', 'a') as f:
        f.write('\nprint("\\x1b[31mcoloured\\x00 output")\ndef oops(:\n')        # invalid
    (subs / 'frank').mkdir()                                                 # invalid, no roster entry
    (subs / 'henry').mkdir()
    (subs / 'henry.zip').write_bytes(b'two entries, one id')                 # no scorecard
    (root / 'roster.csv').write_text(ROSTER, encoding='utf-8')
    out = root / 'out'
    proc = _cli('batch', subs, '--step', STEP, '--out', out, '--jobs', 2, '--roster',
                root / 'roster.csv', check=False)
    assert proc.returncode == 1, proc.stdout + proc.stderr   # henry has no scorecard
    return root, out


def _cards(out):
    return {p.stem: json.loads(p.read_text()) for p in (out / 'scorecards').glob('*.json')}


def test_the_class_has_every_kind_of_outcome(graded_batch):
    _, out = graded_batch
    verdicts = {i: d['verdict'] for i, d in _cards(out).items()}
    assert verdicts == {'alice': 'accept', 'bob': 'accept', 'carol': 'reject', 'dave': 'rollback',
                        'erin': 'invalid', 'frank': 'invalid'}


def test_gradescope_results_follow_the_specification(graded_batch):
    root, out = graded_batch
    proc = _cli('export', out, '--format', 'gradescope', '--out', root / 'gs')
    assert 'henry: no scorecard' in proc.stderr
    cards = _cards(out)
    assert sorted(p.name for p in (root / 'gs').iterdir()) == sorted(cards)
    for ident, doc in cards.items():
        results = json.loads((root / 'gs' / ident / 'results.json').read_text())
        assert not schema.errors('gradescope-results', results)
        assert results['score'] == doc['score']['earned']
        assert results['output'] == terminal.render(doc)
        assert sum(t['score'] for t in results['tests']) == results['score']
        assert 'Traceback' not in json.dumps(results)
        own_book = [c for c in doc['checks'] if not c['regression'] and c['tier'] == 'book']
        assert sum(t['max_score'] for t in results['tests']) == (
            doc['score']['possible'] if doc['verdict'] == 'invalid'
            else sum(c['points'] for c in own_book))
        counts = diagnose.counted_ids(doc['checks'], doc['profile'])
        failing = {c['id'] for c in doc['checks'] if c['status'] in FAILING and c['id'] in counts}
        # a failing check that does not count is advice: a passed test that says so, never red
        advice = {c['id'] for c in doc['checks'] if c['status'] in FAILING} - failing
        assert {t['name'].split('(')[-1].split(')')[0] for t in results['tests']
                if 'advice' in t['tags']} == advice
        assert all(t['status'] == 'passed' and 'not counted' in t['output']
                   for t in results['tests'] if 'advice' in t['tags'])
        policy_tests = [t for t in results['tests'] if 'policy' in t['tags']]
        check_tests = [t for t in results['tests'] if 'policy' not in t['tags']]
        # what the grading policy took is a test of its own, so that the tests add up
        assert [t['score'] for t in policy_tests] == [
            a['points'] for a in doc['score'].get('adjustments', ())]
        assert bool(policy_tests) == (doc['verdict'] == 'rollback')
        named_failing = {t['name'].split('(')[-1].split(')')[0] for t in check_tests
                         if t['status'] == 'failed'}
        if doc['verdict'] == 'invalid':
            assert [t['status'] for t in results['tests']] == ['failed']
            assert doc['invalid']['code'] in results['tests'][0]['name']
        else:
            assert named_failing == failing
            assert len(check_tests) == len(doc['checks'])
    carol = json.loads((root / 'gs' / 'carol' / 'results.json').read_text())
    failed = [t for t in carol['tests'] if t['status'] == 'failed']
    assert failed and all('reproduce it against your own code' in t['output'] for t in failed)


def test_a_single_scorecard_exports_to_one_results_file(graded_batch, tmp_path):
    _, out = graded_batch
    target = tmp_path / 'results.json'
    _cli('export', out / 'scorecards' / 'dave.json', '--format', 'gradescope', '--out', target,
         '--visibility', 'after_published')
    results = json.loads(target.read_text())
    assert results['visibility'] == 'after_published'
    assert results['extra_data']['verdict'] == 'rollback'
    assert any('regression' in t['name'] and t['status'] == 'failed' for t in results['tests'])


def test_exporters_format_the_scorecard_and_decide_nothing(graded_batch):
    _, out = graded_batch
    doc = _cards(out)['carol']
    edited = json.loads(json.dumps(doc))
    edited['score']['earned'] = 7.0      # whatever the scorecard says is what is exported
    assert gradescope.results(edited)['score'] == 7.0
    graded = Graded((Submission('carol', edited),), None, None, out)
    suite = junit.record(graded)['suites'][0]
    assert suite['properties']['score'] == '7/{:g}'.format(POSSIBLE)


def test_canvas_gradebook_csv(graded_batch):
    root, out = graded_batch
    target = root / 'canvas.csv'
    proc = _cli('export', out, '--format', 'canvas', '--out', target, '--assignment-name',
                'Step 52', '--assignment-id', '4242')
    rows = list(csv.reader(io.StringIO(target.read_text(encoding='utf-8'))))
    assert rows[0] == ['Student', 'ID', 'SIS User ID', 'SIS Login ID', 'Section', 'Step 52 (4242)']
    assert rows[1][0].strip() == 'Points Possible' and rows[1][5] == '{:g}'.format(POSSIBLE)
    cards = _cards(out)
    by_name = {r[0]: r for r in rows[2:]}
    assert sorted(by_name) == ['Builder, Bob', 'Cooper, Carol', 'Dent, Dave', 'Eve, Erin',
                               'Liddell, Alice']
    assert by_name['Liddell, Alice'][1:5] == ['1001', 'S-1', 'alice@uni', 'A']
    assert by_name['Dent, Dave'][1:4] == ['', '', 'dave@uni']
    for name, ident in (('Liddell, Alice', 'alice'), ('Cooper, Carol', 'carol'),
                        ('Dent, Dave', 'dave'), ('Eve, Erin', 'erin')):
        assert float(by_name[name][5]) == cards[ident]['score']['earned']
    assert 'frank: not in the roster' in proc.stderr
    assert 'Gray, Gina (gina): no scorecard' in proc.stderr


def test_canvas_needs_a_roster_and_a_numeric_assignment_id(graded_batch, tmp_path):
    _, out = graded_batch
    single = _cli('export', out / 'scorecards' / 'alice.json', '--format', 'canvas', '--out',
                  tmp_path / 'x.csv', check=False)
    assert single.returncode == 2 and 'needs a roster' in single.stderr
    bad = _cli('export', out, '--format', 'canvas', '--assignment-id', 'abc', '--out',
               tmp_path / 'y.csv', check=False)
    assert bad.returncode == 2 and 'assignment id is a number' in bad.stderr
    assert not (tmp_path / 'y.csv').exists()


def test_lti_ags_scores(graded_batch):
    root, out = graded_batch
    target = root / 'lti.json'
    proc = _cli('export', out, '--format', 'lti', '--out', target)
    doc = json.loads(target.read_text())
    assert not schema.errors('lti-ags-scores', doc)
    cards = _cards(out)
    scores = {s['userId']: s for s in doc['scores']}
    assert sorted(scores) == ['lti-alice', 'lti-bob', 'lti-carol', 'lti-erin']
    for user, ident in (('lti-alice', 'alice'), ('lti-carol', 'carol'), ('lti-erin', 'erin')):
        s = scores[user]
        assert s['scoreGiven'] == cards[ident]['score']['earned']
        assert s['scoreMaximum'] == POSSIBLE
        assert s['comment'].startswith(cards[ident]['verdict'].upper())
        assert s['timestamp'].startswith(cards[ident]['generated_at'][:19])
        assert s['timestamp'].endswith('.000+00:00')
        assert (s['activityProgress'], s['gradingProgress']) == ('Completed', 'FullyGraded')
    assert 'Failing:' in scores['lti-carol']['comment']
    assert doc['lineitem']['scoreMaximum'] == POSSIBLE
    assert 'dave: no lti_user_id' in proc.stderr and 'frank: not in the roster' in proc.stderr


def test_lti_without_a_roster_takes_submission_ids(graded_batch, tmp_path):
    _, out = graded_batch
    _cli('export', out / 'scorecards' / 'frank.json', '--format', 'lti', '--out', tmp_path / 'l.json')
    doc = json.loads((tmp_path / 'l.json').read_text())
    assert [(s['userId'], s['scoreGiven']) for s in doc['scores']] == [('frank', 0.0)]


def test_junit_xml_for_ci(graded_batch):
    root, out = graded_batch
    target = root / 'junit.xml'
    _cli('export', out, '--format', 'junit', '--out', target)
    tree = ET.parse(target).getroot()
    assert tree.tag == 'testsuites'
    suites = {s.get('name'): s for s in tree.findall('testsuite')}
    assert sorted(suites) == ['alice', 'bob', 'carol', 'dave', 'erin', 'frank', 'henry']
    cards = _cards(out)
    for ident, doc in cards.items():
        suite = suites[ident]
        cases = suite.findall('testcase')
        # a failing check that does not count is advice: skipped, with a message that says so
        counts = diagnose.counted_ids(doc['checks'], doc['profile'])
        judged = [c for c in doc['checks'] if c['id'] in counts]
        failing = sum(c['status'] == 'failed' for c in judged)
        errors = sum(c['status'] in ('error', 'timeout') for c in judged)
        assert int(suite.get('failures')) == failing == len([c for c in cases if c.find('failure') is not None])
        advice = {c['id'] for c in doc['checks'] if c['status'] in FAILING} - counts
        assert {c.get('name') for c in cases if c.find('skipped') is not None
                and c.find('skipped').get('message').startswith('advice, not counted')} == advice
        if doc['verdict'] == 'invalid':
            assert cases[0].get('name') == 'load' and cases[0].find('error') is not None
            errors += 1
        assert int(suite.get('errors')) == errors
        assert int(suite.get('tests')) == len(cases)
    henry = suites['henry'].findall('testcase')
    assert [c.get('name') for c in henry] == ['grade']
    assert 'duplicate-id' in henry[0].find('error').get('message')
    assert int(tree.get('tests')) == sum(int(s.get('tests')) for s in suites.values())
    # erin's output held an escape and a NUL: the XML parsed, so they were made safe
    assert '\x1b' not in target.read_text()


def test_junit_structural_check_catches_a_bad_rendering(graded_batch):
    _, out = graded_batch
    record = junit.record(Graded((Submission('carol', _cards(out)['carol']),), None, None, out))
    text = junit.render(record)
    junit.check(text, record)
    broken = text.replace('failures="{}"'.format(
        sum(c['outcome'] == 'failure' for c in record['suites'][0]['cases'])), 'failures="0"', 1)
    with pytest.raises(ExportError, match='structural check'):
        junit.check(broken, record)


def test_a_bad_roster_is_refused_with_a_reason(graded_batch, tmp_path):
    root, out = graded_batch
    (tmp_path / 'r1.csv').write_text('Student,ID\nAlice,1\n')
    proc = _cli('export', out, '--format', 'canvas', '--roster', tmp_path / 'r1.csv', check=False)
    assert proc.returncode == 2 and 'no "submission" column' in proc.stderr
    (tmp_path / 'r2.csv').write_text('submission,student\nalice,A\nalice,B\n')
    proc = _cli('export', out, '--format', 'canvas', '--roster', tmp_path / 'r2.csv', check=False)
    assert proc.returncode == 2 and "'alice' appears on lines 2 and 3" in proc.stderr


# -- the Gradescope autograder --------------------------------------------------------------------

@pytest.fixture(scope='module')
def autograder_zip(tmp_path_factory):
    folder = tmp_path_factory.mktemp('ag') / 'autograder'
    _cli('export', '--format', 'gradescope', '--autograder', '--step', STEP, '--out', folder,
         '--timeout', 20)
    return folder, folder.parent / 'autograder.zip'


def _gradescope_box(tmp_path, autograder_zip):
    """/autograder as Gradescope lays it out: source/ is the unzipped upload, run_autograder is
    copied to the top, submission/ and results/ are empty."""
    box = tmp_path / 'autograder'
    with zipfile.ZipFile(autograder_zip[1]) as z:
        z.extractall(box / 'source')
    (box / 'submission').mkdir()
    (box / 'results').mkdir()
    shutil.copy2(box / 'source' / 'run_autograder', box / 'run_autograder')
    (box / 'run_autograder').chmod(0o755)
    return box


def _run_box(box, **env):
    clean = {k: v for k, v in os.environ.items() if k not in ('PYTHONPATH',)}
    clean.update({'DEZERO_AUTOGRADER_ROOT': str(box), 'DEZERO_PYTHON': sys.executable, **env})
    proc = run_to_end([str(box / 'run_autograder')], cwd=box, env=clean, capture_output=True,
                      text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    results = json.loads((box / 'results' / 'results.json').read_text())
    assert not schema.errors('gradescope-results', results)
    return results, proc


def test_the_autograder_folder_is_ready_to_upload(autograder_zip):
    folder, archive = autograder_zip
    with zipfile.ZipFile(archive) as z:
        names = set(z.namelist())
    assert {'setup.sh', 'run_autograder', 'requirements.txt'} <= names   # at the zip's root
    # one package, as installed: the reference and the data inside it
    for inside in ('reference/dezero/core.py', 'schemas/scorecard.schema.json', 'assignment_files/step01.json'):
        assert 'dezero_grader/' + inside in names
    assert not any(n.split('/')[0] in ('grader', 'reference', 'schemas', 'assignments') for n in names)
    for script in ('setup.sh', 'run_autograder'):
        assert os.access(folder / script, os.X_OK)
        assert subprocess.run(['bash', '-n', str(folder / script)]).returncode == 0
    assert 'numpy' in (folder / 'requirements.txt').read_text()


def test_the_autograder_grades_a_submission_as_gradescope_runs_it(graded_batch, autograder_zip, tmp_path):
    root, out = graded_batch
    box = _gradescope_box(tmp_path, autograder_zip)
    shutil.copytree(root / 'submissions' / 'carol', box / 'submission', dirs_exist_ok=True)
    results, proc = _run_box(box)
    carol = _cards(out)['carol']
    assert results['score'] == carol['score']['earned'] < POSSIBLE, proc.stdout[-3000:]
    assert results['extra_data']['content_hash'] == carol['submission']['content_hash']
    counts = diagnose.counted_ids(carol['checks'], carol['profile'])
    assert [t['status'] for t in results['tests']] == [
        'failed' if c['status'] in FAILING and c['id'] in counts else 'passed'
        for c in carol['checks']]
    assert 'REJECT' in results['output'] and 'Traceback' not in json.dumps(results)
    assert 'REJECT' in proc.stdout     # the instructor's view of the run


def test_the_autograder_takes_an_uploaded_zip(autograder_zip, tmp_path):
    box = _gradescope_box(tmp_path, autograder_zip)
    base = load.prepare(selftest.reference_source(STEP), STEP, tmp_path / 'work')
    shutil.make_archive(str(box / 'submission' / 'mywork'), 'zip', root_dir=base.root)
    results, _ = _run_box(box)
    assert results['score'] == POSSIBLE and results['extra_data']['verdict'] == 'accept'


def test_a_grader_failure_still_gives_the_learner_a_clean_result(autograder_zip, tmp_path):
    box = _gradescope_box(tmp_path, autograder_zip)
    (box / 'submission' / 'dezero').mkdir()
    (box / 'submission' / 'dezero' / '__init__.py').write_text('')
    (box / 'source' / 'dezero_grader' / 'schemas' / 'scorecard.schema.json').write_text('{ broken')
    results, proc = _run_box(box)
    # no grade: no score anywhere, and a test that says grading failed and will be redone
    assert 'score' not in results and results['output'] == autograder.GRADER_FAILED
    assert [t['name'] for t in results['tests']] == [gradescope.GRADING_FAILED_TEST]
    assert not any('score' in t for t in results['tests'])
    assert 'Traceback' not in json.dumps(results)
    assert 'Traceback' in proc.stdout          # for the instructor, in Gradescope's stdout


def test_an_interpreter_that_cannot_start_still_gives_a_result(autograder_zip, tmp_path):
    box = _gradescope_box(tmp_path, autograder_zip)
    results, _ = _run_box(box, DEZERO_PYTHON='/bin/false')
    assert 'score' not in results and 'problem in the grader itself' in results['output']
    assert [t['name'] for t in results['tests']] == [gradescope.GRADING_FAILED_TEST]


@pytest.mark.parametrize('name', ['batch-summary', 'batch-receipt', 'roster', 'gradescope-results',
                                  'canvas-gradebook', 'lti-ags-scores', 'junit-report'])
def test_every_schema_is_versioned_and_closed(name):
    doc = json.loads((ROOT / 'schemas' / (name + '.schema.json')).read_text())
    schema.validator(name)   # a valid draft 2020-12 schema
    assert doc['$schema'] == 'https://json-schema.org/draft/2020-12/schema'
    assert doc['$id'].endswith('/{}/1.0.json'.format(name))
    assert doc['additionalProperties'] is False and doc['description']


# -- exports that count truthfully (issue 23) ---------------------------------------------------
CANVAS_EXPORT = ('Student,ID,SIS User ID,SIS Login ID,Section,DeZero step 52 (813)\n'
                 '    Points Possible,,,,,30.00\n'
                 '"Liddell, Alice",1001,S-1,alice,A,\n"Builder, Bob",1002,S-2,bob,A,\n'
                 '"Cooper, Carol",1003,S-3,carol,B,\n"Dent, Dave",1004,S-4,dave,B,\n'
                 '"Eve, Erin",1005,S-5,erin,B,\n"Gray, Gina",1007,S-7,gina,A,\n')
# a Gradescope roster names people by SID first; the folders here are their emails' local parts
GRADESCOPE_EXPORT = ('First Name,Last Name,SID,Email,Role,Sections\n'
                     'Alice,Liddell,S-1,alice@uni.example,Student,A\n'
                     'Bob,Builder,S-2,bob@uni.example,Student,A\n'
                     'Carol,Cooper,S-3,carol@uni.example,Student,B\n'
                     'Dave,Dent,S-4,dave@uni.example,Student,B\n'
                     'Erin,Eve,S-5,erin@uni.example,Student,B\n'
                     'Gina,Gray,S-7,gina@uni.example,Student,A\n')


def test_an_lti_export_without_lti_ids_writes_nothing_and_fails(graded_batch, tmp_path):
    # it printed "wrote lti export of 6 scorecard(s)", exited 0 and wrote "scores": []
    _, out = graded_batch
    for name, text in (('canvas.csv', CANVAS_EXPORT), ('gradescope.csv', GRADESCOPE_EXPORT)):
        (tmp_path / name).write_text(text)
        target = tmp_path / (name + '.json')
        proc = _cli('export', out, '--format', 'lti', '--roster', tmp_path / name, '--out', target,
                    check=False)
        assert proc.returncode == 1, proc.stdout + proc.stderr
        assert not target.exists()
        assert 'wrote the lti export: 0 scores; left out 8' in proc.stdout
        assert 'has no LTI user ids' in proc.stderr and 'wrote nothing' in proc.stderr
        assert 'alice: no lti_user_id in the roster' in proc.stderr


def test_canvas_from_a_gradescope_roster_finds_everyone_by_any_of_their_ids(graded_batch, tmp_path):
    # every row was written and every person warned "no scorecard, left out"
    _, out = graded_batch
    (tmp_path / 'gradescope.csv').write_text(GRADESCOPE_EXPORT)
    target = tmp_path / 'canvas.csv'
    proc = _cli('export', out, '--format', 'canvas', '--roster', tmp_path / 'gradescope.csv',
                '--out', target)
    rows = list(csv.reader(io.StringIO(target.read_text(encoding='utf-8'))))[2:]
    cards = _cards(out)
    assert sorted((r[0], r[2]) for r in rows) == [
        ('Builder, Bob', 'S-2'), ('Cooper, Carol', 'S-3'), ('Dent, Dave', 'S-4'),
        ('Eve, Erin', 'S-5'), ('Liddell, Alice', 'S-1')]
    assert {r[0]: float(r[5]) for r in rows}['Dent, Dave'] == cards['dave']['score']['earned']
    left = [line for line in proc.stderr.splitlines() if 'no scorecard' in line]
    assert [line.split(': ', 1)[1].split(':')[0] for line in left] == [
        'Gray, Gina (S-7)', 'henry']
    assert 'frank: not in the roster' in proc.stderr
    assert 'wrote the canvas export: 5 rows to {}; left out 3: 2 no scorecard, 1 not in the ' \
           'roster'.format(target) in proc.stdout


def test_every_export_says_how_many_it_wrote_and_left_out(graded_batch, tmp_path):
    _, out = graded_batch
    said = {fmt: _cli('export', out, '--format', fmt, '--out', tmp_path / fmt).stdout
            for fmt in ('gradescope', 'junit', 'lti', 'html')}
    assert 'wrote the gradescope export: 6 results.jsons to ' in said['gradescope']
    assert 'left out 1: 1 no scorecard' in said['gradescope']
    assert 'wrote the junit export: 7 test suites to ' in said['junit']     # henry's is an error
    assert 'wrote the lti export: 4 scores' in said['lti'] and 'left out 4' in said['lti']
    assert 'wrote the html export: 6 submission pages' in said['html']


def test_a_hidden_check_leaves_no_trace_in_any_count(graded_batch):
    # with one check hidden, Gradescope's output said "4 checks fail because of it" and listed 3
    from dezero_grader.scoring import policy
    _, out = graded_batch
    doc = _cards(out)['carol']
    cause = next(c for c in doc['diagnosis']['causes'] if len(c['checks']) > 1)
    hidden_id = cause['checks'][-1]
    course = policy.from_document({'schema_version': '1.0', 'visibility': {
        'checks': {hidden_id: 'hidden'}}})
    results = gradescope.results(dict(doc, policy=course.record()), output_format='md')
    text = results['output']
    assert hidden_id not in text
    shown = len(cause['checks']) - 1
    assert '{} check{} fail{} because of it'.format(
        shown, '' if shown == 1 else 's', 's' if shown == 1 else '') in text
    assert '{} checks fail because of it'.format(len(cause['checks'])) not in text
    # the verdict, its reason and the score count the hidden check: withheld, as Gradescope
    # withholds the total score; and no number says how many tests are not shown
    assert 'REJECT' not in text and 'score {:g}/'.format(doc['score']['earned']) not in text
    assert doc['reason'] not in text
    assert 'verdict and score: shown once every test is' in text
    assert not re.search(r'\d+ more test', text)
    counts = diagnose.counted_ids(doc['checks'], doc['profile'])
    failing = [c for c in doc['checks'] if c['status'] in FAILING and c['id'] != hidden_id
               and c['id'] in counts]
    assert 'checks: {} failed'.format(len(failing)) in text
    assert [t['visibility'] for t in results['tests'] if hidden_id in t['name']] == ['hidden']


def test_what_the_policy_took_for_hidden_checks_is_shown_with_them(graded_batch):
    from dezero_grader.scoring import policy
    _, out = graded_batch
    doc = _cards(out)['dave']       # a rollback: the policy took points for its regression checks
    course = policy.from_document({'schema_version': '1.0', 'visibility': {
        'regression': 'after_due_date'}})
    results = gradescope.results(dict(doc, policy=course.record()))
    policy_tests = [t for t in results['tests'] if 'policy' in t['tags']]
    assert [t['visibility'] for t in policy_tests] == ['after_due_date']
    assert not any(c['id'] in results['output'] for c in doc['checks'] if c['regression'])
    plain = gradescope.results(doc)
    assert [t['visibility'] for t in plain['tests'] if 'policy' in t['tags']] == ['visible']
    assert 'ROLLBACK' in plain['output']


def test_the_class_page_names_everyone_the_roster_has(graded_batch, tmp_path):
    # it had submission ids only, and left out who handed nothing in
    _, out = graded_batch
    _cli('export', out, '--format', 'html', '--out', tmp_path / 'class')
    page = (tmp_path / 'class' / 'index.html').read_text()
    rows = re.findall(r'<tr class="submission[^"]*" data-id="([^"]+)"><td>([^<]*)</td>', page)
    assert ('alice', 'Liddell, Alice') in rows and ('dave', 'Dent, Dave') in rows
    assert ('frank', '') in rows                                   # not in the roster
    assert 'data-id="gina"><td>Gray, Gina</td><td>gina</td><td>nothing handed in' in page
