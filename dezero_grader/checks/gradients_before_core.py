"""`grad.early`: the gradient battery for the steps before the full core (1-31).

The same battery as `grad.battery` -- forward against the reference, gradient present, shaped
and typed, backward against central differences with a random upstream gradient and against
the reference, zero upstream gives zero, inputs untouched -- judged by the same code, but
probed through `early.fn`, which speaks each early step's API: one Variable per call (steps
2-10) or a list (step 11), a backward by hand (step 6) or seeded by the caller (7-8), and
gradients that are ndarrays (before step 32; `auto` for steps 23-31, where a learner may use
either core). The reference is the final package; `early.fn` maps the early names to it.
"""
from dezero_grader.checks import Plan, register
from dezero_grader.checks.gradients import _battery_judge, _draw_all
from dezero_grader.records.dataflow import Probe

SCENARIO = 'early.fn'


def _plan(params, seed):
    args, wrt, points, _ = _draw_all(params, seed)
    backward = params.get('backward', 'method')
    base = {'fn': params['fn'], 'args': args, 'wrt': wrt, 'kwargs': params.get('kwargs', {}),
            'gy': backward != 'none', 'reseed': params.get('reseed')}
    learner = dict(base, call=params.get('call', 'varargs'), backward=backward,
                   grad_kind=params.get('grad_kind', 'array'),
                   zero_gy=params.get('zero_gy', True))
    if params.get('numeric', True) and backward != 'none':
        learner['points'] = points
    reference = (Probe(SCENARIO, base, seed, 'cpu'),) if params.get('differential', True) else ()
    return Plan(learner=(Probe(SCENARIO, learner, seed, 'cpu'),), reference=reference)


register(
    'grad.early',
    summary='the gradient battery in the API of steps 1-31: one-Variable or list calls, backward '
            'by hand or seeded, ndarray gradients',
    params={
        'fn': {'type': 'string', 'description': 'a name of the step (Square, square), a chain '
                                                '(Square>Exp), op.<name> or expr.<name>'},
        'inputs': {'type': 'array', 'items': {'type': 'object'}, 'minItems': 1},
        'wrt': {'type': 'array', 'items': {'type': 'integer', 'minimum': 0}},
        'kwargs': {'type': 'object'},
        'call': {'enum': ['single', 'list', 'varargs'],
                 'description': 'f(x) (steps 2-10), f([x0, x1]) (step 11), f(x0, x1) (12 on)'},
        'backward': {'enum': ['none', 'manual', 'method'],
                     'description': 'none (steps 1-5, 11-12), by hand (6), y.backward() (7 on)'},
        'grad_kind': {'enum': ['array', 'auto'],
                      'description': 'ndarray gradients, or whichever the core gives (23-31)'},
        'numeric': {'type': 'boolean'},
        'differential': {'type': 'boolean'},
        'zero_gy': {'type': 'boolean'},
        'reseed': {'type': ['integer', 'null']},
    },
    required=('fn', 'inputs'),
    plan=_plan,
    judge=_battery_judge,
)
