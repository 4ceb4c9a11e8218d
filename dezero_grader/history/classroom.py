"""A classroom: a folder of repositories (one per student, as GitHub Classroom downloads
them), each graded as a history, and per step a batch-style folder that `export` reads.

Each repository's failure is its own result (`classroom.json` lists every repository, graded or
not, and why not); the others go on. Repositories that share commits are named there with the
commits they share: a repository made by copying another's history shows it, whatever its
folders say. Commits that more than half of the classroom holds (three repositories at least)
are the starting point they were given, and are counted apart.
"""
from __future__ import annotations

import itertools
import sys
from dataclasses import dataclass, field
from pathlib import Path

from dezero_grader.batch.folder import SCORECARDS, SUMMARY, read_scorecard
from dezero_grader.batch.records import Failure
from dezero_grader.batch.summary import assignment_info, summarize
from dezero_grader.history.document import CACHE, DOCUMENT, grade_history
from dezero_grader.history.grading import options_json
from dezero_grader.history.mapping import HistoryError
from dezero_grader.intake import load
from dezero_grader.intake.gitrepo import RepoError, looks_like_repo
from dezero_grader.present import terminal
from dezero_grader.records import schema
from dezero_grader.scoring import scorecard_write

SCHEMA_VERSION = '1.0'
CLASSROOM = 'classroom.json'
SHARED_LISTED = 20      # commits listed per pair of repositories that share them


@dataclass
class ClassroomResult:
    out: Path
    histories: dict            # repository id -> history document
    failures: dict             # repository id -> why it could not be read
    step_folders: dict         # step -> batch-style folder (summary.json, scorecards/)
    shared: list = field(default_factory=list)   # pairs of repositories that share commits
    document: dict | None = None                 # classroom.json


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
    histories, failures, codes, commits = {}, {}, {}, {}
    for ident, path in repos.items():
        stream.write('classroom: {} ({}/{})\n'.format(ident, len(histories) + len(failures) + 1,
                                                      len(repos)))
        try:
            result = grade_history(str(path), out / ident, options, jobs=jobs, map_file=map_file,
                                   tip=tip, steps=steps, cache=cache, force=force, deep=deep,
                                   stream=stream)
        except RepoError as e:
            failures[ident], codes[ident] = str(e), 'unreadable'
            continue
        except HistoryError as e:
            failures[ident], codes[ident] = str(e), 'bad-mapping'
            continue
        except Exception as e:    # the boundary: one repository never ends the classroom
            failures[ident], codes[ident] = ('the grader failed on this repository ({}); a bug '
                                             'of the grader, not of the repository'.format(
                                                 type(e).__name__)), 'grader-error'
            continue
        histories[ident] = result.document
        commits[ident] = result.commits
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
            scorecard_write.write(target / SCORECARDS / (ident + '.json'), card)
            graded.append((ident, card))
        summary = summarize(assignment=assignment_info(step), options=bopts,
                            shards={'count': 1, 'included': [1]}, graded=graded,
                            failures=[Failure(i, codes[i], why) for i, why in sorted(failures.items())],
                            ignored=ignored)
        schema.write_json(target / SUMMARY, summary, 'batch-summary')
        step_folders[step] = target
    shared, common = shared_commits(commits, histories)
    doc = {
        'schema_version': SCHEMA_VERSION,
        'tool': {'name': 'dezero-grader', 'version': scorecard_write.TOOL_VERSION},
        'source': str(folder),
        'generated_at': scorecard_write.utc_now(),
        'repositories': [
            {'id': ident, 'status': 'graded', 'history': '{}/{}'.format(ident, DOCUMENT),
             'steps': len(histories[ident]['steps']),
             'verdicts': histories[ident]['counts']['verdicts']} if ident in histories else
            {'id': ident, 'status': 'failed', 'code': codes[ident], 'reason': failures[ident]}
            for ident in sorted(repos)],
        'ignored': sorted(ignored),
        'shared': shared,
        'common_commits': common,
    }
    schema.write_json(out / CLASSROOM, doc, 'classroom')
    return ClassroomResult(out, histories, failures, step_folders, shared, doc)


def shared_commits(commits: dict, histories: dict) -> tuple:
    """([{repositories, count, commits}] for every two repositories that hold commits in common,
    the number of commits held by more than half of them (at least three): what they were all
    given to start from, left out of the pairs)."""
    holders = {}
    for ident, shas in commits.items():
        for sha in shas:
            holders[sha] = holders.get(sha, 0) + 1
    common = {sha for sha, n in holders.items() if n >= 3 and n * 2 > len(commits)}
    subjects = {r['commit']: r['subject'] for doc in histories.values() for r in doc['steps']}
    pairs = []
    for a, b in itertools.combinations(sorted(commits), 2):
        both = sorted((commits[a] & commits[b]) - common)
        if both:
            pairs.append({'repositories': [a, b], 'count': len(both),
                          'commits': [dict({'commit': sha}, **({'subject': subjects[sha][:200]}
                                                               if sha in subjects else {}))
                                      for sha in both[:SHARED_LISTED]]})
    return pairs, len(common)


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
            terminal.printable(ident, lines=False), len(doc['steps']),
            ' · '.join('{} {}'.format(k, n) for k, n in v.items() if n),
            '; rollbacks at step ' + ', '.join(rollbacks) if rollbacks else ''))
    for ident, why in sorted(result.failures.items()):
        lines.append('  {}: not graded: {}'.format(terminal.printable(ident, lines=False),
                                                   terminal.printable(why, lines=False)[:200]))
    for pair in result.shared:
        named = ', '.join(c['commit'][:10] + (' "{}"'.format(c['subject'][:40]) if 'subject' in c
                                              else '') for c in pair['commits'][:3])
        lines.append('  shared commits: {} and {} hold {} commit(s) in common ({}{})'.format(
            *(terminal.printable(i, lines=False) for i in pair['repositories']), pair['count'],
            terminal.printable(named, lines=False), ', …' if pair['count'] > 3 else ''))
    if result.document and result.document['common_commits']:
        lines.append('  {} commit(s) held by more than half of the repositories are taken as their '
                     'common start and not counted as shared'.format(
                         result.document['common_commits']))
    if result.step_folders:
        lines.append('  per-step summaries for export: {}'.format(
            ', '.join(str(p) for _, p in sorted(result.step_folders.items())[:3])
            + (' …' if len(result.step_folders) > 3 else '')))
    return '\n'.join(lines) + '\n'
