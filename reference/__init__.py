"""The reference DeZero shipped with dezero-grader.

`reference/dezero/` is a complete DeZero, API-compatible with the book's framework. It is the
oracle of the grader's differential checks. It is deliberately *not* installed as a top-level
`dezero` package: a learner's own `dezero` must never be shadowed by it. Put this folder on
`sys.path` (as the grader's reference worker and the tests do) to import it as `dezero`.
"""
from pathlib import Path

#: The folder to put on ``sys.path`` so that ``import dezero`` means the reference.
ROOT = Path(__file__).resolve().parent
