"""Tests of the reference data pipeline: datasets, data loaders and transforms.

Downloadable datasets are exercised on small files written into a temporary cache folder; the
`offline_cache` fixture fails the test if anything tries to download.
"""
import gzip
import io
import os
import pickle
import struct
import subprocess
import sys
import tarfile
import types
import urllib.request

import numpy as np
import pytest

import dezero
from dezero import cuda
from dezero import utils
from dezero.dataloaders import DataLoader, SeqDataLoader
from dezero.datasets import (CIFAR10, CIFAR100, MNIST, Dataset, Digits, ImageNet, Shakespear,
                             SinCurve, Spiral, get_spiral, load_idx)
from dezero.transforms import (AsType, CenterCrop, Compose, Convert, Flatten, Normalize,
                               RandomHorizontalFlip, Resize, ToArray, ToFloat, ToInt, ToPIL)


@pytest.fixture
def offline_cache(tmp_path, monkeypatch):
    """An empty cache folder in place of `~/.dezero`, where any download fails the test."""
    def no_download(*args, **kwargs):
        pytest.fail('a dataset tried to download {!r}'.format(args[0] if args else kwargs))

    monkeypatch.setattr(utils, 'cache_dir', str(tmp_path))
    monkeypatch.setattr(urllib.request, 'urlretrieve', no_download)
    return tmp_path


class Squares(Dataset):
    """Five samples: x = [i, i*i], t = 10 * i."""

    def prepare(self):
        i = np.arange(5)
        self.data = np.stack([i, i * i], axis=1)
        self.label = 10 * i


class Unlabelled(Dataset):
    def prepare(self):
        self.data = np.arange(4)


class Range(Dataset):
    """n samples with x = t = i (scalars), to follow sample order through a loader."""

    def __init__(self, n):
        self.n = n
        super().__init__()

    def prepare(self):
        self.data = np.arange(self.n)
        self.label = np.arange(self.n)


# =============================================================================
# Dataset protocol
# =============================================================================
def test_dataset_indexing_len_and_identity_transforms():
    ds = Squares()
    assert len(ds) == 5
    x, t = ds[3]
    assert x.tolist() == [3, 9] and t == 30
    x, t = ds[np.int64(2)]
    assert x.tolist() == [2, 4] and t == 20


def test_dataset_iterates_through_getitem():
    pairs = [(x.tolist(), int(t)) for x, t in Squares()]
    assert pairs == [([i, i * i], 10 * i) for i in range(5)]


def test_dataset_applies_both_transforms():
    ds = Squares(transform=lambda x: x * 2, target_transform=lambda t: t + 1)
    x, t = ds[4]
    assert x.tolist() == [8, 32] and t == 41


def test_dataset_without_labels_gives_none():
    x, t = Unlabelled(transform=lambda x: -x)[2]
    assert x == -2 and t is None


@pytest.mark.parametrize('index', [slice(0, 2), [0, 1], np.array([1])])
def test_dataset_rejects_non_scalar_index(index):
    with pytest.raises(TypeError, match='scalar'):
        Squares()[index]


def test_dataset_prepare_runs_at_construction_with_train_flag():
    seen = []

    class Recorder(Dataset):
        def prepare(self):
            seen.append(self.train)
            self.data = np.zeros(1)

    Recorder(train=False)
    assert seen == [False]


# =============================================================================
# Spiral
# =============================================================================
def _book_spiral(seed):
    """The book's recipe drawn from the reseeded global RNG, written independently (vectorised)."""
    np.random.seed(seed)
    noise = np.random.randn(300)
    j = np.repeat(np.arange(3), 100)
    rate = np.tile(np.arange(100) / 100, 3)
    theta = j * 4.0 + 4.0 * rate + noise * 0.2
    x = np.stack([rate * np.sin(theta), rate * np.cos(theta)], axis=1).astype(np.float32)
    perm = np.random.permutation(300)
    return x[perm], j[perm]


