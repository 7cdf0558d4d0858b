"""_contrib_quantize_v2 and _contrib_dequantize against a numpy reference of MXNet's
rules: int8 zero-centred over max(|min|, |max|), uint8 over [min, max], calibrated or
measured ranges, 'auto', round trips within half a quantization step, and refusals."""
import numpy as np
import pytest

import weft as mx


def _ref_int8(x, lo, hi):
    r = max(abs(lo), abs(hi))
    v = np.minimum(np.abs(x) * (127.0 / r) + 0.5, 127.0).astype(np.int32)
    return (np.sign(x) * v).astype(np.int8), -r, r


def _ref_uint8(x, lo, hi):
    return np.clip((x - lo) * (255.0 / (hi - lo)) + 0.5, 0, 255).astype(np.uint8), lo, hi


@pytest.mark.parametrize("out_type", ["int8", "uint8"])
@pytest.mark.parametrize("calib", [None, (-1.5, 2.5)])
def test_quantize_v2_matches_reference_and_round_trips(out_type, calib):
    x = np.random.RandomState(0).uniform(-1.2, 2.2, (3, 4, 5)).astype(np.float32)
    kw = {} if calib is None else dict(min_calib_range=calib[0], max_calib_range=calib[1])
    q, qmin, qmax = mx.nd.contrib.quantize_v2(mx.nd.array(x), out_type=out_type, **kw)
    lo, hi = calib if calib else (float(x.min()), float(x.max()))
    ref, rmin, rmax = (_ref_int8 if out_type == "int8" else _ref_uint8)(x, np.float32(lo), np.float32(hi))
    assert q.dtype == np.dtype(out_type)
    np.testing.assert_array_equal(q.asnumpy(), ref)
    np.testing.assert_allclose([qmin.asscalar(), qmax.asscalar()], [rmin, rmax], rtol=1e-6)
    back = mx.nd.contrib.dequantize(q, qmin, qmax).asnumpy()
    assert back.dtype == np.float32
    step = (2 * max(abs(lo), abs(hi)) / 254) if out_type == "int8" else (hi - lo) / 255
    assert np.abs(back - x).max() <= step / 2 + 1e-6


def test_quantize_v2_auto_saturation_and_zero_range():
    x = mx.nd.array([[0.0, 1.0, 3.0, -0.5]])
    q = mx.nd.contrib.quantize_v2(x, out_type="auto", min_calib_range=0.0, max_calib_range=2.0)
    assert q[0].dtype == np.uint8
    np.testing.assert_array_equal(q[0].asnumpy(), [[0, 128, 255, 0]])  # 3 and -0.5 saturate
    q = mx.nd.contrib.quantize_v2(x, out_type="auto", min_calib_range=-1.0, max_calib_range=2.0)
    assert q[0].dtype == np.int8
    np.testing.assert_array_equal(q[0].asnumpy(), [[0, 64, 127, -32]])
    z = mx.nd.contrib.quantize_v2(mx.nd.zeros((2, 2)))
    np.testing.assert_array_equal(z[0].asnumpy(), np.zeros((2, 2)))
    np.testing.assert_array_equal(mx.nd.contrib.dequantize(*z).asnumpy(), np.zeros((2, 2)))


def test_quantize_symbolic_shapes_and_types():
    sym = mx.sym.contrib.quantize_v2(mx.sym.var("data"), out_type="uint8", min_calib_range=0, max_calib_range=1,
                                     name="q")
    assert sym.list_outputs() == ["q_output", "q_min_range", "q_max_range"]
    _, out_shapes, _ = sym.infer_shape(data=(2, 3))
    assert out_shapes == [(2, 3), (1,), (1,)]
    _, out_types, _ = sym.infer_type(data=np.float32)
    assert out_types == [np.uint8, np.float32, np.float32]
    deq = mx.sym.contrib.dequantize(sym[0], sym[1], sym[2])
    exe = deq.bind(mx.cpu(), {"data": mx.nd.array([[0.0, 0.5, 1.0]])}, grad_req="null")
    np.testing.assert_allclose(exe.forward()[0].asnumpy(), [[0.0, 128 / 255.0, 1.0]], rtol=1e-6)


