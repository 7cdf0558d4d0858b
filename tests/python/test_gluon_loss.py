"""weft.gluon.loss: every loss against a numpy formula (with sample_weight and weight), its
gradient against a numeric one (through the symbolic executor, and through autograd),
hybridized against imperative, and the argument errors."""
import math

import numpy as np
import pytest

import weft as mx
from weft import autograd
from weft.gluon import loss as gloss

N, C = 4, 5


def _rng(seed):
    return np.random.RandomState(seed)


def _f32(a):
    return np.asarray(a, dtype=np.float32)


def _log_softmax(x, axis=-1):
    x = x - x.max(axis=axis, keepdims=True)
    return x - np.log(np.exp(x).sum(axis=axis, keepdims=True))


def _softplus(x):
    return np.log1p(np.exp(-np.abs(x))) + np.maximum(x, 0)


def _batch_mean(x):
    return x.reshape(x.shape[0], -1).mean(axis=1)


# --- numpy references, per sample (float64) ------------------------------------------------

def ref_l2(p, l, sw=None, weight=1.0):
    v = 0.5 * weight * (l.reshape(p.shape) - p) ** 2
    return _batch_mean(v * sw if sw is not None else v)


def ref_l1(p, l, sw=None):
    v = np.abs(l.reshape(p.shape) - p)
    return _batch_mean(v * sw if sw is not None else v)


def ref_sbce(p, l, sw=None, from_sigmoid=False, pos_weight=None):
    pw = 1.0 if pos_weight is None else pos_weight
    if from_sigmoid:
        v = -(pw * l * np.log(p + 1e-12) + (1 - l) * np.log(1 - p + 1e-12))
    else:
        # -log(sigmoid(p)) = softplus(-p); -log(1 - sigmoid(p)) = softplus(p)
        v = pw * l * _softplus(-p) + (1 - l) * _softplus(p)
    return _batch_mean(v * sw if sw is not None else v)


def ref_sce(p, l, sw=None, axis=-1, sparse=True, from_logits=False):
    lp = p if from_logits else _log_softmax(p, axis)
    if sparse:
        v = -np.take_along_axis(lp, np.expand_dims(l.astype(np.int64), axis), axis=axis)
    else:
        v = -(lp * l).sum(axis=axis, keepdims=True)
    return _batch_mean(v * sw if sw is not None else v)


def ref_kl(p, l, sw=None, from_logits=True):
    lp = p if from_logits else _log_softmax(p)
    v = l * (np.log(l + 1e-12) - lp)
    return _batch_mean(v * sw if sw is not None else v)


def ref_huber(p, l, sw=None, rho=1.0):
    e = np.abs(l - p)
    v = np.where(e > rho, e - 0.5 * rho, 0.5 / rho * e ** 2)
    return _batch_mean(v * sw if sw is not None else v)


def ref_hinge(p, l, sw=None, margin=1.0, squared=False):
    v = np.maximum(0, margin - p * l)
    v = v ** 2 if squared else v
    return _batch_mean(v * sw if sw is not None else v)


def ref_logistic(p, l, sw=None, label_format="signed"):
    s = l if label_format == "signed" else 2 * l - 1
    v = np.log1p(np.exp(-p * s))
    return _batch_mean(v * sw if sw is not None else v)


def ref_triplet(p, pos, neg, sw=None, margin=1.0):
    d = ((pos - p) ** 2 - (neg - p) ** 2).reshape(p.shape[0], -1).sum(axis=1)
    v = np.maximum(d + margin, 0)
    return v * sw if sw is not None else v


def ref_cosine(x1, x2, l, sw=None, margin=0.0):
    cos = (x1 * x2).sum(-1) / np.maximum(np.linalg.norm(x1, axis=-1) * np.linalg.norm(x2, axis=-1), 1e-12)
    v = np.where(l == 1, 1 - cos, np.where(l == -1, np.maximum(0, cos - margin), 0)).reshape(-1, 1)
    return v * sw if sw is not None else v


def ref_poisson(p, t, sw=None, from_logits=True, compute_full=False):
    v = np.exp(p) - t * p if from_logits else p - t * np.log(p + 1e-8)
    if compute_full:
        tt = np.maximum(t, 1)
        v = v + np.where(t > 1, tt * np.log(tt) - tt + 0.5 * np.log(2 * math.pi * tt), 0)
    v = v * sw if sw is not None else v
    return np.array([v.mean()])  # MXNet 1.x: a full reduction has shape (1,)


