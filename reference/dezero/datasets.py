"""Datasets (steps 48, 49, 51, 59, 60): where the samples of the training loop come from.

A `Dataset` holds `data` and `label` arrays and hands out one `(x, t)` pair per index, after its
`transform`/`target_transform`; a `DataLoader` stacks those pairs into mini-batches. The book's
datasets (spiral, MNIST, sine curve, CIFAR, tiny Shakespeare, ImageNet labels) are here, plus
`Digits`, a small real image set embedded in the package (`data/digits.npz`) so that everything
runs offline. Downloadable files are read from the cache folder (`utils.cache_dir`) and only
downloaded, through `utils.get_file`, when they are not there yet. Matplotlib is imported only
by `show()`.
"""
import ast
import gzip
import os
import pickle
import struct
import tarfile

import numpy as np

from dezero import utils
from dezero.transforms import Compose, Flatten, ToFloat, Normalize


class Dataset:
    def __init__(self, train=True, transform=None, target_transform=None):
        self.train = train
        self.transform = transform
        self.target_transform = target_transform
        if self.transform is None:
            self.transform = lambda x: x
        if self.target_transform is None:
            self.target_transform = lambda x: x

        self.data = None
        self.label = None
        self.prepare()

    def __getitem__(self, index):
        if not np.isscalar(index):
            raise TypeError('Dataset index must be a scalar (one sample at a time), got {!r}'
                            .format(index))
        if self.label is None:
            return self.transform(self.data[index]), None
        return self.transform(self.data[index]), self.target_transform(self.label[index])

    def __len__(self):
        return len(self.data)

    def prepare(self):
        pass


# =============================================================================
# Toy datasets
# =============================================================================
def get_spiral(train=True):
    """Three interleaved spiral arms of 100 points each, shuffled: x float32 (300, 2), t int
    (300,). The book reseeds the global RNG (1984 for train, 2020 for test); a local
    `RandomState` with the same seed gives the very same numbers and leaves the caller's
    global RNG untouched."""
    seed = 1984 if train else 2020
    rng = np.random.RandomState(seed)

    num_data, num_class, input_dim = 100, 3, 2
    data_size = num_class * num_data
    x = np.zeros((data_size, input_dim), dtype=np.float32)
    t = np.zeros(data_size, dtype=int)

    for j in range(num_class):
        for i in range(num_data):
            rate = i / num_data
            radius = 1.0 * rate
            theta = j * 4.0 + 4.0 * rate + rng.randn() * 0.2
            ix = num_data * j + i
            x[ix] = (radius * np.sin(theta), radius * np.cos(theta))
            t[ix] = j

    indices = rng.permutation(data_size)
    return x[indices], t[indices]


class Spiral(Dataset):
    def prepare(self):
        self.data, self.label = get_spiral(self.train)


class SinCurve(Dataset):
    """1000 points of one period: the train split is sin(x) plus U(-0.05, 0.05) noise drawn from
    the global NumPy RNG (seed it to reproduce a run), the test split a clean cos(x). Each sample's
    label is the next value: `data = y[:-1]`, `label = y[1:]`, both float64 (999, 1)."""

    def prepare(self):
        num_data = 1000
        dtype = np.float64

        x = np.linspace(0, 2 * np.pi, num_data)
        noise_range = (-0.05, 0.05)
        # Drawn for both splits, as in the book, so the global RNG advances the same way.
        noise = np.random.uniform(noise_range[0], noise_range[1], size=x.shape)
        if self.train:
            y = np.sin(x) + noise
        else:
            y = np.cos(x)
        y = y.astype(dtype)
        self.data = y[:-1][:, np.newaxis]
        self.label = y[1:][:, np.newaxis]


# =============================================================================
# Image datasets
# =============================================================================
def _show_images(images, row, col):
    """Tile `row * col` images picked at random from `images` (N, C, H, W) and show them."""
    import matplotlib.pyplot as plt

    N, C, H, W = images.shape
    img = np.zeros((H * row, W * col, C), dtype=np.float64)
    for r in range(row):
        for c in range(col):
            sample = images[np.random.randint(0, N)]
            img[r * H:(r + 1) * H, c * W:(c + 1) * W] = sample.transpose(1, 2, 0)
    if C == 1:
        plt.imshow(img[:, :, 0], cmap='gray', interpolation='nearest')
    else:
        plt.imshow(img / max(img.max(), 1.0), interpolation='nearest')
    plt.axis('off')
    plt.show()
    return img


