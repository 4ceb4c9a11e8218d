"""Static inputs that used to crash the grader or fool the terminal: a file named like the
worker's own temporary folder, folders nested 1,200 deep, names that are not UTF-8, too long or
hold a newline, escape sequences in a learner's error message, and an archive whose compiled
files would run instead of its sources. Each ends in a scorecard with a clear reason (a batch:
with its summary), and nothing on the terminal is obeyed."""
import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from dezero_grader import reference
from dezero_grader.grading import run
from dezero_grader.intake import load
from dezero_grader.present import terminal
from dezero_grader.records import schema

import hostile_cases as hc
from grade_cli import dezero_grade

ROOT = Path(__file__).resolve().parents[2]
STEP = hc.STEP


def grade(path, **kw):
    doc = run.grade(path, STEP, run.Options(device='sim', seed=11, only=('step52/api',), **kw))
    assert schema.errors('scorecard', doc) == []
    return doc


def test_a_file_named_like_the_workers_temporary_folder_changes_nothing(tmp_path):
    sub = hc.reference_copy(tmp_path / 'sub')
    (sub / '.tmp').write_text('a file, not a folder')
    assert grade(sub)['verdict'] == 'accept'


def test_folders_nested_1200_deep_are_refused_with_a_reason(tmp_path):
    sub = hc.reference_copy(tmp_path / 'sub')
    deep = sub
    for _ in range(1200):
        deep = deep / 'a'
        try:
            deep.mkdir()
        except OSError:   # the file system's path limit came first
            break
    try:
        doc = grade(sub)
        assert doc['verdict'] == 'invalid' and doc['invalid']['code'] == 'too-deep'
        assert 'more than 64 deep' in doc['reason']
    finally:
        while deep != sub:   # bottom up: a recursive removal would hit Python's recursion limit
            deep.rmdir()
            deep = deep.parent


def test_escape_sequences_in_a_learners_message_are_shown_not_obeyed(tmp_path):
    sub = hc.append_to_init(hc.reference_copy(tmp_path / 'sub'), r'''
        raise RuntimeError("\x1b[2K\r\x1b[32mACCEPT  score 30/30\x1b[0m")
        ''')
    doc = grade(sub)
    assert doc['verdict'] == 'invalid'
    text = terminal.render(doc, colour=True)
    assert '\x1b[2K' not in text and '\r' not in text and '\\x1b[32mACCEPT' in text
    assert text.count('\x1b[') == 2   # only the grader's own colour of INVALID, and its reset


def test_compiled_files_in_an_archive_never_run_and_never_share_a_hash(tmp_path):
    # a __pycache__ entry that would run instead of its source, and a virtual environment's
    # files: both left out of the content hash, so both are removed from the scratch copy
    archive = tmp_path / 'sub.zip'
    with zipfile.ZipFile(archive, 'w') as z:
        for path in sorted((reference.ROOT / 'dezero').rglob('*.py')):
            z.write(path, 'dezero/' + path.relative_to(reference.ROOT / 'dezero').as_posix())
        z.writestr('dezero/__pycache__/core.cpython-311.pyc', b'\x00' * 64)
        z.writestr('env/pyvenv.cfg', 'home = /usr\n')
        z.writestr('env/hidden.py', 'print("not hashed")\n')
    sub = load.prepare(archive, STEP, tmp_path / 'scratch')
    left = sorted(str(p.relative_to(sub.root)) for p in sub.root.rglob('*')
                  if '__pycache__' in p.parts or 'env' in p.parts)
    assert left == []
    assert sub.content_hash == load.content_hash(sub.root)


def _cli(*args):
    return dezero_grade(*args, timeout=600, text=False)   # raw bytes: names need not be UTF-8


