"""Which earlier steps' checks a step file (steps 1-22) answers for, read on this side.

A package carries every earlier package step, so its grading re-runs all of their book-tier
checks. A step file is a rewrite, and what it keeps of the earlier ones is the learner's to say:
the book's own files drop `Exp` at step 10, `numerical_diff` at 11, `square` at 20. So a check
of an earlier step regresses on a step file when the file still carries what the check calls:

* the names the check looks up (`Square`, `add`, `numerical_diff`; `Variable.__mul__` for an
  operator), read from the check's parameters and from its scenario's own source (the literals
  of `ctx.api.get(...)`, the names its expression uses) -- never by running anything;
* defined by the learner's file or by the submission's own modules it imports, read from their
  syntax trees (a `def`, a `class`, an assignment, an import; a method of a class or a
  `Variable.__add__ = add` line for an operator);
* with the call convention of the step the file is for: one Variable per call before step 11, a
  list at step 11, any number from step 12 on. A check of the one-Variable steps does not apply
  to a step-11 file, and step 11's list calls apply to no later file;
* and a backward where the step has one: the book's steps 11 and 12 change the call to several
  inputs and leave backward as it was (it comes back for several inputs at step 13), so a check
  that calls backward does not regress onto them.

It is conservative: a check whose names cannot be read, or that needs a name the file does not
define where this side can see it, does not regress (a name made at run time, `globals()[...]`,
is not seen). A check that regresses is the earlier step's contract, checked as it is.
"""
import ast
import dataclasses
import functools
import typing
from pathlib import Path

from dezero_grader.catalogue import assignments
from dezero_grader.contracts import expressions
from dezero_grader.intake import load

SCENARIOS = Path(__file__).resolve().parents[1] / 'sandboxed' / 'probes' / 'scenarios'
EARLY_FN = 'early.fn'        # the scenario of `grad.early`, whose `expr.*` bodies are read
TESTS = '<tests>'            # the file's own unit tests (a TestCase class, test_* functions)
_IMPORTS_AT_MOST = 50        # own modules followed from the step file

_DUNDERS = {'add': '__add__', 'radd': '__radd__', 'sub': '__sub__', 'rsub': '__rsub__',
            'mul': '__mul__', 'rmul': '__rmul__', 'div': '__truediv__', 'rdiv': '__rtruediv__',
            'neg': '__neg__', 'pow': '__pow__'}
_BINOPS = {ast.Add: 'add', ast.Sub: 'sub', ast.Mult: 'mul', ast.Div: 'div', ast.Pow: 'pow'}
_REFLECTED = {'add': 'radd', 'sub': 'rsub', 'mul': 'rmul', 'div': 'rdiv'}


def convention(step: int) -> str:
    """How a step's Functions are called: f(x) before 11, f([x0, x1]) at 11, f(x0, x1) after."""
    return 'single' if step < 11 else 'list' if step == 11 else 'varargs'


def has_backward(step: int) -> bool:
    """Whether the book's step-`step` file can run a backward pass (by hand at 6, y.backward()
    from 7; not at 11 and 12, whose calls take several inputs before backward does)."""
    return step >= 6 and step not in (11, 12)


@functools.lru_cache(maxsize=None)
def regression_candidates(step: int) -> tuple:
    """The book-tier checks of the step files before `step`, with what each needs:
    ((CheckUse, Needs), ...), earliest step first."""
    out = []
    for k in assignments.available_steps():
        if k >= step or assignments.load(k).entry != 'single-file':
            continue
        for use in assignments.load(k).checks:
            if use.tier == 'book':
                out.append((use, needs(use)))
    return tuple(out)


def regression(step: int, defined, already=()) -> tuple:
    """The checks of earlier step files that a step-`step` file defining `defined` (from
    `defined_names`; None: unreadable) answers for, minus the ids in `already`."""
    if defined is None:
        return ()
    return tuple(later for use, need, later in _fitting(step, already) if need.names <= defined)


def any_regression(step: int, already=()) -> tuple:
    """Every check of earlier step files that some step-`step` file may answer for, as it would
    re-run there (to look a check up by its id: a repro, `--only`)."""
    return tuple(later for _, _, later in _fitting(step, already))