def _read_gzip(filepath):
    try:
        with gzip.open(filepath, 'rb') as f:
            return f.read()
    except (OSError, EOFError) as e:
        raise ValueError('{}: expected a gzip-compressed file, could not read it ({})'.format(
            filepath, e)) from e


def load_idx(filepath, ndim):
    """The uint8 array stored in a gzipped IDX file with `ndim` dimensions (MNIST's format:
    magic number 0x0000 0x08 ndim, then ndim big-endian uint32 sizes, then the bytes)."""
    raw = _read_gzip(filepath)
    header_size = 4 + 4 * ndim
    expected_magic = 0x00000800 + ndim
    if len(raw) < header_size:
        raise ValueError('{}: expected an IDX header of {} bytes, the file has only {} bytes'
                         .format(filepath, header_size, len(raw)))
    magic = struct.unpack('>I', raw[:4])[0]
    if magic != expected_magic:
        raise ValueError('{}: expected the IDX magic number {:#010x} (unsigned bytes, {} '
                         'dimensions), found {:#010x}'.format(
                             filepath, expected_magic, ndim, magic))
    dims = struct.unpack('>' + 'I' * ndim, raw[4:header_size])
    expected_size = int(np.prod(dims))
    found_size = len(raw) - header_size
    if found_size != expected_size:
        raise ValueError('{}: the IDX header announces shape {} ({} bytes of data), found {} '
                         'bytes'.format(filepath, dims, expected_size, found_size))
    return np.frombuffer(raw, np.uint8, offset=header_size).reshape(dims)


class MNIST(Dataset):
    """Hand-written digits, 60000 train / 10000 test: `data` uint8 (N, 1, 28, 28), `label` uint8.
    With the default transform each item is float32 (784,) in [0, 1]."""
    url = 'https://ossci-datasets.s3.amazonaws.com/mnist/'
    train_files = {'target': 'train-images-idx3-ubyte.gz',
                   'label': 'train-labels-idx1-ubyte.gz'}
    test_files = {'target': 't10k-images-idx3-ubyte.gz',
                  'label': 't10k-labels-idx1-ubyte.gz'}

    def __init__(self, train=True,
                 transform=Compose([Flatten(), ToFloat(), Normalize(0., 255.)]),
                 target_transform=None):
        super().__init__(train, transform, target_transform)

    def prepare(self):
        files = self.train_files if self.train else self.test_files
        data_path = utils.get_file(self.url + files['target'])
        label_path = utils.get_file(self.url + files['label'])

        self.data = self._load_data(data_path)
        self.label = self._load_label(label_path)
        if len(self.data) != len(self.label):
            raise ValueError('MNIST: {} holds {} images but {} holds {} labels'.format(
                data_path, len(self.data), label_path, len(self.label)))

    def _load_label(self, filepath):
        return load_idx(filepath, 1)

    def _load_data(self, filepath):
        images = load_idx(filepath, 3)
        N, H, W = images.shape
        return images.reshape(N, 1, H, W)

    def show(self, row=10, col=10):
        return _show_images(self.data, row, col)

    @staticmethod
    def labels():
        return {i: str(i) for i in range(10)}


class Digits(Dataset):
    """The UCI hand-written digits embedded in the package (see `data/README.md`): 1797 images of
    8x8 pixels with values 0-16. The split is fixed: the first 1500 rows are the train split, the
    remaining 297 the test split. `data` is uint8 (N, 1, 8, 8) like MNIST, `label` int; with the
    default transform each item is float32 (64,) in [0, 1]."""
    file_path = os.path.join(os.path.dirname(__file__), 'data', 'digits.npz')
    num_train = 1500

    def __init__(self, train=True,
                 transform=Compose([Flatten(), ToFloat(), Normalize(0., 16.)]),
                 target_transform=None):
        super().__init__(train, transform, target_transform)

    def prepare(self):
        with np.load(self.file_path) as f:
            images, labels = f['images'], f['labels']
        part = slice(None, self.num_train) if self.train else slice(self.num_train, None)
        N, H, W = images[part].shape
        self.data = images[part].reshape(N, 1, H, W)
        self.label = labels[part].astype(int)

    def show(self, row=10, col=10):
        return _show_images(self.data, row, col)

    @staticmethod
    def labels():
        return {i: str(i) for i in range(10)}


