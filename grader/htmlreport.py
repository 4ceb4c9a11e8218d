"""The HTML report: a finished scorecard (or a batch) as one self-contained page.

Reads finished documents only, as the terminal report does (never recomputes anything): verdict
and score first, the reason, the root causes where the scorecard names them, the compatibility
findings, each failing check with its message, evidence, hint, matched fault, reproduction and
the graph of a failing gradient check drawn as inline SVG; passing checks collapsed. The class
page of a batch shows the score distribution, the root causes, the pass rate per check, the
ungradable submissions and one row per submission linking to its own page.

One file, nothing loaded from anywhere: the CSS is inline, there is no script, and a Content
Security Policy forbids every outside load. Everything a learner's code produced (messages,
names, output) is escaped: it is shown, never obeyed.
"""
from __future__ import annotations

import html
import re
import urllib.parse
from pathlib import Path

from grader import schema
from grader import report
from grader.record import CheckRecord, Scorecard
from grader.report import printable

_VERDICT_COLOURS = {'accept': '#1a7f37', 'rollback': '#9a6700', 'reject': '#cf222e',
                    'incomplete': '#0969da', 'invalid': '#8250df'}
_CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:"

CSS = """
body{font:15px/1.45 system-ui,-apple-system,'Segoe UI',sans-serif;margin:0;background:#f6f8fa;color:#1f2328}
main{max-width:1100px;margin:0 auto;padding:18px 24px 60px}
h1{font-size:20px;margin:6px 0 2px} h2{font-size:17px;margin:26px 0 8px;border-bottom:1px solid #d0d7de}
h3{font-size:15px;margin:0 0 6px}
.meta{color:#59636e;font-size:13px}
.banner{display:flex;align-items:center;gap:18px;background:#fff;border:1px solid #d0d7de;
 border-left:10px solid var(--c);border-radius:6px;padding:12px 18px;margin:12px 0}
.verdict{font-size:28px;font-weight:700;color:var(--c);letter-spacing:.04em}
.score{font-size:22px;font-weight:600}
.reason{margin:4px 0 0}
.card{background:#fff;border:1px solid #d0d7de;border-radius:6px;padding:12px 16px;margin:10px 0}
.card.fail{border-left:5px solid #cf222e}
.tag{display:inline-block;font-size:12px;padding:0 7px;border-radius:10px;background:#eaeef2;margin-right:4px}
.msg{margin:4px 0 8px;font-weight:500}
.ev{font:12.5px/1.4 ui-monospace,Menlo,Consolas,monospace;margin:2px 0 6px 14px;color:#393f46;
 white-space:pre-wrap;word-break:break-word}
.hint{background:#fff8c5;border-radius:4px;padding:4px 8px;margin:6px 0}
.fault{color:#59636e}
pre{background:#f6f8fa;border:1px solid #d0d7de;border-radius:4px;padding:8px;overflow:auto;
 font:12.5px/1.4 ui-monospace,Menlo,Consolas,monospace;white-space:pre-wrap;word-break:break-word}
details>summary{cursor:pointer;color:#0969da}
table{border-collapse:collapse;width:100%;background:#fff;font-size:13.5px}
th,td{border:1px solid #d0d7de;padding:4px 8px;text-align:left;vertical-align:top}
th{background:#eaeef2}
.bar{background:#eaeef2;height:10px;width:120px;display:inline-block;vertical-align:middle}
td.rate{white-space:nowrap}
.bar>span{display:block;height:10px;background:#1a7f37}
.graph{overflow:auto;background:#fff;border:1px solid #d0d7de;border-radius:4px;margin:8px 0}
.legend{font-size:12.5px;color:#59636e}
.chip{display:inline-block;padding:2px 10px;border-radius:12px;color:#fff;margin:2px 4px 2px 0;font-weight:600}
"""


def esc(value) -> str:
    """Text as HTML shows it: escaped, control characters written as escapes."""
    return html.escape(printable(str(value)), quote=True)


def _fmt(x) -> str:
    if isinstance(x, float):
        return '{:g}'.format(x)
    return str(x)


