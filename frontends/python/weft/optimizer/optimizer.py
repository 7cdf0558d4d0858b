"""Optimizers with MXNet 1.x's API: each one turns (weight, grad, state) into a new
weight through one fused update operator per parameter (weft.nd.sgd_mom_update,
adam_update, ...), which writes the weight and the states in place.

    opt = weft.optimizer.create("sgd", learning_rate=0.1, momentum=0.9, wd=1e-4)
    updater = weft.optimizer.get_updater(opt)
    updater(index, grad, weight)          # creates the state on first use

Learning rate and weight decay of a parameter are the optimizer's times the parameter's
multipliers, found (as MXNet does) from a Gluon ``param_dict`` entry, else ``lr_mult`` /
``wd_mult`` by index, else by the name ``idx2name`` gives the index. Names in ``idx2name``
that end neither in ``_weight`` nor ``_gamma`` (biases, BatchNorm's beta, ...) get
wd_mult 0 unless a multiplier is given; ``__lr_mult__`` / ``__wd_mult__`` attributes of a
symbol passed as ``sym`` are read too.
"""
import math
import os
import pickle
import warnings

import numpy

from .. import ndarray as nd
from ..ndarray import NDArray
from .. import registry as _registry

__all__ = ["Optimizer", "SGD", "NAG", "Adam", "AdamW", "RMSProp", "AdaGrad", "AdaDelta", "Ftrl", "FTRL", "FTML", "Adamax", "Nadam", "Signum",
           "LAMB", "LARS", "LBSGD", "DCASGD", "SGLD", "ccSGD", "Test", "Updater", "get_updater", "create", "register",
           "NDabs"]


class Optimizer(object):
    """Base class of the optimizers.

    Parameters
    ----------
    rescale_grad : float
        Multiplies every gradient before the update (usually 1/batch_size).
    param_idx2name : dict of int to str
        Parameter names by index, for the name-based multipliers.
    wd : float
        Weight decay (L2 penalty coefficient).
    clip_gradient : float or None
        Clips the rescaled gradient to [-clip_gradient, clip_gradient].
    learning_rate : float or None
        The learning rate; 0.01 when neither it nor a scheduler is given.
    lr_scheduler : LRScheduler or None
        Makes the learning rate a function of the number of updates.
    sym : Symbol or None
        A symbol whose ``__lr_mult__`` / ``__wd_mult__`` argument attributes are read.
    begin_num_update : int
        The update count to start from (when resuming).
    multi_precision : bool
        Keep a float32 master copy of float16 weights and update that.
    param_dict : dict
        Gluon Parameters by index, whose ``lr_mult`` / ``wd_mult`` take precedence.
    """

    opt_registry = {}

    def __init__(self, rescale_grad=1.0, param_idx2name=None, wd=0.0, clip_gradient=None, learning_rate=None,
                 lr_scheduler=None, sym=None, begin_num_update=0, multi_precision=False, param_dict=None):
        self.rescale_grad = rescale_grad
        self.lr_scheduler = lr_scheduler
        if lr_scheduler is None and learning_rate is None:
            learning_rate = 0.01
        self.lr = learning_rate
        if lr_scheduler is not None and learning_rate is not None and lr_scheduler.base_lr != learning_rate:
            warnings.warn("learning_rate %g of the optimizer replaces base_lr %g of its lr_scheduler"
                          % (learning_rate, lr_scheduler.base_lr))
            # Also where the schedulers keep copies of base_lr (the warm-up target, the
            # start of Poly and Cosine decays), so that the given rate takes effect.
            lr_scheduler.base_lr = learning_rate
            for attr in ("warmup_final_lr", "base_lr_orig"):
                if hasattr(lr_scheduler, attr):
                    setattr(lr_scheduler, attr, learning_rate)
        self.wd = wd
        self.lr_mult = {}
        self.wd_mult = {}
        self.begin_num_update = begin_num_update
        self.num_update = begin_num_update
        # Update counts per index, kept per device so that data-parallel copies of one
        # parameter updated on several devices count one step each.
        self._all_index_update_counts = {0: {}}
        self._index_update_count = self._all_index_update_counts[0]
        self.clip_gradient = clip_gradient
        self.multi_precision = multi_precision
        # How many parameters an Updater hands to one update call (0: one at a time).
        self.aggregate_num = 0
        if param_idx2name is None:
            param_idx2name = {}
        if not isinstance(param_idx2name, dict):
            raise TypeError("param_idx2name must be a dict of parameter index to name, got %s"
                            % type(param_idx2name).__name__)
        self.idx2name = param_idx2name.copy()
        self.sym_info = (sym.attr_dict(), sym.list_arguments()) if sym is not None else ()
        self.param_dict = param_dict if param_dict else {}
        self.set_lr_mult({})
        self.set_wd_mult({})

    # ------------------------------------------------------------ registry
    @staticmethod
    def register(klass):
        """Class decorator: makes ``klass`` creatable by its lower-cased name."""
        if not isinstance(klass, type):
            raise TypeError("register expects an Optimizer class, got %r" % (klass,))
        name = klass.__name__.lower()
        if name in Optimizer.opt_registry and Optimizer.opt_registry[name] is not klass:
            old = Optimizer.opt_registry[name]
            warnings.warn("optimizer %s.%s replaces %s.%s under the name '%s'"
                          % (klass.__module__, klass.__name__, old.__module__, old.__name__, name))
        Optimizer.opt_registry[name] = klass
        return klass

    @staticmethod
    def create_optimizer(name, **kwargs):
        """An instance of the optimizer registered as ``name`` (case-insensitive)."""
        klass = Optimizer.opt_registry.get(str(name).lower())
        if klass is None:
            raise ValueError("Cannot find optimizer '%s'; registered optimizers: %s"
                             % (name, ", ".join(sorted(Optimizer.opt_registry))))
        return klass(**kwargs)

    # ------------------------------------------------------------ state
    @property
    def learning_rate(self):
        """The current learning rate (the scheduler's at the current update count)."""
        if self.lr_scheduler is not None:
            return self.lr_scheduler(self.num_update)
        return self.lr

    def set_learning_rate(self, lr):
        """Sets the learning rate; not allowed when a scheduler sets it."""
        if self.lr_scheduler is not None:
            raise UserWarning("the optimizer's lr_scheduler sets the learning rate; set_learning_rate can change it "
                              "only for optimizers without one")
        self.lr = lr

    def create_state(self, index, weight):
        """The state (NDArrays, tuples of them, or None) the update of ``weight`` needs."""
        return None

    def create_state_multi_precision(self, index, weight):
        """create_state, plus a float32 master copy of float16 weights when
        multi_precision is on: then the state is (master copy, state of the copy)."""
        if self.multi_precision and weight.dtype == numpy.float16:
            master = weight.astype(numpy.float32)
            return (master, self.create_state(index, master))
        if weight.dtype == numpy.float16 and not self.multi_precision:
            warnings.warn("Accumulating float16 weights in float16 can lose precision or stall training; consider "
                          "multi_precision=True")
        return self.create_state(index, weight)

    def update(self, index, weight, grad, state):
        """Updates ``weight`` in place from ``grad`` and ``state``."""
        raise NotImplementedError("%s must define update()" % type(self).__name__)

    def update_multi_precision(self, index, weight, grad, state):
        """update(), through the float32 master copy for float16 weights when
        multi_precision is on."""
        if self.multi_precision and weight.dtype == numpy.float16:
            master, inner = state
            self.update(index, master, grad.astype(numpy.float32), inner)
            nd.Cast(master, dtype=weight.dtype, out=weight)
        else:
            self.update(index, weight, grad, state)

    # ------------------------------------------------------------ multipliers
    def set_lr_scale(self, args_lrscale):  # pylint: disable=unused-argument
        """MXNet 1.x's removed name for set_lr_mult: calling it raises DeprecationWarning, as
        MXNet's does."""
        raise DeprecationWarning("Optimizer.set_lr_scale is deprecated; use set_lr_mult")

    def set_lr_mult(self, args_lr_mult):
        """Sets per-parameter learning-rate multipliers (dict of name or index to float);
        ``__lr_mult__`` attributes of the optimizer's symbol come first, the dict after."""
        self.lr_mult = {}
        if self.sym_info:
            attrs, arg_names = self.sym_info
            for n in arg_names:
                if "__lr_mult__" in attrs.get(n, {}):
                    self.lr_mult[n] = float(attrs[n]["__lr_mult__"])
        self.lr_mult.update(args_lr_mult)

    def set_wd_mult(self, args_wd_mult):
        """Sets per-parameter weight-decay multipliers (dict of name or index to float).
        Parameters named in idx2name that end neither in '_weight' nor '_gamma' get 0 by
        default; ``__wd_mult__`` symbol attributes and then the dict override that."""
        self.wd_mult = {}
        for n in self.idx2name.values():
            if not (n.endswith("_weight") or n.endswith("_gamma")):
                self.wd_mult[n] = 0.0
        if self.sym_info:
            attrs, arg_names = self.sym_info
            for n in arg_names:
                if "__wd_mult__" in attrs.get(n, {}):
                    self.wd_mult[n] = float(attrs[n]["__wd_mult__"])
        self.wd_mult.update(args_wd_mult)

    def _set_current_context(self, device_id):
        self._index_update_count = self._all_index_update_counts.setdefault(device_id, {})

    def _update_count(self, index):
        """Counts one more update of each index (an index or a list of them)."""
        for idx in index if isinstance(index, (list, tuple)) else [index]:
            count = self._index_update_count.get(idx, self.begin_num_update) + 1
            self._index_update_count[idx] = count
            self.num_update = max(count, self.num_update)

    def _mult(self, index, table, attr):
        if index in self.param_dict:
            return getattr(self.param_dict[index], attr)
        if index in table:
            return table[index]
        if index in self.idx2name:
            return table.get(self.idx2name[index], 1.0)
        return 1.0

    def _get_lrs(self, indices):
        lr = self.lr_scheduler(self.num_update) if self.lr_scheduler is not None else self.lr
        return [lr * self._mult(i, self.lr_mult, "lr_mult") for i in indices]

    def _get_lr(self, index):
        return self._get_lrs([index])[0]

    def _get_wds(self, indices):
        return [self.wd * self._mult(i, self.wd_mult, "wd_mult") for i in indices]

    def _get_wd(self, index):
        return self._get_wds([index])[0]

    def _common_kwargs(self):
        # MXNet passes clip_gradient only when it is set and non-zero.
        kwargs = {"rescale_grad": self.rescale_grad}
        if self.clip_gradient:
            kwargs["clip_gradient"] = self.clip_gradient
        return kwargs

    def __getstate__(self):
        # Gluon Parameters are not saved with the optimizer: the Trainer sets them again.
        state = self.__dict__.copy()
        state["param_dict"] = {}
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)