def test_quantize_errors():
    x = mx.nd.ones((2, 2))
    with pytest.raises(mx.base.MXNetError, match="float32 data"):
        mx.nd.contrib.quantize_v2(x.astype("float64")).wait_to_read()
    with pytest.raises(mx.base.MXNetError, match="both min_calib_range and max_calib_range"):
        mx.nd.contrib.quantize_v2(x, min_calib_range=0.0)
    with pytest.raises(mx.base.MXNetError, match="min_calib_range <= max_calib_range"):
        mx.nd.contrib.quantize_v2(x, min_calib_range=1.0, max_calib_range=0.0)
    with pytest.raises(mx.base.MXNetError, match="out_type"):
        mx.nd.contrib.quantize_v2(x, out_type="int4")
    with pytest.raises(mx.base.MXNetError, match="int8 or uint8 data"):
        mx.nd.contrib.dequantize(x, mx.nd.zeros(1), mx.nd.ones(1))
    with pytest.raises(mx.base.MXNetError, match="min_range"):
        mx.nd.contrib.dequantize(x.astype("int8"), mx.nd.zeros(2), mx.nd.ones(1))


@pytest.mark.parametrize("calib", [None, (-3e-6, 2e-6)])
def test_requantize_int32_to_int8(calib):
    rng = np.random.RandomState(3)
    q32 = rng.randint(-3000, 3000, (4, 6)).astype(np.int32)
    r32 = 4.0
    real = q32 * (r32 / 2147483647.0)
    kw = {} if calib is None else dict(min_calib_range=calib[0], max_calib_range=calib[1])
    q8, lo, hi = mx.nd.contrib.requantize(mx.nd.array(q32, dtype="int32"), mx.nd.array([-r32]), mx.nd.array([r32]),
                                          **kw)
    assert q8.dtype == np.int8
    rng8 = np.abs(real).max() if calib is None else max(abs(calib[0]), abs(calib[1]))
    np.testing.assert_allclose([lo.asscalar(), hi.asscalar()], [-rng8, rng8], rtol=1e-6)
    expect = np.clip(np.round(real * 127 / rng8), -127, 127)
    np.testing.assert_array_equal(q8.asnumpy(), expect.astype(np.int8))
    # Within half a step of the float value where it fits the range; saturated where not.
    back = mx.nd.contrib.dequantize(q8, lo, hi).asnumpy()
    inside = np.abs(real) <= rng8
    assert np.abs(back - real)[inside].max() <= rng8 / 127 / 2 + 1e-12
    assert np.all(np.abs(back[~inside]) == np.float32(rng8))


def test_requantize_uint8_and_errors():
    q32 = mx.nd.array([[0, 120, 200, -50]], dtype="int32")
    q8, lo, hi = mx.nd.contrib.requantize(q32, mx.nd.array([-1.0]), mx.nd.array([1.0]), out_type="auto",
                                          min_calib_range=0.0, max_calib_range=200 / 2147483647.0)
    assert q8.dtype == np.uint8 and lo.asscalar() == 0
    np.testing.assert_array_equal(q8.asnumpy(), [[0, 153, 255, 0]])  # 120 / 200 * 255; negatives clip
    with pytest.raises(mx.base.MXNetError, match="int32 data"):
        mx.nd.contrib.requantize(mx.nd.ones((2,)), mx.nd.zeros(1), mx.nd.ones(1))
    with pytest.raises(mx.base.MXNetError, match="both min_calib_range"):
        mx.nd.contrib.requantize(q32, mx.nd.zeros(1), mx.nd.ones(1), max_calib_range=1.0)


@pytest.mark.parametrize("out_type", ["int8", "uint8"])
def test_quantize_v2_saturates_infinities_and_zeroes_nan(out_type):
    # NaN quantizes to 0 and values beyond the range (infinities included) saturate, in the
    # vectorized loops as in the scalar rounding; a value rounding to the top stays there.
    lo, hi = (-2.0, 2.0) if out_type == "int8" else (0.0, 2.0)
    x = np.array([np.nan, np.inf, -np.inf, 3.0, -3.0, 0.0, -0.0, 1.999, 1e30, -1e30, 0.3, -0.7], np.float32)
    x = np.concatenate([x, np.random.RandomState(3).uniform(-2.5, 2.5, 997).astype(np.float32)])
    q = mx.nd.contrib.quantize_v2(mx.nd.array(x), out_type=out_type, min_calib_range=lo,
                                  max_calib_range=hi)[0].asnumpy()
    finite = np.nan_to_num(x, nan=0.0, posinf=1e30, neginf=-1e30)
    ref = (_ref_int8 if out_type == "int8" else _ref_uint8)(np.clip(finite, -1e3, 1e3), lo, hi)[0]
    assert q[0] == 0
    top = 127 if out_type == "int8" else 255
    assert q[1] == top and q[3] == top and q[8] == top
    assert q[2] == (-127 if out_type == "int8" else 0)
    # Away from ties the integers are numpy's.
    np.testing.assert_array_equal(q[1:], ref[1:])
