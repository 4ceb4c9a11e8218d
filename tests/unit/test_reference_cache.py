"""The reference's cached answers are kept per device mode: a worker with the simulated device
installed and one without it are different environments, so an answer one of them gave is never
served for the other. And under a version over every file an answer depends on: an edit of any
file that runs in the worker (scenarios, simulated device, contracts, wire format, errors), of
those that build its requests, or of the reference misses; an edit of a judge keeps the answers.
"""
import json
import shutil
from pathlib import Path

import pytest

from dezero_grader import reference
from dezero_grader.catalogue import assignments
from dezero_grader.grading import codeset, reference_cache, run
from dezero_grader.grading.reference_answers import observe_reference
from dezero_grader.isolation.worker_process import Limits
from dezero_grader.records import schema


def test_an_answer_cached_in_one_device_mode_is_not_served_in_another(tmp_path, monkeypatch):
    monkeypatch.setenv('DEZERO_GRADER_CACHE', str(tmp_path))
    probes = list(run.plan(assignments.load(9), seed=11).reference_probes[:1])
    assert probes
    first = observe_reference(probes, limits=Limits(), device_mode='sim')
    assert not first.setup.get('cached')
    assert observe_reference(probes, limits=Limits(), device_mode='sim').setup.get('cached')
    other = observe_reference(probes, limits=Limits(), device_mode='cpu')
    assert not other.setup.get('cached')
    assert observe_reference(probes, limits=Limits(), device_mode='cpu').setup.get('cached')


# -- the version: every file an answer depends on ------------------------------------------------

_COPY_IGNORE = shutil.ignore_patterns('__pycache__', '*.pyc')


@pytest.fixture(scope='module')
def copies(tmp_path_factory):
    """(the grader package's folder, the folder holding the reference's `dezero`), copied."""
    top = tmp_path_factory.mktemp('code')
    grader_dir, reference_dir = top / 'dezero_grader', top / 'reference'
    shutil.copytree(codeset.GRADER_DIR, grader_dir, ignore=_COPY_IGNORE)
    shutil.copytree(Path(reference.ROOT) / 'dezero', reference_dir / 'dezero', ignore=_COPY_IGNORE)
    return grader_dir, reference_dir


def _edited(path: Path, version):
    """The version with `path` edited (a comment, or a byte for a data file), then restored."""
    before = path.read_bytes()
    path.write_bytes(before + (b'\n# edited\n' if path.suffix == '.py' else b'\0'))
    try:
        return version()
    finally:
        path.write_bytes(before)


def test_the_key_covers_what_runs_in_the_worker_and_builds_its_requests(copies):
    grader_dir, _ = copies
    keyed = {p.relative_to(grader_dir).as_posix() for p in reference_cache.key_files(grader_dir)}
    # the scenarios, the simulated device and the contracts, every file of each
    for folder in ('sandboxed/probes/scenarios', 'sandboxed/simdevice', 'contracts'):
        every = {p.relative_to(grader_dir).as_posix() for p in codeset.files_under(grader_dir / folder)}
        assert every and every <= keyed, sorted(every - keyed)
    assert {'sandboxed/worker.py', 'sandboxed/probes/handlers.py', 'sandboxed/capture.py',
            'sandboxed/guard.py', 'wire.py', 'errors.py', '__init__.py', 'grading/worker_session.py',
            'grading/reference_answers.py',
            'isolation/worker_process.py'} <= keyed
    # the judges run on the trusted side only: an edit there keeps the reference's answers
    assert not any(k.startswith('checks/') for k in keyed)


def test_editing_any_file_the_answers_depend_on_misses(copies):
    grader_dir, reference_dir = copies

    keyed = reference_cache.key_files(grader_dir)   # an edit of a comment keeps the file set

    def version():
        return reference_cache.version_over(keyed, grader_dir, reference_dir)
    base = version()
    assert base == reference_cache.version_of(grader_dir, reference_dir)
    depends = keyed + codeset.files_under(reference_dir / 'dezero')
    assert any(p.suffix == '.npz' for p in depends)   # the reference's data, not its code only
    unchanged = [p for p in depends if _edited(p, version) == base]
    assert not unchanged, unchanged
    assert version() == base

    def full():
        return reference_cache.version_of(grader_dir, reference_dir)
    # and what the worker never runs does not (a judge, the report)
    assert _edited(grader_dir / 'checks' / 'gradients.py', full) == base
    assert _edited(grader_dir / 'present' / 'html_page.py', full) == base


def test_a_module_the_worker_comes_to_import_joins_the_key(copies):
    grader_dir, _ = copies
    handlers = grader_dir / 'sandboxed' / 'probes' / 'handlers.py'
    before = handlers.read_bytes()
    (grader_dir / 'newly_used.py').write_text('X = 1\n', encoding='utf-8')
    try:
        assert grader_dir / 'newly_used.py' not in reference_cache.key_files(grader_dir)
        handlers.write_bytes(before + b'\ndef _later():\n    from dezero_grader import newly_used\n')
        assert grader_dir / 'newly_used.py' in reference_cache.key_files(grader_dir)
    finally:
        handlers.write_bytes(before)
        (grader_dir / 'newly_used.py').unlink()


def test_a_contracts_edit_misses_the_cache(copies, tmp_path, monkeypatch):
    # end to end: answers cached under this code are not served after a contracts edit
    grader_dir, reference_dir = copies
    monkeypatch.setenv('DEZERO_GRADER_CACHE', str(tmp_path))
    monkeypatch.setattr(reference_cache, '_VERSION', reference_cache.version_of(grader_dir,
                                                                                reference_dir))
    probes = list(run.plan(assignments.load(9), seed=11).reference_probes[:1])
    observe_reference(probes, limits=Limits(), device_mode='cpu')
    assert observe_reference(probes, limits=Limits(), device_mode='cpu').setup.get('cached')
    edited = _edited(grader_dir / 'contracts' / 'functions.py',
                     lambda: reference_cache.version_of(grader_dir, reference_dir))
    monkeypatch.setattr(reference_cache, '_VERSION', edited)
    assert not observe_reference(probes, limits=Limits(), device_mode='cpu').setup.get('cached')


def test_an_assignment_reaches_the_answers_only_through_the_probes_key():
    # what a check asks (its parameters) is in its probes' keys, so an edit of it misses by
    # itself; a title or points edit asks the same and keeps the answers
    doc = json.loads((schema.data_dir('assignments') / 'step06.json').read_text(encoding='utf-8'))

    def reference_paths(document):
        plan = run.plan(assignments.from_document(document, 'step06.json'), seed=11)
        return {reference_cache.cache_path(p, 'cpu') for p in plan.reference_probes}
    base = reference_paths(doc)
    retitled = json.loads(json.dumps(doc))
    retitled['checks'][0].update(title='another title', points=5)
    assert reference_paths(retitled) == base
    reshaped = json.loads(json.dumps(doc))
    reshaped['checks'][0]['params']['inputs'][0]['shape'] = [4]
    assert len(reference_paths(reshaped) - base) == 1
