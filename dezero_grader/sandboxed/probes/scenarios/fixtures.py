"""Shared pieces of the stage-4 and stage-5 scenarios: phases that report their own exceptions,
deterministic weights set by *role*, plain data sets, a scratch folder for files, and a count of
the graph behind a variable.

Weights (`set_weights`) are set in one way everywhere: every parameter of `params()` gets
float64 values drawn from the probe's seed and keyed by its *role*, never by its position in
`params()` (whose order a learner may choose freely) nor by the name a learner gave it inside a
book layer: a `Linear`'s (or `Conv2d`'s) 2-D-or-more parameter is its weight, its 1-D one the
bias, whether they are called `W`/`b` or anything else. They are float64 whatever the learner's
default dtype, so that both sides compute in the same precision (a float32 layer and a float64
one see the same numbers), and they are placed on the device their parameter lives on. Nothing
here decides anything: it only builds and describes.
"""
import os
import re
import shutil
import tempfile
import zlib

from dezero_grader.sandboxed import capture


def phase(results, name, fn):
    """Run one phase; record what it returned, or the exception it raised (type, message)."""
    call = capture.Call.of(fn, catch=Exception)
    results[name] = call.value if call.ok else raised(call.exception)


def raised(e):
    """An exception as a phase reports it: its type, its message (with the paths of the worker's
    scratch folders as the learner knows them) and, when the learner's code raised it, the
    innermost `file:line in function` of the submission's own files."""
    info = {'raised': type(e).__name__, 'message': scrub_paths(capture.text(e))[:300]}
    where = capture.learner_where(e.__traceback__)
    if where:
        info['where'] = where
    return info


# a scenario's own scratch folder for files (ScratchDir), inside the worker's TMPDIR
_SCRATCH = re.compile(r'(?:[^\s\'"]*/)?dezero-probe-[A-Za-z0-9_]+/')


def scrub_paths(text):
    """`text` without the grader's scratch paths: the submission's copy becomes the paths the
    learner knows (relative to the submission's top), a scenario's temporary folder a name."""
    top = os.getcwd() + os.sep
    return _SCRATCH.sub('<temporary folder>/', text.replace(top, ''))


def role_salt(role):
    """A stable integer for a role name (Python's `hash` of a str changes between processes)."""
    return zlib.crc32(role.encode('utf-8'))


def seeded(ctx, role, shape, scale=0.5):
    """A float64 host array for `role`, the same in every process for the same probe seed."""
    rng = ctx.rng(role_salt(role))
    return scale * rng.standard_normal(tuple(shape))


# -- parameters by role ---------------------------------------------------------------------------
# The book's layers whose parameters the grader knows by role: the weight has two or more axes,
# the bias one. Anything else (a scenario's own layer, a learner's internals) is known by the
# attribute name that holds it.
WEIGHTED_LAYERS = ('layers.Linear', 'layers.Conv2d')


# Where the book defines a base class, then where its package re-exports it: the book's scripts
# never import `dezero.Layer` or `dezero.Dataset`, so a package need not export them.
BOOK_HOMES = {'Layer': ('layers.Layer', 'Layer'), 'Parameter': ('core.Parameter', 'Parameter'),
              'Dataset': ('datasets.Dataset', 'Dataset')}


def book_class(ctx, name, default=None):
    """The learner's `Layer`, `Parameter` or `Dataset`, from the module the book defines it in
    or from the package's top level; `default` (when given) if neither has it."""
    for dotted in BOOK_HOMES[name]:
        if ctx.api.has(dotted):
            return ctx.api.get(dotted)
    if default is not None:
        return default
    return ctx.api.get(BOOK_HOMES[name][0])   # raises: the submission has no ...


def _weighted_classes(ctx):
    found = []
    for name in WEIGHTED_LAYERS:
        cls = ctx.api.get(name, None) if ctx.api.has(name.split('.')[0]) else None
        if isinstance(cls, type):
            found.append(cls)
    return tuple(found)


def _is_parameter(ctx, value):
    Parameter = book_class(ctx, 'Parameter', False)
    if isinstance(Parameter, type):
        return isinstance(value, Parameter)
    Variable = ctx.api.get('Variable', None)
    return isinstance(Variable, type) and isinstance(value, Variable)


def _role_of(value):
    data = getattr(value, 'data', None)
    ndim = getattr(data, 'ndim', None)
    if ndim is None:
        return None
    return 'W' if ndim >= 2 else 'b'


