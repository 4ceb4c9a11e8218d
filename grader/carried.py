"""Which contracts of earlier step files a step file carries, measured on the reference's own.

Before the package (steps 1-22) each step file defines again what it needs, and the book's
files do not keep everything: `numerical_diff` leaves after step 4 and is back at step 10, `Exp`
is missing from step 10, step 11 calls a Function with a list and step 12 with several
arguments, step 12's `Square` has a backward not yet rewritten for that. "Every earlier
contract" for a step file is therefore every book-tier check of an earlier step file that the
reference's file of the same step (which stands for the book's) meets: found by grading the
reference's step file with those checks (`grader.run._book_keeps`, which grading passes in),
once per version of the grader and the reference (cached next to the reference's answers),
never listed by hand. `grader.run.checks_of` applies it.
"""
from __future__ import annotations

import hashlib
import json
from pathlib import Path

from grader import codeset
from grader.reference_cache import cache_dir, reference_version
from grader.schema import write_text_atomic


def _key(step: int, candidates) -> str:
    """What the measurement depends on: the reference (its package and this step's file), the
    code that runs in the worker, the trusted side that judges (the checks, the declared reports
    and what grading does with them), the checks measured."""
    import reference
    h = hashlib.sha256(reference_version().encode())
    h.update(codeset.digest(codeset.closure(('grader.run', 'grader.carried')),
                            codeset.GRADER_DIR).encode())
    h.update((Path(reference.ROOT) / 'steps' / 'step{:02d}.py'.format(step)).read_bytes())
    h.update(json.dumps(sorted([u.id, u.check, u.params] for u in candidates), sort_keys=True,
                        default=str).encode())
    return h.hexdigest()


def kept(assignment, candidates, measure, use_cache: bool = True) -> frozenset:
    """The ids among `candidates` (CheckUses of earlier step files) that the reference's step
    file of `assignment.step` passes: from the cache, else `measure(assignment, candidates)`
    (`grader.run` grades the reference's file with them; it is passed in, as grading itself
    asks this)."""
    if not candidates:
        return frozenset()
    path = cache_dir() / 'carried' / (_key(assignment.step, candidates) + '.json')
    if use_cache and path.is_file():
        try:
            return frozenset(json.loads(path.read_text(encoding='utf-8')))
        except (OSError, ValueError):
            pass   # a damaged entry is measured again
    ids = frozenset(measure(assignment, candidates))
    try:
        write_text_atomic(path, json.dumps(sorted(ids)))
    except OSError:
        pass   # a read-only cache only costs time
    return ids
