"""The stored mutation figure that selftest prints: validated, and said to be stale once the
code or the checks it was measured on change -- the reference, the owning steps' assignments,
and every module of the grader that decides a verdict (a loosened tolerance, an edited judge)."""
import json
import shutil

import pytest

from dezero_grader import reference
from dezero_grader.errors import GraderError
from dezero_grader.grading import codeset
from dezero_grader.proof import mutation_record
from dezero_grader.records import schema


def _record(key):
    return {'schema_version': '1.0', 'measured_at': '2026-12-01T12:00:00Z', 'key': key,
            'grade_seed': 2026, 'mutants': 10, 'rejected': 9, 'by_judgment': 8,
            'survivors': [{'file': 'functions.py', 'owner': 'ReLU', 'method': 'backward',
                           'line': 12, 'mutation': 'Gt → GtE', 'step': 51, 'verdict': 'accept'}]}


@pytest.fixture
def stored(tmp_path, monkeypatch):
    target = tmp_path / 'mutation.json'
    monkeypatch.setattr(mutation_record, 'path', lambda: target)
    return target


def test_no_figure_stored_says_how_to_measure_it(stored):
    assert 'no figure stored' in mutation_record.summary()


def test_a_current_figure_is_printed_with_its_survivors(stored):
    mutation_record.write(_record(mutation_record.key(mutation_record.OWNERS.values())))
    line = mutation_record.summary()
    assert '9 of 10 mutants' in line and '8 by judging' in line
    assert 'ReLU.backward line 12 Gt → GtE' in line and 'on the current reference' in line


def test_a_figure_measured_on_other_code_or_checks_is_stale(stored):
    mutation_record.write(_record('sha256:' + '0' * 64))
    assert 'STALE' in mutation_record.summary()


def test_the_key_follows_the_owning_steps_checks():
    steps = sorted(set(mutation_record.OWNERS.values()))
    assert mutation_record.key(steps) != mutation_record.key(steps[:-1])


def test_a_malformed_record_is_refused(stored):
    with pytest.raises(GraderError, match="failed its schema"):
        mutation_record.write(dict(_record('sha256:' + '0' * 64), mutants=-1))
    stored.write_text(json.dumps({'schema_version': '1.0'}))
    with pytest.raises(GraderError, match="failed its schema"):
        mutation_record.load()


def test_the_stored_figure_validates():
    record = mutation_record.load()
    if record is not None:
        assert schema.errors('mutation', record) == []
        assert record['rejected'] <= record['mutants']


def test_the_key_covers_every_module_that_decides():
    root = codeset.GRADER_DIR
    deciding = {p.relative_to(root).as_posix() for p in mutation_record.deciding_files()}
    for folder in ('checks', 'contracts', 'sandboxed/probes/scenarios', 'sandboxed/simdevice'):
        every = {p.relative_to(root).as_posix() for p in codeset.files_under(root / folder)}
        assert every and every <= deciding, sorted(every - deciding)
    assert {'grading/run.py', 'scoring/score.py', 'scoring/policy.py', 'records/status.py',
            'scoring/scorecard_write.py', 'grading/worker_session.py', 'grading/trust.py',
            'grading/reference_answers.py', 'wire.py',
            'catalogue/assignments.py', 'sandboxed/worker.py'} <= deciding


@pytest.fixture(scope='module')
def copies(tmp_path_factory):
    """(the grader package's folder, the folder holding the reference's `dezero`), copied."""
    top = tmp_path_factory.mktemp('code')
    ignore = shutil.ignore_patterns('__pycache__', '*.pyc')
    shutil.copytree(codeset.GRADER_DIR, top / 'dezero_grader', ignore=ignore)
    shutil.copytree(reference.ROOT / 'dezero', top / 'reference' / 'dezero', ignore=ignore)
    return top / 'dezero_grader', top / 'reference'


def _edit(path, old, new):
    text = path.read_text(encoding='utf-8')
    assert old in text
    path.write_text(text.replace(old, new, 1), encoding='utf-8')
    return text


@pytest.mark.parametrize('where, old, new', [
    ('dezero_grader/checks/compare.py', "'float64': {'rtol': 1e-7", "'float64': {'rtol': 5e-2"),
    ('dezero_grader/checks/gradients.py', "case='grad.numeric'", "case='grad.numeric.loose'"),
    ('dezero_grader/contracts/functions.py', '"""', '"""Edited. '),
    ('dezero_grader/scoring/score.py', '"""', '"""Edited. '),
    ('dezero_grader/sandboxed/probes/scenarios/functions.py', '"""', '"""Edited. '),
    ('reference/dezero/layers.py', '"""', '"""Edited. '),
])
def test_an_edit_of_what_decides_marks_the_figure_stale(copies, stored, monkeypatch, where,
                                                          old, new):
    grader_dir, reference_dir = copies
    original = mutation_record.key
    monkeypatch.setattr(mutation_record, 'key', lambda steps: original(
        steps, grader_dir=grader_dir, reference_dir=reference_dir))
    # the copy is the same code: the figure measured on the real one is current for it
    mutation_record.write(_record(original(mutation_record.OWNERS.values())))
    assert 'on the current reference' in mutation_record.summary()
    path = grader_dir.parent / where
    before = _edit(path, old, new)
    try:
        assert 'STALE' in mutation_record.summary()
    finally:
        path.write_text(before, encoding='utf-8')
    assert 'on the current reference' in mutation_record.summary()
