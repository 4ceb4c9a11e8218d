"""The vocabulary of scenario declarations: parameter specs and report shapes, the paths into
a report an expectation may name, and whether a report a scenario produced has its shape.

A report shape is plain Python:

* a leaf: `ARRAY` (an array the wire carries), `NUM`, `INT`, `BOOL`, `STR`, `NONE`, `ANY`;
* `{key: shape}`: a record with exactly these keys (`Opt(shape)`: a key that may be absent);
  `Open({...}, rest)`: these keys and, beside them, keys chosen at run time whose values are
  `rest` (`Open({...})`: more keys may come, but no path may name them);
* `[shape]`: a list whose every element has `shape`; `(a, b, ...)`: a list of fixed positions;
* `Map(shape)`: a dict with keys chosen at run time (names, ratios), every value `shape`;
* `Or(a, b, ...)`: any of these; `a | b` joins leaves;
* `Phase(shape)`: a part that runs learner code on its own: `shape`, or the exception it raised
  as `{"raised": type, "message": text}` (paths may name `raised` and `message` there);
* `Sized(item, length)`: a list of `item` whose length the probe's parameters fix (`length` is
  a parameter name, whose value's length it is, or a function of the parameters);
* `When(condition, shape)`: a key present exactly when `condition` (a parameter name, a tuple
  of them that must all be truthy, or a function of the parameters) holds for the probe.

A report is held against its shape before any judge reads it (`conformance`, with the probe's
parameters). What the grader's own scenario code alone fixes -- a key of the report's top
record missing or not declared, a list of another length than the parameters give, a `When`
key present or absent against the probe -- only a forged answer breaks: such a problem is
`forged`. Anything deeper (a record keyed by what the learner's code saved, None where a list
is due, a number where an array is) may come from unusual but honest code, which a scenario
passes on: a problem that is not `forged`.

A path is what `dezero_grader.checks.expect` resolves: dotted keys, `[3]` indexes a list, `[*]` spreads
over a list or a dict's values (`train_step.params[*]`, `[0].value`, `cases[*].repr.found`).
"""
from __future__ import annotations

import difflib
from dataclasses import dataclass
from typing import Any

REQUIRED = object()   # a parameter without a default


@dataclass(frozen=True)
class Param:
    """One parameter of a scenario: its JSON kinds and, if optional, its default."""
    kinds: tuple
    default: Any = REQUIRED
    doc: str = ''

    @property
    def required(self):
        return self.default is REQUIRED


def P(kinds, default=REQUIRED, doc=''):
    """`P('int')`, `P(('int', 'null'), None)`, `P('list', (3,), 'the input shape')`."""
    return Param((kinds,) if isinstance(kinds, str) else tuple(kinds), default, doc)


PARAM_KINDS = ('int', 'number', 'bool', 'str', 'list', 'dict', 'null', 'any')


def kind_of(value):
    """The JSON kind of a parameter value (an ndarray the trusted side drew counts as a list)."""
    if value is None:
        return 'null'
    if isinstance(value, bool):
        return 'bool'
    if isinstance(value, int):
        return 'int'
    if isinstance(value, float):
        return 'number'
    if isinstance(value, str):
        return 'str'
    if isinstance(value, dict):
        return 'dict'
    if isinstance(value, (list, tuple)) or type(value).__name__ == 'ndarray':
        return 'list'
    return type(value).__name__


def kind_fits(value, kinds):
    k = kind_of(value)
    return 'any' in kinds or k in kinds or (k == 'int' and 'number' in kinds)


class Shape:
    def __or__(self, other):
        return Or(self, other)


@dataclass(frozen=True)
class Leaf(Shape):
    kind: str

    def __repr__(self):
        return self.kind.upper()


ARRAY, NUM, INT, BOOL, STR, NONE, ANY = (Leaf(k) for k in
                                         ('array', 'num', 'int', 'bool', 'str', 'none', 'any'))


class Or(Shape):
    def __init__(self, *alternatives):
        flat = []
        for a in alternatives:
            flat.extend(a.alternatives if isinstance(a, Or) else (a,))
        self.alternatives = tuple(flat)

    def __repr__(self):
        return 'Or({})'.format(', '.join(map(repr, self.alternatives)))


