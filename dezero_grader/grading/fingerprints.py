"""Fingerprints of the fault catalogue: what each fault makes fail, measured, stored, kept true.

A fingerprint is measured, never written by hand: `selftest` grades every fault's single-fault
variant of the reference, and the fingerprint of a fault is, for each check that variant fails,
the check's signature (status, failing sub-check cases, exception types, the function a gradient
trajectory blames; `diagnose.signature`). `selftest --write-fingerprints` stores them, one file
per step, in `assignments/fingerprints/stepNN.json` (shipped with the package as data); every
later `selftest` measures them again and reports stored fingerprints that no longer match. The
diagnosis of a grading reads the stored file of its step.
"""
from __future__ import annotations

import functools
import json

from dezero_grader.records import schema
from dezero_grader.records.status import FAILING

SCHEMA_VERSION = '1.0'
FOLDER = 'fingerprints'


def path_of(step: int):
    return schema.data_dir('assignments') / FOLDER / 'step{:02d}.json'.format(step)


def measure(step: int, seed: int, device_mode: str, graded) -> dict:
    """The fingerprint document of a step from `graded`: [(fault, scorecard of its variant)]."""
    from dezero_grader.grading.diagnose import signature
    faults = {}
    for fault, doc in graded:
        faults[fault.id] = {
            'step': fault.step,
            'checks': {c['id']: signature(c) for c in doc['checks'] if c['status'] in FAILING}}
    return {'schema_version': SCHEMA_VERSION, 'step': step, 'seed': seed,
            'device_mode': device_mode, 'faults': faults}


@functools.lru_cache(maxsize=None)
def _read(path):
    try:
        with open(path, encoding='utf-8') as f:
            doc = json.load(f)
    except FileNotFoundError:
        return None
    except (OSError, json.JSONDecodeError):
        return None
    if schema.errors('fingerprints', doc):
        return None
    return doc


def load(step: int) -> dict | None:
    """The stored fingerprint document of a step, or None (none stored, or unreadable)."""
    return _read(str(path_of(step)))


def prints_of(doc) -> dict:
    """{fault id: {check id: signature}} of a fingerprint document (empty for None)."""
    if not doc:
        return {}
    return {fid: dict(entry['checks']) for fid, entry in doc['faults'].items()}


def catalogue_of(assignment) -> dict:
    """{fault id: title, hint, step} of a step's catalogue (its own and its `faults_from` steps'),
    as the diagnosis names them."""
    from dezero_grader.catalogue import assignments
    return {f.id: {'title': f.title, 'hint': f.hint, 'step': f.step}
            for f in assignments.fault_catalogue(assignment)}


def write(step: int, doc) -> None:
    schema.write_json(path_of(step), doc, 'fingerprints')
    _read.cache_clear()


def differences(stored, measured) -> list[str]:
    """How a stored fingerprint document disagrees with a measured one (empty: they agree), for
    the faults measured (a run may grade part of a catalogue; that the stored file covers the
    whole catalogue, and nothing else, is checked against the catalogue itself, in the tests)."""
    if stored is None:
        return ['no fingerprints are stored for step {}'.format(measured['step'])]
    out = []
    a, b = stored['faults'], measured['faults']
    for fid in sorted(b):
        if fid not in a:
            out.append('fault {} has no stored fingerprint'.format(fid))
        elif a[fid]['checks'] != b[fid]['checks']:
            changed = sorted(set(a[fid]['checks']) ^ set(b[fid]['checks'])) or sorted(
                c for c in a[fid]['checks'] if a[fid]['checks'][c] != b[fid]['checks'].get(c))
            out.append('the fingerprint of fault {} changed ({})'.format(fid, ', '.join(changed[:4])))
    return out
