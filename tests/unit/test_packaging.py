"""The installed distribution carries every package and its data (a wheel install, not only an
editable one, must grade)."""
from pathlib import Path

import pytest
import setuptools

tomllib = pytest.importorskip('tomllib')   # Python 3.11+; the list is the same on 3.10

REPO = Path(__file__).resolve().parents[2]


def test_every_package_folder_is_listed_in_pyproject():
    config = tomllib.loads((REPO / 'pyproject.toml').read_text())['tool']['setuptools']
    listed = set(config['packages'])
    found = set(setuptools.find_packages(where=str(REPO), include=['grader*', 'reference*']))
    assert found <= listed, 'add to [tool.setuptools] packages: {}'.format(sorted(found - listed))
    mapped = config['package-dir']
    for name in listed - found:
        assert name in mapped and (REPO / mapped[name] / '__init__.py').is_file(), name
