"""Random samplers of weft.nd.random, with MXNet 1.x's signatures. Seed them with
weft.random.seed."""
from ..context import current_context, Context
from .ndarray import NDArray, invoke, _dtype_name

__all__ = ["uniform", "normal", "randn", "randint", "exponential", "gamma", "poisson", "multinomial", "shuffle"]


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
    for what, v in (("loc", loc), ("scale", scale)):
        if isinstance(v, NDArray):
            # MXNet draws per element of NDArray parameters with _sample_normal.
            raise NotImplementedError("randn: %s as an NDArray (one distribution per element) needs the "
                                      "_sample_normal operator, which Weft does not have yet; pass a number"
                                      % what)
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise TypeError("randn: expected a number for %s, got %s" % (what, type(v).__name__))
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        shape = tuple(shape[0])
    return normal(loc, scale, shape if shape else (1,), dtype=dtype, ctx=ctx, out=out)


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
