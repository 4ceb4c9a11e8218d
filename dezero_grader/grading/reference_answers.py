"""The reference's answers: the grader's own implementation observed, retried and cached.

The reference is observed like a submission (`dezero_grader.grading.worker_session.observe`), in a
worker of its own (`reference_target`), and its answers are cached on disk by (probe, reference
sources, probe code, NumPy version): they depend on nothing else (where and under which key:
`dezero_grader.grading.reference_cache`). A reference worker that fails is the grader's trouble,
never the learner's: it is tried again (`REFERENCE_TRIES`), and what still fails raises
GraderError. The reference is also what a learner's claimed skips are held against
(`believe_skips`, the rule in `dezero_grader.grading.trust.skips_believed`).
"""
from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path

from dezero_grader import wire
from dezero_grader.errors import GraderError
from dezero_grader.grading.reference_cache import cache_path
from dezero_grader.grading.trust import skips_believed
from dezero_grader.grading.worker_session import observe
from dezero_grader.isolation.worker_process import Limits
from dezero_grader.records.dataflow import Observation, Target, WorkerRun
from dezero_grader.records.schema import write_text_atomic

REFERENCE_TRIES = 2


def reference_target() -> Target:
    from dezero_grader import reference
    cwd = Path(tempfile.mkdtemp(prefix='dezero-grader-ref-'))
    return Target(cwd=cwd, sys_path=(reference.ROOT,),
                  entry={'kind': 'reference', 'module': 'dezero', 'path': ''})


def believe_skips(learner: WorkerRun, reference: WorkerRun, *, limits: Limits,
                  device_mode: str) -> WorkerRun:
    """Trust, decided once both sides are observed. A scenario may skip for a reason of the
    environment (an optional package is missing); a learner's worker saying so is believed only
    when the reference, asked the same thing in the same environment, skips it too. One skip it
    does not make ends the learner's side in a `tampered` failure. The reference is asked here for
    what it was not asked already (from its cache where it has it); its failure is the grader's
    (GraderError)."""
    if learner.failure is not None or not learner.claimed_skips:
        return learner
    mode = 'cpu' if device_mode == 'cpu' else 'sim'   # what the reference side was observed in: sim
    known = dict(reference.observations) if mode == 'sim' else {}
    missing = [p for p in learner.claimed_skips if p not in known]
    if missing:
        known.update(observe_reference(missing, limits=limits, device_mode=mode).observations)
    return skips_believed(learner, known)


def observe_reference(probes, *, limits: Limits, device_mode='sim', use_cache=True) -> WorkerRun:
    """The reference's answers to `probes`, from the cache where it has them. The reference is
    the grader's own code: a worker of it that fails (stopped by the machine, out of time under
    load) is the grader's trouble, never the learner's, so it is tried again in a fresh worker;
    what still fails raises GraderError, worded as the grader's failure."""
    observations, missing = {}, []
    for probe in probes:
        path = cache_path(probe, device_mode)
        if use_cache and path.is_file():
            try:
                with open(path, encoding='utf-8') as f:
                    observations[probe] = Observation(probe, value=wire.decode(json.load(f)))
                continue
            except (OSError, ValueError):
                pass   # a damaged cache entry is recomputed
        missing.append(probe)
    if not missing:
        return WorkerRun(observations, {'cached': True}, None)
    setup, trouble = None, ''
    for _ in range(REFERENCE_TRIES):
        target = reference_target()
        try:
            got = observe(target, missing, device_mode=device_mode, limits=limits)
        finally:
            shutil.rmtree(target.cwd, ignore_errors=True)
        if got.failure is not None:
            trouble = 'it could not be loaded: {} {}'.format(got.failure.message,
                                                             got.output_tail[-2000:])
            continue
        setup = got.setup
        for probe, obs in got.observations.items():
            if not obs.ok and obs.error.type == 'WorkerFailure':
                trouble = 'its worker failed on {}: {}'.format(probe.scenario, obs.error.message)
                continue   # asked again in the next try
            observations[probe] = obs
            if obs.ok and use_cache:
                try:
                    write_text_atomic(cache_path(probe, device_mode), json.dumps(wire.encode(obs.value)))
                except OSError:
                    pass   # a read-only cache only costs time
        missing = [p for p in missing if p not in observations]
        if not missing:
            return WorkerRun(observations, setup, None)
    raise GraderError('the grader\'s reference implementation failed {} times in a row ({}); this '
                      'is a failure of the grader or of this machine, not of the submission: grade '
                      'again, and report it if it persists'.format(REFERENCE_TRIES, trouble.strip()))

