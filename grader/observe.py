"""Submission (or reference) + probes → observations, through a sandboxed worker.

`observe` starts a worker in the submission's scratch copy, loads the submission there
(`setup`), and runs each probe, turning every answer into an `Observation`: a decoded value,
or a `LearnerError` when the learner's code raised, ran out of time or killed its worker (the
worker is then restarted for the remaining probes). The reference is observed the same way, in a
worker of its own, and its observations are cached on disk by (probe, reference sources, probe
code, NumPy version): they depend on nothing else.
"""
from __future__ import annotations

import hashlib
import json
import os
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from grader import wire
from grader.errors import GraderError, WorkerFailure
from grader.model import LearnerError, Observation
from grader.sandbox import Limits, Worker
from grader.schema import write_text_atomic

_GRADER_DIR = Path(__file__).resolve().parent


@dataclass(frozen=True)
class Target:
    """What a worker loads: the submission's entry, or the reference."""
    cwd: Path
    sys_path: tuple
    entry: dict            # {'kind', 'module', 'path'}


@dataclass(frozen=True)
class SetupFailure:
    code: str              # import-error | syntax-error | timeout | memory | exited | ...
    message: str
    output_tail: str = ''


@dataclass(frozen=True)
class Observed:
    observations: dict     # Probe -> Observation
    setup: dict | None     # what setup reported (demo_error, gpu_enable, import_s)
    failure: SetupFailure | None
    findings: tuple = ()   # compatibility findings of the simulated device
    output_tail: str = ''


def reference_target() -> Target:
    import reference
    cwd = Path(tempfile.mkdtemp(prefix='dezero-grader-ref-'))
    return Target(cwd=cwd, sys_path=(reference.ROOT,),
                  entry={'kind': 'reference', 'module': 'dezero', 'path': ''})


def _setup_failure(answer_error, output_tail) -> SetupFailure:
    kind = answer_error.get('type', 'Exception')
    where = answer_error.get('where') or ''
    message = answer_error.get('message', '')
    if kind in ('SyntaxError', 'IndentationError', 'TabError'):
        code = 'syntax-error'
        text = 'your code has a syntax error: {}{}'.format(message, ' at ' + where if where else '')
    elif kind in ('ModuleNotFoundError', 'ImportError'):
        code = 'import-error'
        text = 'importing your code failed with {}: {}{}'.format(
            kind, message, ' at ' + where if where else '')
    elif kind == 'SystemExit':
        code = 'exited'
        text = 'your code called sys.exit({}) while it was being imported'.format(message)
    else:
        code = 'import-error'
        text = 'importing your code raised {}: {}{}'.format(kind, message,
                                                           ' at ' + where if where else '')
    return SetupFailure(code, text, output_tail)


def _failure_as_setup(exc: WorkerFailure, what: str) -> SetupFailure:
    return SetupFailure(exc.reason, '{} {}'.format(what, exc.message), exc.output_tail)


def _error_observation(probe, error: dict, duration) -> Observation:
    return Observation(probe, error=LearnerError(
        type=error.get('type', 'Exception'), message=str(error.get('message', ''))[:2000],
        where=error.get('where') or '', traceback=tuple(error.get('traceback') or ())),
        duration_s=duration)


class _Session:
    """One worker with its setup done; restarted after a failure."""

    def __init__(self, target, device_mode, limits, era):
        self.target, self.device_mode, self.limits, self.era = target, device_mode, limits, era
        self.worker = None
        self.setup_info = None
        self.output_tail = ''

    def start(self):
        self.worker = Worker(self.target.cwd, list(self.target.sys_path), self.limits)
        self.worker.start()
        answer = self.worker.request({'op': 'setup', 'entry': self.target.entry,
                                      'device_mode': self.device_mode, 'era': self.era})
        if not answer['ok']:
            tail = self.close()
            return _setup_failure(answer['error'], tail)
        self.setup_info = answer['result']
        return None

    def close(self):
        if self.worker is not None:
            try:
                self.output_tail = self.worker.output_tail
            except Exception:
                pass
            self.worker.close()
            self.worker = None
        return self.output_tail


