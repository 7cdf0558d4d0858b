"""weft.symbol.random: MXNet 1.x's symbol.random, the samplers as Symbol functions.

Given numbers, a sampler is a node of the _random_* operator drawing `shape` values; given
Symbols of parameters, a node of the per-element _sample_* operator, one `shape`-sized
block per element, as MXNet's. Every operator registered as `_random_<name>` (pdf_*,
*_like, ...) is here too under its short name."""
import numbers

from . import _ops
from .symbol import Symbol

__all__ = ["uniform", "normal", "randn", "poisson", "exponential", "gamma", "negative_binomial",
           "generalized_negative_binomial", "multinomial", "shuffle", "randint"]

_ops.populate_namespace(globals(), "_random_")


def _dispatch(fname, generator, sampler, names, values, shape, dtype, kwargs, to_scalar=None):
    symbols = [isinstance(v, Symbol) for v in values]
    if any(symbols):
        if not all(symbols):
            raise TypeError("%s: the distribution parameters must all be Symbols or all numbers, got %s"
                            % (fname, ", ".join("%s: %s" % (n, type(v).__name__) for n, v in zip(names, values))))
        return _ops.get(sampler)(*values, shape=shape, dtype=dtype, **kwargs)
    for n, v in zip(names, values):
        if isinstance(v, bool) or not isinstance(v, numbers.Number):
            raise TypeError("%s: expected a number or a Symbol for %s, got %s" % (fname, n, type(v).__name__))
    params = dict(zip(to_scalar or names, values))
    # The _random_* generators take no inputs, and MXNet's composition ignores keyword
    # Symbols given to an operator whose inputs are all bound (so randn(data=x) is randn()):
    # drop them as it does rather than fail.
    params.update((k, v) for k, v in kwargs.items() if not isinstance(v, Symbol))
    return _ops.get(generator)(shape=shape, dtype=dtype, **params)


def uniform(low=0, high=1, shape=None, dtype=None, **kwargs):
    """Samples from U[low, high) (per element when low and high are Symbols)."""
    return _dispatch("uniform", "_random_uniform", "_sample_uniform", ["low", "high"], [low, high], shape, dtype,
                     kwargs)


def normal(loc=0, scale=1, shape=None, dtype=None, **kwargs):
    """Samples from N(loc, scale^2) (per element when loc and scale are Symbols)."""
    return _dispatch("normal", "_random_normal", "_sample_normal", ["loc", "scale"], [loc, scale], shape, dtype,
                     kwargs)


def randn(*shape, **kwargs):
    """Samples from N(loc, scale^2) an array of shape `shape` (separate ints); keyword
    arguments loc=0, scale=1, dtype."""
    loc = kwargs.pop("loc", 0)
    scale = kwargs.pop("scale", 1)
    dtype = kwargs.pop("dtype", None)
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        shape = tuple(shape[0])
    return normal(loc, scale, shape if shape else None, dtype, **kwargs)


def poisson(lam=1, shape=None, dtype=None, **kwargs):
    """Samples from Poisson(lam) (per element when lam is a Symbol)."""
    return _dispatch("poisson", "_random_poisson", "_sample_poisson", ["lam"], [lam], shape, dtype, kwargs)


def exponential(scale=1, shape=None, dtype=None, **kwargs):
    """Samples from the exponential distribution of mean `scale` (per element when it is a
    Symbol)."""
    lam = 1.0 / scale if isinstance(scale, (Symbol, numbers.Number)) and not isinstance(scale, bool) else scale
    return _dispatch("exponential", "_random_exponential", "_sample_exponential", ["scale"], [lam], shape, dtype,
                     kwargs, to_scalar=["lam"])


def gamma(alpha=1, beta=1, shape=None, dtype=None, **kwargs):
    """Samples from Gamma(shape alpha, scale beta) (per element when they are Symbols)."""
    return _dispatch("gamma", "_random_gamma", "_sample_gamma", ["alpha", "beta"], [alpha, beta], shape, dtype,
                     kwargs)


def negative_binomial(k=1, p=1, shape=None, dtype=None, **kwargs):
    """Samples failures before the k-th success (success probability p)."""
    return _dispatch("negative_binomial", "_random_negative_binomial", "_sample_negative_binomial", ["k", "p"],
                     [k, p], shape, dtype, kwargs)


def generalized_negative_binomial(mu=1, alpha=1, shape=None, dtype=None, **kwargs):
    """Samples from the negative binomial of mean mu and dispersion alpha."""
    return _dispatch("generalized_negative_binomial", "_random_generalized_negative_binomial",
                     "_sample_generalized_negative_binomial", ["mu", "alpha"], [mu, alpha], shape, dtype, kwargs)


def multinomial(data, shape=None, get_prob=True, dtype="int32", **kwargs):
    """Draws category indices from the distributions in the last axis of `data`; with
    get_prob, also their log probabilities (MXNet's symbol default)."""
    return _ops.get("_sample_multinomial")(data, shape=shape, get_prob=get_prob, dtype=dtype, **kwargs)


def shuffle(data, **kwargs):
    """`data` with its rows (first axis) in random order."""
    return _ops.get("_shuffle")(data, **kwargs)


def randint(low, high, shape=None, dtype=None, **kwargs):
    """Samples integers from [low, high)."""
    return _ops.get("_random_randint")(low=low, high=high, shape=shape, dtype=dtype, **kwargs)
