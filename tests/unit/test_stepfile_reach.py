"""Which earlier steps' checks a step file answers for (`dezero_grader.grading.stepfile_reach`), read on the
trusted side from the learner's file and the scenarios' source."""
import pytest

from dezero_grader import reference
from dezero_grader.catalogue import assignments
from dezero_grader.grading import run, stepfile_reach as reach


def _defined(tmp_path, files):
    for name, text in files.items():
        (tmp_path / name).write_text(text, encoding='utf-8')
    first = tmp_path / next(iter(files))
    return reach.defined_names(first, (tmp_path,))


def test_every_book_check_of_a_step_file_says_what_it_calls():
    # a check whose names cannot be read would never regress: none may drop out that way
    unreadable = [u.id for k in assignments.available_steps() if k <= 22
                  for u in assignments.load(k).checks
                  if u.tier == 'book' and reach.needs(u).names is None]
    assert unreadable == []


@pytest.mark.parametrize('check_id, names', [
    ('step03/chain', {'Variable', 'Square', 'Exp'}),
    ('step04/central', {'Variable', 'numerical_diff'}),          # its case alone: no Square
    ('step04/book', {'Variable', 'numerical_diff', 'Square', 'Exp'}),
    ('step09/api', {'Variable', 'square', 'exp', 'as_array'}),
    ('step10/unittests', {'Variable', reach.TESTS}),
    ('step16/diamond', {'Variable', 'square', 'add'}),              # expr.diamond's N.square
    ('step18/no_grad', {'Variable', 'square', 'no_grad', 'using_config', 'Config'}),
    ('step20/abc', {'Variable', 'Variable.__mul__', 'Variable.__add__'}),
    ('step22/rdiv', {'Variable', 'Variable.__rtruediv__'}),
])
def test_the_names_a_check_calls_are_read_from_its_parameters_and_scenario(check_id, names):
    step = int(check_id[4:6])
    (use,) = [u for u in assignments.load(step).checks if u.id == check_id]
    assert reach.needs(use).names == names


def test_the_call_convention_and_backward_are_read_too():
    by_id = {u.id: reach.needs(u) for k in (2, 6, 11, 17) for u in assignments.load(k).checks}
    assert by_id['step11/add'].call == 'list' and by_id['step11/protocol'].call == 'list'
    assert not by_id['step02/square'].backward and by_id['step06/square_backward'].backward
    assert not by_id['step17/memory'].backward and by_id['step17/chain'].backward


def test_what_a_file_defines_includes_methods_operators_blocks_and_its_own_helpers(tmp_path):
    names = _defined(tmp_path, {
        'step21.py': 'import numpy as np\nfrom common import *\n'
                     'try:\n    import weakref\nexcept ImportError:\n    weakref = None\n'
                     'if True:\n    def add(a, b):\n        return a\n'
                     'class Variable:\n    def __radd__(self, o):\n        return o\n'
                     '    __rmul__ = __radd__\n'
                     'def setup():\n    Variable.__mul__ = add\n'
                     "setattr(Variable, '__neg__', add)\n",
        'common.py': 'class Square:\n    pass\ndef _hidden():\n    pass\n',
    })
    assert {'np', 'weakref', 'add', 'Variable', 'Variable.__radd__', 'Variable.__rmul__',
            'Variable.__mul__', 'Variable.__neg__', 'Square', 'setup'} <= names
    assert 'Exp' not in names


def test_a_name_deleted_at_module_level_is_not_defined(tmp_path):
    names = _defined(tmp_path, {'step14.py': 'class Square:\n    def f(self):\n        pass\n'
                                             'def square(x):\n    pass\ndef add(a, b):\n    pass\n'
                                             'del Square, square\n'})
    assert 'add' in names and not {'Square', 'square', 'Square.f'} & names


def test_tests_of_the_files_own_count_as_unit_tests(tmp_path):
    assert reach.TESTS in _defined(tmp_path, {'a.py': 'import unittest\n'
                                              'class SquareTest(unittest.TestCase):\n    pass\n'})
    assert reach.TESTS in _defined(tmp_path, {'b.py': 'def test_square():\n    pass\n'})
    assert reach.TESTS not in _defined(tmp_path, {'c.py': 'def square():\n    pass\n'})


@pytest.mark.parametrize('text', [b'def broken(:\n', b'\xff\xfe\x00', b'x = ' + b'-' * 200_000 + b'1\n'],
                         ids=['syntax-error', 'not-source', 'past-the-parser'])
def test_a_file_this_side_cannot_read_answers_for_its_own_step_only(tmp_path, text):
    # a syntax error, bytes that are no source, a file nested past the parser: no crash here,
    # and no regression (the worker reports why the file cannot be graded)
    path = tmp_path / 'step20.py'
    path.write_bytes(text)
    assert reach.defined_names(path, (tmp_path,)) is None
    assert reach.regression(20, None) == ()


def _reference_regression(step):
    path = reference.ROOT / 'steps' / 'step{:02d}.py'.format(step)
    return {u.id: u for u in reach.regression(step, reach.defined_names(path, (path.parent,)))}


def test_step_11_takes_only_the_checks_that_call_no_function_and_later_files_not_its_list_calls():
    assert set(_reference_regression(11)) == {'step01/box', 'step09/type_check'}
    for step in (12, 13, 22):
        assert not any(i.startswith('step11/') for i in _reference_regression(step))


def test_steps_11_and_12_have_no_backward_to_regress_on():
    for step in (11, 12):
        regressed = [u for u in _reference_regression(step).values() if reach.needs(u).backward]
        assert regressed == [], [u.id for u in regressed]
    assert any(reach.needs(u).backward for u in _reference_regression(13).values())


def test_a_check_takes_the_arguments_the_later_api_asks_for():
    # from step 18 backward() drops the output's gradient unless retain_grad=True
    assert _reference_regression(17)['step14/reuse'].params['args'] == {'value': 3.0}
    assert _reference_regression(18)['step14/reuse'].params['args'] == {'value': 3.0, 'retain': True}


def test_a_check_the_later_api_no_longer_meets_is_retired_there():
    # the 0-d composite of step 4: from step 9 Variable refuses the NumPy scalar x.data - eps
    (book,) = [u for u in assignments.load(4).checks if u.id == 'step04/book']
    assert reach.at_step(book, 8) is book and reach.at_step(book, 9) is None


def test_a_grading_plans_the_regression_the_submission_carries(tmp_path):
    (tmp_path / 'step13.py').write_text(
        (reference.ROOT / 'steps' / 'step13.py').read_text(encoding='utf-8'), encoding='utf-8')
    from dezero_grader.intake import load
    sub = load.prepare(tmp_path, 13, tmp_path.parent / 'scratch')
    _, with_sub = run.checks_of(assignments.load(13), sub)
    _, without = run.checks_of(assignments.load(13))
    _, every = run.checks_of(assignments.load(13), every=True)
    assert without == () and {u.id for u in with_sub} <= {u.id for u in every}
    # looked up by id (a repro), a check is the one the grading ran, with its later arguments
    _, at_18 = run.checks_of(assignments.load(18), every=True)
    assert {u.id: u for u in at_18}['step14/reuse'].params['args']['retain'] is True
    assert 'step04/book' not in {u.id for u in at_18}
    assert {'step02/square', 'step09/seed', 'step12/add'} <= {u.id for u in with_sub}
    assert [u.step for u in with_sub] == sorted(u.step for u in with_sub)
