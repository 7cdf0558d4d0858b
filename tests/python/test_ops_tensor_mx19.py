"""MXNet 1.9's legacy tensor and indexing operators that Weft lacked: forward against numpy,
gradients against central differences, and the errors bad input gets."""
import numpy as np
import pytest

import weft as mx
from weft import autograd, nd
from weft.test_utils import assert_almost_equal, check_numeric_gradient

RNG = np.random.RandomState(1919)


def distinct(shape, dtype=np.float64):
    """Values without ties (a permutation, scaled), so orderings are unambiguous."""
    n = int(np.prod(shape))
    return (RNG.permutation(n).reshape(shape) * 0.5 - n / 4.0).astype(dtype)


# ---------------------------------------------------------------- topk, sort, argsort
def np_sorted_order(x, axis, ascend):
    """Stable order of positions along `axis` (flattened input when axis is None)."""
    if axis is None:
        x = x.reshape(-1)
        axis = 0
    order = np.argsort(x if ascend else -x, axis=axis, kind="stable")
    return x, order, axis


@pytest.mark.parametrize("shape,axis", [((5,), 0), ((3, 4), -1), ((3, 4), 0), ((2, 5, 3), 1), ((2, 3, 4), None)])
@pytest.mark.parametrize("ascend", [False, True])
@pytest.mark.parametrize("k", [1, 3, 0])
def test_topk_every_ret_typ(shape, axis, ascend, k):
    x = distinct(shape, np.float32)
    flat_x, order, ax = np_sorted_order(x, axis, ascend)
    kk = flat_x.shape[ax] if k <= 0 else k
    idx = np.take(order, np.arange(kk), axis=ax)
    vals = np.take_along_axis(flat_x, idx, axis=ax)
    a = nd.array(x)
    kw = {"k": k, "is_ascend": ascend, "axis": "None" if axis is None else axis}
    assert_almost_equal(nd.topk(a, ret_typ="indices", **kw).asnumpy(), idx.astype(np.float32))
    assert nd.topk(a, ret_typ="indices", **kw).dtype == np.float32
    assert_almost_equal(nd.topk(a, ret_typ="value", **kw).asnumpy(), vals)
    v, i = nd.topk(a, ret_typ="both", dtype="int64", **kw)
    assert i.dtype == np.int64
    assert_almost_equal(v.asnumpy(), vals)
    assert_almost_equal(i.asnumpy(), idx)
    mask = np.zeros_like(flat_x)
    np.put_along_axis(mask, idx, 1, axis=ax)
    assert_almost_equal(nd.topk(a, ret_typ="mask", **kw).asnumpy(), mask.reshape(x.shape))
    # The NDArray method is the same operator.
    assert_almost_equal(a.topk(ret_typ="value", **kw).asnumpy(), vals)


@pytest.mark.parametrize("dtype", ["uint8", "int32", "float16", "float64"])
def test_topk_index_dtypes(dtype):
    x = distinct((4, 6), np.float32)
    out = nd.topk(nd.array(x), k=2, dtype=dtype)
    assert out.dtype == np.dtype(dtype)
    assert_almost_equal(out.asnumpy().astype(np.int64), np.argsort(-x, axis=-1)[:, :2])


@pytest.mark.parametrize("ret_typ,axis", [("value", -1), ("both", 0), ("value", "None")])
def test_topk_gradient(ret_typ, axis):
    x = distinct((3, 5))
    check_numeric_gradient("topk", [x], params={"k": 2, "ret_typ": ret_typ, "axis": axis}, numeric_eps=1e-4)


def test_topk_gradient_of_indices_is_zero():
    a = nd.array(distinct((3, 4), np.float32))
    a.attach_grad()
    with autograd.record():
        y = nd.topk(a, k=2, ret_typ="mask") * 3
    y.backward()
    assert np.all(a.grad.asnumpy() == 0)


def test_topk_errors():
    a = nd.array(distinct((3, 4), np.float32))
    with pytest.raises(mx.base.MXNetError, match="k = 5 is larger than the 4"):
        nd.topk(a, k=5)
    with pytest.raises(mx.base.MXNetError, match="axis"):
        nd.topk(a, axis=2)
    with pytest.raises(mx.base.MXNetError, match="ret_typ"):
        nd.topk(a, ret_typ="values")
    with pytest.raises(mx.base.MXNetError, match="uint8 cannot hold the index 299"):
        nd.topk(nd.zeros((300,)), dtype="uint8")
    with pytest.raises(mx.base.MXNetError, match="not an index dtype"):
        nd.topk(a, dtype="bool")


def test_backward_topk_checks_its_inputs():
    data = nd.zeros((3, 4))
    with pytest.raises(mx.base.MXNetError, match="expects"):
        nd._internal._backward_topk(nd.ones((3, 3)), nd.zeros((3, 2)), data, k=2, ret_typ="value")
    with pytest.raises(mx.base.MXNetError, match="out of range"):
        nd._internal._backward_topk(nd.ones((3, 2)), nd.full((3, 2), 7), data, k=2, ret_typ="value").asnumpy()


@pytest.mark.parametrize("shape,axis", [((7,), 0), ((3, 4), -1), ((3, 4), 0), ((2, 3, 4), 1), ((2, 3, 4), None)])
@pytest.mark.parametrize("ascend", [True, False])
def test_sort_argsort(shape, axis, ascend):
    x = distinct(shape, np.float32)
    flat_x, order, ax = np_sorted_order(x, axis, ascend)
    kw = {"is_ascend": ascend, "axis": "None" if axis is None else axis}
    a = nd.array(x)
    assert_almost_equal(nd.sort(a, **kw).asnumpy(), np.take_along_axis(flat_x, order, axis=ax))
    assert_almost_equal(a.sort(**kw).asnumpy(), np.take_along_axis(flat_x, order, axis=ax))
    got = nd.argsort(a, **kw)
    assert got.dtype == np.float32
    assert_almost_equal(got.asnumpy(), order.astype(np.float32))
    assert_almost_equal(a.argsort(dtype="int32", **kw).asnumpy(), order)


def test_sort_keeps_ties_in_input_order():
    x = np.array([[2, 1, 2, 1, 3]], dtype=np.float32)
    assert_almost_equal(nd.argsort(nd.array(x)).asnumpy(), np.argsort(x, kind="stable").astype(np.float32))
    assert_almost_equal(nd.topk(nd.array(x), k=3).asnumpy(), np.array([[4, 0, 2]], dtype=np.float32))


@pytest.mark.parametrize("axis,ascend", [(-1, True), (0, False), ("None", True)])
def test_sort_gradient(axis, ascend):
    check_numeric_gradient("sort", [distinct((3, 4))], params={"axis": axis, "is_ascend": ascend}, numeric_eps=1e-4)


def test_sort_symbol_shows_one_output():
    s = mx.sym.sort(mx.sym.Variable("x"))
    assert len(s.list_outputs()) == 1
    _, out, _ = s.infer_shape(x=(2, 3))
    assert out == [(2, 3)]


def test_argsort_errors():
    with pytest.raises(mx.base.MXNetError, match="axis"):
        nd.argsort(nd.zeros((2, 2)), axis=-3)
    with pytest.raises(mx.base.MXNetError, match="float16 cannot hold the index 2999"):
        nd.argsort(nd.zeros((3000,)), dtype="float16")
