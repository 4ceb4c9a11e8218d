"""Fuzzing git input with Hypothesis: generated repositories (refs and packed refs, `HEAD`, a
`.git` that is a folder, a file, a link or absent, `commondir` and alternates, links inside
`.git` to a secret of the machine, trees with any names and modes, missing objects, commit
messages and map files of any bytes) read by `gitrepo` and `history`. Every example ends in a
clean result or a clean error (`RepoError` / `HistoryError` in the grader's words), never
another exception; the secret never shows; nothing is written outside the output folder; no
process is left.

The examples each target runs are a share of the Hypothesis profile's `max_examples`: the `ci`
profile (the default, derandomized, no example database: the same examples on every run)
gives the share of 100; the `soak` profile (`pytest --hypothesis-profile=soak`, or
`DEZERO_GRADER_FUZZ_PROFILE=soak`) the share of 20,000, with an example database that keeps
what it found. Both are registered in `tests/conftest.py`.
"""
from __future__ import annotations

import contextlib
import json
import os
from pathlib import Path

import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st

import fuzzing
from gitcraft import EXECUTABLE, FOLDER, LINK, REGULAR, SUBMODULE, Craft, canned_grading, snapshot
from dezero_grader import history
from dezero_grader.errors import SubmissionError
from dezero_grader.grading import run
from dezero_grader.history import html as history_html
from dezero_grader.history.grading import Grader
from dezero_grader.history.mapping import HistoryError, parse_map
from dezero_grader.intake import gitrepo
from dezero_grader.intake.gitrepo import Repo, RepoError
from dezero_grader.present import terminal
from dezero_grader.records import schema

SECRET = 'COURSE-SECRET-5f0b6f31'
CLEAN = (RepoError, HistoryError)


_examples = fuzzing.examples


# -- what a repository is made of -----------------------------------------------------------------

NAMES = st.one_of(
    st.sampled_from([b'dezero', b'__init__.py', b'core.py', b'steps', b'step01.py', b'step23.py',
                     b'step05.py', b'helper.py', b'.dezero-steps', b'dezero-steps.json', b'.git',
                     b'..', b'.', b'', b'a' * 300 + b'.py', b'\xff\xfe.py', b'new\nline.py',
                     b'sp ace.py', b'-rf', b'--output=x', b':(top)', b'*.py', b'\x1b[31m.py',
                     b'CON', b'a/b']),
    st.binary(min_size=1, max_size=12))
_LARGE = {'sum nested 20,000 deep': b'x = 1' + b'+1' * 20_000 + b'\n',
          'unary nested 20,000 deep': b'x = ' + b'-' * 20_000 + b'1\n',
          'map nested 20,000 deep': b'{"23": ' + b'[' * 20_000 + b']' * 20_000 + b'}',
          'map line of 300 characters': b'step23: ' + b'a' * 300}
CODE = st.one_of(
    st.sampled_from([b'', b'x = 1\n', b'import helper\n', b'from dezero.core import Variable\n',
                     b'# No code\n', b'class Variable:\n    pass\n', b'def f(:\n',
                     b'\xff\xfe\x00garbage', b'23 main\n24 HEAD~1\n', b'{"23": "main"}',
                     b'23 :/x\n', b'23 --output=/tmp/x\n', b'23 HEAD@{0}\n']),
    st.sampled_from(sorted(_LARGE)).map(lambda name: _LARGE[name]),
    st.binary(max_size=64))
MODES = st.sampled_from([REGULAR, REGULAR, REGULAR, EXECUTABLE, LINK, SUBMODULE, b'100664',
                         b'777777', b'0'])
MESSAGES = st.one_of(
    st.sampled_from(['Done step23', 'step 1-4', 'steps 25-27 done', 'step01', 'ステップ12 完了', 'Done step5',
                     'Done step23\x1e--output=/tmp/x\x1f\x1f\x1f\x1f\x1f\x1e', 'x\x00y step2',
                     '\x1b[2K\rACCEPT 6/6', 'step24\n\nbody step25', '']),
    st.text(max_size=40),
    st.binary(max_size=40))
TREES = st.recursive(
    st.lists(st.tuples(MODES, NAMES, CODE), max_size=4),
    lambda sub: st.lists(st.one_of(st.tuples(MODES, NAMES, CODE),
                                   st.tuples(st.just(FOLDER), NAMES, sub)), max_size=4),
    max_leaves=12)
