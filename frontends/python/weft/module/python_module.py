"""Modules written in Python, as MXNet 1.x's `mx.mod.PythonModule` and `PythonLossModule`:
a module without parameters whose computation is Python code (e.g. a loss whose gradient is
a numpy function), to chain after symbolic modules in a SequentialModule."""
import logging

from .. import ndarray as nd
from .base_module import DEFAULT_INITIALIZER, BaseModule, _require

__all__ = ["PythonModule", "PythonLossModule"]


class PythonModule(BaseModule):
    """A parameterless module: get_params is empty and init_params, update and
    init_optimizer do nothing. Subclasses compute in forward/backward and give their output
    shapes by _compute_output_shapes()."""

    def __init__(self, data_names, label_names, output_names, logger=logging):
        super(PythonModule, self).__init__(logger=logger)
        self._data_names = list(data_names)
        self._label_names = list(label_names) if label_names is not None else None
        self._output_names = list(output_names)
        self._data_shapes = None
        self._label_shapes = None
        self._output_shapes = None

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
        return self._data_shapes

    @property
    def label_shapes(self):
        return self._label_shapes

    @property
    def output_shapes(self):
        return self._output_shapes

    def get_params(self):
        return {}, {}

    def init_params(self, initializer=DEFAULT_INITIALIZER, arg_params=None, aux_params=None, allow_missing=False,
                    force_init=False, allow_extra=False):
        self.params_initialized = True

    def update(self):
        pass

    def init_optimizer(self, kvstore="local", optimizer="sgd", optimizer_params=(("learning_rate", 0.01),),
                       force_init=False):
        self.optimizer_initialized = True

    def update_metric(self, eval_metric, labels, pre_sliced=False):
        if self._label_shapes is None:
            return
        if pre_sliced:
            raise RuntimeError("%s does not take labels sliced per device" % type(self).__name__)
        eval_metric.update(labels, self.get_outputs())

    def bind(self, data_shapes, label_shapes=None, for_training=True, inputs_need_grad=False, force_rebind=False,
             shared_module=None, grad_req="write"):
        if self.binded and not force_rebind:
            self.logger.warning("Already bound, ignoring bind()")
            return
        if grad_req != "write":
            raise ValueError("%s: only grad_req='write' is supported, got %r" % (type(self).__name__, grad_req))
        names = [d[0] for d in data_shapes]
        if names != self._data_names:
            raise ValueError("%s: bound with data %s, expected %s" % (type(self).__name__, names, self._data_names))
        if label_shapes is not None:
            labels = [d[0] for d in label_shapes]
            if self._label_names is None or labels != self._label_names:
                raise ValueError("%s: bound with labels %s, expected %s" % (type(self).__name__, labels,
                                                                            self._label_names))
        self.for_training = for_training
        self.inputs_need_grad = inputs_need_grad
        self._data_shapes = [(d[0], tuple(d[1])) for d in data_shapes]
        self._label_shapes = [(d[0], tuple(d[1])) for d in label_shapes] if label_shapes is not None else None
        self._output_shapes = self._compute_output_shapes()
        self.binded = True

    def _compute_output_shapes(self):
        raise NotImplementedError("%s must define _compute_output_shapes" % type(self).__name__)


class PythonLossModule(PythonModule):
    """A loss as a module: its output is its input (the scores, output `<name>_output`), and
    backward sets the scores' gradient to grad_func(scores, labels) (a numpy array or an
    NDArray), or to what a subclass's _backward_impl computes."""

    def __init__(self, name="pyloss", data_names=("data",), label_names=("softmax_label",), logger=logging,
                 grad_func=None):
        if len(data_names) != 1 or len(label_names) != 1:
            raise ValueError("PythonLossModule: takes one data and one label, got %s and %s"
                             % (list(data_names), list(label_names)))
        if grad_func is not None and not callable(grad_func):
            raise TypeError("PythonLossModule: grad_func must be callable")
        super(PythonLossModule, self).__init__(data_names, label_names, [name + "_output"], logger=logger)
        self._name = name
        self._scores = None
        self._labels = None
        self._scores_grad = None
        self._grad_func = grad_func

    def _compute_output_shapes(self):
        return [(self._name + "_output", self._data_shapes[0][1])]

    def forward(self, data_batch, is_train=None):
        _require(self.binded, "forward", "bind()")
        self._scores = data_batch.data[0]
        if is_train is None:
            is_train = self.for_training
        if is_train:
            self._labels = data_batch.label[0]

    def get_outputs(self, merge_multi_context=True):
        return [self._scores]

    def backward(self, out_grads=None):
        if out_grads is not None:
            raise ValueError("PythonLossModule: a loss takes no out_grads")
        _require(self.for_training, "backward", "bind(for_training=True)")
        self._backward_impl()

    def _backward_impl(self):
        if self._grad_func is None:
            raise NotImplementedError("PythonLossModule: give grad_func or override _backward_impl")
        grad = self._grad_func(self._scores, self._labels)
        self._scores_grad = grad if isinstance(grad, nd.NDArray) else nd.array(grad)

    def get_input_grads(self, merge_multi_context=True):
        return [self._scores_grad]

    def install_monitor(self, mon):
        raise NotImplementedError("PythonLossModule has no executor to monitor")
