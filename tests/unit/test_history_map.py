"""`dezero-grade history` without grading: which commit is which step (messages, branches, step
files, a mapping file), which files a step grades, and reading a repository safely (nothing of
the learner's own git configuration runs). Repositories are built commit by commit in tmp."""
import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from dezero_grader import history
from dezero_grader.intake import load
from dezero_grader.intake.gitrepo import Repo, RepoError, git_env


def _git(repo, *args):
    env = dict(git_env(), GIT_AUTHOR_NAME='t', GIT_AUTHOR_EMAIL='t@example.org',
               GIT_COMMITTER_NAME='t', GIT_COMMITTER_EMAIL='t@example.org')
    return subprocess.run(['git', '-C', str(repo), *args], env=env, check=True,
                          capture_output=True, text=True).stdout.strip()


def _commit(repo, message, files=None, remove=()):
    for rel, text in (files or {}).items():
        path = repo / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    for rel in remove:
        (repo / rel).unlink()
    _git(repo, 'add', '-A')
    _git(repo, 'commit', '-q', '--allow-empty', '-m', message)
    return _git(repo, 'rev-parse', 'HEAD')


@pytest.fixture
def repo(tmp_path):
    path = tmp_path / 'learner'
    path.mkdir()
    _git(path, 'init', '-q', '-b', 'main')
    return path


def _mapped(repo_path, tmp_path, map_file=None):
    r = Repo(str(repo_path), tmp_path / 'scratch')
    chosen, found = history.find_steps(r, r.head(), map_file)
    return {s.step: (s.sha, s.how) for s in chosen}, found


@pytest.mark.parametrize('text, steps', [
    ('Done step23', {23}), ('step 24 finished', {24}), ('step25', {25}), ('STEP_07 ok', {7}),
    ('steps 25-27 done', {25, 26, 27}), ('fix typo', set()), ('step 61', set()),
    ('ステップ12 完了', {12}), ('第9步', {9}), ('upstep9x', set()), ('add step30.py', {30}),
])
def test_steps_named_in_messages(text, steps):
    assert history.steps_in_message(text) == steps


def test_a_step_is_the_last_commit_of_its_stretch_of_messages(repo, tmp_path):
    wip = _commit(repo, 'step 23 wip', {'a.txt': '1', 'dezero/__init__.py': ''})
    done = _commit(repo, 'Done step23', {'a.txt': '2'})
    _commit(repo, 'typo', {'a.txt': '3'})
    s24 = _commit(repo, 'step24', {'a.txt': '4'})
    late = _commit(repo, 'fix step 23 again', {'a.txt': '5'})   # after step 24: not step 23's state
    mapped, _ = _mapped(repo, tmp_path)
    assert mapped[23] == (done, 'message') and wip != done
    assert mapped[24] == (s24, 'message') and late != s24


def test_step_files_map_to_the_commit_before_the_next_step_file(repo, tmp_path):
    start = _commit(repo, 'start', {'steps/step01.py': 'x = 1\n'})
    one = _commit(repo, 'more', {'steps/step01.py': 'x = 2\n'})
    nxt = _commit(repo, 'next', {'steps/step02.py': 'y = 1\n'})
    two = _commit(repo, 'tidy', {'README': 'r'})
    mapped, found = _mapped(repo, tmp_path)
    assert mapped == {1: (one, 'file'), 2: (two, 'file')}
    # neither commit adds its file: each holds it, and says which commit added it
    assert {f.detail for f in found} == {'holds steps/step01.py (added in {})'.format(start[:10]),
                                         'holds steps/step02.py (added in {})'.format(nxt[:10])}


def test_branches_and_tags_win_over_messages_and_a_map_file_over_all(repo, tmp_path):
    first = _commit(repo, 'Done step23', {'a.txt': '1'})
    second = _commit(repo, 'more', {'a.txt': '2'})
    _git(repo, 'branch', 'step-23', second)
    mapped, _ = _mapped(repo, tmp_path)
    assert mapped[23] == (second, 'branch')
    _commit(repo, 'map', {'.dezero-steps': '# step -> commit\n23 {}\n'.format(first[:8])})
    _git(repo, 'tag', '-a', '-m', 'step 24 done', 'step24', first)
    mapped, found = _mapped(repo, tmp_path / 'again')
    assert mapped[23] == (first, 'map')
    assert mapped[24] == (first, 'tag')       # an annotated tag: the commit it names
    assert {f.how for f in found if f.step == 23} == {'map', 'branch', 'message'}


def test_a_map_file_given_on_the_command_line(repo, tmp_path):
    first = _commit(repo, 'one', {'a.txt': '1'})
    _commit(repo, 'two', {'a.txt': '2'})
    mapfile = tmp_path / 'steps.json'
    mapfile.write_text(json.dumps({'steps': {'30': first, '31': 'main'}}))
    mapped, _ = _mapped(repo, tmp_path, str(mapfile))
    assert mapped[30] == (first, 'map')
    assert mapped[31][0] == _git(repo, 'rev-parse', 'main')


