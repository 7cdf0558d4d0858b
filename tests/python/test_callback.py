"""weft.callback: log formats of Speedometer / ProgressBar / log_train_metric, the terminal
progress display, and do_checkpoint's files."""
import io
import logging
import os

import numpy as np
import pytest

import weft as mx
from weft import callback
from weft.callback import BatchEndParam


class _Clock(object):
    """Stands in for time.time in weft.callback: advances only when told."""

    def __init__(self):
        self.now = 1000.0

    def __call__(self):
        return self.now


@pytest.fixture
def clock(monkeypatch):
    c = _Clock()
    monkeypatch.setattr(callback.time, "time", c)
    return c


def _acc_metric(correct, total):
    m = mx.metric.Accuracy()
    m.update([mx.nd.array(np.ones(total))], [mx.nd.array(np.r_[np.ones(correct), np.zeros(total - correct)])])
    return m


def test_batch_end_param_is_mxnets():
    p = BatchEndParam(epoch=1, nbatch=2, eval_metric=None, locals=None)
    assert p._fields == ("epoch", "nbatch", "eval_metric", "locals")
    assert BatchEndParam is mx.model.BatchEndParam


def test_speedometer_auto_reset(caplog, clock):
    caplog.set_level(logging.INFO)
    speedo = mx.callback.Speedometer(batch_size=32, frequent=2)
    metric = _acc_metric(3, 4)
    for nbatch in range(5):
        speedo(BatchEndParam(epoch=3, nbatch=nbatch, eval_metric=metric, locals=None))
        clock.now += 0.5
    msgs = [r.getMessage() for r in caplog.records]
    # First call starts the clock; batches 2 and 4 log 2 batches * 32 samples / 1 s.
    assert msgs[0] == "Epoch[3] Batch [0-2]\tSpeed: 64.00 samples/sec\taccuracy=0.750000"
    # auto_reset cleared the local tally after the first log: nothing since.
    assert msgs[1] == "Epoch[3] Batch [2-4]\tSpeed: 64.00 samples/sec\taccuracy=nan"
    assert len(msgs) == 2


def test_speedometer_no_reset_and_no_metric(caplog, clock):
    caplog.set_level(logging.INFO)
    speedo = mx.callback.Speedometer(batch_size=10, frequent=4, auto_reset=False)
    metric = mx.metric.create(["acc", "mse"])
    metric.update([mx.nd.array([1.0, 0.0])], [mx.nd.array([1.0, 1.0])])
    for nbatch in range(5):
        speedo(BatchEndParam(epoch=0, nbatch=nbatch, eval_metric=metric, locals=None))
        clock.now += 0.25
    assert caplog.records[-1].getMessage() == ("Epoch[0] Batch [0-4]\tSpeed: 40.00 samples/sec"
                                               "\taccuracy=0.500000\tmse=0.500000")
    caplog.clear()
    plain = mx.callback.Speedometer(batch_size=8, frequent=1)
    plain(BatchEndParam(0, 0, None, None))
    clock.now += 2.0
    plain(BatchEndParam(0, 1, None, None))
    assert caplog.records[-1].getMessage() == "Iter[0] Batch [1]\tSpeed: 4.00 samples/sec"


def test_speedometer_restarts_each_epoch(caplog, clock):
    caplog.set_level(logging.INFO)
    speedo = mx.callback.Speedometer(batch_size=1, frequent=1)
    for epoch in range(2):
        for nbatch in range(2):
            speedo(BatchEndParam(epoch, nbatch, None, None))
            clock.now += 1.0
    # batch 0 of each epoch only restarts the clock
    assert [r.getMessage() for r in caplog.records] == ["Iter[0] Batch [1]\tSpeed: 1.00 samples/sec",
                                                        "Iter[1] Batch [1]\tSpeed: 1.00 samples/sec"]


def test_progress_bar(caplog):
    caplog.set_level(logging.INFO)
    bar = mx.callback.ProgressBar(total=4, length=8)
    bar(BatchEndParam(0, 1, None, None))
    bar(BatchEndParam(0, 3, None, None))
    assert [r.getMessage() for r in caplog.records] == ["[==------] 25%\r", "[======--] 75%\r"]


def test_log_train_metric(caplog):
    caplog.set_level(logging.INFO)
    metric = _acc_metric(1, 2)
    cb = mx.callback.log_train_metric(period=2, auto_reset=True)
    cb(BatchEndParam(1, 1, metric, None))
    assert caplog.records == []
    cb(BatchEndParam(1, 2, metric, None))
    assert caplog.records[-1].getMessage() == "Iter[1] Batch[2] Train-accuracy=0.500000"
    assert metric.num_inst == 0


