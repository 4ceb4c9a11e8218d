"""Scenario declarations (`dezero_grader.contracts`): every scenario is declared, the declarations match
what the scenarios take and report, and an assignment that names a scenario, an argument or a
report path wrongly is refused when it loads, before any worker starts."""
import copy
import json
import os
import subprocess
import sys
import time

import pytest

from dezero_grader import contracts
from dezero_grader.catalogue import assignments
from dezero_grader.contracts.shapes import (ANY, ARRAY, BOOL, INT, NONE, NUM, STR, Map, Open, Opt, Or,
                                            Phase, Sized, When, conformance, path_problem)
from dezero_grader.records import schema
from grade_cli import HANG_S


def _doc(step):
    with open(schema.data_dir('assignments') / 'step{:02d}.json'.format(step),
              encoding='utf-8') as f:
        return json.load(f)


def _check(doc, scenario):
    return next(c for c in doc['checks'] if c.get('params', {}).get('scenario') == scenario)


def _refused(doc, name):
    with pytest.raises(assignments.AssignmentError) as e:
        assignments.from_document(doc, name)
    return str(e.value)


# -- the declarations and the registry agree ------------------------------------------------------
def test_every_registered_scenario_is_declared_and_every_declared_one_is_registered():
    from dezero_grader.sandboxed.probes import SCENARIOS
    import dezero_grader.sandboxed.probes.scenarios  # noqa: F401  (registering checks each signature)
    declared = contracts.load_all()
    assert sorted(SCENARIOS) == sorted(declared)
    assert len(declared) >= 90
    for name, fn in SCENARIOS.items():
        assert contracts.signature_problems(name, fn) == [], name


def test_a_scenario_that_differs_from_its_declaration_is_refused_at_registration():
    from dezero_grader.sandboxed.probes.registry import scenario

    def deep_chain(ctx, depth, name='Cube', value=0.0):
        return {}

    problems = contracts.signature_problems('early.deep_chain', deep_chain)
    assert len(problems) == 1 and "'name'" in problems[0] and "'Cube'" in problems[0]
    with pytest.raises(ValueError, match='not declared'):
        scenario('no.such.scenario')(lambda ctx: {})

    def extra(ctx, depth, name='Square', value=0.0, width=3):
        return {}

    assert contracts.signature_problems('early.deep_chain', extra) == [
        "parameter 'width' is not declared"]


# -- what load validates --------------------------------------------------------------------------
def test_a_misspelled_scenario_name_is_refused_with_the_closest_names():
    doc = _doc(53)
    _check(doc, 'serialization.mismatch')['params']['scenario'] = 'serialization.missmatch'
    text = _refused(doc, 'step53.json')
    assert text.startswith('step53.json: check ')
    assert "unknown scenario 'serialization.missmatch'" in text
    assert "'serialization.mismatch'" in text


def test_a_wrong_argument_name_is_refused_with_the_declared_parameters():
    doc = _doc(53)
    args = _check(doc, 'serialization.round_trip')['params']['args']
    args['hiden'] = args.pop('hidden')
    text = _refused(doc, 'step53.json')
    assert "has no parameter 'hiden'" in text and "did you mean 'hidden'" in text
    assert "needs parameter(s) 'hidden'" in text


def test_an_argument_of_the_wrong_kind_is_refused():
    doc = _doc(53)
    _check(doc, 'serialization.round_trip')['params']['args']['batch'] = 'four'
    assert "parameter 'batch' of scenario 'serialization.round_trip' takes int, found str" in \
        _refused(doc, 'step53.json')


@pytest.mark.parametrize('field', ['path', 'other'])
def test_a_misspelled_expectation_path_is_refused_with_close_matches(field):
    doc = _doc(53)
    check = _check(doc, 'serialization.book_file')
    i, exp = next((i, e) for i, e in enumerate(check['params']['expect']) if 'other' in e)
    good = exp[field]
    exp[field] = good.replace('params', 'parms') if 'params' in good else good.replace(
        'expected', 'expectd')
    text = _refused(doc, 'step53.json')
    assert text.startswith("step53.json: check {!r}: expect[{}].{}: {!r} is not in the report "
                           "of scenario 'serialization.book_file'".format(check['id'], i, field,
                                                                          exp[field]))
    assert good in text   # the closest declared path
    assert 'there is no key' in text


def test_a_misspelled_ignored_path_of_a_reference_match_is_refused():
    doc = _doc(58)
    check = _check(doc, 'vgg.pretrained_file')
    check['params']['ignore'] = ['model.tran']
    text = _refused(doc, 'step58.json')
    assert 'ignore[0]' in text and "'model.tran'" in text and 'model.train' in text


