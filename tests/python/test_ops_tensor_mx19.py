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


# ---------------------------------------------------------------- gather_nd, scatter_nd
def np_gather_nd(data, idx):
    return data[tuple(idx.astype(np.int64))]


@pytest.mark.parametrize("dshape,ishape", [((5,), (1, 4)), ((3, 4), (2, 5)), ((3, 4, 2), (1, 2, 3)),
                                           ((2, 3, 4), (3, 6))])
def test_gather_nd(dshape, ishape):
    data = RNG.uniform(-1, 1, dshape)
    idx = np.stack([RNG.randint(-dshape[j], dshape[j], ishape[1:]) for j in range(ishape[0])])
    out = nd.gather_nd(nd.array(data, dtype=np.float64), nd.array(idx, dtype=np.int32))
    assert_almost_equal(out.asnumpy(), np_gather_nd(data, idx))
    # Repeated indices make the gradient sum.
    check_numeric_gradient("gather_nd", [data, idx.astype(np.float64)], grad_nodes=[0])


def test_gather_nd_errors():
    with pytest.raises(mx.base.MXNetError, match="at least 2 dimensions"):
        nd.gather_nd(nd.zeros((3, 4)), nd.zeros((2,)))
    with pytest.raises(mx.base.MXNetError, match="address 3 axes"):
        nd.gather_nd(nd.zeros((3, 4)), nd.zeros((3, 1)))
    with pytest.raises(mx.base.MXNetError, match="index 3 is out of bounds for axis 0"):
        nd.gather_nd(nd.zeros((3, 4)), nd.array([[3], [0]])).asnumpy()


def test_backward_gather_nd_sums_repeats():
    data = nd.array([2, 3, 0])
    idx = nd.array([[1, 1, 0], [1, 1, 0]])
    got = nd._internal._backward_gather_nd(data, idx, shape=(2, 2)).asnumpy()
    want = np.zeros((2, 2))
    np.add.at(want, (np.array([1, 1, 0]), np.array([1, 1, 0])), [2, 3, 0])
    assert_almost_equal(got, want)
    with pytest.raises(mx.base.MXNetError, match="need"):
        nd._internal._backward_gather_nd(nd.zeros((4,)), idx, shape=(2, 2))
    with pytest.raises(mx.base.MXNetError, match="expects"):
        nd._internal._backward_gather_nd_like(nd.zeros((4,)), idx, nd.zeros((2, 2)))


@pytest.mark.parametrize("oshape,ishape", [((2, 2), (2, 3)), ((2, 2, 2, 2), (2, 2)), ((6,), (1, 4))])
def test_scatter_nd(oshape, ishape):
    m = ishape[0]
    # Distinct destinations, so the result does not depend on the write order.
    flat = RNG.permutation(int(np.prod(oshape[:m])))[:int(np.prod(ishape[1:]))]
    idx = np.array(np.unravel_index(flat, oshape[:m])).reshape(ishape)
    data = RNG.uniform(-1, 1, ishape[1:] + oshape[m:])
    want = np.zeros(oshape)
    want[tuple(idx)] = data
    got = nd.scatter_nd(nd.array(data, dtype=np.float64), nd.array(idx), shape=oshape)
    assert_almost_equal(got.asnumpy(), want)
    check_numeric_gradient("scatter_nd", [data, idx.astype(np.float64)], params={"shape": oshape}, grad_nodes=[0])
    lhs = RNG.uniform(-1, 1, oshape)
    want_set = lhs.copy()
    want_set[tuple(idx)] = data
    got = nd._internal._scatter_set_nd(nd.array(lhs, dtype=np.float64), nd.array(data, dtype=np.float64),
                                       nd.array(idx), shape=oshape)
    assert_almost_equal(got.asnumpy(), want_set)


def test_scatter_set_nd_writes_into_out():
    out = nd.ones((2, 2))
    nd._internal._scatter_set_nd(out, nd.array([2, 3]), nd.array([[1, 1], [0, 1]]), shape=(2, 2), out=out)
    assert_almost_equal(out.asnumpy(), np.array([[1, 1], [2, 3]], dtype=np.float32))


def test_scatter_nd_errors():
    with pytest.raises(mx.base.MXNetError, match="input 'data' has shape"):
        nd.scatter_nd(nd.zeros((4,)), nd.zeros((2, 3)), shape=(2, 2))
    with pytest.raises(mx.base.MXNetError, match="address 3 axes"):
        nd.scatter_nd(nd.zeros((3,)), nd.zeros((3, 3)), shape=(2, 2))
    with pytest.raises(mx.base.MXNetError, match="out of bounds"):
        nd.scatter_nd(nd.zeros((1,)), nd.array([[2], [0]]), shape=(2, 2)).asnumpy()


# ---------------------------------------------------------------- batch_take, choose_element_0index
def test_batch_take():
    x = RNG.uniform(-1, 1, (2, 3, 4))
    idx = np.array([[0, 3, 1], [5, -2, 2]])
    want = np.take_along_axis(x.reshape(6, 4), np.clip(idx.reshape(6, 1), 0, 3), axis=1).reshape(2, 3)
    assert_almost_equal(nd.batch_take(nd.array(x), nd.array(idx)).asnumpy(), want.astype(np.float32))
    with pytest.raises(mx.base.MXNetError, match="has 4 elements, but input 'a' of shape"):
        nd.batch_take(nd.array(x), nd.zeros((4,)))
    with pytest.raises(mx.base.MXNetError, match="at least 2 dimensions"):
        nd.batch_take(nd.zeros((4,)), nd.zeros((1,)))


def test_choose_element_0index_is_pick():
    x = RNG.uniform(-1, 1, (3, 4))
    idx = np.array([1, 3, 0])
    got = nd.choose_element_0index(nd.array(x), nd.array(idx))
    assert_almost_equal(got.asnumpy(), x[np.arange(3), idx].astype(np.float32))


