"""The data pipeline through the public API: which samples each batch holds, epoch by epoch."""
import numpy as np

from dezero_grader.sandboxed.probes.registry import scenario
from dezero_grader.sandboxed.probes.scenarios.fixtures import PlainDataset


def _indexed_dataset(ctx, n):
    """A data set whose sample i is the vector [i, -i] with label i: batches reveal which
    samples they hold. A plain object (len and [i] → (x, t)), all the book's loaders use: no
    `Dataset` base class of the learner's is needed."""
    data = np.stack([np.arange(n), -np.arange(n)], axis=1).astype(np.float64)
    return PlainDataset(data, np.arange(n))


def _epoch(ctx, loader, limit):
    batches = []
    for x, t in loader:
        batches.append([int(v) for v in ctx.host(t).ravel()])
        if len(batches) > limit:
            break
    return batches


@scenario('data.loader')
def loader(ctx, n, batch, epochs, seed):
    """Labels of every batch of `epochs` epochs, shuffled, plus a replay with the same
    NumPy seed and one unshuffled epoch."""
    DataLoader = ctx.api.get('DataLoader')
    limit = n + 2
    np.random.seed(seed)
    dl = DataLoader(_indexed_dataset(ctx, n), batch)
    run = [_epoch(ctx, dl, limit) for _ in range(epochs)]
    np.random.seed(seed)
    dl2 = DataLoader(_indexed_dataset(ctx, n), batch)
    replay = [_epoch(ctx, dl2, limit) for _ in range(epochs)]
    plain = _epoch(ctx, DataLoader(_indexed_dataset(ctx, n), batch, shuffle=False), limit)
    return {'epochs': run, 'replay': replay, 'unshuffled': plain}


@scenario('data.seqloader')
def seqloader(ctx, n, batch):
    """Labels of each batch of one epoch of SeqDataLoader."""
    SeqDataLoader = ctx.api.get('SeqDataLoader')
    dl = SeqDataLoader(_indexed_dataset(ctx, n), batch)
    return {'batches': _epoch(ctx, dl, n + 2)}
