"""weft.metric: each metric against hand computations on known inputs."""
import math

import numpy as np
import pytest

import weft as mx


def nd(x):
    return mx.nd.array(np.asarray(x, dtype=np.float32))


def _binary_batch(tp, fp, fn, tn):
    """Labels and (batch, 2) scores giving exactly this confusion matrix."""
    labels = [1] * tp + [0] * fp + [1] * fn + [0] * tn
    predicted = [1] * tp + [1] * fp + [0] * fn + [0] * tn
    scores = np.array([[0.2, 0.8] if p else [0.7, 0.3] for p in predicted])
    return nd(labels), nd(scores)


def test_accuracy():
    m = mx.metric.create("acc")
    assert isinstance(m, mx.metric.Accuracy)
    pred = nd([[0.3, 0.7], [0.9, 0.1], [0.4, 0.6], [0.2, 0.8]])
    m.update([nd([1, 0, 0, 1])], [pred])
    assert m.get() == ("accuracy", 0.75)
    assert (m.num_inst, m.sum_metric) == (4, 3)
    # Predicted class ids of the labels' shape are compared directly; single arrays are wrapped.
    m.update(nd([2, 2]), nd([2, 1]))
    assert m.get()[1] == pytest.approx(4 / 6)
    m.reset()
    assert math.isnan(m.get()[1])


def test_accuracy_axis():
    pred = np.zeros((2, 3, 4), np.float32)  # class axis 1
    pred[0, 2, :] = 1
    pred[1, 0, :2] = 1
    pred[1, 1, 2:] = 1
    label = np.array([[2, 2, 0, 2], [0, 0, 1, 0]])
    m = mx.metric.Accuracy(axis=1)
    m.update([nd(label)], [nd(pred)])
    assert m.get()[1] == pytest.approx(6 / 8)


def test_top_k_accuracy():
    m = mx.metric.create("top_k_accuracy", top_k=2)
    assert m.name == "top_k_accuracy_2"
    pred = nd([[0.1, 0.5, 0.4], [0.6, 0.3, 0.1], [0.2, 0.3, 0.5], [0.2, 0.7, 0.1]])
    m.update([nd([2, 2, 0, 0])], [pred])  # top-2 sets {1,2}, {0,1}, {2,1}, {1,0}
    assert m.get()[1] == pytest.approx(2 / 4)
    with pytest.raises(ValueError, match="top_k must be more than 1"):
        mx.metric.TopKAccuracy(top_k=1)


def test_f1_and_mcc_known_confusion():
    label, pred = _binary_batch(tp=3, fp=1, fn=2, tn=4)
    precision, recall = 3 / 4, 3 / 5
    f1 = mx.metric.create("f1")
    f1.update([label], [pred])
    assert f1.get() == ("f1", pytest.approx(2 * precision * recall / (precision + recall)))
    mcc = mx.metric.MCC()
    mcc.update([label], [pred])
    assert mcc.get()[1] == pytest.approx((3 * 4 - 1 * 2) / math.sqrt(4 * 5 * 5 * 6))


def test_f1_macro_vs_micro():
    batches = [_binary_batch(3, 1, 2, 4), _binary_batch(1, 2, 0, 5)]
    macro, micro = mx.metric.F1(average="macro"), mx.metric.F1(average="micro")
    for label, pred in batches:
        macro.update([label], [pred])
        micro.update([label], [pred])

    def f1(tp, fp, fn):
        p, r = tp / (tp + fp), tp / (tp + fn)
        return 2 * p * r / (p + r)
    assert macro.get()[1] == pytest.approx((f1(3, 1, 2) + f1(1, 2, 0)) / 2)
    assert micro.get()[1] == pytest.approx(f1(4, 3, 2))
    with pytest.raises(ValueError, match="binary classification"):
        mx.metric.F1().update([nd([0, 1, 2])], [nd(np.eye(3)[:, :2])])
    with pytest.raises(ValueError, match="average"):
        mx.metric.F1(average="weighted")


def test_mcc_degenerate_is_zero():
    label, pred = _binary_batch(tp=0, fp=0, fn=0, tn=5)
    m = mx.metric.MCC()
    m.update([label], [pred])
    assert m.get()[1] == 0.0


