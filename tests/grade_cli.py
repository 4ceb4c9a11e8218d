"""Running `dezero-grade` as a user does, in a fresh interpreter, for the end-to-end tests."""
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def dezero_grade(*args, cwd=ROOT, expect=None, timeout=600, text=True, **kwargs):
    """`python -m grader ARGS` from `cwd`, its output captured. `expect`: the exit statuses the
    caller accepts (anything else fails the test, showing the output); None accepts all. `text`:
    False keeps the output as bytes (for output that need not be UTF-8)."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    env.pop('OMP_NUM_THREADS', None)   # the grader decides its workers' threads itself
    proc = subprocess.run([sys.executable, '-m', 'grader', *map(str, args)], cwd=cwd, env=env,
                          capture_output=True, text=text, timeout=timeout, **kwargs)
    if expect is not None and proc.returncode not in expect:
        raise AssertionError('dezero-grade {} exited {}:\n{}\n{}'.format(
            ' '.join(map(str, args)), proc.returncode, proc.stdout, proc.stderr))
    return proc
