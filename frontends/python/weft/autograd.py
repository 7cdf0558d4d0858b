"""Imperative automatic differentiation, as MXNet's `mx.autograd`.

    x = nd.array([1., 2.]); x.attach_grad()
    with autograd.record():
        y = (x * x).sum()
    y.backward()            # x.grad == 2 * x

Inside `record()` every operator call that reads an array marked with `attach_grad` (or a
result computed from one) is recorded by the core (core/imperative/autograd.h); `backward`
runs the operators' registered gradients over the recorded graph, the same gradients the
symbolic executor uses. Recording and the training mode belong to the calling thread.
Training mode makes operators behave as in training (Dropout drops, BatchNorm uses batch
statistics); `record()` turns it on by default, `pause()` off.
"""
import contextlib
import ctypes
import threading
import weakref

from .base import _api

__all__ = ["set_training", "is_training", "train_mode", "predict_mode", "set_recording", "is_recording",
           "record", "pause", "mark_variables", "backward", "grad", "get_symbol", "Function"]


def set_training(train_mode):
    """Sets the thread's training mode; returns the previous one."""
    return bool(_api.weft_set_is_training(1 if train_mode else 0))


def is_training():
    """Whether the calling thread is in training mode."""
    return bool(_api.weft_is_training())


def set_recording(is_recording):
    """Turns recording on or off for the calling thread; returns the previous state."""
    return bool(_api.weft_autograd_set_is_recording(1 if is_recording else 0))


def is_recording():
    """Whether the calling thread records operator calls for autograd."""
    return bool(_api.weft_autograd_is_recording())


@contextlib.contextmanager
def _scope(recording, train):
    prev_rec = None if recording is None else set_recording(recording)
    prev_train = None if train is None else set_training(train)
    try:
        yield
    finally:
        if prev_train is not None:
            set_training(prev_train)
        if prev_rec is not None:
            set_recording(prev_rec)


def train_mode():
    """Context manager running its block in training mode (recording unchanged)."""
    return _scope(None, True)


def predict_mode():
    """Context manager running its block in prediction mode (recording unchanged)."""
    return _scope(None, False)


def record(train_mode=True):  # pylint: disable=redefined-outer-name
    """Context manager recording operator calls for backward; training mode by default."""
    return _scope(True, train_mode)


def pause(train_mode=False):  # pylint: disable=redefined-outer-name
    """Context manager that stops recording inside a `record()` block; prediction mode by default."""
    return _scope(False, train_mode)


def _as_list(x):
    return list(x) if isinstance(x, (list, tuple)) else [x]


def mark_variables(variables, gradients, grad_reqs="write"):
    """Marks arrays as variables whose gradients go into `gradients` ('write', 'add' or 'null')."""
    variables = _as_list(variables)
    gradients = _as_list(gradients)
    if isinstance(grad_reqs, str):
        grad_reqs = [grad_reqs] * len(variables)
    if not len(variables) == len(gradients) == len(grad_reqs):
        raise ValueError("mark_variables: expected as many gradients and grad_reqs as variables (%d), got %d and %d"
                         % (len(variables), len(gradients), len(grad_reqs)))
    _api.weft_autograd_mark_variables(len(variables), variables, list(grad_reqs), gradients)
    for var, buf in zip(variables, gradients):
        _forget_sparse_buffer(var)
        if getattr(buf, "stype", "default") != "default":
            _sparse_buffers.append((weakref.ref(var), weakref.ref(buf)))


# Sparse arrays are immutable in the core, so a backward gives a variable with a sparse
# gradient buffer a new gradient array. MXNet's sparse arrays are mutable and scripts read
# the buffer object they gave mark_variables, so after each backward these (variable,
# buffer) pairs hand each buffer the variable's new gradient (its handle is reassigned).
_sparse_buffers = []


def _forget_sparse_buffer(var):
    """Drops the pairs of `var` (marked again) and of arrays that no longer exist."""
    _sparse_buffers[:] = [(v, b) for v, b in _sparse_buffers if v() is not None and b() is not None
                          and v() is not var]


def _refresh_sparse_buffers():
    from .ndarray.sparse import _ndarray_cls  # pylint: disable=import-outside-toplevel
    for vref, bref in list(_sparse_buffers):
        var, buf = vref(), bref()
        if var is None or buf is None:
            continue
        handle = _api.weft_ndarray_get_grad(var)
        if handle is not None:
            buf._assign(_ndarray_cls(handle))


def _run_backward(heads, head_grads, variables, retain_graph, create_graph, train_mode):  # pylint: disable=redefined-outer-name
    from .ndarray import NDArray
    heads = _as_list(heads)
    if head_grads is None:
        head_grads = [None] * len(heads)
    else:
        head_grads = _as_list(head_grads)
        if len(head_grads) != len(heads):
            raise ValueError("backward: expected one head gradient per head (%d), got %d"
                             % (len(heads), len(head_grads)))
    _function_errors.pending = None
    try:
        handles = _api.weft_autograd_backward(len(heads), heads, head_grads, len(variables), variables,
                                              1 if retain_graph else 0, 1 if create_graph else 0,
                                              1 if train_mode else 0)
    except Exception as err:
        pending, _function_errors.pending = _function_errors.pending, None
        if pending is not None:
            raise pending from err
        raise
    if not variables and _sparse_buffers:
        _refresh_sparse_buffers()
    return [NDArray(h) for h in handles]


