"""The worker session: one side (the submission, or the reference) observed through a worker.

`observe` starts a worker in the side's scratch copy, loads the code there (`setup`), and runs
each probe, turning every answer into an `Observation`: a decoded value, or a `LearnerError` when
the learner's code raised, ran out of time or killed its worker (the worker is then restarted for
the remaining probes, within one time budget: `Limits.total_s` bounds the whole submission's CPU
time, restarts included, and its wall clock is bounded as generously as `Limits.total_wall_s`
says). Probes go in batches of `BATCH` with one tripwire run for the batch; a probe stuck in a
call where an earlier one ran out of time is stopped early there (`SameTimeout`). A timeout on the
wall clock that came while the machine kept the code waiting for a CPU (`WorkerFailure.busy`) is
kept in `WorkerRun.busy`: `dezero_grader.grading.run` grades such a submission again.

It sits between the checks' probes and the judges: what it hands on is a `WorkerRun`
(`dezero_grader.records.dataflow`). Each answer is taken only in the form the grader's own worker
gives it (the rules are `dezero_grader.grading.trust`'s: an answer of another form ends a
learner's side as `tampered`, as the tripwire of `dezero_grader.sandboxed.probes.handlers`
(`GraderModified`) does; a skip its worker claims waits for the reference). The reference's
answers, retried and cached, are `dezero_grader.grading.reference_answers`'; what the learner is
told of a failing worker is `dezero_grader.isolation.failure_messages`'.
"""
from __future__ import annotations

import dataclasses
import secrets
import time

from dezero_grader import wire
from dezero_grader.checks.environment import NO_CUPY   # its pseudo-probe, answered here
from dezero_grader.errors import GraderError, WorkerFailure
from dezero_grader.grading.trust import (compat_finding, error_problem, forged, hidden_from_learners,
                                         learner_error, setup_shaped, skipped)
from dezero_grader.isolation.failure_messages import (PLACE, RUNNING, SAME_TIMEOUT, TAMPERED, WHOLE_RUN, explain,
                                                      same_timeout_after, setup_failure)
from dezero_grader.isolation.worker_process import Limits, Worker
from dezero_grader.records.dataflow import LearnerError, Observation, SetupFailure, Target, WorkerRun

# probes asked in one request: the worker's processes looked at and its tripwire run once for all
BATCH = 16
NO_DEVICE = 'needs a device, and this run has none (--device cpu)'


