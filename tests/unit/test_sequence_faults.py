"""The sequence faults act on behaviour, not on the book's inner names: a composed patch is
injected as one self-contained module, the renaming keeps the layers' function while hiding
their names, and a behaviour fault changes what the step computes."""
import json
import subprocess
import sys

import numpy as np
import pytest

from dezero_grader import reference
from dezero_grader.catalogue import faults
from dezero_grader.intake import load
from dezero_grader.records.dataflow import Fault

# builds an RNN and an LSTM from a seeded NumPy (the same initial weights, whatever the layers'
# names), runs three steps, prints the inner layers' names and the outputs
PROBE = r'''
import json, numpy as np, dezero
from dezero import layers as L
out = {}
for name in ('RNN', 'LSTM'):
    np.random.seed(0)
    layer = getattr(L, name)(3)
    x = np.linspace(-1, 1, 4).reshape(2, 2)
    ys = [layer(x * (t + 1)).data.tolist() for t in range(3)]
    inner = sorted(k for k, v in vars(layer).items() if isinstance(v, L.Layer))
    out[name] = {'inner': inner, 'ys': ys}
print(json.dumps(out))
'''


def _variant(tmp_path, patch):
    faults.load_all()
    base = load.prepare(reference.ROOT, 59, tmp_path / 'base')
    fault = Fault(patch, 59, patch, 'book', '', (), patch)
    return faults.inject(base.root, tmp_path / patch, fault, base.entry)


def _run(root):
    done = subprocess.run([sys.executable, '-c', PROBE], cwd=root, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


@pytest.fixture(scope='module')
def book(tmp_path_factory):
    return _run(load.prepare(reference.ROOT, 59, tmp_path_factory.mktemp('book') / 'b').root)


def test_renaming_hides_the_names_and_keeps_the_function(tmp_path, book):
    renamed = _run(_variant(tmp_path, 'recurrent_renamed'))
    assert book['RNN']['inner'] == ['h2h', 'x2h'] and renamed['RNN']['inner'] == ['p0', 'p1']
    assert renamed['LSTM']['inner'] == ['p{}'.format(k) for k in range(8)]
    # the same initial weights: the same function
    for name in ('RNN', 'LSTM'):
        np.testing.assert_allclose(renamed[name]['ys'], book[name]['ys'], rtol=1e-12)


@pytest.mark.parametrize('patch', ['rnn_sigmoid_for_tanh_renamed', 'rnn_recurrence_minus_half'])
def test_a_behaviour_fault_changes_what_the_rnn_computes(tmp_path, book, patch):
    found = _run(_variant(tmp_path, patch))
    rnn, lstm = np.array(found['RNN']['ys']), np.array(found['LSTM']['ys'])
    assert np.max(np.abs(rnn[1:] - np.array(book['RNN']['ys'])[1:])) > 1e-3
    np.testing.assert_allclose(lstm, book['LSTM']['ys'], rtol=1e-12)
    if patch.startswith('rnn_sigmoid'):
        assert rnn.min() > 0
    else:   # the first step has no state: only later ones change
        np.testing.assert_allclose(rnn[0], book['RNN']['ys'][0], rtol=1e-12)


def test_a_composed_fault_is_one_module_that_names_each_part(tmp_path):
    faults.load_all()
    base = load.prepare(reference.ROOT, 60, tmp_path / 'base')
    fault = Fault('x', 60, 'x', 'book', '', (), 'lstm_candidate_sigmoid_renamed')
    out, where, why = faults.inject_into_source(base.root, tmp_path / 'v', fault, base.entry)
    assert where == '' and 'several patches' in why
    text = (out / 'dezero' / faults.FAULT_FILE).read_text(encoding='utf-8')
    for part in ('def recurrent_renamed(dz)', 'def recurrent_step_hook(dz)',
                 'def lstm_candidate_sigmoid_hook(dz)', 'def lstm_candidate_sigmoid_renamed(dz)'):
        assert part in text
    assert 'import dezero_grader' not in text and 'from dezero_grader' not in text
