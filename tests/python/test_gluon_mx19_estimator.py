"""gluon.contrib.estimator (MXNet 1.9): Estimator.fit trains exactly as the hand-written
Gluon loop does; evaluate fills the validation metrics with numpy's values; the handlers
(Stopping, Metric, Validation, Logging, Checkpoint, EarlyStopping, GradientUpdate) act on
their events; bad arguments raise."""
import logging
import os

import numpy as np
import pytest

import weft as mx
from weft import autograd, gluon
from weft.gluon.contrib.estimator import (BatchEnd, CheckpointHandler, EarlyStoppingHandler, EpochEnd, Estimator,
                                          GradientUpdateHandler, LoggingHandler, MetricHandler, StoppingHandler,
                                          ValidationHandler)

N, D, K, B = 24, 5, 3, 8


def _data(seed=0):
    rs = np.random.RandomState(seed)
    x = rs.uniform(-1, 1, (N, D)).astype(np.float32)
    y = rs.randint(0, K, N).astype(np.float32)
    return x, y


def _loader(seed=0, batch_size=B):
    x, y = _data(seed)
    return gluon.data.DataLoader(gluon.data.ArrayDataset(mx.nd.array(x), mx.nd.array(y)), batch_size=batch_size)


def _net(seed=1):
    net = gluon.nn.Dense(K, in_units=D)
    rs = np.random.RandomState(seed)
    net.initialize()
    net.weight.set_data(mx.nd.array(rs.uniform(-0.5, 0.5, (K, D))))
    net.bias.set_data(mx.nd.array(rs.uniform(-0.5, 0.5, (K,))))
    return net


def _estimator(net=None, lr=0.5, **kwargs):
    net = net or _net()
    trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": lr})
    est = Estimator(net, gluon.loss.SoftmaxCrossEntropyLoss(), trainer=trainer, **kwargs)
    est.logger.handlers = [logging.NullHandler()]
    return est


class _Log(logging.Handler):
    def __init__(self):
        super().__init__()
        self.lines = []

    def emit(self, record):
        self.lines.append(record.getMessage())


