"""Saving and loading weights (step 53) through `Layer.save_weights` / `Layer.load_weights`.

The files are the book's: an `.npz` archive whose keys are the `/`-joined attribute paths of the
parameters (`block/fc/W`, `l0/b`). A scenario writes "reference" files itself with plain
`np.savez_compressed` and reads the learner's files back with `np.load`, so both directions of
interoperability are observed without trusting the learner's code on either side. Devices,
failures midway through a save, files that do not fit the model and arrays shared between models
are each a scenario of their own; every phase reports its own outcome.
"""
import os

import numpy as np

from dezero_grader.sandboxed import capture
from dezero_grader.sandboxed.probes.registry import scenario
from dezero_grader.sandboxed.probes.scenarios.fixtures import (ScratchDir, by_role, check_book_names, devices,
                                                               layer_parameters, nested_model, phase,
                                                               resolve_path, role_key, role_values, seeded,
                                                               set_roles)


def nested_roles(in_size, hidden, out):
    return {'block.fc.W': (in_size, hidden), 'block.fc.b': (hidden,),
            'head.W': (hidden, out), 'head.b': (out,)}


def mlp_roles(in_size, hidden, out):
    return {'l0.W': (in_size, hidden), 'l0.b': (hidden,), 'l1.W': (hidden, out), 'l1.b': (out,)}


def _fresh(ctx, in_size, hidden, out, x, initialised=True):
    model = nested_model(ctx)(hidden, out)
    if initialised:
        model(x)   # on the host, where a new model lives: lazy sizes, the learner's own values
    return model


def _seeded_model(ctx, in_size, hidden, out, x, device=None):
    model = _fresh(ctx, in_size, hidden, out, x)
    values = set_roles(ctx, model, nested_roles(in_size, hidden, out), device=device)
    return model, values


def _input(ctx, in_size, batch):
    return ctx.rng(1).standard_normal((batch, in_size))


def _read_npz(path):
    with np.load(path, allow_pickle=False) as npz:
        return {key: np.array(npz[key]) for key in npz.files}


def _write_book_file(path, arrays):
    np.savez_compressed(path, **arrays)


@scenario('serialization.written_file')
def written_file(ctx, in_size, hidden, out, batch):
    """Save a nested model and read the file back with np.load: its keys and arrays. The keys
    expected are the attribute paths joined with '/', ending in the learner's own names of each
    layer's weight and bias (the book's `W` and `b`, or others: only files the book's framework
    wrote need the book's names); the arrays are reported by role (`file.by_role.head/W`)."""
    x = _input(ctx, in_size, batch)
    model, values = _seeded_model(ctx, in_size, hidden, out, x)
    keys = {role_key(r): _own_key(ctx, model, r) for r in values}
    res = {'expected_keys': sorted(keys.values()),
           'expected': {role_key(r): v for r, v in values.items()}}
    with ScratchDir() as folder:
        path = os.path.join(folder, 'weights.npz')
        phase(res, 'save', lambda: model.save_weights(path) or {'exists': os.path.exists(path)})

        def read():
            arrays = _read_npz(path)
            return {'keys': sorted(arrays),
                    'by_role': {role: arrays.get(key) for role, key in keys.items()}}
        phase(res, 'file', read)
    return res


def _own_key(ctx, model, role):
    """`block/fc/W` for the role `block.fc.W`, with the learner's name of that parameter."""
    owner, _, part = role.rpartition('.')
    layer = model
    for name in owner.split('.') if owner else ():
        layer = getattr(layer, name)
    param = by_role(ctx, layer, part)
    own = next((n for n, p in layer_parameters(ctx, layer).items() if p is param), part)
    return '/'.join(owner.split('.') + [own]) if owner else own


