"""`selftest`: the gate proves it can fail.

For a step: the reference must be accepted with full marks under both profiles; every fault of
the step's catalogue (its own and its `faults_from` steps') is injected into a copy of the
reference and graded, and must end in `reject` (a fault of this step; `rollback` when it also
breaks an earlier step's contract, `expected_verdict`) or `rollback` (a fault of
an earlier step), with every check its catalogue entry names among the failing ones. The fault ×
check matrix shows which checks each fault made fail; a check of this step that no fault can
make fail is a gap too, and so is one that fails only by a crash or only collaterally (see
`dezero_grader/proof/check_proofs.py`: every check must fail by judgment on a fault of its own step that names it).
"""
from __future__ import annotations

import concurrent.futures
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from dezero_grader.catalogue import assignments, faults
from dezero_grader.grading import diagnose, fingerprints, run
from dezero_grader.intake import load
from dezero_grader.proof import check_proofs
from dezero_grader.scoring.scorecard_read import Scorecard


@dataclass
class Outcome:
    step: int
    reference: dict = field(default_factory=dict)      # profile -> (verdict, earned, possible)
    rows: list = field(default_factory=list)            # (fault, expected, verdict, failed ids, missing)
    uncaught: list = field(default_factory=list)        # own check ids no fault made fail
    problems: list = field(default_factory=list)
    failures: list = field(default_factory=list)        # per row: {check id: check_proofs.Failure}
    proof: check_proofs.Proof | None = None
    # per fault: (fault id, ids the diagnosis names first, root causes named, unexplained checks)
    diagnoses: list = field(default_factory=list)
    fingerprints: str = ''                              # what became of the stored fingerprints

    @property
    def diagnosed(self):
        """(variants whose injected fault is the top diagnosis, variants diagnosed)."""
        return sum(1 for fid, top, _, _ in self.diagnoses if fid in top), len(self.diagnoses)

    @property
    def ok(self):
        return not self.problems


def expected_verdict(fault, step: int, card) -> str:
    """`rollback` for a fault of an earlier step; for one of this step `reject`, or `rollback`
    where it also breaks an earlier step's contract that this step's code carries (a step-9 type
    check that refuses step 2's 0-d squares): the earlier failure then decides, as for a learner,
    and the fault is still caught by this step's own checks (every check its entry names must
    fail either way)."""
    if fault.step != step:
        return 'rollback'
    own_failed = any(c.failing and not c.regression for c in card.checks)
    earlier_failed = any(c.failing and c.regression and c.tier == 'book' for c in card.checks)
    return 'rollback' if own_failed and earlier_failed and card.verdict == 'rollback' else 'reject'


def reference_source(step: int) -> Path:
    """The correct submission for `step`: the reference's single step files for steps 1-22
    (`reference/steps/stepNN.py`), the reference package from step 23 on."""
    from dezero_grader import reference
    if step < load.FIRST_PACKAGE_STEP:
        return reference.ROOT / 'steps'
    return reference.ROOT


def _graded_variants(base, work: Path, catalogue, step: int, seed: int, jobs: int):
    """(fault, scorecard) for each fault of `catalogue`, in its order: each injected into its own
    copy of `base` and graded, `jobs` at a time. Threads are enough: a grading's work happens in
    its worker process, and the thread only waits for it."""
    def grade(numbered):
        i, fault = numbered
        variant = faults.inject(base.root, work / 'v{:03d}-{}'.format(i, fault.id), fault, base.entry)
        profile = 'extension' if fault.tier == 'extension' else 'book'
        return run.grade(variant, step, run.Options(seed=seed, profile=profile))
    with concurrent.futures.ThreadPoolExecutor(max(1, jobs)) as pool:
        futures = [pool.submit(grade, numbered) for numbered in enumerate(catalogue)]
        try:
            for fault, future in zip(catalogue, futures):
                yield fault, future.result()
        finally:
            for future in futures:
                future.cancel()   # a failure or an interrupt: the gradings not started never start


