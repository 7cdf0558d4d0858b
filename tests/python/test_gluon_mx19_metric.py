"""MXNet 1.9 metric names: every registered name and alias creates its class; PCC (the
multiclass Matthews correlation) against an independent numpy formulation (the correlation
of one-hot encodings), equal to MCC on two classes, with local/global tallies."""
import numpy as np
import pytest

import weft as mx

# MXNet 1.9's registered class names (lower case) and aliases -> class name
MX19_NAMES = {"compositeevalmetric": "CompositeEvalMetric", "composite": "CompositeEvalMetric",
              "accuracy": "Accuracy", "acc": "Accuracy", "topkaccuracy": "TopKAccuracy",
              "top_k_accuracy": "TopKAccuracy", "top_k_acc": "TopKAccuracy", "f1": "F1", "mcc": "MCC",
              "perplexity": "Perplexity", "mae": "MAE", "mse": "MSE", "rmse": "RMSE", "crossentropy": "CrossEntropy",
              "ce": "CrossEntropy", "negativeloglikelihood": "NegativeLogLikelihood", "nll_loss": "NegativeLogLikelihood",
              "pearsoncorrelation": "PearsonCorrelation", "pearsonr": "PearsonCorrelation", "pcc": "PCC",
              "loss": "Loss", "torch": "Torch", "caffe": "Caffe"}


@pytest.mark.parametrize("name", sorted(MX19_NAMES))
def test_every_mxnet19_name_creates_its_metric(name):
    kwargs = {"perplexity": {"ignore_label": None}, "topkaccuracy": {"top_k": 2}, "top_k_accuracy": {"top_k": 2},
              "top_k_acc": {"top_k": 2}}.get(name, {})
    metric = mx.metric.create(name, **kwargs)
    assert type(metric).__name__ == MX19_NAMES[name]


def _onehot_corr(pred, label, k):
    """The correlation of the one-hot encodings, summed over the classes."""
    x = np.eye(k)[pred]
    y = np.eye(k)[label]
    x -= x.mean(0)
    y -= y.mean(0)
    return (x * y).sum() / np.sqrt((x * x).sum() * (y * y).sum())


def test_pcc_matches_onehot_correlation_and_grows():
    rs = np.random.RandomState(0)
    m = mx.metric.create("pcc")
    labels, preds = [], []
    for k in (2, 3, 5):   # later batches bring new classes: the matrix grows
        label = rs.randint(0, k, 40)
        scores = rs.uniform(0, 1, (40, k))
        scores[np.arange(40), label] += rs.uniform(0, 0.8, 40)   # better than chance
        m.update([mx.nd.array(label)], [mx.nd.array(scores)])
        labels.append(label)
        preds.append(scores.argmax(1))
    label, pred = np.concatenate(labels), np.concatenate(preds)
    name, value = m.get()
    assert name == "pcc" and m.k == 5
    np.testing.assert_allclose(value, _onehot_corr(pred, label, 5), rtol=1e-10)
    # sum_metric / num_inst is the score, as MXNet's properties give (code averaging metrics reads them)
    assert m.num_inst == 3 and m.global_num_inst == 3
    np.testing.assert_allclose(m.sum_metric / m.num_inst, value, rtol=1e-12)
    np.testing.assert_allclose(m.global_sum_metric / m.global_num_inst, value, rtol=1e-12)


def test_pcc_is_mcc_on_two_classes_and_takes_class_predictions():
    rs = np.random.RandomState(1)
    label = rs.randint(0, 2, 50)
    prob = rs.uniform(0, 1, (50, 2))
    pcc, mcc = mx.metric.PCC(), mx.metric.MCC()
    pcc.update(mx.nd.array(label), mx.nd.array(prob))
    mcc.update(mx.nd.array(label), mx.nd.array(prob))
    np.testing.assert_allclose(pcc.get()[1], mcc.get()[1], rtol=1e-10)
    direct = mx.metric.PCC()
    direct.update(mx.nd.array(label), mx.nd.array(prob.argmax(1)))   # classes given directly
    np.testing.assert_allclose(direct.get()[1], pcc.get()[1], rtol=1e-12)


def test_pcc_local_and_global():
    m = mx.metric.PCC()
    assert np.isnan(m.get()[1])
    a_label, a_pred = np.array([0, 1, 2, 2, 1]), np.array([0, 1, 2, 1, 1])
    b_label, b_pred = np.array([2, 0, 0, 1]), np.array([2, 0, 1, 1])
    m.update(mx.nd.array(a_label), mx.nd.array(a_pred))
    m.reset_local()
    m.update(mx.nd.array(b_label), mx.nd.array(b_pred))
    np.testing.assert_allclose(m.get()[1], _onehot_corr(b_pred, b_label, 3), rtol=1e-12)
    np.testing.assert_allclose(m.get_global()[1], _onehot_corr(np.r_[a_pred, b_pred], np.r_[a_label, b_label], 3),
                               rtol=1e-12)
    const = mx.metric.PCC()
    const.update(mx.nd.array([0, 1, 1]), mx.nd.array([1, 1, 1]))   # constant predictions
    assert np.isnan(const.get()[1])
    with pytest.raises(ValueError, match="does not match"):
        const.update([mx.nd.array([0])], [mx.nd.array([0]), mx.nd.array([1])])
