"""Training callbacks (`weft.callback`), as in MXNet 1.x.

Batch-end callbacks receive a `BatchEndParam(epoch, nbatch, eval_metric, locals)`;
epoch-end callbacks receive (epoch, symbol, arg_params, aux_params).
`TerminalProgress` draws a live progress bar when its stream is a terminal and logs plain
lines otherwise.
"""
import logging
import math
import sys
import time

from .model import BatchEndParam

__all__ = ["BatchEndParam", "module_checkpoint", "do_checkpoint", "log_train_metric", "Speedometer",
           "ProgressBar", "LogValidationMetricsCallback", "TerminalProgress"]


def module_checkpoint(mod, prefix, period=1, save_optimizer_states=False):
    """Epoch-end callback saving a Module's checkpoint every `period` epochs."""
    period = int(max(1, period))

    def _callback(iter_no, sym=None, arg=None, aux=None):
        if (iter_no + 1) % period == 0:
            mod.save_checkpoint(prefix, iter_no + 1, save_optimizer_states)
    return _callback


def do_checkpoint(prefix, period=1):
    """Epoch-end callback writing prefix-symbol.json and prefix-%04d.params (numbered from
    1 after the first epoch) every `period` epochs, via weft.model.save_checkpoint."""
    period = int(max(1, period))

    def _callback(iter_no, sym, arg, aux):
        if (iter_no + 1) % period == 0:
            # Imported here: weft.model pulls in symbol/ndarray machinery not needed until
            # a checkpoint is actually written.
            from .model import save_checkpoint
            save_checkpoint(prefix, iter_no + 1, sym, arg, aux)
    return _callback


def log_train_metric(period, auto_reset=False):
    """Batch-end callback logging the training metric every `period` batches."""
    def _callback(param):
        if param.nbatch % period == 0 and param.eval_metric is not None:
            for name, value in param.eval_metric.get_name_value():
                logging.info("Iter[%d] Batch[%d] Train-%s=%f", param.epoch, param.nbatch, name, value)
            if auto_reset:
                param.eval_metric.reset_local()
    return _callback


class Speedometer(object):
    """Batch-end callback logging samples/s and the metric every `frequent` batches; with
    auto_reset the metric restarts after each log, so each line covers its own batches."""

    def __init__(self, batch_size, frequent=50, auto_reset=True):
        self.batch_size = batch_size
        self.frequent = frequent
        self.init = False
        self.tic = 0
        self.last_count = 0
        self.auto_reset = auto_reset

    def __call__(self, param):
        count = param.nbatch
        if self.last_count > count:
            # A new epoch started: the first batch of it only restarts the clock.
            self.init = False
        self.last_count = count

        if not self.init:
            self.init = True
            self.tic = time.time()
            return
        if count % self.frequent != 0:
            return
        elapsed = time.time() - self.tic
        speed = self.frequent * self.batch_size / elapsed if elapsed > 0 else float("inf")
        if param.eval_metric is not None:
            name_value = param.eval_metric.get_name_value()
            if self.auto_reset:
                param.eval_metric.reset_local()
                msg = "Epoch[%d] Batch [%d-%d]\tSpeed: %.2f samples/sec" + "\t%s=%f" * len(name_value)
                logging.info(msg, param.epoch, count - self.frequent, count, speed, *sum(name_value, ()))
            else:
                msg = "Epoch[%d] Batch [0-%d]\tSpeed: %.2f samples/sec" + "\t%s=%f" * len(name_value)
                logging.info(msg, param.epoch, count, speed, *sum(name_value, ()))
        else:
            logging.info("Iter[%d] Batch [%d]\tSpeed: %.2f samples/sec", param.epoch, count, speed)
        self.tic = time.time()


class ProgressBar(object):
    """Batch-end callback logging a text bar of nbatch / total."""

    def __init__(self, total, length=80):
        self.bar_len = length
        self.total = total

    def __call__(self, param):
        count = param.nbatch
        filled_len = int(round(self.bar_len * count / float(self.total)))
        percents = math.ceil(100.0 * count / float(self.total))
        prog_bar = "=" * filled_len + "-" * (self.bar_len - filled_len)
        logging.info("[%s] %s%s\r", prog_bar, percents, "%")


class LogValidationMetricsCallback(object):
    """Eval-end callback logging the validation metric."""

    def __call__(self, param):
        if not param.eval_metric:
            return
        for name, value in param.eval_metric.get_name_value():
            logging.info("Epoch[%d] Validation-%s=%f", param.epoch, name, value)


