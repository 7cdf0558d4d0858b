"""NDArray behaviours MXNet 1.9's users rely on: fill_element_0index, NumPy indexing
beyond ints and slices (None, lists, index arrays; views for contiguous parts),
assignment under autograd, broadcast_like's empty axes, ones/zeros(out=), numpy
functions on NDArrays, and arrays whose history a backward freed."""
import numpy as np
import pytest

import weft as mx
from weft import autograd


# ---------------------------------------------------------------- fill_element_0index
def test_fill_element_0index_against_numpy():
    rng = np.random.RandomState(4)
    base = rng.uniform(size=(6, 5)).astype(np.float32)
    cols = rng.randint(0, 5, size=6)
    vals = rng.uniform(10, 20, size=6).astype(np.float32)
    want = base.copy()
    want[np.arange(6), cols] = vals
    got = mx.nd.fill_element_0index(mx.nd.array(base), mx.nd.array(vals), mx.nd.array(cols))
    np.testing.assert_array_equal(got.asnumpy(), want)
    out = mx.nd.zeros((6, 5))
    mx.nd.fill_element_0index(mx.nd.array(base), mx.nd.array(vals), mx.nd.array(cols), out=out)
    np.testing.assert_array_equal(out.asnumpy(), want)


def test_fill_element_0index_bad_shapes():
    with pytest.raises(mx.base.MXNetError, match="expected a 2-D lhs"):
        mx.nd.fill_element_0index(mx.nd.zeros((6,)), mx.nd.zeros((6,)), mx.nd.zeros((6,)))
    with pytest.raises(mx.base.MXNetError, match="one value and one index per row"):
        mx.nd.fill_element_0index(mx.nd.zeros((6, 2)), mx.nd.zeros((5,)), mx.nd.zeros((6,)))


# ---------------------------------------------------------------- indexing
SHAPE = (4, 5, 3, 6)
BASE = np.arange(np.prod(SHAPE), dtype=np.float32).reshape(SHAPE)


@pytest.mark.parametrize("key", [
    None,
    (1, None, -2),
    (slice(None), None, slice(1, 4), 2),
    (Ellipsis, None),
    ([2, 0, 3],),
    ([1, 1, 0], [0, 4, 2]),
    (1, [2, 3], np.array([[2], [0]])),
    (slice(1, 3), [[1], [4]], slice(None), slice(0, 5, 2)),
    ([1, 2], slice(1, 4), None, [2, 0]),
    (slice(None, None, -1), [0], 1),
])
def test_getitem_matches_numpy_and_its_gradient_scatters(key):
    x = mx.nd.array(BASE)
    want = BASE[key]
    got = x[key]
    assert got.shape == want.shape
    np.testing.assert_array_equal(got.asnumpy(), want)
    x.attach_grad()
    with autograd.record():
        y = x[key]
    y.backward(mx.nd.ones(y.shape) * 2)
    expected = np.zeros(SHAPE, np.float32)
    np.add.at(expected, key, 2)
    np.testing.assert_array_equal(x.grad.asnumpy(), expected)


def test_getitem_with_ndarray_index_arrays_float_and_int():
    a = mx.nd.array([[0, 1], [2, 3]])
    np.testing.assert_array_equal(a[[1, 1, 0], [0, 1, 0]].asnumpy(), [2, 3, 0])
    np.testing.assert_array_equal(a[mx.nd.array([1, 1, 0]), mx.nd.array([0, 1, 0])].asnumpy(), [2, 3, 0])
    np.testing.assert_array_equal(a[mx.nd.array([1, 0], dtype="int64"), 1].asnumpy(), [3, 1])


@pytest.mark.parametrize("key,contiguous", [
    ((slice(1, 2), slice(1, 4), slice(None), slice(None)), True),
    ((2, slice(0, 3)), True),
    ((1, 2, 0, slice(2, 5)), True),
    ((slice(None), slice(1, 3)), False),
    ((slice(0, 1), slice(None), slice(None), slice(None, None, 2)), False),
    ((slice(0, 2), slice(None, None, -1)), False),
])
def test_basic_index_view_when_contiguous(key, contiguous):
    full = tuple(key) + (slice(None),) * (len(SHAPE) - len(key))
    slices = tuple(k if isinstance(k, slice) else slice(k, k + 1) for k in full)
    assert mx.nd.NDArray._basic_indexing_slice_is_contiguous(slices, SHAPE) == BASE[slices].flags.c_contiguous
    assert BASE[slices].flags.c_contiguous == contiguous
    x = mx.nd.array(BASE)
    part = x[key]
    np.testing.assert_array_equal(part.asnumpy(), BASE[key])
    part[:] = -1
    want = BASE.copy()
    if contiguous:
        want[key] = -1  # a view writes through
    np.testing.assert_array_equal(x.asnumpy(), want)


def test_contiguous_check_needs_one_slice_per_axis():
    with pytest.raises(ValueError, match="one slice per axis"):
        mx.nd.NDArray._basic_indexing_slice_is_contiguous((slice(None),), (2, 3))


@pytest.mark.parametrize("key", [0, (1, 2), (1, [2, 3]), (slice(None), None, 1), ([0, 2], slice(1, 3))])
def test_setitem_drops_leading_unit_axes_of_the_value(key):
    x = mx.nd.array(BASE)
    target = BASE[key].shape
    value = np.arange(int(np.prod(target)), dtype=np.float32).reshape((1, 1) + target)
    x[key] = mx.nd.array(value)
    want = BASE.copy()
    want[key] = value.reshape(target)
    np.testing.assert_array_equal(x.asnumpy(), want)
    x[key] = value
    np.testing.assert_array_equal(x.asnumpy(), want)