@pytest.mark.parametrize('train, seed', [(True, 1984), (False, 2020)])
def test_spiral_matches_the_books_seeded_stream(train, seed):
    x, t = get_spiral(train)
    x_ref, t_ref = _book_spiral(seed)
    assert x.dtype == np.float32 and x.shape == (300, 2)
    assert np.issubdtype(t.dtype, np.integer) and t.shape == (300,)
    np.testing.assert_allclose(x, x_ref, rtol=1e-6, atol=1e-7)
    assert np.array_equal(t, t_ref)


def test_spiral_classes_and_radius():
    x, t = get_spiral()
    assert np.bincount(t).tolist() == [100, 100, 100]
    assert np.all(np.hypot(x[:, 0], x[:, 1]) < 1.0)
    x_test, _ = get_spiral(train=False)
    assert not np.allclose(x, x_test)


def test_spiral_leaves_the_global_rng_alone():
    np.random.seed(123)
    expected = np.random.rand(5)
    np.random.seed(123)
    get_spiral()
    get_spiral(train=False)
    assert np.array_equal(np.random.rand(5), expected)


def test_spiral_dataset():
    ds = Spiral(train=False)
    x, t = ds[0]
    assert len(ds) == 300 and x.shape == (2,) and x.dtype == np.float32
    assert np.array_equal(ds.label, get_spiral(train=False)[1])


# =============================================================================
# SinCurve
# =============================================================================
def test_sincurve_layout_and_values():
    train = SinCurve(train=True)
    test = SinCurve(train=False)
    x = np.linspace(0, 2 * np.pi, 1000)
    for ds in (train, test):
        assert ds.data.shape == (999, 1) and ds.label.shape == (999, 1)
        assert ds.data.dtype == np.float64 and ds.label.dtype == np.float64
        assert np.array_equal(ds.label[:-1], ds.data[1:])
    np.testing.assert_allclose(test.data[:, 0], np.cos(x[:-1]))
    noise = train.data[:, 0] - np.sin(x[:-1])
    assert np.all(np.abs(noise) <= 0.05) and noise.std() > 0.01


def test_sincurve_noise_follows_the_global_rng():
    np.random.seed(7)
    a = SinCurve().data
    np.random.seed(7)
    b = SinCurve().data
    c = SinCurve().data
    assert np.array_equal(a, b)
    assert not np.array_equal(b, c)


# =============================================================================
# MNIST on small IDX files
# =============================================================================
def _write_idx(path, array, magic=None, extra=b''):
    magic = 0x00000800 + array.ndim if magic is None else magic
    header = struct.pack('>I', magic) + struct.pack('>' + 'I' * array.ndim, *array.shape)
    with gzip.open(path, 'wb') as f:
        f.write(header + array.astype(np.uint8).tobytes() + extra)


def _write_mnist(folder, n_train=5, n_test=3):
    rng = np.random.RandomState(0)
    arrays = {}
    for prefix, n in (('train', n_train), ('t10k', n_test)):
        images = rng.randint(0, 256, size=(n, 28, 28)).astype(np.uint8)
        labels = rng.randint(0, 10, size=n).astype(np.uint8)
        _write_idx(os.path.join(folder, prefix + '-images-idx3-ubyte.gz'), images)
        _write_idx(os.path.join(folder, prefix + '-labels-idx1-ubyte.gz'), labels)
        arrays[prefix] = images, labels
    return arrays


@pytest.mark.parametrize('train, prefix', [(True, 'train'), (False, 't10k')])
def test_mnist_reads_the_cached_files(offline_cache, train, prefix):
    images, labels = _write_mnist(offline_cache)[prefix]
    ds = MNIST(train=train)
    assert ds.data.shape == (len(images), 1, 28, 28) and ds.data.dtype == np.uint8
    assert ds.label.dtype == np.uint8 and np.array_equal(ds.label, labels)
    assert np.array_equal(ds.data[:, 0], images)

    x, t = ds[1]
    assert x.shape == (784,) and x.dtype == np.float32
    assert 0.0 <= x.min() and x.max() <= 1.0
    np.testing.assert_allclose(x, images[1].reshape(-1) / 255.0, rtol=1e-6)
    assert t == labels[1] and isinstance(t, np.uint8)


