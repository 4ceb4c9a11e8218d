"""The stored mutation figure: written by `bench/mutation.py --record`, printed by `selftest`.

Mutating the reference takes minutes, too long for every selftest; so the figure is measured
apart and stored with a key over what it depends on: the reference package (the mutated files
and the rest that the mutants run with), the assignment files of the steps that own the mutated
code, and every file of the grader that decides a verdict -- the grading pipeline's (the checks
and their judges, the contracts, the scoring and the policy) and the worker's, derived from
their imports (`dezero_grader.grading.codeset`), so that loosening a tolerance or editing a judge marks the
figure stale. `selftest` prints it and says whether it still describes the current code and
checks.
"""
from __future__ import annotations

import hashlib
import json
from pathlib import Path

from dezero_grader.catalogue import assignments
from dezero_grader.grading import codeset, reference_cache
from dezero_grader.records import schema

FILE = 'mutation.json'
# (file, Function) -> the step that introduces it, whose own checks must reject its mutants
OWNERS = {
    ('functions.py', 'Sin'): 34, ('functions.py', 'Cos'): 34, ('functions.py', 'Tanh'): 35,
    ('functions.py', 'Reshape'): 38, ('functions.py', 'Transpose'): 38,
    ('functions.py', 'Sum'): 39, ('functions.py', 'SumTo'): 40, ('functions.py', 'BroadcastTo'): 40,
    ('functions.py', 'MatMul'): 41, ('functions.py', 'MeanSquaredError'): 42,
    ('functions.py', 'Exp'): 43, ('functions.py', 'Linear'): 43, ('functions.py', 'Sigmoid'): 43,
    ('functions.py', 'Log'): 47, ('functions.py', 'GetItem'): 47, ('functions.py', 'GetItemGrad'): 47,
    ('functions.py', 'Softmax'): 47, ('functions.py', 'SoftmaxCrossEntropy'): 47,
    ('functions.py', 'Clip'): 47, ('functions.py', 'accuracy'): 50, ('functions.py', 'ReLU'): 51,
    ('core.py', 'Add'): 40, ('core.py', 'Mul'): 40, ('core.py', 'Div'): 40,
}


def path():
    return schema.data_dir('assignments') / FILE


# What grades a mutant: the grading pipeline and the worker it starts.
DECIDING_ROOTS = ('dezero_grader.grading.run',) + reference_cache.WORKER_ROOTS


def deciding_files(grader_dir: Path = codeset.GRADER_DIR) -> list:
    """The grader's files (under `grader_dir`) that decide a mutant's verdict, sorted."""
    return codeset.closure(DECIDING_ROOTS, grader_dir)


def key(steps, grader_dir: Path = codeset.GRADER_DIR, reference_dir: Path | None = None) -> str:
    """sha256 over the reference package (in `reference_dir`, by default the reference's), the
    grader's deciding files (`deciding_files`) and the assignments of `steps`."""
    if reference_dir is None:
        from dezero_grader import reference
        reference_dir = reference.ROOT
    package = Path(reference_dir) / 'dezero'
    digest = hashlib.sha256()
    digest.update(b'reference\0' + codeset.digest(codeset.files_under(package), package).encode())
    digest.update(b'grader\0' + codeset.digest(deciding_files(grader_dir), grader_dir).encode())
    for step in sorted(set(steps)):
        digest.update(assignments.content_hash(step).encode() + b'\0')
    return 'sha256:' + digest.hexdigest()


def write(record: dict) -> None:
    schema.write_json(path(), record, 'mutation')


def load() -> dict | None:
    p = path()
    if not p.is_file():
        return None
    record = json.loads(p.read_text(encoding='utf-8'))
    schema.validate('mutation', record)
    return record


def summary() -> str:
    """One line: the stored figure and whether it is current."""
    record = load()
    if record is None:
        return ('mutation: no figure stored; measure it with python bench/mutation.py --sample 0 '
                '--record')
    current = record['key'] == key(OWNERS.values())
    survivors = '; '.join('{}.{} line {} {}'.format(s['owner'], s['method'], s['line'],
                                                    s['mutation']) for s in record['survivors'])
    return ('mutation: {} of {} mutants of the reference\'s Functions rejected by the step that owns '
            'the code ({} by judging a wrong value){}; measured {}, {}'.format(
                record['rejected'], record['mutants'], record['by_judgment'],
                ', survived: ' + survivors if survivors else '', record['measured_at'],
                'on the current reference, assignments and grader' if current else
                'STALE (the reference, the owning steps\' checks or the grader\'s deciding code '
                'changed since): measure again '
                'with python bench/mutation.py --sample 0 --record'))
