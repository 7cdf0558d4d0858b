"""A chain of modules, as MXNet 1.x's `mx.mod.SequentialModule`: each module's outputs are the
next one's data; backward passes each module's input gradients to the one before."""
import copy
import logging

from .base_module import DEFAULT_INITIALIZER, BaseModule, _require

__all__ = ["SequentialModule"]


class SequentialModule(BaseModule):
    """Modules added with `add(module, take_labels=..., auto_wiring=...)`: take_labels gives
    the module the batch's labels; auto_wiring renames the previous outputs to the module's
    data names. Parameter names must differ across the modules."""

    META_TAKE_LABELS = "take_labels"
    META_AUTO_WIRING = "auto_wiring"

    def __init__(self, logger=logging):
        super(SequentialModule, self).__init__(logger=logger)
        self._modules = []
        self._metas = []
        self._label_shapes = None
        self._meta_keys = {self.META_TAKE_LABELS, self.META_AUTO_WIRING}

    def add(self, module, **kwargs):
        """Appends `module`; returns self, so that calls chain."""
        unknown = set(kwargs) - self._meta_keys
        if unknown:
            raise ValueError("SequentialModule.add: unknown meta %s (known: %s)" % (sorted(unknown),
                                                                                  sorted(self._meta_keys)))
        self._modules.append(module)
        self._metas.append(kwargs)
        self.binded = False
        self.params_initialized = False
        self.optimizer_initialized = False
        return self

    @property
    def data_names(self):
        return self._modules[0].data_names if self._modules else []

    @property
    def output_names(self):
        return self._modules[-1].output_names if self._modules else []

    @property
    def data_shapes(self):
        _require(self.binded, "data_shapes", "bind()")
        return self._modules[0].data_shapes

    @property
    def label_shapes(self):
        _require(self.binded, "label_shapes", "bind()")
        return self._label_shapes

    @property
    def output_shapes(self):
        _require(self.binded, "output_shapes", "bind()")
        return self._modules[-1].output_shapes

    def get_params(self):
        _require(self.binded and self.params_initialized, "get_params", "bind() and init_params()")
        arg_params, aux_params = {}, {}
        for module in self._modules:
            arg, aux = module.get_params()
            arg_params.update(arg)
            aux_params.update(aux)
        return arg_params, aux_params

    def init_params(self, initializer=DEFAULT_INITIALIZER, arg_params=None, aux_params=None, allow_missing=False,
                    force_init=False, allow_extra=False):
        if self.params_initialized and not force_init:
            return
        _require(self.binded, "init_params", "bind()")
        for module in self._modules:
            module.init_params(initializer=initializer, arg_params=arg_params, aux_params=aux_params,
                               allow_missing=allow_missing, force_init=force_init, allow_extra=allow_extra)
        seen_args, seen_aux = {}, {}
        for i, module in enumerate(self._modules):
            args, auxs = module.get_params()
            for seen, names in ((seen_args, args), (seen_aux, auxs)):
                for name in names:
                    if name in seen:
                        raise ValueError("SequentialModule: parameter %r of module %d (%s) is also module %d's"
                                         % (name, i, type(module).__name__, seen[name]))
                    seen[name] = i
        self.params_initialized = True

    def bind(self, data_shapes, label_shapes=None, for_training=True, inputs_need_grad=False, force_rebind=False,
             shared_module=None, grad_req="write"):
        if self.binded and not force_rebind:
            self.logger.warning("Already bound, ignoring bind()")
            return
        if inputs_need_grad and not for_training:
            raise ValueError("SequentialModule.bind: inputs_need_grad=True needs for_training=True")
        if shared_module is not None:
            raise ValueError("SequentialModule.bind: shared_module is not supported")
        if not self._modules:
            raise ValueError("SequentialModule.bind: no module was added")
        self.for_training = for_training
        self.inputs_need_grad = inputs_need_grad
        shapes = data_shapes
        any_labels = False
        for i, (module, meta) in enumerate(zip(self._modules, self._metas)):
            takes_labels = bool(meta.get(self.META_TAKE_LABELS, False))
            any_labels = any_labels or takes_labels
            if meta.get(self.META_AUTO_WIRING, False):
                if len(module.data_names) != len(shapes):
                    raise ValueError("SequentialModule: module %d takes %d data, the previous one gives %d"
                                     % (i, len(module.data_names), len(shapes)))
                shapes = [(name, s[1]) for name, s in zip(module.data_names, shapes)]
            # every module but the first passes gradients back to the one before it
            module.bind(data_shapes=shapes, label_shapes=label_shapes if takes_labels else None,
                        for_training=for_training, inputs_need_grad=bool(inputs_need_grad or (for_training and i > 0)),
                        force_rebind=force_rebind, shared_module=None, grad_req=grad_req)
            shapes = module.output_shapes
        self._label_shapes = label_shapes if any_labels else None
        self.binded = True

    def init_optimizer(self, kvstore="local", optimizer="sgd", optimizer_params=(("learning_rate", 0.01),),
                       force_init=False):
        _require(self.binded and self.params_initialized, "init_optimizer", "bind() and init_params()")
        if self.optimizer_initialized and not force_init:
            self.logger.warning("optimizer already initialized, ignoring.")
            return
        for module in self._modules:
            module.init_optimizer(kvstore=kvstore, optimizer=optimizer, optimizer_params=optimizer_params,
                                  force_init=force_init)
        self.optimizer_initialized = True

    def forward(self, data_batch, is_train=None):
        _require(self.binded and self.params_initialized, "forward", "bind() and init_params()")
        batch = copy.copy(data_batch)
        for i, module in enumerate(self._modules):
            module.forward(batch, is_train=is_train)
            if i + 1 == len(self._modules):
                break
            batch.data = module.get_outputs()
            if hasattr(batch, "provide_data"):
                names = [s[0] for s in module.output_shapes]
                batch.provide_data = [(n, x.shape) for n, x in zip(names, batch.data)]

    def backward(self, out_grads=None):
        _require(self.binded and self.params_initialized, "backward", "bind() and init_params()")
        for i in reversed(range(len(self._modules))):
            module = self._modules[i]
            module.backward(out_grads=out_grads)
            if i == 0:
                break
            out_grads = module.get_input_grads()

    def update(self):
        _require(self.binded and self.params_initialized and self.optimizer_initialized, "update",
                 "bind(), init_params() and init_optimizer()")
        for module in self._modules:
            module.update()

    def get_outputs(self, merge_multi_context=True):
        _require(self.binded and self.params_initialized, "get_outputs", "bind() and init_params()")
        return self._modules[-1].get_outputs(merge_multi_context=merge_multi_context)

    def get_input_grads(self, merge_multi_context=True):
        _require(self.binded and self.params_initialized and self.inputs_need_grad, "get_input_grads",
                 "bind(inputs_need_grad=True) and init_params()")
        return self._modules[0].get_input_grads(merge_multi_context=merge_multi_context)

    def update_metric(self, eval_metric, labels, pre_sliced=False):
        _require(self.binded and self.params_initialized, "update_metric", "bind() and init_params()")
        for module, meta in zip(self._modules, self._metas):
            if meta.get(self.META_TAKE_LABELS, False):
                module.update_metric(eval_metric, labels, pre_sliced)

    def install_monitor(self, mon):
        _require(self.binded, "install_monitor", "bind()")
        for module in self._modules:
            module.install_monitor(mon)
