"""Graph properties of the reference DeZero's core (steps 14-19, 21, 26, 59), on every device.

Generation ordering on diamond graphs, gradient accumulation for reused variables, memory
release through weak references, the `no_grad` / `using_config` / `retain_grad` switches,
`unchain_backward`, Variable metadata, and the DOT text of `get_dot_graph` (parsed, never
compared as a string, since node ids are object ids).
"""
import gc
import re
import weakref

import numpy as np
import pytest

import dezero
import dezero.core_simple as simple
import dezero.functions as F
from dezero import Config, Function, Variable, no_grad, using_config
from dezero.utils import get_dot_graph


def scalar(device, value):
    return Variable(device.to_device(np.array(value)))


def value(device, v):
    return float(device.to_host(v))


# -----------------------------------------------------------------------------
# Generations: each function runs once, after all its outputs' grads are complete
# -----------------------------------------------------------------------------
def test_diamond_of_the_book(device):
    x = scalar(device, 2.0)
    a = x ** 2
    y = a ** 2 + a ** 2
    y.backward()
    assert value(device, y) == 32.0
    assert value(device, x.grad) == 64.0


@pytest.mark.parametrize('depth', [1, 2, 3, 5])
def test_stacked_diamonds(device, depth):
    """u_{k+1} = u_k^2 + u_k^2 = 2 u_k^2, so du_{k+1}/du_k = 4 u_k."""
    x = scalar(device, 0.9)
    u, us = x, []
    for _ in range(depth):
        us.append(value(device, u))
        u = u ** 2 + u ** 2
    u.backward()
    expected = np.prod([4 * uk for uk in us])
    assert value(device, x.grad) == pytest.approx(expected, rel=1e-12)


def test_branches_of_different_depths(device):
    """y = a + a*cos(sin(a)), a = x*x: the short branch must wait for the long one."""
    x0 = 0.7
    x = scalar(device, x0)
    a = x * x
    y = a * F.cos(F.sin(a)) + a
    y.backward()
    a0 = x0 * x0
    dy_da = 1 + np.cos(np.sin(a0)) - a0 * np.sin(np.sin(a0)) * np.cos(a0)
    assert value(device, x.grad) == pytest.approx(dy_da * 2 * x0, rel=1e-12)


class CountingSquare(Function):
    """x^2 that counts its backward calls (every function must run exactly once)."""

    calls = 0

    def forward(self, x):
        return x ** 2

    def backward(self, gy):
        CountingSquare.calls += 1
        x, = self.inputs
        return 2 * x * gy


def test_each_function_runs_backward_once(device):
    CountingSquare.calls = 0
    x = scalar(device, 1.5)
    a = CountingSquare()(x)
    b = CountingSquare()(a)
    c = CountingSquare()(a)
    y = b + c + a
    y.backward()
    assert CountingSquare.calls == 3
    # y = 2 x^4 + x^2
    assert value(device, x.grad) == pytest.approx(8 * 1.5 ** 3 + 2 * 1.5, rel=1e-12)


def test_generation_numbers(device):
    x = scalar(device, 1.0)
    a = F.sin(x)
    b = F.exp(a)
    y = a + b
    assert (x.generation, a.generation, b.generation, y.generation) == (0, 1, 2, 3)
    assert y.creator.generation == 2 and a.creator.generation == 0


# -----------------------------------------------------------------------------
# Reused variables: accumulation, never in place
# -----------------------------------------------------------------------------
def test_add_x_x_gives_2(device):
    x = scalar(device, 3.0)
    y = dezero.core.add(x, x)
    y.backward()
    assert value(device, x.grad) == 2.0


def test_x_plus_x_plus_x_gives_3(device):
    x = scalar(device, 3.0)
    y = x + x + x
    y.backward()
    assert value(device, x.grad) == 3.0


def test_cleargrad_starts_afresh(device):
    x = scalar(device, 3.0)
    (x + x).backward()
    x.cleargrad()
    (x + x + x).backward()
    assert value(device, x.grad) == 3.0


def test_grads_accumulate_across_backward_calls_without_cleargrad(device):
    x = scalar(device, 3.0)
    (x * x).backward()
    (x * x).backward()
    assert value(device, x.grad) == 12.0


def test_seed_grad_is_not_mutated_in_place(device):
    x = scalar(device, 3.0)
    y = dezero.core.add(x, x)
    y.backward(retain_grad=True)
    assert value(device, y.grad) == 1.0
    assert value(device, x.grad) == 2.0


def test_upstream_grad_given_by_the_caller_is_not_mutated(device):
    x = Variable(device.to_device(np.array([1.0, 2.0])))
    y = x + x
    seed = device.to_device(np.array([5.0, 7.0]))
    y.grad = Variable(seed)
    y.backward()
    np.testing.assert_array_equal(device.to_host(seed), [5.0, 7.0])
    np.testing.assert_array_equal(device.to_host(x.grad), [10.0, 14.0])


