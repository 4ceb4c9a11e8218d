"""The reports in four languages: the catalogues whole (every message translated, with the same
placeholders, the committed compiled files and template what the sources give), the English
report byte for byte what it was before it went through the catalogues, and a Japanese, Chinese
or Korean report with no English line of the report's own left in it. Scorecards of real
gradings (tests/fixtures/i18n); no worker is started."""
import functools
import gettext
import json
import re
import string
from pathlib import Path

import pytest

pytest.importorskip('babel')

from dezero_grader import i18n   # noqa: E402
from dezero_grader.cli import build_parser   # noqa: E402
from dezero_grader.i18n import catalogues   # noqa: E402
from dezero_grader.present import terminal   # noqa: E402
from dezero_grader.records import schema   # noqa: E402
from dezero_grader.scoring import policy   # noqa: E402

FIXTURES = Path(__file__).resolve().parents[1] / 'fixtures' / 'i18n'
# each report case: the scorecard it renders and how (english.json holds what the code before the
# catalogues rendered of each: the same text is the proof that English did not change)
CASES = {
    'accept': ('accept', {}),
    'accept-verbose': ('accept', {'verbose': True}),
    'reject': ('reject', {'submission': 'mywork'}),
    'reject-away': ('reject', {}),
    'reject-verbose': ('reject', {'verbose': True, 'submission': 'mywork'}),
    'reject-withheld': ('reject', {'withheld': True}),
    'reject-undiagnosed': ('reject', {'diagnosis': None}),
    'rollback': ('rollback', {'submission': 'mywork'}),
    'rollback-verbose': ('rollback', {'verbose': True}),
    'invalid': ('invalid', {}),
    'mixed': ('mixed', {}),
    'mixed-verbose': ('mixed', {'verbose': True, 'submission': 'nb'}),
    'mixed-colour': ('mixed', {'colour': True}),
}
TRANSLATED = catalogues.TRANSLATED


def case(name):
    """(scorecard, render options) of a report case; 'diagnosis': None drops the diagnosis (a
    scorecard written before there was one)."""
    fixture, options = CASES[name]
    doc = json.loads((FIXTURES / (fixture + '.json')).read_text(encoding='utf-8'))
    options = dict(options)
    if 'diagnosis' in options:
        doc.pop('diagnosis', None)
        del options['diagnosis']
    return doc, options


def english():
    return json.loads((FIXTURES / 'english.json').read_text(encoding='utf-8'))


def forms(value):
    return [value] if isinstance(value, str) else list(value)


def placeholders(text):
    """The named fields of a message, each with its format spec and conversion, in order."""
    return sorted((name, spec, conv) for _, name, spec, conv in string.Formatter().parse(text)
                  if name is not None)


def words(text):
    """What of a message is words, the placeholders taken out."""
    return re.sub(r'\{[^{}]*\}', '', text)


@pytest.fixture(scope='module')
def template():
    return catalogues.read_po(catalogues.TEMPLATE)


# -- the catalogues are whole ---------------------------------------------------------------------

@pytest.mark.parametrize('lang', TRANSLATED)
def test_every_message_has_a_translation(lang, template):
    catalog = catalogues.read_po(catalogues.po_path(lang))
    assert catalogues.untranslated(catalog) == []
    ids = {(m.context, forms(m.id)[0]) for m in catalog if m.id}
    assert ids == {(m.context, forms(m.id)[0]) for m in template if m.id}
    for m in catalog:
        if m.id and re.search('[A-Za-z]', words(forms(m.id)[0])):   # words to translate
            assert forms(m.id)[0] not in forms(m.string), (lang, m.id)


@pytest.mark.parametrize('lang', TRANSLATED)
def test_a_translation_has_the_placeholders_of_its_message(lang):
    for m in catalogues.read_po(catalogues.po_path(lang)):
        if not m.id:
            continue
        for source in forms(m.id):   # a plural's forms have the same fields
            assert placeholders(source) == placeholders(forms(m.id)[0]), m.id
        for translated in forms(m.string):
            assert placeholders(translated) == placeholders(forms(m.id)[0]), (lang, m.id)


@pytest.mark.parametrize('lang', TRANSLATED)
def test_the_committed_mo_is_the_po_compiled(lang, tmp_path):
    source = catalogues.read_po(catalogues.po_path(lang))
    fresh = tmp_path / 'fresh.mo'
    fresh.write_bytes(catalogues.compiled(source))
    committed = catalogues.messages(catalogues.read_mo(catalogues.mo_path(lang)))
    assert committed == catalogues.messages(catalogues.read_mo(fresh))
    assert committed == catalogues.messages(source)
    # and the standard library, which reads it at run time, finds every message in it
    with open(catalogues.mo_path(lang), 'rb') as f:
        runtime = gettext.GNUTranslations(f)
    for m in source:
        if m.id and m.context is None and isinstance(m.id, str):
            assert runtime.gettext(m.id) == m.string