_STANDARD = [
    {'dezero/__init__.py': b'from dezero.core import Variable\n',
     'dezero/core.py': b'class Variable:\n    pass\n'},
    {'steps/step01.py': b'import helper\n', 'steps/helper.py': b'x = 1\n'},
    {'steps/step23.py': b'import dezero\n', 'dezero/__init__.py': b''},
    {'steps/step04.py': b'x = 4\n', 'steps/step05.py': b'x = ' + b'-' * 100_000 + b'1\n'},
    {'.dezero-steps': b'23 main\n1 HEAD~1\n', 'dezero/__init__.py': b''},
    {}]
STANDARD = st.sampled_from(range(len(_STANDARD))).map(lambda n: _STANDARD[n])
TARGETS = st.one_of(st.sampled_from(['commit', 'commit', 'blob', 'missing', 'garbage',
                                     'ref: refs/heads/main', 'ref: ../../../secret', '']),
                    st.binary(max_size=50))
REF_NAMES = st.one_of(st.sampled_from(['refs/heads/step23', 'refs/heads/step-1', 'refs/tags/step24',
                                       'refs/remotes/origin/step25', 'refs/heads/a..b',
                                       'refs/heads/x.lock', 'refs/tags/v1']),
                      st.text('abcs-tep0123_/.', min_size=1, max_size=12).map(
                          lambda t: 'refs/heads/' + t.strip('/')))
GIT_FILE = st.one_of(st.sampled_from([b'gitdir: .real', b'gitdir: ../other/.git',
                                      b'gitdir: /etc', b'gitdir: .real\x00x', b'gitdir: \xff',
                                      b'gitdir:', b'gitdir: .real/../..', b'nonsense']),
                     st.binary(max_size=30))
PATHS = st.one_of(st.sampled_from([b'..', b'../..', b'../../other/.git', b'/etc', b'\xff\n',
                                   b'.', b'objects', b'../objects', b'# comment\n', b'"quoted"']),
                  st.binary(max_size=20))
LINKS = st.lists(st.sampled_from(['shallow', 'HEAD', 'packed-refs', 'refs/heads/leak',
                                  'objects/ab', 'objects/info/alternates', 'commondir']),
                 max_size=2, unique=True)


def _sometimes(strategy, default=None, one_in=5):
    """`strategy` one time in `one_in`, else `default`: each trick on its own is common enough,
    and most examples still get far enough into the repository for the next one to matter."""
    return st.sampled_from([False] * (one_in - 1) + [True]).flatmap(
        lambda on: strategy if on else st.just(default))


@st.composite
def repositories(draw):
    """A description of a repository: drawn, then written by `_write` (a failing example
    prints as this description)."""
    commits = []
    for _ in range(draw(st.integers(1, 4))):
        commits.append({'message': draw(MESSAGES),
                        'files': draw(STANDARD),
                        'crafted': draw(_sometimes(TREES, one_in=2)),
                        'lost_parent': draw(_sometimes(st.just(True), False, one_in=8))})
    return {
        'layout': draw(_sometimes(st.sampled_from(['bare', 'file', 'link', 'none']), 'dir', 4)),
        'git_file': draw(GIT_FILE),
        'commondir': draw(_sometimes(PATHS, one_in=12)),
        'alternates': draw(_sometimes(PATHS, one_in=12)),
        'commits': commits,
        'refs': draw(st.lists(st.tuples(REF_NAMES, TARGETS), max_size=3)),
        'head': draw(_sometimes(st.sampled_from([b'ref: refs/heads/none\n', b'garbage\n', b'',
                                                 b'ref: ../../secret\n']),
                                b'ref: refs/heads/main\n', 4)),
        'packed_refs': draw(_sometimes(st.one_of(st.binary(max_size=80),
                                                 st.just(b'# pack-refs with: peeled\n')), one_in=4)),
        'shallow': draw(_sometimes(st.binary(max_size=60), one_in=6)),
        'links': draw(_sometimes(LINKS, [], 8)),
        'lose': draw(_sometimes(st.lists(st.integers(0, 40), max_size=3), [], 5)),
    }


def _tree(craft: Craft, entries) -> str:
    out = []
    for mode, name, child in entries:
        if isinstance(child, list):
            out.append((FOLDER, name, _tree(craft, child)))
        else:
            out.append((mode, name, craft.blob(child)))
    return craft.tree(out)


