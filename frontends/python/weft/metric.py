"""Evaluation metrics (`weft.metric`), as in MXNet 1.x.

A metric accumulates over `update(labels, preds)` calls (lists of NDArrays, one per
output, or single arrays) and reports `get() -> (name, value)`. Each keeps two tallies:
the local one (`sum_metric` / `num_inst`, cleared by `reset_local`, e.g. by Speedometer
every N batches) and the global one (cleared only by `reset`), read by `get_global`.

`create` makes a metric from a registered name or alias ("acc", "ce", "top_k_accuracy",
"f1", ...), a list of those (a CompositeEvalMetric) or a function feval(label, pred).
"""
import json
import math
from collections import OrderedDict

import numpy

from .ndarray import NDArray
from . import registry as _registry

__all__ = ["EvalMetric", "CompositeEvalMetric", "Accuracy", "TopKAccuracy", "F1", "MCC", "Perplexity",
           "MAE", "MSE", "RMSE", "CrossEntropy", "NegativeLogLikelihood", "PearsonCorrelation", "PCC", "Loss",
           "Torch", "Caffe", "CustomMetric", "np", "create", "register", "alias", "check_label_shapes"]


def check_label_shapes(labels, preds, wrap=False, shape=False):
    """Raises ValueError unless labels and preds have the same length (shape=True: the same
    shape); wrap=True turns single NDArrays into one-element lists."""
    if shape:
        label_shape, pred_shape = tuple(labels.shape), tuple(preds.shape)
    else:
        label_shape, pred_shape = len(labels), len(preds)
    if label_shape != pred_shape:
        raise ValueError("Shape of labels {} does not match shape of predictions {}".format(label_shape,
                                                                                              pred_shape))
    if wrap:
        if isinstance(labels, (NDArray, numpy.ndarray)):
            labels = [labels]
        if isinstance(preds, (NDArray, numpy.ndarray)):
            preds = [preds]
    return labels, preds


def _wrap(labels, preds):
    # Single arrays become one-element lists before the length check, so that one label
    # array and one prediction array are compared as one pair and not row by row.
    if isinstance(labels, (NDArray, numpy.ndarray)):
        labels = [labels]
    if isinstance(preds, (NDArray, numpy.ndarray)):
        preds = [preds]
    return check_label_shapes(labels, preds)


def _host(x):
    """A numpy view of an NDArray (waiting for it) or of anything array-like."""
    return x.asnumpy() if isinstance(x, NDArray) else numpy.asarray(x)


_REGISTRY = {}


def register(klass):
    """Class decorator: makes an EvalMetric subclass creatable by its lower-cased name."""
    if not (isinstance(klass, type) and issubclass(klass, EvalMetric)):
        raise TypeError("metric.register: expected a subclass of EvalMetric, got %r" % (klass,))
    _REGISTRY[klass.__name__.lower()] = klass
    return klass


def alias(*aliases):
    """Class decorator: registers the class under extra names as well."""
    def reg(klass):
        for name in aliases:
            _REGISTRY[name.lower()] = klass
        return klass
    return reg


def _create(metric, *args, **kwargs):
    if isinstance(metric, EvalMetric):
        if args or kwargs:
            raise ValueError("metric.create: no arguments may follow an EvalMetric instance")
        return metric
    if isinstance(metric, dict):
        kw = dict(metric)
        if "metric" not in kw:
            raise ValueError("metric.create: the dict needs a 'metric' key, got %r" % (kw,))
        return _create(kw.pop("metric"), *args, **kw)
    if not isinstance(metric, str):
        raise TypeError("metric.create: expected a metric name, an EvalMetric, a list or a function, got %r"
                        % (metric,))
    if metric.lstrip().startswith("{"):
        # get_config() dumped with json.dumps, as MXNet's registry reads it back.
        try:
            config = json.loads(metric)
        except ValueError as err:
            raise ValueError("metric.create: %r is not valid JSON: %s" % (metric, err))
        if not isinstance(config, dict):
            raise ValueError("metric.create: JSON config must be an object, got %r" % (metric,))
        return _create(config, *args, **kwargs)
    name = metric.lower()
    if name not in _REGISTRY:
        raise ValueError("metric.create: %r is not a registered metric (known: %s)"
                         % (metric, ", ".join(sorted(_REGISTRY))))
    return _REGISTRY[name](*args, **kwargs)