# mx.registry sees the same table.
_registry._REGISTRY[Optimizer] = Optimizer.opt_registry
# MXNet's optimizer module exports nd.abs under this name (it is in its __all__).
NDabs = nd.abs
register = Optimizer.register
create = Optimizer.create_optimizer


def _zeros_like(weight):
    return nd.zeros(weight.shape, weight.context, dtype=weight.dtype)


def _check_pair(index, weight, grad):
    if not isinstance(weight, NDArray) or not isinstance(grad, NDArray):
        raise TypeError("parameter %r: weight and grad must be NDArrays, got %s and %s"
                        % (index, type(weight).__name__, type(grad).__name__))
    if weight.shape != grad.shape:
        raise ValueError("parameter %r: the gradient has shape %s but the weight has shape %s"
                         % (index, grad.shape, weight.shape))


@register
class SGD(Optimizer):
    """Stochastic gradient descent with optional momentum (sgd_update / sgd_mom_update):
    mom = momentum*mom - lr*(rescale_grad*grad + wd*weight); weight += mom.

    When an Updater hands it several parameters at once (``aggregate_num`` of them, from
    the environment variable MXNET_OPTIMIZER_AGGREGATION_SIZE, default 4), it updates
    them with one multi_sgd_update / multi_sgd_mom_update call. With multi_precision,
    float16 weights are updated through float32 master copies (mp_sgd_*).
    """

    def __init__(self, momentum=0.0, lazy_update=True, **kwargs):
        super(SGD, self).__init__(**kwargs)
        self.momentum = momentum
        self.lazy_update = lazy_update
        self.aggregate_num = int(os.getenv("MXNET_OPTIMIZER_AGGREGATION_SIZE", "4"))

    def create_state(self, index, weight):
        return _zeros_like(weight) if self.momentum != 0.0 else None

    def create_state_multi_precision(self, index, weight):
        if self.multi_precision and weight.dtype == numpy.float16:
            master = weight.astype(numpy.float32)
            return (self.create_state(index, master), master)
        return super(SGD, self).create_state_multi_precision(index, weight)

    def _update_impl(self, indices, weights, grads, states, multi_precision):
        if not isinstance(indices, (list, tuple)):
            indices, weights, grads, states = [indices], [weights], [grads], [states]
        for i, w, g in zip(indices, weights, grads):
            _check_pair(i, w, g)
        self._update_count(indices)
        lrs = self._get_lrs(indices)
        wds = self._get_wds(indices)
        kwargs = self._common_kwargs()
        if self.momentum > 0:
            kwargs["momentum"] = self.momentum
        n = len(weights)
        if n > 1 and any(g.stype != "default" for g in grads):
            # Row-sparse gradients take the single-weight updates (lazy: only their rows).
            for k in range(n):
                self._update_one(weights[k], grads[k], states[k], lrs[k], wds[k], kwargs, multi_precision)
            return
        if n > 1:
            # Formatted here once: the generic parameter formatting costs more than the
            # update itself for small parameters.
            lrs = "(%s)" % ",".join(map(repr, map(float, lrs)))
            wds = "(%s)" % ",".join(map(repr, map(float, wds)))
            if multi_precision:
                if self.momentum > 0:
                    args = [x for w, g, (mom, w32) in zip(weights, grads, states) for x in (w, g, mom, w32)]
                    nd.multi_mp_sgd_mom_update(*args, out=list(weights), num_weights=n, lrs=lrs, wds=wds, **kwargs)
                else:
                    args = [x for w, g, (_, w32) in zip(weights, grads, states) for x in (w, g, w32)]
                    nd.multi_mp_sgd_update(*args, out=list(weights), num_weights=n, lrs=lrs, wds=wds, **kwargs)
            elif self.momentum > 0:
                args = [x for w, g, mom in zip(weights, grads, states) for x in (w, g, mom)]
                nd.multi_sgd_mom_update(*args, out=list(weights), num_weights=n, lrs=lrs, wds=wds, **kwargs)
            else:
                args = [x for w, g in zip(weights, grads) for x in (w, g)]
                nd.multi_sgd_update(*args, out=list(weights), num_weights=n, lrs=lrs, wds=wds, **kwargs)
            return
        self._update_one(weights[0], grads[0], states[0], lrs[0], wds[0], kwargs, multi_precision)

    def _update_one(self, w, g, state, lr, wd, kwargs, multi_precision):
        if multi_precision:
            mom, w32 = state
            if mom is not None:
                nd.mp_sgd_mom_update(w, g, mom, w32, out=w, lr=lr, wd=wd, **kwargs)
            else:
                nd.mp_sgd_update(w, g, w32, out=w, lr=lr, wd=wd, **kwargs)
        elif state is not None:
            nd.sgd_mom_update(w, g, state, out=w, lr=lr, wd=wd, lazy_update=self.lazy_update, **kwargs)
        else:
            nd.sgd_update(w, g, out=w, lr=lr, wd=wd, lazy_update=self.lazy_update, **kwargs)

    def update(self, index, weight, grad, state):
        self._update_impl(index, weight, grad, state, multi_precision=False)

    def update_multi_precision(self, index, weight, grad, state):
        first = weight[0] if isinstance(weight, (list, tuple)) else weight
        use_mp = self.multi_precision and first.dtype == numpy.float16
        self._update_impl(index, weight, grad, state, multi_precision=use_mp)