def _write(desc: dict, root: Path, secret: Path) -> Path:
    """The repository `desc` describes, at root/learner."""
    work = root / 'learner'
    bare = desc['layout'] == 'bare'
    git_dir = work if bare else (work / '.real' if desc['layout'] == 'file' else work / '.git')
    craft = Craft(git_dir, bare=True)
    parent, shas = (), []
    for c in desc['commits']:
        if c['crafted'] is not None:
            tree = _tree(craft, c['crafted'] + [(FOLDER, b'dezero', [(REGULAR, b'__init__.py', b'')])]
                         if c['files'] else c['crafted'])
        else:
            tree = craft.files({k: v for k, v in c['files'].items()})
        if c['lost_parent']:
            parent = ('0123456789abcdef0123456789abcdef01234567',)
        message = c['message'].encode('utf-8', 'surrogateescape') if isinstance(
            c['message'], str) else c['message']
        sha = craft.commit(tree, message, parent)
        shas.append(sha)
        parent = (sha,)
    craft.ref('refs/heads/main', shas[-1])
    for name, target in desc['refs']:
        if target == 'commit':
            data = shas[0].encode() + b'\n'
        elif target == 'blob':
            data = craft.blob(b'not a commit').encode() + b'\n'
        elif target == 'missing':
            data = b'f' * 40 + b'\n'
        elif target == 'garbage':
            data = b'\x00\xff garbage'
        else:
            data = target.encode() if isinstance(target, str) else target
        with contextlib.suppress(OSError):
            craft.ref(name, data)
    (git_dir / 'HEAD').write_bytes(desc['head'])
    for name, value in (('packed-refs', desc['packed_refs']), ('shallow', desc['shallow']),
                        ('commondir', desc['commondir'])):
        if value is not None:
            (git_dir / name).write_bytes(value)
    if desc['alternates'] is not None:
        (git_dir / 'objects' / 'info' / 'alternates').write_bytes(desc['alternates'])
    objects = sorted(p for p in (git_dir / 'objects').rglob('*') if p.is_file()
                     and len(p.parent.name) == 2)
    for i in desc['lose']:
        if objects:
            with contextlib.suppress(OSError):
                objects[i % len(objects)].unlink()
    for name in desc['links']:
        path = git_dir / name
        with contextlib.suppress(OSError):
            if path.is_dir():
                continue
            path.unlink(missing_ok=True)
            path.parent.mkdir(parents=True, exist_ok=True)
            os.symlink(secret, path)
    if desc['layout'] == 'file':
        (work / '.git').write_bytes(desc['git_file'])
    elif desc['layout'] == 'link':
        (work / '.git').rename(work / '.hidden')
        os.symlink(work / '.hidden', work / '.git')
    elif desc['layout'] == 'none':
        (work / '.git').rename(work / 'not-git')
    return work


# -- what must hold of every example ---------------------------------------------------------------

@contextlib.contextmanager
def _arena():
    """A folder for one example (`root`), a secret outside the repository, a private temporary
    folder; afterwards: nothing written outside root/out and root/scratch (and the learner's
    repository), the temporary folder empty, no process left (`fuzzing.arena`)."""
    with fuzzing.arena('fuzz-git-', {'learner', 'out', 'scratch'}) as (base, root):
        secret = base / 'secret.txt'
        secret.write_text(SECRET + '\n')
        yield root, secret, lambda: snapshot(root / 'learner') if (root / 'learner').exists() else {}


def _clean_error(e: Exception) -> str:
    text = str(e)
    assert text and SECRET not in text and 'fatal:' not in text and 'Traceback' not in text
    return text


def _shown(*texts) -> None:
    for text in texts:
        assert SECRET not in text
        assert not any(ch in text for ch in '\x1b\r\x00')


