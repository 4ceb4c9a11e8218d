"""The terminal report: a finished scorecard rendered for a person, verdict first.

Reads the scorecard only, as records (`dezero_grader.scoring.scorecard_read.Scorecard`), and never recomputes anything:
verdict and score, the reason,
the root causes the diagnosis found (each with the checks it explains), then each failing check
with its message, the key evidence, the hint, the root cause it belongs to and how to reproduce
it. The checks of a cause that is one error of the code are listed once, not block by block.
"""
from __future__ import annotations

import html
import json
import os
import re

from dezero_grader import i18n
from dezero_grader.grading import repro_snippets
from dezero_grader.grading.repro_snippets import IN_YOUR_FOLDER
from dezero_grader.grading.diagnose import cause_of as _cause_of
from dezero_grader.i18n import N_
from dezero_grader.i18n.assignment_text import HINT, assignment_text, fault_context
from dezero_grader.scoring.scorecard_read import CheckRecord, Scorecard

_COLOURS = {'accept': '32', 'rollback': '33', 'reject': '31', 'incomplete': '36', 'invalid': '35'}


# what a terminal would obey rather than show: C0 and C1 controls (escape sequences, carriage
# returns, backspaces), the line and paragraph separators and the bidirectional overrides; and
# what no encoding can write (lone surrogates); a tab and (in multi-line text) a newline are
# shown as they are
_CONTROLS = re.compile('[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069'
                       '\ud800-\udfff]')
_CONTROLS_AND_NEWLINE = re.compile('[\x00-\x08\x0a-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e'
                                   '\u2066-\u2069\ud800-\udfff]')
_NAMED = {'\n': '\\n', '\r': '\\r'}


def printable(text: str, lines: bool = True) -> str:
    """`text` (a learner's message, a file name) as a terminal shows it and obeys nothing of it:
    every control character written as an escape (`\\x1b`, `\\r`), newlines too (`\\n`) unless
    `lines`, and a lone surrogate as its escape (`\\udc80`)."""
    pattern = _CONTROLS if lines else _CONTROLS_AND_NEWLINE
    return pattern.sub(lambda m: _NAMED.get(m.group()) or ('\\x{:02x}'.format(ord(m.group()))
                       if ord(m.group()) < 256 else '\\u{:04x}'.format(ord(m.group()))), text)


def html_text(value) -> str:
    """`value` as HTML shows it and obeys nothing of it: escaped, control characters written as
    escapes (the HTML report's and the graph drawing's one escape)."""
    return html.escape(printable(str(value)), quote=True)


def printable_tree(value, lines: bool = True):
    """A document with every string in it made printable (dict keys too); newlines escaped too
    unless `lines`."""
    if isinstance(value, str):
        return printable(value, lines)
    if isinstance(value, dict):
        return {printable(k, lines) if isinstance(k, str) else k: printable_tree(v, lines)
                for k, v in value.items()}
    if isinstance(value, list):
        return [printable_tree(v, lines) for v in value]
    return value


def _colour(text, code, enabled):
    return '\033[{}m{}\033[0m'.format(code, text) if enabled else text


def use_colour(stream) -> bool:
    return stream.isatty() and os.environ.get('NO_COLOR') is None and os.environ.get('TERM') != 'dumb'


def _fmt(x):
    if isinstance(x, float):
        return '{:g}'.format(x)
    return str(x)


# evidence of an exception that the finding's message usually spells out already
_SAID_IN_MESSAGE = ('where', 'raised', 'exception', 'exception_message')


