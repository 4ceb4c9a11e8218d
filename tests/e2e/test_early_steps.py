"""Steps 1-51 end to end: the selftest (reference accepted with full marks, every catalogued
fault caught by the checks that name it), an independent implementation of early steps accepted,
either core accepted for steps 23-31, single-file fault injection, and how `check` finds a step
file.

The selftest of all 51 steps takes minutes (every fault variant is a full grading run, about 300
of them); it is marked `slow` and runs in the default run and in CI. `pytest -m "not slow"` leaves
it out for a quick local run.
"""
import shutil
import sys
from pathlib import Path

import pytest

from dezero_grader import reference
from dezero_grader import cli
from dezero_grader.catalogue import assignments, faults
from dezero_grader.grading import run
from dezero_grader.intake import load
from dezero_grader.proof import selftest
from dezero_grader.records import schema
from dezero_grader.records.status import FAILING
from dezero_grader.sandboxed.probes.handlers import _exec_single_file
from grade_cli import run_to_end

FIXTURES = Path(__file__).resolve().parents[1] / 'fixtures' / 'independent_early'
SEED = 2026


def grade(source, step):
    doc = run.grade(source, step, run.Options(seed=SEED))
    assert schema.errors('scorecard', doc) == []
    return doc


def failing(doc):
    return {c['id']: c['message'] for c in doc['checks'] if c['status'] in FAILING}


def assert_selftest(step):
    outcome = selftest.run_step(step, seed=SEED)
    assert outcome.ok, selftest.render(outcome)
    assert outcome.reference['book'][0] == 'accept'


@pytest.mark.slow
@pytest.mark.parametrize('step', range(1, 52))
def test_selftest_every_step(step):
    assert_selftest(step)


def test_selftest_grades_variants_at_once_with_the_same_outcome():
    """`jobs` only changes how many variants are graded at once: the rows come in the
    catalogue's order, with the same verdicts, failures and diagnoses as one at a time."""
    one, three = selftest.run_step(9, seed=SEED), selftest.run_step(9, seed=SEED, jobs=3)
    assert len(one.rows) >= 3 and one.ok and three.ok
    assert [(r[0].id,) + r[1:] for r in three.rows] == [(r[0].id,) + r[1:] for r in one.rows]
    assert [r[0].id for r in one.rows] == [f.id for f in assignments.fault_catalogue(assignments.load(9))]
    assert three.diagnoses == one.diagnoses and three.proof.counts == one.proof.counts


def test_a_variant_that_cannot_be_graded_stops_the_selftest(monkeypatch):
    """A grading that raises (the grader's own failure) is not lost among the others."""
    real = run.grade

    def grade_or_break(path, step, options):
        if 'v001-' in str(path):
            raise RuntimeError('this grading broke')
        return real(path, step, options)
    monkeypatch.setattr(run, 'grade', grade_or_break)
    with pytest.raises(RuntimeError, match='this grading broke'):
        selftest.run_step(9, seed=SEED, jobs=2)


def test_selftest_counts_a_check_only_when_a_fault_of_its_own_makes_it_judge_a_wrong_value(
        monkeypatch):
    """Step 3's `exp` and `chain` fail on `exp-math-exp` only by a crash (math.exp raises on an
    array) and `chain_0d` only on a fault that does not name it: without the wrong-value fault
    `exp-forward-exp2` selftest reports all three as gaps; with it, none."""
    outcome = selftest.run_step(3, seed=SEED)
    assert outcome.ok, selftest.render(outcome)
    assert outcome.proof.counts['judged'] == len(run.checks_of(assignments.load(3))[0])
    assert 'forward.value' in outcome.proof.battery_cases
    full = assignments.fault_catalogue
    monkeypatch.setattr(assignments, 'fault_catalogue', lambda a: tuple(
        f for f in full(a) if f.id != 'exp-forward-exp2'))
    outcome = selftest.run_step(3, seed=SEED)
    assert outcome.proof.of('crash only') == ['step03/chain', 'step03/exp']
    assert outcome.proof.of('collateral only') == ['step03/chain_0d']
    text = selftest.render(outcome)
    assert 'GAP: check step03/exp fails only by a crash' in text
    assert '2 check(s) fail by judgment on a fault of their own, 2 only by a crash, 1 only ' \
           'collaterally, 0 never' in text


