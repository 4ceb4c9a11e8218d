"""The stage-5 assignments (steps 53-60) prove they can fail, and accept a correct implementation
that is not the reference.

* Self-test per step: the reference is accepted with full marks under both profiles; every fault
  of the step's own catalogue ends in `reject`, caught by the checks the catalogue names; a
  sample of earlier steps' faults ends in `rollback`; no check of the step is left that no fault
  makes fail. The sample is the quick run (`pytest -m "not slow"`); `test_full_selftest` (marked
  slow, run by default and in CI) grades every fault of the catalogue of steps 52-60, earlier
  steps' included (minutes per step).
* An independent implementation (tests/fixtures/independent: the core, the functions, the
  convolutions, the layers, the optimizers and the models rewritten in another style; see
  tests/e2e/test_independent.py for its sweep over every step and several seeds) is accepted
  with full marks at steps 53, 54, 59 and 60, and a fault injected into it through the public
  API is still caught.
"""
import concurrent.futures

import pytest

from dezero_grader.catalogue import assignments, faults
from dezero_grader.grading import run
from dezero_grader.intake import load
from dezero_grader.proof import selftest
from dezero_grader.records import schema

import independent_fixture
from dezero_grader.records.status import FAILING


@pytest.fixture(scope='module')
def independent(tmp_path_factory):
    """The independent submission (tests/fixtures/independent laid over the reference)."""
    return independent_fixture.build(tmp_path_factory.mktemp('independent'))


SEED = 2026

# Earlier steps' faults graded with each step besides all of its own: at least one per step, to
# show the rollback there, and those without which a check of the step would fail on no fault
# of the sample (the step-52 optimizer fault is what the extension "state follows the model"
# checks of steps 54 and 57 catch; the no-code step 56 has no faults of its own; the BPTT cut
# of step 60's LSTM is step 59's unchain_backward).
SAMPLED = {
    53: ('gpu-layer-shallow',),
    54: ('gpu-optimizer-state-stale', 'save-flatten-shallow'),
    56: ('conv-outsize-missing', 'conv-outsize-off-by-one', 'mode-not-restored'),
    57: ('gpu-optimizer-state-stale', 'backward-generation-order'),
    58: ('pooling-grad-route',),
    59: ('vgg-flatten-order',),
    60: ('rnn-no-truncation', 'loader-last-batch'),
}
STEPS = tuple(sorted(SAMPLED))


def _sampled_catalogue(full_catalogue):
    def catalogue(assignment):
        keep = set(SAMPLED.get(assignment.step, ()))
        return tuple(f for f in full_catalogue(assignment)
                     if f.step == assignment.step or f.id in keep)
    return catalogue


