"""MXNet 1.9's legacy neural-network and image operators: the _v1 variants, SyncBatchNorm,
BatchNormWithReLU, Softmax, SVMOutput, IdentityAttachKLSparseReg, amp_cast/amp_multicast,
Crop, im2col/col2im, Correlation, AdaptiveAvgPooling2D, BilinearResize2D and the _image_*
operators: forward against numpy or PyTorch, gradients against central differences or the
loss they differentiate, and error paths."""
import numpy as np
import pytest
import torch
import torch.nn.functional as F

import weft as mx
from weft import autograd, nd
from weft.test_utils import assert_almost_equal, check_numeric_gradient

torch.set_num_threads(1)
RNG = np.random.RandomState(7)


def rand(*shape, dtype=np.float32, lo=-1.0, hi=1.0):
    return RNG.uniform(lo, hi, size=shape).astype(dtype)


def grads_of(fn, arrays, head):
    """Runs fn on NDArrays made from `arrays` under autograd; returns (output, input grads)."""
    xs = [nd.array(a) for a in arrays]
    for x in xs:
        x.attach_grad()
    with autograd.record():
        y = fn(*xs)
    y.backward(nd.array(head))
    return y.asnumpy(), [x.grad.asnumpy() for x in xs]


# ------------------------------------------------------------------ Convolution_v1, Pooling_v1
def test_convolution_v1_matches_torch_forward_and_backward():
    x, w, b = rand(2, 4, 7, 6), rand(6, 2, 3, 2), rand(6)
    params = dict(kernel=(3, 2), num_filter=6, num_group=2, stride=(2, 1), pad=(1, 1), dilate=(1, 2))
    out = nd.Convolution_v1(nd.array(x), nd.array(w), nd.array(b), **params).asnumpy()
    xt, wt, bt = (torch.tensor(a, requires_grad=True) for a in (x, w, b))
    ref = F.conv2d(xt, wt, bt, stride=(2, 1), padding=(1, 1), dilation=(1, 2), groups=2)
    assert_almost_equal(out, ref.detach().numpy(), rtol=1e-4, atol=1e-5)
    head = rand(*out.shape)
    _, (gx, gw, gb) = grads_of(lambda a, c, d: nd.Convolution_v1(a, c, d, **params), [x, w, b], head)
    ref.backward(torch.tensor(head))
    for got, want in ((gx, xt.grad), (gw, wt.grad), (gb, bt.grad)):
        assert_almost_equal(got, want.numpy(), rtol=1e-4, atol=1e-4)


def test_convolution_v1_numeric_gradient_and_errors():
    x, w = rand(1, 2, 5, 4, dtype=np.float64), rand(3, 2, 3, 3, dtype=np.float64)
    check_numeric_gradient("Convolution_v1", [x, w], params=dict(kernel=(3, 3), num_filter=3, no_bias=True, pad=(1, 1)))
    with pytest.raises(mx.base.MXNetError, match="Convolution_v1.*kernel must be"):
        nd.Convolution_v1(nd.ones((1, 2, 5)), nd.ones((3, 2, 3)), kernel=(3,), num_filter=3, no_bias=True)
    with pytest.raises(mx.base.MXNetError, match="layout"):
        nd.Convolution_v1(nd.ones((1, 2, 5, 5)), nd.ones((3, 2, 3, 3)), kernel=(3, 3), num_filter=3, no_bias=True,
                          layout="NCW")
    # A backward called by hand with an ill-fitting weight is refused.
    with pytest.raises(mx.base.MXNetError, match="Convolution_v1"):
        nd.invoke("_backward_Convolution_v1", [nd.ones((1, 3, 3, 3)), nd.ones((1, 2, 5, 5)), nd.ones((3, 2, 2, 2))],
                  dict(kernel=(3, 3), num_filter=3, no_bias=True))


@pytest.mark.parametrize("pool_type", ["max", "avg", "sum"])
def test_pooling_v1_matches_numpy(pool_type):
    x = rand(2, 3, 6, 6)
    out = nd.Pooling_v1(nd.array(x), kernel=(2, 2), stride=(2, 2), pool_type=pool_type).asnumpy()
    win = x.reshape(2, 3, 3, 2, 3, 2)
    ref = {"max": win.max(axis=(3, 5)), "avg": win.mean(axis=(3, 5)), "sum": win.sum(axis=(3, 5))}[pool_type]
    assert_almost_equal(out, ref, rtol=1e-5, atol=1e-6)
    g = nd.Pooling_v1(nd.array(x), global_pool=True, pool_type=pool_type, kernel=(1, 1)).asnumpy()
    assert g.shape == (2, 3, 1, 1)
    check_numeric_gradient("Pooling_v1", [rand(1, 2, 5, 5, dtype=np.float64)],
                           params=dict(kernel=(3, 3), stride=(2, 2), pool_type=pool_type, pooling_convention="full"),
                           numeric_eps=1e-5)


def test_pooling_v1_refuses_what_v1_lacks():
    with pytest.raises(mx.base.MXNetError, match="pool_type"):
        nd.Pooling_v1(nd.ones((1, 1, 4, 4)), kernel=(2, 2), pool_type="lp")
    with pytest.raises(mx.base.MXNetError, match="pooling_convention"):
        nd.Pooling_v1(nd.ones((1, 1, 4, 4)), kernel=(2, 2), pooling_convention="same")


# ------------------------------------------------------------------ the BatchNorm variants
def bn_inputs(shape=(3, 4, 5, 2)):
    C = shape[1]
    return [rand(*shape), rand(C), rand(C), rand(C), rand(C, lo=0.5, hi=1.5)]


def torch_bn_train(x, g, b, eps):
    xt, gt, bt = (torch.tensor(a, requires_grad=True) for a in (x, g, b))
    y = F.batch_norm(xt, None, None, gt, bt, training=True, eps=eps)
    return y, (xt, gt, bt)


@pytest.mark.parametrize("op,extra", [("BatchNorm_v1", {}), ("_contrib_SyncBatchNorm", {"key": "bn0", "ndev": 1})])
def test_batch_norm_variants_train_like_torch(op, extra):
    x, g, b, mm, mv = bn_inputs()
    args = [nd.array(v) for v in (x, g, b, mm, mv)]
    for a in args[:3]:
        a.attach_grad()
    with autograd.record(train_mode=True):
        y = nd.invoke(op, args, dict(eps=1e-3, momentum=0.7, fix_gamma=False, **extra))
    head = rand(*x.shape)
    y.backward(nd.array(head))
    ref, leaves = torch_bn_train(x, g, b, 1e-3)
    ref.backward(torch.tensor(head))
    assert_almost_equal(y.asnumpy(), ref.detach().numpy(), rtol=1e-4, atol=1e-4)
    for a, t in zip(args[:3], leaves):
        assert_almost_equal(a.grad.asnumpy(), t.grad.numpy(), rtol=1e-3, atol=1e-3)
    axes = (0, 2, 3)
    assert_almost_equal(args[3].asnumpy(), 0.7 * mm + 0.3 * x.mean(axis=axes), rtol=1e-5, atol=1e-5)
    assert_almost_equal(args[4].asnumpy(), 0.7 * mv + 0.3 * x.var(axis=axes), rtol=1e-4, atol=1e-5)


