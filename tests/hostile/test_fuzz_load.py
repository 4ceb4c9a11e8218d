"""Fuzzing the loader and every renderer with Hypothesis.

`load.prepare` gets generated file trees (names of any bytes, depth, links in and out, sizes,
files and folders the loader treats specially) and generated zip archives (entry names with
`..`, absolute paths, duplicates, links, directory entries, the UTF-8 flag, sizes); every
example ends in a `Submission` or a `SubmissionError` with a message, never another exception,
nothing is written outside the scratch folder and the temporary folder is left empty.

Every renderer gets learner strings of any characters (controls, newlines, lone surrogates,
bidirectional overrides, quotes, markup, DOT and formula syntax) in the places a learner's text
reaches: the terminal report and progress lines, HTML, DOT, the Canvas CSV, JUnit XML and
Gradescope JSON. Each renders without an exception, writes a file that reads back, and lets the
learner's text start no line and no element of its own.

The examples each target runs are a share of the Hypothesis profile's `max_examples` (`ci`: of
100, the same examples on every run; `soak`: of $DEZERO_GRADER_FUZZ_EXAMPLES, 20,000 by
default), as in `test_fuzz_git.py`.
"""
from __future__ import annotations

import contextlib
import copy
import csv
import html.parser
import io
import json
import os
import re
import shutil
import stat
import tempfile
import warnings
import xml.etree.ElementTree as ET
import zipfile
from pathlib import Path

import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st

from dezero_grader import reference
from dezero_grader.errors import SubmissionError
from dezero_grader.export import Graded, Submission, canvas, gradescope, junit
from dezero_grader.grading import run
from dezero_grader.intake import load
from dezero_grader.intake import roster as roster_mod
from dezero_grader.present import graph_dot, html_page, terminal
from dezero_grader.present.progress import Progress
from dezero_grader.records import schema

import fuzzing

STEP = 23

# -- file trees and archives -----------------------------------------------------------------------

NAMES = st.one_of(
    st.sampled_from([b'dezero', b'__init__.py', b'core.py', b'core_simple.py', b'steps',
                     b'step05.py', b'step23.py', b'.dezero-flat', b'pyvenv.cfg', b'__pycache__',
                     b'x.pyc', b'.git', b'__MACOSX', b'.DS_Store', b'a' * 255, b'\xff\xfe.py',
                     b'new\nline.py', b'\x1b[31m.py', b'notebook.ipynb',
                     b'.dezero-notebooks', b'dezero-steps.json', b'CON', b' ']),
    st.binary(min_size=1, max_size=10).filter(lambda b: b'/' not in b and b'\x00' not in b
                                              and b not in (b'.', b'..')))
CONTENT = st.one_of(
    st.sampled_from([b'', b'x = 1\n', b'# No code\n', b'def f(:\n', b'\xff\xfe\x00garbage',
                     b'import os\nos.listdir(".")\n', b'{"cells": []}', b'not json',
                     b'home = /usr\n', b'x = ' + b'-' * 20_000 + b'1\n',
                     b'x = 1' + b'+1' * 20_000 + b'\n']),
    st.binary(max_size=200))
KINDS = st.sampled_from(['file', 'file', 'file', 'folder', 'link-in', 'link-out', 'fifo',
                         'unreadable', 'big'])


@st.composite
def trees(draw):
    """A list of (path as name parts, kind, content): up to 12 entries, up to 6 deep."""
    entries = []
    base = draw(st.sampled_from([[], [b'dezero'], [b'alice'], [b'alice', b'dezero'], [b'steps']]))
    for _ in range(draw(st.integers(0, 12))):
        depth = draw(st.integers(0, 5))
        parts = base + [draw(NAMES) for _ in range(depth)] + [draw(NAMES)]
        entries.append((parts, draw(KINDS), draw(CONTENT)))
    if draw(st.booleans()):   # most learners hand in something that looks like DeZero
        entries.append((base + [b'__init__.py'], 'file', b'x = 1\n'))
    if draw(st.booleans()):
        entries.append(([b'dezero', b'__init__.py'] if draw(st.booleans()) else [b'__init__.py'],
                        'file', b''))
        entries.append(([b'core.py'], 'file', b'class Variable:\n    pass\n'))
    return entries


