"""weft.symbol.contrib: MXNet's symbol.contrib namespace, the contributed operators (registered as
`_contrib_<name>`) under their short names, as Symbol functions."""
from . import _ops
from .symbol import Symbol

_ops.populate_namespace(globals(), "_contrib_")


def rand_zipfian(true_classes, num_sampled, range_max):
    """Symbol form of weft.nd.contrib.rand_zipfian: num_sampled classes of [0, range_max)
    drawn with replacement from P(c) = log((c + 2) / (c + 1)) / log(range_max + 1), with the
    expected counts of `true_classes` and of the samples."""
    import math
    from . import random
    log_range = math.log(range_max + 1)
    u = random.uniform(0, log_range, shape=(num_sampled,), dtype="float64")
    samples = _ops.get("Cast")(_ops.get("exp")(u) - 1, dtype="int64") % range_max

    def expected(cls):
        c = _ops.get("Cast")(cls, dtype="float64")
        return _ops.get("log")((c + 2.0) / (c + 1.0)) / log_range * num_sampled

    return samples, expected(true_classes), expected(samples)


def _rescale_symbol(rescale_grad):
    # The AdamW operators take rescale_grad as a one-element array; a number becomes a
    # constant node.
    if isinstance(rescale_grad, Symbol):
        return rescale_grad
    return _ops.get("_full")(shape=(1,), value=float(rescale_grad), dtype="float32")


def adamw_update(weight, grad, mean, var, rescale_grad, lr, eta, beta1=0.9, beta2=0.999, epsilon=1e-8, wd=0,
                 clip_gradient=-1, name=None, **kwargs):
    """_adamw_update with rescale_grad given as a number or a Symbol."""
    return _ops.get("_adamw_update")(weight, grad, mean, var, _rescale_symbol(rescale_grad), lr=lr, eta=eta,
                                     beta1=beta1, beta2=beta2, epsilon=epsilon, wd=wd, clip_gradient=clip_gradient,
                                     name=name, **kwargs)


def mp_adamw_update(weight, grad, mean, var, weight32, rescale_grad, lr, eta, beta1=0.9, beta2=0.999, epsilon=1e-8,
                    wd=0, clip_gradient=-1, name=None, **kwargs):
    """_mp_adamw_update with rescale_grad given as a number or a Symbol."""
    return _ops.get("_mp_adamw_update")(weight, grad, mean, var, weight32, _rescale_symbol(rescale_grad), lr=lr,
                                        eta=eta, beta1=beta1, beta2=beta2, epsilon=epsilon, wd=wd,
                                        clip_gradient=clip_gradient, name=name, **kwargs)


from .control_flow import cond, foreach, while_loop  # noqa: E402  (traced into _foreach, ... nodes)
