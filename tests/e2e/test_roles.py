"""Correct code that differs from the book where the book's API leaves room gets its true verdict.

Each variant is the reference package with one pattern of real learners' code laid over it
(`tests/fixtures/roles/<variant>/dezero/NAME.py.append`, appended to its module so that the later
definitions win):

* `book_precision` — `Linear` initialised as the 2020 book does (cast, then scale): under NumPy 2
  its weight is float64 and its bias float32. With the independent implementation (float64
  throughout) it is accepted at steps 44-47 under several seeds.
* `fused_recurrent` — an RNN that holds its three parameters itself and an LSTM whose four gates
  are one `Linear(4H)` per input: no `x2h`, `h2h`, `x2f`, ... . Accepted at 59 and 60, its
  parameters' roles found by shape (the scorecard says how), and a broken state is still caught.
* `lowercase_weight` — a `Linear` that calls its weight `w`: accepted at steps 44-53 (its own
  files round-trip); reading a file the book's framework wrote is an extension-tier check at step
  53, and the pretrained VGG16 file is a book check at step 58: both say exactly which name
  differs.
* `bare_package` — no top-level `Dataset`, no `F.max`, no `Adam`: accepted at steps 49-52; at
  step 57 the reference's `pooling_simple`, which takes its maxima with `Variable.max`, fails, as
  it must, and at step 59 (the first script that uses Adam) the missing Adam does.
"""
import shutil
from pathlib import Path

import pytest

from dezero_grader import reference
from dezero_grader.grading import run
from dezero_grader.records import schema

ROLES = Path(__file__).resolve().parents[1] / 'fixtures' / 'roles'
INDEPENDENT = Path(__file__).resolve().parents[1] / 'fixtures' / 'independent'
SEEDS = (2026, 1, 7)


def _variant(root, *overlays, extra=''):
    """The reference package with the overlays' `*.py` copied over it and their `*.py.append`
    appended to their modules; `extra` is appended to layers.py last."""
    package = root / 'dezero'
    shutil.copytree(reference.ROOT / 'dezero', package,
                    ignore=shutil.ignore_patterns('__pycache__'))
    additions = [(package / 'layers.py', extra)] if extra else []
    for source in sorted(p for overlay in overlays for p in (overlay / 'dezero').iterdir()):
        if source.name.endswith('.py.append'):
            additions.insert(0, (package / source.name[:-len('.append')],
                                 source.read_text(encoding='utf-8')))
        elif source.suffix == '.py':
            shutil.copy(source, package / source.name)
    for target, text in additions:
        target.write_text(target.read_text(encoding='utf-8') + '\n\n' + text, encoding='utf-8')
    return root


@pytest.fixture(scope='module')
def variants(tmp_path_factory):
    base = tmp_path_factory.mktemp('roles')
    return {
        'book_precision': _variant(base / 'book_precision', ROLES / 'book_precision'),
        'independent': _variant(base / 'independent', INDEPENDENT),
        'fused_recurrent': _variant(base / 'fused_recurrent', ROLES / 'fused_recurrent'),
        'bare_package': _variant(base / 'bare_package', ROLES / 'bare_package'),
        'lowercase_weight': _variant(base / 'lowercase_weight', ROLES / 'lowercase_weight'),
    }


def _grade(root, step, seed=SEEDS[0]):
    doc = run.grade(root, step, run.Options(seed=seed))
    assert schema.errors('scorecard', doc) == []
    return doc


def _failing(doc):
    return {c['id']: c['message'] for c in doc['checks'] if c['status'] not in ('passed', 'skipped')}


def _full_marks(doc):
    assert doc['verdict'] == 'accept', _failing(doc)
    assert doc['score']['earned'] == doc['score']['possible'] > 0


@pytest.mark.parametrize('seed', SEEDS)
@pytest.mark.parametrize('step', [44, 45, 46, 47])
@pytest.mark.parametrize('name', ['book_precision', 'independent'])
def test_a_float64_linear_is_accepted_under_any_seed(variants, name, step, seed):
    _full_marks(_grade(variants[name], step, seed))


