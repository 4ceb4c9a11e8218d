"""End to end: `dezero-grade history` on histories built commit by commit in a tmp git repository,
from the reference and single-fault variants (`dezero-grade inject`): an increment that breaks
an earlier step's check that passed at its own commit is a rollback naming the commit that
broke it; a fault present from the start never is. Steps 44-45 (package steps, one regression
step each) keep every grading about a second; the --deep test, which grades the history
twice, is marked slow."""
import json
import shutil
import subprocess
from pathlib import Path

import pytest

from dezero_grader.intake.gitrepo import git_env
from dezero_grader.records import schema
from grade_cli import dezero_grade

ROOT = Path(__file__).resolve().parents[2]
FAULT = 'linear-lazy-in-size'      # a step-44 fault: step 45 runs step 44's checks as regression
BROKEN = ('step44/linear', 'step44/linear_lazy')


def _cli(*args, check=True):
    return dezero_grade(*args, expect=(0, 1) if check else None, timeout=900)


def _git(repo, *args):
    env = dict(git_env(), GIT_AUTHOR_NAME='t', GIT_AUTHOR_EMAIL='t@example.org',
               GIT_COMMITTER_NAME='t', GIT_COMMITTER_EMAIL='t@example.org')
    return subprocess.run(['git', '-C', str(repo), *args], env=env, check=True,
                          capture_output=True, text=True).stdout.strip()


@pytest.fixture(scope='module')
def packages(tmp_path_factory):
    """The reference package and its single-fault variant, as folders holding dezero/."""
    base = tmp_path_factory.mktemp('packages')
    good = base / 'good'
    shutil.copytree(ROOT / 'reference' / 'dezero', good / 'dezero',
                    ignore=shutil.ignore_patterns('__pycache__'))
    _cli('inject', good, '--step', 45, '--fault', FAULT, '--out', base / 'bad', '--as-patch')
    return {'good': good / 'dezero', 'bad': base / 'bad' / 'dezero'}


class History:
    def __init__(self, path, packages):
        self.path, self.packages, self.n = path, packages, 0
        path.mkdir()
        _git(path, 'init', '-q', '-b', 'main')

    def commit(self, message, package='good'):
        """A commit whose dezero/ is `package`, and a note that changes every time."""
        shutil.rmtree(self.path / 'dezero', ignore_errors=True)
        shutil.copytree(self.packages[package], self.path / 'dezero')
        self.n += 1
        (self.path / 'notes.md').write_text('commit {}\n'.format(self.n))
        _git(self.path, 'add', '-A')
        _git(self.path, 'commit', '-q', '-m', message)
        return _git(self.path, 'rev-parse', 'HEAD')


def _history(tmp_path, repo, *extra):
    out = tmp_path / 'out'
    proc = _cli('history', repo, '--out', out, '--jobs', 2, '--sandbox', 'basic',
                '--html', tmp_path / 'h.html', *extra)
    doc = json.loads((out / 'history.json').read_text())
    assert schema.errors('history', doc) == []
    return proc, doc, {r['step']: r for r in doc['steps']}


def test_the_commit_that_broke_an_earlier_step_is_named(tmp_path, packages):
    h = History(tmp_path / 'repo', packages)
    good44 = h.commit('Done step44')
    h.commit('tidy up')
    h.commit('rename a helper')
    first_bad = h.commit('refactor <Linear> & friends', 'bad')   # the increment that breaks it
    h.commit('wip', 'bad')
    h.commit('more wip', 'bad')
    step45 = h.commit('step 45 finished', 'bad')
    proc, doc, rows = _history(tmp_path, h.path)
    assert proc.returncode == 1
    assert rows[44]['verdict'] == 'accept' and rows[44]['commit'] == good44
    row = rows[45]
    assert row['commit'] == step45 and row['how'] == 'message'
    assert row['engine_verdict'] == 'rollback' and row['verdict'] == 'rollback'
    broken = {r['check']: r for r in row['regressions']}
    assert set(broken) == set(BROKEN)
    for reg in broken.values():
        assert reg['status'] == 'broken' and reg['passed_at'] == good44
        assert reg['first_bad']['commit'] == first_bad
        assert reg['last_good']['commit'] == _git(h.path, 'rev-parse', first_bad + '~1')
        assert reg['searched'] == {'commits': 6, 'graded': 3}   # bisected, not all graded
        assert set(reg['diff']['files']) == {'dezero/__init__.py', 'dezero/_injected_fault.py'}
        assert '_injected_fault' in reg['diff']['text']
    assert first_bad[:10] in proc.stdout and 'ROLLBACK' in proc.stdout
    page = (tmp_path / 'h.html').read_text()
    assert first_bad[:10] in page and '&lt;Linear&gt; &amp; friends' in page
    assert '<Linear>' not in page

    # graded again: every step and every probe is served from the content cache
    proc, again, _ = _history(tmp_path, h.path)
    assert again['counts']['graded_now'] == 0 and again['counts']['from_cache'] >= 2
    assert [r['verdict'] for r in again['steps']] == [r['verdict'] for r in doc['steps']]
    assert all(r['cached'] for r in again['steps'])