def test_batch_norm_variants_inference_and_params():
    x, g, b, mm, mv = bn_inputs()
    ref = (x - mm[None, :, None, None]) / np.sqrt(mv[None, :, None, None] + 1e-3) * g[None, :, None, None] \
        + b[None, :, None, None]
    args = [nd.array(v) for v in (x, g, b, mm, mv)]
    out = nd.BatchNorm_v1(*args, fix_gamma=False).asnumpy()
    assert_almost_equal(out, ref, rtol=1e-4, atol=1e-5)
    out = nd.contrib.SyncBatchNorm(*args, fix_gamma=False, key="k", output_mean_var=True)
    assert len(out) == 3
    assert_almost_equal(out[0].asnumpy(), ref, rtol=1e-4, atol=1e-5)
    sym = mx.sym.contrib.SyncBatchNorm(mx.sym.var("data"), key="k", name="sbn")
    assert sym.list_auxiliary_states() == ["sbn_moving_mean", "sbn_moving_var"]
    with pytest.raises(mx.base.MXNetError, match="key"):
        nd.contrib.SyncBatchNorm(*args)
    with pytest.raises(mx.base.MXNetError, match="axis"):
        nd.BatchNorm_v1(*args, axis=2)


def test_batch_norm_with_relu_forward_backward():
    x, g, b, mm, mv = bn_inputs((2, 3, 4))
    args = [nd.array(v) for v in (x, g, b, mm, mv)]
    for a in args[:3]:
        a.attach_grad()
    with autograd.record(train_mode=True):
        y = nd.contrib.BatchNormWithReLU(*args, fix_gamma=False, eps=1e-4)
    head = rand(*x.shape)
    y.backward(nd.array(head))
    ref, leaves = torch_bn_train(x, g, b, 1e-4)
    ref = torch.relu(ref)
    ref.backward(torch.tensor(head))
    assert_almost_equal(y.asnumpy(), ref.detach().numpy(), rtol=1e-4, atol=1e-4)
    assert (y.asnumpy() >= 0).all() and (y.asnumpy() == 0).any()
    for a, t in zip(args[:3], leaves):
        assert_almost_equal(a.grad.asnumpy(), t.grad.numpy(), rtol=1e-3, atol=1e-3)
    # With the moving statistics (which the forward and backward of one call both use), by central
    # differences.
    x64 = [v.astype(np.float64) for v in (x, g, b, mm, mv)]
    check_numeric_gradient("_contrib_BatchNormWithReLU", x64, params=dict(fix_gamma=False, use_global_stats=True),
                           grad_nodes=[0, 1, 2],
                           numeric_eps=1e-5)
    with pytest.raises(mx.base.MXNetError, match="output"):
        nd.invoke("_backward_contrib_BatchNormWithReLU",
                  [nd.ones((2, 3, 4)), nd.ones((2, 3, 5)), nd.ones((2, 3, 4)), nd.ones(3), nd.ones(3), nd.ones(3)], {})



def test_batch_norm_with_relu_bfloat16_data_float32_parameters():
    # AMP's bf16 graphs give BatchNormWithReLU bfloat16 data with float32 gamma, beta and
    # statistics; the backward takes them the same way and gives float32 parameter gradients.
    x, g, b, mm, mv = bn_inputs((2, 3, 4))
    sym = mx.sym.contrib.BatchNormWithReLU(mx.sym.Variable("data", dtype="bfloat16"), fix_gamma=False,
                                           use_global_stats=True, eps=1e-4, name="bn")
    arg_types, out_types, aux_types = sym.infer_type(data="bfloat16")
    assert [np.dtype(t) for t in arg_types[1:]] == [np.float32, np.float32]
    exe = sym.simple_bind(mx.cpu(), data=x.shape, type_dict={"data": "bfloat16"})
    exe.arg_dict["data"][:] = nd.array(x).astype("bfloat16")
    exe.arg_dict["bn_gamma"][:] = g
    exe.arg_dict["bn_beta"][:] = b
    exe.aux_dict["bn_moving_mean"][:] = mm
    exe.aux_dict["bn_moving_var"][:] = mv
    head = rand(*x.shape)
    y = exe.forward(is_train=True)[0]
    exe.backward(nd.array(head).astype("bfloat16"))
    xb = nd.array(x).astype("bfloat16").astype("float32").asnumpy()
    t = [torch.tensor(v, requires_grad=True) for v in (xb, g, b)]
    shape = (1, 3, 1)
    ref = torch.relu((t[0] - torch.tensor(mm).reshape(shape)) / torch.sqrt(torch.tensor(mv).reshape(shape) + 1e-4)
                     * t[1].reshape(shape) + t[2].reshape(shape))
    ref.backward(torch.tensor(head))
    assert_almost_equal(y.astype("float32").asnumpy(), ref.detach().numpy(), rtol=2e-2, atol=2e-2)
    assert exe.grad_dict["bn_gamma"].dtype == np.float32
    for name, leaf in (("data", t[0]), ("bn_gamma", t[1]), ("bn_beta", t[2])):
        assert_almost_equal(exe.grad_dict[name].astype("float32").asnumpy(), leaf.grad.numpy(), rtol=3e-2, atol=3e-2)
    with pytest.raises(mx.base.MXNetError, match="float64"):
        nd.invoke("_backward_contrib_BatchNormWithReLU",
                  [nd.ones((2, 3, 4)).astype("bfloat16")] * 3 + [nd.ones(3, dtype="float64")] * 3, {})


# ------------------------------------------------------------------ Softmax, SVMOutput
def test_softmax_is_softmax_output():
    x, label = rand(4, 5), np.array([0, 3, 1, 4], np.float32)
    out, (gx, _) = grads_of(lambda a, l: nd.Softmax(a, l, grad_scale=2.0), [x, label], np.ones((4, 5), np.float32))
    e = np.exp(x - x.max(axis=1, keepdims=True))
    p = e / e.sum(axis=1, keepdims=True)
    assert_almost_equal(out, p, rtol=1e-5, atol=1e-6)
    assert_almost_equal(gx, 2.0 * (p - np.eye(5, dtype=np.float32)[label.astype(int)]), rtol=1e-5, atol=1e-6)
    assert mx.sym.Softmax(mx.sym.var("d"), name="s").list_arguments() == ["d", "s_label"]


def svm_loss(x, label, margin, reg, linear):
    y = -np.ones_like(x)
    y[np.arange(x.shape[0]), label] = 1
    slack = np.maximum(0, margin - y * x)
    return reg * (slack.sum() if linear else (slack ** 2).sum())