@register
class NAG(Optimizer):
    """Nesterov accelerated gradient (nag_mom_update):
    m = momentum*mom; mom = m - lr*(g + wd*weight); weight += (momentum+1)*mom - m,
    g = rescale_grad*grad (clipped); plain SGD when momentum is 0."""

    def __init__(self, momentum=0.0, **kwargs):
        super(NAG, self).__init__(**kwargs)
        self.momentum = momentum

    def create_state(self, index, weight):
        return _zeros_like(weight) if self.momentum != 0.0 else None

    def create_state_multi_precision(self, index, weight):
        # As SGD: (momentum or None, float32 master copy), for mp_nag_mom_update.
        if self.multi_precision and weight.dtype == numpy.float16:
            master = weight.astype(numpy.float32)
            return (self.create_state(index, master), master)
        return super(NAG, self).create_state_multi_precision(index, weight)

    def _update_impl(self, index, weight, grad, state, multi_precision):
        _check_pair(index, weight, grad)
        self._update_count(index)
        lr, wd = self._get_lr(index), self._get_wd(index)
        kwargs = self._common_kwargs()
        if multi_precision:
            mom, w32 = state
            if mom is not None:
                nd.mp_nag_mom_update(weight, grad, mom, w32, out=weight, lr=lr, wd=wd, momentum=self.momentum,
                                     **kwargs)
            else:
                nd.mp_sgd_update(weight, grad, w32, out=weight, lr=lr, wd=wd, **kwargs)
        elif state is not None:
            nd.nag_mom_update(weight, grad, state, out=weight, lr=lr, wd=wd, momentum=self.momentum, **kwargs)
        else:
            nd.sgd_update(weight, grad, out=weight, lr=lr, wd=wd, **kwargs)

    def update(self, index, weight, grad, state):
        self._update_impl(index, weight, grad, state, multi_precision=False)

    def update_multi_precision(self, index, weight, grad, state):
        use_mp = self.multi_precision and weight.dtype == numpy.float16
        self._update_impl(index, weight, grad, state, multi_precision=use_mp)


@register
class Adam(Optimizer):
    """Adam (Kingma & Ba, 2014) through adam_update, with the bias correction folded into
    the learning rate: lr_t = lr * sqrt(1 - beta2^t) / (1 - beta1^t), t counting this
    parameter's updates."""

    def __init__(self, learning_rate=0.001, beta1=0.9, beta2=0.999, epsilon=1e-8, lazy_update=True, **kwargs):
        super(Adam, self).__init__(learning_rate=learning_rate, **kwargs)
        self.beta1 = beta1
        self.beta2 = beta2
        self.epsilon = epsilon
        self.lazy_update = lazy_update

    def create_state(self, index, weight):
        return (_zeros_like(weight), _zeros_like(weight))

    def update(self, index, weight, grad, state):
        _check_pair(index, weight, grad)
        self._update_count(index)
        lr, wd = self._get_lr(index), self._get_wd(index)
        t = self._index_update_count[index]
        lr *= math.sqrt(1.0 - self.beta2 ** t) / (1.0 - self.beta1 ** t)
        mean, var = state
        nd.adam_update(weight, grad, mean, var, out=weight, lr=lr, wd=wd, beta1=self.beta1, beta2=self.beta2,
                       epsilon=self.epsilon, lazy_update=self.lazy_update, **self._common_kwargs())


