"""What a translated report costs to render, as a ratio to the English one, in one run.

    python bench/bench_languages.py [SCORECARD.json ...] [--rounds N]

Renders each scorecard (default: the report cases of tests/fixtures/i18n) in every language,
the languages interleaved round by round so that a machine's load falls on all of them alike,
and prints each language's CPU time per report and its ratio to English. The first render of a
language (reading its catalogues) is timed apart: it is paid once per process.
"""
import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from dezero_grader import i18n  # noqa: E402
from dezero_grader.present import terminal  # noqa: E402

FIXTURES = ROOT / 'tests' / 'fixtures' / 'i18n'


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('cards', nargs='*', type=Path)
    parser.add_argument('--rounds', type=int, default=200)
    args = parser.parse_args(argv)
    paths = args.cards or sorted(p for p in FIXTURES.glob('*.json') if p.name != 'english.json')
    docs = [json.loads(p.read_text(encoding='utf-8')) for p in paths]
    first = {}
    for lang in i18n.LANGUAGES:
        t = time.process_time()
        for doc in docs:
            terminal.render(doc, lang=lang, verbose=True)
        first[lang] = time.process_time() - t
    spent = dict.fromkeys(i18n.LANGUAGES, 0.0)
    for _ in range(args.rounds):
        for lang in i18n.LANGUAGES:
            t = time.process_time()
            for doc in docs:
                terminal.render(doc, lang=lang, verbose=True)
            spent[lang] += time.process_time() - t
    reports = args.rounds * len(docs)
    english = spent['en'] / reports
    print('{} scorecards x {} rounds, verbose reports, CPU time'.format(len(docs), args.rounds))
    print('lang  per report   ratio to en   first round (catalogues read)')
    for lang in i18n.LANGUAGES:
        each = spent[lang] / reports
        print('{:<4}  {:8.2f} ms   {:9.2f}x    {:8.1f} ms'.format(
            lang, each * 1e3, each / english, first[lang] * 1e3))
    return 0


if __name__ == '__main__':
    sys.exit(main())
