"""Advice apart, on real code: the reference changed where the book's own code differs from it
(extension-tier behaviour the book profile does not count), alone and with a bug that decides a
reject. What the learner reads first is what decided the verdict."""
import re
import shutil

import pytest

from dezero_grader import reference
from dezero_grader.grading import diagnose
from dezero_grader.present import terminal
from dezero_grader.records.status import FAILING

from test_check import grade

STEP = 57


def _edit(path, old, new):
    text = path.read_text()
    assert old in text, (path, old)
    path.write_text(text.replace(old, new, 1))


def book_like(root):
    """The reference with two things the book's code does: saving moves the model to the host,
    and an optimizer's state made on the host stays there after the model moves."""
    shutil.copytree(reference.ROOT / 'dezero', root / 'dezero')
    package = root / 'dezero'
    _edit(package / 'layers.py', '        params_dict = {}\n        self._flatten_params(params_dict)\n'
          '        array_dict = {}\n',
          '        self.to_cpu()\n        params_dict = {}\n        self._flatten_params(params_dict)\n'
          '        array_dict = {}\n')
    _edit(package / 'optimizers.py', 'v = self._state(self.vs, param)',
          'v = self.vs.setdefault(id(param), param.data * 0)')
    return root


@pytest.fixture(scope='module')
def accepted(tmp_path_factory):
    return grade(book_like(tmp_path_factory.mktemp('book_like')), STEP)


def _advice_ids(doc):
    counts = diagnose.counted_ids(doc['checks'], doc['profile'])
    return [c['id'] for c in doc['checks'] if c['status'] in FAILING and c['id'] not in counts]


def test_book_like_code_is_accepted_and_its_advice_is_shown_apart(accepted):
    doc = accepted
    advice = _advice_ids(doc)
    assert doc['verdict'] == 'accept' and doc['score']['earned'] == doc['score']['possible']
    assert 'step53/state.save_keeps_device' in advice and len(advice) >= 2
    assert all(c['advice'] for c in doc['diagnosis']['causes'])
    text = terminal.render(doc)
    assert '✗' not in text
    counted = len(diagnose.counted_ids(doc['checks'], doc['profile']))
    # the counted checks' line, with the regression it re-ran, then the advice apart
    assert re.search(r'checks: all {} counted pass(; \d+ of them re-run the contracts of steps '
                     r'[\d-]+ \(regression\))?; advice, not counted: {} failed'.format(
                         counted, len(advice)), text)
    assert text.index(terminal.ADVICE_HEAD) < text.index('· step53/state.save_keeps_device')
    assert '{} advice check'.format(len(advice)) in doc['reason']


def test_a_bias_gradient_bug_is_root_cause_1_above_the_advice(tmp_path):
    root = book_like(tmp_path / 'sub')
    _edit(root / 'dezero' / 'functions_conv.py', 'gb = gy.sum(axis=(0, 2, 3))',
          'gb = gy.sum(axis=(0, 2, 3)) * 2')
    doc = grade(root, STEP)
    assert doc['verdict'] == 'reject'
    counts = diagnose.counted_ids(doc['checks'], doc['profile'])
    deciding = {c['id'] for c in doc['checks'] if c['status'] in FAILING and c['id'] in counts}
    first = doc['diagnosis']['causes'][0]
    assert not first['advice'] and set(first['checks']) <= deciding
    assert 'step57/conv2d.overlap' in first['checks']
    assert first['error']['function'] == 'F.conv2d' and first['error']['part'] == 'backward'
    text = terminal.render(doc)
    assert text.index('  1. ') < text.index('✗ step57/') < text.index(terminal.ADVICE_HEAD)
    assert text.index(terminal.ADVICE_HEAD) < text.index('· step53/state.save_keeps_device')