def create(metric, *args, **kwargs):
    """A metric from a name or alias, an EvalMetric (returned as is), a function
    feval(label, pred) (a CustomMetric) or a list of any of these (a CompositeEvalMetric)."""
    if callable(metric) and not isinstance(metric, (EvalMetric, type)):
        return CustomMetric(metric, *args, **kwargs)
    if isinstance(metric, (list, tuple)):
        composite = CompositeEvalMetric()
        for child in metric:
            composite.add(create(child, *args, **kwargs))
        return composite
    return _create(metric, *args, **kwargs)


class EvalMetric(object):
    """Base class: subclasses define update(labels, preds) adding to the tallies."""

    def __init__(self, name, output_names=None, label_names=None, **kwargs):
        self.name = str(name)
        self.output_names = output_names
        self.label_names = label_names
        self._has_global_stats = kwargs.pop("has_global_stats", False)
        self._kwargs = kwargs
        self.reset()

    def __str__(self):
        return "EvalMetric: {}".format(dict(self.get_name_value()))

    def get_config(self):
        """The arguments that `create(**config)` rebuilds this metric from."""
        config = self._kwargs.copy()
        config.update({"metric": self.__class__.__name__, "name": self.name,
                       "output_names": self.output_names, "label_names": self.label_names})
        return config

    def update_dict(self, label, pred):
        """update() from dicts name -> array, picking output_names/label_names when set."""
        if self.output_names is not None:
            pred = [pred[name] for name in self.output_names]
        else:
            pred = list(pred.values())
        if self.label_names is not None:
            label = [label[name] for name in self.label_names]
        else:
            label = list(label.values())
        self.update(label, pred)

    def update(self, labels, preds):
        raise NotImplementedError("%s must define update" % self.__class__.__name__)

    def _add(self, sum_metric, num_inst):
        self.sum_metric += sum_metric
        self.num_inst += num_inst
        self.global_sum_metric += sum_metric
        self.global_num_inst += num_inst

    def reset(self):
        """Clears the local and global tallies."""
        self.num_inst = 0
        self.sum_metric = 0.0
        self.global_num_inst = 0
        self.global_sum_metric = 0.0

    def reset_local(self):
        """Clears the local tally only."""
        self.num_inst = 0
        self.sum_metric = 0.0

    def get(self):
        """(name, value) over the updates since the last reset/reset_local; nan when none."""
        if self.num_inst == 0:
            return (self.name, float("nan"))
        return (self.name, self.sum_metric / self.num_inst)

    def get_global(self):
        """(name, value) over the updates since the last reset."""
        if not self._has_global_stats:
            return self.get()
        if self.global_num_inst == 0:
            return (self.name, float("nan"))
        return (self.name, self.global_sum_metric / self.global_num_inst)

    def get_name_value(self):
        """[(name, value), ...] from get()."""
        return _name_value(self.get())

    def get_global_name_value(self):
        """[(name, value), ...] from get_global()."""
        return _name_value(self.get_global() if self._has_global_stats else self.get())


# mx.registry sees the same table (MXNet builds these functions on it).
_registry._REGISTRY[EvalMetric] = _REGISTRY


def _name_value(pair):
    name, value = pair
    if not isinstance(name, list):
        name = [name]
    if not isinstance(value, list):
        value = [value]
    return list(zip(name, value))


