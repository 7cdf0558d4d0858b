"""Event handlers of the Estimator, as MXNet 1.9's `gluon.contrib.estimator.event_handler`.

A handler subclasses the event classes it answers (TrainBegin, EpochEnd, ...); the estimator
calls them in ascending `priority` (default 0). batch_end and epoch_end return True to stop
the training."""
import os
import re
import time
import warnings

import numpy as np

from ....metric import CompositeEvalMetric, EvalMetric
from ....metric import Loss as _LossMetric
from .utils import _check_metrics, _improved_op

__all__ = ["TrainBegin", "TrainEnd", "EpochBegin", "EpochEnd", "BatchBegin", "BatchEnd", "StoppingHandler",
           "MetricHandler", "ValidationHandler", "LoggingHandler", "CheckpointHandler", "EarlyStoppingHandler",
           "GradientUpdateHandler"]


class EventHandler(object):
    pass


def _check_event_handlers(handlers):
    if isinstance(handlers, EventHandler):
        return [handlers]
    handlers = list(handlers or [])
    bad = [h for h in handlers if not isinstance(h, EventHandler)]
    if bad:
        raise ValueError("event_handlers must be EventHandlers (TrainBegin, EpochEnd, ... subclasses), got %r"
                         % (bad,))
    return handlers


class TrainBegin(EventHandler):
    def train_begin(self, estimator, *args, **kwargs):
        pass


class TrainEnd(EventHandler):
    def train_end(self, estimator, *args, **kwargs):
        pass


class EpochBegin(EventHandler):
    def epoch_begin(self, estimator, *args, **kwargs):
        pass


class EpochEnd(EventHandler):
    def epoch_end(self, estimator, *args, **kwargs):
        return False


class BatchBegin(EventHandler):
    def batch_begin(self, estimator, *args, **kwargs):
        pass


class BatchEnd(EventHandler):
    def batch_end(self, estimator, *args, **kwargs):
        return False


class StoppingHandler(TrainBegin, BatchEnd, EpochEnd):
    """Stops after `max_epoch` epochs or `max_batch` batches (the estimator's fit sets them)."""

    def __init__(self, max_epoch=None, max_batch=None):
        self.max_epoch = max_epoch
        self.max_batch = max_batch
        self.current_batch = 0
        self.current_epoch = 0
        self.stop_training = False

    def train_begin(self, estimator, *args, **kwargs):
        self.max_epoch = estimator.max_epoch
        self.max_batch = estimator.max_batch
        self.current_batch = 0
        self.current_epoch = 0
        self.stop_training = False

    def batch_end(self, estimator, *args, **kwargs):
        self.current_batch += 1
        if self.current_batch == self.max_batch:
            self.stop_training = True
        return self.stop_training

    def epoch_end(self, estimator, *args, **kwargs):
        self.current_epoch += 1
        if self.current_epoch == self.max_epoch:
            self.stop_training = True
        return self.stop_training


class MetricHandler(EpochBegin, BatchEnd):
    """Resets `metrics` at each epoch begin and updates them at each batch end: a Loss metric
    with the batch's losses, the others with (label, pred)."""

    def __init__(self, metrics, priority=-1000):
        self.metrics = _check_metrics(metrics)
        self.priority = priority   # before the handlers that read the metrics

    def epoch_begin(self, estimator, *args, **kwargs):
        for metric in self.metrics:
            metric.reset()

    def batch_end(self, estimator, *args, **kwargs):
        for metric in self.metrics:
            if isinstance(metric, _LossMetric):
                metric.update(0, kwargs["loss"])
            else:
                metric.update(kwargs["label"], kwargs["pred"])


class ValidationHandler(TrainBegin, BatchEnd, EpochEnd):
    """Runs `eval_fn(val_data=..., batch_axis=..., event_handlers=...)` (the estimator's
    evaluate) every `epoch_period` epochs and, when set, every `batch_period` batches."""

    def __init__(self, val_data, eval_fn, epoch_period=1, batch_period=None, priority=-1000, event_handlers=None):
        self.val_data = val_data
        self.eval_fn = eval_fn
        self.epoch_period = epoch_period
        self.batch_period = batch_period
        self.current_batch = 0
        self.current_epoch = 0
        self.priority = priority
        self.event_handlers = event_handlers

    def train_begin(self, estimator, *args, **kwargs):
        self.current_batch = 0
        self.current_epoch = 0

    def _evaluate(self, estimator):
        self.eval_fn(val_data=self.val_data, batch_axis=estimator.batch_axis, event_handlers=self.event_handlers)

    def batch_end(self, estimator, *args, **kwargs):
        self.current_batch += 1
        if self.batch_period and self.current_batch % self.batch_period == 0:
            self._evaluate(estimator)
        return False

    def epoch_end(self, estimator, *args, **kwargs):
        self.current_epoch += 1
        if self.epoch_period and self.current_epoch % self.epoch_period == 0:
            self._evaluate(estimator)
        return False