def test_the_book_precision_variant_has_a_float64_weight_and_a_float32_bias(variants):
    """The fixture really shows the pattern (under NumPy 2; under 1.x both are float32)."""
    import subprocess
    import sys
    code = ('import numpy as np, dezero.layers as L; l = L.Linear(3, in_size=2); '
            'print(l.W.data.dtype, l.b.data.dtype, np.__version__.split(".")[0])')
    out = subprocess.run([sys.executable, '-c', code], cwd=variants['book_precision'],
                         capture_output=True, text=True, check=True).stdout.split()
    assert out[1] == 'float32'
    assert out[0] == ('float64' if int(out[2]) >= 2 else 'float32')


@pytest.mark.parametrize('step', [59, 60])
def test_recurrent_layers_without_the_book_names_are_accepted(variants, step):
    doc = _grade(variants['fused_recurrent'], step)
    _full_marks(doc)
    assert doc['score']['extension']['earned'] == doc['score']['extension']['possible']
    kind = 'rnn' if step == 59 else 'lstm'
    checks = {c['id']: c for c in doc['checks']}
    for check in ('forward', 'through_time'):
        findings = checks['step{}/{}.{}'.format(step, kind, check)]['evidence']['findings']
        roles = [f for f in findings if f['case'] == 'roles']
        # graded like the book's layer, the roles found by shape and named in the report
        assert roles and roles[0]['message'].startswith('roles found by shape')
        assert ('kernel' if kind == 'rnn' else 'from_input/W[0:3]') in roles[0]['message']
    gradients = [f for f in checks['step{}/{}.through_time'.format(step, kind)]['evidence'][
        'findings'] if f['case'].startswith('grad:')]
    # every parameter (the RNN's three, the LSTM's two projections' three) and every input step
    assert len(gradients) == 3 + 4


CELL_DETACHED = '''
_fused_forward = LSTM.forward


def _forward_with_cut_cell(self, x):
    h = _fused_forward(self, x)
    self.c = Variable(self.c.data)   # the cell state is cut from the graph at every step
    return h


LSTM.forward = _forward_with_cut_cell
'''

RESET_KEEPS_STATE = '''
RNN.reset_state = lambda self: None
'''


@pytest.mark.parametrize('step, extra, check', [
    (60, CELL_DETACHED, 'step60/lstm.through_time'),
    (59, RESET_KEEPS_STATE, 'step59/rnn.forward'),
])
def test_a_broken_layer_without_the_book_names_is_still_caught(tmp_path, step, extra, check):
    root = _variant(tmp_path / 'broken', ROLES / 'fused_recurrent', extra=extra)
    doc = _grade(root, step)
    assert doc['verdict'] == 'reject'
    assert check in _failing(doc)


@pytest.mark.parametrize('step', [49, 50, 52])
def test_a_package_without_a_top_level_dataset_max_or_adam_is_accepted(variants, step):
    _full_marks(_grade(variants['bare_package'], step))


def test_without_max_the_max_based_pooling_fails_where_the_book_needs_it(variants):
    doc = _grade(variants['bare_package'], 57)
    assert doc['verdict'] == 'reject'
    assert {'step57/pooling_simple', 'step57/device.pooling_simple'} <= set(_failing(doc))


def test_without_adam_the_step_that_first_uses_it_fails(variants):
    doc = _grade(variants['bare_package'], 59)
    assert doc['verdict'] == 'rollback'    # step 57's max-based pooling fails too
    assert {'step59/device.training_adam', 'step57/pooling_simple'} <= set(_failing(doc))


NAME_DIAGNOSIS = "names its weight `w`; the book's weight files use `W`"


@pytest.mark.parametrize('step', [44, 46, 52, 53])
def test_a_linear_whose_weight_is_called_w_is_accepted(variants, step):
    doc = _grade(variants['lowercase_weight'], step)
    _full_marks(doc)
    if step == 53:
        book_file = {c['id']: c for c in doc['checks']}['step53/save.book_file']
        assert book_file['tier'] == 'extension' and book_file['status'] == 'failed'
        assert NAME_DIAGNOSIS in book_file['message']


def test_the_pretrained_vgg_file_says_which_name_differs(variants):
    doc = _grade(variants['lowercase_weight'], 58)
    failing = _failing(doc)
    assert doc['verdict'] == 'reject'
    assert NAME_DIAGNOSIS in failing['step58/vgg.pretrained_file']
    book_failing = {c['id'] for c in doc['checks'] if c['tier'] == 'book'
                    and c['status'] not in ('passed', 'skipped')}
    assert book_failing == {'step58/vgg.pretrained_file'}
