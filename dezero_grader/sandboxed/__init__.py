"""The code that runs inside a learner's worker, in the sandbox, beside the learner's code.

Everything under ``dezero_grader/sandboxed/`` is started by ``dezero_grader.isolation.worker_process`` as a separate process and
is as exposed as the submission it runs: the worker loop (``worker``), the probes and their
scenarios (``probes``), and the simulated CUDA device (``simdevice``). Whatever it reports is
data for the trusted side to check, never a decision.

The import rule, both ways (``tests/unit/test_layout.py``):

* code here imports, of the grader, only this package, ``dezero_grader.wire`` (the protocol both sides
  speak), ``dezero_grader.errors`` and ``dezero_grader.contracts`` (declarations, no logic of either side);
* trusted modules never import anything from here, so no scenario body, probe or simulated
  device ever runs in the process that decides a verdict. The one exception is
  ``dezero_grader.grading.rerun``: a learner's repro snippet runs their own code in their own process on
  purpose, so that their debugger and traceback work.
"""
