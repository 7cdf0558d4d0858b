"""The Gluon Trainer, as MXNet 1.x's `gluon.Trainer`: applies an optimizer to a set of
parameters, reducing their gradients over contexts (and workers) first."""

import numpy as np

from .. import optimizer as opt
from ..base import atomic_write
from .parameter import Parameter, ParameterDict, arrays_version

__all__ = ["Trainer"]


class Trainer:
    """Updates `params` with `optimizer` (a name or an Optimizer) at each `step`.

    With several contexts the gradients are summed over them before the update, through a
    KVStore when `kvstore` names one ('device', 'local', a dist store, a KVStore object or a
    store registered with KVStoreBase.register), so every context keeps identical parameters.
    As in MXNet 1.9, the store also runs the optimizer (update_on_kvstore) unless
    update_on_kvstore=False, MXNET_UPDATE_ON_KVSTORE=0, or the store cannot (is_capable);
    row_sparse weights are always updated on the store. Until the first step (or
    _init_kvstore()) `_kvstore` and `_update_on_kvstore` are None; with no store needed (one
    context, not distributed) they stay None and one Updater per context (`_updaters`, a
    list) applies the optimizer.
    """

    def __init__(self, params, optimizer, optimizer_params=None, kvstore="device", compression_params=None,
                 update_on_kvstore=None):
        if isinstance(params, (dict, ParameterDict)):
            # Sorted by name, as MXNet: a parameter's index (its optimizer state's key in
            # save_states files) does not depend on the order the block made them.
            params = [params[k] for k in sorted(params.keys())]
        if not isinstance(params, (list, tuple)):
            raise ValueError("Trainer: params must be a ParameterDict, a dict or a list of Parameters, got %s"
                             % type(params).__name__)
        self._params = []
        seen = set()
        for p in params:
            if not isinstance(p, Parameter):
                raise ValueError("Trainer: params must hold Parameters, got %s" % type(p).__name__)
            if id(p) not in seen:
                seen.add(id(p))
                self._params.append(p)
        self._compression_params = compression_params
        self._kvstore_params = {"kvstore": kvstore, "update_on_kvstore": update_on_kvstore}
        self._contains_sparse_weight = any(p._stype != "default" for p in self._params)
        self._contains_sparse_grad = any(p._grad_stype != "default" for p in self._params)
        self._param2idx = {id(p): i for i, p in enumerate(self._params)}
        for p in self._params:
            p._set_trainer(self)
        self._scale = 1.0
        self._lists = None
        self._sparse_grads = False
        self._lists_version = None
        self._sparse_sums = {}
        self._init_optimizer(optimizer, optimizer_params or {})
        self._reset_kvstore()

    def _init_optimizer(self, optimizer, optimizer_params):
        param_dict = {i: p for i, p in enumerate(self._params)}
        if isinstance(optimizer, opt.Optimizer):
            if optimizer_params:
                raise ValueError("Trainer: optimizer_params must be empty when optimizer is an Optimizer instance")
            self._optimizer = optimizer
            self._optimizer.param_dict = param_dict
        else:
            self._optimizer = opt.create(optimizer, param_dict=param_dict, **optimizer_params)
        self._scale = self._optimizer.rescale_grad
        self._updaters = [opt.get_updater(self._optimizer) for _ in self._contexts()]

    def _contexts(self):
        ctxs = None
        for p in self._params:
            c = p.list_ctx()
            if ctxs is not None and c != ctxs:
                raise RuntimeError("Trainer: all parameters must live on the same contexts, but %s is on %s and "
                                   "others on %s" % (p.name, c, ctxs))
            ctxs = c
        return ctxs or []

    def _reset_kvstore(self):
        """Starts over with a new kvstore at the next use (new weights were set while the
        store held and updated the old ones)."""
        self._kvstore = None
        self._kv_initialized = False
        self._update_on_kvstore = None
        self._distributed = None
        self._params_to_init = list(self._params)

    def _init_kvstore(self):
        """Chooses the store and whether it runs the optimizer (MXNet 1.9's rules)."""
        from ..kvstore.base import KVStoreBase  # pylint: disable=import-outside-toplevel
        from ..model import _update_on_kvstore_default  # pylint: disable=import-outside-toplevel
        kv_arg = self._kvstore_params["kvstore"]
        wanted = self._kvstore_params["update_on_kvstore"]
        if self._contains_sparse_weight:
            # The store holds the rows of a row_sparse weight and updates them.
            if wanted is False:
                raise ValueError("Trainer: update_on_kvstore=False is not possible with row_sparse weights: the "
                                 "kvstore holds and updates them")
            if kv_arg is None or kv_arg is False:
                raise TypeError("Trainer: row_sparse weights need a kvstore (a KVStore or its type), got %r"
                                % (kv_arg,))
            kv = self._create_store(kv_arg)
            update_on_kvstore = True
        else:
            if kv_arg is None or kv_arg is False:
                kv = None
            elif isinstance(kv_arg, str):
                # One context on one machine needs no store.
                kv = self._create_store(kv_arg) if len(self._contexts()) > 1 or "dist" in kv_arg else None
            else:
                kv = kv_arg
            update_on_kvstore = _update_on_kvstore_default()
            if kv is not None and kv_arg == "local":
                # Very large weights are updated where they live rather than copied to the CPU.
                if max((int(np.prod(p.shape)) for p in self._params), default=0) > 1024 * 1024 * 16:
                    update_on_kvstore = False
            distributed = kv is not None and "dist" in kv.type
            if self._contains_sparse_grad:
                # Dense weights with row_sparse gradients: on one machine the summed sparse
                # gradients are cheaper to apply on the devices.
                if wanted is False and distributed:
                    raise ValueError("Trainer: update_on_kvstore=False is not possible on a dist kvstore with "
                                     "row_sparse gradients")
                update_on_kvstore = distributed if wanted is None else wanted
            else:
                if distributed and "async" in kv.type:
                    if wanted is False:
                        raise ValueError("Trainer: update_on_kvstore=False is not possible with %s: asynchronous "
                                         "stores apply each worker's gradients as they come" % kv.type)
                    update_on_kvstore = True
                if wanted is not None:
                    update_on_kvstore = wanted
            if kv is not None and update_on_kvstore and not kv.is_capable(KVStoreBase.OPTIMIZER):
                if wanted:
                    raise ValueError("Trainer: update_on_kvstore=True is not possible with %s, which cannot run an "
                                     "optimizer; set update_on_kvstore=False" % type(kv).__name__)
                update_on_kvstore = False
        self._distributed = kv is not None and "dist" in kv.type
        if kv is not None:
            if self._compression_params:
                kv.set_gradient_compression(self._compression_params)
            if update_on_kvstore:
                if self._distributed:
                    # The servers keep the optimizer they are sent; the batch size can change
                    # at every step, so the workers scale their gradients instead (rescaling
                    # comes first in every update, before clipping: the result is the same).
                    rescale, self._optimizer.rescale_grad = self._optimizer.rescale_grad, 1.0
                    try:
                        kv.set_optimizer(self._optimizer)
                    finally:
                        self._optimizer.rescale_grad = rescale
                else:
                    kv.set_optimizer(self._optimizer)
            self._update_on_kvstore = bool(update_on_kvstore)
        else:
            self._update_on_kvstore = None
        self._kvstore = kv
        self._kv_initialized = True

    @staticmethod
    def _create_store(kv_arg):
        if isinstance(kv_arg, str):
            from .. import kvstore as kvs
            return kvs.create(kv_arg)
        from ..kvstore.base import KVStoreBase  # pylint: disable=import-outside-toplevel
        if not isinstance(kv_arg, KVStoreBase):
            raise TypeError("Trainer: kvstore must be a KVStore, a str or None, got %s" % type(kv_arg).__name__)
        return kv_arg

    def _init_params(self):
        """Puts the parameters that have values into the store; every context then starts
        from the store's value. Parameters still waiting for their shapes wait here too."""
        waiting = []
        if self._kvstore is not None:
            for p in self._params_to_init:
                if p._data is None:
                    waiting.append(p)
                    continue
                idx = self._param2idx[id(p)]
                arrays = list(p._data.values())
                if p._stype != "default":
                    # A row_sparse weight's first array holds every row until its first pull.
                    self._kvstore.init(idx, arrays[0])
                else:
                    self._kvstore.broadcast(idx, arrays[0], arrays)
        self._params_to_init = waiting

    def _ready(self):
        if not self._kv_initialized:
            self._init_kvstore()
        if self._params_to_init:
            self._init_params()

    def _row_sparse_pull(self, parameter, out, row_id, full_idx=False):
        """Pulls the rows `row_id` of a row_sparse parameter's weight from the kvstore into
        `out` (one RowSparseNDArray, or a list of them); full_idx asks for every row."""
        self._ready()
        idx = self._param2idx[id(parameter)]
        self._kvstore.row_sparse_pull(idx, out=out, row_ids=row_id, priority=-idx)

    @property
    def learning_rate(self):
        return self._optimizer.learning_rate

    @property
    def optimizer(self):
        return self._optimizer

    def set_learning_rate(self, lr):
        self._optimizer.set_learning_rate(lr)

    def step(self, batch_size, ignore_stale_grad=False):
        """One update: gradients scaled by 1/batch_size, reduced, then applied.

        A parameter whose gradient no backward wrote since the last step raises UserWarning
        naming it (a part of the model went unused), unless ignore_stale_grad, which skips
        those parameters instead."""
        self._optimizer.rescale_grad = self._scale / batch_size
        self._ready()
        if not ignore_stale_grad:
            self._check_fresh()
        self._allreduce_grads()
        self._update(ignore_stale_grad)

    def _step_lists(self):
        """(index, parameter, weights, gradients) of the parameters that have gradients.
        Built again only when some Parameter's arrays were replaced (the arrays version
        moved), since walking every parameter at each step costs more than a small network's
        update."""
        version = arrays_version()
        # Row-sparse gradients are new arrays after every backward: no caching then.
        if self._lists is None or self._lists_version != version or self._sparse_grads:
            trained = [(i, p) for i, p in enumerate(self._params) if p.grad_req != "null"]
            self._sparse_grads = any(p._grad_stype != "default" for _, p in trained)
            self._lists = [(i, p, list(p._data.values()), p.list_grad()) for i, p in trained]
            self._lists_version = version
        return self._lists

    def _check_fresh(self):
        for _, p, weights, _ in self._step_lists():
            for w in weights:
                if not w._fresh_grad:
                    raise UserWarning(
                        "Trainer: the gradient of Parameter '%s' on %s was not written by a backward since the last "
                        "step, so the model used only some of its parameters in this iteration. If that is "
                        "intended, call step(..., ignore_stale_grad=True) to skip the parameters with stale "
                        "gradients." % (p.name, w.context))

    def allreduce_grads(self):
        """Sums each parameter's gradients over contexts (and workers), leaving the sum on every context."""
        self._ready()
        if self._kvstore is not None and self._update_on_kvstore:
            raise AssertionError("Trainer.allreduce_grads: the kvstore updates the parameters "
                                 "(update_on_kvstore); create the Trainer with update_on_kvstore=False "
                                 "to reduce and update separately")
        self._allreduce_grads()

    def _allreduce_grads(self):
        kv = self._kvstore
        self._sparse_sums = {}
        if kv is None:
            return
        lists = self._step_lists()
        scale = self._optimizer.rescale_grad
        for i, p, weights, grads in lists:
            if self._update_on_kvstore:
                if self._distributed and scale != 1.0:
                    grads = [g * scale for g in grads]
                if p._stype != "default":
                    # Row-sparse weights come back when row_sparse_data pulls them.
                    kv.push(i, grads, priority=-i)
                elif grads[0].stype != "default":
                    kv.push(i, grads, priority=-i)
                    kv.pull(i, weights, priority=-i)
                else:
                    kv.pushpull(i, grads, out=weights, priority=-i)
            elif grads[0].stype != "default":
                # The sum stays row_sparse (the update then touches only its rows). A sparse
                # gradient cannot be overwritten in place, so the sum, one copy per context,
                # is what _update applies.
                if len(grads) > 1:
                    total = grads[0].copyto(grads[0].context)
                    for g in grads[1:]:
                        total = total + g.copyto(total.context)
                    self._sparse_sums[i] = [total.copyto(g.context) for g in grads]
            else:
                kv.pushpull(i, grads, priority=-i)

    def update(self, batch_size, ignore_stale_grad=False):
        """Applies the optimizer to already reduced gradients (after allreduce_grads)."""
        self._ready()
        if self._kvstore is not None and self._update_on_kvstore:
            raise AssertionError("Trainer.update: the kvstore updates the parameters (update_on_kvstore); "
                                 "create the Trainer with update_on_kvstore=False to reduce and update "
                                 "separately")
        self._optimizer.rescale_grad = self._scale / batch_size
        if not ignore_stale_grad:
            self._check_fresh()
        self._update(ignore_stale_grad)

    def _update(self, ignore_stale_grad):
        # contrib.amp.init_trainer's loss scaler: a step whose gradients overflowed is skipped.
        scaler = getattr(self, "_amp_loss_scaler", None)
        if scaler is not None and scaler.has_overflow(self._params):
            return
        # The engine runs behind Python; a loop that never reads a value is held back by the
        # engine's own bound on what pending operations write (WEFT_ENGINE_MAX_PENDING_BYTES,
        # docs/design/engine.md), so the steps need no throttle of their own.
        lists = self._step_lists()
        if self._kvstore is not None and self._update_on_kvstore:
            for _, _, weights, _ in lists:
                for w in weights:
                    w._fresh_grad = False
            return
        ctxs = self._contexts()
        while len(self._updaters) < len(ctxs):
            self._updaters.append(opt.get_updater(self._optimizer))
        for k, updater in enumerate(self._updaters[:len(ctxs)]):
            indices, grads, weights = [], [], []
            for i, _, ws, gs in lists:
                w = ws[k]
                if ignore_stale_grad and not w._fresh_grad:
                    continue
                w._fresh_grad = False
                indices.append(i)
                grads.append(self._sparse_sums[i][k] if i in self._sparse_sums else gs[k])
                weights.append(w)
            if indices:
                updater(indices, grads, weights)
        self._sparse_sums = {}

    def save_states(self, fname):
        """Writes the optimizer states (with the optimizer) to `fname`."""
        self._ready()
        if self._update_on_kvstore:
            if self._params_to_init:
                raise RuntimeError("Trainer.save_states: some parameters are not in the kvstore yet (their shapes "
                                   "are unknown until a forward)")
            self._kvstore.save_optimizer_states(fname, dump_optimizer=True)
            return
        if not self._updaters:
            self._updaters.append(opt.get_updater(self._optimizer))
        atomic_write(fname, self._updaters[0].get_states(dump_optimizer=True))

    def load_states(self, fname):
        """Restores what save_states wrote; every context gets the states."""
        self._ready()
        if self._update_on_kvstore:
            self._kvstore.load_optimizer_states(fname)
            self._optimizer = self._kvstore._updater.optimizer
        else:
            with open(fname, "rb") as f:
                states = f.read()
            while len(self._updaters) < max(1, len(self._contexts())):
                self._updaters.append(opt.get_updater(self._optimizer))
            for updater in self._updaters:
                updater.set_states(states)
                updater.optimizer = self._updaters[0].optimizer
            self._optimizer = self._updaters[0].optimizer
        self._optimizer.param_dict = {i: p for i, p in enumerate(self._params)}
