"""Diagnoses of bugs as learners write them (not as the fault catalogue injects them): each a
copy of the reference with one line changed, graded; the first root cause names what is wrong,
and the hints say forward or backward as the evidence does."""
import re
import shutil

from dezero_grader import reference
from dezero_grader.grading import diagnose
from dezero_grader.present import terminal
from dezero_grader.records.status import FAILING

from test_check import grade


def patched(tmp_path, path, old, new):
    root = tmp_path / 'sub'
    shutil.copytree(reference.ROOT / 'dezero', root / 'dezero')
    target = root / 'dezero' / path
    text = target.read_text()
    assert old in text, old
    target.write_text(text.replace(old, new, 1))
    return root


def _failing(doc):
    return [c for c in doc['checks'] if c['status'] in FAILING]


def test_a_tanh_backward_without_return_is_named_with_a_hint(tmp_path):
    # catalogued as nothing; it looked like `tanh-backward-detached` (a hint about x.data), and
    # the check that points at it ("input 0 of F.tanh has no gradient") had no hint
    root = patched(tmp_path, 'functions.py', '        return gy * (1 - y * y)\n',
                   '        gx = gy * (1 - y * y)\n')
    doc = grade(root, 35)
    first = doc['diagnosis']['causes'][0]
    assert first['kind'] == 'error' and first['error']['function'] == 'F.tanh'
    assert first['error']['part'] == 'no gradient'
    assert 'step35/tanh' in first['checks'] and len(first['checks']) == len(_failing(doc))
    tanh = next(c for c in doc['checks'] if c['id'] == 'step35/tanh')
    assert 'return' in tanh['hint']
    text = terminal.render(doc)
    assert '1. the backward of F.tanh gives no gradient (None) for input 0' in text


def test_a_wrong_sigmoid_forward_gets_a_forward_hint_not_a_backward_one(tmp_path):
    root = patched(tmp_path, 'functions.py', 'return xp.tanh(x * 0.5) * 0.5 + 0.5',
                   'return xp.tanh(x) * 0.5 + 0.5')
    doc = grade(root, 43)
    check = next(c for c in doc['checks'] if c['id'] == 'step43/sigmoid')
    assert check['status'] == 'failed'
    assert 'forward' in check['hint'] and 'backward formula' not in check['hint']
    hints = [f.get('hint', '') for f in check['evidence']['findings'] if f['status'] == 'failed']
    assert not any('factor in the backward' in h or 'backward formula' in h for h in hints)
    first = doc['diagnosis']['causes'][0]
    assert first['error']['function'] == 'F.sigmoid' and first['error']['part'] == 'forward'
    # the backward fault is not named: its forward was right, this one's is not
    assert 'sigmoid-grad-uses-input' not in diagnose.top_faults(doc['diagnosis'])


def test_a_layer_that_moves_its_bias_names_its_own_line_not_the_function_it_calls(tmp_path):
    root = patched(tmp_path, 'layers.py', '        y = F.linear(x, self.W, self.b)\n        return y\n'
                   '\n\nclass Conv2d',
                   '        if self.b is not None:\n            self.b.to_gpu()\n'
                   '        y = F.linear(x, self.W, self.b)\n        return y\n\n\nclass Conv2d')
    lines = (root / 'dezero' / 'layers.py').read_text().splitlines()
    call = next(n for n, line in enumerate(lines, 1) if 'self.b.to_gpu()' in line) + 1
    doc = grade(root, 52)
    # on a machine without CuPy the layer's to_gpu() raises in every host check of Linear
    # (steps 44-48 run there): a true rollback, and its own cause
    assert doc['verdict'] == 'rollback'
    causes = doc['diagnosis']['causes']
    host = next(c for c in causes if 'step44/linear' in c['checks'])
    assert host['error']['where'].startswith('dezero/cuda.py')
    mixed = next(c for c in causes if 'step52/device.layer' in c['checks'])
    assert mixed['error']['caller'] == 'dezero/layers.py:{} in forward'.format(call)
    assert 'passed from dezero/layers.py:{} in forward'.format(call) in mixed['summary']


def test_a_backward_loop_that_never_pops_is_one_cause_in_variable_backward(tmp_path):
    # funcs[-1] for funcs.pop(): every Function's backward then meets a gradient of None, each
    # at its own line; that was more than ten root causes, one with an array dump
    root = patched(tmp_path, 'core.py', 'f = heapq.heappop(pending)[2]', 'f = pending[0][2]')
    lines = (root / 'dezero' / 'core.py').read_text().splitlines()
    call = next(n for n, line in enumerate(lines, 1) if 'gxs = f.backward(*gys)' in line)
    only = ('step52/device.fn.exp', 'step52/device.fn.tanh', 'step52/device.fn.sum',
            'step52/device.fn.sum_to', 'step52/device.fn.broadcast_to', 'step52/device.fn.matmul',
            'step52/device.fn.relu', 'step52/device.fn.log', 'step52/device.fn.softmax_cross_entropy')
    doc = grade(root, 52, only=only)
    failing = _failing(doc)
    assert len(failing) >= 6
    causes = doc['diagnosis']['causes']
    first = causes[0]
    assert first['error']['where'] == 'dezero/core.py:{} in backward'.format(call)
    assert len(first['checks']) >= len(failing) - 2 and len(causes) <= 3
    assert len(first['error']['places']) >= 3
    for cause in causes:
        assert not re.search(r'array\(\[|\d\.\d{5}', cause['summary']), cause['summary']


def test_an_expectation_with_nothing_to_compare_says_so_in_a_sentence(tmp_path):
    # "c is None" read `found: false / expected: null`
    root = patched(tmp_path, 'layers.py', '        self.h = None\n        self.c = None\n',
                   "        self.h = None\n        self.c = getattr(self, 'c', None)\n")
    doc = grade(root, 60, only=('step60/lstm.reset',))
    check = next(c for c in doc['checks'] if c['id'] == 'step60/lstm.reset')
    finding = next(f for f in check['evidence']['findings']
                   if f['status'] == 'failed' and 'cell state c is None' in f['message'])
    # the worker reports the state itself (no flag decided in the worker): the sentence says what
    # was there instead of None
    assert finding['evidence']['found'].startswith('a value where None was expected: ')
    assert 'expected' not in finding['evidence']
    text = terminal.render(doc)
    assert 'expected: null' not in text and 'found: a value where None was expected' in text