class _Session:
    """One side's worker with its setup done; restarted after a failure, within one time budget.

    `observe(probe)` is one probe's way through it, in order: decided without the worker (a device
    probe on a run without a device), a restart (or what stops one), the request (or the worker
    failing under it), the answer (a value, or the code's error). Each failure kind has a method
    of its own; a `SetupFailure` it returns ends the whole side."""

    def __init__(self, target, device_mode, limits, era, after=None):
        self.target, self.device_mode, self.limits, self.era = target, device_mode, limits, era
        self.worker = None
        self.setup_info = None
        self._findings = {}
        self.output_tail = ''
        self.wall_deadline = time.monotonic() + limits.total_wall_s
        self.cpu_spent = 0.0    # by the workers closed so far
        if after is not None:   # one budget for the whole side, however many sessions it takes
            self.wall_deadline, self.cpu_spent = after.wall_deadline, after.cpu_spent
        self.busy = []          # the wall-clock timeouts that came while the machine was busy
        self.learner = target.entry.get('kind') != 'reference'
        self.hidden = hidden_from_learners(target.cwd) if self.learner else ()
        # where the learner's code ran out of time: (file, function) -> file:line, first first
        self.stuck = {}
        self.token = secrets.token_hex(8)

    def note_timeout(self, exc: WorkerFailure) -> str:
        """Remember the function a probe was running when it ran past the call limit, so that the
        next probes stuck in the same call are stopped there early (`SameTimeout`)."""
        m = RUNNING.search(exc.message)
        if exc.busy:
            self.busy.append(exc.message)
        if not self.learner or exc.reason != 'timeout' or WHOLE_RUN in exc.message or not m \
                or exc.busy:
            return ''
        place = PLACE.match(m['where'])
        if place:
            self.stuck.setdefault((place['file'], place['func']), m['where'])
        return m['where']

    def stuck_request(self) -> dict:
        if not self.stuck:
            return {}
        after = same_timeout_after(self.limits)
        return {'stuck': [list(k) for k in self.stuck], 'token': self.token,
                'stuck_after': after, 'stuck_wall_after': after * self.limits.hang_factor}

    def remaining(self) -> float:
        """What is left of the submission's budget: the less of its CPU time and its wall clock,
        each as a share of the limit, times the CPU limit (<= 0: used up)."""
        cpu_left = self.limits.total_s - self.cpu_spent
        wall_left = self.wall_deadline - time.monotonic()
        return min(cpu_left, wall_left * self.limits.total_s / self.limits.total_wall_s)

    # -- starting --

    def begin(self, during: str) -> SetupFailure | None:
        """Start a worker and set it up; a worker that fails doing so, in words for `during`."""
        try:
            return self.start()
        except WorkerFailure as e:
            self.close()
            if e.busy:
                self.busy.append(e.message)
            return SetupFailure(e.reason, explain(e, self.limits, during), e.output_tail)

    def start(self):
        # a restarted worker gets what is left of the submission's time, not a fresh allowance
        limits = dataclasses.replace(
            self.limits, total_s=max(self.limits.total_s - self.cpu_spent, 0.05),
            wall_s=max(self.wall_deadline - time.monotonic(), 0.05))
        self.worker = Worker(self.target.cwd, list(self.target.sys_path), limits, hidden=self.hidden)
        self.worker.start()
        try:
            answer = self.worker.request({'op': 'setup', 'entry': self.target.entry,
                                          'device_mode': self.device_mode, 'era': self.era})
        except GraderError as e:
            if not self.learner:
                raise   # the reference's worker: a bug of ours
            return forged('the grader\'s setup with something the grader\'s own worker never sends '
                          '({})'.format(str(e)[:200]), self.close())
        if not answer['ok']:
            problem = error_problem(answer['error'])
            if problem and self.learner:
                return forged('the grader\'s setup with an error record the grader\'s own worker '
                              'never writes ({})'.format(problem), self.close())
            tail = self.close()
            return SetupFailure(*setup_failure(answer['error']), tail)
        self.setup_info = answer['result']
        if self.learner and not setup_shaped(self.setup_info):
            return forged('the grader\'s setup with a report the grader\'s own worker never writes',
                          self.close())
        if isinstance(self.setup_info, dict):
            self.note_findings(self.setup_info.get('findings'))
        return None

    # -- one probe --

    def observe(self, probe):
        """(the probe's Observation, whether the worker answered it), or the SetupFailure that
        ends the side."""
        if probe.device == 'gpu' and self.device_mode == 'cpu':
            # decided here, without asking the worker (whose word on skips is not taken)
            return Observation(probe, value={'__skipped__': NO_DEVICE}), False
        if self.worker is None:
            stopped = self.restart(probe)
            if stopped is not None:
                return stopped if isinstance(stopped, SetupFailure) else (stopped, False)
        started = time.perf_counter()
        try:
            answer = self.worker.request(self.probe_request(probe))
        except WorkerFailure as e:
            return self.worker_failed(probe, e, time.perf_counter() - started), False
        except GraderError as e:
            return self.unusable_answer(probe, e, time.perf_counter() - started), False
        duration = time.perf_counter() - started
        got = self.value(probe, answer, duration) if answer['ok'] else \
            self.error(probe, answer['error'], duration)
        return got if isinstance(got, SetupFailure) else (got, True)

    def probe_request(self, probe, tripwire: str = 'now') -> dict:
        return {'op': 'probe', 'scenario': probe.scenario, 'params': wire.encode(dict(probe.params)),
                'seed': probe.seed, 'device': probe.device, 'tripwire': tripwire,
                **self.stuck_request()}

    # -- several probes --

    def observe_batch(self, probes) -> tuple:
        """(results, again, rest): the first probes of `probes` asked in one request, each result
        `(probe, what observe gives)`; the probes to ask again one by one; those not reached.

        The probes of a batch skip the tripwire, which runs once, as the batch's last request:
        their answers are taken only once it says the grader's code is unchanged. When the worker
        fails part-way, the probe it failed under fails as it would alone, and the probes answered
        before it (not yet seen by the tripwire) and after it are asked again, one by one."""
        batch = []
        for probe in probes[:BATCH]:
            if probe.device == 'gpu' and self.device_mode == 'cpu':
                break
            batch.append(probe)
        if self.worker is None or len(batch) < 2:
            return [(probes[0], self.observe(probes[0]))], [], probes[1:]
        rest = probes[len(batch):]
        msgs = [self.probe_request(p, tripwire='later') for p in batch] + [{'op': 'tripwire'}]
        answers, failure, seconds = self.worker.requests(msgs)
        stop = next((i for i, a in enumerate(answers) if isinstance(a, GraderError)), None)
        if failure is not None or stop is not None:
            at = len(answers) if stop is None else stop
            if at >= len(batch):   # at the tripwire itself: ask them all again
                self.close()
                return [], batch, rest
            probe = batch[at]
            failed = self.worker_failed(probe, failure, seconds[at]) if stop is None \
                else self.unusable_answer(probe, answers[at], seconds[at])
            return [(probe, (failed, False))], [p for p in batch if p is not probe], rest
        verdict = answers.pop()
        if not verdict['ok']:
            got = self.error(batch[-1], verdict['error'], 0.0)
            if isinstance(got, SetupFailure):
                return [(batch[-1], got)], [], []
            self.close()     # a tripwire that raised what it never raises: ask them all again
            return [], batch, rest
        if verdict.get('result') is not True:
            return [(batch[-1], forged('a tripwire answer the grader\'s own worker never sends',
                                       self.close()))], [], []
        results = []
        for probe, answer, duration in zip(batch, answers, seconds):
            got = self.value(probe, answer, duration) if answer['ok'] else \
                self.error(probe, answer['error'], duration)
            if isinstance(got, SetupFailure):
                return results + [(probe, got)], [], []
            results.append((probe, (got, True)))
        return results, [], rest

    def restart(self, probe):
        """A fresh worker after a failure: None once it runs, else the probe's Observation (the
        time is up, or the restart failed) or the SetupFailure of a tampered one."""
        if self.remaining() <= 0:
            return _not_run(probe, 'not run: your code had already used up the {:g} s allowed for '
                            'grading the whole submission'.format(self.limits.total_s))
        failure = self.begin('restarting your code after a failure' if self.learner else
                             'restarting the grader\'s reference implementation')
        if failure is None:
            return None
        if failure.code == 'tampered':
            return failure
        return Observation(probe, error=LearnerError(
            'WorkerFailure', failure.message, kind='timeout' if failure.code == 'timeout' else 'worker'))

    def worker_failed(self, probe, e: WorkerFailure, duration) -> Observation:
        """The worker died, hung or broke a limit under this probe: it fails, the next restarts."""
        self.close()
        where = self.note_timeout(e)
        return Observation(probe, error=LearnerError(
            'WorkerFailure', explain(e, self.limits, 'this test'),
            kind='timeout' if e.reason == 'timeout' else 'worker', where=where,
            traceback=tuple(e.output_tail.splitlines()[-6:])), duration_s=duration)

    def unusable_answer(self, probe, e: GraderError, duration) -> Observation:
        """An answer no untouched worker sends (the reference's: a bug of ours)."""
        if not self.learner:
            raise e
        self.close()
        return Observation(probe, error=LearnerError(
            'WorkerFailure', 'the process running your code sent an answer the grader cannot use '
            '({}); was the grader\'s code changed from inside it?'.format(e), kind='worker'),
            duration_s=duration)

    def value(self, probe, answer, duration):
        """A report: decoded, or -- malformed, so forged -- the end of a learner's side."""
        try:
            value = wire.decode(answer['result'])
        except WorkerFailure as e:
            if not self.learner:
                raise GraderError('the reference\'s worker sent malformed data: {}'.format(
                    e.message)) from None
            return forged('with data the grader\'s own code never produces ({})'.format(e.message),
                          self.close())
        return Observation(probe, value=value, duration_s=duration)

    def error(self, probe, error, duration):
        """The code's error under this probe, or what the grader's own modules in the worker
        answered: the tripwire (the side ends), a refusal (a bug of ours), the same timeout. An
        error record of another form than the worker writes (`error_problem`) is forged."""
        problem = error_problem(error)
        if problem:
            if not self.learner:
                raise GraderError('the reference\'s worker sent a malformed error: ' + problem)
            return forged('with an error record the grader\'s own worker never writes ({})'.format(
                problem), self.close())
        kind = error.get('type')
        if kind == TAMPERED:
            tail = self.close()
            return SetupFailure('tampered', str(error.get('message', ''))[:2000], tail)
        if error.get('internal'):
            raise GraderError('the worker refused probe {}: {}'.format(probe.scenario,
                                                                       error.get('message')))
        if kind == SAME_TIMEOUT and self.stuck and \
                str(error.get('message', '')).startswith(self.token + ' '):
            return _same_timeout(probe, error, self.limits, duration)
        return Observation(probe, error=learner_error(error), duration_s=duration)

    # -- advice and the end --

    def ask_findings(self):
        """The compatibility findings of the last worker (those of earlier ones came at setup)."""
        if self.worker is None:
            return
        try:
            answer = self.worker.request({'op': 'findings'})
            if answer['ok']:
                self.note_findings(wire.decode(answer['result']))
        except (WorkerFailure, GraderError):
            pass   # compatibility notes are advice; a worker that garbles them loses them

    def note_findings(self, found):
        """Compatibility findings a worker reported (at setup, at the end), kept across restarts:
        one per (api, where), with the highest count seen."""
        try:
            for f in found or ():
                item = compat_finding(f)
                key = (item['api'], item['where'])
                if key not in self._findings or self._findings[key]['count'] < item['count']:
                    self._findings[key] = item
        except (AttributeError, TypeError, ValueError, OverflowError):
            pass   # a worker that garbles them (a count of 1e400) loses them

    def findings(self) -> tuple:
        return tuple(self._findings.values())

    def close(self):
        if self.worker is not None:
            self.worker.close()   # first: closing waits for the last of the output to arrive
            self.cpu_spent += self.worker.cpu_time()
            try:
                self.output_tail = self.worker.output_tail
            except Exception:
                pass
            self.worker = None
        return self.output_tail