@pytest.mark.parametrize("linear", [False, True])
def test_svm_output_gradient_is_the_hinge_loss_derivative(linear):
    x = rand(6, 4, lo=-2, hi=2).astype(np.float64)
    label = RNG.randint(0, 4, size=6)
    params = dict(margin=0.7, regularization_coefficient=1.5, use_linear=linear)
    out, (gx, gl) = grads_of(lambda a, l: nd.SVMOutput(a, l, **params), [x, label.astype(np.float64)],
                             rand(6, 4))  # the head gradient is ignored
    assert_almost_equal(out, x, rtol=0, atol=1e-6)
    eps, num = 1e-6, np.zeros_like(x)
    for i in np.ndindex(*x.shape):
        xp, xm = x.copy(), x.copy()
        xp[i] += eps
        xm[i] -= eps
        num[i] = (svm_loss(xp, label, 0.7, 1.5, linear) - svm_loss(xm, label, 0.7, 1.5, linear)) / (2 * eps)
    assert_almost_equal(gx, num, rtol=1e-4, atol=1e-4)
    assert np.abs(gx).sum() > 0


def test_svm_output_errors():
    with pytest.raises(mx.base.MXNetError, match="label"):
        nd.SVMOutput(nd.ones((3, 4)), nd.ones((4,)))
    with pytest.raises(mx.base.MXNetError, match="label"):
        nd.invoke("_backward_SVMOutput", [nd.ones((3, 4)), nd.ones((2,))], {})
    with pytest.raises(mx.base.MXNetError, match="floating-point"):
        nd.SVMOutput(nd.ones((3, 4), dtype="int32"), nd.ones((3,)))


# ------------------------------------------------------------------ IdentityAttachKLSparseReg
def test_identity_attach_kl_sparse_reg_updates_average_and_adds_penalty():
    x = rand(5, 3, lo=0.1, hi=0.9)
    avg0 = np.array([0.2, 0.5, 0.7], np.float32)
    data, avg = nd.array(x), nd.array(avg0)
    data.attach_grad()
    head = rand(5, 3)
    with autograd.record():
        y = nd.IdentityAttachKLSparseReg(data, avg, sparseness_target=0.2, penalty=0.01, momentum=0.8)
    y.backward(nd.array(head))
    assert_almost_equal(y.asnumpy(), x, rtol=0, atol=0)
    m = 0.8 * avg0 + 0.2 * x.mean(axis=0)
    assert_almost_equal(avg.asnumpy(), m, rtol=1e-6, atol=1e-6)
    assert_almost_equal(data.grad.asnumpy(), head + 0.01 * (-0.2 / m + 0.8 / (1 - m)), rtol=1e-5, atol=1e-6)


def test_identity_attach_kl_sparse_reg_errors():
    with pytest.raises(mx.base.MXNetError, match="2-D"):
        nd.IdentityAttachKLSparseReg(nd.ones((2, 3, 4)), nd.ones(3))
    with pytest.raises(mx.base.MXNetError, match="moving_avg"):
        nd.IdentityAttachKLSparseReg(nd.ones((2, 3)), nd.ones(4))
    with pytest.raises(mx.base.MXNetError, match="moving_avg|shape"):
        nd.invoke("_backward_IdentityAttachKLSparseReg", [nd.ones((2, 3)), nd.ones((2, 3)), nd.ones(2)], {})


# ------------------------------------------------------------------ amp_cast, amp_multicast
def test_amp_cast_casts_floats_only():
    x = rand(3, 4)
    y = nd.amp_cast(nd.array(x), dtype="float16")
    assert y.dtype == np.float16
    assert_almost_equal(y.asnumpy(), x.astype(np.float16), rtol=0, atol=0)
    i = nd.amp_cast(nd.array([1, 2, 3], dtype="int32"), dtype="float16")
    assert i.dtype == np.int32
    xh = nd.array(x, dtype="float16")
    xh.attach_grad()
    with autograd.record():
        z = nd.amp_cast(xh, dtype="float32")
    z.backward(nd.array(x * 3))
    assert z.dtype == np.float32 and xh.grad.dtype == np.float16
    assert_almost_equal(xh.grad.asnumpy(), (x * 3).astype(np.float16), rtol=0, atol=0)


def test_amp_multicast_widest_and_narrowest():
    a, b = nd.array(rand(2, 2), dtype="float16"), nd.array(rand(3), dtype="float32")
    c = nd.array([1, 2], dtype="int64")
    wide = nd.amp_multicast(a, b, c, num_outputs=3)
    assert [o.dtype for o in wide] == [np.float32, np.float32, np.int64]
    assert_almost_equal(wide[0].asnumpy(), a.asnumpy().astype(np.float32), rtol=0, atol=0)
    narrow = nd.amp_multicast(a, b, c, num_outputs=3, cast_narrow=True)
    assert [o.dtype for o in narrow] == [np.float16, np.float16, np.int64]
    assert_almost_equal(narrow[1].asnumpy(), b.asnumpy().astype(np.float16), rtol=0, atol=0)
    a.attach_grad()
    b.attach_grad()
    with autograd.record():
        o = nd.amp_multicast(a, b, num_outputs=2)
    autograd.backward(o, [nd.ones((2, 2)), nd.ones(3) * 2])
    assert a.grad.dtype == np.float16 and (a.grad.asnumpy() == 1).all() and (b.grad.asnumpy() == 2).all()
    with pytest.raises(mx.base.MXNetError, match="num_outputs|input"):
        nd.amp_multicast(a, b, num_outputs=3)


# ------------------------------------------------------------------ Crop
def test_crop_one_input_offset_and_center():
    x = rand(2, 3, 7, 9)
    out = nd.Crop(nd.array(x), num_args=1, h_w=(4, 5), offset=(2, 3)).asnumpy()
    assert_almost_equal(out, x[:, :, 2:6, 3:8], rtol=0, atol=0)
    out = nd.Crop(nd.array(x), num_args=1, h_w=(4, 4), center_crop=True).asnumpy()
    assert_almost_equal(out, x[:, :, 1:5, 2:6], rtol=0, atol=0)
    head = rand(2, 3, 4, 5)
    _, (gx,) = grads_of(lambda a: nd.Crop(a, num_args=1, h_w=(4, 5), offset=(2, 3)), [x], head)
    want = np.zeros_like(x)
    want[:, :, 2:6, 3:8] = head
    assert_almost_equal(gx, want, rtol=0, atol=0)
    check_numeric_gradient("Crop", [rand(1, 2, 5, 5, dtype=np.float64)], params=dict(num_args=1, h_w=(2, 3),
                                                                                     offset=(1, 2)))


def test_crop_like_second_input():
    x, like = rand(1, 2, 6, 6), rand(1, 5, 3, 2)
    out, (gx, gl) = grads_of(lambda a, b: nd.Crop(a, b, num_args=2, offset=(1, 4)), [x, like], rand(1, 2, 3, 2))
    assert_almost_equal(out, x[:, :, 1:4, 4:6], rtol=0, atol=0)
    assert (gl == 0).all() and gx[:, :, 1:4, 4:6].any() and not gx[:, :, :1].any()
    sym = mx.sym.Crop(mx.sym.var("a"), mx.sym.var("b"), num_args=2, center_crop=True)
    _, out_shapes, _ = sym.infer_shape(a=(1, 2, 6, 6), b=(1, 5, 3, 2))
    assert out_shapes == [(1, 2, 3, 2)]