def test_setitem_single_element_from_a_one_element_list():
    x = mx.nd.array(BASE)
    x[1, 2, 0, 3] = [-7]
    want = BASE.copy()
    want[1, 2, 0, 3] = -7
    np.testing.assert_array_equal(x.asnumpy(), want)


@pytest.mark.parametrize("key", [0, slice(1, 3), (1, 2), ([0, 1],)])
def test_setitem_while_recording_is_refused(key):
    x = mx.nd.array(BASE)
    y = mx.nd.ones(BASE[key].shape)
    y.attach_grad()
    with autograd.record():
        with pytest.raises(mx.base.MXNetError, match="Inplace operations .* not supported when recording"):
            x[key] = y
    np.testing.assert_array_equal(x.asnumpy(), BASE)


# ---------------------------------------------------------------- other operators and creation
def test_broadcast_like_empty_axes_error():
    lhs, rhs = mx.nd.ones((1, 3)), mx.nd.ones((4, 3))
    assert mx.nd.broadcast_like(lhs, rhs, lhs_axes=(0,), rhs_axes=(0,)).shape == (4, 3)
    with pytest.raises(mx.base.MXNetError, match="at least one axis"):
        mx.nd.broadcast_like(lhs, rhs, lhs_axes=(), rhs_axes=())


@pytest.mark.parametrize("fn,value", [(mx.nd.ones, 1), (mx.nd.zeros, 0)])
def test_ones_zeros_write_into_out(fn, value):
    out = mx.nd.full((2, 3), 7, dtype="int32")
    res = fn((2, 3), out=out)
    np.testing.assert_array_equal(res.asnumpy(), out.asnumpy())
    assert out.dtype == np.int32
    np.testing.assert_array_equal(out.asnumpy(), np.full((2, 3), value))


def test_numpy_functions_take_ndarrays():
    a = mx.nd.array([50000001], dtype="int32")
    assert np.all(a == 50000001)
    assert not np.any(a == 3)
    np.testing.assert_array_equal(np.maximum(mx.nd.array([1, 5]), np.array([3, 2])), [3, 5])


def test_freed_history_is_a_constant_in_a_new_recording():
    w = mx.nd.array([2.0])
    w.attach_grad()
    with autograd.record():
        b = w * 3
        (b * w).backward()
    np.testing.assert_allclose(w.grad.asnumpy(), [12.0])  # d(3 w^2)/dw
    with autograd.record():
        c = (b + 1) * w  # b's history is gone: b counts as the constant 6
    c.backward()
    np.testing.assert_allclose(w.grad.asnumpy(), [7.0])
    # The freed graph itself still cannot run backward again.
    with pytest.raises(mx.base.MXNetError, match="freed by an earlier backward"):
        b.backward()


# ---------------------------------------------------------------- NaN, shapes, pickling
def test_relu_gradient_passes_nan():
    x = mx.nd.array([[-1.0, float("nan"), 2.0]])
    x.attach_grad()
    with autograd.record():
        y = mx.nd.relu(x)
    y.backward(mx.nd.array([[3.0, 3.0, 3.0]]))
    g = x.grad.asnumpy()
    assert g[0, 0] == 0 and g[0, 2] == 3
    assert np.isnan(g[0, 1])
    np.testing.assert_array_equal(np.isnan(y.asnumpy()), [[False, True, False]])


def test_where_infers_nothing_until_the_condition_is_known():
    cond, x, y = mx.sym.var("cond"), mx.sym.var("x"), mx.sym.var("y")
    w = mx.sym.where(cond, x, y)
    assert w.infer_shape_partial(cond=(0, 2), x=(0, 2), y=(0, 2))[1] == [()]
    assert w.infer_shape_partial(cond=(0,), x=(2, 2), y=(2, 2))[1] == [()]
    assert w.infer_shape_partial(cond=(2,), x=(2, 2), y=(0, 2))[1] == [(2, 2)]
    assert w.infer_shape(cond=(2, 2), x=(2, 2), y=(2, 2))[1] == [(2, 2)]


def test_getstate_setstate_round_trip_replaces_the_array():
    src = mx.nd.array(np.arange(6).reshape(2, 3), dtype="int32")
    state = src.__getstate__()
    assert set(state) == {"handle"} and isinstance(state["handle"], bytearray)
    dst = mx.nd.zeros((5,))
    dst.__setstate__(state)
    assert dst.shape == (2, 3) and dst.dtype == np.int32
    np.testing.assert_array_equal(dst.asnumpy(), src.asnumpy())
    assert (dst + 1).shape == (2, 3)  # the new shape, not a cached one
    with pytest.raises(TypeError, match="'handle'"):
        dst.__setstate__({"data": b""})


def test_setstate_of_a_gpu_array_without_gpus():
    if mx.context.num_gpus() > 0:
        pytest.skip("a GPU is present: the array would load there")
    state = mx.nd.arange(3).__getstate__()
    raw = bytearray(state["handle"])
    # MXNet's layout: magic, storage type, ndim, the int64 dim, then the context (device
    # type 1 = cpu, id 0) at byte 20; mark it as gpu(0).
    at = 4 + 4 + 4 + 8
    assert bytes(raw[at:at + 8]) == b"\x01\x00\x00\x00\x00\x00\x00\x00"
    raw[at:at + 4] = b"\x02\x00\x00\x00"
    arr = mx.nd.zeros((1,))
    arr.__setstate__({"handle": raw})
    assert arr.context == mx.cpu()
    np.testing.assert_array_equal(arr.asnumpy(), [0, 1, 2])
