"""The `assignments` catalogues stay whole: the template is what the extraction method finds in
assignments/ today, every entry has a translation in each language, the committed .mo files are
the compiled .po files, no English text is left as its own translation, and `assignment_text`
looks texts up by their place in the assignment."""
import io
import json
import re
from pathlib import Path

import pytest

babel = pytest.importorskip('babel')   # the test extra brings it; the grader does not need it
from babel.messages.catalog import Catalog  # noqa: E402
from babel.messages.extract import extract_from_dir  # noqa: E402
from babel.messages.frontend import parse_mapping_cfg  # noqa: E402
from babel.messages.mofile import read_mo, write_mo  # noqa: E402
from babel.messages.pofile import read_po, write_po  # noqa: E402

from dezero_grader.i18n import assignment_text as at  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
LOCALE = REPO / 'dezero_grader' / 'i18n' / 'locale'
TEMPLATE = LOCALE / 'assignments.pot'
MAPPING = REPO / 'dezero_grader' / 'i18n' / 'babel-assignments.cfg'

english_words = at.english_words


def _entries(catalog):
    return {(m.context, m.id): m for m in catalog if m.id}


def _read_po(path):
    with open(path, 'rb') as f:
        return read_po(f)


def _po_files():
    return {lang: LOCALE / lang / 'LC_MESSAGES' / (at.DOMAIN + '.po') for lang in at.LANGUAGES}


@pytest.fixture(scope='module')
def template():
    return _read_po(TEMPLATE)


@pytest.fixture(scope='module', params=at.LANGUAGES)
def catalogue(request):
    return request.param, _read_po(_po_files()[request.param])


def test_english_words_tells_text_from_code():
    assert english_words('the book\'s composite Square → Exp → Square at 0.5') == [
        'the', 'book', 'composite', 'Square', 'Exp', 'Square']
    assert english_words('linear (4, 3) · (3, 2) + (2,)') == []
    assert english_words('MLP((6, 5, 2), activation=tanh)') == []
    assert english_words('Variable.backward and F.linear; np.ndarray, x2h.W') == ['and']
    assert english_words('Layer.to_gpu moves every parameter.') == ['moves', 'every', 'parameter']
    assert not at.has_english('x.grad = gx if x.grad is None else x.grad + gx')
    assert not at.has_english('def reset_state(self): self.h = None; self.c = None')
    assert at.has_english('return outputs (the list)')


def test_document_texts_are_placed_by_step_summary_and_check_id():
    doc = {'step': 7, 'title': 'T', 'summary': 'S',
           'checks': [{'id': 'chain', 'title': 'C'}, {'id': 'device.fn.exp', 'title': 'D'}]}
    assert list(at.document_texts(doc)) == [
        ('step07', 'T'), ('step07:summary', 'S'), ('step07/chain', 'C'),
        ('step07/device.fn.exp', 'D')]
    assert list(at.document_texts({'pack': 'core', 'step': 51, 'title': 'P', 'checks': []})) \
        == [('pack-core', 'P')]
    assert list(at.document_texts({'mutants': []})) == []


def test_fault_titles_and_english_hints_are_placed_by_fault_id():
    doc = {'step': 9, 'checks': [], 'faults': [
        {'id': 'exp-calls-square', 'title': 'T', 'hint': 'def exp(x): return Exp()(x)'},
        {'id': 'seed-missing', 'title': 'U', 'hint': 'seed the gradient with ones'},
        {'id': 'add-backward-single', 'title': 'W', 'hint': 'return gy, gy'},
        {'id': 'no-hint', 'title': 'V'}]}
    assert list(at.document_texts(doc)) == [
        ('fault:exp-calls-square', 'T'), ('fault:seed-missing', 'U'),
        ('fault:seed-missing:hint', 'seed the gradient with ones'), ('fault:add-backward-single', 'W'),
        ('fault:no-hint', 'V')]


