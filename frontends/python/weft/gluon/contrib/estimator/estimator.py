"""The Estimator: a fit/evaluate loop around a net, a loss, metrics and a Trainer, driven by
event handlers (see event_handler)."""
import copy
import logging
import sys
import warnings

from ....context import Context, cpu, gpu, num_gpus
from ....metric import Loss as _LossMetric
from ...data import DataLoader
from ...loss import Loss as _GluonLoss
from ...trainer import Trainer
from .batch_processor import BatchProcessor
from .event_handler import (BatchBegin, BatchEnd, EpochBegin, EpochEnd, GradientUpdateHandler, LoggingHandler,
                            MetricHandler, StoppingHandler, TrainBegin, TrainEnd, ValidationHandler,
                            _check_event_handlers)
from .utils import _check_handler_metric_ref, _check_metrics, _suggest_metric_for_loss

__all__ = ["Estimator"]


class Estimator(object):
    """Trains `net` with `loss` and `trainer` (default: SGD, learning rate 0.001) on
    `context` (default: gpu(0) when there is one, else cpu()).

    `train_metrics` default to Accuracy for SoftmaxCrossEntropyLoss, plus a Loss metric; their
    names get the prefix "training ", and copies named "validation ..." are the
    `val_metrics` unless given. The net is initialised with `initializer` unless it already
    is. `val_net`/`val_loss` replace net/loss in evaluate; `batch_processor` replaces the
    per-batch step. Messages go to `estimator.logger` (stdout)."""

    def __init__(self, net, loss, train_metrics=None, val_metrics=None, initializer=None, trainer=None,
                 context=None, val_net=None, val_loss=None, batch_processor=None):
        self.net = net
        self.loss = self._check_loss(loss)
        self._train_metrics = _check_metrics(train_metrics)
        self._val_metrics = _check_metrics(val_metrics)
        self._add_default_training_metrics()
        self._add_validation_metrics()
        self.val_loss = self._check_loss(val_loss) if val_loss is not None else self.loss
        self.val_net = val_net if val_net is not None else self.net
        self.logger = logging.Logger(name="Estimator", level=logging.INFO)
        self.logger.addHandler(logging.StreamHandler(sys.stdout))
        self.context = self._check_context(context)
        self._initialize(initializer)
        self.trainer = self._check_trainer(trainer)
        self.batch_processor = self._check_batch_processor(batch_processor)
        self.max_epoch = None
        self.max_batch = None
        self.batch_axis = 0

    @staticmethod
    def _check_loss(loss):
        if not isinstance(loss, _GluonLoss):
            raise ValueError("Estimator: loss must be a gluon.loss.Loss, got %r" % (loss,))
        return loss

    @staticmethod
    def _check_context(context):
        available = [gpu(i) for i in range(num_gpus())]
        if not context:
            return [available[0]] if available else [cpu()]
        if isinstance(context, Context):
            context = [context]
        if not isinstance(context, list) or not all(isinstance(c, Context) for c in context):
            raise ValueError("Estimator: context must be a Context or a list of Contexts, got %r" % (context,))
        for ctx in context:
            if ctx.device_type != "cpu" and ctx not in available:
                # AssertionError, as MXNet's estimator raises for a missing GPU.
                raise AssertionError("Estimator: %s is not available; use cpu() or one of %s" % (ctx, available))
        return context

    @staticmethod
    def _check_batch_processor(batch_processor):
        if batch_processor is None:
            return BatchProcessor()
        if not callable(getattr(batch_processor, "fit_batch", None)) or \
                not callable(getattr(batch_processor, "evaluate_batch", None)):
            raise ValueError("Estimator: a batch processor must have fit_batch() and evaluate_batch() methods")
        return batch_processor

    def _is_initialized(self):
        for param in self.net.collect_params().values():
            try:
                param.list_ctx()
            except RuntimeError:
                return False
        return True

    def _initialize(self, initializer):
        if not self._is_initialized():
            if initializer:
                self.net.initialize(init=initializer, ctx=self.context)
            else:
                self.net.initialize(ctx=self.context)
        elif initializer:
            # Scripts match MXNet's opening words of these two warnings.
            warnings.warn("Network already fully initialized: the Estimator does not use the initializer (call "
                          "net.initialize(init, force_reinit=True) to re-initialize)")

    def _check_trainer(self, trainer):
        if not trainer:
            warnings.warn("No trainer specified: the Estimator uses SGD with learning rate 0.001")
            return Trainer(self.net.collect_params(), "sgd", {"learning_rate": 0.001})
        if not isinstance(trainer, Trainer):
            raise ValueError("Estimator: trainer must be a gluon.Trainer, got %r" % (trainer,))
        return trainer

    def _add_default_training_metrics(self):
        if not self._train_metrics:
            suggested = _suggest_metric_for_loss(self.loss)
            if suggested:
                self._train_metrics = [suggested]
            self._train_metrics.append(_LossMetric(self.loss.name.rstrip("1234567890")))
        for metric in self._train_metrics:
            # the prefix tells the handlers training metrics from validation ones
            metric.name = "training " + metric.name

    def _add_validation_metrics(self):
        if not self._val_metrics:
            self._val_metrics = [copy.deepcopy(metric) for metric in self._train_metrics]
        for metric in self._val_metrics:
            if "training" in metric.name:
                metric.name = metric.name.replace("training", "validation")
            else:
                metric.name = "validation " + metric.name

    @property
    def train_metrics(self):
        return self._train_metrics

    @property
    def val_metrics(self):
        return self._val_metrics

    @staticmethod
    def _check_loader(data, what):
        if not isinstance(data, DataLoader):
            raise ValueError("Estimator: %s must be a gluon.data.DataLoader (wrap arrays in an ArrayDataset), got %s"
                             % (what, type(data).__name__))

    def evaluate(self, val_data, batch_axis=0, event_handlers=None):
        """Runs val_net over `val_data` (a DataLoader of (data, label)) and updates the
        validation metrics; a MetricHandler and a LoggingHandler are added unless given."""
        self._check_loader(val_data, "val_data")
        for metric in self.val_metrics:
            metric.reset()
        handlers = _check_event_handlers(event_handlers)
        added = []
        if not any(isinstance(h, MetricHandler) for h in handlers):
            added.append(MetricHandler(metrics=self.val_metrics))
        if not any(isinstance(h, LoggingHandler) for h in handlers):
            added.append(LoggingHandler(metrics=self.val_metrics))
        handlers = self._merge(handlers, added, set(self.val_metrics))
        _, epoch_begin, batch_begin, batch_end, epoch_end, _ = self._categorize_handlers(handlers)
        for h in epoch_begin:
            h.epoch_begin(self)
        for batch in val_data:
            for h in batch_begin:
                h.batch_begin(self, batch=batch)
            _, label, pred, loss = self.batch_processor.evaluate_batch(self, batch, batch_axis)
            for h in batch_end:
                h.batch_end(self, batch=batch, pred=pred, label=label, loss=loss)
        for h in epoch_end:
            h.epoch_end(self)

    def fit(self, train_data, val_data=None, epochs=None, event_handlers=None, batches=None, batch_axis=0):
        """Trains for `epochs` epochs or `batches` batches (exactly one of them) over
        `train_data`, evaluating on `val_data` after each epoch when given. Handlers are
        added unless given: StoppingHandler, GradientUpdateHandler, MetricHandler (training
        metrics), ValidationHandler (with val_data), LoggingHandler."""
        self._check_loader(train_data, "train_data")
        if (not epochs) == (not batches):
            raise ValueError("Estimator.fit: give exactly one of epochs and batches, got epochs=%r, batches=%r"
                             % (epochs, batches))
        self.max_epoch = epochs
        self.max_batch = batches
        self.batch_axis = batch_axis
        handlers = self._prepare_default_handlers(val_data, event_handlers)
        train_begin, epoch_begin, batch_begin, batch_end, epoch_end, train_end = self._categorize_handlers(handlers)
        for h in train_begin:
            h.train_begin(self)
        while True:
            for h in epoch_begin:
                h.epoch_begin(self)
            for batch in train_data:
                for h in batch_begin:
                    h.batch_begin(self, batch=batch)
                _, label, pred, loss = self.batch_processor.fit_batch(self, batch, batch_axis)
                # every handler sees the batch end, then any of them may stop
                stops = [h.batch_end(self, batch=batch, pred=pred, label=label, loss=loss) for h in batch_end]
                if any(stops):
                    break
            stops = [h.epoch_end(self) for h in epoch_end]
            if any(stops):
                break
        for h in train_end:
            h.train_end(self)

    def _prepare_default_handlers(self, val_data, event_handlers):
        handlers = _check_event_handlers(event_handlers)
        added = [StoppingHandler(self.max_epoch, self.max_batch)]
        if not any(isinstance(h, GradientUpdateHandler) for h in handlers):
            added.append(GradientUpdateHandler())
        if not any(isinstance(h, MetricHandler) for h in handlers):
            added.append(MetricHandler(metrics=self.train_metrics))
        if val_data and not any(isinstance(h, ValidationHandler) for h in handlers):
            added.append(ValidationHandler(val_data=val_data, eval_fn=self.evaluate))
        if not any(isinstance(h, LoggingHandler) for h in handlers):
            added.append(LoggingHandler(metrics=self.train_metrics))
        return self._merge(handlers, added, set(self.train_metrics + self.val_metrics))

    @staticmethod
    def _merge(handlers, added, known_metrics):
        """The user's handlers and the defaults, by priority; when both kinds are there, every
        metric a handler holds must be one of the estimator's (the defaults update only those)."""
        mixing = bool(handlers) and bool(added)
        handlers = handlers + added
        if mixing:
            for h in handlers:
                _check_handler_metric_ref(h, known_metrics)
        handlers.sort(key=lambda h: getattr(h, "priority", 0))
        return handlers

    @staticmethod
    def _categorize_handlers(handlers):
        """The handlers of each event: train begin, epoch begin, batch begin, batch end,
        epoch end, train end."""
        kinds = (TrainBegin, EpochBegin, BatchBegin, BatchEnd, EpochEnd, TrainEnd)
        return tuple([h for h in handlers if isinstance(h, kind)] for kind in kinds)