@dataclass(frozen=True)
class Opt:
    shape: Any


@dataclass(frozen=True)
class Map(Shape):
    value: Any


class Open(Shape):
    def __init__(self, fields, rest=None):
        self.fields = dict(fields)
        self.rest = rest


@dataclass(frozen=True)
class Phase(Shape):
    shape: Any


class Sized(Shape):
    """A list of `item`, as long as the probe's parameters say (see the module docstring)."""

    def __init__(self, item, length):
        self.item, self.length = item, length

    def expected(self, params):
        """The length the parameters give, or None where they do not say."""
        if params is None:
            return None
        if callable(self.length):
            return self.length(params)
        value = params.get(self.length)
        return None if value is None else len(value)

    def __repr__(self):
        return 'Sized({!r}, {!r})'.format(self.item, self.length)


class When:
    """A record's key present exactly when `condition` holds for the probe's parameters."""

    def __init__(self, condition, shape):
        self.condition, self.shape = condition, shape

    def holds(self, params):
        if params is None:
            return None
        if callable(self.condition):
            return bool(self.condition(params))
        names = (self.condition,) if isinstance(self.condition, str) else self.condition
        return all(params.get(n) for n in names)


class Problem(str):
    """One way a report does not fit its shape; `forged` when only a forged answer gives it."""
    forged = False


def _problem(text, forged=False):
    p = Problem(text)
    p.forged = forged
    return p


RAISED = {'raised': STR, 'message': STR}
# what `Ctx.describe` reports of a Variable or an array (shape and dtype where it has them)
DESCRIBED = {'type': STR, 'device': STR, 'shape': Opt([INT]), 'dtype': Opt(STR)}


# -- paths ----------------------------------------------------------------------------------------
def split_path(path):
    """`a.b[*].c[2]` → ['a', 'b', '*', 'c', 2]."""
    parts = []
    for chunk in path.split('.'):
        while '[' in chunk:
            head, rest = chunk.split('[', 1)
            if head:
                parts.append(head)
            idx, chunk = rest.split(']', 1)
            parts.append('*' if idx == '*' else int(idx))
        if chunk:
            parts.append(chunk)
    return parts


def _fields(shape):
    """(fields, open) of a record shape, or None."""
    if isinstance(shape, dict):
        return shape, False
    if isinstance(shape, Open):
        return shape.fields, True
    return None


def _unwrap(shape):
    return shape.shape if isinstance(shape, (Opt, When)) else shape


def _step(shape, part):
    """The shapes one part leads to from `shape`, or a string saying why it leads nowhere."""
    shape = _unwrap(shape)
    if shape is ANY:
        return [ANY]
    if isinstance(shape, Or):
        out, why = [], None
        for a in shape.alternatives:
            r = _step(a, part)
            if isinstance(r, str):
                why = why or r
            else:
                out.extend(r)
        return out or why
    if isinstance(shape, Phase):
        if part in ('raised', 'message'):
            return [STR]
        return _step(shape.shape, part)
    rec = _fields(shape)
    if rec is not None:
        fields, _ = rec
        if part == '*':
            rest = [shape.rest] if isinstance(shape, Open) and shape.rest is not None else []
            return [_unwrap(s) for s in fields.values()] + rest
        if isinstance(part, int):
            return 'a record (keys {}) is not a list: [{}] indexes nothing'.format(
                ', '.join(sorted(fields)), part)
        if part in fields:
            return [_unwrap(fields[part])]
        if isinstance(shape, Open) and shape.rest is not None:
            return [shape.rest]
        close = difflib.get_close_matches(part, list(fields), n=3, cutoff=0.5)
        return 'there is no key {!r} (keys: {}{})'.format(
            part, ', '.join(sorted(fields)),
            '; did you mean {}?'.format(' or '.join(map(repr, close))) if close else '')
    if isinstance(shape, Map):
        if isinstance(part, int):
            return 'a dict keyed by name is not a list: [{}] indexes nothing'.format(part)
        return [shape.value]
    if isinstance(shape, (list, Sized)):
        if part == '*' or isinstance(part, int):
            return [shape.item if isinstance(shape, Sized) else shape[0]]
        return 'a list has no key {!r} (use [*] or [index])'.format(part)
    if isinstance(shape, tuple):
        if part == '*':
            return list(shape)
        if isinstance(part, int):
            if -len(shape) <= part < len(shape):
                return [shape[part]]
            return 'the list has {} positions: [{}] is out of range'.format(len(shape), part)
        return 'a list has no key {!r} (use [*] or [index])'.format(part)
    return 'a value ({}) has no part {!r}'.format(_describe(shape), part)