def test_the_template_is_what_the_code_holds(template):
    assert catalogues.entries(template) == catalogues.entries(_extracted()), (
        'run python -m dezero_grader.i18n.catalogues, then translate what it names')


@pytest.mark.parametrize('lang', TRANSLATED)
def test_a_catalogue_uses_the_books_terms(lang):
    text = catalogues.po_path(lang).read_text(encoding='utf-8')
    for concept, editions in i18n.TERMS.items():
        _book, synonyms = editions[lang]
        assert [s for s in synonyms if s in text] == [], (lang, concept)


# -- English is as it was; the other languages leave no English of the report's own --------------

@pytest.mark.parametrize('name', sorted(CASES))
def test_the_english_report_is_byte_for_byte_what_it_was(name):
    doc, options = case(name)
    before = english()[name]
    assert terminal.render(doc, **options) == before
    assert terminal.render(doc, lang='en', **options) == before
    assert terminal.render(dict(doc, language='en'), **options) == before


@functools.lru_cache(maxsize=None)   # an extraction reads the whole package
def _extracted():
    return catalogues.extract()


@functools.lru_cache(maxsize=None)
def _frame_phrases():
    """What of each message is the report's own English: its pieces between the placeholders
    that are more than one word, and the verdict words (a word alone, as `late`, is in the
    scorecard's English text too)."""
    out = set()
    for m in _extracted():
        for source in forms(m.id):
            if not source:
                continue
            if source.isupper():
                out.add(source)
            for piece in re.split(r'\{[^{}]*\}', source):
                piece = piece.strip(' :;,.()·')
                if len(re.findall('[A-Za-z]{2,}', piece)) >= 2:
                    out.add(piece)
    return out


@pytest.mark.parametrize('lang', TRANSLATED)
@pytest.mark.parametrize('name', sorted(CASES))
def test_a_translated_report_has_no_english_line_of_its_own(name, lang):
    doc, options = case(name)
    text = terminal.render(doc, lang=lang, **options)
    # the scorecard's own English (messages, hints, titles, reasons, ids) is shown as it is
    data = json.dumps(doc, ensure_ascii=False)
    left = sorted(p for p in _frame_phrases() if p in text and p not in data)
    assert left == [], left
    assert text != english()[name]
    # the lines of data are the same lines in every language: same count, same identifiers
    assert len(text.splitlines()) == len(english()[name].splitlines())
    assert terminal.render(dict(doc, language=lang), **options) == text


def test_a_translated_report_names_the_verdict_and_the_root_cause_in_its_language():
    doc, options = case('reject')
    expected = {'ja': ('不合格', '根本原因', 'ヒント'), 'zh': ('不通过', '根本原因', '提示'),
                'ko': ('불합격', '근본 원인', '힌트')}
    for lang, words_of in expected.items():
        text = terminal.render(doc, lang=lang, **options)
        assert text.splitlines()[1].startswith(words_of[0])
        assert all(w in text for w in words_of[1:])
        # identifiers stay as they are
        assert '✗ step09/exp [book, gradient,' in text and '--only step09/exp' in text


def test_a_translated_report_gives_the_step_and_check_titles_of_the_assignments_catalogue():
    from dezero_grader.i18n.assignment_text import assignment_text
    doc, options = case('reject')
    failing = [c for c in doc['checks'] if c['status'] == 'failed']
    assert failing
    for lang in TRANSLATED:
        text = terminal.render(doc, lang=lang, **options)
        step_title = assignment_text(lang, 'step{:02d}'.format(doc['assignment']['step']),
                                     doc['assignment']['title'])
        assert step_title != doc['assignment']['title'] and step_title in text.splitlines()[0]
        for c in failing:
            title = assignment_text(lang, c['id'], c['title'])
            assert title != c['title']
            assert any(line.startswith('✗ ' + c['id']) and line.endswith(' ' + title)
                       for line in text.splitlines())


@pytest.mark.parametrize('name', ['reject', 'reject-undiagnosed'])
def test_a_translated_report_gives_the_root_causes_fault_title_of_the_assignments_catalogue(name):
    from dezero_grader.i18n.assignment_text import assignment_text
    doc, options = case(name)
    fault = case('reject')[0]['diagnosis']['causes'][0]['faults'][0]
    assert fault['id'] == 'exp-calls-square'
    for lang in TRANSLATED:
        title = assignment_text(lang, 'fault:' + fault['id'], fault['title'])
        assert title != fault['title'] and not re.search('[A-Za-z]{4,}', title.replace(
            'Square', '').replace('square', '')), title
        named = [line for line in terminal.render(doc, lang=lang, **options).splitlines()
                 if fault['id'] + ' — ' in line]
        assert named and all(line.endswith(fault['id'] + ' — ' + title) for line in named), named


