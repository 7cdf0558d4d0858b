"""The quantized layers (_contrib_quantized_conv, _fully_connected, _pooling, _flatten, _act)
against integer numpy references: exact int32 sums, requantized 8-bit outputs within one
unit, ranges by MXNet's rules, float equivalence through quantize_v2, and refusals."""
import numpy as np
import pytest

import weft as mx

I32 = 2147483647.0


def _step(dtype, lo, hi):
    levels = {"int8": 127.0, "uint8": 255.0, "int32": I32}[np.dtype(dtype).name]
    return max(abs(lo), abs(hi)) / levels


def _scalar(v):
    return mx.nd.array([v])


def _conv_ref(x, w, stride=(1, 1), pad=(0, 0), dilate=(1, 1), groups=1):
    """int64 NCHW convolution of integer arrays."""
    x = x.astype(np.int64)
    w = w.astype(np.int64)
    n, c, h, wd = x.shape
    f, cg, kh, kw = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (pad[0], pad[0]), (pad[1], pad[1])))
    oh = (h + 2 * pad[0] - dilate[0] * (kh - 1) - 1) // stride[0] + 1
    ow = (wd + 2 * pad[1] - dilate[1] * (kw - 1) - 1) // stride[1] + 1
    out = np.zeros((n, f, oh, ow), np.int64)
    fg = f // groups
    for i in range(kh):
        for j in range(kw):
            patch = xp[:, :, i * dilate[0]:i * dilate[0] + stride[0] * (oh - 1) + 1:stride[0],
                       j * dilate[1]:j * dilate[1] + stride[1] * (ow - 1) + 1:stride[1]]
            for g in range(groups):
                out[:, g * fg:(g + 1) * fg] += np.einsum("nchw,fc->nfhw", patch[:, g * cg:(g + 1) * cg],
                                                         w[g * fg:(g + 1) * fg, :, i, j])
    return out


def _rand_q(rng, shape, dtype):
    lo, hi = (-127, 128) if dtype == "int8" else (0, 256)
    return rng.randint(lo, hi, shape).astype(dtype)


def _bias32(b, rb, acc_step):
    return np.round(b.astype(np.float64) * (_step("int8", -rb, rb) / acc_step)).astype(np.int64)


CONV_CASES = [
    dict(kernel=(3, 3), pad=(1, 1)),
    dict(kernel=(3, 3), stride=(2, 2)),
    dict(kernel=(1, 1)),
    dict(kernel=(3, 3), pad=(2, 2), dilate=(2, 2)),
    dict(kernel=(3, 3), pad=(1, 1), num_group=2),
]


