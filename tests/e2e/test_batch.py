"""End to end: `dezero-grade batch` / `merge` on a generated class of step-52 submissions.

The class (built once per module): copies of the reference (folders and zips), one variant per
catalogued fault (injected through the public API, as `selftest` makes them), and broken
submissions — a syntax error, an empty folder, a folder without the package, an import of a
missing module, an import that never ends, a corrupt zip — plus a file that is not a
submission. Every test reads what the command line wrote.
"""
import collections
import concurrent.futures
import json
import os
import random
import re
import shutil
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path

import pytest

from dezero_grader import batch
from dezero_grader.batch import grading, pool
from dezero_grader.catalogue import assignments, faults
from dezero_grader.intake import load
from dezero_grader.present.progress import Progress
from dezero_grader.proof import selftest
from dezero_grader.records import schema
from dezero_grader.records.status import FAILING, VERDICTS
from dezero_grader.scoring import scorecard_write
from grade_cli import HANG_S, dezero_grade

ROOT = Path(__file__).resolve().parents[2]
STEP = 52
# the book-tier points of the step, as its assignment says
POSSIBLE = sum(c.points for c in assignments.load(STEP).checks if c.tier == 'book')
TIMEOUT = '3'          # the import that never ends costs this, not the default 30 s
REFERENCE_COPIES = 10   # with the step-52 faults and the broken ones: a class of 40
ZIP_COPIES = 2
BROKEN = {  # id -> expected invalid code
    'broken-syntax': 'syntax-error',
    'broken-empty': 'no-entry',
    'broken-nopackage': 'no-entry',
    'broken-import': 'import-error',
    'broken-loop': 'timeout',
    'broken-zip': 'bad-archive',
}


def _env():
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    env.pop('OMP_NUM_THREADS', None)
    return env


def _cli(*args, check=True, **kwargs):
    return dezero_grade(*args, expect=(0,) if check else None, **kwargs)


def _wait_for(event, what: str, limit_s: float = HANG_S, poll_s: float = 0.05) -> None:
    """Wait until `event()` holds; fail after `limit_s`, which only a hang reaches (it does not
    measure how fast anything is)."""
    end = time.monotonic() + limit_s
    while not event():
        assert time.monotonic() < end, 'still not {} after {} s: a hang (the limit is there only ' \
            'to catch one)'.format(what, limit_s)
        time.sleep(poll_s)


def _result(future, what: str):
    """`future.result()`; after HANG_S, fail saying it is a hang (a pool process that a loaded
    machine is slow to start is not one)."""
    try:
        return future.result(timeout=HANG_S)
    except concurrent.futures.TimeoutError:
        raise AssertionError('{} did not come within {} s: a hang (the limit is there only to '
                             'catch one)'.format(what, HANG_S)) from None


def _zip_folder(folder: Path, target: Path) -> None:
    shutil.make_archive(str(target.with_suffix('')), 'zip', root_dir=folder)


def make_class(dest: Path, work: Path) -> dict:
    """Write the class into `dest`; return {submission id: expected (verdict, invalid code)}."""
    dest.mkdir(parents=True)
    base = load.prepare(selftest.reference_source(STEP), STEP, work / 'base')
    expected = {}
    for i in range(REFERENCE_COPIES):
        shutil.copytree(base.root, dest / 'ref-{:02d}'.format(i))
        expected['ref-{:02d}'.format(i)] = ('accept', None)
    for i in range(ZIP_COPIES):
        _zip_folder(base.root, dest / 'zipped-{}.zip'.format(i))
        expected['zipped-{}'.format(i)] = ('accept', None)
    for fault in assignments.fault_catalogue(assignments.load(STEP)):
        ident = 'fault-' + fault.id
        faults.inject(base.root, dest / ident, fault, base.entry)
        if fault.step != STEP:
            verdict = 'rollback'
        else:
            # book profile; a fault of this step that also breaks an earlier step's contract
            # (the loader of step 50) is a rollback, checked below against its failing checks
            verdict = 'reject' if fault.tier == 'book' else 'accept'
        expected[ident] = (verdict, None)
    init = Path('dezero') / '__init__.py'
    for ident, line in (('broken-syntax', 'def broken(:\n'),
                        ('broken-import', 'from dezero import helper_that_was_never_written\n'),
                        ('broken-loop', 'while True: pass\n')):   # one line: one place to stop
        shutil.copytree(base.root, dest / ident)
        with open(dest / ident / init, 'a', encoding='utf-8') as f:
            f.write('\n' + line)
    (dest / 'broken-empty').mkdir()
    (dest / 'broken-nopackage').mkdir()
    (dest / 'broken-nopackage' / 'README.txt').write_text('my code is on my laptop\n')
    (dest / 'broken-zip.zip').write_bytes(b'PK\x03\x04 this is not really a zip')
    for ident, code in BROKEN.items():
        expected[ident] = ('invalid', code)
    (dest / 'notes.txt').write_text('not a submission\n')
    return expected


