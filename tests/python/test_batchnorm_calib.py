"""BatchNorm takes MXNet 1.9's min_calib_range/max_calib_range (the oneDNN int8 path's
calibrated output range): the float operator computes as without them and keeps them in
the symbol and its JSON; the quantized BatchNorm, which shares the parameters, uses them."""
import json

import numpy as np
import pytest

import weft as mx


def _bn_inputs(rng):
    x = rng.standard_normal((2, 3, 4, 4)).astype(np.float32)
    gamma, beta = rng.uniform(0.5, 2, 3), rng.uniform(-1, 1, 3)
    mean, var = rng.uniform(-0.5, 0.5, 3), rng.uniform(0.5, 2, 3)
    return x, [mx.nd.array(a) for a in (gamma, beta, mean, var)], (gamma, beta, mean, var)


def test_batchnorm_accepts_calib_range_and_computes_the_same():
    rng = np.random.default_rng(3)
    x, f32, (gamma, beta, mean, var) = _bn_inputs(rng)
    plain = mx.nd.BatchNorm(mx.nd.array(x), *f32, fix_gamma=False, use_global_stats=True).asnumpy()
    calib = mx.nd.BatchNorm(mx.nd.array(x), *f32, fix_gamma=False, use_global_stats=True,
                            min_calib_range=-2.5, max_calib_range=3.0).asnumpy()
    np.testing.assert_array_equal(plain, calib)
    c = lambda a: a[None, :, None, None]
    want = (x - c(mean)) / np.sqrt(c(var) + 1e-3) * c(gamma) + c(beta)
    np.testing.assert_allclose(calib, want, rtol=1e-5, atol=1e-5)
    with pytest.raises(mx.base.MXNetError, match="max_calib_range"):
        mx.nd.BatchNorm(mx.nd.array(x), *f32, max_calib_range="wide")


def test_batchnorm_calib_range_survives_json():
    sym = mx.sym.BatchNorm(mx.sym.var("data"), name="bn", min_calib_range=-1.25, max_calib_range=2.5)
    node = [n for n in json.loads(sym.tojson())["nodes"] if n["op"] == "BatchNorm"][0]
    assert float(node["attrs"]["min_calib_range"]) == -1.25 and float(node["attrs"]["max_calib_range"]) == 2.5
    again = mx.sym.load_json(sym.tojson())
    assert again.attr_dict()["bn"]["max_calib_range"] == node["attrs"]["max_calib_range"]
    assert again.list_auxiliary_states() == ["bn_moving_mean", "bn_moving_var"]


def test_quantized_batchnorm_uses_the_shared_calib_range():
    rng = np.random.default_rng(4)
    x, f32, (gamma, beta, mean, var) = _bn_inputs(rng)
    q = np.clip(np.round(x / (3.0 / 127)), -127, 127).astype(np.int8)
    lo, hi = mx.nd.array([-3.0]), mx.nd.array([3.0])
    out, omin, omax = mx.nd.contrib.quantized_batch_norm(mx.nd.array(q, dtype="int8"), *f32, lo, hi,
                                                         fix_gamma=False, min_calib_range=-2.0, max_calib_range=5.0)
    assert (omin.asscalar(), omax.asscalar()) == (-5.0, 5.0)
    c = lambda a: a[None, :, None, None]
    real = (q * (3.0 / 127) - c(mean)) / np.sqrt(c(var) + 1e-3) * c(gamma) + c(beta)
    assert np.abs(out.asnumpy() - np.clip(np.round(real / (5.0 / 127)), -128, 127)).max() <= 1