@register
@alias("composite")
class CompositeEvalMetric(EvalMetric):
    """Several metrics updated together; get() returns ([names], [values])."""

    def __init__(self, metrics=None, name="composite", output_names=None, label_names=None):
        super(CompositeEvalMetric, self).__init__(name, output_names=output_names, label_names=label_names,
                                                  has_global_stats=True)
        self.metrics = [create(m) for m in (metrics or [])]

    def add(self, metric):
        """Adds a child metric (anything `create` accepts)."""
        self.metrics.append(create(metric))

    def get_metric(self, index):
        """The child metric at `index`."""
        if not -len(self.metrics) <= index < len(self.metrics):
            raise ValueError("Metric index {} is out of range 0 and {}".format(index, len(self.metrics)))
        return self.metrics[index]

    def update_dict(self, labels, preds):
        if self.label_names is not None:
            labels = OrderedDict([i for i in labels.items() if i[0] in self.label_names])
        if self.output_names is not None:
            preds = OrderedDict([i for i in preds.items() if i[0] in self.output_names])
        for metric in self.metrics:
            metric.update_dict(labels, preds)

    def update(self, labels, preds):
        for metric in self.metrics:
            metric.update(labels, preds)

    def reset(self):
        # EvalMetric.__init__ calls reset before self.metrics exists.
        for metric in getattr(self, "metrics", []):
            metric.reset()

    def reset_local(self):
        for metric in self.metrics:
            metric.reset_local()

    def _gather(self, getter):
        names, values = [], []
        for metric in self.metrics:
            name, value = getter(metric)
            names.extend(name if isinstance(name, list) else [name])
            values.extend(value if isinstance(value, list) else [value])
        return (names, values)

    def get(self):
        return self._gather(lambda m: m.get())

    def get_global(self):
        return self._gather(lambda m: m.get_global())

    def get_config(self):
        config = super(CompositeEvalMetric, self).get_config()
        config.update({"metrics": [m.get_config() for m in self.metrics]})
        return config


@register
@alias("acc")
class Accuracy(EvalMetric):
    """Fraction of predictions equal to the label; predictions with one more dimension than
    the labels are class scores, reduced by argmax over `axis`."""

    def __init__(self, axis=1, name="accuracy", output_names=None, label_names=None):
        super(Accuracy, self).__init__(name, axis=axis, output_names=output_names, label_names=label_names,
                                       has_global_stats=True)
        self.axis = axis

    def update(self, labels, preds):
        labels, preds = _wrap(labels, preds)
        for label, pred in zip(labels, preds):
            pred = _host(pred)
            label = _host(label)
            if pred.shape != label.shape:
                pred = numpy.argmax(pred, axis=self.axis)
            pred = pred.astype("int32").ravel()
            label = label.astype("int32").ravel()
            check_label_shapes(label, pred)
            self._add(int((pred == label).sum()), len(pred))


@register
@alias("top_k_accuracy", "top_k_acc")
class TopKAccuracy(EvalMetric):
    """Fraction of samples whose label is among the top_k highest-scored classes."""

    def __init__(self, top_k=1, name="top_k_accuracy", output_names=None, label_names=None):
        super(TopKAccuracy, self).__init__(name, top_k=top_k, output_names=output_names,
                                           label_names=label_names, has_global_stats=True)
        self.top_k = top_k
        if self.top_k <= 1:
            raise ValueError("TopKAccuracy: top_k must be more than 1 (use Accuracy for top 1), got %r" % top_k)
        self.name += "_%d" % self.top_k

    def update(self, labels, preds):
        labels, preds = _wrap(labels, preds)
        for label, pred in zip(labels, preds):
            pred = _host(pred).astype("float32")
            if pred.ndim > 2:
                raise ValueError("TopKAccuracy: predictions must have at most 2 dims, got shape %s" % (pred.shape,))
            label = _host(label).astype("int32").ravel()
            check_label_shapes(label, pred)
            if pred.ndim == 1:
                correct = int((pred.astype("int32") == label).sum())
            else:
                num_classes = pred.shape[1]
                top_k = min(num_classes, self.top_k)
                # Order within the top k does not matter, so a partition is enough.
                top = numpy.argpartition(pred, num_classes - top_k, axis=1)[:, num_classes - top_k:]
                correct = int((top == label[:, None]).any(axis=1).sum())
            self._add(correct, pred.shape[0])


