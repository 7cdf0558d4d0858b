"""The shortcuts of a small imperative call: inference kept per thread for operators without
parameters, new outputs written without their engine locks, and array handles reused from a
per-thread cache. Each must give the same results and the same errors as the full path,
from several threads at once."""
import threading

import numpy as np
import pytest

import weft as mx


def test_kept_inference_still_rejects_other_shapes_and_dtypes():
    a = mx.nd.array(np.arange(6, dtype=np.float32).reshape(2, 3))
    b = mx.nd.ones((2, 3))
    for _ in range(3):  # the first call infers, the next ones reuse it
        np.testing.assert_array_equal(mx.nd.elemwise_add(a, b).asnumpy(), a.asnumpy() + 1)
    with pytest.raises(mx.base.MXNetError, match="elemwise_add"):
        mx.nd.elemwise_add(a, mx.nd.ones((3, 2)))
    with pytest.raises(mx.base.MXNetError, match="elemwise_add"):
        mx.nd.elemwise_add(a, mx.nd.ones((2, 3), dtype="float64"))
    # A given output is part of what was inferred: one of another shape is refused.
    out = mx.nd.zeros((2, 3))
    mx.nd.elemwise_add(a, b, out=out)
    np.testing.assert_array_equal(out.asnumpy(), a.asnumpy() + 1)
    with pytest.raises(mx.base.MXNetError, match="elemwise_add.*shape"):
        mx.nd.elemwise_add(a, b, out=mx.nd.zeros((3, 2)))
    # And the call after the refusals still works, with the kept inference.
    np.testing.assert_array_equal((a + b).asnumpy(), a.asnumpy() + 1)


def test_kept_inference_follows_the_shapes_of_each_call():
    for n in (1, 16, 5, 16, 1):
        x = mx.nd.array(np.arange(n, dtype=np.float32))
        y = mx.nd.relu(x - 2)
        assert y.shape == (n,)
        np.testing.assert_array_equal(y.asnumpy(), np.maximum(np.arange(n, dtype=np.float32) - 2, 0))


def test_small_calls_from_threads_with_arrays_crossing_threads():
    shared = mx.nd.array(np.arange(16, dtype=np.float32))
    made = [[] for _ in range(4)]
    errors = []

    def work(k):
        try:
            own = mx.nd.full((16,), k, dtype="float32")
            acc = mx.nd.zeros((16,))
            for i in range(300):
                c = shared + own
                acc += c
                if i % 10 == 0:
                    made[k].append(c)  # freed later, by another thread
            expected = 300 * (np.arange(16, dtype=np.float32) + k)
            np.testing.assert_allclose(acc.asnumpy(), expected)
        except Exception as e:  # noqa: BLE001 (reported on the main thread)
            errors.append(e)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors

    # The arrays outlive the threads that made them; they are read and freed here, and
    # their handles (kept by exited threads' caches until then) are reused.
    for k in range(4):
        for c in made[k]:
            np.testing.assert_array_equal(c.asnumpy(), np.arange(16, dtype=np.float32) + k)
    made.clear()

    def free_elsewhere(arrays):
        arrays.clear()

    keep = [shared * 2 for _ in range(50)]
    t = threading.Thread(target=free_elsewhere, args=(keep,))
    t.start()
    t.join()
    fresh = [shared + i for i in range(200)]
    for i, f in enumerate(fresh):
        np.testing.assert_array_equal(f.asnumpy(), np.arange(16, dtype=np.float32) + i)
