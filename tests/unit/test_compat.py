"""The book's 2020 environment inside a worker (`dezero_grader.sandboxed.probes.compat`): removed NumPy aliases and
modules, and `cupy.scatter_add` on a real CuPy, served to the learner's code only (book era) or
refused with the same explanation (current era); every use recorded once per file:line."""
import importlib.util
import sys
import textwrap
import types

import numpy as np
import pytest

from dezero_grader.sandboxed.probes import compat

# What NumPy 2.0 removed (np.float_, np.alltrue, numpy.lib.index_tricks) NumPy 1.26 still has,
# as its own names: there the era has nothing to serve or refuse for them (the learner's code
# gets NumPy's own), so the tests that need them missing run on NumPy 2 only.
numpy2 = pytest.mark.skipif(np.lib.NumpyVersion(np.__version__) < '2.0.0',
                            reason='NumPy 1.x still has the names NumPy 2.0 removed')


@pytest.fixture
def learner(tmp_path):
    """Install an era for code under tmp_path; `load(name, source)` imports a learner module."""
    made = []

    def setup(era):
        compat.clear_findings()
        compat.install(era, tmp_path)

        def load(name, source):
            path = tmp_path / 'pkg' / (name + '.py')
            path.parent.mkdir(exist_ok=True)
            path.write_text(textwrap.dedent(source), encoding='utf-8')
            spec = importlib.util.spec_from_file_location('era_learner_' + name, path)
            module = importlib.util.module_from_spec(spec)
            made.append(spec.name)
            spec.loader.exec_module(module)
            return module
        return load

    yield setup
    compat.uninstall()
    compat.clear_findings()
    for name in made:
        sys.modules.pop(name, None)


@numpy2
def test_book_era_serves_the_2020_aliases_and_records_each_place_once(learner):
    load = learner('book')
    m = load('aliases', '''\
        import numpy as np

        def cast(x, dtype=np.int):
            return x.astype(dtype)

        def labels(n):
            return np.zeros(n, dtype=np.int), np.float, np.float_, np.alltrue([True])
        ''')
    assert m.cast(np.array([1.7])).dtype == np.array([1]).dtype
    for _ in range(3):
        ints, flt, f64, allt = m.labels(2)
    assert ints.dtype == np.array([1]).dtype and flt is float and f64 is np.float64 and allt
    found = {(f['api'], f['where']): f for f in compat.findings()}
    assert set(found) == {('numpy.int', 'pkg/aliases.py:3'), ('numpy.int', 'pkg/aliases.py:7'),
                          ('numpy.float', 'pkg/aliases.py:7'), ('numpy.float_', 'pkg/aliases.py:7'),
                          ('numpy.alltrue', 'pkg/aliases.py:7')}
    assert found[('numpy.int', 'pkg/aliases.py:7')]['count'] == 3
    np_int = found[('numpy.int', 'pkg/aliases.py:3')]
    assert np_int['since'] == 'deprecated in NumPy 1.20, removed in NumPy 1.24'
    assert '`int`' in np_int['fix'] and 'np.int' in np_int['message']


def test_current_era_refuses_them_with_the_findings_text(learner):
    load = learner('current')
    with pytest.raises(AttributeError) as e:
        load('aliases_now', 'import numpy as np\nT = np.int\n')
    drift = compat.ALIASES['int'][1]
    assert str(e.value) == "module 'numpy' has no attribute 'int': " + drift.text
    assert compat.findings() == []


@numpy2
def test_only_the_learners_code_is_served(learner):
    learner('book')
    # this test file lies outside the submission: today's NumPy answers
    with pytest.raises(AttributeError, match='has no attribute'):
        np.int  # noqa: B018
    assert not hasattr(np, 'float_')
    assert np.float64 is np.dtype('float64').type   # existing names are untouched
    assert compat.findings() == []