def _load_pickled_member(tar_path, member):
    """The dict pickled in `member` of the CIFAR archive `tar_path` (the archive's own format)."""
    with tarfile.open(tar_path, 'r:gz') as tar:
        try:
            f = tar.extractfile(member)
        except KeyError:
            f = None
        if f is None:
            raise ValueError('{}: expected the archive member {!r}, it is not there'.format(
                tar_path, member))
        with f:
            return pickle.load(f, encoding='bytes')


def _load_cifar(tar_path, members, label_key):
    data, labels = [], []
    for member in members:
        d = _load_pickled_member(tar_path, member)
        data.append(np.asarray(d[b'data'], dtype=np.uint8))
        labels.append(np.asarray(d[label_key], dtype=int))
    data = np.concatenate(data).reshape(-1, 3, 32, 32)
    return data, np.concatenate(labels)


class CIFAR10(Dataset):
    """CIFAR-10, 50000 train / 10000 test colour images: `data` uint8 (N, 3, 32, 32), `label`
    int. The parsed arrays are cached next to the archive as npz files."""
    url = 'https://www.cs.toronto.edu/~kriz/cifar-10-python.tar.gz'

    def __init__(self, train=True,
                 transform=Compose([ToFloat(), Normalize(mean=0.5, std=0.5)]),
                 target_transform=None):
        super().__init__(train, transform, target_transform)

    def prepare(self):
        self.data, self.label = load_cache_npz(self.url, self.train)
        if self.data is not None:
            return
        filepath = utils.get_file(self.url)
        if self.train:
            members = ['cifar-10-batches-py/data_batch_{}'.format(i) for i in range(1, 6)]
        else:
            members = ['cifar-10-batches-py/test_batch']
        self.data, self.label = _load_cifar(filepath, members, b'labels')
        save_cache_npz(self.data, self.label, self.url, self.train)

    def show(self, row=10, col=10):
        return _show_images(self.data, row, col)

    @staticmethod
    def labels():
        names = ['airplane', 'automobile', 'bird', 'cat', 'deer', 'dog', 'frog', 'horse',
                 'ship', 'truck']
        return dict(enumerate(names))


class CIFAR100(CIFAR10):
    """CIFAR-100, with the 100 fine classes or the 20 coarse superclasses as labels."""
    url = 'https://www.cs.toronto.edu/~kriz/cifar-100-python.tar.gz'

    def __init__(self, train=True,
                 transform=Compose([ToFloat(), Normalize(mean=0.5, std=0.5)]),
                 target_transform=None, label_type='fine'):
        if label_type not in ('fine', 'coarse'):
            raise ValueError("label_type must be 'fine' or 'coarse', got {!r}".format(label_type))
        self.label_type = label_type
        super().__init__(train, transform, target_transform)

    def prepare(self):
        # The label type is part of the cache name, so fine and coarse caches do not mix.
        cache_name = '{}.{}'.format(self.url, self.label_type)
        self.data, self.label = load_cache_npz(cache_name, self.train)
        if self.data is not None:
            return
        filepath = utils.get_file(self.url)
        member = 'cifar-100-python/' + ('train' if self.train else 'test')
        label_key = b'fine_labels' if self.label_type == 'fine' else b'coarse_labels'
        self.data, self.label = _load_cifar(filepath, [member], label_key)
        save_cache_npz(self.data, self.label, cache_name, self.train)

    @staticmethod
    def labels(label_type='fine'):
        """Class names in label order (the book returns an empty list for 'fine')."""
        if label_type == 'coarse':
            return ['aquatic mammals', 'fish', 'flowers', 'food containers',
                    'fruit and vegetables', 'household electrical devices',
                    'household furniture', 'insects', 'large carnivores',
                    'large man-made outdoor things', 'large natural outdoor scenes',
                    'large omnivores and herbivores', 'medium-sized mammals',
                    'non-insect invertebrates', 'people', 'reptiles', 'small mammals', 'trees',
                    'vehicles 1', 'vehicles 2']
        return ['apple', 'aquarium_fish', 'baby', 'bear', 'beaver', 'bed', 'bee', 'beetle',
                'bicycle', 'bottle', 'bowl', 'boy', 'bridge', 'bus', 'butterfly', 'camel',
                'can', 'castle', 'caterpillar', 'cattle', 'chair', 'chimpanzee', 'clock',
                'cloud', 'cockroach', 'couch', 'crab', 'crocodile', 'cup', 'dinosaur',
                'dolphin', 'elephant', 'flatfish', 'forest', 'fox', 'girl', 'hamster', 'house',
                'kangaroo', 'keyboard', 'lamp', 'lawn_mower', 'leopard', 'lion', 'lizard',
                'lobster', 'man', 'maple_tree', 'motorcycle', 'mountain', 'mouse', 'mushroom',
                'oak_tree', 'orange', 'orchid', 'otter', 'palm_tree', 'pear', 'pickup_truck',
                'pine_tree', 'plain', 'plate', 'poppy', 'porcupine', 'possum', 'rabbit',
                'raccoon', 'ray', 'road', 'rocket', 'rose', 'sea', 'seal', 'shark', 'shrew',
                'skunk', 'skyscraper', 'snail', 'snake', 'spider', 'squirrel', 'streetcar',
                'sunflower', 'sweet_pepper', 'table', 'tank', 'telephone', 'television',
                'tiger', 'tractor', 'train', 'trout', 'tulip', 'turtle', 'wardrobe', 'whale',
                'willow_tree', 'wolf', 'woman', 'worm']