def layer_parameters(ctx, layer):
    """{attribute name: Parameter} of one layer (its own, not its sub-layers')."""
    return {name: value for name, value in sorted(vars(layer).items())
            if _is_parameter(ctx, value)}


def by_role(ctx, layer, role):
    """The parameter of a book layer (`Linear`, `Conv2d`, ...) that plays `role` ('W' or 'b'),
    whatever the learner named it; for any other layer, the attribute called `role`."""
    weighted = _weighted_classes(ctx)
    if weighted and isinstance(layer, weighted):
        if role in ('W', 'b'):
            params = layer_parameters(ctx, layer)
            own = params.get(role)
            if own is not None and _role_of(own) in (role, None):
                return own
            matches = [p for p in params.values() if _role_of(p) == role]
            if not matches and role == 'W':   # a lazy layer before its first call
                matches = [p for p in params.values() if _role_of(p) is None]
            if len(matches) == 1:
                return matches[0]
            if not matches and role == 'b':
                return None   # nobias
    return getattr(layer, role)


class BookNameMismatch(LookupError):
    """A file written the book's way cannot fit a layer whose parameters have other names."""


def check_book_names(ctx, layer, where):
    """Before reading a file the book's framework wrote (keys `.../W`, `.../b`): raise
    `BookNameMismatch` with exactly what differs when the layer at `where` calls its weight or
    bias something else (the only place where those names matter)."""
    params = layer_parameters(ctx, layer)
    if 'W' in params:
        return
    roles = {name: _role_of(p) for name, p in params.items()}
    weight = [n for n, r in roles.items() if r == 'W'] or [n for n, r in roles.items() if r is None]
    what = '`{}`'.format(weight[0]) if len(weight) == 1 else 'something else ({})'.format(
        ', '.join('`{}`'.format(n) for n in sorted(params)) or 'no parameters')
    raise BookNameMismatch('your {} ({}) names its weight {}; the book\'s weight files use `W` '
                           '({}/W)'.format(type(layer).__name__, where, what, where))


def resolve_path(ctx, obj, path):
    """`model.block.fc.W` from `'block.fc.W'`: public attributes, the last part by role."""
    parts = path.split('.')
    for part in parts[:-1]:
        obj = getattr(obj, part)
    return by_role(ctx, obj, parts[-1])


def parameter_places(ctx, model):
    """[(place, Parameter)] for every parameter of `model.params()`, each once: `place` is the
    attribute path of the layer that holds it and its role (`block/fc/W`); a parameter that the
    attributes do not reach is placed by its shape and rank among those (`params/3x4#0`)."""
    Layer = book_class(ctx, 'Layer', False)
    weighted = _weighted_classes(ctx)
    places, seen = [], set()

    def walk(layer, prefix, depth):
        if depth > 16:
            return
        is_weighted = bool(weighted) and isinstance(layer, weighted)
        params = layer_parameters(ctx, layer)
        roles = [_role_of(p) for p in params.values()]
        unique_roles = is_weighted and len(set(roles)) == len(roles) and None not in roles
        for name, p in params.items():
            if id(p) in seen:
                continue
            seen.add(id(p))
            places.append((prefix + (_role_of(p) if unique_roles else name), p))
        if isinstance(Layer, type):
            for name, value in sorted(vars(layer).items()):
                if isinstance(value, Layer):
                    walk(value, prefix + name + '/', depth + 1)

    walk(model, '', 0)
    counts = {}
    for p in model.params():
        if id(p) in seen:
            continue
        seen.add(id(p))
        shape = 'x'.join(str(n) for n in getattr(p.data, 'shape', ()))
        k = counts.get(shape, 0)
        counts[shape] = k + 1
        places.append(('params/{}#{}'.format(shape, k), p))
    return places


def _shape_key(place, shape):
    role = place.rsplit('/', 1)[-1]
    return '{}:{}'.format(role, 'x'.join(str(n) for n in shape))