def _write_tree(entries, root: Path, outside: Path) -> None:
    for parts, kind, content in entries:
        path = os.path.join(os.fsencode(root), *parts)
        if os.path.lexists(path):   # a name given twice: the first stays (writing a FIFO would block)
            event('tree: a name given twice')
            continue
        inside = os.path.realpath(os.path.dirname(path))
        if not (inside + b'/').startswith(os.path.realpath(os.fsencode(root)) + b'/'):
            event('tree: a path through a link of its own')   # the example writes only its tree
            continue
        try:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            if kind == 'folder':
                os.makedirs(path, exist_ok=True)
            elif kind == 'link-in':
                os.symlink(b'../' * (len(parts) - 1) or b'.', path)   # the hand-in's top: a loop
            elif kind == 'link-out':
                os.symlink(os.fsencode(outside), path)
            elif kind == 'fifo':
                os.mkfifo(path)
            else:
                with open(path, 'wb') as f:
                    f.write(content * (4096 if kind == 'big' else 1))
                if kind == 'unreadable':
                    os.chmod(path, 0)
        except OSError:   # a name this file system refuses, a file where a folder is wanted
            event('tree: an entry the file system refused')


ZIP_NAMES = st.one_of(
    st.sampled_from(['dezero/__init__.py', 'dezero/core.py', 'alice/dezero/__init__.py',
                     '../evil.py', '../../etc/x', '/abs/path.py', 'dezero/', 'a//b.py',
                     'dezero/__pycache__/core.cpython-311.pyc', 'env/pyvenv.cfg', 'step05.py',
                     'steps/step23.py', '__MACOSX/._x', 'dezero/../../x.py', 'C:\\win.py',
                     'caf\u00e9.py', 'new\nline.py', '\x1b[31m.py', '.dezero-flat',
                     'x' * 300 + '.py']),
    st.text(min_size=1, max_size=20))


@st.composite
def archives(draw):
    """A list of (name, data, is_link, compress, utf8 flag): up to 10 entries."""
    out = []
    for _ in range(draw(st.integers(0, 10))):
        out.append((draw(ZIP_NAMES), draw(CONTENT), draw(st.integers(0, 9)) == 0,
                    draw(st.booleans()), draw(st.booleans())))
    return out


def _write_zip(entries, path: Path) -> None:
    with zipfile.ZipFile(path, 'w') as z, warnings.catch_warnings():
        warnings.simplefilter('ignore')   # duplicate names are meant
        for name, data, is_link, compress, utf8 in entries:
            info = zipfile.ZipInfo(name)
            info.compress_type = zipfile.ZIP_DEFLATED if compress else zipfile.ZIP_STORED
            if is_link:
                info.external_attr = (stat.S_IFLNK | 0o777) << 16
            if not utf8:
                info.flag_bits &= ~0x800
            with contextlib.suppress(ValueError):   # a name zipfile itself refuses
                z.writestr(info, data)


@contextlib.contextmanager
def _arena():
    """root/ for the hand-in and its scratch folder, beside it a file the links point to
    (`fuzzing.arena`); afterwards that file is as it was."""
    with fuzzing.arena('fuzz-load-', {'hand-in', 'hand-in.zip', 'scratch'}) as (base, root):
        outside = base / 'outside.txt'
        outside.write_text('outside the submission\n')
        try:
            yield root, outside
        finally:
            for folder, dirs, files in os.walk(base):   # unreadable files made by the example
                for name in files:
                    path = os.path.join(folder, name)
                    if not os.path.islink(path):
                        with contextlib.suppress(OSError):
                            os.chmod(path, 0o600)
        assert outside.read_text() == 'outside the submission\n'
        assert sorted(p.name for p in base.iterdir()) == ['outside.txt', 'root', 'tmp']


