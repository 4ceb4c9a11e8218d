"""Which side of the sandbox a module runs on is visible in the layout, and the imports keep the
two sides apart (the rule is written in `grader/sandboxed/__init__.py`)."""
import ast
import os
import subprocess
import sys
from pathlib import Path

import pytest

GRADER = Path(__file__).resolve().parents[2] / 'grader'
SANDBOXED = GRADER / 'sandboxed'
SHARED = ('grader.wire', 'grader.errors', 'grader.contracts')
# runs the learner's code in the learner's own process, on purpose (repro snippets)
TRUSTED_EXCEPTIONS = {'grader/reproduce.py'}


def _grader_imports(path: Path):
    """(line, module) for every import of a grader module in a file, wherever it sits (module
    level or inside a function)."""
    package = '.'.join(path.relative_to(GRADER.parent).with_suffix('').parts[:-1])
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.rsplit('.', node.level - 1)[0] if node.level > 1 else package
                mod = base + ('.' + node.module if node.module else '')
            else:
                mod = node.module or ''
            names = [mod] + ['{}.{}'.format(mod, a.name) for a in node.names]
        else:
            continue
        for name in names:
            if name == 'grader' or name.startswith('grader.'):
                yield node.lineno, name


def _modules(root, exclude=None):
    return sorted(p for p in root.rglob('*.py') if exclude is None or exclude not in p.parents)


def _is_sandboxed(name):
    return name == 'grader.sandboxed' or name.startswith('grader.sandboxed.')


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
           if not (_is_sandboxed(name) or name == 'grader'
                   or any(name == s or name.startswith(s + '.') for s in SHARED))]
    assert not bad


def test_the_rule_sees_an_import_hidden_inside_a_function(tmp_path):
    probe = GRADER / '_layout_probe_tmp.py'
    probe.write_text('def f():\n    from grader.sandboxed.probes import handlers\n'
                     'from .sandboxed import worker\n')
    try:
        found = [name for _, name in _grader_imports(probe)]
    finally:
        probe.unlink()
    assert 'grader.sandboxed.probes' in found and 'grader.sandboxed.worker' in found


def test_grading_a_submission_imports_no_sandboxed_module_into_the_trusted_process():
    """The same rule at run time: a whole grading (reference and learner workers, judging,
    scoring, the scorecard) leaves `grader.sandboxed` out of the grading process."""
    code = ('import sys\n'
            'from grader import run\n'
            'from grader.sandbox import Limits\n'
            'doc = run.grade("reference", 1, run.Options(device="sim", seed=3, use_cache=False))\n'
            'assert doc["verdict"] == "accept", doc["verdict"]\n'
            'print(sorted(m for m in sys.modules if m.startswith("grader.sandboxed")))\n')
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(GRADER.parent)] + sys.path))
    out = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True, env=env,
                         timeout=300, cwd=str(GRADER.parent))
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().splitlines()[-1] == '[]'