@pytest.mark.parametrize("dtype", ["int8", "uint8"])
@pytest.mark.parametrize("case", CONV_CASES)
@pytest.mark.parametrize("no_bias", [False, True])
def test_quantized_conv_int32_is_exact(dtype, case, no_bias):
    rng = np.random.RandomState(0)
    groups = case.get("num_group", 1)
    x = _rand_q(rng, (2, 8, 9, 7), dtype)
    w = _rand_q(rng, (16, 8 // groups, 3 if case["kernel"][0] == 3 else 1, case["kernel"][1]), "int8")
    b = _rand_q(rng, (16,), "int8")
    rd, rw, rb = 1.5, 0.25, 0.8
    lo_d = 0.0 if dtype == "uint8" else -rd
    args = [mx.nd.array(x, dtype=dtype), mx.nd.array(w, dtype="int8")]
    if not no_bias:
        args.append(mx.nd.array(b, dtype="int8"))
    args += [_scalar(lo_d), _scalar(rd), _scalar(-rw), _scalar(rw)]
    if not no_bias:
        args += [_scalar(-rb), _scalar(rb)]
    out, omin, omax = mx.nd.contrib.quantized_conv(*args, num_filter=16, no_bias=no_bias, **case)
    acc_step = _step(dtype, lo_d, rd) * _step("int8", -rw, rw)
    ref = _conv_ref(x, w, case.get("stride", (1, 1)), case.get("pad", (0, 0)), case.get("dilate", (1, 1)), groups)
    if not no_bias:
        ref += _bias32(b, rb, acc_step)[None, :, None, None]
    assert out.dtype == np.int32
    np.testing.assert_array_equal(out.asnumpy(), ref)
    np.testing.assert_allclose([omin.asscalar(), omax.asscalar()], [-acc_step * I32, acc_step * I32], rtol=1e-6)


@pytest.mark.parametrize("dtype", ["int8", "uint8"])
@pytest.mark.parametrize("relu", [False, True])
@pytest.mark.parametrize("calib", ["signed", "positive"])
def test_quantized_conv_fused_requantize(dtype, relu, calib):
    rng = np.random.RandomState(1)
    x = _rand_q(rng, (2, 16, 8, 8), dtype)
    w = _rand_q(rng, (32, 16, 3, 3), "int8")
    b = _rand_q(rng, (32,), "int8")
    lo_d, rd, rw, rb = (0.0 if dtype == "uint8" else -1.0), 1.0, 0.05, 2.0
    acc_step = _step(dtype, lo_d, rd) * _step("int8", -rw, rw)
    acc = _conv_ref(x, w, pad=(1, 1)) + _bias32(b, rb, acc_step)[None, :, None, None]
    real = acc * acc_step
    # A calibrated range inside the values' own, so that both ends saturate.
    lo, hi = (0.7 * real.min(), 0.7 * real.max()) if calib == "signed" else (0.0, 0.7 * real.max())
    out, omin, omax = mx.nd.contrib.quantized_conv(
        mx.nd.array(x, dtype=dtype), mx.nd.array(w, dtype="int8"), mx.nd.array(b, dtype="int8"), _scalar(lo_d),
        _scalar(rd), _scalar(-rw), _scalar(rw), _scalar(-rb), _scalar(rb), kernel=(3, 3), pad=(1, 1), num_filter=32,
        min_calib_range=lo, max_calib_range=hi, with_relu=relu)
    if relu:
        real = np.maximum(real, 0)
    u8 = relu or lo >= 0
    assert out.dtype == (np.uint8 if u8 else np.int8)
    r = max(abs(lo), abs(hi))
    want_range = (0.0, hi) if u8 else (-r, r)
    np.testing.assert_allclose([omin.asscalar(), omax.asscalar()], want_range, rtol=1e-6)
    out_step = _step(out.dtype, *want_range)
    expect = np.clip(np.round(real / out_step), 0 if u8 else -128, 255 if u8 else 127)
    got = out.asnumpy().astype(np.int64)
    assert np.abs(got - expect).max() <= 1
    assert got.max() == (255 if u8 else 127)
    if u8:
        assert got.min() == 0


@pytest.mark.parametrize("sum_dtype", ["int8", "uint8"])
@pytest.mark.parametrize("calib", [None, (-30.0, 30.0), (0.0, 30.0)])
def test_quantized_conv_fused_sum_and_relu(sum_dtype, calib):
    rng = np.random.RandomState(2)
    x = _rand_q(rng, (1, 16, 6, 6), "uint8")
    w = _rand_q(rng, (16, 16, 3, 3), "int8")
    s = _rand_q(rng, (1, 16, 6, 6), sum_dtype)
    rd, rw, rs = 2.0, 0.05, 10.0
    lo_s = 0.0 if sum_dtype == "uint8" else -rs
    kw = {} if calib is None else dict(min_calib_range=calib[0], max_calib_range=calib[1])
    out, omin, omax = mx.nd.contrib.quantized_conv(
        mx.nd.array(x, dtype="uint8"), mx.nd.array(w, dtype="int8"), _scalar(0.0), _scalar(rd), _scalar(-rw),
        _scalar(rw), mx.nd.array(s, dtype=sum_dtype), _scalar(lo_s), _scalar(rs), kernel=(3, 3), pad=(1, 1),
        num_filter=16, no_bias=True, with_sum=True, with_relu=True, **kw)
    acc_step = _step("uint8", 0, rd) * _step("int8", -rw, rw)
    real = np.maximum(_conv_ref(x, w, pad=(1, 1)) * acc_step + s * _step(sum_dtype, lo_s, rs), 0)
    if calib is None:
        assert out.dtype == np.int32
        expect = np.round(real / acc_step)
    else:
        assert out.dtype == np.uint8
        expect = np.clip(np.round(real / (calib[1] / 255.0)), 0, 255)
    lo, hi = omin.asscalar(), omax.asscalar()
    assert np.abs(out.asnumpy().astype(np.int64) - expect).max() <= 1
    back = out.asnumpy() * (_step(out.dtype, lo, hi))
    inside = real <= hi
    assert np.abs(back - real)[inside].max() <= _step(out.dtype, lo, hi)


def _quantize(a, out_type="int8"):
    if out_type == "uint8":
        return mx.nd.contrib.quantize_v2(mx.nd.array(a), out_type="uint8", min_calib_range=0.0,
                                         max_calib_range=float(a.max()))
    return mx.nd.contrib.quantize_v2(mx.nd.array(a), out_type="int8")


@pytest.mark.parametrize("data_type", ["int8", "uint8"])
def test_quantized_conv_matches_float_convolution(data_type):
    rng = np.random.RandomState(4)
    x = rng.uniform(-1 if data_type == "int8" else 0, 1, (2, 8, 10, 10)).astype(np.float32)
    w = rng.uniform(-0.3, 0.3, (12, 8, 3, 3)).astype(np.float32)
    b = rng.uniform(-0.5, 0.5, (12,)).astype(np.float32)
    ref = mx.nd.Convolution(mx.nd.array(x), mx.nd.array(w), mx.nd.array(b), kernel=(3, 3), pad=(1, 1),
                            num_filter=12).asnumpy()
    qx, qw, qb = _quantize(x, data_type), _quantize(w), _quantize(b)
    out = mx.nd.contrib.quantized_conv(qx[0], qw[0], qb[0], qx[1], qx[2], qw[1], qw[2], qb[1], qb[2], kernel=(3, 3),
                                       pad=(1, 1), num_filter=12)
    real = out[0].asnumpy() * (out[2].asscalar() / I32)
    # Each product carries at most half a step of data times |w| plus half a step of w times
    # |x|; 72 taps plus the bias's half step.
    sx, sw = _step(data_type, float(qx[1].asscalar()), float(qx[2].asscalar())), _step("int8", -0.3, 0.3)
    bound = 72 * (0.5 * sx * 0.3 + 0.5 * sw * 1.0 + 0.25 * sx * sw) + _step("int8", -0.5, 0.5)
    assert np.abs(real - ref).max() <= bound
    assert np.abs(real - ref).max() < 0.05 * np.abs(ref).max()
    # The fused requantization gives the same values within one output step.
    lo, hi = float(ref.min()), float(ref.max())
    fused = mx.nd.contrib.quantized_conv(qx[0], qw[0], qb[0], qx[1], qx[2], qw[1], qw[2], qb[1], qb[2],
                                         kernel=(3, 3), pad=(1, 1), num_filter=12, min_calib_range=lo,
                                         max_calib_range=hi)
    back = mx.nd.contrib.dequantize(*fused).asnumpy()
    r = max(abs(lo), abs(hi))
    inside = np.abs(real) <= r
    assert np.abs(back - real)[inside].max() <= _step("int8", lo, hi) * 0.5 + 1e-4
    assert np.all(np.abs(back[~inside]) == np.float32(r))


@pytest.mark.parametrize("dtype", ["int8", "uint8"])
@pytest.mark.parametrize("flatten", [True, False])
@pytest.mark.parametrize("no_bias", [False, True])
def test_quantized_fully_connected_int32_is_exact(dtype, flatten, no_bias):
    rng = np.random.RandomState(5)
    x = _rand_q(rng, (3, 4, 10), dtype)
    k = 40 if flatten else 10
    w = _rand_q(rng, (7, k), "int8")
    b = _rand_q(rng, (7,), "int8")
    lo_d, rd, rw, rb = (0.0 if dtype == "uint8" else -3.0), 3.0, 0.5, 1.0
    args = [mx.nd.array(x, dtype=dtype), mx.nd.array(w, dtype="int8")]
    if not no_bias:
        args.append(mx.nd.array(b, dtype="int8"))
    args += [_scalar(lo_d), _scalar(rd), _scalar(-rw), _scalar(rw)]
    if not no_bias:
        args += [_scalar(-rb), _scalar(rb)]
    out, omin, omax = mx.nd.contrib.quantized_fully_connected(*args, num_hidden=7, no_bias=no_bias, flatten=flatten)
    acc_step = _step(dtype, lo_d, rd) * _step("int8", -rw, rw)
    xs = x.reshape(3, 40) if flatten else x
    ref = xs.astype(np.int64) @ w.T.astype(np.int64)
    if not no_bias:
        ref += _bias32(b, rb, acc_step)
    assert out.dtype == np.int32 and out.shape == ((3, 7) if flatten else (3, 4, 7))
    np.testing.assert_array_equal(out.asnumpy(), ref)
    np.testing.assert_allclose(omax.asscalar(), acc_step * I32, rtol=1e-6)
    assert omin.asscalar() == -omax.asscalar()


@pytest.mark.parametrize("relu", [False, True])
def test_quantized_fully_connected_fused_and_float_equivalence(relu):
    rng = np.random.RandomState(6)
    x = rng.uniform(-1, 1, (5, 64)).astype(np.float32)
    w = rng.uniform(-0.2, 0.2, (10, 64)).astype(np.float32)
    b = rng.uniform(-0.1, 0.1, (10,)).astype(np.float32)
    ref = mx.nd.FullyConnected(mx.nd.array(x), mx.nd.array(w), mx.nd.array(b), num_hidden=10).asnumpy()
    if relu:
        ref = np.maximum(ref, 0)
    qx, qw, qb = _quantize(x), _quantize(w), _quantize(b)
    lo, hi = float(ref.min()), float(ref.max())
    out = mx.nd.contrib.quantized_fully_connected(qx[0], qw[0], qb[0], qx[1], qx[2], qw[1], qw[2], qb[1], qb[2],
                                                  num_hidden=10, min_calib_range=lo, max_calib_range=hi,
                                                  with_relu=relu)
    assert out[0].dtype == (np.uint8 if relu or lo >= 0 else np.int8)
    back = mx.nd.contrib.dequantize(*out).asnumpy()
    sx, sw = _step("int8", x.min(), x.max()), _step("int8", w.min(), w.max())
    bound = 64 * (0.5 * sx * 0.2 + 0.5 * sw + 0.25 * sx * sw) + _step("int8", b.min(), b.max()) + \
        _step(out[0].dtype, out[1].asscalar(), out[2].asscalar())
    assert np.abs(back - ref).max() <= bound


def _pool_ref(x, kernel, stride, pad, kind, convention="valid"):
    n, c, h, w = x.shape
    span_h, span_w = h + 2 * pad[0] - kernel[0], w + 2 * pad[1] - kernel[1]
    if convention == "full":
        oh, ow = -(-span_h // stride[0]) + 1, -(-span_w // stride[1]) + 1
    else:
        oh, ow = span_h // stride[0] + 1, span_w // stride[1] + 1
    out = np.zeros((n, c, oh, ow))
    for i in range(oh):
        for j in range(ow):
            h0, w0 = i * stride[0] - pad[0], j * stride[1] - pad[1]
            win = x[:, :, max(h0, 0):min(h0 + kernel[0], h), max(w0, 0):min(w0 + kernel[1], w)].astype(np.float64)
            if kind == "max":
                out[:, :, i, j] = win.max(axis=(2, 3))
            else:
                count = (min(h0 + kernel[0], h + pad[0]) - h0) * (min(w0 + kernel[1], w + pad[1]) - w0)
                out[:, :, i, j] = win.sum(axis=(2, 3)) / count
    return out


@pytest.mark.parametrize("dtype", ["int8", "uint8"])
@pytest.mark.parametrize("kind", ["max", "avg"])
@pytest.mark.parametrize("geom", [((2, 2), (2, 2), (0, 0), "valid"), ((3, 3), (2, 2), (1, 1), "valid"),
                                  ((3, 3), (2, 2), (0, 0), "full")])
def test_quantized_pooling(dtype, kind, geom):
    kernel, stride, pad, convention = geom
    rng = np.random.RandomState(7)
    x = _rand_q(rng, (2, 5, 9, 8), dtype)
    lo, hi = (0.0, 4.0) if dtype == "uint8" else (-4.0, 4.0)
    out, omin, omax = mx.nd.contrib.quantized_pooling(mx.nd.array(x, dtype=dtype), _scalar(lo), _scalar(hi),
                                                      kernel=kernel, stride=stride, pad=pad, pool_type=kind,
                                                      pooling_convention=convention)
    ref = _pool_ref(x, kernel, stride, pad, kind, convention)
    assert out.dtype == np.dtype(dtype)
    assert (omin.asscalar(), omax.asscalar()) == (lo, hi)
    if kind == "max":
        np.testing.assert_array_equal(out.asnumpy(), ref)
    else:
        assert np.abs(out.asnumpy() - ref).max() <= 0.5 + 1e-9


def test_quantized_global_pooling_flatten_and_act():
    rng = np.random.RandomState(8)
    x = _rand_q(rng, (2, 6, 5, 5), "int8")
    nd = mx.nd.array(x, dtype="int8")
    out = mx.nd.contrib.quantized_pooling(nd, _scalar(-2.0), _scalar(3.0), global_pool=True, pool_type="avg")
    assert out[0].shape == (2, 6, 1, 1)
    assert np.abs(out[0].asnumpy() - x.mean(axis=(2, 3), keepdims=True)).max() <= 0.5
    flat = mx.nd.contrib.quantized_flatten(nd, _scalar(-2.0), _scalar(3.0))
    assert flat[0].dtype == np.int8 and flat[0].shape == (2, 150)
    np.testing.assert_array_equal(flat[0].asnumpy(), x.reshape(2, 150))
    assert (flat[1].asscalar(), flat[2].asscalar()) == (-2.0, 3.0)
    act = mx.nd.contrib.quantized_act(nd, _scalar(-2.0), _scalar(3.0), act_type="relu")
    np.testing.assert_array_equal(act[0].asnumpy(), np.maximum(x, 0))
    assert (act[1].asscalar(), act[2].asscalar()) == (-2.0, 3.0)
    u = mx.nd.array(_rand_q(rng, (3, 4), "uint8"), dtype="uint8")
    act = mx.nd.contrib.quantized_act(u, _scalar(0.0), _scalar(1.0), act_type="relu")
    assert act[0].dtype == np.uint8
    np.testing.assert_array_equal(act[0].asnumpy(), u.asnumpy())


def test_quantized_symbols_infer_and_run():
    data = mx.sym.var("data")
    q = mx.sym.contrib.quantize_v2(data, out_type="int8", min_calib_range=-1.0, max_calib_range=1.0)
    conv = mx.sym.contrib.quantized_conv(q[0], mx.sym.var("weight"), q[1], q[2], mx.sym.var("wmin"),
                                         mx.sym.var("wmax"), kernel=(3, 3), num_filter=4, no_bias=True,
                                         min_calib_range=0.0, max_calib_range=2.0, with_relu=True, name="qc")
    pool = mx.sym.contrib.quantized_pooling(conv[0], conv[1], conv[2], kernel=(2, 2), stride=(2, 2))
    flat = mx.sym.contrib.quantized_flatten(pool[0], pool[1], pool[2])
    fc = mx.sym.contrib.quantized_fully_connected(flat[0], mx.sym.var("fcw"), flat[1], flat[2],
                                                  mx.sym.var("fmin"), mx.sym.var("fmax"), num_hidden=3,
                                                  no_bias=True)
    assert conv.list_arguments() == ["data", "weight", "wmin", "wmax"]
    assert conv.list_outputs() == ["qc_output", "qc_min_output", "qc_max_output"]
    arg_shapes, out_shapes, _ = fc.infer_shape(data=(2, 3, 8, 8))
    assert dict(zip(fc.list_arguments(), arg_shapes))["fcw"] == (3, 36)
    assert out_shapes == [(2, 3), (1,), (1,)]
    _, out_types, _ = fc.infer_type(data=np.float32)
    assert out_types == [np.int32, np.float32, np.float32]
    rng = np.random.RandomState(9)
    args = {"data": mx.nd.array(rng.uniform(-1, 1, (2, 3, 8, 8))),
            "weight": mx.nd.array(_rand_q(rng, (4, 3, 3, 3), "int8"), dtype="int8"),
            "wmin": _scalar(-1.0), "wmax": _scalar(1.0),
            "fcw": mx.nd.array(_rand_q(rng, (3, 36), "int8"), dtype="int8"), "fmin": _scalar(-1.0),
            "fmax": _scalar(1.0)}
    exe = fc.bind(mx.cpu(), args, grad_req="null")
    got = exe.forward()[0].asnumpy()
    imp = [mx.nd.contrib.quantize_v2(args["data"], min_calib_range=-1.0, max_calib_range=1.0)]
    c = mx.nd.contrib.quantized_conv(imp[0][0], args["weight"], imp[0][1], imp[0][2], args["wmin"], args["wmax"],
                                     kernel=(3, 3), num_filter=4, no_bias=True, min_calib_range=0.0,
                                     max_calib_range=2.0, with_relu=True)
    p = mx.nd.contrib.quantized_pooling(*c, kernel=(2, 2), stride=(2, 2))
    f = mx.nd.contrib.quantized_flatten(*p)
    want = mx.nd.contrib.quantized_fully_connected(f[0], args["fcw"], f[1], f[2], args["fmin"], args["fmax"],
                                                   num_hidden=3, no_bias=True)
    np.testing.assert_array_equal(got, want[0].asnumpy())


def test_quantized_layer_errors():
    x8 = mx.nd.zeros((1, 2, 5, 5), dtype="int8")
    w8 = mx.nd.zeros((4, 2, 3, 3), dtype="int8")
    one, zero = _scalar(1.0), _scalar(0.0)
    conv = dict(kernel=(3, 3), num_filter=4, no_bias=True)
    with pytest.raises(mx.base.MXNetError, match="input 'data' must be int8 or uint8.*float32"):
        mx.nd.contrib.quantized_conv(x8.astype("float32"), w8, zero, one, zero, one, **conv)
    with pytest.raises(mx.base.MXNetError, match="input 'weight' has dtype float32.*int8"):
        mx.nd.contrib.quantized_conv(x8, w8.astype("float32"), zero, one, zero, one, **conv)
    with pytest.raises(mx.base.MXNetError, match="expected 6 inputs"):
        mx.nd.contrib.quantized_conv(x8, w8, zero, one, **conv)
    with pytest.raises(mx.base.MXNetError, match="input 'min_data' has shape \\(2,\\)"):
        mx.nd.contrib.quantized_conv(x8, w8, mx.nd.zeros(2), one, zero, one, **conv)
    with pytest.raises(mx.base.MXNetError, match="input 'max_weight' has dtype int32"):
        mx.nd.contrib.quantized_conv(x8, w8, zero, one, zero, one.astype("int32"), **conv)
    with pytest.raises(mx.base.MXNetError, match="input 'weight' has shape \\(4,2,3,3\\).*\\(4,2,1,1\\)"):
        mx.nd.contrib.quantized_conv(x8, w8, zero, one, zero, one, kernel=(1, 1), num_filter=4, no_bias=True)
    with pytest.raises(mx.base.MXNetError, match="both min_calib_range and max_calib_range"):
        mx.nd.contrib.quantized_conv(x8, w8, zero, one, zero, one, min_calib_range=0.0, **conv)
    with pytest.raises(mx.base.MXNetError, match="input 'sum' has shape"):
        mx.nd.contrib.quantized_conv(x8, w8, zero, one, zero, one, mx.nd.zeros((1, 4, 2, 2), dtype="int8"), zero,
                                     one, with_sum=True, **conv)
    with pytest.raises(mx.base.MXNetError, match="input 'sum' must be int8 or uint8"):
        mx.nd.contrib.quantized_conv(x8, w8, zero, one, zero, one, mx.nd.zeros((1, 4, 3, 3)), zero, one,
                                     with_sum=True, **conv)
    with pytest.raises(mx.base.MXNetError, match="input 'data' must be int8 or uint8.*int32"):
        mx.nd.contrib.quantized_fully_connected(mx.nd.zeros((2, 3), dtype="int32"), mx.nd.zeros((4, 3), dtype="int8"),
                                                zero, one, zero, one, num_hidden=4, no_bias=True)
    with pytest.raises(mx.base.MXNetError, match="input 'weight' has shape \\(4,5\\).*\\(4,3\\)"):
        mx.nd.contrib.quantized_fully_connected(mx.nd.zeros((2, 3), dtype="int8"), mx.nd.zeros((4, 5), dtype="int8"),
                                                zero, one, zero, one, num_hidden=4, no_bias=True)
    with pytest.raises(mx.base.MXNetError, match="pool_type 'max' and 'avg'"):
        mx.nd.contrib.quantized_pooling(x8, zero, one, kernel=(2, 2), pool_type="sum")
    with pytest.raises(mx.base.MXNetError, match="input 'data' must be int8 or uint8"):
        mx.nd.contrib.quantized_pooling(x8.astype("float32"), zero, one, kernel=(2, 2))
    with pytest.raises(mx.base.MXNetError, match="act_type 'relu'"):
        mx.nd.contrib.quantized_act(x8, zero, one, act_type="tanh")
    with pytest.raises(mx.base.MXNetError, match="input 'max_data' has shape"):
        mx.nd.contrib.quantized_flatten(x8, zero, mx.nd.ones((1, 1)))


@pytest.mark.parametrize("out_type", ["int8", "uint8"])
def test_quantize_v1_takes_its_range_from_inputs(out_type):
    x = np.random.RandomState(10).uniform(-0.5, 2.0, (4, 5)).astype(np.float32)
    lo, hi = (-1.0, 2.5) if out_type == "int8" else (0.0, 2.5)
    q = mx.nd.contrib.quantize(mx.nd.array(x), _scalar(lo), _scalar(hi), out_type=out_type)
    v2 = mx.nd.contrib.quantize_v2(mx.nd.array(x), out_type=out_type, min_calib_range=lo, max_calib_range=hi)
    assert q[0].dtype == np.dtype(out_type)
    np.testing.assert_array_equal(q[0].asnumpy(), v2[0].asnumpy())
    assert (q[1].asscalar(), q[2].asscalar()) == (v2[1].asscalar(), v2[2].asscalar())
    assert mx.nd.contrib.quantize(mx.nd.array(x), _scalar(lo), _scalar(hi))[0].dtype == np.uint8  # MXNet's default
    with pytest.raises(mx.base.MXNetError, match="min_range <= max_range"):
        mx.nd.contrib.quantize(mx.nd.array(x), _scalar(1.0), _scalar(0.0))[0].wait_to_read()
    with pytest.raises(mx.base.MXNetError, match="float32 data"):
        mx.nd.contrib.quantize(mx.nd.array(x, dtype="float64"), _scalar(lo), _scalar(hi))


def test_quantized_concat_rescales_to_the_widest_range():
    rng = np.random.RandomState(11)
    a = _rand_q(rng, (2, 3, 4), "int8")
    b = _rand_q(rng, (2, 2, 4), "uint8")
    c = _rand_q(rng, (2, 1, 4), "int8")
    out, lo, hi = mx.nd.contrib.quantized_concat(
        mx.nd.array(a, dtype="int8"), mx.nd.array(b, dtype="uint8"), mx.nd.array(c, dtype="int8"),
        _scalar(-2.0), _scalar(2.0), _scalar(0.0), _scalar(3.0), _scalar(-3.0), _scalar(0.5), num_args=3, dim=1)
    assert out.dtype == np.int8 and out.shape == (2, 6, 4)
    assert (lo.asscalar(), hi.asscalar()) == (-3.0, 3.0)
    so = 3.0 / 127
    expect = np.concatenate([np.round(a * (2.0 / 127) / so), np.round(b * (3.0 / 255) / so),
                             np.round(c * (3.0 / 127) / so)], axis=1)
    assert np.abs(out.asnumpy() - expect).max() <= 1
    # Every value keeps its float meaning within one output step.
    real = np.concatenate([a * 2.0 / 127, b * 3.0 / 255, c * 3.0 / 127], axis=1)
    assert np.abs(out.asnumpy() * so - real).max() <= so
    u = mx.nd.contrib.quantized_concat(mx.nd.array(b, dtype="uint8"), mx.nd.array(b, dtype="uint8"), _scalar(0.0),
                                       _scalar(3.0), _scalar(0.0), _scalar(6.0), num_args=2, dim=-1)
    assert u[0].dtype == np.uint8 and u[0].shape == (2, 2, 8)
    np.testing.assert_array_equal(u[0].asnumpy(), np.concatenate([np.round(b / 2.0), b], axis=-1))
    sym = mx.sym.contrib.quantized_concat(*[mx.sym.var(n) for n in ("x", "y", "xl", "xh", "yl", "yh")], num_args=2,
                                          dim=1)
    assert sym.list_arguments() == ["x", "y", "xl", "xh", "yl", "yh"]
    with pytest.raises(mx.base.MXNetError, match="input 1 has shape"):
        mx.nd.contrib.quantized_concat(mx.nd.array(a, dtype="int8"), mx.nd.array(b[:, :, :2], dtype="uint8"),
                                       _scalar(-1.0), _scalar(1.0), _scalar(0.0), _scalar(1.0), num_args=2)
    with pytest.raises(mx.base.MXNetError, match="must be int8 or uint8"):
        mx.nd.contrib.quantized_concat(mx.nd.array(a), mx.nd.array(a, dtype="int8"), _scalar(-1.0), _scalar(1.0),
                                       _scalar(-1.0), _scalar(1.0), num_args=2)
    with pytest.raises(mx.base.MXNetError, match="expected 6 inputs"):
        mx.nd.contrib.quantized_concat(mx.nd.array(a, dtype="int8"), _scalar(-1.0), _scalar(1.0), num_args=2)


@pytest.mark.parametrize("types", [("int8", "int8"), ("int8", "uint8"), ("uint8", "uint8")])
@pytest.mark.parametrize("calib", [None, (-2.0, 2.5)])
def test_quantized_elemwise_add(types, calib):
    rng = np.random.RandomState(12)
    a, b = _rand_q(rng, (3, 7), types[0]), _rand_q(rng, (3, 7), types[1])
    ra = (-1.0, 1.0) if types[0] == "int8" else (0.0, 1.0)
    rb = (-1.5, 1.5) if types[1] == "int8" else (0.0, 1.5)
    kw = {} if calib is None else dict(min_calib_range=calib[0], max_calib_range=calib[1])
    out, lo, hi = mx.nd.contrib.quantized_elemwise_add(
        mx.nd.array(a, dtype=types[0]), mx.nd.array(b, dtype=types[1]), _scalar(ra[0]), _scalar(ra[1]),
        _scalar(rb[0]), _scalar(rb[1]), **kw)
    real = a * _step(types[0], *ra) + b * _step(types[1], *rb)
    if calib is None:
        assert out.dtype == np.int32
        assert (lo.asscalar(), hi.asscalar()) == (-2.5, 2.5)
    else:
        t = types[0] if types[0] == types[1] else "int8"
        assert out.dtype == np.dtype(t)
        want = (0.0, 2.5) if t == "uint8" else (-2.5, 2.5)
        assert (lo.asscalar(), hi.asscalar()) == want
    step = _step(out.dtype, lo.asscalar(), hi.asscalar())
    lim = {"int32": (-I32 - 1, I32), "int8": (-128, 127), "uint8": (0, 255)}[np.dtype(out.dtype).name]
    expect = np.clip(np.round(real / step), *lim)
    assert np.abs(out.asnumpy().astype(np.float64) - expect).max() <= 1


@pytest.mark.parametrize("mode", ["int32", "calib", "float"])
def test_quantized_elemwise_mul(mode):
    rng = np.random.RandomState(13)
    a, b = _rand_q(rng, (4, 5), "int8"), _rand_q(rng, (4, 5), "int8")
    sa, sb = _step("int8", -2.0, 2.0), _step("int8", -0.5, 0.5)
    kw = {"int32": {}, "calib": dict(min_calib_range=-0.5, max_calib_range=0.5),
          "float": dict(enable_float_output=True)}[mode]
    res = mx.nd.contrib.quantized_elemwise_mul(mx.nd.array(a, dtype="int8"), mx.nd.array(b, dtype="int8"),
                                               _scalar(-2.0), _scalar(2.0), _scalar(-0.5), _scalar(0.5), **kw)
    prod = a.astype(np.int64) * b
    if mode == "float":
        assert not isinstance(res, (list, tuple)) or len(res) == 1
        out = res if not isinstance(res, (list, tuple)) else res[0]
        assert out.dtype == np.float32
        np.testing.assert_allclose(out.asnumpy(), prod * sa * sb, rtol=1e-6)
        return
    out, lo, hi = res
    if mode == "int32":
        assert out.dtype == np.int32
        np.testing.assert_array_equal(out.asnumpy(), prod)
        np.testing.assert_allclose(hi.asscalar(), sa * sb * I32, rtol=1e-6)
    else:
        assert out.dtype == np.int8 and (lo.asscalar(), hi.asscalar()) == (-0.5, 0.5)
        expect = np.clip(np.round(prod * sa * sb / (0.5 / 127)), -128, 127)
        assert np.abs(out.asnumpy() - expect).max() <= 1
    with pytest.raises(mx.base.MXNetError, match="input 'rhs' must be int8"):
        mx.nd.contrib.quantized_elemwise_mul(mx.nd.array(a, dtype="int8"), mx.nd.array(b + 127, dtype="uint8"),
                                             _scalar(-1.0), _scalar(1.0), _scalar(0.0), _scalar(1.0))
    with pytest.raises(mx.base.MXNetError, match="same shape"):
        mx.nd.contrib.quantized_elemwise_mul(mx.nd.array(a, dtype="int8"), mx.nd.array(b[:2], dtype="int8"),
                                             _scalar(-1.0), _scalar(1.0), _scalar(-1.0), _scalar(1.0))


@pytest.mark.parametrize("dtype", ["int8", "uint8"])
@pytest.mark.parametrize("fix_gamma", [True, False])
def test_quantized_batch_norm(dtype, fix_gamma):
    rng = np.random.RandomState(14)
    x = _rand_q(rng, (2, 4, 3, 5), dtype)
    lo_d, rd = (0.0 if dtype == "uint8" else -2.0), 2.0
    gamma, beta = rng.uniform(0.5, 2, 4), rng.uniform(-1, 1, 4)
    mean, var = rng.uniform(-0.5, 0.5, 4), rng.uniform(0.5, 2, 4)
    f32 = [mx.nd.array(a) for a in (gamma, beta, mean, var)]
    out, lo, hi = mx.nd.contrib.quantized_batch_norm(mx.nd.array(x, dtype=dtype), *f32, _scalar(lo_d), _scalar(rd),
                                                     eps=1e-3, fix_gamma=fix_gamma, min_calib_range=-3.0,
                                                     max_calib_range=4.0)
    xf = x * _step(dtype, lo_d, rd)
    g = np.ones(4) if fix_gamma else gamma
    real = (xf - mean[None, :, None, None]) / np.sqrt(var + 1e-3)[None, :, None, None] * g[None, :, None, None] + \
        beta[None, :, None, None]
    # The float BatchNorm on the dequantized data agrees.
    ref = mx.nd.BatchNorm(mx.nd.array(xf), *f32, eps=1e-3, fix_gamma=fix_gamma, use_global_stats=True).asnumpy()
    np.testing.assert_allclose(real, ref, rtol=1e-4, atol=1e-5)
    assert out.dtype == np.int8 and (lo.asscalar(), hi.asscalar()) == (-4.0, 4.0)
    expect = np.clip(np.round(real / (4.0 / 127)), -128, 127)
    assert np.abs(out.asnumpy() - expect).max() <= 1
    with pytest.raises(mx.base.MXNetError, match="needs min_calib_range and max_calib_range"):
        mx.nd.contrib.quantized_batch_norm(mx.nd.array(x, dtype=dtype), *f32, _scalar(lo_d), _scalar(rd))
    with pytest.raises(mx.base.MXNetError, match="input 'gamma' has shape \\(3,\\)"):
        mx.nd.contrib.quantized_batch_norm(mx.nd.array(x, dtype=dtype), mx.nd.ones(3), *f32[1:], _scalar(lo_d),
                                           _scalar(rd), min_calib_range=-1.0, max_calib_range=1.0)


def test_quantized_embedding():
    rng = np.random.RandomState(15)
    w = _rand_q(rng, (6, 4), "int8")
    idx = np.array([[0, 5, 2], [7, -1, 3.7]], dtype=np.float32)
    out, lo, hi = mx.nd.contrib.quantized_embedding(mx.nd.array(idx), mx.nd.array(w, dtype="int8"), _scalar(-0.3),
                                                    _scalar(0.3), input_dim=6, output_dim=4)
    assert out.dtype == np.int8 and out.shape == (2, 3, 4)
    rows = np.clip(idx.astype(np.int64), 0, 5)
    np.testing.assert_array_equal(out.asnumpy(), w[rows])
    assert (lo.asscalar(), hi.asscalar()) == (np.float32(-0.3), np.float32(0.3))
    ints = mx.nd.contrib.quantized_embedding(mx.nd.array([1, 4], dtype="int32"), mx.nd.array(w, dtype="int8"),
                                             _scalar(-0.3), _scalar(0.3), input_dim=6, output_dim=4)
    np.testing.assert_array_equal(ints[0].asnumpy(), w[[1, 4]])
    with pytest.raises(mx.base.MXNetError, match="input 'weight' has shape \\(6,4\\).*\\(5,4\\)"):
        mx.nd.contrib.quantized_embedding(mx.nd.array(idx), mx.nd.array(w, dtype="int8"), _scalar(-1.0),
                                          _scalar(1.0), input_dim=5, output_dim=4)
    with pytest.raises(mx.base.MXNetError, match="input 'weight' has dtype float32"):
        mx.nd.contrib.quantized_embedding(mx.nd.array(idx), mx.nd.array(w), _scalar(-1.0), _scalar(1.0),
                                          input_dim=6, output_dim=4)


@pytest.mark.parametrize("calib", [None, (-1.0, 3.0)])
def test_quantize_asym(calib):
    x = np.random.RandomState(16).uniform(-1.5, 3.5, (3, 6)).astype(np.float32)
    kw = {} if calib is None else dict(min_calib_range=calib[0], max_calib_range=calib[1])
    q, scale, shift = mx.nd.contrib.quantize_asym(mx.nd.array(x), **kw)
    lo, hi = calib if calib else (x.min(), x.max())
    s = np.float32(255.0) / (np.float32(hi) - np.float32(lo))
    sh = np.float32(255.0) - np.float32(hi) * s
    np.testing.assert_allclose([scale.asscalar(), shift.asscalar()], [s, sh], rtol=1e-6)
    assert q.dtype == np.uint8
    expect = np.floor(np.clip(x * s + sh + np.float32(0.5), 0, 255))
    assert np.abs(q.asnumpy().astype(np.int64) - expect).max() <= 1 and (q.asnumpy() == expect).mean() > 0.95
    # (q - shift) / scale gives the data back within half a step where it is inside the range.
    back = (q.asnumpy() - shift.asscalar()) / scale.asscalar()
    inside = (x >= lo) & (x <= hi)
    assert np.abs(back - x)[inside].max() <= 0.5 / s + 1e-5
    i8 = mx.nd.contrib.quantize_asym(mx.nd.array([[-128, -1, 0, 127]], dtype="int8"))
    np.testing.assert_array_equal(i8[0].asnumpy(), [[0, 127, 128, 255]])
    assert (i8[1].asscalar(), i8[2].asscalar()) == (1.0, 128.0)
    u8 = mx.nd.contrib.quantize_asym(mx.nd.array([[3, 250]], dtype="uint8"))
    np.testing.assert_array_equal(u8[0].asnumpy(), [[3, 250]])
    assert (u8[1].asscalar(), u8[2].asscalar()) == (1.0, 0.0)
    with pytest.raises(mx.base.MXNetError, match="float32, int8 or uint8 data"):
        mx.nd.contrib.quantize_asym(mx.nd.array(x, dtype="float64"))
    with pytest.raises(mx.base.MXNetError, match="both min_calib_range and max_calib_range"):
        mx.nd.contrib.quantize_asym(mx.nd.array(x), min_calib_range=0.0)


def test_quantized_conv_1d_matches_2d_and_json_round_trip():
    rng = np.random.RandomState(17)
    x = _rand_q(rng, (2, 4, 11), "int8")
    w = _rand_q(rng, (6, 4, 3), "int8")
    r = [_scalar(-1.0), _scalar(1.0), _scalar(-0.5), _scalar(0.5)]
    one_d = mx.nd.contrib.quantized_conv(mx.nd.array(x, dtype="int8"), mx.nd.array(w, dtype="int8"), *r,
                                         kernel=(3,), pad=(1,), num_filter=6, no_bias=True)
    two_d = mx.nd.contrib.quantized_conv(mx.nd.array(x[:, :, None, :], dtype="int8"),
                                         mx.nd.array(w[:, :, None, :], dtype="int8"), *r, kernel=(1, 3),
                                         pad=(0, 1), num_filter=6, no_bias=True)
    np.testing.assert_array_equal(one_d[0].asnumpy(), two_d[0].asnumpy()[:, :, 0, :])
    np.testing.assert_array_equal(one_d[0].asnumpy(), _conv_ref(x[:, :, None, :], w[:, :, None, :],
                                                                 pad=(0, 1))[:, :, 0, :])
    sym = mx.sym.contrib.quantized_conv(*[mx.sym.var(n) for n in ("d", "w", "dl", "dh", "wl", "wh", "s", "sl", "sh")],
                                        kernel=(3, 3), num_filter=8, no_bias=True, with_sum=True, with_relu=True,
                                        min_calib_range=0.0, max_calib_range=4.5, name="qc")
    back = mx.sym.load_json(sym.tojson())
    assert back.list_arguments() == ["d", "w", "dl", "dh", "wl", "wh", "s", "sl", "sh"]
    attrs = back.attr_dict()["qc"]
    assert attrs["with_sum"] in ("True", "true", "1") and float(attrs["max_calib_range"]) == 4.5
    _, out_types, _ = back.infer_type(d=np.uint8, s=np.int8)
    assert out_types[0] == np.uint8


def test_quantized_conv_and_fc_float_output():
    rng = np.random.RandomState(18)
    x = _rand_q(rng, (1, 8, 6, 6), "uint8")
    w = _rand_q(rng, (8, 8, 3, 3), "int8")
    b = _rand_q(rng, (8,), "int8")
    s = _rand_q(rng, (1, 8, 6, 6), "int8")
    rd, rw, rb, rs = 2.0, 0.1, 0.5, 3.0
    res = mx.nd.contrib.quantized_conv(
        mx.nd.array(x, dtype="uint8"), mx.nd.array(w, dtype="int8"), mx.nd.array(b, dtype="int8"), _scalar(0.0),
        _scalar(rd), _scalar(-rw), _scalar(rw), _scalar(-rb), _scalar(rb), mx.nd.array(s, dtype="int8"),
        _scalar(-rs), _scalar(rs), kernel=(3, 3), pad=(1, 1), num_filter=8, with_sum=True, with_relu=True,
        enable_float_output=True)
    out = res if not isinstance(res, (list, tuple)) else res[0]
    assert out.dtype == np.float32
    acc_step = _step("uint8", 0, rd) * _step("int8", -rw, rw)
    acc = _conv_ref(x, w, pad=(1, 1)) + _bias32(b, rb, acc_step)[None, :, None, None]
    real = np.maximum(acc * acc_step + s * _step("int8", -rs, rs), 0)
    np.testing.assert_allclose(out.asnumpy(), real, rtol=1e-5, atol=1e-6)
    fx = _rand_q(rng, (4, 20), "int8")
    fw = _rand_q(rng, (3, 20), "int8")
    fres = mx.nd.contrib.quantized_fully_connected(mx.nd.array(fx, dtype="int8"), mx.nd.array(fw, dtype="int8"),
                                                   _scalar(-1.0), _scalar(1.0), _scalar(-rw), _scalar(rw),
                                                   num_hidden=3, no_bias=True, enable_float_output=True)
    fout = fres if not isinstance(fres, (list, tuple)) else fres[0]
    f_step = _step("int8", -1, 1) * _step("int8", -rw, rw)
    np.testing.assert_allclose(fout.asnumpy(), (fx.astype(np.int64) @ fw.T) * f_step, rtol=1e-5)
    sym = mx.sym.contrib.quantized_fully_connected(*[mx.sym.var(n) for n in ("d", "w", "a", "b", "c", "e")],
                                                   num_hidden=3, no_bias=True, enable_float_output=True, name="f")
    assert sym.list_outputs() == ["f_output"]
    with pytest.raises(mx.base.MXNetError, match="enable_float_output and min_calib_range"):
        mx.nd.contrib.quantized_fully_connected(mx.nd.array(fx, dtype="int8"), mx.nd.array(fw, dtype="int8"),
                                                _scalar(-1.0), _scalar(1.0), _scalar(-rw), _scalar(rw), num_hidden=3,
                                                no_bias=True, enable_float_output=True, min_calib_range=-1.0,
                                                max_calib_range=1.0)


# ------------------------------------------------------------------ weights kept in oneDNN's layout

def _conv_args(x, w, b, rd, rw, rb, dtype="uint8"):
    return [mx.nd.array(x, dtype=dtype), mx.nd.array(w, dtype="int8"), mx.nd.array(b, dtype="int8"),
            _scalar(0.0 if dtype == "uint8" else -rd), _scalar(rd), _scalar(-rw), _scalar(rw), _scalar(-rb),
            _scalar(rb)]


def test_quantized_conv_sees_weights_written_in_place():
    """The product keeps its weights in oneDNN's layout between calls; a write to the weight
    array (in place, same memory) must be seen at the next call, imperatively and through an
    executor."""
    rng = np.random.RandomState(30)
    x = _rand_q(rng, (2, 16, 7, 7), "uint8")
    w1, w2 = _rand_q(rng, (32, 16, 3, 3), "int8"), _rand_q(rng, (32, 16, 3, 3), "int8")
    b = _rand_q(rng, (32,), "int8")
    rd, rw, rb = 2.0, 0.1, 0.5
    acc_step = _step("uint8", 0, rd) * _step("int8", -rw, rw)

    def ref(w):
        return _conv_ref(x, w, pad=(1, 1)) + _bias32(b, rb, acc_step)[None, :, None, None]

    args = _conv_args(x, w1, b, rd, rw, rb)
    kw = dict(kernel=(3, 3), pad=(1, 1), num_filter=32)
    for _ in range(2):
        np.testing.assert_array_equal(mx.nd.contrib.quantized_conv(*args, **kw)[0].asnumpy(), ref(w1))
    args[1][:] = mx.nd.array(w2, dtype="int8")
    np.testing.assert_array_equal(mx.nd.contrib.quantized_conv(*args, **kw)[0].asnumpy(), ref(w2))
    args[1][0, 0, 0, 0] = int(-w2[0, 0, 0, 0]) if w2[0, 0, 0, 0] != -128 else 0
    w3 = args[1].asnumpy()
    np.testing.assert_array_equal(mx.nd.contrib.quantized_conv(*args, **kw)[0].asnumpy(), ref(w3))

    names = ["data", "weight", "bias", "min_data", "max_data", "min_weight", "max_weight", "min_bias", "max_bias"]
    sym = mx.sym.contrib.quantized_conv(*[mx.sym.var(n) for n in names], name="q", **kw)[0]
    exe = sym.bind(mx.cpu(), dict(zip(names, _conv_args(x, w1, b, rd, rw, rb))))
    np.testing.assert_array_equal(exe.forward(is_train=False)[0].asnumpy(), ref(w1))
    exe.arg_dict["weight"][:] = mx.nd.array(w2, dtype="int8")
    np.testing.assert_array_equal(exe.forward(is_train=False)[0].asnumpy(), ref(w2))
    # A new weight array (the old one freed) is not taken for the old one.
    exe = sym.bind(mx.cpu(), dict(zip(names, _conv_args(x, w1, b, rd, rw, rb))))
    np.testing.assert_array_equal(exe.forward(is_train=False)[0].asnumpy(), ref(w1))


def test_quantized_fully_connected_sees_weights_written_in_place():
    rng = np.random.RandomState(31)
    x = _rand_q(rng, (8, 64), "int8")
    w1, w2 = _rand_q(rng, (48, 64), "int8"), _rand_q(rng, (48, 64), "int8")
    args = [mx.nd.array(x, dtype="int8"), mx.nd.array(w1, dtype="int8"), _scalar(-1.0), _scalar(1.0),
            _scalar(-0.5), _scalar(0.5)]
    for w in (w1, w1, w2):
        args[1][:] = mx.nd.array(w, dtype="int8")
        out = mx.nd.contrib.quantized_fully_connected(*args, num_hidden=48, no_bias=True)[0]
        np.testing.assert_array_equal(out.asnumpy(), x.astype(np.int64) @ w.T.astype(np.int64))


# ------------------------------------------------------------------ channel-wise weight ranges

def _channel_ranges(rng, n):
    """Per-channel weight ranges spread over three orders of magnitude, one of them 0."""
    r = 10.0 ** rng.uniform(-3, 0, n)
    r[1] = 0.0
    return r


@pytest.mark.parametrize("dtype", ["int8", "uint8"])
@pytest.mark.parametrize("out", ["int32", "calibrated", "float"])
def test_quantized_conv_channel_wise_matches_numpy(dtype, out):
    rng = np.random.RandomState(32)
    f = 24
    x = _rand_q(rng, (2, 8, 6, 6), dtype)
    w = _rand_q(rng, (f, 8, 3, 3), "int8")
    b = _rand_q(rng, (f,), "int8")
    rd, rb = 1.5, 0.3
    rw = _channel_ranges(rng, f)
    lo_d = 0.0 if dtype == "uint8" else -rd
    steps = _step(dtype, lo_d, rd) * rw / 127.0
    acc = _conv_ref(x, w, pad=(1, 1))
    bias = np.array([np.round(b[c] * _step("int8", -rb, rb) / steps[c]) if steps[c] > 0 else 0 for c in range(f)])
    acc = acc + bias.astype(np.int64)[None, :, None, None]
    real = acc * steps[None, :, None, None]
    kw = dict(kernel=(3, 3), pad=(1, 1), num_filter=f, channel_wise=True)
    if out == "calibrated":
        kw.update(min_calib_range=float(real.min()) * 0.8, max_calib_range=float(real.max()) * 0.8)
    if out == "float":
        kw.update(enable_float_output=True)
    res = mx.nd.contrib.quantized_conv(
        mx.nd.array(x, dtype=dtype), mx.nd.array(w, dtype="int8"), mx.nd.array(b, dtype="int8"), _scalar(lo_d),
        _scalar(rd), mx.nd.array(-rw), mx.nd.array(rw), _scalar(-rb), _scalar(rb), **kw)
    if out == "float":
        got = res if not isinstance(res, (list, tuple)) else res[0]
        np.testing.assert_allclose(got.asnumpy(), real, rtol=1e-5, atol=1e-9)
        return
    got, lo, hi = (r.asnumpy() for r in res)
    if out == "int32":
        # Written in the widest channel's step; its range says so.
        top = steps.max()
        np.testing.assert_allclose([lo[0], hi[0]], [-top * I32, top * I32], rtol=1e-6)
        expect = np.round(acc * (steps / top)[None, :, None, None])
        assert got.dtype == np.int32
    else:
        r = max(abs(kw["min_calib_range"]), abs(kw["max_calib_range"]))
        np.testing.assert_allclose([lo[0], hi[0]], [-r, r], rtol=1e-6)
        expect = np.clip(np.round(real / (r / 127.0)), -128, 127)
        assert got.dtype == np.int8
    assert np.abs(got.astype(np.int64) - expect).max() <= 1
    assert (got[:, 1] == 0).all()  # the all-zero channel


@pytest.mark.parametrize("flatten", [True, False])
def test_quantized_fully_connected_channel_wise_matches_numpy(flatten):
    rng = np.random.RandomState(33)
    n = 12
    x = _rand_q(rng, (3, 2, 16), "uint8")
    k = 32 if flatten else 16
    w = _rand_q(rng, (n, k), "int8")
    b = _rand_q(rng, (n,), "int8")
    rw = _channel_ranges(rng, n)
    steps = _step("uint8", 0, 4.0) * rw / 127.0
    xs = x.reshape(3, 32) if flatten else x
    acc = xs.astype(np.int64) @ w.T.astype(np.int64)
    acc = acc + np.array([np.round(b[c] * _step("int8", -1, 1) / steps[c]) if steps[c] > 0 else 0
                          for c in range(n)]).astype(np.int64)
    res = mx.nd.contrib.quantized_fully_connected(
        mx.nd.array(x, dtype="uint8"), mx.nd.array(w, dtype="int8"), mx.nd.array(b, dtype="int8"), _scalar(0.0),
        _scalar(4.0), mx.nd.array(-rw), mx.nd.array(rw), _scalar(-1.0), _scalar(1.0), num_hidden=n,
        flatten=flatten, channel_wise=True, enable_float_output=True)
    got = res if not isinstance(res, (list, tuple)) else res[0]
    np.testing.assert_allclose(got.asnumpy(), acc * steps, rtol=1e-5, atol=1e-9)


def test_channel_wise_ranges_must_match_the_channels():
    rng = np.random.RandomState(34)
    x = mx.nd.array(_rand_q(rng, (1, 4, 5, 5), "int8"), dtype="int8")
    w = mx.nd.array(_rand_q(rng, (6, 4, 3, 3), "int8"), dtype="int8")
    with pytest.raises(mx.base.MXNetError, match="min_weight"):
        mx.nd.contrib.quantized_conv(x, w, _scalar(-1), _scalar(1), mx.nd.array([-1.0] * 5), mx.nd.array([1.0] * 5),
                                     kernel=(3, 3), num_filter=6, no_bias=True, channel_wise=True)
    with pytest.raises(mx.base.MXNetError, match="min_weight"):
        mx.nd.contrib.quantized_conv(x, w, _scalar(-1), _scalar(1), mx.nd.array([-1.0] * 6), mx.nd.array([1.0] * 6),
                                     kernel=(3, 3), num_filter=6, no_bias=True)
    fw = mx.nd.array(_rand_q(rng, (3, 100), "int8"), dtype="int8")
    with pytest.raises(mx.base.MXNetError, match="min_weight"):
        mx.nd.contrib.quantized_fully_connected(x, fw, _scalar(-1), _scalar(1), _scalar(-1), _scalar(1),
                                                num_hidden=3, no_bias=True, channel_wise=True)


# ------------------------------------------------------------------ channels-last (NHWC) layout

@pytest.mark.parametrize("case", [dict(kernel=(3, 3), pad=(1, 1)), dict(kernel=(3, 3), stride=(2, 2), num_group=2),
                                  dict(kernel=(1, 1)), dict(kernel=(3, 3), pad=(1, 1), channel_wise=True),
                                  dict(kernel=(3, 3), pad=(1, 1), with_sum=True, with_relu=True)])
@pytest.mark.parametrize("calib", [False, True])
def test_quantized_conv_nhwc_is_nchw_transposed(case, calib):
    rng = np.random.RandomState(40)
    groups = case.get("num_group", 1)
    kh, kw = case["kernel"]
    x = _rand_q(rng, (2, 8, 9, 7), "uint8")
    w = _rand_q(rng, (16, 8 // groups, kh, kw), "int8")
    b = _rand_q(rng, (16,), "int8")
    rw = rng.uniform(0.1, 1.0, 16) if case.get("channel_wise") else np.array([0.3])
    kw_args = dict(case, num_filter=16)
    if calib:
        kw_args.update(min_calib_range=-40.0, max_calib_range=50.0)

    def run(layout, xs, ws, sum_arr=None):
        args = [mx.nd.array(xs, dtype="uint8"), mx.nd.array(ws, dtype="int8"), mx.nd.array(b, dtype="int8"),
                _scalar(0.0), _scalar(2.0), mx.nd.array(-rw), mx.nd.array(rw), _scalar(-0.5), _scalar(0.5)]
        if sum_arr is not None:
            args += [mx.nd.array(sum_arr, dtype="int8"), _scalar(-3.0), _scalar(3.0)]
        res = mx.nd.contrib.quantized_conv(*args, layout=layout, **kw_args)
        return [r.asnumpy() for r in res]

    s = _rand_q(rng, (2, 16, 9, 7), "int8") if case.get("with_sum") else None
    first = run("NCHW", x, w, s)
    last = run("NHWC", x.transpose(0, 2, 3, 1), w.transpose(0, 2, 3, 1),
               None if s is None else s.transpose(0, 2, 3, 1))
    assert last[0].shape == first[0].transpose(0, 2, 3, 1).shape
    np.testing.assert_array_equal(last[0], first[0].transpose(0, 2, 3, 1))
    np.testing.assert_array_equal(last[1:], first[1:])


def test_quantized_conv_nhwc_shapes_and_errors():
    d, w = mx.sym.var("d"), mx.sym.var("w")
    ranges = [mx.sym.var(n) for n in ("a", "b", "c", "e")]
    sym = mx.sym.contrib.quantized_conv(d, w, *ranges, kernel=(3, 3), num_filter=6, no_bias=True, layout="NHWC",
                                        num_group=2)
    arg_shapes, out_shapes, _ = sym.infer_shape(d=(2, 10, 12, 4))
    assert dict(zip(sym.list_arguments(), arg_shapes))["w"] == (6, 3, 3, 2)
    assert out_shapes[0] == (2, 8, 10, 6)
    with pytest.raises(mx.base.MXNetError, match="NHWC input 'data' must be 4-D"):
        mx.sym.contrib.quantized_conv(d, w, *ranges, kernel=(3,), num_filter=6, no_bias=True,
                                      layout="NHWC").infer_shape(d=(2, 10, 4))
    with pytest.raises(mx.base.MXNetError, match="layout"):
        mx.sym.contrib.quantized_conv(d, w, *ranges, kernel=(3, 3, 3), num_filter=6, no_bias=True,
                                      layout="NDHWC").infer_shape(d=(2, 5, 10, 12, 4))


@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
def test_quantized_conv_sum_in_place_in_an_executor(layout):
    """In an executor the output of a with_sum convolution may take the memory of its sum
    (a value read last there); the result is the one computed apart."""
    rng = np.random.RandomState(41)
    x = _rand_q(rng, (2, 8, 6, 6), "int8")
    w1, w2 = _rand_q(rng, (8, 8, 3, 3), "int8"), _rand_q(rng, (8, 8, 3, 3), "int8")
    if layout == "NHWC":
        x, w1, w2 = x.transpose(0, 2, 3, 1), w1.transpose(0, 2, 3, 1), w2.transpose(0, 2, 3, 1)
    names = ["d", "w1", "w2", "lo", "hi", "wlo", "whi"]
    d, v1, v2, lo, hi, wlo, whi = [mx.sym.var(n) for n in names]
    kw = dict(kernel=(3, 3), pad=(1, 1), num_filter=8, no_bias=True, layout=layout)
    first = mx.sym.contrib.quantized_conv(d, v1, lo, hi, wlo, whi, min_calib_range=-60.0, max_calib_range=60.0, **kw)
    out = mx.sym.contrib.quantized_conv(d, v2, lo, hi, wlo, whi, first[0], first[1], first[2], with_sum=True,
                                        with_relu=True, min_calib_range=0.0, max_calib_range=90.0, **kw)
    arrays = [mx.nd.array(x, dtype="int8"), mx.nd.array(w1, dtype="int8"), mx.nd.array(w2, dtype="int8"),
              _scalar(-1.0), _scalar(1.0), _scalar(-0.1), _scalar(0.1)]
    exe = out[0].bind(mx.cpu(), dict(zip(names, arrays)))
    got = exe.forward(is_train=False)[0].asnumpy()
    s = mx.nd.contrib.quantized_conv(*arrays[:2], *arrays[3:], min_calib_range=-60.0, max_calib_range=60.0, **kw)
    want = mx.nd.contrib.quantized_conv(arrays[0], arrays[2], *arrays[3:], *s, with_sum=True, with_relu=True,
                                        min_calib_range=0.0, max_calib_range=90.0, **kw)[0].asnumpy()
    assert got.dtype == np.uint8 and got.max() > 0
    np.testing.assert_array_equal(got, want)
