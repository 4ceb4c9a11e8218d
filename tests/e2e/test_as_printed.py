"""Commands run as printed, and the command line says what it means (issue 23).

The `reproduce:` line of the terminal report, the HTML page, Gradescope's results and the JUnit
XML is run exactly as printed, where it says it runs: the terminal's in the folder `check` was run
from (with the path as it was given), the page's from anywhere (an absolute path), the exports'
in the folder that holds the learner's code (`.`, as they say). The scorecard stays the same
whatever path the code was graded from. And the command line's own cuts: a step written as the
book's files name it, a typo answered with what was meant, no abbreviations, `--help` naming
every format, a closed stdout that loses no file.
"""
import json
import re
import shlex
import subprocess
import sys

import pytest

from dezero_grader import reference
from dezero_grader import cli
from dezero_grader.catalogue import assignments, faults
from dezero_grader.export import Graded, Submission, gradescope, junit
from dezero_grader.grading import repro_snippets
from dezero_grader.intake import load
from grade_cli import HANG_S, ROOT, dezero_grade

STEP = 52
FAULT = 'gpu-layer-shallow'


def _fault(step, fault_id):
    return {f.id: f for f in assignments.fault_catalogue(assignments.load(step))}[fault_id]


@pytest.fixture(scope='module')
def togpu(tmp_path_factory):
    """bugs/togpu: the reference with Layer.to_gpu broken, as the issue's reader made it."""
    root = tmp_path_factory.mktemp('printed')
    base = load.prepare(reference.ROOT, STEP, root / 'base')
    (root / 'bugs').mkdir()
    faults.inject(base.root, root / 'bugs' / 'togpu', _fault(STEP, FAULT), base.entry)
    return root


@pytest.fixture(scope='module')
def inside(togpu):
    """`cd bugs/togpu && dezero-grade check . --step 52 --json card.json`: (its output, card)."""
    here = togpu / 'bugs' / 'togpu'
    proc = dezero_grade('check', '.', '--step', STEP, '--json', str(togpu / 'card.json'), cwd=here)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    return proc, json.loads((togpu / 'card.json').read_text())


def _printed(text, prefix='reproduce'):
    """The commands after `reproduce...:` in a text, as printed."""
    return re.findall(r'{}[^:\n]*: (dezero-grade check [^\n]*)'.format(prefix), text)


def _run(command, cwd):
    """A printed `dezero-grade ...` command, run as a shell would split it, from `cwd`."""
    words = shlex.split(command)
    assert words[0] == 'dezero-grade'
    return dezero_grade(*words[1:], cwd=cwd)


def test_the_reproduce_line_runs_where_it_was_printed(togpu, inside):
    here = togpu / 'bugs' / 'togpu'
    proc, _ = inside
    commands = _printed(proc.stdout)
    assert commands and all(c.startswith('dezero-grade check . --step 52 --seed ') for c in commands)
    again = _run(commands[0], here)
    only = commands[0].split('--only ')[1]
    assert again.returncode == 1 and 'REJECT' in again.stdout, again.stdout + again.stderr
    assert '✗ ' + only in again.stdout
    # the path as it was given, from another folder
    proc = dezero_grade('check', 'bugs/togpu', '--step', STEP, cwd=togpu)
    assert _printed(proc.stdout)[0].startswith('dezero-grade check bugs/togpu --step 52 ')


def test_the_page_names_the_code_by_its_absolute_path_and_the_scorecard_by_neither(togpu, inside):
    here = togpu / 'bugs' / 'togpu'
    dezero_grade('check', 'bugs/togpu', '--step', STEP, '--html', 'page.html', '--json',
                 'from-parent.json', cwd=togpu)
    page = (togpu / 'page.html').read_text()
    commands = _printed(re.sub(r'<[^>]+>', '', page).replace('&#x27;', "'"))
    assert commands and commands[0].startswith('dezero-grade check {} '.format(here))
    elsewhere = togpu / 'elsewhere'
    elsewhere.mkdir()
    assert _run(commands[0], elsewhere).returncode == 1
    # the same code and seed give the same scorecard, wherever it was graded from
    a, b = json.loads((togpu / 'from-parent.json').read_text()), inside[1]
    assert a['seed'] == b['seed'] and a['submission'] == b['submission']
    assert [c['repro'] for c in a['checks']] == [c['repro'] for c in b['checks']]
    assert str(togpu) not in json.dumps(a) and 'bugs/togpu' not in json.dumps(a)


