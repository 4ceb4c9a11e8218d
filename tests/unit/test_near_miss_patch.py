"""The near-miss patches: one body, registered per fault with its parameters (`patch_with`),
whose copy in a variant is self-contained, and which scales what the target's backward returns
-- a Function class's method, or the node a public function's output comes from."""
import types

import pytest

from dezero_grader.catalogue import faults
from dezero_grader.catalogue.faults import near_miss


def _loaded(name):
    """The patch as a variant holds it: its source run alone, with nothing of the grader."""
    namespace = {}
    exec(compile(faults.source_of(name), '<variant>', 'exec'), namespace)
    return namespace[faults.PATCHES[name].__name__]


def test_the_variants_copy_runs_alone_and_scales_a_function_classs_backward():
    class Exp:
        def backward(self, gy):
            return 2.0 * gy
    dz = types.SimpleNamespace(Exp=Exp)
    _loaded('exp_grad_off_1_percent')(dz)
    assert Exp().backward(3.0) == pytest.approx(6.0 * 1.01, rel=1e-12)


def test_a_public_functions_node_gets_the_scaled_backward_and_an_inputs_node_does_not():
    class Node:
        def backward(self, gy):
            return gy, 2 * gy

    class Var:
        def __init__(self, creator=None):
            self.creator = creator
    earlier = Node()
    x = Var(earlier)

    def matmul(a, b):
        return Var(Node())

    def sum_to(a, shape):
        return a                       # already of that shape: the input itself
    dz = types.SimpleNamespace(functions=types.SimpleNamespace(matmul=matmul, sum_to=sum_to))
    _loaded('matmul_grad_off_1_permille')(dz)
    _loaded('sum_to_grad_off_1_percent')(dz)
    y = dz.functions.matmul(x, Var())
    assert y.creator.backward(1.0) == pytest.approx((1.001, 2.002), rel=1e-12)
    assert dz.functions.sum_to(x, (2,)) is x and x.creator.backward(1.0) == (1.0, 2.0)


def test_a_target_the_submission_lacks_says_the_fault_does_not_apply():
    with pytest.raises(AttributeError, match='does not apply.*functions.linear'):
        _loaded('linear_grad_off_1_percent')(types.SimpleNamespace(functions=object()))


def test_patch_with_takes_plain_literals_under_a_new_identifier():
    with pytest.raises(ValueError, match='registered twice'):
        faults.patch_with('exp_grad_off_1_percent', near_miss.grad_scaled, target='Exp', factor=1.0)
    with pytest.raises(ValueError, match='not an identifier'):
        faults.patch_with('not-a-name', near_miss.grad_scaled, target='Exp', factor=1.0)
    with pytest.raises(ValueError, match='not a plain literal'):
        faults.patch_with('test_only_nan', near_miss.grad_scaled, target='Exp', factor=float('nan'))
    assert 'test_only_nan' not in faults.PATCHES
