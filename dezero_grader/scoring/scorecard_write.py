"""The scorecard: built once from finished results, validated against its schema, written
atomically. The only place where records become the JSON document (`schemas/scorecard`); it
lays out what `dezero_grader.scoring.score` computed and computes no points of its own. Readers turn the
document back into records with `dezero_grader.scoring.scorecard_read.Scorecard.from_document`.
"""
from __future__ import annotations

import datetime
import math
import os
import re
import platform
import time
from pathlib import Path

import numpy as np

from dezero_grader.errors import GraderError
from dezero_grader.intake import notebook
from dezero_grader.records import schema
from dezero_grader.scoring import score
from dezero_grader.wire import Array

SCHEMA_VERSION = '1.0'
TOOL_VERSION = '0.1.0'


def _environment(device_mode, sandbox):
    cupy_version = None
    if device_mode == 'cuda':
        try:
            import cupy
            cupy_version = cupy.__version__
        except Exception:
            cupy_version = None
    return {'python': platform.python_version(), 'numpy': np.__version__,
            'cupy': cupy_version, 'device_mode': device_mode, 'sandbox': sandbox,
            'platform': '{} {}'.format(platform.system(), platform.machine())}


def utc_now() -> str:
    """The moment a document is generated, as every document of the grader writes it."""
    return datetime.datetime.now(datetime.timezone.utc).strftime('%Y-%m-%dT%H:%M:%SZ')


def jsonable(value):
    """Evidence → JSON: arrays become small summaries, non-finite floats strings."""
    if isinstance(value, Array):
        return _array_summary(value.data, value.device)
    if isinstance(value, np.ndarray):
        return _array_summary(value, 'cpu')
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if isinstance(value, (np.generic,)):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return repr(value)


def _array_summary(a, device):
    out = {'shape': list(a.shape), 'dtype': str(a.dtype), 'device': device}
    if a.size <= 16 and a.dtype.kind in 'biuf':
        out['values'] = jsonable(a.tolist())
    return out


def _check(r):
    return {
        'id': r.use.id, 'step': r.use.step, 'title': r.use.title, 'tier': r.use.tier,
        'category': r.use.category, 'status': r.status,
        'points': score.possible(r), 'earned': score.earned(r),
        'regression': r.regression, 'message': r.message, 'hint': r.hint,
        'evidence': jsonable(dict(r.evidence)), 'repro': r.repro,
        'faults': [dict(f) for f in r.faults], 'duration_s': round(r.duration_s, 4),
    }


def _assignment(assignment) -> dict:
    from dezero_grader.catalogue import assignments
    out = {'step': assignment.step, 'title': assignment.title}
    try:
        out['sha256'] = assignments.content_hash(assignment.step)
    except OSError:   # an assignment built in memory (tests): no files to hash
        pass
    return out


def _policy(options) -> dict:
    from dezero_grader.scoring import policy
    return (getattr(options, 'policy', None) or policy.DEFAULT).record()


def _with_language(doc, options) -> dict:
    """`doc` with the language its report is written in: the grading's (`--lang`), else the
    policy's; none where neither names one (the report is then English)."""
    language = getattr(options, 'language', None) or getattr(getattr(options, 'policy', None),
                                                              'language', None)
    return dict(doc, language=language) if language else doc


def _score(verdict) -> dict:
    out = {'earned': verdict.earned, 'possible': verdict.possible,
           'extension': {'earned': verdict.extension_earned,
                         'possible': verdict.extension_possible}}
    if verdict.checks_earned is not None:
        out['checks_earned'] = verdict.checks_earned
        out['adjustments'] = [dict(a) for a in verdict.adjustments]
    return out


def _header(submission, assignment, options, device_mode, seed) -> dict:
    """What every scorecard opens with, graded or not: the document's and the tool's versions,
    what was graded against which assignment, policy and environment, and the seed."""
    return {
        'schema_version': SCHEMA_VERSION,
        'tool': {'name': 'dezero-grader', 'version': TOOL_VERSION},
        'submission': submission,
        'assignment': _assignment(assignment),
        'policy': _policy(options),
        'environment': _environment(device_mode, options.limits.sandbox),
        'profile': options.profile,
        'era': options.era,
        'seed': seed,
    }


def _submission(sub, source=None) -> dict:
    """The submission's identity; for one that could not be prepared, what its source says."""
    if sub is None:
        return {'id': _source_id(source), 'content_hash': 'unknown', 'entry': None}
    return {'id': sub.id, 'content_hash': sub.content_hash, 'entry': sub.entry.path}