@scenario('serialization.round_trip')
def round_trip(ctx, in_size, hidden, out, batch):
    """Save, then load into a fresh model (initialised with its own random values, or not run
    yet at all): the outputs must be those of the saved model."""
    x = _input(ctx, in_size, batch)
    model, _ = _seeded_model(ctx, in_size, hidden, out, x)
    res = {'y_saved': ctx.host(model(ctx.to_device(x)))}
    with ScratchDir() as folder:
        path = os.path.join(folder, 'model.npz')
        phase(res, 'save', lambda: model.save_weights(path))

        def into_initialised():
            fresh = _fresh(ctx, in_size, hidden, out, x)
            fresh.load_weights(path)
            return ctx.host(fresh(ctx.to_device(x)))
        phase(res, 'initialised', into_initialised)

        def into_lazy():
            fresh = _fresh(ctx, in_size, hidden, out, x, initialised=False)
            fresh.load_weights(path)
            return ctx.host(fresh(ctx.to_device(x)))
        phase(res, 'lazy', into_lazy)
    return res


def _sigmoid(a):
    return 1.0 / (1.0 + np.exp(-a))


@scenario('serialization.book_file')
def book_file(ctx, in_size, hidden, out, batch):
    """Files written the book's way (np.savez_compressed with `l0/W`... and `block/fc/W`...
    keys) load into the learner's MLP and nested model, which then compute with those weights."""
    x = _input(ctx, in_size, batch)
    MLP = ctx.api.get('models.MLP')
    res = {}
    with ScratchDir() as folder:
        for name, build, roles in (
                ('mlp', lambda: MLP((hidden, out)), mlp_roles(in_size, hidden, out)),
                ('nested', lambda: nested_model(ctx)(hidden, out),
                 nested_roles(in_size, hidden, out))):
            arrays = {role_key(r): seeded(ctx, name + ':' + r, s) for r, s in roles.items()}
            names = sorted(roles)   # first layer's W, b, then the second's
            W0, b0, W1, b1 = (arrays[role_key(r)] for r in (names[0], names[1], names[2],
                                                            names[3]))
            res[name + '_expected_y'] = _sigmoid(x @ W0 + b0) @ W1 + b1
            res[name + '_expected'] = {role_key(r): arrays[role_key(r)] for r in roles}
            path = os.path.join(folder, name + '.npz')
            _write_book_file(path, arrays)

            def load(build=build, roles=roles, path=path):
                model = build()
                model(ctx.to_device(x))
                for owner in sorted({r.rsplit('.', 1)[0] for r in roles}):
                    layer = model
                    for part in owner.split('.'):
                        layer = getattr(layer, part)
                    check_book_names(ctx, layer, owner.replace('.', '/'))
                model.load_weights(path)
                return {'y': ctx.host(model(ctx.to_device(x))),
                        'params': role_values(ctx, model, roles)}
            phase(res, name, load)
    return res


class _Unpicklable:
    """An object whose pickling fails: writing it into an archive raises midway."""

    def __reduce__(self):
        raise ValueError('this object cannot be written to a file')


@scenario('serialization.partial_file')
def partial_file(ctx, in_size, hidden, out, batch):
    """A save that fails midway (one parameter holds an object array that cannot be written)
    must raise and leave no file at the path."""
    x = _input(ctx, in_size, batch)
    model, _ = _seeded_model(ctx, in_size, hidden, out, x)
    bad = np.empty((2,), dtype=object)
    bad[0], bad[1] = 1.0, _Unpicklable()
    by_role(ctx, model.head, 'b').data = bad
    res = {}
    with ScratchDir() as folder:
        path = os.path.join(folder, 'broken.npz')
        try:
            model.save_weights(path)
            res['save_error'] = None
        except Exception as e:
            res['save_error'] = type(e).__name__
        res['file_left'] = os.path.exists(path)
    return res


@scenario('serialization.mismatch')
def mismatch(ctx, in_size, hidden, out, batch):
    """Files that do not fit the model: one key missing, one array of the wrong shape. Reports
    whether load_weights raised, whether the next forward raised, and whether the model's
    parameters were left as they were."""
    x = _input(ctx, in_size, batch)
    roles = nested_roles(in_size, hidden, out)
    res = {}
    with ScratchDir() as folder:
        for case in ('missing', 'wrong_shape'):
            model, before = _seeded_model(ctx, in_size, hidden, out, x)
            arrays = {role_key(r): seeded(ctx, 'file:' + r, s) for r, s in roles.items()}
            if case == 'missing':
                del arrays['head/b']
            else:
                arrays['head/W'] = seeded(ctx, 'file:wide', (hidden + 1, out))
            path = os.path.join(folder, case + '.npz')
            _write_book_file(path, arrays)
            report = {'load_raised': False, 'forward_raised': False}
            try:
                model.load_weights(path)
            except Exception as e:
                report['load_raised'] = True
                report['load_error'] = {'type': type(e).__name__, 'message': capture.text(e, 300)}
            # the parameters before and after, as they are: the trusted side compares them
            report['after'] = role_values(ctx, model, roles)
            report['before'] = {role_key(r): before[r] for r in roles}
            if not report['load_raised']:
                try:
                    model(ctx.to_device(x))
                except Exception as e:
                    report['forward_raised'] = True
                    report['forward_error'] = {'type': type(e).__name__,
                                               'message': capture.text(e, 300)}
            report['raised_somewhere'] = report['load_raised'] or report['forward_raised']
            res[case] = report
    return res


