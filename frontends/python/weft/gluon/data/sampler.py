"""Samplers of gluon.data, as in MXNet 1.x: iterables of sample indices (or of batches of
indices, for BatchSampler) that a DataLoader draws from."""
import numpy as np

__all__ = ["Sampler", "SequentialSampler", "RandomSampler", "FilterSampler", "IntervalSampler",
           "BatchSampler"]

_LAST_BATCH = ("keep", "discard", "rollover")


def _check_count(value, name, who, minimum=0):
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)) or value < minimum:
        raise ValueError("%s: expected %s to be an integer >= %d, got %r" % (who, name, minimum, value))
    return int(value)


class Sampler:
    """The base class: `__iter__` yields indices, `__len__` says how many."""

    def __iter__(self):
        raise NotImplementedError("%s must implement __iter__" % type(self).__name__)

    def __len__(self):
        raise NotImplementedError("%s must implement __len__" % type(self).__name__)


class SequentialSampler(Sampler):
    """start, start + 1, ..., start + length - 1."""

    def __init__(self, length, start=0):
        self._length = _check_count(length, "length", "SequentialSampler")
        self._start = _check_count(start, "start", "SequentialSampler")

    def __iter__(self):
        return iter(range(self._start, self._start + self._length))

    def __len__(self):
        return self._length


class RandomSampler(Sampler):
    """0 .. length-1 in a new random order each epoch, drawn from numpy's global generator
    (as MXNet does), so np.random.seed makes it reproducible."""

    def __init__(self, length):
        self._length = _check_count(length, "length", "RandomSampler")

    def __iter__(self):
        indices = np.arange(self._length)
        np.random.shuffle(indices)
        return iter(indices.tolist())

    def __len__(self):
        return self._length


class FilterSampler(Sampler):
    """The indices i of `dataset` for which fn(dataset[i]) is true (evaluated once, now)."""

    def __init__(self, fn, dataset):
        self._indices = [i for i in range(len(dataset)) if fn(dataset[i])]

    def __iter__(self):
        return iter(self._indices)

    def __len__(self):
        return len(self._indices)


class IntervalSampler(Sampler):
    """0, k, 2k, ... then (with rollover) 1, k+1, ... and so on: every index once, taken
    at a stride of `interval`; without rollover only the first pass."""

    def __init__(self, length, interval, rollover=True):
        self._length = _check_count(length, "length", "IntervalSampler")
        self._interval = _check_count(interval, "interval", "IntervalSampler", 1)
        if self._interval > self._length:
            raise ValueError("IntervalSampler: interval %d is larger than length %d"
                             % (self._interval, self._length))
        self._rollover = rollover

    def __iter__(self):
        for start in range(self._interval if self._rollover else 1):
            yield from range(start, self._length, self._interval)

    def __len__(self):
        if self._rollover:
            return self._length
        return (self._length + self._interval - 1) // self._interval


class BatchSampler(Sampler):
    """Groups the indices of `sampler` into lists of `batch_size`.

    last_batch says what happens to a final batch that is short: 'keep' yields it,
    'discard' drops it, 'rollover' keeps its indices and puts them first in the next epoch.
    """

    def __init__(self, sampler, batch_size, last_batch="keep"):
        self._sampler = sampler
        self._batch_size = _check_count(batch_size, "batch_size", "BatchSampler", 1)
        if last_batch not in _LAST_BATCH:
            raise ValueError("BatchSampler: last_batch must be one of %s, got %r"
                             % (", ".join(repr(m) for m in _LAST_BATCH), last_batch))
        self._last_batch = last_batch
        self._prev = []

    def __iter__(self):
        batch, self._prev = self._prev, []
        for i in self._sampler:
            batch.append(i)
            if len(batch) == self._batch_size:
                yield batch
                batch = []
        if batch:
            if self._last_batch == "keep":
                yield batch
            elif self._last_batch == "rollover":
                self._prev = batch

    def __len__(self):
        if self._last_batch == "keep":
            return (len(self._sampler) + self._batch_size - 1) // self._batch_size
        if self._last_batch == "discard":
            return len(self._sampler) // self._batch_size
        return (len(self._prev) + len(self._sampler)) // self._batch_size