class TerminalProgress(object):
    """Live progress of training, usable as a batch-end callback.

    On a terminal it redraws one line per epoch in place:
        Epoch 2/5 [=========>..........] 210/469  12345.6 samples/s  accuracy=0.8712
    and ends it with a newline when the epoch ends (`epoch_end`, or the next epoch's
    first batch). Elsewhere (a file, a pipe, a notebook log) it writes a plain line every
    `frequent` batches and one per epoch, so logs stay readable.

    total_batches may be left out: it is learnt from the first epoch. batch_size, when
    left out, is read from the batch in the callback's locals (`data_batch`).
    """

    def __init__(self, total_batches=None, batch_size=None, num_epoch=None, stream=None, width=30,
                 frequent=50, min_interval=0.1):
        self.total = total_batches
        self.batch_size = batch_size
        self.num_epoch = num_epoch
        self.stream = sys.stdout if stream is None else stream
        self.width = width
        self.frequent = frequent
        self.min_interval = min_interval
        isatty = getattr(self.stream, "isatty", None)
        self.tty = bool(isatty and isatty())
        self._epoch = None
        self._count = 0
        self._samples = 0
        self._timed_batches = 0
        self._skip_first = False
        self._epoch_tic = 0.0
        self._last_draw = 0.0
        self._last_metric = []

    def _batch_size(self, param):
        if self.batch_size is not None:
            return self.batch_size
        batch = (param.locals or {}).get("data_batch") if isinstance(param.locals, dict) else None
        if isinstance(batch, list):
            batch = batch[0] if batch else None
        data = getattr(batch, "data", None)
        if data:
            return data[0].shape[0] - (getattr(batch, "pad", 0) or 0)
        return None

    def epoch_begin(self, epoch):
        """Starts the line of `epoch`. Call it before the first batch for exact speeds;
        otherwise the first batch of an epoch starts it and its own time is unknown, so
        the speed counts from the end of that batch."""
        if self._epoch is not None:
            self.epoch_end(self._epoch)
        self._epoch = epoch
        self._count = 0
        self._samples = 0
        self._timed_batches = 0
        self._skip_first = False
        self._epoch_tic = time.time()
        self._last_draw = 0.0

    def __call__(self, param):
        if self._epoch != param.epoch or param.nbatch + 1 < self._count:
            self.epoch_begin(param.epoch)
            self._skip_first = True
        self._count = param.nbatch + 1
        if self._skip_first:
            self._skip_first = False
        else:
            self._timed_batches += 1
            size = self._batch_size(param)
            if size is not None:
                self._samples += size
        metric = param.eval_metric.get_name_value() if param.eval_metric is not None else []
        self._last_metric = metric
        now = time.time()
        if self.tty:
            if now - self._last_draw >= self.min_interval or (self.total and self._count >= self.total):
                self._draw(self._line(metric, now), final=False)
                self._last_draw = now
        elif self._count % self.frequent == 0:
            self._draw(self._line(metric, now), final=True)

    def epoch_end(self, epoch=None, name_value=None):
        """Ends the current epoch's line with its final figures; `name_value` overrides the
        metric shown (e.g. train and validation results)."""
        if self._epoch is None:
            return
        if self.total is None or self._count > self.total:
            self.total = self._count
        shown = self._last_metric if name_value is None else name_value
        self._draw(self._line(shown, time.time(), done=True), final=True)
        self._epoch = None

    def _line(self, name_value, now, done=False):
        epoch = "Epoch %d" % self._epoch if self.num_epoch is None else "Epoch %d/%d" % (self._epoch + 1,
                                                                                        self.num_epoch)
        if self.total:
            frac = min(1.0, self._count / float(self.total))
            filled = int(self.width * frac)
            arrow = ">" if filled < self.width else ""
            bar = "[" + "=" * filled + arrow + "." * (self.width - filled - len(arrow)) + "] "
            progress = "%s%d/%d" % (bar, self._count, self.total)
        else:
            progress = "%d batches" % self._count
        elapsed = now - self._epoch_tic
        if elapsed <= 0 or not self._timed_batches:
            speed = "- samples/s"
        elif self._samples:
            speed = "%.1f samples/s" % (self._samples / elapsed)
        else:
            speed = "%.1f batches/s" % (self._timed_batches / elapsed)
        parts = [epoch, progress, speed]
        if done:
            parts.append("%.1fs" % elapsed)
        parts += ["%s=%.4f" % (name, value) for name, value in name_value]
        return "  ".join(parts)

    def _draw(self, line, final):
        if self.tty:
            # \r and clear-to-end-of-line redraw in place; a finished epoch keeps its line.
            self.stream.write("\r" + line + "\x1b[K" + ("\n" if final else ""))
        else:
            self.stream.write(line + "\n")
        self.stream.flush()