def test_mnist_labels():
    assert MNIST.labels() == {i: str(i) for i in range(10)}


def test_mnist_rejects_a_wrong_magic_number(offline_cache):
    _write_mnist(offline_cache)
    images = np.zeros((2, 28, 28), np.uint8)
    _write_idx(os.path.join(offline_cache, 'train-images-idx3-ubyte.gz'), images,
               magic=0x00000801)
    with pytest.raises(ValueError, match='magic number 0x00000803.*found 0x00000801'):
        MNIST()


def test_mnist_rejects_data_that_disagrees_with_the_header(offline_cache):
    _write_mnist(offline_cache)
    _write_idx(os.path.join(offline_cache, 'train-labels-idx1-ubyte.gz'),
               np.zeros(5, np.uint8), extra=b'\x01\x02')
    with pytest.raises(ValueError, match=r'announces shape \(5,\) \(5 bytes of data\), found 7'):
        MNIST()


def test_mnist_rejects_a_file_that_is_not_gzip(offline_cache):
    _write_mnist(offline_cache)
    with open(os.path.join(offline_cache, 't10k-images-idx3-ubyte.gz'), 'wb') as f:
        f.write(b'not a gzip file at all')
    with pytest.raises(ValueError, match='expected a gzip-compressed file'):
        MNIST(train=False)


def test_mnist_rejects_a_truncated_header(offline_cache):
    path = os.path.join(offline_cache, 'short.gz')
    with gzip.open(path, 'wb') as f:
        f.write(b'\x00\x00\x08\x03\x00\x00')
    with pytest.raises(ValueError, match='header of 16 bytes'):
        load_idx(path, 3)


def test_mnist_rejects_images_and_labels_of_different_counts(offline_cache):
    _write_mnist(offline_cache)
    _write_idx(os.path.join(offline_cache, 'train-labels-idx1-ubyte.gz'), np.zeros(4, np.uint8))
    with pytest.raises(ValueError, match='5 images but .* 4 labels'):
        MNIST()


def test_mnist_show_tiles_images_with_matplotlib(offline_cache, monkeypatch):
    _write_mnist(offline_cache)
    shown = []
    pyplot = types.SimpleNamespace(imshow=lambda img, **kw: shown.append(img),
                                   axis=lambda *a: None, show=lambda: None)
    matplotlib = types.ModuleType('matplotlib')
    matplotlib.pyplot = pyplot
    monkeypatch.setitem(sys.modules, 'matplotlib', matplotlib)
    monkeypatch.setitem(sys.modules, 'matplotlib.pyplot', pyplot)
    MNIST().show(row=2, col=3)
    assert len(shown) == 1 and shown[0].shape == (56, 84)


# =============================================================================
# Digits (embedded)
# =============================================================================
def test_digits_split_shapes_and_ranges():
    train, test = Digits(train=True), Digits(train=False)
    assert (len(train), len(test)) == (1500, 297)
    for ds in (train, test):
        assert ds.data.dtype == np.uint8 and ds.data.shape[1:] == (1, 8, 8)
        assert ds.data.min() == 0 and ds.data.max() == 16
        assert np.issubdtype(ds.label.dtype, np.integer)
        assert sorted(set(ds.label.tolist())) == list(range(10))
    x, t = test[0]
    assert x.shape == (64,) and x.dtype == np.float32
    assert isinstance(t, np.integer)
    xs = np.stack([train[i][0] for i in range(len(train))])
    assert xs.min() == 0.0 and xs.max() == 1.0


