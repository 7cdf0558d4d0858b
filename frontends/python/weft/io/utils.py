"""weft.io.utils (MXNet's mxnet.io.utils): the helpers NDArrayIter is built on, for iterators
written outside the package: naming and converting the data (`_init_data`), looking for a
storage class (`_has_instance`), reordering samples (`_getdata_by_idx`) and slicing a batch
(`_slice_along_batch_axis`)."""
from .io import _init_data, _reordered


def _has_instance(data, dtype):
    """Whether any array of the (name, array) pairs `data` is an instance of `dtype`."""
    return any(isinstance(arr, dtype) for _, arr in data)


def _getdata_by_idx(data, idx):
    """The (name, array) pairs with each array's samples in the order `idx`."""
    return [(k, _reordered(v, idx)) for k, v in data]


def _slice_along_batch_axis(data, s, batch_axis):
    """Elements s.start to s.stop of `data` along `batch_axis`."""
    return data.slice_axis(axis=batch_axis, begin=s.start, end=s.stop)


__all__ = []
