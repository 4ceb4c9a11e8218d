"""The table of scenarios a worker can run, filled by the `scenario` decorator."""

SCENARIOS = {}


def scenario(name):
    """Register `fn(ctx, **params) -> plain data` under `name`."""
    def register(fn):
        if name in SCENARIOS:
            raise ValueError('scenario {!r} registered twice'.format(name))
        SCENARIOS[name] = fn
        return fn
    return register
