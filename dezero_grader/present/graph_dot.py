"""Graph snapshots as pictures: DOT text for every check whose evidence holds a graph, with the
divergent function highlighted; SVG too where Graphviz's `dot` exists. Formats a finished
scorecard only.

The graph came from the learner's process (class names, variable names), so it is text to show,
never DOT to obey: every label is one quoted DOT string with its quotes and backslashes escaped
(a class named `x", URL="javascript:..."` stays that class's name), node ids are ours, and a
graph that is not of the recorded form is left out. `dot` is a program of the machine run on
input a learner shaped: it gets a CPU-time and a memory limit (resource limits, where the
platform has them) and a wall-clock limit, and a graph too large to lay out in that time
(`MAX_DRAWN_NODES`, `MAX_DOT_BYTES`) is written as DOT only, with a note."""
from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

from dezero_grader.present.terminal import printable
from dezero_grader.records import schema

DOT_CPU_S = 20          # CPU seconds one `dot` may use
DOT_WALL_S = 120        # ... and wall-clock seconds (a hang on a busy machine, not the budget)
DOT_MEMORY_MB = 1024
MAX_DRAWN_NODES = 2000  # functions and variables together; a larger graph is written as DOT only
MAX_DOT_BYTES = 2 * 2**20


def dot_string(text) -> str:
    """`text` as one DOT double-quoted string: shown, never obeyed (its quotes and backslashes
    escaped, so DOT's own escapes such as `\\N` or `\\l` do not apply; control characters and
    newlines written as visible escapes)."""
    shown = printable(str(text), lines=False)
    return '"' + shown.replace('\\', '\\\\').replace('"', '\\"') + '"'


def _index(value, size) -> int | None:
    """A node index of the recorded graph, or None when it is not one."""
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value < size:
        return value
    return None


def to_dot(graph, title='') -> str:
    variables = graph.get('variables') if isinstance(graph.get('variables'), list) else []
    nodes = graph.get('nodes') if isinstance(graph.get('nodes'), list) else []
    lines = ['digraph g {', '  label={};'.format(dot_string(title)), '  rankdir=LR;']
    for i, v in enumerate(variables):
        v = v if isinstance(v, dict) else {}
        name = v.get('label') or v.get('name')
        shape = v.get('shape', ())
        shape = tuple(shape) if isinstance(shape, (list, tuple)) else shape
        label = '{}{} {}'.format('{}: '.format(name) if name else '', shape, v.get('dtype', ''))
        colour = 'red' if v.get('grad_ok') is False else 'orange'
        lines.append('  v{} [label={}, color={}, style=filled];'.format(i, dot_string(label), colour))
    for k, n in enumerate(nodes):
        n = n if isinstance(n, dict) else {}
        colour = 'red' if n.get('divergent') else 'lightblue'
        lines.append('  f{} [label={}, color={}, style=filled, shape=box];'.format(
            k, dot_string('{} (gen {})'.format(n.get('type', '?'), n.get('generation', '?'))),
            colour))
        for i in n.get('inputs') or ():
            if _index(i, len(variables)) is not None:
                lines.append('  v{} -> f{};'.format(i, k))
        for o in n.get('outputs') or ():
            if _index(o, len(variables)) is not None:
                lines.append('  f{} -> v{};'.format(k, o))
    lines.append('}')
    return '\n'.join(lines) + '\n'


def _limit_dot():
    """In the `dot` child, before it runs: its CPU time and memory bounded."""
    try:
        import resource
    except ImportError:
        return
    resource.setrlimit(resource.RLIMIT_CPU, (DOT_CPU_S, DOT_CPU_S + 1))
    limit = DOT_MEMORY_MB * 2**20
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))


def render_svg(dot: str, source: Path, svg: Path) -> str | None:
    """Lay `source` out as `svg` with `dot`, within its limits; None when drawn, else why not."""
    try:
        proc = subprocess.run([dot, '-Tsvg', str(source), '-o', str(svg)], check=False,
                              stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL, timeout=DOT_WALL_S,
                              preexec_fn=_limit_dot)
    except subprocess.TimeoutExpired:
        why = 'dot ran past {} s'.format(DOT_WALL_S)
    except OSError as e:
        why = 'dot could not run ({})'.format(e.strerror or e)
    else:
        if proc.returncode == 0 and svg.exists():
            return None
        why = 'dot stopped (exit status {}; its limits are {} s of CPU time and {} MB)'.format(
            proc.returncode, DOT_CPU_S, DOT_MEMORY_MB)
    svg.unlink(missing_ok=True)
    return why


def write_all(doc, folder: Path, notes=None) -> list:
    """Write the DOT file (and SVG, where `dot` exists and the graph is small enough) of every
    graph in `doc`'s evidence into `folder`; returns the paths written. `notes` (a list) hears
    why an SVG was not drawn."""
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    dot = shutil.which('dot')
    for check in doc['checks']:
        for finding in check['evidence'].get('findings', []):
            graph = finding.get('evidence', {}).get('graph')
            if not isinstance(graph, dict):
                continue
            name = re.sub(r'[^A-Za-z0-9_.-]+', '_', check['id'])
            path = folder / (name + '.dot')
            text = to_dot(graph, check['id'])
            schema.write_text_atomic(path, text)
            written.append(path)
            size = len(graph.get('nodes') or ()) + len(graph.get('variables') or ())
            if size > MAX_DRAWN_NODES or len(text) > MAX_DOT_BYTES:
                # too large to lay out, whether or not Graphviz is installed here
                why = 'the graph has {} functions and variables, more than the {} drawn'.format(
                    size, MAX_DRAWN_NODES)
            elif not dot:
                continue
            else:
                why = render_svg(dot, path, path.with_suffix('.svg'))
            if why is None:
                written.append(path.with_suffix('.svg'))
            elif notes is not None:
                notes.append('{}: no SVG drawn ({}); the DOT file is there'.format(path.name, why))
    return written
