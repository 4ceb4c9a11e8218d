"""Stand-ins for third-party modules a submission imports and the grader's machine lacks
(`dezero_grader.sandboxed.probes.standins`), in this process: the learner's files are written to a
temporary folder, which the stand-ins and the compatibility shim take as the submission's top."""
import importlib
import sys
import textwrap

import pytest

from dezero_grader.sandboxed.probes import compat, standins

MISSING = 'no_such_module_for_standin_tests'


@pytest.fixture
def learner(tmp_path):
    """Write and import modules of a pretend submission: learner(name, source) -> module."""
    compat.clear_findings()
    compat.install('book', tmp_path)
    standins.install(folders=(str(tmp_path),), own=('pkg',))
    sys.path.insert(0, str(tmp_path))
    names = []

    def load(name, source):
        (tmp_path / (name + '.py')).write_text(textwrap.dedent(source), encoding='utf-8')
        names.append(name)
        importlib.invalidate_caches()
        return importlib.import_module(name)
    yield load
    sys.path.remove(str(tmp_path))
    for name in names + [MISSING]:
        sys.modules.pop(name, None)
    standins.uninstall()
    compat.uninstall()
    compat.clear_findings()


def found():
    return {(f['api'], f['where']): f for f in compat.findings()}


def test_an_unused_missing_import_is_a_stand_in_and_a_finding(learner):
    mod = learner('core_a', f'''\
        import math
        import {MISSING}
        from {MISSING} import profile
        from {MISSING}.sub import thing

        def double(x):
            return 2 * x
        ''')
    assert mod.double(3) == 6
    finding = found()[(MISSING, 'core_a.py:2')]
    assert finding['message'] == ('{} imported at core_a.py:2 but not installed; unused, so not '
                                  'counted'.format(MISSING))
    assert 'except ImportError' in finding['fix']
    assert len([f for f in compat.findings() if f['api'] == MISSING]) == 1


def test_using_a_stand_in_raises_a_clear_error_and_says_so_in_the_finding(learner):
    mod = learner('core_b', f'''\
        import {MISSING} as mp

        def measure():
            return mp.memory_usage()
        ''')
    with pytest.raises(ModuleNotFoundError) as e:
        mod.measure()
    assert e.value.name == MISSING
    assert 'memory_usage is used here' in str(e.value) and 'core_b.py:1' in str(e.value)
    finding = found()[(MISSING, 'core_b.py:1')]
    assert 'used at core_b.py:4, so what reached it fails' in finding['message']


@pytest.mark.parametrize('guard', ['except ImportError', 'except ModuleNotFoundError',
                                   'except (ValueError, ImportError) as e', 'except Exception',
                                   'except'])
def test_an_import_inside_try_except_import_error_sees_the_import_error(learner, guard):
    mod = learner('core_c', f'''\
        try:
            import {MISSING}
            HAVE = True
        {guard}:
            HAVE = False
        ''')
    assert mod.HAVE is False
    assert MISSING not in sys.modules and found() == {}


def test_suppress_import_error_is_a_guard_too(learner):
    mod = learner('core_d', f'''\
        import contextlib
        X = None
        with contextlib.suppress(ImportError):
            import {MISSING} as X
        ''')
    assert mod.X is None and found() == {}


def test_a_try_that_catches_something_else_does_not_guard(learner):
    mod = learner('core_e', f'''\
        try:
            import {MISSING}
        except KeyError:
            pass
        ''')
    assert isinstance(sys.modules[MISSING], standins.StandIn)
    assert (MISSING, 'core_e.py:2') in found()
    assert mod is not None


def test_subclassing_or_decorating_with_a_stand_in_is_a_use(learner):
    with pytest.raises(ModuleNotFoundError, match='Base is used here'):
        learner('core_f', f'''\
            import {MISSING}

            class Thing({MISSING}.Base):
                pass
            ''')
    with pytest.raises(ModuleNotFoundError, match='profile is used here'):
        learner('core_g', f'''\
            from {MISSING} import profile

            @profile
            def f():
                pass
            ''')


@pytest.mark.parametrize('name', ['pkg', 'pkg.missing_module', 'numpy.no_such_thing',
                                  'sqlite3.no_such'])
def test_never_stood_in(learner, name):
    # the submission's own modules, CuPy (the book's machine before step 52 has none), NumPy,
    # the standard library: their ImportError is the truth
    with pytest.raises(ImportError):
        learner('core_h', 'import {}\n'.format(name))


def test_cupy_and_dezero_are_never_stood_in(learner, monkeypatch):
    # this test process has the simulated CuPy and the reference's dezero: hide both
    from dezero_grader import reference
    from dezero_grader.sandboxed.simdevice import loader
    for name in [n for n in sys.modules if n.partition('.')[0] in ('cupy', 'cupyx', 'dezero')]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setattr(sys, 'path', [p for p in sys.path if p != str(reference.ROOT)])
    monkeypatch.setattr(sys, 'meta_path', [f for f in sys.meta_path if f is not loader._FINDER])
    for name in ('cupy', 'cupyx', 'dezero'):
        with pytest.raises(ImportError):
            learner('core_i_' + name, 'import {}\n'.format(name))
    assert found() == {}


def test_imports_made_by_code_that_is_not_the_learners_keep_their_import_error(learner):
    with pytest.raises(ImportError):
        importlib.import_module(MISSING)   # this test's own frame is outside the submission


def test_guarded_lines_reads_try_bodies_only():
    src = textwrap.dedent('''\
        try:
            import a
        except ImportError:
            import b
        else:
            import c
        import d
        ''')
    assert standins.guarded_lines(src) == frozenset({2})