@pytest.mark.skipif(sys.platform != 'linux', reason='file names as raw bytes')
def test_names_that_are_not_utf8_too_long_or_hold_a_newline_still_get_a_summary(tmp_path):
    subs = tmp_path / 'subs'
    subs.mkdir()
    base = hc.reference_copy(tmp_path / 'base')
    names = [b'caf\xe9', b'x' * 250, b'two\nlines', b'ok']
    for name in names:
        shutil.copytree(base, subs / os.fsdecode(name))
    out = tmp_path / 'out'
    proc = _cli('batch', subs, '--step', STEP, '--out', out, '--jobs', 2)
    assert proc.returncode == 0, proc.stderr.decode('utf-8', 'replace')[-2000:]
    summary = json.loads((out / 'summary.json').read_text(encoding='utf-8'))
    ids = [row['id'] for row in summary['submissions']]
    assert len(ids) == 4 and 'ok' in ids
    assert all(len(i) <= 80 and '\n' not in i and i.isprintable() for i in ids)
    assert all(row['verdict'] == 'accept' for row in summary['submissions'])
    log = proc.stderr.decode('utf-8', 'replace')
    assert not any(line.startswith('lines') for line in log.splitlines())   # no forged line


# -- what a user types wrong: a message and exit status 2, before any grading ----------------------

def _refused(proc, *words):
    err = proc.stderr.decode('utf-8', 'replace')
    assert proc.returncode == 2, err[-2000:]
    assert 'Traceback' not in err and all(w in err for w in words), err[-2000:]
    return err


def test_an_output_path_that_cannot_be_written_is_refused_before_grading(tmp_path):
    folder = tmp_path / 'a-folder'
    folder.mkdir()
    a_file = tmp_path / 'a-file'
    a_file.write_text('')
    args = ('check', reference.ROOT / 'steps', '--step', 9)
    _refused(_cli(*args, '--json', folder), 'that is a folder', 'scorecard.json')
    _refused(_cli(*args, '--json', a_file / 'x.json'), 'a-file is a file, not a folder')
    _refused(_cli(*args, '--graph-dir', a_file), 'that is a file, not a folder')
    _refused(_cli('batch', tmp_path, '--step', 9, '--out', a_file), 'that is a file, not a folder')
    _refused(_cli('merge', tmp_path, '--out', a_file), 'that is a file, not a folder')
    _refused(_cli('check', tmp_path / 'typo', '--step', 9), 'no file or folder at')
    assert sorted(p.name for p in tmp_path.iterdir()) == ['a-file', 'a-folder']
    assert list(folder.iterdir()) == []   # no temporary file left behind


def test_a_mistyped_check_id_is_refused_with_the_ids_it_may_mean():
    err = _refused(_cli('check', reference.ROOT / 'steps', '--step', 9, '--only', 'step09/squre'),
                   '--only step09/squre', 'no such check')
    assert 'did you mean step09/square' in err


def test_export_to_a_folder_where_a_file_is_meant_is_a_message(tmp_path):
    card = tmp_path / 'card.json'
    proc = _cli('check', reference.ROOT / 'steps', '--step', 1, '--json', card)
    assert proc.returncode == 0, proc.stderr.decode()[-2000:]
    (tmp_path / 'out').mkdir()
    _refused(_cli('export', card, '--format', 'canvas', '--out', tmp_path / 'out'),
             'that is a folder')
    # a folder that is not there yet is made, as for every file the grader writes
    made = _cli('export', card, '--format', 'junit', '--out', tmp_path / 'new' / 'j.xml')
    assert made.returncode == 0 and (tmp_path / 'new' / 'j.xml').is_file(), made.stderr.decode()


def test_version_is_the_installed_packages():
    from importlib import metadata
    proc = _cli('--version')
    assert proc.returncode == 0
    assert proc.stdout.decode().split() == ['dezero-grade', metadata.version('dezero-grader')]


def test_a_reader_that_stops_early_gets_no_traceback():
    # `dezero-grade list | head -1`: the pipe closes after the first line
    proc = subprocess.Popen([sys.executable, '-m', 'dezero_grader', 'list', '--checks'], cwd=ROOT,
                            env=dict(os.environ, PYTHONPATH=str(ROOT)), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    first = proc.stdout.readline()
    proc.stdout.close()
    err = proc.stderr.read().decode()
    proc.wait(timeout=120)
    assert first.startswith(b'step  1')
    assert 'Traceback' not in err and 'BrokenPipe' not in err, err
