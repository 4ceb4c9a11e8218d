"""Code that runs inside a worker, next to the submission: scenarios → plain-data observations.

Nothing here decides anything. A scenario drives the learner's (or the reference's) package
through the book's public API and reports what it saw — values, shapes, dtypes, devices, graph
structure, raised exceptions — as plain data that `dezero_grader.wire` carries to the trusted process,
where the checks judge it. Scenarios are registered by name in `SCENARIOS`.
"""
from dezero_grader.sandboxed.probes.registry import SCENARIOS, scenario  # noqa: F401