# ---------------------------------------------------------------- ravel / unravel
def test_ravel_unravel():
    shape = (3, 4, 5)
    coords = np.stack([RNG.randint(0, d, 7) for d in shape])
    flat = nd.ravel_multi_index(nd.array(coords), shape=shape)
    assert_almost_equal(flat.asnumpy(), np.ravel_multi_index(tuple(coords), shape).astype(np.float32))
    assert_almost_equal(nd._internal._ravel_multi_index(nd.array(coords, dtype=np.int64), shape=shape).asnumpy(),
                        np.ravel_multi_index(tuple(coords), shape))
    back = nd.unravel_index(flat, shape=shape)
    assert_almost_equal(back.asnumpy(), coords.astype(np.float32))
    assert_almost_equal(nd._internal._unravel_index(nd.array([63], dtype=np.int64), shape=(3, 4)).asnumpy(),
                        np.array([[15], [3]]))


def test_ravel_errors():
    with pytest.raises(mx.base.MXNetError, match=r"expected coordinates of shape \(2, N\)"):
        nd.ravel_multi_index(nd.zeros((3, 4)), shape=(2, 2))
    with pytest.raises(mx.base.MXNetError, match="at least one dimension"):
        nd.unravel_index(nd.zeros((3,)))
    with pytest.raises(mx.base.MXNetError, match="1-D array of flat indices"):
        nd.unravel_index(nd.zeros((3, 1)), shape=(2, 2))


# ---------------------------------------------------------------- contrib index_array, index_copy
@pytest.mark.parametrize("shape,axes", [((3, 2), None), ((3, 2, 2), (1, 0)), ((2, 3, 4), (-1,))])
def test_index_array(shape, axes):
    grids = np.indices(shape)
    ax = list(range(len(shape))) if axes is None else [a % len(shape) for a in axes]
    want = np.stack([grids[a] for a in ax], axis=-1)
    got = nd.contrib.index_array(nd.zeros(shape), axes=axes)
    assert got.dtype == np.int64
    assert_almost_equal(got.asnumpy(), want)
    with pytest.raises(mx.base.MXNetError, match="'axes'"):
        nd.contrib.index_array(nd.zeros(shape), axes=(len(shape),))


def test_index_copy():
    old = RNG.uniform(-1, 1, (5, 3))
    new = RNG.uniform(-1, 1, (3, 3))
    idx = np.array([0, 4, 2])
    want = old.copy()
    want[idx] = new
    got = nd.contrib.index_copy(nd.array(old, dtype=np.float64), nd.array(idx), nd.array(new, dtype=np.float64))
    assert_almost_equal(got.asnumpy(), want)
    check_numeric_gradient("_contrib_index_copy", [old, idx.astype(np.float64), new], grad_nodes=[0, 2])
    with pytest.raises(mx.base.MXNetError, match="index_vector"):
        nd.contrib.index_copy(nd.zeros((5, 3)), nd.zeros((2,)), nd.zeros((3, 3)))
    with pytest.raises(mx.base.MXNetError, match="index 5 is out of range for 5 rows"):
        nd.contrib.index_copy(nd.zeros((5, 3)), nd.array([5]), nd.zeros((1, 3))).asnumpy()
    with pytest.raises(mx.base.MXNetError, match="ograd"):
        nd.contrib.backward_index_copy(nd.zeros((4, 3)), nd.zeros((5, 3)), nd.array([1]), nd.zeros((1, 3)))


# ---------------------------------------------------------------- diag
@pytest.mark.parametrize("n,k", [(4, 0), (3, 2), (3, -1)])
def test_diag_of_vector(n, k):
    v = RNG.uniform(-1, 1, (n,))
    assert_almost_equal(nd.diag(nd.array(v, dtype=np.float64), k=k).asnumpy(), np.diag(v, k))
    check_numeric_gradient("diag", [v], params={"k": k})


@pytest.mark.parametrize("shape,k,a1,a2", [((3, 4), 0, 0, 1), ((3, 4), 2, 0, 1), ((4, 3), -2, 0, 1),
                                           ((2, 3, 4), 1, 1, 2), ((2, 3, 4), -1, 2, 0), ((3, 2, 4, 2), 0, -1, 0)])
def test_diag_of_planes(shape, k, a1, a2):
    x = RNG.uniform(-1, 1, shape)
    got = nd.array(x, dtype=np.float64).diag(k=k, axis1=a1, axis2=a2)
    assert_almost_equal(got.asnumpy(), np.diagonal(x, offset=k, axis1=a1, axis2=a2))
    check_numeric_gradient("diag", [x], params={"k": k, "axis1": a1, "axis2": a2})


def test_diag_errors():
    with pytest.raises(mx.base.MXNetError, match="axis1 and axis2 both name axis 1"):
        nd.diag(nd.zeros((2, 3)), axis1=1, axis2=-1)
    with pytest.raises(mx.base.MXNetError, match="'axis2'"):
        nd.diag(nd.zeros((2, 3)), axis2=2)
    with pytest.raises(mx.base.MXNetError, match="diagonal k = 5 lies outside"):
        nd.diag(nd.zeros((2, 3)), k=5)
    with pytest.raises(mx.base.MXNetError, match="ograd"):
        nd._internal._backward_diag(nd.zeros((3,)), nd.zeros((2, 3))).asnumpy()


# ---------------------------------------------------------------- slice_like
@pytest.mark.parametrize("dshape,lshape,axes", [((4, 5), (2, 3), ()), ((4, 5, 6), (3, 9), (0,)),
                                                ((4, 5, 6), (9, 2, 3), (-1, 1))])