def _page(title: str, body: str) -> str:
    return ('<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
            '<meta http-equiv="Content-Security-Policy" content="{}">'
            '<meta name="viewport" content="width=device-width, initial-scale=1">'
            '<title>{}</title><style>{}</style></head>\n<body><main>\n{}\n</main></body></html>\n'
            ).format(_CSP, esc(title), CSS, body)


# -- one scorecard --------------------------------------------------------------------------------
def render(doc: dict, *, back: str | None = None) -> str:
    """The whole page for one scorecard; `back` links to the class page."""
    card = Scorecard.from_document(doc)
    title = 'step {} · {} · {}'.format(card.step, card.submission_id, card.verdict.upper())
    nav = '<p class="meta"><a href="{}">&larr; class page</a></p>'.format(esc(back)) if back else ''
    return _page(title, nav + _body(card))


def fragment(doc: dict) -> str:
    """The report body without the page around it (Gradescope's HTML `output` takes this)."""
    return _body(Scorecard.from_document(doc))


def _body(card: Scorecard) -> str:
    env = card.environment
    out = ['<header>',
           '<h1>dezero-grade · step {} {}</h1>'.format(card.step, esc(card.title)),
           '<div class="meta">{} ({}) · device {} · seed {} · profile {} · era {} · sandbox {} · '
           '{:.1f} s</div>'.format(esc(card.submission_id), esc(card.content_hash[:19]),
                                   esc(env['device_mode']), card.seed, esc(card.profile),
                                   esc(card.era), esc(env['sandbox']), card.duration_s),
           '</header>']
    sc = card.score
    score = '{}/{}'.format(_fmt(sc.earned), _fmt(sc.possible))
    if sc.extension_possible:
        score += ' <span class="meta">(extension {}/{})</span>'.format(
            _fmt(sc.extension_earned), _fmt(sc.extension_possible))
    colour = _VERDICT_COLOURS.get(card.verdict, '#59636e')
    out.append('<section class="banner" style="--c:{}" id="verdict">'
               '<div class="verdict" data-verdict="{}">{}</div>'
               '<div><div class="score">score {}</div><p class="reason">{}</p></div>'
               '</section>'.format(colour, esc(card.verdict), esc(card.verdict.upper()),
                                   score, esc(card.reason)))
    out.extend(_diagnosis(card.diagnosis))
    out.extend(_compatibility(card.compatibility))
    if card.is_invalid:
        out.extend(_invalid(card.invalid))
        return '\n'.join(out)
    failing = card.failing
    if failing:
        out.append('<h2>failing checks ({})</h2>'.format(len(failing)))
        for c in failing:
            out.append(_failing_check(c, diagnosed=bool(card.diagnosis)))
    skipped = card.unjudged
    if skipped:
        out.append('<details class="card"><summary>not judged here, so earning nothing ({})'
                   '</summary><ul>{}</ul></details>'.format(
                       len(skipped), ''.join('<li><b>{}</b> — {}</li>'.format(
                           esc(c.id), esc(c.message)) for c in skipped)))
    passing = card.credited
    if passing:
        out.append('<details class="card" id="passing"><summary>passing checks ({})</summary>'
                   '<ul>{}</ul></details>'.format(len(passing), ''.join(
                       '<li>{} <b>{}</b> — {}</li>'.format(
                           '&#10003;' if c.status == 'passed' else '&middot;', esc(c.id),
                           esc(c.message)) for c in passing)))
    return '\n'.join(out)


def _diagnosis(found):
    """The root causes the scorecard's diagnosis names, most likely first, each with the checks it
    explains (the terminal report's list, as cards)."""
    if not found or not found['causes'] and not found['unexplained']:
        return []
    out = ['<h2>root causes <span class="meta">most likely first; the checks each explains</span>'
           '</h2>']
    for cause in found['causes']:
        faults = cause['faults']
        tags = ''.join(' <span class="tag">{}</span>'.format(esc(f['id'])) for f in faults)
        error = cause.get('error')
        raised = ('<p class="msg">your code raised {}: {}{}</p>'.format(
            esc(error['type']), esc(error['message']),
            ' at {}'.format(esc(error['where'])) if error.get('where') else '')
            if error and not error.get('names') else '')
        together = ('<div class="meta">what failed cannot tell these faults apart</div>'
                    if len(faults) > 1 else '')
        hint = ('<div class="hint">hint: {}</div>'.format(esc(faults[0]['hint']))
                if faults and faults[0]['hint'] else '')
        out.append('<div class="card"><h3>{}. {}{}</h3>{}{}<div class="meta">explains: {}</div>{}'
                   '</div>'.format(cause['rank'], esc(cause['summary']), tags, raised, together,
                                   esc(', '.join(cause['checks'])), hint))
    if found['unexplained']:
        out.append('<div class="card"><h3>no catalogued fault matches</h3><div class="meta">{}'
                   '</div></div>'.format(esc(', '.join(found['unexplained']))))
    return out


