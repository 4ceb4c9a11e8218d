"""Checks: small functions over observations, registered by name.

A check says which probes it needs (`plan`: what to run in the learner's worker and, for
differential checks, in the reference's) and judges what came back (`judge` → findings). It
never runs learner code itself and never holds points: assignments refer to checks by name,
with parameters (validated against the check's schema when the assignment loads), points,
tier and tolerances.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

from dezero_grader.records.dataflow import Finding, Observation, Probe

CHECKS: dict[str, 'CheckDef'] = {}


@dataclass(frozen=True)
class Plan:
    learner: tuple = ()       # Probe, run on the submission
    reference: tuple = ()     # Probe, run on the reference


@dataclass(frozen=True)
class JudgeInput:
    params: Mapping[str, Any]
    tolerance: Mapping[str, float]
    plan: Plan
    learner: Mapping[Probe, Observation]
    reference: Mapping[Probe, Observation]


@dataclass(frozen=True)
class CheckDef:
    name: str
    summary: str
    params_schema: Mapping[str, Any]
    plan: Callable[[Mapping[str, Any], int], Plan]
    judge: Callable[[JudgeInput], list]
    tolerance: Mapping[str, float] = field(default_factory=dict)
    repro: Callable[[Mapping[str, Any], Plan], str] | None = None
    # (where, path) of every report path the parameters name, in the report of the first
    # learner probe's scenario: validated against its declaration when the assignment loads
    report_paths: Callable[[Mapping[str, Any]], list] | None = None


def register(name, *, summary, params, plan, judge, tolerance=None, repro=None, required=(),
             report_paths=None):
    """Register a check. `params` is the JSON-Schema `properties` of its parameters."""
    if name in CHECKS:
        raise ValueError('check {!r} registered twice'.format(name))
    schema = {'type': 'object', 'properties': dict(params), 'required': list(required),
              'additionalProperties': False}
    CHECKS[name] = CheckDef(name, summary, schema, plan, judge, dict(tolerance or {}), repro,
                            report_paths)
    return CHECKS[name]


def learner_error_finding(obs: Observation, what: str) -> Finding:
    """A finding for a probe whose learner code raised, looped or died."""
    err = obs.error
    if err.kind == 'not-run':   # stopped early, in the loop an earlier test timed out in
        return Finding('skipped', '{}: {}'.format(what, err.message),
                       evidence={'not_run': True, 'where': err.where})
    status = 'timeout' if err.kind == 'timeout' else 'error'
    where = ' at {}'.format(err.where) if err.where and err.kind != 'timeout' else ''
    if err.kind in ('timeout', 'worker'):   # the message already says what happened, in words
        text = '{}: {}{}'.format(what, err.message, where)
    else:
        text = '{}: your code raised {}: {}{}'.format(what, err.type, err.message, where)
    return Finding(status, text,
                   evidence={'exception': err.type, 'where': err.where,
                             'traceback': learner_frames(err.traceback)[-8:]})


def learner_frames(traceback) -> list:
    """The frames of a traceback in the submission's own files (``file:line in function``, paths
    relative to it), innermost last: the grader's frames and libraries' (absolute paths, frozen
    modules, a timed-out stack's ``File`` lines) tell a learner nothing of their code, and would
    push its callers out of the few frames kept."""
    return [str(f) for f in traceback if not str(f).startswith(('/', '<', ' ', 'File '))]


def load_all():
    """Import every module of this package (checks register themselves at import)."""
    _import_package(__name__, __path__)
    return CHECKS


_IMPORTED = set()   # the packages whose modules are imported (listed once per process)


def _import_package(name, path):
    import importlib
    import pkgutil
    if name in _IMPORTED:
        return
    for info in sorted(pkgutil.iter_modules(path), key=lambda i: i.name):
        importlib.import_module('{}.{}'.format(name, info.name))
    _IMPORTED.add(name)
