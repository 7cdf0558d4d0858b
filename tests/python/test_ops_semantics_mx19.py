"""Operator behaviours MXNet 1.9 scripts rely on, each checked against NumPy: integer arange,
min/max of empty arrays, 1-D 'same' pooling, Deconvolution's target_shape over adj, ravel with
an unbounded first dimension, init ops with unknown dimensions, partial slice inference,
SoftmaxOutput's probability labels and multi_output normalisation, sparse values assigned to
dense arrays and LayerNorm's float32 gamma gradient."""
import numpy as np
import pytest

import weft as mx
from weft import nd
from weft.test_utils import assert_almost_equal, check_numeric_gradient

RNG = np.random.RandomState(7)


@pytest.mark.parametrize("dtype", ["int32", "uint8", "float32", "float64"])
def test_arange_converts_start_and_step_to_dtype(dtype):
    # MXNet's rule: the length comes from the float parameters, the values from start and
    # step converted to dtype first (NumPy agrees on the first case, not on the second: it
    # takes the step as int(start + step) - int(start) = 3).
    assert nd.arange(1.3, 456.6, 1.3, dtype="int32").asnumpy().tolist() == list(range(1, 352))
    for start, stop, step in [(1.3, 456.6, 1.3), (0.5, 20.0, 2.7), (5, 100, 4), (50, -50, -2)]:
        n = int(np.ceil((stop - start) / step))
        base = np.array([start, step]).astype(np.int64 if np.dtype(dtype).kind in "iu" else dtype).astype(np.float64)
        for repeat in (1, 3):
            # Integer values wrap on overflow (uint8: ..., 255, 0, 1, ...), as in MXNet.
            want = np.repeat((base[0] + np.arange(n) * base[1]).astype(np.int64).astype(dtype)
                             if np.dtype(dtype).kind in "iu" else (base[0] + np.arange(n) * base[1]).astype(dtype),
                             repeat)
            got = nd.arange(start, stop, step, repeat=repeat, dtype=dtype).asnumpy()
            assert got.dtype == np.dtype(dtype)
            assert_almost_equal(got, want, rtol=1e-6, atol=1e-5)


def test_min_max_of_zero_size_array_raise():
    empty = nd.array(np.zeros((5, 0), np.float32))
    for op in (nd.min, nd.max):
        with pytest.raises(mx.base.MXNetError, match=r"size should be > 0.*\(5,0\)"):
            op(empty).wait_to_read()
    # A reduction with an identity keeps working on empty input.
    assert nd.sum(empty, axis=1).asnumpy().tolist() == [0.0] * 5


def test_pooling_same_accepts_any_all_zero_pad():
    x = RNG.rand(2, 3, 11).astype(np.float32)
    out = nd.Pooling(nd.array(x), kernel=(2,), stride=(2,), pad=(0, 0, 0), pool_type="max",
                     pooling_convention="same").asnumpy()
    assert out.shape == (2, 3, 6)
    # 'same' pads (6 - 1) * 2 + 2 - 11 = 1 element, on the right, so the last window holds x[10].
    padded = np.concatenate([x, np.full((2, 3, 1), -np.inf, np.float32)], axis=2)
    assert_almost_equal(out, padded.reshape(2, 3, 6, 2).max(axis=3))
    with pytest.raises(mx.base.MXNetError, match=r"'same' does not take a pad"):
        nd.Pooling(nd.array(x), kernel=(2,), stride=(2,), pad=(0, 1, 0), pooling_convention="same")


def test_deconvolution_target_shape_overrides_adj():
    data = mx.sym.Variable("data")
    kw = dict(kernel=(3, 3), stride=(2, 2), pad=(99, 99), num_filter=5)
    sym = mx.sym.Deconvolution(data, adj=(101, 101), target_shape=(8, 8), **kw)
    _, outs, _ = sym.infer_shape(data=(2, 3, 4, 4))
    assert outs == [(2, 5, 8, 8)]
    # Without a target_shape, adj must still be smaller than the stride.
    with pytest.raises(mx.base.MXNetError, match=r"'adj' \(101,101\)"):
        mx.sym.Deconvolution(data, adj=(101, 101), **kw).infer_shape(data=(2, 3, 4, 4))


def test_ravel_and_unravel_with_unbounded_first_dimension():
    shape = (7, 4, 5)
    coords = np.stack([RNG.randint(0, 40, 50), RNG.randint(0, 4, 50), RNG.randint(0, 5, 50)])
    flat = np.ravel_multi_index(coords, (40, 4, 5))
    got = nd.ravel_multi_index(nd.array(coords), shape=(-1,) + shape[1:]).asnumpy()
    assert_almost_equal(got, flat)
    back = nd.unravel_index(nd.array(flat), shape=(-1,) + shape[1:]).asnumpy()
    assert_almost_equal(back, coords)
    with pytest.raises(mx.base.MXNetError, match=r"positive dimensions \(the first may be -1\)"):
        nd.ravel_multi_index(nd.array(coords), shape=(7, -1, 5))


def test_init_ops_with_unknown_dimensions_are_inferred():
    with mx.np_shape():
        unknown = mx.sym.ones(shape=(3, -1))
        total = mx.sym.ones(shape=(2, -1)) + mx.sym.transpose(unknown)
        exe = total.bind(mx.cpu(), args={})
        assert_almost_equal(exe.forward()[0], np.full((2, 3), 2.0, np.float32))
        assert mx.sym.zeros(shape=(-1, 4)).infer_shape_partial()[1] == [(-1, 4)]
    with pytest.raises(mx.base.MXNetError, match=r"negative dimension other than -1"):
        nd.ones(shape=(2, -3))


