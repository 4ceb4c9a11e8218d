"""The worker's tripwire (`dezero_grader.sandboxed.probes.handlers`): a fingerprint of what the grader's
modules bind, read again after every probe only where each name was found. Each way of patching
the grader in place is seen; nothing is seen where nothing changed. (The end-to-end side, a
submission that patches the grader becoming `tampered`, is tests/hostile.)"""
import sys

import pytest

import dezero_grader.sandboxed.probes.scenarios  # noqa: F401  (the modules a worker has)
from dezero_grader import wire
from dezero_grader.sandboxed.probes import handlers
from dezero_grader.sandboxed.probes.scenarios import functions


def _replaced_function():
    def other(*args, **kwargs):
        return None
    saved = wire.encode
    wire.encode = other
    return lambda: setattr(wire, 'encode', saved)


def _swapped_code():
    saved = functions.resolve.__code__
    functions.resolve.__code__ = (lambda api, name: None).__code__
    return lambda: setattr(functions.resolve, '__code__', saved)


def _swapped_defaults():
    saved = functions.fn_eval.__defaults__
    functions.fn_eval.__defaults__ = (None,) * len(saved)
    return lambda: setattr(functions.fn_eval, '__defaults__', saved)


def _class_member():
    cls = handlers._BlockReference
    saved = cls.__dict__['find_spec']
    cls.find_spec = lambda self, *a, **k: None
    return lambda: setattr(cls, 'find_spec', saved)


def _registry_entry():
    key = next(iter(functions.OPERATORS))
    saved = functions.OPERATORS[key]
    functions.OPERATORS[key] = lambda a, b: a
    return lambda: functions.OPERATORS.__setitem__(key, saved)


def _module_taken_out():
    saved = sys.modules.pop('dezero_grader.wire')
    return lambda: sys.modules.__setitem__('dezero_grader.wire', saved)


def _deleted_name():
    saved = functions.resolve
    del functions.resolve
    return lambda: setattr(functions, 'resolve', saved)


@pytest.mark.parametrize('patch', [_replaced_function, _swapped_code, _swapped_defaults,
                                   _class_member, _registry_entry, _module_taken_out,
                                   _deleted_name], ids=lambda f: f.__name__.strip('_'))
def test_every_way_of_patching_the_grader_in_place_is_seen(patch):
    before = handlers._fingerprint()
    assert handlers._changes(before) == []
    undo = patch()
    try:
        changed = handlers._changes(before)
    finally:
        undo()
    assert changed, patch.__name__
    assert handlers._changes(before) == []   # undone: nothing is left changed


def test_what_the_learner_adds_is_not_a_change_of_the_grader():
    before = handlers._fingerprint()
    functions.added_by_learner = lambda: None
    try:
        assert handlers._changes(before) == []
    finally:
        del functions.added_by_learner
