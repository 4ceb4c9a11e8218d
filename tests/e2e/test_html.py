"""End to end: the HTML report of `check --html` and the class page of `export --format html`
on a small graded class of step 43 (accepted, a fault that makes a gradient diverge, and an
invalid submission that prints markup), read back as documents and opened in a real headless
browser (Chromium) where one is installed: what the learner sees is what the DOM holds.
"""
import json
import os
import re
import shutil
from html.parser import HTMLParser
from pathlib import Path

import pytest

from dezero_grader.export import gradescope
from dezero_grader.intake import load
from dezero_grader.proof import selftest
from dezero_grader.records import schema
from dezero_grader.records.status import FAILING
from grade_cli import dezero_grade, run_to_end

ROOT = Path(__file__).resolve().parents[2]
STEP = 43
FAULT = 'sigmoid-grad-uses-input'
HOSTILE = '<script>document.title="owned"</script><img src="http://example.invalid/x.png">'
CHROMIUM = next((p for p in (shutil.which('chromium'), shutil.which('chromium-browser'),
                             shutil.which('google-chrome')) if p), None)
# skipped on a machine without Chromium; in CI (which installs it) its absence is a failure
needs_browser = pytest.mark.skipif(CHROMIUM is None and os.environ.get('CI') != 'true',
                                   reason='no Chromium installed (.ci/run installs the '
                                          'distribution\'s chromium package)')


def _cli(*args, check=True):
    return dezero_grade(*args, expect=(0, 1) if check else None)


@pytest.fixture(scope='module')
def graded(tmp_path_factory):
    root = tmp_path_factory.mktemp('html')
    subs = root / 'submissions'
    # the variant as a learner would make it, with the command the learner guide names
    _cli('inject', selftest.reference_source(STEP), '--step', STEP, '--fault', FAULT,
         '--out', subs / 'sigmoid')
    base = load.prepare(selftest.reference_source(STEP), STEP, root / 'work')
    for ident in ('good', 'markup'):
        shutil.copytree(base.root, subs / ident)
    with open(subs / 'markup' / 'dezero' / '__init__.py', 'a') as f:
        f.write('\nprint({!r})\nraise ImportError({!r})\n'.format(HOSTILE, HOSTILE))
    out = root / 'out'
    _cli('batch', subs, '--step', STEP, '--out', out, '--jobs', 2)
    report = root / 'sigmoid.html'
    proc = _cli('check', subs / 'sigmoid', '--step', STEP, '--html', report,
                '--json', root / 'sigmoid.json')
    assert proc.returncode == 1 and 'html report: {}'.format(report) in proc.stdout
    return root, out, report


class _Elements(HTMLParser):
    """Every start tag with its attributes, and the text."""

    def __init__(self):
        super().__init__()
        self.tags, self.text = [], []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))

    def handle_data(self, data):
        self.text.append(data)


def _parse(markup):
    p = _Elements()
    p.feed(markup)
    return p


def _no_outside_loads(markup):
    """Nothing in the page can load anything: no script, no link, no src, no url(), and every
    link stays inside the folder (relative, no scheme)."""
    page = _parse(markup)
    assert not [t for t, _ in page.tags if t in ('script', 'link', 'iframe', 'object', 'embed',
                                                 'img', 'image', 'use')]
    assert not [a for _, a in page.tags if 'src' in a or any(k.startswith('on') for k in a)]
    for _, attrs in page.tags:
        href = attrs.get('href')
        assert href is None or not re.match(r'^[a-z][a-z0-9+.-]*:|^//', href), href
    assert 'url(' not in markup.replace('url(#arrow-', '')
    assert "default-src 'none'" in markup


def test_the_report_shows_verdict_failures_and_the_graph(graded):
    root, _, report = graded
    doc = json.loads((root / 'sigmoid.json').read_text())
    markup = report.read_text(encoding='utf-8')
    page = _parse(markup)
    verdict = [a for t, a in page.tags if a.get('class') == 'verdict']
    assert verdict and verdict[0]['data-verdict'] == doc['verdict'] == 'reject'
    failing = {a['data-check'] for t, a in page.tags if 'data-check' in a}
    assert failing == {c['id'] for c in doc['checks'] if c['status'] in FAILING}
    divergent = [a for t, a in page.tags if a.get('data-divergent') == 'true']
    assert len(divergent) == 1 and divergent[0]['class'] == 'fn divergent'
    # the node marked is the one the scorecard names, and the picture has every variable
    network = next(c for c in doc['checks'] if c['id'] == 'step43/network')
    ev = next(f['evidence'] for f in network['evidence']['findings'] if f['case'] == 'trajectory')
    assert int(divergent[0]['data-node']) == ev['divergent_node']
    assert ev['graph']['nodes'][ev['divergent_node']]['type'] == 'Sigmoid'
    assert sum(1 for t, a in page.tags if t == 'g' and 'data-var' in a) == \
        len(ev['graph']['variables'])
    # the root cause comes first, as the scorecard's diagnosis names it
    first = doc['diagnosis']['causes'][0]
    assert [f['id'] for f in first['faults']] == [FAULT]
    text = ''.join(page.text)
    assert text.index('root causes') < text.index('1. ' + first['summary']) < text.index(
        'failing checks')
    _no_outside_loads(markup)


