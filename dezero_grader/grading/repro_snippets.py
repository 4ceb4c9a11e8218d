"""Failure reproductions: a short standalone file per failed check, `python repro.py` from any
folder, against the learner's own code.

The snippet records what identifies the failure -- step, check id, seed, device and era -- and
the submission's name (a scorecard does not depend on where the submission was stored);
`--repro-dir` writes the graded folder's path there, relative to the folder the file is in.
Where the code was graded from is known only when the report is rendered, so the command that
grades a check again (`check_command`) is made then: with the path as it was given to `check`,
or, for a scorecard read elsewhere (an export, Gradescope), with `.` and the words "in the folder
that holds your code". It draws nothing itself and holds no data: it
calls `dezero_grader.grading.rerun`, which plans the check again from the seed (the same inputs), runs it
against the learner's code in that process, judges it with the check's own judge, prints what
was expected beside what was found, and exits 1 when the failure reproduces (0 when it does
not, 2 when it cannot run).
"""
from __future__ import annotations

import os
import re
import shlex
from pathlib import Path

from dezero_grader.i18n import N_

_SUBMISSION_LINE = re.compile(r'^SUBMISSION = .*$', re.M)
_WHOLE_CHECK_LINE = re.compile(r'^# Whole check.*$', re.M)
HERE = '.'    # the submission of a command run in the folder that holds the code

# a scorecard read where the code is not (an export, Gradescope): the words that make `.` true
# (the reports translate them where they show them)
IN_YOUR_FOLDER = N_('on your own machine, in the folder that holds your code')


def check_command(step, seed, check_id=None, submission=None, *, device_mode='sim',
                  era='book') -> str:
    """`dezero-grade check SUBMISSION --step N --seed S [--only ID]`: the command that grades the
    check (every check, without `check_id`) again the same way. `submission` is the path as the
    user gave it, or None for `.` (the command then runs in the folder that holds the code).
    The device and era are named only where the scorecard's are not what `check` takes by
    default."""
    words = ['dezero-grade', 'check', shell_word(HERE if submission is None else str(submission)),
             '--step', str(step), '--seed', str(seed)]
    if device_mode == 'cpu':
        words += ['--device', 'cpu']
    if era != 'book':
        words += ['--era', shell_word(era)]
    if check_id is not None:
        words += ['--only', shell_word(check_id)]
    return ' '.join(words)


def _what(use, seed) -> str:
    """One comment line on what the check runs, for a reader of the file."""
    from dezero_grader.checks import CHECKS
    from dezero_grader.grading.seeds import check_seed
    plan = CHECKS[use.check].plan(use.params, check_seed(seed, use.id))
    probe = plan.learner[0] if plan.learner else None
    if probe is None:
        return 'it reads your code without running a scenario'
    if probe.scenario == 'fn.eval':
        p = probe.params
        return 'it calls {} on inputs drawn from the seed, then backward with a random upstream ' \
               'gradient{}'.format(p['fn'], ' (on the device)' if probe.device == 'gpu' else '')
    return 'it runs the scenario {}{}'.format(
        probe.scenario, ' on the device' if probe.device == 'gpu' else '')


def repro_for(use, seed, sub, step, *, device_mode='sim', era='book', timeout_s=30.0) -> str:
    what = 'dezero/ package' if sub.entry.kind == 'package' else _comment_safe(sub.entry.path)
    return (
        '# Reproduces {id} (seed {seed}): python repro.py [FOLDER], FOLDER holding your {what}\n'
        '# Whole check, in the folder that holds your code: {command}\n'
        '# {desc}. Exit status 1: it still fails; 0: it passes now; 2: it cannot run.\n'
        '# Run it with the Python that has dezero-grader installed; the folder defaults to\n'
        '# SUBMISSION (relative to this file, else to the current folder), or set ${env}.\n'
        'import sys\n'
        'SUBMISSION = {src!r}\n'
        'try:\n'
        '    from dezero_grader.grading.rerun import main\n'
        'except ImportError:\n'
        '    print("repro: run this with the Python that has dezero-grader installed", file=sys.stderr)\n'
        '    sys.exit(2)\n'
        'sys.exit(main(__file__, SUBMISSION, step={step}, check={id!r}, seed={seed}, '
        'device={dev!r},\n'
        '              era={era!r}, timeout={timeout!r}))\n').format(
        id=use.id, seed=seed, what=what, step=step,
        command=check_command(step, seed, use.id, device_mode=device_mode, era=era),
        desc=_what(use, seed), env='DEZERO_REPRO_SUBMISSION', src=sub.id,
        dev=device_mode, era=era, timeout=float(timeout_s))


def shell_word(text):
    """`text` as one shell word, with nothing in it that could end a comment line or a terminal
    line (a newline in a learner's folder name would start a line of code)."""
    if re.fullmatch(r'[\w./+-]+', text):
        return text
    return shlex.quote(_comment_safe(text))


def _comment_safe(text):
    return ''.join(c if c.isprintable() else '?' for c in text)


def file_name(check_id: str) -> str:
    """`repro_step52_device.fn.matmul.py` for `step52/device.fn.matmul`."""
    return 'repro_{}.py'.format(re.sub(r'[^A-Za-z0-9._-]+', '_', check_id))


def for_folder(snippet: str, folder, submission) -> str:
    """The snippet as written into `folder`: its SUBMISSION, and the folder its whole-check
    command grades, the path of `submission` (the folder or archive that was graded) relative
    to `folder` (the two move together, and the command runs in `folder`)."""
    target = Path(os.path.relpath(Path(submission).resolve(), Path(folder).resolve()))
    snippet = _WHOLE_CHECK_LINE.sub(
        lambda m: "# Whole check, in this file's folder: " + m.group().split(': ', 1)[1].replace(
            'dezero-grade check . ', 'dezero-grade check {} '.format(
                shell_word(target.as_posix())), 1),
        snippet, count=1)
    return _SUBMISSION_LINE.sub(lambda m: 'SUBMISSION = {!r}'.format(target.as_posix()), snippet,
                                count=1)


def write_all(doc, folder, submission=None) -> list:
    """One `repro_<check>.py` per failing check of a scorecard, in `folder` (atomic writes), each
    pointing at `submission` (the path graded) relative to `folder`."""
    from dezero_grader.records.schema import write_text_atomic
    folder = Path(folder)
    written = []
    for c in doc.get('checks', ()):
        if not c.get('repro'):
            continue
        path = folder / file_name(c['id'])
        text = for_folder(c['repro'], folder, submission) if submission is not None else c['repro']
        write_text_atomic(path, text)
        written.append(path)
    return written
