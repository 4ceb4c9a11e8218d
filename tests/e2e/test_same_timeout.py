"""One endless loop is one timeout: after a probe of the learner's code runs past the time limit,
the probes that get stuck in the same call are stopped there early and reported as not run
because of it, instead of each waiting for its own limit (an endless loop in Variable.backward
with --timeout 3 once took 45 s and twelve timeout blocks at step 40, 143 s and 32 at step 52).
"Stuck" is measured in CPU time, so a busy machine does not make a slow call look stuck.
"""
from pathlib import Path

import pytest

from dezero_grader.grading import run
from dezero_grader.intake import load
from dezero_grader.isolation.worker_process import Limits
from dezero_grader.proof import selftest
from dezero_grader.sandboxed.probes import handlers

# an empty loop, and one that spends its time in a library (the innermost frame when it is
# stopped is NumPy's, the call that never returns the learner's)
LOOPS = {'empty': '        while True:\n            pass\n',
         'calls-numpy': '        while True:\n            np.sum(np.ones(3))\n'}


def _endless_backward(tmp_path, step=40, loop='empty'):
    sub = load.prepare(selftest.reference_source(step), step, tmp_path / 'sub')
    core = sub.root / 'dezero' / 'core.py'
    text = core.read_text()
    head = '    def backward(self, retain_grad=False, create_graph=False):\n'
    assert head in text
    core.write_text(text.replace(head, head + LOOPS[loop], 1))
    return sub.root


@pytest.mark.parametrize('loop', sorted(LOOPS))
def test_endless_backward_is_one_timeout_and_the_rest_not_run(tmp_path, loop):
    root = _endless_backward(tmp_path, loop=loop)
    doc = run.grade(root, 40, run.Options(seed=2026, limits=Limits(call_s=3.0)))
    by_status = {}
    for c in doc['checks']:
        by_status.setdefault(c['status'], []).append(c)
    assert len(by_status['timeout']) == 1, [c['id'] for c in by_status['timeout']]
    first = by_status['timeout'][0]
    # the learner's own line, also where the loop spends its time in NumPy
    assert '(it was running dezero/core.py:' in first['message'], first['message']
    assert 'in backward)' in first['message']
    not_run = by_status['skipped']
    assert len(not_run) >= 8
    for c in not_run:
        assert 'not run: it reached dezero/core.py:' in c['message'], c['message']
        assert 'where an earlier test ran past the 3 s time limit' in c['message']
        assert 'stopped after 0.3 s of CPU time there' in c['message']
        assert c['earned'] == 0 and not c['repro']
    assert doc['verdict'] == 'reject'
    # one 3 s limit, not one per check (twelve of them took 45 s before): one timeout above,
    # every other check stuck there stopped early


def test_same_function_called_often_is_not_a_timeout(tmp_path, monkeypatch):
    """Only one call staying in the function counts: many short calls of it are normal code."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / 'loopmod.py').write_text(
        'import time\n'
        'def step():\n'
        '    until = time.process_time() + 0.01\n'
        '    while time.process_time() < until:\n'
        '        pass\n'
        'def endless(hang_s):\n'
        '    until = time.process_time() + hang_s\n'
        '    while time.process_time() < until:\n'
        '        pass\n'
        '    raise AssertionError("still in endless() after %s s of CPU time: never stopped" % hang_s)\n')
    monkeypatch.syspath_prepend(str(tmp_path))
    import loopmod
    undo = handlers._watch([['loopmod.py', 'step'], ['loopmod.py', 'endless']], 0.3, 'tok')
    try:
        for _ in range(100):
            loopmod.step()          # in and out of step() a hundred times, 1 s of CPU: never stopped
        with pytest.raises(handlers.SameTimeout) as raised:
            loopmod.endless(60)     # stopped after 0.3 s of CPU time in it; 60 s would be a hang
        assert str(raised.value).startswith('tok loopmod.py:')
        assert str(raised.value).endswith(' in endless')
    finally:
        undo()


def test_a_call_slowed_by_a_busy_machine_is_not_stuck(tmp_path, monkeypatch):
    """Stuck is CPU time: a call that waits (a process the machine does not run, here one that
    sleeps) for longer than the limit on the wall clock is not stopped, until the wall clock's
    far longer limit for code that waits."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / 'slowmod.py').write_text(
        'import time\n'
        'def slow():\n'
        '    time.sleep(1.0)\n'
        '    return "done"\n'
        'def waits():\n'
        '    time.sleep(600)\n')
    monkeypatch.syspath_prepend(str(tmp_path))
    import slowmod
    # 1 s on the wall clock, five times the 0.2 s CPU-time limit, no CPU time: not stuck. The
    # wall clock's own limit is kept out of it (600 s), so that a loaded machine waking the
    # sleeper late cannot make it look stuck
    undo = handlers._watch([['slowmod.py', 'slow']], 0.2, 'tok', 600.0)
    try:
        assert slowmod.slow() == 'done'
    finally:
        undo()
    # and code that waits without end is stopped at the wall clock's limit (2 s here)
    undo = handlers._watch([['slowmod.py', 'waits']], 0.2, 'tok', 2.0)
    try:
        with pytest.raises(handlers.SameTimeout):
            slowmod.waits()
    finally:
        undo()