@pytest.fixture(scope='module')
def klass(tmp_path_factory):
    root = tmp_path_factory.mktemp('class')
    expected = make_class(root / 'submissions', root / 'work')
    return root / 'submissions', expected


@pytest.fixture(scope='module')
def full(klass, tmp_path_factory):
    """One uninterrupted batch of the whole class."""
    submissions, _ = klass
    out = tmp_path_factory.mktemp('full') / 'out'
    proc = _cli('batch', submissions, '--step', STEP, '--out', out, '--jobs', 2,
                '--timeout', TIMEOUT)
    return out, proc


def _scorecards(out: Path) -> dict:
    return {p.stem: json.loads(p.read_text(encoding='utf-8'))
            for p in sorted((out / 'scorecards').glob('*.json'))}


def _without_time(summary: dict) -> dict:
    return {k: v for k, v in summary.items() if k != 'generated_at'}


_SCRATCH = re.compile(r'\S*dezero-grade-[^/\s]+/[^/\s]+/')
_ADDRESS = re.compile(r'0x[0-9a-f]+')


def _comparable(doc: dict) -> dict:
    """`scorecard.stable`, and the part of a timed-out import's output tail that names the run's
    own scratch folder and thread (it differs between any two runs, killed or not)."""
    doc = scorecard_write.stable(doc)
    if 'invalid' in doc:
        tail = _ADDRESS.sub('0x?', _SCRATCH.sub('<scratch>/', doc['invalid']['output_tail']))
        doc = dict(doc, invalid=dict(doc['invalid'], output_tail=tail))
    return doc


def _running_under(folder: Path) -> list:
    """Our processes whose working folder is inside `folder` (deleted or not)."""
    found, root = [], str(folder.resolve()) + os.sep
    for name in os.listdir('/proc'):
        if name.isdigit():
            try:
                cwd = os.readlink('/proc/{}/cwd'.format(name)).replace(' (deleted)', '')
            except OSError:
                continue
            if (cwd + os.sep).startswith(root):
                found.append(int(name))
    return found


def test_the_class_is_big_enough(klass):
    _, expected = klass
    assert len(expected) >= 40


def test_every_submission_gets_the_right_verdict(klass, full):
    _, expected = klass
    out, _ = full
    cards = _scorecards(out)
    assert sorted(cards) == sorted(expected)
    wrong = {}
    for ident, doc in cards.items():
        assert not schema.errors('scorecard', doc), ident
        verdict, code = expected[ident]
        got_code = doc.get('invalid', {}).get('code')
        if (verdict, doc['verdict']) == ('reject', 'rollback') and any(
                c['status'] in FAILING and c['step'] < STEP for c in doc['checks']):
            continue
        if (doc['verdict'], got_code) != (verdict, code):
            wrong[ident] = (doc['verdict'], got_code, doc['reason'][:120])
    assert not wrong, wrong
    for ident, doc in cards.items():
        if ident.startswith(('ref-', 'zipped-')):
            assert doc['score']['earned'] == doc['score']['possible'] == POSSIBLE
        receipt = json.loads((out / 'receipts' / (ident + '.json')).read_text())
        assert not schema.errors('batch-receipt', receipt)