@pytest.mark.parametrize('text, message', [
    ('23', 'expected "STEP COMMIT"'), ('70 abc', 'steps run from 1 to 60'),
    ('{"23": ', 'not valid JSON'), ('["a"]', 'expected'),
])
def test_a_wrong_map_file_is_a_clear_error(text, message):
    with pytest.raises(history.HistoryError, match=message):
        history.parse_map(text, 'm')


def test_a_map_naming_no_commit_is_a_clear_error(repo, tmp_path):
    _commit(repo, 'one', {'.dezero-steps': '23 no-such-branch\n'})
    with pytest.raises(history.HistoryError, match='no-such-branch'):
        _mapped(repo, tmp_path)


def test_not_a_repository(tmp_path):
    with pytest.raises(RepoError, match='not a git repository'):
        Repo(str(tmp_path), tmp_path / 'scratch')
    with pytest.raises(RepoError, match='no folder'):
        Repo(str(tmp_path / 'absent'), tmp_path / 'scratch2')


def test_a_step_file_grades_itself_its_helpers_and_the_modules_it_imports(tmp_path):
    tree = tmp_path / 'tree'
    (tree / 'steps').mkdir(parents=True)
    (tree / 'steps' / 'step09.py').write_text('import numpy as np\nfrom common import Variable\n')
    (tree / 'steps' / 'common.py').write_text('from util import helper\nclass Variable: pass\n')
    (tree / 'util.py').write_text('def helper(): pass\n')
    (tree / 'steps' / 'step10.py').write_text('from common import Variable\n')
    (tree / 'steps' / 'loader.py').write_text('x = 1\n')       # may be read at run time
    (tree / 'steps' / 'plot.png').write_bytes(b'png')          # what a demo wrote
    (tree / 'other.py').write_text('x = 1\n')                  # at the top, not imported
    (tree / 'steps' / '__pycache__').mkdir()
    (tree / 'steps' / '__pycache__' / 'common.cpython-311.pyc').write_bytes(b'')
    entry = load.find_entry(tree, 9)
    assert history.graded_files(tree, entry) == ['steps/common.py', 'steps/loader.py',
                                                 'steps/step09.py', 'util.py']


def test_the_package_is_what_a_package_step_grades(tmp_path):
    tree = tmp_path / 'tree'
    (tree / 'dezero').mkdir(parents=True)
    (tree / 'dezero' / '__init__.py').write_text('')
    (tree / 'dezero' / 'core.py').write_text('')
    (tree / 'steps').mkdir()
    (tree / 'steps' / 'step30.py').write_text('')
    dest = tmp_path / 'subset'
    entry, paths = history.graded_subset(tree, 30, dest)
    assert paths == ['dezero/__init__.py', 'dezero/core.py']
    assert sorted(p.relative_to(dest).as_posix() for p in dest.rglob('*') if p.is_file()) == paths


def test_the_learners_git_configuration_never_runs(repo, tmp_path):
    """A filter, a hook and an fsmonitor in the learner's own .git/config would run a command
    on checkout or status; the history only fetches from the repository and extracts trees
    from its own copy, so none of them runs."""
    marker = tmp_path / 'ran'
    evil = 'sh -c "touch {}"'.format(marker)
    (repo / '.gitattributes').write_text('*.py filter=evil\n')
    sha = _commit(repo, 'Done step23', {'dezero/__init__.py': 'x = 1\n'})
    _git(repo, 'config', 'filter.evil.smudge', evil)
    _git(repo, 'config', 'core.fsmonitor', evil)
    hook = repo / '.git' / 'hooks' / 'post-checkout'
    hook.write_text('#!/bin/sh\ntouch {}\n'.format(marker))
    hook.chmod(0o755)
    r = Repo(str(repo), tmp_path / 'scratch')
    assert r.extract(sha, tmp_path / 'tree') == {}
    assert (tmp_path / 'tree' / 'dezero' / '__init__.py').read_text() == 'x = 1\n'
    r.diff(sha, sha, ['dezero'])
    assert not marker.exists()


def test_a_bare_mirror_is_read_like_a_clone(repo, tmp_path):
    sha = _commit(repo, 'Done step23', {'a.txt': '1'})
    mirror = tmp_path / 'mirror.git'
    subprocess.run(['git', 'clone', '-q', '--mirror', str(repo), str(mirror)], check=True,
                   env=git_env())
    r = Repo(str(mirror), tmp_path / 'scratch')
    assert r.head() == sha


def test_classroom_folders_are_the_repositories_in_it(repo, tmp_path):
    _commit(repo, 'one', {'a.txt': '1'})
    (tmp_path / 'notes.txt').write_text('')
    (tmp_path / 'empty').mkdir()
    found, ignored = history.find_repositories(tmp_path)
    assert list(found) == ['learner'] and sorted(ignored) == ['empty', 'notes.txt']