def test_a_fault_present_from_the_start_is_never_a_rollback(tmp_path, packages):
    h = History(tmp_path / 'repo', packages)
    h.commit('Done step44', 'bad')
    h.commit('step45', 'bad')
    proc, doc, rows = _history(tmp_path, h.path)
    assert rows[44]['verdict'] == 'reject'
    row = rows[45]
    assert row['engine_verdict'] == 'rollback'     # one snapshot cannot tell
    assert row['verdict'] == 'reject'              # the history can: it never worked
    assert {r['status'] for r in row['regressions']} == {'never-worked'}
    assert all('first_bad' not in r for r in row['regressions'])
    assert doc['counts']['verdicts']['rollback'] == 0
    assert 'never worked' in proc.stdout


def test_an_unmapped_earlier_step_cannot_make_a_rollback(tmp_path, packages):
    h = History(tmp_path / 'repo', packages)
    h.commit('start')
    h.commit('step45', 'bad')
    _, doc, rows = _history(tmp_path, h.path)
    assert list(rows) == [45] and rows[45]['verdict'] == 'reject'
    assert all('no commit in the history' in r['why'] for r in rows[45]['regressions'])


def test_usage_errors_are_clear(tmp_path):
    proc = _cli('history', tmp_path, '--out', tmp_path / 'o', check=False)
    assert proc.returncode == 2 and 'not a git repository' in proc.stderr
    assert 'Traceback' not in proc.stderr
    proc = _cli('history', tmp_path, '--steps', '3-99', check=False)
    assert proc.returncode == 2 and 'steps run from 1 to 60' in proc.stderr


def test_a_step_file_history(tmp_path):
    """Steps 1-22 are files: step 5 (no code) is graded on step04.py, so an edit of step04.py
    after step 4 was done breaks step 4's checks at step 5, and that edit is named; the helper
    modules the step file imports are graded with it."""
    good = tmp_path / 'good'
    good.mkdir()
    shutil.copy(ROOT / 'reference' / 'steps' / 'step04.py', good / 'step04.py')
    _cli('inject', good, '--step', 5, '--fault', 'numdiff-half-step', '--out', tmp_path / 'bad',
         '--as-patch')
    repo = tmp_path / 'repo'
    (repo / 'steps').mkdir(parents=True)
    _git(repo, 'init', '-q', '-b', 'main')

    def commit(message, folder):
        for p in (repo / 'steps').glob('*.py'):
            if p.name != 'step05.py':
                p.unlink()
        for p in folder.glob('*.py'):
            shutil.copy(p, repo / 'steps' / p.name)
        _git(repo, 'add', '-A')
        _git(repo, 'commit', '-q', '-m', message)
        return _git(repo, 'rev-parse', 'HEAD')

    step4 = commit('Done step4', good)
    broken = commit('cleanup', tmp_path / 'bad')
    (repo / 'steps' / 'step05.py').write_text('# No code\n')
    step5 = commit('step 5: backprop theory', tmp_path / 'bad')
    proc, doc, rows = _history(tmp_path, repo)
    assert {s: (r['commit'], r['how']) for s, r in rows.items()} == {4: (step4, 'message'),
                                                                     5: (step5, 'message')}
    # by files alone, step 4's stretch runs up to the commit before step05.py is added
    assert {(m['step'], m['commit']) for m in doc['mapping'] if m['how'] == 'file'} == {
        (4, broken), (5, step5)}
    assert rows[4]['verdict'] == 'accept' and rows[4]['graded_files'] == ['steps/step04.py']
    assert rows[5]['verdict'] == 'rollback'
    # the fault itself is what fails (its helper files were graded with the step file)
    card = json.loads((tmp_path / 'out' / rows[5]['scorecard']).read_text())
    assert any('2·eps' in c['message'] for c in card['checks'] if c['status'] == 'failed')
    assert {r['first_bad']['commit'] for r in rows[5]['regressions']} == {broken}
    assert set(rows[5]['graded_files']) == {'steps/step04.py', 'steps/_original_step04.py',
                                            'steps/_injected_fault.py'}
    assert 'steps/step04.py' in rows[5]['regressions'][0]['diff']['files']


