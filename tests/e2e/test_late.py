"""Late work in a batch (issue 23): `batch` takes each submission's hand-in time from the roster's
own column, Gradescope's submission_metadata.yml or a times file, applies the course policy's late
block, grades again what a new time changes, and the summary and every export show the lateness.
"""
import csv
import io
import json
import shutil
import xml.etree.ElementTree as ET

import pytest

from dezero_grader.intake import load
from dezero_grader.proof import selftest
from dezero_grader.records import schema
from grade_cli import dezero_grade

STEP = 9
POLICY = {'schema_version': '1.0', 'name': 'late-course',
          'late': {'due': '2026-05-01T23:59:00Z', 'penalty_per_day': 0.25, 'max_penalty': 1.0}}
ROSTER = ('submission,student,id,sis_user_id,lti_user_id,submitted_at\n'
          'alice,"Liddell, Alice",1001,S-1,lti-a,2026-05-01T20:00:00Z\n'
          'bob,"Builder, Bob",1002,S-2,lti-b,2026-05-02T10:00:00Z\n'
          'carol,"Cooper, Carol",1003,S-3,lti-c,2026-05-04 09:00:00 -0700\n'
          'dave,"Dent, Dave",1004,S-4,lti-d,\n')
# Gradescope's export of the same class, bob's time earlier, carol's later
METADATA = '''\
alice:
  :submitters:
  - :name: Alice Liddell
    :sid: S-1
  :created_at: 2026-05-01 13:00:00.000000000 -07:00
submission_77:
  :submitters:
  - :name: Bob Builder
    :sid: S-2
  :created_at: 2026-05-01 15:00:00.000000000 -07:00
carol:
  :created_at: 2026-05-06 09:00:00.000000000 -07:00
'''


def _cli(*args, expect=(0,)):
    return dezero_grade(*args, expect=expect, timeout=600)


def _cards(out):
    return {p.stem: json.loads(p.read_text()) for p in (out / 'scorecards').glob('*.json')}


def _late(doc):
    return next((a for a in doc['score'].get('adjustments', ()) if a['kind'] == 'late'), None)


@pytest.fixture(scope='module')
def late_class(tmp_path_factory):
    root = tmp_path_factory.mktemp('late')
    subs = root / 'submissions'
    base = load.prepare(selftest.reference_source(STEP), STEP, root / 'work')
    for ident in ('alice', 'bob', 'carol', 'dave'):
        shutil.copytree(base.root, subs / ident)
    (root / 'policy.json').write_text(json.dumps(POLICY))
    (root / 'roster.csv').write_text(ROSTER)
    out = root / 'out'
    proc = _cli('batch', subs, '--step', STEP, '--out', out, '--jobs', 2, '--policy',
                root / 'policy.json', '--roster', root / 'roster.csv')
    return root, out, proc


def test_the_rosters_submission_times_give_the_late_penalty(late_class):
    _, out, proc = late_class
    cards = _cards(out)
    full = cards['alice']['score']['possible']
    assert cards['alice']['score']['earned'] == full and _late(cards['alice']) is None
    bob, carol = _late(cards['bob']), _late(cards['carol'])
    assert bob['days_late'] == 1 and cards['bob']['score']['earned'] == pytest.approx(full * 0.75)
    assert carol['days_late'] == 3 and cards['carol']['score']['earned'] == pytest.approx(full / 4)
    assert bob['source'] == 'roster roster.csv'
    assert _late(cards['dave']) is None
    summary = json.loads((out / 'summary.json').read_text())
    assert not schema.errors('batch-summary', summary)
    assert summary['late'] == {'source': 'roster roster.csv', 'late': ['bob', 'carol'],
                               'unknown': ['dave']}
    rows = {r['id']: r for r in summary['submissions']}
    assert rows['bob']['late']['days_late'] == 1 and 'late' not in rows['alice']
    assert 'late (2 submissions, times from roster roster.csv): bob (10.0 h' in proc.stdout
    assert 'no hand-in time for (graded as on time): dave' in proc.stdout


def test_every_export_shows_the_lateness(late_class, tmp_path):
    _, out, _ = late_class
    lti = tmp_path / 'lti.json'
    _cli('export', out, '--format', 'lti', '--out', lti)
    comments = {s['userId']: s['comment'] for s in json.loads(lti.read_text())['scores']}
    assert 'Late: handed in 10.0 h late: 25% taken' in comments['lti-b']
    assert 'Late' not in comments['lti-a']
    junit = tmp_path / 'junit.xml'
    _cli('export', out, '--format', 'junit', '--out', junit)
    props = {s.get('name'): {p.get('name'): p.get('value') for p in s.iter('property')}
             for s in ET.parse(junit).getroot().iter('testsuite')}
    assert props['carol']['late'].startswith('handed in 2.7 days late: 75% taken')
    assert 'late' not in props['alice']
    canvas = tmp_path / 'canvas.csv'
    proc = _cli('export', out, '--format', 'canvas', '--out', canvas)
    assert 'bob: late work, its score is after the penalty' in proc.stderr
    rows = {r[0]: r for r in csv.reader(io.StringIO(canvas.read_text()))}
    assert float(rows['Builder, Bob'][5]) == _cards(out)['bob']['score']['earned']
    gs = tmp_path / 'gs'
    _cli('export', out, '--format', 'gradescope', '--out', gs)
    tests = json.loads((gs / 'bob' / 'results.json').read_text())['tests']
    assert [t['name'] for t in tests if 'late' in t['tags']] == ['Course policy: late submission']
    _cli('export', out, '--format', 'html', '--out', tmp_path / 'html')
    page = (tmp_path / 'html' / 'index.html').read_text()
    assert '10.0 h (' in page


def test_new_times_grade_again_what_they_change(late_class):
    root, out, _ = late_class
    (root / 'submission_metadata.yml').write_text(METADATA)
    proc = _cli('batch', root / 'submissions', '--step', STEP, '--out', out, '--jobs', 2,
                '--policy', root / 'policy.json', '--times', root / 'submission_metadata.yml')
    # alice's time is the same moment, dave has none either way: their scorecards stay; bob is
    # found by his SID
    assert 'grading 2 of 4 submission(s)' in proc.stderr and '2 already graded' in proc.stderr
    cards = _cards(out)
    assert _late(cards['bob']) is None and _late(cards['carol'])['days_late'] == 5
    assert _late(cards['carol'])['source'] == 'submission_metadata.yml'
    summary = json.loads((out / 'summary.json').read_text())
    assert summary['late'] == {'source': 'submission_metadata.yml', 'late': ['carol'],
                               'unknown': ['dave']}


def test_times_that_cannot_be_used_stop_the_batch_before_grading(late_class, tmp_path):
    root, _, _ = late_class
    (tmp_path / 'times.csv').write_text('submission,submitted_at\nalice,2026-05-02 10:00\n')
    proc = _cli('batch', root / 'submissions', '--step', STEP, '--out', tmp_path / 'out',
                '--times', tmp_path / 'times.csv', expect=(2,))
    assert 'UTC offset' in proc.stderr and not (tmp_path / 'out' / 'summary.json').exists()
