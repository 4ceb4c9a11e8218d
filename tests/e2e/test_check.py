"""`dezero-grade check` end to end, on real submissions: the reference, single-fault variants of
it, and broken packages. Every scorecard is validated against its schema here too."""
import json
from pathlib import Path

import pytest

from dezero_grader import reference
from dezero_grader.catalogue import assignments, faults
from dezero_grader.grading import run
from dezero_grader.intake import load
from dezero_grader.records import schema
from dezero_grader.records.status import FAILING
from dezero_grader.scoring import scorecard_write
from grade_cli import dezero_grade

REPO = Path(__file__).resolve().parents[2]
SEED = 1234


def grade(path, step, **kw):
    doc = run.grade(path, step, run.Options(seed=kw.pop('seed', SEED), **kw))
    assert schema.errors('scorecard', doc) == []
    return doc


def variant(tmp_path, step, fault_id):
    a = assignments.load(step)
    fault = {f.id: f for f in assignments.fault_catalogue(a)}[fault_id]
    base = load.prepare(reference.ROOT, step, tmp_path / 'base')
    return faults.inject(base.root, tmp_path / fault_id, fault, base.entry)


def failing(doc):
    return {c['id']: c for c in doc['checks'] if c['status'] in FAILING}


@pytest.mark.parametrize('step', [52, 55])
def test_reference_is_accepted_with_full_marks(step):
    doc = grade(reference.ROOT, step)
    assert doc['verdict'] == 'accept', failing(doc)
    assert doc['score']['earned'] == doc['score']['possible'] > 0
    assert all(c['status'] == 'passed' for c in doc['checks'])
    assert any(c['regression'] for c in doc['checks'])


def test_planted_layer_to_gpu_bug_is_rejected_by_the_check_that_targets_it(tmp_path):
    doc = grade(variant(tmp_path, 52, 'gpu-layer-shallow'), 52)
    assert doc['verdict'] == 'reject'
    bad = failing(doc)
    layer = bad['step52/device.layer']
    assert 'every parameter' in layer['message']
    assert layer['faults'][0]['id'] == 'gpu-layer-shallow'
    assert 'params()' in layer['hint']
    assert layer['repro'].startswith('# Reproduces step52/device.layer')
    # the report says where to look
    from dezero_grader.present import terminal
    text = terminal.render(doc)
    assert 'REJECT' in text and 'step52/device.layer' in text and 'hint:' in text


def test_checks_that_cannot_be_judged_earn_nothing_and_block_the_accept(tmp_path):
    # graded without a device, the device checks of step 52 are not judged: a submission whose
    # device code is broken must not be paid for them, nor called accepted
    broken = variant(tmp_path, 52, 'gpu-layer-shallow')
    doc = grade(broken, 52, device='cpu')
    skipped = [c for c in doc['checks'] if c['status'] == 'skipped']
    assert skipped and not failing(doc)
    assert doc['verdict'] == 'incomplete'
    assert all(c['earned'] == 0 for c in skipped)
    assert doc['score']['earned'] == sum(c['earned'] for c in doc['checks'])
    assert doc['score']['earned'] < doc['score']['possible']
    from dezero_grader.present import terminal
    text = terminal.render(doc)
    assert 'INCOMPLETE' in text and 'not judged here' in text
    # the same code on the simulated device is judged, and its bug found
    assert grade(broken, 52)['verdict'] == 'reject'


def test_an_earlier_steps_bug_ends_in_rollback(tmp_path):
    doc = grade(variant(tmp_path, 55, 'backward-generation-order'), 55)
    assert doc['verdict'] == 'rollback'
    assert {'step16/diamond', 'step16/deep_diamond'} <= set(failing(doc))
    assert all(c['regression'] for c in failing(doc).values())


def test_extension_tier_decides_only_under_the_extension_profile(tmp_path):
    path = variant(tmp_path, 52, 'gpu-optimizer-state-stale')
    book = grade(path, 52)
    ext = grade(path, 52, profile='extension')
    assert book['verdict'] == 'accept'
    assert book['score']['extension']['earned'] < book['score']['extension']['possible']
    assert ext['verdict'] == 'reject'
    assert 'step52/state.optimizer_follows' in failing(ext)


