"""Mutation figure: how many small mutations of the reference the step that owns the code rejects.

    python bench/mutation.py [--sample 30] [--seed 1] [--only Sin,Exp] [--json out.json]

A simple AST mutator walks the `forward`/`backward` methods of the reference's differentiable
Functions (dezero/functions.py, the arithmetic of dezero/core.py) and `accuracy`, and makes one
mutant per site and operator: an arithmetic operator swapped (+ ↔ -, * ↔ /, ** → *), a unary
minus dropped, a comparison flipped, a numeric constant changed (axes and exponents included),
and in `backward` a term dropped (`a * b` → `a`, `a * b` → `b`). Each mutant is a copy of the
reference package with that one file changed, graded at the step that introduces the Function
(OWNERS); it is *rejected* when that step's own checks fail: verdict `reject`, or `rollback`
where the mutant also breaks an earlier step's contract that the step re-runs (an arithmetic
operator of core.py breaks step 40's checks and those of steps 20-39 with them).

A surviving mutant is either a gap of the owning step or equivalent to the original (e.g. a mask
`x > 0` flipped to `x >= 0` where the inputs never hit 0): survivors are listed with their
change for a person to classify; the figure to quote is rejected / (mutants − equivalent ones).
Grading is the ordinary `run.grade`, so a mutant takes as long as a `check` of its step.

Measured on the reference with `--sample 0` (all 125 distinct mutants, about 3 minutes on two
busy cores): 122 rejected by the owning step, 115 of them by judging a wrong value (the other 7
make the code raise); the 3 survivors flip a comparison in a mask (ReLU's `x > 0`, Clip's
bounds), equivalent on the inputs the checks draw, which avoid the kinks on purpose.
"""
from __future__ import annotations

import argparse
import ast
import copy
import json
import os
import random
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault('OMP_NUM_THREADS', '1')
os.environ.setdefault('OPENBLAS_NUM_THREADS', '1')

from dezero_grader import reference  # noqa: E402
from dezero_grader.grading import run
from dezero_grader.proof import mutation_record
from dezero_grader.records.status import FAILING  # noqa: E402
from dezero_grader.scoring import scorecard_write  # noqa: E402

# (file, class or function) -> the step whose own checks grade it (the step that adds it)
OWNERS = mutation_record.OWNERS
SWAP = {ast.Add: ast.Sub, ast.Sub: ast.Add, ast.Mult: ast.Div, ast.Div: ast.Mult, ast.Pow: ast.Mult}
FLIP = {ast.Gt: ast.GtE, ast.GtE: ast.Gt, ast.Lt: ast.LtE, ast.LtE: ast.Lt, ast.Eq: ast.NotEq}


def _changed_constant(value):
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    if value == 0:
        return 1
    if value == 1:
        return 2 if isinstance(value, int) else 2.0
    return value * 2 if isinstance(value, int) else value * 0.5


def _pos(node):
    """Where a node is, start and end: nested operations can share their start."""
    return (node.lineno, node.col_offset, node.end_lineno, node.end_col_offset)


def _owned_bodies(tree, filename):
    """(owner name, method name, node) for every function body the mutator may change."""
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and (filename, node.name) in OWNERS:
            for item in node.body:
                if isinstance(item, ast.FunctionDef) and item.name in ('forward', 'backward'):
                    yield node.name, item.name, item
        elif isinstance(node, ast.FunctionDef) and (filename, node.name) in OWNERS:
            yield node.name, '', node


def sites(filename, source):
    """Every mutation of `source`: (owner, method, line, description, mutate(tree) -> tree)."""
    tree = ast.parse(source)
    out = []
    for owner, method, body in _owned_bodies(tree, filename):
        for node in ast.walk(body):
            where = (owner, method, getattr(node, 'lineno', 0))
            if isinstance(node, ast.BinOp) and type(node.op) in SWAP:
                new = SWAP[type(node.op)]
                out.append(where + ('{} → {}'.format(type(node.op).__name__, new.__name__),
                                    ('op', _pos(node), new)))
                if method == 'backward':
                    out.append(where + ('drop right operand', ('keep', _pos(node), 'left')))
                    out.append(where + ('drop left operand', ('keep', _pos(node), 'right')))
            elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
                out.append(where + ('drop unary minus', ('neg', _pos(node), None)))
            elif isinstance(node, ast.Compare) and len(node.ops) == 1 and type(node.ops[0]) in FLIP:
                new = FLIP[type(node.ops[0])]
                out.append(where + ('{} → {}'.format(type(node.ops[0]).__name__, new.__name__),
                                    ('cmp', _pos(node), new)))
            elif isinstance(node, ast.Constant) and _changed_constant(node.value) is not None:
                out.append(where + ('constant {!r} → {!r}'.format(node.value,
                                                                  _changed_constant(node.value)),
                                    ('const', _pos(node), None)))
    return out


class _Apply(ast.NodeTransformer):
    def __init__(self, spec):
        self.kind, self.pos, self.arg = spec
        self.done = False

    def _here(self, node):
        return not self.done and hasattr(node, 'end_col_offset') and _pos(node) == self.pos

    def visit_BinOp(self, node):
        if self._here(node) and self.kind in ('op', 'keep'):
            self.done = True
            if self.kind == 'op':
                node.op = self.arg()
                return node
            return node.left if self.arg == 'left' else node.right
        return self.generic_visit(node)

    def visit_UnaryOp(self, node):
        if self._here(node) and self.kind == 'neg':
            self.done = True
            return node.operand
        return self.generic_visit(node)

    def visit_Compare(self, node):
        if self._here(node) and self.kind == 'cmp':
            self.done = True
            node.ops = [self.arg()]
            return node
        return self.generic_visit(node)

    def visit_Constant(self, node):
        if self._here(node) and self.kind == 'const':
            self.done = True
            return ast.copy_location(ast.Constant(_changed_constant(node.value)), node)
        return node


