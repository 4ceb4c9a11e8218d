"""Data-pipeline checks: DataLoader and SeqDataLoader semantics, judged from batch labels.

The contracts, not the book's exact random order: ⌈N/B⌉ batches per epoch, every batch full but
possibly the last, every sample exactly once per epoch, a fresh order each epoch, the same order
again after the same `np.random.seed`, the natural order without shuffling, and the sequence
loader's layout `(i·jump + k) mod N` with `jump = N // B`.
"""
import math

from dezero_grader.checks import Plan, learner_error_finding, register
from dezero_grader.records.dataflow import Finding, Probe


def _plan(scenario):
    def plan(params, seed):
        args = {'n': params['n'], 'batch': params['batch']}
        if scenario == 'data.loader':
            args.update(epochs=params.get('epochs', 3), seed=seed % (2 ** 31))
        return Plan(learner=(Probe(scenario, args, seed),))
    return plan


def _loader_judge(inp):
    obs = inp.learner[inp.plan.learner[0]]
    if not obs.ok:
        return [learner_error_finding(obs, 'iterating a DataLoader')]
    n, b = inp.params['n'], inp.params['batch']
    per_epoch = math.ceil(n / b)
    sizes = [b] * (n // b) + ([n % b] if n % b else [])
    v = obs.value
    findings = []
    counts = [len(e) for e in v['epochs']]
    findings.append(Finding(
        'passed' if all(c == per_epoch for c in counts) else 'failed',
        'iterations per epoch: expected ⌈{}/{}⌉ = {}, found {}'.format(n, b, per_epoch, counts),
        case='iterations', hint='' if all(c == per_epoch for c in counts) else
        'max_iter = ceil(data_size / batch_size), and the loader resets when an epoch ends'))
    found_sizes = [[len(batch) for batch in e] for e in v['epochs']]
    ok = all(s == sizes for s in found_sizes)
    findings.append(Finding('passed' if ok else 'failed',
                            'batch sizes per epoch: expected {}, found {}'.format(
                                sizes, found_sizes[0] if not ok else sizes),
                            case='batch_sizes', hint='' if ok else
                            'keep the last, smaller batch; do not pad or drop it'))
    covered = all(sorted(sum(e, [])) == list(range(n)) for e in v['epochs'])
    findings.append(Finding('passed' if covered else 'failed',
                            'every sample exactly once per epoch' if covered else
                            'an epoch does not hold every sample exactly once',
                            case='coverage'))
    orders = [sum(e, []) for e in v['epochs']]
    fresh = len(orders) < 2 or all(orders[i] != orders[i + 1] for i in range(len(orders) - 1))
    findings.append(Finding('passed' if fresh else 'failed',
                            'each epoch is shuffled anew' if fresh else
                            'two consecutive epochs came in the same order: the loader does not '
                            'reshuffle when it resets', case='reshuffle',
                            hint='' if fresh else 'reset() draws a new permutation each epoch'))
    same = v['replay'] == v['epochs']
    findings.append(Finding('passed' if same else 'failed',
                            'the same np.random.seed replays the same batches' if same else
                            'the same np.random.seed gave different batches', case='replay',
                            hint='' if same else 'shuffle with NumPy\'s global generator '
                            '(np.random.permutation), so a seeded run is reproducible'))
    plain_ok = sum(v['unshuffled'], []) == list(range(n))
    findings.append(Finding('passed' if plain_ok else 'failed',
                            'shuffle=False keeps the natural order' if plain_ok else
                            'shuffle=False did not give the samples in order', case='unshuffled'))
    return findings


def _seq_judge(inp):
    obs = inp.learner[inp.plan.learner[0]]
    if not obs.ok:
        return [learner_error_finding(obs, 'iterating a SeqDataLoader')]
    n, b = inp.params['n'], inp.params['batch']
    jump = n // b
    expected = [[(i * jump + k) % n for i in range(b)] for k in range(math.ceil(n / b))]
    found = obs.value['batches']
    if found == expected:
        return [Finding('passed', 'batch k holds samples (i·{} + k) mod {}'.format(jump, n))]
    k = next((i for i, (f, e) in enumerate(zip(found, expected)) if f != e), min(len(found), len(expected)))
    return [Finding('failed', 'SeqDataLoader layout differs at iteration {}: expected {}, found {}'.format(
        k, expected[k] if k < len(expected) else 'no batch', found[k] if k < len(found) else 'no batch'),
        evidence={'iterations': len(found), 'expected_iterations': len(expected), 'jump': jump},
        hint='batch element i at iteration k is sample (i * jump + k) % data_size, '
             'jump = data_size // batch_size')]


SIZE = {'n': {'type': 'integer', 'minimum': 1}, 'batch': {'type': 'integer', 'minimum': 1}}
register('data.loader', summary='DataLoader: batches per epoch, sizes, coverage, reshuffle, replay',
         params=dict(SIZE, epochs={'type': 'integer', 'minimum': 2}), required=('n', 'batch'),
         plan=_plan('data.loader'), judge=_loader_judge)
register('data.seqloader', summary='SeqDataLoader: the (i·jump + k) mod N layout',
         params=SIZE, required=('n', 'batch'), plan=_plan('data.seqloader'), judge=_seq_judge)