def _describe(shape):
    return repr(shape).lower() if isinstance(shape, Leaf) else type(shape).__name__


def path_problem(shape, path):
    """None if `path` can name something in a report of `shape`, else why it cannot."""
    try:
        parts = split_path(path)
    except ValueError:
        return 'not a path (an index in [] must be a number or *)'
    if not parts:
        return 'an empty path'
    current, done = [shape], []
    for part in parts:
        nxt, why = [], None
        for s in current:
            r = _step(s, part)
            if isinstance(r, str):
                why = why or r
            else:
                nxt.extend(r)
        if not nxt:
            at = _join(done)
            return '{}{}'.format('at {}: '.format(at) if at else '', why)
        current = nxt
        done.append(part)
    return None


def _join(parts):
    out = ''
    for p in parts:
        if p == '*' or isinstance(p, int):
            out += '[{}]'.format(p)
        else:
            out += ('.' if out else '') + p
    return out


def all_paths(shape, limit=2000):
    """Every path a report of `shape` offers (lists as [*]), for close-match suggestions."""
    out = []

    def walk(s, prefix, depth):
        s = _unwrap(s)
        if len(out) >= limit or depth > 12:
            return
        if prefix:
            out.append(_join(prefix))
        if isinstance(s, Or):
            for a in s.alternatives:
                walk(a, prefix, depth + 1)
        elif isinstance(s, Phase):
            walk(s.shape, prefix, depth)
        elif _fields(s) is not None:
            for k, v in _fields(s)[0].items():
                walk(v, prefix + [k], depth + 1)
            out.append(_join(prefix + ['*']))   # every value of the record
            if isinstance(s, Open) and s.rest is not None:
                walk(s.rest, prefix + ['*'], depth + 1)
        elif isinstance(s, Map):
            walk(s.value, prefix + ['*'], depth + 1)
        elif isinstance(s, (list, Sized)):
            walk(s.item if isinstance(s, Sized) else s[0], prefix + ['*'], depth + 1)
        elif isinstance(s, tuple):
            for i, v in enumerate(s):
                walk(v, prefix + [i], depth + 1)
    walk(shape, [], 0)
    return list(dict.fromkeys(out))


def close_paths(shape, path, n=3):
    return difflib.get_close_matches(path, all_paths(shape), n=n, cutoff=0.6)


# -- a produced report against its shape ----------------------------------------------------------
def conformance(shape, value, path='', params=None):
    """What in `value` (a report as the trusted side receives it) does not fit `shape`, as
    `Problem`s (`forged` where only a forged answer gives one). `params`: the probe's
    parameters, defaults included, which fix `Sized` lengths and `When` keys (without them
    these are taken as a list and as an optional key). A scenario may report
    `{"__skipped__": why}` instead of its report."""
    if not path and isinstance(value, dict) and set(value) == {'__skipped__'}:
        return []
    out = []
    _conform(shape, value, path, out, params)
    return out


def _is_raised(v):
    return isinstance(v, dict) and 'raised' in v and 'message' in v