def run_step(step: int, *, seed: int = 2026, progress=None,
             write_fingerprints: bool = False, jobs: int = 1) -> Outcome:
    """Self-test one step (see the module docstring); `jobs` fault variants are graded at once."""
    assignment = assignments.load(step)
    outcome = Outcome(step)
    source = reference_source(step)
    for profile in ('book', 'extension'):
        card = Scorecard.from_document(run.grade(source, step, run.Options(seed=seed, profile=profile)))
        sc = card.score
        outcome.reference[profile] = (card.verdict, sc.earned, sc.possible,
                                      sc.extension_earned, sc.extension_possible)
        if card.verdict != 'accept' or sc.earned != sc.possible or (
                profile == 'extension' and sc.extension_earned != sc.extension_possible):
            bad = [c.id + ': ' + c.message for c in card.failing]
            outcome.problems.append('the reference is not accepted with full marks under the {} '
                                    'profile: {} {}'.format(profile, card.verdict, bad[:3]))
    ever_failed = set()
    graded_variants = []
    work = Path(tempfile.mkdtemp(prefix='dezero-selftest-'))
    try:
        base = load.prepare(source, step, work / 'base')
        own, regression = run.checks_of(assignment, base)   # a step file's: what it carries
        graded = {u.id for u in own} | {u.id for u in regression}
        catalogue = tuple(assignments.fault_catalogue(assignment))
        for fault, doc in _graded_variants(base, work, catalogue, step, seed, jobs):
            card = Scorecard.from_document(doc)
            failed = sorted(c.id for c in card.failing)
            ever_failed.update(failed)
            expected = expected_verdict(fault, step, card)
            missing = [t for t in fault.caught_by if t in graded and t not in failed]
            outcome.rows.append((fault, expected, card.verdict, failed, missing))
            outcome.failures.append(check_proofs.failures_of(doc))
            graded_variants.append((fault, doc))
            if card.verdict != expected:
                outcome.problems.append('fault {} ended in {} (expected {}); failing: {}'.format(
                    fault.id, card.verdict, expected, failed or card.reason))
            if missing:
                outcome.problems.append('fault {} was not caught by {}'.format(
                    fault.id, ', '.join(missing)))
            if progress:
                progress(fault, card.verdict)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    outcome.uncaught = sorted(u.id for u in own if u.id not in ever_failed)
    for check_id in outcome.uncaught:
        outcome.problems.append('check {} fails on no fault of the catalogue'.format(check_id))
    outcome.proof = check_proofs.prove(step, own, [(r[0], f) for r, f in zip(outcome.rows,
                                                                       outcome.failures)],
                                {step, *assignment.faults_from} if assignment.no_code else {step})
    outcome.problems.extend(check_proofs.problems(outcome.proof))
    if graded_variants:
        _diagnoses(outcome, assignment, graded_variants, seed, write_fingerprints)
    return outcome


def _diagnoses(outcome, assignment, graded_variants, seed, write):
    """Fingerprints measured from the variants (stored with `write`, else compared with the stored
    ones), then each variant diagnosed from its scorecard: its own fault must come first, alone."""
    device_mode = graded_variants[0][1]['environment']['device_mode']
    measured = fingerprints.measure(assignment.step, seed, device_mode, graded_variants)
    stored = fingerprints.load(assignment.step)
    if write:
        fingerprints.write(assignment.step, measured)
        outcome.fingerprints = 'written to {}'.format(fingerprints.path_of(assignment.step))
        stored = measured
    elif stored is None:
        outcome.problems.append('no fingerprints are stored for step {}: run selftest --step {} '
                                '--write-fingerprints'.format(assignment.step, assignment.step))
        outcome.fingerprints = 'none stored (diagnosed with the measured ones)'
    elif (stored['seed'], stored['device_mode']) == (seed, device_mode):
        changes = fingerprints.differences(stored, measured)
        for change in changes:
            outcome.problems.append('{}: refresh with selftest --step {} --write-fingerprints'.format(
                change, assignment.step))
        outcome.fingerprints = 'stored, {}'.format('stale' if changes else 'up to date')
    else:
        outcome.fingerprints = 'stored for seed {} ({}), graded with seed {} ({}): not compared'.format(
            stored['seed'], stored['device_mode'], seed, device_mode)
    prints = fingerprints.prints_of(stored or measured)
    catalogue = fingerprints.catalogue_of(assignment)
    for fault, doc in graded_variants:
        diagnosis = diagnose.diagnose(doc['checks'], prints, catalogue,
                                      counted=diagnose.counted_ids(doc['checks'], doc['profile']))
        top = diagnose.top_faults(diagnosis)
        named = len(diagnosis['causes'])
        outcome.diagnoses.append((fault.id, top, named, diagnosis['unexplained']))
        if fault.id not in top:
            first = diagnosis['causes'][0]['summary'] if diagnosis['causes'] else 'nothing'
            outcome.problems.append('the diagnosis of fault {} names first: {}'.format(
                fault.id, first))
        elif named > 1 or diagnosis['unexplained']:
            outcome.problems.append('the report of fault {} names {} root causes{}'.format(
                fault.id, named, ' and leaves {} unexplained'.format(
                    ', '.join(diagnosis['unexplained'])) if diagnosis['unexplained'] else ''))


