"""The history as one self-contained HTML page: a timeline table, one row per step (its commit,
how it was found, the verdict, the score) and, under a rollback, the commit that first broke
each earlier check and the diff of the graded files. Reads the history document only; every
text from the repository (messages, file names, diffs) is escaped. Rows are in commit order,
as the document has them; a diff several checks share is shown once.
"""
from __future__ import annotations

from dezero_grader.history.timeline import not_mapped
from dezero_grader.present import terminal

_COLOURS = {'accept': '#1a7f37', 'rollback': '#9a6700', 'reject': '#cf222e',
            'incomplete': '#0969da', 'invalid': '#8250df'}
_STYLE = """
body{font:14px/1.45 system-ui,sans-serif;margin:2em;color:#1f2328}
table{border-collapse:collapse;width:100%}th,td{border-bottom:1px solid #d0d7de;padding:.35em .6em;
text-align:left;vertical-align:top}th{background:#f6f8fa}code,pre{font:12px ui-monospace,monospace}
.v{font-weight:600;color:#fff;border-radius:3px;padding:0 .4em}pre{background:#f6f8fa;padding:.6em;
overflow-x:auto;max-height:30em}.muted{color:#59636e}details{margin:.3em 0}
"""


def _e(text) -> str:
    return terminal.html_text(text)


def _verdict(v: str) -> str:
    return '<span class="v" style="background:{}">{}</span>'.format(_COLOURS.get(v, '#59636e'),
                                                                    _e(v.upper()))


def _regression(reg: dict, shown: dict) -> str:
    if reg['status'] == 'broken' and reg.get('first_bad'):
        fb, lg = reg['first_bad'], reg['last_good']
        diff = reg.get('diff') or {}
        body = ('<div><code>{}</code> (step {}) passed at its step, first broken by '
                '<code>{}</code> “{}” (last good <code>{}</code>; {} commit(s) between, {} graded)'
                '</div>').format(_e(reg['check']), reg['step'], _e(fb['short']), _e(fb['subject']),
                                 _e(lg['short']), reg['searched']['commits'],
                                 reg['searched']['graded'])
        key = (lg['commit'], fb['commit'], diff.get('text'))
        if diff.get('text') and key in shown:
            body += '<div class="muted">the same diff as for <code>{}</code> above</div>'.format(
                _e(shown[key]))
        elif diff.get('text'):
            shown[key] = reg['check']
            body += '<details><summary>diff of {} ({})</summary><pre>{}</pre></details>'.format(
                _e(', '.join(diff['files']) or 'the graded files'),
                'truncated' if diff['truncated'] else 'complete', _e(diff['text']))
        return body
    return '<div><code>{}</code> (step {}): {}</div>'.format(_e(reg['check']), reg['step'],
                                                            _e(reg['why']))


def render(doc: dict) -> str:
    repo = doc['repository']
    rows, shown = [], {}
    for r in doc['steps']:
        score = '{:g}/{:g}'.format(r['score']['earned'], r['score']['possible']) if r['score'] else '–'
        notes = ''.join(_regression(reg, shown) for reg in r['regressions'])
        if r['verdict'] != 'accept':
            notes = '<div class="muted">{}</div>'.format(_e(r['reason'])) + notes
        if r.get('same_commit_as'):
            notes = '<div class="muted">the same commit as step{} {}</div>'.format(
                's' if len(r['same_commit_as']) > 1 else '',
                ', '.join(map(str, r['same_commit_as']))) + notes
        rows.append('<tr><td>{}</td><td>{}</td><td><code>{}</code><br><span class="muted">{}</span>'
                    '</td><td>{}<br><span class="muted">{}</span></td><td>{}</td><td>{}</td>'
                    '<td>{}</td></tr>'.format(
                        r['step'], _e(r['title']), _e(r['short']), _e(r['subject']), _e(r['how']),
                        _e(r['evidence']), _verdict(r['verdict']), score, notes))
    counts = ' · '.join('{} {}'.format(_e(v), n) for v, n in doc['counts']['verdicts'].items())
    return ('<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
            '<title>DeZero history: {src}</title><style>{style}</style></head><body>'
            '<h1>DeZero history</h1><p>{src} · head <code>{head}</code> · {commits} commits · '
            '{n} step(s) mapped · {counts}</p>{notes}'
            '<table><thead><tr><th>step</th><th>title</th><th>commit</th><th>found by</th>'
            '<th>verdict</th><th>score</th><th>evidence</th></tr></thead><tbody>{rows}</tbody>'
            '</table><p class="muted">generated {when} by dezero-grader {ver}</p></body></html>\n'
            ).format(src=_e(repo['source']), style=_STYLE, head=_e(repo['head'][:10]),
                     commits=repo['commits'], n=len(doc['steps']), counts=counts,
                     notes=''.join('<p class="muted">note: {}</p>'.format(_e(n))
                                   for n in repo.get('notes', [])) + ''.join(
                         '<p class="muted">not mapped: step {}: {}</p>'.format(step, _e(why))
                         for step, why in not_mapped(doc)),
                     rows=''.join(rows) or '<tr><td colspan="7">no step found</td></tr>',
                     when=_e(doc['generated_at']), ver=_e(doc['tool']['version']))
