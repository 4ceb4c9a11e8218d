"""The scenarios of `dezero_grader.sandboxed.probes.scenarios.dot`: parameters and report shapes."""
from dezero_grader.contracts import P, declare
from dezero_grader.contracts.shapes import BOOL, STR, Phase


declare(
    'graph.dot',
    "a = x0 * x1 (unnamed), y = a + x0: the DOT text's edges and labels, and those the "
    'graph itself gives',
    params={'verbose': P('bool')},
    report={
        'found': Phase({
            'digraph': BOOL, 'edges': [[STR]], 'variables': [STR], 'functions': [STR],
        }),
        'expected': {'edges': [[STR]], 'variables': [STR], 'functions': [STR]},
    })
