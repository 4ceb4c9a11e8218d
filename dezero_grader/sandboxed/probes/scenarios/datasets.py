"""Data sets and what trains on them (steps 47-51): the spiral, Dataset with its transforms,
accuracy, MNIST read from local files, and a short classification run.

Contracts, not the book's numbers: shapes, dtypes, class counts, determinism, transforms
applied, a loss that goes down. MNIST is never downloaded: the scenario writes small files in
the IDX format where the book's `get_file` caches its downloads (`~/.dezero`, and the worker's
home is its scratch folder), so the learner's own loader reads them.
"""
import gzip
import os
import struct

import numpy as np

from dezero_grader.sandboxed.probes.context import integer
from dezero_grader.sandboxed.probes.registry import scenario
from dezero_grader.sandboxed.probes.scenarios.fixtures import book_class
from dezero_grader.sandboxed.probes.scenarios.fn_before_core import export
from dezero_grader.sandboxed.probes.scenarios.networks import set_params
from dezero_grader.sandboxed.probes.scenarios.single_file import phase


@scenario('data.spiral')
def spiral(ctx):
    """get_spiral(train): 300 points in the plane, 3 classes of 100, integer labels; the same
    data at every call (it seeds its own generator); the test split differs."""
    get_spiral = ctx.api.get('datasets.get_spiral')
    x, t = get_spiral(train=True)
    x2, t2 = get_spiral(train=True)
    xt, _ = get_spiral(train=False)
    x, t = np.asarray(x), np.asarray(t)
    # raw arrays: the trusted side counts the classes and compares the calls
    return {'x_shape': list(x.shape), 't_shape': list(t.shape), 'x': x, 't': t,
            'x_again': np.asarray(x2), 't_again': np.asarray(t2), 'x_test': np.asarray(xt)}


@scenario('train.spiral')
def spiral_training(ctx, epochs, batch, lr, hidden):
    """MLP((hidden, 3)) and SGD on the learner's spiral in mini-batches (a permutation drawn from
    the seed each epoch): the average loss of the first and the last epoch."""
    get_spiral = ctx.api.get('datasets.get_spiral')
    MLP = ctx.api.get('models.MLP')
    SGD = ctx.api.get('optimizers.SGD')
    F = ctx.api.get('functions')
    x, t = get_spiral(train=True)
    model = MLP((hidden, 3))
    model(x[:1])
    set_params(ctx, model, salt=60, scale=1.0)
    opt = SGD(lr).setup(model)
    rng = ctx.rng(61)
    n = len(x)
    averages = []
    for _ in range(epochs):
        order = rng.permutation(n)
        total = 0.0
        for i in range(0, n, batch):
            idx = order[i:i + batch]
            loss = F.softmax_cross_entropy(model(x[idx]), t[idx])
            model.cleargrads()
            loss.backward()
            opt.update()
            total += ctx.scalar(loss) * len(idx)
        averages.append(total / n)
    return {'first': averages[0], 'last': averages[-1], 'ratio': averages[-1] / averages[0]}


@scenario('data.dataset')
def dataset(ctx, n):
    """A Dataset subclass filled in prepare(): len(), items (x, t) with transform and
    target_transform applied, (x, None) without labels, and `for x, t in dataset` ends. The base
    class is `datasets.Dataset`, where the book defines it (its scripts never import a top-level
    `dezero.Dataset`)."""
    Dataset = book_class(ctx, 'Dataset')
    data = np.arange(n * 2, dtype=np.float64).reshape(n, 2)
    label = np.arange(n) % 3

    class Labelled(Dataset):
        def prepare(self):
            self.data, self.label = data, label

    class Unlabelled(Dataset):
        def prepare(self):
            self.data = data

    res = {}

    def plain():
        ds = Labelled()
        x, t = ds[n - 1]
        return {'len': len(ds), 'x': export(ctx, np.asarray(x)), 'x_expected': data[n - 1],
                't': integer(t), 't_expected': int(label[n - 1])}
    phase(res, 'plain', plain)

    def transformed():
        ds = Labelled(transform=lambda x: x * 10.0, target_transform=lambda t: t + 100)
        x, t = ds[1]
        return {'x': export(ctx, np.asarray(x)), 'x_expected': data[1] * 10.0,
                't': integer(t), 't_expected': int(label[1]) + 100}
    phase(res, 'transformed', transformed)

    def unlabelled():
        x, t = Unlabelled()[0]
        return {'t_is_none': t is None, 'x': export(ctx, np.asarray(x)), 'x_expected': data[0]}
    phase(res, 'unlabelled', unlabelled)

    def iterate():
        count = 0
        for _ in Labelled():
            count += 1
            if count > n + 2:
                break
        return count
    phase(res, 'iterated', iterate)
    return res


