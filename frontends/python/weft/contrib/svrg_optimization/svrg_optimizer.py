"""The optimizers SVRGModule sets up: _SVRGOptimizer steps the parameters with the optimizer
the user chose and, for the keys named "<param>_full" that hold the full gradients in a
KVStore, _AssignmentOptimizer, which stores what is pushed (so the store sums the devices'
and workers' full gradients)."""
from ... import optimizer as _opt


@_opt.register
class _AssignmentOptimizer(_opt.Optimizer):
    """weight <- grad: turns a KVStore key into an accumulator of pushed gradients."""

    def update(self, index, weight, grad, state):
        weight[:] = grad


@_opt.register
class _SVRGOptimizer(_opt.Optimizer):
    """Dispatches by parameter name: names containing "full" to _AssignmentOptimizer, the
    others to `default_optimizer` (a name, created with the same keyword arguments, or an
    Optimizer). The base Optimizer's own arguments (rescale_grad, wd, ...) are taken from
    the keyword arguments too."""

    _BASE_PARAMS = ("rescale_grad", "param_idx2name", "wd", "clip_gradient", "learning_rate", "lr_scheduler", "sym",
                    "begin_num_update", "multi_precision", "param_dict")

    def __init__(self, default_optimizer, **kwargs):
        super().__init__(**self._check_params(**kwargs))
        if isinstance(default_optimizer, str):
            self.default_opt = _opt.create(default_optimizer, **kwargs)
        else:
            self.default_opt = default_optimizer
        self.aux_opt = _opt.create(_AssignmentOptimizer.__name__)

    @classmethod
    def _check_params(cls, **kwargs):
        """The keyword arguments that the base Optimizer takes."""
        return {k: v for k, v in kwargs.items() if k in cls._BASE_PARAMS}

    def _check_index(self, index):
        """The parameter name of `index` (an index of idx2name, or already a name)."""
        if index in self.idx2name.values():
            return index
        return self.idx2name[index]

    def _target(self, index):
        return self.aux_opt if "full" in self._check_index(index) else self.default_opt

    def update(self, index, weight, grad, state):
        self._target(index).update(index, weight, grad, state)

    def update_multi_precision(self, index, weight, grad, state):
        self._target(index).update_multi_precision(index, weight, grad, state)

    def create_state(self, index, weight):
        return self._target(index).create_state(index, weight)

    def create_state_multi_precision(self, index, weight):
        return self._target(index).create_state_multi_precision(index, weight)
