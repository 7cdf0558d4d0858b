"""Checkpoints and the parameter-update helpers shared by the Module API (MXNet 1.x's mx.model),
and MXNet's deprecated FeedForward model on one context.

A checkpoint is two files, as MXNet writes them: `prefix-symbol.json` (the graph) and
`prefix-%04d.params` (an NDArray dict whose keys are "arg:<name>" for arguments and
"aux:<name>" for auxiliary states), so MXNet loads Weft's checkpoints and the other way round.
"""
import collections
import importlib.util
import os

import numpy as np

from . import ndarray as nd
from . import symbol as sym
from .context import cpu

__all__ = ["BatchEndParam", "save_checkpoint", "load_checkpoint", "load_params", "FeedForward"]

BatchEndParam = collections.namedtuple("BatchEndParams", ["epoch", "nbatch", "eval_metric", "locals"])


def _params_dict(arg_params, aux_params):
    # Copies to the CPU so a checkpoint never names a device that may be absent when loading.
    save_dict = {"arg:%s" % k: v.as_in_context(cpu()) for k, v in arg_params.items()}
    save_dict.update({"aux:%s" % k: v.as_in_context(cpu()) for k, v in aux_params.items()})
    return save_dict


def save_checkpoint(prefix, epoch, symbol, arg_params, aux_params, remove_amp_cast=True):
    """Writes `prefix-symbol.json` (when symbol is not None) and `prefix-%04d.params` % epoch.

    remove_amp_cast drops the mixed-precision cast nodes (amp_cast, amp_multicast) from the
    saved graph, as MXNet's does."""
    if symbol is not None:
        symbol.save("%s-symbol.json" % prefix, remove_amp_cast=remove_amp_cast)
    nd.save("%s-%04d.params" % (prefix, epoch), _params_dict(arg_params, aux_params))


def _split_params(save_dict, fname):
    arg_params, aux_params = {}, {}
    if not isinstance(save_dict, dict):
        raise ValueError("%s holds an unnamed list of arrays; a parameter file names each array "
                         "'arg:<name>' or 'aux:<name>'" % fname)
    for key, value in save_dict.items():
        kind, _, name = key.partition(":")
        if kind == "arg" and name:
            arg_params[name] = value
        elif kind == "aux" and name:
            aux_params[name] = value
        else:
            raise ValueError("%s: the key %r is neither 'arg:<name>' nor 'aux:<name>'" % (fname, key))
    return arg_params, aux_params


def _load_params_file(fname):
    if not os.path.isfile(fname):
        raise FileNotFoundError("parameter file %s does not exist" % fname)
    return _split_params(nd.load(fname), fname)


def load_params(prefix, epoch):
    """(arg_params, aux_params) from `prefix-%04d.params` % epoch."""
    return _load_params_file("%s-%04d.params" % (prefix, epoch))


def load_checkpoint(prefix, epoch):
    """(symbol, arg_params, aux_params) written by save_checkpoint."""
    fname = "%s-symbol.json" % prefix
    if not os.path.isfile(fname):
        raise FileNotFoundError("symbol file %s does not exist" % fname)
    symbol = sym.load(fname)
    arg_params, aux_params = load_params(prefix, epoch)
    return symbol, arg_params, aux_params


# ----------------------------------------------------------------------------- kvstore helpers
def _update_on_kvstore_default():
    value = os.getenv("WEFT_UPDATE_ON_KVSTORE", os.getenv("MXNET_UPDATE_ON_KVSTORE", "1"))
    return bool(int(value))


def _create_kvstore(kvstore, num_device, arg_params):
    """(kvstore or None, update_on_kvstore) as MXNet decides them: a local store only pays off
    with several devices; very large parameters are updated on the devices instead."""
    update_on_kvstore = _update_on_kvstore_default()
    if kvstore is None:
        kv = None
    elif isinstance(kvstore, str):
        if num_device == 1 and "dist" not in kvstore:
            kv = None
        elif kvstore == "local" and importlib.util.find_spec(__package__ + ".kvstore") is None:
            # A build without the KVStore package sums the devices' gradients in
            # _update_params instead.
            kv = None
        else:
            from . import kvstore as kvs
            kv = kvs.create(kvstore)
            if kvstore == "local" and arg_params:
                max_size = max(int(np.prod(p.shape)) for p in arg_params.values())
                if max_size > 1024 * 1024 * 16:
                    update_on_kvstore = False
    elif hasattr(kvstore, "push") and hasattr(kvstore, "pull"):
        kv = kvstore
    else:
        raise TypeError("kvstore must be a KVStore, a str or None, got %s" % type(kvstore).__name__)
    if kv is None:
        update_on_kvstore = False
    else:
        capable = getattr(kv, "is_capable", None)
        if not hasattr(kv, "set_optimizer"):
            update_on_kvstore = False
        elif capable is not None:
            base = getattr(type(kv), "OPTIMIZER", "optimizer")
            update_on_kvstore &= bool(capable(base))
    return kv, update_on_kvstore