def test_simple_core_seed_grad_is_not_mutated_in_place():
    """The ndarray grads of the simple core are where an in-place += would alias."""
    simple.setup_variable()
    x = simple.Variable(np.array(3.0))
    y = simple.add(x, x)
    y.backward(retain_grad=True)
    assert float(y.grad) == 1.0 and float(x.grad) == 2.0
    assert y.grad is not x.grad


# -----------------------------------------------------------------------------
# Memory: outputs are weak references, graphs die without the cycle collector
# -----------------------------------------------------------------------------
def test_function_outputs_are_weak_references(device):
    x = scalar(device, 1.0)
    y = F.sin(x)
    f = y.creator
    assert all(isinstance(o, weakref.ref) for o in f.outputs)
    assert f.outputs[0]() is y
    assert f.inputs[0] is x


def test_graphs_are_freed_by_reference_counting_alone(device):
    refs = []
    gc.collect()
    gc.disable()  # prove that no reference cycle keeps a graph alive
    try:
        for _ in range(10):
            x = Variable(device.to_device(np.random.RandomState(0).randn(10000)))
            y = F.sin(F.exp(x * 2) + x) ** 2
            refs.append((weakref.ref(y), weakref.ref(y.creator), weakref.ref(y.creator.inputs[0])))
            y.backward()
            del y
        del x
        alive = [r for triple in refs for r in triple if r() is not None]
        assert not alive, '{} graph objects survived without the cycle collector'.format(
            len(alive))
    finally:
        gc.enable()


def test_output_dies_while_its_function_is_kept(device):
    x = scalar(device, 1.0)
    y = F.exp(x)
    f = y.creator
    ref = weakref.ref(y)
    del y
    assert ref() is None
    assert f.outputs[0]() is None


# -----------------------------------------------------------------------------
# Modes: no_grad, using_config, retain_grad, unchain_backward
# -----------------------------------------------------------------------------
def test_no_grad_builds_no_graph(device):
    x = scalar(device, 2.0)
    with no_grad():
        y = F.sin(x) * x
    assert y.creator is None
    assert y.generation == 0
    np.testing.assert_allclose(device.to_host(y), np.sin(2.0) * 2.0)
    assert (F.sin(x) * x).creator is not None


def test_no_grad_restores_the_flag_after_an_exception():
    with pytest.raises(ZeroDivisionError):
        with no_grad():
            assert Config.enable_backprop is False
            1 / 0
    assert Config.enable_backprop is True


def test_using_config_nests_and_restores():
    assert (Config.enable_backprop, Config.train) == (True, True)
    with using_config('enable_backprop', False):
        with using_config('train', False):
            with using_config('enable_backprop', True):
                assert (Config.enable_backprop, Config.train) == (True, False)
            assert (Config.enable_backprop, Config.train) == (False, False)
        assert (Config.enable_backprop, Config.train) == (False, True)
        with dezero.test_mode():
            assert Config.train is False
    assert (Config.enable_backprop, Config.train) == (True, True)


def test_using_config_restores_after_an_exception_in_a_nested_block():
    with pytest.raises(KeyError):
        with using_config('train', False):
            with no_grad():
                raise KeyError('boom')
    assert (Config.enable_backprop, Config.train) == (True, True)


def test_retain_grad_false_frees_intermediate_grads(device):
    x0, x1 = scalar(device, 1.0), scalar(device, 1.0)
    t = x0 + x1
    y = x0 + t
    y.backward()
    assert y.grad is None and t.grad is None
    assert (value(device, x0.grad), value(device, x1.grad)) == (2.0, 1.0)


def test_retain_grad_true_keeps_intermediate_grads(device):
    x0, x1 = scalar(device, 1.0), scalar(device, 1.0)
    t = x0 * x1
    y = F.sin(t)
    y.backward(retain_grad=True)
    assert value(device, y.grad) == 1.0
    assert value(device, t.grad) == pytest.approx(np.cos(1.0), rel=1e-15)


def test_unchain_backward_cuts_the_graph_but_keeps_the_roots_creator(device):
    x = scalar(device, 0.5)
    a = F.sin(x)
    b = F.exp(a)
    c = b * 3
    creator = c.creator
    c.unchain_backward()
    assert c.creator is creator
    assert b.creator is None and a.creator is None
    c.backward()
    assert value(device, b.grad) == 3.0
    assert a.grad is None and x.grad is None


def test_unchain_cuts_one_link(device):
    x = scalar(device, 0.5)
    y = F.sin(x)
    y.unchain()
    assert y.creator is None


