"""weft.ndarray.contrib: MXNet's ndarray.contrib namespace, the contributed operators (registered as
`_contrib_<name>`) under their short names, as NDArray functions."""
from . import _ops

_ops.populate_namespace(globals(), "_contrib_")


def _rescale_array(rescale_grad, like):
    # The AdamW operators read rescale_grad from a one-element float32 array (so a loss
    # scaler can hand over a value computed on the device); numbers are wrapped here.
    from .ndarray import NDArray, full
    if isinstance(rescale_grad, NDArray):
        return rescale_grad.as_in_context(like.context)
    return full((1,), float(rescale_grad), ctx=like.context, dtype="float32")


def _interleave(*lists):
    return [x for group in zip(*lists) for x in group]


def adamw_update(weight, grad, mean, var, rescale_grad, lr, eta, beta1=0.9, beta2=0.999, epsilon=1e-8, wd=0,
                 clip_gradient=-1, out=None, **kwargs):
    """_adamw_update with rescale_grad given as a number or a one-element array."""
    return _ops.get("_adamw_update")(weight, grad, mean, var, _rescale_array(rescale_grad, weight), lr=lr, eta=eta,
                                     beta1=beta1, beta2=beta2, epsilon=epsilon, wd=wd, clip_gradient=clip_gradient,
                                     out=out, **kwargs)


def mp_adamw_update(weight, grad, mean, var, weight32, rescale_grad, lr, eta, beta1=0.9, beta2=0.999, epsilon=1e-8,
                    wd=0, clip_gradient=-1, out=None, **kwargs):
    """_mp_adamw_update with rescale_grad given as a number or a one-element array."""
    return _ops.get("_mp_adamw_update")(weight, grad, mean, var, weight32, _rescale_array(rescale_grad, weight),
                                        lr=lr, eta=eta, beta1=beta1, beta2=beta2, epsilon=epsilon, wd=wd,
                                        clip_gradient=clip_gradient, out=out, **kwargs)


def multi_adamw_update(weights, grads, mean, var, rescale_grad, lrs, wds, etas, out=None, size=0, **kwargs):
    """_multi_adamw_update over lists of weights, gradients, means and variances."""
    n = size or len(weights)
    args = _interleave(weights, grads, mean, var) + [_rescale_array(rescale_grad, weights[0])]
    return _ops.get("_multi_adamw_update")(*args, out=out, num_weights=n, lrs=lrs, wds=wds, etas=etas, **kwargs)


def multi_mp_adamw_update(weights, grads, mean, var, weights32, rescale_grad, lrs, wds, etas, out=None, size=0,
                          **kwargs):
    """_multi_mp_adamw_update over lists of weights, gradients, means, variances and master weights."""
    n = size or len(weights)
    args = _interleave(weights, grads, mean, var, weights32) + [_rescale_array(rescale_grad, weights[0])]
    return _ops.get("_multi_mp_adamw_update")(*args, out=out, num_weights=n, lrs=lrs, wds=wds, etas=etas, **kwargs)


def multi_lamb_update(weights, grads, mean, var, step_count, lrs, wds, out=None, num_tensors=0, **kwargs):
    """_multi_lamb_update over lists of weights, gradients, means and variances; step_count,
    lrs and wds hold one value per tensor."""
    n = num_tensors or len(weights)
    return _ops.get("_multi_lamb_update")(*_interleave(weights, grads, mean, var), out=out, num_tensors=n,
                                          step_count=step_count, learning_rates=lrs, wds=wds, **kwargs)


def multi_mp_lamb_update(weights, grads, mean, var, weights32, step_count, lrs, wds, out=None, num_tensors=0,
                         **kwargs):
    """_multi_mp_lamb_update over lists of weights, gradients, float32 means, variances and
    master weights."""
    n = num_tensors or len(weights)
    return _ops.get("_multi_mp_lamb_update")(*_interleave(weights, grads, mean, var, weights32), out=out,
                                             num_tensors=n, step_count=step_count, learning_rates=lrs, wds=wds,
                                             **kwargs)


def rand_zipfian(true_classes, num_sampled, range_max, ctx=None):
    """Draws num_sampled classes of [0, range_max), with replacement, from the approximately
    log-uniform distribution P(c) = log((c + 2) / (c + 1)) / log(range_max + 1); returns the
    samples (int64), and the expected counts (float64) of the true classes and of the
    samples in num_sampled draws."""
    import math
    from ..context import current_context
    from . import random
    ctx = current_context() if ctx is None else ctx
    log_range = math.log(range_max + 1)
    u = random.uniform(0, log_range, shape=(num_sampled,), dtype="float64", ctx=ctx)
    # exp(u) - 1 lies in [0, range_max); the modulo guards against rounding up to range_max.
    samples = (u.exp() - 1).astype("int64") % range_max

    def expected(cls):
        c = cls.astype("float64")
        return ((c + 2.0) / (c + 1.0)).log() / log_range * num_sampled

    return samples, expected(true_classes.as_in_context(ctx)), expected(samples)


# Control flow. MXNet runs these imperatively as Python loops over NDArrays, so autograd
# records every step and gradients flow through the loop without a dedicated operator.