def _evidence_labels(tr):
    """The names of the evidence a failing check shows, in the order shown."""
    return {'found': tr.pgettext('evidence', 'found'),
            'expected': tr.pgettext('evidence', 'expected'),
            'max_abs_error': tr.pgettext('evidence', 'max abs error'),
            'max_rel_error': tr.pgettext('evidence', 'max rel error'),
            'worst_index': tr.pgettext('evidence', 'worst index'),
            'found_at_worst': tr.pgettext('evidence', 'found at worst'),
            'expected_at_worst': tr.pgettext('evidence', 'expected at worst'),
            'pattern': tr.pgettext('evidence', 'pattern'),
            'exception': tr.pgettext('evidence', 'exception'),
            'where': tr.pgettext('evidence', 'where'),
            'raised': tr.pgettext('evidence', 'raised'),
            'exception_message': tr.pgettext('evidence', 'exception message'),
            'first_mismatch': tr.pgettext('evidence', 'first mismatch'),
            'missing': tr.pgettext('evidence', 'missing')}


def _key_evidence(check: CheckRecord, tr=None):
    """The few lines of evidence that matter most for a failing check (`tr`: the language's
    translator, None: English)."""
    labels = _evidence_labels(tr or i18n.translator())
    lines = []
    for f in check.failing_findings:
        ev = f.get('evidence', {})
        parts = []
        for key, label in labels.items():
            if key in ev:
                value = ev[key]
                text = json.dumps(value, ensure_ascii=False) if not isinstance(value, str) else value
                if key in _SAID_IN_MESSAGE and text in f['message']:
                    continue   # "raised TypeError: ... at dezero/core.py:41" says it already
                if len(text) > 160:
                    text = text[:157] + '...'
                parts.append('{}: {}'.format(label, text))
        lines.append((f['message'], parts))
    return lines


key_evidence = _key_evidence   # the HTML report shows the same lines


def _verdicts(tr):
    """The verdicts as the report's first word shows them."""
    return {'accept': tr.gettext('ACCEPT'), 'rollback': tr.gettext('ROLLBACK'),
            'reject': tr.gettext('REJECT'), 'incomplete': tr.gettext('INCOMPLETE'),
            'invalid': tr.gettext('INVALID')}


def _statuses(tr):
    """A check's status as the counts of the checks line name it."""
    return {'passed': tr.pgettext('check status', 'passed'),
            'failed': tr.pgettext('check status', 'failed'),
            'error': tr.pgettext('check status', 'error'),
            'skipped': tr.pgettext('check status', 'skipped'),
            'timeout': tr.pgettext('check status', 'timeout'),
            'not_applicable': tr.pgettext('check status', 'not_applicable')}


def _adjustment_kinds(tr):
    return {'rollback': tr.pgettext('score adjustment', 'rollback'),
            'late': tr.pgettext('score adjustment', 'late')}


def _adjustment_line(tr, adj) -> str:
    kind = _adjustment_kinds(tr).get(adj.kind, adj.kind)
    if adj.points:
        line = tr.gettext('{kind} {points} points: {reason}').format(
            kind=kind, points=_fmt(adj.points), reason=adj.reason)
    elif adj.kind == 'rollback':   # its reason says why (on time within the grace, or nothing left to take)
        line = tr.gettext('{kind} (no points were left to take): {reason}').format(
            kind=kind, reason=adj.reason)
    else:
        line = tr.gettext('{kind}: {reason}').format(kind=kind, reason=adj.reason)
    return '  ' + line + (' ({})'.format(', '.join(adj.checks)) if adj.checks else '')


def _score_line(tr, card, colour) -> str:
    sc = card.score
    verdict = _colour(_verdicts(tr)[card.verdict], _COLOURS[card.verdict], colour)
    if sc.extension_possible:
        score = tr.gettext('score {earned}/{possible} (extension {extension_earned}/'
                           '{extension_possible})').format(
            earned=_fmt(sc.earned), possible=_fmt(sc.possible),
            extension_earned=_fmt(sc.extension_earned),
            extension_possible=_fmt(sc.extension_possible))
    else:
        score = tr.gettext('score {earned}/{possible}').format(earned=_fmt(sc.earned),
                                                               possible=_fmt(sc.possible))
    seconds = tr.gettext('{seconds} s').format(seconds='{:.1f}'.format(card.duration_s))
    return '{}  {}  {}'.format(verdict, score, seconds)


