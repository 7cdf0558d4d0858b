"""MXNet 1.9's gluon.nn / gluon.contrib.nn layers: concurrent containers, Identity, pixel
shuffles, SyncBatchNorm, BatchNormReLU, SparseEmbedding, and the 1-D/3-D convolutions,
transposed convolutions, pools, ReflectionPad2D, InstanceNorm and GroupNorm, against torch or
numpy, with numeric gradients of their graphs."""
import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import weft as mx
from weft import autograd, gluon
from weft.gluon import nn
from weft.gluon.contrib import nn as cnn
from weft.test_utils import check_numeric_gradient

RS = np.random.RandomState


def _x(shape, seed=0, lo=-1, hi=1):
    return RS(seed).uniform(lo, hi, shape).astype(np.float32)


def _run(net, x, hybridize=False):
    if hybridize:
        net.hybridize()
    return net(mx.nd.array(x)).asnumpy()


def _both(net, x):
    """Imperative output, checked equal to the hybridized one."""
    out = _run(net, x)
    np.testing.assert_allclose(_run(net, x, True), out, rtol=1e-5, atol=1e-6)
    return out


def _grad_check(net, x, **kw):
    """Numeric gradient of the block's graph for its input and every parameter."""
    sym = net(mx.sym.var("data"))
    params = {p.name: p.data().asnumpy() for p in net.collect_params().values()}
    aux = {n: params.pop(n) for n in sym.list_auxiliary_states()}
    location = {"data": x}
    location.update({n: params[n] for n in sym.list_arguments() if n != "data"})
    check_numeric_gradient(sym, location, aux_states=aux or None, numeric_eps=1e-2, rtol=1e-2, atol=1e-3, **kw)


# --- containers -----------------------------------------------------------------------------

def test_concurrent_concatenates_children():
    net = cnn.Concurrent(axis=1)
    with net.name_scope():
        net.add(nn.Dense(3), nn.Dense(2), cnn.Identity())
    net.initialize(mx.init.Uniform(0.5))
    x = _x((4, 5))
    out = net(mx.nd.array(x)).asnumpy()
    d0, d1 = list(net._children.values())[:2]
    w0, b0 = d0.weight.data().asnumpy(), d0.bias.data().asnumpy()
    w1, b1 = d1.weight.data().asnumpy(), d1.bias.data().asnumpy()
    np.testing.assert_allclose(out, np.concatenate([x @ w0.T + b0, x @ w1.T + b1, x], axis=1), rtol=1e-5, atol=1e-6)


def test_hybrid_concurrent_hybridizes_and_differentiates():
    net = cnn.HybridConcurrent(axis=1)
    with net.name_scope():
        net.add(nn.Conv2D(2, 3, padding=1), cnn.Identity(), nn.Conv2D(1, 1))
    net.initialize(mx.init.Uniform(0.5))
    x = _x((2, 3, 5, 5), 1)
    out = _both(net, x)
    assert out.shape == (2, 6, 5, 5)
    np.testing.assert_allclose(out[:, 2:5], x, rtol=0, atol=0)
    _grad_check(net, x.astype(np.float64))


def test_identity():
    net = cnn.Identity()
    x = _x((3, 4), 2)
    np.testing.assert_array_equal(_both(net, x), x)
    xx = mx.nd.array(x)
    xx.attach_grad()
    with autograd.record():
        y = net(xx) * 3
    y.backward()
    np.testing.assert_allclose(xx.grad.asnumpy(), 3 * np.ones_like(x))


# --- pixel shuffles --------------------------------------------------------------------------

def _shuffle_ref(x, factors):
    """out[n, c, d0*f0 + i0, d1*f1 + i1, ...] = x[n, c*prod(f) + flat(i0, i1, ...), d0, d1, ...]."""
    n, cf = x.shape[:2]
    spatial = x.shape[2:]
    c = cf // int(np.prod(factors))
    out = np.empty((n, c) + tuple(s * f for s, f in zip(spatial, factors)), x.dtype)
    for idx in np.ndindex(*factors):
        sub = int(np.ravel_multi_index(idx, factors))
        sl = tuple(slice(i, None, f) for i, f in zip(idx, factors))
        out[(slice(None), slice(None)) + sl] = x[:, sub::int(np.prod(factors))][:, :c]
    return out