class _BinaryClassificationMetrics(object):
    """Confusion-matrix counts of a binary classifier (local and global), and the scores
    computed from them."""

    def __init__(self):
        self.reset_stats()
        self.global_true_positives = self.global_false_negatives = 0
        self.global_false_positives = self.global_true_negatives = 0

    def update_binary_stats(self, label, pred, metric_name):
        pred = _host(pred)
        label = _host(label).astype("int32").ravel()
        check_label_shapes(label, pred)
        if pred.ndim != 2:
            raise ValueError("%s: predictions must be (batch, 2) class scores, got shape %s"
                             % (metric_name, pred.shape))
        if len(numpy.unique(label)) > 2:
            raise ValueError("%s currently only supports binary classification, labels hold %s"
                             % (metric_name, numpy.unique(label).tolist()))
        pred_true = numpy.argmax(pred, axis=1) == 1
        label_true = label == 1
        tp = int((pred_true & label_true).sum())
        fp = int((pred_true & ~label_true).sum())
        fn = int((~pred_true & label_true).sum())
        tn = int((~pred_true & ~label_true).sum())
        self.true_positives += tp
        self.false_positives += fp
        self.false_negatives += fn
        self.true_negatives += tn
        self.global_true_positives += tp
        self.global_false_positives += fp
        self.global_false_negatives += fn
        self.global_true_negatives += tn

    def _counts(self, use_global):
        if use_global:
            return (self.global_true_positives, self.global_false_positives, self.global_false_negatives,
                    self.global_true_negatives)
        return (self.true_positives, self.false_positives, self.false_negatives, self.true_negatives)

    def fscore(self, use_global=False):
        tp, fp, fn, _ = self._counts(use_global)
        precision = float(tp) / (tp + fp) if tp + fp > 0 else 0.0
        recall = float(tp) / (tp + fn) if tp + fn > 0 else 0.0
        if precision + recall == 0:
            return 0.0
        return 2 * precision * recall / (precision + recall)

    def matthewscc(self, use_global=False):
        tp, fp, fn, tn = (float(c) for c in self._counts(use_global))
        if tp + fp + fn + tn == 0:
            return 0.0
        # Zero marginals are left out of the denominator: the numerator is then 0 too,
        # and the score 0 (no correlation), as MXNet defines it.
        denom = 1.0
        for t in (tp + fp, tp + fn, tn + fp, tn + fn):
            if t != 0:
                denom *= t
        return (tp * tn - fp * fn) / math.sqrt(denom)

    def total_examples(self, use_global=False):
        return sum(self._counts(use_global))

    def reset_stats(self):
        self.true_positives = self.false_negatives = self.false_positives = self.true_negatives = 0


class _BinaryScore(EvalMetric):
    """F1 and MCC: "macro" averages the score of each update() call, "micro" scores the
    pooled confusion counts of all calls."""

    def __init__(self, name, output_names, label_names, average):
        if average not in ("macro", "micro"):
            raise ValueError("%s: average must be 'macro' or 'micro', got %r" % (self.__class__.__name__, average))
        self.average = average
        self.metrics = _BinaryClassificationMetrics()
        super(_BinaryScore, self).__init__(name, output_names=output_names, label_names=label_names,
                                           average=average, has_global_stats=True)

    def _score(self, use_global):
        raise NotImplementedError

    def update(self, labels, preds):
        labels, preds = _wrap(labels, preds)
        for label, pred in zip(labels, preds):
            self.metrics.update_binary_stats(label, pred, self.__class__.__name__)
        if self.average == "macro":
            self._add(self._score(False), 1)
            self.metrics.reset_stats()
        else:
            self.sum_metric = self._score(False) * self.metrics.total_examples(False)
            self.num_inst = self.metrics.total_examples(False)
            self.global_sum_metric = self._score(True) * self.metrics.total_examples(True)
            self.global_num_inst = self.metrics.total_examples(True)

    def reset(self):
        super(_BinaryScore, self).reset()
        self.metrics = _BinaryClassificationMetrics()

    def reset_local(self):
        super(_BinaryScore, self).reset_local()
        self.metrics.reset_stats()