def render(doc, colour=False, verbose=False, submission=None, withheld=False, lang=None) -> str:
    """The report of a scorecard. `submission`: the path the code was graded from, as the user
    gave it to `check`; None where the scorecard is read away from the code (an export,
    Gradescope), and the commands it prints are then run in the folder that holds the code.
    `withheld`: the document holds only the checks a learner may see yet, so the verdict, its
    reason and the score (which count the others) are not shown. `lang`: the language of the
    report (`dezero_grader.i18n.LANGUAGES`); None: the one the scorecard was graded in, else
    English. The report's own words are translated, and the step's and the checks' titles and
    the faults' titles and hints (the assignments' catalogue); the scorecard's other text
    (messages, the checks' hints) and every identifier stay as they are."""
    language = lang or doc.get('language') or i18n.DEFAULT
    tr = i18n.translator(language)
    # learner text is shown, never obeyed; only our colours are codes. Every text is one line
    # (its newlines escaped), so that no message can start a line of its own (a forged verdict
    # line); only what the code printed keeps its lines, each indented under its heading
    card = Scorecard.from_document(printable_tree(doc, lines=False))
    out = []
    env = card.environment
    out.append(tr.gettext('dezero-grade · step {step} {title} · {submission} ({content_hash}) · '
                          'device {device} · seed {seed} · profile {profile} · era {era} · '
                          'sandbox {sandbox}').format(
        step=card.step, title=assignment_text(language, 'step{:02d}'.format(card.step), card.title),
        submission=card.submission_id,
        content_hash=card.content_hash[:19], device=env['device_mode'], seed=card.seed,
        profile=card.profile, era=card.era, sandbox=env['sandbox']))
    head = len(out)
    out.append(_score_line(tr, card, colour))
    out.append('  ' + card.reason)
    out.extend(_adjustment_line(tr, adj) for adj in card.score.adjustments)
    if withheld:   # they count the checks this document leaves out
        del out[head:]
        out.append(tr.gettext('verdict and score: shown once every test is (some are not shown '
                              'yet)'))
    out.extend(_compatibility(tr, card))
    out.extend(_notebooks(tr, card))
    if card.is_invalid:
        inv = card.invalid
        out.append('  [{}]'.format(inv.code if inv else ''))
        tail = printable(str(doc.get('invalid', {}).get('output_tail') or ''), lines=True).strip()
        if tail:
            out.append('  ' + tr.gettext('what your code printed last:'))
            out.extend('    ' + l for l in tail.splitlines()[-12:])
        return '\n'.join(out) + '\n'

    checks, failing = card.checks, card.counted_failing
    advice = card.advice_failing
    out.append('  ' + tr.gettext('checks: {checks}').format(checks=checks_line(card, tr)))
    diagnosis = card.diagnosis
    out.extend(_diagnosis(tr, diagnosis, failing, colour, language=language))
    shown_once = _same_error_checks(diagnosis, card.failing, verbose)
    folded = [c for c in failing if c.id in shown_once]
    for c in failing:
        if c.id not in shown_once:
            out.extend(_check_block(tr, card, c, diagnosis, colour, verbose, submission,
                                    language=language))
    if folded:
        out.append('')
        out.append(_folded_line(tr, diagnosis, folded, _colour('✗', '31', colour)))
    unjudged = card.unjudged
    if unjudged and not verbose:
        out.append('')
        out.append('· ' + tr.gettext('not judged here, so earning nothing ({count}): {checks}').format(
            count=len(unjudged), checks=', '.join(c.id for c in unjudged[:6])
            + (', ...' if len(unjudged) > 6 else '')))
        out.append('    ' + unjudged[0].message)
    if advice:
        out.extend(_advice(tr, card, advice, diagnosis, colour, verbose, submission, shown_once,
                           language))
    if any(c.repro for c in card.failing):
        out.append('')
        if submission is not None:
            out.append('· ' + tr.gettext('each failing check runs alone against your code: add '
                                         '--repro-dir DIR, then python DIR/repro_<check>.py'))
        else:
            out.append('· ' + tr.gettext('each failing check runs alone against your code '
                                         '{where}: {command} --repro-dir repros, then python '
                                         'repros/repro_<check>.py').format(
                where=tr.gettext(IN_YOUR_FOLDER), command=_command(card, None, None)))
    if verbose:
        out.append('')
        for c in checks:
            if not c.failing and not c.regression:
                out.append('  {} {} — {}'.format('✓' if c.status == 'passed' else '·', c.id,
                                                  c.message))
        for step, group in regression_by_step(checks):
            passing = [c for c in group if not c.failing]
            if passing:
                out.append('  ✓ ' + tr.ngettext(
                    'step {step} (regression): {count} check passes: {checks}',
                    'step {step} (regression): {count} checks pass: {checks}',
                    len(passing)).format(step=step, count=len(passing), checks=', '.join(
                        c.id.split('/', 1)[-1] for c in passing)))
    return '\n'.join(out) + '\n'


