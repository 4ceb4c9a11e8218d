"""One boundary nothing a learner hands in crosses as an exception: a step file nested beyond
Python's parser, a lone surrogate in an exception message, a flat upload holding a file named
like the loader's own staging folder, and any bug of the grader on any input. `run.grade`,
`batch` and the Gradescope entry point each end with what they promise (a scorecard, a summary,
a results.json), never with a traceback; every writer survives text no encoding can hold; and
nothing a learner wrote can start a line of its own on the terminal or in a batch's log."""
import json
import re
import shutil

import pytest

from dezero_grader import reference
from dezero_grader.batch import grading, pool
from dezero_grader.export import autograder
from dezero_grader.grading import run
from dezero_grader.intake import load
from dezero_grader.present import html_page, terminal
from dezero_grader.present.progress import Progress
from dezero_grader.records import schema
from dezero_grader.scoring import scorecard_write

import hostile_cases as hc
from grade_cli import dezero_grade

STEP = 23   # the first package step: grading it takes a second or two
FORGED_LINES = '\\n\\x1b[32mACCEPT  score 6/6\\x1b[0m\\n[2/2] mallory: accept 6/6'
SURROGATE = '\\udc80'   # as the learner's source and every written escape spell it
LONE = '\udc80'          # the character itself


def _single_file(dest, step, body):
    dest.mkdir(parents=True)
    (dest / 'step{:02d}.py'.format(step)).write_text(body, encoding='utf-8')
    return dest


def _good(dest):
    shutil.copytree(reference.ROOT / 'dezero', dest / 'dezero',
                    ignore=shutil.ignore_patterns('__pycache__', '*.pyc'))
    return dest


def _mallory(dest):
    """Plain learner code whose exception message holds a lone surrogate and forged lines."""
    (dest / 'dezero').mkdir(parents=True)
    (dest / 'dezero' / '__init__.py').write_text('raise RuntimeError("bad {} here{}")\n'.format(
        SURROGATE, FORGED_LINES), encoding='utf-8')
    return dest


def _no_forged_line(text):
    # a verdict line starts a line, a progress line starts with its count: learner text may
    # appear only inside a line of the grader's, or indented under one (what the code printed)
    for line in text.splitlines():
        assert not re.match(r'(\x1b\[[0-9;]*m)?ACCEPT', line), line
        assert 'mallory: accept' not in line or not line.startswith('['), line


# one expression nested beyond the parser: ast.parse raises MemoryError, or RecursionError
NESTED = {'memory': 'x = ' + '-' * 100_000 + '1\n', 'recursion': 'x = 1' + '+1' * 200_000 + '\n'}


@pytest.mark.parametrize('how', sorted(NESTED))
def test_a_step_file_nested_beyond_the_parser_is_graded_not_a_crash(tmp_path, how):
    # step 5 has no code of its own: whether its file holds code is asked of the parser
    sub = _single_file(tmp_path / 'deep', step=5, body=NESTED[how])
    card = tmp_path / 'card.json'
    proc = dezero_grade('check', sub, '--step', 5, '--json', card, timeout=600)
    assert 'Traceback' not in proc.stderr + proc.stdout, proc.stderr[-3000:]
    doc = json.loads(card.read_text(encoding='utf-8'))
    assert not schema.errors('scorecard', doc)
    assert doc['verdict'] == 'invalid' and doc['invalid']['code'] == 'syntax-error'
    assert 'step05.py' in doc['reason'] and 'parser' in doc['reason']   # not a memory limit
    assert proc.returncode == 1


def test_a_lone_surrogate_in_a_message_reaches_every_writer(tmp_path):
    doc = run.grade(_mallory(tmp_path / 'mallory'), STEP, run.Options(device='sim', seed=3))
    assert doc['verdict'] == 'invalid' and LONE in doc['reason']
    scorecard_write.write(tmp_path / 'card.json', doc)
    back = json.loads((tmp_path / 'card.json').read_text(encoding='utf-8'))
    assert back == doc          # escaped as JSON escapes it: read back as it was
    html_page.write_report(tmp_path / 'report.html', doc)
    assert SURROGATE in (tmp_path / 'report.html').read_text(encoding='utf-8')   # shown as text
    text = terminal.render(doc)
    text.encode('utf-8')                             # a terminal can print it
    assert SURROGATE in text
    _no_forged_line(text)