@register
class F1(_BinaryScore):
    """F1 score of a binary classifier (label 1 positive; preds are (batch, 2) scores)."""

    def __init__(self, name="f1", output_names=None, label_names=None, average="macro"):
        super(F1, self).__init__(name, output_names, label_names, average)

    def _score(self, use_global):
        return self.metrics.fscore(use_global)


@register
class MCC(_BinaryScore):
    """Matthews correlation coefficient of a binary classifier."""

    def __init__(self, name="mcc", output_names=None, label_names=None, average="macro"):
        super(MCC, self).__init__(name, output_names, label_names, average)

    def _score(self, use_global):
        return self.metrics.matthewscc(use_global)


@register
class Perplexity(EvalMetric):
    """exp(mean negative log-probability of the label); labels equal to ignore_label are
    left out. The class scores lie along `axis` of the predictions."""

    def __init__(self, ignore_label, axis=-1, name="perplexity", output_names=None, label_names=None):
        super(Perplexity, self).__init__(name, ignore_label=ignore_label, output_names=output_names,
                                         label_names=label_names, has_global_stats=True)
        self.ignore_label = ignore_label
        self.axis = axis

    def update(self, labels, preds):
        labels, preds = _wrap(labels, preds)
        loss, num = 0.0, 0
        for label, pred in zip(labels, preds):
            pred = numpy.moveaxis(_host(pred), self.axis, -1)
            label = _host(label)
            if label.size * pred.shape[-1] != pred.size:
                raise ValueError("Perplexity: shape mismatch: labels %s vs. predictions %s (axis %d)"
                                 % (label.shape, _host_shape(pred, self.axis), self.axis))
            label = label.reshape(-1).astype("int64")
            probs = pred.reshape(-1, pred.shape[-1])
            keep = numpy.ones(label.size, bool) if self.ignore_label is None else label != self.ignore_label
            # A label outside [0, classes) takes the nearest class, as MXNet's pick (mode
            # 'clip') gives it: MXNet's own bucketing example draws labels up to the class count.
            picked = probs[numpy.arange(label.size), numpy.clip(label, 0, probs.shape[1] - 1)]
            loss -= float(numpy.log(numpy.maximum(1e-10, picked[keep])).sum())
            num += int(keep.sum())
        self._add(loss, num)

    def get(self):
        if self.num_inst == 0:
            return (self.name, float("nan"))
        return (self.name, math.exp(self.sum_metric / self.num_inst))

    def get_global(self):
        if self.global_num_inst == 0:
            return (self.name, float("nan"))
        return (self.name, math.exp(self.global_sum_metric / self.global_num_inst))


def _host_shape(moved, axis):
    return tuple(numpy.moveaxis(numpy.empty(moved.shape, dtype=bool), -1, axis).shape)


def _regression_pairs(labels, preds):
    labels, preds = _wrap(labels, preds)
    for label, pred in zip(labels, preds):
        label, pred = _host(label), _host(pred)
        if label.ndim == 1:
            label = label.reshape(label.shape[0], 1)
        if pred.ndim == 1:
            pred = pred.reshape(pred.shape[0], 1)
        # As MXNet's, the shapes need only broadcast: labels (n,) score against every column
        # of predictions (n, c).
        try:
            numpy.broadcast_shapes(label.shape, pred.shape)
        except ValueError:
            raise ValueError("Shape of labels {} does not match shape of predictions {}".format(label.shape,
                                                                                                  pred.shape)) from None
        yield label.astype(numpy.float64), pred.astype(numpy.float64)


