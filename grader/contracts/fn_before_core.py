"""The scenarios of `grader.sandboxed.probes.scenarios.fn_before_core`: parameters and report shapes."""
from grader.contracts import P, declare
from grader.contracts.functions import EVAL_PARAMS, EVAL_REPORT
from grader.contracts.shapes import ARRAY, BOOL

declare(
    'early.fn',
    "Forward at `args`; with `gy`, the input gradients for the probe's random upstream "
    "gradient (`backward`: 'method' sets y.grad and calls y.backward(); 'manual' calls "
    "each Function's backward in reverse order, as step 6 does); forward at each of "
    '`points`',
    params=dict(EVAL_PARAMS,
                call=P('str', 'varargs', 'single (steps 2-10), list (11) or varargs'),
                backward=P('str', 'method', 'none, manual (step 6) or method'),
                grad_kind=P('str', 'array', 'array, or auto (either core, steps 23-31)')),
    report=EVAL_REPORT)

declare(
    'fn.forward',
    'Forward values only, for a step whose backward needs a function of a later step (the'
    " book's step-39 `Sum.backward` calls `broadcast_to`, which arrives at step 40)",
    params={'fn': P('str'), 'cases': P('list')},
    report=[{'is_variable': BOOL, 'y': ARRAY}])
