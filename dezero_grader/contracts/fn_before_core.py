"""The scenarios of `dezero_grader.sandboxed.probes.scenarios.fn_before_core`: parameters and report shapes."""
from dezero_grader.contracts import P, declare
from dezero_grader.contracts.functions import EVAL_PARAMS, EVAL_REPORT
from dezero_grader.contracts.shapes import ARRAY, BOOL, DESCRIBED, NONE, Sized, When


def _backward(params):
    return params.get('gy') and params.get('backward', 'method') != 'none'


def _grads(params):
    # step 6's backward by hand gives the gradient of the chain's one input
    return 1 if params.get('backward') == 'manual' else len(params.get('wrt') or ())


# `early.fn` reports what `fn.eval` does; its gradients come only with a backward
EARLY_REPORT = dict(
    EVAL_REPORT, grads=When(_backward, Sized(ARRAY | NONE, _grads)),
    grad_info=When(_backward, Sized(DESCRIBED, _grads)),
    zero_grads=When(lambda p: _backward(p) and p.get('zero_gy'), Sized(ARRAY | NONE, _grads)))

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
    report=EARLY_REPORT)

declare(
    'fn.forward',
    'Forward values only, for a step whose backward needs a function of a later step (the'
    " book's step-39 `Sum.backward` calls `broadcast_to`, which arrives at step 40)",
    params={'fn': P('str'), 'cases': P('list')},
    report=[{'is_variable': BOOL, 'y': ARRAY}])
