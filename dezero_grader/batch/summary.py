"""The summary of a class (summary.json, schemas/batch-summary.schema.json), made of finished
scorecards only: counts of verdicts, score statistics, each check's pass rate, the catalogued
root causes and the failures no catalogued fault explains, drifts of the environment, what could
not be graded, and the roster's view. It never mixes versions of the assignment, the grader or
the policy.

`summarize` takes scorecards as documents (what a batch folder stores) and reads them as records
(`dezero_grader.scoring.scorecard_read.Scorecard`); the helpers below take `[(submission id, Scorecard)]`.
"""
from __future__ import annotations

import collections
import statistics

from dezero_grader.batch.folder import SCORECARDS
from dezero_grader.batch.records import SCHEMA_VERSION, BatchError, shard_of
from dezero_grader.records import schema
from dezero_grader.records.status import VERDICTS
from dezero_grader.scoring import score, scorecard_write
from dezero_grader.scoring.scorecard_read import Scorecard

# -- the summary ----------------------------------------------------------------------------------


def _round(x):
    return None if x is None else round(float(x), 4)


def _score_stats(graded, possible) -> dict:
    # a scorecard of the grader's own failure is no grade: it counts in no statistic of scores
    graded = [(i, card) for i, card in graded if not card.grader_failed]
    earned = [card.score.earned for _, card in graded]
    extension = [card.score.extension_earned for _, card in graded]
    histogram = []
    if possible > 0:
        bins = [0] * 10
        for e in earned:
            bins[min(int(100.0 * e / possible // 10), 9)] += 1
        histogram = [{'from_percent': 10 * i, 'to_percent': 10 * (i + 1), 'count': n}
                     for i, n in enumerate(bins)]
    return {
        'count': len(earned), 'possible': possible,
        'mean': _round(statistics.fmean(earned)) if earned else None,
        'median': _round(statistics.median(earned)) if earned else None,
        'min': _round(min(earned)) if earned else None,
        'max': _round(max(earned)) if earned else None,
        'stdev': _round(statistics.pstdev(earned)) if earned else None,
        'full_marks': sum(1 for e in earned if possible > 0 and e >= possible),
        'histogram': histogram,
        'extension_mean': _round(statistics.fmean(extension)) if extension else None,
    }


def _check_rates(graded) -> list:
    table = {}
    for _, card in graded:
        for c in card.checks:
            row = table.get(c.id)
            if row is None:
                row = table[c.id] = {
                    'id': c.id, 'title': c.title, 'step': c.step, 'tier': c.tier,
                    'regression': c.regression, 'points': c.points, 'runs': 0,
                    'passed': 0, 'failed': 0, 'error': 0, 'timeout': 0, 'skipped': 0,
                    'not_applicable': 0}
            row['runs'] += 1
            row[c.status] += 1
    rows = list(table.values())
    for row in rows:
        judged = row['runs'] - row['skipped'] - row['not_applicable']
        row['pass_rate'] = _round(row['passed'] / judged) if judged else None
    rows.sort(key=lambda r: r['regression'])   # stable: scorecard order within each group
    return rows


def fault_counts(graded, advice=False) -> list:
    """Catalogued root causes, most frequent first: a submission counts once for each cause its
    scorecard's diagnosis names (not once per failing check that a fault could explain). Only
    the causes of checks that count (`advice`: only those of advice, the checks that do not)."""
    table = {}
    for _, card in graded:
        seen = set()
        for cause in _diagnosed_causes(card):
            if cause['kind'] != 'fault' or is_advice(card, cause) != advice:
                continue
            best = cause['faults'][0]
            row = table.setdefault(best['id'], {'id': best['id'], 'title': best['title'],
                                                'submissions': 0, 'checks': set(), 'with': set()})
            row['checks'].update(cause['checks'])
            row['with'].update(f['id'] for f in cause['faults'][1:])
            if best['id'] not in seen:
                seen.add(best['id'])
                row['submissions'] += 1
    rows = sorted(table.values(), key=lambda r: (-r['submissions'], r['id']))
    out = []
    for r in rows:
        row = dict(r, checks=sorted(r['checks']))
        together = sorted(row.pop('with'))
        if together:
            row['indistinguishable_from'] = together
        out.append(row)
    return out


def is_advice(card: Scorecard, cause) -> bool:
    """Whether a cause explains advice only (checks that do not count under the card's profile);
    a diagnosis written before causes were marked is judged by its checks' tiers."""
    if 'advice' in cause:
        return bool(cause['advice'])
    checks = [card.check(i) for i in cause['checks']]
    return bool(checks) and all(c is not None and not card.counts(c) for c in checks)


def _diagnosed_causes(card: Scorecard) -> list:
    """The root causes of a scorecard; one written before the diagnosis existed counts the
    fault its failing checks name, once."""
    if card.diagnosis is not None:
        return card.diagnosis['causes']
    causes = {}
    for c in card.failing:
        if c.faults:
            causes.setdefault(c.faults[0]['id'], {'kind': 'fault', 'faults': [c.faults[0]],
                                                  'checks': []})['checks'].append(c.id)
    return list(causes.values())


def uncatalogued(graded) -> dict:
    """Submissions with failing checks that no catalogued fault explains (errors of their own code
    shared by several checks, or failures nothing matches)."""
    subs = causes = 0
    for _, card in graded:
        diagnosis = card.diagnosis
        if not diagnosis:
            continue
        n = sum(1 for c in diagnosis['causes'] if c['kind'] != 'fault'
                and not is_advice(card, c)) + bool(diagnosis['unexplained'])
        causes += n
        subs += bool(n)
    return {'submissions': subs, 'causes': causes}


def _drift_counts(graded) -> list:
    """Per API of the 2020 stack the scorecards list: how many submissions and places met it."""
    table = {}
    for submission_id, card in graded:
        for f in card.compatibility:
            row = table.setdefault(f.api, {'api': f.api, 'since': f.since or '',
                                           'fix': f.fix or '', 'ids': set(), 'places': 0})
            row['ids'].add(submission_id)
            row['places'] += 1
    rows = sorted(table.values(), key=lambda r: (-len(r['ids']), r['api']))
    return [{'api': r['api'], 'since': r['since'], 'fix': r['fix'], 'submissions': len(r['ids']),
             'places': r['places']} for r in rows]


def _roster_report(roster, considered, shards) -> dict | None:
    if roster is None:
        return None
    # a person's submission may be named by any of their ids (a Canvas or Gradescope export)
    found, _, lone = roster.match(considered)
    handed_in = {id(p): i for i, p in found.items()}
    people = [p for p in roster.people
              if shard_of(handed_in.get(id(p), p.submission), shards['count']) in shards['included']]
    return {'people': len(people),
            'without_submission': [{'submission': p.submission, 'student': p.student}
                                   for p in people if id(p) not in handed_in],
            'not_in_roster': lone,
            'names': {i: p.student for i, p in sorted(found.items()) if p.student}}


def _one_version(graded, assignment: dict, policy: dict | None) -> None:
    """A summary never mixes versions: every scorecard must answer this assignment (its content
    hash and possible points), this grader version and this policy."""
    for ident, card in graded:
        doc, found = card.document, []   # the versions are no reader's business but this one's
        if doc['assignment'].get('sha256', assignment.get('sha256')) != assignment.get('sha256'):
            found.append('another version of the assignment files')
        if card.score.possible != assignment['possible']:
            found.append('{:g} points possible instead of {:g}'.format(card.score.possible,
                                                                      assignment['possible']))
        if doc['tool']['version'] != scorecard_write.TOOL_VERSION:
            found.append('grader version {} instead of {}'.format(doc['tool']['version'],
                                                                  scorecard_write.TOOL_VERSION))
        if policy is not None and doc.get('policy', policy)['sha256'] != policy['sha256']:
            found.append('the policy {!r} instead of {!r}'.format(doc['policy']['name'],
                                                                  policy['name']))
        if found:
            raise BatchError('the scorecard of {} was graded with {}: a summary never mixes two '
                             'versions; grade it again (batch ... --force, or remove its receipt)'
                             .format(ident, ', '.join(found)))


def late_of(card: Scorecard) -> dict | None:
    """The lateness a scorecard's late adjustment records (None: on time, or not known)."""
    for adj in card.score.adjustments:
        if adj.kind == 'late':
            return {'minutes_late': adj.details.get('minutes_late', 0.0),
                    'days_late': adj.details.get('days_late', 0), 'points': adj.points}
    return None


def _late_report(graded, times) -> dict | None:
    """Who was late and by how much (from the scorecards), and, where the batch was given times,
    where they came from and which submissions they did not name (graded as on time)."""
    late = sorted(i for i, card in graded if late_of(card) is not None)
    if times is None and not late:
        return None
    return {'source': (times or {}).get('source', ''), 'late': late,
            'unknown': sorted((times or {}).get('unknown', ()))}


def summarize(*, assignment: dict, options: dict, shards: dict, graded, failures, ignored=(),
              roster=None, policy: dict | None = None, times: dict | None = None) -> dict:
    """The batch summary, from finished scorecards only: `graded` is [(id, scorecard)], `failures`
    the submissions left without a scorecard, `times` where the hand-in times came from and the
    submissions they did not name. Validated."""
    graded = [(i, Scorecard.from_document(doc)) for i, doc in sorted(graded, key=lambda item: item[0])]
    if policy is None and graded:
        policy = graded[0][1].document.get('policy')   # the first scorecard's; the others must agree
    _one_version(graded, assignment, policy)
    verdicts = collections.Counter(card.verdict for _, card in graded)
    ungraded = [{'id': i, 'code': (card.invalid.code if card.invalid else '') or 'invalid',
                 'reason': card.reason, 'scorecard': True}
                for i, card in graded if card.is_invalid]
    ungraded += [{'id': f.id, 'code': f.code, 'reason': f.reason, 'scorecard': False}
                 for f in failures]
    ungraded.sort(key=lambda u: u['id'])
    considered = {i for i, _ in graded} | {f.id for f in failures}
    summary = {
        'schema_version': SCHEMA_VERSION,
        'tool': {'name': 'dezero-grader', 'version': scorecard_write.TOOL_VERSION},
        'assignment': dict(assignment),
        'options': dict(options),
        'shards': {'count': shards['count'], 'included': sorted(shards['included']),
                   'missing': sorted(set(range(1, shards['count'] + 1)) - set(shards['included']))},
        'generated_at': scorecard_write.utc_now(),
        'counts': {'submissions': len(considered), 'graded': len(graded),
                   'ungraded': len(ungraded),
                   'verdicts': {v: verdicts.get(v, 0) for v in VERDICTS}},
        'scores': _score_stats(graded, assignment['possible']),
        'checks': _check_rates(graded),
        'faults': fault_counts(graded),
        'advice_faults': fault_counts(graded, advice=True),
        'uncatalogued': uncatalogued(graded),
        'compatibility': _drift_counts(graded),
        'ungraded': ungraded,
        'submissions': [dict({'id': i, 'scorecard': '{}/{}.json'.format(SCORECARDS, i),
                              'content_hash': card.content_hash,
                              'verdict': card.verdict, 'earned': card.score.earned,
                              'possible': card.score.possible,
                              'extension_earned': card.score.extension_earned},
                             **({'late': late_of(card)} if late_of(card) else {}))
                        for i, card in graded],
        'ignored': sorted(ignored),
        'roster': _roster_report(roster, considered, shards),
    }
    if policy is not None:
        summary['policy'] = {'name': policy['name'], 'sha256': policy['sha256']}
    late = _late_report(graded, times)
    if late is not None:
        summary['late'] = late
    schema.validate('batch-summary', summary)
    return summary


def assignment_info(step: int) -> dict:
    """What a summary says of the assignment: its step, title, content hash and possible points."""
    from dezero_grader.catalogue import assignments
    a = assignments.load(step)
    return {'step': a.step, 'title': a.title, 'sha256': assignments.content_hash(step),
            'possible': float(score.assignment_possible(a, 'book')),
            'extension_possible': float(score.assignment_possible(a, 'extension'))}
