"""The API manifest lists every module-level name the scenarios of steps 40-60 reach for."""
import re
from pathlib import Path

from grader.sandboxed.probes import manifest

SCENARIOS = Path(__file__).resolve().parents[2] / 'grader' / 'sandboxed' / 'probes' / 'scenarios'
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
