"""The texts of the assignment data files (a step's title and summary, each check's title, each
fault's title and hint) in the learner's language. They are not in the code, so the code's message catalogue cannot hold them:
they have a gettext domain of their own, `assignments`, extracted from assignments/*.json by
`extract` below (the mapping file babel-assignments.cfg names it) and looked up by
`assignment_text` with the text's place in the assignment as its message context:

    stepNN              the step's title
    stepNN:summary      the step's summary
    stepNN/<check id>   a check's title (the check's full id)
    fault:<fault id>    a fault's title, the root cause a report names
    fault:<fault id>:hint  a fault's hint, where it has English words in it (a hint that is
                        only code is its own translation and is not extracted)

(a check pack, pack-NAME.json, has its title and summary under `pack-NAME`; its checks' titles
are under their ids as a scorecard writes them, `stepNN/<check id>`, each check naming its step). The English text is the message id,
so a report falls back to the assignment's own words wherever a catalogue has no entry."""
import ast
import functools
import gettext
import json
import keyword
import re
from pathlib import Path

DOMAIN = 'assignments'
LOCALE_DIR = Path(__file__).resolve().parent / 'locale'
LANGUAGES = ('ja', 'zh', 'ko')
SUMMARY = ':summary'
HINT = ':hint'

# The book's function names, which a text may name bare ("sigmoid", "linear (4, 3) · (3, 2)")
# and which a translation keeps as they are.
CODE_WORDS = frozenset({'exp', 'log', 'sin', 'cos', 'tanh', 'sigmoid', 'relu', 'softmax',
                        'linear', 'matmul', 'reshape', 'transpose', 'sum', 'clip'})
_TOKEN = re.compile(r'[A-Za-z_][A-Za-z0-9_.]*')


def english_words(text):
    """The words of `text` that are English rather than code: three letters or more, and not an
    identifier (dotted, with an underscore or a digit, called `f(` or a keyword `k=`), not an
    acronym (MLP, GPU), not one of the book's function names."""
    words = []
    for match in _TOKEN.finditer(text):
        word = match.group().rstrip('.')
        following = text[match.start() + len(word):][:1]
        if following and following in '(=':
            continue
        if re.fullmatch(r'[A-Za-z]{3,}', word) and not word.isupper() \
                and word not in CODE_WORDS:
            words.append(word)
    return words


def document_context(doc):
    """The context prefix of one assignment document: `stepNN` for a step, `pack-NAME` for a
    check pack; None for a JSON file that is neither (it holds no texts a learner reads)."""
    if not isinstance(doc, dict) or 'checks' not in doc:
        return None
    if isinstance(doc.get('pack'), str):
        return 'pack-' + doc['pack']
    if isinstance(doc.get('step'), int):
        return 'step{:02d}'.format(doc['step'])
    return None


def has_english(text):
    """Whether `text` (a hint) has English in it to translate: an English word that is not one
    of Python's keywords, in a text that is not Python itself (each of its `; ` parts parses).
    `return gy, gy` and `def cleargrad(self): self.grad = None` are code, their own
    translation."""
    return any(word not in keyword.kwlist for word in english_words(text)) \
        and not _is_python(text)


def _is_python(text):
    try:
        for part in text.split('; '):
            ast.parse(part)
    except SyntaxError:
        return False
    return True


def document_texts(doc):
    """(context, text) for every translatable text of one assignment document, in file order."""
    prefix = document_context(doc)
    if prefix is None:
        return
    if doc.get('title'):
        yield prefix, doc['title']
    if doc.get('summary'):
        yield prefix + SUMMARY, doc['summary']
    for check in doc['checks']:
        if check.get('title'):
            yield check_context(doc, check), check['title']
    for fault in doc.get('faults', ()):
        if fault.get('title'):
            yield fault_context(fault['id']), fault['title']
        if fault.get('hint') and has_english(fault['hint']):
            yield fault_context(fault['id']) + HINT, fault['hint']


def fault_context(fault_id):
    """A fault's title's context, `fault:<id>` (its hint's: that and `:hint`). A fault's id
    may recur in several steps; where its title is the same it is one entry."""
    return 'fault:' + fault_id


def check_context(doc, check):
    """A check title's context: the check's id as a scorecard writes it, `stepNN/<id>` (a
    pack's check carries the step it belongs to, so its id is that step's)."""
    step = check.get('step', doc.get('step'))
    if isinstance(step, int):
        return 'step{:02d}/{}'.format(step, check['id'])
    return '{}/{}'.format(document_context(doc), check['id'])


def _line_numbers(source, texts):
    """The line each text's JSON string starts on (searched forward, so repeated texts get
    their own lines); 1 where a text is written with other escapes than json.dumps's."""
    lines = []
    position = 0
    for _context, text in texts:
        for encoded in (json.dumps(text, ensure_ascii=False), json.dumps(text)):
            found = source.find(encoded, position)
            if found >= 0:
                position = found + len(encoded)
                lines.append(source.count('\n', 0, found) + 1)
                break
        else:
            lines.append(1)
    return lines


def extract(fileobj, keywords, comment_tags, options):
    """Babel's extraction method for assignment JSON files: every text as a pgettext call, so
    Babel's default keywords give it its context. Usable as the method
    `dezero_grader.i18n.assignment_text.extract` in a mapping file."""
    source = fileobj.read().decode(options.get('encoding', 'utf-8'))
    texts = list(document_texts(json.loads(source)))
    for line, (context, text) in zip(_line_numbers(source, texts), texts):
        yield line, 'pgettext', (context, text), []


@functools.lru_cache(maxsize=None)
def _translations(lang):
    return gettext.translation(DOMAIN, localedir=str(LOCALE_DIR), languages=[lang],
                               fallback=True)


def assignment_text(lang, context, text):
    """`text` (an assignment's English title, summary or hint) in language `lang`, looked up under
    `context`; `text` itself for English, a language without a catalogue, or a text the
    catalogue does not hold (the catalogue may lag behind an edited assignment)."""
    if lang not in LANGUAGES:
        return text
    return _translations(lang).pgettext(context, text)
