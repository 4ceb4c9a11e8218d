"""The catalogues made from the code: the template extracted, each language's catalogue brought
up to date with it, and compiled. A development tool: it needs Babel (the `test` extra), which
the grader does not need to run. `python -m dezero_grader.i18n.catalogues` does all three after
a message is added or changed; the translations are then written in the `.po` files and it is run
again to compile them. The tests compare what is committed with what this makes.

Messages are found as calls of `gettext`, `ngettext`, `pgettext` (a translator's methods) and `N_`
(a message kept in a constant) in the package's code; a comment `# TRANSLATORS:` just above one
reaches the translators.
"""
from __future__ import annotations

import io
import sys
from pathlib import Path

from babel.messages import Catalog, mofile, pofile
from babel.messages.extract import DEFAULT_KEYWORDS, extract_from_dir

from dezero_grader import i18n

PACKAGE = Path(i18n.__file__).resolve().parent.parent
TEMPLATE = i18n.LOCALE_DIR / (i18n.DOMAIN + '.pot')
TRANSLATED = tuple(lang for lang in i18n.LANGUAGES if lang != 'en')
KEYWORDS = dict(DEFAULT_KEYWORDS, N_=None)
_HEADER = dict(project='dezero-grader', msgid_bugs_address='', copyright_holder='',
               charset='utf-8')


def po_path(lang: str) -> Path:
    return i18n.LOCALE_DIR / lang / 'LC_MESSAGES' / (i18n.DOMAIN + '.po')


def mo_path(lang: str) -> Path:
    return po_path(lang).with_suffix('.mo')


def extract() -> Catalog:
    """The template: every message of the package's code, each with the files it is in (no line
    numbers, so that moving code does not change the template)."""
    catalog = Catalog(**_HEADER)
    found = extract_from_dir(str(PACKAGE), method_map=[('i18n/**', 'ignore'), ('**.py', 'python')],
                             keywords=KEYWORDS, comment_tags=('TRANSLATORS:',),
                             strip_comment_tags=True)
    for filename, _lineno, message, comments, context in found:
        location = ('dezero_grader/' + Path(filename).as_posix(), None)
        existing = catalog.get(message if isinstance(message, str) else message[0], context)
        if existing is not None and location in existing.locations:
            continue
        catalog.add(message, None, [location], auto_comments=comments, context=context)
    return catalog


def read_po(path) -> Catalog:
    with open(path, 'rb') as f:
        return pofile.read_po(f)


def read_mo(path) -> Catalog:
    with open(path, 'rb') as f:
        return mofile.read_mo(f)


def _po_bytes(catalog: Catalog) -> bytes:
    out = io.BytesIO()
    pofile.write_po(out, catalog, width=96, sort_output=True, include_lineno=False,
                    omit_header=False)
    return out.getvalue()


def updated(lang: str, template: Catalog) -> Catalog:
    """The catalogue of `lang` brought up to date with `template`: new messages added untranslated,
    gone ones dropped (never reused by a fuzzy guess, which would show a wrong sentence)."""
    path = po_path(lang)
    if path.exists():
        catalog = read_po(path)
    else:
        catalog = Catalog(locale=lang, **_HEADER)
    catalog.update(template, no_fuzzy_matching=True)
    catalog.obsolete.clear()
    return catalog


def compiled(catalog: Catalog) -> bytes:
    out = io.BytesIO()
    mofile.write_mo(out, catalog, use_fuzzy=False)
    return out.getvalue()


def messages(catalog: Catalog) -> dict:
    """{(context, msgid): msgstr} of the translated messages (the header left out), the way a
    compiled and a source catalogue are compared."""
    out = {}
    for m in catalog:
        if not m.id or not (m.string if not isinstance(m.string, (list, tuple)) else any(m.string)):
            continue
        key = (m.context, m.id if isinstance(m.id, str) else tuple(m.id))
        out[key] = m.string if isinstance(m.string, str) else tuple(m.string)
    return out


def untranslated(catalog: Catalog) -> list:
    """The msgids of `catalog` with no translation (or a plural form missing), or marked fuzzy."""
    out = []
    for m in catalog:
        if not m.id:
            continue
        strings = [m.string or ''] if not isinstance(m.string, (list, tuple)) else list(m.string)
        if m.fuzzy or not all(s.strip() for s in strings):
            out.append(m.id)
    return out


def entries(catalog: Catalog) -> list:
    """What a template says of each message (its id, context, files, flags and comments): the way
    a committed and a fresh template are compared (their creation dates differ)."""
    return sorted((m.context or '', repr(m.id), sorted(m.locations), sorted(m.flags),
                   list(m.auto_comments)) for m in catalog if m.id)


def _write_if_changed(path: Path, data: bytes, same) -> None:
    """`data` at `path`, unless what is there already says the same (`same(old_bytes)`): a run
    that changes no message leaves the files, and their dates in the headers, as they were."""
    if path.exists() and same(path.read_bytes()):
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)


def main() -> int:
    template = extract()
    _write_if_changed(TEMPLATE, _po_bytes(template), lambda old: entries(
        pofile.read_po(io.BytesIO(old))) == entries(template))
    missing = 0
    for lang in TRANSLATED:
        catalog = updated(lang, template)
        _write_if_changed(po_path(lang), _po_bytes(catalog), lambda old: _po_bytes(
            pofile.read_po(io.BytesIO(old))) == _po_bytes(catalog))
        _write_if_changed(mo_path(lang), compiled(catalog), lambda old: old == compiled(catalog))
        gaps = untranslated(catalog)
        missing += len(gaps)
        print('{}: {} messages, {} to translate'.format(lang, len(template), len(gaps)))
    return 1 if missing else 0


if __name__ == '__main__':
    sys.exit(main())
