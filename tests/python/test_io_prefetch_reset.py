"""A reset in the middle of an epoch behind a prefetcher (Python's PrefetchingIter, the core's
prefetch_buffer) gives the batches the iterator gives without one, whatever the last batch
mode: roll_over and round_batch carry samples over depending on where the epoch stopped, and
the prefetcher has always run ahead of its consumer."""
import time

import numpy as np
import pytest

import weft as mx


def _script(it, first, pause=0.0):
    """Takes `first` batches, resets, then runs two whole epochs (resetting after each): the
    (data, pad) of every batch taken, as numpy."""
    got = []

    def take(b):
        got.append((b.data[0].asnumpy().copy(), b.pad))

    for _ in range(first):
        try:
            take(it.next())
        except StopIteration:
            break
    if pause:
        time.sleep(pause)  # lets a prefetch worker run as far ahead as it may
    it.reset()
    for _ in range(2):
        for b in it:
            take(b)
        it.reset()
    return got


def _assert_same(got, want, why):
    assert len(got) == len(want), "%s: %d batches, expected %d" % (why, len(got), len(want))
    for i, ((g, gp), (w, wp)) in enumerate(zip(got, want)):
        np.testing.assert_array_equal(g, w, err_msg="%s: batch %d" % (why, i))
        assert gp == wp, "%s: batch %d pad" % (why, i)


def _ndarray_iter(handle, n=10):
    data = np.arange(n * 2, dtype=np.float32).reshape(n, 2)
    return mx.io.NDArrayIter(data, np.arange(n, dtype=np.float32), batch_size=4, last_batch_handle=handle)


@pytest.mark.parametrize("handle", ["roll_over", "pad", "discard"])
@pytest.mark.parametrize("n", [10, 8])
def test_prefetching_iter_reset_mid_epoch_matches_the_plain_iterator(handle, n):
    for first in range(0, 5):
        want = _script(_ndarray_iter(handle, n), first)
        got = _script(mx.io.PrefetchingIter(_ndarray_iter(handle, n)), first)
        _assert_same(got, want, "%s, n=%d, reset after %d batches" % (handle, n, first))
    # The carried-over samples do come through (the comparison above is not vacuous).
    if handle == "roll_over" and n == 10:
        it = mx.io.PrefetchingIter(_ndarray_iter(handle, n))
        assert len(list(it)) == 2
        it.reset()
        np.testing.assert_array_equal(it.next().data[0].asnumpy()[:, 0], [16, 18, 0, 2])


def test_prefetching_iter_of_several_and_nested_iterators():
    for first in range(0, 4):
        want = _script(_ndarray_iter("roll_over"), first)
        got = _script(mx.io.PrefetchingIter([_ndarray_iter("roll_over"), _ndarray_iter("roll_over")]), first)
        _assert_same(got, want, "two iterators, reset after %d" % first)
        nested = mx.io.PrefetchingIter(mx.io.PrefetchingIter(_ndarray_iter("roll_over")))
        _assert_same(_script(nested, first), want, "nested, reset after %d" % first)


def _csv(tmp_path, n=7):
    path = tmp_path / "d.csv"
    np.savetxt(path, np.arange(n, dtype=np.float32)[:, None], delimiter=",")
    return str(path)


def test_core_prefetcher_reset_mid_epoch_with_round_batch(tmp_path):
    path = _csv(tmp_path)
    for first in range(0, 5):
        want = _script(mx.io.CSVIter(data_csv=path, data_shape=(1,), batch_size=3, prefetch_buffer=0), first)
        for buffer in (1, 4):
            it = mx.io.CSVIter(data_csv=path, data_shape=(1,), batch_size=3, prefetch_buffer=buffer)
            _assert_same(_script(it, first, pause=0.05), want,
                         "prefetch_buffer=%d, reset after %d" % (buffer, first))
        # Python's prefetcher in front of the core's iterator.
        it = mx.io.PrefetchingIter(mx.io.CSVIter(data_csv=path, data_shape=(1,), batch_size=3))
        _assert_same(_script(it, first, pause=0.05), want, "PrefetchingIter(CSVIter), reset after %d" % first)
    # round_batch's carry-over happens when the wrapped batch was taken.
    it = mx.io.PrefetchingIter(mx.io.CSVIter(data_csv=path, data_shape=(1,), batch_size=3))
    assert [b.index.tolist() for b in it] == [[0, 1, 2], [3, 4, 5], [6, 0, 1]]
    it.reset()
    assert it.next().index.tolist() == [2, 3, 4]
