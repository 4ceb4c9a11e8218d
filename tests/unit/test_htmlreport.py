"""The graph probe's names and value summaries, how the judge bounds what crossed from the
worker, the graph layout, and the HTML escaping of whatever a learner's code wrote."""
import numpy as np
import pytest

import dezero
from dezero_grader.checks import trajectory
from dezero_grader.present import graph_svg, html_page
from dezero_grader.sandboxed.probes.context import Api, Ctx
from dezero_grader.sandboxed.probes.scenarios import graph as graph_probe


def _ctx(seed=7):
    return Ctx(Api(dezero, 'package'), 'cpu', seed, None)


def _trace(expr, *shapes, seed=7):
    rng = np.random.default_rng(seed)
    args = [rng.standard_normal(s) for s in shapes]
    return graph_probe.trace(_ctx(seed), expr, args), args


def test_the_trace_labels_inputs_output_and_intermediates_by_role():
    value, args = _trace('broadcast_ops', (2, 3), (3,))
    variables = value['graph']['variables']
    labels = [v['label'] for v in variables]
    assert labels[0] == 'y' and 'x0' in labels and 'x1' in labels
    assert len(set(labels)) == len(labels)     # one label per variable
    # an input's summary is its own value: first elements and extremes of the argument
    x0 = variables[labels.index('x0')]
    assert x0['data_summary']['head'] == pytest.approx(args[0].reshape(-1)[:4], rel=1e-5)
    assert x0['data_summary']['min'] == pytest.approx(args[0].min(), rel=1e-5)
    assert x0['data_summary']['size'] == args[0].size
    # the gradient's summary is the gradient the probe returned for that input
    assert x0['grad_summary']['mean'] == pytest.approx(value['grads'][0].mean(), rel=1e-5)
    # h0 is the first thing computed: a function made it from inputs only
    made_from = {o: n['inputs'] for n in value['graph']['nodes'] for o in n['outputs']}
    h0 = labels.index('h0')
    assert all(labels[i].startswith(('x', 'c')) for i in made_from[h0])


def test_a_learner_name_is_kept_and_cut():
    ctx = _ctx()
    V = dezero.Variable
    x = V(np.arange(6.0).reshape(2, 3), name='weights')
    z = V(np.ones((2, 3)), name='n' * 200)
    y = x * z
    y.backward(retain_grad=True)
    snap = graph_probe.snapshot(ctx, y, [x, z])
    labels = [v['label'] for v in snap['variables']]
    assert 'weights' in labels and 'n' * graph_probe.NAME_CHARS in labels
    assert max(len(l) for l in labels) == graph_probe.NAME_CHARS
    assert snap['variables'][labels.index('weights')]['name'] == 'weights'


def test_a_summary_stays_small_whatever_the_array():
    s = graph_probe.value_summary(np.arange(1e6))
    assert len(s['head']) == graph_probe.HEAD and s['size'] == 10 ** 6
    assert s['max'] == 999999.0 and s['mean'] == pytest.approx(499999.5, rel=5e-6)  # six digits
    assert graph_probe.value_summary(np.array(['a'])) is None
    assert graph_probe.value_summary(np.zeros(0)) is None


def test_the_judge_keeps_only_the_small_known_form_of_what_the_worker_sent():
    hostile = {'nodes': [{'type': 'Mul', 'generation': 0, 'inputs': [1], 'outputs': [0]}],
               'variables': [
                   {'shape': [2], 'dtype': 'float64', 'name': 'N' * 5000, 'label': 7,
                    'data_summary': {'head': list(range(1000)), 'min': 'low', 'max': True,
                                     'mean': 1.5, 'extra': 'x' * 10 ** 5},
                    'grad_summary': 'not a summary', 'grad': np.zeros(2)},
                   {'shape': [2], 'dtype': 'float64', 'name': None, 'label': 'x0'}]}
    out = trajectory._graph_summary(hostile)
    v = out['variables'][0]
    assert len(v['name']) <= 40 and v['label'] == 'v0'
    assert v['data_summary'] == {'mean': 1.5, 'head': [0, 1, 2, 3]}
    assert 'grad_summary' not in v and 'grad' not in v
    assert out['variables'][1]['label'] == 'x0'


def test_the_layout_runs_every_edge_left_to_right():
    value, _ = _trace('reshape_transpose_sum', (12,), (3, 2))
    graph = value['graph']
    pos = graph_svg.layout(graph)
    assert set(pos) == {('f', k) for k in range(len(graph['nodes']))} | \
        {('v', i) for i in range(len(graph['variables']))}
    for k, n in enumerate(graph['nodes']):
        assert all(pos[('v', i)][0] < pos[('f', k)][0] for i in n['inputs'])
        assert all(pos[('f', k)][0] < pos[('v', o)][0] for o in n['outputs'])
    # no two nodes share a place
    assert len(set(pos.values())) == len(pos)


def test_the_picture_marks_the_divergent_function_and_explains_each_variable():
    value, _ = _trace('deep_diamond', (3,))
    graph = trajectory._graph_summary(value['graph'])
    svg = graph_svg.graph_svg(graph, 'step16/deep_diamond', divergent=2)
    assert svg.count('data-divergent="true"') == 1
    assert 'data-node="2" data-divergent="true"' in svg
    assert svg.count('<title>') == len(graph['nodes']) + len(graph['variables'])
    assert 'x0 · Variable (3) float64 on cpu' in svg and 'grad: [' in svg


def test_learner_text_is_shown_never_obeyed():
    nasty = '<script>alert(1)</script><img src=x onerror=alert(2)>\x1b[31m"'
    graph = {'nodes': [{'type': nasty, 'generation': 0, 'inputs': [1], 'outputs': [0]}],
             'variables': [{'label': nasty, 'name': nasty, 'shape': [1], 'dtype': 'float64'},
                           {'label': 'x0', 'shape': [1], 'dtype': 'float64'}]}
    svg = graph_svg.graph_svg(graph, nasty, divergent=0)
    assert '<script' not in svg and '<img' not in svg and '\x1b' not in svg
    assert '&lt;script&gt;' in svg
    assert html_page.esc(nasty).startswith('&lt;script&gt;alert(1)&lt;/script&gt;')


def test_page_names_are_safe_and_distinct():
    names = {html_page.page_name(i) for i in ('alice', 'a/b', 'a_b', '../x', 'ünï', 'a b')}
    assert len(names) == 6
    assert all('/' not in n and not n.startswith('.') and n.endswith('.html') for n in names)
    assert html_page.page_name('alice') == 'alice.html'


def test_a_huge_graph_is_described_not_drawn():
    n = graph_svg.MAX_DRAWN
    graph = {'nodes': [{'type': 'Add', 'generation': k, 'inputs': [k], 'outputs': [k + 1]}
                       for k in range(n)],
             'variables': [{'label': 'v{}'.format(i), 'shape': [1]} for i in range(n + 1)]}
    figure = graph_svg.graph_figure(graph, 'big')
    assert '<svg' not in figure and str(2 * n + 1) in figure
    small = {'nodes': graph['nodes'][:3], 'variables': graph['variables'][:4]}
    assert graph_svg.graph_figure(small, 'small').count('data-node=') == 3
