"""Which side of the sandbox a module runs on is visible in the layout, and the imports keep the
two sides apart (the rule is written in `grader/sandboxed/__init__.py`)."""
import ast
import os
import sys
from pathlib import Path

import pytest

from grade_cli import run_to_end

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
    out = run_to_end([sys.executable, '-c', code], capture_output=True, text=True, env=env,
                     cwd=str(GRADER.parent))
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().splitlines()[-1] == '[]'


# -- no import circles on the trusted side ---------------------------------------------------------

def _module_name(path: Path) -> str:
    parts = path.relative_to(GRADER.parent).with_suffix('').parts
    return '.'.join(parts[:-1] if parts[-1] == '__init__' else parts)


def _unit(name: str) -> str:
    """The part of the trusted side a module belongs to: its package below grader (grader.batch,
    grader.export, ...) or the module itself (grader.run); a package's modules import one
    another and their package freely."""
    return '.'.join(name.split('.')[:2])


def _import_graph(root: Path) -> dict:
    """unit -> the units it imports, at module level or inside a function (an import put off to
    call time still ties the two together); the sandboxed side is left out (its own rule is
    above)."""
    graph = {}
    for path in _modules(root, exclude=SANDBOXED):
        unit = _unit(_module_name(path))
        graph.setdefault(unit, set()).update(
            _unit(n) for _, n in _grader_imports(path) if n != 'grader' and not _is_sandboxed(n))
    return {u: targets - {u} for u, targets in graph.items()}


def _circles(graph: dict) -> list:
    """The strongly connected groups of more than one module (Tarjan's algorithm, iterative)."""
    index, low, stack, on, out = {}, {}, [], set(), []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on.add(start)
        while work:
            node, edges = work[-1]
            nxt = next((w for w in edges if w in graph), None)
            if nxt is not None:
                if nxt not in index:
                    index[nxt] = low[nxt] = len(index)
                    stack.append(nxt)
                    on.add(nxt)
                    work.append((nxt, iter(sorted(graph[nxt]))))
                elif nxt in on:
                    low[node] = min(low[node], index[nxt])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                group = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    group.append(w)
                    if w == node:
                        break
                if len(group) > 1:
                    out.append(sorted(group))
    return out


def test_no_import_circles_among_the_grader_modules():
    """Data flows one way (submission -> observations -> verdicts -> scorecard -> exporters); a
    module that imports one downstream of it, even inside a function, is a circle."""
    circles = _circles(_import_graph(GRADER))
    assert circles == [], '\n'.join(
        'import circle: ' + ' <-> '.join(group) for group in circles)


def test_the_circle_rule_finds_a_circle_made_inside_functions():
    graph = {'grader.a': {'grader.b'}, 'grader.b': {'grader.c'}, 'grader.c': {'grader.a'},
             'grader.d': {'grader.a'}}
    assert _circles(graph) == [['grader.a', 'grader.b', 'grader.c']]
    probe = GRADER / '_circle_probe_tmp.py'
    # seeds is imported by run; a seeds that reached back up into run would close a circle
    probe.write_text('def f():\n    from grader import run\n')
    try:
        graph = _import_graph(GRADER)
        assert graph['grader._circle_probe_tmp'] == {'grader.run'}
        graph['grader.seeds'] = graph['grader.seeds'] | {'grader._circle_probe_tmp'}
        assert any({'grader.seeds', 'grader.run', 'grader._circle_probe_tmp'} <= set(g)
                   for g in _circles(graph))
    finally:
        probe.unlink()