def _compatibility(found, limit=20):
    if not found:
        return []
    rows = ''.join('<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>'.format(
        esc(f.api), esc(f.where), esc(f.message), esc(f.since or ''), esc(f.fix or ''))
        for f in found[:limit])
    more = '<p class="meta">... and {} more in the scorecard</p>'.format(
        len(found) - limit) if len(found) > limit else ''
    return ['<h2 id="compatibility">compatibility findings</h2>',
            '<p class="meta">Graded in the book\'s 2020 environment: these are not failures and '
            'never change the verdict, but on today\'s NumPy/CuPy (--era current) they break.</p>',
            '<table><tr><th>API</th><th>where</th><th>what</th><th>since</th><th>fix</th></tr>'
            '{}</table>{}'.format(rows, more)]


def _invalid(inv):
    out = ['<div class="card fail" id="invalid"><h3>{}</h3>'.format(esc(inv.code if inv else ''))]
    tail = inv.output_tail.strip() if inv else ''
    if tail:
        out.append('<p>what your code printed last:</p><pre>{}</pre>'.format(
            esc('\n'.join(tail.splitlines()[-30:]))))
    out.append('</div>')
    return out


def _graphs(check: CheckRecord):
    """The graphs the failing findings of a check hold, with their divergent node."""
    return [(f['evidence']['graph'], f['evidence'].get('divergent_node'))
            for f in check.failing_findings if (f.get('evidence') or {}).get('graph')]


def _failing_check(c: CheckRecord, diagnosed=False) -> str:
    """A failing check as a card; `diagnosed`: its `faults` are its root cause's (a scorecard
    with a diagnosis), not a guess from the fault catalogue."""
    tag = 'regression, step {}'.format(c.step) if c.regression else '{} pts'.format(
        _fmt(c.points))
    out = ['<div class="card fail check" data-check="{}" data-status="{}">'.format(
        esc(c.id), esc(c.status)),
        '<h3>&#10007; {} <span class="tag">{}</span><span class="tag">{}</span>'
        '<span class="tag">{}</span><span class="tag">{}</span></h3>'.format(
            esc(c.id), esc(c.status), esc(c.tier), esc(c.category), esc(tag)),
        '<div class="meta">{}</div>'.format(esc(c.title)),
        '<p class="msg">{}</p>'.format(esc(c.message))]
    for message, parts in report.key_evidence(c)[:8]:
        out.append('<div class="ev">&middot; {}{}</div>'.format(
            esc(message), ''.join('\n    ' + esc(p) for p in parts[:8])))
    if c.hint:
        out.append('<div class="hint">hint: {}</div>'.format(esc(c.hint)))
    for f in c.faults[:1]:
        out.append('<div class="fault">{}: <b>{}</b> — {}</div>'.format(
            'root cause' if diagnosed else 'looks like', esc(f['id']), esc(f['title'])))
    for graph, divergent in _graphs(c)[:2]:
        out.append(graph_figure(graph, c.id, divergent))
    if c.repro:
        out.append('<details><summary>reproduce it against your own code</summary>'
                   '<pre class="repro">{}</pre></details>'.format(esc(c.repro.rstrip('\n'))))
    out.append('</div>')
    return '\n'.join(out)


# -- the graph as SVG -------------------------------------------------------------------------------
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


