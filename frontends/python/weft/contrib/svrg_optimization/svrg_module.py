"""SVRGModule: a Module trained with stochastic variance reduced gradients.

Every `update_freq` epochs, update_full_grads copies the weights into an auxiliary module
(the snapshot w~) and averages the gradients of all batches there (mu = mean_i g_i(w~)).
Each training batch then runs forward and backward in both modules, and the optimizer
steps with g_i(w) - g_i(w~) + mu instead of g_i(w): the same expectation, a variance that
shrinks as w nears w~. With a KVStore, mu is summed over devices (and workers) through keys
"<param>_full" and divided by the number of devices, as MXNet does.
"""
import logging
import time
import warnings

from ... import metric as _metric_mod
from ... import model as _model
from ... import ndarray as nd
from ...base import _as_list
from ...context import cpu
from ...module import Module
from .svrg_optimizer import _SVRGOptimizer

__all__ = ["SVRGModule"]


class SVRGModule(Module):
    """A Module (same arguments) that takes `update_freq`, the number of epochs between two
    computations of the full gradient (a positive int)."""

    def __init__(self, symbol, data_names=("data",), label_names=("softmax_label",), logger=logging, context=None,
                 work_load_list=None, fixed_param_names=None, state_names=None, group2ctxs=None,
                 compression_params=None, update_freq=None):
        context = cpu() if context is None else context
        super().__init__(symbol, data_names=data_names, label_names=label_names, logger=logger, context=context,
                         work_load_list=work_load_list, fixed_param_names=fixed_param_names,
                         state_names=state_names, group2ctxs=group2ctxs, compression_params=compression_params)
        if not isinstance(update_freq, int) or isinstance(update_freq, bool):
            raise TypeError("update_freq in SVRGModule must be an integer to represent the frequency for "
                            "calculating full gradients, got %r" % (update_freq,))
        if update_freq <= 0:
            raise ValueError("update_freq in SVRGModule must be a positive integer to represent the frequency for "
                             "calculating full gradients, got %d" % update_freq)
        self.update_freq = update_freq
        self._mod_aux = Module(symbol, data_names, label_names, logger, context, work_load_list, fixed_param_names,
                               state_names, group2ctxs, compression_params)
        self._param_dict = None
        self._ctx_len = len(self._context)

    def _reset_bind(self):
        super()._reset_bind()
        self._mod_aux._reset_bind()

    def reshape(self, data_shapes, label_shapes=None):
        super().reshape(data_shapes, label_shapes=label_shapes)
        self._mod_aux.reshape(data_shapes, label_shapes=label_shapes)

    def bind(self, data_shapes, label_shapes=None, for_training=True, inputs_need_grad=False, force_rebind=False,
             shared_module=None, grad_req="write"):
        super().bind(data_shapes, label_shapes, for_training, inputs_need_grad, force_rebind, shared_module,
                     grad_req)
        if for_training:
            self._mod_aux.bind(data_shapes, label_shapes, for_training, inputs_need_grad, force_rebind,
                               shared_module, grad_req)

    def init_optimizer(self, kvstore="local", optimizer="sgd", optimizer_params=(("learning_rate", 0.01),),
                       force_init=False):
        """Sets up an _SVRGOptimizer around `optimizer` (rescale_grad 1/batch_size unless
        given), and the "<param>_full" keys of the KVStore when there is one."""
        if self.optimizer_initialized and not force_init:
            warnings.warn("optimizer already initialized, ignoring...", stacklevel=2)
            return
        self._param_dict = [{name: nd.zeros(value.shape, ctx=self._context[i])
                             for name, value in self.get_params()[0].items()} for i in range(self._ctx_len)]
        svrg_optimizer = self._create_optimizer(_SVRGOptimizer.__name__, optimizer, kvstore, optimizer_params)
        super().init_optimizer(kvstore=kvstore, optimizer=svrg_optimizer, optimizer_params=optimizer_params,
                               force_init=force_init)
        if self._kvstore:
            for idx, param_on_devs in enumerate(self._exec_group.param_arrays):
                name = self._exec_group.param_names[idx]
                self._kvstore.init(name + "_full", nd.zeros(self._arg_params[name].shape))
                if self._update_on_kvstore:
                    self._kvstore.pull(name + "_full", param_on_devs, priority=-idx)

    def _create_optimizer(self, optimizer, default_opt, kvstore, optimizer_params):
        """The _SVRGOptimizer, with the parameter indices Module's updater will use plus one
        index per "<param>_full" key."""
        from ... import optimizer as opt
        batch_size = self._exec_group.batch_size
        kv_store, update_on_kvstore = _model._create_kvstore(kvstore, self._ctx_len, self._arg_params)
        if kv_store and "dist" in kv_store.type and "_sync" in kv_store.type:
            batch_size *= kv_store.num_workers
        names = self._exec_group.param_names
        if update_on_kvstore:
            idx2name = dict(enumerate(names))
        else:
            idx2name = {i * self._ctx_len + k: n for i, n in enumerate(names) for k in range(self._ctx_len)}
        for key in self._param_dict[0]:
            idx2name[max(idx2name) + 1 if idx2name else 0] = key + "_full"
        params = dict(optimizer_params)
        params.setdefault("rescale_grad", 1.0 / batch_size)
        params["default_optimizer"] = default_opt
        params["param_idx2name"] = idx2name
        return opt.create(optimizer, **params)

    def forward(self, data_batch, is_train=None):
        super().forward(data_batch, is_train)
        if is_train:
            self._mod_aux.forward(data_batch, is_train)

    def backward(self, out_grads=None):
        super().backward(out_grads)
        if self._mod_aux.binded:
            self._mod_aux.backward(out_grads)

    def update(self):
        """Replaces each gradient by its SVRG form, then steps the optimizer."""
        self._update_svrg_gradients()
        super().update()

    def update_full_grads(self, train_data):
        """Takes the current weights as the snapshot and averages the gradients of every
        batch of `train_data` at it (a padded last batch counts as its share of a batch)."""
        param_names = self._exec_group.param_names
        arg, aux = self.get_params()
        self._mod_aux.set_params(arg_params=arg, aux_params=aux)
        # Each refresh starts from zero: the mean is of this pass's gradients only.
        for per_ctx in self._param_dict:
            for name in per_ctx:
                per_ctx[name][:] = 0
        train_data.reset()
        nbatch = 0
        padding = 0
        for batch in train_data:
            self._mod_aux.forward(batch, is_train=True)
            self._mod_aux.backward()
            nbatch += 1
            for ctx in range(self._ctx_len):
                for index, name in enumerate(param_names):
                    self._param_dict[ctx][name] += self._mod_aux._exec_group.grad_arrays[index][ctx]
            padding = batch.pad or 0
        if nbatch == 0:
            raise ValueError("update_full_grads: train_data gave no batch")
        true_num_batch = nbatch - padding / train_data.batch_size
        for name in param_names:
            grad_list = []
            for i in range(self._ctx_len):
                self._param_dict[i][name] /= true_num_batch
                grad_list.append(self._param_dict[i][name])
            if self._kvstore:
                self._accumulate_kvstore(name, grad_list)

    def _accumulate_kvstore(self, key, value):
        """Sums the devices' (and workers') full gradients of `key` through the store."""
        self._kvstore.push(key + "_full", value)
        barrier = getattr(self._kvstore, "_barrier", None)
        if barrier is not None:
            barrier()
        self._kvstore.pull(key + "_full", value)
        self._allocate_gradients(key, value)

    def _allocate_gradients(self, key, value):
        for i in range(self._ctx_len):
            self._param_dict[i][key] = value[i] / self._ctx_len

    @staticmethod
    def _svrg_grads_update_rule(g_curr_batch_curr_weight, g_curr_batch_special_weight, g_special_weight_all_batch):
        """g_i(w) - g_i(w~) + mu, written into the first list's arrays (returned)."""
        for index, grad in enumerate(g_curr_batch_curr_weight):
            grad -= g_curr_batch_special_weight[index]
            grad += g_special_weight_all_batch[index]
        return g_curr_batch_curr_weight

    def _update_svrg_gradients(self):
        param_names = self._exec_group.param_names
        for ctx in range(self._ctx_len):
            for index, name in enumerate(param_names):
                g_curr = self._exec_group.grad_arrays[index][ctx]
                g_special = self._mod_aux._exec_group.grad_arrays[index][ctx]
                self._svrg_grads_update_rule([g_curr], [g_special], [self._param_dict[ctx][name]])

    def prepare(self, data_batch, sparse_row_id_fn=None):
        super().prepare(data_batch, sparse_row_id_fn=sparse_row_id_fn)
        self._mod_aux.prepare(data_batch, sparse_row_id_fn=sparse_row_id_fn)

    def fit(self, train_data, eval_data=None, eval_metric="acc", epoch_end_callback=None, batch_end_callback=None,
            kvstore="local", optimizer="sgd", optimizer_params=(("learning_rate", 0.01),), eval_end_callback=None,
            eval_batch_end_callback=None, initializer=None, arg_params=None, aux_params=None,
            allow_missing=False, force_rebind=False, force_init=False, begin_epoch=0, num_epoch=None,
            validation_metric=None, monitor=None, sparse_row_id_fn=None):
        """Module.fit with the full gradient refreshed at every epoch divisible by
        update_freq. The initializer defaults to Uniform(0.01), as MXNet's SVRGModule."""
        if num_epoch is None:
            raise ValueError("fit needs num_epoch (the epoch to stop before)")
        if initializer is None:
            from ... import initializer as init
            initializer = init.Uniform(0.01)
        self.bind(data_shapes=train_data.provide_data, label_shapes=train_data.provide_label, for_training=True,
                  force_rebind=force_rebind)
        if monitor is not None:
            self.install_monitor(monitor)
        self.init_params(initializer=initializer, arg_params=arg_params, aux_params=aux_params,
                         allow_missing=allow_missing, force_init=force_init)
        self.init_optimizer(kvstore=kvstore, optimizer=optimizer, optimizer_params=optimizer_params)
        if validation_metric is None:
            validation_metric = eval_metric
        if not isinstance(eval_metric, _metric_mod.EvalMetric):
            eval_metric = _metric_mod.create(eval_metric)

        for epoch in range(begin_epoch, num_epoch):
            eval_metric.reset()
            tic = time.time()
            if epoch % self.update_freq == 0:
                self.update_full_grads(train_data)
            train_data.reset()
            for nbatch, data_batch in enumerate(train_data):
                if monitor is not None:
                    monitor.tic()
                self.forward_backward(data_batch)
                self.update()
                self.update_metric(eval_metric, data_batch.label)
                if monitor is not None:
                    monitor.toc_print()
                if batch_end_callback is not None:
                    param = _model.BatchEndParam(epoch=epoch, nbatch=nbatch, eval_metric=eval_metric, locals=locals())
                    for callback in _as_list(batch_end_callback):
                        callback(param)
            for name, val in eval_metric.get_name_value():
                self.logger.info("Epoch[%d] Train-%s=%f", epoch, name, val)
            self.logger.info("Epoch[%d] Time cost=%.3f", epoch, time.time() - tic)
            arg_params, aux_params = self.get_params()
            self.set_params(arg_params, aux_params)
            if epoch_end_callback is not None:
                for callback in _as_list(epoch_end_callback):
                    callback(epoch, self.symbol, arg_params, aux_params)
            if eval_data:
                res = self.score(eval_data, validation_metric, score_end_callback=eval_end_callback,
                                 batch_end_callback=eval_batch_end_callback, epoch=epoch)
                for name, val in res:
                    self.logger.info("Epoch[%d] Validation-%s=%f", epoch, name, val)
