"""weft.contrib.svrg_optimization (MXNet 1.9's contrib module): stochastic variance reduced
gradient (Johnson & Zhang, 2013) on a Module. SVRGModule keeps a snapshot of the weights and
the full-data gradient at that snapshot, refreshed every `update_freq` epochs, and steps its
optimizer with g_i(w) - g_i(w_snapshot) + mean_j g_j(w_snapshot) for each batch i."""
from . import svrg_module, svrg_optimizer
from .svrg_module import SVRGModule
from .svrg_optimizer import _AssignmentOptimizer, _SVRGOptimizer  # noqa: F401

__all__ = ["SVRGModule"]
