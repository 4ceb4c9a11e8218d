"""The report in the learner's language, end to end: `check --lang`, the locale's language where
none is named, and a batch whose scorecards carry their language into the Gradescope export. A
real grading of the reference with one fault at step 9."""
import json
import os
import shutil

import pytest

from dezero_grader import reference
from dezero_grader.catalogue import assignments, faults
from dezero_grader.intake import load
from dezero_grader.present import terminal
from dezero_grader.records import schema
from grade_cli import dezero_grade

STEP = 9


@pytest.fixture(scope='module')
def broken(tmp_path_factory):
    """The book's step-9 code whose exp calls Square: rejected, two checks failing."""
    tmp = tmp_path_factory.mktemp('i18n')
    fault = {f.id: f for f in assignments.fault_catalogue(assignments.load(STEP))}['exp-calls-square']
    base = load.prepare(reference.ROOT, STEP, tmp / 'base')
    return faults.inject(base.root, tmp / 'mywork', fault, base.entry)


def test_check_writes_the_report_in_the_language_asked_and_keeps_the_scorecards_english(broken, tmp_path):
    card = tmp_path / 'card.json'
    proc = dezero_grade('check', broken, '--step', STEP, '--lang', 'ja', '--json', card,
                        expect=(1,))
    lines = proc.stdout.splitlines()
    assert lines[0].startswith('dezero-grade · ステップ 9 ')
    assert lines[1].startswith('不合格  得点 ')
    assert '根本原因（可能性の高い順' in proc.stdout and '✗ step09/exp [book, gradient, 1 点]' in proc.stdout
    assert 'root cause' not in proc.stdout and 'REJECT' not in proc.stdout
    doc = json.loads(card.read_text(encoding='utf-8'))
    assert schema.errors('scorecard', doc) == [] and doc['language'] == 'ja'
    assert doc['verdict'] == 'reject' and doc['reason'].isascii()   # the document's text: English
    # the report read back from the scorecard is the one printed (but the time it took)
    again = terminal.render(doc, submission=str(broken))
    assert again.splitlines()[2:] == lines[2:]


def test_without_lang_check_speaks_the_locales_language(broken, monkeypatch):
    for name in ('LANGUAGE', 'LC_ALL', 'LC_MESSAGES'):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv('LANG', 'ko_KR.UTF-8')
    proc = dezero_grade('check', broken, '--step', STEP, '--only', 'step09/exp', expect=(1,))
    assert proc.stdout.splitlines()[1].startswith('불합격  점수 ')
    assert '근본 원인 1: exp-calls-square' in proc.stdout


def test_a_batch_in_chinese_is_exported_in_chinese(broken, tmp_path):
    submissions = tmp_path / 'submissions'
    submissions.mkdir()
    shutil.copytree(broken, submissions / 'learner')
    out = tmp_path / 'out'
    dezero_grade('batch', submissions, '--step', STEP, '--out', out, '--jobs', 1, '--lang', 'zh',
                 expect=(0,))
    doc = json.loads((out / 'scorecards' / 'learner.json').read_text(encoding='utf-8'))
    assert doc['language'] == 'zh'
    receipt = json.loads((out / 'receipts' / 'learner.json').read_text(encoding='utf-8'))
    assert receipt['options']['language'] == 'zh'
    dezero_grade('export', out, '--format', 'gradescope', '--out', tmp_path / 'gs', expect=(0,))
    results = json.loads((tmp_path / 'gs' / 'learner' / 'results.json').read_text(encoding='utf-8'))
    assert results['output'].splitlines()[1].startswith('不通过  得分 ')
    assert schema.errors('gradescope-results', results) == []
