"""Git input as hostile as code. Repositories crafted object by object (`gitcraft`) that crashed
`history` (a deeply nested helper module or map file, a 300-character name, a `commondir` that
is not UTF-8, a NUL in `gitdir:`), graded a classmate's commits through `gitdir: ../bob/.git`,
echoed a file of the grading machine through git's complaint about a linked `.git/shallow`,
wrote a file through a commit message taken for an option, or let one dangling ref or one
missing object end a whole repository. Each now ends in a clean result or a clean error, in
the grader's words, with nothing read outside the folder given and nothing written outside
the output folder; in a classroom, each repository is its own result."""
import json
import os

import pytest

from dezero_grader import history
from dezero_grader.intake.gitrepo import Repo, RepoError
from dezero_grader.records import schema
from gitcraft import Craft, canned_grading, snapshot
from grade_cli import dezero_grade

SECRET = 'COURSE-SECRET-d41d8cd98f'
PACKAGE = {'dezero/__init__.py': 'from dezero.core import Variable\n',
           'dezero/core.py': 'class Variable:\n    pass\n'}


def _history(tmp_path, repo, monkeypatch, outcome=None):
    asked = canned_grading(monkeypatch, outcome)
    options = history_options()
    result = history.grade_history(str(repo), tmp_path / 'out', options, jobs=1,
                                   stream=open(os.devnull, 'w'))
    assert schema.errors('history', result.document) == []
    return result, {r['step']: r for r in result.document['steps']}, asked


def history_options():
    from dezero_grader.grading import run
    from dezero_grader.isolation.worker_process import Limits
    return run.Options(device='sim', limits=Limits.with_options(sandbox='basic'))


def _dry_run(repo, *extra):
    return dezero_grade('history', repo, '--dry-run', *extra, expect=None)


def _clean(proc):
    text = proc.stdout + proc.stderr
    assert 'Traceback' not in text and SECRET not in text
    return text


def test_a_helper_module_nested_deeply_is_graded_not_a_crash(tmp_path, monkeypatch):
    repo = tmp_path / 'learner'
    Craft(repo).history([('Done step9', {
        'steps/step09.py': 'from helper import f\n',
        'steps/helper.py': 'x = 1' + '+1' * 200_000 + '\n'})])
    _, rows, _ = _history(tmp_path, repo, monkeypatch)
    assert rows[9]['graded_files'] == ['steps/helper.py', 'steps/step09.py']


def test_a_step_file_nested_deeply_at_a_step_without_code_is_not_a_crash(tmp_path, monkeypatch):
    """Step 5 has no code: whether step05.py holds any is asked of the parser, which gave up on
    this file (MemoryError) while the history looked for step 5's commit."""
    repo = tmp_path / 'learner'
    Craft(repo).history([('Done step4', {'steps/step04.py': 'x = 4\n'}),
                         ('Done step5', {'steps/step04.py': 'x = 4\n',
                                         'steps/step05.py': 'x = ' + '-' * 100_000 + '1\n'})])
    _, rows, _ = _history(tmp_path, repo, monkeypatch)
    assert rows[5]['how'] == 'message'


def test_a_map_file_nested_100000_deep_is_a_clear_error(tmp_path):
    repo = tmp_path / 'learner'
    Craft(repo).history([('start', dict(PACKAGE, **{
        '.dezero-steps': '{"23": ' + '[' * 100_000 + ']' * 100_000 + '}'}))])
    proc = _dry_run(repo)
    text = _clean(proc)
    assert proc.returncode == 2 and '.dezero-steps' in text and 'nested' in text


def test_a_300_character_name_in_a_tree_is_left_out(tmp_path, monkeypatch):
    craft = Craft(tmp_path / 'learner')
    package = craft.files(PACKAGE)
    long_name = 'a' * 300 + '.py'
    tree = craft.tree([(b'40000', 'dezero', craft.tree(
        [(b'100644', '__init__.py', craft.blob('x = 1\n')),
         (b'100644', long_name, craft.blob('y = 2\n'))])), (b'40000', 'more', package)])
    sha = craft.commit(tree, 'Done step23')
    craft.ref('refs/heads/main', sha)
    r = Repo(str(craft.work), tmp_path / 'scratch')
    assert r.extract(sha, tmp_path / 'tree') == {}
    assert (tmp_path / 'tree' / 'dezero' / '__init__.py').read_text() == 'x = 1\n'
    _, rows, _ = _history(tmp_path, craft.work, monkeypatch)
    assert rows[23]['graded_files'] == ['dezero/__init__.py']


