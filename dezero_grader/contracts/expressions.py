"""The composite expressions scenarios evaluate by name: one registry, keyed by the scenario.

Two scenarios take an expression's name from an assignment: `early.fn` (`fn: "expr.<name>"`,
steps 13-33, a body `f(N, *xs)` written with the names a step has, `N` the step's functions by
name) and `graph.trace` (`expr: "<name>"`, a body `f(ctx, F, *xs)` on the full package, `F` its
`functions`). The bodies run in the worker and sit beside the scenarios that call them
(`dezero_grader/sandboxed/probes/scenarios/`); they register here, under their scenario's name,
so one name may mean one expression for each scenario (`diamond` is written in step 16's
functions for `early.fn`, in operators for `graph.trace`). The trusted side never imports the
bodies: `dezero_grader.grading.stepfile_reach` finds `early.fn`'s in the scenarios' source by
this decorator's name and its literal arguments.
"""
from __future__ import annotations

from typing import Callable

DECORATOR = 'expression'      # how a body is registered, as the scenarios' source spells it
SCENARIOS = ('early.fn', 'graph.trace')

EXPRESSIONS: dict[tuple[str, str], Callable] = {}


def expression(scenario, name):
    """Register the decorated body as expression `name` of `scenario` (both literal strings,
    so that the source can be read without running it)."""
    if scenario not in SCENARIOS:
        raise ValueError('no scenario {!r} evaluates expressions (those that do: {})'.format(
            scenario, ', '.join(SCENARIOS)))
    if (scenario, name) in EXPRESSIONS:
        raise ValueError('expression {!r} of {!r} registered twice'.format(name, scenario))

    def register(fn):
        EXPRESSIONS[scenario, name] = fn
        return fn
    return register


def body(scenario, name) -> Callable:
    """The body of expression `name` of `scenario` (KeyError, naming it, if there is none)."""
    try:
        return EXPRESSIONS[scenario, name]
    except KeyError:
        raise KeyError(name) from None