def test_same_submission_and_seed_give_the_same_scorecard():
    a = grade(reference.ROOT, 55)
    b = grade(reference.ROOT, 55, use_cache=False)
    assert scorecard_write.stable(a) == scorecard_write.stable(b)
    c = grade(reference.ROOT, 55, seed=SEED + 1)
    assert c['seed'] != a['seed']


def _package(tmp_path, name, init_source):
    root = tmp_path / name
    (root / 'dezero').mkdir(parents=True)
    (root / 'dezero' / '__init__.py').write_text(init_source)
    return root


@pytest.mark.parametrize('name, source, code, words', [
    ('syntax', 'def broken(:\n    pass\n', 'syntax-error', 'syntax error'),
    # a module the machine lacks is a stand-in until it is used (here at import)
    ('missing_package', 'import numpy\nimport no_such_package_anywhere\n'
     'no_such_package_anywhere.setup()\n', 'import-error', 'no_such_package_anywhere'),
    ('raises', 'raise RuntimeError("boom at import")\n', 'import-error', 'boom at import'),
    ('exits', 'import sys\nsys.exit(3)\n', 'exited', 'sys.exit'),
])
def test_broken_submissions_get_a_valid_invalid_scorecard(tmp_path, name, source, code, words):
    doc = grade(_package(tmp_path, name, source), 52)
    assert doc['verdict'] == 'invalid'
    assert doc['invalid']['code'] == code
    assert words in doc['invalid']['message']
    assert doc['checks'] == []
    assert 'Traceback' not in doc['reason']


def test_an_infinite_loop_at_import_is_stopped_and_reported(tmp_path):
    from dezero_grader.isolation.worker_process import Limits
    # one line, so that 'where it was running' cannot differ between the two runs
    root = _package(tmp_path, 'loops', 'while True: pass\n')
    doc = grade(root, 52, limits=Limits(call_s=2, total_s=10))
    assert doc['verdict'] == 'invalid'
    assert doc['invalid']['code'] == 'timeout'
    assert 'dezero/__init__.py' in doc['invalid']['message'] + doc['invalid'].get('output_tail', '')
    # graded again: the same scorecard, stack dump included (no scratch paths, no addresses)
    again = grade(root, 52, limits=Limits(call_s=2, total_s=10))
    assert scorecard_write.stable(again) == scorecard_write.stable(doc)


def test_no_entry_says_what_it_looked_for(tmp_path):
    (tmp_path / 'empty').mkdir()
    doc = grade(tmp_path / 'empty', 52)
    assert doc['verdict'] == 'invalid'
    assert doc['invalid']['code'] == 'no-entry'
    assert 'dezero' in doc['invalid']['message']


def test_monkeypatched_numpy_comparisons_do_not_change_the_verdict(tmp_path):
    path = variant(tmp_path, 52, 'gpu-layer-shallow')
    init = path / 'dezero' / '__init__.py'
    init.write_text(init.read_text() + (
        '\nimport numpy as _np\n'
        '_np.allclose = lambda *a, **k: True\n'
        '_np.array_equal = lambda *a, **k: True\n'
        '_np.testing.assert_allclose = lambda *a, **k: None\n'))
    doc = grade(path, 52)
    assert doc['verdict'] == 'reject'
    assert 'step52/device.layer' in failing(doc)


def _cli(*args, cwd=REPO):
    return dezero_grade(*args, cwd=cwd)


