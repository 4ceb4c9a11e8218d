"""A learner's history graded step by step: which commit is which step, each step graded at its
commit, and the commit that first broke what an earlier step got right.

Where it sits: around `run.grade`, like `batch`, but over the commits of one git repository
(`gitrepo`). The data flow, in order, one module per stage:

1. **map** the steps to commits (`mapping`): a mapping file, tags and branches, commit
   messages, the commit that adds a step's file; an inferred mapping only to a commit that
   holds the step's file; every mapping says how it was found.
2. **cut** each step's graded files out of its commit's tree (`subset`); their content hash is
   both the seed and the cache key.
3. **grade** every step at its commit in batch's process pool, each scorecard cached by content
   (`grading`); an interrupted run resumes from the cache.
4. **judge** the history (`judge`): rollbacks of checks that passed at their own step, the
   first commit that broke each (bisected), and the diff of the graded files; a regression
   check that never passed at its own step "never worked".
5. **write** the history document (`document`, `schemas/history.schema.json`), its rows in
   commit order, and show it: the terminal timeline (`timeline`), HTML (`html`).

`classroom` grades a folder of repositories, one history each (one repository's failure is its
own result), names the repositories that share commits, and writes per-step batch-style folders
for summaries and exports. Reading a repository safely is `gitdir`'s and `gitrepo`'s job.
"""
from dezero_grader.history.classroom import (ClassroomResult, find_repositories, grade_classroom,
                                             render_classroom)
from dezero_grader.history.document import CACHE, DOCUMENT, HTML, HistoryResult, grade_history
from dezero_grader.history.mapping import (HistoryError, StepCommit, find_steps, parse_map, parse_steps,
                                           show_mapping, steps_in_message)
from dezero_grader.history.subset import graded_files, graded_subset
from dezero_grader.history.timeline import render
from dezero_grader.intake.gitrepo import RepoError

__all__ = ['RepoError', 'HistoryError', 'StepCommit', 'find_steps', 'parse_map', 'parse_steps',
           'show_mapping', 'steps_in_message', 'graded_files', 'graded_subset', 'CACHE',
           'DOCUMENT', 'HTML', 'HistoryResult', 'grade_history', 'render', 'ClassroomResult',
           'find_repositories', 'grade_classroom', 'render_classroom']
