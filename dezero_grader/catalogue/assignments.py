"""Assignment files: load, validate, and turn into `Assignment` records.

An assignment is data (`assignments/stepNN.json`). Loading validates it against
`schemas/assignment.schema.json`, then every check it uses against the check registry (unknown
name, unknown or ill-typed parameter), every scenario a check runs against the scenario
declarations (`dezero_grader.contracts`: the scenario exists, its arguments are declared ones of the
declared kinds, every report path an expectation names is in its declared report) and every
fault against the fault library — all before anything is graded, with errors that name the file
and the place. No scenario code is imported here.
"""
from __future__ import annotations

import dataclasses
import functools
import json
import re

import jsonschema

from dezero_grader import contracts
from dezero_grader.checks import environment, load_all
from dezero_grader.errors import GraderError
from dezero_grader.records import schema
from dezero_grader.records.dataflow import Assignment, CheckUse, Fault

_FILE = re.compile(r'^step(\d\d)\.json$')
_PACK = re.compile(r'^pack-([a-z0-9-]+)\.json$')


class AssignmentError(GraderError):
    """An assignment file is wrong: the author's mistake, reported before grading."""


def available_steps() -> list[int]:
    return sorted(int(m.group(1)) for p in schema.data_dir('assignments').iterdir()
                  if (m := _FILE.match(p.name)))


def available_packs() -> list[str]:
    return sorted(m.group(1) for p in schema.data_dir('assignments').iterdir()
                  if (m := _PACK.match(p.name)))


def _file_name(step) -> str:
    return 'pack-{}.json'.format(step) if isinstance(step, str) else 'step{:02d}.json'.format(step)


@functools.lru_cache(maxsize=None)
def _document(step) -> dict:
    path = schema.data_dir('assignments') / _file_name(step)
    if not path.is_file():
        raise AssignmentError('there is no assignment for step {} (have: {})'.format(
            step, ', '.join(map(str, available_steps())) or 'none'))
    try:
        with open(path, encoding='utf-8') as f:
            return json.load(f)
    except json.JSONDecodeError as e:
        raise AssignmentError('{}: not valid JSON: {}'.format(path.name, e)) from None


@functools.lru_cache(maxsize=None)
def load(step) -> Assignment:
    """The assignment of a step (an int), or a regression pack (its name). A step's `regression`
    is derived (`regression_of`), never listed in its file."""
    assignment = from_document(_document(step), _file_name(step))
    if isinstance(step, str):
        return assignment
    return dataclasses.replace(assignment, regression=regression_of(step))


def regression_of(step: int) -> tuple:
    """The earlier steps (numbers) and packs (names) whose checks a grading of `step` re-runs.

    Accept means every earlier contract holds, so this is every earlier step whose code the
    submission still carries: a package answers for every package step before it (a package at
    step 50 for steps 23-49). A step file (steps 1-22) answers here for its own step (below); the
    earlier step files' checks its code still carries are read from the submission
    (`dezero_grader.grading.stepfile_reach`, through `run.checks_of`). A
    pack
    (`pack-NAME.json`) of the same kind of submission is re-run by every step after the one it
    is filed under: it carries the contracts of earlier steps of another kind (the step files'
    gradient accumulation or no_grad, graded on a package)."""
    entry = _document(step)['entry']
    if entry == 'single-file':
        # what a step file carries of the earlier ones is the learner's file's to say, not the
        # book's: the book's drop Exp at step 10, a learner's step 14 may hold no Square. So
        # it is read from the submission (`dezero_grader.grading.stepfile_reach`); here only what every step
        # file of this step answers for: a step without code, the step file it is graded on
        # (`faults_from`).
        doc = _document(step)
        return tuple(doc.get('faults_from', ())) if doc.get('no_code') else ()
    earlier = [k for k in available_steps() if k < step and _document(k)['entry'] == entry]
    packs = [name for name in available_packs()
             if _document(name)['step'] < step and _document(name)['entry'] == entry]
    return tuple(earlier) + tuple(packs)


