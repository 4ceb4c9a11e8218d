"""Which side of the sandbox a module runs on is visible in the layout, and the imports keep the
two sides apart (the rule is written in `dezero_grader/sandboxed/__init__.py`); the trusted side
is laid out by role, its top level kept to the command line and the shared declarations
(`docs/architecture.md`). No import circles: `test_import_cycles.py`."""
import collections
import os
import sys
from pathlib import Path

import pytest

from grade_cli import run_to_end
from test_import_cycles import imports_of, module_name

GRADER = Path(__file__).resolve().parents[2] / 'dezero_grader'
SANDBOXED = GRADER / 'sandboxed'
SHARED = ('dezero_grader.wire', 'dezero_grader.errors', 'dezero_grader.contracts')
# runs the learner's code in the learner's own process, on purpose (repro snippets)
TRUSTED_EXCEPTIONS = {'dezero_grader/grading/rerun.py'}


def _grader_imports(path: Path):
    """(line, module) for every import of a grader module in a file, wherever it sits (module
    level or inside a function)."""
    return imports_of(path, module_name(path, GRADER, 'dezero_grader'), 'dezero_grader')


def _modules(root, exclude=None):
    return sorted(p for p in root.rglob('*.py') if exclude is None or exclude not in p.parents)


def _is_sandboxed(name):
    return name == 'dezero_grader.sandboxed' or name.startswith('dezero_grader.sandboxed.')


@pytest.mark.parametrize('path', _modules(GRADER, exclude=SANDBOXED),
                         ids=lambda p: str(p.relative_to(GRADER.parent)))
def test_a_trusted_module_imports_nothing_that_runs_in_the_sandbox(path):
    rel = str(path.relative_to(GRADER.parent))
    bad = ['{}:{} imports {}'.format(rel, line, name) for line, name in _grader_imports(path)
           if _is_sandboxed(name)]
    if rel in TRUSTED_EXCEPTIONS:
        return
    assert not bad


@pytest.mark.parametrize('path', _modules(SANDBOXED), ids=lambda p: str(p.relative_to(GRADER.parent)))
def test_sandboxed_code_imports_only_its_own_side_and_the_shared_declarations(path):
    rel = str(path.relative_to(GRADER.parent))
    bad = ['{}:{} imports {}'.format(rel, line, name) for line, name in _grader_imports(path)
           if not (_is_sandboxed(name) or name == 'dezero_grader'
                   or any(name == s or name.startswith(s + '.') for s in SHARED))]
    assert not bad


def test_the_rule_sees_an_import_hidden_inside_a_function(tmp_path):
    probe = GRADER / '_layout_probe_tmp.py'
    probe.write_text('def f():\n    from dezero_grader.sandboxed.probes import handlers\n'
                     'from .sandboxed import worker\n')
    try:
        found = [name for _, name in _grader_imports(probe)]
    finally:
        probe.unlink()
    assert 'dezero_grader.sandboxed.probes' in found and 'dezero_grader.sandboxed.worker' in found


def test_grading_a_submission_imports_no_sandboxed_module_into_the_trusted_process():
    """The same rule at run time: a whole grading (reference and learner workers, judging,
    scoring, the scorecard) leaves `dezero_grader.sandboxed` out of the grading process."""
    code = ('import sys\n'
            'from dezero_grader.grading import run\n'
            'from dezero_grader.isolation.worker_process import Limits\n'
            'doc = run.grade("reference", 1, run.Options(device="sim", seed=3, use_cache=False))\n'
            'assert doc["verdict"] == "accept", doc["verdict"]\n'
            'print(sorted(m for m in sys.modules if m.startswith("dezero_grader.sandboxed")))\n')
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(GRADER.parent)] + sys.path))
    out = run_to_end([sys.executable, '-c', code], capture_output=True, text=True, env=env,
                     cwd=str(GRADER.parent))
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().splitlines()[-1] == '[]'


# -- the trusted side by role ----------------------------------------------------------------------

# the top level: the command line and the declarations shared with the sandboxed side; every other
# module lives in the package of its role, so that the flat layout cannot grow back
TOP_MODULES = {'__init__', '__main__', 'cli', 'commands', 'errors', 'wire'}
ROLE_PACKAGES = {'batch', 'catalogue', 'checks', 'contracts', 'export', 'grading', 'history',
                 'i18n', 'intake', 'isolation', 'present', 'proof', 'records', 'sandboxed', 'scoring'}


def test_the_top_level_holds_only_the_command_line_and_the_shared_declarations():
    modules = {p.stem for p in GRADER.glob('*.py')}
    assert modules <= TOP_MODULES, (
        'put {} into the package of its role (docs/architecture.md)'.format(sorted(modules - TOP_MODULES)))


def test_every_package_of_the_top_level_is_a_role_the_architecture_names():
    packages = {p.name for p in GRADER.iterdir() if (p / '__init__.py').is_file()}
    assert packages <= ROLE_PACKAGES, sorted(packages - ROLE_PACKAGES)
    architecture = (GRADER.parent / 'docs' / 'architecture.md').read_text(encoding='utf-8')
    assert [p for p in sorted(packages) if '`{}/`'.format(p) not in architecture] == []


# the builtins a comparison is made of: a submission may patch them (tests/hostile/test_forging.py
# patches both to agree with every caller in dezero_grader), so code of the worker never calls
# them by their bare name, which Python looks up in the builtins at each call
PATCHABLE_BUILTINS = ('all', 'any')


@pytest.mark.parametrize('path', _modules(SANDBOXED), ids=lambda p: str(p.relative_to(GRADER.parent)))
def test_code_of_the_worker_calls_no_builtin_a_submission_can_patch(path):
    import ast
    tree = ast.parse(path.read_text(encoding='utf-8'))
    own = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    calls = ['{}:{} calls {}()'.format(path.relative_to(GRADER.parent), n.lineno, n.func.id)
             for n in ast.walk(tree)
             if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)
             and n.func.id in PATCHABLE_BUILTINS and n.func.id not in own]
    assert not calls, ('take the builtin before learner code runs (`_all = all` at import), or '
                       'write a loop: ' + '; '.join(calls))


def test_no_two_test_files_share_a_name():
    """The tests are not packages: pytest imports each file by its base name, so two files of one
    name in two folders break collection on whichever process meets both."""
    tests = Path(__file__).resolve().parents[1]
    names = collections.Counter(p.name for p in tests.rglob('test_*.py'))
    assert not [name for name, n in names.items() if n > 1]
