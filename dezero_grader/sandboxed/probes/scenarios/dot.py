"""The computational graph as DOT text (step 26): `utils.get_dot_graph` read back into nodes and
edges, next to the graph the Variables themselves describe (`creator`, `inputs`, `outputs`).

Node ids are whatever the learner chose (the book uses `id()`), so edges are reported by label:
a variable's name (empty when unnamed; `name: shape dtype` with `verbose`), a function's class
name. Rendering with Graphviz (`plot_dot_graph`) is not probed: it needs the `dot` program.
"""
import re

from dezero_grader.sandboxed.probes.registry import scenario
from dezero_grader.sandboxed.probes.scenarios.single_file import phase

_NODE = re.compile(r'^\s*(\S+)\s*\[(.*)\]\s*;?\s*$')
_EDGE = re.compile(r'^\s*(\S+)\s*->\s*(\S+)\s*;?\s*$')
_LABEL = re.compile(r'label\s*=\s*"([^"]*)"')


def parse(text):
    """(labels by node id, {id: 'variable' | 'function'}, edges as id pairs) of DOT text."""
    labels, kinds, edges = {}, {}, []
    for line in str(text).splitlines():
        edge = _EDGE.match(line)
        if edge:
            edges.append((edge.group(1), edge.group(2)))
            continue
        node = _NODE.match(line)
        if node:
            attrs = node.group(2)
            label = _LABEL.search(attrs)
            # a blank label drawn as spaces is still blank: Graphviz shows the same node
            labels[node.group(1)] = label.group(1).strip() if label else ''
            kinds[node.group(1)] = 'function' if 'box' in attrs else 'variable'
    return labels, kinds, edges


def _expected(y, verbose):
    """The graph behind `y` from the public attributes: edges and node labels."""
    def var_label(v):
        name = v.name if v.name is not None else ''
        if verbose and v.data is not None:
            name = (name + ': ' if v.name is not None else '') + '{} {}'.format(v.shape, v.dtype)
        return name

    edges, variables, functions, seen, stack = [], {var_label(y)}, [], set(), [y.creator]
    while stack:
        f = stack.pop()
        if f is None or id(f) in seen:
            continue
        seen.add(id(f))
        functions.append(type(f).__name__)
        for x in f.inputs:
            edges.append([var_label(x), type(f).__name__])
            variables.add(var_label(x))
            stack.append(x.creator)
        for ref in f.outputs:
            out = ref() if callable(ref) else ref
            edges.append([type(f).__name__, var_label(out)])
    return sorted(set(map(tuple, edges))), sorted(variables), sorted(functions)


@scenario('graph.dot')
def dot(ctx, verbose):
    """a = x0 * x1 (unnamed), y = a + x0: the DOT text's edges and labels, and those the graph
    itself gives."""
    V = ctx.api.Variable
    get_dot_graph = ctx.api.get('utils.get_dot_graph')
    rng = ctx.rng(70)
    x0 = V(rng.standard_normal((2, 3)), name='x0')
    x1 = V(rng.standard_normal((2, 3)), name='x1')
    y = x0 * x1 + x0
    y.name = 'y'
    res = {}

    def found():
        text = get_dot_graph(y, verbose=verbose)
        labels, kinds, edges = parse(text)
        return {'digraph': str(text).lstrip().startswith('digraph'),
                'edges': [list(e) for e in sorted({(labels.get(a, '?'), labels.get(b, '?'))
                                                   for a, b in edges})],
                'variables': sorted({labels[k] for k in labels if kinds[k] == 'variable'}),
                'functions': sorted(labels[k] for k in labels if kinds[k] == 'function')}
    phase(res, 'found', found)
    edges, variables, functions = _expected(y, verbose)
    res['expected'] = {'edges': [list(e) for e in edges], 'variables': variables,
                       'functions': functions}
    return res