# --- cases: (name, loss block factory, input arrays by name (float64), reference) ----------

def _cases():
    r = _rng(0)
    pred = r.randn(N, C)
    label = r.randn(N, C)
    sw = r.rand(N, 1) + 0.5
    prob = r.rand(N, C) * 0.9 + 0.05
    binary = (r.rand(N, C) > 0.5).astype(np.float64)
    signed = binary * 2 - 1
    cls = r.randint(0, C, size=(N,)).astype(np.float64)
    dist = np.exp(_log_softmax(r.randn(N, C)))
    counts = r.randint(0, 5, size=(N, C)).astype(np.float64)
    x3 = r.randn(N, 3, C)
    cls3 = r.randint(0, 3, size=(N, C)).astype(np.float64)
    pos = r.randn(N, C)
    neg = r.randn(N, C)
    pm1 = np.array([1, -1, 1, -1], dtype=np.float64)
    return [
        ("L2", lambda: gloss.L2Loss(), dict(pred=pred, label=label, sw=sw),
         lambda a: ref_l2(a["pred"], a["label"], a["sw"])),
        ("L2_weight", lambda: gloss.L2Loss(weight=3.0), dict(pred=pred, label=label.reshape(-1), sw=sw),
         lambda a: ref_l2(a["pred"], a["label"], a["sw"], weight=3.0)),
        ("L1", lambda: gloss.L1Loss(), dict(pred=pred, label=label, sw=sw),
         lambda a: ref_l1(a["pred"], a["label"], a["sw"])),
        ("SigmoidBCE", lambda: gloss.SigmoidBinaryCrossEntropyLoss(), dict(pred=pred * 3, label=binary, sw=sw),
         lambda a: ref_sbce(a["pred"], a["label"], a["sw"])),
        ("SigmoidBCE_fromsigmoid", lambda: gloss.SigmoidBCELoss(from_sigmoid=True),
         dict(pred=prob, label=binary, sw=sw), lambda a: ref_sbce(a["pred"], a["label"], a["sw"], from_sigmoid=True)),
        ("SoftmaxCE_sparse", lambda: gloss.SoftmaxCrossEntropyLoss(), dict(pred=pred, label=cls, sw=sw),
         lambda a: ref_sce(a["pred"], a["label"], a["sw"])),
        ("SoftmaxCE_dense", lambda: gloss.SoftmaxCELoss(sparse_label=False), dict(pred=pred, label=dist, sw=sw),
         lambda a: ref_sce(a["pred"], a["label"], a["sw"], sparse=False)),
        ("SoftmaxCE_fromlogits", lambda: gloss.SoftmaxCELoss(from_logits=True),
         dict(pred=_log_softmax(pred), label=cls, sw=sw),
         lambda a: ref_sce(a["pred"], a["label"], a["sw"], from_logits=True)),
        ("SoftmaxCE_axis1", lambda: gloss.SoftmaxCELoss(axis=1), dict(pred=x3, label=cls3, sw=sw.reshape(N, 1, 1)),
         lambda a: ref_sce(a["pred"], a["label"], a["sw"], axis=1)),
        ("KLDiv", lambda: gloss.KLDivLoss(), dict(pred=_log_softmax(pred), label=dist, sw=sw),
         lambda a: ref_kl(a["pred"], a["label"], a["sw"])),
        ("KLDiv_logits", lambda: gloss.KLDivLoss(from_logits=False), dict(pred=pred, label=dist, sw=sw),
         lambda a: ref_kl(a["pred"], a["label"], a["sw"], from_logits=False)),
        ("Huber", lambda: gloss.HuberLoss(rho=0.7), dict(pred=pred, label=label, sw=sw),
         lambda a: ref_huber(a["pred"], a["label"], a["sw"], rho=0.7)),
        ("Hinge", lambda: gloss.HingeLoss(margin=1.5), dict(pred=pred, label=signed, sw=sw),
         lambda a: ref_hinge(a["pred"], a["label"], a["sw"], margin=1.5)),
        ("SquaredHinge", lambda: gloss.SquaredHingeLoss(), dict(pred=pred, label=signed, sw=sw),
         lambda a: ref_hinge(a["pred"], a["label"], a["sw"], squared=True)),
        ("Logistic_signed", lambda: gloss.LogisticLoss(), dict(pred=pred * 2, label=signed, sw=sw),
         lambda a: ref_logistic(a["pred"], a["label"], a["sw"])),
        ("Logistic_binary", lambda: gloss.LogisticLoss(label_format="binary"), dict(pred=pred * 2, label=binary, sw=sw),
         lambda a: ref_logistic(a["pred"], a["label"], a["sw"], label_format="binary")),
        ("Triplet", lambda: gloss.TripletLoss(margin=2.0), dict(pred=pred, pos=pos, neg=neg, sw=sw.reshape(N)),
         lambda a: ref_triplet(a["pred"], a["pos"], a["neg"], a["sw"], margin=2.0)),
        ("CosineEmbedding", lambda: gloss.CosineEmbeddingLoss(margin=0.1),
         dict(pred=pred, x2=label, label=pm1, sw=sw),
         lambda a: ref_cosine(a["pred"], a["x2"], a["label"], a["sw"], margin=0.1)),
        ("PoissonNLL", lambda: gloss.PoissonNLLLoss(), dict(pred=pred, label=counts, sw=sw),
         lambda a: ref_poisson(a["pred"], a["label"], a["sw"])),
        ("PoissonNLL_full", lambda: gloss.PoissonNLLLoss(from_logits=False, compute_full=True),
         dict(pred=prob * 4, label=counts, sw=sw),
         lambda a: ref_poisson(a["pred"], a["label"], a["sw"], from_logits=False, compute_full=True)),
    ]