def test_the_summary_numbers_match_the_scorecards(klass, full):
    out, _ = full
    summary = json.loads((out / 'summary.json').read_text())
    assert not schema.errors('batch-summary', summary)
    cards = _scorecards(out)
    assert [row['id'] for row in summary['submissions']] == sorted(cards)
    assert summary['counts']['submissions'] == summary['counts']['graded'] == len(cards)
    verdicts = collections.Counter(d['verdict'] for d in cards.values())
    assert summary['counts']['verdicts'] == {v: verdicts.get(v, 0) for v in VERDICTS}
    for row in summary['submissions']:
        doc = cards[row['id']]
        assert (row['verdict'], row['earned'], row['content_hash']) == (
            doc['verdict'], doc['score']['earned'], doc['submission']['content_hash'])
    earned = [d['score']['earned'] for d in cards.values()]
    scores = summary['scores']
    assert scores['count'] == len(earned)
    assert scores['mean'] == pytest.approx(statistics.fmean(earned), abs=1e-4)
    assert scores['median'] == pytest.approx(statistics.median(earned))
    assert (scores['min'], scores['max']) == (min(earned), max(earned))
    assert scores['full_marks'] == sum(e == POSSIBLE for e in earned)
    assert sum(b['count'] for b in scores['histogram']) == len(earned)
    assert scores['histogram'][-1]['count'] == sum(e >= 0.9 * POSSIBLE for e in earned)
    assert scores['histogram'][0]['count'] == sum(e < 0.1 * POSSIBLE for e in earned)
    # per-check pass rates
    for row in summary['checks']:
        statuses = [c['status'] for d in cards.values() for c in d['checks'] if c['id'] == row['id']]
        assert row['runs'] == len(statuses)
        assert row['passed'] == statuses.count('passed')
        judged = len(statuses) - statuses.count('skipped')
        assert row['pass_rate'] == pytest.approx(statuses.count('passed') / judged, abs=1e-4)
    assert {r['id'] for r in summary['checks']} == {c['id'] for d in cards.values() for c in d['checks']}
    # the most frequent root causes: counted once per submission and cause its diagnosis names,
    # and each failing check names the fault of the cause it belongs to
    # (those of checks that count; those of advice alone in a table of their own)
    best, advice = collections.Counter(), collections.Counter()
    for d in cards.values():
        causes = {c['faults'][0]['id']: c['advice']
                  for c in d.get('diagnosis', {}).get('causes', ()) if c['kind'] == 'fault'}
        assert set(causes) == {c['faults'][0]['id'] for c in d['checks']
                               if c['status'] in FAILING and c['faults']}
        best.update(i for i, is_advice in causes.items() if not is_advice)
        advice.update(i for i, is_advice in causes.items() if is_advice)
    assert {f['id']: f['submissions'] for f in summary['faults']} == dict(best)
    assert {f['id']: f['submissions'] for f in summary['advice_faults']} == dict(advice)
    # each single-fault submission is counted under its own fault, and under nothing else
    for ident, d in cards.items():
        if ident.startswith('fault-') and d['verdict'] != 'accept':
            causes = d['diagnosis']['causes']
            assert len(causes) == 1 and ident[6:] in [f['id'] for f in causes[0]['faults']], ident
    counts = [f['submissions'] for f in summary['faults']]
    assert counts == sorted(counts, reverse=True)
    # what could not be graded, with its reason
    invalid = {i: d['invalid']['code'] for i, d in cards.items() if d['verdict'] == 'invalid'}
    assert {u['id']: u['code'] for u in summary['ungraded']} == invalid == BROKEN
    assert all(u['reason'] and u['scorecard'] for u in summary['ungraded'])
    assert summary['ignored'] == ['notes.txt']
    assert summary['options']['timeout_s'] == float(TIMEOUT)


def test_the_progress_bar_counts_and_estimates(klass, full):
    _, expected = klass
    _, proc = full
    lines = [l for l in proc.stderr.splitlines() if l.startswith('[')]
    assert len(lines) == len(expected)
    assert lines[-1].startswith('[{0}/{0}]'.format(len(expected)))
    assert all('ETA' in l for l in lines)


def test_a_second_run_grades_nothing(klass, full):
    submissions, _ = klass
    out, _ = full
    before = {p.name: p.stat().st_mtime_ns for p in (out / 'scorecards').iterdir()}
    proc = _cli('batch', submissions, '--step', STEP, '--out', out, '--jobs', 2,
                '--timeout', TIMEOUT)
    assert 'grading' not in proc.stderr
    assert {p.name: p.stat().st_mtime_ns for p in (out / 'scorecards').iterdir()} == before


def _count(out: Path) -> int:
    folder = out / 'scorecards'
    return len(list(folder.glob('*.json'))) if folder.is_dir() else 0


