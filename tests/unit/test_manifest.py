"""The API manifest lists every module-level name the scenarios of steps 40-60 reach for."""
import re
from pathlib import Path

from dezero_grader.sandboxed.probes import manifest

SCENARIOS = Path(__file__).resolve().parents[2] / 'dezero_grader' / 'sandboxed' / 'probes' / 'scenarios'
MODULES = ('fixtures', 'networks', 'sequence', 'datasets', 'data', 'modes', 'serialization',
           'conv', 'vgg', 'device')
LITERAL = re.compile(r"api\.(?:get|has)\('([^']+)'")


def _literals():
    for module in MODULES:
        source = (SCENARIOS / (module + '.py')).read_text(encoding='utf-8')
        for name in LITERAL.findall(source):
            yield module, name
        if module == 'fixtures':   # the layers whose parameters are found by role
            yield from ((module, n) for n in re.findall(r"'(layers\.\w+)'", source))


def _listed(name, names):
    if name.endswith('.'):            # a name completed at run time: 'optimizers.' + name
        return any(n.startswith(name) for n in names)
    return name in names or any(n.startswith(name + '.') for n in names)   # or a module


def test_every_name_the_scenarios_touch_is_in_the_manifest():
    names = manifest.names()
    missing = sorted({'{}: {}'.format(m, n) for m, n in _literals() if not _listed(n, names)})
    assert missing == []


def test_the_manifest_names_steps_and_book_files():
    for name, step, book_file, note in manifest.MANIFEST:
        assert 1 <= step <= 60 and book_file.split(',')[0].split()[0].endswith('.py'), name
        assert isinstance(note, str)
    assert len({entry[0] for entry in manifest.MANIFEST}) == len(manifest.MANIFEST)


def test_a_name_outside_the_manifest_is_reported():
    assert not _listed('layers.Deconv2d', manifest.names())
    assert _listed('layers', manifest.names()) and _listed('optimizers.', manifest.names())


def test_the_author_guide_shows_the_manifest():
    guide = (Path(__file__).resolve().parents[2] / 'docs' / 'authoring.md').read_text(encoding='utf-8')
    table = guide[guide.index('### The API manifest'):]
    for name, step, _, _ in manifest.MANIFEST:
        assert '| {} | `{}` |'.format(step, name) in table, name


# -- every name of the manifest is exercised by a check of its step or an earlier one ------------
WORD = re.compile(r'[A-Za-z_][A-Za-z0-9_]*')


def _reach(fn, module, seen):
    """The source of `fn` and of every function of its module it reaches by name (the helpers
    and expression builders a scenario calls), each once."""
    import inspect
    if fn in seen:
        return ''
    seen.add(fn)
    text = inspect.getsource(fn)
    names, stack = set(), [fn.__code__]
    while stack:
        code = stack.pop()
        names.update(code.co_names)
        stack.extend(c for c in code.co_consts if hasattr(c, 'co_names'))
    for name in names:
        helper = getattr(module, name, None)
        if callable(helper) and getattr(helper, '__module__', None) == module.__name__ and \
                hasattr(helper, '__code__'):
            text += _reach(helper, module, seen)
    return text


def _words_of_check(use):
    """The words a check's calls can name: its parameters (a function's name, an expression's),
    and the source its scenarios run (with the builders its parameters name)."""
    import json
    import sys
    from dezero_grader.checks import CHECKS, load_all
    from dezero_grader.sandboxed.probes.registry import SCENARIOS
    import dezero_grader.sandboxed.probes.scenarios  # noqa: F401  (registers every scenario)
    load_all()
    params = json.dumps(dict(use.params))
    words = set(WORD.findall(params))
    plan = CHECKS[use.check].plan(use.params, 0)
    seen = set()
    for probe in plan.learner:
        fn = SCENARIOS[probe.scenario]
        module = sys.modules[fn.__module__]
        text = _reach(fn, module, seen)
        for word in list(words):   # an expression or builder named by the parameters
            builder = getattr(module, word, None)
            if callable(builder) and hasattr(builder, '__code__'):
                text += _reach(builder, module, seen)
        words |= set(WORD.findall(text))
    return words


def _every_check_use():
    from dezero_grader.catalogue import assignments
    for step in assignments.available_steps():
        yield from assignments.load(step).checks
    for pack in assignments.available_packs():
        yield from assignments.load(pack).checks


def _unexercised(manifest_entries, uses):
    """The manifest entries (name, step) no check of that step or an earlier one names."""
    by_step = {}
    for use in uses:
        by_step.setdefault(use.step, set()).update(_words_of_check(use))
    out = []
    for name, step, *_ in manifest_entries:
        word = name.split('.')[-1]
        if not any(word in words for s, words in by_step.items() if s <= step):
            out.append('{} (step {})'.format(name, step))
    return out


def test_every_manifest_name_is_exercised_by_a_check_of_its_step_or_before():
    assert _unexercised(manifest.MANIFEST, list(_every_check_use())) == []


def test_a_name_no_check_exercises_is_reported():
    uses = [u for u in _every_check_use() if u.id != 'step47/softmax_ce_simple']
    assert _unexercised([('F.softmax_cross_entropy_simple', 47, 'functions.py', '')], uses) == [
        'F.softmax_cross_entropy_simple (step 47)']
    # and one a later step checks is not exercised early enough
    late = [u for u in _every_check_use() if u.step >= 48]
    assert _unexercised([('F.softmax_cross_entropy_simple', 47, 'functions.py', '')], late)