def _initialize_kvstore(kvstore, param_arrays, arg_params, param_names, update_on_kvstore):
    """Stores each parameter's initial value; with updates on the store, every device then
    starts from the stored value."""
    for idx, param_on_devs in enumerate(param_arrays):
        name = param_names[idx]
        kvstore.init(name, arg_params[name])
        if update_on_kvstore:
            kvstore.pull(name, param_on_devs, priority=-idx)


def _update_params_on_kvstore(param_arrays, grad_arrays, kvstore, param_names):
    """Pushes every device's gradient (the store sums them and runs the optimizer) and pulls
    the updated weight back to every device."""
    for index, (arg_list, grad_list) in enumerate(zip(param_arrays, grad_arrays)):
        if grad_list[0] is None:
            continue
        name = param_names[index]
        kvstore.push(name, grad_list, priority=-index)
        kvstore.pull(name, arg_list, priority=-index)


def _reduce_grads(grad_list):
    # Without a store the devices' gradients are summed here and the sum is written back to
    # every device, so each device's copy of the weight takes the same step.
    total = grad_list[0].copy()
    for g in grad_list[1:]:
        total += g.as_in_context(total.context)
    for g in grad_list:
        total.copyto(g)


def _update_params(param_arrays, grad_arrays, updater, num_device, kvstore=None, param_names=None,
                   param_index=None):
    """Sums the gradients across devices (through the store when there is one) and runs the
    updater on every device's copy. The updater's index is param_index[name] * num_device + k,
    so each device's copy has its own optimizer state, as in MXNet; each device's parameters
    go to the updater in one call, so a multi-tensor optimizer updates them together."""
    updates = [[] for _ in range(num_device)]
    for i, (arg_list, grad_list) in enumerate(zip(param_arrays, grad_arrays)):
        if grad_list[0] is None:
            continue
        name = param_names[i] if param_names is not None else None
        if kvstore is not None:
            kvstore.push(name, grad_list, priority=-i)
            kvstore.pull(name, grad_list, priority=-i)
        elif num_device > 1:
            _reduce_grads(grad_list)
        index = param_index[name] if param_index is not None else i
        for k, (w, g) in enumerate(zip(arg_list, grad_list)):
            updates[k].append((index * num_device + k, g, w))
    for dev_updates in updates:
        if dev_updates:
            indices, grads, weights = zip(*dev_updates)
            updater(list(indices), list(grads), list(weights))


def _as_iter(X, y, batch_size, is_train):
    """X as a DataIter: a numpy array or NDArray (with labels y, 1-D or (n, 1); zeros for
    prediction) becomes an NDArrayIter, shuffled and rolling over for training."""
    from . import io
    if isinstance(X, (np.ndarray, nd.NDArray)):
        if y is None:
            if is_train:
                raise ValueError("FeedForward: y must be given when X is an array")
            y = np.zeros(X.shape[0])
        if not isinstance(y, (np.ndarray, nd.NDArray)):
            raise TypeError("FeedForward: y must be an array when X is an array, got %s" % type(y).__name__)
        if X.shape[0] != y.shape[0]:
            raise ValueError("FeedForward: %d data points but %d labels" % (X.shape[0], y.shape[0]))
        if y.ndim == 2 and y.shape[1] == 1:
            y = y.reshape((y.shape[0],))
        if y.ndim != 1:
            raise ValueError("FeedForward: labels must be 1-D (or (n, 1)), got shape %s" % (y.shape,))
        size = min(X.shape[0], batch_size)
        if is_train:
            return io.NDArrayIter(X, y, size, shuffle=True, last_batch_handle="roll_over")
        return io.NDArrayIter(X, y, size, shuffle=False)
    if not isinstance(X, io.DataIter):
        raise TypeError("FeedForward: X must be a DataIter, an NDArray or a numpy array, got %s" % type(X).__name__)
    return X


