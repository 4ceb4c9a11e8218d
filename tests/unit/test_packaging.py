"""The installed distribution carries every package and its data (a wheel install, not only an
editable one, must grade)."""
from pathlib import Path

import pytest

tomllib = pytest.importorskip('tomllib')   # Python 3.11+; the list is the same on 3.10

REPO = Path(__file__).resolve().parents[2]


def _package_folders():
    """Every folder with an __init__.py under grader/ and reference/, as a dotted name."""
    for top in ('grader', 'reference'):
        for init in (REPO / top).rglob('__init__.py'):
            if '__pycache__' not in init.parts:
                yield '.'.join(init.parent.relative_to(REPO).parts)


def test_every_package_folder_is_listed_in_pyproject():
    config = tomllib.loads((REPO / 'pyproject.toml').read_text())['tool']['setuptools']
    listed = set(config['packages'])
    found = set(_package_folders())
    assert found <= listed, 'add to [tool.setuptools] packages: {}'.format(sorted(found - listed))
    mapped = config['package-dir']
    for name in listed - found:
        assert name in mapped and (REPO / mapped[name] / '__init__.py').is_file(), name