@register
class AdamW(Optimizer):
    """Adam with decoupled weight decay (Loshchilov & Hutter, 2017) through _adamw_update:
    weight -= lr_t * (mean/(sqrt(var) + epsilon) + wd*weight), where lr_t carries the bias
    correction sqrt(1 - beta2^t)/(1 - beta1^t) when correct_bias is on."""

    def __init__(self, learning_rate=0.001, beta1=0.9, beta2=0.999, epsilon=1e-6, correct_bias=True, **kwargs):
        super(AdamW, self).__init__(learning_rate=learning_rate, **kwargs)
        self.beta1 = beta1
        self.beta2 = beta2
        self.epsilon = epsilon
        self.correct_bias = correct_bias
        self._scale_arrays = {}

    def create_state(self, index, weight):
        return (_zeros_like(weight), _zeros_like(weight))

    def _scale_array(self, weight):
        # _adamw_update takes rescale_grad as a one-element array: one per device, made
        # again when the value changes (a Trainer sets it for each batch size).
        value = float(self.rescale_grad)
        cached = self._scale_arrays.get(weight.context)
        if cached is None or cached[0] != value:
            cached = (value, nd.full((1,), value, ctx=weight.context, dtype=numpy.float32))
            self._scale_arrays[weight.context] = cached
        return cached[1]

    def update(self, index, weight, grad, state):
        _check_pair(index, weight, grad)
        self._update_count(index)
        lr, wd = self._get_lr(index), self._get_wd(index)
        if self.correct_bias:
            t = self._index_update_count[index]
            lr *= math.sqrt(1.0 - self.beta2 ** t) / (1.0 - self.beta1 ** t)
        kwargs = {"clip_gradient": self.clip_gradient} if self.clip_gradient else {}
        mean, var = state
        nd.adamw_update(weight, grad, mean, var, self._scale_array(weight), out=weight, lr=1.0, eta=lr, wd=wd,
                         beta1=self.beta1, beta2=self.beta2, epsilon=self.epsilon, **kwargs)

    def __getstate__(self):
        state = super(AdamW, self).__getstate__()
        state["_scale_arrays"] = {}
        return state


@register
class RMSProp(Optimizer):
    """RMSProp (rmsprop_update), or the centred form of Graves (2013) with
    centered=True (rmspropalex_update); clip_weights bounds the weights after each step."""

    def __init__(self, learning_rate=0.001, gamma1=0.9, gamma2=0.9, epsilon=1e-8, centered=False, clip_weights=None,
                 **kwargs):
        super(RMSProp, self).__init__(learning_rate=learning_rate, **kwargs)
        self.gamma1 = gamma1
        self.gamma2 = gamma2
        self.epsilon = epsilon
        self.centered = centered
        self.clip_weights = clip_weights

    def create_state(self, index, weight):
        if self.centered:
            return (_zeros_like(weight), _zeros_like(weight), _zeros_like(weight))
        return (_zeros_like(weight),)

    def update(self, index, weight, grad, state):
        _check_pair(index, weight, grad)
        self._update_count(index)
        lr, wd = self._get_lr(index), self._get_wd(index)
        kwargs = self._common_kwargs()
        kwargs.update(gamma1=self.gamma1, epsilon=self.epsilon)
        if self.clip_weights:
            kwargs["clip_weights"] = self.clip_weights
        if self.centered:
            n, g, delta = state
            nd.rmspropalex_update(weight, grad, n, g, delta, out=weight, lr=lr, wd=wd, gamma2=self.gamma2, **kwargs)
        else:
            (n,) = state
            nd.rmsprop_update(weight, grad, n, out=weight, lr=lr, wd=wd, **kwargs)


@register
class AdaGrad(Optimizer):
    """AdaGrad (Duchi et al., 2011) through adagrad_update:
    history += g^2; weight -= lr * (g/sqrt(history + eps) + wd*weight)."""

    def __init__(self, eps=1e-7, **kwargs):
        super(AdaGrad, self).__init__(**kwargs)
        self.float_stable_eps = eps

    def create_state(self, index, weight):
        return _zeros_like(weight)

    def update(self, index, weight, grad, state):
        _check_pair(index, weight, grad)
        self._update_count(index)
        lr, wd = self._get_lr(index), self._get_wd(index)
        nd.adagrad_update(weight, grad, state, out=weight, lr=lr, wd=wd, epsilon=self.float_stable_eps,
                          **self._common_kwargs())


@register
class AdaDelta(Optimizer):
    """AdaDelta (Zeiler, 2012) through adadelta_update. As in MXNet 1.x the learning rate
    is not used: the step size comes from the accumulated squares alone."""

    def __init__(self, rho=0.90, epsilon=1e-5, **kwargs):
        super(AdaDelta, self).__init__(**kwargs)
        self.rho = rho
        self.epsilon = epsilon

    def create_state(self, index, weight):
        return (_zeros_like(weight), _zeros_like(weight))

    def update(self, index, weight, grad, state):
        _check_pair(index, weight, grad)
        self._update_count(index)
        wd = self._get_wd(index)
        acc_g, acc_delta = state
        nd.adadelta_update(weight, grad, acc_g, acc_delta, out=weight, rho=self.rho, epsilon=self.epsilon, wd=wd,
                           **self._common_kwargs())


@register
class Ftrl(Optimizer):
    """FTRL-proximal (McMahan et al., 2013) through ftrl_update, with L1 strength lamda1
    and learning-rate offset beta."""

    def __init__(self, lamda1=0.01, learning_rate=0.1, beta=1, **kwargs):
        super(Ftrl, self).__init__(learning_rate=learning_rate, **kwargs)
        self.lamda1 = lamda1
        self.beta = beta

    def create_state(self, index, weight):
        return (_zeros_like(weight), _zeros_like(weight))  # z, n

    def update(self, index, weight, grad, state):
        _check_pair(index, weight, grad)
        self._update_count(index)
        lr, wd = self._get_lr(index), self._get_wd(index)
        z, n = state
        nd.ftrl_update(weight, grad, z, n, out=weight, lr=lr, wd=wd, lamda1=self.lamda1, beta=self.beta,
                       **self._common_kwargs())


FTRL = Ftrl


@register
class FTML(Optimizer):
    """FTML, Follow the Moving Leader (Zheng & Kwok, 2017), through ftml_update."""

    def __init__(self, beta1=0.6, beta2=0.999, epsilon=1e-8, **kwargs):
        super(FTML, self).__init__(**kwargs)
        self.beta1 = beta1
        self.beta2 = beta2
        self.epsilon = epsilon

    def create_state(self, index, weight):
        return (_zeros_like(weight), _zeros_like(weight), _zeros_like(weight))  # d, v, z

    def update(self, index, weight, grad, state):
        _check_pair(index, weight, grad)
        self._update_count(index)
        lr, wd = self._get_lr(index), self._get_wd(index)
        kwargs = {"rescale_grad": self.rescale_grad}
        if self.clip_gradient:
            kwargs["clip_grad"] = self.clip_gradient
        d, v, z = state
        nd.ftml_update(weight, grad, d, v, z, out=weight, lr=lr, wd=wd, t=self._index_update_count[index],
                       beta1=self.beta1, beta2=self.beta2, epsilon=self.epsilon, **kwargs)


def _decayed_grad(opt, weight, grad, wd):
    # rescale_grad*grad + wd*weight, clipped: the gradient Adamax and Nadam step with.
    g = grad * opt.rescale_grad + weight * wd
    if opt.clip_gradient is not None:
        g = nd.clip(g, -opt.clip_gradient, opt.clip_gradient)
    return g