@pytest.mark.slow
def test_deep_names_the_commit_that_broke_an_older_step(tmp_path, packages):
    """A fault of step 40 introduced on the way to step 45: step 45's regression reaches back to
    step 40, so the plain history already makes step 45 a rollback; --deep (step 40's passed
    checks graded again at step 45's commit) also names the commit that introduced it."""
    from dezero_grader.catalogue import assignments, faults
    from dezero_grader.intake import load
    fault = next(f for f in assignments.load(40).faults if f.id == 'sum-grad-ignores-gy')
    base = packages['good'].parent
    faults.inject(base, tmp_path / 'v40', fault, load.find_entry(base, 45))
    h = History(tmp_path / 'repo', dict(packages, v40=tmp_path / 'v40' / 'dezero'))
    step40 = h.commit('Done step40')
    h.commit('layers')
    first_bad = h.commit('refactor sum', 'v40')
    step45 = h.commit('step45: MLP', 'v40')
    _, plain, rows = _history(tmp_path, h.path)
    assert rows[45]['verdict'] == 'rollback'
    proc, doc, rows = _history(tmp_path / 'deep', h.path, '--deep')
    assert rows[40]['verdict'] == 'accept'
    row = rows[45]
    assert row['verdict'] == 'rollback' and row['commit'] == step45
    deep = [r for r in row['regressions'] if r['step'] == 40]
    # an ordinary regression of step 45 now, bisected to the commit that broke it
    assert deep and all(r['status'] == 'broken' for r in deep)
    assert {r['first_bad']['commit'] for r in deep} == {first_bad}
    assert {r['passed_at'] for r in deep} == {step40}
    assert {r['check'] for r in deep} <= set(fault.caught_by)


def test_a_classroom_folder_feeds_per_step_summaries_and_exports(tmp_path, packages):
    """One repository per student: each graded as a history, one cache for all (the same
    package at the same step is graded once), and per-step batch folders that export reads,
    carrying the history's verdict."""
    classroom = tmp_path / 'classroom'
    classroom.mkdir()
    alice = History(classroom / 'alice', packages)
    alice.commit('Done step44')
    alice.commit('step 45', 'bad')
    bob = History(classroom / 'bob', packages)
    bob.commit('Done step44', 'bad')
    bob.commit('step45', 'bad')
    (classroom / 'notes.txt').write_text('not a repository')
    out = tmp_path / 'out'
    proc = _cli('history', classroom, '--classroom', '--out', out, '--jobs', 2, '--sandbox', 'basic')
    assert proc.returncode == 0, proc.stderr
    assert 'alice' in proc.stdout and 'rollbacks at step 45' in proc.stdout
    summary = json.loads((out / 'steps' / 'step45' / 'summary.json').read_text())
    assert schema.errors('batch-summary', summary) == []
    verdicts = {s['id']: s['verdict'] for s in summary['submissions']}
    assert verdicts == {'alice': 'rollback', 'bob': 'reject'}   # bob's never worked
    assert summary['ignored'] == ['notes.txt']
    bob_doc = json.loads((out / 'bob' / 'history.json').read_text())
    assert bob_doc['counts']['from_cache'] >= 1        # alice's step 45 package, graded once
    proc = _cli('export', out / 'steps' / 'step45', '--format', 'junit', '--out', tmp_path / 'j.xml')
    assert proc.returncode == 0 and (tmp_path / 'j.xml').is_file()
