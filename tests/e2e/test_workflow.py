"""The GitHub Actions recipe, run as far as a machine can: its steps executed in order, job by
job, as a runner would — the grader's wheel built from a copy of this repository (the course's
own copy), installed in a fresh virtual environment, every shard graded, the shards merged and
exported. The actions themselves (checkout, setup-python, artifacts, cache) are played by copying
folders; every `run:` is executed by bash as written, with the workflow's expressions filled in.
"""
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

yaml = pytest.importorskip('yaml')   # a declared test dependency: pip install -e '.[test]'

from dezero_grader.catalogue import assignments, faults
from dezero_grader.intake import load
from dezero_grader.proof import selftest   # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
WORKFLOW = ROOT / 'examples' / 'github-actions.yml'
STEP = 52


def _workflow():
    return yaml.safe_load(WORKFLOW.read_text())


def test_the_recipe_installs_the_grader_from_the_course_copy_only():
    workflow = _workflow()
    jobs = workflow['jobs']
    runs = [s.get('run', '') for job in jobs.values() for s in job['steps']]
    # not on PyPI, and the name is open to squatting
    assert not any(re.search(r'pip install\s+(-\S+\s+)*dezero-grader', r) for r in runs)
    assert re.fullmatch(r'[0-9a-f]{40}', workflow['env']['GRADER_REF'])   # pinned to a commit
    build = jobs['grader']['steps']
    checkout = next(s for s in build if s.get('uses', '').startswith('actions/checkout'))
    assert checkout['with']['ref'] == '${{ env.GRADER_REF }}'
    assert any('pip wheel' in s.get('run', '') for s in build)
    for name in ('grade', 'merge'):
        steps = jobs[name]['steps']
        installs = [i for i, s in enumerate(steps) if 'pip install' in s.get('run', '')]
        wheel = [i for i, s in enumerate(steps) if s.get('uses', '').startswith(
            'actions/download-artifact') and s['with'].get('name') == 'grader-wheel']
        assert installs and wheel and wheel[0] < installs[0], name
        assert all('dist/*.whl' in steps[i]['run'] for i in installs)
        assert 'grader' in jobs[name]['needs']
    shards = jobs['grade']['strategy']['matrix']['shard']
    assert shards == list(range(1, int(workflow['env']['SHARDS']) + 1))
    assert jobs['merge']['if'].startswith('always()')


def _course(tmp: Path) -> Path:
    """The course repository: submissions/step52 (an accepted one, the diamond-graph bug, a
    flat upload), the roster as Canvas exports it with the LTI user ids the instructor added (the
    recipe posts LTI scores), a policy."""
    repo = tmp / 'course'
    subs = repo / 'submissions' / 'step{}'.format(STEP)
    subs.mkdir(parents=True)
    base = load.prepare(selftest.reference_source(STEP), STEP, tmp / 'work')
    shutil.copytree(base.root, subs / 'alice')
    catalogue = assignments.fault_catalogue(assignments.load(STEP))
    diamond = next(f for f in catalogue if f.id == 'backward-generation-order')
    faults.inject(base.root, subs / 'dave', diamond, base.entry)
    shutil.copytree(base.root / 'dezero', subs / 'carol')      # the files without the folder
    (repo / 'roster.csv').write_text(
        '\ufeffStudent,ID,SIS User ID,SIS Login ID,Section,LTI User ID,Step 52 (77)\n'
        '    Points Possible,,,,,,30\n'
        '"Liddell, Alice",1001,S-1,alice,A,lti-a,\n"Cooper, Carol",1003,S-3,carol,A,lti-c,\n'
        '"Dent, Dave",1004,S-4,dave,B,lti-d,\n"Student, Test",9999,,,A,,\n', encoding='utf-8')
    (repo / 'policy.json').write_text(json.dumps(
        {'schema_version': '1.0', 'name': 'spring', 'rollback': {'score': 'cap', 'fraction': 0.5}}))
    return repo


def _grader_copy(dest: Path) -> None:
    """What `actions/checkout` of the grader's repository gives: its tracked files (and the
    untracked ones not ignored, so that a change under test is in it)."""
    names = subprocess.run(['git', 'ls-files', '-co', '--exclude-standard', '-z'], cwd=ROOT,
                           capture_output=True, check=True).stdout.decode().split('\0')
    for name in filter(None, names):
        src = ROOT / name
        if src.is_file():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / name)


def _expand(text: str, env: dict, matrix: dict) -> str:
    def value(m):
        expr = m.group(1).strip()
        if expr.startswith('matrix.'):
            return str(matrix[expr[len('matrix.'):]])
        if expr.startswith('env.'):
            return env[expr[len('env.'):]]
        if expr.startswith('github.'):
            return {'github.run_id': '1'}[expr]
        raise AssertionError('the test does not know the expression ' + expr)
    return re.sub(r'\$\{\{(.*?)\}\}', value, text)