def _metric_text(metrics):
    return ", ".join("%s: %.4f" % metric.get() for metric in metrics)


class LoggingHandler(TrainBegin, TrainEnd, EpochBegin, EpochEnd, BatchBegin, BatchEnd):
    """Logs to estimator.logger: the optimizer at train begin, `metrics` at each epoch end
    (log_interval='epoch') or every `log_interval` batches (an int), totals at train end. It
    runs last (priority +inf), after the metrics are updated."""

    def __init__(self, log_interval="epoch", metrics=None, priority=np.inf):
        if not (isinstance(log_interval, int) and not isinstance(log_interval, bool)) and log_interval != "epoch":
            raise ValueError("LoggingHandler: log_interval must be an int or 'epoch', got %r" % (log_interval,))
        self.metrics = _check_metrics(metrics)
        self.priority = priority
        self.log_interval = log_interval
        self.batch_index = 0
        self.current_epoch = 0
        self.processed_samples = 0
        self.log_interval_time = 0
        self.train_start = self.batch_start = self.epoch_start = time.time()

    def train_begin(self, estimator, *args, **kwargs):
        self.train_start = time.time()
        trainer = estimator.trainer
        estimator.logger.info("Training begin: using optimizer %s with current learning rate %.4f ",
                              type(trainer.optimizer).__name__, trainer.learning_rate)
        if estimator.max_epoch:
            estimator.logger.info("Train for %d epochs.", estimator.max_epoch)
        else:
            estimator.logger.info("Train for %d batches.", estimator.max_batch)
        self.current_epoch = 0
        self.batch_index = 0
        self.processed_samples = 0
        self.log_interval_time = 0

    def train_end(self, estimator, *args, **kwargs):
        msg = "Train finished using total %ds with %d epochs. " % (time.time() - self.train_start, self.current_epoch)
        estimator.logger.info((msg + _metric_text(self.metrics)).rstrip(", "))

    def batch_begin(self, estimator, *args, **kwargs):
        self.batch_start = time.time()

    def batch_end(self, estimator, *args, **kwargs):
        if isinstance(self.log_interval, int):
            self.log_interval_time += time.time() - self.batch_start
            self.processed_samples += kwargs["batch"][0].shape[0]
            if self.batch_index % self.log_interval == 0:
                msg = "[Epoch %d][Batch %d][Samples %s] time/interval: %.3fs " % (
                    self.current_epoch, self.batch_index, self.processed_samples, self.log_interval_time)
                self.log_interval_time = 0
                estimator.logger.info((msg + _metric_text(self.metrics)).rstrip(", "))
        self.batch_index += 1
        return False

    def epoch_begin(self, estimator, *args, **kwargs):
        self.epoch_start = time.time()
        # the estimator names its metrics "training ..." / "validation ..."
        if any("training" in metric.name for metric in self.metrics):
            estimator.logger.info("[Epoch %d] Begin, current learning rate: %.4f", self.current_epoch,
                                  estimator.trainer.learning_rate)
        else:
            estimator.logger.info("Validation Begin")

    def epoch_end(self, estimator, *args, **kwargs):
        msg = "[Epoch %d] Finished in %.3fs, " % (self.current_epoch, time.time() - self.epoch_start)
        estimator.logger.info((msg + _metric_text(self.metrics)).rstrip(", "))
        self.current_epoch += 1
        self.batch_index = 0
        return False


