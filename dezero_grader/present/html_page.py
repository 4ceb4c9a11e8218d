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

import re
import urllib.parse
from pathlib import Path

from dezero_grader.present import terminal
from dezero_grader.present.graph_svg import graph_figure
from dezero_grader.present.terminal import html_text as esc
from dezero_grader.records import schema
from dezero_grader.scoring.scorecard_read import CheckRecord, Scorecard

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
.card.advice{border-left:5px solid #8c959f}
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
def render(doc: dict, *, back: str | None = None, submission=None) -> str:
    """The whole page for one scorecard; `back` links to the class page; `submission`: the path
    the code was graded from (absolute: the page is opened from anywhere), None where it is not
    known (a batch's pages), as in `terminal.render`."""
    card = Scorecard.from_document(doc)
    title = 'step {} · {} · {}'.format(card.step, card.submission_id, card.verdict.upper())
    nav = '<p class="meta"><a href="{}">&larr; class page</a></p>'.format(esc(back)) if back else ''
    return _page(title, nav + _body(card, submission))


def _body(card: Scorecard, submission=None) -> str:
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
    out.append('<p class="meta" id="checks-line">checks: {}</p>'.format(
        esc(terminal.checks_line(card))))
    failing = card.counted_failing
    if failing:
        out.append('<h2>failing checks ({})</h2>'.format(len(failing)))
        for c in failing:
            out.append(_failing_check(c, diagnosed=bool(card.diagnosis),
                                      reproduce=terminal.reproduce_line(card, c.id, submission)))
    advice = card.advice_failing
    if advice:
        out.append('<section id="advice"><h2>{} <span class="meta">{}</span></h2>'.format(
            esc(terminal.ADVICE_HEAD), esc(terminal.ADVICE_WHY)))
        out.extend(_diagnosis(card.diagnosis, advice=True))
        for c in advice:
            out.append(_failing_check(c, diagnosed=bool(card.diagnosis),
                                      reproduce=terminal.reproduce_line(card, c.id, submission),
                                      advice=True))
        out.append('</section>')
    skipped = card.unjudged
    if skipped:
        out.append('<details class="card"><summary>not judged here, so earning nothing ({})'
                   '</summary><ul>{}</ul></details>'.format(
                       len(skipped), ''.join('<li><b>{}</b> — {}</li>'.format(
                           esc(c.id), esc(c.message)) for c in skipped)))
    passing = [c for c in card.credited if not c.regression]
    if passing:
        out.append('<details class="card" id="passing"><summary>passing checks ({})</summary>'
                   '<ul>{}</ul></details>'.format(len(passing), ''.join(
                       '<li>{} <b>{}</b> — {}</li>'.format(
                           '&#10003;' if c.status == 'passed' else '&middot;', esc(c.id),
                           esc(c.message)) for c in passing)))
    kept = [(step, [c for c in group if c in card.credited])
            for step, group in terminal.regression_by_step(card.checks)]
    kept = [(step, group) for step, group in kept if group]
    if kept:   # one line per earlier step: there can be a hundred of them
        out.append('<details class="card" id="passing-regression"><summary>earlier steps\' '
                   'contracts kept ({} regression checks of steps {})</summary><ul>{}</ul>'
                   '</details>'.format(sum(len(g) for _, g in kept),
                                       esc(terminal.step_span(s for s, _ in kept)), ''.join(
                       '<li>&#10003; <b>step {}</b> — {}</li>'.format(step, esc(', '.join(
                           c.id.split('/', 1)[-1] for c in group))) for step, group in kept)))
    return '\n'.join(out)


def _diagnosis(found, advice=False):
    """The root causes the scorecard's diagnosis names, most likely first, each with the checks it
    explains (the terminal report's list, as cards): those of the checks that count, or (`advice`)
    those of advice, shown in its own section."""
    if not found:
        return []
    causes = [c for c in found['causes'] if bool(c.get('advice')) == advice]
    unexplained = found.get('unexplained_advice', ()) if advice else found['unexplained']
    if not causes and not unexplained:
        return []
    out = [] if advice else ['<h2>root causes <span class="meta">most likely first; the checks '
                             'each explains</span></h2>']
    for cause in causes:
        faults = cause['faults']
        tags = ''.join(' <span class="tag">{}</span>'.format(esc(f['id'])) for f in faults)
        error = cause.get('error')
        raised = ('<p class="msg">your code raised {}: {}{}</p>'.format(
            esc(error['type']), esc(error['message']),
            ' at {}'.format(esc(error['where'])) if error.get('where') else '')
            if error and not (error.get('names') or error.get('places') or error.get('function'))
            else '')
        together = ('<div class="meta">what failed cannot tell these faults apart</div>'
                    if len(faults) > 1 else '')
        said = faults[0]['hint'] if faults else (error or {}).get('hint', '')
        hint = '<div class="hint">hint: {}</div>'.format(esc(said)) if said else ''
        if error and error.get('places'):
            raised += '<div class="meta">raised at: {}</div>'.format(
                esc(', '.join(error['places'])))
        out.append('<div class="card"><h3>{}. {}{}</h3>{}{}<div class="meta">explains: {}</div>{}'
                   '</div>'.format(cause['rank'], esc(cause['summary']), tags, raised, together,
                                   esc(', '.join(cause['checks'])), hint))
    if unexplained:
        out.append('<div class="card"><h3>no catalogued fault matches</h3><div class="meta">{}'
                   '</div></div>'.format(esc(', '.join(unexplained))))
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


def _failing_check(c: CheckRecord, diagnosed=False, reproduce='', advice=False) -> str:
    """A failing check as a card; `diagnosed`: its `faults` are its root cause's (a scorecard
    with a diagnosis), not a guess from the fault catalogue; `advice`: it does not count (no
    cross, no red: a note)."""
    tag = 'regression, step {}'.format(c.step) if c.regression else '{} pts'.format(
        _fmt(c.points))
    if advice:
        tag += ', not counted'
    out = ['<div class="card {} check" data-check="{}" data-status="{}">'.format(
        'advice' if advice else 'fail', esc(c.id), esc(c.status)),
        '<h3>{} {} <span class="tag">{}</span><span class="tag">{}</span>'
        '<span class="tag">{}</span><span class="tag">{}</span></h3>'.format(
            '&middot;' if advice else '&#10007;',
            esc(c.id), esc(c.status), esc(c.tier), esc(c.category), esc(tag)),
        '<div class="meta">{}</div>'.format(esc(c.title)),
        '<p class="msg">{}</p>'.format(esc(c.message))]
    for message, parts in terminal.key_evidence(c)[:8]:
        out.append('<div class="ev">&middot; {}{}</div>'.format(
            esc(message), ''.join('\n    ' + esc(p) for p in parts[:8])))
    if c.hint:
        out.append('<div class="hint">hint: {}</div>'.format(esc(c.hint)))
    for f in c.faults[:1]:
        out.append('<div class="fault">{}: <b>{}</b> — {}</div>'.format(
            'root cause' if diagnosed else 'looks like', esc(f['id']), esc(f['title'])))
    for graph, divergent in _graphs(c)[:2]:
        out.append(graph_figure(graph, c.id, divergent))
    if c.repro and reproduce:
        out.append('<div class="meta reproduce">{}</div>'.format(esc(reproduce)))
    if c.repro:
        out.append('<details><summary>reproduce it against your own code</summary>'
                   '<pre class="repro">{}</pre></details>'.format(esc(c.repro.rstrip('\n'))))
    out.append('</div>')
    return '\n'.join(out)


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
    rows = _cause_rows(faults)
    if own.get('submissions'):
        rows += ('<tr><td>no catalogued fault matches</td><td>errors of the code itself, failing '
                 'checks nothing explains</td><td>{}</td><td></td></tr>'.format(own['submissions']))
    out = ('<h2 id="causes">root causes</h2><p class="meta">what each submission\'s diagnosis '
           'names for the checks that count, counted once per submission</p><table><tr><th>root '
           'cause</th><th>what</th><th>submissions</th><th>checks it explains</th></tr>{}</table>'
           .format(rows)) if rows else ''
    advice = summary.get('advice_faults') or []
    if advice:
        out += ('<h2 id="advice-causes">{}</h2><p class="meta">root causes of checks beyond the '
                'book that this grading does not count (they never change a verdict or a score)'
                '</p><table><tr><th>root cause</th><th>what</th><th>submissions</th><th>checks it '
                'explains</th></tr>{}</table>'.format(esc(terminal.ADVICE_HEAD), _cause_rows(advice)))
    return out


def _cause_rows(faults, limit=15) -> str:
    return ''.join('<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>'.format(
        esc(' = '.join([f['id']] + f.get('indistinguishable_from', []))), esc(f['title']),
        f['submissions'], esc(', '.join(f['checks'][:6]) + (', ...' if len(f['checks']) > 6
                                                             else '')))
        for f in faults[:limit])


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
    rows, kept = [], []   # kept: regression checks every submission passed, folded away
    for c in sorted(summary.get('checks', []), key=lambda c: (c['pass_rate'], c['id'])):
        rate = c['pass_rate']
        (kept if c['regression'] and c['runs'] and c['passed'] == c['runs'] else rows).append(
            '<tr class="check-rate"><td>{}</td><td>{}</td><td class="rate"><span class="bar">'
            '<span style="width:{:.0f}%">'
            '</span></span> {:.0f}%</td><td>{}/{}</td><td>{}</td></tr>'.format(
                esc(c['id']), esc(c['title']), rate * 100, rate * 100, c['passed'],
                c['runs'], 'regression' if c['regression'] else esc(c['tier'])))
    head = ('<tr><th>check</th><th>what</th><th>pass rate</th><th>passed</th><th></th></tr>')
    folded = ('<details><summary>{} regression check{} of earlier steps every submission '
              'passed</summary><table>{}{}</table></details>'.format(
                  len(kept), '' if len(kept) == 1 else 's', head, ''.join(kept)) if kept else '')
    out.append('<section id="checks"><h2>pass rate per check</h2><table>{}{}</table>{}'
               '</section>'.format(head, ''.join(rows), folded))
    ungraded = summary.get('ungraded') or []
    if ungraded:
        out.append('<section id="ungradable"><h2>could not be graded ({})</h2><table><tr><th>'
                   'submission</th><th>why</th><th>reason</th></tr>{}</table></section>'.format(
                       len(ungraded), ''.join('<tr><td>{}</td><td>{}</td><td>{}</td></tr>'.format(
                           _linked(u['id'], link), esc(u.get('code', '')), esc(u.get('reason', '')))
                           for u in ungraded)))
    rows = []
    roster = summary.get('roster') or {}
    names = roster.get('names') or {}
    for s in summary['submissions']:
        card = Scorecard.from_document(docs[s['id']]) if docs.get(s['id']) else None
        failing = len(card.counted_failing) if card and not card.is_invalid else '—'
        late = s.get('late')
        rows.append('<tr class="submission" data-id="{}"><td>{}</td><td>{}</td><td><span '
                    'class="chip" style="background:{}">{}</span></td><td>{}/{}</td><td>{}</td>'
                    '<td>{}</td><td>{}</td></tr>'.format(
                        esc(s['id']), esc(names.get(s['id'], '')), _linked(s['id'], link),
                        _VERDICT_COLOURS.get(s['verdict'], '#59636e'), esc(s['verdict']),
                        _fmt(s['earned']), _fmt(s['possible']), _fmt(s.get('extension_earned', 0)),
                        failing, '{:.1f} h ({} points)'.format(late['minutes_late'] / 60,
                                                               _fmt(late['points']))
                        if late else ''))
    # who the roster has and nothing was handed in for: a row each, so nobody is missed
    for p in roster.get('without_submission') or ():
        rows.append('<tr class="submission missing" data-id="{}"><td>{}</td><td>{}</td><td>'
                    'nothing handed in</td><td></td><td></td><td></td><td></td></tr>'.format(
                        esc(p['submission']), esc(p['student']), esc(p['submission'])))
    out.append('<section id="submissions"><h2>submissions</h2><table><tr><th>student</th>'
               '<th>submission</th><th>verdict</th><th>score</th><th>extension</th>'
               '<th>failing checks</th><th>late</th></tr>{}</table></section>'.format(''.join(rows)))
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
CLASS_PAGE = 'index'   # the class page's name, which no submission's page may take


def page_name(ident: str) -> str:
    """A submission's page file name: its id where that is a safe name, else a safe form of it
    with a short hash (two ids never share a page, and no id takes the class page's name, in
    any case: `index`, `INDEX` on a file system that folds case)."""
    safe = re.sub(r'[^A-Za-z0-9_.-]+', '_', ident).strip('.')[:80] or 'submission'
    if safe != ident or safe.lower() == CLASS_PAGE:
        import hashlib
        safe += '-' + hashlib.sha256(ident.encode('utf-8', 'surrogateescape')).hexdigest()[:8]
    return safe + '.html'


def write_report(path, doc: dict, submission=None) -> Path:
    """Write the HTML report of one scorecard (atomically); `submission` as for `render`."""
    path = Path(path)
    schema.write_text_atomic(path, render(doc, submission=submission))
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
    index = folder / (CLASS_PAGE + '.html')
    schema.write_text_atomic(index, class_page(
        summary, docs, lambda ident: urllib.parse.quote(names[ident]) if ident in names else None))
    return (index,) + tuple(written)
