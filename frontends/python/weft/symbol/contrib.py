"""weft.symbol.contrib: MXNet's symbol.contrib namespace, the contributed operators (registered as
`_contrib_<name>`) under their short names, as Symbol functions."""
from . import _ops

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