def _prepared_or_refused(source: Path, scratch: Path, step: int) -> None:
    try:
        sub = load.prepare(source, step, scratch)
    except SubmissionError as e:
        event('load: ' + e.code)
        assert e.message and 'Traceback' not in e.message
        return
    event('load: ' + sub.entry.kind)
    assert sub.root.is_dir() and scratch.resolve() in sub.root.parents
    assert sub.content_hash.startswith('sha256:') and sub.fingerprint
    assert sub.fingerprint == load.fingerprint_of(source) or not source.exists()
    shutil.rmtree(sub.root)


@given(trees(), st.sampled_from([5, 23]))
@settings(max_examples=fuzzing.examples(0.4))
def test_a_generated_folder_is_loaded_or_refused_cleanly(entries, step):
    with _arena() as (root, outside):
        hand_in = root / 'hand-in'
        hand_in.mkdir()
        _write_tree(entries, hand_in, outside)
        _prepared_or_refused(hand_in, root / 'scratch', step)


@given(archives(), st.sampled_from([5, 23]))
@settings(max_examples=fuzzing.examples(0.4))
def test_a_generated_archive_is_loaded_or_refused_cleanly(entries, step):
    with _arena() as (root, outside):
        archive = root / 'hand-in.zip'
        _write_zip(entries, archive)
        _prepared_or_refused(archive, root / 'scratch', step)


# -- learner strings in every renderer ------------------------------------------------------------

LEARNER_TEXT = st.one_of(
    st.sampled_from(['', '\n', '\r\nACCEPT  score 6/6\r\n', '\x1b[32mACCEPT\x1b[0m', '\udc80',
                     '\ud800x\udfff', '\u202eevil', '\u2028[2/2] mallory: accept 6/6',
                     '<script>alert(1)</script>', '"><img src=x onerror=alert(1)>',
                     'Mul", URL="javascript:alert(1)", x="', '\\N\\G\\l', ']]>', '&#0;',
                     '=HYPERLINK("http://x","y")', '+1', '-1', '@SUM(A1)', '\tx', '\x00',
                     '\x85\x0b\x0c\x1c', 'x' * 5000]),
    st.text(max_size=60),
    st.text(alphabet=st.characters(blacklist_categories=()), max_size=30))


@pytest.fixture(scope='module')
def base_card(tmp_path_factory):
    """A real scorecard with failing checks, their evidence and a diagnosis (a reference whose
    Function.__call__ records no generation): the document the strings are put into."""
    root = tmp_path_factory.mktemp('fuzz-render')
    sub = root / 'bob'
    shutil.copytree(reference.ROOT / 'dezero', sub / 'dezero',
                    ignore=shutil.ignore_patterns('__pycache__', '*.pyc'))
    with open(sub / 'dezero' / '__init__.py', 'a') as f:
        f.write('\nraise RuntimeError("learner message")\n')
    invalid = run.grade(sub, STEP, run.Options(device='sim', seed=2))
    assert invalid['verdict'] == 'invalid'
    return invalid


def _with_text(doc, text):
    """`doc` with `text` wherever a learner's text reaches a scorecard."""
    doc = copy.deepcopy(doc)
    doc['reason'] = text
    doc['invalid'] = dict(doc['invalid'], message=text, output_tail=text + '\n' + text)
    doc['submission'] = dict(doc['submission'], id=load.safe_id(text or 'x'))
    doc['checks'] = [{
        'id': 'step23/api', 'step': STEP, 'title': 'API', 'tier': 'book', 'category': 'api',
        'status': 'error', 'points': 1.0, 'earned': 0.0, 'regression': False, 'message': text,
        'hint': text, 'repro': text, 'faults': [], 'duration_s': 0.1,
        'evidence': {'findings': [{'case': text, 'status': 'error', 'message': text,
                                   'evidence': {'exception': text, 'where': text, 'found': text,
                                                'graph': {'variables': [{'label': text, 'name': text,
                                                                         'shape': [2], 'dtype': text}],
                                                          'nodes': [{'type': text, 'generation': 0,
                                                                     'inputs': [0], 'outputs': [0],
                                                                     'divergent': True}]}}}]}}]
    return doc