# -- the class page ---------------------------------------------------------------------------------
def _histogram_svg(histogram) -> str:
    bins = histogram or []
    top = max([b['count'] for b in bins] or [1]) or 1
    bw, h, pad = 52, 150, 28
    width = pad * 2 + bw * len(bins)
    out = ['<svg xmlns="http://www.w3.org/2000/svg" id="histogram" width="{}" height="{}" '
           'font-family="sans-serif" font-size="11" role="img" aria-label="score distribution">'
           .format(width, h + 2 * pad)]
    for j, b in enumerate(bins):
        bh = h * b['count'] / top
        x = pad + j * bw
        out.append('<g class="bin"><title>{}-{}%: {} submission(s)</title><rect x="{}" y="{:.1f}" '
                   'width="{}" height="{:.1f}" fill="#54aeff"/><text x="{}" y="{:.1f}" '
                   'text-anchor="middle">{}</text><text x="{}" y="{}" text-anchor="middle" '
                   'fill="#59636e">{}</text></g>'.format(
                       b['from_percent'], b['to_percent'], b['count'], x + 3, pad + h - bh,
                       bw - 6, bh, x + bw / 2, pad + h - bh - 4, b['count'], x + bw / 2,
                       pad + h + 14, '{}–{}'.format(b['from_percent'], b['to_percent'])))
    out.append('<text x="{}" y="{}" text-anchor="middle" fill="#59636e">score, % of the '
               'possible</text></svg>'.format(width / 2, h + 2 * pad - 2))
    return ''.join(out)


def _root_causes(summary, docs):
    """The root causes the submissions' diagnoses name, counted once per submission (the
    summary's `faults`), and how many fail for reasons no catalogued fault matches."""
    faults = summary.get('faults') or []
    own = summary.get('uncatalogued') or {}
    if not faults and not own.get('submissions'):
        return ''
    rows = ''.join('<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>'.format(
        esc(' = '.join([f['id']] + f.get('indistinguishable_from', []))), esc(f['title']),
        f['submissions'], esc(', '.join(f['checks'][:6]) + (', ...' if len(f['checks']) > 6
                                                             else '')))
        for f in faults[:15])
    if own.get('submissions'):
        rows += ('<tr><td>no catalogued fault matches</td><td>errors of the code itself, failing '
                 'checks nothing explains</td><td>{}</td><td></td></tr>'.format(own['submissions']))
    return ('<h2 id="causes">root causes</h2><p class="meta">what each submission\'s diagnosis '
            'names, counted once per submission</p><table><tr><th>root cause</th><th>what</th>'
            '<th>submissions</th><th>checks it explains</th></tr>{}</table>'.format(rows))


