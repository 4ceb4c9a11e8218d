"""The files of `dezero/` uploaded without their folder (what Gradescope's drag and drop makes) are
the package; a folder of step files, or package files without `__init__.py`, are not mistaken
for one."""
import pytest

from dezero_grader.errors import SubmissionError
from dezero_grader.intake import load

PACKAGE = {'__init__.py': 'from dezero.core import Variable\n',
           'core.py': 'class Variable:\n    pass\n',
           'functions.py': 'from dezero.core import Variable\n',
           'layers.py': 'import dezero.functions as F\n'}


def _write(folder, files):
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (folder / name).write_text(text)
    return folder


def test_the_files_of_the_package_at_the_top_are_the_package(tmp_path):
    flat = _write(tmp_path / 'flat', PACKAGE)
    wrapped = _write(tmp_path / 'wrapped' / 'dezero', PACKAGE).parent
    assert load.is_flat_package(flat) and not load.is_flat_package(wrapped)
    a = load.prepare(flat, 52, tmp_path / 'scratch')
    b = load.prepare(wrapped, 52, tmp_path / 'scratch')
    assert (a.entry.kind, a.entry.path, a.entry.module) == ('package', 'dezero', 'dezero')
    assert (a.root / 'dezero' / 'core.py').is_file()
    assert a.content_hash == b.content_hash        # the same code, the same identity and seed
    assert sorted(p.name for p in flat.iterdir()) == sorted(PACKAGE)   # the upload is untouched


def test_a_folder_of_step_files_is_not_a_package(tmp_path):
    steps = _write(tmp_path / 'steps', {'step51.py': 'print(1)\n', 'step52.py': 'print(2)\n',
                                        '__init__.py': '', 'core.py': ''})
    assert not load.is_flat_package(steps)
    with pytest.raises(SubmissionError) as e:
        load.prepare(steps, 52, tmp_path / 'scratch')
    assert e.value.code == 'no-entry'


def test_a_single_file_step_is_never_wrapped(tmp_path):
    folder = _write(tmp_path / 'early', dict(PACKAGE, **{'step09.py': 'x = 1\n'}))
    sub = load.prepare(folder, 9, tmp_path / 'scratch')
    assert sub.entry.kind == 'single-file' and sub.entry.path == 'step09.py'


def test_package_files_without_init_say_what_is_missing(tmp_path):
    files = dict(PACKAGE)
    del files['__init__.py']
    folder = _write(tmp_path / 'noinit', files)
    assert not load.is_flat_package(folder)
    with pytest.raises(SubmissionError, match='__init__.py is not among them'):
        load.prepare(folder, 52, tmp_path / 'scratch')


def test_a_dezero_folder_beside_stray_files_wins(tmp_path):
    folder = _write(tmp_path / 'both', PACKAGE)
    _write(folder / 'dezero', PACKAGE)
    assert not load.is_flat_package(folder)
    assert load.prepare(folder, 52, tmp_path / 'scratch').entry.path == 'dezero'
