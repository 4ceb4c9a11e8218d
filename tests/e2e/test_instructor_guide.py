"""The instructor guide's term, run as written: its policy file and every command of its section
0, in order, on a small class of step 52 — set up the course, grade, publish, then regrade after
a learner fixes their code (exactly that submission is graded again, and the gradebook follows).
"""
import csv
import io
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from dezero_grader.catalogue import assignments, faults
from dezero_grader.intake import load
from dezero_grader.proof import selftest

ROOT = Path(__file__).resolve().parents[2]
GUIDE = ROOT / 'docs' / 'instructor-guide.md'
STEP = 52
CANVAS_EXPORT = ('\ufeffStudent,ID,SIS User ID,SIS Login ID,Section,"Step 51 (4241)"\n'
                 '    Points Possible,,,,,2.00\n'
                 '"Liddell, Alice",1001,S-1,alice,A,2.00\n'
                 '"Cooper, Carol",1003,S-3,carol,A,1.00\n'
                 '"Dent, Dave",1004,S-4,dave,B,2.00\n'
                 '"Student, Test",9999,,,A,\n')


def _term():
    """(the policy document, [the commands of each sh block]) of the guide's section 0."""
    text = GUIDE.read_text(encoding='utf-8')
    section = text[text.index('## 0. The term'):text.index('## 1. ')]
    blocks = re.findall(r'```(\w+)\n(.*?)```', section, re.S)
    policy = json.loads(next(body for lang, body in blocks if lang == 'json'))
    commands = [[shlex.split(line) for line in body.splitlines() if line.strip()]
                for lang, body in blocks if lang == 'sh']
    return policy, commands


def _run(argv, cwd):
    assert argv[0] == 'dezero-grade'
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    if shutil.which('bwrap') is None:
        env['DEZERO_GRADER_SANDBOX'] = 'basic'
    proc = subprocess.run([sys.executable, '-m', 'dezero_grader', *argv[1:]], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, '{}\n{}\n{}'.format(' '.join(argv), proc.stdout, proc.stderr)
    return proc


def _gradebook(course):
    rows = list(csv.reader(io.StringIO(
        (course / 'graded' / 'step52' / 'exports' / 'canvas.csv').read_text(encoding='utf-8'))))
    return rows[1][5], {r[0]: float(r[5]) for r in rows[2:]}


def test_the_term_as_the_guide_tells_it(tmp_path):
    policy, blocks = _term()
    assert [len(b) for b in blocks] == [1, 1, 2, 2]   # set up, grade, publish, regrade
    course = tmp_path / 'course'
    subs = course / 'submissions' / 'step52'
    subs.mkdir(parents=True)
    base = load.prepare(selftest.reference_source(STEP), STEP, tmp_path / 'work')
    shutil.copytree(base.root, subs / 'alice')
    shutil.copytree(base.root / 'dezero', subs / 'carol')          # a flat upload
    diamond = next(f for f in assignments.fault_catalogue(assignments.load(STEP))
                   if f.id == 'backward-generation-order')
    faults.inject(base.root, subs / 'dave', diamond, base.entry)
    (course / 'policy.json').write_text(json.dumps(policy), encoding='utf-8')
    (course / 'canvas-grades.csv').write_text(CANVAS_EXPORT, encoding='utf-8')
    possible = sum(c.points for c in assignments.load(STEP).checks if c.tier == 'book')

    setup, grade, publish, regrade = blocks
    _run(setup[0], course)
    assert (course / 'autograder-step52.zip').is_file()
    assert json.loads((course / 'autograder-step52' / 'policy.json').read_text()) == policy
    proc = _run(grade[0], course)
    assert 'rollback 1' in proc.stdout and 'accept 2' in proc.stdout
    for argv in publish:
        _run(argv, course)
    points, book = _gradebook(course)
    assert points == '{:g}'.format(possible)
    assert book['Liddell, Alice'] == book['Cooper, Carol'] == possible
    assert book['Dent, Dave'] < possible                             # the rollback costs
    results = json.loads((course / 'graded' / 'step52' / 'exports' / 'gradescope' / 'dave'
                          / 'results.json').read_text())
    assert results['score'] == book['Dent, Dave']

    # dave fixes the bug and hands in again: his submission, and only his, is graded again
    shutil.rmtree(subs / 'dave')
    shutil.copytree(base.root, subs / 'dave')
    proc = _run(regrade[0], course)
    assert 'grading 1 of 3' in proc.stderr and 'accept 3' in proc.stdout
    _run(regrade[1], course)
    assert _gradebook(course)[1]['Dent, Dave'] == possible


@pytest.mark.parametrize('line', ['dezero-grade batch', 'dezero-grade export'])
def test_the_guide_commands_parse(line):
    from dezero_grader import cli
    _, blocks = _term()
    for argv in (a for b in blocks for a in b):
        if ' '.join(argv).startswith(line):
            cli.build_parser().parse_args(argv[1:])
