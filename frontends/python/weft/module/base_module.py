"""BaseModule: the training loop, scoring and prediction shared by every module
(MXNet 1.x's mx.mod.BaseModule). Subclasses supply bind, init_params, init_optimizer,
forward, backward, update, update_metric, get_outputs and the parameter accessors."""
import logging
import warnings
import sys
import time

import numpy as np

from .. import ndarray as nd
from ..context import cpu
from ..callback import Speedometer, TerminalProgress
from ..model import BatchEndParam, _split_params

__all__ = ["BaseModule", "ModuleStateError"]


class ModuleStateError(RuntimeError, AssertionError):
    """A module method was called before the step it depends on (bind, init_params,
    init_optimizer). An AssertionError too, as MXNet raises for these."""


def _require(cond, what, step):
    if not cond:
        raise ModuleStateError("%s needs %s first" % (what, step))


def _as_list(obj):
    if obj is None:
        return []
    return list(obj) if isinstance(obj, (list, tuple)) else [obj]


class _DefaultInitializer:
    """Stands for MXNet's default initializer, Uniform(0.01), made when first needed (the
    initializer module is loaded lazily)."""

    def __repr__(self):
        return "Uniform(0.01)"


DEFAULT_INITIALIZER = _DefaultInitializer()


def _resolve_initializer(initializer):
    if isinstance(initializer, _DefaultInitializer):
        from .. import initializer as init
        return init.Uniform(0.01)
    return initializer


def _metric(eval_metric):
    from .. import metric
    if isinstance(eval_metric, metric.EvalMetric):
        return eval_metric
    return metric.create(eval_metric)


def _run_callbacks(callbacks, *args):
    for callback in _as_list(callbacks):
        callback(*args)


def _default_progress(train_data, num_epoch):
    """What fit shows per batch when given no batch_end_callback: a live progress bar when
    standard output is a terminal, MXNet's Speedometer lines (through logging) otherwise."""
    batch_size = getattr(train_data, "batch_size", None)
    isatty = getattr(sys.stdout, "isatty", None)
    if isatty is not None and isatty():
        return TerminalProgress(batch_size=batch_size, num_epoch=num_epoch)
    return Speedometer(batch_size, frequent=50) if batch_size else None