def _fitting(step: int, already):
    """(use, Needs, the use as it re-runs) for each earlier check whose names can be read and
    whose call convention and backward the step-`step` API has, not retired by then."""
    mine = convention(step)
    for use, need in regression_candidates(step):
        if need.names is None or use.id in already:
            continue
        if mine == 'list' and not need.names <= {'Variable'}:
            continue          # a step-11 Function takes a list: the one-Variable checks do not fit
        if need.call == 'list' and mine != 'list':
            continue          # step 11's list calls: no later step has them
        if need.backward and not has_backward(step):
            continue
        later = at_step(use, step)
        if later is not None:
            yield use, need, later


def at_step(use, step: int):
    """The check as it re-runs on a step-`step` file: with the scenario arguments its `later`
    entries give from that step on (the latest that applies), or None where one retires it."""
    args = {}
    for from_step, extra in sorted(use.later, key=lambda entry: entry[0]):
        if from_step <= step:
            if extra is None:
                return None
            args.update(extra)
    if not args:
        return use
    params = dict(use.params, args=dict(use.params.get('args', {}), **args))
    return dataclasses.replace(use, params=params)


# -- what a check needs ---------------------------------------------------------------------------
class Needs(typing.NamedTuple):
    """What a check of a step file calls: `names` (a frozenset; None when they cannot be read,
    then the check never regresses), the call convention and whether it runs a backward."""
    names: frozenset | None
    call: str = 'single'
    backward: bool = False


def needs(use) -> Needs:
    params = use.params
    if use.check == 'api.present':
        return Needs(frozenset(params['names']) | {'Variable'})
    if use.check == 'grad.early':
        names = _fn_names(params['fn'])
        return Needs(None if names is None else names | {'Variable'},
                     params.get('call', 'varargs'), params.get('backward', 'method') != 'none')
    if use.check == 'expect' and params.get('scenario'):
        found = scenario_needs(params['scenario'], params.get('args', {}))
        if found is not None:
            return found._replace(names=found.names | {'Variable'})
    return Needs(None)


def _fn_names(fn: str):
    kind, _, rest = fn.partition('.')
    if kind == 'op':
        return frozenset({'Variable.' + _DUNDERS[rest]}) if rest in _DUNDERS else None
    if kind == 'expr':
        node = _index()[1].get(rest)
        return None if node is None else _expression_names(node)
    return frozenset(fn.split('>'))


def _expression_names(node) -> frozenset:
    """The names an `expr.*` body uses: `N.square` is `square`; `a * b` is Variable.__mul__
    (a number on the left: the reflected one)."""
    holder = node.args.args[0].arg if node.args.args else None
    names = set()
    for n in ast.walk(node):
        if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and n.value.id == holder:
            names.add(n.attr)
        elif isinstance(n, ast.BinOp) and type(n.op) in _BINOPS:
            op = _BINOPS[type(n.op)]
            if isinstance(n.left, ast.Constant) and op in _REFLECTED:
                op = _REFLECTED[op]
            names.add('Variable.' + _DUNDERS[op])
        elif isinstance(n, ast.UnaryOp) and isinstance(n.op, ast.USub):
            names.add('Variable.__neg__')
    return frozenset(names)


@functools.lru_cache(maxsize=None)
def _index() -> tuple:
    """({scenario name: FunctionDef}, {expression name: FunctionDef}) of the scenarios' source,
    read as text (this side never imports what runs in the sandbox)."""
    scenarios, bodies = {}, {}
    for path in sorted(SCENARIOS.glob('*.py')):
        for node in ast.parse(path.read_text(encoding='utf-8'), str(path)).body:
            if not isinstance(node, ast.FunctionDef):
                continue
            for deco in node.decorator_list:
                if not (isinstance(deco, ast.Call) and isinstance(deco.func, ast.Name)
                        and deco.args and all(isinstance(a, ast.Constant) for a in deco.args)):
                    continue
                names = [a.value for a in deco.args]
                if deco.func.id == 'scenario':
                    scenarios[names[0]] = node
                elif deco.func.id == expressions.DECORATOR and names[:1] == [EARLY_FN]:
                    bodies[names[1]] = node
    return scenarios, bodies