@register
class Adamax(Optimizer):
    """AdaMax, Adam's infinity-norm variant (Kingma & Ba, 2014, section 7). As in MXNet 1.x
    it has no fused operator and runs as NDArray operations:
    m = beta1*m + (1-beta1)*g; u = max(beta2*u, |g|); weight -= lr/(1-beta1^t) * m/u."""

    def __init__(self, learning_rate=0.002, beta1=0.9, beta2=0.999, **kwargs):
        super(Adamax, self).__init__(learning_rate=learning_rate, **kwargs)
        self.beta1 = beta1
        self.beta2 = beta2

    def create_state(self, index, weight):
        return (_zeros_like(weight), _zeros_like(weight))  # m, u

    def update(self, index, weight, grad, state):
        _check_pair(index, weight, grad)
        self._update_count(index)
        lr, wd = self._get_lr(index), self._get_wd(index)
        t = self._index_update_count[index]
        g = _decayed_grad(self, weight, grad, wd)
        m, u = state
        m[:] = m * self.beta1 + g * (1.0 - self.beta1)
        u[:] = nd.broadcast_maximum(u * self.beta2, nd.abs(g))
        weight[:] = weight - (lr / (1.0 - self.beta1 ** t)) * m / u


@register
class Nadam(Optimizer):
    """Nesterov-accelerated Adam (Dozat, 2016) with the momentum schedule
    beta1 * (1 - 0.5 * 0.96^(t * schedule_decay)); as in MXNet 1.x it runs as NDArray
    operations."""

    def __init__(self, learning_rate=0.001, beta1=0.9, beta2=0.999, epsilon=1e-8, schedule_decay=0.004, **kwargs):
        super(Nadam, self).__init__(learning_rate=learning_rate, **kwargs)
        self.beta1 = beta1
        self.beta2 = beta2
        self.epsilon = epsilon
        self.schedule_decay = schedule_decay
        # Product of the momentum schedule so far (shared by all parameters, as MXNet).
        self.m_schedule = 1.0

    def create_state(self, index, weight):
        return (_zeros_like(weight), _zeros_like(weight))  # m, v

    def update(self, index, weight, grad, state):
        _check_pair(index, weight, grad)
        self._update_count(index)
        lr, wd = self._get_lr(index), self._get_wd(index)
        t = self._index_update_count[index]
        g = _decayed_grad(self, weight, grad, wd)
        mu_t = self.beta1 * (1.0 - 0.5 * 0.96 ** (t * self.schedule_decay))
        mu_next = self.beta1 * (1.0 - 0.5 * 0.96 ** ((t + 1) * self.schedule_decay))
        self.m_schedule *= mu_t
        m_schedule_next = self.m_schedule * mu_next
        m, v = state
        m[:] = m * self.beta1 + g * (1.0 - self.beta1)
        v[:] = v * self.beta2 + nd.square(g) * (1.0 - self.beta2)
        m_bar = g * ((1.0 - mu_t) / (1.0 - self.m_schedule)) + m * (mu_next / (1.0 - m_schedule_next))
        v_hat = v / (1.0 - self.beta2 ** t)
        weight[:] = weight - lr * m_bar / (nd.sqrt(v_hat) + self.epsilon)


@register
class Signum(Optimizer):
    """Signum (Bernstein et al., 2018): the sign of a momentum of the gradients
    (signum_update), or of the gradient itself when momentum is 0 (signsgd_update);
    wd_lh is a decoupled weight decay."""

    def __init__(self, learning_rate=0.01, momentum=0.9, wd_lh=0.0, **kwargs):
        super(Signum, self).__init__(learning_rate=learning_rate, **kwargs)
        self.momentum = momentum
        self.wd_lh = wd_lh

    def create_state(self, index, weight):
        return _zeros_like(weight) if self.momentum != 0.0 else None

    def update(self, index, weight, grad, state):
        _check_pair(index, weight, grad)
        self._update_count(index)
        lr, wd = self._get_lr(index), self._get_wd(index)
        kwargs = self._common_kwargs()
        if state is not None:
            if self.wd_lh:
                kwargs["wd_lh"] = self.wd_lh
            nd.signum_update(weight, grad, state, out=weight, lr=lr, wd=wd, momentum=self.momentum, **kwargs)
        else:
            nd.signsgd_update(weight, grad, out=weight, lr=lr, wd=wd, **kwargs)


@register
class LAMB(Optimizer):
    """LAMB (You et al., 2019): an Adam direction (lamb_update_phase1) scaled per layer by
    the trust ratio norm(weight)/norm(direction) (lamb_update_phase2), with the weight
    norm bounded by lower_bound / upper_bound when given.

    As MXNet 1.9, an Updater hands it up to ``aggregate_num`` parameters at once
    (MXNET_OPTIMIZER_AGGREGATION_SIZE, at most 45, default 45), updated by one
    _multi_lamb_update call; with multi_precision, float16 weights are updated through
    float32 master copies (mp_lamb_update_phase1/2, _multi_mp_lamb_update)."""

    def __init__(self, learning_rate=0.001, beta1=0.9, beta2=0.999, epsilon=1e-6, lower_bound=None, upper_bound=None,
                 bias_correction=True, **kwargs):
        super(LAMB, self).__init__(learning_rate=learning_rate, **kwargs)
        self.beta1 = beta1
        self.beta2 = beta2
        self.epsilon = epsilon
        self.lower_bound = lower_bound
        self.upper_bound = upper_bound
        self.bias_correction = bias_correction
        self.aggregate_num = max(1, min(45, int(os.getenv("MXNET_OPTIMIZER_AGGREGATION_SIZE", "45"))))

    def create_state(self, index, weight):
        return (_zeros_like(weight), _zeros_like(weight))

    def _bounds(self):
        bounds = {}
        if self.lower_bound:
            bounds["lower_bound"] = self.lower_bound
        if self.upper_bound:
            bounds["upper_bound"] = self.upper_bound
        return bounds

    def _update_impl(self, index, weight, grad, state, multi_precision):
        kwargs = {"beta1": self.beta1, "beta2": self.beta2, "epsilon": self.epsilon,
                  "bias_correction": self.bias_correction, "rescale_grad": self.rescale_grad}
        if self.clip_gradient:
            kwargs["clip_gradient"] = self.clip_gradient
        if not isinstance(index, (list, tuple)) or self.aggregate_num <= 1:
            if isinstance(index, (list, tuple)):
                for i, w, g, st in zip(index, weight, grad, state):
                    self._update_impl(i, w, g, st, multi_precision)
                return
            _check_pair(index, weight, grad)
            self._update_count(index)
            lr, wd = self._get_lr(index), self._get_wd(index)
            t = self._index_update_count[index]
            if multi_precision:
                w32, (mean, var) = state
                g = nd.mp_lamb_update_phase1(weight, grad, mean, var, w32, t=t, wd=wd, **kwargs)
                nd.mp_lamb_update_phase2(weight, g, nd.norm(w32), nd.norm(g), w32, out=weight, lr=lr,
                                         **self._bounds())
            else:
                mean, var = state
                g = nd.lamb_update_phase1(weight, grad, mean, var, t=t, wd=wd, **kwargs)
                nd.lamb_update_phase2(weight, g, nd.norm(weight), nd.norm(g), out=weight, lr=lr, **self._bounds())
            return
        for i, w, g in zip(index, weight, grad):
            _check_pair(i, w, g)
        self._update_count(list(index))
        steps = [self._index_update_count[i] for i in index]
        lrs, wds = self._get_lrs(index), self._get_wds(index)
        kwargs.update(self._bounds())
        for start in range(0, len(weight), self.aggregate_num):
            sl = slice(start, start + self.aggregate_num)
            ws, gs, sts = list(weight[sl]), list(grad[sl]), list(state[sl])
            if multi_precision:
                w32s = [st[0] for st in sts]
                means = [st[1][0] for st in sts]
                varis = [st[1][1] for st in sts]
                nd.contrib.multi_mp_lamb_update(ws, gs, means, varis, w32s, steps[sl], lrs[sl], wds[sl], out=ws,
                                                **kwargs)
            else:
                means = [st[0] for st in sts]
                varis = [st[1] for st in sts]
                nd.contrib.multi_lamb_update(ws, gs, means, varis, steps[sl], lrs[sl], wds[sl], out=ws, **kwargs)

    def update(self, index, weight, grad, state):
        self._update_impl(index, weight, grad, state, multi_precision=False)

    def update_multi_precision(self, index, weight, grad, state):
        first = weight[0] if isinstance(weight, (list, tuple)) else weight
        use_mp = self.multi_precision and first.dtype == numpy.float16
        self._update_impl(index, weight, grad, state, multi_precision=use_mp)


