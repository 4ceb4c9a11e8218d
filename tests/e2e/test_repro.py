"""Every reproduction runs as given: the snippet of a failing check, written as a file by
`check --repro-dir`, run with `python repro_<check>.py` from a folder it does not name, reproduces
the failure against the submission's own code (exit status 1, the check's failing sub-checks
printed with what was expected and what was found), and exits 0 once the code is fixed.

What it covers. Grading every fault of every step and running each of its ~2,200 snippets takes
hours, so this runs selftest's single-fault variants of the steps that together use every check
kind with a scenario, a reference comparison or a gradient: step 9 (api.present, expect,
grad.early on a step file), 22 (grad.early, expect: operators), 40 (grad.battery,
graph.trajectory), 45 (reference.match: layers), 50 (data.loader), 52 (grad.battery and
scenarios on the device, data.loader), 54 (dropout.statistics, reference.match of modes) and 60
(data.seqloader, reference.match of recurrent networks). For each, every fault the step itself
introduces is injected into the reference and graded, and the snippet of EVERY check that fails
is run (earlier steps' faults are covered at their own steps): about 120 snippets, whose checks
are of all nine kinds (api.present, data.loader, data.seqloader, dropout.statistics, expect,
grad.battery, grad.early, graph.trajectory, reference.match); about five minutes on two cores,
hence `slow` (CI runs it). The quick test (not slow) does
the same for step 9 and for step 52's device-array fault, whose matmul snippet was once an 11 KB
literal that did not run.
"""
import os
import sys
from pathlib import Path

import pytest

from dezero_grader.catalogue import assignments, faults
from dezero_grader.grading import repro_snippets, run
from dezero_grader.intake import load
from dezero_grader.proof import selftest
from dezero_grader.records.status import FAILING
from grade_cli import run_to_end

SEED = 2026
REPO = Path(__file__).resolve().parents[2]


def _variants(step, only=None):
    catalogue = assignments.fault_catalogue(assignments.load(step))
    return [f for f in catalogue if f.step == step and (only is None or f.id in only)]


def _grade_and_write(step, fault, work, monkeypatch):
    """Inject `fault`, grade it from `work` (the folder the learner runs the grader in), write
    the snippets to work/snippets/<fault>; returns (failing check ids, snippet paths)."""
    monkeypatch.chdir(work)
    base = load.prepare(selftest.reference_source(step), step, work / 'base' / fault.id)
    variant = faults.inject(base.root, work / 'variants' / fault.id, fault, base.entry)
    profile = 'extension' if fault.tier == 'extension' else 'book'
    doc = run.grade(Path(os.path.relpath(variant, work)), step,
                    run.Options(seed=SEED, profile=profile))
    failing = sorted(c['id'] for c in doc['checks'] if c['status'] in FAILING)
    written = repro_snippets.write_all(doc, work / 'snippets' / fault.id, variant)
    return doc, failing, written


def _run_snippet(path, cwd):
    env = dict(os.environ, PYTHONPATH=str(REPO))
    env.pop(repro_env(), None)
    return run_to_end([sys.executable, str(path)], cwd=cwd, env=env, capture_output=True,
                      text=True)


def repro_env():
    from dezero_grader.grading.rerun import SUBMISSION_ENV
    return SUBMISSION_ENV


def _check_step(step, tmp_path, monkeypatch, only=None, kinds=None):
    elsewhere = tmp_path / 'elsewhere'
    elsewhere.mkdir()
    problems, ran = [], 0
    uses = {u.id: u.check for u in sum(run.checks_of(assignments.load(step)), ())}
    for fault in _variants(step, only):
        doc, failing, written = _grade_and_write(step, fault, tmp_path, monkeypatch)
        assert failing, 'fault {} made no check fail'.format(fault.id)
        assert sorted(p.name for p in written) == sorted(repro_snippets.file_name(c) for c in failing)
        for path in written:
            text = path.read_text()
            assert str(tmp_path) not in text, 'an absolute path in {}'.format(path.name)
            assert len(text) < 2000, '{} is {} bytes'.format(path.name, len(text))
            proc = _run_snippet(path, elsewhere)
            ran += 1
            check_id = next(c for c in failing if repro_snippets.file_name(c) == path.name)
            if kinds is not None:
                kinds.add(uses[check_id])
            if proc.returncode != 1 or 'REPRODUCED' not in proc.stdout or \
                    check_id not in proc.stdout:
                problems.append('{} / {}: exit {}\n{}\n{}'.format(
                    fault.id, check_id, proc.returncode, proc.stdout[-1500:], proc.stderr[-1500:]))
    assert not problems, '{} of {} snippets did not reproduce:\n'.format(
        len(problems), ran) + '\n\n'.join(problems[:5])
    return ran