def test_regression_metrics():
    label = np.array([1.0, 2.0, 3.0, 4.0])
    pred = np.array([1.5, 1.0, 3.0, 6.0])
    err = pred - label
    for name, expected in [("mae", np.abs(err).mean()), ("mse", (err ** 2).mean()),
                           ("rmse", np.sqrt((err ** 2).mean()))]:
        m = mx.metric.create(name)
        m.update([nd(label)], [nd(pred)])
        assert m.get() == (name, pytest.approx(expected)), name
    # As in MXNet 1.x, each batch's error weighs the same whatever the batch size.
    m = mx.metric.MSE()
    m.update([nd([[0.0, 0.0]])], [nd([[1.0, 3.0]])])
    m.update([nd(np.zeros((3, 2)))], [nd(np.ones((3, 2)))])
    assert m.get()[1] == pytest.approx((5.0 + 1.0) / 2)
    a = mx.metric.MAE()
    a.update([nd([0.0]), nd([0.0, 0.0, 0.0])], [nd([4.0]), nd([1.0, 1.0, 1.0])])
    assert a.get()[1] == pytest.approx((4.0 + 1.0) / 2)
    # RMSE averages the batch RMSEs.
    r = mx.metric.RMSE()
    r.update([nd([0.0])], [nd([3.0])])
    r.update([nd([0.0, 0.0])], [nd([1.0, 1.0])])
    assert r.get()[1] == pytest.approx((3.0 + 1.0) / 2)


def test_cross_entropy_and_nll():
    probs = np.array([[0.1, 0.9], [0.6, 0.4], [0.5, 0.5]])
    label = np.array([1, 1, 0])
    expected = -np.mean(np.log(probs[np.arange(3), label] + 1e-12))
    ce = mx.metric.create("ce")
    ce.update([nd(label)], [nd(probs)])
    assert ce.get() == ("cross-entropy", pytest.approx(expected, rel=1e-6))
    nll = mx.metric.create("nll_loss")
    nll.update([nd(label)], [nd(probs)])
    assert nll.get() == ("nll-loss", pytest.approx(expected, rel=1e-6))
    with pytest.raises(ValueError, match="one label per row"):
        ce.update([nd([1, 0])], [nd(probs)])


def test_perplexity_ignore_label():
    probs = np.array([[[0.2, 0.8], [0.5, 0.5], [0.9, 0.1]],
                      [[0.3, 0.7], [0.6, 0.4], [0.25, 0.75]]])
    label = np.array([[1, 0, -1], [0, 0, 1]])  # -1 ignored
    picked = [0.8, 0.5, 0.3, 0.6, 0.75]
    m = mx.metric.Perplexity(ignore_label=-1)
    m.update([nd(label)], [nd(probs)])
    assert m.get() == ("perplexity", pytest.approx(math.exp(-np.mean(np.log(picked))), rel=1e-6))
    full = mx.metric.Perplexity(ignore_label=None)
    full.update([nd(np.array([[1, 0], [0, 1]]))], [nd(probs[:, :2])])
    assert full.get()[1] == pytest.approx(math.exp(-np.mean(np.log([0.8, 0.5, 0.3, 0.4]))), rel=1e-6)
    # class axis other than the last
    ax = mx.metric.Perplexity(ignore_label=None, axis=1)
    ax.update([nd([[1, 0]])], [nd(np.array([[[0.2, 0.6], [0.8, 0.4]]]))])
    assert ax.get()[1] == pytest.approx(math.exp(-np.mean(np.log([0.8, 0.6]))), rel=1e-6)
    with pytest.raises(ValueError, match="shape mismatch"):
        m.update([nd([1, 0])], [nd(probs)])


def test_perplexity_clips_labels_outside_the_classes():
    # As MXNet's pick (mode 'clip'): label 3 of 3 classes takes the last, -2 the first;
    # the ignore label is still left out.
    probs = np.array([[0.2, 0.3, 0.5], [0.6, 0.3, 0.1], [0.1, 0.7, 0.2], [0.4, 0.4, 0.2]])
    m = mx.metric.Perplexity(ignore_label=-1)
    m.update([nd([3, -2, 1, -1])], [nd(probs)])
    assert m.get()[1] == pytest.approx(math.exp(-np.mean(np.log([0.5, 0.6, 0.7]))), rel=1e-6)


def test_pearson():
    x = np.array([1.0, 2.0, 3.0, 4.0, 6.0])
    y = np.array([2.0, 1.0, 4.0, 3.0, 7.0])
    m = mx.metric.create("pearsonr")
    m.update([nd(y)], [nd(x)])
    xc, yc = x - x.mean(), y - y.mean()
    r = (xc * yc).sum() / np.sqrt((xc ** 2).sum() * (yc ** 2).sum())
    assert m.get()[1] == pytest.approx(r, rel=1e-6)
    micro = mx.metric.PearsonCorrelation(average="micro")
    micro.update([nd(y[:2])], [nd(x[:2])])
    micro.update([nd(y[2:])], [nd(x[2:])])
    assert micro.get()[1] == pytest.approx(r, rel=1e-6)
    with pytest.raises(ValueError, match="does not match"):
        m.update([nd(y)], [nd(x[:3])])


def test_loss_metric():
    m = mx.metric.Loss()
    m.update(None, [nd([1.0, 2.0]), nd([[3.0, 6.0]])])
    assert m.get() == ("loss", pytest.approx(3.0))


