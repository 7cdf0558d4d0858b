"""Losses, as MXNet 1.x's `mx.gluon.loss`.

Every loss is a HybridBlock called as `loss(pred, label, sample_weight=None)`. The
per-element loss is scaled by `sample_weight` (broadcast against it) and by the scalar
`weight`, then averaged over every axis but `batch_axis`, so the result has one value
per sample, as MXNet gives it.
"""
import math
import numbers

from .. import ndarray
from .block import HybridBlock

__all__ = ["Loss", "L2Loss", "L1Loss", "SigmoidBinaryCrossEntropyLoss", "SigmoidBCELoss",
           "SoftmaxCrossEntropyLoss", "SoftmaxCELoss", "KLDivLoss", "HuberLoss", "HingeLoss",
           "SquaredHingeLoss", "LogisticLoss", "TripletLoss", "CosineEmbeddingLoss", "PoissonNLLLoss",
           "SDMLLoss", "CTCLoss"]

# Keeps log() finite where a probability given by the caller is exactly 0 or 1.
_EPS = 1e-12


def _apply_weighting(F, loss, weight=None, sample_weight=None):
    """Scales `loss` by `sample_weight` (broadcast) and then by the number `weight`."""
    if sample_weight is not None:
        loss = F.broadcast_mul(loss, sample_weight)
    if weight is not None:
        if not isinstance(weight, numbers.Number) or isinstance(weight, bool):
            raise TypeError("loss weight: expected a number, got %r" % (weight,))
        loss = loss * weight
    return loss


def _reshape_like(F, x, y):
    """`x` with the shape of `y` (same number of elements): labels often come flat."""
    return F.reshape_like(x, y)


def _batch_mean(F, loss, batch_axis):
    """Mean over every axis except the batch axis: one value per sample."""
    return F.mean(loss, axis=batch_axis, exclude=True)


class Loss(HybridBlock):
    """Base of the losses: holds the scalar `weight` and the `batch_axis` that is kept
    when the per-element losses are averaged."""

    def __init__(self, weight, batch_axis, **kwargs):
        super(Loss, self).__init__(**kwargs)
        if weight is not None and (not isinstance(weight, numbers.Number) or isinstance(weight, bool)):
            raise TypeError("%s: weight must be a number or None, got %r" % (type(self).__name__, weight))
        if not isinstance(batch_axis, numbers.Integral) or isinstance(batch_axis, bool):
            raise TypeError("%s: batch_axis must be an int, got %r" % (type(self).__name__, batch_axis))
        self._weight = weight
        self._batch_axis = batch_axis

    def __repr__(self):
        return "%s(batch_axis=%s, w=%s)" % (type(self).__name__, self._batch_axis, self._weight)

    def hybrid_forward(self, F, x, *args, **kwargs):
        raise NotImplementedError("%s does not define hybrid_forward; subclasses of Loss must"
                                  % type(self).__name__)


class L2Loss(Loss):
    r"""Half the squared error: :math:`\frac{1}{2} (label - pred)^2`, scaled by `weight`."""

    def __init__(self, weight=1., batch_axis=0, **kwargs):
        super(L2Loss, self).__init__(weight, batch_axis, **kwargs)

    def hybrid_forward(self, F, pred, label, sample_weight=None):
        label = _reshape_like(F, label, pred)
        loss = F.square(label - pred)
        loss = _apply_weighting(F, loss, self._weight / 2, sample_weight)
        return _batch_mean(F, loss, self._batch_axis)


class L1Loss(Loss):
    r"""Absolute error: :math:`|label - pred|`."""

    def __init__(self, weight=None, batch_axis=0, **kwargs):
        super(L1Loss, self).__init__(weight, batch_axis, **kwargs)

    def hybrid_forward(self, F, pred, label, sample_weight=None):
        label = _reshape_like(F, label, pred)
        loss = F.abs(label - pred)
        loss = _apply_weighting(F, loss, self._weight, sample_weight)
        return _batch_mean(F, loss, self._batch_axis)


