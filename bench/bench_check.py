"""How long `dezero-grade check` takes on the reference, and where the time goes.

    python bench/bench_check.py [--steps 52 55] [--repeat 3]

For each step: the whole `check` cold (reference observations recomputed) and warm (cached), and
its parts measured separately in the same run — a worker's start (process + imports + setup),
the reference's observations cold and cached, the learner's observations, and the judges. All
figures are medians over the repeats; the shares are of the warm total.
"""
import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault('OMP_NUM_THREADS', '1')
os.environ.setdefault('OPENBLAS_NUM_THREADS', '1')

from dezero_grader import reference  # noqa: E402
from dezero_grader.catalogue import assignments
from dezero_grader.grading import run
from dezero_grader.grading.reference_answers import observe_reference  # noqa: E402
from dezero_grader.grading.worker_session import observe  # noqa: E402
from dezero_grader.intake import load  # noqa: E402
from dezero_grader.isolation.worker_process import Limits, Worker  # noqa: E402
from dezero_grader.records.dataflow import Target  # noqa: E402


def timed(fn, repeat):
    times, result = [], None
    for _ in range(repeat):
        t0 = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), result


def worker_start(sub):
    def start():
        with Worker(sub.root, [sub.root], Limits()) as w:
            w.request({'op': 'setup', 'device_mode': 'sim',
                       'entry': {'kind': 'package', 'module': 'dezero',
                                 'path': str(sub.root / 'dezero')}})
    return start


def bench_step(step, repeat, cache_dir):
    os.environ['DEZERO_GRADER_CACHE'] = str(cache_dir / 'step{}'.format(step))
    assignment = assignments.load(step)
    seed = 2026
    scratch = Path(tempfile.mkdtemp(prefix='bench-check-'))
    sub = load.prepare(reference.ROOT, step, scratch)
    work = run.plan(assignment, seed)
    target = Target(cwd=sub.root, sys_path=(sub.root,),
                    entry={'kind': 'package', 'module': 'dezero', 'path': str(sub.root / 'dezero')})

    cold, _ = timed(lambda: run.grade(reference.ROOT, step, run.Options(seed=seed, use_cache=False)),
                    repeat)
    warm, doc = timed(lambda: run.grade(reference.ROOT, step, run.Options(seed=seed)), repeat)
    start, _ = timed(worker_start(sub), repeat)
    ref_cold, _ = timed(lambda: observe_reference(work.reference_probes, limits=Limits(),
                                                  use_cache=False), repeat)
    ref_warm, reference_obs = timed(lambda: observe_reference(work.reference_probes,
                                                              limits=Limits()), repeat)
    learner_t, learner = timed(lambda: observe(target, work.learner_probes, device_mode='sim',
                                               limits=Limits()), repeat)
    judge_t, _ = timed(lambda: run.judge(work, assignment, learner, reference_obs, 'sim', seed, sub),
                       repeat)
    assert doc['verdict'] == 'accept', doc['reason']
    print('step {} ({} checks, {} learner probes, {} reference probes)'.format(
        step, len(work.uses), len(work.learner_probes), len(work.reference_probes)))
    rows = [
        ('check, cold (reference recomputed)', cold),
        ('check, warm (reference cached)', warm),
        ('  worker start (process, imports, setup)', start),
        ('  learner observations (incl. its worker start)', learner_t),
        ('  reference observations, cold (incl. worker start)', ref_cold),
        ('  reference observations, cached', ref_warm),
        ('  judging every check', judge_t),
    ]
    for label, value in rows:
        print('  {:52} {:7.3f} s  {:5.0%} of warm'.format(label, value, value / warm))
    import_s = learner.setup.get('import_s', 0.0) if learner.setup else 0.0
    print('  {:52} {:7.3f} s'.format('  of which `import dezero` in the worker', import_s))
    return warm


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument('--steps', type=int, nargs='+', default=[52, 55])
    parser.add_argument('--repeat', type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as cache:
        for step in args.steps:
            bench_step(step, args.repeat, Path(cache))


if __name__ == '__main__':
    main()