def test_composite_and_list_create():
    m = mx.metric.create(["acc", "ce"])
    assert isinstance(m, mx.metric.CompositeEvalMetric)
    probs = nd([[0.2, 0.8], [0.6, 0.4]])
    m.update([nd([1, 1])], [probs])
    names, values = m.get()
    assert names == ["accuracy", "cross-entropy"]
    assert values[0] == 0.5 and values[1] == pytest.approx(-(math.log(0.8) + math.log(0.4)) / 2, rel=1e-6)
    assert m.get_name_value() == list(zip(names, values))
    assert isinstance(m.get_metric(1), mx.metric.CrossEntropy)
    with pytest.raises(ValueError, match="out of range"):
        m.get_metric(5)
    m.reset()
    assert all(math.isnan(v) for v in m.get()[1])


def test_update_dict_names():
    m = mx.metric.Accuracy(output_names=["out"], label_names=["lab"])
    m.update_dict({"lab": nd([1, 0]), "other": nd([0, 0])},
                  {"out": nd([[0.0, 1.0], [0.0, 1.0]]), "aux": nd([[1.0, 0.0], [1.0, 0.0]])})
    assert m.get()[1] == 0.5


def test_local_and_global_stats():
    m = mx.metric.Accuracy()
    m.update([nd([1, 1])], [nd([1, 1])])
    m.reset_local()
    m.update([nd([1, 1])], [nd([0, 1])])
    assert m.get()[1] == 0.5
    assert m.get_global()[1] == 0.75
    assert m.get_global_name_value() == [("accuracy", 0.75)]


def test_custom_metric_and_np_decorator():
    def frac_positive(label, pred):
        assert isinstance(label, np.ndarray) and isinstance(pred, np.ndarray)
        return float((pred > 0).sum()), pred.size
    m = mx.metric.create(frac_positive)
    assert isinstance(m, mx.metric.CustomMetric) and m.name == "frac_positive"
    m.update([nd([0, 0, 0])], [nd([1.0, -1.0, 2.0])])
    assert m.get()[1] == pytest.approx(2 / 3)

    @mx.metric.np
    def mean_abs(label, pred):
        return np.abs(label - pred).mean()
    mean_abs.update([nd([1.0]), nd([0.0, 0.0])], [nd([3.0]), nd([1.0, 3.0])])
    assert mean_abs.get() == ("mean_abs", pytest.approx((2.0 + 2.0) / 2))
    lam = mx.metric.CustomMetric(lambda l, p: 1.0)
    assert lam.name == "custom(<lambda>)"
    with pytest.raises(NotImplementedError):
        lam.get_config()


def test_create_errors_and_registry():
    with pytest.raises(ValueError, match="not a registered metric"):
        mx.metric.create("accuracyy")
    with pytest.raises(TypeError, match="expected a metric name"):
        mx.metric.create(3)
    acc = mx.metric.Accuracy()
    assert mx.metric.create(acc) is acc
    for name, cls in [("accuracy", mx.metric.Accuracy), ("top_k_acc", mx.metric.TopKAccuracy),
                      ("mcc", mx.metric.MCC), ("perplexity", mx.metric.Perplexity),
                      ("crossentropy", mx.metric.CrossEntropy), ("composite", mx.metric.CompositeEvalMetric)]:
        kwargs = {"top_k": 3} if cls is mx.metric.TopKAccuracy else {}
        if cls is mx.metric.Perplexity:
            kwargs = {"ignore_label": None}
        assert type(mx.metric.create(name, **kwargs)) is cls, name
    cfg = mx.metric.create("acc", axis=2).get_config()
    assert cfg["metric"] == "Accuracy" and cfg["axis"] == 2
    assert type(mx.metric.create(cfg)) is mx.metric.Accuracy

    @mx.metric.register
    @mx.metric.alias("always_one")
    class AlwaysOne(mx.metric.EvalMetric):
        def __init__(self):
            super(AlwaysOne, self).__init__("one")

        def update(self, labels, preds):
            self.sum_metric += 1
            self.num_inst += 1
    assert type(mx.metric.create("always_one")) is AlwaysOne


def test_shape_mismatch_errors():
    with pytest.raises(ValueError, match="Shape of labels 2 does not match shape of predictions 1"):
        mx.metric.Accuracy().update([nd([1]), nd([0])], [nd([[0.0, 1.0]])])
    with pytest.raises(ValueError, match="does not match"):
        mx.metric.Accuracy().update([nd([1, 0, 1])], [nd([[0.0, 1.0], [1.0, 0.0]])])
    with pytest.raises(ValueError, match="does not match"):
        mx.metric.MAE().update([nd([1.0, 2.0])], [nd([1.0, 2.0, 3.0])])