def regression_by_step(checks):
    """[(step, [regression checks of that step])], earliest step first."""
    groups = {}
    for c in checks:
        if c.regression:
            groups.setdefault(c.step, []).append(c)
    return sorted(groups.items())


def step_span(steps) -> str:
    """'23-49' (or '38') for the steps of some regression checks: the earlier steps whose
    contracts a grading re-ran (a step without code of its own has no checks, so it is not
    among them, but between them)."""
    steps = sorted(set(steps))
    return str(steps[0]) if steps[0] == steps[-1] else '{}-{}'.format(steps[0], steps[-1])


ADVICE_HEAD = N_('advice: not counted')
ADVICE_WHY = N_('checks beyond the book (extension tier) that this grading does not count: they '
                'never change the verdict or the score')


def checks_line(card: Scorecard, tr=None) -> str:
    """How the checks went: those that count first ("all N counted pass" when every one of them
    passed), then the advice checks, apart. `tr`: the language's translator (None: English)."""
    tr = tr or i18n.translator()
    statuses = _statuses(tr)

    def counts(records):
        n = {}
        for c in records:
            n[c.status] = n.get(c.status, 0) + 1
        return ', '.join(tr.gettext('{count} {status}').format(count=k, status=statuses.get(s, s))
                         for s, k in sorted(n.items()))
    counted = [c for c in card.checks if card.counts(c)]
    advice = [c for c in card.checks if not card.counts(c)]
    if counted and all(c.status == 'passed' for c in counted):
        line = tr.gettext('all {count} counted pass').format(count=len(counted))
    else:
        line = tr.gettext('{counts} (counted)').format(counts=counts(counted)) if advice \
            else counts(counted)
    regression = [c for c in counted if c.regression]
    if regression:   # how many re-ran earlier steps' contracts, and which steps
        line += '; ' + tr.ngettext(
            '{count} of them re-run the contracts of step {steps} (regression)',
            '{count} of them re-run the contracts of steps {steps} (regression)',
            len({c.step for c in regression})).format(
            count=len(regression), steps=step_span(c.step for c in regression))
    if advice:
        line += '; ' + tr.gettext('advice, not counted: {counts}').format(counts=counts(advice))
    return line


