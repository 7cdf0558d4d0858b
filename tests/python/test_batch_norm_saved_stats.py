"""What BatchNorm and its variants save as their third output (MXNet 1.9's rules):
BatchNorm saves 1 / sqrt(var + eps), BatchNorm_v1 and SyncBatchNorm the variance; the
backward operators read what their forward saved, and _BatchNorm_replay (the executor
mirror's recomputation) reproduces the forward from BatchNorm's saved statistics."""
import numpy as np
import pytest

import weft as mx
from weft import nd
from weft.test_utils import assert_almost_equal

from nn_norm_check import forward, numeric_check, op_grad

RNG = np.random.RandomState(3)


def inputs(shape=(4, 3, 5), C=3):
    x = RNG.randn(*shape).astype(np.float32) * 2 + 1
    return [x, RNG.randn(C).astype(np.float32), RNG.randn(C).astype(np.float32),
            RNG.randn(C).astype(np.float32), (np.abs(RNG.randn(C)) + 0.5).astype(np.float32)]


def ref_bn(x, g, b, mean, var, eps):
    e = lambda v: v[None, :, None]
    return (x - e(mean)) / np.sqrt(e(var) + eps) * e(g) + e(b)


@pytest.mark.parametrize("train", [True, False])
def test_batch_norm_saves_inverse_std(train):
    x, g, b, mm, mv = inputs()
    out = forward("BatchNorm", [x, g, b, mm, mv], {"eps": 1e-4, "fix_gamma": False, "output_mean_var": True},
                  train=train)
    if train:
        mean, var = x.mean(axis=(0, 2), dtype=np.float64), x.var(axis=(0, 2), dtype=np.float64)
    else:
        mean, var = mm, mv
    assert_almost_equal(out[0], ref_bn(x, g, b, mean, var, 1e-4), rtol=1e-4, atol=1e-4)
    assert_almost_equal(out[1], mean, rtol=1e-5, atol=1e-5)
    assert_almost_equal(out[2], 1 / np.sqrt(var + 1e-4), rtol=1e-4, atol=1e-5)


def test_batch_norm_constant_channel_without_eps():
    # A channel of equal values with eps = 0: MXNet saves 0 as its inverse std and outputs beta.
    x, g, b, mm, mv = inputs()
    x[:, 1, :] = 2.5
    out = forward("BatchNorm", [x, g, b, mm, mv], {"eps": 0.0, "fix_gamma": False, "output_mean_var": True},
                  train=True)
    assert out[2][1] == 0
    assert np.all(out[0][:, 1, :] == b[1])
    assert np.all(np.isfinite(out[0]))


@pytest.mark.parametrize("op,extra", [("BatchNorm_v1", {}), ("_contrib_SyncBatchNorm", {"key": "k"})])
@pytest.mark.parametrize("train", [True, False])
def test_variants_save_variance(op, extra, train):
    x, g, b, mm, mv = inputs()
    params = dict(extra, eps=1e-3, fix_gamma=False, output_mean_var=True)
    out = forward(op, [x, g, b, mm, mv], params, train=train)
    if train:
        mean, var = x.mean(axis=(0, 2), dtype=np.float64), x.var(axis=(0, 2), dtype=np.float64)
    else:
        mean, var = mm, mv
    assert_almost_equal(out[0], ref_bn(x, g, b, mean, var, 1e-3), rtol=1e-4, atol=1e-4)
    assert_almost_equal(out[1], mean, rtol=1e-5, atol=1e-5)
    assert_almost_equal(out[2], var, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("op,extra", [("BatchNorm_v1", {}), ("_contrib_SyncBatchNorm", {"key": "k"})])
def test_variants_gradient_matches_batch_norm(op, extra):
    x, g, b, mm, mv = inputs((3, 3, 4))
    dy = RNG.randn(3, 3, 4).astype(np.float32)
    params = {"eps": 1e-3, "fix_gamma": False, "output_mean_var": True}
    want = op_grad("BatchNorm", [x, g, b, mm, mv], params, [dy, None, None], train=True)
    got = op_grad(op, [x, g, b, mm, mv], dict(extra, **params), [dy, None, None], train=True)
    for w, o in zip(want[:3], got[:3]):
        assert_almost_equal(o, w, rtol=1e-4, atol=1e-5)


def test_batch_norm_v1_numeric_gradient():
    loc = [RNG.randn(3, 2, 3), RNG.randn(2), RNG.randn(2), RNG.randn(2), np.abs(RNG.randn(2)) + 0.5]
    numeric_check("BatchNorm_v1", loc, {"fix_gamma": False, "output_mean_var": True}, [0, 1, 2], train=True)


def test_backward_reads_saved_inverse_std():
    # Hand-called _backward_BatchNorm with a saved mean and inverse std, outside training:
    # dx = dy * gamma * invstd, dgamma = sum(dy * (x - mean) * invstd), dbeta = sum(dy).
    x, g, _, mean, _ = inputs()
    invstd = (np.abs(RNG.randn(3)) + 0.5).astype(np.float32)
    dy = RNG.randn(*x.shape).astype(np.float32)
    e = lambda v: v[None, :, None]
    outs = [nd.zeros(x.shape), nd.zeros((3,)), nd.zeros((3,))]
    nd.invoke("_backward_BatchNorm", [nd.array(a) for a in (dy, x, g, mean, invstd)], {"fix_gamma": False},
              out=outs)
    assert_almost_equal(outs[0], dy * e(g) * e(invstd), rtol=1e-5, atol=1e-5)
    assert_almost_equal(outs[1], (dy * (x - e(mean)) * e(invstd)).sum(axis=(0, 2)), rtol=1e-4, atol=1e-4)
    assert_almost_equal(outs[2], dy.sum(axis=(0, 2)), rtol=1e-5, atol=1e-5)


def test_replay_reproduces_forward_bits():
    x, g, b, mm, mv = inputs()
    params = {"eps": 1e-4, "fix_gamma": False, "output_mean_var": True}
    y, mean, invstd = forward("BatchNorm", [x, g, b, mm, mv], params, train=True)
    again = forward("_BatchNorm_replay", [x, g, b, mean, invstd], params, train=True)
    assert np.array_equal(again[0], y)
    assert np.array_equal(again[1], mean) and np.array_equal(again[2], invstd)


def test_saved_statistics_shape_errors():
    x, g, b, mm, mv = [nd.array(a) for a in inputs()]
    with pytest.raises(mx.base.MXNetError, match=r"_BatchNorm_replay.*invstd.*\(4,?\).*\(3,?\)"):
        nd.invoke("_BatchNorm_replay", [x, g, b, mm, nd.ones((4,))], {})
    dy = nd.ones(x.shape)
    for op, extra in [("_backward_BatchNorm", {}), ("_backward_BatchNorm_v1", {}),
                      ("_backward_contrib_SyncBatchNorm", {"key": "k"})]:
        with pytest.raises(mx.base.MXNetError, match=op + r".*var.*\(2,?\).*\(3,?\)"):
            nd.invoke(op, [dy, x, g, mm, nd.ones((2,))], extra)
        with pytest.raises(mx.base.MXNetError, match=op + r".*out_grad.*\(4,3,4\)"):
            nd.invoke(op, [nd.ones((4, 3, 4)), x, g, mm, mv], extra)