def _all_complete(out: Path) -> None:
    """Atomic writes: whatever exists under scorecards/ is a whole, valid scorecard."""
    for path in (out / 'scorecards').glob('*.json') if (out / 'scorecards').is_dir() else ():
        doc = json.loads(path.read_text(encoding='utf-8'))
        assert not schema.errors('scorecard', doc), path


def test_killed_at_random_points_then_restarted_loses_and_corrupts_nothing(klass, full, tmp_path):
    """Half the class (every kind of submission in it), graded with SIGKILLs of the whole
    process group at random points, then to the end: the same scorecards and summary as the
    uninterrupted run of the same submissions."""
    submissions, expected = klass
    reference_out, _ = full
    subset = tmp_path / 'submissions'
    subset.mkdir()
    chosen = [i for n, i in enumerate(sorted(expected)) if n % 2 == 0 or i.startswith('broken-')]
    for ident in chosen:
        source = submissions / ident if (submissions / ident).is_dir() else submissions / (ident + '.zip')
        (shutil.copytree if source.is_dir() else shutil.copy2)(source, subset / source.name)
    shutil.copy2(submissions / 'notes.txt', subset / 'notes.txt')
    out = tmp_path / 'out'
    seed = int(os.environ.get('DEZERO_KILL_SEED', '20260'))
    rng = random.Random(seed)
    command = [sys.executable, '-m', 'dezero_grader', 'batch', str(subset), '--step', str(STEP),
               '--out', str(out), '--jobs', '2', '--timeout', TIMEOUT]
    kills = []
    # SIGKILL of the whole group (nothing can clean up), SIGTERM of the batch alone (a cancelled
    # CI job: it must stop its pool and sandboxes itself), SIGKILL again
    for extra, how in ((0, 'kill'), (rng.randint(1, 4), 'term'), (rng.randint(2, 6), 'kill')):
        target = _count(out) + extra
        proc = subprocess.Popen(command, cwd=ROOT, env=_env(), stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL, start_new_session=True)
        # the kill comes once the batch has written `target` scorecards (or ended), however long
        # a loaded machine takes to get there, then at a random moment after
        _wait_for(lambda: _count(out) >= target or proc.poll() is not None,
                  '{} scorecards written (or the batch ended)'.format(target), poll_s=0.02)
        time.sleep(rng.uniform(0.05, 0.6))
        if proc.poll() is None:
            if how == 'kill':
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
            else:
                proc.send_signal(signal.SIGTERM)
                assert proc.wait(timeout=HANG_S) == 128 + signal.SIGTERM
                # the pool and its sandboxes die with the batch (the kernel's doing: not at once)
                _wait_for(lambda: not _running_under(out), 'gone (SIGTERM left processes running)')
                assert not (out / '.work').exists()
            kills.append((how, _count(out)))
        _all_complete(out)
    assert len(kills) >= 2, 'the batch finished before it could be killed (seed {})'.format(seed)
    assert kills[-1][1] < len(chosen)
    _cli('batch', subset, '--step', STEP, '--out', out, '--jobs', 2, '--timeout', TIMEOUT)
    want, got = _scorecards(reference_out), _scorecards(out)
    assert sorted(got) == sorted(chosen)
    different = [i for i in chosen if _comparable(want[i]) != _comparable(got[i])]
    assert not different, 'seed {}: {}'.format(seed, different)
    full_summary = json.loads((reference_out / 'summary.json').read_text())
    uninterrupted = batch.summarize(
        assignment=full_summary['assignment'], options=full_summary['options'],
        shards={'count': 1, 'included': [1]}, graded=[(i, want[i]) for i in chosen],
        failures=[], ignored=['notes.txt'])
    summary = json.loads((out / 'summary.json').read_text())
    assert _without_time(summary) == _without_time(uninterrupted)
    assert not (out / '.work').exists()
    assert not [p for p in out.rglob('*.tmp')]
    # the sandbox workers the kills orphaned (a submission that loops never notices) are gone
    _wait_for(lambda: not _running_under(out), 'gone (the workers the kills orphaned)')