def test_cli_exit_codes_and_json(tmp_path):
    out = tmp_path / 'sc.json'
    ok = _cli('check', str(reference.ROOT), '--step', '55', '--json', str(out), '--seed', '7')
    assert ok.returncode == 0, ok.stderr
    assert 'ACCEPT' in ok.stdout
    doc = json.loads(out.read_text())
    assert schema.errors('scorecard', doc) == [] and doc['seed'] == 7
    bad = _cli('check', str(variant(tmp_path, 55, 'conv-outsize-off-by-one')), '--step', '55')
    assert bad.returncode == 1 and 'REJECT' in bad.stdout and 'outsize' in bad.stdout
    usage = _cli('check', str(reference.ROOT))
    assert usage.returncode == 2
    beyond = _cli('check', str(reference.ROOT), '--step', '61')
    assert beyond.returncode == 2 and 'steps run from 1 to 60' in beyond.stderr
    nowhere = _cli('check', str(REPO / 'no-such-folder'), '--step', '52')
    assert nowhere.returncode == 2 and 'no file or folder at' in nowhere.stderr   # a typo


def test_help_lists_the_commands():
    out = _cli('--help').stdout
    for command in ('list', 'check', 'batch', 'merge', 'export', 'faults', 'inject', 'selftest'):
        assert command in out


def test_inject_writes_a_variant_that_grades_like_a_submission(tmp_path):
    out = tmp_path / 'variant'
    r = _cli('inject', str(reference.ROOT), '--step', '55', '--fault', 'conv-outsize-off-by-one',
             '--out', str(out), '--as-patch')
    assert r.returncode == 0, r.stderr
    assert (out / 'dezero' / '_injected_fault.py').is_file()
    assert grade(out, 55)['verdict'] == 'reject'
    again = _cli('inject', str(reference.ROOT), '--step', '55', '--fault', 'conv-outsize-off-by-one',
                 '--out', str(out))
    assert again.returncode == 2
    unknown = _cli('inject', str(reference.ROOT), '--step', '55', '--fault', 'nope', '--out',
                   str(tmp_path / 'x'))
    assert unknown.returncode == 2 and 'no fault' in unknown.stderr


def test_inject_writes_the_fault_into_the_function_a_learner_practises_on(tmp_path):
    # it used to add a patch module beside the learner's code, whose function then read as it
    # always had (issue 23): the fault is now where the book's code is, and grades the same
    out = tmp_path / 'variant'
    r = _cli('inject', str(reference.ROOT), '--step', '52', '--fault', 'gpu-layer-shallow',
             '--out', str(out))
    assert r.returncode == 0, r.stderr
    assert 'written into your code: dezero/layers.py: Layer.to_gpu' in r.stdout
    assert not (out / 'dezero' / '_injected_fault.py').exists()
    assert (out / 'dezero' / '__init__.py').read_text() == \
        (reference.ROOT / 'dezero' / '__init__.py').read_text()
    doc = grade(out, 52)
    assert doc['verdict'] == 'reject' and 'step52/device.layer' in failing(doc)
    wraps = _cli('inject', str(reference.ROOT), '--step', '53', '--fault', 'save-device-moved',
                 '--out', str(tmp_path / 'wrapped'))
    assert wraps.returncode == 0 and 'added as a patch module' in wraps.stdout
    assert 'wraps the original Layer.save_weights' in wraps.stdout


def test_graph_dir_writes_the_divergent_node(tmp_path):
    path = variant(tmp_path, 55, 'sum-to-wrong-axes')
    r = _cli('check', str(path), '--step', '55', '--graph-dir', str(tmp_path / 'graphs'),
             '--only', 'step47/mlp_loss')
    assert r.returncode == 1
    dots = list((tmp_path / 'graphs').glob('*.dot'))
    assert dots, r.stdout
    text = dots[0].read_text()
    assert 'digraph' in text and 'color=red' in text


