"""Datasets of gluon.data, as in MXNet 1.x: indexable collections of samples.

A sample is whatever `dataset[i]` returns, usually a tuple (data, label). Transforms are
applied lazily, on access, so a DataLoader's workers run them in parallel.
"""
import os

import numpy as np

from ...ndarray import NDArray

__all__ = ["Dataset", "SimpleDataset", "ArrayDataset", "RecordFileDataset"]


def _check_index(idx, length, who, allow_slice=False):
    """`idx` as an int in [0, length), negative indices counted from the end as for lists;
    with `allow_slice`, a slice passes as it is (datasets held as arrays give MXNet's
    batch of samples for one, e.g. `dataset[0:10]`)."""
    if allow_slice and isinstance(idx, slice):
        return idx
    if isinstance(idx, (bool, np.bool_)) or not isinstance(idx, (int, np.integer)):
        raise TypeError("%s: expected an integer index, got %r (%s)" % (who, idx, type(idx).__name__))
    idx = int(idx)
    if not -length <= idx < length:
        raise IndexError("%s: index %d is out of range for a dataset of %d samples" % (who, idx, length))
    return idx % length


class Dataset:
    """The abstract dataset: `__getitem__(idx)` and `__len__()`."""

    def __getitem__(self, idx):
        raise NotImplementedError("%s must implement __getitem__" % type(self).__name__)

    def __len__(self):
        raise NotImplementedError("%s must implement __len__" % type(self).__name__)

    def filter(self, fn):
        """The samples for which `fn(sample)` is true, as a new dataset (evaluated now)."""
        return _SampledDataset(self, [i for i in range(len(self)) if fn(self[i])])

    def shard(self, num_shards, index):
        """Part `index` of `num_shards` contiguous parts; the first len % num_shards parts
        have one sample more, so the parts add up to the whole dataset."""
        if not isinstance(num_shards, (int, np.integer)) or num_shards < 1:
            raise ValueError("shard: expected num_shards >= 1, got %r" % (num_shards,))
        if not isinstance(index, (int, np.integer)) or not 0 <= index < num_shards:
            raise ValueError("shard: expected 0 <= index < num_shards=%d, got %r" % (num_shards, index))
        length = len(self)
        shard_len, rest = divmod(length, num_shards)
        start = shard_len * index + min(index, rest)
        end = start + shard_len + (1 if index < rest else 0)
        return _SampledDataset(self, list(range(start, end)))

    def take(self, count):
        """The first `count` samples (all of them when count is None or larger)."""
        if count is None or count > len(self):
            count = len(self)
        if count < 0:
            raise ValueError("take: expected count >= 0, got %d" % count)
        return _SampledDataset(self, list(range(count)))

    def sample(self, sampler):
        """The samples at the indices `sampler` yields, in that order."""
        return _SampledDataset(self, list(sampler))

    def transform(self, fn, lazy=True):
        """A dataset whose samples are `fn(*sample)` (tuples are spread into arguments).
        lazy=False applies fn to every sample now and keeps the results."""
        trans = _LazyTransformDataset(self, fn)
        if lazy:
            return trans
        return SimpleDataset([trans[i] for i in range(len(trans))])

    def transform_first(self, fn, lazy=True):
        """Like transform, applying fn to the first element of each sample only (the data,
        leaving the label)."""
        return self.transform(_TransformFirstClosure(fn), lazy)


class SimpleDataset(Dataset):
    """A dataset over any object with len() and [] (a list, a numpy array, ...)."""

    def __init__(self, data):
        self._data = data

    def __len__(self):
        return len(self._data)

    def __getitem__(self, idx):
        return self._data[_check_index(idx, len(self._data), "SimpleDataset", allow_slice=True)]


class _LazyTransformDataset(Dataset):
    def __init__(self, data, fn):
        self._data = data
        self._fn = fn

    def __len__(self):
        return len(self._data)

    def __getitem__(self, idx):
        item = self._data[idx]
        if isinstance(item, tuple):
            return self._fn(*item)
        return self._fn(item)


class _TransformFirstClosure:
    """fn applied to the first of the arguments; a class rather than a closure so that a
    dataset using it can be pickled to worker processes."""

    def __init__(self, fn):
        self._fn = fn

    def __call__(self, x, *args):
        if args:
            return (self._fn(x),) + args
        return self._fn(x)


class _SampledDataset(Dataset):
    """The samples of `data` at the given indices."""

    def __init__(self, data, indices):
        self._data = data
        self._indices = indices

    def __len__(self):
        return len(self._indices)

    def __getitem__(self, idx):
        return self._data[self._indices[_check_index(idx, len(self._indices), type(self._data).__name__)]]


class ArrayDataset(Dataset):
    """Zips arrays of equal length: sample i is (a[i], b[i], ...), or a[i] for one array.

    A one-dimensional NDArray is read as numpy, so its samples are scalars as in MXNet."""

    def __init__(self, *args):
        if not args:
            raise ValueError("ArrayDataset: expected at least one array, got none")
        self._length = len(args[0])
        self._data = []
        for i, data in enumerate(args):
            if len(data) != self._length:
                raise ValueError("ArrayDataset: all arrays must have the same length; array 0 has %d "
                                 "samples but array %d has %d" % (self._length, i, len(data)))
            if isinstance(data, NDArray) and data.ndim == 1:
                data = data.asnumpy()
            self._data.append(data)

    def __getitem__(self, idx):
        idx = _check_index(idx, self._length, "ArrayDataset", allow_slice=True)
        if len(self._data) == 1:
            return self._data[0][idx]
        return tuple(data[idx] for data in self._data)

    def __len__(self):
        return self._length


class RecordFileDataset(Dataset):
    """The raw records of a RecordIO file, by position, through its .idx index (the file
    name with its extension replaced by .idx, as im2rec writes it)."""

    def __init__(self, filename):
        self.idx_file = os.path.splitext(filename)[0] + ".idx"
        self.filename = filename
        self._open()

    def _open(self):
        from ... import recordio
        for path in (self.filename, self.idx_file):
            if not os.path.isfile(path):
                raise FileNotFoundError("%s: no such file: '%s'" % (type(self).__name__, path))
        self._record = recordio.MXIndexedRecordIO(self.idx_file, self.filename, "r")

    # The open reader is a handle of this process: a worker process reopens the file.
    def __getstate__(self):
        state = self.__dict__.copy()
        del state["_record"]
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)
        self._open()

    def __getitem__(self, idx):
        keys = self._record.keys
        return self._record.read_idx(keys[_check_index(idx, len(keys), type(self).__name__)])

    def __len__(self):
        return len(self._record.keys)