def test_shards_partition_the_class_and_merge_back(klass, full, tmp_path):
    submissions, expected = klass
    reference_out, _ = full
    shards = []
    for i in (1, 2, 3):
        out = tmp_path / 'shard{}'.format(i)
        # seeded with the finished run's files: the shard resumes and grades nothing
        shutil.copytree(reference_out / 'scorecards', out / 'scorecards')
        shutil.copytree(reference_out / 'receipts', out / 'receipts')
        proc = _cli('batch', submissions, '--step', STEP, '--out', out, '--shard', '{}/3'.format(i),
                    '--timeout', TIMEOUT)
        assert 'grading' not in proc.stderr
        shards.append(json.loads((out / 'summary.json').read_text()))
    ids = [{row['id'] for row in s['submissions']} for s in shards]
    assert set.union(*ids) == set(expected)
    assert sum(len(x) for x in ids) == len(expected)
    assert all(ids), 'a shard is empty'
    for i, s in enumerate(shards, start=1):
        assert s['shards'] == {'count': 3, 'included': [i], 'missing': sorted({1, 2, 3} - {i})}
        assert all(batch.shard_of(row['id'], 3) == i for row in s['submissions'])
    merged = tmp_path / 'merged'
    proc = _cli('merge', tmp_path / 'shard1', tmp_path / 'shard2', tmp_path / 'shard3',
                '--out', merged)
    summary = json.loads((merged / 'summary.json').read_text())
    want = _without_time(json.loads((reference_out / 'summary.json').read_text()))
    assert _without_time(summary) == dict(want, shards={'count': 3, 'included': [1, 2, 3],
                                                        'missing': []})
    assert sorted(_scorecards(merged)) == sorted(expected)
    # a merge that lacks a shard says so, and fails
    partial = _cli('merge', tmp_path / 'shard1', tmp_path / 'shard3', '--out', tmp_path / 'partial',
                   check=False)
    assert partial.returncode == 1
    assert 'MISSING shard(s): 2' in partial.stdout
    # shards of different batches do not merge
    twice = _cli('merge', tmp_path / 'shard1', tmp_path / 'shard1', '--out', tmp_path / 'x',
                 check=False)
    assert twice.returncode == 2 and 'shard 1/3 is in both' in twice.stderr


def test_a_changed_submission_and_force_are_graded_again(tmp_path):
    submissions = tmp_path / 'subs'
    base = load.prepare(selftest.reference_source(STEP), STEP, tmp_path / 'work')
    shutil.copytree(base.root, submissions / 'alice')
    shutil.copytree(base.root, submissions / 'bob')
    out = tmp_path / 'out'
    _cli('batch', submissions, '--step', STEP, '--out', out, '--jobs', 1)
    stamp = {p.name: p.stat().st_mtime_ns for p in (out / 'scorecards').iterdir()}
    with open(submissions / 'bob' / 'dezero' / '__init__.py', 'a') as f:
        f.write('\nEDITED = True\n')
    proc = _cli('batch', submissions, '--step', STEP, '--out', out, '--jobs', 1)
    assert 'grading 1 of 2' in proc.stderr and 'bob' in proc.stderr and 'alice:' not in proc.stderr
    bob = json.loads((out / 'scorecards' / 'bob.json').read_text())
    assert bob['submission']['content_hash'] == load.content_hash(submissions / 'bob')
    assert (out / 'scorecards' / 'alice.json').stat().st_mtime_ns == stamp['alice.json']
    proc = _cli('batch', submissions, '--step', STEP, '--out', out, '--jobs', 1, '--force')
    assert 'grading 2 of 2' in proc.stderr
    # other options are other scorecards: a new --timeout would grade again
    alice = batch.HandIn('alice', submissions / 'alice', 'folder')
    fp = batch.fingerprint(alice)
    assert batch.is_done(out, alice, fp, batch.BatchOptions(STEP))
    assert not batch.is_done(out, alice, fp, batch.BatchOptions(STEP, timeout_s=20.0))
    assert not batch.is_done(out, alice, fp, batch.BatchOptions(STEP, profile='extension'))
    assert not batch.is_done(out, alice, 'sha256:' + '0' * 64, batch.BatchOptions(STEP))