def test_every_step_with_code_has_faults_and_every_step_is_graded():
    for step in range(1, 52):
        a = assignments.load(step)
        if a.no_code:
            assert a.regression or a.checks, 'step {} grades nothing'.format(step)
        else:
            assert len(a.faults) >= 2, 'step {} has fewer than two faults'.format(step)
        assert a.entry == ('single-file' if step < load.FIRST_PACKAGE_STEP else 'package')


def test_reference_source_is_the_step_files_before_the_package():
    assert selftest.reference_source(9) == reference.ROOT / 'steps'
    assert (selftest.reference_source(9) / 'step09.py').is_file()
    assert selftest.reference_source(23) == reference.ROOT
    assert selftest.reference_source(51) == reference.ROOT


# -- an independent implementation ------------------------------------------------------------------
# the fixture folder that stands for each step with checks of its own (every one of them compares
# with the reference): a step's own folder, or the next folder whose API is still that step's
INDEPENDENT = {1: 4, 2: 4, 3: 4, 4: 4, 6: 9, 7: 9, 8: 9, 9: 9, 10: 10, 11: 11, 12: 14, 13: 14,
               14: 14, 16: 17, 17: 17, 18: 18, 19: 22, 20: 22, 21: 22, 22: 22}


def test_the_independent_early_folders_cover_every_early_step_that_grades_code():
    graded = {s for s in range(1, load.FIRST_PACKAGE_STEP) if assignments.load(s).checks}
    assert graded == set(INDEPENDENT)


@pytest.mark.parametrize('step', sorted(INDEPENDENT))
def test_independent_early_steps_are_accepted_with_full_marks(step, tmp_path):
    folder = FIXTURES / 'step{:02d}'.format(INDEPENDENT[step])
    if INDEPENDENT[step] != step:   # the same files handed in for an earlier step
        folder = Path(shutil.copytree(folder, tmp_path / 'sub'))
        (folder / 'step{:02d}.py'.format(INDEPENDENT[step])).rename(
            folder / 'step{:02d}.py'.format(step))
    doc = grade(folder, step)
    assert doc['verdict'] == 'accept', failing(doc)
    assert doc['score']['earned'] == doc['score']['possible'] > 0


def test_a_simple_core_package_is_accepted_until_step_32_and_rejected_at_33(tmp_path):
    package = tmp_path / 'dezero'
    shutil.copytree(reference.ROOT / 'dezero', package, ignore=shutil.ignore_patterns('__pycache__'))
    init = package / '__init__.py'
    init.write_text(init.read_text().replace('is_simple_core = False', 'is_simple_core = True'))
    for step in (24, 28, 29, 32):
        doc = grade(tmp_path, step)
        assert doc['verdict'] == 'accept', (step, failing(doc))
    doc = grade(tmp_path, 33)
    assert doc['verdict'] == 'reject'
    assert 'step33/grad_variable' in failing(doc)


# -- single-file fault injection --------------------------------------------------------------------
def _variant(tmp_path, step, fault_id):
    fault = {f.id: f for f in assignments.fault_catalogue(assignments.load(step))}[fault_id]
    base = load.prepare(selftest.reference_source(step), step, tmp_path / 'base')
    return faults.inject(base.root, tmp_path / fault_id, fault, base.entry), base.entry


def test_a_step_file_variant_runs_the_demo_and_applies_the_fault_after_its_error(tmp_path):
    out, entry = _variant(tmp_path, 9, 'exp-calls-square')
    step_file = out / entry.path
    assert (step_file.parent / '_original_step09.py').is_file()
    # run as the learner would: the demo prints, then ends in its intended TypeError
    done = run_to_end([sys.executable, step_file.name], cwd=step_file.parent, capture_output=True,
                      text=True)
    assert done.returncode == 1 and 'TypeError' in done.stderr
    assert '3.29744254' in done.stdout            # the demo ran before the fault went in
    # loaded as the worker loads it: the names survive the demo's error, the fault is in place
    try:
        module, demo_error = _exec_single_file('step09', str(step_file))
        assert demo_error['type'] == 'TypeError'
        y = module.exp(module.Variable(module.np.array(3.0)))
        assert float(y.data) == 9.0               # exp now squares: the patched name
        assert not [n for n in vars(module) if n.startswith('_dz_')]
    finally:
        sys.modules.pop('step09', None)
    doc = grade(out, 9)
    assert doc['verdict'] == 'reject'
    assert {'step09/exp', 'step09/seed'} <= set(failing(doc))


