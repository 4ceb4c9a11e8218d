"""The languages a report is written in: English, Japanese, Chinese (simplified, as the book's
Chinese edition) and Korean, the languages *Deep Learning from Scratch 3* is read in.

Sits at the end of the data flow, with the presenters: a finished scorecard is rendered in a
language (`dezero_grader.present.terminal`), never graded in one; the scorecard's own text stays
English. The messages live in gettext catalogues, `locale/<lang>/LC_MESSAGES/dezero_grader.po`
and their compiled `.mo`, read with the standard library; `catalogues` (which needs Babel, a
development tool) extracts them from the code and compiles them. English needs no catalogue: its
messages are the code's own. The assignments' own texts (step and check titles) are not in
the code and have a domain of their own, `assignments` (`assignment_text`).

`translator(lang)` is the object every presenter takes (`gettext`, `ngettext`, `pgettext`); no
state is installed anywhere (no `gettext.install`), so two reports in two languages can be
rendered side by side. `default_language()` reads the environment's locale.
"""
from __future__ import annotations

import functools
import gettext
import os
from pathlib import Path

DOMAIN = 'dezero_grader'
LOCALE_DIR = Path(__file__).resolve().parent / 'locale'
LANGUAGES = ('en', 'ja', 'zh', 'ko')
DEFAULT = 'en'
# The book's own words for its ideas in each edition, which every catalogue uses (and never one
# of the synonyms after them: tests/unit/test_i18n.py): the Japanese original, the simplified
# Chinese and the Korean translations of *Deep Learning from Scratch 3*.
TERMS = {
    'backpropagation': {'ja': ('逆伝播', ('逆伝搬', 'バックプロパゲーション', '誤差逆伝搬')),
                        'zh': ('反向传播', ('反向傳播', '后向传播', '逆传播')),
                        'ko': ('역전파', ('역전달', '백프로퍼게이션', '오차역전달'))},
    'gradient': {'ja': ('勾配', ('傾き', 'グラディエント')),
                 'zh': ('梯度', ('斜率', '坡度')),
                 'ko': ('기울기', ('그래디언트', '경사도'))},
    'computational graph': {'ja': ('計算グラフ', ('演算グラフ', '計算図')),
                            'zh': ('计算图', ('計算圖', '运算图')),
                            'ko': ('계산 그래프', ('연산 그래프', '계산그래프'))},
    'forward propagation': {'ja': ('順伝播', ('順伝搬', 'フォワードプロパゲーション')),
                            'zh': ('正向传播', ('前向传播', '正向傳播')),
                            'ko': ('순전파', ('순전달', '포워드 프로퍼게이션'))},
}
# where a POSIX locale names the language of messages, the first that is set winning
LOCALE_VARIABLES = ('LANGUAGE', 'LC_ALL', 'LC_MESSAGES', 'LANG')


def N_(message: str) -> str:
    """Marks a message kept in a constant (translated where it is shown): the extraction finds
    it here, the code keeps the English."""
    return message


def check(lang: str) -> str:
    """`lang` if it is a language of the reports, else ValueError saying which are."""
    if lang not in LANGUAGES:
        raise ValueError('the report languages are {}, found {!r}'.format(
            ', '.join(LANGUAGES), lang))
    return lang


@functools.lru_cache(maxsize=None)
def translator(lang: str = DEFAULT) -> gettext.NullTranslations:
    """The messages of `lang`: its catalogue, falling back to the English of the code for any
    message it lacks (English itself has no catalogue)."""
    check(lang)
    return gettext.translation(DOMAIN, str(LOCALE_DIR), languages=[lang], fallback=True)


def _language_of(value: str) -> str | None:
    """The report language a locale value names (`ja_JP.UTF-8`, `zh_CN`, `ko`, `C`), or None."""
    code = value.split('.', 1)[0].split('@', 1)[0].replace('-', '_').split('_', 1)[0].lower()
    return code if code in LANGUAGES else None


def default_language(environ=None) -> str:
    """The language of the environment's locale: the first of LANGUAGE (a list, `ja:en`),
    LC_ALL, LC_MESSAGES and LANG that names a report language; else English."""
    environ = os.environ if environ is None else environ
    for name in LOCALE_VARIABLES:
        for value in (environ.get(name) or '').split(':'):
            found = _language_of(value.strip()) if value.strip() else None
            if found:
                return found
    return DEFAULT