@pytest.mark.parametrize("cls,factor,shape", [
    (cnn.PixelShuffle1D, 3, (2, 6, 4)),
    (cnn.PixelShuffle2D, (2, 3), (2, 12, 3, 4)),
    (cnn.PixelShuffle2D, 2, (1, 8, 2, 3)),
    (cnn.PixelShuffle3D, (2, 1, 3), (1, 12, 2, 3, 2)),
])
def test_pixel_shuffle_matches_reference(cls, factor, shape):
    x = _x(shape, 3)
    out = _both(cls(factor), x)
    n = len(shape) - 2
    factors = (factor,) * n if isinstance(factor, int) else factor
    np.testing.assert_array_equal(out, _shuffle_ref(x, factors))
    _grad_check(cls(factor), x.astype(np.float64))


def test_pixel_shuffle_2d_matches_torch():
    x = _x((2, 18, 4, 5), 4)
    np.testing.assert_array_equal(_run(cnn.PixelShuffle2D(3), x), TF.pixel_shuffle(torch.from_numpy(x), 3).numpy())


def test_pixel_shuffle_errors():
    with pytest.raises(ValueError, match="factor"):
        cnn.PixelShuffle2D((2, 2, 2))
    with pytest.raises(ValueError, match="factor"):
        cnn.PixelShuffle1D(0)
    with pytest.raises(mx.base.MXNetError):
        cnn.PixelShuffle2D(2)(mx.nd.ones((1, 6, 2, 2))).wait_to_read()


# --- normalisation ------------------------------------------------------------------------------

def _bn_ref(x, gamma, beta, eps, axis=1):
    red = tuple(i for i in range(x.ndim) if i != axis)
    shape = [1] * x.ndim
    shape[axis] = -1
    mean = x.mean(axis=red)
    var = x.var(axis=red)
    y = (x - mean.reshape(shape)) / np.sqrt(var.reshape(shape) + eps)
    return y * gamma.reshape(shape) + beta.reshape(shape), mean, var