def test_crop_errors():
    x = nd.ones((1, 1, 4, 4))
    with pytest.raises(mx.base.MXNetError, match="larger than"):
        nd.Crop(x, num_args=1, h_w=(5, 2))
    with pytest.raises(mx.base.MXNetError, match="offset"):
        nd.Crop(x, num_args=1, h_w=(2, 2), offset=(3, 0))
    with pytest.raises(mx.base.MXNetError, match="4-D"):
        nd.Crop(nd.ones((4, 4)), num_args=1, h_w=(2, 2))
    with pytest.raises(mx.base.MXNetError, match="h_w"):
        nd.Crop(x, num_args=1)
    with pytest.raises(mx.base.MXNetError, match="window"):
        nd.invoke("_backward_Crop", [nd.ones((1, 1, 5, 2)), x], dict(num_args=1, h_w=(5, 2)))
    with pytest.raises(mx.base.MXNetError, match="h_w"):
        nd.invoke("_backward_Crop", [nd.ones((1, 1, 3, 2)), x], dict(num_args=1, h_w=(2, 2)))


# ------------------------------------------------------------------ im2col, col2im
@pytest.mark.parametrize("params", [dict(kernel=(3, 2), stride=(2, 1), pad=(1, 1), dilate=(1, 2)),
                                    dict(kernel=(2, 2)), dict(kernel=(3, 3), pad=(2, 0), stride=(1, 3))])
def test_im2col_col2im_match_torch_unfold_fold(params):
    x = rand(2, 3, 6, 7)
    kw = dict(kernel_size=params["kernel"], stride=params.get("stride", 1), padding=params.get("pad", 0),
              dilation=params.get("dilate", 1))
    cols = nd.im2col(nd.array(x), **params).asnumpy()
    ref = F.unfold(torch.tensor(x), **kw).numpy()
    assert_almost_equal(cols, ref, rtol=0, atol=0)
    c = rand(*cols.shape)
    img = nd.col2im(nd.array(c), output_size=(6, 7), **params).asnumpy()
    assert_almost_equal(img, F.fold(torch.tensor(c), output_size=(6, 7), **kw).numpy(), rtol=1e-5, atol=1e-5)
    check_numeric_gradient("im2col", [rand(1, 2, 6, 7, dtype=np.float64)], params=params)
    check_numeric_gradient("col2im", [c[:1, :].astype(np.float64)], params=dict(output_size=(6, 7), **params))


def test_im2col_1d_and_3d():
    x = rand(2, 2, 9)
    cols = nd.im2col(nd.array(x), kernel=(3,), stride=(2,), pad=(1,)).asnumpy()
    ref = F.unfold(torch.tensor(x[:, :, None, :]), kernel_size=(1, 3), stride=(1, 2), padding=(0, 1)).numpy()
    assert_almost_equal(cols, ref, rtol=0, atol=0)
    x3 = rand(1, 2, 3, 4, 4)
    cols3 = nd.im2col(nd.array(x3), kernel=(2, 2, 2)).asnumpy()
    assert cols3.shape == (1, 16, 2 * 3 * 3)
    # Column (c=1, tap (1, 0, 1)) at block (1, 2, 0) reads x3[0, 1, 2, 2, 1].
    assert cols3[0, 8 + 5, (1 * 3 + 2) * 3 + 0] == x3[0, 1, 2, 2, 1]


def test_im2col_col2im_errors():
    with pytest.raises(mx.base.MXNetError, match="rank"):
        nd.im2col(nd.ones((1, 2, 5)), kernel=(2, 2))
    with pytest.raises(mx.base.MXNetError, match="larger than the padded"):
        nd.im2col(nd.ones((1, 2, 3, 3)), kernel=(4, 2))
    with pytest.raises(mx.base.MXNetError, match="block positions"):
        nd.col2im(nd.ones((1, 8, 5)), output_size=(3, 3), kernel=(2, 2))
    with pytest.raises(mx.base.MXNetError, match="multiple"):
        nd.col2im(nd.ones((1, 7, 4)), output_size=(3, 3), kernel=(2, 2))
    with pytest.raises(mx.base.MXNetError, match="same number of axes"):
        nd.col2im(nd.ones((1, 8, 4)), output_size=(3, 3, 3), kernel=(2, 2))
    with pytest.raises(mx.base.MXNetError, match="out_grad"):
        nd.invoke("_backward_im2col", [nd.ones((1, 8, 5)), nd.ones((1, 2, 3, 3))], dict(kernel=(2, 2)))
    with pytest.raises(mx.base.MXNetError, match="output_size"):
        nd.invoke("_backward_col2im", [nd.ones((1, 2, 4, 3))], dict(output_size=(3, 3), kernel=(2, 2)))


