"""Comparisons of csr and row_sparse arrays with numbers: sparse results where the comparison
is false at 0 (MXNet's storage rule), dense ones otherwise, values those of numpy."""
import operator

import numpy as np
import pytest

import weft as mx

_OPS = [operator.eq, operator.ne, operator.gt, operator.ge, operator.lt, operator.le]


@pytest.mark.parametrize("stype", ["csr", "row_sparse"])
@pytest.mark.parametrize("op", _OPS)
@pytest.mark.parametrize("scalar", [0, 1, -2.5, 0.5])
def test_sparse_scalar_comparison(stype, op, scalar):
    dense = np.array([[0.0, 1.0, -2.5], [0.0, 0.0, 0.0], [0.5, 0.0, 3.0]], dtype=np.float32)
    x = mx.nd.array(dense).tostype(stype)
    expected = op(dense, scalar).astype(np.float32)
    for result, want in ((op(x, scalar), expected), (op(scalar, x), op(scalar, dense).astype(np.float32))):
        np.testing.assert_array_equal(result.asnumpy(), want)
    keeps = not op(0.0, scalar)
    assert op(x, scalar).stype == (stype if keeps else "default")


@pytest.mark.parametrize("stype", ["csr", "row_sparse"])
def test_sparse_array_comparison_is_dense(stype):
    a = np.array([[0.0, 1.0], [2.0, 0.0]], dtype=np.float32)
    b = np.array([[0.0, 2.0], [2.0, 0.0]], dtype=np.float32)
    x, y = mx.nd.array(a).tostype(stype), mx.nd.array(b).tostype(stype)
    np.testing.assert_array_equal((x == y).asnumpy(), (a == b).astype(np.float32))
    np.testing.assert_array_equal((x < y).asnumpy(), (a < b).astype(np.float32))
    assert (x == None) is False  # noqa: E711  (as NDArray's)


@pytest.mark.parametrize("stype", ["default", "csr", "row_sparse"])
def test_broadcast_to_takes_a_numpy_shape(stype):
    dat = np.array([[0.5], [0.0], [-1.5]], dtype=np.float32)
    target = np.array([3, 4])
    out = mx.nd.array(dat).tostype(stype).broadcast_to(shape=target)
    np.testing.assert_array_equal(out.asnumpy(), np.broadcast_to(dat, (3, 4)))
    with pytest.raises(mx.base.MXNetError, match="broadcast_to"):
        mx.nd.array(dat).broadcast_to(shape=np.array([2, 4]))
