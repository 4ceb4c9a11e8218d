"""The installed distribution carries every package and its data (a wheel install, not only an
editable one, must grade), under one top-level name: `dezero_grader`."""
import importlib.util
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from grade_cli import run_to_end

tomllib = pytest.importorskip('tomllib')   # Python 3.11+; the list is the same on 3.10

REPO = Path(__file__).resolve().parents[2]
TOP = 'dezero_grader'


def _package_folders():
    """Every folder with an __init__.py under dezero_grader/ and reference/ (which ships as
    dezero_grader.reference), as the dotted name it installs under."""
    for folder, prefix in ((REPO / TOP, (TOP,)), (REPO / 'reference', (TOP, 'reference'))):
        for init in folder.rglob('__init__.py'):
            if '__pycache__' not in init.parts:
                yield '.'.join(prefix + init.parent.relative_to(folder).parts)


def test_every_package_folder_is_listed_in_pyproject():
    config = tomllib.loads((REPO / 'pyproject.toml').read_text())['tool']['setuptools']
    listed = set(config['packages'])
    found = set(_package_folders())
    assert found <= listed, 'add to [tool.setuptools] packages: {}'.format(sorted(found - listed))
    mapped = config['package-dir']
    for name in listed - found:
        assert name in mapped and (REPO / mapped[name] / '__init__.py').is_file(), name
    assert {name.split('.')[0] for name in listed} == {TOP}


def test_no_wheel_is_committed():
    tracked = subprocess.run(['git', '-C', str(REPO), 'ls-files', '*.whl', '**/*.whl'],
                             capture_output=True, text=True)
    if tracked.returncode != 0:
        pytest.skip('not a git checkout')
    assert tracked.stdout.split() == []


@pytest.fixture(scope='module')
def wheel(tmp_path_factory):
    """The wheel `pip install .` would install, built offline from this checkout."""
    out = tmp_path_factory.mktemp('wheel')
    # built from a copy: a build writes build/ and egg-info beside the sources
    source = out / 'source'
    shutil.copytree(REPO, source, ignore=shutil.ignore_patterns(
        '.git', '.venv', 'build', 'dist', '*.egg-info', '__pycache__', '.hypothesis', 'out'))
    # with the build tools of this environment where it has them (the test extra brings wheel):
    # offline, and quick; else pip fetches them as `pip install .` would
    offline = importlib.util.find_spec('wheel') is not None
    command = [sys.executable, '-m', 'pip', 'wheel', '--no-deps', '-q', '-w', str(out), str(source)]
    if offline:
        command[4:4] = ['--no-build-isolation', '--no-index']
    proc = run_to_end(command, capture_output=True, text=True, cwd=str(out))
    if proc.returncode != 0 and 'No module named pip' in proc.stderr:
        pytest.skip('pip is not installed here')
    assert proc.returncode == 0, proc.stderr[-3000:]
    (path,) = out.glob('*.whl')
    with zipfile.ZipFile(path) as z:
        names = z.namelist()
        entry_points = next(n for n in names if n.endswith('.dist-info/entry_points.txt'))
        return names, z.read(entry_points).decode('utf-8')


def test_the_wheel_installs_one_top_level_package_and_its_metadata(wheel):
    names, entry_points = wheel
    tops = {name.split('/')[0] for name in names}
    dist_info = {t for t in tops if t.endswith('.dist-info')}
    assert len(dist_info) == 1 and tops - dist_info == {TOP}, sorted(tops)
    # the script, unchanged for users
    assert 'dezero-grade = dezero_grader.cli:main' in entry_points.replace('  ', ' ')


def test_the_wheel_carries_the_reference_the_schemas_and_the_assignments(wheel):
    names = set(wheel[0])
    assert TOP + '/reference/dezero/core.py' in names
    assert any(n.startswith(TOP + '/reference/dezero/data/') for n in names)
    assert TOP + '/reference/steps/step01.py' in names
    assert TOP + '/schemas/scorecard.schema.json' in names
    assert TOP + '/assignment_files/step52.json' in names
    assert any(n.startswith(TOP + '/assignment_files/fingerprints/') for n in names)
    for lang in ('ja', 'zh', 'ko'):   # the report catalogues, read at run time
        assert '{}/i18n/locale/{}/LC_MESSAGES/dezero_grader.mo'.format(TOP, lang) in names
    assert TOP + '/sandboxed/worker.py' in names and TOP + '/grading/run.py' in names
    for lang in ('ja', 'zh', 'ko'):
        assert TOP + '/i18n/locale/{}/LC_MESSAGES/assignments.mo'.format(lang) in names