def mutate(source, spec):
    tree = ast.parse(source)
    applier = _Apply(spec)
    tree = ast.fix_missing_locations(applier.visit(copy.deepcopy(tree)))
    if not applier.done:
        raise RuntimeError('mutation site not found: {}'.format(spec))
    return ast.unparse(tree)


def mutants(filename, source):
    """(owner, method, line, description, mutated text) per site, one per distinct program
    (dropping either operand of `x * x` gives the same one)."""
    out, seen = [], set()
    for owner, method, line, what, spec in sites(filename, source):
        text = mutate(source, spec)
        if text not in seen:
            seen.add(text)
            out.append((owner, method, line, what, text))
    return out


def is_rejected(verdict, own_failing) -> bool:
    """The owning step refuses the mutant: some of its own checks fail, and the verdict says so
    (a reject, or a rollback when an earlier contract the step re-runs broke too)."""
    return bool(own_failing) and verdict in ('reject', 'rollback')


def grade_mutant(filename, text, step, seed, work):
    root = Path(tempfile.mkdtemp(prefix='mutant-', dir=work))
    shutil.copytree(reference.ROOT / 'dezero', root / 'dezero',
                    ignore=shutil.ignore_patterns('__pycache__', '*.pyc'))
    (root / 'dezero' / filename).write_text(text, encoding='utf-8')
    try:
        doc = run.grade(root, step, run.Options(seed=seed))
    finally:
        shutil.rmtree(root, ignore_errors=True)
    own = 'step{:02d}/'.format(step)
    failing = {c['id']: c['status'] for c in doc['checks']
               if c['status'] in FAILING and c['id'].startswith(own)}
    return doc['verdict'], failing


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--sample', type=int, default=30, help='mutants drawn (0: all)')
    ap.add_argument('--seed', type=int, default=1, help='draws the sample')
    ap.add_argument('--grade-seed', type=int, default=2026)
    ap.add_argument('--only', default='', help='comma-separated owners (Sin,Exp,...)')
    ap.add_argument('--json', help='write every mutant and its outcome here')
    ap.add_argument('--record', action='store_true',
                    help='store the figure for selftest to print (assignments/mutation.json); '
                         'needs --sample 0 and no --only: only the whole figure is stored')
    args = ap.parse_args(argv)
    if args.record and (args.sample or args.only):
        ap.error('--record stores the whole figure: use it with --sample 0 and without --only')
    only = {o for o in args.only.split(',') if o}
    chosen = []
    for filename in ('functions.py', 'core.py'):
        source = (reference.ROOT / 'dezero' / filename).read_text(encoding='utf-8')
        for owner, method, line, what, text in mutants(filename, source):
            if not only or owner in only:
                chosen.append((filename, owner, method, line, what, text))
    total = len(chosen)
    if args.sample and args.sample < total:
        chosen = random.Random(args.seed).sample(chosen, args.sample)
    chosen.sort(key=lambda m: (m[0], m[3]))
    work = Path(tempfile.mkdtemp(prefix='dezero-mutation-'))
    rows, t0 = [], time.perf_counter()
    try:
        for filename, owner, method, line, what, text in chosen:
            step = OWNERS[(filename, owner)]
            t = time.perf_counter()
            verdict, failing = grade_mutant(filename, text, step, args.grade_seed, work)
            row = {'file': filename, 'owner': owner, 'method': method, 'line': line,
                   'mutation': what, 'step': step, 'verdict': verdict,
                   'rejected': is_rejected(verdict, failing), 'failing': failing,
                   'by_judgment': any(s == 'failed' for s in failing.values()),
                   'seconds': round(time.perf_counter() - t, 1)}
            rows.append(row)
            print('{:5} {:13} {:22} {:8} {:30} step {:2} {:7} {}'.format(
                'KILL' if row['rejected'] else 'LIVE', filename, owner + '.' + method, line,
                what, step, verdict, ', '.join('{}:{}'.format(k, v) for k, v in failing.items())),
                flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    killed = sum(r['rejected'] for r in rows)
    judged = sum(r['rejected'] and r['by_judgment'] for r in rows)
    elapsed = time.perf_counter() - t0
    print('{} distinct mutants; {} mutants graded in {:.0f} s ({:.1f} s each): {} rejected by the '
          'owning step ({} by judging a wrong value), {} survived'.format(
              total, len(rows), elapsed, elapsed / max(1, len(rows)), killed, judged,
              len(rows) - killed))
    if args.record:
        mutation_record.write({
            'schema_version': '1.0', 'measured_at': scorecard_write.utc_now(),
            'key': mutation_record.key(OWNERS.values()), 'grade_seed': args.grade_seed,
            'mutants': len(rows), 'rejected': killed, 'by_judgment': judged,
            'survivors': [{k: r[k] for k in ('file', 'owner', 'method', 'line', 'mutation', 'step',
                                              'verdict')} for r in rows if not r['rejected']]})
        print('stored in {}'.format(mutation_record.path()))
    if args.json:
        tmp = Path(args.json).with_suffix('.tmp')
        tmp.write_text(json.dumps({'sites': total, 'rows': rows, 'seconds': elapsed}, indent=1))
        os.replace(tmp, args.json)
    return 0


if __name__ == '__main__':
    sys.exit(main())
