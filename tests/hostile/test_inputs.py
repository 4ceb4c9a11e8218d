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

import reference
from grader import load, report, run, schema

import hostile_cases as hc

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
    text = report.render(doc, colour=True)
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
    return subprocess.run([sys.executable, '-m', 'grader', *map(str, args)], cwd=ROOT,
                          env=dict(os.environ, PYTHONPATH=str(ROOT)), capture_output=True,
                          timeout=600)


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
