"""The scenarios of `dezero_grader.sandboxed.probes.scenarios.functions`: parameters and report shapes."""
from dezero_grader.contracts import P, declare
from dezero_grader.contracts.shapes import ARRAY, BOOL, DESCRIBED, NONE, Sized, When

# what the gradient battery gives a function evaluation (`early.fn` takes these too)
EVAL_PARAMS = {
    'fn': P('str'), 'args': P('list', doc='drawn by the trusted side'),
    'wrt': P('list', doc='the indexes of the arguments that are Variables'),
    'kwargs': P(('dict', 'null'), None), 'gy': P('bool', False, 'backward with the upstream '
                                                 'gradient derived from the probe\'s seed'),
    'points': P('list', (), 'argument lists to evaluate the forward at'),
    'zero_gy': P('bool', False, 'also backward with a zero upstream gradient'),
    'reseed': P(('int', 'null'), None, 'reseed NumPy (and the device) before the call'),
}
# the gradients (with `gy`) are in the order of `wrt`, one per argument it names; a forward
# value per point; nothing the probe asks for may be missing, nothing it does not ask for there
EVAL_REPORT = {
    'y': ARRAY, 'y_info': DESCRIBED, 'output_is_variable': BOOL,
    'grads': When('gy', Sized(ARRAY | NONE, 'wrt')),
    'grad_info': When('gy', Sized(DESCRIBED, 'wrt')),
    'zero_grads': When(('gy', 'zero_gy'), Sized(ARRAY | NONE, 'wrt')),
    'inputs_after': Sized(ARRAY, 'wrt'), 'points': Sized(ARRAY, 'points'),
}

declare(
    'fn.eval',
    "Forward at `args`; with `gy`, backward with the probe's random upstream gradient; "
    'and forward at each of `points` (each a full argument list)',
    params=EVAL_PARAMS,
    report=EVAL_REPORT)