def backward(heads, head_grads=None, retain_graph=False, train_mode=True):  # pylint: disable=redefined-outer-name
    """Computes the gradients of `heads` with respect to every marked variable they depend on,
    into the variables' `.grad` arrays (head_grads default to ones)."""
    _run_backward(heads, head_grads, [], retain_graph, False, train_mode)


def grad(heads, variables, head_grads=None, retain_graph=None, create_graph=False, train_mode=True):  # pylint: disable=redefined-outer-name
    """Returns the list of the gradients of `heads` with respect to `variables` (a list, or
    one array) without touching any `.grad`. As in MXNet 1.x, the result is a list even for
    one variable given bare (scripts index it: grad(y, x)[0]). create_graph records the
    computation of the gradients, so they can be differentiated again; retain_graph defaults
    to create_graph."""
    variables = _as_list(variables)
    if retain_graph is None:
        retain_graph = create_graph
    return _run_backward(heads, head_grads, variables, retain_graph, create_graph, train_mode)


# ---------------------------------------------------------------------------- Function
# Custom gradients cross the C API as a C callback (weft_autograd_record_function). SWIG does
# not turn Python callables into C function pointers, so this one entry point goes through
# ctypes on the library the package already loaded.
_BACKWARD_FN = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_int, ctypes.POINTER(ctypes.c_uint64), ctypes.c_int,
                                ctypes.POINTER(ctypes.c_uint64), ctypes.c_void_p)
_RELEASE_FN = ctypes.CFUNCTYPE(None, ctypes.c_void_p)
_function_errors = threading.local()
_live_functions = {}
_live_lock = threading.Lock()
_next_function_id = [1]
def _library():
    from .base import ctypes_library
    lib = ctypes_library()
    if not getattr(lib, "_weft_autograd_ready", False):
        lib.weft_autograd_record_function.restype = ctypes.c_int
        lib.weft_autograd_record_function.argtypes = [
            ctypes.c_char_p, ctypes.c_int, ctypes.POINTER(ctypes.c_uint64), ctypes.c_int,
            ctypes.POINTER(ctypes.c_uint64), _BACKWARD_FN, _RELEASE_FN, ctypes.c_void_p]
        lib._weft_autograd_ready = True
    return lib


def _function_backward(num_out_grads, out_grads, num_in_grads, in_grads, user_data):
    from .ndarray import NDArray
    try:
        with _live_lock:
            fn = _live_functions[user_data]
        # The library frees its handles after the call: take handles of our own.
        ograds = [NDArray(_api.weft_ndarray_detach(int(out_grads[i]))) for i in range(num_out_grads)]
        result = fn.backward(*ograds)
        result = list(result) if isinstance(result, (list, tuple)) else [result]
        if len(result) != num_in_grads:
            raise ValueError("autograd.Function %s: backward returned %d gradients for %d inputs"
                             % (type(fn).__name__, len(result), num_in_grads))
        for i, g in enumerate(result):
            if g is not None:
                if not isinstance(g, NDArray):
                    raise TypeError("autograd.Function %s: backward must return NDArrays, got %s for input %d"
                                    % (type(fn).__name__, type(g).__name__, i))
                in_grads[i] = _api.weft_ndarray_detach(g)
        return 0
    except BaseException as err:  # pylint: disable=broad-except
        _function_errors.pending = err
        return 1


def _function_release(user_data):
    with _live_lock:
        _live_functions.pop(user_data, None)


_BACKWARD_C = _BACKWARD_FN(_function_backward)
_RELEASE_C = _RELEASE_FN(_function_release)


class Function:
    """A differentiable computation with a hand-written gradient, as MXNet's
    `autograd.Function`: subclass it, define `forward(*inputs)` and `backward(*out_grads)`
    (one gradient per input), and call an instance on arrays. `forward` runs with recording
    paused; `save_for_backward` keeps values for `backward`. Gradients of gradients do not
    pass through a Function."""

    def __init__(self):
        self.saved_tensors = ()

    def save_for_backward(self, *args):
        self.saved_tensors = args

    def forward(self, *inputs):
        raise NotImplementedError("autograd.Function subclasses define forward")

    def backward(self, *output_grads):
        raise NotImplementedError("autograd.Function subclasses define backward")

    def __call__(self, *inputs):
        from .ndarray import NDArray
        with pause(train_mode=is_training()):
            outputs = self.forward(*inputs)
        single = isinstance(outputs, NDArray)
        outs = [outputs] if single else list(outputs)
        if is_recording():
            _record_function(self, inputs, outs)
        return outputs


def _record_function(fn, inputs, outputs):
    # Records `outputs` as computed from `inputs` with fn.backward as the gradient (used by
    # Function and by hybridized blocks, whose backward runs their executor).
    lib = _library()
    with _live_lock:
        key = _next_function_id[0]
        _next_function_id[0] += 1
        _live_functions[key] = fn
    ins = (ctypes.c_uint64 * max(len(inputs), 1))(*[x.handle for x in inputs])
    ous = (ctypes.c_uint64 * max(len(outputs), 1))(*[x.handle for x in outputs])
    status = lib.weft_autograd_record_function(type(fn).__name__.encode(), len(inputs), ins, len(outputs), ous,
                                               _BACKWARD_C, _RELEASE_C, ctypes.c_void_p(key))
    if status != 0:
        from .base import error
        raise error(status, lib.weft_get_last_error().decode())
