"""Metric checks shared by the Estimator and its handlers."""
import warnings

import numpy as np

from ....metric import Accuracy, CompositeEvalMetric, EvalMetric
from ...loss import SoftmaxCrossEntropyLoss


def _check_metrics(metrics):
    """`metrics` as a flat list of EvalMetrics (a composite is opened up)."""
    if isinstance(metrics, CompositeEvalMetric):
        return [m for child in metrics.metrics for m in _check_metrics(child)]
    if isinstance(metrics, EvalMetric):
        return [metrics]
    metrics = list(metrics or [])
    bad = [m for m in metrics if not isinstance(m, EvalMetric)]
    if bad:
        raise ValueError("metrics must be an EvalMetric or a list of EvalMetrics (weft.metric), got %r" % (bad,))
    return metrics


def _check_handler_metric_ref(handler, known_metrics):
    """Raises when `handler` holds a metric (an attribute named *metric*) that is not one of
    the estimator's: it would never be updated."""
    for attribute in dir(handler):
        if "metric" not in attribute:
            continue
        ref = getattr(handler, attribute)
        for metric in (ref if isinstance(ref, list) else [ref]):
            if isinstance(metric, EvalMetric) and metric not in known_metrics:
                raise ValueError("event handler %s refers to metric %s, which is not one of the estimator's; "
                                 "use the metrics of estimator.train_metrics and estimator.val_metrics"
                                 % (type(handler).__name__, metric.name))


def _suggest_metric_for_loss(loss):
    return Accuracy() if isinstance(loss, SoftmaxCrossEntropyLoss) else None


def _improved_op(monitor, mode, who):
    """(comparison, description) for `mode` 'min', 'max' or 'auto' (max for metrics whose
    name says accuracy or F1, min otherwise)."""
    if mode not in ("auto", "min", "max"):
        warnings.warn("%s: mode %r is unknown; using 'auto'" % (who, mode), RuntimeWarning)
        mode = "auto"
    if mode == "auto":
        name = monitor.get()[0].lower()
        mode = "max" if ("acc" in name or "f1" in name) else "min"
    return np.greater if mode == "max" else np.less
