"""BucketingModule: one Module per bucket key (e.g. a sequence length), all sharing the
default bucket's parameters and optimizer (MXNet 1.x's mx.mod.BucketingModule)."""
import logging
import warnings

import numpy as np

from .. import ndarray as nd
from .. import symbol as _sym
from ..context import cpu
from ..model import load_params
from ..name import NameManager
from .base_module import BaseModule, DEFAULT_INITIALIZER, _require
from .module import Module

__all__ = ["BucketingModule"]


class BucketingModule(BaseModule):
    """sym_gen(bucket_key) returns (symbol, data_names, label_names). The default bucket is
    bound first and must hold every parameter; other buckets are bound on first use and
    share its arrays. A batch's bucket_key picks the bucket."""

    def __init__(self, sym_gen, default_bucket_key=None, logger=logging, context=None, work_load_list=None,
                 fixed_param_names=None, state_names=None, group2ctxs=None, compression_params=None):
        super().__init__(logger=logger)
        if default_bucket_key is None:
            raise ValueError("BucketingModule needs default_bucket_key (the bucket that holds every parameter)")
        self._default_bucket_key = default_bucket_key
        self._sym_gen = sym_gen
        symbol, data_names, label_names = self._call_sym_gen(default_bucket_key)
        self._check_names(symbol, data_names, label_names)
        self._fixed_param_names = list(fixed_param_names) if fixed_param_names is not None else None
        self._state_names = list(state_names) if state_names is not None else None
        self._context = cpu() if context is None else context
        self._work_load_list = work_load_list
        self._group2ctxs = group2ctxs
        self._compression_params = compression_params
        self._buckets = {}
        self._curr_module = None
        self._curr_bucket_key = None
        self._params_dirty = False
        self._monitor = None
        self._grad_req = None

    def _call_sym_gen(self, key):
        # A fresh name scope per call, as MXNet: every bucket's unnamed operators get the same
        # names (embedding0_weight, ...), so the buckets' parameters match by name.
        with NameManager():
            result = self._sym_gen(key)
        if not (isinstance(result, tuple) and len(result) == 3):
            raise TypeError("sym_gen(%r) must return (symbol, data_names, label_names), got %r" % (key, result))
        return result

    @staticmethod
    def _check_names(symbol, data_names, label_names):
        args = symbol.list_arguments()
        for name in list(data_names or []):
            if name not in args:
                raise ValueError("sym_gen's data name %r is not an argument of its symbol (%s)" % (name, args))
        for name in list(label_names or []):
            if name not in args:
                warnings.warn("sym_gen's label name %r is not an argument of its symbol (%s)" % (name, args))

    def _reset_bind(self):
        self.binded = False
        self._buckets = {}
        self._curr_module = None
        self._curr_bucket_key = None

    def _new_module(self, key):
        symbol, data_names, label_names = self._call_sym_gen(key)
        return Module(symbol, data_names, label_names, logger=self.logger, context=self._context,
                      work_load_list=self._work_load_list, fixed_param_names=self._fixed_param_names,
                      state_names=self._state_names, group2ctxs=self._group2ctxs,
                      compression_params=self._compression_params)

    # ------------------------------------------------------------------ properties
    @property
    def default_bucket_key(self):
        return self._default_bucket_key

    @property
    def data_names(self):
        if self.binded:
            return self._curr_module.data_names
        return self._call_sym_gen(self._default_bucket_key)[1]

    @property
    def label_names(self):
        if self.binded:
            return self._curr_module.label_names
        return self._call_sym_gen(self._default_bucket_key)[2]

    @property
    def output_names(self):
        if self.binded:
            return self._curr_module.output_names
        return self._call_sym_gen(self._default_bucket_key)[0].list_outputs()

    @property
    def data_shapes(self):
        _require(self.binded, "data_shapes", "bind()")
        return self._curr_module.data_shapes

    @property
    def label_shapes(self):
        _require(self.binded, "label_shapes", "bind()")
        return self._curr_module.label_shapes

    @property
    def output_shapes(self):
        _require(self.binded, "output_shapes", "bind()")
        return self._curr_module.output_shapes

    @property
    def symbol(self):
        _require(self.binded, "symbol", "bind()")
        return self._curr_module.symbol

    # ------------------------------------------------------------------ parameters
    def get_params(self):
        _require(self.binded and self.params_initialized, "get_params", "bind() and init_params()")
        self._curr_module._params_dirty = self._params_dirty
        params = self._curr_module.get_params()
        self._params_dirty = False
        return params

    def set_params(self, arg_params, aux_params, allow_missing=False, force_init=True, allow_extra=False):
        if not allow_missing:
            self.init_params(initializer=None, arg_params=arg_params, aux_params=aux_params,
                             allow_missing=allow_missing, force_init=force_init, allow_extra=allow_extra)
            return
        if self.params_initialized and not force_init:
            warnings.warn("Parameters already initialized and force_init=False. set_params call ignored.",
                          stacklevel=2)
            return
        self._curr_module.set_params(arg_params, aux_params, allow_missing=allow_missing, force_init=force_init,
                                     allow_extra=allow_extra)
        self._params_dirty = True
        self.params_initialized = True

    def init_params(self, initializer=DEFAULT_INITIALIZER, arg_params=None, aux_params=None, allow_missing=False,
                    force_init=False, allow_extra=False):
        if self.params_initialized and not force_init:
            return
        _require(self.binded, "init_params", "bind()")
        self._curr_module.init_params(initializer=initializer, arg_params=arg_params, aux_params=aux_params,
                                      allow_missing=allow_missing, force_init=force_init, allow_extra=allow_extra)
        self._params_dirty = False
        self.params_initialized = True

    def get_states(self, merge_multi_context=True):
        self._check_ready("get_states")
        return self._curr_module.get_states(merge_multi_context=merge_multi_context)

    def set_states(self, states=None, value=None):
        self._check_ready("set_states")
        self._curr_module.set_states(states, value)

    # ------------------------------------------------------------------ binding
    def bind(self, data_shapes, label_shapes=None, for_training=True, inputs_need_grad=False, force_rebind=False,
             shared_module=None, grad_req="write"):
        """Binds the default bucket (the others are bound by switch_bucket)."""
        if self.params_initialized:
            if self.binded:
                arg_params, aux_params = self.get_params()
            else:
                # Loaded (BucketingModule.load) but not bound yet: the default bucket's
                # module holds the values.
                arg_params, aux_params = self._curr_module._arg_params, self._curr_module._aux_params
        if force_rebind:
            self._reset_bind()
        if self.binded:
            self.logger.warning("Already bound, ignoring bind()")
            return
        if shared_module is not None:
            raise ValueError("BucketingModule.bind does not take shared_module (its buckets share the default "
                             "bucket's parameters)")
        self.for_training = for_training
        self.inputs_need_grad = inputs_need_grad
        self._grad_req = grad_req
        module = self._buckets.get(self._default_bucket_key) or self._new_module(self._default_bucket_key)
        module.bind(data_shapes, label_shapes, for_training, inputs_need_grad, force_rebind=False,
                    shared_module=None, grad_req=grad_req)
        self._curr_module = module
        self._curr_bucket_key = self._default_bucket_key
        self._buckets[self._default_bucket_key] = module
        self.binded = True
        # A re-bind keeps the values the parameters had.
        if self.params_initialized:
            self.set_params(arg_params, aux_params)

    def switch_bucket(self, bucket_key, data_shapes, label_shapes=None):
        """Makes bucket_key current, binding its module (sharing the default bucket's
        parameters) the first time."""
        _require(self.binded, "switch_bucket", "bind()")
        module = self._buckets.get(bucket_key)
        # A bucket BucketingModule.load made is there but not bound yet.
        if module is None or not module.binded:
            if data_shapes is None:
                raise ValueError("bucket %r is not bound yet and the batch gives no provide_data to bind it with"
                                 % (bucket_key,))
            module = module or self._new_module(bucket_key)
            module.bind(data_shapes, label_shapes, self._curr_module.for_training,
                        self._curr_module.inputs_need_grad, force_rebind=False,
                        shared_module=self._buckets[self._default_bucket_key], grad_req=self._grad_req)
            if self._monitor is not None:
                module.install_monitor(self._monitor)
            self._buckets[bucket_key] = module
        self._curr_module = self._buckets[bucket_key]
        self._curr_bucket_key = bucket_key

    def reshape(self, data_shapes, label_shapes=None):
        _require(self.binded, "reshape", "bind()")
        self._curr_module.reshape(data_shapes, label_shapes)

    # ------------------------------------------------------------------ optimizer
    def init_optimizer(self, kvstore="local", optimizer="sgd", optimizer_params=(("learning_rate", 0.01),),
                       force_init=False):
        _require(self.binded and self.params_initialized, "init_optimizer", "bind() and init_params()")
        if self.optimizer_initialized and not force_init:
            warnings.warn("optimizer already initialized, ignoring.", stacklevel=2)
            return
        self._curr_module.init_optimizer(kvstore, optimizer, optimizer_params, force_init=force_init)
        for mod in self._buckets.values():
            if mod is not self._curr_module:
                mod.borrow_optimizer(self._curr_module)
        self.optimizer_initialized = True

    def save_optimizer_states(self, fname):
        self._curr_module.save_optimizer_states(fname)

    def load_optimizer_states(self, fname):
        self._curr_module.load_optimizer_states(fname)

    # ------------------------------------------------------------------ computation
    def prepare(self, data_batch, sparse_row_id_fn=None):
        """Binds the batch's bucket ahead of its forward pass and prepares its module."""
        _require(self.binded and self.params_initialized, "prepare", "bind() and init_params()")
        original_key = self._curr_bucket_key
        self.switch_bucket(data_batch.bucket_key, data_batch.provide_data, data_batch.provide_label)
        self._curr_module.prepare(data_batch, sparse_row_id_fn=sparse_row_id_fn)
        self.switch_bucket(original_key, None, None)

    def forward(self, data_batch, is_train=None):
        self._check_ready("forward")
        key = getattr(data_batch, "bucket_key", None)
        if key is None:
            key = self._default_bucket_key
        self.switch_bucket(key, data_batch.provide_data, data_batch.provide_label)
        self._curr_module.forward(data_batch, is_train=is_train)

    def backward(self, out_grads=None):
        self._check_ready("backward")
        self._curr_module.backward(out_grads=out_grads)

    def update(self):
        self._check_ready("update")
        _require(self.optimizer_initialized, "update", "init_optimizer()")
        self._params_dirty = True
        self._curr_module.update()

    def get_outputs(self, merge_multi_context=True):
        self._check_ready("get_outputs")
        return self._curr_module.get_outputs(merge_multi_context=merge_multi_context)

    def get_input_grads(self, merge_multi_context=True):
        self._check_ready("get_input_grads")
        return self._curr_module.get_input_grads(merge_multi_context=merge_multi_context)

    def update_metric(self, eval_metric, labels, pre_sliced=False):
        self._check_ready("update_metric")
        self._curr_module.update_metric(eval_metric, labels, pre_sliced)

    def install_monitor(self, mon):
        """Reports every bucket's executors (those bound later too) to a weft.monitor.Monitor."""
        _require(self.binded, "install_monitor", "bind()")
        self._monitor = mon
        for module in self._buckets.values():
            module.install_monitor(mon)

    def save_checkpoint(self, prefix, epoch, remove_amp_cast=False):
        """Writes one `prefix-<bucket_key>-symbol.json` per bound bucket (keeping amp_cast
        nodes unless remove_amp_cast, MXNet's default for BucketingModule), the shared
        parameters to `prefix-%04d.params` and, when the bucket keys are integers (as
        BucketingModule.load needs), their list to `prefix.buckets` (an int32 NDArray file)."""
        _require(self.binded, "save_checkpoint", "bind()")
        for key, module in self._buckets.items():
            module.symbol.save("%s-%s-symbol.json" % (prefix, key), remove_amp_cast=remove_amp_cast)
        self.save_params("%s-%04d.params" % (prefix, epoch))
        keys = list(self._buckets.keys())
        if all(isinstance(k, (int, np.integer)) for k in keys):
            nd.save("%s.buckets" % prefix, nd.array(keys, dtype=np.int32))

    @staticmethod
    def load(prefix, epoch, sym_gen=None, default_bucket_key=None, **kwargs):
        """A BucketingModule from save_checkpoint's files: the buckets listed in
        `prefix.buckets` with their saved symbols (sym_gen gives their data and label names)
        and the parameters of `prefix-%04d.params`, set when it is bound. The keyword
        arguments go to BucketingModule() and each bucket's Module()."""
        if sym_gen is None or default_bucket_key is None:
            raise ValueError("BucketingModule.load needs sym_gen and default_bucket_key")
        keys = [int(k) for k in nd.load("%s.buckets" % prefix)[0].asnumpy().astype(np.int32)]
        symbols = {key: _sym.load("%s-%s-symbol.json" % (prefix, key)) for key in keys}
        arg_params, aux_params = load_params(prefix, epoch)
        return BucketingModule._from_symbols(symbols, sym_gen, default_bucket_key, arg_params, aux_params,
                                             kwargs, names_key=None)

    @staticmethod
    def load_dict(sym_dict=None, sym_gen=None, default_bucket_key=None, arg_params=None, aux_params=None,
                  **kwargs):
        """A BucketingModule from {bucket_key: symbol} and shared parameters (set when it is
        bound); sym_gen(default_bucket_key) names the inputs of every bucket."""
        if sym_dict is None or arg_params is None or aux_params is None or default_bucket_key is None:
            raise ValueError("BucketingModule.load_dict needs sym_dict, arg_params, aux_params and "
                             "default_bucket_key")
        return BucketingModule._from_symbols(sym_dict, sym_gen, default_bucket_key, arg_params, aux_params,
                                             kwargs, names_key=default_bucket_key)

    @staticmethod
    def _from_symbols(symbols, sym_gen, default_bucket_key, arg_params, aux_params, kwargs, names_key):
        if default_bucket_key not in symbols:
            raise ValueError("the default bucket %r is not among the saved buckets %s"
                             % (default_bucket_key, sorted(symbols)))
        mod = BucketingModule(sym_gen, default_bucket_key, **kwargs)
        for key, symbol in symbols.items():
            _, data_names, label_names = mod._call_sym_gen(key if names_key is None else names_key)
            mod._buckets[key] = Module(symbol, data_names, label_names, **kwargs)
        mod._curr_module = mod._buckets[default_bucket_key]
        mod._curr_bucket_key = default_bucket_key
        mod._curr_module._arg_params = arg_params
        mod._curr_module._aux_params = aux_params
        mod._curr_module.params_initialized = True
        mod.params_initialized = True
        return mod