@register
class MAE(EvalMetric):
    """Mean absolute error of each label/prediction pair, averaged over the pairs (as in
    MXNet 1.x, each update's arrays weigh the same whatever their size)."""

    def __init__(self, name="mae", output_names=None, label_names=None):
        super(MAE, self).__init__(name, output_names=output_names, label_names=label_names, has_global_stats=True)

    def update(self, labels, preds):
        for label, pred in _regression_pairs(labels, preds):
            self._add(float(numpy.abs(label - pred).mean()), 1)


@register
class MSE(EvalMetric):
    """Mean squared error of each label/prediction pair, averaged over the pairs."""

    def __init__(self, name="mse", output_names=None, label_names=None):
        super(MSE, self).__init__(name, output_names=output_names, label_names=label_names, has_global_stats=True)

    def update(self, labels, preds):
        for label, pred in _regression_pairs(labels, preds):
            self._add(float(((label - pred) ** 2).mean()), 1)


@register
class RMSE(EvalMetric):
    """Root mean squared error of each label/prediction pair, averaged over the pairs."""

    def __init__(self, name="rmse", output_names=None, label_names=None):
        super(RMSE, self).__init__(name, output_names=output_names, label_names=label_names, has_global_stats=True)

    def update(self, labels, preds):
        for label, pred in _regression_pairs(labels, preds):
            self._add(float(numpy.sqrt(((label - pred) ** 2).mean())), 1)


def _label_log_prob_sum(label, pred, eps, who):
    label = _host(label).ravel()
    pred = _host(pred)
    if pred.ndim != 2 or label.shape[0] != pred.shape[0]:
        raise ValueError("%s: expected predictions (batch, classes) with one label per row, got labels %s "
                         "and predictions %s" % (who, label.shape, pred.shape))
    prob = pred[numpy.arange(label.shape[0]), numpy.int64(label)]
    return float((-numpy.log(prob + eps)).sum()), label.shape[0]


@register
@alias("ce")
class CrossEntropy(EvalMetric):
    """Mean of -log(p[label] + eps) over samples; preds are class probabilities."""

    def __init__(self, eps=1e-12, name="cross-entropy", output_names=None, label_names=None):
        super(CrossEntropy, self).__init__(name, eps=eps, output_names=output_names, label_names=label_names,
                                           has_global_stats=True)
        self.eps = eps

    def update(self, labels, preds):
        labels, preds = _wrap(labels, preds)
        for label, pred in zip(labels, preds):
            self._add(*_label_log_prob_sum(label, pred, self.eps, "CrossEntropy"))


@register
@alias("nll_loss")
class NegativeLogLikelihood(EvalMetric):
    """Mean negative log-likelihood of the labels; preds are class probabilities."""

    def __init__(self, eps=1e-12, name="nll-loss", output_names=None, label_names=None):
        super(NegativeLogLikelihood, self).__init__(name, eps=eps, output_names=output_names,
                                                    label_names=label_names, has_global_stats=True)
        self.eps = eps

    def update(self, labels, preds):
        labels, preds = _wrap(labels, preds)
        for label, pred in zip(labels, preds):
            self._add(*_label_log_prob_sum(label, pred, self.eps, "NegativeLogLikelihood"))


