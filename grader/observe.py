"""Submission (or reference) + probes → observations, through a sandboxed worker.

`observe` starts a worker in the submission's scratch copy, loads the submission there
(`setup`), and runs each probe, turning every answer into an `Observation`: a decoded value,
or a `LearnerError` when the learner's code raised, ran out of time or killed its worker (the
worker is then restarted for the remaining probes, within one time budget: `Limits.total_s`
bounds the whole submission, restarts included). The reference is observed the same way, in a
worker of its own, and its observations are cached on disk by (probe, reference sources, probe
code, NumPy version): they depend on nothing else.

Nothing a learner's worker says about itself is believed beyond raw observations: whether a
probe is skipped is decided here (a worker's own `__skipped__` is believed only when the
reference's worker skips the same probe too, else it is evidence of tampering), malformed
or unusable answers become failed observations rather than crashes, the tripwire of
`grader.sandboxed.probes.handlers` (`GraderModified`) ends in an `invalid` scorecard (code `tampered`),
and a learner's worker may not read the reference implementation or the cache of its answers.
`explain` turns a `WorkerFailure` into words a learner can act on, naming the limit and its option.
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import re
import secrets
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
    findings: tuple = ()   # compatibility findings: book-era NumPy and CuPy APIs the code used
    output_tail: str = ''


def reference_target() -> Target:
    import reference
    cwd = Path(tempfile.mkdtemp(prefix='dezero-grader-ref-'))
    return Target(cwd=cwd, sys_path=(reference.ROOT,),
                  entry={'kind': 'reference', 'module': 'dezero', 'path': ''})


TAMPERED = 'GraderModified'   # the error type grader.sandboxed.probes.handlers answers when its tripwire fires
SAME_TIMEOUT = 'SameTimeout'  # ... and when a probe is stuck where an earlier one timed out


def _setup_failure(answer_error, output_tail) -> SetupFailure:
    kind = answer_error.get('type', 'Exception')
    where = answer_error.get('where') or ''
    message = answer_error.get('message', '')
    at = ' at ' + where if where else ''
    if kind in ('SyntaxError', 'IndentationError', 'TabError'):
        code = 'syntax-error'
        text = 'your code has a syntax error: {}{}'.format(message, at)
    elif kind in ('ModuleNotFoundError', 'ImportError'):
        code = 'import-error'
        text = 'importing your code failed with {}: {}{}'.format(kind, message, at)
    elif kind == 'SystemExit':
        code = 'exited'
        text = 'importing your code ended early: {}{}; a module must not end the program when it is ' \
               'imported (put demo code under `if __name__ == "__main__":`)'.format(message, at)
    elif kind == TAMPERED:
        code = 'tampered'
        text = message
    elif kind == 'MemoryError':
        code = 'memory'
        text = 'importing your code ran out of memory{} (MemoryError): it tried to use more than the ' \
               'memory limit'.format(at)
    elif kind == 'RecursionError':
        code = 'import-error'
        text = 'importing your code raised RecursionError{}: a function calls itself without end'.format(at)
    else:
        code = 'import-error'
        text = 'importing your code raised {}: {}{}'.format(kind, message, at)
    return SetupFailure(code, text, output_tail)


# Phrases of grader.sandbox's messages that say where the code was and which clock ran out.
_RUNNING = re.compile(r' \(it was running (?P<where>[^()]*)\)$')
_PLACE = re.compile(r'^(?P<file>.+):(?P<line>\d+) in (?P<func>\S+)$')
_WHOLE_RUN = 'whole grading run'


def same_timeout_after(limits: Limits) -> float:
    """How long a probe may stay in one call of a function that already ran out of time before it
    is stopped as the same timeout: a tenth of the call limit, between 0.25 s and 1 s."""
    return min(1.0, max(0.25, (limits.call_s or 30.0) / 10))


def explain(exc: WorkerFailure, limits: Limits, during: str) -> str:
    """A WorkerFailure in words a learner understands: what happened `during` what, which limit
    (and the option that sets it), and where the code was when it had to be stopped."""
    m = _RUNNING.search(exc.message)
    where = ' (it was running {})'.format(m['where']) if m else ''
    reason = exc.reason
    if reason == 'timeout' and _WHOLE_RUN in exc.message:
        return ('{} did not finish: your code used up the {:g} s allowed for grading the whole '
                'submission{}').format(during, limits.total_s, where)
    if reason == 'timeout':
        return ('{} did not finish within the {:g} s time limit (--timeout){}: look for an endless '
                'loop, or a loop that waits for something that never comes').format(
                    during, limits.call_s, where)
    if reason == 'cpu-time':
        return '{} used more than the {} s of CPU time allowed{}: look for an endless loop'.format(
            during, limits.cpu_s, where)
    if reason == 'memory':
        return ('{} used more memory than the {} MB limit (--memory): look for an array or list that '
                'keeps growing').format(during, limits.memory_mb)
    if reason == 'output-limit':
        return '{} wrote a file larger than the {} MB limit'.format(during, limits.fsize_mb)
    if reason == 'exited':
        return ('{} stopped: the process running your code ended (exit status {}) before it '
                'answered; does the code call os._exit(), or exit from a child process it '
                'forked?').format(during, exc.exit_code)
    return '{} stopped: {}'.format(during, exc.message)


def _error_observation(probe, error: dict, duration) -> Observation:
    return Observation(probe, error=LearnerError(
        type=error.get('type', 'Exception'), message=str(error.get('message', ''))[:2000],
        where=error.get('where') or '', traceback=tuple(error.get('traceback') or ())),
        duration_s=duration)


def _hidden_from_learners(cwd: Path) -> tuple:
    """Folders (and files) a learner's worker may not read: the reference implementation (the
    oracle), the cache of its answers and the course's secret file -- except a folder that holds
    the submission or the grader itself."""
    import reference
    own = [Path(cwd).resolve(), _GRADER_DIR.resolve()]
    hidden = []
    from grader.run import SECRET_FILE_ENV   # at call time: run imports this module
    secret_file = os.environ.get(SECRET_FILE_ENV)
    for folder in (Path(reference.ROOT), cache_dir()) + ((Path(secret_file),) if secret_file else ()):
        folder = Path(os.path.realpath(folder))
        if not any(p == folder or folder in p.parents for p in own):
            hidden.append(folder)
    return tuple(hidden)


class _Session:
    """One worker with its setup done; restarted after a failure, within one time budget."""

    def __init__(self, target, device_mode, limits, era):
        self.target, self.device_mode, self.limits, self.era = target, device_mode, limits, era
        self.worker = None
        self.setup_info = None
        self._findings = {}
        self.output_tail = ''
        self.deadline = time.monotonic() + limits.total_s
        self.learner = target.entry.get('kind') != 'reference'
        self.hidden = _hidden_from_learners(target.cwd) if self.learner else ()
        # where the learner's code ran out of time: (file, function) -> file:line, first first
        self.stuck = {}
        self.token = secrets.token_hex(8)

    def note_timeout(self, exc: WorkerFailure) -> str:
        """Remember the function a probe was running when it ran past the call limit, so that the
        next probes stuck in the same call are stopped there early (`SameTimeout`)."""
        m = _RUNNING.search(exc.message)
        if not self.learner or exc.reason != 'timeout' or _WHOLE_RUN in exc.message or not m:
            return ''
        place = _PLACE.match(m['where'])
        if place:
            self.stuck.setdefault((place['file'], place['func']), m['where'])
        return m['where']

    def stuck_request(self) -> dict:
        if not self.stuck:
            return {}
        return {'stuck': [list(k) for k in self.stuck], 'token': self.token,
                'stuck_after': same_timeout_after(self.limits)}

    def remaining(self) -> float:
        return self.deadline - time.monotonic()

    def start(self):
        # a restarted worker gets what is left of the submission's time, not a fresh allowance
        limits = dataclasses.replace(self.limits, total_s=max(self.remaining(), 0.05))
        self.worker = Worker(self.target.cwd, list(self.target.sys_path), limits, hidden=self.hidden)
        self.worker.start()
        try:
            answer = self.worker.request({'op': 'setup', 'entry': self.target.entry,
                                          'device_mode': self.device_mode, 'era': self.era})
        except GraderError as e:
            if not self.learner:
                raise   # the reference's worker: a bug of ours
            tail = self.close()
            return SetupFailure('tampered', 'the process running your code answered the grader\'s '
                                'setup with something the grader\'s own worker never sends ({}); was '
                                'the grader changed from inside it?'.format(str(e)[:200]), tail)
        if not answer['ok']:
            tail = self.close()
            return _setup_failure(answer['error'], tail)
        self.setup_info = answer['result']
        if self.learner and not _setup_shaped(self.setup_info):
            tail = self.close()
            return SetupFailure('tampered', 'the process running your code answered the grader\'s '
                                'setup with a report the grader\'s own worker never writes; was the '
                                'grader changed from inside it?', tail)
        if isinstance(self.setup_info, dict):
            self.note_findings(self.setup_info.get('findings'))
        return None

    def note_findings(self, found):
        """Compatibility findings a worker reported (at setup, at the end), kept across restarts:
        one per (api, where), with the highest count seen."""
        try:
            for f in found or ():
                item = _compat(f)
                key = (item['api'], item['where'])
                if key not in self._findings or self._findings[key]['count'] < item['count']:
                    self._findings[key] = item
        except (AttributeError, TypeError, ValueError):
            pass   # a worker that garbles them loses them

    def findings(self) -> tuple:
        return tuple(self._findings.values())

    def close(self):
        if self.worker is not None:
            self.worker.close()   # first: closing waits for the last of the output to arrive
            try:
                self.output_tail = self.worker.output_tail
            except Exception:
                pass
            self.worker = None
        return self.output_tail


def _setup_shaped(info) -> bool:
    """What `grader.sandboxed.probes.handlers.setup` answers: a flat report of plain values."""
    if not isinstance(info, dict) or not isinstance(info.get('import_s'), (int, float)):
        return False
    return isinstance(info.get('gpu_enable'), bool) and isinstance(info.get('scenarios'), list) \
        and all(isinstance(n, str) for n in info['scenarios'])


def _same_timeout(probe, error, session, limits, duration) -> Observation:
    """A probe stopped early in a call where an earlier one ran out of time: not run, because of
    that timeout (one timeout is one finding, however many tests reach the same loop)."""
    where = str(error.get('message', '')).split(' ', 1)[1]
    return Observation(probe, error=LearnerError(
        'NotRun', 'not run: it reached {}, where an earlier test ran past the {:g} s time limit '
        '(--timeout); it was stopped after {:g} s there instead of waiting for the limit again. '
        'Fix that endless loop first'.format(where, limits.call_s, same_timeout_after(limits)),
        where=where, kind='not-run'), duration_s=duration)


def _not_run(probe, message) -> Observation:
    return Observation(probe, error=LearnerError('WorkerFailure', message, kind='timeout'))


def observe(target: Target, probes, *, device_mode: str, limits: Limits, era='current',
            progress=None) -> Observed:
    session = _Session(target, device_mode, limits, era)
    try:
        failure = session.start()
    except WorkerFailure as e:
        session.close()
        return Observed({}, None, SetupFailure(e.reason, explain(e, limits, 'importing your code'),
                                               e.output_tail), (), e.output_tail)
    if failure is not None:
        return Observed({}, None, failure, (), failure.output_tail)
    observations = {}
    findings = ()
    try:
        for probe in probes:
            if probe.device == 'gpu' and device_mode == 'cpu':
                # decided here, without asking the worker (whose word on skips is not taken)
                observations[probe] = Observation(probe, value={
                    '__skipped__': 'needs a device, and this run has none (--device cpu)'})
                continue
            if session.worker is None:
                if session.remaining() <= 0:
                    observations[probe] = _not_run(probe, 'not run: your code had already used up the '
                                                   '{:g} s allowed for grading the whole submission'.format(
                                                       limits.total_s))
                    continue
                try:
                    failure = session.start()
                except WorkerFailure as e:
                    session.close()
                    failure = SetupFailure(e.reason, explain(e, limits, 'restarting your code after a '
                                                             'failure'), e.output_tail)
                if failure is not None:
                    if failure.code == 'tampered':
                        return Observed(observations, None, failure, (), failure.output_tail)
                    observations[probe] = Observation(probe, error=LearnerError(
                        'WorkerFailure', failure.message,
                        kind='timeout' if failure.code == 'timeout' else 'worker'))
                    continue
            started = time.perf_counter()
            try:
                answer = session.worker.request({'op': 'probe', 'scenario': probe.scenario,
                                                 'params': wire.encode(dict(probe.params)),
                                                 'seed': probe.seed, 'device': probe.device,
                                                 **session.stuck_request()})
            except WorkerFailure as e:
                session.close()
                kind = 'timeout' if e.reason == 'timeout' else 'worker'
                where = session.note_timeout(e)
                observations[probe] = Observation(probe, error=LearnerError(
                    'WorkerFailure', explain(e, limits, 'this test'), kind=kind, where=where,
                    traceback=tuple(e.output_tail.splitlines()[-6:])),
                    duration_s=time.perf_counter() - started)
                continue
            except GraderError as e:
                if not session.learner:
                    raise   # the reference's worker: a bug of ours
                # the learner's worker answered something no untouched worker sends
                session.close()
                observations[probe] = Observation(probe, error=LearnerError(
                    'WorkerFailure', 'the process running your code sent an answer the grader cannot '
                    'use ({}); was the grader\'s code changed from inside it?'.format(e), kind='worker'),
                    duration_s=time.perf_counter() - started)
                continue
            duration = time.perf_counter() - started
            if answer['ok']:
                try:
                    value = wire.decode(answer['result'])
                except WorkerFailure as e:
                    if not session.learner:
                        raise GraderError('the reference\'s worker sent malformed data: {}'.format(
                            e.message)) from None
                    # a malformed answer is forged: the whole submission, not this one test
                    tail = session.close()
                    return Observed(observations, None, SetupFailure(
                        'tampered', 'the process running your code answered with data the grader\'s '
                        'own code never produces ({}); was the grader changed from inside it?'.format(
                            e.message), tail), (), tail)
                if isinstance(value, dict) and '__skipped__' in value and session.learner and \
                        not _believed_skip(probe, device_mode, limits):
                    tail = session.close()
                    return Observed(observations, None, SetupFailure(
                        'tampered', 'the process running your code claimed it could not run the test '
                        '{} ({!r}), which the reference runs here; the grader\'s code was changed from '
                        'inside it'.format(probe.scenario, str(value['__skipped__'])[:200]),
                        tail), (), tail)
                observations[probe] = Observation(probe, value=value, duration_s=duration)
            else:
                error = answer['error']
                if error.get('type') == TAMPERED:
                    tail = session.close()
                    return Observed(observations, None, SetupFailure(
                        'tampered', str(error.get('message', ''))[:2000], tail), (), tail)
                if error.get('internal'):
                    raise GraderError('the worker refused probe {}: {}'.format(
                        probe.scenario, error.get('message')))
                if error.get('type') == SAME_TIMEOUT and session.stuck and \
                        str(error.get('message', '')).startswith(session.token + ' '):
                    observations[probe] = _same_timeout(probe, error, session, limits, duration)
                else:
                    observations[probe] = _error_observation(probe, error, duration)
            if progress:
                progress()
        if session.worker is not None:
            try:
                answer = session.worker.request({'op': 'findings'})
                if answer['ok']:
                    session.note_findings(wire.decode(answer['result']))
            except (WorkerFailure, GraderError):
                pass   # compatibility notes are advice; a worker that garbles them loses them
        findings = session.findings()
    finally:
        tail = session.close()
    return Observed(observations, session.setup_info, None, findings, tail)


def _believed_skip(probe, device_mode, limits) -> bool:
    """A scenario may skip for a reason of the environment (an optional package is missing). A
    learner's worker saying so is believed only when the reference, asked the same thing in the
    same environment, skips it too."""
    try:
        got = observe_reference([probe], limits=limits, device_mode='cpu' if device_mode == 'cpu' else 'sim')
    except GraderError:
        return False
    obs = got.observations.get(probe)
    return obs is not None and obs.ok and isinstance(obs.value, dict) and '__skipped__' in obs.value


def _compat(f):
    return {'api': str(f.get('api', '')), 'where': str(f.get('where', '')),
            'message': str(f.get('message', '')), 'since': str(f.get('since', '')),
            'fix': str(f.get('fix', '')), 'count': max(1, int(f.get('count', 1)))}


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
            _tree_hash([_GRADER_DIR / 'sandboxed']), np.__version__)
    return _VERSION


def cache_dir() -> Path:
    base = os.environ.get('DEZERO_GRADER_CACHE')
    if base:
        return Path(base)
    return Path(os.environ.get('XDG_CACHE_HOME', Path.home() / '.cache')) / 'dezero-grader'


def _cache_path(probe):
    key = hashlib.sha256((reference_version() + probe.key).encode()).hexdigest()
    return cache_dir() / 'reference' / key[:2] / (key + '.json')


REFERENCE_TRIES = 2


def observe_reference(probes, *, limits: Limits, device_mode='sim', use_cache=True) -> Observed:
    """The reference's answers to `probes`, from the cache where it has them. The reference is
    the grader's own code: a worker of it that fails (stopped by the machine, out of time under
    load) is the grader's trouble, never the learner's, so it is tried again in a fresh worker;
    what still fails raises GraderError, worded as the grader's failure."""
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
    setup, trouble = None, ''
    for _ in range(REFERENCE_TRIES):
        target = reference_target()
        try:
            got = observe(target, missing, device_mode=device_mode, limits=limits)
        finally:
            _remove_tree(target.cwd)
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
                    write_text_atomic(_cache_path(probe), json.dumps(wire.encode(obs.value)))
                except OSError:
                    pass   # a read-only cache only costs time
        missing = [p for p in missing if p not in observations]
        if not missing:
            return Observed(observations, setup, None)
    raise GraderError('the grader\'s reference implementation failed {} times in a row ({}); this '
                      'is a failure of the grader or of this machine, not of the submission: grade '
                      'again, and report it if it persists'.format(REFERENCE_TRIES, trouble.strip()))


def _remove_tree(path):
    import shutil
    shutil.rmtree(path, ignore_errors=True)