@pytest.mark.parametrize('dot_git, commondir, words', [
    (b'gitdir: .real-git\n', b'\xff\xfe../..\n', 'commondir is not UTF-8'),
    (b'gitdir: .real\x00-git\n', None, 'NUL'),
    (b'gitdir: ../bob/.git\n', None, 'outside the folder given'),
    (b'gitdir: /etc\n', None, 'outside the folder given'),
    (b'gitdir: .real-git\n', b'../../bob/.git\n', 'outside the folder given'),
    (b'not a gitdir line\n', None, 'does not say "gitdir: PATH"'),
])
def test_a_git_file_that_leads_elsewhere_or_is_not_text_is_refused(tmp_path, dot_git, commondir,
                                                                   words):
    """A `.git` file (a worktree's or a submodule's) and a worktree's `commondir` are followed
    only inside the folder given: a classmate's repository next door is refused with the
    reason, and so is a path that is not text."""
    bob = Craft(tmp_path / 'bob')
    bob.history([('Done step23', PACKAGE)])
    alice = tmp_path / 'alice'
    real = Craft(alice / '.real-git', bare=True)
    real.history([('Done step23', PACKAGE)])
    (alice / '.git').write_bytes(dot_git)
    if commondir is not None:
        (alice / '.real-git' / 'commondir').write_bytes(commondir)
    with pytest.raises(RepoError, match=words):
        Repo(str(alice), tmp_path / 'scratch')
    text = _clean(_dry_run(alice))
    assert words in text and bob.commit(bob.files(PACKAGE), 'x')[:10] not in text


def test_a_worktree_inside_its_folder_is_read(tmp_path):
    """The honest case of the same files: a `.git` file and a `commondir` that stay inside."""
    alice = tmp_path / 'alice'
    real = Craft(alice / '.real-git', bare=True)
    shas = real.history([('Done step23', PACKAGE)])
    wt = alice / '.real-git' / 'worktrees' / 'w'
    wt.mkdir(parents=True)
    (wt / 'HEAD').write_text('ref: refs/heads/main\n')
    (wt / 'commondir').write_text('../..\n')
    (alice / '.git').write_text('gitdir: .real-git/worktrees/w\n')
    assert Repo(str(alice), tmp_path / 'scratch').head() == shas[-1]


def test_alternates_that_lead_outside_the_folder_are_refused(tmp_path):
    bob = Craft(tmp_path / 'bob')
    bob.history([('Done step23', PACKAGE)])
    alice = Craft(tmp_path / 'alice')
    alice.ref('refs/heads/main', bob.history([('Done step23', PACKAGE)], 'refs/heads/b')[-1])
    for line in (str(bob.git_dir / 'objects'), '../../../bob/.git/objects'):
        (alice.git_dir / 'objects' / 'info' / 'alternates').write_text(line + '\n')
        with pytest.raises(RepoError, match='alternates leads to .*outside the folder given'):
            Repo(str(alice.work), tmp_path / 'scratch-{}'.format(len(line)))


def test_a_folder_name_with_a_newline_is_refused_not_split(tmp_path):
    """The grader lends a repository's objects to git by path, one per line: a folder whose name
    holds a newline would be two paths."""
    craft = Craft(tmp_path / 'room' / 'a\n..')
    craft.history([('Done step23', PACKAGE)])
    with pytest.raises(RepoError, match='holds a newline'):
        Repo(str(craft.work), tmp_path / 'scratch')


