"""What every scenario takes and what it reports, declared apart from the scenario bodies.

Scenarios run inside the sandboxed worker; assignments name them (`"scenario"`, `"args"`) and
checks judge their reports by path (`expect[].path`). This package is that contract, as data the
trusted process can read without importing a line of scenario code: one declaration per
scenario (its parameters and the shape of its report), in a module per scenario module
(`dezero_grader/contracts/conv.py` declares `dezero_grader/sandboxed/probes/scenarios/conv.py`). The registry refuses a
scenario that is not declared here or whose signature differs from its declaration; an
assignment is validated against the declarations when it loads (`dezero_grader.catalogue.assignments`).
"""
from __future__ import annotations

import difflib
import importlib
import inspect
import pkgutil
from dataclasses import dataclass
from typing import Any, Callable, Mapping

from dezero_grader.contracts.shapes import (P, Param, REQUIRED, close_paths, conformance, kind_fits,
                                            kind_of, path_problem)

DECLARED: dict[str, 'Declaration'] = {}


@dataclass(frozen=True)
class Declaration:
    name: str
    summary: str
    params: Mapping[str, Param]
    report: Any                  # what the worker sends: raw values, held against it first
    # `derive(report, params) -> report`: what the trusted side computes from the raw values
    # (a comparison, a count, a statistic) before judges read it, and the shape of the result
    # that judges read and expectation paths name; None where judges read the report as sent
    derive: Callable | None = None
    judged: Any = None

    @property
    def read_shape(self):
        """The shape of what judges read: the derived report's, or the report's as sent."""
        return self.report if self.derive is None else self.judged

    def judged_report(self, value, params=None):
        """The report judges read: `derive`d on the trusted side from what the worker sent (a
        `{"__skipped__"}` report as it is)."""
        if self.derive is None or (isinstance(value, dict) and '__skipped__' in value):
            return value
        return self.derive(value, self.args_of(params))

    def param_problems(self, args) -> list:
        """What is wrong with `args` for this scenario: unknown names, missing required ones,
        values of the wrong kind."""
        out = []
        for key in sorted(args):
            spec = self.params.get(key)
            if spec is None:
                close = difflib.get_close_matches(key, list(self.params), n=2, cutoff=0.5)
                out.append('scenario {!r} has no parameter {!r} (its parameters: {}){}'.format(
                    self.name, key, ', '.join(sorted(self.params)) or 'none',
                    '; did you mean {}?'.format(' or '.join(map(repr, close))) if close else ''))
            elif not kind_fits(args[key], spec.kinds):
                out.append('parameter {!r} of scenario {!r} takes {}, found {}'.format(
                    key, self.name, '/'.join(spec.kinds), kind_of(args[key])))
        missing = [k for k, spec in self.params.items() if spec.required and k not in args]
        if missing:
            out.append('scenario {!r} needs parameter(s) {}'.format(
                self.name, ', '.join(map(repr, missing))))
        return out

    def args_of(self, params) -> dict:
        """A probe's parameters with this scenario's defaults for those it leaves out."""
        out = {k: spec.default for k, spec in self.params.items() if not spec.required}
        out.update(params or {})
        return out

    def report_problems(self, value, params=None) -> list:
        """How a report of this scenario, for a probe with `params`, does not fit the declared
        shape (`dezero_grader.contracts.shapes.conformance`: `Problem`s, `forged` where only a forged
        answer gives one)."""
        return conformance(self.report, value, params=self.args_of(params))

    def may_send(self, key) -> bool:
        """Whether this scenario's report declares a top-level `key` (such as `unreferenced`)."""
        return isinstance(self.report, dict) and key in self.report

    def path_problem(self, path) -> str | None:
        """None if an expectation may name `path` in this scenario's report, else why not (with
        the closest declared paths)."""
        why = path_problem(self.read_shape, path)
        if why is None:
            return None
        close = close_paths(self.read_shape, path)
        return '{!r} is not in the report of scenario {!r}: {}{}'.format(
            path, self.name, why,
            ' (closest declared paths: {})'.format(', '.join(close)) if close else '')


def declare(name, summary, params=None, report=None, derive=None, judged=None):
    """Declare scenario `name`: its parameters (`{name: P(...)}`) and its report's shape; with
    `derive`, also what the trusted side computes from that report and the shape (`judged`) of
    what judges then read."""
    if name in DECLARED:
        raise ValueError('scenario {!r} declared twice'.format(name))
    if (derive is None) != (judged is None):
        raise ValueError('scenario {!r}: derive and judged come together'.format(name))
    DECLARED[name] = Declaration(name, summary, dict(params or {}), report, derive, judged)
    return DECLARED[name]


_IMPORTED = []   # set once this package's modules are imported


def load_all() -> dict:
    """Every declaration (the modules of this package declare at import). The package's folder
    is listed once per process: a grading asks hundreds of times (once per report it reads)."""
    if not _IMPORTED:
        for info in sorted(pkgutil.iter_modules(__path__), key=lambda i: i.name):
            if info.name not in ('shapes', 'derived'):
                importlib.import_module('{}.{}'.format(__name__, info.name))
        _IMPORTED.append(True)
    return DECLARED


def unknown_scenario(name) -> str:
    close = difflib.get_close_matches(name, list(load_all()), n=3, cutoff=0.6)
    return 'names unknown scenario {!r}{}'.format(
        name, ' (did you mean {}?)'.format(' or '.join(map(repr, close))) if close else '')


def signature_problems(name, fn) -> list:
    """How the parameters of the scenario function `fn(ctx, ...)` differ from its declaration."""
    decl = load_all().get(name)
    if decl is None:
        return ['scenario {!r} is registered but not declared in dezero_grader.contracts'.format(name)]
    sig = list(inspect.signature(fn).parameters.values())[1:]   # after ctx
    found = {p.name: (REQUIRED if p.default is inspect.Parameter.empty else p.default)
             for p in sig}
    out = []
    for key in sorted(set(found) | set(decl.params)):
        if key not in decl.params:
            out.append('parameter {!r} is not declared'.format(key))
        elif key not in found:
            out.append('declared parameter {!r} is not a parameter of the function'.format(key))
        elif (found[key] is REQUIRED) != decl.params[key].required or (
                found[key] is not REQUIRED and found[key] != decl.params[key].default):
            out.append('parameter {!r}: the function\'s default is {}, the declaration\'s '
                       '{}'.format(key, _default(found[key]), _default(decl.params[key].default)))
    return out


def _default(d):
    return 'none (required)' if d is REQUIRED else repr(d)


__all__ = ['DECLARED', 'Declaration', 'P', 'declare', 'load_all', 'signature_problems',
           'unknown_scenario']