class CheckpointHandler(TrainBegin, BatchEnd, EpochEnd):
    """Saves `<model_prefix>-epoch<E>batch<B>.params` and `.states` (the Trainer's) under
    `model_dir` every `epoch_period` epochs and/or `batch_period` batches, keeping the last
    `max_checkpoints`; the graph as `<model_prefix>-symbol.json` after the first batch when
    the net is a hybridized HybridBlock; with `save_best`, also `<model_prefix>-best.*` when
    `monitor` improves; with `resume_from_checkpoint`, loads the newest checkpoint at train
    begin and trains only the epochs (or batches) left."""

    def __init__(self, model_dir, model_prefix="model", monitor=None, verbose=0, save_best=False, mode="auto",
                 epoch_period=1, batch_period=None, max_checkpoints=5, resume_from_checkpoint=False):
        os.makedirs(model_dir, exist_ok=True)
        self.model_dir = model_dir
        self.model_prefix = model_prefix
        self.monitor = monitor
        self.verbose = verbose
        self.save_best = save_best
        if save_best and not isinstance(monitor, EvalMetric):
            raise ValueError("CheckpointHandler: save_best needs monitor, one of the metrics of "
                             "estimator.train_metrics or estimator.val_metrics")
        self.epoch_period = epoch_period
        self.batch_period = batch_period
        self.max_checkpoints = max_checkpoints
        self.resume_from_checkpoint = resume_from_checkpoint
        self.current_batch = 0
        self.current_epoch = 0
        self.trained_epoch = self.trained_batch = -1
        self.saved_checkpoints = []
        if save_best:
            self.monitor_op = _improved_op(monitor, mode, "CheckpointHandler")
            self.best = np.inf if self.monitor_op is np.less else -np.inf

    def train_begin(self, estimator, *args, **kwargs):
        self.current_epoch = 0
        self.current_batch = 0
        if self.save_best:
            self.best = np.inf if self.monitor_op is np.less else -np.inf
        if self.resume_from_checkpoint:
            by_batch = bool(estimator.max_batch)
            if (by_batch and (not self.batch_period or self.epoch_period)) or \
                    (not by_batch and (not self.epoch_period or self.batch_period)):
                raise ValueError("CheckpointHandler: to resume, save by the same period as the training counts: "
                                 "batch_period only when fit(batches=...), epoch_period only when fit(epochs=...)")
            self._resume(estimator)

    def batch_end(self, estimator, *args, **kwargs):
        if self.current_batch == 0:
            self._save_symbol(estimator)
        if self.batch_period and (self.current_batch + 1) % self.batch_period == 0:
            self._save_checkpoint(estimator)
        self.current_batch += 1
        return False

    def epoch_end(self, estimator, *args, **kwargs):
        if self.epoch_period and (self.current_epoch + 1) % self.epoch_period == 0:
            self._save_checkpoint(estimator)
        self.current_epoch += 1
        return False

    def _save_checkpoint(self, estimator):
        if self.resume_from_checkpoint and self.trained_epoch >= 0:
            # numbering goes on from the resumed checkpoint
            epoch = self.current_epoch + self.trained_epoch + 1
            batch = self.current_batch + self.trained_batch + (0 if estimator.max_epoch else 1)
        else:
            epoch, batch = self.current_epoch, self.current_batch
        prefix = "%s-epoch%dbatch%d" % (self.model_prefix, epoch, batch)
        self._save_params_and_trainer(estimator, prefix)
        if self.verbose > 0:
            estimator.logger.info("[Epoch %d] CheckpointHandler: trained total %d batches, saving model at %s "
                                  "with prefix: %s", self.current_epoch, self.current_batch + 1, self.model_dir,
                                  prefix)
        if self.save_best:
            name, value = self.monitor.get()
            if np.isnan(value):
                warnings.warn("CheckpointHandler: %s has no value yet, the best model is not saved; monitor one "
                              "of the estimator's metrics" % name, RuntimeWarning)
            elif self.monitor_op(value, self.best):
                if self.verbose > 0:
                    estimator.logger.info("[Epoch %d] CheckpointHandler: %s improved from %0.5f to %0.5f, updating "
                                          "the best model", self.current_epoch, name, self.best, value)
                self._save_params_and_trainer(estimator, self.model_prefix + "-best")
                self.best = value

    def _save_symbol(self, estimator):
        symbol_file = os.path.join(self.model_dir, self.model_prefix + "-symbol.json")
        traced = getattr(estimator.net, "_traced_symbol", None)
        sym = traced() if traced else None
        if sym is not None:
            sym.save(symbol_file)
        else:
            estimator.logger.info("Model architecture (symbol file) is not saved: build the net from HybridBlocks "
                                  "and call net.hybridize() to have it saved as %s.", symbol_file)

    def _save_params_and_trainer(self, estimator, file_prefix):
        estimator.net.save_parameters(os.path.join(self.model_dir, file_prefix + ".params"))
        estimator.trainer.save_states(os.path.join(self.model_dir, file_prefix + ".states"))
        if file_prefix.endswith("-best"):
            return
        self.saved_checkpoints.append(file_prefix)
        while len(self.saved_checkpoints) > self.max_checkpoints:
            old = self.saved_checkpoints.pop(0)
            for ext in (".params", ".states"):
                path = os.path.join(self.model_dir, old + ext)
                if os.path.exists(path):
                    os.remove(path)

    def _checkpoints(self):
        """{(epoch, batch): prefix} of the checkpoints in model_dir."""
        pattern = re.compile(r"^%s-epoch(\d+)batch(\d+)\.params$" % re.escape(self.model_prefix))
        found = {}
        for fname in os.listdir(self.model_dir):
            m = pattern.match(fname)
            if m:
                found[(int(m.group(1)), int(m.group(2)))] = fname[:-len(".params")]
        return found

    def _resume(self, estimator):
        found = self._checkpoints()
        if not found:
            estimator.logger.info("CheckpointHandler: no checkpoint found, training from scratch for %s",
                                  "%d batches" % estimator.max_batch if estimator.max_batch
                                  else "%d epochs" % estimator.max_epoch)
            return
        self.saved_checkpoints = [found[k] for k in sorted(found)]
        self.trained_epoch, self.trained_batch = max(found)
        if estimator.max_epoch:
            if self.trained_epoch >= estimator.max_epoch - 1:
                raise ValueError("CheckpointHandler: the checkpoint found has all %d epochs trained; set "
                                 "resume_from_checkpoint=False to train from scratch" % estimator.max_epoch)
            estimator.max_epoch -= self.trained_epoch + 1
            left = "%d epochs" % estimator.max_epoch
        else:
            if self.trained_batch >= estimator.max_batch - 1:
                raise ValueError("CheckpointHandler: the checkpoint found has all %d batches trained; set "
                                 "resume_from_checkpoint=False to train from scratch" % estimator.max_batch)
            estimator.max_batch -= self.trained_batch + 1
            left = "%d batches" % estimator.max_batch
        prefix = os.path.join(self.model_dir, found[(self.trained_epoch, self.trained_batch)])
        if not os.path.exists(prefix + ".states"):
            raise ValueError("CheckpointHandler: %s.params has no %s.states beside it" % (prefix, prefix))
        estimator.net.load_parameters(prefix + ".params", ctx=estimator.context)
        estimator.trainer.load_states(prefix + ".states")
        estimator.logger.warning("CheckpointHandler: checkpoint resumed from epoch %d batch %d, continue to "
                                 "train for %s", self.trained_epoch, self.trained_batch, left)