@numpy2
def test_book_era_imports_the_modules_numpy_2_made_private(learner):
    load = learner('book')
    m = load('imports', '''\
        from numpy.lib import index_tricks
        from numpy.lib.arraysetops import isin
        import numpy.compat
        from numpy.compat import asstr

        def member(a, b):
            return isin(a, b)
        ''')
    assert m.member(np.array([1, 2, 3]), np.array([2])).tolist() == [False, True, False]
    assert m.index_tricks.ix_ is np.ix_ and m.asstr(b'ab') == 'ab'
    where = {(f['api'], f['where']) for f in compat.findings()}
    assert ('numpy.lib.index_tricks', 'pkg/imports.py:1') in where
    assert ('numpy.lib.arraysetops', 'pkg/imports.py:2') in where
    assert ('numpy.compat', 'pkg/imports.py:3') in where


@numpy2
def test_current_era_import_fails_with_the_findings_text(learner):
    load = learner('current')
    drift = compat.MODULES['numpy.lib.index_tricks'][1]
    with pytest.raises(ModuleNotFoundError) as e:
        load('imports_now', 'from numpy.lib import index_tricks\n')
    assert str(e.value) == "No module named 'numpy.lib.index_tricks': " + drift.text
    with pytest.raises(ModuleNotFoundError, match='made private in NumPy 2.0'):
        load('imports_now2', 'import numpy.lib.arraysetops\n')


@numpy2
def test_uninstall_leaves_numpy_as_it_was(learner):
    load = learner('book')
    load('once', 'from numpy.lib import index_tricks\nimport numpy as np\nX = np.int\n')
    compat.uninstall()
    import numpy.lib
    assert 'index_tricks' not in vars(numpy.lib) and 'numpy.lib.index_tricks' not in sys.modules
    assert getattr(vars(np).get('__getattr__'), '__compat_previous__', None) is None
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module('numpy.lib.index_tricks')


def test_a_real_cupy_gets_the_book_eras_scatter_add(tmp_path):
    """On a GPU run the real CuPy lacks `scatter_add`: the book era adds it over `add.at`."""
    calls = []
    fake = types.ModuleType('cupy')
    fake.add = types.SimpleNamespace(at=lambda a, s, v: calls.append((a, s, v)))
    compat.clear_findings()
    try:
        compat.install('book', tmp_path, cupy=fake)
        path = tmp_path / 'gpu.py'
        path.write_text('def grad(xp, gx, s, gy):\n    xp.scatter_add(gx, s, gy)\n', encoding='utf-8')
        spec = importlib.util.spec_from_file_location('era_learner_gpu', path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        module.grad(fake, 'gx', 'slices', 'gy')
        assert calls == [('gx', 'slices', 'gy')]
        assert [(f['api'], f['where']) for f in compat.findings()] == [('cupy.scatter_add', 'gpu.py:2')]

        now = types.ModuleType('cupy')
        compat.install('current', tmp_path, cupy=now)
        with pytest.raises(AttributeError, match='removed in CuPy 8'):
            now.scatter_add  # noqa: B018
    finally:
        compat.uninstall()
        compat.clear_findings()


def test_unknown_era_is_refused(tmp_path):
    with pytest.raises(ValueError, match='unknown era'):
        compat.install('2019', tmp_path)


@pytest.mark.skipif(np.lib.NumpyVersion(np.__version__) >= '2.0.0',
                    reason='on NumPy 2 these names are gone (the tests above)')
def test_on_numpy_1_the_names_numpy_still_has_are_its_own(learner):
    load = learner('book')
    m = load('own', 'import numpy as np\nF, T = np.float_, np.alltrue\nX = np.int\n')
    assert m.F is np.float64 and m.T is np.alltrue and m.X is int
    assert {f['api'] for f in compat.findings()} == {'numpy.int'}   # removed in 1.24
    compat.uninstall()
    assert hasattr(np, 'float_') and not hasattr(np, 'int')
