"""Helpers of MXNet 1.x's `gluon.utils`."""
import numpy as np

from .. import ndarray as nd

__all__ = ["split_data", "split_and_load", "clip_global_norm"]


def split_data(data, num_slice, batch_axis=0, even_split=True):
    """Splits `data` into num_slice parts along batch_axis."""
    size = data.shape[batch_axis]
    if even_split and size % num_slice != 0:
        raise ValueError("split_data: data with shape %s cannot be split evenly into %d slices along axis %d; "
                         "use a batch size divisible by the number of contexts or even_split=False"
                         % (data.shape, num_slice, batch_axis))
    if size < num_slice:
        raise ValueError("split_data: %d samples cannot be split into %d slices" % (size, num_slice))
    step = size // num_slice
    bounds = [i * step for i in range(num_slice)] + [size]
    if batch_axis == 0:
        return [data[bounds[i]:bounds[i + 1]] for i in range(num_slice)]
    return [nd.slice_axis(data, axis=batch_axis, begin=bounds[i], end=bounds[i + 1]) for i in range(num_slice)]


def split_and_load(data, ctx_list, batch_axis=0, even_split=True):
    """Splits `data` along batch_axis and puts one part on each context."""
    if not isinstance(data, nd.NDArray):
        data = nd.array(np.asarray(data), ctx=ctx_list[0])
    if len(ctx_list) == 1:
        return [data.as_in_context(ctx_list[0])]
    parts = split_data(data, len(ctx_list), batch_axis, even_split)
    return [p.as_in_context(c) for p, c in zip(parts, ctx_list)]


def clip_global_norm(arrays, max_norm, check_isfinite=True):
    """Scales `arrays` in place so that their joint 2-norm is at most max_norm; returns the norm."""
    if not arrays:
        raise ValueError("clip_global_norm: no arrays given")
    total = 0.0
    for a in arrays:
        total += float(nd.sum(nd.square(a)).asscalar())
    norm = float(np.sqrt(total))
    if check_isfinite and not np.isfinite(norm):
        import warnings
        warnings.warn("clip_global_norm: the norm is not finite; the arrays are left unchanged", stacklevel=2)
        return norm
    scale = max_norm / (norm + 1e-8)
    if scale < 1.0:
        for a in arrays:
            a *= scale
    return norm