class EarlyStoppingHandler(TrainBegin, EpochEnd, TrainEnd):
    """Stops the training when `monitor` has not improved by more than `min_delta` for
    `patience` epochs (mode 'min', 'max' or 'auto': max for accuracy/F1 names); `baseline`
    is the value to beat at first."""

    def __init__(self, monitor, min_delta=0, patience=0, mode="auto", baseline=None):
        if not isinstance(monitor, EvalMetric):
            raise ValueError("EarlyStoppingHandler: monitor must be one of the metrics of estimator.train_metrics "
                             "or estimator.val_metrics")
        if isinstance(monitor, CompositeEvalMetric):
            raise ValueError("EarlyStoppingHandler: a CompositeEvalMetric cannot be monitored; give one metric")
        self.monitor = monitor
        self.baseline = baseline
        self.patience = patience
        self.monitor_op = _improved_op(monitor, mode, "EarlyStoppingHandler")
        # min_delta counts in the direction of improvement
        self.min_delta = abs(min_delta) if self.monitor_op is np.greater else -abs(min_delta)
        self.wait = 0
        self.stopped_epoch = 0
        self.current_epoch = 0
        self.stop_training = False
        self.best = None

    def train_begin(self, estimator, *args, **kwargs):
        self.wait = 0
        self.stopped_epoch = 0
        self.current_epoch = 0
        self.stop_training = False
        if self.baseline is not None:
            self.best = self.baseline
        else:
            self.best = np.inf if self.monitor_op is np.less else -np.inf

    def epoch_end(self, estimator, *args, **kwargs):
        name, value = self.monitor.get()
        if np.isnan(value):
            warnings.warn("EarlyStoppingHandler: %s has no value; monitor one of the estimator's metrics" % name,
                          RuntimeWarning)
        elif self.monitor_op(value - self.min_delta, self.best):
            self.best = value
            self.wait = 0
        else:
            self.wait += 1
            if self.wait >= self.patience:
                self.stopped_epoch = self.current_epoch
                self.stop_training = True
        self.current_epoch += 1
        return self.stop_training

    def train_end(self, estimator, *args, **kwargs):
        if self.stopped_epoch > 0:
            estimator.logger.info("[Epoch %d] EarlyStoppingHandler: early stopping due to %s not improving",
                                  self.stopped_epoch, self.monitor.get()[0])


class GradientUpdateHandler(BatchEnd):
    """Steps the estimator's Trainer at each batch end, by the batch size (the losses' first
    dimensions); it runs first (priority -2000)."""

    def __init__(self, priority=-2000):
        self.priority = priority

    def batch_end(self, estimator, *args, **kwargs):
        loss = kwargs["loss"]
        if not isinstance(loss, list):
            loss = [loss]
        estimator.trainer.step(sum(one.shape[0] for one in loss))
        return False