@given(repositories())
@settings(max_examples=_examples(0.4))
def test_a_generated_repository_is_read_or_refused_cleanly(desc):
    """gitrepo and history's mapping and cutting, without grading: refs, the step mapping
    (dry run), each mapped commit's files and its graded subset."""
    with _arena() as (root, secret, repo_state):
        work = _write(desc, root, secret)
        before = repo_state()
        try:
            text = history.show_mapping(str(work))
            _shown(text)
            r = Repo(str(work), root / 'scratch')
            mapped, found = history.find_steps(r, r.head())
            event('read: {} step(s) mapped'.format(min(len(mapped), 3)))
            grader = Grader(r, run.Options(device='sim'), root / 'scratch', root / 'scratch' / 'cache',
                            jobs=1)
            for m in mapped:
                g = grader.prepare(m.step, m.sha)
                if g.problem is not None:
                    event('cut: ' + g.problem['code'])
                    assert g.problem['code'] in SubmissionError.CODES | {'unreadable'}
                    _shown(g.problem['message'])
                else:
                    assert g.subset.is_dir() and g.content_hash.startswith('sha256:')
            _shown(*r.notes)
        except CLEAN as e:
            event('refused: ' + _clean_error(e)[:30])
        finally:
            import shutil
            shutil.rmtree(root / 'scratch', ignore_errors=True)
        assert repo_state() == before


@given(repositories())
@settings(max_examples=_examples(0.2))
def test_a_generated_history_is_written_and_shown_cleanly(desc):
    """The whole history pipeline (map, cut, judge, write, show) with canned gradings: the
    document follows its schema, the timeline and the page show every text, obey none."""
    from dezero_grader.grading import run
    from dezero_grader.isolation.worker_process import Limits
    with _arena() as (root, secret, repo_state), pytest.MonkeyPatch.context() as mp:
        work = _write(desc, root, secret)
        before = repo_state()
        canned_grading(mp, lambda g: 'grader-error' if g.sha[0] in '01234' else None)
        options = run.Options(device='sim', limits=Limits.with_options(sandbox='basic'))
        try:
            result = history.grade_history(str(work), root / 'out', options, jobs=1,
                                           stream=open(os.devnull, 'w'))
        except CLEAN as e:
            event('refused: ' + _clean_error(e)[:30])
        else:
            event('history: {} row(s)'.format(min(len(result.document['steps']), 3)))
            assert schema.errors('history', result.document) == []
            _shown(history.render(result.document, diffs=True), history_html.render(result.document),
                   json.dumps(result.document, ensure_ascii=False))
        assert repo_state() == before


@given(st.lists(repositories(), min_size=2, max_size=3))
@settings(max_examples=_examples(0.05))
def test_a_generated_classroom_is_one_result_per_repository(descs):
    from dezero_grader.grading import run
    from dezero_grader.isolation.worker_process import Limits
    with _arena() as (root, secret, _), pytest.MonkeyPatch.context() as mp:
        room = root / 'learner'
        for n, desc in enumerate(descs):
            work = _write(desc, root / 'r{}'.format(n), secret)
            room.mkdir(exist_ok=True)
            work.rename(room / 'repo{}'.format(n))
        canned_grading(mp)
        options = run.Options(device='sim', limits=Limits.with_options(sandbox='basic'))
        try:
            result = history.grade_classroom(room, root / 'out', options, jobs=1,
                                             stream=open(os.devnull, 'w'))
        except CLEAN as e:      # only "holds no repository"
            assert 'holds no git repository' in _clean_error(e)
        else:
            doc = json.loads((root / 'out' / 'classroom.json').read_text())
            assert schema.errors('classroom', doc) == []
            assert all(r['code'] != 'grader-error' for r in doc['repositories']
                       if r['status'] == 'failed'), doc
            _shown(history.render_classroom(result))
        for n in range(len(descs)):
            import shutil
            shutil.rmtree(root / 'r{}'.format(n), ignore_errors=True)


@given(st.one_of(st.text(max_size=200), st.binary(max_size=200).map(
    lambda b: b.decode('utf-8', 'replace')), CODE.map(lambda b: b.decode('utf-8', 'replace'))))
@settings(max_examples=_examples(1.0))
def test_a_map_file_of_any_text_parses_or_is_refused(text):
    try:
        steps = parse_map(text, '.dezero-steps')
    except HistoryError as e:
        assert str(e).startswith('.dezero-steps')
    else:
        assert all(1 <= s <= 60 and isinstance(r, str) and r for s, r in steps.items())


@given(st.binary(max_size=400))
@settings(max_examples=_examples(1.0))
def test_a_commit_object_of_any_bytes_parses(raw):
    c = gitrepo.parse_commit('a' * 40, raw)
    assert c.sha == 'a' * 40 and '\n' not in c.subject and '\0' not in c.subject + c.body
    assert all(len(p) == 40 for p in c.parents)
    terminal.printable(c.subject + c.body + c.author + c.date)
