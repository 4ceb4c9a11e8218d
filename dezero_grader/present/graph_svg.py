"""The graph of a failing gradient check, drawn as inline SVG for the HTML report.

Our own small layered layout (no Graphviz): inputs on the left, one layer per step of the data
flow, the divergent function a red box, variables whose gradient differs from the reference with
a red outline, and a `<title>` tooltip on every shape with its value and gradient summaries.
Everything drawn from the learner's graph (names, summaries) is escaped.
"""
from __future__ import annotations

import re

from dezero_grader.present.terminal import html_text as esc

_COL, _ROW, _VW, _VH, _FW, _FH, _PAD = 150, 64, 108, 38, 112, 34, 24


def layout(graph) -> dict:
    """A small layered layout, left to right in data-flow order: {('v'|'f', index): (layer,
    row)}. A function sits one layer after its latest input; a variable one after the function
    that made it, or, when nothing made it, just before its first consumer; within a layer,
    nodes are ordered by the mean row of their neighbours (two sweeps)."""
    nodes, variables = graph['nodes'], graph['variables']
    maker = {}
    for k, n in enumerate(nodes):
        for o in n['outputs']:
            maker.setdefault(o, k)
    layer = {}

    def var_layer(i, seen=()):
        key = ('v', i)
        if key not in layer:
            layer[key] = 0 if i not in maker or i in seen else fn_layer(maker[i], seen + (i,)) + 1
        return layer[key]

    def fn_layer(k, seen=()):
        key = ('f', k)
        if key not in layer:
            layer[key] = 1 + max([var_layer(i, seen) for i in nodes[k]['inputs']] or [0])
        return layer[key]

    for k in range(len(nodes)):
        fn_layer(k)
    for i in range(len(variables)):
        var_layer(i)
    for i in range(len(variables)):   # a leaf next to its first consumer
        if i not in maker:
            uses = [layer[('f', k)] for k, n in enumerate(nodes) if i in n['inputs']]
            if uses:
                layer[('v', i)] = min(uses) - 1
    edges = [(('v', i), ('f', k)) for k, n in enumerate(nodes) for i in n['inputs']] + \
            [(('f', k), ('v', o)) for k, n in enumerate(nodes) for o in n['outputs']]
    by_layer = {}
    for key in sorted(layer, key=lambda key: (key[0] == 'v', key[1])):
        by_layer.setdefault(layer[key], []).append(key)
    rows = {key: r for members in by_layer.values() for r, key in enumerate(members)}
    for _ in range(2):
        for forward in (True, False):
            for lay in sorted(by_layer, reverse=not forward):
                def mean_row(key):
                    near = [rows[a] for a, b in edges if b == key] if forward else \
                           [rows[b] for a, b in edges if a == key]
                    return sum(near) / len(near) if near else rows[key]
                by_layer[lay].sort(key=lambda key: (mean_row(key), rows[key]))
                for r, key in enumerate(by_layer[lay]):
                    rows[key] = r
    return {key: (layer[key], rows[key]) for key in layer}


def _summary_text(s) -> str:
    if not s:
        return 'not recorded'
    head = ', '.join('{:.4g}'.format(x) for x in s.get('head', []))
    more = ', ...' if s.get('size', 0) > len(s.get('head', [])) else ''
    return '[{}{}]  min {:.4g}  max {:.4g}  mean {:.4g}'.format(
        head, more, s.get('min', float('nan')), s.get('max', float('nan')),
        s.get('mean', float('nan')))