def test_the_template_is_a_fresh_extraction_of_the_assignments(tmp_path, template):
    with open(MAPPING) as f:
        method_map, options_map = parse_mapping_cfg(f, str(MAPPING))
    fresh = Catalog(project='dezero-grader')
    def only_assignments(path):   # as `pybabel extract ... .` at the root, walking less
        return Path(path).relative_to(REPO).parts[0] == 'assignments'

    for filename, lineno, message, comments, context in extract_from_dir(
            str(REPO), method_map, options_map, directory_filter=only_assignments):
        fresh.add(message, None, [(filename, lineno)], auto_comments=comments, context=context)
    path = tmp_path / 'fresh.pot'
    with open(path, 'wb') as f:
        write_po(f, fresh)
    assert list(_entries(_read_po(path))) == list(_entries(template)), (
        'the template is stale: re-extract it (docs/authoring.md, "Translating the texts")')


def test_the_template_holds_every_step_check_and_fault(template):
    entries = _entries(template)
    for path in sorted((REPO / 'assignments').glob('step*.json')):
        doc = json.loads(path.read_text(encoding='utf-8'))
        step = 'step{:02d}'.format(doc['step'])
        assert (step, doc['title']) in entries and (step + ':summary', doc['summary']) in entries
        for check in doc['checks']:
            assert ('{}/{}'.format(step, check['id']), check['title']) in entries
    for path in sorted((REPO / 'assignments').glob('*.json')):
        doc = json.loads(path.read_text(encoding='utf-8'))
        for fault in (doc.get('faults', ()) if at.document_context(doc) else ()):
            context = 'fault:' + fault['id']
            assert (context, fault['title']) in entries
            if at.has_english(fault['hint']):
                assert (context + ':hint', fault['hint']) in entries


def test_every_entry_has_a_translation(catalogue, template):
    lang, catalog = catalogue
    entries = _entries(catalog)
    assert set(entries) == set(_entries(template)), (
        lang + ': the catalogue is not updated from the template (docs/authoring.md)')
    untranslated = [key for key, m in entries.items() if not m.string or m.fuzzy]
    assert untranslated == [], lang


def test_english_text_is_translated(catalogue):
    lang, catalog = catalogue
    kept = [(m.context, m.id) for m in catalog
            if m.id and m.string == m.id and english_words(m.id)]
    assert kept == [], lang + ': English left untranslated'


def test_the_committed_mo_is_the_compiled_po(tmp_path, catalogue):
    lang, catalog = catalogue
    compiled = io.BytesIO()
    write_mo(compiled, catalog)
    compiled.seek(0)
    committed = LOCALE / lang / 'LC_MESSAGES' / (at.DOMAIN + '.mo')
    with open(committed, 'rb') as f:
        shipped = read_mo(f)
    fresh = read_mo(compiled)
    assert {k: m.string for k, m in _entries(shipped).items()} == \
        {k: m.string for k, m in _entries(fresh).items()}, (
        lang + ': recompile the catalogue (docs/authoring.md)')


def test_step_titles_come_back_in_japanese():
    title = json.loads((REPO / 'assignments' / 'step09.json').read_text(encoding='utf-8'))['title']
    text = at.assignment_text('ja', 'step09', title)
    assert text != title and re.search(r'[\u3040-\u30ff\u4e00-\u9fff]', text), text


def test_identifiers_and_shapes_are_kept():
    text = 'linear (4, 3) · (3, 2) + (2,)'
    for lang in at.LANGUAGES:
        assert at.assignment_text(lang, 'step43/linear', text) == text
    assert 'Variable.to_gpu' in at.assignment_text('ko', 'step52/device.variable',
        'Variable.to_gpu / backward / to_cpu keep data and gradients on the right device')


@pytest.mark.parametrize('lang, context, text', [
    ('en', 'step09', 'Making functions more convenient'),
    ('fr', 'step09', 'Making functions more convenient'),
    ('ja', 'step09', 'A title the catalogue has not caught up with'),
    ('ja', 'step99', 'Making functions more convenient'),
])
def test_english_is_the_fallback(lang, context, text):
    assert at.assignment_text(lang, context, text) == text