@scenario('data.spiral_dataset')
def spiral_dataset(ctx):
    """Spiral(train): 300 items (x of shape (2,), an integer label), the test split differs,
    and a transform is applied to each item."""
    Spiral = ctx.api.get('datasets.Spiral')
    train, test = Spiral(train=True), Spiral(train=False)
    x, t = train[0]
    zeroed, _ = Spiral(transform=lambda v: v * 0.0)[5]
    return {'len': len(train), 'x_shape': list(np.asarray(x).shape), 't': np.asarray(t),
            'train_first': np.asarray(train[0][0]), 'test_first': np.asarray(test[0][0]),
            'zeroed': np.asarray(zeroed)}


@scenario('data.accuracy')
def accuracy(ctx, batch, classes):
    """accuracy(y, t): the share of rows whose largest score is at the label, as a Variable."""
    F = ctx.api.get('functions')
    rng = ctx.rng(62)
    y = rng.standard_normal((batch, classes))
    t = rng.integers(0, classes, size=batch)
    t[:batch // 2] = np.argmax(y[:batch // 2], axis=1)   # some right, some by chance
    acc = F.accuracy(ctx.api.Variable(y), t)
    return {'value': export(ctx, acc), 'is_variable': isinstance(acc, ctx.api.Variable)}


# -- MNIST from local files -------------------------------------------------------------------------
_FILES = {True: ('train-images-idx3-ubyte.gz', 'train-labels-idx1-ubyte.gz'),
          False: ('t10k-images-idx3-ubyte.gz', 't10k-labels-idx1-ubyte.gz')}


def _write_idx(path, array):
    header = struct.pack('>I', 0x0800 + array.ndim) + struct.pack('>' + 'I' * array.ndim, *array.shape)
    with gzip.open(path, 'wb') as f:
        f.write(header + array.astype(np.uint8).tobytes())


def _cache_folders(ctx):
    """Where the learner's get_file looks for its downloads: the book's `~/.dezero`, and the
    package's own `utils.cache_dir` where it names another folder (where a package keeps its
    cache is its own choice). Each made if missing; one that cannot be written is left out."""
    folders = [os.path.join(os.path.expanduser('~'), '.dezero')]
    try:
        own = ctx.api.get('utils.cache_dir', None)
    except Exception:   # noqa: BLE001 (the learner's module may raise anything)
        own = None
    if isinstance(own, str) and own and os.path.abspath(own) != os.path.abspath(folders[0]):
        folders.append(own)
    usable = []
    for folder in folders:
        try:
            os.makedirs(folder, exist_ok=True)
        except OSError:
            continue
        if os.access(folder, os.W_OK):
            usable.append(folder)
    return usable


@scenario('data.mnist')
def mnist(ctx, train_size, test_size):
    """MNIST(train) read from small IDX files placed where get_file caches downloads: length,
    each item float32 (784,) in [0, 1] by default, the label, the raw (1, 28, 28) uint8 image
    without a transform."""
    caches = _cache_folders(ctx)
    rng = ctx.rng(63)
    written = {}
    for train, size in ((True, train_size), (False, test_size)):
        images = rng.integers(0, 256, size=(size, 28, 28)).astype(np.uint8)
        labels = rng.integers(0, 10, size=size).astype(np.uint8)
        for cache in caches:
            _write_idx(os.path.join(cache, _FILES[train][0]), images)
            _write_idx(os.path.join(cache, _FILES[train][1]), labels)
        written[train] = images, labels
    MNIST = ctx.api.get('datasets.MNIST')
    images, labels = written[True]
    res = {}

    def default():
        ds = MNIST(train=True)
        x, t = ds[3]
        x = np.asarray(x)
        return {'len': len(ds), 'shape': list(x.shape), 'dtype': str(x.dtype),
                'x': export(ctx, x), 'x_expected': images[3].reshape(784).astype(np.float32) / 255.0,
                'label': integer(t), 'label_expected': int(labels[3])}
    phase(res, 'default', default)
    phase(res, 'test_len', lambda: len(MNIST(train=False)))

    def raw():
        x, _ = MNIST(train=True, transform=None)[2]
        x = np.asarray(x)
        return {'shape': list(x.shape), 'x': x, 'expected': images[2]}
    phase(res, 'raw', raw)
    return res