class SigmoidBinaryCrossEntropyLoss(Loss):
    r"""Binary cross-entropy of sigmoid(pred) (or of pred itself, `from_sigmoid=True`)
    against labels in [0, 1]. `pos_weight` (an array broadcast against pred) scales the
    positive term, trading recall for precision.

    From logits the loss is computed in the stable form
    :math:`\max(x, 0) - x y + \log(1 + e^{-|x|})`, which never overflows.
    """

    def __init__(self, from_sigmoid=False, weight=None, batch_axis=0, **kwargs):
        super(SigmoidBinaryCrossEntropyLoss, self).__init__(weight, batch_axis, **kwargs)
        self._from_sigmoid = from_sigmoid

    def hybrid_forward(self, F, pred, label, sample_weight=None, pos_weight=None):
        label = _reshape_like(F, label, pred)
        if not self._from_sigmoid:
            # log(1 + exp(-|x|)) + max(-x, 0) is -log(sigmoid(x)) without overflow.
            soft = F.Activation(-F.abs(pred), act_type="softrelu")
            if pos_weight is None:
                loss = F.relu(pred) - pred * label + soft
            else:
                log_weight = 1 + F.broadcast_mul(pos_weight - 1, label)
                loss = pred - pred * label + log_weight * (soft + F.relu(-pred))
        else:
            pos_term = F.log(pred + _EPS) * label
            if pos_weight is not None:
                pos_term = F.broadcast_mul(pos_term, pos_weight)
            loss = -(pos_term + F.log(1. - pred + _EPS) * (1. - label))
        loss = _apply_weighting(F, loss, self._weight, sample_weight)
        return _batch_mean(F, loss, self._batch_axis)


SigmoidBCELoss = SigmoidBinaryCrossEntropyLoss


class SoftmaxCrossEntropyLoss(Loss):
    r"""Cross-entropy of softmax(pred) along `axis` against class indices
    (`sparse_label=True`) or distributions of pred's shape. With `from_logits=True`,
    pred is taken to be log-probabilities already."""

    def __init__(self, axis=-1, sparse_label=True, from_logits=False, weight=None,
                 batch_axis=0, **kwargs):
        super(SoftmaxCrossEntropyLoss, self).__init__(weight, batch_axis, **kwargs)
        self._axis = axis
        self._sparse_label = sparse_label
        self._from_logits = from_logits

    def hybrid_forward(self, F, pred, label, sample_weight=None):
        if self._sparse_label and not self._from_logits and F is ndarray:
            # Imperatively, one fused operator (and one gradient) instead of log_softmax, pick
            # and negative: at small sizes their per-call cost dominates the loss. Graphs keep
            # MXNet's operators, so exported symbols load in MXNet.
            loss = F._internal._sparse_softmax_cross_entropy(pred, label, axis=self._axis)
            return _batch_mean(F, _apply_weighting(F, loss, self._weight, sample_weight), self._batch_axis)
        if not self._from_logits:
            pred = F.log_softmax(pred, axis=self._axis)
        if self._sparse_label:
            loss = -F.pick(pred, label, axis=self._axis, keepdims=True)
        else:
            label = _reshape_like(F, label, pred)
            loss = -F.sum(pred * label, axis=self._axis, keepdims=True)
        loss = _apply_weighting(F, loss, self._weight, sample_weight)
        return _batch_mean(F, loss, self._batch_axis)


SoftmaxCELoss = SoftmaxCrossEntropyLoss


class KLDivLoss(Loss):
    r"""Kullback-Leibler divergence :math:`\sum label (\log label - pred)` with pred as
    log-probabilities (`from_logits=True`, the default) or as logits softmaxed along
    `axis`. Averaged like the other losses (so it is the KL divergence over the number
    of elements per sample)."""

    def __init__(self, from_logits=True, axis=-1, weight=None, batch_axis=0, **kwargs):
        super(KLDivLoss, self).__init__(weight, batch_axis, **kwargs)
        self._from_logits = from_logits
        self._axis = axis

    def hybrid_forward(self, F, pred, label, sample_weight=None):
        if not self._from_logits:
            pred = F.log_softmax(pred, axis=self._axis)
        loss = label * (F.log(label + _EPS) - pred)
        loss = _apply_weighting(F, loss, self._weight, sample_weight)
        return _batch_mean(F, loss, self._batch_axis)