def test_no_symbolic_link_inside_git_is_followed(tmp_path):
    """`.git/shallow` linked to a file of the grading machine: git's complaint about it quoted
    the file's first line into the output. Links are not followed (a link among the refs is
    left out, one among the objects refuses the repository), and git's words never reach the
    output anyway."""
    secret = tmp_path / 'secret.txt'
    secret.write_text(SECRET + '\n')
    craft = Craft(tmp_path / 'learner')
    sha = craft.history([('Done step23', PACKAGE)])[-1]
    os.symlink(secret, craft.git_dir / 'shallow')
    os.symlink(secret, craft.git_dir / 'refs' / 'heads' / 'leak')
    r = Repo(str(craft.work), tmp_path / 'scratch')
    assert r.head() == sha and 'leak' not in r.refs()
    assert any('shallow is a symbolic link' in n for n in r.notes)
    assert any('refs/heads/leak is a symbolic link' in n for n in r.notes)
    text = _clean(_dry_run(craft.work))
    assert 'step 23' in text and 'symbolic link' in text
    os.symlink(secret, craft.git_dir / 'objects' / 'ff')
    with pytest.raises(RepoError, match='objects/ff is a symbolic link'):
        Repo(str(craft.work), tmp_path / 'scratch2')


def test_gits_own_words_never_reach_the_output(tmp_path):
    """git quotes what it cannot parse ("unexpected line in packed-refs: <the line>"): the
    refs of a packed-refs git refuses are left out, and a failure is said in our words."""
    craft = Craft(tmp_path / 'learner')
    sha = craft.history([('Done step23', PACKAGE)], 'refs/heads/other')[-1]
    (craft.git_dir / 'packed-refs').write_text('{} refs/heads/main\n{}\n'.format(sha, SECRET))
    r = Repo(str(craft.work), tmp_path / 'scratch')
    assert r.refs() == {'other': sha}
    assert any('packed-refs cannot be read' in n for n in r.notes)
    text = _clean(_dry_run(craft.work))
    assert 'fatal' not in text and 'unexpected line' not in text


def test_a_dangling_ref_skips_that_ref_not_the_repository(tmp_path):
    craft = Craft(tmp_path / 'learner')
    sha = craft.history([('Done step23', PACKAGE)])[-1]
    craft.ref('refs/heads/step24', '1234567890' * 4)
    craft.ref('refs/tags/v1', craft.blob('not a commit'))
    r = Repo(str(craft.work), tmp_path / 'scratch')
    assert r.refs() == {'HEAD': sha, 'main': sha}
    assert any('refs/heads/step24 names 1234567890' in n for n in r.notes)
    proc = _dry_run(craft.work)
    text = _clean(proc)
    assert proc.returncode == 0 and 'step 23' in text and 'refs/heads/step24' in text


def test_a_missing_commit_ends_the_history_and_a_missing_tree_one_commit(tmp_path, monkeypatch):
    craft = Craft(tmp_path / 'learner')
    lost = craft.commit(craft.files(PACKAGE), 'Done step22')
    tree23 = craft.files(dict(PACKAGE, **{'dezero/extra.py': 'z = 3\n'}))
    s23 = craft.commit(tree23, 'Done step23', (lost,))
    gone = craft.tree([(b'40000', 'dezero', '0' * 39 + '1')])
    s24 = craft.commit(gone, 'Done step24', (s23,))
    s25 = craft.commit(craft.files(PACKAGE), 'Done step25', (s24,))
    craft.ref('refs/heads/main', s25)
    os.unlink(craft.git_dir / 'objects' / lost[:2] / lost[2:])
    result, rows, _ = _history(tmp_path, craft.work, monkeypatch)
    assert result.document['repository']['commits'] == 3
    assert any('stops after 3 commit(s)' in n for n in result.document['repository']['notes'])
    assert rows[23]['commit'] == s23 and rows[25]['commit'] == s25
    # step 24's message names a commit whose files the repository lacks: not mapped there
    assert 24 not in rows or rows[24]['verdict'] == 'invalid'


def test_a_commit_message_is_never_taken_for_an_option(tmp_path, monkeypatch):
    """Commit messages were split on control characters: one holding them became a "commit"
    named `--output=FILE`, which git took for its option and truncated FILE, any file the
    grader may write. Commits are now parsed from their objects."""
    target = tmp_path / 'grades.csv'
    target.write_text('precious\n')
    craft = Craft(tmp_path / 'learner')
    tree = craft.files(PACKAGE)
    first = craft.commit(tree, 'Done step23')
    evil = 'x\x1e--output={}\x1f\x1f2020-01-01\x1fa\x1fDone step24\x1fb\x1e'.format(target)
    craft.ref('refs/heads/main', craft.commit(tree, evil, (first,)))
    before = snapshot(tmp_path / 'learner')
    _clean(_dry_run(craft.work))
    assert target.read_text() == 'precious\n'
    _history(tmp_path, craft.work, monkeypatch)
    assert target.read_text() == 'precious\n'
    assert snapshot(tmp_path / 'learner') == before