_VERDICT_LINE = re.compile(r'(\x1b\[[0-9;]*m)?(ACCEPT|ROLLBACK|REJECT|INCOMPLETE|INVALID)\b')


def _terminal_lines_are_ours(text, doc):
    """Every line starts as the grader starts it: the header, the verdict, or indented; exactly
    one verdict line."""
    lines = text.splitlines()
    assert lines[0].startswith('dezero-grade · step ')
    assert sum(bool(_VERDICT_LINE.match(line)) for line in lines) == 1
    for line in lines[1:]:
        assert _VERDICT_LINE.match(line) or line == '' or line.startswith((' ', '✗', '·')), line
    assert not re.search('[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069'
                         '\ud800-\udfff]', text.replace('\x1b[', ''))
    text.encode('utf-8')


class _Tags(html.parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.tags = []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, tuple(sorted(k for k, _ in attrs))))


def _tags(page):
    parser = _Tags()
    parser.feed(page)
    return parser.tags


@given(LEARNER_TEXT)
@settings(max_examples=fuzzing.examples(0.8))
def test_learner_text_is_shown_by_every_renderer_and_obeyed_by_none(base_card, text):
    doc = _with_text(base_card, text)
    plain = _with_text(base_card, 'plain')
    assert schema.errors('scorecard', doc) == []
    # terminal: the report, in colour, and a batch's progress line
    for colour in (False, True):
        _terminal_lines_are_ours(terminal.render(doc, colour=colour), doc)
    sink = io.StringIO()
    Progress(1, 0, sink).update(text, 'invalid ' + text)
    assert len(sink.getvalue().splitlines()) == 1 and sink.getvalue().startswith('[1/1] ')
    with tempfile.TemporaryDirectory(prefix='fuzz-render-') as out:
        out = Path(out)
        # HTML: no element or attribute that plain text does not give (an empty text leaves
        # some out), and no more of them
        html_page.write_report(out / 'r.html', doc)
        html_page.write_report(out / 'p.html', plain)
        mine, theirs = (_tags((out / name).read_text(encoding='utf-8')) for name in ('r.html', 'p.html'))
        assert set(mine) <= set(theirs) and len(mine) <= len(theirs)
        # DOT: one label per node, ids and attributes ours
        dot = graph_dot.to_dot(doc['checks'][0]['evidence']['findings'][0]['evidence']['graph'], text)
        assert len(re.findall(r'^  [vf]\d+ \[label="', dot, re.M)) == 2
        assert dot.count('\n') == graph_dot.to_dot(
            plain['checks'][0]['evidence']['findings'][0]['evidence']['graph'], 'plain').count('\n')
        # JUnit XML and the Canvas CSV: written, read back, and checked by their exporters
        person = (text.replace('\n', ' ').replace('\r', ' ').replace('"', '""').strip()
                  or 'somebody')
        roster = roster_mod.parse_csv('Student,ID,Section,Submission\n"{}",1001,"{}",s\n'.format(
            person, person))
        graded = Graded((Submission('s', doc),), None, None, None)
        junit.export(graded, out / 'j.xml')
        ET.parse(out / 'j.xml')
        canvas.export(graded, out / 'c.csv', roster, name=person)
        rows = list(csv.reader(io.StringIO((out / 'c.csv').read_text(encoding='utf-8'))))
        assert not any(cell.startswith(('=', '+', '-', '@', '\t', '\r'))
                       for row in rows for cell in row if not _number(cell))
        # Gradescope JSON: valid, and its report holds the same lines as the terminal's
        results = gradescope.results(doc)
        assert schema.errors('gradescope-results', results) == []
        schema.write_json(out / 'g.json', results, gradescope.SCHEMA)
        assert json.loads((out / 'g.json').read_text(encoding='utf-8')) == results


def _number(cell: str) -> bool:
    try:
        float(cell)
    except ValueError:
        return False
    return True