def test_a_package_variant_is_still_made_the_package_way(tmp_path):
    fault = {f.id: f for f in assignments.load(40).faults}['sum-to-wrong-axes']
    base = load.prepare(reference.ROOT, 40, tmp_path / 'base')
    out = faults.inject(base.root, tmp_path / 'variant', fault, base.entry)
    assert (out / 'dezero' / '_injected_fault.py').is_file()
    assert faults.MARKER in (out / 'dezero' / '__init__.py').read_text()
    assert not list(out.rglob('_original_*'))


# -- finding the entry ------------------------------------------------------------------------------
def test_check_finds_a_step_file_in_steps_and_says_what_it_looked_for_otherwise(tmp_path, capsys):
    usual = tmp_path / 'usual' / 'steps'
    usual.mkdir(parents=True)
    shutil.copy(reference.ROOT / 'steps' / 'step07.py', usual / 'step07.py')
    assert cli.main(['check', str(tmp_path / 'usual'), '--step', '7']) == 0
    assert 'ACCEPT' in capsys.readouterr().out

    odd = tmp_path / 'odd'
    odd.mkdir()
    shutil.copy(reference.ROOT / 'steps' / 'step07.py', odd / 'Step_07.py')
    assert cli.main(['check', str(odd), '--step', '7']) == 1
    text = capsys.readouterr().out
    assert 'INVALID' in text and 'step07.py or step7.py' in text and 'Step_07.py' in text


# -- step files as learners write them ----------------------------------------------------------------
PATTERNS = Path(__file__).resolve().parents[1] / 'fixtures' / 'early_patterns'


def test_a_name_kept_in_a_helper_module_is_found():
    # step02.py takes Square and Variable from common.py; Function is only in common.py
    doc = grade(PATTERNS / 'helper_module', 2)
    assert doc['verdict'] == 'accept', failing(doc)
    assert doc['score']['earned'] == doc['score']['possible'] > 0


def test_a_demo_that_leaves_backprop_off_does_not_leak_into_the_checks():
    doc = grade(PATTERNS / 'demo_flips_config', 18)
    assert doc['verdict'] == 'accept', failing(doc)
    assert doc['score']['earned'] == doc['score']['possible'] > 0


def test_an_import_that_fails_in_a_step_file_is_the_reason_shown():
    doc = grade(PATTERNS / 'uninstalled_import', 9)
    assert doc['verdict'] == 'invalid' and doc['invalid']['code'] == 'import-error'
    text = doc['invalid']['message']
    assert 'graphplotter' in text and 'step09.py:3' in text
    assert 'has no' not in text


@pytest.mark.parametrize('step, graded', [(5, 'steps/step04.py'), (15, 'steps/step14.py')])
def test_a_theory_only_step_is_graded_on_the_latest_step_file_with_code(step, graded):
    # steps/step05.py holds only a comment, and there is no step15.py at all
    assert load.find_entry(PATTERNS / 'theory_only', step).path == graded
    doc = grade(PATTERNS / 'theory_only', step)
    assert doc['verdict'] == 'accept', failing(doc)
    assert doc['checks'] and all(c['status'] == 'passed' for c in doc['checks'])


def test_a_theory_only_step_file_with_code_is_graded_itself(tmp_path):
    (tmp_path / 'step04.py').write_text('raise SystemExit("not this one")\n')
    (tmp_path / 'step05.py').write_text('# state of step 4\nfrom step04 import *\n')
    assert load.find_entry(tmp_path, 5).path == 'step05.py'


def test_the_steps_without_code_are_those_the_assignments_mark():
    marked = {step for step in assignments.available_steps() if assignments.load(step).no_code}
    assert marked == set(load.NO_CODE_STEPS)


# -- Python numbers on either side of an operator (steps 21-22) ----------------------------------------
@pytest.mark.parametrize('fault_id, expression', [('sub-scalar-not-as-array', 'x - 1.0'),
                                                  ('div-scalar-not-as-array', 'x / 2.0')])