def test_a_batch_writes_every_scorecard_summary_and_export_whatever_the_messages(tmp_path):
    subs = tmp_path / 'subs'
    _mallory(subs / 'mallory')
    _good(subs / 'alice')
    roster = tmp_path / 'roster.csv'
    roster.write_text('Student,ID,SIS User ID,SIS Login ID,Section,Submission,LTI User ID\n'
                      '"Liddell, Alice",1001,S-1,alice@uni,A,alice,lti-alice\n'
                      'Mallory,1002,S-2,mallory@uni,A,mallory,lti-mallory\n', encoding='utf-8')
    out = tmp_path / 'out'
    proc = dezero_grade('batch', subs, '--step', STEP, '--out', out, '--jobs', 1, '--roster',
                        roster, timeout=600)
    assert proc.returncode == 0 and 'Traceback' not in proc.stderr, proc.stderr[-3000:]
    _no_forged_line(proc.stdout + proc.stderr)
    summary = json.loads((out / 'summary.json').read_text(encoding='utf-8'))
    assert {r['id']: r['verdict'] for r in summary['submissions']} == {
        'alice': 'accept', 'mallory': 'invalid'}
    for fmt, target in (('canvas', 'canvas.csv'), ('junit', 'junit.xml'), ('lti', 'lti.json'),
                        ('gradescope', 'gradescope'), ('html', 'html')):
        made = dezero_grade('export', out, '--format', fmt, '--out', tmp_path / target,
                            timeout=600)
        assert made.returncode == 0 and 'Traceback' not in made.stderr, made.stderr[-3000:]
    assert SURROGATE in (tmp_path / 'junit.xml').read_text(encoding='utf-8')


def test_a_flat_upload_holding_a_file_named_like_the_staging_folder(tmp_path):
    sub = tmp_path / 'flat'
    shutil.copytree(reference.ROOT / 'dezero', sub,
                    ignore=shutil.ignore_patterns('__pycache__', '*.pyc'))
    (sub / '.dezero-flat').write_text('the learner chose this name\n')
    prepared = load.prepare(sub, hc.STEP, tmp_path / 'scratch')
    assert prepared.entry.path == 'dezero'
    assert (prepared.root / 'dezero' / '.dezero-flat').is_file()   # kept, inside the package
    doc = run.grade(sub, hc.STEP, run.Options(device='sim', seed=3, only=('step52/api',)))
    assert doc['verdict'] == 'accept', doc['reason']


def _broken_prepare(*args, **kwargs):
    raise FileExistsError(17, 'File exists', '.dezero-flat')


def test_any_bug_of_the_grader_is_a_scorecard_that_says_so(tmp_path, monkeypatch):
    monkeypatch.setattr(load, 'prepare', _broken_prepare)
    heard = []
    doc = run.grade(_good(tmp_path / 'alice'), STEP, run.Options(device='sim'),
                    on_grader_error=heard.append)
    assert not schema.errors('scorecard', doc)
    assert doc['verdict'] == 'invalid' and doc['invalid']['code'] == 'grader-error'
    assert "not the submission's fault" in doc['reason'] and 'your code' not in doc['reason']
    assert 'FileExistsError' in doc['reason'] and [type(e) for e in heard] == [FileExistsError]


class _Sink:
    def __init__(self):
        self.text = ''

    def write(self, text):
        self.text += text

    def flush(self):
        pass


def forged_failure(task):
    """A stand-in for the batch's grading function: the grader's own failure whose reason and
    traceback quote a learner's message holding forged lines."""
    try:
        raise RuntimeError('bad here\n[2/2] mallory: accept 6/6\nACCEPT  score 6/6')
    except RuntimeError:
        return pool.grader_failed(task.id, 'the grader failed (RuntimeError: bad here\n'
                                  '[2/2] mallory: accept 6/6)')


def test_a_batch_log_cannot_be_forged_by_a_message(tmp_path):
    from dezero_grader import batch
    task = grading.GradeTask(batch.HandIn('bob', tmp_path, 'folder'), 'x', batch.BatchOptions(STEP),
                             str(tmp_path / 'out'))
    sink = _Sink()
    failures = pool.grade_all([task], 1, tmp_path / 'out' / '.work', Progress(1, 0, sink),
                              grade_one=forged_failure, watchdog=grading.watchdog_s)
    assert [f.id for f in failures] == ['bob']
    assert 'Traceback' in sink.text            # the instructor still sees where it failed
    _no_forged_line(sink.text)
    assert [l for l in sink.text.splitlines() if l.startswith('[')] == [
        l for l in sink.text.splitlines() if l.startswith('[1/1] bob: grader-error')]


def _gradescope(tmp_path, submission, step=STEP):
    results = tmp_path / 'results'
    code = autograder.main(['--step', str(step), '--submission',
                            str(submission), '--results', str(results),
                            '--metadata', str(tmp_path / 'none.json')])
    assert code == 0
    doc = json.loads((results / 'results.json').read_text(encoding='utf-8'))
    assert not schema.errors('gradescope-results', doc)
    return doc


def test_the_gradescope_entry_point_survives_a_surrogate_and_a_nested_file(tmp_path, capsys):
    doc = _gradescope(tmp_path / 'm', _mallory(tmp_path / 'mallory'))
    assert doc['extra_data']['verdict'] == 'invalid'
    assert 'Traceback' not in capsys.readouterr().out
    _no_forged_line(doc['output'])
    deep = _gradescope(tmp_path / 'd', _single_file(tmp_path / 'deep', 5, NESTED['memory']), 5)
    assert 'parser' in deep['tests'][0]['output']
    assert 'Traceback' not in capsys.readouterr().out
