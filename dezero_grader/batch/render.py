"""The summary of a batch or merge for a person, on the terminal."""
from __future__ import annotations

from pathlib import Path

from dezero_grader.batch.folder import SUMMARY
from dezero_grader.present import terminal
from dezero_grader.records.status import VERDICTS
from dezero_grader.scoring import score

def render(summary: dict, out, *, merged: bool = False) -> str:
    """The summary for a person: counts, scores, frequent root causes, what could not be graded;
    for a merge, the shards that are missing."""
    summary = terminal.printable_tree(summary, lines=False)   # one line each: nothing forged
    a, c, s = summary['assignment'], summary['counts'], summary['scores']
    shards = summary['shards']
    where = '' if shards['count'] == 1 else ' (shard{} {} of {})'.format(
        's' if len(shards['included']) > 1 else '', ','.join(map(str, shards['included'])),
        shards['count'])
    lines = ['step {} {}: {} submission(s){} → {}'.format(a['step'], a['title'], c['submissions'],
                                                        where, out)]
    lines.append('  ' + ' · '.join('{} {}'.format(v, c['verdicts'][v]) for v in VERDICTS)
                 + (' · no scorecard {}'.format(c['submissions'] - c['graded'])
                    if c['submissions'] > c['graded'] else ''))
    if s['count']:
        lines.append('  score: mean {:g}/{:g}, median {:g}, min {:g}, max {:g}; {} full mark(s)'.format(
            s['mean'], s['possible'], s['median'], s['min'], s['max'], s['full_marks']))
    profile = summary['options'].get('profile', 'book')
    hardest = sorted((r for r in summary['checks'] if r['pass_rate'] is not None
                      and not r['regression'] and score.counts(r['tier'], profile)),
                     key=lambda r: (r['pass_rate'], r['id']))[:3]
    if hardest and hardest[0]['pass_rate'] < 1:
        lines.append('  hardest checks: ' + ', '.join('{} {:.0%}'.format(r['id'], r['pass_rate'])
                                                      for r in hardest))
    if summary['faults']:
        lines.append('  most frequent root causes (submissions): ' + ', '.join(
            '{} ({})'.format(f['id'], f['submissions']) for f in summary['faults'][:5]))
    uncatalogued = summary.get('uncatalogued') or {}
    if uncatalogued.get('submissions'):
        lines.append('  no catalogued fault matches: {} submission(s) fail for reasons of their own '
                     '({} cause(s): see their scorecards)'.format(uncatalogued['submissions'],
                                                                  uncatalogued['causes']))
    if summary.get('advice_faults'):
        lines.append('  advice, not counted (root causes of checks beyond the book): ' + ', '.join(
            '{} ({})'.format(f['id'], f['submissions']) for f in summary['advice_faults'][:5]))
    if summary.get('compatibility'):
        era = summary['options'].get('era', 'book')
        lines.append('  drifts of the environment ({}): '.format(
            'graded as in 2020, not failures' if era == 'book' else 'required to run on today\'s stack')
            + ', '.join('{} ({} submission{})'.format(d['api'], d['submissions'],
                                                   '' if d['submissions'] == 1 else 's')
                        for d in summary['compatibility'][:6]))
    late = summary.get('late')
    if late:
        rows = {r['id']: r['late'] for r in summary['submissions'] if r.get('late')}
        lines.append('  late ({} submission{}{}): {}'.format(
            len(late['late']), '' if len(late['late']) == 1 else 's',
            ', times from {}'.format(late['source']) if late['source'] else '',
            ', '.join('{} ({:.1f} h, {:g} points)'.format(i, rows[i]['minutes_late'] / 60,
                                                        rows[i]['points'])
                      for i in late['late'][:20] if i in rows) or 'none'))
        if late['unknown']:
            lines.append('  no hand-in time for (graded as on time): ' + ', '.join(
                late['unknown'][:20]) + (', ...' if len(late['unknown']) > 20 else ''))
    if summary['ungraded']:
        lines.append('  could not be graded:')
        for u in summary['ungraded']:
            lines.append('    {}: [{}] {}'.format(u['id'], u['code'], u['reason'][:200]))
    if summary['ignored']:
        lines.append('  not submissions (ignored): ' + ', '.join(summary['ignored'][:10]))
    roster = summary['roster']
    if roster and roster['without_submission']:
        lines.append('  in the roster without a submission: ' + ', '.join(
            p['student'] or p['submission'] for p in roster['without_submission'][:20]))
    if roster and roster['not_in_roster']:
        lines.append('  submissions the roster does not name: ' + ', '.join(roster['not_in_roster'][:20]))
    if merged and shards['missing']:
        lines.append('  MISSING shard(s): ' + ', '.join(map(str, shards['missing'])))
    lines.append('  summary: {}'.format(Path(out) / SUMMARY))
    return '\n'.join(lines) + '\n'
