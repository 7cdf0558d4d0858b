"""Module: a Symbol trained on one or several contexts (MXNet 1.x's mx.mod.Module)."""
import logging
import warnings

from .. import ndarray as nd
from ..context import Context, cpu
from .. import model as _model
from ..base import atomic_write
from .base_module import BaseModule, DEFAULT_INITIALIZER, _require, _resolve_initializer
from .executor_group import DataParallelExecutorGroup

__all__ = ["Module"]


def _check_input_names(symbol, names, typename, throw):
    """Every name in `names` must be an argument of the symbol; the message lists the
    arguments that could be inputs (those that do not look like parameters)."""
    args = symbol.list_arguments()
    for name in names:
        if name in args:
            continue
        candidates = [a for a in args if not a.endswith(("_weight", "_bias", "_gamma", "_beta"))]
        msg = ("Module(..., %s_names=%s): the symbol has no argument named %r; its non-parameter arguments are %s"
               % (typename, list(names), name, candidates))
        if throw:
            raise ValueError(msg)
        warnings.warn(msg)


def _desc(item):
    from ..io import DataDesc
    if isinstance(item, DataDesc):
        return item
    # MXNet builds DataDesc(*item): (name, shape), (name, shape, dtype) or (name, shape, dtype, layout)
    if isinstance(item, (list, tuple)) and 2 <= len(item) <= 4 and isinstance(item[0], str):
        return DataDesc(item[0], tuple(item[1]), *item[2:])
    raise TypeError("expected a DataDesc or a (name, shape[, dtype[, layout]]) tuple, got %r" % (item,))


def _parse_data_desc(data_names, label_names, data_shapes, label_shapes):
    """The shapes as DataDesc lists, checked against the names the module was made with: a data
    name mismatch is an error, a label one a warning (as MXNet's, which binds such modules)."""
    data_shapes = [_desc(x) for x in data_shapes]
    given = [x.name for x in data_shapes]
    if sorted(given) != sorted(data_names):
        raise ValueError("the data shapes name %s, but the module's data_names are %s" % (given, list(data_names)))
    if label_shapes is not None:
        label_shapes = [_desc(x) for x in label_shapes]
        given = [x.name for x in label_shapes]
        if sorted(given) != sorted(label_names):
            warnings.warn("the label shapes name %s, but the module's label_names are %s"
                          % (given, list(label_names)))
    return data_shapes, label_shapes


def _contexts(context):
    if isinstance(context, Context):
        return [context]
    if isinstance(context, (list, tuple)) and context and all(isinstance(c, Context) for c in context):
        return list(context)
    raise TypeError("context must be a Context or a non-empty list of them, got %r" % (context,))


def _per_context_group2ctxs(group2ctxs, n):
    """One {ctx_group: context} dict per context, as MXNet accepts them: a list of such dicts,
    or one dict whose values are a context (for every device) or a list of 1 or n contexts
    (the i-th for the i-th device)."""
    if group2ctxs is None:
        return [None] * n
    if isinstance(group2ctxs, (list, tuple)):
        if len(group2ctxs) != n:
            raise ValueError("group2ctxs has %d entries for %d contexts" % (len(group2ctxs), n))
        return list(group2ctxs)
    if not isinstance(group2ctxs, dict):
        raise TypeError("group2ctxs must be a dict or a list of dicts, got %s" % type(group2ctxs).__name__)
    per_ctx = [{} for _ in range(n)]
    for group, value in group2ctxs.items():
        if isinstance(value, Context):
            value = [value]
        value = list(value)
        if len(value) == 1:
            value = value * n
        if len(value) != n:
            raise ValueError("group2ctxs[%r] has %d contexts; expected 1 or %d" % (group, len(value), n))
        for i in range(n):
            per_ctx[i][group] = value[i]
    return per_ctx