def _classroom(tmp_path):
    """alice's .git points at bob's; carol's commondir is not UTF-8; dave copied bob's history
    and added a commit; erin's map is nested 100,000 deep; frank is honest and alone."""
    room = tmp_path / 'room'
    bob = Craft(room / 'bob')
    bob_shas = bob.history([('Done step23', PACKAGE), ('Done step24', PACKAGE)])
    (room / 'alice').mkdir()
    (room / 'alice' / '.git').write_text('gitdir: ../bob/.git\n')
    carol = Craft(room / 'carol' / '.real', bare=True)
    carol.history([('Done step23', PACKAGE)])
    (room / 'carol' / '.git').write_text('gitdir: .real\n')
    (room / 'carol' / '.real' / 'commondir').write_bytes(b'\xff\n')
    dave = Craft(room / 'dave')   # written alike, bob's two commits are the same objects
    dave_shas = dave.history([('Done step23', PACKAGE), ('Done step24', PACKAGE),
                              ('Done step25', PACKAGE)])
    erin = Craft(room / 'erin')
    erin.history([('Done step23', dict(PACKAGE, **{
        '.dezero-steps': '{"23": ' + '[' * 100_000 + ']' * 100_000 + '}'}))])
    frank = Craft(room / 'frank')
    frank.history([('Done step23 (frank)', PACKAGE)])
    return room, bob_shas, dave_shas


def test_a_classroom_goes_on_after_bad_repositories_and_names_shared_commits(tmp_path,
                                                                             monkeypatch):
    room, bob_shas, dave_shas = _classroom(tmp_path)
    assert dave_shas[:2] == bob_shas     # crafted alike, the same commits
    canned_grading(monkeypatch)
    result = history.grade_classroom(room, tmp_path / 'out', history_options(), jobs=1,
                                     stream=open(os.devnull, 'w'))
    assert sorted(result.histories) == ['bob', 'dave', 'frank']
    assert sorted(result.failures) == ['alice', 'carol', 'erin']
    assert 'outside the folder given' in result.failures['alice']
    doc = json.loads((tmp_path / 'out' / 'classroom.json').read_text())
    assert schema.errors('classroom', doc) == []
    status = {r['id']: (r['status'], r.get('code')) for r in doc['repositories']}
    assert status == {'alice': ('failed', 'unreadable'), 'bob': ('graded', None),
                      'carol': ('failed', 'unreadable'), 'dave': ('graded', None),
                      'erin': ('failed', 'bad-mapping'), 'frank': ('graded', None)}
    assert [(p['repositories'], p['count'], {c['commit'] for c in p['commits']})
            for p in doc['shared']] == [(['bob', 'dave'], 2, set(bob_shas))]
    text = history.render_classroom(result)
    assert 'shared commits: bob and dave hold 2 commit(s) in common' in text
    summary = json.loads((tmp_path / 'out' / 'steps' / 'step23' / 'summary.json').read_text())
    assert {u['id'] for u in summary['ungraded'] if not u['scorecard']} == {'alice', 'carol', 'erin'}


def test_a_classroom_on_the_command_line_ends_in_results_not_a_traceback(tmp_path):
    """The same classroom graded for real: every repository its own result, the classmate's
    commits never graded as alice's, nothing of git's on the terminal."""
    room, _, _ = _classroom(tmp_path)
    out = tmp_path / 'out'
    proc = dezero_grade('history', room, '--classroom', '--out', out, '--jobs', 2, '--sandbox',
                        'basic', '--steps', '23', expect=None)
    text = _clean(proc)
    assert 'alice: not graded' in text and 'carol: not graded' in text and 'erin: not graded' in text
    assert 'fatal' not in text
    assert not (out / 'alice').joinpath('history.json').exists()
    assert json.loads((out / 'bob' / 'history.json').read_text())['steps'][0]['step'] == 23