@register
@alias("pearsonr")
class PearsonCorrelation(EvalMetric):
    """Pearson correlation of predictions and labels: "macro" averages the coefficient of
    each pair of arrays, "micro" computes it over everything seen."""

    def __init__(self, name="pearsonr", output_names=None, label_names=None, average="macro"):
        if average not in ("macro", "micro"):
            raise ValueError("PearsonCorrelation: average must be 'macro' or 'micro', got %r" % (average,))
        self.average = average
        super(PearsonCorrelation, self).__init__(name, output_names=output_names, label_names=label_names,
                                                 has_global_stats=True, average=average)

    def reset(self):
        super(PearsonCorrelation, self).reset()
        self._moments = numpy.zeros(6)  # n, sum x, sum y, sum xx, sum yy, sum xy (local)
        self._global_moments = numpy.zeros(6)

    def reset_local(self):
        super(PearsonCorrelation, self).reset_local()
        self._moments = numpy.zeros(6)

    @staticmethod
    def _corr(m):
        n, sx, sy, sxx, syy, sxy = m
        cov = sxy - sx * sy / n
        var = (sxx - sx * sx / n) * (syy - sy * sy / n)
        return float(cov / math.sqrt(var)) if var > 0 else float("nan")

    def update(self, labels, preds):
        labels, preds = _wrap(labels, preds)
        for label, pred in zip(labels, preds):
            check_label_shapes(label, pred, False, True)
            y = _host(label).astype(numpy.float64).ravel()
            x = _host(pred).astype(numpy.float64).ravel()
            if self.average == "macro":
                self._add(float(numpy.corrcoef(x, y)[0, 1]), 1)
            else:
                m = numpy.array([x.size, x.sum(), y.sum(), (x * x).sum(), (y * y).sum(), (x * y).sum()])
                self._moments += m
                self._global_moments += m
                self.num_inst += 1
                self.global_num_inst += 1

    def get(self):
        if self.average == "micro":
            return (self.name, self._corr(self._moments) if self.num_inst else float("nan"))
        return super(PearsonCorrelation, self).get()

    def get_global(self):
        if self.average == "micro":
            return (self.name, self._corr(self._global_moments) if self.global_num_inst else float("nan"))
        return super(PearsonCorrelation, self).get_global()


@register
class PCC(EvalMetric):
    """Multiclass Matthews correlation (Gorodkin's R_K) from the confusion matrix C of
    predicted (argmax, or the class itself when pred has the label's shape) against true
    classes: (n * trace(C) - sum_k p_k t_k) / sqrt((n^2 - sum p_k^2)(n^2 - sum t_k^2)), p and t
    the predicted and true class counts. Equals MCC for two classes; nan while a marginal is
    constant. The matrix grows with the largest class seen."""

    def __init__(self, name="pcc", output_names=None, label_names=None, has_global_stats=True):
        self.k = 2
        super(PCC, self).__init__(name, output_names=output_names, label_names=label_names,
                                  has_global_stats=has_global_stats)

    def reset(self):
        super(PCC, self).reset()
        self._gcm = numpy.zeros((self.k, self.k))
        self._lcm = numpy.zeros((self.k, self.k))

    def reset_local(self):
        super(PCC, self).reset_local()
        self._lcm = numpy.zeros((self.k, self.k))

    @staticmethod
    def _score(cm):
        n = cm.sum()
        p, t = cm.sum(axis=1), cm.sum(axis=0)
        var_p, var_t = float(numpy.sum(p * (n - p))), float(numpy.sum(t * (n - t)))
        if var_p == 0 or var_t == 0:
            return float("nan")
        return float(numpy.sum(cm.diagonal() * n - p * t)) / math.sqrt(var_p * var_t)

    def update(self, labels, preds):
        labels, preds = _wrap(labels, preds)
        for label, pred in zip(labels, preds):
            label = _host(label).astype(numpy.int64).ravel()
            pred = _host(pred)
            pred = pred.argmax(axis=1) if pred.size != label.size else pred.ravel()
            pred = pred.astype(numpy.int64)
            if label.size != pred.size:
                raise ValueError("PCC: %d labels but %d predictions" % (label.size, pred.size))
            if label.size == 0:
                continue
            if min(label.min(), pred.min()) < 0:
                raise ValueError("PCC: classes must be non-negative integers")
            top = int(max(label.max(), pred.max())) + 1
            if top > self.k:
                grow = ((0, top - self.k), (0, top - self.k))
                self._lcm = numpy.pad(self._lcm, grow)
                self._gcm = numpy.pad(self._gcm, grow)
                self.k = top
            cm = numpy.zeros((self.k, self.k))
            numpy.add.at(cm, (pred, label), 1)
            self._lcm += cm
            self._gcm += cm
        self.num_inst += 1
        self.global_num_inst += 1
        # As in MXNet, sum_metric / num_inst is the score (read by code that averages metrics).
        self.sum_metric = self._score(self._lcm) * self.num_inst
        self.global_sum_metric = self._score(self._gcm) * self.global_num_inst

    def get(self):
        return (self.name, self._score(self._lcm) if self.num_inst else float("nan"))

    def get_global(self):
        if not self._has_global_stats:
            return self.get()
        return (self.name, self._score(self._gcm) if self.global_num_inst else float("nan"))