def _flatten(nested, what):
    """Flattens an NDArray or nested lists/tuples of NDArrays into a list, with a format
    that _regroup uses to rebuild the nesting (an int counts leaves; None is one leaf)."""
    from .ndarray import NDArray
    if nested is None:
        return [], 0
    if isinstance(nested, NDArray):
        return [nested], None
    if not isinstance(nested, (list, tuple)):
        raise ValueError("%s must be an NDArray or a nested list of NDArrays, got %s" % (what, type(nested).__name__))
    flat, fmt = [], []
    for item in nested:
        f, sub = _flatten(item, what)
        flat.extend(f)
        fmt.append(sub)
    return flat, fmt


def _regroup(flat, fmt):
    """Inverse of _flatten: returns the nested structure and the leaves it did not use."""
    if fmt is None:
        return flat[0], flat[1:]
    out = []
    for sub in fmt:
        item, flat = _regroup(flat, sub)
        out.append(item)
    return out, flat


def _scalar(value, type_, what):
    if hasattr(value, "asscalar"):
        value = value.asscalar()
    try:
        return type_(value)
    except (TypeError, ValueError):
        raise ValueError("Cannot convert %s to python %s" % (what, type_.__name__))


def foreach(body, data, init_states):
    """Runs `out, states = body(data[i], states)` for i along axis 0 of `data` (an NDArray or
    a list of NDArrays sharing axis 0) and returns (outputs of all steps stacked on a new
    axis 0, the last states), keeping the nesting that `body` gave them."""
    from .ndarray import NDArray
    _flatten(data, "foreach data")
    _flatten(init_states, "foreach init_states")
    single = isinstance(data, NDArray)
    if not single and not data:
        raise ValueError("foreach: data must hold at least one NDArray")
    steps = data.shape[0] if single else data[0].shape[0]
    states, per_step, out_fmt = init_states, [], None
    for i in range(steps):
        outs, states = body(data[i] if single else [d[i] for d in data], states)
        flat, out_fmt = _flatten(outs, "foreach output")
        per_step.append(flat)
    if not per_step:
        return [], states
    stacked = [_ops.get("stack")(*column, axis=0) for column in zip(*per_step)]
    return _regroup(stacked, out_fmt)[0], states


def while_loop(cond, func, loop_vars, max_iterations=None):
    """Runs `step_output, loop_vars = func(*loop_vars)` while `cond(*loop_vars)` is true, at
    most max_iterations times. Returns (the step outputs stacked on axis 0, the final loop
    variables). As in MXNet the stacked outputs have max_iterations rows whatever the number
    of steps; rows past the last step are zeros here (MXNet leaves them undefined)."""
    from .ndarray import NDArray, zeros
    if max_iterations is None:
        raise ValueError("max_iterations should be specified")
    max_iterations = _scalar(max_iterations, int, "max_iterations")
    single = isinstance(loop_vars, NDArray)
    loop_vars = [loop_vars] if single else list(loop_vars)
    if not loop_vars:
        raise ValueError("loop_vars should contain at least one element")
    _flatten(loop_vars, "while_loop loop_vars")
    steps, per_step, out_fmt = 0, [], None
    while steps < max_iterations and _scalar(cond(*loop_vars), bool, "the return value of cond"):
        step_output, new_vars = func(*loop_vars)
        new_vars = [] if new_vars is None else ([new_vars] if isinstance(new_vars, NDArray) else list(new_vars))
        if len(new_vars) != len(loop_vars):
            raise ValueError("while_loop: func returned %d loop variables, expected %d (the length of loop_vars "
                             "must stay the same)" % (len(new_vars), len(loop_vars)))
        flat, out_fmt = _flatten([] if step_output is None else step_output, "while_loop step output")
        if per_step and len(flat) != len(per_step[0]):
            raise ValueError("while_loop: step %d gave %d outputs, step 0 gave %d" % (steps, len(flat),
                                                                                       len(per_step[0])))
        per_step.append(flat)
        loop_vars = new_vars
        steps += 1
    stacked = []
    for k, column in enumerate(zip(*per_step)):
        if any(x.shape != column[0].shape for x in column):
            raise ValueError("while_loop: shapes of output %d differ between steps: %s"
                             % (k, [x.shape for x in column]))
        rows = [x.expand_dims(0) for x in column]
        if steps < max_iterations:
            rows.append(zeros((max_iterations - steps,) + column[0].shape, ctx=column[0].context,
                              dtype=column[0].dtype))
        stacked.append(_ops.get("concat")(*rows, dim=0))
    if per_step:
        stacked = _regroup(stacked, out_fmt)[0]
    return stacked, (loop_vars[0] if single else loop_vars)


def cond(pred, then_func, else_func):
    """Returns then_func() if the one-element `pred` is nonzero, else else_func()."""
    return then_func() if _scalar(pred, bool, "pred") else else_func()


def isinf(data):
    """1 where `data` is +inf or -inf, else 0 (same dtype as data)."""
    return data.abs() == float("inf")


def isfinite(data):
    """1 where `data` is neither infinite nor NaN, else 0."""
    return (data.abs() != float("inf")) * (data == data)


def isnan(data):
    """1 where `data` is NaN, else 0."""
    return data != data