def test_a_check_that_names_its_scenario_in_code_is_validated_through_its_plan():
    doc = _doc(9)
    battery = next(c for c in doc['checks'] if c['check'] in ('grad.early', 'grad.battery'))
    assert assignments.from_document(copy.deepcopy(doc), 'step09.json')
    real = contracts.DECLARED['early.fn']
    try:   # a declaration without `points` makes the battery's own plan wrong
        contracts.DECLARED['early.fn'] = contracts.Declaration(
            real.name, real.summary, {k: v for k, v in real.params.items() if k != 'points'},
            real.report)
        text = _refused(doc, 'step09.json')
    finally:
        contracts.DECLARED['early.fn'] = real
    assert "check {!r}".format(battery['id']) in text and "no parameter 'points'" in text


def test_every_assignment_loads_against_the_declarations():
    for step in assignments.available_steps():
        assignments.load(step)
    assignments.load('core')


# -- paths and shapes -----------------------------------------------------------------------------
SHAPE = {'a': Phase({'b': [ARRAY], 'c': (INT, NUM)}), 'names': Map(STR | NONE),
         'rows': [Or({'value': ANY, 'type': STR}, {'raised': STR})], 'opt': Opt(BOOL),
         'keyed': Open({'flag': BOOL}, rest=ARRAY)}


@pytest.mark.parametrize('path', ['a.b[*]', 'a.b[3]', 'a.c[1]', 'a.raised', 'a.message',
                                  'names.cuda', 'names[*]', 'rows[0].value', 'rows[*].type',
                                  'opt', 'keyed.ratio_50', 'keyed.flag', 'a[*]'])
def test_paths_an_expectation_may_name(path):
    assert path_problem(SHAPE, path) is None


@pytest.mark.parametrize('path, words', [
    ('a.d', "no key 'd'"), ('a.c[2]', 'out of range'), ('a.b.x', 'has no key'),
    ('names[0]', 'indexes nothing'), ('rows[0].value.x', None), ('a.b[*].data', 'has no part'),
    ('optt', "did you mean 'opt'"),
])
def test_paths_that_name_nothing(path, words):
    why = path_problem(SHAPE, path)
    if words is None:   # below ANY everything goes
        assert why is None
    else:
        assert why and words in why


def test_a_report_is_compared_with_its_shape():
    import numpy as np
    from dezero_grader.wire import Array as _Array

    def Array():   # what the wire hands the trusted side
        return _Array(np.zeros(2), 'cpu')
    good = {'a': {'b': [Array()], 'c': [1, 2.5]}, 'names': {'x': None, 'y': 'class'},
            'rows': [{'raised': 'TypeError'}, {'value': [1], 'type': 'list'}],
            'keyed': {'flag': True, 'ratio_20': Array()}}
    assert conformance(SHAPE, good) == []
    assert conformance(SHAPE, dict(good, a={'raised': 'ValueError', 'message': 'no'})) == []
    bad = dict(good, a={'b': [1.0], 'c': [1]}, extra=1)
    bad.pop('names')
    problems = conformance(SHAPE, bad)
    assert "(top): key 'names' is missing" in problems
    assert "(top): undeclared key(s) 'extra'" in problems
    assert 'a.b[0]: expected array, found float' in problems
    assert 'a.c: expected 2 positions, found 1' in problems
    # what the grader's own scenario code alone fixes (the top record's keys) is broken only by
    # a forged answer; a leaf of another kind, or a deeper record keyed by what the learner's
    # code saved, may come from unusual code
    forged = {p for p in problems if p.forged}
    assert forged == {"(top): key 'names' is missing", "(top): undeclared key(s) 'extra'"}
    deeper = conformance({'file': {'fc/W': ARRAY}}, {'file': {'fc.W': None}})
    assert deeper and not any(p.forged for p in deeper)


SIZED = {'grads': When('gy', Sized(ARRAY | NONE, 'wrt')), 'points': Sized(ARRAY, 'points'),
         'y': NUM}


@pytest.mark.parametrize('report, params, words', [
    ({'grads': [], 'points': [], 'y': 1.0}, {'gy': True, 'wrt': [0], 'points': []},
     'grads: expected 1 element (as this probe asks), found 0'),
    ({'points': [], 'y': 1.0}, {'gy': True, 'wrt': [0], 'points': []},
     "(top): key 'grads' is missing, and this probe asks for it"),
    ({'grads': [None], 'points': [], 'y': 1.0}, {'gy': False, 'wrt': [0], 'points': []},
     "(top): key 'grads' is there, and this probe does not ask for it"),
    ({'points': [], 'y': 1.0}, {'gy': False, 'wrt': [0], 'points': [[1.0]]},
     'points: expected 1 element (as this probe asks), found 0'),
])
def test_parts_the_probe_asks_for_are_there_exactly_when_asked_and_as_many(report, params, words):
    problems = conformance(SIZED, report, params=params)
    assert [str(p) for p in problems] == [words] and problems[0].forged