def test_duplicate_ids_and_a_roster(tmp_path):
    submissions = tmp_path / 'subs'
    (submissions / 'alice').mkdir(parents=True)
    (submissions / 'alice.zip').write_bytes(b'not graded anyway')
    (submissions / 'bob').mkdir()
    roster = tmp_path / 'roster.csv'
    roster.write_text('Student,ID,SIS User ID,Submission\n"Liddell, Alice",1,s1,alice\n'
                      '"Builder, Bob",2,s2,bob\n"Nobody, Ned",3,s3,ned\n', encoding='utf-8')
    out = tmp_path / 'out'
    proc = _cli('batch', submissions, '--step', STEP, '--out', out, '--roster', roster, check=False)
    assert proc.returncode == 1   # a submission was left without a scorecard
    summary = json.loads((out / 'summary.json').read_text())
    ungraded = {u['id']: u for u in summary['ungraded']}
    assert ungraded['alice']['code'] == 'duplicate-id' and not ungraded['alice']['scorecard']
    assert 'alice.zip' in ungraded['alice']['reason']
    assert ungraded['bob']['code'] == 'no-entry' and ungraded['bob']['scorecard']
    assert summary['roster'] == {'people': 3, 'not_in_roster': [],
                                 'without_submission': [{'submission': 'ned',
                                                         'student': 'Nobody, Ned'}],
                                 'names': {'alice': 'Liddell, Alice', 'bob': 'Builder, Bob'}}
    assert json.loads((out / 'roster.json').read_text())['people'][0]['canvas_id'] == '1'


@pytest.mark.parametrize('args, message', [
    (('--shard', '0/2'), 'I runs from 1 to N'),
    (('--shard', 'two'), 'expects I/N'),
    (('--timeout', '0'), '--timeout'),
    (('--memory', '10'), '--memory'),
    (('--jobs', '0'), '--jobs'),
])
def test_usage_errors_say_what_was_expected(tmp_path, args, message):
    (tmp_path / 'subs').mkdir()
    proc = _cli('batch', tmp_path / 'subs', '--step', STEP, '--out', tmp_path / 'out', *args,
                check=False)
    assert proc.returncode == 2
    assert message in proc.stderr


def test_a_missing_folder_is_a_usage_error(tmp_path):
    proc = _cli('batch', tmp_path / 'nowhere', '--step', STEP, '--out', tmp_path / 'out', check=False)
    assert proc.returncode == 2 and 'expected a folder of submissions' in proc.stderr


def test_shards_are_stable_and_cover_every_id():
    ids = ['learner-{}'.format(i) for i in range(200)]
    for count in (1, 2, 3, 7):
        shards = [batch.Shard(i, count) for i in range(1, count + 1)]
        owners = [[s.index for s in shards if s.contains(i)] for i in ids]
        assert all(len(o) == 1 for o in owners)
    # the assignment of an id to a shard never changes between versions or machines
    assert [batch.shard_of(i, 4) for i in ('alice', 'bob', 'carol')] == \
        [batch.shard_of(i, 4) for i in ('alice', 'bob', 'carol')]
    assert batch.shard_of('alice', 4) == int.from_bytes(
        __import__('hashlib').sha256(b'alice').digest()[:8], 'big') % 4 + 1


def test_pool_processes_run_one_blas_thread_and_scratch_under_the_batch(tmp_path, monkeypatch):
    monkeypatch.setenv('OMP_NUM_THREADS', '8')
    monkeypatch.setenv('OPENBLAS_NUM_THREADS', '8')
    import tempfile
    executor = pool.open_pool(1, tmp_path / '.work')
    try:
        with pool.pinned_threads():
            threads = executor.submit(os.getenv, 'OMP_NUM_THREADS')
            blas = executor.submit(os.getenv, 'OPENBLAS_NUM_THREADS')
            scratch = executor.submit(tempfile.gettempdir)
        assert _result(threads, 'OMP_NUM_THREADS') == _result(blas, 'OPENBLAS_NUM_THREADS') == '1'
        assert Path(_result(scratch, 'the scratch folder')).parent == tmp_path / '.work'
    finally:
        executor.shutdown()
    assert os.environ['OMP_NUM_THREADS'] == '8'   # the caller's environment is given back


class _Sink:
    """A stream that keeps what the batch's progress writes."""

    def __init__(self):
        self.lines = []

    def write(self, text):
        self.lines.append(text)

    def flush(self):
        pass