def scenario_needs(name: str, args) -> Needs | None:
    """What a scenario looks up with these arguments (`Needs`), or None if unreadable.

    Read from its source: `ctx.api.get(X)` and `N.fn(X)` (X a literal, a parameter, or the loop
    variable over a parameter), `ctx.api.Name`, `ctx.api.module` (the file's own tests), and
    `Names(ctx, 'single')` or a call `f([x0, x1])` for the call convention, `.backward(` for a
    backward pass. A nested function reached only through a
    table of cases (`{'cube': cube, ...}[name]`) counts only when the arguments select it."""
    node = _index()[0].get(name)
    if node is None:
        return None
    values = _defaults(node)
    values.update(args or {})
    selected = {s for v in values.values() for s in _strings(v)}
    skip = {fn for key, fn in _case_tables(node) if key not in selected}
    loops = {}
    names, call, backward = set(), 'single', False
    for n in _walk(node, skip):
        if isinstance(n, ast.For) and isinstance(n.target, ast.Name) and isinstance(n.iter, ast.Name):
            loops[n.target.id] = n.iter.id
    for n in _walk(node, skip):
        if isinstance(n, ast.Call):
            if _is_attr(n.func, 'backward'):
                backward = True
            if _is_api(n.func, 'get') or _is_attr(n.func, 'fn'):
                found = _resolve(n.args[0] if n.args else None, values, loops)
                if found is None:
                    return None
                names |= found
            elif isinstance(n.func, ast.Name) and n.func.id == 'Names':
                if len(n.args) > 1 and isinstance(n.args[1], ast.Constant):
                    call = n.args[1].value
            elif len(n.args) == 1 and isinstance(n.args[0], ast.List) and n.args[0].elts and all(
                    isinstance(e, ast.Name) for e in n.args[0].elts):
                call = 'list'             # f([x0, x1]): step 11's convention
        elif isinstance(n, ast.Attribute) and _is_api(n, None) and n.attr not in ('get', 'kind'):
            names.add(TESTS if n.attr == 'module' else n.attr)
    return Needs(frozenset(names), call, backward)


def _defaults(node) -> dict:
    a = node.args
    out = {}
    for arg, default in zip(a.args[len(a.args) - len(a.defaults):], a.defaults):
        try:
            out[arg.arg] = ast.literal_eval(default)
        except ValueError:
            out[arg.arg] = None
    return out


def _strings(value):
    if isinstance(value, str):
        yield value
    elif isinstance(value, (list, tuple)):
        for v in value:
            yield from _strings(v)


def _case_tables(node):
    """(key, nested FunctionDef) for each dict literal of string keys naming nested functions."""
    nested = {n.name: n for n in ast.walk(node) if isinstance(n, ast.FunctionDef) and n is not node}
    for n in ast.walk(node):
        if isinstance(n, ast.Dict) and n.keys and all(
                isinstance(k, ast.Constant) and isinstance(k.value, str) for k in n.keys):
            for k, v in zip(n.keys, n.values):
                if isinstance(v, ast.Name) and v.id in nested:
                    yield k.value, nested[v.id]


def _walk(node, skip):
    todo = [node]
    while todo:
        n = todo.pop()
        if n in skip:
            continue
        yield n
        todo.extend(ast.iter_child_nodes(n))


def _is_api(n, attr):
    """`ctx.api.<attr>` (any attribute when attr is None)."""
    return (isinstance(n, ast.Attribute) and (attr is None or n.attr == attr)
            and isinstance(n.value, ast.Attribute) and n.value.attr == 'api'
            and isinstance(n.value.value, ast.Name) and n.value.value.id == 'ctx')


def _is_attr(n, attr):
    return isinstance(n, ast.Attribute) and n.attr == attr and isinstance(n.value, ast.Name)


def _resolve(arg, values, loops):
    if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
        return {arg.value}
    if isinstance(arg, ast.Name):
        value = values.get(loops.get(arg.id, arg.id))
        found = set(_strings(value))
        return found or None
    return None