def test_digits_class_counts_and_split_cover_the_file():
    train, test = Digits(train=True), Digits(train=False)
    labels = np.concatenate([train.label, test.label])
    assert np.bincount(labels).tolist() == [178, 182, 177, 183, 181, 182, 181, 179, 174, 180]
    with np.load(Digits.file_path) as f:
        assert np.array_equal(f['images'], np.concatenate([train.data, test.data])[:, 0])
        assert f['labels'].dtype == np.uint8


def test_digits_are_learnable_images():
    # Real digits: classifying the test split by the nearest class mean of the train split is
    # far better than chance (0.1).
    train, test = Digits(train=True), Digits(train=False)
    x_train = train.data.reshape(len(train), -1).astype(np.float64)
    x_test = test.data.reshape(len(test), -1).astype(np.float64)
    means = np.stack([x_train[train.label == c].mean(axis=0) for c in range(10)])
    dist = ((x_test[:, None, :] - means[None]) ** 2).sum(axis=2)
    assert (dist.argmin(axis=1) == test.label).mean() > 0.8


# =============================================================================
# CIFAR, Shakespeare, ImageNet labels on small files
# =============================================================================
def _add_pickle(tar, name, obj):
    payload = pickle.dumps(obj)
    info = tarfile.TarInfo(name)
    info.size = len(payload)
    tar.addfile(info, io.BytesIO(payload))


def _cifar_batch(rng, n, label_keys):
    batch = {b'data': rng.randint(0, 256, size=(n, 3072)).astype(np.uint8)}
    for key in label_keys:
        batch[key] = rng.randint(0, 10, size=n).tolist()
    return batch


def _write_cifar10(folder, skip=()):
    rng = np.random.RandomState(1)
    batches = {}
    with tarfile.open(os.path.join(folder, 'cifar-10-python.tar.gz'), 'w:gz') as tar:
        for name in ['data_batch_{}'.format(i) for i in range(1, 6)] + ['test_batch']:
            batches[name] = _cifar_batch(rng, 2, [b'labels'])
            if name not in skip:
                _add_pickle(tar, 'cifar-10-batches-py/' + name, batches[name])
    return batches


def test_cifar10_reads_the_archive_and_caches_it(offline_cache):
    batches = _write_cifar10(offline_cache)
    ds = CIFAR10(train=True)
    names = ['data_batch_{}'.format(i) for i in range(1, 6)]
    assert ds.data.shape == (10, 3, 32, 32) and ds.data.dtype == np.uint8
    expected = np.concatenate([batches[n][b'data'] for n in names]).reshape(-1, 3, 32, 32)
    assert np.array_equal(ds.data, expected)
    assert ds.label.tolist() == sum((batches[n][b'labels'] for n in names), [])
    x, _ = ds[0]
    assert x.dtype == np.float32 and x.shape == (3, 32, 32)

    os.remove(os.path.join(offline_cache, 'cifar-10-python.tar.gz'))
    cached = CIFAR10(train=True)  # from the npz cache; the archive is gone
    assert np.array_equal(cached.data, ds.data) and np.array_equal(cached.label, ds.label)
    assert os.path.exists(os.path.join(offline_cache, 'cifar-10-python.tar.gz.train.npz'))


def test_cifar10_test_split_and_missing_member(offline_cache):
    batches = _write_cifar10(offline_cache, skip=('data_batch_3',))
    ds = CIFAR10(train=False)
    assert ds.label.tolist() == batches['test_batch'][b'labels']
    with pytest.raises(ValueError, match="member 'cifar-10-batches-py/data_batch_3'"):
        CIFAR10(train=True)
    assert len(CIFAR10.labels()) == 10