def test_a_grader_error_costs_one_submission_not_the_batch(tmp_path):
    """A bug of ours (here: a profile the scoring policy does not know, reaching the pool) is
    reported for the submission it happened on, with its reason; the other one is graded."""
    base = load.prepare(selftest.reference_source(STEP), STEP, tmp_path / 'work')
    out = tmp_path / 'out'
    good = grading.GradeTask(batch.HandIn('good', base.root, 'folder'), 'x', batch.BatchOptions(STEP),
                       str(out))
    bad = grading.GradeTask(batch.HandIn('bad', base.root, 'folder'), 'x',
                      batch.BatchOptions(STEP, profile='no-such-profile'), str(out))
    sink = _Sink()
    progress = Progress(2, 0, sink)
    failures = pool.grade_all([bad, good], 2, out / '.work', progress,
                               grade_one=grading.grade_one, watchdog=grading.watchdog_s)
    assert [(f.id, f.code) for f in failures] == [('bad', 'grader-error')]
    assert 'bug of the grader' in failures[0].reason
    assert (out / 'scorecards' / 'good.json').is_file()
    assert not (out / 'scorecards' / 'bad.json').exists()
    assert any('Traceback' in l for l in sink.lines)   # loud, for the instructor


def crash_or_grade(task):
    """A stand-in for the batch's grading function that kills its pool process on 'crash'."""
    if task.id == 'crash':
        os._exit(3)
    return grading.grade_one(task)


def _reference_tasks(tmp_path, ids):
    """Batch tasks grading copies of the reference under the given ids, and their --out folder."""
    base = load.prepare(selftest.reference_source(STEP), STEP, tmp_path / 'work')
    out = tmp_path / 'out'
    return [grading.GradeTask(batch.HandIn(i, base.root, 'folder'), 'x', batch.BatchOptions(STEP),
                        str(out)) for i in ids], out


def hang_or_grade(task):
    """A stand-in for the batch's grading function that never returns on 'hang'."""
    if task.id == 'hang':
        time.sleep(600)
    return grading.grade_one(task)


def test_a_grading_that_hangs_is_stopped_and_the_batch_ends(tmp_path):
    # whatever makes a grading hang (the grader's own bug, a machine that stalls), the batch
    # stops it once it shows no progress for its watchdog's time, says so, grades the rest and
    # ends. The healthy ones get the real watchdog: however slow the machine, they never go that
    # long without an answer from a worker.
    tasks, out = _reference_tasks(tmp_path, ('hang', 'fine', 'also-fine'))
    sink = _Sink()
    failures = pool.grade_all(tasks, 2, out / '.work', Progress(3, 0, sink), grade_one=hang_or_grade,
                              watchdog=lambda task: 5 if task.id == 'hang' else grading.watchdog_s(task))
    assert [(f.id, f.code) for f in failures] == [('hang', 'grader-stuck')]
    assert 'showed no progress for more than 5 s' in failures[0].reason
    assert (out / 'scorecards' / 'fine.json').is_file()
    assert (out / 'scorecards' / 'also-fine.json').is_file()
    limits = batch.BatchOptions(STEP).limits()
    assert grading.watchdog_s(tasks[0]) > limits.call_wall_s() > limits.call_s


def slow_grade(task):
    """A stand-in for the batch's grading function: a grading three times as long as its
    watchdog, that keeps making progress (as a healthy grading on a loaded machine does)."""
    from dezero_grader.isolation import worker_process
    for _ in range(36):
        time.sleep(0.5)
        worker_process.beat()
    return {'id': task.id, 'ok': True, 'verdict': 'accept', 'earned': 1.0, 'possible': 1.0}


def test_a_slow_grading_that_makes_progress_is_not_stuck(tmp_path):
    tasks, out = _reference_tasks(tmp_path, ('slow',))
    sink = _Sink()
    failures = pool.grade_all(tasks, 1, out / '.work', Progress(1, 0, sink), grade_one=slow_grade,
                              watchdog=lambda task: 6)
    assert failures == []
    assert any('accept 1/1' in line for line in sink.lines), sink.lines


def test_a_pool_process_that_dies_is_retried_then_reported(tmp_path):
    tasks, out = _reference_tasks(tmp_path, ('crash', 'fine', 'also-fine'))
    sink = _Sink()
    failures = pool.grade_all(tasks, 2, out / '.work', Progress(3, 0, sink),
                                grade_one=crash_or_grade, watchdog=grading.watchdog_s)
    assert [(f.id, f.code) for f in failures] == [('crash', 'grader-crashed')]
    assert 'died {} times on this submission, graded alone'.format(pool.MAX_ATTEMPTS) in \
        failures[0].reason
    assert (out / 'scorecards' / 'fine.json').is_file()
    assert (out / 'scorecards' / 'also-fine.json').is_file()


