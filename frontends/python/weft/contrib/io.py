"""weft.contrib.io: DataLoaderIter, a Gluon DataLoader seen as a Module data iterator."""
from ..io import DataDesc, DataIter
from .. import ndarray as nd

__all__ = ["DataLoaderIter"]


class DataLoaderIter(DataIter):
    """Iterates a `gluon.data.DataLoader` yielding (data, label) batches as `DataBatch`es
    named `data_name` and `label_name`, cast to `dtype`. The batch size is the first
    batch's; a shorter last batch is padded to it (its `pad` says by how much)."""

    def __init__(self, loader, data_name="data", label_name="softmax_label", dtype="float32"):
        super(DataLoaderIter, self).__init__()
        self._loader = loader
        self._iter = iter(self._loader)
        first = next(self._iter, None)
        if first is None:
            raise ValueError("DataLoaderIter: the loader yields no batch")
        if not (isinstance(first, (list, tuple)) and len(first) == 2):
            raise ValueError("DataLoaderIter: expected the loader to yield (data, label) pairs, got %s"
                             % type(first).__name__)
        data, label = first
        self.batch_size = data.shape[0]
        self.dtype = dtype
        self.provide_data = [DataDesc(data_name, data.shape, dtype)]
        self.provide_label = [DataDesc(label_name, label.shape, dtype)]
        self._current_batch = None
        self.reset()

    def reset(self):
        self._iter = iter(self._loader)

    def iter_next(self):
        self._current_batch = next(self._iter, None)
        return self._current_batch is not None

    def _padded(self, x):
        x = x.astype(self.dtype)
        if x.shape[0] == self.batch_size:
            return x
        out = nd.zeros((self.batch_size,) + tuple(x.shape[1:]), dtype=self.dtype)
        out[:x.shape[0]] = x
        return out

    def getdata(self):
        return [self._padded(self._current_batch[0])]

    def getlabel(self):
        return [self._padded(self._current_batch[1])]

    def getpad(self):
        return self.batch_size - self._current_batch[0].shape[0]

    def getindex(self):
        return None