def test_an_operator_that_forgets_as_array_is_rejected_at_step_22(tmp_path, fault_id, expression):
    out, _ = _variant(tmp_path, 22, fault_id)
    doc = grade(out, 22)
    assert doc['verdict'] == 'reject'
    assert 'step22/operands' in failing(doc)
    assert expression in failing(doc)['step22/operands']


@pytest.mark.parametrize('step', [21, 22])
def test_the_reference_step_files_with_mixed_operands_are_accepted(step):
    doc = grade(reference.ROOT / 'steps', step)
    assert doc['verdict'] == 'accept', failing(doc)


# -- a step grades only what the book has introduced by then --------------------------------------------
def test_sum_is_graded_on_its_forward_at_step_39_and_its_gradient_from_step_40(tmp_path):
    # the book's Sum.backward calls broadcast_to, which arrives at step 40: a package in the state
    # of step 39 has no broadcast_to yet
    package = tmp_path / 'dezero'
    shutil.copytree(reference.ROOT / 'dezero', package, ignore=shutil.ignore_patterns('__pycache__'))
    functions = package / 'functions.py'
    functions.write_text(functions.read_text() + '\n\ndel broadcast_to   # arrives at step 40\n')
    doc = grade(tmp_path, 39)
    assert doc['verdict'] == 'accept', failing(doc)
    assert doc['score']['earned'] == doc['score']['possible'] > 0
    doc = grade(tmp_path, 40)
    assert doc['verdict'] == 'reject'
    assert {'step40/sum_grad', 'step40/broadcast_to'} <= set(failing(doc))


def test_step_14_grades_reuse_with_add_alone(tmp_path):
    # the book's step14.py defines Add and add, and no Square
    source = (reference.ROOT / 'steps' / 'step14.py').read_text()
    (tmp_path / 'step14.py').write_text(source + '\n\ndel Square, square\n')
    doc = grade(tmp_path, 14)
    assert doc['verdict'] == 'accept', failing(doc)
    assert doc['score']['earned'] == doc['score']['possible'] > 0


def test_a_mode_left_off_is_restored_on_a_settings_class_or_object(tmp_path):
    (tmp_path / 'settings.py').write_text('class Modes:\n    enable_backprop = True\n\n\nConfig = Modes()\n')
    step_file = tmp_path / 'step18.py'
    step_file.write_text('from settings import Config\n\nConfig.enable_backprop = False\n')
    sys.path.insert(0, str(tmp_path))
    try:
        module, note = _exec_single_file('step18', str(step_file))
        assert module.Config.enable_backprop is True
        assert note['restored_modes'] == ['step18.Config.enable_backprop']
    finally:
        sys.path.remove(str(tmp_path))
        for name in ('step18', 'settings'):
            sys.modules.pop(name, None)


def test_tests_written_for_pytest_count_at_step_10(tmp_path):
    doc = grade(PATTERNS / 'pytest_style', 10)
    assert doc['verdict'] == 'accept', failing(doc)
    broken = tmp_path / 'step10.py'
    broken.write_text((PATTERNS / 'pytest_style' / 'step10.py').read_text().replace(
        'assert x.grad == 6.0', 'assert x.grad == 7.0'))
    doc = grade(tmp_path, 10)
    assert doc['verdict'] == 'reject'
    assert set(failing(doc)) == {'step10/unittests'}


@pytest.mark.parametrize('step, old, new', [
    (11, 'self.inputs = inputs', 'self.args = inputs'),
    (7, 'self.output = output', 'self.result = output'),
])
def test_a_function_may_keep_its_inputs_and_outputs_under_other_names(tmp_path, step, old, new):
    source = (reference.ROOT / 'steps' / 'step{:02d}.py'.format(step)).read_text()
    assert old in source
    (tmp_path / 'step{:02d}.py'.format(step)).write_text(source.replace(old, new))
    doc = grade(tmp_path, step)
    assert doc['verdict'] == 'accept', failing(doc)


def test_a_theory_only_step_needs_the_state_of_the_step_before_it(tmp_path):
    # a step10.py is not the state of step 14: step 15 grades step14.py or nothing
    shutil.copy(reference.ROOT / 'steps' / 'step10.py', tmp_path / 'step10.py')
    (tmp_path / 'step15.py').write_text('# No code\n')
    doc = grade(tmp_path, 15)
    assert doc['verdict'] == 'invalid' and doc['invalid']['code'] == 'no-entry'
    assert 'step14.py' in doc['invalid']['message']
