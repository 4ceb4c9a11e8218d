"""A learner's worker failing, as the learner is told it: why their code could not be set up
(`setup_failure`), and a `WorkerFailure` in words that name the limit and the option that sets it
(`explain`). Pure functions of the answers and the limits; `dezero_grader.grading.worker_session` uses them."""
from __future__ import annotations

import re

from dezero_grader.errors import WorkerFailure
from dezero_grader.isolation.worker_process import Limits

TAMPERED = 'GraderModified'   # the error type dezero_grader.sandboxed.probes.handlers answers when its tripwire fires
SAME_TIMEOUT = 'SameTimeout'  # ... and when a probe is stuck where an earlier one timed out


def setup_failure(answer_error) -> tuple:
    """(code, text) for a worker whose setup answered an error: what the learner is told."""
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
    return code, text


# Phrases of dezero_grader.isolation.worker_process's messages that say where the code was and which clock ran out.
RUNNING = re.compile(r' \(it was running (?P<where>[^()]*)\)$')
PLACE = re.compile(r'^(?P<file>.+):(?P<line>\d+) in (?P<func>\S+)$')
WHOLE_RUN = 'whole grading run'


def same_timeout_after(limits: Limits) -> float:
    """How much CPU time a probe may spend in one call of a function that already ran out of time
    before it is stopped as the same timeout: a tenth of the call limit, between 0.25 s and 1 s
    (the worker also stops it after `hang_factor` times as long on the wall clock)."""
    return min(1.0, max(0.25, (limits.call_s or 30.0) / 10))


def explain(exc: WorkerFailure, limits: Limits, during: str) -> str:
    """A WorkerFailure in words a learner understands: what happened `during` what, which limit
    (and the option that sets it), and where the code was when it had to be stopped."""
    m = RUNNING.search(exc.message)
    where = ' (it was running {})'.format(m['where']) if m else ''
    reason = exc.reason
    clock = getattr(exc, 'clock', None)
    used = getattr(exc, 'cpu_s', None)
    spent = '' if used is None else ', using only {:.1f} s of CPU time'.format(used)
    busy = getattr(exc, 'busy', False)
    if reason == 'timeout' and clock == 'wall':
        if WHOLE_RUN in exc.message:
            what = 'the {:g} s of wall-clock time allowed for grading the whole submission'.format(
                limits.total_wall_s)
        else:
            what = '{:g} s of wall-clock time (the limit catches code that waits without end; ' \
                   'the time limit itself, --timeout {:g} s, is CPU time)'.format(
                       limits.call_wall_s(), limits.call_s)
        if busy:
            return ('{} did not finish within {}{}{}: the machine was busy and kept your code '
                    'waiting for a CPU; this is no fault of your code').format(during, what, spent, where)
        return ('{} did not finish within {}{}{}: look for code that waits for something that '
                'never comes (a sleep in a loop, a lock, a pipe or a child process that never '
                'answers)').format(during, what, spent, where)
    limit_kind = 'CPU-time limit' if clock == 'cpu' else 'time limit'
    if reason == 'timeout' and WHOLE_RUN in exc.message:
        return ('{} did not finish: your code used up the {:g} s {} allowed for grading the whole '
                'submission{}').format(during, limits.total_s,
                                       'of CPU time' if clock == 'cpu' else '', where).replace('  ', ' ')
    if reason == 'timeout':
        return ('{} did not finish within the {:g} s {} (--timeout){}: look for an endless '
                'loop, or a loop that waits for something that never comes').format(
                    during, limits.call_s, limit_kind, where)
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
