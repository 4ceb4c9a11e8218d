"""Probes asked in batches (`dezero_grader.grading.worker_session._Session.observe_batch`): what one probe does to the
worker stays that probe's. A worker that dies under one probe of a batch fails that probe as it
would alone; the answers before it (which the batch's tripwire never confirmed) and the probes
after it are asked again, so every other observation is what a worker asked one probe at a time
gives. A submission that patches the grader is `tampered` at the batch's tripwire."""
import shutil
import sys
from pathlib import Path

import pytest

from dezero_grader.catalogue import assignments
from dezero_grader.grading import run, worker_session
from dezero_grader.isolation.worker_process import Limits
from dezero_grader.records.dataflow import Target, canonical_json

pytestmark = pytest.mark.skipif(not sys.platform.startswith('linux'),
                                reason='the worker runs under Linux confinement')

REFERENCE = Path(__file__).resolve().parents[2] / 'reference' / 'dezero'
STEP = 40   # sin and its higher derivatives among the checks of steps 23-39


def _package(root: Path, patch=None, init_tail='') -> Target:
    shutil.copytree(REFERENCE, root / 'dezero', ignore=shutil.ignore_patterns('__pycache__'))
    if patch is not None:
        path = root / 'dezero' / 'functions.py'
        old, new = patch
        text = path.read_text(encoding='utf-8')
        assert old in text
        path.write_text(text.replace(old, new, 1), encoding='utf-8')
    if init_tail:
        with open(root / 'dezero' / '__init__.py', 'a', encoding='utf-8') as f:
            f.write(init_tail)
    return Target(cwd=root, sys_path=(root,),
                  entry={'kind': 'package', 'module': 'dezero', 'path': str(root / 'dezero')})


def _observe(target, probes):
    return worker_session.observe(target, probes, device_mode='cpu', limits=Limits(), era='book')


@pytest.fixture(scope='module')
def probes():
    work = run.plan(assignments.load(STEP), seed=2026)
    found = [p for p in work.learner_probes if p.device == 'cpu']
    assert len(found) > 2 * worker_session.BATCH
    return found


def test_a_probe_that_kills_the_worker_fails_alone_and_the_batch_is_asked_again(tmp_path, probes):
    honest = _observe(_package(tmp_path / 'honest'), probes)
    dying = _observe(_package(tmp_path / 'dying', patch=(
        '        return xp.sin(x)\n', '        import os\n        os._exit(3)\n')), probes)
    assert honest.failure is None and dying.failure is None
    assert all(o.ok for o in honest.observations.values())
    died = {p for p, o in dying.observations.items()
            if not o.ok and o.error.type == 'WorkerFailure'}
    assert died and len(died) < len(probes)
    assert all('exited' in dying.observations[p].error.message or 'os._exit' in
               dying.observations[p].error.message for p in died)
    # every probe that did not reach sin is answered as the honest package answers it
    for probe in probes:
        if probe in died:
            continue
        mine, theirs = dying.observations[probe], honest.observations[probe]
        assert mine.ok, (probe.scenario, mine.error)
        assert canonical_json(mine.value) == canonical_json(theirs.value), probe.scenario


def test_a_patch_of_the_grader_made_by_a_probe_is_tampered_at_the_batch_tripwire(tmp_path, probes):
    # the first call of sin replaces a function of the grader's scenarios' context module
    patched = _observe(_package(tmp_path / 'patched', patch=(
        '        return xp.sin(x)\n',
        '        import dezero_grader.sandboxed.probes.context as _c\n'
        '        _c.Ctx.__init__ = _c.Ctx.__init__\n'
        '        _c.Api = type("Api", (), {})\n'
        '        return xp.sin(x)\n')), probes)
    assert patched.failure is not None and patched.failure.code == 'tampered'
    assert 'dezero_grader.sandboxed.probes.context.Api' in patched.failure.message