def _var_tooltip(i, v) -> str:
    shape = '({})'.format(', '.join(str(d) for d in v.get('shape', ())))
    lines = ['{} · {} {} {} on {}'.format(v.get('label') or 'v{}'.format(i), v.get('type', ''),
                                          shape, v.get('dtype', ''), v.get('device', ''))]
    if v.get('name'):
        lines.append('name (yours): {}'.format(v['name']))
    lines.append('value: ' + _summary_text(v.get('data_summary')))
    lines.append('grad: ' + (_summary_text(v['grad_summary']) if v.get('grad_summary')
                             else 'none'))
    if 'expected_grad_summary' in v:
        lines.append('reference grad: ' + _summary_text(v['expected_grad_summary']))
    if v.get('grad_ok') is False:
        lines.append('this gradient differs from the reference')
    return '\n'.join(lines)


def _arc(span) -> float:
    """How high an edge over `span` layers rises: the longer, the higher (bounded)."""
    return 0.0 if span <= 1 else min(22.0 + 14.0 * span, 110.0)


def graph_svg(graph, ident: str = 'g', divergent=None) -> str:
    """The graph as inline SVG: variables as ellipses (named, shape below), functions as boxes,
    the divergent function in red; every shape has a <title> tooltip with the values."""
    nodes, variables = graph['nodes'], graph['variables']
    if divergent is None:
        divergent = next((k for k, n in enumerate(nodes) if n.get('divergent')), None)
    pos = layout(graph)
    layers = max([lay for lay, _ in pos.values()] or [0]) + 1
    rows = max([r for _, r in pos.values()] or [0]) + 1
    edges = [(a, b) for k, n in enumerate(nodes)
             for a, b in [(('v', i), ('f', k)) for i in n['inputs']] +
             [(('f', k), ('v', o)) for o in n['outputs']] if a in pos and b in pos]
    # an edge that skips layers arcs over the nodes between: room for the highest arc on top
    top = _PAD + max([0.75 * _arc(pos[b][0] - pos[a][0]) for a, b in edges] or [0])
    width, height = layers * _COL + 2 * _PAD, rows * _ROW + _PAD + top
    marker = 'arrow-' + re.sub(r'[^A-Za-z0-9_-]+', '-', ident)

    def centre(key):
        lay, r = pos[key]
        return _PAD + lay * _COL + _VW / 2, top + r * _ROW + _VH / 2

    out = ['<svg xmlns="http://www.w3.org/2000/svg" class="graph-svg" width="{}" height="{}" '
           'viewBox="0 0 {} {}" style="width:100%;max-width:{}px;min-width:{}px;height:auto" '
           'role="img" aria-label="computational graph of {}" font-family="sans-serif" '
           'font-size="12">'.format(width, height, width, height, width, int(width * 0.7),
                                    esc(ident)),
           '<defs><marker id="{}" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="7" '
           'markerHeight="7" orient="auto-start-reverse"><path d="M0 0L10 5L0 10z" '
           'fill="#59636e"/></marker></defs>'.format(marker)]
    for a, b in edges:
        (x1, y1), (x2, y2) = centre(a), centre(b)
        span = pos[b][0] - pos[a][0]
        if span > 1:   # leave from the top, arc over what lies between, land on the top
            y1, y2 = y1 - _VH / 2 if a[0] == 'v' else y1 - _FH / 2, \
                y2 - (_VH if b[0] == 'v' else _FH) / 2
            lift = _arc(span)
            c1, c2 = (x1 + 30, y1 - lift), (x2 - 30, y2 - lift)
        else:
            x1 += (_VW if a[0] == 'v' else _FW) / 2
            x2 -= (_VW if b[0] == 'v' else _FW) / 2
            mid = (x1 + x2) / 2
            c1, c2 = (mid, y1), (mid, y2)
        out.append('<path d="M{:.1f} {:.1f}C{:.1f} {:.1f} {:.1f} {:.1f} {:.1f} {:.1f}" '
                   'fill="none" stroke="#8c959f" stroke-width="1.3" marker-end="url(#{})"/>'
                   .format(x1, y1, c1[0], c1[1], c2[0], c2[1], x2, y2, marker))
    for i, v in enumerate(variables):
        if ('v', i) not in pos:
            continue
        x, y = centre(('v', i))
        bad = v.get('grad_ok') is False
        label = v.get('label') or 'v{}'.format(i)
        shape = '({})'.format(', '.join(str(d) for d in v.get('shape', ())))
        out.append('<g class="var{}" data-var="{}"><title>{}</title>'
                   '<ellipse cx="{:.1f}" cy="{:.1f}" rx="{}" ry="{}" fill="#fff1e0" stroke="{}" '
                   'stroke-width="{}"/>'
                   '<text x="{:.1f}" y="{:.1f}" text-anchor="middle" font-weight="600">{}</text>'
                   '<text x="{:.1f}" y="{:.1f}" text-anchor="middle" fill="#59636e" '
                   'font-size="10.5">{}</text></g>'.format(
                       ' wrong-grad' if bad else '', i, esc(_var_tooltip(i, v)), x, y, _VW / 2,
                       _VH / 2, '#cf222e' if bad else '#d4a373', 2.2 if bad else 1.2,
                       x, y - 2, esc(label[:16]), x, y + 12, esc(shape[:18])))
    for k, n in enumerate(nodes):
        x, y = centre(('f', k))
        is_div = k == divergent
        tip = '{} (node {}, generation {})\ninputs: {}\noutputs: {}'.format(
            n['type'], k, n.get('generation', ''),
            ', '.join((variables[i].get('label') or 'v{}'.format(i)) for i in n['inputs']
                      if i < len(variables)),
            ', '.join((variables[o].get('label') or 'v{}'.format(o)) for o in n['outputs']
                      if o < len(variables)))
        if is_div:
            tip += ('\nDIVERGENT: receives the right output gradient but produces a wrong input '
                    'gradient: look at {}.backward'.format(n['type']))
        out.append('<g class="fn{}" data-node="{}"{}><title>{}</title>'
                   '<rect x="{:.1f}" y="{:.1f}" width="{}" height="{}" rx="4" fill="{}" '
                   'stroke="{}" stroke-width="{}"/>'
                   '<text x="{:.1f}" y="{:.1f}" text-anchor="middle" fill="{}" '
                   'font-weight="600" font-size="{}">{}</text>{}</g>'.format(
                       ' divergent' if is_div else '', k,
                       ' data-divergent="true"' if is_div else '', esc(tip),
                       x - _FW / 2, y - _FH / 2, _FW, _FH, '#cf222e' if is_div else '#ddf4ff',
                       '#82071e' if is_div else '#54aeff', 3 if is_div else 1.2, x, y + 4,
                       '#fff' if is_div else '#0a3069', 12 if len(str(n['type'])) <= 13 else 9.5,
                       esc(str(n['type'])[:20]),
                       '<text x="{:.1f}" y="{:.1f}" text-anchor="middle" fill="#cf222e" '
                       'font-size="10.5" font-weight="600">backward goes wrong here</text>'.format(
                           x, y + _FH / 2 + 13) if is_div else ''))
    out.append('</svg>')
    return ''.join(out)


MAX_DRAWN = 200   # functions and variables together; a larger graph is described, not drawn


def graph_figure(graph, ident, divergent=None) -> str:
    size = len(graph.get('nodes', ())) + len(graph.get('variables', ()))
    if size > MAX_DRAWN:
        return '<p class="meta">the graph has {} functions and variables, too many to draw here; ' \
               '--graph-dir writes it as a DOT file</p>'.format(size)
    return ('<figure class="graph-figure"><div class="graph">{}</div><figcaption class="legend">'
            'The graph your code built, inputs on the left. Boxes are functions, ellipses '
            'variables; <b style="color:#cf222e">red box</b>: the function whose backward goes '
            'wrong (its output gradient agrees with the reference, its input gradient does not); '
            'red outline: a gradient that differs from the reference. Hover over a shape for its '
            'values.</figcaption></figure>'.format(graph_svg(graph, ident, divergent)))