def class_page(summary: dict, docs: dict, link) -> str:
    """The class page of a batch: `docs` maps submission ids to their scorecards, `link(id)`
    gives the address of a submission's own page (None: no page)."""
    a, counts, scores = summary['assignment'], summary['counts'], summary['scores']
    out = ['<header><h1>dezero-grade · class page · step {} {}</h1>'.format(a['step'], esc(a['title'])),
           '<div class="meta">{} submissions · graded {} · profile {} · era {} · generated {}</div>'
           '</header>'.format(counts['submissions'], counts['graded'],
                              esc(summary['options'].get('profile', '')),
                              esc(summary['options'].get('era', '')),
                              esc(summary['generated_at']))]
    out.append('<section id="verdicts"><h2>verdicts</h2>{}</section>'.format(''.join(
        '<span class="chip" style="background:{}">{} {}</span>'.format(
            _VERDICT_COLOURS.get(v, '#59636e'), esc(v), n)
        for v, n in counts['verdicts'].items() if n)))
    stats = 'mean {} · median {} · min {} · max {} · full marks {} · of {} points'.format(
        *(_fmt(scores.get(k)) for k in ('mean', 'median', 'min', 'max', 'full_marks', 'possible')))
    out.append('<section><h2>score distribution</h2><p class="meta">{}</p>{}</section>'.format(
        esc(stats), _histogram_svg(scores.get('histogram'))))
    out.append(_root_causes(summary, docs))
    rows = []
    for c in sorted(summary.get('checks', []), key=lambda c: (c['pass_rate'], c['id'])):
        rate = c['pass_rate']
        rows.append('<tr class="check-rate"><td>{}</td><td>{}</td><td class="rate"><span class="bar">'
                    '<span style="width:{:.0f}%">'
                    '</span></span> {:.0f}%</td><td>{}/{}</td><td>{}</td></tr>'.format(
                        esc(c['id']), esc(c['title']), rate * 100, rate * 100, c['passed'],
                        c['runs'], 'regression' if c['regression'] else esc(c['tier'])))
    out.append('<section id="checks"><h2>pass rate per check</h2><table><tr><th>check</th>'
               '<th>what</th><th>pass rate</th><th>passed</th><th></th></tr>{}</table></section>'
               .format(''.join(rows)))
    ungraded = summary.get('ungraded') or []
    if ungraded:
        out.append('<section id="ungradable"><h2>could not be graded ({})</h2><table><tr><th>'
                   'submission</th><th>why</th><th>reason</th></tr>{}</table></section>'.format(
                       len(ungraded), ''.join('<tr><td>{}</td><td>{}</td><td>{}</td></tr>'.format(
                           _linked(u['id'], link), esc(u.get('code', '')), esc(u.get('reason', '')))
                           for u in ungraded)))
    rows = []
    for s in summary['submissions']:
        card = Scorecard.from_document(docs[s['id']]) if docs.get(s['id']) else None
        failing = len(card.failing) if card and not card.is_invalid else '—'
        rows.append('<tr class="submission" data-id="{}"><td>{}</td><td><span class="chip" '
                    'style="background:{}">{}</span></td><td>{}/{}</td><td>{}</td><td>{}</td>'
                    '</tr>'.format(esc(s['id']), _linked(s['id'], link),
                                   _VERDICT_COLOURS.get(s['verdict'], '#59636e'),
                                   esc(s['verdict']), _fmt(s['earned']), _fmt(s['possible']),
                                   _fmt(s.get('extension_earned', 0)), failing))
    out.append('<section id="submissions"><h2>submissions</h2><table><tr><th>submission</th>'
               '<th>verdict</th><th>score</th><th>extension</th><th>failing checks</th></tr>{}'
               '</table></section>'.format(''.join(rows)))
    compat = summary.get('compatibility') or []
    if compat:
        out.append('<section><h2>compatibility findings</h2><table><tr><th>API</th><th>since'
                   '</th><th>fix</th><th>submissions</th></tr>{}</table></section>'.format(''.join(
                       '<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>'.format(
                           esc(c['api']), esc(c.get('since') or ''), esc(c.get('fix') or ''),
                           c['submissions']) for c in compat)))
    return _page('step {} class page'.format(a['step']), '\n'.join(out))


def _linked(ident, link):
    href = link(ident) if link else None
    return '<a href="{}">{}</a>'.format(esc(href), esc(ident)) if href else esc(ident)


# -- files ------------------------------------------------------------------------------------------
def page_name(ident: str) -> str:
    """A submission's page file name: its id where that is a safe name, else a safe form of it
    with a short hash (two ids never share a page)."""
    safe = re.sub(r'[^A-Za-z0-9_.-]+', '_', ident).strip('.')[:80] or 'submission'
    if safe != ident:
        import hashlib
        safe += '-' + hashlib.sha256(ident.encode('utf-8', 'surrogateescape')).hexdigest()[:8]
    return safe + '.html'


def write_report(path, doc: dict) -> Path:
    """Write the HTML report of one scorecard (atomically)."""
    path = Path(path)
    schema.write_text_atomic(path, render(doc))
    return path


def write_class(folder, summary: dict, docs: dict) -> tuple:
    """Write `folder/index.html` and one page per scorecard; returns the paths written."""
    folder = Path(folder)
    names = {ident: page_name(ident) for ident in docs}
    written = []
    for ident, doc in sorted(docs.items()):
        target = folder / names[ident]
        schema.write_text_atomic(target, render(doc, back='index.html'))
        written.append(target)
    index = folder / 'index.html'
    schema.write_text_atomic(index, class_page(
        summary, docs, lambda ident: urllib.parse.quote(names[ident]) if ident in names else None))
    return (index,) + tuple(written)