class BaseModule:
    """A computation and its parameters, with the high-level fit/score/predict loops."""

    def __init__(self, logger=logging):
        self.logger = logger
        self.binded = False
        self.for_training = False
        self.inputs_need_grad = False
        self.params_initialized = False
        self.optimizer_initialized = False
        self._symbol = None
        self._total_exec_bytes = 0

    # ------------------------------------------------------------------ high level
    def forward_backward(self, data_batch):
        """A training forward pass then a backward pass."""
        self.forward(data_batch, is_train=True)
        self.backward()

    def prepare(self, data_batch, sparse_row_id_fn=None):
        """Work to do before a batch's forward pass: none here (a Module pulls the row_sparse
        parameters sparse_row_id_fn names from its kvstore)."""
        if sparse_row_id_fn is not None:
            warnings.warn(UserWarning("sparse_row_id_fn is not invoked for BaseModule."))

    def _check_ready(self, what):
        _require(self.binded, what, "bind()")
        _require(self.params_initialized, what, "init_params()")

    def score(self, eval_data, eval_metric, num_batch=None, batch_end_callback=None, score_end_callback=None,
              reset=True, epoch=0, sparse_row_id_fn=None):
        """Runs the data through the model and returns eval_metric.get_name_value()."""
        self._check_ready("score")
        if reset:
            eval_data.reset()
        eval_metric = _metric(eval_metric)
        eval_metric.reset()
        actual_num_batch = 0
        for nbatch, eval_batch in enumerate(eval_data):
            if num_batch is not None and nbatch == num_batch:
                break
            self.prepare(eval_batch, sparse_row_id_fn=sparse_row_id_fn)
            self.forward(eval_batch, is_train=False)
            if isinstance(eval_batch, list):
                self.update_metric(eval_metric, [eb.label for eb in eval_batch], pre_sliced=True)
            else:
                self.update_metric(eval_metric, eval_batch.label)
            if batch_end_callback is not None:
                _run_callbacks(batch_end_callback, BatchEndParam(epoch=epoch, nbatch=nbatch, eval_metric=eval_metric,
                                                                 locals=locals()))
            actual_num_batch += 1
        if score_end_callback:
            _run_callbacks(score_end_callback, BatchEndParam(epoch=epoch, nbatch=actual_num_batch,
                                                             eval_metric=eval_metric, locals=locals()))
        return eval_metric.get_name_value()

    def _unpadded_outputs(self, batch):
        pad = getattr(batch, "pad", 0) or 0
        return [out[0:out.shape[0] - pad].copy() for out in self.get_outputs()]

    def iter_predict(self, eval_data, num_batch=None, reset=True, sparse_row_id_fn=None):
        """Yields (outputs, nbatch, batch) for each batch, padding removed."""
        self._check_ready("iter_predict")
        if reset:
            eval_data.reset()
        for nbatch, eval_batch in enumerate(eval_data):
            if num_batch is not None and nbatch == num_batch:
                break
            self.prepare(eval_batch, sparse_row_id_fn=sparse_row_id_fn)
            self.forward(eval_batch, is_train=False)
            yield self._unpadded_outputs(eval_batch), nbatch, eval_batch

    def predict(self, eval_data, num_batch=None, merge_batches=True, reset=True, always_output_list=False,
                sparse_row_id_fn=None):
        """The outputs over a data iterator (padding removed). With merge_batches, each output
        is one array joined over the batches, and a single output is returned bare unless
        always_output_list; otherwise a list (per batch) of lists (per output). An NDArray or
        numpy array is run as one batch and its first output returned."""
        self._check_ready("predict")
        from ..io import DataBatch
        if isinstance(eval_data, (nd.NDArray, np.ndarray)):
            if isinstance(eval_data, np.ndarray):
                eval_data = nd.array(eval_data)
            self.forward(DataBatch([eval_data]), is_train=False)
            return self.get_outputs()[0]
        if not hasattr(eval_data, "reset") or not hasattr(eval_data, "__iter__"):
            raise ValueError("predict: eval_data must be an NDArray, a numpy array or a DataIter, got %s"
                             % type(eval_data).__name__)
        output_list = [outputs for outputs, _, _ in self.iter_predict(eval_data, num_batch, reset, sparse_row_id_fn)]
        if not output_list or not merge_batches:
            return output_list
        num_outputs = len(output_list[0])
        for outputs in output_list:
            if len(outputs) != num_outputs:
                raise ValueError("predict cannot merge batches with different numbers of outputs (%d and %d); "
                                 "pass merge_batches=False (bucketing?)" % (num_outputs, len(outputs)))
        merged = [nd.concatenate([outputs[i] for outputs in output_list]) for i in range(num_outputs)]
        if num_outputs == 1 and not always_output_list:
            return merged[0]
        return merged

    def fit(self, train_data, eval_data=None, eval_metric="acc", epoch_end_callback=None, batch_end_callback=None,
            kvstore="local", optimizer="sgd", optimizer_params=(("learning_rate", 0.01),), eval_end_callback=None,
            eval_batch_end_callback=None, initializer=DEFAULT_INITIALIZER, arg_params=None, aux_params=None,
            allow_missing=False, force_rebind=False, force_init=False, begin_epoch=0, num_epoch=None,
            validation_metric=None, monitor=None, sparse_row_id_fn=None):
        """Trains for epochs begin_epoch .. num_epoch-1: binds, initialises parameters (from
        arg_params/aux_params when given, the initializer for the rest), sets up the optimizer,
        then per batch forward, backward, update and the metric; callbacks after each batch
        and epoch; evaluation on eval_data after each epoch."""
        if num_epoch is None:
            raise ValueError("fit needs num_epoch (the epoch to stop before)")
        self.bind(data_shapes=train_data.provide_data, label_shapes=train_data.provide_label, for_training=True,
                  force_rebind=force_rebind)
        if monitor is not None:
            self.install_monitor(monitor)
        self.init_params(initializer=initializer, arg_params=arg_params, aux_params=aux_params,
                         allow_missing=allow_missing, force_init=force_init)
        self.init_optimizer(kvstore=kvstore, optimizer=optimizer, optimizer_params=optimizer_params)
        if validation_metric is None:
            validation_metric = eval_metric
        eval_metric = _metric(eval_metric)

        progress = None
        if batch_end_callback is None:
            batch_end_callback = progress = _default_progress(train_data, num_epoch)
        for epoch in range(begin_epoch, num_epoch):
            tic = time.time()
            eval_metric.reset()
            nbatch = 0
            data_iter = iter(train_data)
            end_of_batch = False
            next_data_batch = next(data_iter)
            while not end_of_batch:
                data_batch = next_data_batch
                if monitor is not None:
                    monitor.tic()
                self.forward_backward(data_batch)
                self.update()
                if isinstance(data_batch, list):
                    self.update_metric(eval_metric, [db.label for db in data_batch], pre_sliced=True)
                else:
                    self.update_metric(eval_metric, data_batch.label)
                try:
                    # Fetched before the callbacks so the iterator's prefetch overlaps them.
                    next_data_batch = next(data_iter)
                    self.prepare(next_data_batch, sparse_row_id_fn=sparse_row_id_fn)
                except StopIteration:
                    end_of_batch = True
                if monitor is not None:
                    monitor.toc_print()
                if batch_end_callback is not None:
                    _run_callbacks(batch_end_callback, BatchEndParam(epoch=epoch, nbatch=nbatch,
                                                                     eval_metric=eval_metric, locals=locals()))
                nbatch += 1

            if isinstance(progress, TerminalProgress):
                progress.epoch_end(epoch, [("train-" + n, v) for n, v in eval_metric.get_name_value()])
            for name, val in eval_metric.get_name_value():
                self.logger.info("Epoch[%d] Train-%s=%f", epoch, name, val)
            self.logger.info("Epoch[%d] Time cost=%.3f", epoch, time.time() - tic)

            # Brings the devices' parameters back to the module's copies (what callbacks see).
            arg_params, aux_params = self.get_params()
            self.set_params(arg_params, aux_params)
            _run_callbacks(epoch_end_callback, epoch, self.symbol, arg_params, aux_params)

            if eval_data:
                res = self.score(eval_data, validation_metric, score_end_callback=eval_end_callback,
                                 batch_end_callback=eval_batch_end_callback, epoch=epoch)
                for name, val in res:
                    self.logger.info("Epoch[%d] Validation-%s=%f", epoch, name, val)
            train_data.reset()

    # ------------------------------------------------------------------ parameters
    def get_params(self):
        raise NotImplementedError("%s does not implement get_params" % type(self).__name__)

    def set_params(self, arg_params, aux_params, allow_missing=False, force_init=True, allow_extra=False):
        """Assigns parameter values (through init_params without an initializer)."""
        self.init_params(initializer=None, arg_params=arg_params, aux_params=aux_params, allow_missing=allow_missing,
                         force_init=force_init, allow_extra=allow_extra)

    def save_params(self, fname):
        """Writes the parameters to fname with 'arg:'/'aux:' names."""
        arg_params, aux_params = self.get_params()
        save_dict = {"arg:%s" % k: v.as_in_context(cpu()) for k, v in arg_params.items()}
        save_dict.update({"aux:%s" % k: v.as_in_context(cpu()) for k, v in aux_params.items()})
        nd.save(fname, save_dict)

    def load_params(self, fname):
        """Loads parameters written by save_params (or save_checkpoint's .params file)."""
        arg_params, aux_params = _split_params(nd.load(fname), fname)
        self.set_params(arg_params, aux_params)

    def install_monitor(self, mon):
        raise NotImplementedError("%s does not implement install_monitor" % type(self).__name__)

    # ------------------------------------------------------------------ what a module implements
    # MXNet's interface: a subclass (Module, BucketingModule, SequentialModule, PythonModule or
    # a user's own) provides these; fit, score, predict and forward_backward above use them.
    def _abstract(self, what):
        raise NotImplementedError("%s does not implement %s" % (type(self).__name__, what))

    @property
    def data_names(self):
        """The names of the data inputs."""
        return self._abstract("data_names")

    @property
    def output_names(self):
        """The names of the outputs."""
        return self._abstract("output_names")

    @property
    def data_shapes(self):
        """The DataDesc of each data input."""
        return self._abstract("data_shapes")

    @property
    def label_shapes(self):
        """The DataDesc of each label input (None without labels)."""
        return self._abstract("label_shapes")

    @property
    def output_shapes(self):
        """(name, shape) of each output."""
        return self._abstract("output_shapes")

    def init_params(self, initializer=DEFAULT_INITIALIZER, arg_params=None, aux_params=None, allow_missing=False,
                    force_init=False, allow_extra=False):
        self._abstract("init_params")

    def get_states(self, merge_multi_context=True):
        """The states of a stateful module; none here (a module with states overrides it)."""
        self._check_ready("get_states")
        assert not merge_multi_context, "get_states: a module without states has nothing to merge"
        return []

    def set_states(self, states=None, value=None):
        """Sets the states of a stateful module; a module without states takes none."""
        self._check_ready("set_states")
        assert not states and not value, "set_states: this module has no states"

    def bind(self, data_shapes, label_shapes=None, for_training=True, inputs_need_grad=False, force_rebind=False,
             shared_module=None, grad_req="write"):
        self._abstract("bind")

    def init_optimizer(self, kvstore="local", optimizer="sgd", optimizer_params=(("learning_rate", 0.01),),
                       force_init=False):
        self._abstract("init_optimizer")

    def forward(self, data_batch, is_train=None):
        self._abstract("forward")

    def backward(self, out_grads=None):
        self._abstract("backward")

    def get_outputs(self, merge_multi_context=True):
        return self._abstract("get_outputs")

    def get_input_grads(self, merge_multi_context=True):
        return self._abstract("get_input_grads")

    def update(self):
        self._abstract("update")

    def update_metric(self, eval_metric, labels, pre_sliced=False):
        self._abstract("update_metric")

    @property
    def symbol(self):
        return self._symbol
