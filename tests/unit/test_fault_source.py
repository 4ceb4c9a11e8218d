"""A variant is made from the patch this process registered, even when its file is edited while a
long selftest runs (it used to be read again at every injection)."""
import importlib.util
import sys

from dezero_grader.catalogue import faults


def test_a_patch_keeps_the_source_it_was_registered_with(tmp_path):
    module = tmp_path / 'some_patches.py'
    module.write_text('from dezero_grader.catalogue.faults import patch\n\n\n'
                      '@patch("test-only-source-kept")\n'
                      'def source_kept(dz):\n'
                      '    dz.answer = 42\n', encoding='utf-8')
    spec = importlib.util.spec_from_file_location('some_patches_for_test', module)
    loaded = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(loaded)
        before = faults.source_of('test-only-source-kept')
        module.write_text('# edited meanwhile\n' * 3 + 'def other():\n    pass\n', encoding='utf-8')
        assert faults.source_of('test-only-source-kept') == before
        assert before == 'def source_kept(dz):\n    dz.answer = 42\n'
    finally:
        faults.PATCHES.pop('test-only-source-kept', None)
        sys.modules.pop('some_patches_for_test', None)


# -- a fault written into the learner's own source (issue 23) ----------------------------------
import difflib  # noqa: E402
from pathlib import Path  # noqa: E402

import pytest  # noqa: E402

from dezero_grader.catalogue import assignments
from dezero_grader.catalogue.faults import source as in_source  # noqa: E402
from dezero_grader.intake import load
from dezero_grader.proof import selftest  # noqa: E402


def _fault(step, fault_id):
    return {f.id: f for f in assignments.fault_catalogue(assignments.load(step))}[fault_id]


def _changed(base: Path, variant: Path) -> dict:
    """{file: (removed lines, added lines)} between two trees."""
    out = {}
    for path in sorted(variant.rglob('*')):
        if not path.is_file():
            continue
        rel = path.relative_to(variant)
        if path.suffix != '.py':
            assert (base / rel).read_bytes() == path.read_bytes()
            continue
        old = (base / rel).read_text().splitlines() if (base / rel).is_file() else []
        diff = [d for d in difflib.ndiff(old, path.read_text().splitlines()) if d[:1] in '+-']
        if diff:
            out[rel.as_posix()] = diff
    return out


@pytest.mark.parametrize('step, fault_id, file, names', [
    (52, 'gpu-layer-shallow', 'dezero/layers.py', 'Layer.to_gpu'),
    (24, 'add-grad-from-sub', 'dezero/core.py', 'Add, add'),           # a Function and its wrapper
    (9, 'seed-missing', 'step09.py', 'Variable.backward'),              # a step file
])
def test_the_fault_is_written_where_the_books_code_is(tmp_path, step, fault_id, file, names):
    base = load.prepare(selftest.reference_source(step), step, tmp_path / 'base')
    out, where, why = faults.inject_into_source(base.root, tmp_path / 'v', _fault(step, fault_id),
                                                base.entry)
    assert (where, why) == ('{}: {}'.format(file, names), '')
    changed = _changed(base.root, out)
    assert list(changed) == [file]            # no module added, nothing else touched
    assert not list(out.rglob(faults.FAULT_FILE)) and not list(out.rglob('_original_*'))
    compile((out / file).read_text(), file, 'exec')
    # it reads as the book's code does: the module's own names, no patch machinery
    added = '\n'.join(line for line in changed[file] if line.startswith('+'))
    assert 'dz.' not in added and 'import dezero' not in added


def test_a_fault_that_wraps_the_original_is_added_as_a_module_and_says_why(tmp_path):
    base = load.prepare(selftest.reference_source(53), 53, tmp_path / 'base')
    out, where, why = faults.inject_into_source(base.root, tmp_path / 'v',
                                                _fault(53, 'save-device-moved'), base.entry)
    assert where == '' and 'wraps the original Layer.save_weights' in why
    assert (out / 'dezero' / faults.FAULT_FILE).is_file()


def test_a_definition_that_cannot_be_found_by_reading_is_said(tmp_path):
    (tmp_path / 'dezero').mkdir()
    (tmp_path / 'dezero' / '__init__.py').write_text('from dezero.core import *\n')
    (tmp_path / 'dezero' / 'core.py').write_text('class Layer:\n    pass\n')
    entry = load.find_entry(tmp_path, 52)
    with pytest.raises(in_source.NotInSource, match='no definition of Layer.to_gpu'):
        in_source.plan(faults.source_of(_fault(52, 'gpu-layer-shallow').patch), tmp_path, entry)