def test_numbers_the_wire_keeps_as_numpy_scalars_fit_and_odd_numbers_are_numbers():
    import numpy as np
    assert conformance({'n': INT, 'x': NUM}, {'n': np.int64(3), 'x': np.float32(2.5)}) == []
    assert conformance({'x': NUM}, {'x': float('inf')}) == []
    problems = conformance({'n': INT}, {'n': 1e400})
    assert problems and not problems[0].forged


# -- the trusted process imports no scenario code -------------------------------------------------
def test_loading_every_assignment_imports_no_scenario_body():
    code = ('import sys\n'
            'from dezero_grader.catalogue import assignments\n'
            'for s in assignments.available_steps(): assignments.load(s)\n'
            'assignments.load("core")\n'
            'print(sorted(m for m in sys.modules if m.startswith("dezero_grader.sandboxed.probes.scenarios")\n'
            '             or m == "dezero_grader.sandboxed.probes.handlers"))\n')
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(schema.data_dir('assignments').parent.parent)] + sys.path))
    out = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True, env=env,
                         timeout=HANG_S)   # only a hang reaches it, however loaded the machine
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == '[]'


# -- what the scenarios report on the reference fits their declarations ---------------------------
def _probes():
    """One probe per scenario, as the assignments plan it: (scenario, probe, entry, step)."""
    from dezero_grader.checks import load_all
    checks = load_all()
    found = {}
    for name in ['core'] + assignments.available_steps():
        a = assignments.load(name)
        for use in a.checks:
            for probe in checks[use.check].plan(use.params, 20240607).learner:
                found.setdefault(probe.scenario, (probe, a.entry, use.step))
    return found


_PROBES = _probes()


def test_every_declared_scenario_is_run_by_some_assignment():
    assert sorted(_PROBES) == sorted(contracts.load_all())


@pytest.mark.parametrize('name', sorted(_PROBES))   # all of them take seconds together
def test_a_scenario_reports_what_it_declares_on_the_reference(name, tmp_path, monkeypatch):
    # in a folder and a home of its own, as in a worker: a scenario writes files where it runs
    # and in `~/.dezero` (data.mnist places its IDX files there), never in the user's
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv('HOME', str(tmp_path))
    import dezero.utils
    monkeypatch.setattr(dezero.utils, 'cache_dir', str(tmp_path / '.dezero'))
    probe = _PROBES[name][0]
    report = run_on_reference(*_PROBES[name])
    # as the trusted side holds a learner's report: against the shape for this probe
    declaration = contracts.load_all()[name]
    problems = declaration.report_problems(report, probe.params)
    assert problems == [], '{}: {}'.format(name, problems[:8])
    # what the trusted side derives from it has the shape judges read
    judged = declaration.judged_report(report, probe.params)
    problems = conformance(declaration.read_shape, judged)
    assert problems == [], '{} (derived): {}'.format(name, problems[:8])


def run_on_reference(probe, entry, step):
    """The report of one probe on the reference (its package, or the step file of `step`),
    carried through the wire as a worker's would be."""
    from dezero_grader import wire
    from dezero_grader.sandboxed import simdevice
    from dezero_grader.sandboxed.probes import SCENARIOS
    from dezero_grader.sandboxed.probes.context import Api, Ctx
    from dezero_grader.sandboxed.probes import stepfile
    import dezero_grader.sandboxed.probes.scenarios  # noqa: F401
    from dezero_grader.reference import ROOT
    if entry == 'single-file':
        folder = os.path.join(ROOT, 'steps')
        module = 'step{:02d}'.format(step)
        mod, _ = stepfile.run(module, os.path.join(folder, module + '.py'))
        api = Api(mod, 'single-file')
    else:
        import dezero
        api = Api(dezero, 'package')
    xp = simdevice.install() if probe.device == 'gpu' else None
    # what a scenario may cost on the reference is CPU time, which a loaded machine does not
    # stretch (the grader's own limits are CPU time too)
    t = time.process_time()
    value = SCENARIOS[probe.scenario](Ctx(api, probe.device, probe.seed, xp), **probe.params)
    spent = time.process_time() - t
    assert spent < 120, '{} took {:.1f} s of CPU time on the reference'.format(probe.scenario, spent)
    return wire.decode(json.loads(json.dumps(wire.encode(value))))
