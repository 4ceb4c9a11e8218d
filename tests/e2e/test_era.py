"""Environment drift is not the learner's bug: a framework written against the book's 2020 NumPy
and CuPy (`tests/fixtures/book_era`) gets its framework's verdict under the default (book) era,
with each drift listed as a compatibility finding at its file:line; under `--era current` the
same drifts fail, with the finding's own words."""
import importlib.util
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from dezero_grader import reference
from dezero_grader import batch
from dezero_grader.grading import run
from dezero_grader.present import terminal
from dezero_grader.records import schema
from dezero_grader.records.status import FAILING
from dezero_grader.sandboxed.probes import compat

REPO = Path(__file__).resolve().parents[2]
SEED = 1234

_spec = importlib.util.spec_from_file_location(
    'book_era_fixture', REPO / 'tests' / 'fixtures' / 'book_era' / '__init__.py')
book_era = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(book_era)

DRIFT = {d.api: d for d in compat.DRIFTS}


def grade(path, step, **kw):
    doc = run.grade(path, step, run.Options(seed=SEED, **kw))
    assert schema.errors('scorecard', doc) == []
    return doc


def failing(doc):
    return {c['id']: c for c in doc['checks'] if c['status'] in FAILING}


@pytest.fixture(scope='module')
def book_package(tmp_path_factory):
    root = tmp_path_factory.mktemp('book-era')
    return root, book_era.build(root)


@pytest.mark.parametrize('step,apis', [
    (52, {'cupy.scatter_add', 'numpy.int', 'numpy.lib.index_tricks', 'numpy.lib.arraysetops'}),
    (47, {'numpy.int', 'numpy.lib.index_tricks', 'numpy.lib.arraysetops'}),   # stage 4: host only
])
def test_book_era_code_is_accepted_with_full_marks_and_its_drifts_listed(book_package, step, apis):
    root, where = book_package
    doc = grade(root, step)
    assert doc['era'] == 'book'
    assert doc['verdict'] == 'accept', failing(doc)
    assert doc['score']['earned'] == doc['score']['possible'] > 0
    found = {(f['api'], f['where']) for f in doc['compatibility']}
    assert found == {(api, where[api]) for api in apis}
    for f in doc['compatibility']:
        d = DRIFT[f['api']]
        assert (f['message'], f['since'], f['fix']) == (d.breaks, d.since, d.fix)
    # prominent in the terminal report, right under the verdict
    text = terminal.render(doc)
    assert text.index('compatibility findings') < text.index('checks:')
    assert '{} at {}'.format('numpy.int', where['numpy.int']) in text


def test_the_reference_meets_no_drift():
    doc = grade(reference.ROOT, 52)
    assert doc['verdict'] == 'accept' and doc['compatibility'] == []


@pytest.mark.parametrize('api', ['numpy.int', 'numpy.lib.index_tricks'])
def test_current_era_fails_an_import_time_drift_with_the_same_words(tmp_path, api):
    where = book_era.build(tmp_path, only={api})
    doc = grade(tmp_path, 52, era='current')
    assert doc['era'] == 'current' and doc['verdict'] == 'invalid'
    assert DRIFT[api].text in doc['reason'] and where[api] in doc['reason']
    assert doc['compatibility'] == []


def test_current_era_fails_the_device_get_item_with_the_same_words(tmp_path):
    where = book_era.build(tmp_path, only={'cupy.scatter_add'})
    doc = grade(tmp_path, 52, era='current')
    assert doc['verdict'] != 'accept'
    bad = failing(doc)
    assert set(bad) == {'step52/device.fn.get_item'}
    assert compat.SCATTER_ADD.text in bad['step52/device.fn.get_item']['message']
    assert where['cupy.scatter_add'] in json.dumps(bad['step52/device.fn.get_item']['evidence'])


def test_drifts_are_findings_without_a_device_too(book_package):
    root, where = book_package
    doc = grade(root, 52, device='cpu')
    assert doc['verdict'] == 'incomplete'   # the device checks are not judged without a device
    assert not failing(doc)
    assert {f['api'] for f in doc['compatibility']} == {
        'numpy.int', 'numpy.lib.index_tricks', 'numpy.lib.arraysetops'}


def test_batch_takes_the_era_and_counts_the_drifts(tmp_path, book_package):
    root, _ = book_package
    subs = tmp_path / 'subs'
    subs.mkdir()
    shutil.copytree(root, subs / 'book')
    shutil.copytree(Path(reference.ROOT) / 'dezero', subs / 'ref' / 'dezero')
    options = batch.BatchOptions.from_cli(52, era='book', seed=SEED)
    result = batch.run_batch(subs, tmp_path / 'out', options, jobs=1)
    summary = result.summary
    assert summary['options']['era'] == 'book'
    assert summary['counts']['verdicts']['accept'] == 2, summary['ungraded']
    rows = {r['api']: r for r in summary['compatibility']}
    assert set(rows) == {'cupy.scatter_add', 'numpy.int', 'numpy.lib.index_tricks',
                         'numpy.lib.arraysetops'}
    assert all(r['submissions'] == 1 and r['places'] == 1 for r in rows.values())
    assert 'drifts of the environment' in batch.render(summary, tmp_path / 'out')


def test_the_cli_documents_one_era_option_for_check_batch_and_the_autograder(tmp_path):
    from dezero_grader.cli import build_parser
    parser = build_parser()
    assert parser.parse_args(['check', '.', '--step', '52']).era == 'book'
    assert parser.parse_args(['batch', '.', '--step', '52', '--out', 'o', '--era',
                              'current']).era == 'current'
    from dezero_grader.export import autograder
    folder = autograder.write_folder(tmp_path / 'ag', 52, era='current', make_zip=False)
    assert '--era current' in (folder / 'run_autograder').read_text(encoding='utf-8')