# -- the CI recipes -------------------------------------------------------------------------------

def test_the_cron_recipe_grades_resumes_and_exports(tmp_path):
    submissions = tmp_path / 'subs'
    base = load.prepare(selftest.reference_source(STEP), STEP, tmp_path / 'work')
    shutil.copytree(base.root, submissions / 'alice')
    (submissions / 'bob').mkdir()
    (tmp_path / 'roster.csv').write_text('submission,student,id,lti_user_id\n'
                                         'alice,"L, Alice",1,lti-a\nbob,"B, Bob",2,lti-b\n')
    grade = tmp_path / 'dezero-grade'
    grade.write_text('#!/bin/sh\nexec "{}" -m dezero_grader "$@"\n'.format(sys.executable))
    grade.chmod(0o755)
    env = dict(_env(), STEP=str(STEP), SUBMISSIONS=str(submissions), OUT=str(tmp_path / 'graded'),
               ROSTER=str(tmp_path / 'roster.csv'), JOBS='1', GRADE=str(grade), LTI='1')
    script = ROOT / 'examples' / 'cron-grade.sh'
    first = subprocess.run(['bash', str(script)], env=env, capture_output=True, text=True,
                           timeout=HANG_S)
    assert first.returncode == 0, first.stdout + first.stderr
    out = tmp_path / 'graded'
    for name in ('junit.xml', 'lti-scores.json', 'canvas.csv'):
        assert (out / 'exports' / name).is_file(), name
    assert 'grading 2 of 2' in first.stderr
    again = subprocess.run(['bash', str(script)], env=env, capture_output=True, text=True,
                           timeout=HANG_S)
    assert again.returncode == 0 and 'grading' not in again.stderr


def _workflow_commands(text: str) -> list:
    """The dezero-grade command lines of the workflow, with its variables filled in."""
    import shlex
    values = {'${STEP}': str(STEP), '${SHARDS}': '4', '${{ matrix.shard }}': '2'}
    lines, current = [], []
    for raw in text.splitlines():
        line = raw.strip()
        for key, value in values.items():
            line = line.replace(key, value)
        if line.startswith('run: >'):
            current = ['']
            continue
        if current and line and not line.startswith(('- ', 'if:', 'uses:')):
            current.append(line)
            continue
        if current:
            lines.append(' '.join(current).strip())
            current = []
        if line.startswith('run: dezero-grade') or line.startswith('dezero-grade'):
            lines.append(line[len('run: '):] if line.startswith('run: ') else line)
    return [shlex.split(l)[1:] for l in lines if l.startswith('dezero-grade')]


def test_the_github_actions_recipe_uses_real_commands_and_every_shard():
    yaml = pytest.importorskip('yaml')
    text = (ROOT / 'examples' / 'github-actions.yml').read_text()
    workflow = yaml.safe_load(text)
    jobs = workflow['jobs']
    shards = jobs['grade']['strategy']['matrix']['shard']
    assert shards == list(range(1, int(workflow['env']['SHARDS']) + 1))
    assert 'grade' in jobs['merge']['needs'] and jobs['merge']['if'].startswith('always()')
    from dezero_grader import cli
    parser = cli.build_parser()
    commands = _workflow_commands(text)
    assert {c[0] for c in commands} == {'batch', 'merge', 'export'}
    for argv in commands:
        args = parser.parse_args(argv)
        if args.command == 'batch':
            assert batch.Shard.parse(args.shard) == batch.Shard(2, 4)
        if args.command == 'export':
            assert args.format in ('gradescope', 'canvas', 'lti', 'junit')


def test_the_progress_bar_on_a_terminal_redraws_one_line():
    class Terminal(_Sink):
        def isatty(self):
            return True

    terminal = Terminal()
    progress = Progress(4, 1, terminal, label='step 52 ')
    progress.update('alice', 'accept 33/33')
    progress.update('bob', 'reject 30/33')
    progress.finish()
    text = ''.join(terminal.lines)
    assert text.count('\r') == 2 and text.endswith('\n') and text.count('\n') == 1
    last = text.split('\r')[-1]
    assert '3/4' in last and 'accept 1' in last and 'reject 1' in last and 'ETA 0:' in last
