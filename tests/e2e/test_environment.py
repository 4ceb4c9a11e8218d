"""The book's environment, both ways: what a learner's code meets in the grader is what it meets
on a reader's machine. The grader's own probes work on the NumPy of either era (a loss of shape
(1,) is one number to them, as `float()` made it on NumPy 1.x)."""
import shutil
from pathlib import Path

from dezero_grader import reference
from dezero_grader.grading import run
from dezero_grader.records import schema
from dezero_grader.records.status import FAILING

SEED = 1234


def grade(path, step, **kw):
    doc = run.grade(path, step, run.Options(seed=kw.pop('seed', SEED), **kw))
    assert schema.errors('scorecard', doc) == []
    return doc


def failing(doc):
    return {c['id']: c for c in doc['checks'] if c['status'] in FAILING}


def package(tmp_path, name='sub'):
    """A copy of the reference package to edit: (its top folder, its dezero folder)."""
    top = tmp_path / name
    shutil.copytree(Path(reference.ROOT) / 'dezero', top / 'dezero',
                    ignore=shutil.ignore_patterns('__pycache__', 'data'))
    return top, top / 'dezero'


def edit(path, old, new):
    text = path.read_text(encoding='utf-8')
    assert old in text, old
    path.write_text(text.replace(old, new, 1), encoding='utf-8')


def test_a_loss_of_shape_1_is_one_number_to_the_grader(tmp_path):
    # NumPy 2 refuses float() of an array with a dimension; the training probe must still read
    # the loss trajectory, and only the checks that look at the loss's shape may object
    top, dz = package(tmp_path)
    edit(dz / 'functions.py', '        return (diff ** 2).sum() / len(diff)\n',
         '        return ((diff ** 2).sum() / len(diff)).reshape(1)\n')
    doc = grade(top, 42)
    assert doc['verdict'] == 'reject', doc['reason']
    bad = failing(doc)
    assert 'step42/regression' not in bad, bad.get('step42/regression')
    assert set(bad) <= {'step42/mse', 'step42/mse_vector'}, sorted(bad)


# -- third-party modules this machine lacks ---------------------------------------------------

NOT_INSTALLED = 'memory_profiler'   # a learner's profiler: not a dependency of the grader


def with_import(tmp_path, name, header, body=None):
    """The reference package with `header` at the top of functions.py (after its imports) and, with
    `body`, mean_squared_error starting with it."""
    top, dz = package(tmp_path, name)
    edit(dz / 'functions.py', '\nimport numpy as np\n', '\nimport numpy as np\n' + header)
    if body:
        edit(dz / 'functions.py', 'def mean_squared_error(x0, x1):\n',
             'def mean_squared_error(x0, x1):\n' + body)
    return top


def line_of(top, text):
    lines = (top / 'dezero' / 'functions.py').read_text(encoding='utf-8').splitlines()
    return lines.index(text) + 1


def test_an_unused_missing_import_is_accepted_with_a_finding(tmp_path):
    import importlib.util
    assert importlib.util.find_spec(NOT_INSTALLED) is None
    top = with_import(tmp_path, 'unused', 'from memory_profiler import profile\n')
    doc = grade(top, 42)
    assert doc['verdict'] == 'accept', failing(doc)
    line = line_of(top, 'from memory_profiler import profile')
    assert doc['compatibility'] == [dict(
        doc['compatibility'][0], api=NOT_INSTALLED, where='dezero/functions.py:{}'.format(line),
        message='memory_profiler imported at dezero/functions.py:{} but not installed; unused, so not '
                'counted'.format(line))]


def test_a_used_missing_import_fails_the_checks_that_reach_it(tmp_path):
    top = with_import(tmp_path, 'used', 'import memory_profiler\n',
                      body='    memory_profiler.memory_usage()\n')
    doc = grade(top, 42)
    assert doc['verdict'] == 'reject'
    bad = failing(doc)
    assert set(bad) == {'step42/mse', 'step42/mse_vector', 'step42/regression'}, sorted(bad)
    assert all("No module named 'memory_profiler'" in c['message'] for c in bad.values())
    assert 'memory_usage is used here' in bad['step42/mse']['message']
    finding, = doc['compatibility']
    assert 'used at dezero/functions.py:' in finding['message']


def test_a_guarded_missing_import_runs_as_the_learner_wrote_it(tmp_path):
    top = with_import(tmp_path, 'guarded', 'try:\n    import memory_profiler\nexcept ImportError:\n'
                      '    memory_profiler = None\n',
                      body='    if memory_profiler is not None:\n'
                           '        raise RuntimeError("the guard saw a module")\n')
    doc = grade(top, 42)
    assert doc['verdict'] == 'accept', failing(doc)
    assert doc['compatibility'] == []


# -- CuPy: imported first without it, as the book's readers run the code ------------------------