def test_slice_partial_shape_inference():
    data = mx.sym.var("data", shape=(0, 20))
    cases = [((None, None), (None, 10), (), (0, 10)), ((None, None), (None, 10), (None, 2), (0, 5)),
             ((2, 3), (None, 10), (3, 3), (0, 3)), ((None, 3), (5, 10), (), (0, 7))]
    for begin, end, step, want in cases:
        out = mx.sym.slice(data, begin=begin, end=end, step=step)
        assert out.infer_shape_partial()[1] == [want]
    assert mx.sym.slice_axis(mx.sym.var("d", shape=(10, 0)), axis=0, begin=0, end=5).infer_shape_partial()[1] == \
        [(5, 0)]
    with mx.np_shape():
        out = mx.sym.slice(mx.sym.var("data", shape=(-1, 20)), begin=(None, 3), end=(5, 10))
        assert out.infer_shape_partial()[1] == [(-1, 7)]


def _softmax(x, axis):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def test_softmax_output_probability_labels():
    x = RNG.uniform(-1, 1, (3, 4, 2)).astype(np.float32)
    label = _softmax(RNG.uniform(-1, 1, x.shape), -1).astype(np.float32)
    sym = mx.sym.SoftmaxOutput(mx.sym.Variable("X"), mx.sym.Variable("L"), preserve_shape=True, grad_scale=0.5)
    grad = nd.empty(x.shape)
    exe = sym.bind(mx.cpu(), args=[nd.array(x), nd.array(label)], args_grad={"X": grad})
    exe.forward(is_train=True)
    assert_almost_equal(exe.outputs[0], _softmax(x, -1), rtol=1e-5, atol=1e-6)
    exe.backward()
    assert_almost_equal(grad, (_softmax(x, -1) - label) * 0.5, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("normalization", ["null", "batch", "valid"])
@pytest.mark.parametrize("label_shape", ["nhw", "n1hw", "n_hw"])
def test_softmax_output_multi_output_normalization(normalization, label_shape):
    n, c, h, w = 4, 5, 2, 3
    x = RNG.uniform(-1, 1, (n, c, h, w)).astype(np.float32)
    lab = RNG.randint(0, c, (n, h, w)).astype(np.float32)
    lab[0, 0, 0] = 2  # at least one ignored label
    shaped = {"nhw": lab, "n1hw": lab.reshape(n, 1, h, w), "n_hw": lab.reshape(n, h * w)}[label_shape]
    data = nd.array(x)
    data.attach_grad()
    with mx.autograd.record():
        out = nd.SoftmaxOutput(data, nd.array(shaped), multi_output=True, use_ignore=True, ignore_label=2,
                               normalization=normalization, grad_scale=0.7)
    out.backward(nd.ones_like(out))
    prob = _softmax(x, 1)
    want = prob - np.eye(c, dtype=np.float32)[lab.astype(int)].transpose(0, 3, 1, 2)
    want *= (lab != 2)[:, None]
    count = {"null": h * w, "batch": n * h * w, "valid": max(1, int((lab != 2).sum()))}[normalization]
    assert_almost_equal(data.grad, want * 0.7 / count, rtol=1e-4, atol=1e-6)
    with pytest.raises(mx.base.MXNetError, match=r"label"):
        nd.SoftmaxOutput(data, nd.ones((n, h, w + 1)), multi_output=True)


def test_dense_array_takes_sparse_value():
    dense = nd.zeros((4, 5))
    value = np.zeros((4, 5), np.float32)
    value[1, 2], value[3, 0] = 2.5, -1.0
    dense[:] = nd.array(value).tostype("csr")
    assert_almost_equal(dense, value)
    dense[:] = nd.array(value * 2).tostype("row_sparse")
    assert_almost_equal(dense, value * 2)


def test_layer_norm_float32_gamma_gradient_accumulates_precisely():
    rows, cols = 4096, 64
    rs = np.random.RandomState(3)
    x = rs.normal(0, 1, (rows, cols)).astype(np.float32)
    gamma = rs.normal(0, 1, cols).astype(np.float32)
    dy = rs.normal(0, 1, (rows, cols)).astype(np.float32)
    data, g, b = nd.array(x), nd.array(gamma), nd.zeros(cols)
    for a in (data, g, b):
        a.attach_grad()
    with mx.autograd.record():
        out = nd.LayerNorm(data, g, b, axis=-1, eps=1e-3)
    out.backward(nd.array(dy))
    xd = x.astype(np.float64)
    xhat = (xd - xd.mean(axis=1, keepdims=True)) / np.sqrt(xd.var(axis=1, keepdims=True) + 1e-3)
    assert_almost_equal(g.grad, (xhat * dy).sum(axis=0), rtol=1e-5, atol=2e-5)
    assert_almost_equal(b.grad, dy.astype(np.float64).sum(axis=0), rtol=1e-5, atol=2e-5)
    check_numeric_gradient(mx.sym.LayerNorm(mx.sym.Variable("d"), mx.sym.Variable("g"), mx.sym.Variable("b")),
                           [rs.normal(0, 1, (3, 4)), rs.normal(0, 1, 4), rs.normal(0, 1, 4)],
                           numeric_eps=1e-3, rtol=1e-2, atol=1e-3)
