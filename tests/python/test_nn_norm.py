"""BatchNorm, LayerNorm, GroupNorm, InstanceNorm, LRN and L2Normalization: forward and
backward against PyTorch (float32) and central differences (float64), parameter errors."""
import numpy as np
import pytest
import torch
import torch.nn.functional as F

import weft as mx
from weft import nd
from weft.test_utils import assert_almost_equal

from nn_norm_check import forward, numeric_check, op_grad

torch.set_num_threads(1)
RNG = np.random.RandomState(0)


def randn(*shape):
    return RNG.randn(*shape).astype(np.float32)


def T(a, grad=False):
    return torch.tensor(a, requires_grad=grad)


# ------------------------------------------------------------------ BatchNorm
BN_SHAPES = [(1, 3, 5, 5), (4, 7), (2, 5, 3, 1, 2), (3, 4, 6)]


@pytest.mark.parametrize("shape", BN_SHAPES)
@pytest.mark.parametrize("fix_gamma", [True, False])
def test_batch_norm_train_matches_torch_and_updates_moving_stats(shape, fix_gamma):
    C = shape[1]
    x, g, b = randn(*shape), randn(C), randn(C)
    mm, mv = randn(C), np.abs(randn(C)) + 0.5
    args = [nd.array(v) for v in (x, g, b, mm, mv)]
    with mx.autograd.train_mode():
        out = nd.BatchNorm(*args, eps=1e-3, momentum=0.8, fix_gamma=fix_gamma, output_mean_var=True)
    ref = F.batch_norm(T(x), None, None, T(np.ones(C, np.float32) if fix_gamma else g), T(b), training=True,
                       eps=1e-3)
    assert_almost_equal(out[0], ref.numpy(), rtol=1e-4, atol=1e-4)
    axes = tuple(i for i in range(len(shape)) if i != 1)
    mean, var = x.astype(np.float64).mean(axis=axes), x.astype(np.float64).var(axis=axes)
    assert_almost_equal(out[1], mean, rtol=1e-4, atol=1e-5)
    # The third output is MXNet's saved inverse standard deviation, not the variance.
    assert_almost_equal(out[2], 1 / np.sqrt(var + 1e-3), rtol=1e-4, atol=1e-5)
    # MXNet's update keeps the biased batch variance: moving = moving * m + batch * (1 - m).
    assert_almost_equal(args[3], mm * 0.8 + mean * 0.2, rtol=1e-4, atol=1e-5)
    assert_almost_equal(args[4], mv * 0.8 + var * 0.2, rtol=1e-4, atol=1e-5)
    # torch's running mean follows the same rule (its momentum is 1 - ours).
    rm, rv = T(mm.copy()), T(mv.copy())
    F.batch_norm(T(x), rm, rv, None, None, training=True, momentum=0.2, eps=1e-3)
    assert_almost_equal(args[3], rm.numpy(), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("offset", [0.0, 100.0, -3e3])
def test_batch_norm_batch_stats_large_offset(offset):
    # The statistics come from one pass over shifted values: a mean far larger than the
    # spread (activations of ResNet shapes, 16 x 8 x 56 x 56 per channel) must not lose
    # the variance to cancellation.
    C = 8
    x = (offset + RNG.uniform(0.5, 2.0, (1, C, 1, 1)) * randn(16, C, 56, 56)).astype(np.float32)
    x[0, :, 0, 0] = offset + 5.0  # the first value of each channel, the shift, is an outlier
    args = [nd.array(v) for v in (x, np.ones(C, np.float32), np.zeros(C, np.float32),
                                  np.zeros(C, np.float32), np.ones(C, np.float32))]
    with mx.autograd.train_mode():
        out = nd.BatchNorm(*args, eps=1e-5, fix_gamma=False, output_mean_var=True)
    x64 = x.astype(np.float64)
    mean, var = x64.mean(axis=(0, 2, 3)), x64.var(axis=(0, 2, 3))
    assert_almost_equal(out[1], mean, rtol=1e-5, atol=1e-4)
    assert_almost_equal(out[2], 1 / np.sqrt(var + 1e-5), rtol=2e-3, atol=1e-4)
    ref = (x64 - mean[None, :, None, None]) / np.sqrt(var[None, :, None, None] + 1e-5)
    assert_almost_equal(out[0], ref, rtol=1e-3, atol=2e-3)


@pytest.mark.parametrize("shape", BN_SHAPES)
def test_batch_norm_inference_and_global_stats(shape):
    C = shape[1]
    x, g, b, mm, mv = randn(*shape), randn(C), randn(C), randn(C), np.abs(randn(C)) + 0.5
    ref = F.batch_norm(T(x), T(mm), T(mv), T(g), T(b), training=False, eps=1e-3).numpy()
    args = [nd.array(v) for v in (x, g, b, mm, mv)]
    out = nd.BatchNorm(*args, fix_gamma=False)
    assert_almost_equal(out, ref, rtol=1e-4, atol=1e-4)
    assert_almost_equal(args[3], mm)  # inference leaves the moving statistics alone
    with mx.autograd.train_mode():
        out = nd.BatchNorm(*args, fix_gamma=False, use_global_stats=True)
    assert_almost_equal(out, ref, rtol=1e-4, atol=1e-4)
    assert_almost_equal(args[4], mv)


def test_batch_norm_axis_last():
    x, g, b = randn(2, 3, 4), randn(4), randn(4)
    with mx.autograd.train_mode():
        out = nd.BatchNorm(nd.array(x), nd.array(g), nd.array(b), nd.zeros((4,)), nd.ones((4,)), axis=-1,
                           fix_gamma=False)
    ref = F.batch_norm(T(x.reshape(6, 4)), None, None, T(g), T(b), training=True, eps=1e-3).numpy()
    assert_almost_equal(out, ref.reshape(2, 3, 4), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("shape", [(4, 3, 2, 3), (1, 2, 5), (6, 5)])
def test_batch_norm_backward_matches_torch(shape):
    C = shape[1]
    x, g, b, dy = randn(*shape), randn(C), randn(C), randn(*shape)
    grads = op_grad("BatchNorm", [x, g, b, np.zeros(C, np.float32), np.ones(C, np.float32)],
                    {"fix_gamma": False, "output_mean_var": True}, [dy, None, None], train=True)
    tx, tg, tb = T(x, True), T(g, True), T(b, True)
    F.batch_norm(tx, None, None, tg, tb, training=True, eps=1e-3).backward(T(dy))
    assert_almost_equal(grads[0], tx.grad.numpy(), rtol=1e-3, atol=1e-4)
    assert_almost_equal(grads[1], tg.grad.numpy(), rtol=1e-3, atol=1e-4)
    assert_almost_equal(grads[2], tb.grad.numpy(), rtol=1e-3, atol=1e-4)
    assert grads[3] is None and grads[4] is None  # auxiliary states


def test_batch_norm_fix_gamma_gives_zero_gamma_gradient():
    x, dy = randn(3, 2, 4), randn(3, 2, 4)
    grads = op_grad("BatchNorm", [x, randn(2), randn(2), np.zeros(2, np.float32), np.ones(2, np.float32)],
                    {"output_mean_var": True}, [dy, None, None], train=True)
    assert np.all(grads[1] == 0)
    assert_almost_equal(grads[2], dy.sum(axis=(0, 2)), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("params,train", [({"fix_gamma": False}, True), ({"fix_gamma": True}, True),
                                          ({"fix_gamma": False, "use_global_stats": True}, True)])
def test_batch_norm_numeric_gradient(params, train):
    x = RNG.randn(3, 2, 3)
    loc = [x, RNG.randn(2), RNG.randn(2), RNG.randn(2), np.abs(RNG.randn(2)) + 0.5]
    numeric_check("BatchNorm", loc, dict(params, output_mean_var=True), [0, 1, 2], train=train)


def test_batch_norm_errors():
    a = nd.ones((2, 3, 4))
    with pytest.raises(mx.base.WeftError, match=r"BatchNorm.*input 'gamma'.*\(5,\).*\(3,\)"):
        nd.BatchNorm(a, nd.ones((5,)), nd.ones((3,)), nd.ones((3,)), nd.ones((3,)))
    with pytest.raises(mx.base.WeftError, match=r"BatchNorm.*'axis' = 3.*3 dimensions"):
        nd.BatchNorm(a, nd.ones((3,)), nd.ones((3,)), nd.ones((3,)), nd.ones((3,)), axis=3)
    with pytest.raises(mx.base.WeftError, match=r"BatchNorm.*momentum.*\[0, 1\].*1.5"):
        nd.BatchNorm(a, nd.ones((3,)), nd.ones((3,)), nd.ones((3,)), nd.ones((3,)), momentum=1.5)
    with pytest.raises(mx.base.WeftError, match=r"BatchNorm.*floating-point.*int32"):
        nd.BatchNorm(*[nd.ones(s, dtype="int32") for s in [(2, 3), (3,), (3,), (3,), (3,)]])


def _bn_half_run(x, params_dtype, train=True):
    C = x.shape[1]
    rng = np.random.RandomState(3)
    g, b = rng.uniform(0.5, 1.5, C), rng.normal(0, 1, C)
    mm, mv = rng.normal(0, 0.1, C), rng.uniform(0.5, 1.5, C)
    dy = rng.normal(0, 1, x.shape).astype(np.float16).astype(x.dtype)  # the same values for both runs
    args = [nd.array(x, dtype=x.dtype)] + [nd.array(a, dtype=params_dtype) for a in (g, b)]
    aux = [nd.array(a, dtype=params_dtype) for a in (mm, mv)]
    for a in args:
        a.attach_grad()
    with mx.autograd.record(train_mode=train):
        y = nd.BatchNorm(*args, *aux, fix_gamma=False, eps=1e-3, momentum=0.9)
    y.backward(nd.array(dy, dtype=dy.dtype))
    return y, aux, [a.grad for a in args]


@pytest.mark.parametrize("train", [True, False])
def test_batch_norm_float16_data_takes_float32_parameters(train):
    # MXNet's rule: float16 data keeps gamma, beta and the statistics in float32. The result
    # equals the float32 computation on the same (float16) values, rounded to float16.
    x = (RNG.randn(4, 3, 5, 2) * 2 + 1).astype(np.float16)
    y, aux, grads = _bn_half_run(x, "float32", train)
    y32, aux32, grads32 = _bn_half_run(x.astype(np.float32), "float32", train)
    assert y.dtype == np.float16 and grads[0].dtype == np.float16
    assert all(a.dtype == np.float32 for a in aux + grads[1:])
    assert_almost_equal(y.asnumpy().astype(np.float32), y32.asnumpy(), rtol=2e-3, atol=2e-3)
    assert_almost_equal(grads[0].asnumpy().astype(np.float32), grads32[0].asnumpy(), rtol=5e-3, atol=5e-3)
    for a, b in zip(aux + grads[1:], aux32 + grads32[1:]):
        assert_almost_equal(a.asnumpy(), b.asnumpy(), rtol=1e-4, atol=1e-4)


def test_batch_norm_float16_infers_float32_parameters_and_accepts_float16_ones():
    bn = mx.sym.BatchNorm(mx.sym.var("data"), name="bn")
    arg, out, aux = bn.infer_type(data="float16")
    assert arg == [np.float16, np.float32, np.float32] and aux == [np.float32, np.float32]
    assert out == [np.float16]
    # Parameters in float16 stay accepted (Weft's earlier rule); another type is refused.
    x = RNG.randn(2, 3, 4).astype(np.float16)
    y16, _, _ = _bn_half_run(x, "float16")
    y32, _, _ = _bn_half_run(x, "float32")
    assert_almost_equal(y16.asnumpy().astype(np.float32), y32.asnumpy().astype(np.float32), rtol=1e-2, atol=1e-2)
    with pytest.raises(mx.base.WeftError, match=r"BatchNorm.*gamma.*float64.*float32"):
        nd.BatchNorm(nd.array(x, dtype="float16"), *[nd.ones(3, dtype="float64") for _ in range(4)])


def test_gluon_network_cast_to_float16_trains_with_batch_norm():
    net = mx.gluon.nn.HybridSequential()
    net.add(mx.gluon.nn.Conv2D(4, 3), mx.gluon.nn.BatchNorm(), mx.gluon.nn.Activation("relu"),
            mx.gluon.nn.Dense(2))
    net.initialize(mx.init.Xavier())
    net.cast("float16")
    bn = net[1]
    assert bn.gamma.dtype == np.float32 and bn.running_mean.dtype == np.float32
    trainer = mx.gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.1, "multi_precision": True})
    x = nd.array(RNG.randn(2, 3, 6, 6), dtype="float16")
    for hybrid in (False, True):
        if hybrid:
            net.hybridize()
        with mx.autograd.record():
            loss = (net(x).astype("float32") ** 2).sum()
        loss.backward()
        trainer.step(2)
        assert bn.gamma.grad().dtype == np.float32 and np.all(np.isfinite(bn.gamma.grad().asnumpy()))
    assert not np.allclose(bn.running_mean.data().asnumpy(), 0)


# ------------------------------------------------------------------ LayerNorm / GroupNorm / InstanceNorm
@pytest.mark.parametrize("shape,axis", [((4, 10), -1), ((1, 7), -1), ((2, 3, 5), 1), ((3, 4, 2), 0)])
def test_layer_norm_matches_torch(shape, axis):
    n = shape[axis]
    x, g, b = randn(*shape), randn(n), randn(n)
    out = nd.LayerNorm(nd.array(x), nd.array(g), nd.array(b), axis=axis, eps=1e-5, output_mean_var=True)
    xm = np.moveaxis(x, axis, -1)
    ref = F.layer_norm(T(xm), (n,), T(g), T(b), eps=1e-5).numpy()
    assert_almost_equal(out[0], np.moveaxis(ref, -1, axis), rtol=1e-4, atol=1e-4)
    assert_almost_equal(out[1], x.mean(axis=axis, keepdims=True), rtol=1e-4, atol=1e-5)
    assert_almost_equal(out[2], np.sqrt(x.var(axis=axis, keepdims=True) + 1e-5), rtol=1e-4, atol=1e-5)
    dy = randn(*shape)
    grads = op_grad("LayerNorm", [x, g, b], {"axis": axis, "output_mean_var": True}, [dy, None, None])
    tx, tg, tb = T(xm.copy(), True), T(g, True), T(b, True)
    F.layer_norm(tx, (n,), tg, tb, eps=1e-5).backward(T(np.moveaxis(dy, axis, -1).copy()))
    assert_almost_equal(grads[0], np.moveaxis(tx.grad.numpy(), -1, axis), rtol=1e-3, atol=1e-4)
    assert_almost_equal(grads[1], tg.grad.numpy(), rtol=1e-3, atol=1e-4)
    assert_almost_equal(grads[2], tb.grad.numpy(), rtol=1e-3, atol=1e-4)


@pytest.mark.parametrize("shape,groups", [((2, 6, 3, 3), 3), ((1, 4, 5), 2), ((3, 5, 2), 1), ((2, 4), 4)])
def test_group_norm_matches_torch(shape, groups):
    # MXNet 1.9's gamma / beta are per group; torch's are per channel, so torch gets each
    # group's value repeated over its channels and its channel gradients summed per group.
    C = shape[1]
    x, g, b, dy = randn(*shape), randn(groups), randn(groups), randn(*shape)
    out = nd.GroupNorm(nd.array(x), nd.array(g), nd.array(b), num_groups=groups)
    gc, bc = np.repeat(g, C // groups), np.repeat(b, C // groups)
    ref = F.group_norm(T(x), groups, T(gc), T(bc), eps=1e-5).numpy()
    assert_almost_equal(out, ref, rtol=1e-4, atol=1e-4)
    grads = op_grad("GroupNorm", [x, g, b], {"num_groups": groups, "output_mean_var": True}, [dy, None, None])
    tx, tg, tb = T(x, True), T(gc, True), T(bc, True)
    F.group_norm(tx, groups, tg, tb, eps=1e-5).backward(T(dy))
    per_group = [tx.grad.numpy()] + [t.grad.numpy().reshape(groups, -1).sum(axis=1) for t in (tg, tb)]
    for a, r in zip(grads, per_group):
        assert_almost_equal(a, r, rtol=1e-3, atol=1e-4)


def test_group_norm_gamma_beta_are_per_group():
    data = mx.sym.Variable("data")
    args, outs, _ = mx.sym.GroupNorm(data, num_groups=3, output_mean_var=True).infer_shape(data=(2, 6, 4))
    assert args == [(2, 6, 4), (3,), (3,)]
    assert outs == [(2, 6, 4), (2, 3), (2, 3)]
    with pytest.raises(mx.base.WeftError, match=r"GroupNorm.*gamma.*\(6,\).*\(3,\)"):
        nd.GroupNorm(nd.ones((2, 6, 4)), nd.ones((6,)), nd.ones((3,)), num_groups=3)
    with pytest.raises(mx.base.WeftError, match=r"_backward_GroupNorm.*\(6,\)"):
        nd._internal._backward_GroupNorm(nd.ones((2, 6, 4)), nd.ones((2, 6, 4)), nd.ones((6,)),
                                         nd.ones((2, 3)), nd.ones((2, 3)), num_groups=3)


@pytest.mark.parametrize("shape", [(2, 3, 4, 5), (1, 2, 7), (3, 1, 2, 2, 2)])
def test_instance_norm_matches_torch(shape):
    C = shape[1]
    x, g, b, dy = randn(*shape), randn(C), randn(C), randn(*shape)
    out = nd.InstanceNorm(nd.array(x), nd.array(g), nd.array(b), eps=1e-3)
    ref = F.instance_norm(T(x), weight=T(g), bias=T(b), eps=1e-3).numpy()
    assert_almost_equal(out, ref, rtol=1e-4, atol=1e-4)
    tx, tg, tb = T(x, True), T(g, True), T(b, True)
    F.instance_norm(tx, weight=tg, bias=tb, eps=1e-3).backward(T(dy))
    # InstanceNorm's mean and std are hidden outputs of shape (N, C).
    assert len(forward("InstanceNorm", [x, g, b], {})) == 1
    shapes = [shape, shape[:2], shape[:2]]
    grads = op_grad("InstanceNorm", [x, g, b], {}, [dy, None, None], out_shapes=shapes)
    for a, r in zip(grads, (tx.grad, tg.grad, tb.grad)):
        assert_almost_equal(a, r.numpy(), rtol=1e-3, atol=1e-4)
    numeric_check("InstanceNorm", [RNG.randn(2, 2, 3), RNG.randn(2), RNG.randn(2)], {}, [0, 1, 2],
                  out_shapes=[(2, 2, 3), (2, 2), (2, 2)])


@pytest.mark.parametrize("op,params,shape", [
    ("LayerNorm", {"axis": -1}, (3, 4)), ("LayerNorm", {"axis": 1}, (2, 3, 2)),
    ("GroupNorm", {"num_groups": 2}, (2, 4, 3)),
])
def test_norm_numeric_gradient(op, params, shape):
    C = params["num_groups"] if op == "GroupNorm" else shape[params.get("axis", 1)]
    numeric_check(op, [RNG.randn(*shape), RNG.randn(C), RNG.randn(C)], dict(params, output_mean_var=True), [0, 1, 2])


def test_norm_errors():
    with pytest.raises(mx.base.WeftError, match=r"GroupNorm.*'num_groups' = 4.*\(2,6,3\)"):
        nd.GroupNorm(nd.ones((2, 6, 3)), nd.ones((4,)), nd.ones((4,)), num_groups=4)
    with pytest.raises(mx.base.WeftError, match=r"InstanceNorm.*at least 3 dimensions.*\(2,6\)"):
        nd.InstanceNorm(nd.ones((2, 6)), nd.ones((6,)), nd.ones((6,)))
    with pytest.raises(mx.base.WeftError, match=r"LayerNorm.*input 'gamma'.*\(3,\).*\(4,\)"):
        nd.LayerNorm(nd.ones((2, 4)), nd.ones((3,)), nd.ones((4,)))
    with pytest.raises(mx.base.WeftError, match=r"LayerNorm.*'axis' = 2"):
        nd.LayerNorm(nd.ones((2, 4)), nd.ones((4,)), nd.ones((4,)), axis=2)


# ------------------------------------------------------------------ LRN / L2Normalization
@pytest.mark.parametrize("shape,nsize", [((2, 7, 3, 3), 5), ((1, 4, 5), 3), ((3, 2, 2, 2), 1)])
def test_lrn_matches_torch(shape, nsize):
    x, dy = randn(*shape), randn(*shape)
    p = dict(alpha=1e-2, beta=0.75, knorm=2.0, nsize=nsize)
    out = nd.LRN(nd.array(x), **p)
    ref = F.local_response_norm(T(x), nsize, alpha=1e-2, beta=0.75, k=2.0).numpy()
    assert_almost_equal(out, ref, rtol=1e-4, atol=1e-5)
    tx = T(x, True)
    F.local_response_norm(tx, nsize, alpha=1e-2, beta=0.75, k=2.0).backward(T(dy))
    assert_almost_equal(op_grad("LRN", [x], p, [dy])[0], tx.grad.numpy(), rtol=1e-3, atol=1e-4)
    numeric_check("LRN", [RNG.randn(1, 4, 2)], dict(p, alpha=0.5), [0])


@pytest.mark.parametrize("mode,shape", [("instance", (3, 4, 2)), ("channel", (2, 3, 4)), ("spatial", (2, 3, 2, 2)),
                                        ("instance", (1, 5))])
def test_l2_normalization(mode, shape):
    x, dy = randn(*shape), randn(*shape)
    out = nd.L2Normalization(nd.array(x), mode=mode, eps=1e-10)
    if mode == "instance":
        ref = F.normalize(T(x.reshape(shape[0], -1)), dim=1, eps=0).numpy().reshape(shape)
    elif mode == "channel":
        ref = F.normalize(T(x), dim=1, eps=0).numpy()
    else:
        ref = F.normalize(T(x.reshape(shape[0], shape[1], -1)), dim=2, eps=0).numpy().reshape(shape)
    assert_almost_equal(out, ref, rtol=1e-4, atol=1e-5)
    numeric_check("L2Normalization", [RNG.randn(*shape)], {"mode": mode}, [0])


def test_lrn_l2_errors():
    with pytest.raises(mx.base.WeftError, match=r"LRN.*'nsize'.*required|LRN.*nsize"):
        nd.LRN(nd.ones((2, 3, 4)))
    with pytest.raises(mx.base.WeftError, match=r"LRN.*at least 2 dimensions"):
        nd.LRN(nd.ones((4,)), nsize=3)
    with pytest.raises(mx.base.WeftError, match=r"L2Normalization.*'spatial'.*at least 3.*\(2,3\)"):
        nd.L2Normalization(nd.ones((2, 3)), mode="spatial")
    with pytest.raises(mx.base.WeftError, match=r"L2Normalization.*mode.*'bogus'"):
        nd.L2Normalization(nd.ones((2, 3)), mode="bogus")