def test_cifar100_fine_and_coarse_labels(offline_cache):
    rng = np.random.RandomState(2)
    keys = [b'fine_labels', b'coarse_labels']
    train, test = _cifar_batch(rng, 3, keys), _cifar_batch(rng, 2, keys)
    with tarfile.open(os.path.join(offline_cache, 'cifar-100-python.tar.gz'), 'w:gz') as tar:
        _add_pickle(tar, 'cifar-100-python/train', train)
        _add_pickle(tar, 'cifar-100-python/test', test)

    fine = CIFAR100(train=True)
    coarse = CIFAR100(train=True, label_type='coarse')
    assert fine.label.tolist() == train[b'fine_labels']
    assert coarse.label.tolist() == train[b'coarse_labels']
    assert CIFAR100(train=False).data.shape == (2, 3, 32, 32)
    assert len(set(CIFAR100.labels('fine'))) == 100 and len(CIFAR100.labels('coarse')) == 20
    with pytest.raises(ValueError, match='label_type'):
        CIFAR100(label_type='medium')


def test_shakespear_character_ids(offline_cache):
    with open(os.path.join(offline_cache, 'shakespear.txt'), 'w', encoding='utf-8') as f:
        f.write('to be, or')
    ds = Shakespear()
    assert ds.char_to_id == {'t': 0, 'o': 1, ' ': 2, 'b': 3, 'e': 4, ',': 5, 'r': 6}
    assert ds.data.tolist() == [0, 1, 2, 3, 4, 5, 2, 1]
    assert ds.label.tolist() == [1, 2, 3, 4, 5, 2, 1, 6]
    assert ''.join(ds.id_to_char[i] for i in ds.data) == 'to be, o'


def test_imagenet_labels_from_the_cache(offline_cache):
    with pytest.raises(FileNotFoundError, match=str(offline_cache)):
        ImageNet.labels()
    path = os.path.join(offline_cache, ImageNet.labels_file)
    with open(path, 'w') as f:
        f.write("{0: 'tench, Tinca tinca',\n 1: 'goldfish, Carassius auratus'}\n")
    assert ImageNet.labels() == {0: 'tench, Tinca tinca', 1: 'goldfish, Carassius auratus'}
    ImageNet()  # constructs without loading anything


def test_imagenet_labels_never_evaluate_code(offline_cache, tmp_path):
    marker = tmp_path / 'evaluated'
    with open(os.path.join(offline_cache, ImageNet.labels_file), 'w') as f:
        f.write('open({!r}, "w")'.format(str(marker)))
    with pytest.raises(ValueError, match='dict literal'):
        ImageNet.labels()
    assert not marker.exists()


# =============================================================================
# DataLoader
# =============================================================================
def _epoch(loader):
    return [(x.copy(), t.copy()) for x, t in loader]


def test_dataloader_attributes():
    loader = DataLoader(Range(10), batch_size=3, shuffle=False)
    assert (loader.data_size, loader.batch_size, loader.max_iter) == (10, 3, 4)
    assert loader.iteration == 0 and loader.index.tolist() == list(range(10))
    assert loader.gpu is False and loader.shuffle is False


def test_dataloader_batches_cover_every_sample_once():
    np.random.seed(0)
    loader = DataLoader(Range(10), batch_size=3)
    batches = _epoch(loader)
    assert [len(x) for x, _ in batches] == [3, 3, 3, 1]
    seen = np.concatenate([x for x, _ in batches])
    assert sorted(seen.tolist()) == list(range(10))
    assert seen.tolist() != list(range(10))  # shuffled
    for x, t in batches:
        assert np.array_equal(x, t)


def test_dataloader_reshuffles_after_each_epoch_and_replays_with_seed():
    np.random.seed(42)
    loader = DataLoader(Range(10), batch_size=4)
    first = np.concatenate([x for x, _ in _epoch(loader)])
    assert loader.iteration == 0  # StopIteration reset it
    second = np.concatenate([x for x, _ in _epoch(loader)])
    assert sorted(second.tolist()) == list(range(10))
    assert first.tolist() != second.tolist()

    np.random.seed(42)
    replay = DataLoader(Range(10), batch_size=4)
    assert np.concatenate([x for x, _ in _epoch(replay)]).tolist() == first.tolist()
    assert np.concatenate([x for x, _ in _epoch(replay)]).tolist() == second.tolist()