def test_step9_snippets_reproduce_from_any_folder(tmp_path, monkeypatch):
    assert _check_step(9, tmp_path, monkeypatch) >= 5


def test_device_matmul_snippet_is_short_and_reproduces(tmp_path, monkeypatch):
    fault = _variants(52, only={'gpu-as-array-rejects-device'})[0]
    doc, failing, written = _grade_and_write(52, fault, tmp_path, monkeypatch)
    path = next(p for p in written if p.name == repro_snippets.file_name('step52/device.fn.matmul'))
    elsewhere = tmp_path / 'elsewhere'
    elsewhere.mkdir()
    proc = _run_snippet(path, elsewhere)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert 'REPRODUCED' in proc.stdout and 'TypeError' in proc.stdout
    # the learner's own file and line, where their code raised
    assert 'dezero/_injected_fault.py' in proc.stdout
    # the folder can also be given on the command line, or in the environment
    proc = run_to_end([sys.executable, str(path), str(tmp_path / 'variants' / fault.id)],
                      cwd=elsewhere, capture_output=True, text=True,
                      env=dict(os.environ, PYTHONPATH=str(REPO)))
    assert proc.returncode == 1, proc.stdout + proc.stderr
    # the scorecard's own snippet names the submission, not where it was stored: saved beside
    # it (or inside it), it finds it from any folder
    check = next(c for c in doc['checks'] if c['id'] == 'step52/device.fn.matmul')
    for saved in (tmp_path / 'variants' / 'repro.py', tmp_path / 'variants' / fault.id / 'repro.py'):
        saved.write_text(check['repro'])
        proc = _run_snippet(saved, elsewhere)
        assert proc.returncode == 1 and 'REPRODUCED' in proc.stdout, proc.stdout + proc.stderr
        saved.unlink()


def test_snippet_of_fixed_code_exits_0_and_missing_folder_exits_2(tmp_path, monkeypatch):
    fault = _variants(9, only={'square-backward-ignores-gy'})[0]
    doc, failing, written = _grade_and_write(9, fault, tmp_path, monkeypatch)
    path = next(p for p in written if p.name == repro_snippets.file_name('step09/square'))
    fixed_root = load.prepare(selftest.reference_source(9), 9, tmp_path / 'fixed').root
    proc = run_to_end([sys.executable, str(path), str(fixed_root)], cwd=tmp_path,
                      capture_output=True, text=True,
                      env=dict(os.environ, PYTHONPATH=str(REPO)))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert 'not reproduced' in proc.stdout
    proc = run_to_end([sys.executable, str(path), str(tmp_path / 'nowhere')], cwd=tmp_path,
                      capture_output=True, text=True,
                      env=dict(os.environ, PYTHONPATH=str(REPO)))
    assert proc.returncode == 2 and 'no submission at' in proc.stderr


@pytest.mark.slow
@pytest.mark.parametrize('step', [22, 40, 45, 50, 52, 54, 60])
def test_every_failing_check_of_a_step_reproduces(step, tmp_path, monkeypatch):
    kinds = set()
    ran = _check_step(step, tmp_path, monkeypatch, kinds=kinds)
    print('step {}: {} snippets of {} faults reproduced ({})'.format(
        step, ran, len(_variants(step)), ', '.join(sorted(kinds))))
    assert ran > 0


def test_a_folder_name_cannot_add_code_to_a_snippet(tmp_path, monkeypatch):
    """A folder name is learner text: in the snippet it is a string literal and, in comments,
    it holds no line break that would start a line of code."""
    import ast
    from types import SimpleNamespace
    monkeypatch.chdir(tmp_path)
    use = next(u for u in assignments.load(9).checks if u.id == 'step09/square')
    name = 'mine\nimport os; os.system("echo pwned")\n# '
    sub = SimpleNamespace(id=name, source=Path(name), entry=SimpleNamespace(
        kind='single-file', path=name + '/step09.py'))
    text = repro_snippets.repro_for(use, 1, sub, 9)
    body = ast.parse(text).body
    assert [type(n).__name__ for n in body] == ['Import', 'Assign', 'Try', 'Expr']
    assert ast.literal_eval(body[1].value) == name
    header = text.split('import sys\n')[0].splitlines()
    assert header and all(line.startswith('# ') for line in header)