@scenario('serialization.independent')
def independent(ctx, in_size, hidden, out, batch):
    """Two models loaded from one file own their arrays: updating one model's parameters in
    place (as an optimizer does) leaves the other, and the file, unchanged; no two parameters
    of one model share memory."""
    x = _input(ctx, in_size, batch)
    roles = nested_roles(in_size, hidden, out)
    arrays = {role_key(r): seeded(ctx, 'file:' + r, s) for r, s in roles.items()}
    res = {'file': {role_key(r): arrays[role_key(r)] for r in roles}}
    with ScratchDir() as folder:
        path = os.path.join(folder, 'shared.npz')
        like = _fresh(ctx, in_size, hidden, out, x)   # the file in the learner's own names
        _write_book_file(path, {_own_key(ctx, like, r): arrays[role_key(r)] for r in roles})

        def load_two():
            a = _fresh(ctx, in_size, hidden, out, x)
            b = _fresh(ctx, in_size, hidden, out, x)
            a.load_weights(path)
            b.load_weights(path)
            params_a = [resolve_path(ctx, a, r) for r in roles]
            shared = sum(1 for i, p in enumerate(params_a) for q in params_a[i + 1:]
                         if np.shares_memory(ctx.host(p), ctx.host(q)))
            for p in params_a:
                p.data *= 2.0     # in place, like `param.data -= lr * grad`
            again = _fresh(ctx, in_size, hidden, out, x)
            again.load_weights(path)
            return {'other_model': role_values(ctx, b, roles),
                    'reloaded': role_values(ctx, again, roles), 'shared_within': shared}
        phase(res, 'models', load_two)
    return res


@scenario('serialization.device')
def device(ctx, in_size, hidden, out, batch):
    """Saving a model that lives on the device, and loading into one."""
    x = _input(ctx, in_size, batch)
    xd = ctx.on_device(x, 'gpu')
    res = {}
    with ScratchDir() as folder:
        path = os.path.join(folder, 'device.npz')
        model = _fresh(ctx, in_size, hidden, out, x)
        model.to_gpu()
        values = set_roles(ctx, model, nested_roles(in_size, hidden, out), device='gpu')
        res['expected'] = {role_key(r): v for r, v in values.items()}
        res['y_device'] = ctx.host(model(xd))

        def save():
            model.save_weights(path)
            return {'params': devices(ctx, model)}
        phase(res, 'save', save)
        keys = {role_key(r): _own_key(ctx, model, r) for r in values}
        phase(res, 'file', lambda: {role: array for role, array in (
            (role, _read_npz(path).get(key)) for role, key in keys.items()) if array is not None})
        phase(res, 'forward_after_save', lambda: ctx.describe(model(xd)))

        def reload():
            fresh = _fresh(ctx, in_size, hidden, out, x)
            fresh.load_weights(path)
            fresh.to_gpu()
            y = fresh(xd)
            return {'y': ctx.device_of(y), 'value': ctx.host(y)}
        phase(res, 'reload_then_to_gpu', reload)

        def into_device_model():
            fresh = _fresh(ctx, in_size, hidden, out, x)
            fresh.to_gpu()
            fresh.load_weights(path)
            found = {'params': devices(ctx, fresh)}
            y = fresh(xd)
            found.update(y=ctx.device_of(y), value=ctx.host(y))
            return found
        phase(res, 'load_into_device_model', into_device_model)
    return res