def _same_timeout(probe, error, limits, duration) -> Observation:
    """A probe stopped early in a call where an earlier one ran out of time: not run, because of
    that timeout (one timeout is one finding, however many tests reach the same loop)."""
    where = str(error.get('message', '')).split(' ', 1)[1]
    return Observation(probe, error=LearnerError(
        'NotRun', 'not run: it reached {}, where an earlier test ran past the {:g} s time limit '
        '(--timeout, CPU time); it was stopped after {:g} s of CPU time there instead of waiting '
        'for the limit again. '
        'Fix that endless loop first'.format(where, limits.call_s, same_timeout_after(limits)),
        where=where, kind='not-run'), duration_s=duration)


def _not_run(probe, message) -> Observation:
    return Observation(probe, error=LearnerError('WorkerFailure', message, kind='timeout'))



def observe(target: Target, probes, *, device_mode: str, limits: Limits, era='current',
            progress=None) -> WorkerRun:
    """Observe one side: every probe's `Observation`, in one worker restarted after failures.
    A learner's worker that answers what the grader's own never does ends the side with a
    `tampered` failure; a skip it claims is kept in `claimed_skips`, for `believe_skips` to decide
    once the reference is observed too.

    The learner's code is imported first as the book's readers run it, with no CuPy at all; the
    host probes run in that worker, the device probes (`device == 'gpu'`) in a second one that
    has the device. Code that imports only where CuPy is gets every probe answered with the
    device, and `cupyless` says why the first import failed (`dezero_grader.checks.environment`)."""
    own = [p for p in probes if p.scenario == NO_CUPY]
    probes = [p for p in probes if p.scenario != NO_CUPY]
    if target.entry.get('kind') == 'reference' and not own:
        return _observe_in(_Session(target, device_mode, limits, era), probes, progress)
    host = _Session(target, 'cpu', limits, era)
    failure = host.begin('importing your code')
    if failure is not None:
        if device_mode == 'cpu' or failure.code != 'import-error':
            return _failed(host, failure)
        # it imports only where CuPy is, perhaps: everything else is graded with the device
        run = _observe_in(_Session(target, device_mode, limits, era, after=host), probes,
                          progress)
        return _answer_own(dataclasses.replace(run, busy=tuple(host.busy) + run.busy), own,
                           {'failure': failure})
    cupyless = {'gpu_flag': host.setup_info.get('gpu_flag')}
    on_device = [p for p in probes if p.device == 'gpu' and device_mode != 'cpu']
    run = _observe_in(host, [p for p in probes if p not in on_device], progress, started=True)
    if run.failure is not None or not on_device:
        return _answer_own(run, own, cupyless)
    more = _observe_in(_Session(target, device_mode, limits, era, after=host), on_device,
                       progress)
    if more.failure is not None and more.failure.code == 'tampered':
        return more
    if more.failure is not None:
        # imports without CuPy but not with it: the device probes fail with that error
        error = LearnerError('ImportError', 'importing your code where CuPy is failed: {}'.format(
            more.failure.message), kind='worker')
        more = WorkerRun({p: Observation(p, error=error) for p in on_device}, None, None, (),
                         more.output_tail, busy=more.busy, cpu_s=more.cpu_s)
    merged = dataclasses.replace(
        run, observations={**run.observations, **more.observations},
        findings=_merge_findings(run.findings + more.findings),
        output_tail=more.output_tail or run.output_tail,
        claimed_skips=run.claimed_skips + more.claimed_skips,
        busy=run.busy + more.busy, cpu_s=more.cpu_s)   # the second session counts from the first's
    return _answer_own(merged, own, cupyless)


