"""Graph snapshots as pictures: DOT text for every check whose evidence holds a graph, with the
divergent function highlighted; SVG too where Graphviz's `dot` exists. Formats a finished
scorecard only."""
from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path


def to_dot(graph, title='') -> str:
    lines = ['digraph g {', '  label="{}";'.format(title.replace('"', "'")), '  rankdir=LR;']
    for i, v in enumerate(graph['variables']):
        name = v.get('label') or v.get('name')
        label = '{}{} {}'.format(name + ': ' if name else '', tuple(v.get('shape', ())),
                                 v.get('dtype', '')).replace('\\', '\\\\').replace('"', "'")
        colour = 'red' if v.get('grad_ok') is False else 'orange'
        lines.append('  v{} [label="{}", color={}, style=filled];'.format(i, label, colour))
    for k, n in enumerate(graph['nodes']):
        colour = 'red' if n.get('divergent') else 'lightblue'
        lines.append('  f{} [label="{} (gen {})", color={}, style=filled, shape=box];'.format(
            k, n['type'], n['generation'], colour))
        for i in n['inputs']:
            lines.append('  v{} -> f{};'.format(i, k))
        for o in n['outputs']:
            lines.append('  f{} -> v{};'.format(k, o))
    lines.append('}')
    return '\n'.join(lines) + '\n'


def write_all(doc, folder: Path) -> list:
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    dot = shutil.which('dot')
    for check in doc['checks']:
        for finding in check['evidence'].get('findings', []):
            graph = finding.get('evidence', {}).get('graph')
            if not graph:
                continue
            name = re.sub(r'[^A-Za-z0-9_.-]+', '_', check['id'])
            path = folder / (name + '.dot')
            path.write_text(to_dot(graph, check['id']), encoding='utf-8')
            written.append(path)
            if dot:
                svg = path.with_suffix('.svg')
                subprocess.run([dot, '-Tsvg', str(path), '-o', str(svg)], check=False)
                if svg.exists():
                    written.append(svg)
    return written
