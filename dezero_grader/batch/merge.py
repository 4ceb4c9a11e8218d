"""`merge`: combine the output folders of shards (or of earlier merges) into one folder, their
scorecards copied and one summary recomputed from them. Only outputs of one batch (the same
assignment, options, policy and shard count) merge, each shard once.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

from dezero_grader.batch.folder import ROSTER, SCORECARDS, SUMMARY, clear_leftovers, locked, read_scorecard
from dezero_grader.batch.records import BatchError, BatchResult, Failure
from dezero_grader.batch.summary import summarize
from dezero_grader.intake import roster as roster_mod
from dezero_grader.records import schema
from dezero_grader.scoring import scorecard_write

def _read_summary(folder: Path) -> dict:
    path = folder / SUMMARY
    try:
        with open(path, encoding='utf-8') as f:
            doc = json.load(f)
    except FileNotFoundError:
        raise BatchError('{} has no {}: is it the --out folder of a batch?'.format(folder, SUMMARY)) from None
    except (OSError, ValueError) as exc:
        raise BatchError('{} cannot be read: {}'.format(path, exc)) from None
    problems = schema.errors('batch-summary', doc)
    if problems:
        raise BatchError('{} is not a valid batch summary: {}'.format(path, '; '.join(problems[:3])))
    return doc


def merge(folders, out, *, stream=sys.stderr) -> BatchResult:
    """Combine the output folders of shards (or of earlier merges) into `out`: their scorecards
    copied, one summary recomputed from them."""
    folders = [Path(f) for f in folders]
    out = Path(out)
    if not folders:
        raise BatchError('merge needs at least one batch output folder')
    if out.resolve() in {f.resolve() for f in folders}:
        raise BatchError('--out {} is one of the folders being merged; choose a new folder'.format(out))
    summaries = [_read_summary(f) for f in folders]
    base = summaries[0]
    for folder, s in zip(folders[1:], summaries[1:]):
        for key in ('assignment', 'options', 'policy'):
            if s.get(key) != base.get(key):
                raise BatchError('{} and {} were graded differently ({}: {} vs {}); only outputs '
                                 'of the same batch can be merged'.format(
                                     folders[0], folder, key, base[key], s[key]))
        if s['shards']['count'] != base['shards']['count']:
            raise BatchError('{} is split in {} shards but {} in {}'.format(
                folders[0], base['shards']['count'], folder, s['shards']['count']))
    owner = {}
    for folder, s in zip(folders, summaries):
        for index in s['shards']['included']:
            if index in owner:
                raise BatchError('shard {}/{} is in both {} and {}'.format(
                    index, base['shards']['count'], owner[index], folder))
            owner[index] = folder
    graded, failures, ignored, rosters = {}, [], set(), []
    for folder, s in zip(folders, summaries):
        for row in s['submissions']:
            if row['id'] in graded:
                raise BatchError('submission {!r} is in two of the merged folders'.format(row['id']))
            graded[row['id']] = read_scorecard(folder / row['scorecard'])
        failures += [Failure(u['id'], u['code'], u['reason']) for u in s['ungraded']
                     if not u['scorecard']]
        ignored.update(s['ignored'])
        if (folder / ROSTER).is_file():
            rosters.append((folder, roster_mod.load_json(folder / ROSTER)))
    roster = rosters[0][1] if rosters else None
    for folder, other in rosters[1:]:
        if other.to_json() != roster.to_json():
            raise BatchError('{} and {} hold different rosters'.format(rosters[0][0], folder))
    policy = None
    if base.get('policy'):
        policy = next((doc['policy'] for doc in graded.values() if 'policy' in doc),
                      dict(base['policy'], document={}))
    lates = [s['late'] for s in summaries if s.get('late', {}).get('source')]
    times = {'source': lates[0]['source'],
             'unknown': sorted({i for late in lates for i in late['unknown']})} if lates else None
    summary = summarize(assignment=base['assignment'], options=base['options'],
                        shards={'count': base['shards']['count'], 'included': sorted(owner)},
                        graded=list(graded.items()), failures=failures, ignored=ignored,
                        roster=roster, policy=policy, times=times)
    with locked(out):
        clear_leftovers(out)
        for ident, doc in graded.items():
            scorecard_write.write(out / SCORECARDS / (ident + '.json'), doc)
        if roster is not None:
            roster_mod.write_json(out / ROSTER, roster)
        schema.write_json(out / SUMMARY, summary, 'batch-summary')
    if summary['shards']['missing']:
        stream.write('merge: shard(s) {} of {} missing: their submissions are not in the '
                     'summary\n'.format(', '.join(map(str, summary['shards']['missing'])),
                                        summary['shards']['count']))
    return BatchResult(summary, out, 0, len(graded), tuple(failures), merged=True)