def test_dataloader_unshuffled_order_and_stacked_arrays():
    loader = DataLoader(Squares(), batch_size=2, shuffle=False)
    x, t = loader.next()
    assert isinstance(x, np.ndarray) and x.shape == (2, 2) and x.tolist() == [[0, 0], [1, 1]]
    assert t.tolist() == [0, 10]
    x, t = next(loader)
    assert t.tolist() == [20, 30]


def test_dataloader_iter_does_not_reset():
    loader = DataLoader(Range(6), batch_size=2, shuffle=False)
    for x, _ in loader:
        break
    assert loader.iteration == 1
    rest = [x.tolist() for x, _ in loader]
    assert rest == [[2, 3], [4, 5]]


def test_dataloader_gpu_flag_selects_cupy(monkeypatch):
    fake_cupy = types.SimpleNamespace(array=lambda a: ('device', np.array(a)))
    monkeypatch.setattr(cuda, 'cupy', fake_cupy)
    loader = DataLoader(Range(4), batch_size=2, shuffle=False)
    loader.to_gpu()
    assert loader.gpu is True
    x, t = loader.next()
    assert x[0] == 'device' and x[1].tolist() == [0, 1]
    loader.to_cpu()
    x, _ = loader.next()
    assert isinstance(x, np.ndarray) and x.tolist() == [2, 3]


def test_dataloader_gpu_without_cupy_says_so(monkeypatch):
    monkeypatch.setattr(cuda, 'cupy', None)
    loader = DataLoader(Range(4), batch_size=2, gpu=True)
    with pytest.raises(Exception, match='CuPy cannot be loaded'):
        loader.next()


# =============================================================================
# SeqDataLoader
# =============================================================================
def test_seqdataloader_layout_on_sincurve():
    ds = SinCurve(train=True)
    loader = SeqDataLoader(ds, batch_size=3)
    assert loader.max_iter == 333 and loader.shuffle is False
    batches = _epoch(loader)
    assert len(batches) == 333
    x0, t0 = batches[0]
    assert x0.shape == (3, 1) and x0.dtype == np.float64
    assert np.array_equal(x0, ds.data[[0, 333, 666]])
    assert np.array_equal(t0, ds.label[[0, 333, 666]])
    assert np.array_equal(batches[1][0], ds.data[[1, 334, 667]])
    for k in range(len(batches) - 1):  # every stream advances by one sample
        assert np.array_equal(batches[k][1], batches[k + 1][0])


def test_seqdataloader_wraps_when_size_is_not_a_multiple():
    ds = SinCurve(train=False)
    loader = SeqDataLoader(ds, batch_size=30)
    batches = _epoch(loader)
    assert len(batches) == 34 and loader.max_iter == 34
    last = [(i * 33 + 33) % 999 for i in range(30)]
    assert np.array_equal(batches[-1][0], ds.data[last])
    assert last[-1] == 990 and last[0] == 33  # stream 0 has reached stream 1's start


# =============================================================================
# Transforms
# =============================================================================
def test_normalize_scalar_and_per_channel():
    a = np.arange(12, dtype=np.float32).reshape(3, 2, 2)
    y = Normalize(mean=[0, 4, 8], std=[1, 2, 4])(a)
    assert y.dtype == np.float32
    np.testing.assert_allclose(y[0], a[0])
    np.testing.assert_allclose(y[1], (a[1] - 4) / 2)
    np.testing.assert_allclose(y[2], (a[2] - 8) / 4)
    np.testing.assert_allclose(Normalize(1.0, 2.0)(a), (a - 1) / 2)
    np.testing.assert_allclose(Normalize([1.0], [2.0])(a), (a - 1) / 2)
    y_int = Normalize(mean=[0.5, 0.5, 0.5])(np.ones((3, 1), dtype=np.uint8))
    np.testing.assert_allclose(y_int, 0.5)