def _conform(shape, v, path, out, params):
    shape = _unwrap(shape)
    where = path or '(top)'
    if shape is ANY:
        return
    if isinstance(shape, Leaf):
        if not _leaf_fits(shape.kind, v):
            out.append(_problem('{}: expected {}, found {}'.format(where, shape.kind, _kind_name(v))))
        return
    if isinstance(shape, Or):
        found = []
        for a in shape.alternatives:
            problems = conformance(a, v, path, params)
            if not problems:
                return
            found.append(problems)
        # forged only if every alternative is broken in a way only forging gives
        forged = all(any(p.forged for p in problems) for problems in found)
        out.append(_problem('{}: {} fits none of {}'.format(where, _kind_name(v), shape), forged))
        return
    if isinstance(shape, Phase):
        if _is_raised(v):
            if not isinstance(v.get('raised'), str) or not isinstance(v.get('message'), str):
                out.append(_problem('{}: what a phase raised is not named in text'.format(where), True))
            return
        _conform(shape.shape, v, path, out, params)
        return
    rec = _fields(shape)
    if rec is not None:
        fields, is_open = rec
        if not isinstance(v, dict):
            out.append(_problem('{}: expected a record, found {}'.format(where, _kind_name(v))))
            return
        for k, s in fields.items():
            due = s.holds(params) if isinstance(s, When) else None
            if k not in v:
                if not isinstance(s, (Opt, When)):
                    out.append(_problem('{}: key {!r} is missing'.format(where, k), not path))
                elif due:
                    out.append(_problem('{}: key {!r} is missing, and this probe asks for '
                                        'it'.format(where, k), True))
                continue
            if due is False:
                out.append(_problem('{}: key {!r} is there, and this probe does not ask for '
                                    'it'.format(where, k), True))
                continue
            _conform(s, v[k], _join_key(path, k), out, params)
        extra = sorted(set(v) - set(fields))
        if extra and is_open and shape.rest is not None:
            for k in extra:
                _conform(shape.rest, v[k], _join_key(path, k), out, params)
        elif extra and not is_open:
            out.append(_problem('{}: undeclared key(s) {}'.format(
                where, ', '.join(map(repr, extra[:5]))), not path))
        return
    if isinstance(shape, Map):
        if not isinstance(v, dict):
            out.append(_problem('{}: expected a dict, found {}'.format(where, _kind_name(v))))
            return
        for k, x in v.items():
            _conform(shape.value, x, _join_key(path, str(k)), out, params)
        return
    if isinstance(shape, (list, tuple, Sized)):
        if not isinstance(v, (list, tuple)):
            out.append(_problem('{}: expected a list, found {}'.format(where, _kind_name(v))))
            return
        if isinstance(shape, tuple) and len(v) != len(shape):
            out.append(_problem('{}: expected {} positions, found {}'.format(
                where, len(shape), len(v))))
            return
        if isinstance(shape, Sized):
            n = shape.expected(params)
            if n is not None and len(v) != n:
                out.append(_problem('{}: expected {} element{} (as this probe asks), found '
                                    '{}'.format(where, n, '' if n == 1 else 's', len(v)), True))
                return
        for i, x in enumerate(v):
            item = shape.item if isinstance(shape, Sized) else (
                shape[0] if isinstance(shape, list) else shape[i])
            _conform(item, x, '{}[{}]'.format(path, i), out, params)
        return
    out.append(_problem('{}: unknown shape {!r}'.format(where, shape)))


def _join_key(path, key):
    return '{}.{}'.format(path, key) if path else key


# the dtypes an ARRAY may have: numbers and booleans (the wire carries others, no scenario does)
ARRAY_KINDS = 'biufc'


def _leaf_fits(kind, v):
    if kind == 'none':
        return v is None
    if kind == 'bool':
        return isinstance(v, bool) or type(v).__name__ == 'bool_'
    if kind == 'str':
        return isinstance(v, str)
    if kind == 'int':
        return (isinstance(v, int) and not isinstance(v, bool)) or _np_kind(v) in ('i', 'u')
    if kind == 'num':
        return (isinstance(v, (int, float)) and not isinstance(v, bool)) or \
            _np_kind(v) in ('i', 'u', 'f')
    if kind == 'array':
        if type(v).__name__ == 'Array':
            v = getattr(v, 'data', None)
        return type(v).__name__ == 'ndarray' and getattr(v.dtype, 'kind', '') in ARRAY_KINDS
    return True


def _np_kind(v):
    """The dtype kind of a NumPy scalar (the wire keeps them as such), else ''."""
    dtype = getattr(v, 'dtype', None)
    if dtype is None or type(v).__name__ == 'ndarray' or getattr(v, 'shape', None) != ():
        return ''
    return getattr(dtype, 'kind', '')


def _kind_name(v):
    if v is None:
        return 'None'
    if _is_raised(v):
        return 'a raised {}'.format(v.get('raised'))
    return type(v).__name__