class Runner:
    """Plays a job's steps in a workspace of its own."""

    def __init__(self, tmp: Path, course: Path, venv: Path, env: dict):
        self.tmp, self.course, self.venv, self.env = tmp, course, venv, env
        self.artifacts = tmp / 'artifacts'
        self.artifacts.mkdir(exist_ok=True)
        self.ran = []

    def job(self, name, steps, matrix=None):
        matrix = matrix or {}
        work = self.tmp / 'runner' / '{}-{}'.format(name, matrix.get('shard', 0))
        work.mkdir(parents=True)
        for step in steps:
            uses = step.get('uses', '')
            with_ = {k: _expand(str(v), self.env, matrix) for k, v in step.get('with', {}).items()}
            if uses.startswith('actions/checkout'):
                if 'repository' in with_:
                    _grader_copy(work / with_['path'])
                else:
                    shutil.copytree(self.course, work, dirs_exist_ok=True)
            elif uses.startswith('actions/upload-artifact'):
                target = self.artifacts / with_['name']
                for path in work.glob(with_['path']):
                    if path.is_dir():
                        shutil.copytree(path, target, dirs_exist_ok=True,
                                        ignore=shutil.ignore_patterns('.*'))
                    else:
                        target.mkdir(parents=True, exist_ok=True)
                        shutil.copy2(path, target)
            elif uses.startswith('actions/download-artifact'):
                names = ([with_['name']] if 'name' in with_ else
                         sorted(p.name for p in self.artifacts.glob(with_['pattern'])))
                for n in names:
                    # with a pattern, each artifact lands in a folder of its own name
                    dest = work / with_['path'] / (n if 'pattern' in with_ else '')
                    shutil.copytree(self.artifacts / n, dest, dirs_exist_ok=True)
            elif uses.startswith(('actions/setup-python', 'actions/cache')):
                continue   # the fresh venv is the Python; a first run has no cache
            elif 'run' in step:
                if 'sudo' in step['run']:
                    continue   # the machine's own packages (bubblewrap) are the test's to have
                script = _expand(step['run'], self.env, matrix)
                env = dict(os.environ, **self.env)
                env.pop('PYTHONPATH', None)
                env['PATH'] = '{}:{}'.format(self.venv / 'bin', env['PATH'])
                proc = subprocess.run(['bash', '-e', '-c', script], cwd=work, env=env,
                                      capture_output=True, text=True, timeout=900)
                self.ran.append((name, step.get('name', script[:40]), proc.returncode))
                allowed = (0,) if not step.get('if') else (0, 1)
                assert proc.returncode in allowed, '{}: {}\n{}\n{}'.format(
                    name, script, proc.stdout[-3000:], proc.stderr[-3000:])
        return work


@pytest.mark.slow
def test_the_recipe_runs_from_a_fresh_venv(tmp_path):
    workflow = _workflow()
    env = {k: str(v) for k, v in workflow['env'].items()}
    course = _course(tmp_path)
    venv = tmp_path / 'venv'
    subprocess.run([sys.executable, '-m', 'venv', str(venv)], check=True)
    if shutil.which('bwrap') is None:
        env['DEZERO_GRADER_SANDBOX'] = 'basic'
    runner = Runner(tmp_path, course, venv, env)
    jobs = workflow['jobs']
    runner.job('grader', jobs['grader']['steps'])
    wheels = list((tmp_path / 'artifacts' / 'grader-wheel').glob('*.whl'))
    assert len(wheels) == 1 and wheels[0].name.startswith('dezero_grader-')
    for shard in jobs['grade']['strategy']['matrix']['shard']:
        runner.job('grade', jobs['grade']['steps'], {'shard': shard})
    # the fresh venv has the grader from the wheel, not this checkout
    where = subprocess.run([str(venv / 'bin' / 'python'), '-c',
                            'import dezero_grader; print(dezero_grader.__file__)'], capture_output=True,
                           text=True, cwd=tmp_path, check=True).stdout
    assert str(venv) in where and str(ROOT) not in where
    merged = runner.job('merge', jobs['merge']['steps']) / 'graded'
    summary = json.loads((merged / 'summary.json').read_text())
    assert summary['shards']['missing'] == []
    assert summary['policy']['name'] == 'spring'
    cards = {p.stem: json.loads(p.read_text()) for p in (merged / 'scorecards').glob('*.json')}
    assert {i: d['verdict'] for i, d in cards.items()} == {
        'alice': 'accept', 'carol': 'accept', 'dave': 'rollback'}   # carol: a flat upload
    possible = summary['assignment']['possible']
    assert cards['dave']['score']['earned'] == possible / 2        # the policy's cap
    canvas = (merged / 'exports' / 'canvas.csv').read_text().splitlines()
    assert canvas[1].split(',')[-1] == '{:g}'.format(possible)
    rows = {line.split('",')[0].strip('"'): line.rsplit(',', 1)[1] for line in canvas[2:]}
    assert rows == {'Liddell, Alice': '{:g}'.format(possible),
                    'Cooper, Carol': '{:g}'.format(possible),
                    'Dent, Dave': '{:g}'.format(possible / 2)}
    lti = json.loads((merged / 'exports' / 'lti-scores.json').read_text())
    assert lti['lineitem']['scoreMaximum'] == possible
    assert {x['userId']: x['scoreGiven'] for x in lti['scores']} == {
        'lti-a': possible, 'lti-c': possible, 'lti-d': possible / 2}
    gradescope = json.loads((merged / 'exports' / 'gradescope' / 'dave' / 'results.json').read_text())
    assert gradescope['score'] == possible / 2
    assert (merged / 'exports' / 'junit.xml').is_file()
