"""MXNet 1.9's sparse constructors: ctx and dtype honoured for dense and sparse sources, the
coordinate form of csr_matrix, mx.nd.sparse.array, and Context.default_ctx."""
import numpy as np
import pytest

import weft as mx


@pytest.mark.parametrize("make", [mx.nd.sparse.csr_matrix, mx.nd.sparse.row_sparse_array])
def test_constructor_from_dense_takes_ctx_and_dtype(make):
    src = np.array([[0.0, 1.5], [2.0, 0.0], [0.0, 0.0]], dtype=np.float64)
    for source in (mx.nd.array(src, dtype=np.float64), src, src.tolist()):
        arr = make(source, dtype=np.int32, ctx=mx.cpu(1))
        assert arr.dtype == np.int32
        assert arr.context == mx.cpu(1)
        np.testing.assert_array_equal(arr.asnumpy(), src.astype(np.int32))
    assert make(src.tolist()).dtype == np.float32
    assert make(src).dtype == np.float64
    assert make(src).context == mx.current_context()


@pytest.mark.parametrize("stype", ["csr", "row_sparse"])
def test_constructor_from_sparse_copies_to_ctx_and_dtype(stype):
    src = np.array([[0.0, 3.0], [0.0, 0.0], [4.0, 5.0]])
    sp = mx.nd.array(src, dtype=np.float64).tostype(stype)
    make = mx.nd.sparse.csr_matrix if stype == "csr" else mx.nd.sparse.row_sparse_array
    for fn in (make, mx.nd.sparse.array):
        out = fn(sp, dtype=np.int32, ctx=mx.cpu(1))
        assert out.stype == stype and out.dtype == np.int32 and out.context == mx.cpu(1)
        np.testing.assert_array_equal(out.asnumpy(), src.astype(np.int32))
        same = fn(sp)
        assert same.dtype == np.float64 and same.handle != sp.handle
    moved = sp.copyto(mx.cpu(2))
    assert moved.stype == stype and moved.context == mx.cpu(2)
    np.testing.assert_array_equal(moved.asnumpy(), src)


def test_csr_matrix_coordinate_form_sums_repeats():
    data = np.array([1.0, 2.0, 3.0, 4.0], dtype=np.float32)
    row = np.array([2, 0, 2, 0])
    col = np.array([1, 3, 1, 0])
    arr = mx.nd.sparse.csr_matrix((data, (row, col)), shape=(3, 4))
    expected = np.zeros((3, 4), np.float32)
    np.add.at(expected, (row, col), data)
    np.testing.assert_array_equal(arr.asnumpy(), expected)
    np.testing.assert_array_equal(arr.indptr.asnumpy(), [0, 2, 2, 3])
    np.testing.assert_array_equal(arr.indices.asnumpy(), [0, 3, 1])
    assert mx.nd.sparse.csr_matrix((data, (row, col))).shape == (3, 4)
    with pytest.raises(ValueError, match="outside the shape"):
        mx.nd.sparse.csr_matrix((data, (row, col)), shape=(2, 4))


def test_sparse_array_from_scipy_and_refusals():
    scipy_sparse = pytest.importorskip("scipy.sparse")
    m = scipy_sparse.csr_matrix(np.array([[0.0, 1.0], [2.0, 0.0]], dtype=np.float32))
    arr = mx.nd.sparse.array(m)
    assert arr.stype == "csr"
    np.testing.assert_array_equal(arr.asnumpy(), m.toarray())
    with pytest.raises(ValueError, match="expected a CSRNDArray"):
        mx.nd.sparse.array(np.ones((2, 2)))


def test_context_default_ctx_is_the_current_context():
    with pytest.warns(DeprecationWarning):
        assert mx.Context.default_ctx == mx.current_context()
    with mx.cpu(3):
        with pytest.warns(DeprecationWarning):
            assert mx.Context.default_ctx == mx.cpu(3)


def test_shape_must_match_the_source():
    dense = mx.nd.ones((2, 2))
    with pytest.raises(ValueError, match=r"expected shape \(3, 2\)"):
        mx.nd.sparse.csr_matrix(dense, shape=(3, 2))
    with pytest.raises(ValueError, match="expected shape"):
        mx.nd.sparse.csr_matrix((2, 2), shape=(3, 2))
    with pytest.raises(ValueError, match="expected shape"):
        mx.nd.sparse.row_sparse_array((2, 2), shape=(3, 2))
    with pytest.raises(ValueError, match="expected shape"):
        mx.nd.sparse.row_sparse_array(dense.tostype("row_sparse"), shape=(2, 3))
    shape = (np.int32(2), np.int64(3))
    assert mx.nd.sparse.row_sparse_array(shape, shape).shape == (2, 3)
    assert mx.nd.sparse.csr_matrix(dense, shape=(2, 2)).shape == (2, 2)


def test_shape_inference_needs_stored_indices():
    with pytest.raises(ValueError, match="cannot infer the column count"):
        mx.nd.sparse.csr_matrix((np.zeros(0), np.zeros(0), np.zeros(3)))
    with pytest.raises(ValueError, match="cannot infer the row count"):
        mx.nd.sparse.row_sparse_array((np.zeros((0, 4)), np.zeros(0)))
    arr = mx.nd.sparse.row_sparse_array((np.ones((2, 4)), np.array([1, 5])))
    assert arr.shape == (6, 4)


def test_num_aux():
    assert mx.nd.sparse.zeros("csr", (2, 3))._num_aux == 2
    assert mx.nd.sparse.zeros("row_sparse", (2, 3))._num_aux == 1


def test_check_symbolic_forward_returns_output_arrays():
    from weft.test_utils import check_symbolic_forward
    dense = np.array([[0.0, 2.0], [3.0, 0.0]], dtype=np.float32)
    sym = mx.sym.sparse.square(mx.sym.Variable("x"))
    outs = check_symbolic_forward(sym, {"x": mx.nd.array(dense).tostype("csr")}, [dense ** 2])
    assert isinstance(outs[0], mx.nd.NDArray)
    np.testing.assert_array_equal(outs[0].asnumpy(), dense ** 2)
