"""Running `dezero-grade` as a user does, in a fresh interpreter, for the end-to-end tests."""
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


# how long a command may run before the test calls it a hang: never reached by a healthy run,
# however loaded the machine (it does not measure how fast the command is)
HANG_S = 3600


def run_to_end(argv, *, timeout=HANG_S, **kwargs):
    """`subprocess.run(argv, **kwargs)` for a command a test waits for: `timeout` only catches a
    hang, and fails the test saying so (with what the command printed so far)."""
    try:
        return subprocess.run(argv, timeout=timeout, **kwargs)
    except subprocess.TimeoutExpired as e:
        raise AssertionError('{} did not end within {} s: a hang (the limit is there only to catch '
                             'one)\n{}\n{}'.format(' '.join(map(str, argv)), timeout, e.stdout,
                                                   e.stderr)) from None


def dezero_grade(*args, cwd=ROOT, expect=None, timeout=HANG_S, text=True, **kwargs):
    """`python -m dezero_grader ARGS` from `cwd`, its output captured. `expect`: the exit statuses the
    caller accepts (anything else fails the test, showing the output); None accepts all. `text`:
    False keeps the output as bytes (for output that need not be UTF-8). `timeout` only catches a
    hang, and fails the test saying so."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    env.pop('OMP_NUM_THREADS', None)   # the grader decides its workers' threads itself
    proc = run_to_end([sys.executable, '-m', 'dezero_grader', *map(str, args)], cwd=cwd, env=env,
                      capture_output=True, text=text, timeout=timeout, **kwargs)
    if expect is not None and proc.returncode not in expect:
        raise AssertionError('dezero-grade {} exited {}:\n{}\n{}'.format(
            ' '.join(map(str, args)), proc.returncode, proc.stdout, proc.stderr))
    return proc
