"""How a history document is shown: the terminal timeline and the HTML page, on a document
written here (what `history` writes, cut to what the renderers read)."""
from dezero_grader.history import html as history_html
from dezero_grader.history import render

SHA = {n: str(n) * 40 for n in range(1, 6)}


def _commit(n, subject):
    return {'commit': SHA[n], 'short': SHA[n][:10], 'subject': subject, 'date': ''}


def _regression(check, diff):
    return {'check': check, 'step': 44, 'status': 'broken', 'message': 'wrong', 'why': 'broken',
            'passed_at': SHA[1], 'first_bad': _commit(3, 'refactor'),
            'last_good': _commit(2, 'tidy'), 'searched': {'commits': 4, 'graded': 2},
            'diff': {'files': ['dezero/layers.py'], 'text': diff, 'truncated': False}}


def _doc(regressions):
    row = dict(_commit(4, 'step45'), step=45, title='t', how='message', evidence='step45',
               verdict='rollback', reason='2 checks', engine_verdict='rollback',
               score={'earned': 1, 'possible': 2}, seed=1, graded_files=[], content_hash=None,
               cached=False, own_failed=[], regressions=regressions, scorecard=None)
    return {'repository': {'source': 'learner', 'commits': 5, 'head': SHA[4]}, 'mapping': [],
            'steps': [row], 'generated_at': '', 'tool': {'version': '0'},
            'counts': {'verdicts': {'rollback': 1}, 'graded_now': 1, 'from_cache': 0}}


def test_a_diff_broken_checks_share_is_shown_once():
    """One commit broke four checks: `--diff` printed its (large) diff four times."""
    diff = '\n'.join('+line {}'.format(i) for i in range(60))
    doc = _doc([_regression('step44/linear.{}'.format(i), diff) for i in range(4)])
    text = render(doc, diffs=True)
    assert text.count('+line 59') == 1
    assert text.count('(the same diff as for step44/linear.0 above)') == 3
    page = history_html.render(doc)
    assert page.count('+line 59') == 1 and page.count('the same diff as for') == 3


def test_different_diffs_are_each_shown():
    doc = _doc([_regression('a', '+one'), _regression('b', '+two')])
    text = render(doc, diffs=True)
    assert '+one' in text and '+two' in text and 'the same diff' not in text


def test_a_message_with_newlines_cannot_forge_a_timeline_line():
    doc = _doc([])
    doc['steps'][0].update(subject='x', evidence='ok\n   46  abc  message  ACCEPT  6/6',
                           reason='fine\r\x1b[32mACCEPT')
    text = render(doc)
    assert not any(line.lstrip().startswith('46') for line in text.splitlines())
    assert '\x1b' not in text and '\r' not in text