def observe(target: Target, probes, *, device_mode: str, limits: Limits, era='current',
            progress=None) -> Observed:
    session = _Session(target, device_mode, limits, era)
    try:
        failure = session.start()
    except WorkerFailure as e:
        session.close()
        return Observed({}, None, _failure_as_setup(e, 'loading your code failed:'), (),
                        e.output_tail)
    if failure is not None:
        return Observed({}, None, failure, (), failure.output_tail)
    observations = {}
    findings = ()
    try:
        for probe in probes:
            if session.worker is None:
                try:
                    failure = session.start()
                except WorkerFailure as e:
                    failure = _failure_as_setup(e, 'restarting after a failure:')
                if failure is not None:
                    observations[probe] = Observation(probe, error=LearnerError(
                        'WorkerFailure', failure.message, kind='worker'))
                    continue
            started = time.perf_counter()
            try:
                answer = session.worker.request({'op': 'probe', 'scenario': probe.scenario,
                                                 'params': wire.encode(dict(probe.params)),
                                                 'seed': probe.seed, 'device': probe.device})
            except WorkerFailure as e:
                session.close()
                kind = 'timeout' if e.reason == 'timeout' else 'worker'
                observations[probe] = Observation(probe, error=LearnerError(
                    'WorkerFailure', e.message, kind=kind,
                    traceback=tuple(e.output_tail.splitlines()[-6:])),
                    duration_s=time.perf_counter() - started)
                continue
            duration = time.perf_counter() - started
            if answer['ok']:
                observations[probe] = Observation(probe, value=wire.decode(answer['result']),
                                                  duration_s=duration)
            else:
                if answer['error'].get('internal'):
                    raise GraderError('the worker refused probe {}: {}'.format(
                        probe.scenario, answer['error'].get('message')))
                observations[probe] = _error_observation(probe, answer['error'], duration)
            if progress:
                progress()
        if session.worker is not None and device_mode == 'sim':
            answer = session.worker.request({'op': 'findings'})
            if answer['ok']:
                findings = tuple(_compat(f) for f in wire.decode(answer['result']))
    finally:
        tail = session.close()
    return Observed(observations, session.setup_info, None, findings, tail)


def _compat(f):
    return {'api': str(f.get('api', '')), 'message': str(f.get('message', '')),
            'where': str(f.get('where', ''))}


# -- the reference, cached ------------------------------------------------------------------------

def _tree_hash(folders):
    h = hashlib.sha256()
    for folder in folders:
        for path in sorted(Path(folder).rglob('*.py')):
            h.update(str(path.relative_to(folder)).encode())
            h.update(path.read_bytes())
    return h.hexdigest()[:16]


_VERSION = None


def reference_version() -> str:
    global _VERSION
    if _VERSION is None:
        import reference
        _VERSION = '{}-{}-np{}'.format(
            _tree_hash([reference.ROOT / 'dezero']),
            _tree_hash([_GRADER_DIR / 'probes', _GRADER_DIR / 'simdevice']), np.__version__)
    return _VERSION


def cache_dir() -> Path:
    base = os.environ.get('DEZERO_GRADER_CACHE')
    if base:
        return Path(base)
    return Path(os.environ.get('XDG_CACHE_HOME', Path.home() / '.cache')) / 'dezero-grader'


def _cache_path(probe):
    key = hashlib.sha256((reference_version() + probe.key).encode()).hexdigest()
    return cache_dir() / 'reference' / key[:2] / (key + '.json')


def observe_reference(probes, *, limits: Limits, device_mode='sim', use_cache=True) -> Observed:
    observations, missing = {}, []
    for probe in probes:
        path = _cache_path(probe)
        if use_cache and path.is_file():
            try:
                with open(path, encoding='utf-8') as f:
                    observations[probe] = Observation(probe, value=wire.decode(json.load(f)))
                continue
            except (OSError, ValueError):
                pass   # a damaged cache entry is recomputed
        missing.append(probe)
    if not missing:
        return Observed(observations, {'cached': True}, None)
    target = reference_target()
    try:
        got = observe(target, missing, device_mode=device_mode, limits=limits)
    finally:
        _remove_tree(target.cwd)
    if got.failure is not None:
        raise GraderError('the reference could not be loaded: {} {}'.format(
            got.failure.message, got.output_tail[-2000:]))
    for probe, obs in got.observations.items():
        observations[probe] = obs
        if obs.ok and use_cache:
            try:
                write_text_atomic(_cache_path(probe), json.dumps(wire.encode(obs.value)))
            except OSError:
                pass   # a read-only cache only costs time
    return Observed(observations, got.setup, None)


def _remove_tree(path):
    import shutil
    shutil.rmtree(path, ignore_errors=True)

