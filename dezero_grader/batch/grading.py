"""`batch`: grade every submission of a folder (of this shard) that the output folder does not
already hold a current scorecard of, in the pool, and write the summary. One submission is
graded by `grade_one`, in a pool process: its scorecard, then its receipt.
"""
from __future__ import annotations

import dataclasses
import shutil
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from dezero_grader.batch import pool
from dezero_grader.batch import times as times_mod
from dezero_grader.batch.folder import (ROSTER, SCORECARDS, SUMMARY, WORK, clear_leftovers, locked,
                                        read_scorecard)
from dezero_grader.batch.records import BatchError, BatchOptions, BatchResult, Shard
from dezero_grader.batch.submissions import HandIn, discover, fingerprint, is_done, write_receipt
from dezero_grader.batch.summary import assignment_info, summarize
from dezero_grader.intake import roster as roster_mod
from dezero_grader.present.progress import Progress
from dezero_grader.records import schema
from dezero_grader.scoring import scorecard_write

@dataclass(frozen=True)
class GradeTask:
    """One submission to grade, as a pool process receives it."""
    entry: HandIn
    fingerprint: str
    options: BatchOptions
    out: str
    timing: object = None     # policy.Timing: when it was handed in (None: not known)

    @property
    def id(self) -> str:
        return self.entry.id


def grade_one(task: GradeTask) -> dict:
    """In a pool process: grade one submission, write its scorecard and receipt."""
    from dezero_grader.grading import run
    started = time.perf_counter()
    entry, out = task.entry, Path(task.out)
    failed, prepared = [], []
    try:
        doc = run.grade(entry.path, task.options.step,
                        dataclasses.replace(task.options.run_options(), timing=task.timing),
                        on_grader_error=failed.append, on_prepared=prepared.append)
        card = out / SCORECARDS / (entry.id + '.json')
        scorecard_write.write(card, doc)
        if doc.get('invalid', {}).get('code') != scorecard_write.GRADER_ERROR:
            # a scorecard of the grader's own failure has no receipt: resuming grades it again.
            # The receipt names what was graded (the scratch copy's fingerprint), so code swapped
            # after discovery is graded again; one that never became a copy, as discovered
            fp = prepared[0].fingerprint if prepared and prepared[0].fingerprint else task.fingerprint
            write_receipt(out, entry, fp, task.options, task.timing)
    except Exception as exc:   # a bug of ours: loud, but it costs only this submission
        return pool.grader_failed(entry.id, 'the grader failed on this submission ({}: {}); this '
                                  'is a bug of the grader, not of the submission'.format(
                                      type(exc).__name__, exc),
                                  seconds=time.perf_counter() - started)
    # a scorecard that says the grader failed (`grader-error`) is listed as not graded by the
    # summary and the exports; the instructor's log gets the traceback behind it
    return pool.graded(entry.id, doc, seconds=time.perf_counter() - started,
                       **({'traceback': pool.traceback_of(failed[0]), 'reason': doc['reason']}
                          if failed else {}))


def watchdog_s(task) -> float:
    """How long one grading may go without progress before the batch stops it: every request of
    its workers answers or is stopped within the sandbox's wall clock of one request, so a longer
    silence is the grader stuck, not the learner's code nor a slow machine."""
    return pool.silence_limit_s(task.options.limits())


def run_batch(submissions, out, options: BatchOptions, *, jobs: int | None = None,
              shard: Shard | None = None, roster=None, force: bool = False, times=None,
              stream=sys.stderr) -> BatchResult:
    """Grade every submission of the folder `submissions` (of this shard) that `out` does not
    already hold a current scorecard of; write the summary. `times` (`batch.times.Times`) say
    when each was handed in, for the policy's late penalty; without them, the roster's own
    submission times where it has them."""
    from dezero_grader.grading import run
    submissions, out = Path(submissions), Path(out)
    if not submissions.is_dir():
        raise BatchError('expected a folder of submissions (one sub-folder or .zip per learner), '
                         'found {}'.format('nothing' if not submissions.exists() else 'a file')
                         + ' at {}'.format(submissions))
    info = assignment_info(options.step)
    run.resolve_device(options.device)   # --device cuda without a GPU stops here
    jobs = jobs or pool.default_jobs()
    shard = shard or Shard(1, 1)
    with locked(out):
        clear_leftovers(out)
        entries, duplicates, ignored = discover(submissions, exclude=(out,))
        entries = [e for e in entries if shard.contains(e.id)]
        duplicates = [f for f in duplicates if shard.contains(f.id)]
        if roster is not None:
            roster_mod.write_json(out / ROSTER, roster)
        elif (out / ROSTER).is_file():
            roster = roster_mod.load_json(out / ROSTER)
        if times is None and roster is not None:
            times = times_mod.from_roster(roster)
        course = options.grading_policy()
        timings = {e.id: times.timing(e.id, course, roster) if times else None for e in entries}
        tasks, resumed = [], 0
        for entry in entries:
            fp = fingerprint(entry)
            if not force and is_done(out, entry, fp, options, timings[entry.id]):
                resumed += 1
            else:
                tasks.append(GradeTask(entry, fp, options, str(out), timings[entry.id]))
        progress = Progress(len(entries), resumed, stream,
                            label='step {} '.format(options.step))
        if times is not None and not any(t and t.due for t in timings.values()):
            progress.note('the hand-in times ({}) come with no due date, and the policy has no '
                          'late.due: nothing is late'.format(times.source))
        if tasks:
            progress.note('grading {} of {} submission(s) of step {} with {} job(s){}'.format(
                len(tasks), len(entries), options.step, jobs,
                ', {} already graded'.format(resumed) if resumed else ''))
        try:
            with pool.terminate_as_exit():
                failures = pool.grade_all(tasks, jobs, out / WORK, progress, grade_one=grade_one,
                                          watchdog=watchdog_s) if tasks else []
        except BaseException:   # Ctrl-C, SIGTERM (a cancelled CI job): leave nothing running
            progress.finish()
            clear_leftovers(out)
            raise
        progress.finish()
        failed = {f.id for f in failures}
        graded = [(e.id, read_scorecard(out / SCORECARDS / (e.id + '.json')))
                  for e in entries if e.id not in failed]
        summary = summarize(assignment=info, options=options.to_json(),
                            shards={'count': shard.count, 'included': [shard.index]},
                            graded=graded, failures=duplicates + failures, ignored=ignored,
                            roster=roster, policy=course.record(),
                            times=None if times is None else {
                                'source': times.source,
                                'unknown': sorted(i for i, t in timings.items() if t is None)})
        schema.write_json(out / SUMMARY, summary, 'batch-summary')
        shutil.rmtree(out / WORK, ignore_errors=True)
    return BatchResult(summary, out, len(tasks) - len(failures), resumed,
                       tuple(duplicates + failures))