def _observe_in(session, probes, progress, started=False) -> WorkerRun:
    """`probes` through one session (begun here unless `started`)."""
    observations, claims = {}, []
    try:   # whatever happens here, the worker is closed before this returns or raises
        if not started:
            # the reference's failure is said as the grader's, never as the learner's code
            failure = session.begin('importing your code' if session.learner else
                                    'importing the grader\'s reference implementation')
            if failure is not None:
                return _failed(session, failure)
        queue, alone = list(probes), 0
        while queue:
            if alone:
                results, again, queue = [(queue[0], session.observe(queue[0]))], [], queue[1:]
                alone -= 1
            else:
                results, again, queue = session.observe_batch(queue)
                queue, alone = again + queue, len(again)
            for probe, got in results:
                if isinstance(got, SetupFailure):
                    session.close()
                    return WorkerRun(observations, None, got, (), got.output_tail,
                                     busy=tuple(session.busy), cpu_s=session.cpu_spent)
                observation, answered = got
                observations[probe] = observation
                if answered and session.learner and skipped(observation):
                    claims.append(probe)
                if answered and progress:
                    progress()
        session.ask_findings()
    finally:
        tail = session.close()
    return WorkerRun(observations, session.setup_info, None, session.findings(), tail, tuple(claims),
                     busy=tuple(session.busy), cpu_s=session.cpu_spent)


def _failed(session, failure) -> WorkerRun:
    return WorkerRun({}, None, failure, (), failure.output_tail, busy=tuple(session.busy),
                     cpu_s=session.cpu_spent)


def _answer_own(run: WorkerRun, own, cupyless) -> WorkerRun:
    """The side's run with what this module answers itself: the first import, without CuPy."""
    if run.failure is not None:
        return run
    observations = dict(run.observations)
    for probe in own:
        failure = cupyless.get('failure')
        observations[probe] = Observation(probe, value={'gpu_flag': cupyless.get('gpu_flag')}) \
            if failure is None else Observation(probe, error=LearnerError(
                failure.code, failure.message, kind='exception'))
    return dataclasses.replace(run, observations=observations, cupyless=cupyless)


def _merge_findings(findings) -> tuple:
    """One compatibility finding per (api, where), the highest count kept."""
    out = {}
    for f in findings:
        key = (f['api'], f['where'])
        if key not in out or out[key]['count'] < f['count']:
            out[key] = f
    return tuple(out.values())