def _check_block(tr, card, c, diagnosis, colour, verbose, submission, is_advice=False,
                 language=i18n.DEFAULT):
    """The lines of one failing check: a ✗ where it counts, a plain mark where it is advice;
    its title in the report's `language` (the assignment's catalogue, by the check's id)."""
    out = ['']
    if c.regression:
        tag = (tr.gettext('regression, step {step}, not counted') if is_advice
               else tr.gettext('regression, step {step}')).format(step=c.step)
    else:
        tag = (tr.gettext('{points} pts, not counted') if is_advice
               else tr.gettext('{points} pts')).format(points=_fmt(c.points))
    mark = '·' if is_advice else _colour('✗', '31', colour)
    out.append('{} {} [{}, {}, {}] {}'.format(mark, c.id, c.tier, c.category, tag,
                                              assignment_text(language, c.id, c.title)))
    out.append('    ' + c.message)
    for message, parts in _key_evidence(c, tr)[:4 if not verbose else None]:
        if message != c.message.split(' (and ')[0]:
            out.append('    · ' + message)
        for p in parts[:6]:
            out.append('        ' + p)
    if c.hint:
        out.append('    ' + tr.gettext('hint: {hint}').format(hint=c.hint))
    cause = _cause_of(diagnosis, c.id)
    if cause is not None and cause['kind'] == 'fault':
        out.append('    ' + tr.gettext('root cause {rank}: {fault}').format(
            rank=cause['rank'], fault=_cause_name(tr, cause, language)))
    elif cause is not None:
        out.append('    ' + tr.ngettext('root cause {rank} (above): {count} check fails this way',
                                        'root cause {rank} (above): {count} checks fail this way',
                                        len(cause['checks'])).format(
            rank=cause['rank'], count=len(cause['checks'])))
    elif diagnosis is None:   # a scorecard written before the diagnosis existed
        for f in c.faults[:1]:
            out.append('    ' + tr.gettext('looks like: {fault} — {title}').format(
                fault=f['id'], title=_fault_title(language, f)))
    else:
        out.append('    ' + tr.gettext('root cause: no catalogued fault matches'))
    if c.repro:
        out.append('    ' + reproduce_line(card, c.id, submission, tr))
    return out


def _folded_line(tr, diagnosis, folded, mark):
    ranks = sorted({_cause_of(diagnosis, c.id)['rank'] for c in folded})
    return '{} {}'.format(mark, tr.ngettext(
        '{count} more check fails the same way (root cause {ranks}, listed above); --verbose '
        'shows each',
        '{count} more checks fail the same way (root cause {ranks}, listed above); --verbose '
        'shows each', len(folded)).format(count=len(folded), ranks=', '.join(map(str, ranks))))


def _advice(tr, card, advice, diagnosis, colour, verbose, submission, shown_once,
            language=i18n.DEFAULT):
    """The advice section: failing checks that do not count, their causes, after all that does."""
    out = ['', tr.ngettext('{heading} ({count} check fails): {why}',
                           '{heading} ({count} checks fail): {why}', len(advice)).format(
        heading=_colour(tr.gettext(ADVICE_HEAD), '1', colour), count=len(advice),
        why=tr.gettext(ADVICE_WHY))]
    out.extend(_causes_lines(tr, [c for c in (diagnosis or {}).get('causes', ())
                                  if c.get('advice')],
                             (diagnosis or {}).get('unexplained_advice', ()), 96, language))
    folded = [c for c in advice if c.id in shown_once]
    for c in advice:
        if c.id not in shown_once:
            out.extend(_check_block(tr, card, c, diagnosis, colour, verbose, submission, True,
                                    language=language))
    if folded:
        out.append('')
        out.append(_folded_line(tr, diagnosis, folded, '·'))
    return out


def reproduce_line(card: Scorecard, check_id, submission=None, tr=None) -> str:
    """`reproduce: COMMAND` for one failing check; where the code's path is not known, it says
    the command runs in the folder that holds the code. `tr` as for `checks_line`."""
    tr = tr or i18n.translator()
    command = _command(card, check_id, submission)
    if submission is not None:
        return tr.gettext('reproduce: {command}').format(command=command)
    return tr.gettext('reproduce ({where}): {command}').format(where=tr.gettext(IN_YOUR_FOLDER),
                                                               command=command)


