"""Forged answers: a submission that rewrites what the grader's worker answers from inside it.

The worker reports raw values and only the trusted side decides; a verdict is earned only by
producing the values correct code produces. These tests take a package with wrong backwards of
`exp`, `sigmoid` and `linear` (rejected 0/6 at step 43 when graded honestly) and make its worker
lie: a shim around the worker's own dispatch (`__main__._handle`) drops the gradients and the
perturbed points from `fn.eval` answers, empties `graph.trace`'s gradients and adds an
`unreferenced` section to every other report. Fingerprinted like the grader's modules, the
shim is `tampered`; with the tripwire switched off as well, the forged reports do not have the
form the grader's own code writes, and the grading ends `tampered` before any judge reads them.
Either way no check the honest package fails passes -- in `check`, and in `batch` with a
course secret.
"""
import json
import shutil
import sys

import pytest

from dezero_grader.catalogue import assignments
from dezero_grader.grading import run
from dezero_grader.records.status import FAILING

import hostile_cases as hc
from grade_cli import dezero_grade

pytestmark = pytest.mark.skipif(not sys.platform.startswith('linux'),
                                reason='the worker runs under Linux confinement')

STEP = 43
WRONG_BACKWARDS = ('exp-grad-uses-input', 'sigmoid-grad-uses-input', 'linear-grad-w-torch-layout')
TRIPWIRE_OFF = '''
import dezero_grader.sandboxed.probes.handlers as _h
_h._state['pristine'] = None
'''
SHIMS = {'dispatch-shim': hc.DISPATCH_SHIM, 'dispatch-shim-tripwire-off': hc.DISPATCH_SHIM + TRIPWIRE_OFF}


@pytest.fixture(scope='module')
def packages(tmp_path_factory):
    root = tmp_path_factory.mktemp('forging')
    honest = hc.with_faults(root / 'honest', WRONG_BACKWARDS, step=STEP)
    out = {'honest': honest}
    for name, shim in SHIMS.items():
        out[name] = hc.append_to_init(hc.with_faults(root / name, WRONG_BACKWARDS, step=STEP), shim)
    return out


@pytest.fixture(scope='module')
def honest_failures(packages):
    doc = run.grade(packages['honest'], STEP, run.Options(device='sim'))
    assert doc['verdict'] == 'reject' and doc['score']['earned'] == 0, doc['reason']
    return {c['id'] for c in doc['checks'] if c['status'] in FAILING}


def _gains_nothing(doc, honest_failures):
    """The forged grading is `tampered`, or a reject in which every check the honest package
    fails still fails."""
    if doc['verdict'] == 'invalid':
        assert doc['invalid']['code'] == 'tampered', doc['invalid']
        return
    assert doc['verdict'] == 'reject', doc['reason']
    passed = {c['id'] for c in doc['checks'] if c['status'] == 'passed'}
    assert not passed & honest_failures, sorted(passed & honest_failures)


@pytest.mark.parametrize('name', sorted(SHIMS))
def test_a_dispatch_shim_on_a_broken_package_gains_nothing_in_check(packages, honest_failures,
                                                                    tmp_path, name):
    out = tmp_path / 'scorecard.json'
    dezero_grade('check', packages[name], '--step', STEP, '--device', 'sim', '--json', out)
    doc = json.loads(out.read_text(encoding='utf-8'))
    _gains_nothing(doc, honest_failures)
    assert doc['verdict'] == 'invalid'
    # the first line that sees it: the worker's fingerprint, or (tripwire off) the reports' form
    words = 'never writes' if name.endswith('tripwire-off') else 'dezero_grader.sandboxed.worker._handle'
    assert words in doc['invalid']['message'], doc['invalid']


def test_a_dispatch_shim_gains_nothing_in_a_batch_with_a_course_secret(packages, honest_failures,
                                                                       tmp_path, monkeypatch):
    monkeypatch.setenv(run.SECRET_ENV, 'a secret of the course')
    monkeypatch.delenv(run.SECRET_FILE_ENV, raising=False)
    folder = tmp_path / 'class'
    folder.mkdir()
    for name in SHIMS:
        shutil.copytree(packages[name], folder / name)
    out = tmp_path / 'out'
    dezero_grade('batch', folder, '--step', STEP, '--device', 'sim', '--out', out, '--jobs', 1,
                 expect=(0,))
    cards = {p.stem: json.loads(p.read_text(encoding='utf-8'))
             for p in (out / 'scorecards').glob('*.json')}
    assert set(cards) == set(SHIMS)
    for doc in cards.values():
        _gains_nothing(doc, honest_failures)
        assert doc['verdict'] == 'invalid'


# -- the worker decides nothing: NumPy and the builtins patched to agree change no verdict --------

# faults whose checks a worker comparing for itself would have judged with the patched functions
COMPARED_IN_THE_WORKER = [
    (7, 'set-creator-missing'), (7, 'call-forgets-output'),       # links: builtins.all
    (44, 'cleargrads-noop'), (44, 'layer-registers-variables'),   # none_left: all(); identities
    (45, 'nested-params-missing'),                                # had_grads / cleared: all()
    (48, 'spiral-not-deterministic'), (48, 'spiral-labels-float'),  # np.array_equal, bincount
    (49, 'dataset-transform-ignored'),                            # np.all
    (53, 'load-shape-unchecked'),                                 # unchanged: np.all, all()
    (54, 'dropout-ignores-mode'), (54, 'mode-not-restored'),      # drops: np.any
]


def _graded(sub, step):
    own = tuple(u.id for u in assignments.load(step).checks)
    doc = run.grade(sub, step, run.Options(device='sim', seed=4242, only=own))
    return doc['verdict'], sorted((c['id'], c['status']) for c in doc['checks']
                                  if c['status'] in FAILING)


@pytest.mark.parametrize('step, fault', COMPARED_IN_THE_WORKER)
def test_numpy_and_builtins_patched_to_agree_change_no_verdict(tmp_path, step, fault):
    honest = _graded(hc.variant(tmp_path / 'honest', step, fault), step)
    lying = _graded(hc.variant(tmp_path / 'lying', step, fault, hc.LYING_COMPARISONS), step)
    assert honest[1], honest   # the fault is caught (by a book or an extension check)
    assert lying == honest
