"""Mini-batches (steps 50, 52, 60): a `DataLoader` reads samples from a `Dataset` and stacks them
into `(x, t)` arrays, on the host or on the device (`gpu=True`), for the training loop.

`DataLoader` walks a (shuffled) index once per epoch; `SeqDataLoader` keeps the order of a time
series and hands out `batch_size` parallel streams for truncated BPTT. Shuffling draws from the
global NumPy RNG, so `np.random.seed(s)` replays the order of the batches.
"""
import math

import numpy as np

from dezero import cuda


class DataLoader:
    def __init__(self, dataset, batch_size, shuffle=True, gpu=False):
        self.dataset = dataset
        self.batch_size = batch_size
        self.shuffle = shuffle
        self.data_size = len(dataset)
        self.max_iter = math.ceil(self.data_size / batch_size)
        self.gpu = gpu

        self.reset()

    def reset(self):
        self.iteration = 0
        if self.shuffle:
            self.index = np.random.permutation(len(self.dataset))
        else:
            self.index = np.arange(len(self.dataset))

    def __iter__(self):
        # As in the book: no reset here, so a `for` loop left early resumes mid-epoch next time.
        return self

    def __next__(self):
        if self.iteration >= self.max_iter:
            self.reset()
            raise StopIteration

        i, batch_size = self.iteration, self.batch_size
        batch_index = self.index[i * batch_size:(i + 1) * batch_size]
        x, t = self._stack(batch_index)

        self.iteration += 1
        return x, t

    def _stack(self, batch_index):
        """The samples at `batch_index`, stacked into `(x, t)` on the loader's device."""
        batch = [self.dataset[i] for i in batch_index]
        xp = self._xp()
        x = xp.array([example[0] for example in batch])
        t = xp.array([example[1] for example in batch])
        return x, t

    def _xp(self):
        if not self.gpu:
            return np
        if cuda.cupy is None:
            raise Exception('DataLoader has gpu=True but CuPy cannot be loaded. Install CuPy!')
        return cuda.cupy

    def next(self):
        return self.__next__()

    def to_cpu(self):
        self.gpu = False

    def to_gpu(self):
        self.gpu = True


class SeqDataLoader(DataLoader):
    """`batch_size` streams over a time series, each starting `data_size // batch_size` samples
    after the previous one and all advancing one sample per iteration (no shuffling)."""

    def __init__(self, dataset, batch_size, gpu=False):
        super().__init__(dataset=dataset, batch_size=batch_size, shuffle=False, gpu=gpu)

    def __next__(self):
        if self.iteration >= self.max_iter:
            self.reset()
            raise StopIteration

        jump = self.data_size // self.batch_size
        batch_index = [(i * jump + self.iteration) % self.data_size
                       for i in range(self.batch_size)]
        x, t = self._stack(batch_index)

        self.iteration += 1
        return x, t