class HuberLoss(Loss):
    r"""Smoothed L1: :math:`\frac{1}{2\rho}(label - pred)^2` where the error is at most
    `rho`, :math:`|label - pred| - \frac{\rho}{2}` beyond."""

    def __init__(self, rho=1, weight=None, batch_axis=0, **kwargs):
        super(HuberLoss, self).__init__(weight, batch_axis, **kwargs)
        if not rho > 0:
            raise ValueError("HuberLoss: rho must be positive, got %r" % (rho,))
        self._rho = rho

    def hybrid_forward(self, F, pred, label, sample_weight=None):
        label = _reshape_like(F, label, pred)
        err = F.abs(label - pred)
        big = F._internal._greater_scalar(err, scalar=float(self._rho))
        loss = F.where(big, err - 0.5 * self._rho, (0.5 / self._rho) * F.square(err))
        loss = _apply_weighting(F, loss, self._weight, sample_weight)
        return _batch_mean(F, loss, self._batch_axis)


class HingeLoss(Loss):
    r"""Hinge loss :math:`\max(0, margin - pred \cdot label)` for labels in {-1, 1}."""

    def __init__(self, margin=1, weight=None, batch_axis=0, **kwargs):
        super(HingeLoss, self).__init__(weight, batch_axis, **kwargs)
        self._margin = margin

    def hybrid_forward(self, F, pred, label, sample_weight=None):
        label = _reshape_like(F, label, pred)
        loss = F.relu(self._margin - pred * label)
        loss = _apply_weighting(F, loss, self._weight, sample_weight)
        return _batch_mean(F, loss, self._batch_axis)


class SquaredHingeLoss(Loss):
    r"""Squared hinge loss :math:`\max(0, margin - pred \cdot label)^2`."""

    def __init__(self, margin=1, weight=None, batch_axis=0, **kwargs):
        super(SquaredHingeLoss, self).__init__(weight, batch_axis, **kwargs)
        self._margin = margin

    def hybrid_forward(self, F, pred, label, sample_weight=None):
        label = _reshape_like(F, label, pred)
        loss = F.square(F.relu(self._margin - pred * label))
        loss = _apply_weighting(F, loss, self._weight, sample_weight)
        return _batch_mean(F, loss, self._batch_axis)


class LogisticLoss(Loss):
    r"""Logistic loss :math:`\log(1 + e^{-pred \cdot label})` for labels in {-1, 1}
    (`label_format='signed'`) or {0, 1} (`'binary'`)."""

    def __init__(self, weight=None, batch_axis=0, label_format="signed", **kwargs):
        super(LogisticLoss, self).__init__(weight, batch_axis, **kwargs)
        if label_format not in ("signed", "binary"):
            raise ValueError("LogisticLoss: label_format must be 'signed' or 'binary', got %r"
                             % (label_format,))
        self._label_format = label_format

    def hybrid_forward(self, F, pred, label, sample_weight=None):
        label = _reshape_like(F, label, pred)
        if self._label_format == "signed":
            # {-1, 1} -> {0, 1}: then it is the sigmoid cross-entropy, in its stable form.
            label = (label + 1.0) / 2.0
        loss = F.relu(pred) - pred * label + F.Activation(-F.abs(pred), act_type="softrelu")
        loss = _apply_weighting(F, loss, self._weight, sample_weight)
        return _batch_mean(F, loss, self._batch_axis)