def render(outcome: Outcome) -> str:
    lines = ['selftest step {}'.format(outcome.step)]
    for profile, (verdict, earned, possible, ee, ep) in outcome.reference.items():
        lines.append('  reference, {} profile: {} {:g}/{:g} (extension {:g}/{:g})'.format(
            profile, verdict, earned, possible, ee, ep))
    if outcome.rows:
        lines.append('  fault × check matrix (✓ caught where the catalogue says; checks that failed):')
    for fault, expected, verdict, failed, missing in outcome.rows:
        mark = '✓' if verdict == expected and not missing else '✗'
        lines.append('  {} {:32} {:8} → {:8} {}'.format(mark, fault.id, expected, verdict,
                                                        ', '.join(failed) or '(none)'))
    caught = sum(1 for r in outcome.rows if r[1] == r[2] and not r[4])
    pairs = sum(len(r[3]) for r in outcome.rows)
    lines.append('  totals: {}/{} faults caught as catalogued; {} fault × check failures; '
                 '{} check(s) no fault makes fail'.format(caught, len(outcome.rows), pairs,
                                                          len(outcome.uncaught)))
    if outcome.proof is not None:
        lines.extend(check_proofs.render(outcome.proof))
    if outcome.diagnoses:
        hits, total = outcome.diagnosed
        many = sum(1 for _, top, named, unexplained in outcome.diagnoses
                   if named > 1 or unexplained)
        alone = sum(1 for fid, top, _, _ in outcome.diagnoses if top == [fid])
        lines.append('  diagnosis: the injected fault is the top root cause for {}/{} variants '
                     '({:.0%}; named alone for {}, the others with faults they cannot be told '
                     'apart from); {} report(s) name more than one cause; fingerprints {}'.format(
                         hits, total, hits / total, alone, many, outcome.fingerprints))
        together = sorted({' = '.join(top) for fid, top, _, _ in outcome.diagnoses if len(top) > 1})
        if together:
            lines.append('  named together (their fingerprints cannot be told apart): '
                         + '; '.join(together))
    for p in outcome.problems:
        lines.append('  GAP: ' + p)
    return '\n'.join(lines) + '\n'


def totals(outcomes) -> list:
    """The figures over several steps: judgment, the battery's sub-checks, the diagnosis."""
    lines = []
    proofs = [o.proof for o in outcomes if o.proof is not None]
    if proofs:
        counts = {k: sum(p.counts[k] for p in proofs) for k in check_proofs.KINDS}
        lines.append('judgment: {} check(s) fail by judgment on a fault of their own step, {} only by '
                     'a crash, {} only collaterally, {} never'.format(
                         counts[check_proofs.JUDGED], counts[check_proofs.CRASH], counts[check_proofs.COLLATERAL],
                         counts[check_proofs.NEVER]))
        if any(p.battery for p in proofs):
            shown = {case for p in proofs for case in p.battery_cases}
            cases = check_proofs.BATTERY_CASES
            missing = [c for c in cases if c not in shown]
            lines.append('gradient-battery sub-checks shown failing by these steps\' faults: {}/{}{}'
                         ' (tests/unit/test_battery_cases.py breaks each of the {} alone)'.format(
                             len(cases) - len(missing), len(cases),
                             ', not: ' + ', '.join(missing) if missing else '', len(cases)))
    diagnosis = diagnosis_total(outcomes)
    if diagnosis:
        lines.append(diagnosis)
    return lines


def diagnosis_total(outcomes) -> str:
    """One line over several steps: how often the injected fault was the top diagnosis."""
    hits = sum(o.diagnosed[0] for o in outcomes)
    total = sum(o.diagnosed[1] for o in outcomes)
    alone = sum(1 for o in outcomes for fid, top, _, _ in o.diagnoses if top == [fid])
    if not total:
        return ''
    return 'diagnosis: the injected fault is the top root cause for {}/{} single-fault variants ' \
           '({:.1%}; named alone for {})'.format(hits, total, hits / total, alone)
