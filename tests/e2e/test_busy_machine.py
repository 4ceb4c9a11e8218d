"""A busy machine is not a bad submission: the reference, graded while busy loops keep every core
of the machine occupied several times over, is accepted every time.

The limits that judge the code are CPU time, which a loaded machine does not stretch; the wall
clock only catches code that waits, at ten times the CPU limit; and a grading that ran out of
wall-clock time anyway while its processes waited for a CPU is graded again (the scorecard's
`regraded`). The limits here are the tight ones the hostile corpus is graded with (3 s of CPU
time a request), so that a wall-clock limit would have failed the reference long before.
"""
import os
import subprocess
import sys

import pytest

from dezero_grader.grading import run
from dezero_grader.isolation.worker_process import Limits
from dezero_grader.proof import selftest
from dezero_grader.records import schema

LOOPS_PER_CORE = 4
STEPS = (9, 33, 52)
LIMITS = Limits(call_s=3, total_s=60)


def _cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


@pytest.fixture
def busy_loops():
    """LOOPS_PER_CORE busy loops per core, running for as long as the test."""
    loops = [subprocess.Popen([sys.executable, '-c', 'while True: pass'])
             for _ in range(LOOPS_PER_CORE * _cores())]
    yield loops
    for p in loops:
        p.kill()
    for p in loops:
        p.wait()


@pytest.mark.slow
@pytest.mark.parametrize('step', STEPS)
def test_the_reference_is_accepted_on_a_machine_busy_several_times_over(busy_loops, step):
    doc = run.grade(selftest.reference_source(step), step,
                    run.Options(device='sim', seed=2026, limits=LIMITS))
    assert schema.errors('scorecard', doc) == []
    assert all(p.poll() is None for p in busy_loops), 'the load went away during the grading'
    assert doc['verdict'] == 'accept', (doc['reason'], doc.get('regraded'))
    if 'regraded' in doc:   # allowed: it says why, and the second grading is the one kept
        assert doc['regraded']['reason'] == 'busy-machine'


def test_a_grading_out_of_wall_clock_on_a_busy_machine_is_graded_again_and_says_so(monkeypatch):
    # the first observation of the learner's code ends as the sandbox reports a wall-clock
    # timeout on a busy machine (here made so: a load cannot be made to order); the grader
    # observes it again, once, and keeps the second
    from dezero_grader.records.dataflow import SetupFailure, WorkerRun
    real, calls = run.observe, []
    busy = ('your code did not finish within 30 s of wall-clock time in one request (its CPU-time '
            'limit is 3 s), using only 0.4 s of CPU time: the machine was busy and kept it waiting '
            'for a CPU')

    def first_one_busy(target, probes, **kw):
        got = real(target, probes, **kw)
        calls.append(got)
        if len(calls) == 1:
            return WorkerRun({}, None, SetupFailure(
                'timeout', 'importing your code did not finish: the machine was busy'), busy=(busy,))
        return got

    monkeypatch.setattr(run, 'observe', first_one_busy)
    doc = run.grade(selftest.reference_source(9), 9, run.Options(device='sim', seed=2026))
    assert len(calls) == 2
    assert doc['verdict'] == 'accept', doc['reason']
    assert doc['regraded']['reason'] == 'busy-machine' and doc['regraded']['first'] == busy
    assert schema.errors('scorecard', doc) == []


def test_a_submission_that_waits_without_end_is_not_graded_again(tmp_path):
    # code that sleeps is not starved of CPU: its wall-clock timeout is its own, told as such.
    # The limits are the corpus's (3 s of CPU, so 30 s of wall clock): the machine is busy when
    # the processes spent a quarter of the wall clock waiting for a CPU, and on a loaded machine
    # the import before the sleep may wait seconds for one; a quarter of 5 s it could exceed
    from dezero_grader.intake import load
    sub = load.prepare(selftest.reference_source(52), 52, tmp_path / 'sub')
    entry = sub.root / 'dezero' / '__init__.py'
    entry.write_text(entry.read_text() + '\nimport time\ntime.sleep(600)\n')
    doc = run.grade(sub.root, 52, run.Options(device='sim', seed=2026, limits=LIMITS))
    assert doc['verdict'] == 'invalid' and doc['invalid']['code'] == 'timeout'
    assert 'wall-clock' in doc['invalid']['message'] and 'waits for something' in doc['invalid']['message']
    assert 'regraded' not in doc
