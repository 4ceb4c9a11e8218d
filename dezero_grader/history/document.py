"""`history`: map, grade, judge and write the history document of one repository
(`schemas/history.schema.json`), with each step's scorecard beside it.
"""
from __future__ import annotations

import shutil
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from dezero_grader.batch import pool
from dezero_grader.batch.folder import SCORECARDS, locked, stop_leftover_workers
from dezero_grader.catalogue import assignments
from dezero_grader.history.grading import Grader, options_json
from dezero_grader.history.judge import judge
from dezero_grader.history.mapping import commit_order, count_how, find_steps, sharing
from dezero_grader.history.subset import Trees
from dezero_grader.intake.gitrepo import Repo
from dezero_grader.present import terminal
from dezero_grader.records import schema
from dezero_grader.records.status import VERDICTS
from dezero_grader.scoring import scorecard_write

SCHEMA_VERSION = '1.0'


DOCUMENT, HTML, CACHE = 'history.json', 'history.html', 'cache'


@dataclass
class HistoryResult:
    document: dict
    out: Path
    scorecards: dict = field(default_factory=dict)
    commits: frozenset = frozenset()     # every commit the refs read reach (classroom sharing)



def grade_history(source: str, out, options, *, jobs: int | None = None, map_file=None,
                  tip: str | None = None, steps=None, cache=None, force=False, deep=False,
                  stream=sys.stderr) -> HistoryResult:
    """Map, grade, judge and write the history of the repository `source` to `out`."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    cache = Path(cache) if cache else out / CACHE
    cache.mkdir(parents=True, exist_ok=True)
    available = set(assignments.available_steps())
    with locked(out):
        for stale in out.glob('.history-*'):     # what a killed run left: its workers, its files
            stop_leftover_workers(stale)
            shutil.rmtree(stale, ignore_errors=True)
        work = Path(tempfile.mkdtemp(prefix='.history-', dir=out))
        try:
            repo = Repo(source, work)
            head = repo.resolve(tip) if tip else repo.head()
            trees = Trees(repo, work / 'trees')
            mapped, found = find_steps(repo, head, map_file, trees)
            mapped = [m for m in mapped if m.step in available and (steps is None or m.step in steps)]
            grader = Grader(repo, options, work, cache, jobs=jobs or pool.default_jobs(),
                            force=force, stream=stream, trees=trees)
            if mapped:
                stream.write('history: {} step(s) found in {} ({}); grading\n'.format(
                    len(mapped), terminal.printable(str(source), lines=False),
                    ', '.join('{} by {}'.format(n, how) for how, n in count_how(mapped))))
            own = {m.step: grader.prepare(m.step, m.sha) for m in mapped}
            grader.grade(list(own.values()))
            rows = commit_order(repo, head, judge(grader, mapped, own, options.profile, deep=deep),
                                sha=lambda r: r['commit'], step=lambda r: r['step'])
            for sha, group in sharing(rows, sha=lambda r: r['commit'],
                                      step=lambda r: r['step']).items():
                for r in rows:
                    if r['commit'] == sha:
                        r['same_commit_as'] = [s for s in group if s != r['step']]
            scorecards = {}
            for m in mapped:
                g = own[m.step]
                if g.doc is not None:
                    scorecard_write.write(out / SCORECARDS / 'step{:02d}.json'.format(m.step), g.doc)
                    scorecards[m.step] = g.doc
            doc = {
                'schema_version': SCHEMA_VERSION,
                'tool': {'name': 'dezero-grader', 'version': scorecard_write.TOOL_VERSION},
                'repository': {'source': str(source), 'head': head,
                               'commits': len(repo.log(head)), 'notes': list(repo.notes)},
                'options': options_json(options),
                'generated_at': scorecard_write.utc_now(),
                'mapping': [dict({'step': f.step, 'commit': f.sha, 'how': f.how,
                                  'evidence': f.detail, 'chosen': any(m == f for m in mapped)},
                                 **({'refused': f.refused} if f.refused else {}))
                            for f in found if steps is None or f.step in steps],
                'steps': rows,
                'counts': {'steps': len(rows), 'graded_now': grader.graded_now,
                           'from_cache': grader.from_cache,
                           'verdicts': {v: sum(1 for r in rows if r['verdict'] == v)
                                        for v in VERDICTS}},
            }
            schema.write_json(out / DOCUMENT, doc, 'history')
            commits = repo.reachable()
        finally:
            shutil.rmtree(work, ignore_errors=True)
    return HistoryResult(doc, out, scorecards, commits)
