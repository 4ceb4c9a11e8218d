"""Errors are shown where they happen, never hidden behind what they left out.

* A phase of a scenario that raised leaves later values unreported: an expectation on them
  ("nothing was reported at shapes.pool1", "length 0 instead of 3") and a reference comparison
  ("differs from the reference at model.test: missing") name the learner's exception instead:
  type, message and the learner's own `file:line`.
* No string of a scorecard holds the grader's scratch folder: an exception message naming a
  file the scenario wrote, compatibility findings, reasons.
"""
import json
import shutil
import tempfile
from pathlib import Path

import numpy as np

from dezero_grader.checks import CHECKS, JudgeInput, load_all
from dezero_grader.grading import run
from dezero_grader.records.dataflow import Observation, Probe

from dezero_grader import reference

SEED = 2026


def _package(tmp_path, edits):
    dest = tmp_path / 'sub'
    shutil.copytree(Path(reference.ROOT) / 'dezero', dest / 'dezero',
                    ignore=shutil.ignore_patterns('__pycache__'))
    for name, old, new in edits:
        path = dest / 'dezero' / name
        text = path.read_text()
        assert old in text, (name, old)
        path.write_text(text.replace(old, new, 1))
    return dest


def _line_of(path, text):
    return next(i for i, line in enumerate(Path(path).read_text().splitlines(), 1) if text in line)


def test_a_phase_that_raised_is_named_where_its_values_are_missing(tmp_path):
    head = 'def pooling(x, kernel_size, stride=1, pad=0):\n'
    sub = _package(tmp_path, [('functions_conv.py', head,
                               head + "    raise ValueError('pooling is not written yet')\n")])
    line = _line_of(sub / 'dezero' / 'functions_conv.py', 'pooling is not written yet')
    doc = run.grade(sub, 57, run.Options(seed=SEED, only=('lenet.shapes',)))
    check = next(c for c in doc['checks'] if c['id'] == 'step57/lenet.shapes')
    assert check['status'] == 'failed'
    messages = [f['message'] for f in check['evidence']['findings'] if f['status'] == 'failed']
    # conv1 was reported before pooling raised; every stage after it names the exception
    assert any('shapes.pool1' in m for m in messages)
    at = 'ValueError: pooling is not written yet at dezero/functions_conv.py:{} in pooling'.format(
        line)
    for m in messages:
        assert at in m, m
        if 'nothing was reported' in m:
            assert 'because your code raised {} (in run)'.format(at) in m, m


def _judge(check, params, learner_value, reference_value=None):
    load_all()
    definition = CHECKS[check]
    plan = definition.plan(params, 1)
    learner = {plan.learner[0]: Observation(plan.learner[0], value=learner_value)}
    ref = {p: Observation(p, value=reference_value) for p in plan.reference}
    return definition.judge(JudgeInput(params=params, tolerance={}, plan=plan, learner=learner,
                                       reference=ref))


RAISED = {'raised': 'AttributeError', 'message': "'NoneType' object has no attribute 'creator'",
          'where': 'dezero/core.py:41 in unchain_backward'}


def test_reference_match_names_the_exception_behind_a_short_list():
    window = {'size': 3, 'loss_creator': 'Add', 'h': {'creator': None}, 'c': None}
    findings = _judge('reference.match', {'scenario': 'sequence.bptt', 'what': 'the BPTT loop'},
                      {'structure': [], 'graph': RAISED},
                      {'structure': [window] * 3, 'graph': {'sizes': [3, 3, 3], 'growth': 0}})
    assert len(findings) == 1 and findings[0].status == 'failed'
    message = findings[0].message
    assert 'length 0 instead of 3' in message
    assert "because your code raised AttributeError: 'NoneType' object has no attribute " \
           "'creator' at dezero/core.py:41 in unchain_backward (in graph)" in message
    assert findings[0].evidence['where'] == 'dezero/core.py:41 in unchain_backward'


def test_reference_match_names_the_exception_behind_a_missing_key():
    findings = _judge('reference.match', {'scenario': 'vgg.pretrained_file', 'what': 'VGG16'},
                      {'model': {'file_names': 'ok'}, 'load': RAISED},
                      {'model': {'file_names': 'ok', 'test': 1.0}, 'load': None})
    assert 'at model.test: missing because your code raised AttributeError' in findings[0].message
    # a phase that raised where the reference's raised too explains nothing
    findings = _judge('reference.match', {'scenario': 'vgg.pretrained_file', 'what': 'VGG16'},
                      {'model': {'file_names': 'ok'}, 'load': RAISED},
                      {'model': {'file_names': 'ok', 'test': 1.0}, 'load': RAISED})
    assert findings[0].message.endswith('at model.test: missing')


def test_expectation_with_nothing_reported_names_the_exception():
    params = {'scenario': 'sequence.bptt', 'expect': [
        {'path': 'structure[*].h.creator', 'op': 'none', 'message': 'the state is cut'}]}
    findings = _judge('expect', params, {'structure': [], 'numbers': [], 'graph': RAISED})
    assert findings[0].status == 'failed'
    assert 'nothing was reported at structure[*].h.creator because your code raised ' \
           'AttributeError' in findings[0].message
    assert 'dezero/core.py:41 in unchain_backward' in findings[0].message
    # a phase that raised is shown where it is read, with the learner's line
    findings = _judge('expect', params, {'structure': RAISED})
    assert findings[0].message.endswith('at dezero/core.py:41 in unchain_backward')


def _strings(value):
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for k, v in value.items():
            yield k
            yield from _strings(v)
    elif isinstance(value, list):
        for v in value:
            yield from _strings(v)


def test_no_scorecard_string_holds_the_scratch_folder(tmp_path, monkeypatch):
    """A load_weights that opens a file next to the one it was given (FileNotFoundError with the
    scenario's own file path), and book-era NumPy names (compatibility findings)."""
    sub = _package(tmp_path, [
        ('layers.py', '        path = os.fspath(path)\n',
         "        path = os.fspath(path) + '.bak'\n"),
        ('transforms.py', '    def __init__(self, dtype=int):\n',
         '    def __init__(self, dtype=np.int):\n')])
    scratch = tmp_path / 'scratch-base'
    scratch.mkdir()
    monkeypatch.setattr(tempfile, 'tempdir', str(scratch))
    doc = run.grade(sub, 53, run.Options(seed=SEED))
    assert doc['verdict'] in ('reject', 'rollback')
    assert any(c['status'] == 'failed' and 'FileNotFoundError' in json.dumps(c['evidence'])
               for c in doc['checks'])
    assert any(f['where'].startswith('dezero/transforms.py:') for f in doc['compatibility'])
    leaks = [s for s in _strings(doc) if str(scratch) in s or 'dezero-probe-' in s]
    assert not leaks, leaks[:3]