def _command(card: Scorecard, check_id, submission) -> str:
    """The command that grades `check_id` (None: every check) of `card` again."""
    return printable(repro_snippets.check_command(card.step, card.seed, check_id, submission,
                                         device_mode=card.environment.get('device_mode', 'sim'),
                                         era=card.era), lines=False)


def _either(tr, names):
    """`a or b or c`, in the report's language."""
    text = names[0]
    for name in names[1:]:
        text = tr.gettext('{one} or {other}').format(one=text, other=name)
    return text


def _cause_name(tr, cause, language=i18n.DEFAULT):
    return '{} — {}'.format(_either(tr, [f['id'] for f in cause['faults']]),
                            _fault_title(language, cause['faults'][0]))


def _fault_title(language, fault):
    """A fault's title in the report's `language` (the assignments' catalogue, by its id)."""
    return assignment_text(language, fault_context(fault['id']), fault['title'])


def _fault_hint(language, fault):
    """A fault's hint in `language`; one that is only code has no entry and stays as it is."""
    return assignment_text(language, fault_context(fault['id']) + HINT, fault['hint'])


def _diagnosis(tr, diagnosis, failing, colour, width=96, language=i18n.DEFAULT):
    """The root causes of the failing checks that count, most likely first, each with the checks
    it explains: read this before the checks one by one (the causes of advice have their own
    section, after)."""
    if not diagnosis or not failing:
        return []
    out = ['', tr.gettext('{heading} (most likely first; the checks each explains):').format(
        heading=_colour(tr.gettext('root causes'), '1', colour))]
    out.extend(_causes_lines(tr, [c for c in diagnosis['causes'] if not c.get('advice')],
                             diagnosis['unexplained'], width, language))
    if not diagnosis.get('fingerprints'):
        out.append('  ' + tr.gettext('(no fault fingerprints for this step: only shared errors '
                                     'are grouped)'))
    return out


def _cause_summary(tr, cause, language):
    """A root cause's one line. English: the scorecard's own; another language: a catalogued
    fault's line said again in it, with the fault's title from the assignments' catalogue (a
    cause that is the learner's own error keeps the scorecard's line, which quotes that error)."""
    if language == i18n.DEFAULT or cause['kind'] != 'fault' or not cause.get('faults'):
        return cause['summary']
    head = _either(tr, [_fault_title(language, f) for f in cause['faults']])
    count = len(cause['checks'])
    return tr.ngettext('{cause}: {count} check fails because of it',
                       '{cause}: {count} checks fail because of it', count).format(
        cause=head, count=count)


def _causes_lines(tr, causes, unexplained, width, language=i18n.DEFAULT):
    out = []
    for cause in causes:
        out.append('  {}. {}'.format(cause['rank'], _cause_summary(tr, cause, language)))
        if cause['kind'] == 'fault' and len(cause['faults']) > 1:
            out.append('     ' + tr.gettext('(faults {faults}: what failed cannot tell them '
                                            'apart)').format(
                faults=', '.join(f['id'] for f in cause['faults'])))
        elif cause['kind'] == 'fault':
            out.append('     ' + tr.gettext('(fault {fault})').format(
                fault=cause['faults'][0]['id']))
        out.extend(_wrapped('     {} '.format(tr.gettext('checks:')), cause['checks'], width))
        error = cause.get('error')
        if cause['kind'] == 'fault' and error and not error.get('names'):
            if error.get('where'):
                raised = tr.gettext('your code raised {exception}: {message} at {where}').format(
                    exception=error['type'], message=error['message'], where=error['where'])
            else:
                raised = tr.gettext('your code raised {exception}: {message}').format(
                    exception=error['type'], message=error['message'])
            out.append('     ' + raised)
        if cause['kind'] == 'fault' and cause['faults'][0]['hint']:
            out.append('     ' + tr.gettext('hint: {hint}').format(
                hint=_fault_hint(language, cause['faults'][0])))
        elif error and error.get('hint'):
            out.append('     ' + tr.gettext('hint: {hint}').format(hint=error['hint']))
        if error and error.get('places'):
            out.extend(_wrapped('     {} '.format(tr.gettext('raised at:')), error['places'],
                                width))
    if unexplained:
        out.extend(_wrapped('  {} '.format(tr.gettext('no catalogued fault matches:')),
                            list(unexplained), width))
    return out


