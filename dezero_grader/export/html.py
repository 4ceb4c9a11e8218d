"""HTML: a batch → a class page (`index.html`) and one report page per scorecard; a single
scorecard → one report page. Format only: the pages are drawn by `dezero_grader.present.html_page` from the
finished scorecards and the batch summary."""
from __future__ import annotations

from pathlib import Path

from dezero_grader.export import ExportError, Written, no_scorecard
from dezero_grader.present import html_page


def export(graded, out) -> Written:
    """`out` is the page for a single scorecard, the folder of the class page for a batch."""
    out = Path(out)
    try:
        if graded.summary is None:
            return Written((html_page.write_report(out, graded.submissions[0].scorecard),),
                           rows=1, unit='page')
        if out.exists() and not out.is_dir():
            raise ExportError('{} is a file; the class page of a batch needs a folder'.format(out))
        docs = {s.id: s.scorecard for s in graded.submissions}
        paths = html_page.write_class(out, graded.summary, docs)
    except OSError as e:
        raise ExportError('cannot write the HTML pages to {}: {}'.format(
            out, e.strerror or e)) from None
    # the class page lists them among what could not be graded; they have no page of their own
    return Written(paths, (), len(paths) - 1, 'submission page', tuple(no_scorecard(graded)))