def from_document(doc, name='<assignment>') -> Assignment:
    problems = schema.errors('assignment', doc)
    if problems:
        raise AssignmentError('{} does not follow the assignment schema: {}'.format(
            name, '; '.join(problems[:5])))
    if 'pack' not in doc and doc['step'] != int(re.sub(r'\D', '', name) or doc['step']):
        raise AssignmentError('{} declares step {}'.format(name, doc['step']))
    checks = load_all()
    from dezero_grader.catalogue.faults import load_all as load_patches
    PATCHES = load_patches()
    step = doc['step']
    uses, seen = [], set()
    for c in doc['checks']:
        where = '{}: check {!r}'.format(name, c['id'])
        if c['id'] in seen:
            raise AssignmentError('{} appears twice'.format(where))
        seen.add(c['id'])
        definition = checks.get(c['check'])
        if definition is None:
            raise AssignmentError('{} uses unknown check {!r} (known: {})'.format(
                where, c['check'], ', '.join(sorted(checks))))
        params = c.get('params', {})
        try:
            jsonschema.Draft202012Validator(definition.params_schema).validate(params)
        except jsonschema.ValidationError as e:
            raise AssignmentError('{}: parameters of {!r} are wrong at {}: {}'.format(
                where, c['check'], '/'.join(map(str, e.path)) or '(top)', e.message)) from None
        _check_contract(where, definition, params)
        later = tuple((entry['from_step'], entry.get('args')) for entry in c.get('later', ()))
        for from_step, args in later:
            if from_step <= step or (args is not None and 'scenario' not in params):
                raise AssignmentError('{}: `later` is for a check of a step file, from a later '
                                      'step (here {}); its args for a scenario check'.format(
                                          where, from_step))
            if args is not None:
                _check_contract('{} (from step {})'.format(where, from_step), definition,
                                dict(params, args=dict(params.get('args', {}), **args)))
        check_step = c.get('step', step)
        uses.append(CheckUse(
            id='step{:02d}/{}'.format(check_step, c['id']), check=c['check'], step=check_step,
            title=c['title'], tier=c['tier'], category=c['category'], points=float(c['points']),
            params=params, tolerance=c.get('tolerance', {}), needs_gpu=c.get('needs_gpu', False),
            needs_real_gpu=c.get('needs_real_gpu', False),
            faults=(), later=later))
    ids = {u.id for u in uses}
    faults = []
    for f in doc['faults']:
        if f['patch'] not in PATCHES:
            raise AssignmentError('{}: fault {!r} names unknown patch {!r}'.format(
                name, f['id'], f['patch']))
        faults.append(Fault(id=f['id'], step=f.get('step', step), title=f['title'], tier=f['tier'],
                            hint=f['hint'], caught_by=tuple(f['caught_by']), patch=f['patch']))
    own_prefixes = {u.id.split('/')[0] + '/' for u in uses}
    for f in faults:
        for check_id in f.caught_by:
            if check_id.split('/')[0] + '/' in own_prefixes and check_id not in ids:
                raise AssignmentError('{}: fault {!r} says it is caught by {!r}, which this '
                                      'assignment does not define'.format(name, f.id, check_id))
    return Assignment(step=step, title=doc['title'], stage=doc['stage'], summary=doc['summary'],
                      adds=tuple(doc.get('adds', ())), entry=doc['entry'], checks=tuple(uses),
                      regression=(), faults=tuple(faults),
                      faults_from=tuple(doc.get('faults_from', ())),
                      no_code=doc.get('no_code', False))


def _check_contract(where, definition, params):
    """The scenarios the check would run, with the arguments it would give them, and the report
    paths it names, against the declarations (what a worker would find out only when it runs)."""
    declared = contracts.load_all()
    try:
        plan = definition.plan(params, 0)
    except Exception as e:   # parameters the schema accepts but the check cannot plan with
        raise AssignmentError('{}: parameters of {!r} cannot be planned: {}: {}'.format(
            where, definition.name, type(e).__name__, e)) from None
    for probe in plan.learner + plan.reference:
        decl = declared.get(probe.scenario)
        if decl is None:
            raise AssignmentError('{} {}'.format(where, contracts.unknown_scenario(probe.scenario)))
        problems = decl.param_problems(probe.params)
        if problems:
            raise AssignmentError('{}: {}'.format(where, '; '.join(problems)))
    if definition.report_paths is None or not plan.learner:
        return
    decl = declared[plan.learner[0].scenario]
    for at, path in definition.report_paths(params):
        why = decl.path_problem(path)
        if why:
            raise AssignmentError('{}: {}: {}'.format(where, at, why))
@functools.lru_cache(maxsize=None)
def content_hash(step: int) -> str:
    """sha256 of the assignment files a grading of `step` reads (its own and its regression
    steps' or packs', names and bytes): what a receipt records, so that editing points or checks
    regrades exactly the submissions of the steps it touches."""
    import hashlib
    digest = hashlib.sha256()
    folder = schema.data_dir('assignments')
    assignment = load(step)
    earlier = list(assignment.regression)
    if assignment.entry == 'single-file':   # which of them a step file answers for is its own
        earlier += [k for k in available_steps()
                    if k < step and _document(k)['entry'] == 'single-file' and k not in earlier]
    names = [_file_name(step)] + [_file_name(k) for k in earlier]
    for name in names:
        digest.update(name.encode() + b'\0' + (folder / name).read_bytes() + b'\0')
    return 'sha256:' + digest.hexdigest()


def with_regression(assignment: Assignment) -> tuple:
    """(this step's checks, the regression checks of its earlier steps): the book-tier checks of
    every step in `assignment.regression` (and the extension-tier ones of the steps in
    `faults_from`), each once (a pack repeats checks of the steps it draws from; the first one
    seen is run), earliest step first."""
    seen = {u.id for u in assignment.checks}
    earlier = []
    for step in assignment.regression:
        for use in load(step).checks:
            # extension-tier checks only of the steps the catalogue draws faults from (as
            # before the regression reached back to every step: their faults' fingerprints
            # name them); they decide a rollback only under the extension profile
            if (use.tier != 'book' and step not in assignment.faults_from) or use.id in seen:
                continue
            seen.add(use.id)
            earlier.append(use)
    earlier.sort(key=lambda u: u.step)   # stable: a step's checks keep their order
    return assignment.checks, tuple(earlier)


def fault_catalogue(assignment: Assignment) -> tuple:
    """This step's faults and those of the steps it draws faults from (`faults_from`: a stage-5
    submission can carry an earlier step's bug; then the earlier step's checks catch it). Smaller
    than the regression on purpose: `selftest` injects each one and grades the whole step. The
    environment checks every grading has come with the faults that make them fail."""
    faults = list(assignment.faults)
    for step in assignment.faults_from:
        faults.extend(load(step).faults)
    return tuple(faults) + environment.faults_for(assignment)
