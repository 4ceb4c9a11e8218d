"""The scenarios of `dezero_grader.sandboxed.probes.scenarios.api`: parameters and report shapes."""
from dezero_grader.contracts import P, declare
from dezero_grader.contracts.shapes import ANY, NONE, STR, Map, Open, Or

declare(
    'api.names',
    "For each dotted name: its kind ('class', 'function', 'module', 'value') or None",
    params={'names': P('list', doc='dotted public names, e.g. cuda.as_cupy')},
    # keyed by the names asked for; a name that fails to import reports 'error: ...'
    report=Map(STR | NONE))

declare(
    'call.values',
    "Call `target(*args)` for each case; report the value, or the exception's type",
    params={'target': P('str', doc='a dotted public name'),
            'cases': P('list', doc='one argument list per call (inner lists become tuples)')},
    report=[Or({'value': ANY, 'type': STR}, Open({'raised': STR}))])
