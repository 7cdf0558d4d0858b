"""IntervalSampler, as MXNet 1.9's `gluon.contrib.data.sampler`."""
from ...data.sampler import Sampler

__all__ = ["IntervalSampler"]


class IntervalSampler(Sampler):
    """The indices 0, interval, 2*interval, ... below `length`; with `rollover` then those
    from 1, from 2, ... up to interval - 1, so that every index comes once (for language
    models reading `interval` streams side by side). Without rollover only the first pass."""

    def __init__(self, length, interval, rollover=True):
        if not 0 < interval <= length:
            raise ValueError("IntervalSampler: interval must be in [1, length=%d], got %r" % (length, interval))
        self._length = length
        self._interval = interval
        self._rollover = rollover

    def __iter__(self):
        for start in range(self._interval if self._rollover else 1):
            yield from range(start, self._length, self._interval)

    def __len__(self):
        return self._length