def test_a_commit_whose_repository_lacks_a_blob_is_still_read(repo, tmp_path):
    """A mirror without its largest files: the others are written, the lacking one named."""
    sha = _commit(repo, 'Done step23', {'dezero/__init__.py': 'x = 1\n', 'dezero/big.bin': 'B' * 999})
    blob = _git(repo, 'rev-parse', sha + ':dezero/big.bin')
    clone = tmp_path / 'clone'
    shutil.copytree(repo, clone)
    (clone / '.git' / 'objects' / blob[:2] / blob[2:]).unlink()   # a loose object, as committed
    r = Repo(str(clone), tmp_path / 'scratch')
    assert r.extract(sha, tmp_path / 'tree') == {'dezero/big.bin': 'missing'}
    assert (tmp_path / 'tree' / 'dezero' / '__init__.py').is_file()


def test_a_step_file_deleted_before_the_next_step_maps_to_the_last_commit_holding_it(repo, tmp_path):
    """step31.py added, deleted two commits later, step33.py after: step 31 was mapped to the
    commit before step33.py, which neither adds nor holds step31.py, as "adds steps/step31.py"."""
    package = {'dezero/__init__.py': '', 'dezero/core.py': 'x = 1\n'}
    adds = _commit(repo, 'update', dict(package, **{'steps/step31.py': '# No code\n'}))
    _commit(repo, 'update', remove=['steps/step31.py'])
    _commit(repo, 'update', {'dezero/core.py': 'x = 2\n'})
    _commit(repo, 'update', {'steps/step33.py': 'import dezero\n'})
    mapped, found = _mapped(repo, tmp_path)
    assert mapped[31] == (adds, 'file')
    assert [f.detail for f in found if f.step == 31] == ['adds steps/step31.py']


def test_a_message_whose_commits_hold_no_step_file_maps_nothing(repo, tmp_path):
    """The commit named "step 01~03" holds step-01.py (a name grading does not read): it is
    not step 1's commit; the commit that renames the files to step01.py is, by its files. A
    message's commit is chosen only when it holds the step's file, and the refused evidence
    says why."""
    _commit(repo, 'step 01~03', {'steps/step-0{}.py'.format(n): 'x = {}\n'.format(n)
                                 for n in (1, 2, 3)})
    renamed = _commit(repo, 'rename', {'steps/step0{}.py'.format(n): 'x = {}\n'.format(n)
                                       for n in (1, 2, 3)},
                      remove=['steps/step-0{}.py'.format(n) for n in (1, 2, 3)])
    later = _commit(repo, 'Done step 4', {'steps/step04.py': 'x = 4\n'})
    mapped, found = _mapped(repo, tmp_path)
    assert mapped == {1: (renamed, 'file'), 2: (renamed, 'file'), 3: (renamed, 'file'),
                      4: (later, 'message')}
    refused = {f.step: f.refused for f in found if f.refused}
    assert set(refused) == {1, 2, 3}
    assert 'none of them holds step01.py' in refused[1]


def test_a_message_maps_to_the_last_of_its_commits_that_holds_the_package(repo, tmp_path):
    """The last commit naming step 23 moved the package out of dezero/: the step is the
    commit before, which holds it (it was the last one, graded "no-entry")."""
    holds = _commit(repo, 'Done step23', {'dezero/__init__.py': ''})
    _commit(repo, 'step 23: code moved to mylib', {'mylib/__init__.py': ''},
            remove=['dezero/__init__.py'])
    mapped, found = _mapped(repo, tmp_path)
    assert mapped[23] == (holds, 'message')


def test_rows_are_in_commit_order_and_say_when_steps_share_a_commit(repo, tmp_path, monkeypatch):
    """Steps 1 and 2 share their commit; the learner did step 4 before step 3: the timeline
    runs in commit order (it ran in step order) and says which steps share a commit."""
    from gitcraft import canned_grading
    from dezero_grader.grading import run
    from dezero_grader.records import schema
    from dezero_grader.isolation.worker_process import Limits
    both = _commit(repo, 'first steps', {'steps/step01.py': 'x = 1\n', 'steps/step02.py': 'x = 2\n'})
    four = _commit(repo, 'Done step4', {'steps/step04.py': 'x = 4\n'})
    three = _commit(repo, 'Done step3', {'steps/step03.py': 'x = 3\n'})
    canned_grading(monkeypatch)
    result = history.grade_history(str(repo), tmp_path / 'out', run.Options(
        device='sim', limits=Limits.with_options(sandbox='basic')), jobs=1,
        stream=open(os.devnull, 'w'))
    doc = result.document
    assert schema.errors('history', doc) == []
    assert [(r['step'], r['commit']) for r in doc['steps']] == [
        (1, both), (2, both), (4, four), (3, three)]
    assert [r.get('same_commit_as') for r in doc['steps']] == [[2], [1], None, None]
    text = history.render(doc)
    assert text.count('[steps 1, 2 share this commit]') == 1
    assert text.index('  4  ') < text.index('  3  ')
