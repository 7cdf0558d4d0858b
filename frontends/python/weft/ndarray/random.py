"""Random samplers of weft.nd.random, with MXNet 1.x's signatures. Seed them with
weft.random.seed.

Given numbers, a sampler draws `shape` values of one distribution (the _random_*
operators); given NDArrays of parameters, one `shape`-sized block per element of them
(the _sample_* operators), as MXNet's do. Every operator registered as `_random_<name>`
(the densities pdf_*, the *_like samplers, ...) is here too under its short name."""
import numbers

from ..context import current_context, Context
from .ndarray import NDArray, invoke, _dtype_name
from . import _ops

__all__ = ["uniform", "normal", "randn", "randint", "exponential", "gamma", "poisson", "negative_binomial",
           "generalized_negative_binomial", "multinomial", "shuffle"]

_ops.populate_namespace(globals(), "_random_")


def _shape(shape):
    if isinstance(shape, int):
        return (shape,)
    return tuple(shape)


def _sample(op, params, shape, ctx, dtype, out):
    params = dict(params)
    params["shape"] = _shape(shape) if out is None else out.shape
    params["ctx"] = current_context() if ctx is None else Context(ctx)
    if dtype is not None:
        params["dtype"] = _dtype_name(dtype)
    elif out is not None:
        params["dtype"] = _dtype_name(out.dtype)
    return invoke(op, [], params, out=out)


def _per_element(op, params, shape, dtype, out):
    """One `shape`-sized block of samples per element of the parameter arrays."""
    attrs = {}
    if shape is not None:
        attrs["shape"] = _shape(shape)
    if dtype is not None:
        attrs["dtype"] = _dtype_name(dtype)
    return invoke(op, list(params), attrs, out=out)


def _dispatch(fname, generator, sampler, names, values, shape, dtype, ctx, out, to_scalar=None):
    """Numbers go to the `generator` operator, NDArrays to the per-element `sampler`; the
    parameters must be all numbers or all NDArrays, as MXNet requires."""
    arrays = [isinstance(v, NDArray) for v in values]
    if any(arrays):
        if not all(arrays):
            raise TypeError("%s: the distribution parameters must all be NDArrays or all numbers, got %s"
                            % (fname, ", ".join("%s: %s" % (n, type(v).__name__) for n, v in zip(names, values))))
        return _per_element(sampler, values, shape, dtype, out)
    for n, v in zip(names, values):
        if isinstance(v, bool) or not isinstance(v, numbers.Number):
            raise TypeError("%s: expected a number or an NDArray for %s, got %s" % (fname, n, type(v).__name__))
    params = dict(zip(to_scalar or names, values))
    return _sample(generator, params, (1,) if shape is None else shape, ctx, dtype, out)


def uniform(low=0, high=1, shape=None, dtype=None, ctx=None, out=None, **kwargs):
    """Samples from U[low, high) (per element of low and high when they are NDArrays)."""
    return _dispatch("uniform", "_random_uniform", "_sample_uniform", ["low", "high"], [low, high], shape, dtype,
                     ctx, out)


def normal(loc=0, scale=1, shape=None, dtype=None, ctx=None, out=None, **kwargs):
    """Samples from N(loc, scale^2) (per element of loc and scale when they are NDArrays)."""
    return _dispatch("normal", "_random_normal", "_sample_normal", ["loc", "scale"], [loc, scale], shape, dtype,
                     ctx, out)


def randn(*shape, **kwargs):
    """Samples from N(loc, scale^2) an array of shape `shape` (given as separate ints, as
    numpy.random.randn; none gives shape (1,), as `normal`'s default). Keyword arguments:
    loc=0, scale=1 (numbers), dtype, ctx, out."""
    loc = kwargs.pop("loc", 0)
    scale = kwargs.pop("scale", 1)
    dtype = kwargs.pop("dtype", None)
    ctx = kwargs.pop("ctx", None)
    out = kwargs.pop("out", None)
    if kwargs:
        raise TypeError("randn: unexpected keyword arguments %s (expected loc, scale, dtype, ctx, out)"
                        % sorted(kwargs))
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        shape = tuple(shape[0])
    if isinstance(loc, NDArray) or isinstance(scale, NDArray):
        return normal(loc, scale, shape if shape else None, dtype=dtype, ctx=ctx, out=out)
    for what, v in (("loc", loc), ("scale", scale)):
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise TypeError("randn: expected a number or an NDArray for %s, got %s" % (what, type(v).__name__))
    return normal(loc, scale, shape if shape else (1,), dtype=dtype, ctx=ctx, out=out)


def randint(low, high, shape=None, dtype=None, ctx=None, out=None, **kwargs):
    """Samples integers from [low, high)."""
    return _sample("_random_randint", {"low": low, "high": high}, (1,) if shape is None else shape, ctx,
                   dtype or "int32", out)


def exponential(scale=1, shape=None, dtype=None, ctx=None, out=None, **kwargs):
    """Samples from the exponential distribution of mean `scale` (per element when it is an
    NDArray)."""
    lam = 1.0 / scale if isinstance(scale, (NDArray, numbers.Number)) and not isinstance(scale, bool) else scale
    return _dispatch("exponential", "_random_exponential", "_sample_exponential", ["scale"], [lam], shape, dtype,
                     ctx, out, to_scalar=["lam"])


def gamma(alpha=1, beta=1, shape=None, dtype=None, ctx=None, out=None, **kwargs):
    """Samples from Gamma(shape alpha, scale beta) (per element when they are NDArrays)."""
    return _dispatch("gamma", "_random_gamma", "_sample_gamma", ["alpha", "beta"], [alpha, beta], shape, dtype, ctx,
                     out)


def poisson(lam=1, shape=None, dtype=None, ctx=None, out=None, **kwargs):
    """Samples from Poisson(lam) (per element when lam is an NDArray)."""
    return _dispatch("poisson", "_random_poisson", "_sample_poisson", ["lam"], [lam], shape, dtype, ctx, out)


def negative_binomial(k=1, p=1, shape=None, dtype=None, ctx=None, out=None, **kwargs):
    """Samples the number of failures before the k-th success of trials that succeed with
    probability p (per element when k and p are NDArrays)."""
    return _dispatch("negative_binomial", "_random_negative_binomial", "_sample_negative_binomial", ["k", "p"],
                     [k, p], shape, dtype, ctx, out)


def generalized_negative_binomial(mu=1, alpha=1, shape=None, dtype=None, ctx=None, out=None, **kwargs):
    """Samples from the negative binomial of mean mu and dispersion alpha (variance
    mu + alpha mu^2; per element when mu and alpha are NDArrays)."""
    return _dispatch("generalized_negative_binomial", "_random_generalized_negative_binomial",
                     "_sample_generalized_negative_binomial", ["mu", "alpha"], [mu, alpha], shape, dtype, ctx, out)


def multinomial(data, shape=(), get_prob=False, out=None, dtype="int32", **kwargs):
    """Draws category indices from the distributions in the last axis of `data`."""
    params = {"get_prob": get_prob, "dtype": _dtype_name(dtype)}
    if shape != ():
        params["shape"] = _shape(shape)
    return invoke("_sample_multinomial", [data], params, out=out)


def shuffle(data, **kwargs):
    """A copy of `data` with its rows (first axis) in random order."""
    return invoke("_shuffle", [data], {})
