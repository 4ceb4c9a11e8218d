"""The scenarios of `dezero_grader.sandboxed.probes.scenarios.graph`: parameters and report shapes."""
from dezero_grader.contracts import P, declare
from dezero_grader.contracts.shapes import ARRAY, BOOL, INT, NONE, NUM, STR, Opt, Or, Sized

# `value_summary`: a few numbers that show what an array holds (None where it holds none)
SUMMARY = Or({'head': [NUM], 'size': INT, 'min': NUM, 'max': NUM, 'mean': NUM}, NONE)
# `snapshot`: functions by decreasing generation, variables by discovery (a name is cut to 40
# characters; a label is the name, or what the graph makes of the variable)
GRAPH = {
    'nodes': [{'type': STR, 'generation': INT, 'inputs': [INT], 'outputs': [INT]}],
    'variables': [{'type': STR, 'device': STR, 'shape': Opt([INT]), 'dtype': Opt(STR),
                   'name': STR | NONE, 'label': STR, 'grad': ARRAY | NONE,
                   'data_summary': SUMMARY, 'grad_summary': SUMMARY}],
}


declare(
    'graph.higher_order',
    'Derivatives of sin and of x⁴ − 2x² up to `order`, through create_graph=True',
    params={'value': P('number'), 'order': P('int')},
    report={'sin': [NUM], 'poly': [NUM], 'tanh': [NUM]})


declare(
    'graph.no_grad',
    'Under `no_grad` no graph is recorded; the mode is restored on exit and on an '
    'exception',
    params={'value': P('number')},
    report={
        'inside_records_graph': BOOL, 'inside_value': ARRAY,
        'after_exception_records_graph': BOOL,
    })


declare(
    'graph.reuse',
    'A variable used several times receives every contribution, and the seed is not '
    'modified in place by the accumulation',
    params={'value': P('number')},
    report={
        'x_plus_x': ARRAY, 'seed_after': ARRAY, 'x_plus_x_plus_x': ARRAY, 'cube': ARRAY,
        'after_cleargrad': ARRAY,
    })


declare(
    'graph.trace',
    "Evaluate a named composite expression, back-propagate the probe's random upstream "
    'gradient keeping every gradient, and snapshot the graph',
    params={'expr': P('str'), 'args': P('list'), 'labels': P('list', ()),
            'gy': P('any', None, 'unused: the upstream gradient comes from the probe\'s seed')},
    report={'y': ARRAY, 'grads': Sized(ARRAY | NONE, 'args'), 'graph': GRAPH})


declare(
    'layer.linear_lazy',
    "`Linear(out)` without in_size creates W from the first input's shape, only then",
    params={'in_size': P('int'), 'out_size': P('int'), 'batch': P('int')},
    report={
        # `b`: None where no parameter plays the bias (a vector)
        'W_before': Or([INT], NONE), 'W_after': [INT], 'b': Or([INT], NONE), 'y': [INT],
        'n_params': INT,
    })