# -- what a learner's file defines ----------------------------------------------------------------
def defined_names(path: Path, roots) -> frozenset | None:
    """The names the step file at `path` defines where this side can see them, with those of the
    submission's own modules it imports (found under `roots`, followed through theirs); None
    when the step file itself cannot be read here (then it answers for its own step only)."""
    tree = _tree(path)
    if tree is None:
        return None
    names, todo, seen = set(), [tree], set()
    while todo and len(seen) < _IMPORTS_AT_MOST:
        t = todo.pop()
        names |= _names_of(t)
        for module in _imported(t):
            target = _module_file(module, roots)
            if target is not None and target not in seen:
                seen.add(target)
                sub = _tree(target)
                if sub is not None:
                    todo.append(sub)
    return frozenset(names)


def _tree(path: Path):
    try:
        return load.syntax_tree(path)   # None: too large, unreadable, not Python
    except (RecursionError, MemoryError):   # nested past the parser
        return None


def _names_of(tree) -> set:
    names, deleted = set(), set()
    for stmt in _top_statements(tree.body):
        if isinstance(stmt, ast.Delete):       # `del Square, square`: gone, wherever it stands
            deleted |= {n.id for t in stmt.targets for n in ast.walk(t) if isinstance(n, ast.Name)}
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(stmt.name)
            if stmt.name.startswith('test') or (isinstance(stmt, ast.ClassDef) and (
                    stmt.name.startswith('Test') or any(_base_name(b).endswith('TestCase')
                                                        for b in stmt.bases))):
                names.add(TESTS)
            if isinstance(stmt, ast.ClassDef):
                for item in stmt.body:
                    for member in _bound(item):
                        names.add('{}.{}'.format(stmt.name, member))
        else:
            names |= set(_bound(stmt))
    for n in ast.walk(tree):      # Variable.__add__ = add, wherever it is written
        if isinstance(n, (ast.Assign, ast.AnnAssign)):
            for target in (n.targets if isinstance(n, ast.Assign) else [n.target]):
                if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name):
                    names.add('{}.{}'.format(target.value.id, target.attr))
        elif (isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == 'setattr'
              and len(n.args) >= 2 and isinstance(n.args[0], ast.Name)
              and isinstance(n.args[1], ast.Constant) and isinstance(n.args[1].value, str)):
            names.add('{}.{}'.format(n.args[0].id, n.args[1].value))
    return {name for name in names if name.split('.')[0] not in deleted}


def _top_statements(body):
    """Module-level statements, into the blocks of if/try/with/for/while (not functions)."""
    todo = list(body)
    while todo:
        stmt = todo.pop(0)
        yield stmt
        for field in ('body', 'orelse', 'finalbody'):
            if not isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                todo.extend(getattr(stmt, field, ()) or ())
        for handler in getattr(stmt, 'handlers', ()) or ():
            todo.extend(handler.body)


def _bound(stmt):
    """The plain names a statement binds in its scope."""
    if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        yield stmt.name
    elif isinstance(stmt, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
        for target in (stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]):
            for n in ast.walk(target):
                if isinstance(n, ast.Name):
                    yield n.id
    elif isinstance(stmt, ast.Import):
        for a in stmt.names:
            yield a.asname or a.name.split('.')[0]
    elif isinstance(stmt, ast.ImportFrom):
        for a in stmt.names:
            if a.name != '*':
                yield a.asname or a.name


def _base_name(node) -> str:
    if isinstance(node, ast.Attribute):
        return node.attr
    return node.id if isinstance(node, ast.Name) else ''


def _imported(tree):
    """Module names imported anywhere in the file (absolute imports only)."""
    for n in ast.walk(tree):
        if isinstance(n, ast.Import):
            for a in n.names:
                yield a.name
        elif isinstance(n, ast.ImportFrom) and not n.level and n.module:
            yield n.module


def _module_file(module: str, roots):
    parts = module.split('.')
    for root in roots:
        base = Path(root).joinpath(*parts)
        for candidate in (base.with_suffix('.py'), base / '__init__.py'):
            try:
                if candidate.is_file() and not candidate.is_symlink():
                    return candidate.resolve()
            except (OSError, ValueError):
                continue
    return None
