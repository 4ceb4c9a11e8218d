"""The book's environment, both ways: what a learner's code meets in the grader is what it meets
on a reader's machine. The grader's own probes work on the NumPy of either era (a loss of shape
(1,) is one number to them, as `float()` made it on NumPy 1.x)."""
import shutil
from pathlib import Path

import reference
from grader import run, schema
from grader.status import FAILING

SEED = 1234


def grade(path, step, **kw):
    doc = run.grade(path, step, run.Options(seed=kw.pop('seed', SEED), **kw))
    assert schema.errors('scorecard', doc) == []
    return doc


def failing(doc):
    return {c['id']: c for c in doc['checks'] if c['status'] in FAILING}


def package(tmp_path, name='sub'):
    """A copy of the reference package to edit: (its top folder, its dezero folder)."""
    top = tmp_path / name
    shutil.copytree(Path(reference.ROOT) / 'dezero', top / 'dezero',
                    ignore=shutil.ignore_patterns('__pycache__', 'data'))
    return top, top / 'dezero'


def edit(path, old, new):
    text = path.read_text(encoding='utf-8')
    assert old in text, old
    path.write_text(text.replace(old, new, 1), encoding='utf-8')


def test_a_loss_of_shape_1_is_one_number_to_the_grader(tmp_path):
    # NumPy 2 refuses float() of an array with a dimension; the training probe must still read
    # the loss trajectory, and only the checks that look at the loss's shape may object
    top, dz = package(tmp_path)
    edit(dz / 'functions.py', '        return (diff ** 2).sum() / len(diff)\n',
         '        return ((diff ** 2).sum() / len(diff)).reshape(1)\n')
    doc = grade(top, 42)
    assert doc['verdict'] == 'reject', doc['reason']
    bad = failing(doc)
    assert 'step42/regression' not in bad, bad.get('step42/regression')
    assert set(bad) <= {'step42/mse', 'step42/mse_vector'}, sorted(bad)
