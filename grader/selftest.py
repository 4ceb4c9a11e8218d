"""`selftest`: the gate proves it can fail.

For a step: the reference must be accepted with full marks under both profiles; every fault of
the step's catalogue (its own and its regression steps') is injected into a copy of the
reference and graded, and must end in `reject` (a fault of this step) or `rollback` (a fault of
an earlier step), with every check its catalogue entry names among the failing ones. The fault ×
check matrix shows which checks each fault made fail; a check of this step that no fault can
make fail is a gap too, and so is one that fails only by a crash or only collaterally (see
`grader/proof.py`: every check must fail by judgment on a fault of its own step that names it).
"""
from __future__ import annotations

import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from grader import assignments, faults, load, proof, run
from grader.model import FAILING



@dataclass
class Outcome:
    step: int
    reference: dict = field(default_factory=dict)      # profile -> (verdict, earned, possible)
    rows: list = field(default_factory=list)            # (fault, expected, verdict, failed ids, missing)
    uncaught: list = field(default_factory=list)        # own check ids no fault made fail
    problems: list = field(default_factory=list)
    failures: list = field(default_factory=list)        # per row: {check id: proof.Failure}
    proof: proof.Proof | None = None

    @property
    def ok(self):
        return not self.problems


def reference_source(step: int) -> Path:
    """The correct submission for `step`: the reference's single step files for steps 1-22
    (`reference/steps/stepNN.py`), the reference package from step 23 on."""
    import reference
    if step < load.FIRST_PACKAGE_STEP:
        return reference.ROOT / 'steps'
    return reference.ROOT


def run_step(step: int, *, seed: int = 2026, progress=None) -> Outcome:
    assignment = assignments.load(step)
    outcome = Outcome(step)
    source = reference_source(step)
    for profile in ('book', 'extension'):
        doc = run.grade(source, step, run.Options(seed=seed, profile=profile))
        sc = doc['score']
        outcome.reference[profile] = (doc['verdict'], sc['earned'], sc['possible'],
                                      sc['extension']['earned'], sc['extension']['possible'])
        if doc['verdict'] != 'accept' or sc['earned'] != sc['possible'] or (
                profile == 'extension' and sc['extension']['earned'] != sc['extension']['possible']):
            bad = [c['id'] + ': ' + c['message'] for c in doc['checks'] if c['status'] in FAILING]
            outcome.problems.append('the reference is not accepted with full marks under the {} '
                                    'profile: {} {}'.format(profile, doc['verdict'], bad[:3]))
    own, regression = assignments.with_regression(assignment)
    graded = {u.id for u in own} | {u.id for u in regression}
    ever_failed = set()
    work = Path(tempfile.mkdtemp(prefix='dezero-selftest-'))
    try:
        base = load.prepare(source, step, work / 'base')
        for i, fault in enumerate(assignments.fault_catalogue(assignment)):
            variant = faults.inject(base.root, work / 'v{:03d}-{}'.format(i, fault.id), fault,
                                    base.entry)
            profile = 'extension' if fault.tier == 'extension' else 'book'
            doc = run.grade(variant, step, run.Options(seed=seed, profile=profile))
            failed = sorted(c['id'] for c in doc['checks'] if c['status'] in FAILING)
            ever_failed.update(failed)
            expected = 'reject' if fault.step == step else 'rollback'
            missing = [t for t in fault.targets if t in graded and t not in failed]
            outcome.rows.append((fault, expected, doc['verdict'], failed, missing))
            outcome.failures.append(proof.failures_of(doc))
            if doc['verdict'] != expected:
                outcome.problems.append('fault {} ended in {} (expected {}); failing: {}'.format(
                    fault.id, doc['verdict'], expected, failed or doc.get('reason')))
            if missing:
                outcome.problems.append('fault {} was not caught by {}'.format(
                    fault.id, ', '.join(missing)))
            if progress:
                progress(fault, doc['verdict'])
    finally:
        shutil.rmtree(work, ignore_errors=True)
    outcome.uncaught = sorted(u.id for u in own if u.id not in ever_failed)
    for check_id in outcome.uncaught:
        outcome.problems.append('check {} fails on no fault of the catalogue'.format(check_id))
    outcome.proof = proof.prove(step, own, [(r[0], f) for r, f in zip(outcome.rows,
                                                                       outcome.failures)],
                                {step, *assignment.regression} if assignment.no_code else {step})
    outcome.problems.extend(proof.problems(outcome.proof))
    return outcome


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
        lines.extend(proof.render(outcome.proof))
    for p in outcome.problems:
        lines.append('  GAP: ' + p)
    return '\n'.join(lines) + '\n'