def set_weights(ctx, model, salt=0, scale=0.5, device=None, key='shape'):
    """The one way scenarios set weights: every parameter of `model` gets float64 values drawn
    from the probe's seed, on `device` (by default the device the parameter is on now).

    `key='shape'` keys the values by the parameter's role and shape (`W:3x4`), so that any
    model built from the same layers gets the same numbers whatever its attributes are called
    (parameters of equal role and shape get equal values); `key='path'` keys them by place
    (`block/fc/W`), for models whose every layer the scenario names itself, or whose names the
    book fixes. Returns {place: host value}."""
    values = {}
    for place, p in parameter_places(ctx, model):
        data = p.data
        if data is None:
            continue
        shape = tuple(ctx.host(data).shape)
        name = place if key == 'path' else _shape_key(place, shape)
        values[place] = _assign(ctx, p, '{}:{}'.format(salt, name), shape, scale,
                                device or _device_name(ctx, data))
    return values


def _assign(ctx, param, key, shape, scale, device):
    """The one rule every weight is set by: float64 values drawn from the probe's seed and
    `key`, placed on `device`. Returns the host values."""
    value = seeded(ctx, key, shape, scale)
    param.data = ctx.on_device(value, device)
    return value


def _device_name(ctx, data):
    return 'gpu' if ctx.device_of(data) == 'gpu' else 'cpu'


def set_roles(ctx, model, roles, device=None, scale=0.5):
    """`set_weights` for named places: each parameter named in `roles` ({'block.fc.W': shape,
    ...}, the last part a role) gets seeded values on `device` (the probe's device by default),
    by the same rule. Returns the host arrays, keyed by role."""
    device = device or ctx.device
    return {role: _assign(ctx, resolve_path(ctx, model, role), role, shape, scale, device)
            for role, shape in roles.items()}


class PlainDataset:
    """A data set as the book's loaders use one and nothing more: `len(dataset)` and
    `dataset[i]` → `(x, t)`. No base class of the learner's is needed to feed a loader."""

    def __init__(self, data, label):
        self.data, self.label = data, label

    def __len__(self):
        return len(self.data)

    def __getitem__(self, index):
        return self.data[index], self.label[index]


def role_key(role):
    """`block.fc.W` → `block/fc/W`: the book's key, and a report key without dots (expectation
    paths split at dots)."""
    return role.replace('.', '/')


def role_values(ctx, model, roles):
    """The host values of the parameters named in `roles`, keyed by `role_key`."""
    return {role_key(role): ctx.host(resolve_path(ctx, model, role)) for role in roles}


def role_grads(ctx, model, roles):
    """The gradients of the parameters named in `roles` (None where there is none)."""
    out = {}
    for role in roles:
        g = resolve_path(ctx, model, role).grad
        out[role_key(role)] = None if g is None else ctx.export(g)
    return out


class ScratchDir:
    """A fresh folder for the files a scenario writes (inside the worker's TMPDIR), removed on
    exit whatever the learner's code left in it."""

    def __enter__(self):
        self.path = tempfile.mkdtemp(prefix='dezero-probe-')
        return self.path

    def __exit__(self, *exc):
        shutil.rmtree(self.path, ignore_errors=True)
        return False


def graph_functions(variable):
    """How many functions are reachable backwards from `variable` (creator, then the creators
    of their inputs): the size of the graph a backward pass would walk."""
    start = getattr(variable, 'creator', None)
    if start is None:
        return 0
    seen = {id(start)}
    frontier = [start]
    while frontier:
        f = frontier.pop()
        for x in getattr(f, 'inputs', None) or ():
            c = getattr(x, 'creator', None)
            if c is not None and id(c) not in seen:
                seen.add(id(c))
                frontier.append(c)
    return len(seen)


def sorted_shapes(ctx, layer):
    """Shapes of every parameter, sorted (params() order is the learner's choice)."""
    return sorted(list(ctx.host(p).shape) for p in layer.params() if p.data is not None)


def devices(ctx, layer):
    """The device of every parameter, sorted."""
    return sorted(ctx.device_of(p.data) for p in layer.params())


def nested_model(ctx):
    """A model with a layer inside a layer: its parameters' book keys are `block/fc/W`,
    `block/fc/b`, `head/W`, `head/b`."""
    Layer = book_class(ctx, 'Layer')
    Linear = ctx.api.get('layers.Linear')
    F = ctx.api.get('functions')

    class Inner(Layer):
        def __init__(self, hidden):
            super().__init__()
            self.fc = Linear(hidden)

        def forward(self, x):
            return F.sigmoid(self.fc(x))

    class Outer(Layer):
        def __init__(self, hidden, out):
            super().__init__()
            self.block = Inner(hidden)
            self.head = Linear(out)

        def forward(self, x):
            return self.head(self.block(x))

    return Outer