def test_the_class_page_links_every_submission_and_counts_what_failed(graded):
    root, out, _ = graded
    proc = _cli('export', out, '--format', 'html', '--out', root / 'class')
    assert proc.returncode == 0, proc.stderr
    summary = json.loads((out / 'summary.json').read_text())
    index = (root / 'class' / 'index.html').read_text(encoding='utf-8')
    page = _parse(index)
    rows = [a['data-id'] for t, a in page.tags if a.get('class') == 'submission']
    assert rows == [s['id'] for s in summary['submissions']] == ['good', 'markup', 'sigmoid']
    links = [a['href'] for t, a in page.tags if t == 'a']
    for ident in rows:   # each row's page exists and is that submission's report
        assert ident + '.html' in links
        own = (root / 'class' / (ident + '.html')).read_text(encoding='utf-8')
        assert 'href="index.html"' in own and 'data-verdict="{}"'.format(
            next(s['verdict'] for s in summary['submissions'] if s['id'] == ident)) in own
        _no_outside_loads(own)
    assert any(t == 'svg' and a.get('id') == 'histogram' for t, a in page.tags)
    bars = [a for t, a in page.tags if a.get('class') == 'bin']
    assert len(bars) == len(summary['scores']['histogram'])
    assert len([a for t, a in page.tags if a.get('class') == 'check-rate']) == \
        len(summary['checks'])
    assert 'id="ungradable"' in index and 'import-error' in index
    causes = index[index.index('id="causes"'):]
    assert [f['id'] for f in summary['faults']] == [FAULT] and FAULT in causes
    _no_outside_loads(index)


def test_markup_from_a_learner_is_text(graded):
    root, out, _ = graded
    _cli('export', out, '--format', 'html', '--out', root / 'class')
    own = (root / 'class' / 'markup.html').read_text(encoding='utf-8')
    assert '<script' not in own and '<img' not in own
    assert '&lt;script&gt;document.title=' in own
    _no_outside_loads(own)


def test_an_unwritable_html_path_is_a_message(graded, tmp_path):
    root, out, _ = graded
    blocker = tmp_path / 'file'
    blocker.write_text('x')
    proc = _cli('check', out.parent / 'submissions' / 'good', '--step', STEP, '--only',
                'step43/sigmoid', '--html', blocker / 'report.html', check=False)
    assert proc.returncode == 2 and 'is a file, not a folder' in proc.stderr
    assert 'Traceback' not in proc.stderr
    proc = _cli('export', out, '--format', 'html', '--out', blocker, check=False)
    assert proc.returncode == 2 and 'that is a file, not a folder' in proc.stderr


def test_gradescope_gets_the_same_report_in_the_markdown_it_renders(graded):
    # Gradescope sanitises `html` output and styles none of it: the page rendered bare there.
    # Its `md` format renders the report as it reads on a terminal, and says how to draw the
    # graph on the learner's own machine
    root, _, _ = graded
    doc = json.loads((root / 'sigmoid.json').read_text())
    results = gradescope.results(doc, output_format='md')
    assert not schema.errors('gradescope-results', results)
    assert results['output_format'] == 'md'
    out = results['output']
    assert out.startswith('## REJECT · score ') and 'class=' not in out
    assert not [line for line in out.splitlines() if '<' in line and not line.startswith('    ')]
    body = [line for line in out.splitlines()[2:] if line.strip()]
    assert body[0].startswith('    dezero-grade · step 43')      # a code block: shown as is
    assert '--html report.html' in out
    assert results['tests'] == gradescope.results(doc)['tests']


# -- in a real browser ------------------------------------------------------------------------------
def _chromium(*args):
    assert CHROMIUM, 'CI must have Chromium for the HTML report tests: see .ci/run'
    return run_to_end([CHROMIUM, '--headless', '--no-sandbox', '--disable-gpu',
                       '--no-first-run', '--hide-scrollbars', *args], capture_output=True,
                      text=True)


@needs_browser
def test_the_browser_renders_the_report(graded, tmp_path):
    _, _, report = graded
    proc = _chromium('--dump-dom', report.resolve().as_uri())
    dom = proc.stdout
    assert proc.returncode == 0 and '<svg' in dom, proc.stderr[-2000:]
    page = _parse(dom)
    assert [a['data-verdict'] for t, a in page.tags if a.get('class') == 'verdict'] == ['reject']
    assert 'step43/network' in dom and 'step43/sigmoid' in dom
    assert len([a for t, a in page.tags if a.get('data-divergent') == 'true']) == 1
    _no_outside_loads(dom)
    shot = tmp_path / 'report.png'
    proc = _chromium('--window-size=1200,1600', '--screenshot={}'.format(shot),
                     report.resolve().as_uri())
    assert shot.read_bytes()[:8] == b'\x89PNG\r\n\x1a\n' and shot.stat().st_size > 20000


@needs_browser
def test_the_browser_shows_the_markup_as_text(graded, tmp_path):
    root, out, _ = graded
    _cli('export', out, '--format', 'html', '--out', root / 'class')
    proc = _chromium('--dump-dom', (root / 'class' / 'markup.html').resolve().as_uri())
    page = _parse(proc.stdout)
    # the title the learner's script would have set is not there, and the script is text
    assert '<title>owned</title>' not in proc.stdout
    assert not [t for t, _ in page.tags if t in ('script', 'img')]
    assert any('<script>document.title="owned"</script>' in t for t in page.text)
    proc = _chromium('--dump-dom', (root / 'class' / 'index.html').resolve().as_uri())
    assert 'id="histogram"' in proc.stdout and proc.stdout.count('class="submission"') == 3
