"""Faults of the data (steps 48-51): the spiral data set, `Dataset`, `DataLoader` and the MNIST
loader.

Each patch receives the loaded `dezero` package and replaces or wraps one public name
(`dz.datasets.get_spiral`, `dz.Dataset.__getitem__`, `dz.DataLoader.reset`, ...), importing what
it needs in its own body (its source is copied into single-fault variants).
"""
from dezero_grader.catalogue.faults import patch


# -- steps 48-49 ----------------------------------------------------------------------------------
@patch('spiral_labels_float')
def spiral_labels_float(dz):
    original = dz.datasets.get_spiral

    def get_spiral(train=True):
        x, t = original(train=train)
        return x, t.astype('float32')      # class ids as floats
    dz.datasets.get_spiral = get_spiral


@patch('spiral_not_deterministic')
def spiral_not_deterministic(dz):
    import numpy as np
    original = dz.datasets.get_spiral
    calls = []

    def get_spiral(train=True):
        x, t = original(train=train)
        calls.append(1)
        noise = np.random.default_rng(len(calls)).normal(0, 0.01, size=x.shape)
        return (x + noise).astype(x.dtype), t   # no fixed seed: new points every call
    dz.datasets.get_spiral = get_spiral


@patch('spiral_labels_not_shuffled')
def spiral_labels_not_shuffled(dz):
    import numpy as np
    original = dz.datasets.get_spiral

    def get_spiral(train=True):
        x, t = original(train=train)
        return x, np.sort(t)               # x = x[indices] shuffled, t = t[indices] forgotten
    dz.datasets.get_spiral = get_spiral


@patch('dataset_transform_ignored')
def dataset_transform_ignored(dz):
    def __getitem__(self, index):
        if self.label is None:
            return self.data[index], None
        return self.data[index], self.label[index]   # transforms never applied
    dz.Dataset.__getitem__ = __getitem__


@patch('dataset_no_label_crash')
def dataset_no_label_crash(dz):
    def __getitem__(self, index):
        return self.transform(self.data[index]), self.target_transform(self.label[index])
    dz.Dataset.__getitem__ = __getitem__


# -- step 50: DataLoader --------------------------------------------------------------------------
@patch('loader_last_batch')
def loader_last_batch(dz):
    # max_iter computed with floor division: the last, smaller batch is dropped.
    original = dz.DataLoader.reset

    def reset(self):
        original(self)
        self.max_iter = self.data_size // self.batch_size
    dz.DataLoader.reset = reset


@patch('loader_reset')
def loader_reset(dz):
    # The order is drawn once: later epochs repeat it (reset does not reshuffle).
    original = dz.DataLoader.reset

    def reset(self):
        first = getattr(self, '_fault_index', None)
        original(self)
        if first is not None:
            self.index = first
        self._fault_index = self.index
    dz.DataLoader.reset = reset


# -- step 51: MNIST -------------------------------------------------------------------------------
@patch('mnist_not_normalized')
def mnist_not_normalized(dz):
    import numpy as np
    T = dz.transforms
    MNIST = dz.datasets.MNIST
    original = MNIST.__init__

    def __init__(self, train=True, transform=T.Compose([T.Flatten(), T.AsType(np.float32)]),
                 target_transform=None):
        original(self, train, transform, target_transform)   # pixels left in 0..255
    MNIST.__init__ = __init__
