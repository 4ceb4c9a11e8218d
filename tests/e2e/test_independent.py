"""An independent implementation of the framework gets full marks at every step whose checks
compare with the reference, under several seeds.

tests/fixtures/independent rewrites, in a style of its own, the modules that carry the
differentiable math and the machinery of stages 4 and 5 (core, functions, convolutions, layers,
optimizers, models, utilities, device helpers, data loaders); see its README.md. The
differential checks (`reference.match`, and the gradient batteries and graph trajectories,
which compare with the reference too) must accept it: a failure here is either a bug of the
fixture or a check that depends on an internal of the reference rather than on the contract.

The quick run (`pytest -m "not slow"`) grades a few steps under one seed, and shows that a
fault injected into the rewritten modules is still caught; `test_every_step` (slow, about
three minutes) grades steps 23-60 under three seeds.
"""
import pytest

from dezero_grader import reference
from dezero_grader.catalogue import assignments, faults
from dezero_grader.grading import run
from dezero_grader.intake import load
from dezero_grader.records import schema

import independent_fixture
from dezero_grader.records.status import FAILING

SEEDS = (2026, 7, 424242)
STEPS = range(23, 61)
QUICK = (33, 47, 52, 57)

@pytest.fixture(scope='module')
def submission(tmp_path_factory):
    return independent_fixture.build(tmp_path_factory.mktemp('independent'))


def assert_full_marks(doc, step, seed):
    assert schema.errors('scorecard', doc) == []
    failing = ['{} [{}]: {}'.format(c['id'], c['status'], c['message']) for c in doc['checks']
               if c['status'] not in ('passed', 'skipped')]
    where = 'step {} seed {}: '.format(step, seed)
    assert doc['verdict'] == 'accept', where + '; '.join(failing)
    score = doc['score']
    assert score['earned'] == score['possible'], where + '; '.join(failing)
    extension = score.get('extension') or {}
    assert extension.get('earned') == extension.get('possible'), where + '; '.join(failing)


@pytest.mark.parametrize('step, seed', [(step, SEEDS[0]) for step in QUICK])
def test_quick_steps(submission, step, seed):
    assert_full_marks(run.grade(submission, step, run.Options(seed=seed)), step, seed)


@pytest.mark.slow
@pytest.mark.parametrize('step, seed', [(step, seed) for step in STEPS for seed in SEEDS])
def test_every_step(submission, step, seed):
    assert_full_marks(run.grade(submission, step, run.Options(seed=seed)), step, seed)


SHARED_BLOCK = 6   # lines: a run this long found in both is code written once and copied


def _code_lines(path):
    """(line number, text) of the lines that carry code: stripped, blank lines and comments
    left out, so that reindenting or recommenting a copy does not hide it."""
    out = []
    for number, line in enumerate(path.read_text(encoding='utf-8').splitlines(), 1):
        text = line.strip()
        if text and not text.startswith('#'):
            out.append((number, text))
    return out


def shared_blocks(ours, theirs_files, size=SHARED_BLOCK):
    """The line numbers of `ours` that lie in a run of `size` consecutive code lines that also
    stands, line for line, in one of `theirs_files`."""
    known = set()
    for path in theirs_files:
        texts = [t for _, t in _code_lines(path)]
        known.update(tuple(texts[i:i + size]) for i in range(len(texts) - size + 1))
    lines = _code_lines(ours)
    hit = set()
    for i in range(len(lines) - size + 1):
        if tuple(t for _, t in lines[i:i + size]) in known:
            hit.update(n for n, _ in lines[i:i + size])
    return sorted(hit)


def test_shared_blocks_finds_a_copied_run(tmp_path):
    """The measure below is not blind: a block copied from the reference, reindented and with
    a comment added, is found."""
    theirs = reference.ROOT / 'dezero' / 'dataloaders.py'
    body = [t for _, t in _code_lines(theirs)][10:17]
    ours = tmp_path / 'copy.py'
    ours.write_text('x = 1\n# a comment\n' + '\n'.join('        ' + t for t in body) + '\n',
                    encoding='utf-8')
    assert len(shared_blocks(ours, [theirs])) == 7
    assert shared_blocks(tmp_path / 'copy.py', [reference.ROOT / 'dezero' / 'cuda.py']) == []


def test_the_independent_implementation_is_not_the_reference():
    """No rewritten module shares a block of six code lines with any module of the reference
    (what the book's API fixes -- names, signatures, one-line formulas -- is shorter than that),
    and the distinctive designs the fixture's README describes are there."""
    names = independent_fixture.rewritten_modules()
    assert {'core.py', 'functions.py', 'functions_conv.py', 'optimizers.py', 'models.py',
            'utils.py', 'cuda.py', 'layers.py', 'dataloaders.py'} <= set(names)
    theirs = sorted((reference.ROOT / 'dezero').glob('*.py'))
    shared = {name: shared_blocks(independent_fixture.OVERLAY / 'dezero' / name, theirs)
              for name in names}
    assert {name: lines for name, lines in shared.items() if lines} == {}

    def text(name):
        return (independent_fixture.OVERLAY / 'dezero' / name).read_text(encoding='utf-8')
    assert "__slots__ = ('data'" in text('core.py') and 'buckets' in text('core.py')
    assert 'class _InvertedDropout' in text('functions.py')
    assert 'xp.add.at(padded' in text('functions_conv.py')
    assert 'class _ConvGradW' in text('functions_conv.py')
    assert '_memory' in text('optimizers.py') and 'vars(self).update(hyper)' in text('optimizers.py')
    assert 'BLOCKS = ' in text('models.py') and '_recurrent_model' in text('models.py')
    layers = text('layers.py')
    assert 'def named_parameters' in layers and '_carry' in layers
    assert 'class _Weighted' in layers and 'self.from_x = Linear(4 * hidden_size' in layers
    assert 'def _plan' in text('dataloaders.py')


@pytest.mark.parametrize('step, fault_id', [
    (33, 'create-graph-ignored'),
    (40, 'sum-to-wrong-axes'),
    (47, 'getitem-grad-overwrite'),
    (57, 'col2im-overwrites'),
    # near misses, through the public API whatever implements it: 0.1% off is still rejected
    (40, 'mul-grad-off-1-permille'),
    (41, 'matmul-grad-off-1-permille'),
    (43, 'linear-grad-off-1-permille'),
])
def test_a_fault_injected_into_the_rewritten_modules_is_caught(submission, tmp_path, step,
                                                               fault_id):
    """The full marks above are not leniency: the same checks reject the independent
    implementation once one of the faults of the step is injected into it."""
    fault = {f.id: f for f in assignments.fault_catalogue(assignments.load(step))}[fault_id]
    base = load.prepare(submission, step, tmp_path / 'base')
    variant = faults.inject(base.root, tmp_path / fault_id, fault, base.entry)
    doc = run.grade(variant, step, run.Options(seed=SEEDS[0]))
    failed = [c['id'] for c in doc['checks'] if c['status'] in FAILING]
    # a fault in code older than the step (Mul's backward, at step 40) also breaks the earlier
    # steps' contracts the step re-runs: then a rollback, which names the earliest of them
    earlier = [c['step'] for c in doc['checks'] if c['status'] in FAILING and c['regression']]
    assert doc['verdict'] == ('rollback' if earlier else 'reject'), failed
    if earlier:
        assert doc['reason'].startswith("step {}'s contract".format(min(earlier)))
    assert any(cid.startswith('step{}/'.format(step)) for cid in failed), failed
