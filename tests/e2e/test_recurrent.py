"""Recurrent layers are graded by what they compute, whatever their inner layers are called.

The fixture `tests/fixtures/renamed_recurrent` is the reference package with its RNN and LSTM
built from Linears named `inp`/`rec` (`inp_f`, `rec_f`, ...): correct, it gets full marks at
steps 59 and 60. One changed line makes a near miss — `sigmoid` where the RNN's `tanh` belongs,
`inp(x) - 0.5 * rec(h)`, the LSTM's cell candidate through `sigmoid`, an RNN that ignores its
state — and each is rejected under several seeds, with a finding that names the equation that
fails and says how the roles were found. Patching NumPy's comparisons and reductions in the
package changes no verdict: the worker decides nothing.
"""
import shutil
from pathlib import Path

import pytest

from dezero_grader import reference
from dezero_grader.grading import run
from dezero_grader.records import schema

FIXTURE = Path(__file__).resolve().parents[1] / 'fixtures' / 'renamed_recurrent'
QUICK_SEED, MORE_SEEDS = 1, (2, 3)
SEEDS = [QUICK_SEED] + [pytest.param(s, marks=pytest.mark.slow) for s in MORE_SEEDS]

SIGMOID_RNN = ('self.h = F.tanh(z)   # RNN-ACTIVATION', 'self.h = F.sigmoid(z)')
MINUS_HALF = ('z = z + self.rec(self.h)   # RECURRENCE', 'z = z - 0.5 * self.rec(self.h)')
IGNORES_STATE = ('z = z + self.rec(self.h)   # RECURRENCE', 'z = z + 0 * self.rec(self.h)')
SIGMOID_CANDIDATE = ("u = F.tanh(self._pre('u', x))   # LSTM-CANDIDATE",
                     "u = F.sigmoid(self._pre('u', x))")

# numpy's comparisons and reductions, patched in the package to lie where a forger who read the
# grader's source would: in the grader's own calls whose result it negates (`not np.allclose(...)`
# decided "the state carries over" in the worker before)
LYING_NUMPY = '''
import linecache as _linecache
import sys as _sys
import numpy as _np


def _liar(name):
    honest = getattr(_np, name)

    def patched(*args, **kwargs):
        result = honest(*args, **kwargs)
        frame = _sys._getframe(1)
        if frame.f_globals.get('__name__', '').startswith('dezero_grader'):
            line = _linecache.getline(frame.f_code.co_filename, frame.f_lineno)
            if 'not np.' + name in line or 'not numpy.' + name in line:
                return not result
        return result
    setattr(_np, name, patched)


for _name in ('allclose', 'all', 'array_equal', 'isclose', 'any'):
    _liar(_name)
'''


def _variant(root, change=None, init_extra=''):
    package = root / 'dezero'
    shutil.copytree(reference.ROOT / 'dezero', package, ignore=shutil.ignore_patterns('__pycache__'))
    text = (FIXTURE / 'dezero' / 'layers.py.append').read_text(encoding='utf-8')
    if change:
        assert text.count(change[0]) == 1, change
        text = text.replace(change[0], change[1])
    layers = package / 'layers.py'
    layers.write_text(layers.read_text(encoding='utf-8') + '\n\n' + text, encoding='utf-8')
    if init_extra:
        init = package / '__init__.py'
        init.write_text(init.read_text(encoding='utf-8') + '\n' + init_extra, encoding='utf-8')
    return root


def _grade(root, step, seed):
    doc = run.grade(root, step, run.Options(seed=seed))
    assert schema.errors('scorecard', doc) == []
    return doc


def _failing(doc):
    return {c['id']: c for c in doc['checks'] if c['status'] not in ('passed', 'skipped')}


@pytest.fixture(scope='module')
def variants(tmp_path_factory):
    base = tmp_path_factory.mktemp('recurrent')
    return {name: _variant(base / name, change) for name, change in [
        ('renamed', None), ('sigmoid_rnn', SIGMOID_RNN), ('minus_half', MINUS_HALF),
        ('sigmoid_candidate', SIGMOID_CANDIDATE), ('ignores_state', IGNORES_STATE)]}


@pytest.mark.parametrize('step', [59, 60])
def test_renamed_correct_layers_get_full_marks(variants, step):
    doc = _grade(variants['renamed'], step, QUICK_SEED)
    assert doc['verdict'] == 'accept', {k: c['message'] for k, c in _failing(doc).items()}
    assert doc['score']['earned'] == doc['score']['possible'] > 0
    assert doc['score']['extension']['earned'] == doc['score']['extension']['possible']
    kind = 'rnn' if step == 59 else 'lstm'
    forward = {c['id']: c for c in doc['checks']}['step{}/{}.forward'.format(step, kind)]
    roles = [f for f in forward['evidence']['findings'] if f['case'] == 'roles']
    # the report says how the roles were found: by shape, naming the learner's own layers
    assert roles and 'roles found by shape' in roles[0]['message']
    assert ('inp/W' if kind == 'rnn' else 'inp_u/W') in roles[0]['message']


@pytest.mark.parametrize('seed', SEEDS)
@pytest.mark.parametrize('name, step, check, equation', [
    ('sigmoid_rnn', 59, 'step59/rnn.forward', 'h₁ = tanh'),
    ('sigmoid_rnn', 60, 'step59/rnn.forward', 'h₁ = tanh'),
    ('minus_half', 59, 'step59/rnn.forward', 'h_t = tanh(x_t·W_x + b + h_{t−1}·W_h)'),
    ('minus_half', 60, 'step59/rnn.forward', 'h_t = tanh(x_t·W_x + b + h_{t−1}·W_h)'),
    ('sigmoid_candidate', 60, 'step60/lstm.forward', 'c_t = f·c_{t−1} + i·u'),
])
def test_a_renamed_near_miss_is_rejected(variants, name, step, check, equation, seed):
    doc = _grade(variants[name], step, seed)
    failing = _failing(doc)
    assert doc['verdict'] == ('reject' if check.startswith('step{}/'.format(step)) else 'rollback')
    assert check in failing
    findings = failing[check]['evidence']['findings']
    failed = [f['message'] for f in findings if f['status'] == 'failed']
    assert any(equation in m for m in failed), failed
    # the gradients through time are wrong too, found the same way
    kind = 'rnn' if 'rnn' in check else 'lstm'
    assert '{}/{}.through_time'.format(check.split('/')[0], kind) in failing


def test_an_rnn_that_ignores_its_state_is_rejected_whatever_numpy_says(tmp_path, variants):
    lying = _grade(_variant(tmp_path / 'lying', IGNORES_STATE, LYING_NUMPY), 59, QUICK_SEED)
    honest = _grade(variants['ignores_state'], 59, QUICK_SEED)
    for doc in (lying, honest):
        assert doc['verdict'] == 'reject'
        failed = [f['message'] for f in _failing(doc)['step59/rnn.forward']['evidence']['findings']
                  if f['status'] == 'failed']
        assert any('h_t = tanh(x_t·W_x + b + h_{t−1}·W_h)' in m for m in failed), failed
    assert set(_failing(lying)) == set(_failing(honest))
    assert lying['score'] == honest['score']
