"""Contributed optimizers of MXNet 1.x's ``mx.optimizer.contrib``: GroupAdaGrad."""
from .. import ndarray as nd
from .optimizer import Optimizer, register, _check_pair

__all__ = ["GroupAdaGrad"]


@register
class GroupAdaGrad(Optimizer):
    """AdaGrad with one accumulated value per row (Duchi et al., 2011, with a single
    learning rate per row) through _contrib_group_adagrad_update:
    g = clip(rescale_grad*grad); history += mean(g^2, axis=1); weight -= lr * g / sqrt(history + eps).
    Weight decay is not supported (wd must be 0), as in MXNet."""

    def __init__(self, eps=1e-5, **kwargs):
        super(GroupAdaGrad, self).__init__(**kwargs)
        self.float_stable_eps = eps

    def create_state(self, index, weight):
        if len(weight.shape) != 2:
            raise ValueError("GroupAdaGrad updates 2-D weights (one history value per row), got shape %s"
                             % (weight.shape,))
        return nd.zeros((weight.shape[0], 1), weight.context, dtype=weight.dtype)

    def update(self, index, weight, grad, state):
        _check_pair(index, weight, grad)
        self._update_count(index)
        lr, wd = self._get_lr(index), self._get_wd(index)
        if wd != 0:
            raise ValueError("GroupAdaGrad does not support weight decay; got wd = %g for parameter %r" % (wd, index))
        kwargs = {"epsilon": self.float_stable_eps, "rescale_grad": self.rescale_grad}
        if self.clip_gradient:
            kwargs["clip_gradient"] = self.clip_gradient
        nd.contrib.group_adagrad_update(weight, grad, state, out=weight, lr=lr, **kwargs)