class FeedForward(object):
    """MXNet 1.x's deprecated single-input, single-output model (use the Module API): fit,
    predict, score, save/load of `symbol` on one context. Arrays are wrapped in NDArrayIters
    of `numpy_batch_size`; parameters start from `arg_params`/`aux_params` where given, else
    from `initializer`; `kwargs` go to the optimizer (with rescale_grad 1/batch size when the
    optimizer is given by name)."""

    def __init__(self, symbol, ctx=None, num_epoch=None, epoch_size=None, optimizer="sgd", initializer=None,
                 numpy_batch_size=128, arg_params=None, aux_params=None, allow_extra_params=False, begin_epoch=0,
                 **kwargs):
        import warnings
        from .initializer import Uniform
        warnings.warn("weft.model.FeedForward is deprecated, as in MXNet; use weft.mod.Module", DeprecationWarning,
                      stacklevel=2)
        if isinstance(symbol, sym.Symbol):
            self.symbol, self.sym_gen = symbol, None
        elif callable(symbol):
            self.symbol, self.sym_gen = None, symbol
        else:
            raise TypeError("FeedForward: symbol must be a Symbol or a function of the bucket key")
        if ctx is None:
            ctx = [cpu()]
        elif not isinstance(ctx, (list, tuple)):
            ctx = [ctx]
        if len(ctx) != 1:
            raise ValueError("FeedForward: Weft trains it on one context; got %d (use the Module API for "
                             "several)" % len(ctx))
        self.ctx = list(ctx)
        self.arg_params = arg_params
        self.aux_params = aux_params
        self.allow_extra_params = allow_extra_params
        if self.symbol is not None and allow_extra_params:
            self._drop_extra_params()
        self.num_epoch = num_epoch
        self.epoch_size = epoch_size
        self.optimizer = optimizer
        self.initializer = initializer if initializer is not None else Uniform(0.01)
        self.numpy_batch_size = numpy_batch_size
        self.begin_epoch = begin_epoch
        self.kwargs = dict(kwargs)
        self._pred_exec = None

    def _drop_extra_params(self):
        args, auxs = set(self.symbol.list_arguments()), set(self.symbol.list_auxiliary_states())
        if self.arg_params:
            self.arg_params = {k: v for k, v in self.arg_params.items() if k in args}
        if self.aux_params:
            self.aux_params = {k: v for k, v in self.aux_params.items() if k in auxs}

    def _init_params(self, input_shapes):
        """Parameter arrays for these input shapes: the given ones where known, else drawn by
        the initializer. Returns the parameter names."""
        from .initializer import InitDesc
        arg_shapes, _, aux_shapes = self.symbol.infer_shape(**input_shapes)
        if arg_shapes is None:
            raise ValueError("FeedForward: cannot infer the parameter shapes from %s" % (input_shapes,))
        attrs = self.symbol.attr_dict()
        param_names = [n for n in self.symbol.list_arguments() if n not in input_shapes]
        shapes = dict(zip(self.symbol.list_arguments(), arg_shapes))
        old_args, old_aux = self.arg_params or {}, self.aux_params or {}
        self.arg_params, self.aux_params = {}, {}
        for names, shape_of, old, new in ((param_names, shapes, old_args, self.arg_params),
                                          (self.symbol.list_auxiliary_states(),
                                           dict(zip(self.symbol.list_auxiliary_states(), aux_shapes)), old_aux,
                                           self.aux_params)):
            for name in names:
                arr = nd.zeros(shape_of[name])
                if name in old:
                    arr[:] = old[name]
                else:
                    self.initializer(InitDesc(name, attrs.get(name, {})), arr)
                new[name] = arr
        return param_names

    def _input_shapes(self, data):
        return {d[0]: tuple(d[1]) for d in list(data.provide_data) + list(data.provide_label or [])}

    def fit(self, X, y=None, eval_data=None, eval_metric="acc", epoch_end_callback=None, batch_end_callback=None,
            kvstore="local", logger=None, work_load_list=None, monitor=None, eval_end_callback=None,
            eval_batch_end_callback=None):
        """Trains for num_epoch epochs (of epoch_size batches when set) from begin_epoch,
        evaluating on eval_data (a DataIter or an (X, y) pair) after each epoch."""
        import logging
        import time
        from . import metric as _metric
        from . import optimizer as opt
        from .callback import LogValidationMetricsCallback
        if self.num_epoch is None:
            raise ValueError("FeedForward.fit: num_epoch was not given")
        logger = logger or logging
        data = _as_iter(X, y, self.numpy_batch_size, True)
        if isinstance(eval_data, (tuple, list)) and len(eval_data) == 2:
            eval_data = eval_data[0] if eval_data[1] is None else _as_iter(np.asarray(eval_data[0]) if isinstance(
                eval_data[0], list) else eval_data[0], np.asarray(eval_data[1]) if isinstance(eval_data[1], list)
                else eval_data[1], self.numpy_batch_size, True)
        if self.sym_gen is not None:
            self.symbol = self.sym_gen(data.default_bucket_key)
            if self.allow_extra_params:
                self._drop_extra_params()
        shapes = self._input_shapes(data)
        param_names = self._init_params(shapes)
        if isinstance(self.optimizer, str):
            optimizer = opt.create(self.optimizer, rescale_grad=1.0 / data.batch_size, **self.kwargs)
        else:
            optimizer = self.optimizer
        if not getattr(optimizer, "idx2name", None):
            optimizer.idx2name = dict(enumerate(param_names))
        updater = opt.get_updater(optimizer)
        grad_req = {n: ("write" if n in param_names else "null") for n in self.symbol.list_arguments()}
        exe = self.symbol.simple_bind(self.ctx[0], grad_req=grad_req, **shapes)
        exe.copy_params_from(self.arg_params, self.aux_params)
        if monitor is not None:
            monitor.install(exe)
        eval_metric = _metric.create(eval_metric)
        if eval_end_callback is None:
            eval_end_callback = LogValidationMetricsCallback()
        data_names = [d[0] for d in data.provide_data]
        label_names = [d[0] for d in (data.provide_label or [])]

        def load(batch, executor):
            for name, arr in zip(data_names, batch.data):
                executor.arg_dict[name][:] = arr
            for name, arr in zip(label_names, batch.label or []):
                executor.arg_dict[name][:] = arr

        data.reset()
        for epoch in range(self.begin_epoch, self.num_epoch):
            tic = time.time()
            eval_metric.reset()
            nbatch = 0
            while True:
                try:
                    batch = data.next()
                except StopIteration:
                    data.reset()
                    if self.epoch_size is None:
                        break
                    continue
                load(batch, exe)
                if monitor is not None:
                    monitor.tic()
                exe.forward(is_train=True)
                exe.backward()
                for i, name in enumerate(param_names):
                    updater(i, exe.grad_dict[name], exe.arg_dict[name])
                if monitor is not None:
                    monitor.toc_print()
                eval_metric.update(batch.label, exe.outputs)
                nbatch += 1
                for cb in _callbacks(batch_end_callback):
                    cb(BatchEndParam(epoch=epoch, nbatch=nbatch, eval_metric=eval_metric, locals=locals()))
                if self.epoch_size is not None and nbatch >= self.epoch_size:
                    break
            for name, value in eval_metric.get_name_value():
                logger.info("Epoch[%d] Train-%s=%f", epoch, name, value)
            logger.info("Epoch[%d] Time cost=%.3f", epoch, time.time() - tic)
            self.arg_params = {n: exe.arg_dict[n].copy() for n in param_names}
            self.aux_params = {n: a.copy() for n, a in exe.aux_dict.items()}
            for cb in _callbacks(epoch_end_callback):
                cb(epoch, self.symbol, self.arg_params, self.aux_params)
            if eval_data is not None:
                eval_metric.reset()
                eval_data.reset()
                for nbatch, batch in enumerate(eval_data, 1):
                    load(batch, exe)
                    exe.forward(is_train=False)
                    eval_metric.update(batch.label, exe.outputs)
                    for cb in _callbacks(eval_batch_end_callback):
                        cb(BatchEndParam(epoch=epoch, nbatch=nbatch, eval_metric=eval_metric, locals=locals()))
                for cb in _callbacks(eval_end_callback):
                    cb(BatchEndParam(epoch=epoch, nbatch=nbatch, eval_metric=eval_metric, locals=locals()))
        self._pred_exec = None

    def _predictor(self, data):
        shapes = {d[0]: tuple(d[1]) for d in data.provide_data}
        shapes.update({n: a.shape for n, a in self.arg_params.items()})
        exe = self.symbol.simple_bind(self.ctx[0], grad_req="null", **shapes)
        exe.copy_params_from(self.arg_params, self.aux_params, allow_extra_params=True)
        return exe

    def _run(self, X, num_batch, reset, each):
        if self.arg_params is None:
            raise RuntimeError("FeedForward: the model has no parameters yet; fit or load it first")
        data = _as_iter(X, None, self.numpy_batch_size, False)
        if reset:
            data.reset()
        exe = self._predictor(data)
        names = [d[0] for d in data.provide_data]
        for i, batch in enumerate(data):
            for name, arr in zip(names, batch.data):
                if name in exe.arg_dict:
                    exe.arg_dict[name][:] = arr
            exe.forward(is_train=False)
            each(batch, exe.outputs, data.batch_size - (batch.pad or 0))
            if num_batch is not None and i + 1 == num_batch:
                break

    def predict(self, X, num_batch=None, return_data=False, reset=True):
        """The outputs over X (numpy; a list when the symbol has several), padding removed;
        with return_data also the data and labels read."""
        outputs, datas, labels = [], [], []

        def each(batch, outs, real):
            outputs.append([o[0:real].asnumpy() for o in outs])
            if return_data:
                datas.append([d[0:real].asnumpy() for d in batch.data])
                labels.append([l[0:real].asnumpy() for l in (batch.label or [])])

        self._run(X, num_batch, reset, each)
        merged = [np.concatenate(parts) for parts in zip(*outputs)]
        result = merged[0] if len(merged) == 1 else merged
        if not return_data:
            return result
        data = [np.concatenate(parts) for parts in zip(*datas)]
        label = [np.concatenate(parts) for parts in zip(*labels)]
        return result, (data[0] if len(data) == 1 else data), (label[0] if len(label) == 1 else label)

    def score(self, X, eval_metric="acc", num_batch=None, batch_end_callback=None, reset=True):
        """eval_metric's value over X (a DataIter with labels)."""
        from . import metric as _metric
        metric = _metric.create(eval_metric)
        metric.reset()
        count = [0]

        def each(batch, outs, real):
            metric.update(batch.label, outs)
            count[0] += 1
            for cb in _callbacks(batch_end_callback):
                cb(BatchEndParam(epoch=0, nbatch=count[0], eval_metric=metric, locals=locals()))

        self._run(X, num_batch, reset, each)
        return metric.get()[1]

    def save(self, prefix, epoch=None, remove_amp_cast=True):
        """save_checkpoint(prefix, epoch (default num_epoch), ...)."""
        save_checkpoint(prefix, self.num_epoch if epoch is None else epoch, self.symbol, self.arg_params,
                        self.aux_params, remove_amp_cast=remove_amp_cast)

    @staticmethod
    def load(prefix, epoch, ctx=None, **kwargs):
        """A FeedForward from checkpoint prefix/epoch, to continue from epoch `epoch`."""
        symbol, arg_params, aux_params = load_checkpoint(prefix, epoch)
        return FeedForward(symbol, ctx=ctx, arg_params=arg_params, aux_params=aux_params, begin_epoch=epoch,
                           **kwargs)

    @staticmethod
    def create(symbol, X, y=None, ctx=None, num_epoch=None, epoch_size=None, optimizer="sgd", initializer=None,
               eval_data=None, eval_metric="acc", epoch_end_callback=None, batch_end_callback=None, kvstore="local",
               logger=None, work_load_list=None, eval_end_callback=None, eval_batch_end_callback=None, **kwargs):
        """A FeedForward built and fitted in one call."""
        model = FeedForward(symbol, ctx=ctx, num_epoch=num_epoch, epoch_size=epoch_size, optimizer=optimizer,
                            initializer=initializer, **kwargs)
        model.fit(X, y, eval_data=eval_data, eval_metric=eval_metric, epoch_end_callback=epoch_end_callback,
                  batch_end_callback=batch_end_callback, kvstore=kvstore, logger=logger,
                  work_load_list=work_load_list, eval_end_callback=eval_end_callback,
                  eval_batch_end_callback=eval_batch_end_callback)
        return model


def _callbacks(cb):
    if cb is None:
        return []
    return cb if isinstance(cb, (list, tuple)) else [cb]
