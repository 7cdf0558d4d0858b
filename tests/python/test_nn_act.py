"""Activation, LeakyReLU, softmax / log_softmax / softmin, SoftmaxActivation and the loss
layers (SoftmaxOutput, regression outputs, softmax_cross_entropy, MakeLoss, BlockGrad):
forward and backward against PyTorch, numpy formulas and central differences."""
import numpy as np
import pytest
import torch
import torch.nn.functional as F

import weft as mx
from weft import nd
from weft.test_utils import assert_almost_equal

from nn_norm_check import forward, numeric_check, op_grad

torch.set_num_threads(1)
RNG = np.random.RandomState(1)


def randn(*shape):
    return RNG.randn(*shape).astype(np.float32)


def T(a, grad=False):
    return torch.tensor(a, requires_grad=grad)


ACTS = {
    "relu": F.relu, "sigmoid": torch.sigmoid, "tanh": torch.tanh, "softrelu": F.softplus,
    "softsign": F.softsign,
}
SHAPES = [(1, 5), (3, 4, 7), (17,)]


@pytest.mark.parametrize("act", sorted(ACTS))
@pytest.mark.parametrize("shape", SHAPES)
def test_activation_matches_torch(act, shape):
    x, dy = randn(*shape) * 3, randn(*shape)
    assert_almost_equal(nd.Activation(nd.array(x), act_type=act), ACTS[act](T(x)).numpy(), rtol=1e-4, atol=1e-5)
    tx = T(x, True)
    ACTS[act](tx).backward(T(dy))
    assert_almost_equal(op_grad("Activation", [x], {"act_type": act}, [dy])[0], tx.grad.numpy(), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("act", sorted(ACTS))
def test_activation_numeric_gradient(act):
    x = RNG.randn(3, 4)
    x[np.abs(x) < 1e-2] = 0.5  # relu's kink
    numeric_check("Activation", [x], {"act_type": act}, [0])


@pytest.mark.parametrize("n", [100003, 37])
def test_relu_backward_on_long_arrays_writing_and_adding(n):
    # Long enough for vector loops with a tail and for the loop to be split across threads;
    # about half of x below zero; the gradient is written, then added to (grad_req add).
    x, dy = randn(n), randn(n)
    ref = dy.astype(np.float64) * (x > 0)
    assert_almost_equal(op_grad("Activation", [x], {"act_type": "relu"}, [dy])[0], ref, rtol=1e-6, atol=1e-7)
    xs = nd.array(x)
    xs.attach_grad(grad_req="add")
    for _ in range(2):
        with mx.autograd.record():
            y = nd.Activation(xs, act_type="relu")
        y.backward(nd.array(dy))
    assert_almost_equal(xs.grad, 2 * ref, rtol=1e-6, atol=1e-7)


def test_activation_out_and_add_to():
    x = randn(2, 3)
    out = nd.ones((2, 3))
    nd.Activation(nd.array(x), act_type="relu", out=out)
    assert_almost_equal(out, np.maximum(x, 0))


LEAKY = [
    ("leaky", {"slope": 0.1}, lambda x: F.leaky_relu(x, 0.1)),
    ("elu", {"slope": 0.7}, lambda x: F.elu(x, 0.7)),
    ("selu", {}, F.selu),
    ("gelu", {}, F.gelu),
]


@pytest.mark.parametrize("act,params,ref", LEAKY)
@pytest.mark.parametrize("shape", SHAPES)
def test_leaky_relu_matches_torch(act, params, ref, shape):
    x, dy = randn(*shape) * 2, randn(*shape)
    p = dict(params, act_type=act)
    assert_almost_equal(nd.LeakyReLU(nd.array(x), **p), ref(T(x)).numpy(), rtol=1e-4, atol=1e-5)
    tx = T(x, True)
    ref(tx).backward(T(dy))
    assert_almost_equal(op_grad("LeakyReLU", [x], p, [dy])[0], tx.grad.numpy(), rtol=1e-4, atol=1e-5)
    numeric_check("LeakyReLU", [RNG.randn(2, 3) + 0.05], p, [0])


@pytest.mark.parametrize("shape,gshape", [((2, 3, 4), (3,)), ((5, 2), (1,)), ((1, 4, 2, 2), (4,))])
def test_prelu_matches_torch(shape, gshape):
    x, g, dy = randn(*shape), np.abs(randn(*gshape)) * 0.3, randn(*shape)
    out = nd.LeakyReLU(nd.array(x), nd.array(g), act_type="prelu")
    tx, tg = T(x, True), T(g, True)
    y = F.prelu(tx, tg)
    assert_almost_equal(out, y.detach().numpy(), rtol=1e-5, atol=1e-6)
    y.backward(T(dy))
    grads = op_grad("LeakyReLU", [x, g], {"act_type": "prelu"}, [dy])
    assert_almost_equal(grads[0], tx.grad.numpy(), rtol=1e-4, atol=1e-5)
    assert_almost_equal(grads[1], tg.grad.numpy(), rtol=1e-4, atol=1e-5)
    numeric_check("LeakyReLU", [RNG.randn(2, 3, 2), RNG.randn(3)], {"act_type": "prelu"}, [0, 1])


@pytest.mark.parametrize("shape,gshape,expanded", [
    ((3, 4), (3, 4), (3, 4)),           # one slope per element of 2-d data
    ((3, 4, 2, 2), (3, 4), (3, 4, 1, 1)),  # one per sample and channel
    ((3, 5), (3,), (3, 1)),             # one per sample: (3,) does not fit axis 1, so axis 0
    ((3, 4, 2), (1, 4), (1, 4, 1)),     # one per channel with a leading 1
    ((4, 4), (4,), (1, 4)),             # axis 1 is tried first
    ((6,), (6,), (6,)),                 # 1-d data: one per element
])
def test_prelu_gamma_broadcasts_over_axes_0_and_1_as_in_mxnet(shape, gshape, expanded):
    x, g, dy = randn(*shape), np.abs(randn(*gshape)) * 0.3 + 0.05, randn(*shape)
    ge = g.reshape(expanded)
    ref = np.where(x > 0, x, ge * x)
    assert_almost_equal(nd.LeakyReLU(nd.array(x), nd.array(g), act_type="prelu"), ref, rtol=1e-6, atol=1e-7)
    dx, dg = op_grad("LeakyReLU", [x, g], {"act_type": "prelu"}, [dy])
    assert_almost_equal(dx, dy * np.where(x > 0, 1, ge), rtol=1e-5, atol=1e-6)
    dg_full = np.where(x > 0, 0, dy * x)
    axes = tuple(i for i in range(len(shape)) if expanded[i] == 1)
    assert_almost_equal(dg, dg_full.sum(axis=axes).reshape(gshape), rtol=1e-4, atol=1e-5)
    numeric_check("LeakyReLU", [RNG.randn(*shape), RNG.randn(*gshape)], {"act_type": "prelu"}, [0, 1])
    sym = mx.sym.LeakyReLU(mx.sym.var("x"), mx.sym.var("g"), act_type="prelu")
    assert sym.infer_shape(x=shape, g=gshape)[0] == [shape, gshape]


def test_rrelu_training_random_slopes_and_inference_mean():
    x = -np.abs(randn(4, 50)) - 0.1
    p = {"act_type": "rrelu", "lower_bound": 0.1, "upper_bound": 0.3}
    out = nd.LeakyReLU(nd.array(x), **p).asnumpy()
    assert_almost_equal(out, x * 0.2, rtol=1e-5, atol=1e-6)
    mx.random.seed(3)
    with mx.autograd.train_mode():
        a = nd.LeakyReLU(nd.array(x), **p).asnumpy()
    slopes = a / x
    assert slopes.min() >= 0.1 - 1e-6 and slopes.max() <= 0.3 + 1e-6
    assert slopes.std() > 0.03  # one slope per element
    mx.random.seed(3)
    with mx.autograd.train_mode():
        b = nd.LeakyReLU(nd.array(x), **p).asnumpy()
    assert np.array_equal(a, b)
    # The gradient uses the slopes drawn in the forward pass (kept in the hidden mask).
    dy = randn(4, 50)
    mx.random.seed(3)
    g = op_grad("LeakyReLU", [x], p, [dy, None], train=True, out_shapes=[x.shape, x.shape])[0]
    assert_almost_equal(g, dy * slopes, rtol=1e-4, atol=1e-5)


def test_activation_errors():
    # MXNet 1.9.1's five act_types only (mish and log_sigmoid came with MXNet 2).
    for later in ("mish", "log_sigmoid"):
        with pytest.raises(mx.base.WeftError, match=r"act_type.*expected one of \{'relu', 'sigmoid', 'tanh', "
                                                     r"'softrelu', 'softsign'\}, got '%s'" % later):
            nd.Activation(nd.ones((2,)), act_type=later)
    with pytest.raises(mx.base.WeftError, match=r"Activation.*act_type.*'swish'"):
        nd.Activation(nd.ones((2,)), act_type="swish")
    with pytest.raises(mx.base.WeftError, match=r"Activation.*act_type"):
        nd.Activation(nd.ones((2,)))
    with pytest.raises(mx.base.WeftError, match=r"Activation.*floating-point.*int32"):
        nd.Activation(nd.ones((2,), dtype="int32"), act_type="relu")
    with pytest.raises(mx.base.WeftError, match=r"LeakyReLU.*'gamma' of prelu.*\(3,\).*\(2,3\).*got shape \(4,\)"):
        nd.LeakyReLU(nd.ones((2, 3)), nd.ones((4,)), act_type="prelu")
    with pytest.raises(mx.base.WeftError, match=r"LeakyReLU.*'gamma' of prelu.*got shape \(3,1\)"):
        nd.LeakyReLU(nd.ones((2, 3, 4)), nd.ones((3, 1)), act_type="prelu")
    with pytest.raises(mx.base.WeftError, match=r"LeakyReLU.*'gamma' of prelu.*got shape \(1,2,3\)"):
        nd.LeakyReLU(nd.ones((2, 3)), nd.ones((1, 2, 3)), act_type="prelu")
    with pytest.raises(mx.base.WeftError, match=r"LeakyReLU.*upper_bound.*lower_bound"):
        nd.LeakyReLU(nd.ones((2, 3)), act_type="rrelu", lower_bound=0.5, upper_bound=0.2)


# ------------------------------------------------------------------ softmax family
@pytest.mark.parametrize("shape,axis", [((3, 7), -1), ((1, 5), 1), ((2, 3, 4), 1), ((4, 2, 3), 0), ((9,), 0)])
@pytest.mark.parametrize("temperature", [None, 2.5])
def test_softmax_family_matches_torch(shape, axis, temperature):
    x, dy = randn(*shape) * 3, randn(*shape)
    t = temperature or 1.0
    refs = {"softmax": lambda v: F.softmax(v / t, dim=axis), "log_softmax": lambda v: F.log_softmax(v / t, dim=axis),
            "softmin": lambda v: F.softmin(v / t, dim=axis)}
    for op, ref in refs.items():
        p = {"axis": axis, "temperature": temperature}
        assert_almost_equal(nd.invoke(op, [nd.array(x)], p), ref(T(x)).numpy(), rtol=1e-4, atol=1e-6)
        tx = T(x, True)
        ref(tx).backward(T(dy))
        assert_almost_equal(op_grad(op, [x], p, [dy])[0], tx.grad.numpy(), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("shape,axis", [((32, 1000), -1), ((4096, 40), 1), ((50, 1000, 3), 1)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_softmax_either_side_of_the_one_thread_size_vs_numpy(shape, axis, dtype):
    # Below 64K elements a softmax runs on the calling thread, above it on all of them
    # (oneDNN for float32 softmax, Weft's loops otherwise): forward and gradient vs numpy.
    x, dy = (randn(*shape) * 3).astype(dtype), randn(*shape).astype(dtype)
    x64 = x.astype(np.float64)
    e = np.exp(x64 - x64.max(axis=axis, keepdims=True))
    y = e / e.sum(axis=axis, keepdims=True)
    tol = 1e-5 if dtype == np.float32 else 1e-12
    for op, ref in (("softmax", y), ("log_softmax", np.log(y))):
        assert_almost_equal(nd.invoke(op, [nd.array(x, dtype=dtype)], {"axis": axis}), ref, rtol=tol * 10, atol=tol)
    dx = y * (dy - (dy * y).sum(axis=axis, keepdims=True))
    assert_almost_equal(op_grad("softmax", [x], {"axis": axis}, [dy], dtype=dtype)[0], dx, rtol=tol * 10, atol=tol)


@pytest.mark.parametrize("op", ["softmax", "log_softmax", "softmin"])
def test_softmax_numeric_gradient(op):
    numeric_check(op, [RNG.randn(2, 3, 4)], {"axis": 1, "temperature": 1.5}, [0])


def test_softmax_use_length_masks_rows():
    x = randn(3, 5)
    length = np.array([2, 5, 1], dtype=np.int32)
    for op, ref in (("softmax", F.softmax), ("log_softmax", F.log_softmax)):
        out = nd.invoke(op, [nd.array(x), nd.array(length, dtype="int32")], {"use_length": True}).asnumpy()
        for r, n in enumerate(length):
            assert_almost_equal(out[r, :n], ref(T(x[r, :n]), dim=0).numpy(), rtol=1e-5, atol=1e-6)
            assert np.all(out[r, n:] == 0)
    dy = randn(3, 5)
    g = op_grad("softmax", [x, length], {"use_length": True}, [dy])
    assert g[1] is None
    for r, n in enumerate(length):
        tx = T(x[r, :n], True)
        F.softmax(tx, dim=0).backward(T(dy[r, :n]))
        assert_almost_equal(g[0][r, :n], tx.grad.numpy(), rtol=1e-4, atol=1e-6)
        assert np.all(g[0][r, n:] == 0)


def test_softmax_dtype_and_errors():
    x = randn(2, 3)
    out = nd.softmax(nd.array(x), dtype="float64")
    assert out.dtype == np.float64
    assert_almost_equal(out, F.softmax(T(x).double(), dim=-1).numpy(), rtol=1e-6, atol=1e-7)
    g = op_grad("softmax", [x], {"dtype": "float64"}, [np.ones((2, 3))])
    assert g[0].dtype == np.float32 and np.abs(g[0]).max() < 1e-6
    with pytest.raises(mx.base.WeftError, match=r"softmax.*'axis' = 2"):
        nd.softmax(nd.ones((2, 3)), axis=2)
    with pytest.raises(mx.base.WeftError, match=r"softmax.*temperature.*non-zero"):
        nd.softmax(nd.ones((2, 3)), temperature=0)
    with pytest.raises(mx.base.WeftError, match=r"softmax.*input 'length'.*\(3\)|softmax.*length.*\(2,\)"):
        nd.softmax(nd.ones((2, 3)), nd.ones((3,), dtype="int32"), use_length=True)


@pytest.mark.parametrize("mode,shape", [("instance", (2, 3, 4)), ("channel", (2, 3, 2, 2)), ("instance", (1, 6))])
def test_softmax_activation(mode, shape):
    x = randn(*shape)
    out = nd.SoftmaxActivation(nd.array(x), mode=mode)
    if mode == "instance":
        ref = F.softmax(T(x.reshape(shape[0], -1)), dim=1).numpy().reshape(shape)
    else:
        ref = F.softmax(T(x), dim=1).numpy()
    assert_almost_equal(out, ref, rtol=1e-5, atol=1e-6)
    numeric_check("SoftmaxActivation", [RNG.randn(*shape)], {"mode": mode}, [0])


# ------------------------------------------------------------------ loss layers
def softmax_np(x, axis):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


@pytest.mark.parametrize("normalization", ["null", "batch", "valid"])
@pytest.mark.parametrize("use_ignore", [False, True])
def test_softmax_output_gradient_formula(normalization, use_ignore):
    x = randn(5, 4)
    label = np.array([0, 3, 1, 3, 2], dtype=np.float32)
    p = {"grad_scale": 2.0, "normalization": normalization, "use_ignore": use_ignore, "ignore_label": 3}
    out = nd.SoftmaxOutput(nd.array(x), nd.array(label), **p)
    prob = softmax_np(x, 1)
    assert_almost_equal(out, prob, rtol=1e-5, atol=1e-6)
    # The head gradient is ignored: a random one gives the same result.
    g = op_grad("SoftmaxOutput", [x, label], p, [randn(5, 4)])
    expect = prob - np.eye(4)[label.astype(int)]
    keep = (label != 3) if use_ignore else np.ones(5, bool)
    expect[~keep] = 0
    norm = {"null": 1.0, "batch": 5.0, "valid": float(keep.sum())}[normalization]
    assert_almost_equal(g[0], expect * 2.0 / norm, rtol=1e-5, atol=1e-6)
    assert g[1] is None


def test_softmax_output_multi_output_preserve_shape_smoothing_out_grad():
    x = randn(2, 3, 4)
    label = RNG.randint(0, 3, size=(2, 4)).astype(np.float32)
    out = nd.SoftmaxOutput(nd.array(x), nd.array(label), multi_output=True)
    prob = softmax_np(x, 1)
    assert_almost_equal(out, prob, rtol=1e-5, atol=1e-6)
    g = op_grad("SoftmaxOutput", [x, label], {"multi_output": True, "normalization": "batch"}, [None])[0]
    onehot = np.moveaxis(np.eye(3)[label.astype(int)], -1, 1)
    # 'batch' with multi_output divides by the batch (2) and, as MXNet 1.9, by the positions (4).
    assert_almost_equal(g, (prob - onehot) / (2 * 4), rtol=1e-5, atol=1e-6)
    # preserve_shape: softmax over the last axis, labels of the leading shape.
    label2 = RNG.randint(0, 4, size=(2, 3)).astype(np.float32)
    out = nd.SoftmaxOutput(nd.array(x), nd.array(label2), preserve_shape=True)
    prob2 = softmax_np(x, 2)
    assert_almost_equal(out, prob2, rtol=1e-5, atol=1e-6)
    dy = randn(2, 3, 4)
    g = op_grad("SoftmaxOutput", [x, label2], {"preserve_shape": True, "smooth_alpha": 0.3, "out_grad": True}, [dy])[0]
    target = np.full((2, 3, 4), 0.1)
    np.put_along_axis(target, label2.astype(int)[..., None], 0.7, axis=2)
    assert_almost_equal(g, (prob2 - target) * dy, rtol=1e-4, atol=1e-6)


def test_softmax_output_flattens_trailing_axes():
    x = randn(3, 2, 3)
    label = np.array([5, 0, 2], dtype=np.float32)
    out = nd.SoftmaxOutput(nd.array(x), nd.array(label))
    assert_almost_equal(out, softmax_np(x.reshape(3, 6), 1).reshape(3, 2, 3), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("op", ["LinearRegressionOutput", "LogisticRegressionOutput", "MAERegressionOutput"])
def test_regression_outputs(op):
    x, label = randn(4, 3), randn(4, 3)
    out = nd.invoke(op, [nd.array(x), nd.array(label)], {"grad_scale": 1.5}).asnumpy()
    y = 1 / (1 + np.exp(-x)) if op.startswith("Logistic") else x
    assert_almost_equal(out, y, rtol=1e-5, atol=1e-6)
    g = op_grad(op, [x, label], {"grad_scale": 1.5}, [randn(4, 3)])
    d = np.sign(y - label) if op.startswith("MAE") else y - label
    assert_almost_equal(g[0], d * 1.5 / 3, rtol=1e-5, atol=1e-6)
    # A (N, 1) output takes (N,) labels.
    out = nd.invoke(op, [nd.array(x[:, :1]), nd.array(label[:, 0])], {})
    assert out.shape == (4, 1)
    with pytest.raises(mx.base.WeftError, match=op + r".*'label'.*one value per data element"):
        nd.invoke(op, [nd.array(x), nd.ones((4, 2))], {})


@pytest.mark.parametrize("shape", [(4, 5), (1, 3), (7, 2)])
def test_softmax_cross_entropy_matches_torch(shape):
    x = randn(*shape)
    label = RNG.randint(0, shape[1], size=shape[0]).astype(np.float32)
    out = nd.softmax_cross_entropy(nd.array(x), nd.array(label))
    tx = T(x, True)
    ref = F.cross_entropy(tx, torch.tensor(label.astype(np.int64)), reduction="sum")
    assert out.shape == (1,)
    assert_almost_equal(out, np.array([ref.item()]), rtol=1e-5, atol=1e-5)
    ref.backward(torch.tensor(2.0))
    g = op_grad("softmax_cross_entropy", [x, label], {}, [np.array([2.0], np.float32)])
    assert_almost_equal(g[0], tx.grad.numpy(), rtol=1e-4, atol=1e-6)
    numeric_check("softmax_cross_entropy", [RNG.randn(*shape), label], {}, [0])
    with pytest.raises(mx.base.WeftError, match=r"softmax_cross_entropy.*label 7.*outside \[0, %d\)" % shape[1]):
        nd.softmax_cross_entropy(nd.array(x), nd.array(np.full(shape[0], 7, np.float32))).asnumpy()
    with pytest.raises(mx.base.WeftError, match=r"softmax_cross_entropy.*2-D.*\(2,3,4\)"):
        nd.softmax_cross_entropy(nd.ones((2, 3, 4)), nd.ones((2,)))
    # The backward reads one gradient value: called by hand with none, it refuses.
    with pytest.raises(mx.base.WeftShapeError, match=r"_backward_softmax_cross_entropy.*out_grad"):
        nd.invoke("_backward_softmax_cross_entropy", [nd.array(np.zeros(0, np.float32)), nd.array(x), nd.array(label)], {})
    with pytest.raises(mx.base.WeftShapeError, match=r"_backward_sparse_softmax_cross_entropy.*out_grad"):
        nd.invoke("_backward_sparse_softmax_cross_entropy", [nd.array(np.zeros(0, np.float32)), nd.array(x), nd.array(label)], {})


@pytest.mark.parametrize("shape,axis", [((4, 5), -1), ((1, 3), 1), ((3, 4, 2), 1), ((2, 3, 5), -1), ((6,), 0)])
def test_sparse_softmax_cross_entropy(shape, axis):
    x = randn(*shape)
    a = axis % len(shape)
    out_shape = shape[:a] + (1,) + shape[a + 1:]
    n = shape[a]
    # Labels out of range are clipped, as pick's default mode does.
    label = RNG.randint(-1, n + 1, size=out_shape).astype(np.float32)
    out = nd._internal._sparse_softmax_cross_entropy(nd.array(x), nd.array(label), axis=axis)
    ref = -nd.pick(nd.log_softmax(nd.array(x), axis=axis), nd.array(label), axis=axis, keepdims=True)
    assert out.shape == out_shape
    assert_almost_equal(out, ref.asnumpy(), rtol=1e-5, atol=1e-6)
    idx = np.clip(label, 0, n - 1).astype(np.int64)
    ls = x - x.max(axis=a, keepdims=True)
    ls = ls - np.log(np.exp(ls).sum(axis=a, keepdims=True))
    assert_almost_equal(out, -np.take_along_axis(ls, idx, axis=a), rtol=1e-5, atol=1e-6)
    # Labels without the class axis are accepted too (Gluon passes (N,) for (N, C) data).
    flat = nd._internal._sparse_softmax_cross_entropy(nd.array(x), nd.array(label.reshape(-1)), axis=axis)
    assert_almost_equal(flat, out.asnumpy())
    og = randn(*out_shape)
    g = op_grad("_sparse_softmax_cross_entropy", [x, label], {"axis": axis}, [og])
    soft = np.exp(ls)
    onehot = np.zeros_like(x)
    np.put_along_axis(onehot, idx, 1.0, axis=a)
    assert_almost_equal(g[0], (soft - onehot) * og, rtol=1e-5, atol=1e-6)
    numeric_check("_sparse_softmax_cross_entropy", [RNG.randn(*shape), label], {"axis": axis}, [0])


def test_sparse_softmax_cross_entropy_errors():
    with pytest.raises(mx.base.WeftError, match=r"_sparse_softmax_cross_entropy.*label.*\(5,\).*\(4,3\).*4 in all"):
        nd._internal._sparse_softmax_cross_entropy(nd.ones((4, 3)), nd.ones((5,)))
    with pytest.raises(mx.base.WeftError, match=r"_sparse_softmax_cross_entropy.*axis"):
        nd._internal._sparse_softmax_cross_entropy(nd.ones((4, 3)), nd.ones((4,)), axis=2)
    with pytest.raises(mx.base.WeftError, match=r"_sparse_softmax_cross_entropy.*floating-point"):
        nd._internal._sparse_softmax_cross_entropy(nd.ones((4, 3), dtype="int32"), nd.ones((4,)))


@pytest.mark.parametrize("normalization,expect", [("null", 0.5), ("batch", 0.5 / 4), ("valid", 0.5 / 5)])
def test_make_loss(normalization, expect):
    x = np.array([[1, -1, 2], [0, 3, -2], [4, 5, -1], [0, 0, 0]], dtype=np.float32)  # 5 elements > 0
    p = {"grad_scale": 0.5, "normalization": normalization}
    assert_almost_equal(nd.MakeLoss(nd.array(x), **p), x)
    g = op_grad("MakeLoss", [x], p, [randn(4, 3)])[0]
    assert_almost_equal(g, np.full((4, 3), expect, np.float32), rtol=1e-6)
    assert nd.make_loss is not None


def test_block_grad():
    x = randn(3, 2)
    assert_almost_equal(nd.BlockGrad(nd.array(x)), x)
    assert_almost_equal(nd.stop_gradient(nd.array(x)), x)
    g = op_grad("BlockGrad", [x], {}, [randn(3, 2)])[0]
    assert np.all(g == 0)
