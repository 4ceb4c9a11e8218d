"""Notebooks as submissions (`dezero_grader.intake.notebook`): code cells in order become the step file or the
`%%writefile` files; shell and magic lines are not run and are listed; every generated line maps
back to its notebook, cell and line; what cannot be read is a clear SubmissionError."""
import json

import nbformat
import pytest

from dezero_grader.errors import SubmissionError
from dezero_grader.intake import load, notebook


def write_notebook(path, cells, markdown_first=True):
    nb = nbformat.v4.new_notebook()
    if markdown_first:
        nb.cells.append(nbformat.v4.new_markdown_cell('notes'))
    nb.cells.extend(nbformat.v4.new_code_cell(c) for c in cells)
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, str(path))
    return path


def expand(root, step):
    return notebook.expand(root, step, first_package_step=load.FIRST_PACKAGE_STEP,
                           top_dirs=load._top_dirs(root))


def test_code_cells_become_the_step_file_and_places_map_back(tmp_path):
    write_notebook(tmp_path / 'step09.ipynb', ['!pip install numpy\nimport numpy as np',
                                               'def f(x):\n    %time g()\n    return x'])
    got = expand(tmp_path, 9)
    assert (tmp_path / 'step09.py').read_text() == \
        'pass\nimport numpy as np\ndef f(x):\n    pass\n    return x\n'
    assert not (tmp_path / 'step09.ipynb').exists()   # what is graded (and hashed) is the code
    assert [str(n.place) for n in got.not_run] == ['step09.ipynb, cell 2, line 1',
                                                   'step09.ipynb, cell 3, line 2']
    assert str(got.place('step09.py', 4)) == 'step09.ipynb, cell 3, line 2'
    assert notebook.relocate('raised at step09.py:5 in f; not/step09.py:5', got) == \
        'raised at step09.ipynb, cell 3, line 3 in f; not/step09.py:5'


def test_a_cell_under_a_cell_magic_is_not_run(tmp_path):
    write_notebook(tmp_path / 'steps' / 'step03.ipynb', ['x = 1', '%%time\ntrain()'])
    got = expand(tmp_path, 3)
    assert (tmp_path / 'steps' / 'step03.py').read_text() == 'x = 1\n'
    assert [(n.text, n.why) for n in got.not_run] == [
        ('%%time', 'a cell magic: the grader does not run this cell')]


def test_a_step_file_and_a_step_notebook_side_by_side_are_ambiguous(tmp_path):
    write_notebook(tmp_path / 'step09.ipynb', ['x = 1'])
    (tmp_path / 'step09.py').write_text('x = 1\n')
    with pytest.raises(SubmissionError) as e:
        expand(tmp_path, 9)
    assert e.value.code == 'ambiguous-entry' and 'step09.py and step09.ipynb' in e.value.message


def test_a_map_file_names_the_notebook_of_a_range_of_steps(tmp_path):
    write_notebook(tmp_path / 'notebooks' / 'chapter1.ipynb', ['y = 2'])
    (tmp_path / notebook.MAP_FILE).write_text('# steps 1-10 are in one notebook\n1-10 notebooks/chapter1.ipynb\n')
    got = expand(tmp_path, 7)
    assert (tmp_path / 'step07.py').read_text() == 'y = 2\n'
    assert got.notebooks == ('notebooks/chapter1.ipynb',)
    assert load.find_entry(tmp_path, 7).path == 'step07.py'


@pytest.mark.parametrize('line, why', [
    ('9 ../outside.ipynb', 'not a file of the submission'),
    ('9 /etc/passwd', 'not a file of the submission'),
    ('nine step09.ipynb', 'expected "STEP PATH"'),
])
def test_a_bad_map_file_is_a_clear_refusal(tmp_path, line, why):
    (tmp_path / notebook.MAP_FILE).write_text(line + '\n')
    with pytest.raises(SubmissionError) as e:
        expand(tmp_path, 9)
    assert e.value.code == 'bad-map' and why in e.value.message


def test_writefile_cells_write_the_package_relative_to_the_notebook(tmp_path):
    write_notebook(tmp_path / 'work' / 'colab.ipynb', [
        '!mkdir dezero',
        '%%writefile dezero/__init__.py\nfrom dezero.core import Variable',
        '%%writefile dezero/core.py\nclass Variable:\n    pass',
        '%%writefile -a dezero/core.py\nX = 1',
        '%%writefile ../../escape.py\nimport os',
        'import dezero'])
    got = expand(tmp_path, 40)
    assert (tmp_path / 'work' / 'dezero' / 'core.py').read_text() == 'class Variable:\n    pass\nX = 1\n'
    assert str(got.place('work/dezero/core.py', 3)) == 'work/colab.ipynb, cell 5, line 2'
    assert not (tmp_path.parent / 'escape.py').exists()
    assert [n.why for n in got.not_run] == ['writes outside the submission: not written']
    assert load.find_entry(tmp_path, 40).path == 'work/dezero'


def test_a_package_of_files_is_graded_as_files_even_beside_a_notebook(tmp_path):
    (tmp_path / 'dezero').mkdir()
    (tmp_path / 'dezero' / '__init__.py').write_text('')
    write_notebook(tmp_path / 'colab.ipynb', ['%%writefile dezero/core.py\nraise SystemExit'])
    assert not expand(tmp_path, 40)
    assert (tmp_path / 'colab.ipynb').exists() and not (tmp_path / 'dezero' / 'core.py').exists()


@pytest.mark.parametrize('content', [b'{"cells": [', b'\xff\xfe', json.dumps({'cells': 5}).encode(),
                                     b'[' * 100000 + b']' * 100000, b''])
def test_a_notebook_that_cannot_be_read_is_a_clear_refusal(tmp_path, content):
    (tmp_path / 'step09.ipynb').write_bytes(content)
    with pytest.raises(SubmissionError) as e:
        expand(tmp_path, 9)
    assert e.value.code == 'bad-notebook' and 'step09.ipynb' in e.value.message


def test_the_seed_follows_the_code_not_the_outputs(tmp_path):
    """Running a notebook changes its outputs and execution counts; the content hash (hence the
    seed) is over the code the grading runs."""
    cells = ['x = 1', 'print(x)']
    for name, runs in (('a', 0), ('b', 3)):
        nb = nbformat.v4.new_notebook()
        for c in cells:
            cell = nbformat.v4.new_code_cell(c, execution_count=runs or None)
            if runs:
                cell.outputs = [nbformat.v4.new_output('stream', text='1\n' * runs)]
            nb.cells.append(cell)
        (tmp_path / name).mkdir()
        nbformat.write(nb, str(tmp_path / name / 'step02.ipynb'))
    subs = [load.prepare(tmp_path / name, 2, tmp_path / 'scratch') for name in 'ab']
    assert subs[0].content_hash == subs[1].content_hash
