"""Gaps found by running scripts written for MXNet 1.9's Python API under Weft: each test
pins one behaviour such a script relies on, checked against numpy."""
import numpy as np
import pytest

import weft as mx
from weft import test_utils


def test_csr_matrix_from_python_lists_defaults_to_float32():
    # (data, indices, indptr) given as lists of ints: MXNet makes float32 values, so the
    # matrix multiplies with a float32 dense array.
    data, indices, indptr = [7, 8, 9], [0, 2, 1], [0, 2, 2, 3]
    a = mx.nd.sparse.csr_matrix((data, indices, indptr), shape=(3, 4))
    assert a.dtype == np.float32
    dense = np.array([[7, 0, 8, 0], [0, 0, 0, 0], [0, 9, 0, 0]], dtype=np.float32)
    np.testing.assert_array_equal(a.asnumpy(), dense)
    rhs = np.arange(8, dtype=np.float32).reshape(4, 2)
    out = mx.nd.sparse.dot(a, mx.nd.array(rhs))
    np.testing.assert_allclose(out.asnumpy(), dense @ rhs)
    t = mx.nd.sparse.dot(a, mx.nd.ones((3, 2)), transpose_a=True)
    assert t.stype == "row_sparse"
    np.testing.assert_allclose(t.asnumpy(), dense.T @ np.ones((3, 2), np.float32))


def test_csr_matrix_from_arrays_keeps_their_dtype():
    data = np.array([1, 2], dtype=np.int32)
    a = mx.nd.sparse.csr_matrix((data, [1, 0], [0, 1, 2]), shape=(2, 2))
    assert a.dtype == np.int32
    b = mx.nd.sparse.csr_matrix((mx.nd.array([1.5, 2.5], dtype=np.float64), [1, 0], [0, 1, 2]), shape=(2, 2))
    assert b.dtype == np.float64
    c = mx.nd.sparse.csr_matrix(([1, 2], [1, 0], [0, 1, 2]), shape=(2, 2), dtype=np.int64)
    assert c.dtype == np.int64
    np.testing.assert_array_equal(c.asnumpy(), [[0, 1], [2, 0]])


def test_rand_ndarray_very_sparse_wide_csr():
    # 1000 x 10**6 at density 1e-5: 10000 values. Permuting all 10**9 positions would need
    # 8 GB; the array must come out with exactly the asked count of distinct positions.
    np.random.seed(3)
    a = test_utils.rand_ndarray((1000, 10 ** 6), stype="csr", density=0.00001)
    assert a.shape == (1000, 10 ** 6)
    indptr = a.indptr.asnumpy()
    indices = a.indices.asnumpy()
    assert indptr[-1] == 10000 == indices.size
    assert np.all(np.diff(indptr) >= 0)
    flat = np.repeat(np.arange(1000), np.diff(indptr)) * 10 ** 6 + indices
    assert np.unique(flat).size == 10000
    assert indices.min() >= 0 and indices.max() < 10 ** 6
    values = a.data.asnumpy()
    assert values.min() >= 0 and values.max() < 1
    # Positions spread over all rows, not piled into a few.
    assert np.count_nonzero(np.diff(indptr)) > 990


@pytest.mark.parametrize("shape,density", [((50, 40), 0.3), ((3000, 3000), 0.001)])
def test_rand_ndarray_csr_count_and_range(shape, density):
    a = test_utils.rand_ndarray(shape, stype="csr", density=density)
    nnz = int(round(density * shape[0] * shape[1]))
    dense = a.asnumpy()
    assert a.indptr.asnumpy()[-1] == nnz
    assert np.count_nonzero(dense) <= nnz
    assert dense.min() >= 0 and dense.max() < 1
