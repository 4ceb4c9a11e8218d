"""The history on the terminal: one line per step in commit order (its commit, how it was found,
the verdict, the score), a note where steps share a commit, and under a rollback the commit
that first broke each earlier check, with its diff (`--diff`) shown once however many checks it
broke. Every text from the repository is shown, never obeyed (control characters and newlines
escaped)."""
from __future__ import annotations

from dezero_grader.present import terminal


_REFUSED_SHOWN = 5


def _one(text) -> str:
    return terminal.printable(str(text), lines=False)


def render(doc: dict, *, diffs: bool = False) -> str:
    rows = doc['steps']
    repo = doc['repository']
    lines = ['history of {} ({} commits, head {}): {} step(s) mapped'.format(
        _one(repo['source']), repo['commits'], repo['head'][:10], len(rows))]
    lines += ['  note: {}'.format(_one(n)[:200]) for n in repo.get('notes', [])]
    refused = not_mapped(doc)
    if not rows:
        lines.append('  no step found: name steps in commit messages ("Done step23"), in branch '
                     'names (step23), or map them in a .dezero-steps file ("23 <commit>" per line)')
    else:
        lines.append('  {:>4}  {:10}  {:7}  {:9}  {:>9}  {}'.format(
            'step', 'commit', 'how', 'verdict', 'score', 'evidence'))
    shown_diffs = {}
    for n, r in enumerate(rows):
        score = '{:g}/{:g}'.format(r['score']['earned'], r['score']['possible']) if r['score'] else '-'
        first_of_commit = n == 0 or rows[n - 1]['commit'] != r['commit']
        shared = sorted([r['step']] + r.get('same_commit_as', []))
        lines.append('  {:>4}  {:10}  {:7}  {:9}  {:>9}  {}{}{}'.format(
            r['step'], r['short'], r['how'], r['verdict'].upper(), score,
            _one(r['evidence'][:60]), ' (cached)' if r['cached'] else '',
            '  [steps {} share this commit]'.format(', '.join(map(str, shared)))
            if len(shared) > 1 and first_of_commit else ''))
        if r['verdict'] not in ('accept',):
            lines.append('        {}'.format(_one(r['reason'][:200])))
        for reg in r['regressions']:
            if reg['status'] == 'broken' and reg.get('first_bad'):
                fb = reg['first_bad']
                lines.append('        {} (step {}) first broken by {} "{}" (last good {}; {} '
                             'commit(s) between, {} graded){}'.format(
                                 _one(reg['check']), reg['step'], fb['short'],
                                 _one(fb['subject'][:60]), reg['last_good']['short'],
                                 reg['searched']['commits'], reg['searched']['graded'],
                                 '; files: ' + _one(', '.join(reg['diff']['files'][:5]))
                                 if reg['diff']['files'] else ''))
                if diffs and reg['diff']['text']:
                    lines.extend(_diff(reg, shown_diffs))
            else:
                lines.append('        {} (step {}): {}'.format(_one(reg['check']), reg['step'],
                                                              _one(reg['why'])))
    for step, why in refused[:_REFUSED_SHOWN]:
        lines.append('  not mapped: step {}: {}'.format(step, _one(why)))
    if len(refused) > _REFUSED_SHOWN:
        lines.append('  not mapped: {} more step(s) named in messages whose commits hold no file '
                     'of the step (--dry-run lists them)'.format(len(refused) - _REFUSED_SHOWN))
    c = doc['counts']
    lines.append('  ' + ' · '.join('{} {}'.format(v, n) for v, n in c['verdicts'].items())
                 + '  ({} graded now, {} from the cache)'.format(c['graded_now'], c['from_cache']))
    return '\n'.join(lines) + '\n'


def not_mapped(doc: dict) -> list:
    """[(step, why)] of the steps some evidence named and none mapped: each message's commits
    hold no file of the step."""
    mapped = {r['step'] for r in doc['steps']}
    return sorted({m['step']: m['refused'] for m in doc['mapping']
                   if m.get('refused') and m['step'] not in mapped}.items())


def _diff(reg: dict, shown: dict) -> list:
    """The diff of a first bad commit, indented, or a pointer to where the same diff was
    already shown (several checks broken by one commit share one diff)."""
    key = (reg['last_good']['commit'], reg['first_bad']['commit'], reg['diff']['text'])
    if key in shown:
        return ['          (the same diff as for {} above)'.format(shown[key])]
    shown[key] = _one(reg['check'])
    return ['          ' + _one(t) for t in reg['diff']['text'].splitlines()[:80]]
