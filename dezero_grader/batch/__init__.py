"""Batch grading: a folder of submissions → one scorecard each, and a summary of the class.

Where it sits: around `run.grade`, once per submission, in a pool of processes; after it, the
exporters read what it wrote. One module per job:

    records       what a batch is asked and answers (options, shard, failures, result)
    submissions   the folder of submissions: discovery, fingerprints, receipts (resuming)
    times         when each submission was handed in (roster, LMS export, times file): lateness
    folder        the output folder: its layout, its lock, clearing a killed run's leftovers
    pool          the process pool (crashes, watchdog, one BLAS thread per process)
    grading       `batch` itself: grade what is missing or out of date, write the summary
    summary       the summary document (statistics of the class)
    merge         `merge`: shard outputs recombined into one folder and one summary
    render        the summary on the terminal

Resuming: a submission is skipped when its receipt matches the submission as it is now (content
hash of a folder, sha256 of a zip), the options of this run, the assignment files (points or
checks edited: graded again), the grader (its version and code), the grading policy, its
hand-in time, and the bytes of its scorecard; any other submission is graded again. A summary is made only of
scorecards of one assignment version, one grader and one policy. A batch killed at any point
(SIGKILL included) therefore loses at most the gradings in flight, and a restart grades exactly
what is missing or out of date (and stops the sandbox workers a killed one left running).
`--force` grades everything again.

Sharding (`--shard I/N`, 1-based): a submission belongs to shard `h mod N + 1`, h the first
8 bytes of sha256(id) read big-endian, so every CI job computes its share alone, and a
submission stays in its shard when others are added or removed. `merge` recombines shard
outputs into one folder and one summary.
"""
from dezero_grader.batch.folder import (LOCK, RECEIPTS, ROSTER, SCORECARDS, SUMMARY, WORK,
                                        read_scorecard)
from dezero_grader.batch.grading import run_batch
from dezero_grader.batch.merge import merge
from dezero_grader.batch.records import (SCHEMA_VERSION, BatchError, BatchOptions, BatchResult, Failure,
                                         Shard, grader_code_sha256, shard_of)
from dezero_grader.batch.render import render
from dezero_grader.batch.submissions import HandIn, discover, fingerprint, is_done
from dezero_grader.batch.summary import assignment_info, summarize

__all__ = ['LOCK', 'RECEIPTS', 'ROSTER', 'SCORECARDS', 'SUMMARY', 'WORK', 'read_scorecard',
           'SCHEMA_VERSION', 'BatchError', 'BatchOptions', 'BatchResult', 'Failure', 'Shard',
           'grader_code_sha256', 'shard_of', 'HandIn', 'discover', 'fingerprint', 'is_done',
           'assignment_info', 'summarize', 'run_batch', 'merge', 'render']
