"""Receipts that mean what they say: the content hash covers the tree the worker sees (an empty
folder included), a receipt holds a digest of the course secret (set, changed or removed: graded
again), and the fingerprint a receipt records is of what was graded, not of the hand-in as it
was found; the bubblewrap mount plan hides the course secret's file wherever it lies."""
import io
import json
import shutil
import sys

import pytest

from dezero_grader import reference
from dezero_grader import batch
from dezero_grader.batch import grading
from dezero_grader.batch.folder import RECEIPTS
from dezero_grader.grading import run
from dezero_grader.intake import load
from dezero_grader.isolation import bwrap
from grade_cli import run_to_end

STEP = 23


def _good(dest):
    shutil.copytree(reference.ROOT / 'dezero', dest / 'dezero',
                    ignore=shutil.ignore_patterns('__pycache__', '*.pyc'))
    return dest


def _batch(subs, out):
    return batch.run_batch(subs, out, batch.BatchOptions(STEP), jobs=1, stream=io.StringIO())


def test_an_empty_folder_changes_the_content_hash_and_is_graded_again(tmp_path):
    subs = tmp_path / 'subs'
    sub = _good(subs / 'alice')
    before = load.content_hash(sub)
    first = _batch(subs, tmp_path / 'out')
    assert (first.graded_now, first.resumed) == (1, 0)
    (sub / 'dezero' / 'empty').mkdir()         # a folder the code may list or test for
    assert load.content_hash(sub) != before
    again = _batch(subs, tmp_path / 'out')
    assert (again.graded_now, again.resumed) == (1, 0)
    card = json.loads((tmp_path / 'out' / 'scorecards' / 'alice.json').read_text())
    assert card['submission']['content_hash'] != first.summary['submissions'][0]['content_hash']
    assert _batch(subs, tmp_path / 'out').resumed == 1   # nothing changed: kept


def test_a_course_secret_set_or_changed_after_a_batch_grades_again(tmp_path, monkeypatch):
    monkeypatch.delenv(run.SECRET_ENV, raising=False)
    monkeypatch.delenv(run.SECRET_FILE_ENV, raising=False)
    subs = tmp_path / 'subs'
    _good(subs / 'alice')
    out = tmp_path / 'out'
    assert _batch(subs, out).graded_now == 1
    seeds = [json.loads((out / 'scorecards' / 'alice.json').read_text())['seed']]
    for secret in ('first secret', 'second secret'):
        monkeypatch.setenv(run.SECRET_ENV, secret)
        result = _batch(subs, out)
        assert (result.graded_now, result.resumed) == (1, 0), secret
        seeds.append(json.loads((out / 'scorecards' / 'alice.json').read_text())['seed'])
        receipt = json.loads((out / RECEIPTS / 'alice.json').read_text())
        assert receipt['course_secret'] == run.course_secret_digest(secret.encode())
        assert secret not in json.dumps(receipt)
    assert len(set(seeds)) == 3                       # each grading had the seeds of its secret
    assert _batch(subs, out).resumed == 1             # the same secret: kept


def test_the_receipt_names_the_copy_that_was_graded(tmp_path):
    subs = tmp_path / 'subs'
    sub = _good(subs / 'alice')
    discovered = batch.fingerprint(batch.HandIn('alice', sub, 'folder'))   # code A, found
    init = sub / 'dezero' / '__init__.py'
    original = init.read_text()
    init.write_text(original + '\nraise RuntimeError("code B")\n')       # swapped before the copy
    out = tmp_path / 'out'
    entry = batch.HandIn('alice', sub, 'folder')
    options = batch.BatchOptions(STEP)
    result = grading.grade_one(grading.GradeTask(entry, discovered, options, str(out)))
    assert result['verdict'] == 'invalid'            # code B was graded
    receipt = json.loads((out / RECEIPTS / 'alice.json').read_text())
    assert receipt['fingerprint'] == load.fingerprint_of(sub) != discovered
    init.write_text(original)                          # swapped back to code A
    assert not batch.is_done(out, entry, batch.fingerprint(entry), options)   # graded again


def test_an_archive_is_graded_from_the_bytes_its_fingerprint_names(tmp_path):
    base = _good(tmp_path / 'alice')
    archive = shutil.make_archive(str(tmp_path / 'alice'), 'zip', root_dir=base)
    sub = load.prepare(archive, STEP, tmp_path / 'scratch')
    assert sub.fingerprint == load.fingerprint_of(archive)
    assert [p.name for p in (tmp_path / 'scratch').iterdir()] == [sub.root.name]   # no copy left


@pytest.mark.skipif(bwrap.unavailable() is not None, reason=bwrap.unavailable() or '')
def test_the_course_secret_file_is_hidden_inside_a_folder_the_sandbox_mounts(tmp_path):
    venv = tmp_path / 'venv' / 'lib'          # a folder the worker must read (its packages)
    venv.mkdir(parents=True)
    secret = venv / 'course-secret'
    secret.write_text('the course secret')
    (venv / 'module.py').write_text('x = 1\n')
    scratch = tmp_path / 'scratch'
    scratch.mkdir()
    argv = bwrap.command(cwd=scratch, grader_dir=load.Path(run.__file__).parent,
                         sys_path=[venv], hidden=[secret], network=False)
    probe = ('import sys\n'
             'try:\n    print(open(sys.argv[1]).read())\n'
             'except OSError as e:\n    print(type(e).__name__)\n'
             'print(open(sys.argv[2]).read())\n')
    read = run_to_end(argv + [sys.executable, '-c', probe, str(secret), str(venv / 'module.py')],
                      capture_output=True, text=True)
    assert read.returncode == 0, read.stderr
    # covered: empty, or refused (a device node bound in a user namespace cannot be opened)
    assert 'the course secret' not in read.stdout and 'x = 1' in read.stdout


def test_the_grader_hides_the_secret_file_it_is_given(tmp_path, monkeypatch):
    from dezero_grader.grading import trust
    secret = tmp_path / 'venv' / 'course-secret'
    secret.parent.mkdir()
    secret.write_text('s')
    monkeypatch.setenv(run.SECRET_FILE_ENV, str(secret))
    assert secret.resolve() in trust.hidden_from_learners(tmp_path / 'scratch')