# -----------------------------------------------------------------------------
# Variable metadata and construction
# -----------------------------------------------------------------------------
def test_variable_metadata(device):
    x = Variable(device.to_device(np.array([[1, 2, 3], [4, 5, 6]], dtype=np.int32)), name='x')
    assert x.name == 'x'
    assert (x.shape, x.ndim, x.size, x.dtype, len(x)) == ((2, 3), 2, 6, np.int32, 2)
    assert (x.grad, x.creator, x.generation) == (None, None, 0)


def test_variable_repr(device):
    x = Variable(device.to_device(np.array([[1, 2, 3], [4, 5, 6]])))
    assert repr(x) == 'variable([[1 2 3]\n          [4 5 6]])'
    assert repr(Variable(device.to_device(np.array(1.5)))) == 'variable(1.5)'
    assert repr(Variable(None)) == 'variable(None)'


@pytest.mark.parametrize('data', [1.0, 3, np.float64(1.0), [1.0, 2.0], 'text'],
                         ids=['float', 'int', 'numpy scalar', 'list', 'str'])
def test_variable_rejects_non_arrays(data):
    with pytest.raises(TypeError):
        Variable(data)


@pytest.mark.parametrize('op', ['+', '-', '*', '/'])
def test_ndarray_op_variable_returns_a_variable(device, op):
    a = device.to_device(np.array([1.0, 2.0, 4.0]))
    x = Variable(device.to_device(np.array([2.0, 4.0, 8.0])))
    y = {'+': lambda: a + x, '-': lambda: a - x, '*': lambda: a * x, '/': lambda: a / x}[op]()
    assert isinstance(y, Variable)
    expected = {'+': [3, 6, 12], '-': [-1, -2, -4], '*': [2, 8, 32], '/': [0.5, 0.5, 0.5]}[op]
    np.testing.assert_array_equal(device.to_host(y), expected)
    assert Variable.__array_priority__ > 100  # above NumPy's and CuPy's own


# -----------------------------------------------------------------------------
# get_dot_graph
# -----------------------------------------------------------------------------
_NODE = re.compile(r'^(\d+) \[label="([^"]*)", color=(\w+), style=filled(, shape=box)?\]$')
_EDGE = re.compile(r'^(\d+) -> (\d+)$')


def parse_dot(text):
    """(nodes: id -> (label, kind), edges: set of (from id, to id)) of a DOT text."""
    lines = text.strip().split('\n')
    assert lines[0] == 'digraph g {' and lines[-1] == '}', 'not a `digraph g {...}` text'
    nodes, edges = {}, set()
    for line in lines[1:-1]:
        node, edge = _NODE.match(line), _EDGE.match(line)
        assert node or edge, 'unexpected DOT line {!r}'.format(line)
        if node:
            kind = 'function' if node.group(4) else 'variable'
            assert node.group(3) == ('lightblue' if node.group(4) else 'orange')
            nodes[node.group(1)] = (node.group(2), kind)
        else:
            edges.add(edge.groups())
    return nodes, edges


def test_get_dot_graph_has_the_right_nodes_and_edges(device):
    x = Variable(device.to_device(np.array(1.0)), name='x')
    y = Variable(device.to_device(np.array(2.0)), name='y')
    t = x * y
    t.name = 't'
    z = t + x
    z.name = 'z'
    nodes, edges = parse_dot(get_dot_graph(z, verbose=False))
    label = {i: lab for i, (lab, _) in nodes.items()}
    assert sorted(nodes.values()) == sorted([
        ('x', 'variable'), ('y', 'variable'), ('t', 'variable'), ('z', 'variable'),
        ('Mul', 'function'), ('Add', 'function')])
    named_edges = {(label[a], label[b]) for a, b in edges}
    assert named_edges == {('x', 'Mul'), ('y', 'Mul'), ('Mul', 't'),
                           ('t', 'Add'), ('x', 'Add'), ('Add', 'z')}
    assert len(edges) == 6


def test_get_dot_graph_verbose_labels(device):
    x = Variable(device.to_device(np.ones((2, 3))), name='x')
    y = F.sum(x, axis=0)
    nodes, _ = parse_dot(get_dot_graph(y, verbose=True))
    labels = sorted(lab for lab, kind in nodes.values() if kind == 'variable')
    assert labels == ['(3,) float64', 'x: (2, 3) float64']
    assert [lab for lab, kind in nodes.values() if kind == 'function'] == ['Sum']


def test_get_dot_graph_of_a_leaf_is_one_node(device):
    x = Variable(device.to_device(np.array(1.0)), name='x')
    nodes, edges = parse_dot(get_dot_graph(x))
    assert list(nodes.values()) == [('x: () float64', 'variable')] and not edges
