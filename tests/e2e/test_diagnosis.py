"""The diagnosis end to end: single-fault variants graded at a seed other than the one their
fingerprints were measured with, and a package whose `__init__.py` is empty."""
import re
import shutil

import pytest

from dezero_grader import reference
from dezero_grader.grading import diagnose
from dezero_grader.present import terminal

from test_check import grade, variant
from dezero_grader.records.status import FAILING

SEED = 99   # the stored fingerprints were measured at selftest's seed, 2026


@pytest.mark.parametrize('step, fault_id', [
    (52, 'gpu-layer-shallow'),      # this step's, its fingerprint a subset of another's
    (52, 'matmul-grad-transpose'),  # an earlier step's, caught by a regression check too
    (9, 'square-backward-ignores-gy'),
])
def test_the_injected_fault_is_the_one_root_cause(tmp_path, step, fault_id):
    doc = grade(variant(tmp_path, step, fault_id), step, seed=SEED)
    d = doc['diagnosis']
    assert d['fingerprints']
    assert diagnose.top_faults(d)[:1] == [fault_id] and len(d['causes']) == 1, d
    failing = [c['id'] for c in doc['checks'] if c['status'] in FAILING]
    assert sorted(d['causes'][0]['checks']) == sorted(failing) and d['unexplained'] == []
    assert all(c['faults'][0]['id'] == fault_id for c in doc['checks'] if c['id'] in failing)
    text = terminal.render(doc)
    assert text.index('root causes') < text.index('✗ ')
    assert 'root cause 1: {}'.format(fault_id) in text
    shown = text.count('root cause 1: {}'.format(fault_id))
    # the others are folded into one line (one among the checks that count, one among advice),
    # since they show nothing but the same error
    folded = sum(int(n) for n in re.findall(r'^[✗·] (\d+) more checks? fail', text, re.M))
    assert shown + folded == len(failing)


def test_an_empty_init_is_one_cause_and_a_short_report(tmp_path):
    shutil.copytree(reference.ROOT / 'dezero', tmp_path / 'sub' / 'dezero')
    (tmp_path / 'sub' / 'dezero' / '__init__.py').write_text('')
    doc = grade(tmp_path / 'sub', 52)
    failing = [c for c in doc['checks'] if c['status'] in FAILING]
    assert len(failing) > 30
    d = doc['diagnosis']
    assert len(d['causes']) == 1 and d['unexplained'] == []
    assert 'Variable' in d['causes'][0]['error']['names']
    text = terminal.render(doc)
    assert len(text.splitlines()) < 60
    assert text.count('hint:') <= 2