def test_a_catalogued_root_cause_is_said_in_the_reports_language():
    from dezero_grader.i18n.assignment_text import assignment_text
    doc, options = case('reject')
    cause = doc['diagnosis']['causes'][0]
    assert cause['kind'] == 'fault' and len(cause['checks']) == 2
    english = terminal.render(doc, **options).splitlines()
    assert '  1. ' + cause['summary'] in english          # English: the scorecard's own line
    for lang in TRANSLATED:
        title = assignment_text(lang, 'fault:' + cause['faults'][0]['id'],
                                cause['faults'][0]['title'])
        line = next(l for l in terminal.render(doc, lang=lang, **options).splitlines()
                    if l.startswith('  1. '))
        assert line.startswith('  1. ' + title) and '2' in line[len(title):], line
        assert 'because of it' not in line and 'fail' not in line, line


def test_the_lines_other_reports_share_default_to_english():
    from dezero_grader.scoring.scorecard_read import Scorecard
    doc, _ = case('reject')
    card = Scorecard.from_document(doc)
    assert terminal.checks_line(card).startswith('2 failed, 20 passed')
    assert terminal.checks_line(card, i18n.translator('ja')).startswith('不合格 2, 合格 20')
    assert terminal.reproduce_line(card, 'step09/exp').startswith('reproduce (on your own machine')
    assert terminal.reproduce_line(card, 'step09/exp', 'x', i18n.translator('ko')).startswith('재현: ')


# -- the language chosen ---------------------------------------------------------------------------

@pytest.mark.parametrize('environ, expected', [
    ({}, 'en'),
    ({'LANG': 'ja_JP.UTF-8'}, 'ja'),
    ({'LANG': 'ko_KR.UTF-8', 'LC_ALL': 'zh_CN.UTF-8'}, 'zh'),
    ({'LANGUAGE': 'fr:ko', 'LANG': 'ja_JP.UTF-8'}, 'ko'),
    ({'LANGUAGE': '', 'LC_MESSAGES': 'zh_TW', 'LANG': 'C.UTF-8'}, 'zh'),
    ({'LANG': 'fr_FR.UTF-8'}, 'en'),
    ({'LC_ALL': 'C', 'LANG': 'POSIX'}, 'en'),
    ({'LANGUAGE': 'en_GB', 'LANG': 'ja_JP'}, 'en'),
])
def test_the_default_language_is_the_locales(environ, expected):
    assert i18n.default_language(environ) == expected


def test_the_suite_reads_english_whatever_the_machines_locale():
    assert i18n.default_language() == 'en'


def test_a_translator_per_language_and_no_other():
    assert i18n.translator('ja').gettext('ACCEPT') == '合格'
    assert i18n.translator('en').gettext('ACCEPT') == 'ACCEPT'
    assert i18n.translator('ko').gettext('no such message') == 'no such message'
    with pytest.raises(ValueError, match='en, ja, zh, ko'):
        i18n.translator('fr')


def test_check_and_batch_take_a_language():
    parser = build_parser()
    assert parser.parse_args(['check', 'x', '--step', '9', '--lang', 'ko']).lang == 'ko'
    assert parser.parse_args(['check', 'x', '--step', '9']).lang is None
    assert parser.parse_args(['batch', 'x', '--step', '9', '--out', 'o', '--lang', 'zh']).lang == 'zh'
    with pytest.raises(SystemExit):
        parser.parse_args(['check', 'x', '--step', '9', '--lang', 'fr'])


def test_a_policy_names_the_courses_language():
    assert policy.from_document({'schema_version': '1.0', 'language': 'ja'}).language == 'ja'
    assert policy.DEFAULT.language is None
    with pytest.raises(policy.PolicyError):
        policy.from_document({'schema_version': '1.0', 'language': 'fr'})


def test_the_scorecard_records_its_language_and_keeps_its_english():
    from dezero_grader.batch.records import BatchOptions
    from dezero_grader.grading import run
    from dezero_grader.scoring import scorecard_write
    doc, _ = case('reject')
    assert schema.errors('scorecard', dict(doc, language='ko')) == []
    assert schema.errors('scorecard', dict(doc, language='fr')) != []
    course = policy.from_document({'schema_version': '1.0', 'language': 'zh'})
    chosen = scorecard_write._with_language
    assert chosen({}, run.Options(language='ja')) == {'language': 'ja'}
    assert chosen({}, run.Options(policy=course)) == {'language': 'zh'}
    assert chosen({}, run.Options(policy=course, language='ko')) == {'language': 'ko'}
    assert chosen({}, run.Options()) == {}
    options = BatchOptions.from_cli(9, sandbox='basic', language='ja')
    assert options.run_options().language == 'ja' and options.to_json()['language'] == 'ja'
    assert 'language' not in BatchOptions.from_cli(9, sandbox='basic').to_json()