# ------------------------------------------------------------------ Correlation
def correlation_ref(a, b, k, md, s1, s2, pad, mul):
    n, c, H, W = a.shape
    pa = np.pad(a, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    pb = np.pad(b, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    border = md + (k - 1) // 2
    th = -(-(H + 2 * pad - 2 * border) // s1)
    tw = -(-(W + 2 * pad - 2 * border) // s1)
    r = md // s2
    grid = 2 * r + 1
    out = np.zeros((n, grid * grid, th, tw))
    for i in range(th):
        for j in range(tw):
            y1, x1 = i * s1 + md, j * s1 + md
            p1 = pa[:, :, y1:y1 + k, x1:x1 + k]
            for t in range(grid * grid):
                y2, x2 = y1 + (t // grid - r) * s2, x1 + (t % grid - r) * s2
                p2 = pb[:, :, y2:y2 + k, x2:x2 + k]
                v = p1 * p2 if mul else np.abs(p1 - p2)
                out[:, t, i, j] = v.sum(axis=(1, 2, 3)) / (k * k * c)
    return out


@pytest.mark.parametrize("k,md,s1,s2,pad,mul", [(1, 1, 1, 1, 0, True), (3, 2, 2, 1, 2, True), (3, 4, 1, 2, 4, False),
                                                (1, 2, 1, 1, 2, False)])
def test_correlation_matches_reference(k, md, s1, s2, pad, mul):
    a, b = rand(2, 3, 7, 8), rand(2, 3, 7, 8)
    params = dict(kernel_size=k, max_displacement=md, stride1=s1, stride2=s2, pad_size=pad, is_multiply=mul)
    out = nd.Correlation(nd.array(a), nd.array(b), **params).asnumpy()
    assert_almost_equal(out, correlation_ref(a, b, k, md, s1, s2, pad, mul), rtol=1e-5, atol=1e-6)
    a64, b64 = rand(1, 2, 5, 6, dtype=np.float64), rand(1, 2, 5, 6, dtype=np.float64)
    check_numeric_gradient("Correlation", [a64, b64], params=params, numeric_eps=1e-6)


def test_correlation_errors():
    a = nd.ones((1, 2, 4, 4))
    with pytest.raises(mx.base.MXNetError, match="odd"):
        nd.Correlation(a, a, kernel_size=2)
    with pytest.raises(mx.base.MXNetError, match="too small"):
        nd.Correlation(a, a, max_displacement=2)
    with pytest.raises(mx.base.MXNetError, match="data2"):
        nd.Correlation(a, nd.ones((1, 2, 4, 5)))
    with pytest.raises(mx.base.MXNetError, match="4-D"):
        nd.Correlation(nd.ones((2, 4, 4)), nd.ones((2, 4, 4)))
    with pytest.raises(mx.base.MXNetError, match="out_grad"):
        nd.invoke("_backward_Correlation", [nd.ones((1, 9, 3, 3)), a, a], {})


# ------------------------------------------------------------------ BilinearResize2D
@pytest.mark.parametrize("align", [True, False])
@pytest.mark.parametrize("hw", [(9, 4), (3, 11), (5, 6)])
def test_bilinear_resize_matches_torch(align, hw):
    x = rand(2, 3, 5, 6)
    out = nd.contrib.BilinearResize2D(nd.array(x), height=hw[0], width=hw[1], align_corners=align).asnumpy()
    xt = torch.tensor(x, requires_grad=True)
    ref = F.interpolate(xt, size=hw, mode="bilinear", align_corners=align)
    assert_almost_equal(out, ref.detach().numpy(), rtol=1e-5, atol=1e-5)
    head = rand(*out.shape)
    _, (gx,) = grads_of(lambda a: nd.contrib.BilinearResize2D(a, height=hw[0], width=hw[1], align_corners=align),
                        [x], head)
    ref.backward(torch.tensor(head))
    assert_almost_equal(gx, xt.grad.numpy(), rtol=1e-4, atol=1e-5)
    check_numeric_gradient("_contrib_BilinearResize2D", [rand(1, 2, 4, 3, dtype=np.float64)],
                           params=dict(height=hw[0], width=hw[1], align_corners=align))


@pytest.mark.parametrize("mode,params,want", [
    ("size", dict(scale_height=2.0, scale_width=0.5), (10, 3)),
    ("odd_scale", dict(scale_height=2.0, scale_width=2.0), (9, 12)),
    ("to_even_down", {}, (4, 6)), ("to_even_up", {}, (6, 6)),
    ("to_odd_down", {}, (5, 5)), ("to_odd_up", {}, (5, 7))])
def test_bilinear_resize_modes(mode, params, want):
    x = rand(1, 2, 5, 6)
    out = nd.contrib.BilinearResize2D(nd.array(x), mode=mode, **params).asnumpy()
    assert out.shape == (1, 2) + want
    ref = F.interpolate(torch.tensor(x), size=want, mode="bilinear", align_corners=True).numpy()
    assert_almost_equal(out, ref, rtol=1e-5, atol=1e-5)


def test_bilinear_resize_like_and_errors():
    x, like = rand(1, 2, 4, 4), rand(3, 1, 6, 2)
    out, (gx, gl) = grads_of(lambda a, b: nd.contrib.BilinearResize2D(a, b, mode="like"), [x, like], rand(1, 2, 6, 2))
    ref = F.interpolate(torch.tensor(x), size=(6, 2), mode="bilinear", align_corners=True).numpy()
    assert_almost_equal(out, ref, rtol=1e-5, atol=1e-5)
    assert (gl == 0).all() and np.abs(gx).sum() > 0
    with pytest.raises(mx.base.MXNetError, match="scale_height"):
        nd.contrib.BilinearResize2D(nd.array(x), mode="odd_scale", scale_width=2.0)
    with pytest.raises(mx.base.MXNetError, match="4-D"):
        nd.contrib.BilinearResize2D(nd.ones((2, 4, 4)), height=2, width=2)
    with pytest.raises(mx.base.MXNetError, match="mode"):
        nd.contrib.BilinearResize2D(nd.array(x), mode="scale")
    with pytest.raises(mx.base.MXNetError, match="floating-point"):
        nd.contrib.BilinearResize2D(nd.ones((1, 1, 2, 2), dtype="int32"), height=3, width=3)
    with pytest.raises(mx.base.MXNetError, match="out_grad|input"):
        nd.invoke("_backward_contrib_BilinearResize2D", [nd.ones((1, 2, 3, 3)), nd.array(x)], dict(height=4, width=4))


# ------------------------------------------------------------------ AdaptiveAvgPooling2D
@pytest.mark.parametrize("size,want", [((3, 2), (3, 2)), (4, (4, 4)), ((), (1, 1)), ((7, 5), (7, 5))])
def test_adaptive_avg_pooling_matches_torch(size, want):
    x = rand(2, 3, 7, 9)
    params = {} if size == () else dict(output_size=size)
    out = nd.contrib.AdaptiveAvgPooling2D(nd.array(x), **params).asnumpy()
    xt = torch.tensor(x, requires_grad=True)
    ref = F.adaptive_avg_pool2d(xt, want)
    assert_almost_equal(out, ref.detach().numpy(), rtol=1e-5, atol=1e-6)
    head = rand(*out.shape)
    _, (gx,) = grads_of(lambda a: nd.contrib.AdaptiveAvgPooling2D(a, **params), [x], head)
    ref.backward(torch.tensor(head))
    assert_almost_equal(gx, xt.grad.numpy(), rtol=1e-5, atol=1e-6)
    check_numeric_gradient("_contrib_AdaptiveAvgPooling2D", [rand(1, 2, 5, 4, dtype=np.float64)], params=params)


def test_adaptive_avg_pooling_errors():
    with pytest.raises(mx.base.MXNetError, match="4-D"):
        nd.contrib.AdaptiveAvgPooling2D(nd.ones((2, 3, 4)), output_size=2)
    with pytest.raises(mx.base.MXNetError, match="output_size"):
        nd.contrib.AdaptiveAvgPooling2D(nd.ones((1, 1, 4, 4)), output_size=(1, 2, 3))
    with pytest.raises(mx.base.MXNetError, match="positive"):
        nd.contrib.AdaptiveAvgPooling2D(nd.ones((1, 1, 4, 4)), output_size=(0, 2))
    with pytest.raises(mx.base.MXNetError, match="out_grad|input"):
        nd.invoke("_backward_contrib_AdaptiveAvgPooling2D", [nd.ones((1, 1, 3, 3)), nd.ones((1, 1, 4, 4))],
                  dict(output_size=2))


# ------------------------------------------------------------------ image: to_tensor, normalize
def image_u8(h=5, w=6, c=3, n=None):
    shape = (h, w, c) if n is None else (n, h, w, c)
    return RNG.randint(0, 256, size=shape).astype(np.uint8)


def test_image_to_tensor():
    x = image_u8()
    out = nd.image.to_tensor(nd.array(x, dtype="uint8"))
    assert out.dtype == np.float32
    assert_almost_equal(out.asnumpy(), x.transpose(2, 0, 1).astype(np.float32) / 255, rtol=1e-6, atol=1e-7)
    xb = image_u8(n=2, c=1)
    out = nd.image.to_tensor(nd.array(xb, dtype="uint8")).asnumpy()
    assert_almost_equal(out, xb.transpose(0, 3, 1, 2).astype(np.float32) / 255, rtol=1e-6, atol=1e-7)
    with pytest.raises(mx.base.MXNetError, match="height, width, channels"):
        nd.image.to_tensor(nd.ones((4, 4)))


def test_image_normalize_forward_gradient_errors():
    x = rand(3, 4, 5)
    mean, std = (0.1, 0.2, 0.3), (0.5, 0.25, 2.0)
    out = nd.image.normalize(nd.array(x), mean=mean, std=std).asnumpy()
    ref = (x - np.array(mean, np.float32)[:, None, None]) / np.array(std, np.float32)[:, None, None]
    assert_almost_equal(out, ref, rtol=1e-5, atol=1e-6)
    xb = rand(2, 1, 3, 3)
    assert_almost_equal(nd.image.normalize(nd.array(xb), mean=0.5, std=0.5).asnumpy(), (xb - 0.5) / 0.5,
                        rtol=1e-5, atol=1e-6)
    assert_almost_equal(nd.image.normalize(nd.array(x)).asnumpy(), x, rtol=0, atol=0)  # MXNet's defaults
    check_numeric_gradient("_image_normalize", [x.astype(np.float64)], params=dict(mean=mean, std=std))
    with pytest.raises(mx.base.MXNetError, match="mean has 2 values"):
        nd.image.normalize(nd.array(x), mean=(0.1, 0.2))
    with pytest.raises(mx.base.MXNetError, match="std must not be 0"):
        nd.image.normalize(nd.array(x), std=(1, 0, 1))
    with pytest.raises(mx.base.MXNetError, match="channels, height, width"):
        nd.image.normalize(nd.ones((4, 4)))
    with pytest.raises(mx.base.MXNetError, match="out_grad|input"):
        nd.invoke("_backward_image_normalize", [nd.ones((3, 4, 4)), nd.array(x)], {})


# ------------------------------------------------------------------ image: flips, crop
@pytest.mark.parametrize("h", [4, 5])
def test_image_flips(h):
    x = image_u8(h=h, w=h + 2)
    xa = nd.array(x, dtype="uint8")
    assert (nd.image.flip_left_right(xa).asnumpy() == x[:, ::-1]).all()
    assert (nd.image.flip_top_bottom(xa).asnumpy() == x[::-1]).all()
    xf = rand(h, 3, 1, dtype=np.float64)
    check_numeric_gradient("_image_flip_left_right", [xf])
    check_numeric_gradient("_image_flip_top_bottom", [xf])


@pytest.mark.parametrize("op,flip", [("random_flip_left_right", lambda a: a[:, ::-1]),
                                     ("random_flip_top_bottom", lambda a: a[::-1])])
def test_image_random_flips_are_seeded(op, flip):
    x = image_u8()
    fn = getattr(nd.image, op)

    def run(seed):
        mx.random.seed(seed)
        return [fn(nd.array(x, dtype="uint8")).asnumpy() for _ in range(24)]

    first, again = run(3), run(3)
    flipped = [bool((o == flip(x)).all()) for o in first]
    assert all((o == x).all() or f for o, f in zip(first, flipped))
    assert 0 < sum(flipped) < len(flipped)
    assert all((a == b).all() for a, b in zip(first, again))
    assert [bool((o == flip(x)).all()) for o in run(4)] != flipped


def test_image_crop_forward_backward_errors():
    x = image_u8(h=6, w=7)
    out = nd.image.crop(nd.array(x, dtype="uint8"), x=2, y=1, width=4, height=3).asnumpy()
    assert (out == x[1:4, 2:6]).all()
    xb = rand(2, 6, 7, 3)
    outb = nd.image.crop(nd.array(xb), x=0, y=3, width=7, height=3).asnumpy()
    assert_almost_equal(outb, xb[:, 3:6], rtol=0, atol=0)
    check_numeric_gradient("_image_crop", [rand(2, 5, 4, 3, dtype=np.float64)], params=dict(x=1, y=2, width=2, height=3))
    with pytest.raises(mx.base.MXNetError, match="does not fit"):
        nd.image.crop(nd.array(x, dtype="uint8"), x=4, y=0, width=4, height=2)
    with pytest.raises(mx.base.MXNetError, match="positive"):
        nd.image.crop(nd.array(x, dtype="uint8"), x=0, y=0, width=0, height=2)
    with pytest.raises(mx.base.MXNetError, match="out_grad|input"):
        nd.invoke("_backward_image_crop", [nd.ones((3, 3, 3)), nd.ones((6, 7, 3))], dict(x=0, y=0, width=4, height=3))


# ------------------------------------------------------------------ image: colour
GREY = np.array([0.299, 0.587, 0.114], np.float32)


def test_image_random_brightness_contrast_saturation():
    x = rand(5, 6, 3, lo=0, hi=255)
    xa = nd.array(x)
    out = nd.image.random_brightness(xa, min_factor=0.6, max_factor=0.6).asnumpy()
    assert_almost_equal(out, x * np.float32(0.6), rtol=1e-6, atol=1e-4)
    out = nd.image.random_contrast(xa, min_factor=0.3, max_factor=0.3).asnumpy()
    assert_almost_equal(out, x * 0.3 + 0.7 * (x * GREY).sum(axis=2).mean(), rtol=1e-5, atol=1e-3)
    out = nd.image.random_saturation(xa, min_factor=1.7, max_factor=1.7).asnumpy()
    assert_almost_equal(out, x * 1.7 - 0.7 * (x * GREY).sum(axis=2, keepdims=True), rtol=1e-5, atol=1e-3)
    # uint8 images saturate and truncate.
    u = image_u8()
    out = nd.image.random_brightness(nd.array(u, dtype="uint8"), min_factor=1.5, max_factor=1.5)
    assert out.dtype == np.uint8
    assert (out.asnumpy() == np.clip(u.astype(np.float32) * 1.5, 0, 255).astype(np.uint8)).all()
    grey = image_u8(c=1)
    assert (nd.image.random_saturation(nd.array(grey, dtype="uint8"), min_factor=0.2, max_factor=0.2).asnumpy()
            == grey).all()


def test_image_random_factor_is_drawn_in_range_and_seeded():
    x = nd.array(rand(3, 3, 3, lo=1, hi=255))
    ratios = []
    for seed in (1, 1, 2):
        mx.random.seed(seed)
        ratios.append([float((nd.image.random_brightness(x, min_factor=0.5, max_factor=2.0) / x).asnumpy().mean())
                       for _ in range(8)])
    assert ratios[0] == ratios[1] and ratios[0] != ratios[2]
    assert all(0.5 <= r < 2.0 for r in ratios[0] + ratios[2]) and len(set(ratios[0])) == 8
    with pytest.raises(mx.base.MXNetError, match="min_factor"):
        nd.image.random_brightness(x, min_factor=2.0, max_factor=1.0)
    with pytest.raises(mx.base.MXNetError, match="1 or 3 channels"):
        nd.image.random_contrast(nd.ones((3, 3, 2)), min_factor=1, max_factor=1)
    with pytest.raises(mx.base.MXNetError, match="height, width, channels"):
        nd.image.random_hue(nd.ones((2, 3, 3, 3)), min_factor=0, max_factor=0.1)


def hue_ref(x, turn):
    import colorsys
    out = np.empty_like(x)
    for idx in np.ndindex(*x.shape[:2]):
        h, l, s = colorsys.rgb_to_hls(*(x[idx] / 255.0))
        out[idx] = np.array(colorsys.hls_to_rgb((h + turn) % 1.0, l, s)) * 255
    return out


@pytest.mark.parametrize("turn", [0.1, 0.35, 0.5, 0.9])
def test_image_random_hue_matches_colorsys(turn):
    x = rand(4, 5, 3, lo=0, hi=255)
    out = nd.image.random_hue(nd.array(x), min_factor=turn, max_factor=turn).asnumpy()
    assert_almost_equal(out, hue_ref(x, turn), rtol=1e-4, atol=2e-2)
    grey = rand(3, 3, 1, lo=0, hi=255)
    assert (nd.image.random_hue(nd.array(grey), min_factor=turn, max_factor=turn).asnumpy() == grey).all()


def test_image_random_color_jitter_seeded_and_bounded():
    x = nd.array(rand(4, 4, 3, lo=10, hi=200))

    def run(seed):
        mx.random.seed(seed)
        return [nd.image.random_color_jitter(x, brightness=0.3, contrast=0.3, saturation=0.3, hue=0.1).asnumpy()
                for _ in range(4)]

    a, b, c = run(5), run(5), run(6)
    assert all((p == q).all() for p, q in zip(a, b))
    assert any(not np.allclose(p, q) for p, q in zip(a, c))
    ratio = nd.image.random_color_jitter(x, brightness=0.25, contrast=0, saturation=0, hue=0).asnumpy() / x.asnumpy()
    assert np.allclose(ratio, ratio.flat[0], rtol=1e-5) and 0.75 <= ratio.flat[0] <= 1.25
    # Nothing to jitter: the image unchanged.
    same = nd.image.random_color_jitter(x, brightness=0, contrast=0, saturation=0, hue=0).asnumpy()
    assert (same == x.asnumpy()).all()
    with pytest.raises(mx.base.MXNetError, match="brightness"):
        nd.image.random_color_jitter(x, brightness=-1, contrast=0, saturation=0, hue=0)


EIGVAL = np.array([55.46, 4.794, 1.148])
EIGVEC = np.array([[-0.5675, 0.7192, 0.4009], [-0.5808, -0.0045, -0.8140], [-0.5836, -0.6948, 0.4203]])


def test_image_lighting():
    x = rand(3, 4, 3, lo=0, hi=255)
    alpha = (0.02, -0.05, 0.1)
    out = nd.image.adjust_lighting(nd.array(x), alpha=alpha).asnumpy()
    assert_almost_equal(out, x + EIGVEC @ (np.array(alpha) * EIGVAL), rtol=1e-5, atol=1e-3)
    mx.random.seed(9)
    r1 = nd.image.random_lighting(nd.array(x), alpha_std=0.1).asnumpy()
    mx.random.seed(9)
    r2 = nd.image.random_lighting(nd.array(x), alpha_std=0.1).asnumpy()
    assert (r1 == r2).all() and not np.allclose(r1, x)
    shift = (r1 - x).reshape(-1, 3)
    assert np.allclose(shift, shift[0], atol=1e-3)  # one colour shift for the whole image
    assert (nd.image.random_lighting(nd.array(x), alpha_std=0).asnumpy() == x).all()
    with pytest.raises(mx.base.MXNetError, match="3 values"):
        nd.image.adjust_lighting(nd.array(x), alpha=(0.1, 0.2))


# ------------------------------------------------------------------ image: resize
@pytest.mark.parametrize("size,keep,want", [((8, 3), False, (3, 8)), (4, False, (4, 4)), (3, True, (3, 4)),
                                            ((5, 5), False, (5, 5))])
def test_image_resize_bilinear_matches_torch(size, keep, want):
    x = rand(2, 5, 7, 3, lo=0, hi=255)
    out = nd.image.resize(nd.array(x), size=size, keep_ratio=keep).asnumpy()
    assert out.shape == (2,) + want + (3,)
    ref = F.interpolate(torch.tensor(x).permute(0, 3, 1, 2), size=want, mode="bilinear", align_corners=False)
    assert_almost_equal(out, ref.permute(0, 2, 3, 1).numpy(), rtol=1e-5, atol=1e-3)
    u = image_u8(h=5, w=7)
    outu = nd.image.resize(nd.array(u, dtype="uint8"), size=size, keep_ratio=keep)
    assert outu.dtype == np.uint8
    refu = F.interpolate(torch.tensor(u.astype(np.float32)).permute(2, 0, 1)[None], size=want, mode="bilinear",
                         align_corners=False)[0].permute(1, 2, 0).numpy()
    assert np.abs(outu.asnumpy().astype(np.float32) - np.floor(refu + 0.5)).max() <= 1


def test_image_resize_nearest_and_errors():
    u = image_u8(h=5, w=7)
    out = nd.image.resize(nd.array(u, dtype="uint8"), size=(10, 3), interp=0).asnumpy()
    ys = np.floor(np.arange(3) * 5 / 3).astype(int)
    xs = np.floor(np.arange(10) * 7 / 10).astype(int)
    assert (out == u[ys][:, xs]).all()
    x = nd.array(u, dtype="uint8")
    with pytest.raises(mx.base.MXNetError, match="interp=5"):
        nd.image.resize(x, size=4, interp=5)
    with pytest.raises(mx.base.MXNetError, match="size"):
        nd.image.resize(x)
    with pytest.raises(mx.base.MXNetError, match="positive"):
        nd.image.resize(x, size=(0, 4))
    with pytest.raises(mx.base.MXNetError, match="height, width, channels"):
        nd.image.resize(nd.ones((4, 4)), size=2)


# ------------------------------------------------------------------ graphs of the legacy operators
def test_legacy_network_binds_and_matches_current_operators():
    def net(conv, bn, pool):
        d = mx.sym.var("data")
        x = conv(d, kernel=(3, 3), num_filter=4, pad=(1, 1), name="c")
        x = bn(x, fix_gamma=False, name="bn")
        x = pool(x, kernel=(2, 2), stride=(2, 2), pool_type="max", name="p")
        return mx.sym.SVMOutput(mx.sym.flatten(x), name="svm")

    old = net(mx.sym.Convolution_v1, mx.sym.BatchNorm_v1, mx.sym.Pooling_v1)
    new = net(mx.sym.Convolution, mx.sym.BatchNorm, mx.sym.Pooling)
    assert old.list_arguments() == new.list_arguments()
    assert old.list_auxiliary_states() == ["bn_moving_mean", "bn_moving_var"]
    old = mx.sym.load_json(old.tojson())
    values = {n: rand(*s) for n, s in zip(old.list_arguments(),
                                          old.infer_shape(data=(2, 3, 6, 6), svm_label=(2,))[0])}
    values["svm_label"] = np.array([1, 7], np.float32)
    results = []
    for sym in (old, new):
        ex = sym.simple_bind(mx.cpu(), data=(2, 3, 6, 6), svm_label=(2,))
        for n, v in values.items():
            ex.arg_dict[n][:] = v
        ex.aux_dict["bn_moving_var"][:] = 1
        ex.forward(is_train=True)
        ex.backward()
        results.append([ex.outputs[0].asnumpy()] + [ex.grad_dict[n].asnumpy() for n in ("data", "c_weight", "bn_gamma")]
                       + [ex.aux_dict["bn_moving_mean"].asnumpy()])
    for a, b in zip(*results):
        assert_almost_equal(a, b, rtol=1e-5, atol=1e-6)
    assert np.abs(results[0][1]).sum() > 0


def test_kl_sparse_reg_in_a_graph_updates_its_auxiliary_state():
    s = mx.sym.IdentityAttachKLSparseReg(mx.sym.sigmoid(mx.sym.var("data")), momentum=0.5, penalty=0.1, name="kl")
    assert s.list_auxiliary_states() == ["kl_moving_avg"]
    ex = s.simple_bind(mx.cpu(), data=(4, 3))
    x = rand(4, 3)
    ex.arg_dict["data"][:] = x
    ex.aux_dict["kl_moving_avg"][:] = 0.5
    ex.forward(is_train=True)
    ex.backward(nd.ones((4, 3)))
    sig = 1 / (1 + np.exp(-x))
    m = 0.25 + 0.5 * sig.mean(axis=0)
    assert_almost_equal(ex.aux_dict["kl_moving_avg"].asnumpy(), m, rtol=1e-5, atol=1e-6)
    want = (1 + 0.1 * (-0.1 / m + 0.9 / (1 - m))) * sig * (1 - sig)
    assert_almost_equal(ex.grad_dict["data"].asnumpy(), want, rtol=1e-4, atol=1e-6)


def test_remove_amp_cast_and_save_checkpoint(tmp_path):
    d, w = mx.sym.var("data"), mx.sym.var("w")
    cast = mx.sym.amp_multicast(mx.sym.amp_cast(d, dtype="float32", name="c0"), w, num_outputs=2, name="mc")
    fc = mx.sym.FullyConnected(cast[0], cast[1], num_hidden=3, no_bias=True, name="fc")
    net = mx.sym.Group([fc, mx.sym.amp_cast(fc, dtype="float16", name="c1")])
    plain = net.remove_amp_cast()
    ops = [n["op"] for n in __import__("json").loads(plain.tojson())["nodes"]]
    assert ops == ["null", "null", "FullyConnected"]
    assert plain.list_arguments() == ["data", "w"] and len(plain.list_outputs()) == 2
    x, wv = rand(2, 4), rand(3, 4)
    want = x @ wv.T
    for sym in (net, plain):
        outs = sym.eval(data=nd.array(x), w=nd.array(wv))
        assert_almost_equal(outs[0].asnumpy(), want, rtol=1e-5, atol=1e-5)
    mx.model.save_checkpoint(str(tmp_path / "a"), 0, net, {"w": nd.array(wv)}, {})
    mx.model.save_checkpoint(str(tmp_path / "b"), 0, net, {"w": nd.array(wv)}, {}, remove_amp_cast=False)
    assert "amp_cast" not in (tmp_path / "a-symbol.json").read_text()
    assert "amp_multicast" in (tmp_path / "b-symbol.json").read_text()
    assert mx.sym.load(str(tmp_path / "a-symbol.json")).list_outputs() == plain.list_outputs()
    bare = mx.sym.FullyConnected(d, w, num_hidden=3, no_bias=True)
    assert bare.remove_amp_cast() is bare  # nothing to remove


@pytest.mark.parametrize("want", [(9, 11), (3, 4), (5, 12)])
def test_image_resize_bicubic_matches_torch(want):
    x = rand(5, 7, 2, lo=0, hi=255)
    out = nd.image.resize(nd.array(x), size=(want[1], want[0]), interp=2).asnumpy()
    ref = F.interpolate(torch.tensor(x).permute(2, 0, 1)[None], size=want, mode="bicubic", align_corners=False)
    assert_almost_equal(out, ref[0].permute(1, 2, 0).numpy(), rtol=1e-4, atol=1e-2)


def area_ref(a, h, w):
    """OpenCV's area resampling written out: coverage weights when neither axis grows, else
    its linear variant keyed on where each output cell ends."""
    H, W = a.shape[:2]

    def weights(n_in, n_out, shrink):
        m = np.zeros((n_out, n_in))
        s = n_in / n_out
        for o in range(n_out):
            if shrink:
                lo, hi = o * s, min((o + 1) * s, n_in)
                for i in range(int(np.floor(lo)), int(np.ceil(hi))):
                    m[o, i] += (min(hi, i + 1) - max(lo, i)) / (hi - lo)
            else:
                i = int(np.floor(o * s))
                f = (o + 1) - (i + 1) / s
                f = 0.0 if f <= 0 else f - np.floor(f)
                if i >= n_in - 1:
                    i, f = n_in - 1, 0.0
                m[o, i] += 1 - f
                m[o, min(i + 1, n_in - 1)] += f
        return m

    shrink = h <= H and w <= W
    return np.einsum("oi,ijc,pj->opc", weights(H, h, shrink), a.astype(np.float64), weights(W, w, shrink))


@pytest.mark.parametrize("want", [(3, 4), (2, 3), (10, 15), (4, 14)])
def test_image_resize_area(want):
    x = rand(6, 8, 3, lo=0, hi=255)
    out = nd.image.resize(nd.array(x), size=(want[1], want[0]), interp=3).asnumpy()
    assert_almost_equal(out, area_ref(x, *want), rtol=1e-4, atol=1e-2)
    if want == (3, 4):  # a whole-number shrink is the mean of each 2 x 2 block
        assert_almost_equal(out, x.reshape(3, 2, 4, 2, 3).mean(axis=(1, 3)), rtol=1e-5, atol=1e-3)
    u = image_u8(h=6, w=8)
    outu = nd.image.resize(nd.array(u, dtype="uint8"), size=(want[1], want[0]), interp=3).asnumpy()
    assert np.abs(outu.astype(np.float64) - np.floor(area_ref(u, *want) + 0.5)).max() <= 1


def test_resizers_refuse_empty_inputs():
    with pytest.raises(mx.base.MXNetError, match="empty height or width"):
        nd.contrib.BilinearResize2D(nd.array(np.ones((1, 1, 0, 3), np.float32)), height=2, width=2)
    with pytest.raises(mx.base.MXNetError, match="empty height or width"):
        nd.contrib.AdaptiveAvgPooling2D(nd.array(np.ones((1, 1, 3, 0), np.float32)), output_size=2)
    with pytest.raises(mx.base.MXNetError, match="image is empty"):
        nd.image.resize(nd.array(np.ones((0, 3, 3), np.float32)), size=2)
    # An empty batch is fine.
    assert nd.contrib.BilinearResize2D(nd.array(np.ones((0, 1, 3, 3), np.float32)), height=2, width=4).shape == (0, 1, 2, 4)
