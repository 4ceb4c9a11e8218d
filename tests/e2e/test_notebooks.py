"""Notebook submissions graded end to end, as a learner hands them in: the book's step-9 code
kept in a notebook's cells is accepted with full marks, the same notebook with a bug is
rejected naming the notebook's cell and line, and a Colab-style notebook that writes the
`dezero/` package with `%%writefile` cells is graded at step 52 like the package itself.

The notebooks are made at test time from the reference (the project's own code)."""
import re

import nbformat
from dezero_grader import reference

from grade_cli import dezero_grade
from dezero_grader.grading import run
from dezero_grader.records import schema
from dezero_grader.records.status import FAILING

SEED = 2026


def step_notebook(path, source, shell_line=True):
    """A notebook holding `source` cut into cells at each top-level class and def, after a
    markdown cell and (`shell_line`) a Colab-style install cell."""
    nb = nbformat.v4.new_notebook()
    nb.cells.append(nbformat.v4.new_markdown_cell('# my step'))
    if shell_line:
        nb.cells.append(nbformat.v4.new_code_cell('!pip install numpy\n%matplotlib inline'))
    nb.cells.extend(nbformat.v4.new_code_cell(c) for c in re.split(r'\n(?=class |def )', source))
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, str(path))
    return nb


def package_notebook(path, edit=lambda name, text: text):
    """A Colab notebook whose cells write every module of the reference package with
    `%%writefile dezero/NAME.py` (each through `edit`), then import it."""
    nb = nbformat.v4.new_notebook()
    nb.cells.append(nbformat.v4.new_code_cell('!mkdir -p dezero'))
    for module in sorted((reference.ROOT / 'dezero').glob('*.py')):
        text = edit(module.name, module.read_text(encoding='utf-8'))
        nb.cells.append(nbformat.v4.new_code_cell('%%writefile dezero/{}\n{}'.format(module.name, text)))
    nb.cells.append(nbformat.v4.new_code_cell('import dezero\nprint(dezero.Variable)'))
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, str(path))
    return nb


def cell_and_line(nb, needle):
    """(cell number among all cells, line within the cell) of the first line holding `needle`."""
    for number, cell in enumerate(nb.cells, 1):
        for line_no, line in enumerate(cell.source.split('\n'), 1):
            if needle in line:
                return number, line_no
    raise AssertionError(needle)


def test_the_books_step_9_code_in_a_notebook_is_accepted(tmp_path):
    step_notebook(tmp_path / 'mine' / 'step09.ipynb',
                  (reference.ROOT / 'steps' / 'step09.py').read_text(encoding='utf-8'))
    doc = run.grade(tmp_path / 'mine', 9, run.Options(seed=SEED))
    assert schema.errors('scorecard', doc) == []
    assert doc['verdict'] == 'accept' and doc['score']['earned'] == doc['score']['possible'] > 0
    assert doc['notebook']['notebooks'] == ['step09.ipynb']
    assert [(n['where'], n['line']) for n in doc['notebook']['not_run']] == [
        ('step09.ipynb, cell 2, line 1', '!pip install numpy'),
        ('step09.ipynb, cell 2, line 2', '%matplotlib inline')]


def test_a_bug_in_a_step_notebook_is_named_by_its_cell_and_line(tmp_path):
    # a bug in step 9's own code (its `exp` function): a reject (one in Exp.backward, which step
    # 6 wrote, would break step 6's contract too: a rollback)
    source = (reference.ROOT / 'steps' / 'step09.py').read_text(encoding='utf-8')
    assert source.count('    return Exp()(x)') == 1
    nb = step_notebook(tmp_path / 'mine' / 'step09.ipynb',
                       source.replace('    return Exp()(x)', '    return Exq()(x)'))
    cell, line = cell_and_line(nb, 'Exq')
    doc = run.grade(tmp_path / 'mine', 9, run.Options(seed=SEED))
    assert doc['verdict'] == 'reject', doc['reason']
    place = 'step09.ipynb, cell {}, line {}'.format(cell, line)
    failing = [c for c in doc['checks'] if c['status'] in FAILING]
    assert any(place in c['message'] for c in failing), [c['message'] for c in failing]
    assert 'step09.py:' not in str(doc['checks'])   # the generated file is never shown
    out = dezero_grade('check', tmp_path / 'mine', '--step', '9', '--seed', SEED, expect={1}).stdout
    assert place in out and 'not run by the grader' in out


def test_a_colab_notebook_that_writes_the_package_is_graded_at_step_52(tmp_path):
    package_notebook(tmp_path / 'colab' / 'dezero_colab.ipynb')
    doc = run.grade(tmp_path / 'colab', 52, run.Options(seed=SEED))
    assert schema.errors('scorecard', doc) == []
    assert doc['verdict'] == 'accept' and doc['score']['earned'] == doc['score']['possible'] > 0
    assert 'dezero/core.py' in doc['notebook']['files']


def test_a_bug_in_a_writefile_cell_is_named_by_its_cell_and_line(tmp_path):
    good, bad = 'return gy * (1 - y * y)', 'return gy * (1 - y * y) * undefined_name'

    def edit(name, text):
        if name != 'functions.py':
            return text
        assert text.count(good) == 1   # Tanh.backward
        return text.replace(good, bad)
    nb = package_notebook(tmp_path / 'colab' / 'dezero_colab.ipynb', edit)
    cell, line = cell_and_line(nb, 'undefined_name')
    doc = run.grade(tmp_path / 'colab', 52, run.Options(seed=SEED))
    assert doc['verdict'] in ('reject', 'rollback')
    place = 'dezero_colab.ipynb, cell {}, line {}'.format(cell, line)
    assert place in str(doc['checks'])
    assert 'dezero/functions.py:' not in str(doc['checks'])
