"""Accept means every earlier contract holds: a bug in code a later step still carries is a
rollback naming the step whose contract it breaks, however many steps ago that was.

Each fixture is a copy of the reference package with one function rewritten in its source,
the way a learner's bug looks (not a patch applied from outside). Each breaks a contract of an
earlier step that step 40 or 50 carries but whose own checks that step does not re-run as its
own; before the regression reached back to every earlier step, each of these was accepted.
"""
import shutil

import pytest

from dezero_grader import reference
from dezero_grader.grading import run
from dezero_grader.records.status import FAILING

SEED = 2026


def _variant(tmp_path, edits):
    """A copy of the reference package with `edits` ({file: [(old, new), ...]}) made."""
    root = tmp_path / 'sub'
    shutil.copytree(reference.ROOT / 'dezero', root / 'dezero',
                    ignore=shutil.ignore_patterns('__pycache__'))
    for name, changes in edits.items():
        path = root / 'dezero' / name
        text = path.read_text(encoding='utf-8')
        for old, new in changes:
            assert text.count(old) == 1, (name, old)
            text = text.replace(old, new)
        path.write_text(text, encoding='utf-8')
    return root


BUGS = {
    # forward of transpose hands its input back unchanged
    'transpose-forward-no-op': (38, 40, {'functions.py': [(
        '    def forward(self, x):\n        return x.transpose(self.axes)\n',
        '    def forward(self, x):\n        return x\n')]}),
    # the mean divides by one sample fewer than there are
    'mse-off': (42, 50, {'functions.py': [(
        '        return (diff ** 2).sum() / len(diff)\n',
        '        return (diff ** 2).sum() / (len(diff) - 1)\n')]}),
    # the slice's gradient is scattered twice over
    'get-item-grad-doubled': (47, 50, {'functions.py': [(
        '        return GetItemGrad(self.slices, x.shape)(gy)\n',
        '        return GetItemGrad(self.slices, x.shape)(gy) * 2\n')]}),
    # clip lets the gradient through exactly where it clipped, and stops it elsewhere
    'clip-grad-mask-inverted': (47, 50, {'functions.py': [(
        '        mask = (x.data >= self.x_min) * (x.data <= self.x_max)\n',
        '        mask = (x.data < self.x_min) + (x.data > self.x_max)\n')]}),
    # Variable has no sum method (step 39's): softmax's backward, which calls it, raises too
    'variable-without-sum': (39, 50, {'core.py': [(
        '    def sum(self, axis=None, keepdims=False):\n'
        '        return dezero.functions.sum(self, axis, keepdims)\n', '')]}),
}


@pytest.mark.parametrize('bug', sorted(BUGS))
def test_an_earlier_contract_broken_is_a_rollback_naming_its_step(tmp_path, bug):
    broken_step, graded_at, edits = BUGS[bug]
    doc = run.grade(_variant(tmp_path, edits), graded_at, run.Options(seed=SEED))
    failing = [c for c in doc['checks'] if c['status'] in ('failed', 'error')]
    assert doc['verdict'] == 'rollback', (doc['reason'], [c['id'] for c in failing])
    earliest = min(c['step'] for c in failing if c['regression'])
    assert earliest == broken_step, [c['id'] for c in failing]
    assert doc['reason'].startswith("step {}'s contract, which step {} must keep, fails: "
                                    'step{}/'.format(broken_step, graded_at, broken_step))
    # what one grading cannot know is not said as fact
    assert 'previous snapshot' not in doc['reason']
    assert doc['score']['earned'] < doc['score']['possible']


def test_the_same_bug_at_its_own_step_is_a_reject(tmp_path):
    broken_step, _, edits = BUGS['transpose-forward-no-op']
    doc = run.grade(_variant(tmp_path, edits), broken_step, run.Options(seed=SEED))
    assert doc['verdict'] == 'reject', doc['reason']


# The book's step-38 text writes Variable.transpose(self) and a Transpose without axes (its
# dezero/ files take axes too): code written from the text is correct at step 38 and after.
TEXT_TRANSPOSE = {
    'core.py': [(
        '    def transpose(self, *axes):\n'
        '        if len(axes) == 0:\n'
        '            axes = None\n'
        '        elif len(axes) == 1 and (isinstance(axes[0], (tuple, list)) or axes[0] is None):\n'
        '            axes = axes[0]\n'
        '        return dezero.functions.transpose(self, axes)\n',
        '    def transpose(self):\n'
        '        return dezero.functions.transpose(self)\n')],
    'functions.py': [(
        '        if self.axes is None:\n'
        '            return transpose(gy)\n'
        '        n = len(self.axes)\n',
        '        if self.axes is None:\n'
        '            return transpose(gy)\n'
        '        raise NotImplementedError(\'transpose with axes\')\n'
        '        n = len(self.axes)\n')],
}