def _no_lars(name):
    # LARS leaves the learning rate of biases and normalisation parameters alone.
    return name.endswith("gamma") or name.endswith("beta") or name.endswith("bias")


@register
class LARS(Optimizer):
    """LARS (You et al., 2017, "Large Batch Training of Convolutional Networks"): SGD with
    momentum whose learning rate is scaled per layer by
    eta * norm(w) / (norm(g) + wd*norm(w) + eps) (unscaled when either norm is 0, and for
    parameters whose names end in gamma, beta or bias). As MXNet 1.9 it computes the norms
    with multi_sum_sq, the rates with multi_lars and updates through the preloaded_multi_*
    operators, up to ``aggregate_num`` parameters a call. With momentum_correction the
    momentum is scaled by the change of the learning rate between steps."""

    def __init__(self, momentum=0.0, lazy_update=True, eta=0.001, eps=0, momentum_correction=True, **kwargs):
        super(LARS, self).__init__(**kwargs)
        self.momentum = momentum
        self.momentum_correction = momentum_correction
        self.lazy_update = lazy_update
        self.aggregate_num = int(os.getenv("MXNET_OPTIMIZER_AGGREGATION_SIZE", "4"))
        self.eta = eta
        self.eps = eps
        self.skip = 0
        self.last_lr = None
        self.cur_lr = None

    def _get_lrs(self, indices):
        # Remembers the rate of the previous call for the momentum correction.
        lr = self.lr_scheduler(self.num_update) if self.lr_scheduler is not None else self.lr
        self.last_lr = self.cur_lr if self.cur_lr is not None else lr
        self.cur_lr = lr
        return [lr * self._mult(i, self.lr_mult, "lr_mult") for i in indices]

    def set_wd_mult(self, args_wd_mult):
        """As Optimizer.set_wd_mult, but only names ending in '_weight' keep weight decay."""
        self.wd_mult = {}
        for n in self.idx2name.values():
            if not n.endswith("_weight"):
                self.wd_mult[n] = 0.0
        if self.sym_info:
            attrs, arg_names = self.sym_info
            for n in arg_names:
                if "__wd_mult__" in attrs.get(n, {}):
                    self.wd_mult[n] = float(attrs[n]["__wd_mult__"])
        self.wd_mult.update(args_wd_mult)

    def create_state(self, index, weight):
        return _zeros_like(weight) if self.momentum != 0.0 else None

    def create_state_multi_precision(self, index, weight):
        if self.multi_precision and weight.dtype == numpy.float16:
            master = weight.astype(numpy.float32)
            return (self.create_state(index, master), master)
        return super(LARS, self).create_state_multi_precision(index, weight)

    def _update_impl(self, indices, weights, grads, states, multi_precision):
        if not isinstance(indices, (list, tuple)):
            indices, weights, grads, states = [indices], [weights], [grads], [states]
        for i, w, g in zip(indices, weights, grads):
            _check_pair(i, w, g)
        self._update_count(list(indices))
        lrs = self._get_lrs(indices)
        wds = self._get_wds(indices)
        kwargs = {"rescale_grad": self.rescale_grad}
        if self.momentum > 0:
            corrected = self.momentum_correction and self.last_lr != 0
            kwargs["momentum"] = self.momentum * (self.cur_lr / self.last_lr) if corrected else self.momentum
        if self.clip_gradient:
            kwargs["clip_gradient"] = self.clip_gradient
        names = [self.idx2name.get(i, str(i)) for i in indices]
        # LARS parameters first, so that one multi_lars call scales a contiguous slice.
        order = [k for k in range(len(indices)) if not _no_lars(names[k])] + \
                [k for k in range(len(indices)) if _no_lars(names[k])]
        nb_lars = sum(1 for k in order if not _no_lars(names[k]))
        ctx = weights[0].context
        new_lrs = nd.array([lrs[k] for k in order], ctx=ctx, dtype="float32")
        new_wds = nd.array([wds[k] for k in order], ctx=ctx, dtype="float32")
        ws = [weights[k] for k in order]
        gs = [grads[k] for k in order]
        sts = [states[k] for k in order]
        if nb_lars > 0:
            w_ss = nd.multi_sum_sq(*ws[:nb_lars], num_arrays=nb_lars)
            g_ss = nd.multi_sum_sq(*gs[:nb_lars], num_arrays=nb_lars)
            scaled = nd.multi_lars(new_lrs[:nb_lars], w_ss, g_ss, new_wds[:nb_lars], eta=self.eta, eps=self.eps,
                                   rescale_grad=self.rescale_grad)
            new_lrs = nd.concat(scaled, new_lrs[nb_lars:], dim=0) if nb_lars < len(order) else scaled
        step = max(1, self.aggregate_num)
        for start in range(0, len(ws), step):
            sl = slice(start, start + step)
            n = len(ws[sl])
            rates = [new_lrs[sl], new_wds[sl]]
            if multi_precision:
                if self.momentum > 0:
                    args = [x for w, g, (mom, w32) in zip(ws[sl], gs[sl], sts[sl]) for x in (w, g, mom, w32)]
                    nd.preloaded_multi_mp_sgd_mom_update(*(args + rates), out=ws[sl], num_weights=n, **kwargs)
                else:
                    args = [x for w, g, (_, w32) in zip(ws[sl], gs[sl], sts[sl]) for x in (w, g, w32)]
                    nd.preloaded_multi_mp_sgd_update(*(args + rates), out=ws[sl], num_weights=n, **kwargs)
            elif self.momentum > 0:
                args = [x for w, g, mom in zip(ws[sl], gs[sl], sts[sl]) for x in (w, g, mom)]
                nd.preloaded_multi_sgd_mom_update(*(args + rates), out=ws[sl], num_weights=n, **kwargs)
            else:
                args = [x for w, g in zip(ws[sl], gs[sl]) for x in (w, g)]
                nd.preloaded_multi_sgd_update(*(args + rates), out=ws[sl], num_weights=n, **kwargs)

    def update(self, index, weight, grad, state):
        self._update_impl(index, weight, grad, state, multi_precision=False)

    def update_multi_precision(self, index, weight, grad, state):
        first = weight[0] if isinstance(weight, (list, tuple)) else weight
        use_mp = self.multi_precision and first.dtype == numpy.float16
        self._update_impl(index, weight, grad, state, multi_precision=use_mp)


