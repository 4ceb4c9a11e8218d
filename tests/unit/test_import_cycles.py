"""No import circles on the trusted side. Data flows one way (submission -> observations ->
verdicts -> scorecard -> readers, `docs/architecture.md`): no package of `dezero_grader` imports
one that imports it back, nor any module one that imports it back, not even through an import
put off to call time. Read from the source (ast), nothing imported; the sandboxed side has its
own rule (`test_layout.py`)."""
import ast
from pathlib import Path

PACKAGE = 'dezero_grader'
ROOT = Path(__file__).resolve().parents[2] / PACKAGE


def module_name(path: Path, root: Path, top: str) -> str:
    parts = list(path.relative_to(root).with_suffix('').parts)
    if parts[-1] == '__init__':
        parts.pop()
    return '.'.join([top] + parts)


def imports_of(path: Path, module: str, top: str):
    """(line, name) for every name of package `top` that a file imports, at module level or
    inside a function; `from a import b` names both `a` and `a.b` (b may be a module)."""
    here = module.split('.') if path.name == '__init__.py' else module.split('.')[:-1]
    for node in ast.walk(ast.parse(path.read_text(encoding='utf-8'), str(path))):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = '.'.join(here[:len(here) - node.level + 1] + ([node.module] if node.module else []))
            else:
                base = node.module or ''
            names = [base] + ['{}.{}'.format(base, a.name) for a in node.names]
        else:
            continue
        for name in names:
            if name == top or name.startswith(top + '.'):
                yield node.lineno, name


def module_graph(root: Path, top: str, exclude=('sandboxed',)) -> dict:
    """module -> {imported module: 'file:line' of the first import}, for the modules under `root`
    (the folder of package `top`) outside the `exclude`d subpackages. A name resolves to the
    longest module it starts with; a module's own ancestor packages are left out (importing a
    module runs them, whoever asks)."""
    files = {}
    for path in sorted(root.rglob('*.py')):
        rel = path.relative_to(root).parts
        if '__pycache__' in rel or (len(rel) > 1 and rel[0] in exclude):
            continue
        files[module_name(path, root, top)] = path
    skipped = {'{}.{}'.format(top, e) for e in exclude}

    def resolve(name):
        parts = name.split('.')
        for i in range(len(parts), 0, -1):
            candidate = '.'.join(parts[:i])
            if candidate in files:
                return candidate
        return None

    graph = {}
    for module, path in files.items():
        edges = graph.setdefault(module, {})
        for line, name in imports_of(path, module, top):
            if any(name == s or name.startswith(s + '.') for s in skipped):
                continue
            target = resolve(name)
            if target is None or target == module or module.startswith(target + '.'):
                continue
            edges.setdefault(target, '{}:{}'.format(path.relative_to(root.parent), line))
    return graph


def package_graph(graph: dict, top: str) -> dict:
    """The same graph between the parts of the top level: each subpackage (`top.grading`) or
    top-level module (`top.cli`) as one node; a part's modules import one another freely."""
    def part(name):
        return '.'.join(name.split('.')[:2])
    out = {}
    for module, edges in graph.items():
        mine = out.setdefault(part(module), {})
        for target, where in edges.items():
            if part(target) != part(module):
                mine.setdefault(part(target), where)
    return out


def circles(graph: dict) -> list:
    """The strongly connected groups of more than one node (Tarjan's algorithm, iterative), each
    sorted, in sorted order."""
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
    return sorted(out)


def described(graph: dict) -> str:
    """Each circle, with the import that makes each of its edges (file:line)."""
    lines = []
    for group in circles(graph):
        lines.append('import circle: ' + ' <-> '.join(group))
        for a in group:
            for b in sorted(set(graph[a]) & set(group)):
                lines.append('    {} -> {}  ({})'.format(a, b, graph[a][b]))
    return '\n'.join(lines)


def test_no_circle_among_the_packages_of_the_trusted_side():
    graph = package_graph(module_graph(ROOT, PACKAGE), PACKAGE)
    assert circles(graph) == [], described(graph)


def test_no_circle_among_the_modules_of_the_trusted_side():
    graph = module_graph(ROOT, PACKAGE)
    assert circles(graph) == [], described(graph)


def test_the_graph_is_the_real_one():
    """The rule reads real edges: the pipeline scores, the readers read scorecards, nothing of the
    sandboxed side is in it."""
    graph = package_graph(module_graph(ROOT, PACKAGE), PACKAGE)
    assert {PACKAGE + '.scoring', PACKAGE + '.isolation'} <= set(graph[PACKAGE + '.grading'])
    assert PACKAGE + '.scoring' in graph[PACKAGE + '.present']
    assert not any('sandboxed' in n for n in graph)
    assert not any('sandboxed' in t for edges in graph.values() for t in edges)


def test_a_circle_through_an_import_inside_a_function_is_found_and_named(tmp_path):
    top = tmp_path / 'fakepkg'
    files = {
        '__init__.py': '',
        'cli.py': 'from fakepkg.grading import run\n',
        'grading/__init__.py': '',
        'grading/run.py': 'from fakepkg.scoring import score\nfrom . import seeds\n',
        'grading/seeds.py': '',
        'scoring/__init__.py': '"""scoring"""\n',
        # the circle: scoring reaches back up into the pipeline, put off to call time, relatively
        'scoring/score.py': 'import os\n\n\ndef f():\n    from ..grading import seeds\n    return os\n',
        'sandboxed/__init__.py': 'from fakepkg import cli\n',   # left out, as the real one is
    }
    for rel, text in files.items():
        (top / rel).parent.mkdir(parents=True, exist_ok=True)
        (top / rel).write_text(text, encoding='utf-8')
    graph = package_graph(module_graph(top, 'fakepkg'), 'fakepkg')
    assert circles(graph) == [['fakepkg.grading', 'fakepkg.scoring']]
    message = described(graph)
    assert 'fakepkg.grading <-> fakepkg.scoring' in message
    assert 'fakepkg/scoring/score.py:5' in message and 'fakepkg/grading/run.py:1' in message
    modules = module_graph(top, 'fakepkg')
    assert circles(modules) == []   # seeds imports nothing: a circle of the packages only
    # without the put-off import there is none
    (top / 'scoring' / 'score.py').write_text('import os\n', encoding='utf-8')
    assert circles(package_graph(module_graph(top, 'fakepkg'), 'fakepkg')) == []


def test_a_circle_between_modules_of_one_package_is_found(tmp_path):
    top = tmp_path / 'fakepkg'
    (top / 'grading').mkdir(parents=True)
    (top / '__init__.py').write_text('', encoding='utf-8')
    # a package's __init__ importing its own module is no circle; two modules importing each
    # other are one
    (top / 'grading' / '__init__.py').write_text('from fakepkg.grading import run\n', encoding='utf-8')
    (top / 'grading' / 'run.py').write_text('from fakepkg.grading import observe\n', encoding='utf-8')
    (top / 'grading' / 'observe.py').write_text('def f():\n    import fakepkg.grading.run\n',
                                               encoding='utf-8')
    graph = module_graph(top, 'fakepkg')
    assert circles(graph) == [['fakepkg.grading.observe', 'fakepkg.grading.run']]
    assert circles(package_graph(graph, 'fakepkg')) == []
