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