@pytest.mark.parametrize("cls", [cnn.SyncBatchNorm, nn.BatchNormReLU])
def test_batchnorm_variants_train_and_infer(cls):
    kwargs = {"num_devices": 2} if cls is cnn.SyncBatchNorm else {}
    net = cls(in_channels=3, momentum=0.8, epsilon=1e-3, **kwargs)
    net.initialize()
    net.gamma.set_data(mx.nd.array([0.5, 1.5, -1.0]))
    net.beta.set_data(mx.nd.array([0.1, -0.2, 0.3]))
    x = _x((4, 3, 2, 2), 5)
    with autograd.record():
        out = net(mx.nd.array(x)).asnumpy()
    want, mean, var = _bn_ref(x.astype(np.float64), np.array([0.5, 1.5, -1.0]), np.array([0.1, -0.2, 0.3]), 1e-3)
    if cls is nn.BatchNormReLU:
        want = np.maximum(want, 0)
    np.testing.assert_allclose(out, want, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(net.running_mean.data().asnumpy(), 0.2 * mean, rtol=1e-4, atol=1e-6)
    # inference reads the running statistics
    rm, rv = net.running_mean.data().asnumpy(), net.running_var.data().asnumpy()
    got = net(mx.nd.array(x)).asnumpy()
    ref = (x - rm.reshape(1, 3, 1, 1)) / np.sqrt(rv.reshape(1, 3, 1, 1) + 1e-3) * \
        np.array([0.5, 1.5, -1.0]).reshape(1, 3, 1, 1) + np.array([0.1, -0.2, 0.3]).reshape(1, 3, 1, 1)
    if cls is nn.BatchNormReLU:
        ref = np.maximum(ref, 0)
    np.testing.assert_allclose(got, ref, rtol=1e-4, atol=1e-5)


def test_sync_batchnorm_gradient():
    net = cnn.SyncBatchNorm(in_channels=2)
    net.initialize(mx.init.Uniform(1.0))
    _grad_check(net, _x((3, 2, 2, 2), 6).astype(np.float64))


def test_sync_batchnorm_bad_devices():
    with pytest.raises(ValueError, match="num_devices"):
        cnn.SyncBatchNorm(num_devices=0)


@pytest.mark.parametrize("axis", [1, 2, -1])
def test_instance_norm_matches_torch(axis):
    x = _x((2, 3, 4, 5), 7)
    c = x.shape[axis]
    net = nn.InstanceNorm(axis=axis, scale=True, in_channels=c)
    net.initialize()
    gamma, beta = _x((c,), 8, 0.5, 1.5), _x((c,), 9)
    net.gamma.set_data(mx.nd.array(gamma))
    net.beta.set_data(mx.nd.array(beta))
    out = _both(net, x)
    xt = torch.from_numpy(np.moveaxis(x, axis, 1).copy())
    want = TF.instance_norm(xt, weight=torch.from_numpy(gamma), bias=torch.from_numpy(beta), eps=1e-5).numpy()
    np.testing.assert_allclose(out, np.moveaxis(want, 1, axis), rtol=1e-4, atol=1e-5)


def test_group_norm_matches_torch():
    x = _x((2, 6, 3, 3), 10)
    net = nn.GroupNorm(num_groups=3)
    net.initialize()
    assert net.gamma.shape == (3,) and net.beta.shape == (3,)
    gamma, beta = np.array([0.5, 2.0, -1.0], np.float32), np.array([0.1, -0.3, 1.5], np.float32)
    net.gamma.set_data(mx.nd.array(gamma))
    net.beta.set_data(mx.nd.array(beta))
    out = _both(net, x)
    want = TF.group_norm(torch.from_numpy(x), 3, weight=torch.from_numpy(np.repeat(gamma, 2)),
                         bias=torch.from_numpy(np.repeat(beta, 2)), eps=1e-5).numpy()
    np.testing.assert_allclose(out, want, rtol=1e-4, atol=1e-5)


# --- convolutions and pools ----------------------------------------------------------------------

def _params_np(net):
    return net.weight.data().asnumpy(), net.bias.data().asnumpy() if net.bias is not None else None


@pytest.mark.parametrize("make,shape,ref", [
    (lambda: nn.Conv3D(4, (2, 3, 2), strides=(1, 2, 1), padding=1, dilation=(1, 1, 2)), (2, 3, 4, 5, 5),
     lambda x, w, b: TF.conv3d(x, w, b, stride=(1, 2, 1), padding=1, dilation=(1, 1, 2))),
    (lambda: nn.Conv3D(4, 3, groups=2, use_bias=False), (1, 4, 4, 4, 4),
     lambda x, w, b: TF.conv3d(x, w, None, groups=2)),
    (lambda: nn.Conv1DTranspose(3, 3, strides=2, padding=1, output_padding=1), (2, 4, 5),
     lambda x, w, b: TF.conv_transpose1d(x, w, b, stride=2, padding=1, output_padding=1)),
    (lambda: nn.Conv3DTranspose(2, (3, 2, 2), strides=(2, 1, 2), padding=(1, 0, 0)), (1, 3, 3, 3, 2),
     lambda x, w, b: TF.conv_transpose3d(x, w, b, stride=(2, 1, 2), padding=(1, 0, 0))),
    (lambda: nn.Conv1D(5, 3, dilation=2, activation="relu"), (2, 2, 9),
     lambda x, w, b: TF.relu(TF.conv1d(x, w, b, dilation=2))),
])
def test_convolutions_match_torch(make, shape, ref):
    net = make()
    net.initialize(mx.init.Uniform(0.5))
    x = _x(shape, 11)
    out = _both(net, x)
    w, b = _params_np(net)
    want = ref(torch.from_numpy(x), torch.from_numpy(w), None if b is None else torch.from_numpy(b)).numpy()
    np.testing.assert_allclose(out, want, rtol=1e-4, atol=1e-5)


def test_conv3d_transpose_gradient():
    net = nn.Conv3DTranspose(2, 2, strides=2, in_channels=2)
    net.initialize(mx.init.Uniform(0.5))
    _grad_check(net, _x((1, 2, 2, 2, 2), 12).astype(np.float64))


@pytest.mark.parametrize("make,shape,ref", [
    (lambda: nn.MaxPool3D(2, 2), (1, 2, 4, 4, 6), lambda x: TF.max_pool3d(x, 2, 2)),
    (lambda: nn.MaxPool3D((2, 3, 2), (1, 2, 2), padding=1, ceil_mode=True), (1, 2, 4, 5, 6),
     lambda x: TF.max_pool3d(x, (2, 3, 2), (1, 2, 2), padding=1, ceil_mode=True)),
    (lambda: nn.AvgPool3D(2, 1, padding=1), (2, 1, 3, 3, 3),
     lambda x: TF.avg_pool3d(x, 2, 1, padding=1, count_include_pad=True)),
    (lambda: nn.AvgPool3D(3, 2, padding=1, count_include_pad=False), (1, 2, 5, 5, 5),
     lambda x: TF.avg_pool3d(x, 3, 2, padding=1, count_include_pad=False)),
    (lambda: nn.MaxPool1D(3, 2), (2, 3, 9), lambda x: TF.max_pool1d(x, 3, 2)),
    (lambda: nn.AvgPool1D(2), (2, 3, 8), lambda x: TF.avg_pool1d(x, 2)),
    (lambda: nn.GlobalMaxPool3D(), (2, 3, 2, 3, 4), lambda x: x.amax(dim=(2, 3, 4), keepdim=True)),
    (lambda: nn.GlobalAvgPool3D(), (2, 3, 2, 3, 4), lambda x: x.mean(dim=(2, 3, 4), keepdim=True)),
    (lambda: nn.GlobalMaxPool1D(), (2, 3, 7), lambda x: x.amax(dim=2, keepdim=True)),
    (lambda: nn.GlobalAvgPool1D(), (2, 3, 7), lambda x: x.mean(dim=2, keepdim=True)),
])
def test_pools_match_torch(make, shape, ref):
    x = _x(shape, 13)
    np.testing.assert_allclose(_both(make(), x), ref(torch.from_numpy(x)).numpy(), rtol=1e-5, atol=1e-6)


def test_avg_pool3d_gradient():
    _grad_check(nn.AvgPool3D(2, 1, padding=1), _x((1, 1, 2, 3, 2), 14).astype(np.float64))


def test_reflection_pad2d_matches_torch_and_differentiates():
    x = _x((2, 3, 4, 5), 15)
    np.testing.assert_array_equal(_both(nn.ReflectionPad2D(2), x), TF.pad(torch.from_numpy(x), (2, 2, 2, 2),
                                                                           mode="reflect").numpy())
    pad = (0, 0, 0, 0, 1, 2, 3, 1)
    np.testing.assert_array_equal(_run(nn.ReflectionPad2D(pad), x),
                                  TF.pad(torch.from_numpy(x), (3, 1, 1, 2), mode="reflect").numpy())
    _grad_check(nn.ReflectionPad2D(1), x[:1, :1].astype(np.float64))
    with pytest.raises(ValueError, match="8 pad widths"):
        nn.ReflectionPad2D((1, 1))


# --- embeddings and lambdas ------------------------------------------------------------------------

def test_sparse_embedding_forward_and_gradient():
    net = cnn.SparseEmbedding(6, 3)
    net.initialize(mx.init.Uniform(1.0))
    idx = np.array([[0, 2, 2], [5, 0, 1]], dtype=np.float32)
    # The weight is row_sparse, held by the Trainer's kvstore (MXNet's SparseEmbedding).
    with pytest.raises(RuntimeError, match="row_sparse_data"):
        net.weight.data()
    with pytest.raises(RuntimeError, match="no Trainer"):
        net(mx.nd.array(idx))
    mx.gluon.Trainer(net.collect_params(), "sgd")
    w = net.weight._reduce().asnumpy()
    with autograd.record():
        out = net(mx.nd.array(idx))
        loss = (out * mx.nd.array(np.arange(18).reshape(2, 3, 3))).sum()
    loss.backward()
    np.testing.assert_array_equal(out.asnumpy(), w[idx.astype(int)])
    want = np.zeros_like(w)
    np.add.at(want, idx.astype(int).ravel(), np.arange(18).reshape(6, 3).astype(np.float32))
    assert net.weight.grad().stype == "row_sparse"
    assert net.weight.grad().indices.asnumpy().tolist() == [0, 1, 2, 5]
    np.testing.assert_allclose(net.weight.grad().asnumpy(), want)
    assert "SparseEmbedding(6 -> 3" in repr(net)


def test_lambdas():
    x = _x((2, 3), 16)
    np.testing.assert_allclose(nn.Lambda("tanh")(mx.nd.array(x)).asnumpy(), np.tanh(x), rtol=1e-6)
    np.testing.assert_allclose(nn.Lambda(lambda a: a * 2)(mx.nd.array(x)).asnumpy(), 2 * x)
    hl = nn.HybridLambda(lambda F, a: F.LeakyReLU(a, slope=0.1))
    np.testing.assert_allclose(_both(hl, x), np.where(x > 0, x, 0.1 * x), rtol=1e-6)
    with pytest.raises(ValueError, match="no function named"):
        nn.Lambda("no_such_op")
    with pytest.raises(ValueError, match="no operator named"):
        nn.HybridLambda("no_such_op")


def test_gluon_contrib_is_reachable():
    assert gluon.contrib.nn.HybridConcurrent is cnn.HybridConcurrent
    assert mx.gluon.nn.BatchNormReLU is nn.BatchNormReLU


def test_interval_sampler_and_tensor_types():
    from weft.gluon.contrib.data import IntervalSampler
    assert list(IntervalSampler(13, interval=3)) == [0, 3, 6, 9, 12, 1, 4, 7, 10, 2, 5, 8, 11]
    assert list(IntervalSampler(13, interval=3, rollover=False)) == [0, 3, 6, 9, 12]
    assert len(IntervalSampler(7, 2)) == 7 and sorted(IntervalSampler(7, 2)) == list(range(7))
    with pytest.raises(ValueError, match="interval"):
        IntervalSampler(3, 4)
    assert isinstance(mx.nd.ones(1), gluon.tensor_types) and isinstance(mx.sym.var("a"), gluon.tensor_types)


def test_block_save_load_restores_parameters_and_hybridization(tmp_path):
    class Chain(gluon.Block):
        def add(self, block):
            self.register_child(block, block.name + str(len(self._children)))

        def forward(self, x):
            for block in self._children.values():
                x = block(x)
            return x

    def build():
        inner = Chain()
        inner.add(nn.Dense(4))
        outer = Chain()
        outer.add(inner)
        outer.add(nn.Dense(3))
        return outer

    net = build()
    net.initialize()
    net.hybridize()
    x = mx.nd.array(np.random.RandomState(1).randn(2, 5))
    ref = net(x).asnumpy()
    prefix = str(tmp_path / "model")
    net.save(prefix)
    again = build()  # new blocks, new names: matched by their order
    again.load(prefix)
    dense = list(again._children.values())[1]
    assert dense._active
    np.testing.assert_allclose(again(x).asnumpy(), ref, rtol=1e-6)
    other = Chain()
    other.add(nn.Dense(3))
    with pytest.raises(ValueError, match="1 children"):
        other.load(prefix)