def test_fit_equals_the_hand_written_loop():
    est = _estimator()
    est.fit(_loader(), epochs=3)
    net = _net()
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.5})
    for _ in range(3):
        for x, y in _loader():
            with autograd.record():
                loss = loss_fn(net(x), y)
            loss.backward()
            trainer.step(x.shape[0])
    np.testing.assert_allclose(est.net.weight.data().asnumpy(), net.weight.data().asnumpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(est.net.bias.data().asnumpy(), net.bias.data().asnumpy(), rtol=1e-5, atol=1e-6)
    # the training metrics hold the last epoch: accuracy and mean loss as the batches were trained
    names = [m.name for m in est.train_metrics]
    assert names == ["training accuracy", "training softmaxcrossentropyloss"]
    assert [m.name for m in est.val_metrics] == ["validation accuracy", "validation softmaxcrossentropyloss"]


def test_evaluate_fills_validation_metrics():
    est = _estimator()
    est.evaluate(_loader(seed=4))
    x, y = _data(4)
    w, b = est.net.weight.data().asnumpy(), est.net.bias.data().asnumpy()
    logits = x @ w.T + b
    logp = logits - logits.max(1, keepdims=True)
    logp = logp - np.log(np.exp(logp).sum(1, keepdims=True))
    acc, loss = est.val_metrics
    np.testing.assert_allclose(acc.get()[1], np.mean(logits.argmax(1) == y), rtol=1e-6)
    np.testing.assert_allclose(loss.get()[1], -np.mean(logp[np.arange(N), y.astype(int)]), rtol=1e-5)


class _Counter(BatchEnd, EpochEnd):
    def __init__(self):
        self.batches = 0
        self.epochs = 0

    def batch_end(self, estimator, *args, **kwargs):
        self.batches += 1
        assert len(kwargs["pred"]) == 1 and kwargs["pred"][0].shape == (B, K)

    def epoch_end(self, estimator, *args, **kwargs):
        self.epochs += 1


def test_fit_by_batches_stops_across_epochs():
    est = _estimator()
    counter = _Counter()
    est.fit(_loader(), batches=7, event_handlers=[counter])
    assert counter.batches == 7          # 3 batches an epoch: 2 full epochs and one batch of a third
    assert counter.epochs == 3


def test_validation_every_few_batches_and_logging():
    est = _estimator()
    log = _Log()
    est.logger.handlers = [log]
    calls = []

    def eval_fn(val_data, batch_axis, event_handlers):
        calls.append(batch_axis)
        est.evaluate(val_data, batch_axis, event_handlers)

    handlers = [ValidationHandler(_loader(seed=2), eval_fn, epoch_period=None, batch_period=2),
                LoggingHandler(log_interval=1, metrics=est.train_metrics)]
    est.fit(_loader(), epochs=2, event_handlers=handlers)
    assert len(calls) == 3               # 6 batches, every 2nd
    assert any(line.startswith("Training begin: using optimizer SGD") for line in log.lines)
    assert any("[Epoch 1][Batch 2][Samples 48]" in line and "training accuracy" in line for line in log.lines)
    assert any(line.startswith("Train finished") for line in log.lines)
    assert any(line == "Validation Begin" for line in log.lines)


def test_early_stopping_when_nothing_improves():
    est = _estimator(lr=0.0)             # no learning: the loss never improves after epoch 0
    counter = _Counter()
    stopper = EarlyStoppingHandler(est.train_metrics[1], patience=2, mode="min")
    est.fit(_loader(), epochs=10, event_handlers=[stopper, counter])
    assert counter.epochs == 3 and stopper.stopped_epoch == 2
    with pytest.raises(ValueError, match="monitor"):
        EarlyStoppingHandler("accuracy")
    with pytest.raises(ValueError, match="CompositeEvalMetric"):
        EarlyStoppingHandler(mx.metric.CompositeEvalMetric())


def test_early_stopping_min_delta_and_auto_mode():
    est = _estimator(lr=0.5)
    stopper = EarlyStoppingHandler(est.train_metrics[0])   # "training accuracy": auto is max
    assert stopper.monitor_op is np.greater
    stopper = EarlyStoppingHandler(est.train_metrics[1], min_delta=100.0, patience=1)
    assert stopper.monitor_op is np.less
    counter = _Counter()
    est.fit(_loader(), epochs=10, event_handlers=[stopper, counter])
    assert counter.epochs == 2           # no epoch lowers the loss by 100


def test_checkpoints_symbol_rotation_and_best(tmp_path):
    net = _net()
    net.hybridize()
    est = _estimator(net)
    ck = CheckpointHandler(str(tmp_path), model_prefix="m", monitor=est.train_metrics[1], save_best=True,
                           mode="min", max_checkpoints=2)
    est.fit(_loader(), epochs=4, event_handlers=[ck])
    files = sorted(os.listdir(str(tmp_path)))
    assert files == ["m-best.params", "m-best.states", "m-epoch2batch9.params", "m-epoch2batch9.states",
                     "m-epoch3batch12.params", "m-epoch3batch12.states", "m-symbol.json"]
    loaded = gluon.nn.Dense(K, in_units=D)
    loaded.load_parameters(str(tmp_path / "m-epoch3batch12.params"))
    np.testing.assert_array_equal(loaded.weight.data().asnumpy(), net.weight.data().asnumpy())
    sym = mx.sym.load(str(tmp_path / "m-symbol.json"))
    assert any(n.endswith("weight") for n in sym.list_arguments())


def test_resume_from_checkpoint_trains_the_epochs_left(tmp_path):
    est = _estimator()
    est.fit(_loader(), epochs=2, event_handlers=[CheckpointHandler(str(tmp_path), model_prefix="r")])
    after_two = est.net.weight.data().asnumpy()
    full = _estimator()
    full.fit(_loader(), epochs=5)
    resumed = _estimator()   # a fresh net: the checkpoint brings it to epoch 2
    counter = _Counter()
    resumed.fit(_loader(), epochs=5, event_handlers=[CheckpointHandler(str(tmp_path), model_prefix="r",
                                                                       resume_from_checkpoint=True), counter])
    assert counter.epochs == 3
    assert not np.allclose(after_two, full.net.weight.data().asnumpy())
    np.testing.assert_allclose(resumed.net.weight.data().asnumpy(), full.net.weight.data().asnumpy(), rtol=1e-5,
                               atol=1e-6)
    assert "r-epoch4batch15.params" in os.listdir(str(tmp_path))   # numbering goes on: 15 batches in all
    with pytest.raises(ValueError, match="all 5 epochs trained"):
        _estimator().fit(_loader(), epochs=5, event_handlers=[CheckpointHandler(str(tmp_path), model_prefix="r",
                                                                                 resume_from_checkpoint=True)])


def test_custom_metric_handler_and_gradient_handler_replace_defaults():
    est = _estimator()
    steps = []

    class Update(GradientUpdateHandler):
        def batch_end(self, estimator, *args, **kwargs):
            steps.append(kwargs["loss"][0].shape[0])
            return super().batch_end(estimator, *args, **kwargs)

    only_loss = MetricHandler([est.train_metrics[1]])
    est.fit(_loader(), epochs=1, event_handlers=[Update(), only_loss])
    assert steps == [B, B, B]
    assert np.isnan(est.train_metrics[0].get()[1])      # accuracy is no handler's now
    assert est.train_metrics[1].get()[1] > 0


def test_stopping_handler_alone():
    stop = StoppingHandler(max_epoch=2)
    est = _estimator()
    est.max_epoch, est.max_batch = 2, None
    stop.train_begin(est)
    assert stop.epoch_end(est) is False and stop.epoch_end(est) is True


def test_errors():
    est = _estimator()
    with pytest.raises(ValueError, match="exactly one of epochs and batches"):
        est.fit(_loader(), epochs=1, batches=2)
    with pytest.raises(ValueError, match="exactly one of epochs and batches"):
        est.fit(_loader())
    with pytest.raises(ValueError, match="DataLoader"):
        est.fit([(mx.nd.ones((2, D)), mx.nd.ones((2,)))], epochs=1)
    with pytest.raises(ValueError, match="gluon.loss.Loss"):
        Estimator(_net(), "softmax")
    with pytest.raises(ValueError, match="not one of the estimator's"):
        est.fit(_loader(), epochs=1, event_handlers=[MetricHandler([mx.metric.Accuracy()]), StoppingHandler()])
    with pytest.raises(ValueError, match="log_interval"):
        LoggingHandler(log_interval="batch")
    with pytest.raises(ValueError, match="save_best needs monitor"):
        CheckpointHandler("/tmp/unused_weft_ck", save_best=True)
    with pytest.raises(ValueError, match="trainer must be"):
        Estimator(_net(), gluon.loss.L2Loss(), trainer="sgd")


def test_defaults_warn_in_mxnet_words_and_missing_gpus_assert():
    net = _net()
    net.initialize()
    with pytest.warns(UserWarning, match="^Network already fully initialized"):
        Estimator(net, gluon.loss.L2Loss(), initializer=mx.init.One(), trainer=gluon.Trainer(
            net.collect_params(), "sgd"))
    with pytest.warns(UserWarning, match="^No trainer specified"):
        est = Estimator(net, gluon.loss.L2Loss())
    assert est.trainer.learning_rate == pytest.approx(0.001)
    missing = mx.gpu(mx.context.num_gpus() + 3)
    with pytest.raises(AssertionError, match="is not available"):
        Estimator(net, gluon.loss.L2Loss(), trainer=est.trainer, context=[mx.cpu(), missing])
    with pytest.raises(ValueError):
        Estimator(net, gluon.loss.L2Loss(), trainer=est.trainer, context="cpu")