def _wrapped(head, items, width):
    lines, line = [], head
    for i, item in enumerate(items):
        piece = item + (', ' if i < len(items) - 1 else '')
        if len(line) + len(piece) > width and line.strip() != head.strip():
            lines.append(line.rstrip())
            line = ' ' * len(head)
        line += piece
    lines.append(line.rstrip())
    return lines


def _same_error_checks(diagnosis, failing, verbose):
    """Checks that need no block of their own: those of a cause that is one error of the code (or
    names it lacks), but one whose block shows the error (the first that raised it)."""
    if verbose or not diagnosis:
        return set()
    status = {c.id: c.status for c in failing}
    by_id = {c.id: c for c in failing}
    out = set()
    for cause in diagnosis['causes']:
        if cause['kind'] == 'error':
            same = list(cause['checks'])
        else:   # a fault's checks that show nothing but the code's error the cause names
            same = [c for c in cause['checks'] if c in by_id and cause.get('error')
                    and _only_error(by_id[c], cause['error'])]
        if len(same) > 1:
            shown = next((c for c in same if status.get(c) == 'error'), same[0])
            out.update(c for c in same if c != shown)
    return out


def _only_error(check: CheckRecord, error):
    """Whether every failing finding of a check reports `error` (same type, same place or text)."""
    findings = check.failing_findings
    for f in findings:
        ev = f.get('evidence') or {}
        if (ev.get('exception') or ev.get('raised')) != error['type']:
            return False
        if not ((error['where'] and ev.get('where') == error['where'])
                or (error['message'] and error['message'] in f['message'])):
            return False
    return bool(findings)


def _notebooks(tr, card: Scorecard, limit=12):
    """Which notebooks the graded code came from, and the lines of them that were not run."""
    nb = card.notebook
    if not nb:
        return []
    out = ['', tr.gettext('notebooks: graded the code cells of {notebooks} (places below are '
                          'cells and lines of the notebook)').format(
        notebooks=', '.join(nb['notebooks']))]
    if nb['not_run']:
        out.append('  ' + tr.gettext('not run by the grader (each stands as `pass`):'))
    for item in nb['not_run'][:limit]:
        out.append('  - {}: {} ({})'.format(item['where'], item['line'], item['why']))
    if len(nb['not_run']) > limit:
        out.append('  ' + _more_in_scorecard(tr, len(nb['not_run']) - limit))
    return out


def _more_in_scorecard(tr, count):
    return tr.gettext('... and {count} more in the scorecard (--json)').format(count=count)


def _compatibility(tr, card: Scorecard, limit=12):
    """The drifts of the environment the code met: listed right under the verdict, since they
    are what breaks first when the code leaves the book's 2020 stack."""
    found = card.compatibility
    if not found:
        return []
    out = ['', '{} {}'.format(
        tr.gettext('compatibility findings: graded in the book\'s 2020 environment (not '
                   'failures; they never change the verdict).'),
        tr.gettext('On today\'s NumPy/CuPy (--era current) these break; an import of a module '
                   'this machine lacks counts only where it is used:'))]
    for f in found[:limit]:
        line = tr.gettext('{api} at {where}: {message}').format(api=f.api, where=f.where,
                                                                message=f.message)
        out.append('  ! {}{}'.format(line, ' ({})'.format(f.since) if f.since else ''))
        if f.fix:
            out.append('      ' + tr.gettext('fix: {fix}').format(fix=f.fix))
    if len(found) > limit:
        out.append('  ' + _more_in_scorecard(tr, len(found) - limit))
    return out