def test_slice_like(dshape, lshape, axes):
    x = RNG.uniform(-1, 1, dshape)
    idx = [slice(None)] * len(dshape)
    for a in (range(len(dshape)) if not axes else axes):
        idx[a] = slice(0, lshape[a])
    got = nd.array(x, dtype=np.float64).slice_like(nd.zeros(lshape), axes=axes)
    assert_almost_equal(got.asnumpy(), x[tuple(idx)])
    check_numeric_gradient("slice_like", [x, np.zeros(lshape)], params={"axes": axes}, grad_nodes=[0])


def test_slice_like_errors():
    with pytest.raises(mx.base.MXNetError, match="one rank"):
        nd.slice_like(nd.zeros((4, 5)), nd.zeros((2,)))
    with pytest.raises(mx.base.MXNetError, match="longer than that of data"):
        nd.slice_like(nd.zeros((4, 5)), nd.zeros((2, 6)))
    with pytest.raises(mx.base.MXNetError, match="out of range for shape_like"):
        nd.slice_like(nd.zeros((4, 5)), nd.zeros((2,)), axes=(1,))


# ---------------------------------------------------------------- depth_to_space, space_to_depth
def np_depth_to_space(x, b):
    n, c, h, w = x.shape
    y = x.reshape(n, b, b, c // (b * b), h, w).transpose(0, 3, 4, 1, 5, 2)
    return y.reshape(n, c // (b * b), h * b, w * b)


def np_space_to_depth(x, b):
    n, c, h, w = x.shape
    y = x.reshape(n, c, h // b, b, w // b, b).transpose(0, 3, 5, 1, 2, 4)
    return y.reshape(n, c * b * b, h // b, w // b)


@pytest.mark.parametrize("b", [1, 2, 3])
def test_depth_space(b):
    x = RNG.uniform(-1, 1, (2, 2 * b * b, 3, 2))
    got = nd.array(x, dtype=np.float64).depth_to_space(block_size=b)
    assert_almost_equal(got.asnumpy(), np_depth_to_space(x, b))
    back = nd.space_to_depth(got, block_size=b)
    assert_almost_equal(back.asnumpy(), x)
    z = RNG.uniform(-1, 1, (2, 3, 2 * b, 3 * b))
    assert_almost_equal(nd.array(z, dtype=np.float64).space_to_depth(block_size=b).asnumpy(),
                        np_space_to_depth(z, b))
    check_numeric_gradient("depth_to_space", [x], params={"block_size": b})
    check_numeric_gradient("space_to_depth", [z], params={"block_size": b})


def test_depth_space_errors():
    with pytest.raises(mx.base.MXNetError, match="4-D"):
        nd.depth_to_space(nd.zeros((4, 2, 2)), block_size=2)
    with pytest.raises(mx.base.MXNetError, match="not a multiple of block_size"):
        nd.depth_to_space(nd.zeros((1, 6, 2, 2)), block_size=2)
    with pytest.raises(mx.base.MXNetError, match="multiples of block_size"):
        nd.space_to_depth(nd.zeros((1, 1, 3, 2)), block_size=2)
    with pytest.raises(mx.base.MXNetError, match="positive"):
        nd.space_to_depth(nd.zeros((1, 1, 2, 2)), block_size=0)


# ---------------------------------------------------------------- _split_v2
@pytest.mark.parametrize("shape,axis,indices,sections", [((3, 7), 1, (0, 2, 3), 0), ((6, 2), 0, (), 3),
                                                         ((2, 7, 2), -2, (), 3), ((4, 5), 1, (0, 5), 0)])
def test_split_v2(shape, axis, indices, sections):
    x = RNG.uniform(-1, 1, shape)
    outs = nd._internal._split_v2(nd.array(x, dtype=np.float64), indices=indices, axis=axis, sections=sections)
    want = np.array_split(x, sections, axis=axis) if sections else np.split(x, list(indices[1:]), axis=axis)
    assert len(outs) == len(want)
    for o, w in zip(outs, want):
        assert_almost_equal(o.asnumpy(), w)
    check_numeric_gradient("_split_v2", [x], params={"indices": indices, "axis": axis, "sections": sections})


def test_split_v2_squeeze_and_errors():
    x = RNG.uniform(-1, 1, (2, 3))
    outs = nd._internal._split_v2(nd.array(x), indices=(0, 1, 2), axis=1, squeeze_axis=True)
    for i, o in enumerate(outs):
        assert_almost_equal(o.asnumpy(), x[:, i].astype(np.float32))
    with pytest.raises(mx.base.MXNetError, match="pieces of size 1"):
        nd._internal._split_v2(nd.array(x), indices=(0, 1), axis=1, squeeze_axis=True)
    with pytest.raises(mx.base.MXNetError, match="indices must rise"):
        nd._internal._split_v2(nd.array(x), indices=(0, 2, 1), axis=1)
    with pytest.raises(mx.base.MXNetError, match="first index must be 0"):
        nd._internal._split_v2(nd.array(x), indices=(1, 2), axis=1)


# ---------------------------------------------------------------- _slice_assign family
@pytest.mark.parametrize("name", ["_slice_assign", "_crop_assign"])
def test_slice_assign(name):
    lhs = RNG.uniform(-1, 1, (4, 5, 3))
    rhs = RNG.uniform(-1, 1, (2, 2, 3))
    want = lhs.copy()
    want[1:4:2, -1:0:-2] = rhs
    fn = getattr(nd._internal, name)
    got = fn(nd.array(lhs, dtype=np.float64), nd.array(rhs, dtype=np.float64), begin=(1, -1), end=(4, 0),
             step=(2, -2))
    assert_almost_equal(got.asnumpy(), want)
    out = nd.array(lhs, dtype=np.float64)
    fn(out, nd.array(rhs, dtype=np.float64), begin=(1, -1), end=(4, 0), step=(2, -2), out=out)
    assert_almost_equal(out.asnumpy(), want)
    with pytest.raises(mx.base.MXNetError, match="input 'rhs' has shape"):
        fn(nd.zeros((4, 5)), nd.zeros((3, 5)), begin=(0,), end=(2,))


@pytest.mark.parametrize("name", ["_slice_assign_scalar", "_crop_assign_scalar"])
def test_slice_assign_scalar(name):
    x = RNG.uniform(-1, 1, (4, 5))
    want = x.copy()
    want[1:3, ::2] = 2.5
    got = getattr(nd._internal, name)(nd.array(x, dtype=np.float64), scalar=2.5, begin=(1, None), end=(3, None),
                                      step=(1, 2))
    assert_almost_equal(got.asnumpy(), want)
    with pytest.raises(mx.base.MXNetError, match="begin"):
        getattr(nd._internal, name)(nd.zeros((4,)), scalar=1, begin=(0, 0), end=(1, 1))


# ---------------------------------------------------------------- elementwise with parameters
def np_smooth_l1(x, s):
    inv = 1.0 / (s * s)
    return np.where(x > inv, x - 0.5 * inv, np.where(x < -inv, -x - 0.5 * inv, 0.5 * x * x * s * s))


@pytest.mark.parametrize("sigma", [1.0, 2.0, 0.5])
def test_smooth_l1(sigma):
    x = RNG.uniform(-3, 3, (4, 5))
    got = nd.smooth_l1(nd.array(x, dtype=np.float64), scalar=sigma)
    assert_almost_equal(got.asnumpy(), np_smooth_l1(x, sigma))
    # Away from the kinks at +-1/sigma^2.
    x = x[np.abs(np.abs(x) - 1 / sigma ** 2) > 1e-2]
    check_numeric_gradient("smooth_l1", [x], params={"scalar": sigma}, numeric_eps=1e-5, rtol=1e-4, atol=1e-6)


def test_smooth_l1_default_sigma_is_one():
    got = nd.smooth_l1(nd.array([1, 2, 3, 4, 0.5, -0.5]))
    assert_almost_equal(got.asnumpy(), np_smooth_l1(np.array([1, 2, 3, 4, 0.5, -0.5]), 1.0).astype(np.float32))


@pytest.mark.parametrize("alpha,beta", [(0.2, 0.5), (1.0, 0.0)])
def test_hard_sigmoid(alpha, beta):
    x = RNG.uniform(-5, 5, (3, 7))
    want = np.clip(alpha * x + beta, 0, 1)
    kw = {} if (alpha, beta) == (0.2, 0.5) else {"alpha": alpha, "beta": beta}
    assert_almost_equal(nd.hard_sigmoid(nd.array(x, dtype=np.float64), **kw).asnumpy(), want)
    v = alpha * x + beta
    x = x[(np.abs(v) > 1e-2) & (np.abs(v - 1) > 1e-2)]
    check_numeric_gradient("hard_sigmoid", [x], params={"alpha": alpha, "beta": beta}, numeric_eps=1e-5, rtol=1e-4,
                           atol=1e-6)


def test_quadratic():
    x = RNG.uniform(-2, 2, (3, 4))
    got = nd.contrib.quadratic(nd.array(x, dtype=np.float64), a=1.5, b=-2, c=0.25)
    assert_almost_equal(got.asnumpy(), 1.5 * x * x - 2 * x + 0.25)
    assert_almost_equal(nd.contrib.quadratic(nd.array(x)).asnumpy(), np.zeros_like(x, dtype=np.float32))
    check_numeric_gradient("_contrib_quadratic", [x], params={"a": 1.5, "b": -2, "c": 0.25})


def test_gradientmultiplier():
    x = nd.array(RNG.uniform(-1, 1, (3, 4)))
    x.attach_grad()
    with autograd.record():
        y = nd.contrib.gradientmultiplier(x, scalar=-0.5) * 3
    assert_almost_equal(y.asnumpy(), x.asnumpy() * 3)
    y.backward()
    assert_almost_equal(x.grad.asnumpy(), np.full((3, 4), -1.5, dtype=np.float32))


def test_div_sqrt_dim():
    x = RNG.uniform(-1, 1, (2, 3, 16))
    assert_almost_equal(nd.contrib.div_sqrt_dim(nd.array(x, dtype=np.float64)).asnumpy(), x / 4.0)
    check_numeric_gradient("_contrib_div_sqrt_dim", [x])
    with pytest.raises(mx.base.MXNetError, match="at least 1 dimension"):
        nd.contrib.div_sqrt_dim(nd.array(np.float32(3)).reshape(()))


@pytest.mark.parametrize("name,fn", [("round_ste", lambda x: np.sign(x) * np.floor(np.abs(x) + 0.5)),
                                     ("sign_ste", np.sign)])
def test_straight_through_estimators(name, fn):
    x = np.array([[-2.5, -1.2, 0.0, 0.4], [0.5, 1.5, 2.49, -0.5]])
    a = nd.array(x, dtype=np.float64)
    a.attach_grad()
    w = RNG.uniform(-1, 1, x.shape)
    with autograd.record():
        y = getattr(nd.contrib, name)(a) * nd.array(w, dtype=np.float64)
    assert_almost_equal(y.asnumpy(), fn(x) * w)
    y.backward()
    assert_almost_equal(a.grad.asnumpy(), w)


def test_backward_ops_check_ograd_shape():
    for name in ["_backward_smooth_l1", "_backward_hard_sigmoid"]:
        with pytest.raises(mx.base.MXNetError, match="has shape"):
            getattr(nd._internal, name)(nd.zeros((2, 3)), nd.zeros((3, 2))).asnumpy()
    with pytest.raises(mx.base.MXNetError, match="has shape"):
        nd.contrib.backward_quadratic(nd.zeros((4,)), nd.zeros((3,))).asnumpy()


# ---------------------------------------------------------------- add_n, _grad_add, identity_with_attr_like_rhs
@pytest.mark.parametrize("n", [1, 2, 5])
def test_add_n(n):
    xs = [RNG.uniform(-1, 1, (3, 4)) for _ in range(n)]
    got = nd.add_n(*[nd.array(x, dtype=np.float64) for x in xs])
    assert_almost_equal(got.asnumpy(), sum(xs))
    assert_almost_equal(nd.ElementWiseSum(*[nd.array(x, dtype=np.float64) for x in xs]).asnumpy(), sum(xs))
    check_numeric_gradient("add_n", xs, params={"num_args": n})
    s = mx.sym.add_n(*[mx.sym.Variable("x%d" % i) for i in range(n)])
    assert len(s.list_arguments()) == n


def test_add_n_errors():
    with pytest.raises(mx.base.MXNetError, match="shape"):
        nd.add_n(nd.zeros((2, 3)), nd.zeros((3, 2)))


def test_grad_add_and_identity_like_rhs():
    x, y = RNG.uniform(-1, 1, (2, 3)), RNG.uniform(-1, 1, (2, 3))
    assert_almost_equal(nd._internal._grad_add(nd.array(x), nd.array(y)).asnumpy(), (x + y).astype(np.float32))
    got = nd._internal._identity_with_attr_like_rhs(nd.array(x, dtype=np.float64), nd.zeros((2, 3), dtype=np.int32))
    assert_almost_equal(got.asnumpy(), x)
    check_numeric_gradient("_identity_with_attr_like_rhs", [x, np.zeros((2, 3))], grad_nodes=[0])


# ---------------------------------------------------------------- init-like
def test_zeros_without_dtype():
    out = nd.ones((2, 3), dtype=np.float64)
    nd._internal._zeros_without_dtype(shape=(2, 3), out=out)
    assert out.dtype == np.float64 and np.all(out.asnumpy() == 0)
    z = nd._internal._zeros_without_dtype(shape=(4,), dtype=4)
    assert z.dtype == np.int32 and np.all(z.asnumpy() == 0)
    with pytest.raises(mx.base.MXNetError, match="dtype"):
        nd._internal._zeros_without_dtype(shape=(4,))
    with pytest.raises(mx.base.MXNetError, match="names no dtype"):
        nd._internal._zeros_without_dtype(shape=(4,), dtype=9)
    # In a graph the dtype comes from where the zeros are used.
    s = mx.sym.Variable("x") + mx.sym._internal._zeros_without_dtype(shape=(2, 3))
    _, out_types, _ = s.infer_type(x=np.float64)
    assert out_types == [np.float64]


@pytest.mark.parametrize("shape,kw", [((2, 3), {}), ((2, 3), {"start": 1.5, "step": 0.5, "repeat": 2}),
                                      ((4, 5), {"axis": -1, "start": 2}), ((4, 5), {"axis": 0, "repeat": 3})])
def test_arange_like(shape, kw):
    x = nd.zeros(shape, dtype=np.float64)
    got = nd.contrib.arange_like(x, **kw)
    n = int(np.prod(shape)) if "axis" not in kw else shape[kw["axis"]]
    want = kw.get("start", 0) + (np.arange(n) // kw.get("repeat", 1)) * kw.get("step", 1)
    assert got.dtype == np.float64
    assert_almost_equal(got.asnumpy(), want.reshape(shape if "axis" not in kw else (n,)))
    with pytest.raises(mx.base.MXNetError, match="axis"):
        nd.contrib.arange_like(x, axis=2)


def test_allclose():
    a = RNG.uniform(-1, 1, (3, 4))
    got = nd.contrib.allclose(nd.array(a), nd.array(a + 1e-6), rtol=1e-5, atol=1e-8)
    assert got.shape == () and got.dtype == np.uint8
    assert got.asscalar() == int(np.allclose(a.astype(np.float32), (a + 1e-6).astype(np.float32), rtol=1e-5,
                                             atol=1e-8))
    assert nd.contrib.allclose(nd.array(a), nd.array(a + 1e-3)).asscalar() == 0
    assert nd.contrib.allclose(nd.array(a), nd.array(a + 1e-3), atol=1e-2).asscalar() == 1
    n = nd.array([1.0, np.nan])
    assert nd.contrib.allclose(n, n).asscalar() == 1
    assert nd.contrib.allclose(n, n, equal_nan=False).asscalar() == 0
    with pytest.raises(mx.base.MXNetError, match="one shape"):
        nd.contrib.allclose(nd.zeros((2,)), nd.zeros((3,)))


# ---------------------------------------------------------------- moments
@pytest.mark.parametrize("shape,axes,keepdims", [((3, 4), (1,), False), ((2, 3, 4), (0, 2), True),
                                                 ((2, 3, 4), (0, 1, 2), False), ((5, 2), (-2,), True)])
def test_moments(shape, axes, keepdims):
    x = RNG.uniform(-1, 1, shape)
    mean, var = nd.moments(nd.array(x, dtype=np.float64), axes=axes, keepdims=keepdims)
    assert_almost_equal(mean.asnumpy(), np.mean(x, axis=axes, keepdims=keepdims))
    assert_almost_equal(var.asnumpy(), np.var(x, axis=axes, keepdims=keepdims))
    check_numeric_gradient("moments", [x], params={"axes": axes, "keepdims": keepdims})


def test_moments_gradient_of_one_output():
    x = nd.array(RNG.uniform(-1, 1, (3, 4)), dtype=np.float64)
    x.attach_grad()
    with autograd.record():
        _, var = nd.moments(x, axes=(1,))
        loss = var.sum()
    loss.backward()
    xn = x.asnumpy()
    assert_almost_equal(x.grad.asnumpy(), 2 * (xn - xn.mean(axis=1, keepdims=True)) / 4)


def test_moments_errors():
    with pytest.raises(mx.base.MXNetError, match="empty axes"):
        nd.moments(nd.zeros((2, 3)))
    with pytest.raises(mx.base.MXNetError, match="'axes'"):
        nd.moments(nd.zeros((2, 3)), axes=(2,))
    with pytest.raises(mx.base.MXNetError, match="has shape"):
        nd._internal._backward_moments(nd.zeros((3,)), nd.zeros((2,)), nd.zeros((2, 3)), nd.zeros((2,)),
                                       nd.zeros((2,)), axes=(1,)).asnumpy()


# ---------------------------------------------------------------- all_finite, multi_*, reset_arrays
def test_all_finite():
    good = nd.array(RNG.uniform(-1, 1, (3, 4)))
    bad = nd.array([[1.0, np.inf], [0.0, 2.0]])
    nan = nd.array([np.nan, 1.0], dtype=np.float64)
    assert nd.all_finite(good).shape == (1,) and nd.all_finite(good).dtype == np.float32
    assert nd.all_finite(good).asscalar() == 1 and nd.all_finite(bad).asscalar() == 0
    assert nd.multi_all_finite(good, good, num_arrays=2).asscalar() == 1
    assert nd.multi_all_finite(good, nan.astype(np.float32), num_arrays=2).asscalar() == 0
    assert nd.all_finite(nan).asscalar() == 0
    # Without init_output the flag keeps its value when everything is finite.
    out = nd.zeros((1,))
    nd.all_finite(good, init_output=False, out=out)
    assert out.asscalar() == 0
    with pytest.raises(mx.base.MXNetError, match="floating-point"):
        nd.all_finite(nd.zeros((2,), dtype=np.int32))


def test_multi_sum_sq_and_lars():
    arrays = [RNG.uniform(-1, 1, s) for s in [(3, 4), (5,), (2, 2, 2)]]
    got = nd.multi_sum_sq(*[nd.array(a) for a in arrays], num_arrays=3)
    assert got.dtype == np.float32
    assert_almost_equal(got.asnumpy(), np.array([np.sum(a.astype(np.float32) ** 2) for a in arrays]), rtol=1e-5)
    lrs = np.array([0.1, 0.2, 0.3, 0.4], dtype=np.float32)
    wss = np.array([4.0, 0.0, 9.0, 1.0], dtype=np.float32)
    gss = np.array([1.0, 1.0, 0.0, 16.0], dtype=np.float32)
    wds = np.array([0.01, 0.0, 0.1, 0.5], dtype=np.float32)
    eta, eps, rescale = 0.5, 1e-6, 2.0
    w, g = np.sqrt(wss), np.sqrt(gss)
    want = np.where((w > 0) & (g > 0), lrs * eta * w / (g * rescale + wds * w + eps), lrs)
    got = nd.multi_lars(nd.array(lrs), nd.array(wss), nd.array(gss), nd.array(wds), eta=eta, eps=eps,
                        rescale_grad=rescale)
    assert_almost_equal(got.asnumpy(), want.astype(np.float32), rtol=1e-5)
    with pytest.raises(mx.base.MXNetError, match="1-D"):
        nd.multi_lars(nd.zeros((2, 2)), nd.zeros((2, 2)), nd.zeros((2, 2)), nd.zeros((2, 2)), eta=1, eps=0)
    with pytest.raises(mx.base.MXNetError, match="eta"):
        nd.multi_lars(nd.zeros((2,)), nd.zeros((2,)), nd.zeros((2,)), nd.zeros((2,)), eps=0)


def test_reset_arrays():
    a, b = nd.ones((3, 4)), nd.ones((5,), dtype=np.int32)
    nd.reset_arrays(a, b, num_arrays=2)
    assert np.all(a.asnumpy() == 0) and np.all(b.asnumpy() == 0)


# ---------------------------------------------------------------- khatri_rao
def test_khatri_rao():
    mats = [RNG.uniform(-1, 1, (r, 3)) for r in (2, 4, 3)]
    want = np.stack([np.kron(np.kron(mats[0][:, j], mats[1][:, j]), mats[2][:, j]) for j in range(3)], axis=1)
    got = nd.khatri_rao(*[nd.array(m, dtype=np.float64) for m in mats])
    assert_almost_equal(got.asnumpy(), want)
    assert_almost_equal(nd.khatri_rao(nd.array(mats[0], dtype=np.float64)).asnumpy(), mats[0])
    with pytest.raises(mx.base.MXNetError, match="columns"):
        nd.khatri_rao(nd.zeros((2, 3)), nd.zeros((2, 4)))
    with pytest.raises(mx.base.MXNetError, match="shape"):
        nd.khatri_rao(nd.zeros((2, 3, 1)))


# ---------------------------------------------------------------- _histogram
def test_histogram_counts():
    x = RNG.uniform(-1, 6, (5, 7))
    counts, edges = nd._internal._histogram(nd.array(x, dtype=np.float64), bin_cnt=5, range=(0, 5))
    want_c, want_e = np.histogram(x, bins=5, range=(0, 5))
    assert counts.dtype == np.int64
    assert_almost_equal(counts.asnumpy(), want_c)
    assert_almost_equal(edges.asnumpy(), want_e)
    bins = np.array([0.0, 2.1, 3.0, 5.5])
    counts, edges = nd._internal._histogram(nd.array(x, dtype=np.float64), nd.array(bins, dtype=np.float64))
    assert_almost_equal(counts.asnumpy(), np.histogram(x, bins=bins)[0])
    assert_almost_equal(edges.asnumpy(), bins)
    # The last bin includes its right edge.
    c, _ = nd._internal._histogram(nd.array([0, 1, 2, 2, 3, 4]), bin_cnt=4, range=(0, 4))
    assert_almost_equal(c.asnumpy(), np.histogram([0, 1, 2, 2, 3, 4], bins=4, range=(0, 4))[0])


def test_histogram_errors():
    with pytest.raises(mx.base.MXNetError, match="together"):
        nd._internal._histogram(nd.zeros((3,)), bin_cnt=3)
    with pytest.raises(mx.base.MXNetError, match="at least 2 edges"):
        nd._internal._histogram(nd.zeros((3,)), nd.zeros((1,)))
    with pytest.raises(mx.base.MXNetError, match="monotonically"):
        nd._internal._histogram(nd.zeros((3,)), nd.array([0, 2, 1]))[0].asnumpy()


# ---------------------------------------------------------------- Python helpers over the operators
def test_nd_split_v2_helper():
    x = RNG.uniform(-1, 1, (3, 6))
    a = nd.array(x, dtype=np.float64)
    for got, want in zip(nd.split_v2(a, 3, axis=1), np.split(x, 3, axis=1)):
        assert_almost_equal(got.asnumpy(), want)
    for got, want in zip(a.split_v2((1, 4), axis=1), np.split(x, [1, 4], axis=1)):
        assert_almost_equal(got.asnumpy(), want)
    outs = nd.split_v2(a, 3, axis=0, squeeze_axis=True)
    assert [o.shape for o in outs] == [(6,)] * 3
    with pytest.raises(ValueError, match="equal pieces"):
        nd.split_v2(a, 4, axis=1)


def test_sym_split_v2_and_histogram_helpers():
    s = mx.sym.Variable("x")
    pieces = mx.sym.split_v2(s, 3, axis=1)
    _, shapes, _ = pieces.infer_shape(x=(2, 7))
    assert shapes == [(2, 3), (2, 2), (2, 2)]
    _, shapes, _ = s.split_v2((2,), axis=1).infer_shape(x=(2, 7))
    assert shapes == [(2, 2), (2, 5)]
    h = mx.sym.histogram(s, bins=4, range=(0, 1))
    _, shapes, _ = h.infer_shape(x=(10,))
    assert shapes == [(4,), (5,)]
    with pytest.raises(ValueError, match="range"):
        mx.sym.histogram(s, bins=4)


def test_nd_histogram_helper():
    x = RNG.uniform(0, 10, (50,))
    counts, edges = nd.histogram(nd.array(x, dtype=np.float64), bins=5, range=(0, 10))
    want_c, want_e = np.histogram(x, bins=5, range=(0, 10))
    assert_almost_equal(counts.asnumpy(), want_c)
    assert_almost_equal(edges.asnumpy(), want_e)
    counts, edges = nd.histogram(nd.array(x, dtype=np.float64), bins=nd.array([0, 1, 5, 10], dtype=np.float64))
    assert_almost_equal(counts.asnumpy(), np.histogram(x, bins=[0, 1, 5, 10])[0])
    counts, _ = nd.histogram(nd.array(x, dtype=np.float64), bins=6)
    assert_almost_equal(counts.asnumpy(), np.histogram(x, bins=6)[0].astype(np.float32))
    with pytest.raises(ValueError, match="bins"):
        nd.histogram(nd.array(x), bins=2.5)


def test_sort_puts_nan_above_every_number():
    x = np.array([3.0, np.nan, -1.0, np.nan, 2.0])
    assert_almost_equal(nd.argsort(nd.array(x, dtype=np.float64)).asnumpy(),
                        np.argsort(x, kind="stable").astype(np.float32))
    got = nd.sort(nd.array(x, dtype=np.float64), is_ascend=False).asnumpy()
    assert np.isnan(got[:2]).all() and np.array_equal(got[2:], [3.0, 2.0, -1.0])


def test_topk_symbol_shows_visible_outputs_only():
    x = mx.sym.Variable("x")
    assert len(mx.sym.topk(x, ret_typ="value").list_outputs()) == 1
    assert len(mx.sym.topk(x, ret_typ="both").list_outputs()) == 2
    both = mx.sym.topk(x, ret_typ="both", k=2, dtype="int32")
    _, shapes, _ = both.infer_shape(x=(3, 5))
    _, types, _ = both.infer_type(x=np.float32)
    assert shapes == [(3, 2), (3, 2)] and types == [np.float32, np.int32]


def test_gradients_through_the_graph_pass():
    x = mx.sym.Variable("x")
    distinct_x = RNG.permutation(12).reshape(3, 4).astype(np.float32)
    check_numeric_gradient(mx.sym.topk(x, k=2, ret_typ="value"), {"x": distinct_x}, grad_nodes=["x"],
                           numeric_eps=1e-2)
    check_numeric_gradient(mx.sym.sort(x, axis=0), {"x": distinct_x}, grad_nodes=["x"], numeric_eps=1e-2)
    check_numeric_gradient(mx.sym.moments(x, axes=(1,))[1], {"x": RNG.rand(3, 4)}, grad_nodes=["x"])
    check_numeric_gradient(mx.sym.diag(x, k=1), {"x": RNG.rand(3, 4)}, grad_nodes=["x"])
    check_numeric_gradient(mx.sym.gather_nd(x, mx.sym.Variable("i")),
                           {"x": RNG.rand(3, 4), "i": np.array([[0, 2, 2], [1, 3, 3]])}, grad_nodes=["x"])


# ---------------------------------------------------------------- cumsum (_np_cumsum)
@pytest.mark.parametrize("shape,axis", [((5,), None), ((3, 4), None), ((3, 4), 1), ((2, 3, 4), 0), ((2, 3, 4), -2)])
def test_cumsum(shape, axis):
    x = RNG.uniform(-1, 1, shape)
    kw = {} if axis is None else {"axis": axis}
    assert_almost_equal(nd.cumsum(nd.array(x, dtype=np.float64), **kw).asnumpy(), np.cumsum(x, axis=axis))
    check_numeric_gradient("cumsum", [x], params=kw)


def test_cumsum_dtypes_and_errors():
    x = np.array([[1, 2], [3, 4]], dtype=np.int32)
    got = nd._internal._np_cumsum(nd.array(x, dtype=np.int32), axis=0, dtype="float64")
    assert got.dtype == np.float64
    assert_almost_equal(got.asnumpy(), np.cumsum(x, axis=0, dtype=np.float64))
    assert nd.cumsum(nd.array([True, True, False], dtype=np.bool_)).dtype == np.int64
    with pytest.raises(mx.base.MXNetError, match="'dtype'"):
        nd.cumsum(nd.zeros((2,)), dtype="uint8")
    with pytest.raises(mx.base.MXNetError, match="axis"):
        nd.cumsum(nd.zeros((2,)), axis=1)
    with pytest.raises(mx.base.MXNetError, match="ograd"):
        nd._internal._backward_np_cumsum(nd.zeros((3,)), nd.zeros((2, 2))).asnumpy()


def test_cumsum_int64_wraps_around_as_numpy():
    # Sums past int64's range wrap (two's complement), forward and backward, as numpy's do.
    x = np.array([2 ** 62, 2 ** 62, 2 ** 62, -5], dtype=np.int64)
    expected = np.cumsum(x)
    assert expected[1] < 0  # numpy wrapped
    np.testing.assert_array_equal(nd.cumsum(nd.array(x, dtype=np.int64)).asnumpy(), expected)
    back = nd._internal._backward_np_cumsum(nd.array(x, dtype=np.int64), nd.zeros((4,), dtype=np.int64))
    np.testing.assert_array_equal(back.asnumpy(), np.cumsum(x[::-1])[::-1])


# ---------------------------------------------------------------- contrib boolean_mask
@pytest.mark.parametrize("shape,axis", [((5, 3), 0), ((2, 4, 3), 1), ((3, 4), -1)])
def test_boolean_mask(shape, axis):
    x = RNG.uniform(-1, 1, shape)
    n = shape[axis]
    index = (RNG.rand(n) > 0.4).astype(np.float32)
    index[0] = 1
    got = nd.contrib.boolean_mask(nd.array(x, dtype=np.float64), nd.array(index), axis=axis)
    assert_almost_equal(got.asnumpy(), np.compress(index != 0, x, axis=axis))
    # The gradient by hand (a numeric one would perturb the zeros of the index too).
    a = nd.array(x, dtype=np.float64)
    a.attach_grad()
    w = RNG.uniform(-1, 1, got.shape)
    with autograd.record():
        y = nd.contrib.boolean_mask(a, nd.array(index), axis=axis) * nd.array(w, dtype=np.float64)
    y.backward()
    want = np.zeros_like(x)
    sel = [slice(None)] * len(shape)
    sel[axis] = np.flatnonzero(index)
    want[tuple(sel)] = w
    assert_almost_equal(a.grad.asnumpy(), want)


def test_boolean_mask_keeps_nothing_and_errors():
    got = nd.contrib.boolean_mask(nd.ones((3, 2)), nd.zeros((3,)))
    assert got.shape == (0, 2)
    with pytest.raises(mx.base.MXNetError, match="1-D index of length 3"):
        nd.contrib.boolean_mask(nd.ones((3, 2)), nd.ones((2,)))
    with pytest.raises(mx.base.MXNetError, match="axis"):
        nd.contrib.boolean_mask(nd.ones((3, 2)), nd.ones((3,)), axis=2)
    with pytest.raises(mx.base.MXNetError, match="keeps 2 slices"):
        nd._internal._backward_contrib_boolean_mask(nd.ones((3, 2)), nd.ones((3, 2)), nd.array([1, 0, 1]))[0].asnumpy()
    # In a graph the output's size is unknown until the index is read.
    s = mx.sym.contrib.boolean_mask(mx.sym.Variable("x"), mx.sym.Variable("i"))
    _, out_shapes, _ = s.infer_shape_partial(x=(3, 2), i=(3,))
    # (the unknown length shows as 0, MXNet's legacy mark for an unknown dimension)
    assert out_shapes == [(0, 2)]


@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.int8, np.uint8, np.float32, np.float64])
@pytest.mark.parametrize("cfg", [(1.3, 456.6, 1.3), (50, -50, -2), (0, 10, 2.5), (-3.7, 20, 1.9), (5, 100, 4)])
def test_arange_in_an_integer_dtype_counts_in_integers(dtype, cfg):
    start, stop, step = cfg
    n = int(np.ceil((stop - start) / step))
    if np.issubdtype(dtype, np.integer):
        # As MXNet: start and step are truncated to integers first, the count wraps around
        # in the dtype (uint8 past 255); the length still comes from the real values.
        want = (int(start) + np.arange(n, dtype=np.int64) * int(step)).astype(dtype)
        if start == 1.3:
            assert np.array_equal(want, np.arange(*cfg, dtype=dtype))  # numpy agrees here
    else:
        want = (start + np.arange(n) * step).astype(dtype)
    got = nd.arange(*cfg, repeat=2, dtype=dtype)
    assert got.dtype == dtype
    assert_almost_equal(got.asnumpy(), np.repeat(want, 2), rtol=1e-6, atol=1e-5)
