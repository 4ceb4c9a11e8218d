"""Builds the independent submission of tests/fixtures/independent: a copy of the reference
package with the fixture's rewritten modules laid over it (only the rewritten modules are kept
in the repository; the rest, e.g. the datasets, is the reference's). Used by the e2e tests that
grade it."""
import shutil
from pathlib import Path

from dezero_grader import reference

OVERLAY = Path(__file__).resolve().parents[1] / 'fixtures' / 'independent'


def rewritten_modules():
    """The file names of the rewritten modules (`dezero/NAME.py`)."""
    return sorted(p.name for p in (OVERLAY / 'dezero').glob('*.py'))


def build(root):
    """Write the independent submission under `root` (a `dezero/` package); returns `root`.
    A `NAME.py.append` file, if any, is appended to its module (its later definitions win)."""
    root = Path(root)
    shutil.copytree(reference.ROOT / 'dezero', root / 'dezero',
                    ignore=shutil.ignore_patterns('__pycache__'))
    for path in (OVERLAY / 'dezero').glob('*.py'):
        shutil.copy(path, root / 'dezero' / path.name)
    for path in (OVERLAY / 'dezero').glob('*.py.append'):
        target = root / 'dezero' / path.name[:-len('.append')]
        target.write_text(target.read_text(encoding='utf-8') + '\n\n' +
                          path.read_text(encoding='utf-8'), encoding='utf-8')
    return root