def test_exports_say_how_to_run_it_on_the_learners_own_machine(togpu, inside):
    here = togpu / 'bugs' / 'togpu'
    doc = inside[1]
    results = gradescope.results(doc, output_format='md')
    assert '--repro-dir DIR' not in results['output']       # a learner there cannot add it
    assert repro_snippets.IN_YOUR_FOLDER in results['output']
    failed = [t for t in results['tests'] if t['status'] == 'failed']
    assert failed and all(repro_snippets.IN_YOUR_FOLDER in t['output'] for t in failed)
    suites = junit.record(Graded((Submission('togpu', doc),), None, None, togpu))['suites']
    details = [c['detail'] for c in suites[0]['cases'] if c['outcome'] != 'passed']
    commands = _printed(failed[0]['output']) + _printed(details[0])
    assert len(commands) == 2 and commands[0] == commands[1]
    assert commands[0].startswith('dezero-grade check . --step 52 --seed {} --only '.format(
        doc['seed']))
    assert _run(commands[0], here).returncode == 1      # in the folder that holds the code
    # the whole check, with the snippets, as the report's last line says
    every = _printed(results['output'], prefix='· each failing check')[0]
    assert every.endswith('--repro-dir repros, then python repros/repro_<check>.py')


def test_a_closed_stdout_loses_no_file(tmp_path):
    # `check ... --html r.html | head`: the reader goes away, the files are still written and the
    # exit status is still the verdict's (it was 2, and the page never written)
    step, fault = 43, _fault(43, 'sigmoid-grad-uses-input')
    base = load.prepare(reference.ROOT, step, tmp_path / 'base')
    variant = faults.inject(base.root, tmp_path / 'sigmoid', fault, base.entry)
    env = dict(__import__('os').environ, PYTHONPATH=str(ROOT))
    proc = subprocess.Popen([sys.executable, '-m', 'dezero_grader', 'check', str(variant), '--step',
                             str(step), '--only', 'step43/network', '--html', 'r.html',
                             '--graph-dir', 'graphs', '--json', 'card.json'], cwd=tmp_path,
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    proc.stdout.close()    # before anything is printed: every write to it fails
    _, err = proc.communicate(timeout=HANG_S)   # only a hang reaches it
    assert proc.returncode == 1, err.decode()
    assert (tmp_path / 'r.html').is_file() and (tmp_path / 'card.json').is_file()
    assert list((tmp_path / 'graphs').glob('*.dot'))
    assert b'Traceback' not in err and b'could not write' not in err


def test_a_step_is_a_number_or_as_the_book_names_it():
    parser = cli.build_parser()
    for text in ('52', 'step52', 'Step 52', 'step-52', '052'):
        assert parser.parse_args(['check', 'x', '--step', text]).step == 52
    assert parser.parse_args(['check', 'x', '--step', 'step05']).step == 5


@pytest.mark.parametrize('args, words', [
    (['check', '.', '--step', 'abc'], 'takes a step number from 1 to 60'),
    (['check', '.', '--step', '61'], 'steps run from 1 to 60, found 61'),
    (['check', '.', '--step', '52', '--htlm', 'r.html'], 'no option --htlm (did you mean --html?)'),
    (['check', '.', '--step', '52', '--verbos'], 'no option --verbos (did you mean --verbose?)'),
    (['export', 'out', '--format', 'lti', '--rost', 'r.csv'],
     'no option --rost (did you mean --roster?)'),
    (['check', '.', 'extra', '--step', '52'], "unexpected argument 'extra'"),
])
def test_what_the_command_line_cannot_take_is_said_with_what_was_meant(args, words, capsys):
    try:
        code = cli.main(args)
    except SystemExit as stop:      # argparse's own refusal of a value
        code = stop.code
    err = capsys.readouterr().err
    assert code == 2 and words in err and 'invalid _step value' not in err


def test_help_names_every_export_format():
    out = dezero_grade('--help').stdout
    export_help = ' '.join(out.split('\n    export')[1].split('\n\n')[0].split())
    assert 'HTML' in export_help
    fmt = dezero_grade('export', '--help').stdout
    for name in ('gradescope', 'canvas', 'lti', 'junit', 'html'):
        assert name in fmt
