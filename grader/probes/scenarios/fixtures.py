"""Shared pieces of the stage-5 scenarios (serialization, modes, conv, vgg, sequence): phases that
report their own exceptions, deterministic weights set by *role*, a scratch folder for files, and
a count of the graph behind a variable.

Weights are drawn from the probe's seed and keyed by the parameter's role (`x2f.W`, `head.b`),
never by its position in `params()`, whose order a learner may choose freely; they are float64
whatever the learner's default dtype, so that the learner's numbers and the reference's are
computed in the same precision. Nothing here decides anything: it only builds and describes.
"""
import shutil
import tempfile
import zlib


def phase(results, name, fn):
    """Run one phase; record what it returned, or the exception it raised (type, message)."""
    try:
        results[name] = fn()
    except Exception as e:
        results[name] = raised(e)


def raised(e):
    """An exception as a phase reports it."""
    return {'raised': type(e).__name__, 'message': str(e)[:300]}


def role_salt(role):
    """A stable integer for a role name (Python's `hash` of a str changes between processes)."""
    return zlib.crc32(role.encode('utf-8'))


def seeded(ctx, role, shape, scale=0.5):
    """A float64 host array for `role`, the same in every process for the same probe seed."""
    rng = ctx.rng(role_salt(role))
    return scale * rng.standard_normal(tuple(shape))


def resolve_path(obj, path):
    """`model.block.fc.W` from `'block.fc.W'`: public attributes only."""
    for part in path.split('.'):
        obj = getattr(obj, part)
    return obj


def set_roles(ctx, model, roles, device=None, scale=0.5):
    """Give each parameter named in `roles` ({'block.fc.W': shape, ...}) seeded values on
    `device` (the probe's device by default). Returns the host arrays, keyed by role."""
    device = device or ctx.device
    values = {}
    for role, shape in roles.items():
        value = seeded(ctx, role, shape, scale)
        resolve_path(model, role).data = ctx.on_device(value, device)
        values[role] = value
    return values


def role_key(role):
    """`block.fc.W` → `block/fc/W`: the book's key, and a report key without dots (expectation
    paths split at dots)."""
    return role.replace('.', '/')


def role_values(ctx, model, roles):
    """The host values of the parameters named in `roles`, keyed by `role_key`."""
    return {role_key(role): ctx.host(resolve_path(model, role)) for role in roles}


def role_grads(ctx, model, roles):
    """The gradients of the parameters named in `roles` (None where there is none)."""
    out = {}
    for role in roles:
        g = resolve_path(model, role).grad
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
    Layer = ctx.api.get('Layer')
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