class ImageNet(Dataset):
    """Only a holder for `labels()`, as in the book: the constructor loads nothing."""
    labels_file = 'imagenet1000_clsidx_to_labels.txt'

    def __init__(self):
        pass

    @staticmethod
    def labels():
        """{class index: label} read from the cache folder; never downloaded."""
        path = os.path.join(utils.cache_dir, ImageNet.labels_file)
        if not os.path.exists(path):
            raise FileNotFoundError(
                'ImageNet class labels not found: expected the text file {!r} (a Python dict '
                "literal {{0: 'tench, Tinca tinca', ...}}, as used by the book) at {}".format(
                    ImageNet.labels_file, path))
        with open(path, 'r', encoding='utf-8') as f:
            text = f.read()
        try:
            labels = ast.literal_eval(text)
        except (ValueError, SyntaxError) as e:
            raise ValueError('{}: expected a Python dict literal of class labels, could not '
                             'parse it ({})'.format(path, e)) from e
        if not isinstance(labels, dict):
            raise ValueError('{}: expected a dict of class labels, found a {}'.format(
                path, type(labels).__name__))
        return labels


# =============================================================================
# Text datasets
# =============================================================================
class Shakespear(Dataset):
    """Tiny Shakespeare, character by character: `data` holds character ids and `label` the id of
    the next character (int). Ids follow the order of first appearance; `char_to_id` and
    `id_to_char` map between the two."""
    url = ('https://raw.githubusercontent.com/karpathy/char-rnn/master/data/tinyshakespeare/'
           'input.txt')
    file_name = 'shakespear.txt'

    def prepare(self):
        path = utils.get_file(self.url, self.file_name)
        with open(path, 'r', encoding='utf-8') as f:
            data = f.read()

        char_to_id = {}
        id_to_char = {}
        for word in data:
            if word not in char_to_id:
                new_id = len(char_to_id)
                char_to_id[word] = new_id
                id_to_char[new_id] = word

        indices = np.array([char_to_id[c] for c in data], dtype=int)
        self.data = indices[:-1]
        self.label = indices[1:]
        self.char_to_id = char_to_id
        self.id_to_char = id_to_char


# =============================================================================
# npz cache of parsed archives
# =============================================================================
def _cache_npz_path(filename, train):
    filename = filename[filename.rfind('/') + 1:]
    suffix = '.train.npz' if train else '.test.npz'
    return os.path.join(utils.cache_dir, filename + suffix)


def load_cache_npz(filename, train=False):
    """`(data, label)` cached for `filename` (a name or URL), or `(None, None)` when absent."""
    filepath = _cache_npz_path(filename, train)
    if not os.path.exists(filepath):
        return None, None
    with np.load(filepath) as loaded:
        return loaded['data'], loaded['label']


def save_cache_npz(data, label, filename, train=False):
    """Cache `data` and `label` for `filename`; an interrupted write leaves no file behind."""
    filepath = _cache_npz_path(filename, train)
    if os.path.exists(filepath):
        return filepath
    os.makedirs(utils.cache_dir, exist_ok=True)
    try:
        np.savez_compressed(filepath, data=data, label=label)
    except (Exception, KeyboardInterrupt):
        if os.path.exists(filepath):
            os.remove(filepath)
        raise
    return filepath
