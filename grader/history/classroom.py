"""A classroom: a folder of repositories (one per student, as GitHub Classroom downloads
them), each graded as a history, and per step a batch-style folder that `export` reads."""
from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

from grader import load, report, schema, scorecard
from grader.batch.folder import SCORECARDS, SUMMARY, read_scorecard
from grader.batch.summary import assignment_info, summarize
from grader.gitrepo import RepoError, looks_like_repo
from grader.history.document import CACHE, grade_history
from grader.history.grading import options_json
from grader.history.mapping import HistoryError

@dataclass
class ClassroomResult:
    out: Path
    histories: dict            # repository id -> history document
    failures: dict             # repository id -> why it could not be read
    step_folders: dict         # step -> batch-style folder (summary.json, scorecards/)


def find_repositories(folder: Path) -> tuple:
    """(id -> path of each repository in the folder, names of entries that are not one)."""
    found, ignored = {}, []
    for e in sorted(Path(folder).iterdir(), key=lambda p: p.name):
        if e.name.startswith('.') or e.is_symlink():
            continue
        if e.is_dir() and looks_like_repo(e):
            found[load.safe_id(e.name)] = e
        else:
            ignored.append(load.safe_id(e.name))
    return found, ignored


def grade_classroom(folder, out, options, *, jobs=None, map_file=None, tip=None, steps=None,
                    cache=None, force=False, deep=False, stream=sys.stderr) -> ClassroomResult:
    """Every repository of `folder` (one per student, as GitHub Classroom downloads them)
    graded as a history into out/<id>/, with one content cache for all (the same code is graded
    once); then, per step, a batch-style folder out/steps/stepNN/ (scorecards/<id>.json with the
    history's verdict, summary.json) that `export` reads."""
    folder, out = Path(folder), Path(out)
    if not folder.is_dir():
        raise HistoryError('--classroom expects a folder of git repositories, found {}'.format(
            'nothing' if not folder.exists() else 'a file') + ' at {}'.format(folder))
    repos, ignored = find_repositories(folder)
    if not repos:
        raise HistoryError('{} holds no git repository (expected one folder with .git per '
                           'student)'.format(folder))
    cache = Path(cache) if cache else out / CACHE
    histories, failures = {}, {}
    for ident, path in repos.items():
        stream.write('classroom: {} ({}/{})\n'.format(ident, len(histories) + len(failures) + 1,
                                                      len(repos)))
        try:
            result = grade_history(str(path), out / ident, options, jobs=jobs, map_file=map_file,
                                   tip=tip, steps=steps, cache=cache, force=force, deep=deep,
                                   stream=stream)
        except (HistoryError, RepoError) as e:
            failures[ident] = str(e)
            continue
        histories[ident] = result.document
    step_folders = {}
    per_step = {}
    for ident, doc in histories.items():
        for row in doc['steps']:
            if row['scorecard']:
                per_step.setdefault(row['step'], []).append((ident, row))
    bopts = {'profile': options.profile, 'era': options.era, 'device': options.device,
             'seed': options.seed, 'timeout_s': options.limits.call_s,
             'memory_mb': options.limits.memory_mb, 'sandbox': options_json(options)['sandbox']}
    for step, items in sorted(per_step.items()):
        target = out / 'steps' / 'step{:02d}'.format(step)
        graded = []
        for ident, row in items:
            card = read_scorecard(out / ident / row['scorecard'])
            if row['verdict'] != card['verdict']:
                # the history knows more than one snapshot: a rollback whose earlier check never
                # worked is a reject; the points stay the scorecard's
                card = dict(card, verdict=row['verdict'], reason='history: ' + row['reason'])
            scorecard.write(target / SCORECARDS / (ident + '.json'), card)
            graded.append((ident, card))
        summary = summarize(assignment=assignment_info(step), options=bopts,
                                  shards={'count': 1, 'included': [1]}, graded=graded,
                                  failures=[], ignored=ignored)
        schema.write_json(target / SUMMARY, summary, 'batch-summary')
        step_folders[step] = target
    return ClassroomResult(out, histories, failures, step_folders)


def render_classroom(result: ClassroomResult) -> str:
    lines = ['classroom: {} repositor{} graded → {}'.format(
        len(result.histories), 'y' if len(result.histories) == 1 else 'ies', result.out)]
    for ident, doc in sorted(result.histories.items()):
        v = doc['counts']['verdicts']
        rollbacks = ['{} ({})'.format(r['step'], ', '.join(sorted({g['first_bad']['short']
                                                                    for g in r['regressions']
                                                                    if g.get('first_bad')})))
                     for r in doc['steps'] if r['verdict'] == 'rollback']
        lines.append('  {}: {} step(s) · {}{}'.format(
            report.printable(ident, lines=False), len(doc['steps']),
            ' · '.join('{} {}'.format(k, n) for k, n in v.items() if n),
            '; rollbacks at step ' + ', '.join(rollbacks) if rollbacks else ''))
    for ident, why in sorted(result.failures.items()):
        lines.append('  {}: not graded: {}'.format(report.printable(ident, lines=False),
                                                   report.printable(why, lines=False)[:200]))
    if result.step_folders:
        lines.append('  per-step summaries for export: {}'.format(
            ', '.join(str(p) for _, p in sorted(result.step_folders.items())[:3])
            + (' …' if len(result.step_folders) > 3 else '')))
    return '\n'.join(lines) + '\n'