@pytest.fixture(scope='module')
def outcomes():
    """selftest.run_step for every stage-5 step, two at a time (the work happens in worker
    processes; the threads only wait for them)."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(assignments, 'fault_catalogue', _sampled_catalogue(assignments.fault_catalogue))
        with concurrent.futures.ThreadPoolExecutor(2) as pool:
            futures = {step: pool.submit(selftest.run_step, step, seed=SEED) for step in STEPS}
            return {step: f.result() for step, f in futures.items()}


@pytest.mark.parametrize('step', STEPS)
def test_selftest_passes(outcomes, step):
    outcome = outcomes[step]
    assert outcome.ok, selftest.render(outcome)
    for profile, (verdict, earned, possible, ext_earned, ext_possible) in outcome.reference.items():
        assert verdict == 'accept' and earned == possible > 0, profile
        assert ext_earned == ext_possible, profile
    own = [row for row in outcome.rows if row[0].step == step]
    earlier = [row for row in outcome.rows if row[0].step != step]
    assert all(verdict == 'reject' for _, _, verdict, _, _ in own)
    assert all(verdict == 'rollback' for _, _, verdict, _, _ in earlier)
    assert {row[0].id for row in earlier} == set(SAMPLED[step])
    assert outcome.uncaught == []


@pytest.mark.slow
@pytest.mark.parametrize('step', range(52, 61))
def test_full_selftest(step):
    """Every fault of the catalogue, earlier steps' included, for every stage-5 step (about 11
    minutes on two cores, two variants at a time; it runs in CI; `pytest -m "not slow"` leaves
    it out)."""
    outcome = selftest.run_step(step, seed=SEED, jobs=2)
    assert outcome.ok, selftest.render(outcome)


@pytest.mark.parametrize('step', STEPS)
def test_every_own_fault_is_tried(outcomes, step):
    tried = {row[0].id for row in outcomes[step].rows}
    assert {f.id for f in assignments.load(step).faults} <= tried


def test_the_fault_catalogue_covers_faults_md():
    """Every fault of the catalogue's floor for steps 53-60 is in an assignment, with its tier;
    the loader faults are step 52's and reach step 60 through `faults_from`, which lists every
    earlier stage-5 step and the core pack (the regression a grading runs reaches further back)."""
    floor = {
        'save-flatten-shallow': 'book', 'save-key-format': 'book', 'load-no-copy': 'book',
        'save-device-moved': 'extension', 'load-device-stale': 'extension',
        'load-shape-unchecked': 'extension', 'save-partial-file': 'book',
        'dropout-ignores-mode': 'book', 'dropout-no-rescale': 'book',
        'dropout-mask-resampled': 'book', 'mode-not-restored': 'book', 'dropout-mask-host': 'book',
        'conv-outsize-off-by-one': 'book', 'conv-outsize-true-div': 'book', 'pair-tuple': 'book',
        'im2col-axis-order': 'book', 'col2im-overwrites': 'book', 'conv-bias-axis': 'book',
        'conv-pad-one-side': 'book', 'conv2d-layer-lazy-in-channels': 'book',
        'pooling-grad-route': 'book', 'conv-init-scale': 'book',
        'vgg-architecture': 'book', 'vgg-flatten-order': 'book', 'vgg-preprocess-channels': 'book',
        'vgg-dropout-mode': 'book',
        'rnn-reset-noop': 'book', 'rnn-h2h-bias': 'book', 'rnn-no-truncation': 'book',
        'rnn-hidden-stale-device': 'extension', 'rnn-state-detached': 'book',
        'lstm-gate-swap': 'book', 'lstm-cell-not-reset': 'book',
        'lstm-cell-stale-device': 'extension', 'seqloader-jump': 'book',
        'loader-last-batch': 'book', 'loader-reset': 'book',
    }
    catalogue = {f.id: f for f in assignments.fault_catalogue(assignments.load(60))}
    assert {fid: catalogue[fid].tier for fid in floor if fid in catalogue} == floor
    assert catalogue['loader-last-batch'].step == catalogue['loader-reset'].step == 52
    for step in STEPS:
        earlier = [s for s in (52, 53, 54, 55, 56, 57, 58, 59) if s < step]
        assert list(assignments.load(step).faults_from) == earlier + ['core'], step


@pytest.mark.parametrize('step', [53, 54, 59, 60])
def test_an_independent_implementation_gets_full_marks(independent, step):
    doc = run.grade(independent, step, run.Options(seed=SEED))
    assert schema.errors('scorecard', doc) == []
    failing = [c['id'] + ': ' + c['message'] for c in doc['checks']
               if c['status'] not in ('passed', 'skipped')]
    assert doc['verdict'] == 'accept', failing
    assert doc['score']['earned'] == doc['score']['possible'] > 0
    assert doc['score']['extension']['earned'] == doc['score']['extension']['possible']


@pytest.mark.parametrize('step, fault_id, check_id', [
    (54, 'dropout-no-rescale', 'step54/dropout.statistics'),
    (59, 'rnn-reset-noop', 'step59/rnn.reset'),
])
def test_a_fault_injected_into_the_independent_implementation_is_caught(independent, tmp_path, step,
                                                                       fault_id, check_id):
    fault = {f.id: f for f in assignments.fault_catalogue(assignments.load(step))}[fault_id]
    base = load.prepare(independent, step, tmp_path / 'base')
    variant = faults.inject(base.root, tmp_path / fault_id, fault, base.entry)
    doc = run.grade(variant, step, run.Options(seed=SEED))
    failed = {c['id'] for c in doc['checks'] if c['status'] in FAILING}
    assert doc['verdict'] == 'reject'
    assert check_id in failed
