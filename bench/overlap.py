"""How much of a package's code also stands in the reference's, module by module.

Usage:
    python bench/overlap.py [PACKAGE_DIR] [--against DIR] [--size N] [--show]

PACKAGE_DIR defaults to tests/fixtures/independent/dezero, --against to reference/dezero,
--size to 6. A module's code lines are its lines with the leading whitespace stripped, blank
lines and comment lines left out (so reindenting or recommenting a copy does not hide it). For
every module of PACKAGE_DIR it prints:

* `shared`: its code lines that lie in a run of at least N consecutive code lines which also
  stands, line for line and in order, in some module of --against (the copied blocks);
* `blocks`: how many maximal such runs there are;
* `common`: its code lines whose text occurs anywhere in --against at all, a coarser figure
  that counts the lines the public API fixes too (`import numpy as np`, `def to_gpu(self):`).

`--show` prints each shared run with its line numbers. The exit status is 0 either way: this
measures, tests/e2e/test_independent.py is the gate.
"""
import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def code_lines(path):
    """[(line number, stripped text)] of the lines of `path` that hold code."""
    kept = []
    for number, raw in enumerate(path.read_text(encoding='utf-8').splitlines(), 1):
        text = raw.strip()
        if text and text[0] != '#':
            kept.append((number, text))
    return kept


def windows(texts, size):
    return {tuple(texts[k:k + size]) for k in range(len(texts) - size + 1)}


def shared_runs(lines, known, size):
    """Maximal runs of `lines` (as [(first, last)] line numbers) covered by windows of `size`
    consecutive code lines found in `known`."""
    covered = [False] * len(lines)
    texts = [text for _, text in lines]
    for k in range(len(texts) - size + 1):
        if tuple(texts[k:k + size]) in known:
            covered[k:k + size] = [True] * size
    runs, start = [], None
    for k, flag in enumerate(covered + [False]):
        if flag and start is None:
            start = k
        elif not flag and start is not None:
            runs.append((start, k - 1))
            start = None
    return [(lines[a][0], lines[b][0], b - a + 1) for a, b in runs]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('package', nargs='?', type=Path,
                        default=ROOT / 'tests' / 'fixtures' / 'independent' / 'dezero')
    parser.add_argument('--against', type=Path, default=ROOT / 'reference' / 'dezero')
    parser.add_argument('--size', type=int, default=6)
    parser.add_argument('--show', action='store_true')
    args = parser.parse_args(argv)

    theirs = [code_lines(p) for p in sorted(args.against.glob('*.py'))]
    known = set().union(*(windows([t for _, t in lines], args.size) for lines in theirs))
    anywhere = {text for lines in theirs for _, text in lines}

    print('{:<20} {:>6} {:>7} {:>7} {:>7}'.format('module', 'code', 'shared', 'blocks', 'common'))
    total = [0, 0, 0, 0]
    for path in sorted(args.package.glob('*.py')):
        lines = code_lines(path)
        runs = shared_runs(lines, known, args.size)
        row = [len(lines), sum(n for _, _, n in runs), len(runs),
               sum(text in anywhere for _, text in lines)]
        total = [a + b for a, b in zip(total, row)]
        print('{:<20} {:>6} {:>7} {:>7} {:>7}'.format(path.name, *row))
        if args.show:
            for first, last, n in runs:
                print('    lines {}-{} ({} code lines)'.format(first, last, n))
    print('{:<20} {:>6} {:>7} {:>7} {:>7}'.format('total', *total))
    return 0


if __name__ == '__main__':
    sys.exit(main())
