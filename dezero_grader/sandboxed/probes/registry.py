"""The table of scenarios a worker can run, filled by the `scenario` decorator.

Every scenario is declared in `dezero_grader.contracts` (its parameters and the shape of its report),
which is what the trusted side validates assignments against; registering one that is not
declared there, or whose parameters differ from its declaration, is refused."""
from dezero_grader.contracts import signature_problems

SCENARIOS = {}


def scenario(name):
    """Register `fn(ctx, **params) -> plain data` under `name`."""
    def register(fn):
        if name in SCENARIOS:
            raise ValueError('scenario {!r} registered twice'.format(name))
        problems = signature_problems(name, fn)
        if problems:
            raise ValueError('scenario {!r} differs from its declaration in dezero_grader.contracts: '
                             '{}'.format(name, '; '.join(problems)))
        SCENARIOS[name] = fn
        return fn
    return register