class CTCLoss(Loss):
    """Connectionist temporal classification loss of unnormalised predictions against
    labellings, one value per sequence (the CTCLoss operator with the blank as the last
    class). `layout` is 'NTC' or 'TNC' for `pred` (batch, time, alphabet); `label_layout`
    'NT' or 'TN' for `label`, whose values are 0 .. alphabet-2, padded with -1.
    `pred_lengths` and `label_lengths` (batch,) give each sequence's and labelling's
    length when they differ."""

    def __init__(self, layout="NTC", label_layout="NT", weight=None, **kwargs):
        assert layout in ["NTC", "TNC"], "CTCLoss: layout must be 'NTC' or 'TNC', got %r" % (layout,)
        assert label_layout in ["NT", "TN"], "CTCLoss: label_layout must be 'NT' or 'TN', got %r" % (label_layout,)
        self._layout = layout
        self._label_layout = label_layout
        super(CTCLoss, self).__init__(weight, label_layout.find("N"), **kwargs)

    def hybrid_forward(self, F, pred, label, pred_lengths=None, label_lengths=None, sample_weight=None):
        if self._layout == "NTC":
            pred = F.swapaxes(pred, dim1=0, dim2=1)
        if self._batch_axis == 1:
            label = F.swapaxes(label, dim1=0, dim2=1)
        loss = F.CTCLoss(pred, label, pred_lengths, label_lengths, use_data_lengths=pred_lengths is not None,
                         use_label_lengths=label_lengths is not None, blank_label="last")
        return _apply_weighting(F, loss, self._weight, sample_weight)


class TripletLoss(Loss):
    r"""Triplet loss :math:`\max(0, \|pos - pred\|^2 - \|neg - pred\|^2 + margin)`, called
    as `loss(pred, positive, negative, sample_weight=None)`; one value per sample."""

    def __init__(self, margin=1, weight=None, batch_axis=0, **kwargs):
        super(TripletLoss, self).__init__(weight, batch_axis, **kwargs)
        self._margin = margin

    def hybrid_forward(self, F, pred, positive, negative, sample_weight=None):
        positive = _reshape_like(F, positive, pred)
        negative = _reshape_like(F, negative, pred)
        loss = F.sum(F.square(positive - pred) - F.square(negative - pred),
                     axis=self._batch_axis, exclude=True)
        loss = F.relu(loss + self._margin)
        return _apply_weighting(F, loss, self._weight, sample_weight)


class CosineEmbeddingLoss(Loss):
    r"""For label 1, :math:`1 - \cos(x_1, x_2)`; for label -1,
    :math:`\max(0, \cos(x_1, x_2) - margin)`. Called as
    `loss(input1, input2, label, sample_weight=None)`; the result has shape (N, 1), as
    MXNet gives it."""

    def __init__(self, weight=None, batch_axis=0, margin=0, **kwargs):
        super(CosineEmbeddingLoss, self).__init__(weight, batch_axis, **kwargs)
        self._margin = margin

    def hybrid_forward(self, F, input1, input2, label, sample_weight=None):
        input1 = _reshape_like(F, input1, input2)
        label = F.reshape(label, shape=(-1, 1))
        cos_sim = self._cosine_similarity(F, input1, input2)
        y_1 = F._internal._equal_scalar(label, scalar=1.0)
        y_minus_1 = F._internal._equal_scalar(label, scalar=-1.0)
        cos_sim_a = (1 - cos_sim) * y_1
        cos_sim_b = F.relu(y_minus_1 * (cos_sim - self._margin))
        loss = cos_sim_a + cos_sim_b
        return _apply_weighting(F, loss, self._weight, sample_weight)

    @staticmethod
    def _cosine_similarity(F, x, y, axis=-1):
        x_norm = F.reshape(F.norm(x, axis=axis), shape=(-1, 1))
        y_norm = F.reshape(F.norm(y, axis=axis), shape=(-1, 1))
        x_dot_y = F.reshape(F.sum(x * y, axis=axis), shape=(-1, 1))
        # A zero vector has no direction: its similarity is 0, not NaN.
        return x_dot_y / F._internal._maximum_scalar(x_norm * y_norm, scalar=_EPS)


