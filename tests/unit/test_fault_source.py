"""A variant is made from the patch this process registered, even when its file is edited while a
long selftest runs (it used to be read again at every injection)."""
import importlib.util
import sys

from grader import faults


def test_a_patch_keeps_the_source_it_was_registered_with(tmp_path):
    module = tmp_path / 'some_patches.py'
    module.write_text('from grader.faults import patch\n\n\n'
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
