"""Random samplers of weft.nd.random, with MXNet 1.x's signatures. Seed them with
weft.random.seed."""
from ..context import current_context, Context
from .ndarray import invoke, _dtype_name

__all__ = ["uniform", "normal", "randint", "exponential", "gamma", "poisson", "multinomial", "shuffle"]


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


def uniform(low=0, high=1, shape=(1,), dtype=None, ctx=None, out=None, **kwargs):
    """Samples from U[low, high)."""
    return _sample("_random_uniform", {"low": low, "high": high}, shape, ctx, dtype, out)


def normal(loc=0, scale=1, shape=(1,), dtype=None, ctx=None, out=None, **kwargs):
    """Samples from N(loc, scale^2)."""
    return _sample("_random_normal", {"loc": loc, "scale": scale}, shape, ctx, dtype, out)


def randint(low, high, shape=(1,), dtype=None, ctx=None, out=None, **kwargs):
    """Samples integers from [low, high)."""
    return _sample("_random_randint", {"low": low, "high": high}, shape, ctx, dtype or "int32", out)


def exponential(scale=1, shape=(1,), dtype=None, ctx=None, out=None, **kwargs):
    """Samples from the exponential distribution of mean `scale`."""
    return _sample("_random_exponential", {"lam": 1.0 / scale}, shape, ctx, dtype, out)


def gamma(alpha=1, beta=1, shape=(1,), dtype=None, ctx=None, out=None, **kwargs):
    """Samples from Gamma(shape alpha, scale beta)."""
    return _sample("_random_gamma", {"alpha": alpha, "beta": beta}, shape, ctx, dtype, out)


def poisson(lam=1, shape=(1,), dtype=None, ctx=None, out=None, **kwargs):
    """Samples from Poisson(lam)."""
    return _sample("_random_poisson", {"lam": lam}, shape, ctx, dtype, out)


def multinomial(data, shape=(), get_prob=False, out=None, dtype="int32", **kwargs):
    """Draws category indices from the distributions in the last axis of `data`."""
    params = {"get_prob": get_prob, "dtype": _dtype_name(dtype)}
    if shape != ():
        params["shape"] = _shape(shape)
    return invoke("_sample_multinomial", [data], params, out=out)


def shuffle(data, **kwargs):
    """A copy of `data` with its rows (first axis) in random order."""
    return invoke("_shuffle", [data], {})