def test_flatten_astype_toint():
    a = np.arange(6, dtype=np.uint8).reshape(1, 2, 3)
    assert Flatten()(a).tolist() == list(range(6))
    assert ToFloat()(a).dtype == np.float32 and ToFloat is AsType
    assert AsType(np.float64)(a).dtype == np.float64
    assert ToInt()(np.array([1.7, -2.2])).tolist() == [1, -2]
    assert ToInt()(np.array([1.7])).dtype == np.dtype(int)


def test_compose_applies_in_order():
    assert Compose([lambda x: x + 1, lambda x: x * 2])(3) == 8
    assert Compose([lambda x: x * 2, lambda x: x + 1])(3) == 7
    assert Compose()(5) == 5


def test_random_horizontal_flip_on_arrays():
    a = np.arange(6).reshape(1, 2, 3)
    assert RandomHorizontalFlip(p=1.0)(a).tolist() == [[[2, 1, 0], [5, 4, 3]]]
    assert RandomHorizontalFlip(p=0.0)(a) is a


def test_to_array_rejects_other_types():
    a = np.zeros((3, 2, 2))
    assert ToArray()(a) is a
    with pytest.raises(TypeError, match='PIL image or a NumPy array'):
        ToArray()([[1, 2]])


def _coordinate_image(Image, W=6, H=5):
    """RGB image whose pixel (x, y) is (x, y, 7)."""
    a = np.zeros((H, W, 3), dtype=np.uint8)
    a[:, :, 0] = np.arange(W)[None, :]
    a[:, :, 1] = np.arange(H)[:, None]
    a[:, :, 2] = 7
    return Image.fromarray(a, 'RGB')


def test_pil_convert_resize_crop_toarray():
    Image = pytest.importorskip('PIL.Image')
    img = _coordinate_image(Image)

    bgr = ToArray(np.uint8)(Convert('BGR')(img))
    assert bgr.shape == (3, 5, 6)
    assert np.all(bgr[0] == 7) and np.array_equal(bgr[2], ToArray(np.uint8)(img)[0])
    assert Convert('L')(img).mode == 'L'

    assert Resize((4, 3))(img).size == (4, 3) and Resize(8)(img).size == (8, 8)
    assert Resize(4).mode == Image.BILINEAR

    crop = ToArray(np.uint8)(CenterCrop((3, 2))(img))
    assert crop.shape == (3, 2, 3)
    assert crop[0, 0].tolist() == [1, 2, 3] and crop[1, :, 0].tolist() == [1, 2]

    arr = ToArray()(img)
    assert arr.dtype == np.float32 and arr.shape == (3, 5, 6) and arr[0, 2, 4] == 4.0
    back = ToPIL()(ToArray(np.uint8)(img))
    assert back.size == (6, 5) and np.array_equal(np.asarray(back), np.asarray(img))
    assert ToArray()(Image.new('L', (4, 2))).shape == (1, 2, 4)
    flipped = ToArray(np.uint8)(RandomHorizontalFlip(p=1.0)(img))
    assert flipped[0, 0].tolist() == [5, 4, 3, 2, 1, 0]


def test_import_dezero_loads_neither_pil_nor_matplotlib():
    code = ('import sys, dezero; '
            'print(sorted(m for m in sys.modules if m.split(".")[0] in ("PIL", "matplotlib")))')
    reference = os.path.dirname(os.path.dirname(dezero.__file__))
    path = os.pathsep.join([reference, os.environ.get('PYTHONPATH', '')])
    env = dict(os.environ, PYTHONPATH=path)
    out = subprocess.run([sys.executable, '-c', code], env=env, capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == '[]'
