"""The stored mutation figure that selftest prints: validated, and said to be stale once the
code or the checks it was measured on change."""
import json

import pytest

from grader import mutation_record, schema
from grader.errors import GraderError


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
