"""The Gluon Trainer, as MXNet 1.x's `gluon.Trainer`: applies an optimizer to a set of
parameters, reducing their gradients over contexts (and workers) first."""

from .. import optimizer as opt
from ..base import atomic_write
from .parameter import Parameter, ParameterDict, arrays_version

__all__ = ["Trainer"]


class Trainer:
    """Updates `params` with `optimizer` (a name or an Optimizer) at each `step`.

    With several contexts the gradients are summed over them before the update (through a
    KVStore when `kvstore` names one, 'device' and 'local' included), so every context keeps
    identical parameters. A distributed kvstore ('dist_sync', ...) sums over workers too.
    """

    def __init__(self, params, optimizer, optimizer_params=None, kvstore="device", compression_params=None,
                 update_on_kvstore=None):
        if isinstance(params, (dict, ParameterDict)):
            params = list(params.values())
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
        self._kvstore_type = kvstore
        # Row-sparse weights live in the kvstore, which updates them (MXNet's rule).
        self._contains_sparse_weight = any(p._stype != "default" for p in self._params)
        if self._contains_sparse_weight and update_on_kvstore is False:
            raise ValueError("Trainer: update_on_kvstore=False is not possible with row_sparse weights: the kvstore "
                             "holds and updates them")
        self._update_on_kvstore = update_on_kvstore
        self._updates_on_kvstore = False
        self._distributed = False
        self._param2idx = {id(p): i for i, p in enumerate(self._params)}
        for p in self._params:
            p._set_trainer(self)
        self._kvstore = None
        self._kv_initialized = False
        self._scale = 1.0
        self._lists = None
        self._sparse_grads = False
        self._lists_version = None
        self._init_optimizer(optimizer, optimizer_params or {})

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
        self._updaters = {}

    def _contexts(self):
        ctxs = None
        for p in self._params:
            c = p.list_ctx()
            if ctxs is not None and c != ctxs:
                raise RuntimeError("Trainer: all parameters must live on the same contexts, but %s is on %s and "
                                   "others on %s" % (p.name, c, ctxs))
            ctxs = c
        return ctxs or []

    def _init_kvstore(self):
        self._kv_initialized = True
        ctxs = self._contexts()
        kv_type = self._kvstore_type
        if self._contains_sparse_weight and not isinstance(kv_type, str) and (kv_type is None or kv_type is False):
            raise TypeError("Trainer: row_sparse weights need a kvstore (a KVStore or its type), got %r" % (kv_type,))
        if kv_type is None or kv_type is False:
            return
        if not isinstance(kv_type, str):
            self._kvstore = kv_type
        elif len(ctxs) > 1 or "dist" in kv_type or self._contains_sparse_weight:
            from .. import kvstore as kvs
            self._kvstore = kvs.create(kv_type)
        if self._kvstore is None:
            return
        if self._compression_params:
            self._kvstore.set_gradient_compression(self._compression_params)
        for i, p in enumerate(self._params):
            # A row_sparse weight's first array holds every row until its first pull.
            if p.grad_req != "null" or p._stype != "default":
                self._kvstore.init(i, next(iter(p._data.values())))
        if self._contains_sparse_weight:
            self._distributed = "dist" in self._kvstore.type
            if self._distributed:
                # The servers keep the optimizer they are sent; the batch size can change at
                # every step, so the workers scale their gradients instead (rescaling comes
                # first in every update, before clipping: the result is the same).
                rescale, self._optimizer.rescale_grad = self._optimizer.rescale_grad, 1.0
                try:
                    self._kvstore.set_optimizer(self._optimizer)
                finally:
                    self._optimizer.rescale_grad = rescale
            else:
                self._kvstore.set_optimizer(self._optimizer)
            self._updates_on_kvstore = True

    def _reset_kvstore(self):
        """Starts over with a new kvstore at the next use (a sparse weight was set anew)."""
        self._kvstore = None
        self._kv_initialized = False
        self._updates_on_kvstore = False

    def _row_sparse_pull(self, parameter, out, row_id, full_idx=False):
        """Pulls the rows `row_id` of a row_sparse parameter's weight from the kvstore into
        `out` (one RowSparseNDArray, or a list of them); full_idx asks for every row."""
        if not self._kv_initialized:
            self._init_kvstore()
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
        """One update: gradients scaled by 1/batch_size, reduced, then applied."""
        self._optimizer.rescale_grad = self._scale / batch_size
        self.allreduce_grads()
        self._update(ignore_stale_grad)

    def _step_lists(self):
        """Per context: (context, indices, gradients, weights) of the parameters that have
        gradients. Built again only when some Parameter's arrays were replaced (the arrays
        version moved), since walking every parameter at each step costs more than a small
        network's update."""
        version = arrays_version()
        # Row-sparse gradients are new arrays after every backward: no caching then.
        if self._lists is None or self._lists_version != version or self._sparse_grads:
            trained = [(i, p) for i, p in enumerate(self._params) if p.grad_req != "null"]
            self._sparse_grads = any(p._grad_stype != "default" for _, p in trained)
            per_ctx = [(i, p.list_grad(), list(p._data.values())) for i, p in trained]
            self._lists = [(ctx, [i for i, _, _ in per_ctx], [g[k] for _, g, _ in per_ctx],
                            [w[k] for _, _, w in per_ctx]) for k, ctx in enumerate(self._contexts())]
            self._reduce = [(i, g) for i, g, _ in per_ctx]
            self._lists_version = version
        return self._lists

    def allreduce_grads(self):
        """Sums each parameter's gradients over contexts (and workers), leaving the sum on every context."""
        if not self._kv_initialized:
            self._init_kvstore()
        lists = self._step_lists()
        if self._updates_on_kvstore:
            # The kvstore sums and applies the gradients; dense weights come back in _update,
            # row_sparse ones when row_sparse_data pulls them.
            scale = self._optimizer.rescale_grad
            for i, grads in self._reduce:
                if self._distributed and scale != 1.0:
                    grads = [g * scale for g in grads]
                self._kvstore.push(i, grads, priority=-i)
            return
        if self._kvstore is None and len(lists) <= 1:
            return
        for i, grads in self._reduce:
            if self._kvstore is not None:
                self._kvstore.push(i, grads)
                self._kvstore.pull(i, grads)
            elif len(grads) > 1:
                total = grads[0].copy()
                for g in grads[1:]:
                    total += g.as_in_context(total.context)
                for g in grads:
                    total.copyto(g)

    def update(self, batch_size, ignore_stale_grad=False):
        """Applies the optimizer to already reduced gradients (after allreduce_grads)."""
        if self._contains_sparse_weight:
            raise ValueError("Trainer.update: with row_sparse weights the kvstore applies the optimizer as the "
                             "gradients are pushed; call step() instead")
        self._optimizer.rescale_grad = self._scale / batch_size
        self._update(ignore_stale_grad)

    def _update(self, ignore_stale_grad):
        # contrib.amp.init_trainer's loss scaler: a step whose gradients overflowed is skipped.
        scaler = getattr(self, "_amp_loss_scaler", None)
        if scaler is not None and scaler.has_overflow(self._params):
            return
        # The engine runs behind Python; a loop that never reads a value is held back by the
        # engine's own bound on what pending operations write (WEFT_ENGINE_MAX_PENDING_BYTES,
        # docs/design/engine.md), so the steps need no throttle of their own.
        if self._updates_on_kvstore:
            for i, p in enumerate(self._params):
                if p.grad_req != "null" and p._stype == "default":
                    self._kvstore.pull(i, list(p._data.values()), priority=-i)
            return
        for ctx, indices, grads, weights in self._step_lists():
            updater = self._updaters.get(ctx)
            if updater is None:
                updater = self._updaters[ctx] = opt.get_updater(self._optimizer)
            if indices:
                updater(indices, grads, weights)

    def save_states(self, fname):
        """Writes the optimizer states (with the optimizer) to `fname`."""
        if not self._updaters:
            self._updaters[self._contexts()[0]] = opt.get_updater(self._optimizer)
        atomic_write(fname, next(iter(self._updaters.values())).get_states(dump_optimizer=True))

    def load_states(self, fname):
        """Restores what save_states wrote; every context gets the states."""
        with open(fname, "rb") as f:
            states = f.read()
        ctxs = self._contexts()
        for ctx in ctxs:
            updater = self._updaters.get(ctx) or opt.get_updater(self._optimizer)
            updater.set_states(states)
            self._updaters[ctx] = updater
        self._optimizer = next(iter(self._updaters.values())).optimizer
        self._optimizer.param_dict = {i: p for i, p in enumerate(self._params)}
        for updater in self._updaters.values():
            updater.optimizer = self._optimizer