@register
class Loss(EvalMetric):
    """Mean of the predictions themselves (for outputs that are losses); labels are ignored."""

    def __init__(self, name="loss", output_names=None, label_names=None):
        super(Loss, self).__init__(name, output_names=output_names, label_names=label_names,
                                   has_global_stats=True)

    def update(self, _, preds):
        if isinstance(preds, (NDArray, numpy.ndarray)):
            preds = [preds]
        for pred in preds:
            pred = _host(pred)
            self._add(float(pred.sum()), pred.size)


@register
class Torch(Loss):
    """Dummy metric for torch criterions (a Loss)."""

    def __init__(self, name="torch", output_names=None, label_names=None):
        super(Torch, self).__init__(name, output_names=output_names, label_names=label_names)


@register
class Caffe(Loss):
    """Dummy metric for caffe criterions (a Loss)."""

    def __init__(self, name="caffe", output_names=None, label_names=None):
        super(Caffe, self).__init__(name, output_names=output_names, label_names=label_names)


@register
class CustomMetric(EvalMetric):
    """A metric from feval(label, pred) on numpy arrays, returning a value (averaged over
    calls) or a (sum_metric, num_inst) pair."""

    def __init__(self, feval, name=None, allow_extra_outputs=False, output_names=None, label_names=None):
        if not callable(feval):
            raise TypeError("CustomMetric: feval must be callable, got %r" % (feval,))
        if name is None:
            name = getattr(feval, "__name__", "custom")
            if "<" in name:
                name = "custom(%s)" % name
        super(CustomMetric, self).__init__(name, feval=feval, allow_extra_outputs=allow_extra_outputs,
                                           output_names=output_names, label_names=label_names,
                                           has_global_stats=True)
        self._feval = feval
        self._allow_extra_outputs = allow_extra_outputs

    def update(self, labels, preds):
        if self._allow_extra_outputs:
            if isinstance(labels, (NDArray, numpy.ndarray)):
                labels = [labels]
            if isinstance(preds, (NDArray, numpy.ndarray)):
                preds = [preds]
        else:
            labels, preds = _wrap(labels, preds)
        for pred, label in zip(preds, labels):
            reval = self._feval(_host(label), _host(pred))
            if isinstance(reval, tuple):
                self._add(*reval)
            else:
                self._add(reval, 1)

    def get_config(self):
        raise NotImplementedError("CustomMetric cannot be serialized")


def np(numpy_feval, name=None, allow_extra_outputs=False):
    """A CustomMetric from a function of numpy (label, pred); usable as a decorator."""
    def feval(label, pred):
        return numpy_feval(label, pred)
    feval.__name__ = numpy_feval.__name__
    return CustomMetric(feval, name, allow_extra_outputs)