@register
class LBSGD(Optimizer):
    """Large-batch SGD: gradients are summed over ``batch_scale`` calls and applied once
    (sgd_update / sgd_mom_update, or the mp_ forms with multi_precision) with the
    learning rate times a warm-up multiplier that grows from 1 to batch_scale over
    warmup_epochs * updates_per_epoch updates ('linear', 'power2', 'sqrt'), or times the
    LARS ratio sqrt(|w|^2 / (|g|^2 + wd*|w|^2)) bounded to [0.01, 100] ('lars'). Calls
    between two applications leave the weight unchanged."""

    def __init__(self, momentum=0.0, multi_precision=False, warmup_strategy="linear", warmup_epochs=5, batch_scale=1,
                 updates_per_epoch=32, begin_epoch=0, num_epochs=60, **kwargs):
        super(LBSGD, self).__init__(multi_precision=multi_precision, **kwargs)
        self.momentum = momentum
        self.warmup_strategy = warmup_strategy
        self.warmup_epochs = warmup_epochs
        self.batch_scale = batch_scale
        self.updates_per_epoch = updates_per_epoch
        self.begin_epoch = begin_epoch
        self.init_updates = begin_epoch * updates_per_epoch
        self.num_epochs = num_epochs
        self.cumgrads = {}

    def create_state(self, index, weight):
        if self.multi_precision and weight.dtype == numpy.float16:
            master = weight.astype(numpy.float32)
            mom = _zeros_like(master) if self.momentum != 0.0 else None
            return (mom, master)
        if weight.dtype == numpy.float16:
            warnings.warn("Accumulating float16 weights in float16 can lose precision or stall training; consider "
                          "multi_precision=True")
        return _zeros_like(weight) if self.momentum != 0.0 else None

    def create_state_multi_precision(self, index, weight):
        # create_state already makes the master copy (MXNet's LBSGD keeps it there).
        return self.create_state(index, weight)

    def _get_lbmult(self, nup):
        nwup = self.warmup_epochs * self.updates_per_epoch
        maxmult = float(self.batch_scale)
        if nup >= nwup:
            return maxmult
        if nwup <= 1:
            return 1.0
        if self.warmup_strategy == "linear":
            return 1.0 + (maxmult - 1) * nup / nwup
        if self.warmup_strategy == "power2":
            return 1.0 + (maxmult - 1) * (nup * nup) / (nwup * nwup)
        if self.warmup_strategy == "sqrt":
            return 1.0 + (maxmult - 1) * math.sqrt(float(nup) / nwup)
        return 1.0

    def _get_lars(self, weight, g, wd):
        w2 = float((weight * weight).asnumpy().sum())
        g2 = float((g * g).asnumpy().sum())
        lars = math.sqrt(w2 / (g2 + wd * w2 + 1e-18))
        return min(max(lars, 0.01), 100.0)

    def _cumulate_gradient(self, grad, index):
        cgrad = self.cumgrads.get(index)
        if cgrad and cgrad["num_cums"] > 0:
            cgrad = {"cum_grad": cgrad["cum_grad"] + grad, "num_cums": cgrad["num_cums"] + 1}
        else:
            cgrad = {"cum_grad": grad.copy(), "num_cums": self.init_updates + 1}
        self.cumgrads[index] = cgrad
        return cgrad

    def update(self, index, weight, grad, state):
        _check_pair(index, weight, grad)
        lr, wd = self._get_lr(index), self._get_wd(index)
        self._update_count(index)
        cgrad = self._cumulate_gradient(grad, index)
        if cgrad["num_cums"] % self.batch_scale != 0:
            return
        grad = cgrad["cum_grad"] / self.batch_scale
        if self.warmup_strategy == "lars":
            lbmult = self._get_lars(weight, grad, wd)
        else:
            lbmult = self._get_lbmult(cgrad["num_cums"])
        lr = lr * lbmult
        kwargs = self._common_kwargs()
        if self.momentum > 0:
            kwargs["momentum"] = self.momentum
        if isinstance(state, (list, tuple)):
            mom, w32 = state
            if mom is not None:
                nd.mp_sgd_mom_update(weight, grad, mom, w32, out=weight, lr=lr, wd=wd, **kwargs)
            else:
                nd.mp_sgd_update(weight, grad, w32, out=weight, lr=lr, wd=wd, **kwargs)
        elif state is not None:
            nd.sgd_mom_update(weight, grad, state, out=weight, lr=lr, wd=wd, **kwargs)
        else:
            nd.sgd_update(weight, grad, out=weight, lr=lr, wd=wd, **kwargs)
        self.cumgrads[index]["cum_grad"] = 0

    def update_multi_precision(self, index, weight, grad, state):
        self.update(index, weight, grad, state)


def _clipped_grad(opt, grad):
    g = grad * opt.rescale_grad
    if opt.clip_gradient is not None:
        g = nd.clip(g, -opt.clip_gradient, opt.clip_gradient)
    return g


