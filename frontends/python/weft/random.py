"""Random numbers: `weft.random.seed` and the samplers of `weft.nd.random`, as in MXNet.

Draws are reproducible after `seed(n)` whatever the number of threads; `seed(n, ctx)`
seeds one context only.
"""
from .base import _api
from .context import Context
from .ndarray.random import (uniform, normal, randn, randint, exponential, gamma, poisson, negative_binomial,
                             generalized_negative_binomial, multinomial, shuffle)

__all__ = ["seed", "uniform", "normal", "randn", "randint", "exponential", "gamma", "poisson", "negative_binomial",
           "generalized_negative_binomial", "multinomial", "shuffle"]


def seed(seed_state, ctx="all"):
    """Seeds the generators of every context (ctx='all') or of one context."""
    if not isinstance(seed_state, int) or isinstance(seed_state, bool):
        raise ValueError("random.seed: expected an int seed, got %r" % (seed_state,))
    if ctx == "all":
        _api.weft_random_seed(seed_state)
    else:
        _api.weft_random_seed_context(seed_state, Context(ctx)._as_tuple())