def test_an_unguarded_cupy_import_fails_the_import_check_before_step_52(tmp_path):
    top, dz = package(tmp_path, 'needs_cupy')
    edit(dz / 'core.py', '\nimport numpy as np\n', '\nimport numpy as np\nimport cupy as cp\n')
    doc = grade(top, 40)
    assert doc['verdict'] == 'reject', doc['reason']
    bad = failing(doc)
    assert list(bad) == ['step40/no_cupy'], sorted(bad)   # the rest is graded with the device
    message = bad['step40/no_cupy']['message']
    assert 'cannot be imported on a machine without CuPy' in message
    assert "No module named 'cupy'" in message and 'dezero/core.py' in message
    assert 'try: import cupy' in bad['step40/no_cupy']['hint']
    # without a device at all, such code cannot be graded
    assert grade(top, 40, device='cpu')['verdict'] == 'invalid'


def test_a_guarded_cupy_import_is_accepted_before_step_52(tmp_path):
    top, dz = package(tmp_path, 'guarded_cupy')
    edit(dz / 'core.py', '\nimport numpy as np\n',
         '\nimport numpy as np\ntry:\n    import cupy as cp\nexcept ImportError:\n    cp = None\n')
    doc = grade(top, 40)
    assert doc['verdict'] == 'accept', failing(doc)
    check = {c['id']: c for c in doc['checks']}['step40/no_cupy']
    assert check['status'] == 'passed' and check['points'] == 0


def test_a_cupy_annotation_evaluated_at_import_fails_at_step_52(tmp_path):
    top, dz = package(tmp_path, 'annotated')
    edit(dz / 'cuda.py', '\ndef _unwrap(x):\n',
         '\ndef as_device(x) -> cupy.ndarray:\n    return cupy.asarray(x)\n\n\ndef _unwrap(x):\n')
    doc = grade(top, 52)
    assert doc['verdict'] == 'reject', doc['reason']
    bad = failing(doc)
    assert list(bad) == ['step52/no_cupy'], sorted(bad)
    assert "has no attribute 'ndarray'" in bad['step52/no_cupy']['message']


def test_host_code_that_needs_cupy_fails_the_host_checks_at_step_52(tmp_path):
    # it imports without CuPy, but every Variable it makes reaches for cupy.ndarray: a reader
    # without a GPU cannot use it (graded with the simulated CuPy present, everything passed)
    top, dz = package(tmp_path, 'host_needs_cupy')
    edit(dz / 'core.py', 'not isinstance(data, cuda.array_types)',
         'not isinstance(data, (np.ndarray, cuda.cupy.ndarray))')
    doc = grade(top, 52)
    assert doc['verdict'] in ('reject', 'rollback'), doc['reason']
    bad = failing(doc)
    assert 'step52/no_cupy' not in bad
    assert 'step52/data.loader' in bad or any(not c.startswith('step52/device') for c in bad)
    assert any("'NoneType' object has no attribute 'ndarray'" in c['message'] for c in bad.values())


def test_gpu_enable_must_be_false_without_cupy_from_step_52(tmp_path):
    top, dz = package(tmp_path, 'always_gpu')
    edit(dz / 'cuda.py', '    array_types = (np.ndarray,)\n',
         '    array_types = (np.ndarray,)\ngpu_enable = bool(gpu_enable) or cupy is None\n')
    doc = grade(top, 52)
    bad = failing(doc)
    assert 'step52/no_cupy' in bad, sorted(bad)
    assert 'gpu_enable is True on a machine without CuPy' in bad['step52/no_cupy']['message']


def test_the_reference_imports_without_cupy_at_every_stage():
    for step in (9, 23, 40, 52, 57):
        doc = grade(reference.ROOT if step >= 23 else Path(reference.ROOT) / 'steps', step)
        assert doc['verdict'] == 'accept', (step, failing(doc))
        check = {c['id']: c for c in doc['checks']}['step{:02d}/no_cupy'.format(step)]
        assert check['status'] == 'passed'


def test_the_import_check_fails_on_the_injected_fault_that_needs_cupy(tmp_path):
    # the fault library's own variant, in a step file and in a package
    from dezero_grader.catalogue import faults
    from dezero_grader.intake import load
    from dezero_grader.records.dataflow import Fault
    fault = Fault(id='cupy-needed-at-import', step=0, title='unguarded import cupy', tier='book',
                  hint='', caught_by=(), patch='cupy_needed_at_import')
    for step, source in ((9, Path(reference.ROOT) / 'steps'), (57, Path(reference.ROOT))):
        base = load.prepare(source, step, tmp_path / 'base{}'.format(step))
        variant = faults.inject(base.root, tmp_path / 'v{}'.format(step), fault, base.entry)
        doc = grade(variant, step)
        assert doc['verdict'] == 'reject', (step, doc['reason'])
        assert list(failing(doc)) == ['step{:02d}/no_cupy'.format(step)], sorted(failing(doc))