@register
class DCASGD(Optimizer):
    """Delay-compensated asynchronous SGD (Zheng et al., 2016): the gradient is corrected
    by lamda * g * g * (weight - previous weight) before an SGD step with optional
    momentum: mom = momentum*mom - lr*(g + wd*w + lamda*g*g*(w - w_prev)); w += mom."""

    def __init__(self, momentum=0.0, lamda=0.04, **kwargs):
        super(DCASGD, self).__init__(**kwargs)
        self.momentum = momentum
        self.weight_previous = {}
        self.lamda = lamda

    def create_state(self, index, weight):
        mom = _zeros_like(weight) if self.momentum != 0.0 else None
        return (mom, weight.copy())

    def update(self, index, weight, grad, state):
        _check_pair(index, weight, grad)
        self._update_count(index)
        lr, wd = self._get_lr(index), self._get_wd(index)
        g = _clipped_grad(self, grad)
        mom, previous = state
        step = (g + wd * weight + self.lamda * g * g * (weight - previous)) * (-lr)
        if mom is not None:
            mom[:] = mom * self.momentum + step
            step = mom
        previous[:] = weight
        weight[:] = weight + step


@register
class SGLD(Optimizer):
    """Stochastic gradient Langevin dynamics (Welling & Teh, 2011): a half SGD step plus
    Gaussian noise of variance lr: w += -lr/2 * (g + wd*w) + N(0, lr). The noise comes
    from weft.nd.random.normal, so weft.random.seed reproduces it."""

    def create_state(self, index, weight):
        return None

    def update(self, index, weight, grad, state):
        _check_pair(index, weight, grad)
        self._update_count(index)
        lr, wd = self._get_lr(index), self._get_wd(index)
        g = _clipped_grad(self, grad)
        noise = nd.random.normal(0, math.sqrt(lr), shape=weight.shape, dtype=weight.dtype, ctx=weight.context)
        weight[:] = weight - (lr / 2) * (g + wd * weight) + noise


@register
class ccSGD(SGD):  # noqa: N801  (MXNet's name)
    """Deprecated in MXNet: the same as SGD, kept so that old scripts creating 'ccsgd' run."""


@register
class Test(Optimizer):
    """MXNet's test optimizer: w += rescale_grad * grad, and the state holds a copy of w."""

    def create_state(self, index, weight):
        return nd.zeros(weight.shape, weight.context)

    def update(self, index, weight, grad, state):
        weight[:] = weight + grad * self.rescale_grad
        state[:] = weight


class Updater(object):
    """Applies an optimizer to parameters by index, creating and keeping each one's state.

    ``updater(index, grad, weight)`` (or lists of each) updates in place. When the
    optimizer aggregates (``aggregate_num`` > 0, SGD), parameters of one dtype are passed
    to it in groups of up to ``aggregate_num``.
    """

    def __init__(self, optimizer):
        self.optimizer = optimizer
        self.states = {}
        self.states_synced = {}
        self.aggregate_updates = optimizer.aggregate_num > 0
        self._plans = {}

    def __call__(self, index, grad, weight):
        if isinstance(index, (list, tuple)):
            indices, grads, weights = list(index), list(grad), list(weight)
        else:
            indices, grads, weights = [index], [grad], [weight]
        if not (len(indices) == len(grads) == len(weights)):
            raise ValueError("Updater: got %d indices, %d gradients and %d weights; they must match"
                             % (len(indices), len(grads), len(weights)))
        if not weights:
            return
        # A training loop hands over the same parameters at every step: what depends only on
        # them (states, the grouping by dtype, the device) is worked out once per set of
        # weights. The plan keeps the weights alive, so their ids cannot be reused.
        key = (tuple(indices), tuple(map(id, weights)))
        plan = self._plans.get(key)
        if plan is None:
            plan = self._plan(indices, weights)
            if len(self._plans) >= 64:
                self._plans.clear()
            self._plans[key] = plan
        _, device_id, chunks = plan
        self.optimizer._set_current_context(device_id)
        for idxs, positions in chunks:
            ws, gs = [weights[k] for k in positions], [grads[k] for k in positions]
            states = [self.states[i] for i in idxs]
            if len(positions) == 1 and not self.aggregate_updates:
                self.optimizer.update_multi_precision(idxs[0], ws[0], gs[0], states[0])
            else:
                self.optimizer.update_multi_precision(idxs, ws, gs, states)

    def _plan(self, indices, weights):
        """(weights, device id, [(indices, positions)]): the states of new indices are
        created (or moved to their weight's device), and the calls to make are listed: one
        per parameter, or with an aggregating optimizer one per group of up to
        aggregate_num parameters of one dtype and context."""
        for k, idx in enumerate(indices):
            if isinstance(idx, bytes):
                idx = indices[k] = idx.decode()
            if idx not in self.states:
                self.states[idx] = self.optimizer.create_state_multi_precision(idx, weights[k])
                self.states_synced[idx] = True
            elif not self.states_synced[idx]:
                self.states[idx] = self.sync_state_context(self.states[idx], weights[k].context)
                self.states_synced[idx] = True
        if not self.aggregate_updates:
            chunks = [([idx], [k]) for k, idx in enumerate(indices)]
        else:
            # One aggregated call reads its arrays on one device: weights placed on other
            # contexts (a Module's group2ctxs) are grouped apart.
            by_dtype = {}
            for k, w in enumerate(weights):
                by_dtype.setdefault((numpy.dtype(w.dtype), w.context), []).append(k)
            step = self.optimizer.aggregate_num
            chunks = [([indices[k] for k in ks[start:start + step]], ks[start:start + step])
                      for ks in by_dtype.values() for start in range(0, len(ks), step)]
        return list(weights), weights[0].context.device_id, chunks

    def sync_state_context(self, state, context):
        """The state with every NDArray in it moved to ``context``."""
        if isinstance(state, NDArray):
            return state.as_in_context(context)
        if isinstance(state, (tuple, list)):
            synced = [self.sync_state_context(s, context) for s in state]
            return tuple(synced) if isinstance(state, tuple) else synced
        return state

    def set_states(self, states):
        """Restores states from get_states' bytes (and the optimizer, if they hold it)."""
        loaded = pickle.loads(states)
        if isinstance(loaded, tuple) and len(loaded) == 2:
            self.states, self.optimizer = loaded
            self.aggregate_updates = self.optimizer.aggregate_num > 0
        else:
            self.states = loaded
        # States may come from another device: they move to each weight's on next use.
        self.states_synced = dict.fromkeys(self.states.keys(), False)
        self._plans = {}

    def get_states(self, dump_optimizer=False):
        """The states pickled to bytes, with the optimizer when dump_optimizer is True."""
        return pickle.dumps((self.states, self.optimizer) if dump_optimizer else self.states)


def get_updater(optimizer):
    """An Updater applying ``optimizer``."""
    return Updater(optimizer)