class PoissonNLLLoss(Loss):
    r"""Negative log-likelihood of `target` under a Poisson distribution of mean
    exp(pred) (`from_logits=True`) or pred. `compute_full` adds Stirling's term
    :math:`t \log t - t + \frac{1}{2}\log(2\pi t)` for targets above 1. Returns the mean
    over all elements (a single value), as MXNet does."""

    def __init__(self, weight=None, from_logits=True, batch_axis=0, compute_full=False, **kwargs):
        super(PoissonNLLLoss, self).__init__(weight, batch_axis, **kwargs)
        self._from_logits = from_logits
        self._compute_full = compute_full

    def hybrid_forward(self, F, pred, target, sample_weight=None, epsilon=1e-08):
        target = _reshape_like(F, target, pred)
        if self._from_logits:
            loss = F.exp(pred) - target * pred
        else:
            loss = pred - target * F.log(pred + epsilon)
        if self._compute_full:
            # Stirling's term only where target > 1; evaluating it on max(target, 1) keeps
            # log() finite (no 0 * -inf = NaN) where the mask drops it.
            safe_t = F._internal._maximum_scalar(target, scalar=1.0)
            stirling = safe_t * F.log(safe_t) - safe_t + 0.5 * F.log(2 * math.pi * safe_t)
            loss = loss + stirling * F._internal._greater_scalar(target, scalar=1.0)
        loss = _apply_weighting(F, loss, self._weight, sample_weight)
        return F.mean(loss)


class SDMLLoss(Loss):
    r"""Smoothed deep metric learning loss (Bonadiman, Kumar and Mittal, 2019), called as
    `loss(x1, x2)` with two (batch_size, dim) batches whose rows i form positive pairs and
    whose other pairs serve as negatives. Each row i of x1 gets a distribution over the
    rows of x2, softmax(-squared distances), compared by KL divergence with the smoothed
    labels 1 - smoothing_parameter at j = i and smoothing_parameter / (batch_size - 1)
    elsewhere; averaged over j as KLDivLoss does, so the result has shape (batch_size,).

    The KL divergence is written through the diagonal alone (the labels take two values),
    so no identity matrix of the batch size is built and the loss also hybridizes."""

    def __init__(self, smoothing_parameter=0.3, weight=1., batch_axis=0, **kwargs):
        super(SDMLLoss, self).__init__(weight, batch_axis, **kwargs)
        if not 0 <= smoothing_parameter < 1:
            raise ValueError("SDMLLoss: smoothing_parameter must be in [0, 1), got %r" % (smoothing_parameter,))
        self.smoothing_parameter = smoothing_parameter

    def hybrid_forward(self, F, x1, x2):
        s = self.smoothing_parameter
        if isinstance(x1, ndarray.NDArray):
            if x1.ndim != 2 or x1.shape != x2.shape:
                raise ValueError("SDMLLoss: expected two batches of shape (batch_size, dim), got %s and %s"
                                 % (x1.shape, x2.shape))
            if x1.shape[0] < 2:
                raise ValueError("SDMLLoss: needs a batch of at least 2 pairs (the others are the negatives), "
                                 "got %d" % x1.shape[0])
        pair = F.sum(F.square(x1 - x2), axis=1)
        dist = F.sum(F.square(F.broadcast_sub(F.expand_dims(x1, axis=1), F.expand_dims(x2, axis=0))), axis=2)
        logp = F.log_softmax(-dist, axis=1)
        # log-sum-exp of each row, the same for every column: -dist - logp.
        lse = F.mean(-dist - logp, axis=1)
        logp_diag = -pair - lse
        n = F.sum(F.ones_like(pair))
        off = F.broadcast_div(F.ones_like(n) * s, n - 1)
        kl = (1 - s) * (math.log(1 - s + _EPS) - logp_diag)
        kl = kl + F.broadcast_mul(off, F.broadcast_sub(F.broadcast_mul(n - 1, F.log(off + _EPS)),
                                                       F.sum(logp, axis=1) - logp_diag))
        loss = F.broadcast_div(kl, n)
        return _apply_weighting(F, loss, self._weight)