CASES = _cases()
IDS = [c[0] for c in CASES]


def _nd_inputs(arrays):
    return [mx.nd.array(_f32(v)) for v in arrays.values()]


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_loss_value_matches_numpy(case):
    _, make, arrays, ref = case
    out = make()(*_nd_inputs(arrays)).asnumpy()
    want = ref(arrays)
    assert out.shape == want.shape
    np.testing.assert_allclose(out, want, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_loss_without_sample_weight(case):
    _, make, arrays, ref = case
    arrays = {k: v for k, v in arrays.items() if k != "sw"}
    out = make()(*_nd_inputs(arrays)).asnumpy()
    want = ref(dict(arrays, sw=None))
    np.testing.assert_allclose(out, want, rtol=1e-4, atol=1e-5)


def test_sample_weight_zero_removes_samples():
    r = _rng(3)
    pred, label = r.randn(N, C), r.randn(N, C)
    sw = np.array([[1.0], [0.0], [2.0], [0.0]])
    out = gloss.L1Loss()(mx.nd.array(_f32(pred)), mx.nd.array(_f32(label)), mx.nd.array(_f32(sw))).asnumpy()
    assert out[1] == 0 and out[3] == 0
    np.testing.assert_allclose(out[2], 2 * np.abs(label[2] - pred[2]).mean(), rtol=1e-5)


def test_sigmoid_bce_pos_weight():
    r = _rng(4)
    pred, label = r.randn(N, C) * 3, (r.rand(N, C) > 0.5).astype(np.float64)
    pw = r.rand(1, C) + 0.5
    for from_sigmoid in (False, True):
        p = 1 / (1 + np.exp(-pred)) if from_sigmoid else pred
        out = gloss.SigmoidBCELoss(from_sigmoid=from_sigmoid)(
            mx.nd.array(_f32(p)), mx.nd.array(_f32(label)), None, mx.nd.array(_f32(pw))).asnumpy()
        np.testing.assert_allclose(out, ref_sbce(p, label, from_sigmoid=from_sigmoid, pos_weight=pw),
                                   rtol=1e-4, atol=1e-5)


def test_sigmoid_bce_is_stable_for_large_logits():
    pred = mx.nd.array(_f32([[200.0, -200.0]]))
    label = mx.nd.array(_f32([[0.0, 1.0]]))
    out = gloss.SigmoidBCELoss()(pred, label).asnumpy()
    np.testing.assert_allclose(out, [200.0], rtol=1e-6)


def test_batch_axis_keeps_that_axis():
    r = _rng(5)
    pred, label = r.randn(3, N), r.randn(3, N)
    out = gloss.L2Loss(batch_axis=1)(mx.nd.array(_f32(pred)), mx.nd.array(_f32(label))).asnumpy()
    np.testing.assert_allclose(out, (0.5 * (label - pred) ** 2).mean(axis=0), rtol=1e-5)


# --- gradients -------------------------------------------------------------------------------

def _numeric_grad(ref, arrays, wrt="pred", eps=1e-6):
    """d sum(ref(arrays)) / d arrays[wrt], by central differences in float64."""
    base = arrays[wrt]
    grad = np.zeros_like(base)
    for idx in np.ndindex(*base.shape):
        hi = base.copy()
        hi[idx] += eps
        lo = base.copy()
        lo[idx] -= eps
        grad[idx] = (ref(dict(arrays, **{wrt: hi})).sum() - ref(dict(arrays, **{wrt: lo})).sum()) / (2 * eps)
    return grad


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_loss_gradient_symbolic(case):
    """The loss built on weft.sym, bound and run backward, gives the numeric gradient."""
    _, make, arrays, ref = case
    names = list(arrays)
    out = make()(*[mx.sym.var(n) for n in names])
    ex = out.simple_bind(mx.cpu(), grad_req={n: ("write" if n == "pred" else "null") for n in names},
                         **{n: v.shape for n, v in arrays.items()})
    fwd = ex.forward(is_train=True, **{n: mx.nd.array(_f32(v)) for n, v in arrays.items()})
    np.testing.assert_allclose(fwd[0].asnumpy(), ref(arrays), rtol=1e-4, atol=1e-5)
    ex.backward(mx.nd.ones(fwd[0].shape))
    np.testing.assert_allclose(ex.grad_dict["pred"].asnumpy(), _numeric_grad(ref, arrays),
                               rtol=2e-3, atol=2e-5)


@pytest.mark.skipif(not hasattr(autograd, "record"), reason="weft.autograd.record is not there yet")
@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_loss_gradient_autograd(case):
    _, make, arrays, ref = case
    inputs = _nd_inputs(arrays)
    inputs[0].attach_grad()
    with autograd.record():
        out = make()(*inputs)
    out.backward()
    np.testing.assert_allclose(inputs[0].grad.asnumpy(), _numeric_grad(ref, arrays), rtol=2e-3, atol=2e-5)


@pytest.mark.parametrize("case", [c for c in CASES if c[0] in ("L2", "SoftmaxCE_sparse", "SigmoidBCE", "Huber",
                                                                "CosineEmbedding", "Triplet")],
                         ids=["L2", "SoftmaxCE_sparse", "SigmoidBCE", "Huber", "CosineEmbedding", "Triplet"])
def test_hybridized_equals_imperative(case):
    _, make, arrays, _ = case
    inputs = _nd_inputs(arrays)
    want = make()(*inputs).asnumpy()
    block = make()
    block.hybridize()
    np.testing.assert_allclose(block(*inputs).asnumpy(), want, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(block(*inputs).asnumpy(), want, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("axis,shape", [(-1, (6, 5)), (1, (4, 3, 2))])
def test_softmax_ce_gradient_hybridized_equals_imperative(axis, shape):
    # Imperatively the loss runs as one fused operator; hybridized, as MXNet's log_softmax,
    # pick and negative. Values and gradients must agree.
    rng = _rng(7)
    pred = rng.randn(*shape).astype(np.float32)
    label_shape = shape[:1] + shape[2:] if axis == 1 else shape[:-1]
    label = rng.randint(0, shape[axis], size=label_shape).astype(np.float32)
    sw = rng.rand(shape[0], *([1] * (len(shape) - 1))).astype(np.float32)
    grads, values = [], []
    for hybrid in (False, True):
        block = gloss.SoftmaxCrossEntropyLoss(axis=axis)
        if hybrid:
            block.hybridize()
        x = mx.nd.array(pred)
        x.attach_grad()
        with autograd.record():
            loss = block(x, mx.nd.array(label), mx.nd.array(sw))
        loss.backward()
        values.append(loss.asnumpy())
        grads.append(x.grad.asnumpy())
    np.testing.assert_allclose(values[0], values[1], rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(grads[0], grads[1], rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(values[0], ref_sce(pred, label, sw, axis=axis), rtol=1e-5, atol=1e-6)


# --- errors ----------------------------------------------------------------------------------

def test_bad_weight_is_rejected():
    with pytest.raises(TypeError, match="weight must be a number"):
        gloss.L2Loss(weight="heavy")


def test_bad_batch_axis_is_rejected():
    with pytest.raises(TypeError, match="batch_axis must be an int"):
        gloss.L1Loss(batch_axis=0.5)


def test_bad_huber_rho_is_rejected():
    with pytest.raises(ValueError, match="rho must be positive"):
        gloss.HuberLoss(rho=0)


def test_bad_label_format_is_rejected():
    with pytest.raises(ValueError, match="'signed' or 'binary'"):
        gloss.LogisticLoss(label_format="ternary")


def test_mismatched_label_size_is_an_error():
    with pytest.raises(mx.WeftError):
        gloss.L2Loss()(mx.nd.ones((N, C)), mx.nd.ones((N, C + 1))).asnumpy()


def test_repr_names_the_loss():
    assert repr(gloss.L2Loss()) == "L2Loss(batch_axis=0, w=1.0)"


def _sdml_reference(x1, x2, s):
    n = x1.shape[0]
    d = ((x1[:, None, :] - x2[None, :, :]) ** 2).sum(axis=2).astype(np.float64)
    z = -d - (-d).max(axis=1, keepdims=True)
    logp = z - np.log(np.exp(z).sum(axis=1, keepdims=True))
    labels = np.full((n, n), s / (n - 1))
    np.fill_diagonal(labels, 1 - s)
    return (labels * (np.log(labels + 1e-12) - logp)).mean(axis=1)


@pytest.mark.parametrize("s", [0.3, 0.0, 0.9])
def test_sdml_loss_matches_numpy(s):
    rng = np.random.default_rng(0)
    x1 = rng.standard_normal((5, 4)).astype(np.float32)
    x2 = rng.standard_normal((5, 4)).astype(np.float32)
    loss = mx.gluon.loss.SDMLLoss(smoothing_parameter=s)
    out = loss(mx.nd.array(x1), mx.nd.array(x2))
    assert out.shape == (5,)
    np.testing.assert_allclose(out.asnumpy(), _sdml_reference(x1, x2, s), rtol=1e-4, atol=1e-6)
    half = mx.gluon.loss.SDMLLoss(smoothing_parameter=s, weight=0.5)(mx.nd.array(x1), mx.nd.array(x2))
    np.testing.assert_allclose(half.asnumpy(), 0.5 * _sdml_reference(x1, x2, s), rtol=1e-4, atol=1e-6)


def test_sdml_loss_hybridized_gradient_and_errors():
    rng = np.random.default_rng(1)
    x1 = rng.standard_normal((4, 3)).astype(np.float32)
    x2 = rng.standard_normal((4, 3)).astype(np.float32)
    loss = mx.gluon.loss.SDMLLoss()
    loss.hybridize()
    np.testing.assert_allclose(loss(mx.nd.array(x1), mx.nd.array(x2)).asnumpy(), _sdml_reference(x1, x2, 0.3),
                               rtol=1e-4, atol=1e-6)
    a = mx.nd.array(x1)
    a.attach_grad()
    with mx.autograd.record():
        total = mx.nd.sum(mx.gluon.loss.SDMLLoss()(a, mx.nd.array(x2)))
    total.backward()
    eps = 1e-3
    num = np.zeros_like(x1, dtype=np.float64)
    for idx in np.ndindex(*x1.shape):
        p, m = x1.astype(np.float64).copy(), x1.astype(np.float64).copy()
        p[idx] += eps
        m[idx] -= eps
        num[idx] = (_sdml_reference(p, x2, 0.3).sum() - _sdml_reference(m, x2, 0.3).sum()) / (2 * eps)
    np.testing.assert_allclose(a.grad.asnumpy(), num, rtol=1e-2, atol=1e-3)
    with pytest.raises(ValueError, match="smoothing_parameter"):
        mx.gluon.loss.SDMLLoss(smoothing_parameter=1.0)
    with pytest.raises(ValueError, match="at least 2"):
        mx.gluon.loss.SDMLLoss()(mx.nd.ones((1, 3)), mx.nd.ones((1, 3)))
    with pytest.raises(ValueError, match="batch_size, dim"):
        mx.gluon.loss.SDMLLoss()(mx.nd.ones((2, 3)), mx.nd.ones((2, 4)))
