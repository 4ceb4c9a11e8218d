"""The history on the terminal: one line per step (its commit, how it was found, the verdict,
the score), and under a rollback the commit that first broke each earlier check."""
from __future__ import annotations

from grader import report

def render(doc: dict, *, diffs: bool = False) -> str:
    doc = report.printable_tree(doc)
    rows = doc['steps']
    lines = ['history of {} ({} commits, head {}): {} step(s) mapped'.format(
        doc['repository']['source'], doc['repository']['commits'], doc['repository']['head'][:10],
        len(rows))]
    if not rows:
        lines.append('  no step found: name steps in commit messages ("Done step23"), in branch '
                     'names (step23), or map them in a .dezero-steps file ("23 <commit>" per line)')
        return '\n'.join(lines) + '\n'
    lines.append('  {:>4}  {:10}  {:7}  {:9}  {:>9}  {}'.format('step', 'commit', 'how', 'verdict',
                                                              'score', 'evidence'))
    for r in rows:
        score = '{:g}/{:g}'.format(r['score']['earned'], r['score']['possible']) if r['score'] else '-'
        lines.append('  {:>4}  {:10}  {:7}  {:9}  {:>9}  {}'.format(
            r['step'], r['short'], r['how'], r['verdict'].upper(), score,
            r['evidence'][:60] + (' (cached)' if r['cached'] else '')))
        if r['verdict'] not in ('accept',):
            lines.append('        {}'.format(r['reason'][:200]))
        for reg in r['regressions']:
            if reg['status'] == 'broken' and reg.get('first_bad'):
                fb = reg['first_bad']
                lines.append('        {} (step {}) first broken by {} "{}" (last good {}; {} '
                             'commit(s) between, {} graded){}'.format(
                                 reg['check'], reg['step'], fb['short'], fb['subject'][:60],
                                 reg['last_good']['short'], reg['searched']['commits'],
                                 reg['searched']['graded'],
                                 '; files: ' + ', '.join(reg['diff']['files'][:5])
                                 if reg['diff']['files'] else ''))
                if diffs and reg['diff']['text']:
                    lines.extend('          ' + t for t in reg['diff']['text'].splitlines()[:80])
            else:
                lines.append('        {} (step {}): {}'.format(reg['check'], reg['step'], reg['why']))
    c = doc['counts']
    lines.append('  ' + ' · '.join('{} {}'.format(v, n) for v, n in c['verdicts'].items())
                 + '  ({} graded now, {} from the cache)'.format(c['graded_now'], c['from_cache']))
    return '\n'.join(lines) + '\n'