def _finish(doc, sub, started, options, diagnosis=None, regraded=None) -> dict:
    """The document completed (when and how long; the diagnosis, a regrade; the language of its
    report), its places named in the notebooks the code came from, validated."""
    doc['generated_at'] = utc_now()
    doc['duration_s'] = round(time.perf_counter() - started, 3)
    if diagnosis is not None:
        doc['diagnosis'] = jsonable(diagnosis)
    if regraded is not None:
        doc['regraded'] = dict(regraded)
    doc = _from_notebooks(_with_language(doc, options), sub)
    schema.validate('scorecard', doc)
    return doc


def build(sub, assignment, options, device_mode, seed, verdict, results, learner, started,
          diagnosis=None, regraded=None):
    doc = _header(_submission(sub), assignment, options, device_mode, seed)
    doc.update({
        'verdict': verdict.verdict,
        'reason': verdict.reason,
        'score': _score(verdict),
        'checks': [_check(r) for r in results],
        'compatibility': compatibility(learner.findings, sub),
    })
    return _finish(doc, sub, started, options, diagnosis, regraded)


def _from_notebooks(doc, sub):
    """A scorecard of code that came from notebooks says so, and names every place in it as the
    notebook's cell and line, never the file the grader generated (`dezero_grader.intake.notebook`)."""
    expansion = getattr(sub, 'notebooks', None) if sub is not None else None
    if not expansion:
        return doc
    out = {k: v if k in _NOT_RELOCATED else notebook.relocate_all(v, expansion)
           for k, v in doc.items()}
    out['notebook'] = expansion.to_json()
    return out


_NOT_RELOCATED = frozenset({'schema_version', 'tool', 'submission', 'assignment', 'policy',
                            'environment', 'seed', 'score', 'generated_at', 'duration_s',
                            'regraded', 'language'})


def invalid(source, assignment, options, device_mode, code, message, *, seed, started,
            submission=None, output_tail='', regraded=None):
    v = score.invalid(message, assignment)
    doc = _header(_submission(submission, source), assignment, options, device_mode, seed)
    doc.update({
        'verdict': v.verdict,
        'reason': message,
        'invalid': {'code': code, 'message': message,
                    'output_tail': _stable_text(output_tail, submission)[-4000:]},
        'score': _score(v),
        'checks': [],
        'compatibility': [],
    })
    return _finish(doc, submission, started, options, regraded=regraded)


GRADER_ERROR = 'grader-error'


def grader_error_message(error: BaseException) -> str:
    """What a learner (and an instructor) reads of the grader's own failure: whose fault it is,
    and that it is no grade."""
    detail = str(error) if isinstance(error, GraderError) else '{}: {}'.format(
        type(error).__name__, error)
    return ('the grader failed on this submission: a bug of the grader or a problem of the machine '
            'it ran on, not the submission\'s fault; nothing of it counts as a grade, and it will '
            'be graded again ({})'.format(detail[:1000]))


def grader_error(source, assignment, options, device_mode, error, *, seed, started,
                 submission=None, regraded=None):
    """The scorecard of a grading the grader itself failed (`grader-error`): `invalid` in form,
    so that every reader has a document, but never a grade (the exports say "not graded")."""
    return invalid(source, assignment, options, device_mode, GRADER_ERROR,
                   grader_error_message(error), seed=seed, started=started,
                   submission=submission, regraded=regraded)


def compatibility(findings, submission=None) -> list:
    """The drifts of the environment the code met, for the scorecard: each (api, file:line)
    once, its `where` relative to the submission's top (never a scratch folder's path)."""
    out, seen = [], set()
    for f in findings:
        item = dict(f)
        item['where'] = _stable_text(str(item.get('where', '')), submission)
        key = (item['api'], item['where'])
        if key not in seen:
            seen.add(key)
            out.append(item)
    return out


_ADDRESS = re.compile(r'0x[0-9a-fA-F]{6,}')


def _stable_text(text, submission):
    """What the code printed, without what changes from run to run: the scratch folder's path
    (shown as `.`, the submission's top) and memory addresses in stack dumps."""
    if submission is not None:
        text = text.replace(str(submission.root) + os.sep, '').replace(str(submission.root), '.')
    return _ADDRESS.sub('0x…', text)


def _source_id(source):
    """The id of a submission that could not be prepared: a folder's name, a zip's stem."""
    from dezero_grader.intake.load import safe_id
    path = Path(str(source))
    return safe_id((path.stem if path.suffix.lower() == '.zip' else path.name) or str(source))


def write(path, doc):
    schema.write_json(path, doc, 'scorecard')


def stable(doc):
    """The scorecard without what legitimately varies between two runs (times, durations, a
    regrade that a busy machine made necessary)."""
    out = dict(doc)
    out.pop('generated_at', None)
    out.pop('duration_s', None)
    out.pop('regraded', None)
    out['checks'] = [{k: v for k, v in c.items() if k != 'duration_s'} for c in doc['checks']]
    return out

