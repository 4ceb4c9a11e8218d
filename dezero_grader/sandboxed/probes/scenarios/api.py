"""Which public names a submission has, and plain calls of public functions."""
from dezero_grader.sandboxed import capture
from dezero_grader.sandboxed.probes.registry import scenario


@scenario('api.names')
def names(ctx, names):
    """For each dotted name: its kind ('class', 'function', 'module', 'value') or None."""
    found = {}
    for name in names:
        try:
            obj = ctx.api.get(name, None)
        except Exception as e:  # a submodule that fails to import
            found[name] = 'error: {}: {}'.format(type(e).__name__, capture.text(e, 200))[:200]
            continue
        if obj is None:
            found[name] = None
        elif isinstance(obj, type):
            found[name] = 'class'
        elif callable(obj):
            found[name] = 'function'
        elif type(obj).__name__ == 'module':
            found[name] = 'module'
        else:
            found[name] = 'value'
    return found


@scenario('call.values')
def call_values(ctx, target, cases):
    """Call `target(*args)` for each case; report the value, or the exception's type."""
    fn = ctx.api.get(target)
    out = []
    for args in cases:
        call = capture.Call.of(fn, *[tuple(a) if isinstance(a, list) else a for a in args],
                               catch=Exception)
        if not call.ok:
            out.append({'raised': type(call.exception).__name__})
            continue
        value = call.value
        if isinstance(value, tuple):
            value = list(value)
        out.append({'value': value, 'type': type(value).__name__})
    return out
