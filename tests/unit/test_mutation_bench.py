"""bench/mutation.py's mutator: every site gives a program that compiles and differs from the
reference in that one place, inside a Function the owning step grades."""
import ast
import importlib.util
from pathlib import Path

from dezero_grader import reference
from dezero_grader.catalogue import assignments

BENCH = Path(__file__).resolve().parents[2] / 'bench' / 'mutation.py'
spec = importlib.util.spec_from_file_location('mutation_bench', BENCH)
mutation = importlib.util.module_from_spec(spec)
spec.loader.exec_module(mutation)


def test_every_mutant_compiles_and_changes_exactly_its_site():
    for filename in ('functions.py', 'core.py'):
        source = (reference.ROOT / 'dezero' / filename).read_text(encoding='utf-8')
        original = ast.dump(ast.parse(source))
        found = mutation.mutants(filename, source)
        assert len(found) > 10, filename
        seen = set()
        for owner, method, line, what, text in found:
            compile(text, filename, 'exec')
            dumped = ast.dump(ast.parse(text))
            assert dumped != original, (owner, line, what)
            seen.add(dumped)
        assert len(seen) == len(found), filename   # no two mutants are the same program
        # every site is mutated where it is (nested operations share their start)
        assert len(found) >= len(mutation.sites(filename, source)) - 2


def test_each_owner_is_a_step_that_grades_its_function():
    for (filename, owner), step in mutation.OWNERS.items():
        a = assignments.load(step)
        assert a.checks, (owner, step)
        assert hasattr(__import__('reference.dezero.' + filename[:-3], fromlist=['x']), owner)


def test_a_mutant_is_rejected_when_its_owning_steps_own_checks_fail():
    # a core operator mutant fails step 40's checks and, with them, earlier contracts that
    # step 40 re-runs: a rollback is a rejection by the owning step too
    assert mutation.is_rejected('rollback', {'step40/broadcast_mul': 'failed'})
    assert mutation.is_rejected('reject', {'step40/broadcast_mul': 'error'})
    # a rollback for an earlier step alone is not the owning step's doing
    assert not mutation.is_rejected('rollback', {})
    assert not mutation.is_rejected('accept', {})
