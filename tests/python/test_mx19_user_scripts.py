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


def _write_idx(folder, prefix, images, labels):
    import gzip
    import struct
    with gzip.open(str(folder / (prefix + "-images-idx3-ubyte.gz")), "wb") as f:
        f.write(struct.pack(">IIII", 2051, images.shape[0], 28, 28) + images.tobytes())
    with gzip.open(str(folder / (prefix + "-labels-idx1-ubyte.gz")), "wb") as f:
        f.write(struct.pack(">II", 2049, labels.shape[0]) + labels.tobytes())


@pytest.mark.parametrize("cls", [mx.gluon.data.vision.MNIST, mx.gluon.data.vision.FashionMNIST])
def test_downloaded_dataset_slice_gives_a_batch(tmp_path, cls):
    rng = np.random.RandomState(0)
    images = rng.randint(0, 256, size=(7, 28, 28)).astype(np.uint8)
    labels = rng.randint(0, 10, size=7).astype(np.uint8)
    _write_idx(tmp_path, "train", images, labels)
    ds = cls(root=str(tmp_path), train=True)
    x, y = ds[2:5]
    assert x.shape == (3, 28, 28, 1)
    np.testing.assert_array_equal(x.asnumpy()[..., 0], images[2:5])
    np.testing.assert_array_equal(y, labels[2:5])
    x, y = ds[-2:]
    np.testing.assert_array_equal(x.asnumpy()[..., 0], images[-2:])
    # A transform is applied to the batch as a whole, as to one sample.
    ds_t = cls(root=str(tmp_path), train=True, transform=lambda d, l: (d.astype("float32") / 255, l + 1))
    x, y = ds_t[0:2]
    np.testing.assert_allclose(x.asnumpy()[..., 0], images[:2] / 255.0, rtol=1e-6)
    np.testing.assert_array_equal(y, labels[:2] + 1)
    x, y = ds[4]
    np.testing.assert_array_equal(x.asnumpy()[..., 0], images[4])
    with pytest.raises(IndexError, match="out of range"):
        ds[7]
    with pytest.raises(TypeError, match="integer index"):
        ds["a"]


def test_array_and_simple_dataset_slices():
    a = np.arange(12, dtype=np.float32).reshape(6, 2)
    b = mx.nd.array(np.arange(6) * 10)
    ds = mx.gluon.data.ArrayDataset(a, b)
    x, y = ds[1:4]
    np.testing.assert_array_equal(x, a[1:4])
    np.testing.assert_array_equal(y, np.arange(6)[1:4] * 10)
    one = mx.gluon.data.ArrayDataset(mx.nd.array(a))
    np.testing.assert_array_equal(one[::2].asnumpy(), a[::2])
    simple = mx.gluon.data.SimpleDataset([3, 1, 4, 1, 5])
    assert simple[1:3] == [1, 4]
    assert simple[-1] == 5
