"""History grading: a git history of N step commits graded by `dezero-grade history` (content
cache, --jobs J) against the same N snapshots graded one by one (`dezero-grade check` on a
checkout of each step's commit, one after the other, as a learner would without the history).

The history is built in a scratch git repository: one commit per step (steps FIRST..FIRST+N-1,
package steps), each holding the reference package and a note that changes every commit. Three
timings, in one run, after one grading that warms the reference cache:

* one by one: N `check` runs, one per snapshot, in sequence;
* history, cold: `history --jobs J` with an empty cache (every step graded, J at a time);
* history, one more commit: the learner adds the next step's commit and runs it again: the N
  steps already graded are served from the cache, one is graded.

Figures are printed as seconds and as ratios to "one by one"; on a shared machine, read the
ratios.

    python bench/bench_history.py [--first 38] [--steps 8] [--jobs 2]
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from dezero_grader.intake.gitrepo import git_env  # noqa: E402


def _env():
    return dict(os.environ, PYTHONPATH=str(ROOT))


def _git(repo, *args):
    env = dict(git_env(), GIT_AUTHOR_NAME='b', GIT_AUTHOR_EMAIL='b@example.org',
               GIT_COMMITTER_NAME='b', GIT_COMMITTER_EMAIL='b@example.org')
    subprocess.run(['git', '-C', str(repo), *args], env=env, check=True, capture_output=True)


def add_step(repo: Path, step: int) -> None:
    shutil.rmtree(repo / 'dezero', ignore_errors=True)
    shutil.copytree(ROOT / 'reference' / 'dezero', repo / 'dezero',
                    ignore=shutil.ignore_patterns('__pycache__'))
    (repo / 'notes.md').write_text('step {}\n'.format(step))
    _git(repo, 'add', '-A')
    _git(repo, 'commit', '-q', '-m', 'Done step{}'.format(step))


def _run(*args):
    started = time.perf_counter()
    proc = subprocess.run([sys.executable, '-m', 'dezero_grader', *map(str, args)], cwd=ROOT,
                          env=_env(), capture_output=True, text=True)
    elapsed = time.perf_counter() - started
    if proc.returncode not in (0, 1):
        raise SystemExit('{} failed ({}): {}'.format(args[0], proc.returncode, proc.stderr[-2000:]))
    return elapsed, proc


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    p.add_argument('--first', type=int, default=38, help='first step of the history')
    p.add_argument('--steps', type=int, default=8, help='N: step commits in the history')
    p.add_argument('--jobs', type=int, default=2)
    p.add_argument('--sandbox', default='auto')
    args = p.parse_args(argv)
    last = args.first + args.steps - 1
    if not (23 <= args.first and last + 1 <= 60):
        raise SystemExit('steps must stay within 23..60 (one more is added at the end)')
    with tempfile.TemporaryDirectory(prefix='bench-history-') as tmp:
        tmp = Path(tmp)
        repo = tmp / 'repo'
        repo.mkdir()
        _git(repo, 'init', '-q', '-b', 'main')
        for step in range(args.first, last + 1):
            add_step(repo, step)
        snapshot = tmp / 'snapshot'
        shutil.copytree(ROOT / 'reference' / 'dezero', snapshot / 'dezero',
                        ignore=shutil.ignore_patterns('__pycache__'))
        _run('check', snapshot, '--step', args.first, '--sandbox', args.sandbox)   # warm-up

        one_by_one = 0.0
        for step in range(args.first, last + 1):
            elapsed, _ = _run('check', snapshot, '--step', step, '--sandbox', args.sandbox)
            one_by_one += elapsed
        out = tmp / 'out'
        cold, _ = _run('history', repo, '--out', out, '--jobs', args.jobs, '--sandbox', args.sandbox)
        cold_doc = json.loads((out / 'history.json').read_text())
        add_step(repo, last + 1)
        warm, _ = _run('history', repo, '--out', out, '--jobs', args.jobs, '--sandbox', args.sandbox)
        warm_doc = json.loads((out / 'history.json').read_text())
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, 'sched_getaffinity') else os.cpu_count()
    print('history of {} step commits (steps {}-{}), --jobs {}, {} CPU(s)'.format(
        args.steps, args.first, last, args.jobs, cpus))
    print('  one by one ({} check runs):       {:7.1f} s   1.00'.format(args.steps, one_by_one))
    print('  history, cold ({} graded):         {:7.1f} s   {:.2f}x faster'.format(
        cold_doc['counts']['graded_now'], cold, one_by_one / cold))
    print('  history, +1 commit ({} graded, {} from the cache): {:5.1f} s   {:.2f}x faster'.format(
        warm_doc['counts']['graded_now'], warm_doc['counts']['from_cache'], warm,
        one_by_one / warm))
    print('  target: one by one / CPUs = {:.1f} s'.format(one_by_one / cpus))


if __name__ == '__main__':
    main()