@pytest.mark.parametrize('step', [38, 40])
def test_transpose_as_the_step_38_text_writes_it_is_accepted_with_advice(tmp_path, step):
    doc = run.grade(_variant(tmp_path, TEXT_TRANSPOSE), step, run.Options(seed=SEED))
    assert doc['verdict'] == 'accept', [(c['id'], c['status']) for c in doc['checks']
                                        if c['status'] != 'passed']
    assert doc['score']['earned'] == doc['score']['possible']
    advice = {c['id'] for c in doc['checks'] if c['tier'] == 'extension' and c['status'] in FAILING}
    # advice, not counted, and never a regression: step 40 does not re-run them
    assert advice == ({'step38/transpose_axes', 'step38/methods_axes'} if step == 38 else set())


def test_a_package_that_caches_downloads_in_its_own_folder_reads_mnist(tmp_path):
    # where get_file keeps its downloads is the package's choice: the MNIST files are placed in
    # its utils.cache_dir too, and nothing is fetched from the network
    own = {'utils.py': [(
        "cache_dir = os.path.join(os.path.expanduser('~'), '.dezero')\n",
        "cache_dir = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'cache')\n")]}
    doc = run.grade(_variant(tmp_path, own), 51, run.Options(seed=SEED, only=('step51/mnist',)))
    (mnist,) = [c for c in doc['checks'] if c['id'] == 'step51/mnist']
    assert mnist['status'] == 'passed', mnist['message']


# -- step files: a step file answers for the earlier steps whose code it still carries ----------
def _step_file(tmp_path, step, edits=(), drop=()):
    """The reference's step file of `step`, alone in a folder, with `edits` ([(old, new), ...])
    made and the top-level definitions named in `drop` taken out (a learner's file that keeps
    less of the earlier steps than the book's)."""
    import ast
    text = (reference.ROOT / 'steps' / 'step{:02d}.py'.format(step)).read_text(encoding='utf-8')
    for old, new in edits:
        assert text.count(old) == 1, old
        text = text.replace(old, new)
    if drop:
        tree = ast.parse(text)
        kept = [node for node in tree.body if getattr(node, 'name', None) not in drop]
        assert len(kept) == len(tree.body) - len(drop), drop
        text = ast.unparse(ast.Module(body=kept, type_ignores=[]))
    root = tmp_path / 'sub'
    root.mkdir()
    (root / 'step{:02d}.py'.format(step)).write_text(text, encoding='utf-8')
    return root


STEP_FILE_BUGS = {
    # Variable takes a Python float again: step 9's type check, which step 22 still carries
    'type-check-dropped': (9, 22, [(
        "            raise TypeError('{} is not supported'.format(type(data)))\n",
        '            pass\n')]),
    # a reused variable keeps only its last gradient: step 14's accumulation, which step 17's
    # own checks (memory, a chain of squares) never exercise
    'grad-overwritten': (14, 17, [('                    x.grad = x.grad + gx\n',
                                   '                    x.grad = gx\n')]),
}


@pytest.mark.parametrize('bug', sorted(STEP_FILE_BUGS))
def test_a_step_file_that_breaks_an_earlier_step_is_a_rollback_naming_it(tmp_path, bug):
    broken_step, graded_at, edits = STEP_FILE_BUGS[bug]
    doc = run.grade(_step_file(tmp_path, graded_at, edits), graded_at, run.Options(seed=SEED))
    failing = [c for c in doc['checks'] if c['status'] in FAILING]
    assert doc['verdict'] == 'rollback', (doc['reason'], [c['id'] for c in failing])
    assert min(c['step'] for c in failing if c['regression']) == broken_step
    assert doc['reason'].startswith("step {}'s contract, which step {} must keep, fails: "
                                    'step{:02d}/'.format(broken_step, graded_at, broken_step))


def test_a_step_file_without_the_earlier_steps_functions_is_accepted(tmp_path):
    # the book's own step 14 keeps no Square: the checks that call it do not regress on a file
    # without it (the first attempt at this rolled such a file back)
    sub = _step_file(tmp_path, 14, drop=('Square', 'square', 'Exp', 'exp'))
    doc = run.grade(sub, 14, run.Options(seed=SEED))
    assert doc['verdict'] == 'accept', [(c['id'], c['message']) for c in doc['checks']
                                        if c['status'] in FAILING]
    regression = {c['id'] for c in doc['checks'] if c['regression']}
    assert 'step12/add' in regression and 'step09/type_check' in regression
    assert not any('square' in c or 'exp' in c or c.startswith('step03/') for c in regression)


@pytest.mark.parametrize('step', [12, 18, 22])
def test_the_reference_step_files_keep_every_earlier_contract_they_carry(tmp_path, step):
    # 12: no backward before step 13 (several inputs); 18 on: the output's gradient is read
    # with retain_grad=True; 22: the longest reach
    doc = run.grade(_step_file(tmp_path, step), step, run.Options(seed=SEED))
    assert doc['verdict'] == 'accept' and doc['score']['earned'] == doc['score']['possible'], [
        (c['id'], c['message']) for c in doc['checks'] if c['status'] in FAILING]
    steps = {c['step'] for c in doc['checks'] if c['regression']}
    assert steps and max(steps) < step and min(steps) == 1
