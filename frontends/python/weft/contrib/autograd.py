"""weft.contrib.autograd: MXNet's first, experimental autograd interface, which older
scripts still use. Training mode and recording are one switch here (`set_is_training`
turns both on or off), sections are context managers over it, and `grad`/`grad_and_loss`
turn a function of NDArrays into one that also returns gradients. New code uses
`weft.autograd` (`record`, `backward`), which this module is written on."""
import functools

from .. import autograd as _ag

__all__ = ["set_is_training", "TrainingStateScope", "train_section", "test_section", "mark_variables", "backward",
           "compute_gradient", "grad_and_loss", "grad"]


def set_is_training(is_train):
    """Turns training mode and recording on or off together for the calling thread; returns
    whether recording was on before (MXNet returns the state it set last)."""
    _ag.set_training(is_train)
    return _ag.set_recording(is_train)


class TrainingStateScope(object):
    """A `with` block inside which training mode and recording are `enter_state`; the
    previous state comes back at its end."""

    def __init__(self, enter_state):
        self._enter_state = enter_state
        self._prev = None

    def __enter__(self):
        self._prev = set_is_training(self._enter_state)

    def __exit__(self, ptype, value, trace):
        if self._prev != self._enter_state:
            set_is_training(self._prev)


def train_section():
    """A block that records for gradients in training mode."""
    return TrainingStateScope(True)


def test_section():
    """A block (inside a train_section) that neither records nor runs in training mode."""
    return TrainingStateScope(False)


def mark_variables(variables, gradients, grad_reqs="write"):
    """Marks arrays as variables whose gradients go into `gradients`."""
    _ag.mark_variables(variables, gradients, grad_reqs)


def backward(outputs, out_grads=None, retain_graph=False):
    """Gradients of `outputs` (a list) into the marked variables' gradient arrays;
    out_grads (None entries meaning ones) has one entry per output."""
    if not isinstance(outputs, (list, tuple)):
        raise TypeError("backward: outputs must be a list or tuple of NDArrays, got %s" % type(outputs).__name__)
    if out_grads is not None and len(out_grads) != len(outputs):
        raise ValueError("backward: outputs and out_grads must have the same length, got %d and %d"
                         % (len(outputs), len(out_grads)))
    _ag.backward(list(outputs), None if out_grads is None else list(out_grads), retain_graph=retain_graph)


def compute_gradient(outputs):
    """backward(outputs), MXNet's older name for it."""
    backward(outputs)


def grad_and_loss(func, argnum=None):
    """A function that calls `func` and returns (gradients, func's outputs): the gradients of
    the outputs with respect to every argument, or those at `argnum` (an int or a list)."""
    from ..ndarray import NDArray, zeros_like

    @functools.wraps(func)
    def wrapped(*args):
        variables = args
        if argnum is not None:
            variables = [args[i] for i in (argnum if isinstance(argnum, list) else [argnum])]
        for x in variables:
            if not isinstance(x, NDArray):
                raise TypeError("grad_and_loss: the arguments to differentiate must be NDArrays, got %s"
                                % type(x).__name__)
        grads = [zeros_like(x) for x in variables]
        mark_variables(variables, grads)
        with train_section():
            outputs = func(*args)
        compute_gradient([outputs] if isinstance(outputs, NDArray) else outputs)
        return grads, outputs

    return wrapped


def grad(func, argnum=None):
    """A function that calls `func` and returns only the gradients of grad_and_loss."""
    with_loss = grad_and_loss(func, argnum)

    @functools.wraps(with_loss)
    def wrapped(*args):
        return with_loss(*args)[0]

    return wrapped