def test_log_validation_metrics(caplog):
    caplog.set_level(logging.INFO)
    mx.callback.LogValidationMetricsCallback()(BatchEndParam(4, 0, _acc_metric(2, 2), None))
    assert caplog.records[-1].getMessage() == "Epoch[4] Validation-accuracy=1.000000"


class _Tty(io.StringIO):
    def isatty(self):
        return True


class _Batch(object):
    def __init__(self, n, pad=0):
        self.data = [mx.nd.zeros((n, 2))]
        self.pad = pad


def test_terminal_progress_tty(clock):
    out = _Tty()
    prog = mx.callback.TerminalProgress(total_batches=4, num_epoch=2, stream=out, width=8, min_interval=0)
    metric = _acc_metric(1, 2)
    prog.epoch_begin(0)
    for nbatch in range(4):
        clock.now += 0.5
        prog(BatchEndParam(0, nbatch, metric, {"data_batch": _Batch(10)}))
    prog.epoch_end(0)
    text = out.getvalue()
    frames = text.split("\r")[1:]
    assert frames[0] == "Epoch 1/2  [==>.....] 1/4  20.0 samples/s  accuracy=0.5000\x1b[K"
    assert frames[3] == "Epoch 1/2  [========] 4/4  20.0 samples/s  accuracy=0.5000\x1b[K"
    assert frames[4] == "Epoch 1/2  [========] 4/4  20.0 samples/s  2.0s  accuracy=0.5000\x1b[K\n"
    # The next epoch, not begun explicitly, starts a new line on its first batch, whose
    # own time is unknown; the speed counts from there (a padded batch counts its real rows).
    prog(BatchEndParam(1, 0, None, {"data_batch": _Batch(10)}))
    clock.now += 1.0
    prog(BatchEndParam(1, 1, None, {"data_batch": _Batch(10, pad=4)}))
    frames = out.getvalue()[len(text):].split("\r")[1:]
    assert frames == ["Epoch 2/2  [==>.....] 1/4  - samples/s\x1b[K",
                      "Epoch 2/2  [====>...] 2/4  6.0 samples/s\x1b[K"]


def test_terminal_progress_plain_lines_and_learnt_total(clock):
    out = io.StringIO()
    prog = mx.callback.TerminalProgress(batch_size=5, stream=out, frequent=2)
    assert not prog.tty
    for epoch in range(2):
        for nbatch in range(3):
            clock.now += 1.0
            prog(BatchEndParam(epoch, nbatch, None, None))
        prog.epoch_end(epoch)
    lines = out.getvalue().splitlines()
    # Started implicitly: timed from the end of batch 0.
    assert lines == ["Epoch 0  2 batches  5.0 samples/s",
                     # the total (3) is learnt when epoch 0 ends
                     "Epoch 0  [==============================] 3/3  5.0 samples/s  2.0s",
                     "Epoch 1  [====================>.........] 2/3  5.0 samples/s",
                     "Epoch 1  [==============================] 3/3  5.0 samples/s  2.0s"]
    assert "\r" not in out.getvalue()


def _tiny_net():
    data = mx.sym.Variable("data")
    fc = mx.sym.FullyConnected(data, num_hidden=3, name="fc")
    return mx.sym.SoftmaxOutput(fc, name="softmax")


def test_do_checkpoint_files(tmp_path):
    pytest.importorskip("weft.model")
    prefix = str(tmp_path / "net")
    net = _tiny_net()
    arg = {"fc_weight": mx.nd.array(np.arange(6, dtype=np.float32).reshape(3, 2)), "fc_bias": mx.nd.zeros((3,))}
    aux = {}
    cb = mx.callback.do_checkpoint(prefix, period=2)
    cb(0, net, arg, aux)  # epoch 1: not a multiple of period
    assert not os.path.exists(prefix + "-0001.params")
    cb(1, net, arg, aux)
    assert os.path.exists(prefix + "-symbol.json")
    saved = mx.nd.load(prefix + "-0002.params")
    assert sorted(saved) == ["arg:fc_bias", "arg:fc_weight"]
    np.testing.assert_array_equal(saved["arg:fc_weight"].asnumpy(), arg["fc_weight"].asnumpy())
    sym, arg2, _ = mx.model.load_checkpoint(prefix, 2)
    assert sym.list_arguments() == net.list_arguments()