class Module(BaseModule):
    """Binds `symbol` on the given contexts; data_names and label_names are its inputs, the
    other arguments its parameters (fixed_param_names are not updated; state_names are
    inputs kept across batches, set with set_states)."""

    def __init__(self, symbol, data_names=("data",), label_names=("softmax_label",), logger=logging,
                 context=None, work_load_list=None, fixed_param_names=None, state_names=None, group2ctxs=None,
                 compression_params=None):
        super().__init__(logger=logger)
        self._context = _contexts(cpu() if context is None else context)
        if work_load_list is None:
            work_load_list = [1] * len(self._context)
        if len(work_load_list) != len(self._context):
            raise ValueError("work_load_list has %d entries for %d contexts"
                             % (len(work_load_list), len(self._context)))
        self._group2ctxs = _per_context_group2ctxs(group2ctxs, len(self._context))
        self._work_load_list = list(work_load_list)
        self._symbol = symbol
        self._compression_params = compression_params

        data_names = list(data_names) if data_names is not None else []
        label_names = list(label_names) if label_names is not None else []
        state_names = list(state_names) if state_names is not None else []
        fixed_param_names = list(fixed_param_names) if fixed_param_names is not None else []
        _check_input_names(symbol, data_names, "data", True)
        _check_input_names(symbol, label_names, "label", False)
        _check_input_names(symbol, state_names, "state", True)
        _check_input_names(symbol, fixed_param_names, "fixed_param", True)

        inputs = set(data_names + label_names + state_names)
        self._data_names = data_names
        self._label_names = label_names
        self._state_names = state_names
        self._fixed_param_names = fixed_param_names
        self._param_names = [x for x in symbol.list_arguments() if x not in inputs]
        self._aux_names = symbol.list_auxiliary_states()
        self._output_names = symbol.list_outputs()

        self._arg_params = None
        self._aux_params = None
        self._params_dirty = False
        self._optimizer = None
        self._kvstore = None
        self._update_on_kvstore = None
        self._updater = None
        self._param_index = None
        self._preload_opt_states = None
        self._grad_req = None
        self._exec_group = None
        self._data_shapes = None
        self._label_shapes = None

    @staticmethod
    def load(prefix, epoch, load_optimizer_states=False, **kwargs):
        """A Module from save_checkpoint's files; the keyword arguments go to Module(). With
        load_optimizer_states, `prefix-%04d.states` is loaded by init_optimizer."""
        symbol, args, auxs = _model.load_checkpoint(prefix, epoch)
        mod = Module(symbol=symbol, **kwargs)
        mod._arg_params = args
        mod._aux_params = auxs
        mod.params_initialized = True
        if load_optimizer_states:
            mod._preload_opt_states = "%s-%04d.states" % (prefix, epoch)
        return mod

    def save_checkpoint(self, prefix, epoch, save_optimizer_states=False, remove_amp_cast=True):
        """Writes prefix-symbol.json, prefix-%04d.params and, when asked, prefix-%04d.states.
        remove_amp_cast: as in weft.model.save_checkpoint."""
        self._symbol.save("%s-symbol.json" % prefix, remove_amp_cast=remove_amp_cast)
        self.save_params("%s-%04d.params" % (prefix, epoch))
        if save_optimizer_states:
            self.save_optimizer_states("%s-%04d.states" % (prefix, epoch))

    def _reset_bind(self):
        self.binded = False
        self._exec_group = None
        self._data_shapes = None
        self._label_shapes = None

    # ------------------------------------------------------------------ properties
    @property
    def data_names(self):
        return self._data_names

    @property
    def label_names(self):
        return self._label_names

    @property
    def output_names(self):
        return self._output_names

    @property
    def data_shapes(self):
        _require(self.binded, "data_shapes", "bind()")
        return self._data_shapes

    @property
    def label_shapes(self):
        _require(self.binded, "label_shapes", "bind()")
        return self._label_shapes

    @property
    def output_shapes(self):
        _require(self.binded, "output_shapes", "bind()")
        return self._exec_group.output_shapes

    # ------------------------------------------------------------------ parameters
    def get_params(self):
        """(arg_params, aux_params): CPU copies, brought up to date from the devices."""
        _require(self.binded and self.params_initialized, "get_params", "bind() and init_params()")
        if self._params_dirty:
            self._sync_params_from_devices()
        return self._arg_params, self._aux_params

    def init_params(self, initializer=DEFAULT_INITIALIZER, arg_params=None, aux_params=None, allow_missing=False,
                    force_init=False, allow_extra=False):
        """Fills the parameters: a name found in arg_params/aux_params takes that value; any
        other is an error unless allow_missing, in which case the initializer fills it."""
        if self.params_initialized and not force_init:
            warnings.warn("Parameters already initialized and force_init=False. init_params call ignored.",
                          stacklevel=2)
            return
        _require(self.binded, "init_params", "bind()")
        initializer = _resolve_initializer(initializer)

        def fill(name, arr, cache, desc):
            if cache is not None:
                if name in cache:
                    src = cache[name]
                    if src is not arr:
                        if tuple(src.shape) != tuple(arr.shape):
                            raise ValueError("parameter %s has shape %s in the given values, the module expects %s"
                                             % (name, tuple(src.shape), tuple(arr.shape)))
                        src.copyto(arr)
                    return
                if not allow_missing:
                    raise RuntimeError("parameter %s is not in the given values (pass allow_missing=True to "
                                       "initialise it instead)" % name)
            if initializer is not None:
                initializer(desc(name), arr)

        attrs = self._symbol.attr_dict()
        from ..initializer import InitDesc
        for name, arr in sorted(self._arg_params.items()):
            fill(name, arr, arg_params, lambda n: InitDesc(n, attrs.get(n, None)))
        for name, arr in sorted(self._aux_params.items()):
            fill(name, arr, aux_params, lambda n: InitDesc(n, attrs.get(n, None)))

        self.params_initialized = True
        self._params_dirty = False
        self._exec_group.set_params(self._arg_params, self._aux_params, allow_extra=allow_extra)

    def set_params(self, arg_params, aux_params, allow_missing=False, force_init=True, allow_extra=False):
        """Assigns parameter values. With allow_missing, names not given keep their values."""
        if not allow_missing:
            self.init_params(initializer=None, arg_params=arg_params, aux_params=aux_params,
                             allow_missing=allow_missing, force_init=force_init, allow_extra=allow_extra)
            return
        if self.params_initialized and not force_init:
            warnings.warn("Parameters already initialized and force_init=False. set_params call ignored.",
                          stacklevel=2)
            return
        _require(self.binded, "set_params", "bind()")
        self._exec_group.set_params(arg_params, aux_params, allow_extra=allow_extra)
        # The devices now hold values the CPU copies lack.
        self._params_dirty = True
        self.params_initialized = True

    def _sync_params_from_devices(self):
        self._exec_group.get_params(self._arg_params, self._aux_params)
        # The devices hold only the rows prepare() pulled of a row_sparse parameter that the
        # store updates: the store has the whole of it.
        if self._kvstore and self._update_on_kvstore:
            for name, value in sorted(self._arg_params.items()):
                if value.stype == "row_sparse":
                    self._kvstore.row_sparse_pull(name, value, row_ids=nd.arange(0, value.shape[0], dtype="int64"))
        self._params_dirty = False

    # ------------------------------------------------------------------ binding
    def bind(self, data_shapes, label_shapes=None, for_training=True, inputs_need_grad=False, force_rebind=False,
             shared_module=None, grad_req="write"):
        """Allocates the executors for the given input shapes (DataDesc or (name, shape)
        lists). With shared_module (bound and initialised), parameters are that module's."""
        if force_rebind:
            self._reset_bind()
        if self.binded:
            self.logger.warning("Already bound, ignoring bind()")
            return
        if inputs_need_grad and not for_training:
            raise ValueError("bind: inputs_need_grad=True needs for_training=True")
        self.for_training = for_training
        self.inputs_need_grad = inputs_need_grad
        self._grad_req = grad_req
        self._data_shapes, self._label_shapes = _parse_data_desc(self._data_names, self._label_names, data_shapes,
                                                                 label_shapes)
        shared_group = None
        if shared_module is not None:
            if not isinstance(shared_module, Module) or not shared_module.binded or \
                    not shared_module.params_initialized:
                raise ValueError("bind: shared_module must be a Module that is bound and has its parameters "
                                 "initialised")
            shared_group = shared_module._exec_group
            if len(shared_group.execs) != len(self._context):
                raise ValueError("bind: shared_module runs on %d contexts, this module on %d"
                                 % (len(shared_group.execs), len(self._context)))

        self._exec_group = DataParallelExecutorGroup(
            self._symbol, self._context, self._work_load_list, self._data_shapes, self._label_shapes,
            self._param_names, for_training, inputs_need_grad, shared_group, logger=self.logger,
            fixed_param_names=self._fixed_param_names, grad_req=grad_req, state_names=self._state_names,
            group2ctxs=self._group2ctxs)
        self._total_exec_bytes = self._exec_group._total_exec_bytes

        if shared_module is not None:
            self.params_initialized = True
            self._arg_params = shared_module._arg_params
            self._aux_params = shared_module._aux_params
        elif self.params_initialized:
            # Values given before binding (Module.load) go to the new executors.
            self._exec_group.set_params(self._arg_params, self._aux_params)
        else:
            self._arg_params = {name: nd.zeros(block[0].shape, dtype=block[0].dtype, stype=block[0].stype)
                                for name, block in zip(self._param_names, self._exec_group.param_arrays)}
            self._aux_params = {name: nd.zeros(block[0].shape, dtype=block[0].dtype, stype=block[0].stype)
                                for name, block in zip(self._aux_names, self._exec_group.aux_arrays)}
        if shared_module is not None and shared_module.optimizer_initialized:
            self.borrow_optimizer(shared_module)
        self.binded = True

    def reshape(self, data_shapes, label_shapes=None):
        """New input shapes for the bound executors (parameters stay shared)."""
        _require(self.binded, "reshape", "bind()")
        self._data_shapes, self._label_shapes = _parse_data_desc(self._data_names, self._label_names, data_shapes,
                                                                 label_shapes)
        self._exec_group.reshape(self._data_shapes, self._label_shapes)

    # ------------------------------------------------------------------ optimizer
    def init_optimizer(self, kvstore="local", optimizer="sgd", optimizer_params=(("learning_rate", 0.01),),
                       force_init=False):
        """Sets up the optimizer (a name with optimizer_params, or an Optimizer) and, with
        several contexts, the KVStore that sums their gradients. A named optimizer gets
        rescale_grad = 1/batch_size unless optimizer_params set it."""
        _require(self.binded and self.params_initialized, "init_optimizer", "bind() and init_params()")
        if self.optimizer_initialized and not force_init:
            warnings.warn("optimizer already initialized, ignoring...", stacklevel=2)
            return
        from .. import optimizer as opt
        if self._params_dirty:
            self._sync_params_from_devices()

        kvstore, update_on_kvstore = _model._create_kvstore(kvstore, len(self._context), self._arg_params)
        batch_size = self._exec_group.batch_size
        if kvstore is not None and "dist" in getattr(kvstore, "type", "") and "_sync" in kvstore.type:
            batch_size *= kvstore.num_workers
        rescale_grad = 1.0 / batch_size

        param_names = self._exec_group.param_names
        if update_on_kvstore:
            idx2name = dict(enumerate(param_names))
        else:
            n = len(self._context)
            idx2name = {i * n + k: name for i, name in enumerate(param_names) for k in range(n)}
        if isinstance(optimizer, str):
            optimizer_params = dict(optimizer_params)
            optimizer_params.setdefault("rescale_grad", rescale_grad)
            optimizer = opt.create(optimizer, sym=self._symbol, param_idx2name=idx2name, **optimizer_params)
        else:
            if not isinstance(optimizer, opt.Optimizer):
                raise TypeError("optimizer must be a name or an Optimizer, got %s" % type(optimizer).__name__)
            if optimizer.rescale_grad != rescale_grad:
                warnings.warn("Optimizer created manually outside Module but rescale_grad is not normalized to "
                              "1.0/batch_size/num_workers (%s vs. %s). Is this intended?"
                              % (optimizer.rescale_grad, rescale_grad), stacklevel=2)
            if not optimizer.idx2name:
                optimizer.idx2name = idx2name.copy()

        self._optimizer = optimizer
        self._kvstore = kvstore
        self._update_on_kvstore = update_on_kvstore
        self._updater = None
        self._param_index = {name: i for i, name in enumerate(param_names)}
        if kvstore is not None:
            if self._compression_params:
                kvstore.set_gradient_compression(self._compression_params)
            if update_on_kvstore:
                kvstore.set_optimizer(self._optimizer)
            _model._initialize_kvstore(kvstore=kvstore, param_arrays=self._exec_group.param_arrays,
                                       arg_params=self._arg_params, param_names=param_names,
                                       update_on_kvstore=update_on_kvstore)
        if not update_on_kvstore:
            self._updater = opt.get_updater(optimizer)
        self.optimizer_initialized = True

        if self._preload_opt_states is not None:
            self.load_optimizer_states(self._preload_opt_states)
            self._preload_opt_states = None

    def borrow_optimizer(self, shared_module):
        """Uses shared_module's optimizer, store and updater (buckets step one set of weights)."""
        _require(shared_module.optimizer_initialized, "borrow_optimizer", "init_optimizer() on the shared module")
        self._optimizer = shared_module._optimizer
        self._kvstore = shared_module._kvstore
        self._update_on_kvstore = shared_module._update_on_kvstore
        self._updater = shared_module._updater
        self._param_index = shared_module._param_index
        missing = [n for n in self._param_names if n not in self._param_index]
        if missing:
            raise ValueError("borrow_optimizer: the shared module has no parameters %s; bind the module with the "
                             "most parameters first (the default bucket)" % missing)
        self.optimizer_initialized = True

    def save_optimizer_states(self, fname):
        _require(self.optimizer_initialized, "save_optimizer_states", "init_optimizer()")
        if self._update_on_kvstore:
            self._kvstore.save_optimizer_states(fname)
        else:
            atomic_write(fname, self._updater.get_states())

    def load_optimizer_states(self, fname):
        _require(self.optimizer_initialized, "load_optimizer_states", "init_optimizer()")
        if self._update_on_kvstore:
            self._kvstore.load_optimizer_states(fname)
        else:
            with open(fname, "rb") as f:
                self._updater.set_states(f.read())

    # ------------------------------------------------------------------ computation
    def forward(self, data_batch, is_train=None):
        """Runs the batch (training mode by default when bound for training). A batch whose
        shapes differ from the bound ones re-shapes the executors first."""
        self._check_ready("forward")
        data = getattr(data_batch, "data", None)
        if data is None:
            raise TypeError("forward expects a DataBatch (with .data), got %s" % type(data_batch).__name__)
        if len(data) != len(self._data_shapes):
            raise ValueError("the batch has %d data arrays; the module was bound with %d (%s)"
                             % (len(data), len(self._data_shapes), [d.name for d in self._data_shapes]))
        curr = tuple(tuple(d.shape) for d in self._data_shapes)
        new = tuple(tuple(d.shape) for d in data)
        if curr != new:
            from ..io import DataDesc
            provided = getattr(data_batch, "provide_data", None)
            if provided:
                new_dshape = provided
            else:
                new_dshape = [DataDesc(d.name, shape, d.dtype, d.layout) for d, shape in zip(self._data_shapes, new)]
            provided = getattr(data_batch, "provide_label", None)
            labels = getattr(data_batch, "label", None)
            if provided:
                new_lshape = provided
            elif labels and self._label_shapes:
                new_lshape = [DataDesc(d.name, tuple(lab.shape), d.dtype, d.layout)
                              for d, lab in zip(self._label_shapes, labels)]
            else:
                new_lshape = None
            self.reshape(new_dshape, new_lshape)
        self._exec_group.forward(data_batch, is_train)

    def backward(self, out_grads=None):
        self._check_ready("backward")
        self._exec_group.backward(out_grads=out_grads)

    def prepare(self, data_batch, sparse_row_id_fn=None):
        """Pulls from the kvstore the rows of the row_sparse parameters that
        sparse_row_id_fn(data_batch) names ({name: row ids}), as MXNet's Module does before a
        step when the store runs the optimizer: each device's copy then holds exactly those
        rows (the ones the batch reads), and only they are read from the store (a dist
        store's servers send only them). Without such a store there is nothing to pull, and
        MXNet's warning says so."""
        _require(self.binded, "prepare", "bind()")
        if sparse_row_id_fn is None:
            return
        if not self._kvstore or not self._update_on_kvstore:
            warnings.warn(UserWarning("Parameters are not updated in the KVStore. No need to call sparse_row_id_fn."))
            return
        row_ids = sparse_row_id_fn(data_batch)
        if not isinstance(row_ids, dict):
            raise TypeError("sparse_row_id_fn must return a dict of parameter name: row ids, got %s"
                            % type(row_ids).__name__)
        group = self._exec_group
        for name, ids in row_ids.items():
            if name not in group.param_names:
                raise ValueError("sparse_row_id_fn names %r, which is not a parameter of the module (%s)"
                                 % (name, group.param_names))
            index = group.param_names.index(name)
            arrays = group.param_arrays[index]
            if arrays[0].stype != "row_sparse":
                warnings.warn(UserWarning("%s.stype is not 'row_sparse'. No need to perform row_sparse_pull." % name))
                continue
            self._kvstore.row_sparse_pull(name, arrays, row_ids=ids, priority=-index)

    def update(self):
        """One optimizer step on every parameter from the gradients of the last backward."""
        self._check_ready("update")
        _require(self.optimizer_initialized, "update", "init_optimizer()")
        self._params_dirty = True
        group = self._exec_group
        if self._update_on_kvstore:
            _model._update_params_on_kvstore(group.param_arrays, group.grad_arrays, self._kvstore, group.param_names)
        else:
            _model._update_params(group.param_arrays, group.grad_arrays, updater=self._updater,
                                  num_device=len(self._context), kvstore=self._kvstore,
                                  param_names=group.param_names, param_index=self._param_index)

    def get_outputs(self, merge_multi_context=True):
        self._check_ready("get_outputs")
        return self._exec_group.get_outputs(merge_multi_context=merge_multi_context)

    def get_input_grads(self, merge_multi_context=True):
        self._check_ready("get_input_grads")
        return self._exec_group.get_input_grads(merge_multi_context=merge_multi_context)

    def get_states(self, merge_multi_context=True):
        self._check_ready("get_states")
        return self._exec_group.get_states(merge_multi_context=merge_multi_context)

    def set_states(self, states=None, value=None):
        self._check_ready("set_states")
        self._exec_group.set_states(states, value)

    def update_metric(self, eval_metric, labels, pre_sliced=False):
        self._exec_group.update_metric(eval_metric, labels, pre_sliced)

    def install_monitor(self, mon):
        """Reports every executor's values to a weft.monitor.Monitor."""
        _require(self.binded, "install_monitor", "bind()")
        self._exec_group.install_monitor(mon)