def test_relative_paths_work_as_a_user_types_them(tmp_path):
    """batch and check from the folder that holds the submissions, with relative paths (the
    scratch copy must be absolute: the worker runs from inside it)."""
    import shutil
    shutil.copytree(reference.ROOT / 'dezero', tmp_path / 'subs' / 'alice' / 'dezero',
                    ignore=shutil.ignore_patterns('__pycache__'))
    r = _cli('batch', 'subs', '--step', '55', '--out', 'results', '--jobs', '1', cwd=tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    card = json.loads((tmp_path / 'results' / 'scorecards' / 'alice.json').read_text())
    assert card['verdict'] == 'accept'
    r = _cli('check', 'subs/alice', '--step', '55', cwd=tmp_path)
    assert r.returncode == 0 and 'ACCEPT' in r.stdout


def test_a_failing_reference_worker_is_tried_again_and_never_blamed_on_the_learner(monkeypatch):
    from dezero_grader.grading import reference_answers
    from dezero_grader.records.dataflow import SetupFailure, WorkerRun
    real = reference_answers.observe
    calls = []

    def flaky(target, probes, **kw):
        if target.entry.get('kind') == 'reference':
            calls.append(len(probes))
            if len(calls) == 1:   # the first reference worker is killed under it
                return WorkerRun({}, None, SetupFailure('memory', 'killed'), (), '')
        return real(target, probes, **kw)

    monkeypatch.setattr(reference_answers, 'observe', flaky)
    doc = grade(reference.ROOT, 52, use_cache=False)
    assert len(calls) == 2 and doc['verdict'] == 'accept'

    def broken(target, probes, **kw):
        if target.entry.get('kind') == 'reference':
            return WorkerRun({}, None, SetupFailure('memory', 'killed'), (), '')
        return real(target, probes, **kw)

    monkeypatch.setattr(reference_answers, 'observe', broken)
    doc = grade(reference.ROOT, 52, use_cache=False)
    assert doc['verdict'] == 'invalid' and doc['invalid']['code'] == 'grader-error'
    assert 'not of the submission' in doc['reason'] and 'your code' not in doc['reason']


def test_a_course_secret_keys_the_seed_so_nobody_without_it_can_know_it(monkeypatch, tmp_path):
    # without a secret the seed follows from the code alone: anyone can compute it and record
    # answers for it in advance; with the course's secret it cannot be known beforehand
    sub = load.prepare(reference.ROOT, 52, tmp_path / 'sub').root
    monkeypatch.delenv(run.SECRET_ENV, raising=False)
    monkeypatch.delenv(run.SECRET_FILE_ENV, raising=False)
    public = run.grade(sub, 52, run.Options(only=('step52/api',)))['seed']
    assert public == run.default_seed(load.content_hash(sub))
    monkeypatch.setenv(run.SECRET_ENV, 'correct horse battery staple')
    keyed = run.grade(sub, 52, run.Options(only=('step52/api',)))
    assert keyed['seed'] != public and keyed['verdict'] == 'accept'
    assert run.grade(sub, 52, run.Options(only=('step52/api',)))['seed'] == keyed['seed']  # stable
    assert run.grade(sub, 53, run.Options(only=('step52/api',)))['seed'] != keyed['seed']  # per step
    secret_file = tmp_path / 'secret'
    secret_file.write_text('another course\n')
    monkeypatch.delenv(run.SECRET_ENV)
    monkeypatch.setenv(run.SECRET_FILE_ENV, str(secret_file))
    other = run.grade(sub, 52, run.Options(only=('step52/api',)))['seed']
    assert other not in (public, keyed['seed'])
    # --seed still reproduces any run exactly
    again = run.grade(sub, 52, run.Options(seed=keyed['seed'], only=('step52/api',)))
    assert again['seed'] == keyed['seed']


def test_the_course_secret_file_is_hidden_from_the_learners_code(monkeypatch, tmp_path):
    secret_file = tmp_path / 'course-secret'
    secret_file.write_text('s3cret-value')
    monkeypatch.setenv(run.SECRET_FILE_ENV, str(secret_file))
    sub = tmp_path / 'reader'
    (sub / 'dezero').mkdir(parents=True)
    (sub / 'dezero' / '__init__.py').write_text(
        'raise RuntimeError(open({!r}).read())\n'.format(str(secret_file)))
    doc = grade(sub, 52, seed=None)
    assert doc['verdict'] == 'invalid' and 's3cret-value' not in json.dumps(doc)
