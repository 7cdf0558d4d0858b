"""Data iterators with MXNet 1.x's interface: DataDesc, DataBatch, DataIter and the Python
iterators NDArrayIter, ResizeIter and PrefetchingIter; MXDataIter wraps an iterator of the
C++ registry (MNISTIter, CSVIter, ...), whose constructors weft.io generates."""
import logging
import threading
from collections import OrderedDict, namedtuple

import numpy as np

from ..base import _api
from ..ndarray import NDArray, array
from ..ndarray import ndarray as _nd_impl
from ..ndarray import sparse as _sparse

__all__ = ["DataDesc", "DataBatch", "DataIter", "NDArrayIter", "ResizeIter", "PrefetchingIter", "MXDataIter"]


class DataDesc(namedtuple("DataDesc", ["name", "shape"])):
    """The name, shape, dtype and layout of one array a data iterator yields (the shape
    includes the batch axis)."""

    def __new__(cls, name, shape, dtype=np.float32, layout="NCHW"):
        ret = super(DataDesc, cls).__new__(cls, name, tuple(shape))
        ret.dtype = dtype
        ret.layout = layout
        return ret

    def __repr__(self):
        return "DataDesc[%s,%s,%s,%s]" % (self.name, self.shape, self.dtype, self.layout)

    @staticmethod
    def get_batch_axis(layout):
        """The index of 'N' in `layout` (0 when layout is None)."""
        if layout is None:
            return 0
        return layout.find("N")

    @staticmethod
    def get_list(shapes, types):
        """DataDescs from (name, shape) pairs and, optionally, (name, dtype) pairs."""
        if types is not None:
            type_dict = dict(types)
            return [DataDesc(x[0], x[1], type_dict[x[0]]) for x in shapes]
        return [DataDesc(x[0], x[1]) for x in shapes]


class DataBatch(object):
    """One batch: lists of data and label NDArrays, how many trailing samples are padding,
    and the samples' indices."""

    def __init__(self, data, label=None, pad=None, index=None, bucket_key=None, provide_data=None,
                 provide_label=None):
        if data is not None and not isinstance(data, (list, tuple)):
            raise TypeError("DataBatch: data must be a list of NDArrays, got %s" % type(data).__name__)
        if label is not None and not isinstance(label, (list, tuple)):
            raise TypeError("DataBatch: label must be a list of NDArrays, got %s" % type(label).__name__)
        self.data = data
        self.label = label
        self.pad = pad
        self.index = index
        self.bucket_key = bucket_key
        self.provide_data = provide_data
        self.provide_label = provide_label

    def __str__(self):
        data_shapes = [d.shape for d in self.data] if self.data else []
        label_shapes = [l.shape for l in self.label] if self.label else None
        return "%s: data shapes: %s label shapes: %s" % (self.__class__.__name__, data_shapes, label_shapes)


class DataIter(object):
    """The base of data iterators: iterate with `for batch in it`, or call next() until
    StopIteration; reset() starts a new epoch. Subclasses implement iter_next, getdata,
    getlabel, getindex and getpad, or next itself."""

    def __init__(self, batch_size=0):
        self.batch_size = batch_size

    def __iter__(self):
        return self

    def reset(self):
        """Goes back to the beginning of the data."""

    def _reset_unseen(self, ended):
        """Resets as reset() would had the last next() not been called (it returned a batch,
        or the end of the epoch when `ended`). A PrefetchingIter calls this when it took a
        result its consumer never saw, so a reset in the middle of an epoch gives what the
        iterator alone gives. Iterators whose reset does not depend on where the epoch
        stopped keep this default."""
        self.reset()

    def next(self):
        """The next batch; raises StopIteration at the end of the epoch."""
        if self.iter_next():
            return DataBatch(data=self.getdata(), label=self.getlabel(), pad=self.getpad(), index=self.getindex())
        raise StopIteration

    def __next__(self):
        return self.next()

    def iter_next(self):
        """Moves to the next batch; False at the end of the epoch."""
        raise NotImplementedError("%s must define iter_next" % type(self).__name__)

    # As in MXNet, what a subclass does not define is None in the batch (an iterator of
    # unlabelled data defines getdata only: example/vae-gan's RandIter).
    def getdata(self):
        """The data of the current batch (None unless a subclass defines it)."""
        return None

    def getlabel(self):
        """The label of the current batch (None unless a subclass defines it)."""
        return None

    def getindex(self):
        """The indices of the current batch's samples, or None."""
        return None

    def getpad(self):
        """How many trailing samples of the current batch are padding (None unless a subclass
        defines it)."""
        return None


class ResizeIter(DataIter):
    """Makes `data_iter` yield exactly `size` batches per epoch: a short iterator is reset
    and continued, a long one is cut. reset_internal: whether reset() also resets the
    wrapped iterator (otherwise the next epoch continues where this one stopped)."""

    def __init__(self, data_iter, size, reset_internal=True):
        super(ResizeIter, self).__init__()
        if size <= 0:
            raise ValueError("ResizeIter: size must be positive, got %r" % (size,))
        self.data_iter = data_iter
        self.size = size
        self.reset_internal = reset_internal
        self.cur = 0
        self.current_batch = None
        self.provide_data = data_iter.provide_data
        self.provide_label = data_iter.provide_label
        self.batch_size = data_iter.batch_size
        if hasattr(data_iter, "default_bucket_key"):
            self.default_bucket_key = data_iter.default_bucket_key

    def reset(self):
        self.cur = 0
        if self.reset_internal:
            self.data_iter.reset()

    def iter_next(self):
        if self.cur == self.size:
            return False
        try:
            self.current_batch = self.data_iter.next()
        except StopIteration:
            self.data_iter.reset()
            self.current_batch = self.data_iter.next()
        self.cur += 1
        return True

    def getdata(self):
        return self.current_batch.data

    def getlabel(self):
        return self.current_batch.label

    def getindex(self):
        return self.current_batch.index

    def getpad(self):
        return self.current_batch.pad


class PrefetchingIter(DataIter):
    """Loads the next batch of each of `iters` on its own thread while the caller works on
    the current one, and joins their batches: the data (and labels) of iters[0], then of
    iters[1], ... rename_data / rename_label: one {old name: new name} dict per iterator.
    The epoch ends when the first iterator ends."""

    def __init__(self, iters, rename_data=None, rename_label=None):
        super(PrefetchingIter, self).__init__()
        if not isinstance(iters, list):
            iters = [iters]
        if not iters:
            raise ValueError("PrefetchingIter: expected at least one iterator")
        for name, ren in (("rename_data", rename_data), ("rename_label", rename_label)):
            if ren is not None and len(ren) != len(iters):
                raise ValueError("PrefetchingIter: %s must hold one dict per iterator (%d), got %d"
                                 % (name, len(iters), len(ren)))
        self.iters = iters
        self.n_iter = len(iters)
        self.rename_data = rename_data
        self.rename_label = rename_label
        self.batch_size = self.provide_data[0][1][0]
        self._lock = threading.Condition()
        # Per iterator: its next batch (None at the end of the epoch), or the exception it
        # raised; whether that slot is filled; and whether its thread should fetch.
        self._next = [None] * self.n_iter
        self._error = [None] * self.n_iter
        self._ready = [False] * self.n_iter
        self._want = [True] * self.n_iter
        self._started = True
        self._ended = False  # the consumer saw this epoch's end (or its error)
        self.current_batch = None
        self._threads = [threading.Thread(target=self._fetch, args=(i,), daemon=True) for i in range(self.n_iter)]
        for t in self._threads:
            t.start()

    def _fetch(self, i):
        while True:
            with self._lock:
                while self._started and not self._want[i]:
                    self._lock.wait()
                if not self._started:
                    return
                self._want[i] = False
            batch, err = None, None
            try:
                batch = self.iters[i].next()
            except StopIteration:
                batch = None
            except Exception as e:  # handed to the consumer, raised from next()
                err = e
            with self._lock:
                self._next[i] = batch
                self._error[i] = err
                self._ready[i] = True
                self._lock.notify_all()

    def _wait_ready(self):
        with self._lock:
            while not all(self._ready):
                self._lock.wait()

    def close(self):
        """Stops the threads (after the fetches in progress)."""
        with self._lock:
            self._started = False
            self._lock.notify_all()
        for t in self._threads:
            t.join()

    def __del__(self):
        if getattr(self, "_threads", None):
            try:
                self.close()
            except Exception:  # interpreter shutdown: threads are daemons anyway
                pass

    def _renamed(self, descs, renames):
        if renames is None:
            return sum(descs, [])
        out = []
        for ren, ds in zip(renames, descs):
            for d in ds:
                if isinstance(d, DataDesc):
                    out.append(DataDesc(ren.get(d.name, d.name), d.shape, d.dtype, d.layout))
                else:
                    out.append(DataDesc(ren.get(d[0], d[0]), d[1]))
        return out

    @property
    def provide_data(self):
        return self._renamed([list(i.provide_data) for i in self.iters], self.rename_data)

    @property
    def provide_label(self):
        return self._renamed([list(i.provide_label) for i in self.iters], self.rename_label)

    def reset(self):
        self._restart(None if self._ended else "unseen")

    def _reset_unseen(self, ended):
        # Undoing the end this iterator returned leaves each iterator's result behind it
        # unseen; undoing a batch also undoes the batch each iterator gave for it.
        self._restart("unseen" if ended else "batch")

    def _restart(self, undo):
        """Resets the iterators as they would be without the prefetch. An iterator's reset
        may depend on where it stopped (roll_over, round_batch), and each has made one result
        (a batch, or its end) that the consumer has not seen, unless the consumer saw the end
        of the epoch (`undo` None): with `undo` "unseen" each is reset as if that result had
        not been made; with "batch" (an outer prefetcher undoing this one's last batch) as if
        the batch before it had not been made either."""
        self._wait_ready()
        for i, it in enumerate(self.iters):
            unseen = getattr(it, "_reset_unseen", None)
            if unseen is None or undo is None:
                it.reset()
            else:
                unseen(undo == "unseen" and self._next[i] is None)
        self._ended = False
        with self._lock:
            self._ready = [False] * self.n_iter
            self._error = [None] * self.n_iter
            self._want = [True] * self.n_iter
            self._lock.notify_all()

    def iter_next(self):
        self._wait_ready()
        for err in self._error:
            if err is not None:
                # The epoch ends with the error: later calls report its end until reset().
                with self._lock:
                    self._error = [None] * self.n_iter
                    self._next = [None] * self.n_iter
                self._ended = True
                raise err
        if self._next[0] is None:
            for b in self._next[1:]:
                if b is not None:
                    raise ValueError("PrefetchingIter: the iterators have different numbers of batches")
            self._ended = True
            return False
        for b in self._next[1:]:
            if b is None:
                raise ValueError("PrefetchingIter: the iterators have different numbers of batches")
        batches = list(self._next)
        self.current_batch = DataBatch(sum([b.data for b in batches], []),
                                       sum([b.label or [] for b in batches], []),
                                       batches[0].pad, batches[0].index,
                                       provide_data=self.provide_data, provide_label=self.provide_label)
        with self._lock:
            self._ready = [False] * self.n_iter
            self._want = [True] * self.n_iter
            self._lock.notify_all()
        return True

    def next(self):
        if self.iter_next():
            return self.current_batch
        raise StopIteration

    def getdata(self):
        return self.current_batch.data

    def getlabel(self):
        return self.current_batch.label

    def getindex(self):
        return self.current_batch.index

    def getpad(self):
        return self.current_batch.pad


def _init_data(data, allow_empty, default_name):
    """(name, NDArray) pairs from an array, a list of arrays or a dict of them; a list of
    several gets names '_<i>_<default_name>', a dict is sorted by name (as MXNet does)."""
    if data is None:
        if not allow_empty:
            raise ValueError("NDArrayIter: data must be given")
        data = []
    if isinstance(data, (np.ndarray, NDArray)):
        data = [data]
    if isinstance(data, list):
        if not allow_empty and not data:
            raise ValueError("NDArrayIter: data must not be an empty list")
        if len(data) == 1:
            data = OrderedDict([(default_name, data[0])])
        else:
            data = OrderedDict([("_%d_%s" % (i, default_name), d) for i, d in enumerate(data)])
    if not isinstance(data, dict):
        raise TypeError("NDArrayIter: input must be an NDArray, a numpy.ndarray, a list of them or a dict with "
                        "them as values, got %s" % type(data).__name__)
    out = []
    for k, v in sorted(data.items()):
        if not isinstance(v, NDArray):
            try:
                v = array(v)
            except Exception:
                raise TypeError("NDArrayIter: invalid type '%s' for %s, expected an NDArray or numpy.ndarray"
                                % (type(v).__name__, k))
        if v.ndim == 0:
            raise ValueError("NDArrayIter: %s must have a batch axis, got a scalar" % k)
        out.append((k, v))
    return out


def _reordered(v, idx, axis=0):
    """The samples of `v` (along `axis`) in the order `idx`, in v's storage type."""
    if isinstance(v, _sparse.CSRNDArray):
        return _sparse.csr_matrix(v.asnumpy()[idx], ctx=v.context)
    return array(np.take(v.asnumpy(), idx, axis=axis), ctx=v.context)


class NDArrayIter(DataIter):
    """Iterates over in-memory arrays (NDArray or numpy; an array, a list or a dict of them
    for data and for label), batch_size samples at a time along the batch axis: the
    position of 'N' in `layout` (the first axis for the default 'NCHW'; 'TNC' batches
    sequences along the second). A label with fewer axes is batched along its first.

    shuffle: reorders the samples at every reset (with numpy's global RNG, as MXNet).
    last_batch_handle, for the samples left when batch_size does not divide the set:
      'pad': the last batch is filled up from the start of the data; getpad() counts the
             filler.
      'discard': the incomplete batch is dropped.
      'roll_over': the incomplete batch is dropped in this epoch and its samples start the
             first batch of the next one (getpad() of that batch counts them).
    """

    def __init__(self, data, label=None, batch_size=1, shuffle=False, last_batch_handle="pad", data_name="data",
                 label_name="softmax_label", layout="NCHW"):
        super(NDArrayIter, self).__init__(batch_size)
        if not isinstance(layout, str) or layout.find("N") < 0:
            raise ValueError("NDArrayIter: layout must name the batch axis with 'N' (e.g. 'NCHW', 'TNC'), got %r"
                             % (layout,))
        self.layout = layout
        if last_batch_handle not in ("pad", "discard", "roll_over"):
            raise ValueError("NDArrayIter: last_batch_handle must be 'pad', 'discard' or 'roll_over', got %r"
                             % (last_batch_handle,))
        if int(batch_size) <= 0:
            raise ValueError("NDArrayIter: batch_size must be positive, got %r" % (batch_size,))
        self.data = _init_data(data, allow_empty=False, default_name=data_name)
        self.label = _init_data(label, allow_empty=True, default_name=label_name)
        if (any(isinstance(v, _sparse.CSRNDArray) for _, v in self.data + self.label)
                and last_batch_handle != "discard"):
            # Batches of csr rows are row slices; padding or carrying over would join them.
            raise NotImplementedError("NDArrayIter: CSRNDArray data or label needs last_batch_handle='discard', "
                                      "got %r" % (last_batch_handle,))
        for k, v in self.data:
            if layout.find("N") >= len(v.shape):
                raise ValueError("NDArrayIter: layout %r puts the batch axis at %d, but %s has shape %s"
                                 % (layout, layout.find("N"), k, tuple(v.shape)))
        first = self.data[0][1]
        n = first.shape[self._axis(first)]
        for k, v in self.data + self.label:
            # Arrays longer than the first data array have their extra samples unused, as in
            # MXNet (a script may pair data[10:] with the whole label array).
            if v.shape[self._axis(v)] < n:
                raise ValueError("NDArrayIter: every array needs at least as many samples as the data: %s has %d, "
                                 "expected %d (of %s)" % (k, v.shape[self._axis(v)], n, self.data[0][0]))
        self.idx = np.arange(n)
        self.shuffle = shuffle
        self.last_batch_handle = last_batch_handle
        self.batch_size = int(batch_size)
        self.cursor = -self.batch_size
        self.num_data = n
        self._cache_data = None
        self._cache_label = None
        self.reset()
        self.data_list = [x[1] for x in self.data] + [x[1] for x in self.label]
        self.num_source = len(self.data_list)

    def _axis(self, v):
        axis = self.layout.find("N")
        return axis if len(v.shape) > axis else 0

    def _desc(self, k, v):
        shape = list(v.shape)
        axis = self._axis(v)
        shape[axis] = self.batch_size
        return DataDesc(k, tuple(shape), v.dtype, layout=self.layout if axis == self.layout.find("N") else "NCHW")

    @property
    def provide_data(self):
        return [self._desc(k, v) for k, v in self.data]

    @property
    def provide_label(self):
        return [self._desc(k, v) for k, v in self.label]

    def hard_reset(self):
        """Starts over, ignoring roll_over's cached samples."""
        if self.shuffle:
            self._shuffle_data()
        self.cursor = -self.batch_size
        self._cache_data = None
        self._cache_label = None

    def _reset_unseen(self, ended):
        # Only an incomplete batch is carried over, and roll_over never returns one: after a
        # returned batch reset starts over, and an unseen end only cached the incomplete one.
        self.hard_reset()

    def reset(self):
        if self.shuffle:
            self._shuffle_data()
        # An incomplete last batch of roll_over (cursor inside the last batch) is carried on.
        if self.last_batch_handle == "roll_over" and self.num_data - self.batch_size < self.cursor < self.num_data:
            self.cursor = self.cursor - self.num_data - self.batch_size
        else:
            self.cursor = -self.batch_size

    def iter_next(self):
        self.cursor += self.batch_size
        return self.cursor < self.num_data

    def next(self):
        if not self.iter_next():
            raise StopIteration
        data = self.getdata()
        label = self.getlabel()
        if data[0].shape[self._axis(data[0])] != self.batch_size:
            # Incomplete (discard, roll_over): kept for roll_over's next epoch.
            self._cache_data = data
            self._cache_label = label
            raise StopIteration
        return DataBatch(data=data, label=label, pad=self.getpad(), index=None)

    def _getdata(self, source, start=None, end=None):
        start = 0 if start is None else start
        if end is None:
            end = self.num_data
        return [self._slice(x[1], start, end) for x in source]

    def _slice(self, v, start, end):
        axis = self._axis(v)
        return v[start:end] if axis == 0 else v.slice_axis(axis=axis, begin=start, end=end)

    def _concat(self, first, second):
        if len(first) != len(second):
            raise ValueError("NDArrayIter: data sources hold different numbers of arrays")
        if first and second:
            return [_nd_impl.concatenate([a, b], axis=self._axis(a)) for a, b in zip(first, second)]
        return []

    def _batchify(self, source):
        if self.cursor >= self.num_data:
            raise ValueError("NDArrayIter: the iterator is at the end of the epoch; call reset()")
        if self.last_batch_handle == "roll_over" and -self.batch_size < self.cursor < 0:
            # First batch of an epoch after an incomplete one: the cached samples, then new ones.
            cache = self._cache_data if self._cache_data is not None else self._cache_label
            if cache is None:
                raise ValueError("NDArrayIter: roll_over has no samples cached from the previous epoch")
            second = self._getdata(source, end=self.cursor + self.batch_size)
            if self._cache_data is not None:
                self._cache_data = None
            else:
                self._cache_label = None
            return self._concat(cache, second)
        if self.last_batch_handle == "pad" and self.cursor + self.batch_size > self.num_data:
            pad = self.batch_size - self.num_data + self.cursor
            # A batch larger than the data set wraps around it as often as needed, as MXNet's.
            batch = self._getdata(source, start=self.cursor)
            for _ in range(pad // self.num_data):
                batch = self._concat(batch, self._getdata(source, end=self.num_data))
            if pad % self.num_data:
                batch = self._concat(batch, self._getdata(source, end=pad % self.num_data))
            return batch
        end = min(self.cursor + self.batch_size, self.num_data)
        return self._getdata(source, self.cursor, end)

    def getdata(self):
        return self._batchify(self.data)

    def getlabel(self):
        return self._batchify(self.label)

    def getpad(self):
        if self.last_batch_handle == "pad" and self.cursor + self.batch_size > self.num_data:
            return self.cursor + self.batch_size - self.num_data
        if self.last_batch_handle == "roll_over" and -self.batch_size < self.cursor < 0:
            return -self.cursor
        return 0

    def _shuffle_data(self):
        # The permutation composes with the previous ones, as MXNet's does.
        np.random.shuffle(self.idx)
        self.data = [(k, _reordered(v, self.idx, self._axis(v))) for k, v in self.data]
        self.label = [(k, _reordered(v, self.idx, self._axis(v))) for k, v in self.label]


class MXDataIter(DataIter):
    """A data iterator of the C++ registry, behind a weft_dataiter_t handle (made by the
    generated constructors, weft.io.MNISTIter(...) and others). The first data and label
    arrays are named data_name and label_name."""

    def __init__(self, handle, data_name="data", label_name="softmax_label", **_):
        super(MXDataIter, self).__init__()
        self.handle = handle
        self._has_batch = False
        self._debug_skip_load = False
        self.provide_data = self._descs(0, data_name)
        self.provide_label = self._descs(1, label_name)
        self.batch_size = self.provide_data[0].shape[0] if self.provide_data else 0

    def _descs(self, is_label, first_name):
        out = []
        for i in range(_api.weft_dataiter_get_num_descs(self.handle, is_label)):
            name, shape, dtype = _api.weft_dataiter_get_desc(self.handle, is_label, i)
            out.append(DataDesc(first_name if i == 0 else name, shape, _nd_impl._ID_TO_NP[dtype].type))
        return out

    def __del__(self):
        handle, self.handle = getattr(self, "handle", None), None
        if handle is not None and _api is not None:
            _api.weft_dataiter_free(handle)

    def reset(self):
        self._has_batch = False
        _api.weft_dataiter_reset(self.handle)

    def _reset_unseen(self, ended):
        # The end of an epoch changes nothing in the core's iterators; a batch that was
        # not seen may have been the wrapped last one, after which reset goes on from it.
        self._has_batch = False
        if ended:
            _api.weft_dataiter_reset(self.handle)
        else:
            _api.weft_dataiter_rewind(self.handle)

    def iter_next(self):
        self._has_batch = bool(_api.weft_dataiter_next(self.handle))
        return self._has_batch

    def next(self):
        if self._debug_skip_load and self._has_batch:
            return self._batch()
        if self.iter_next():
            return self._batch()
        raise StopIteration

    def _batch(self):
        return DataBatch(data=self._arrays(False), label=self._arrays(True), pad=self.getpad(), index=self.getindex())

    def debug_skip_load(self):
        """From now on next() gives the batch it gave last, again and again, without loading:
        to time a network without the loading (MXNet's debugging switch; the epoch never ends)."""
        self._debug_skip_load = True
        logging.info("MXDataIter.debug_skip_load: next() now repeats the current batch without loading")

    def _arrays(self, is_label):
        if is_label:
            n = _api.weft_dataiter_get_num_label(self.handle)
            return [NDArray(_api.weft_dataiter_get_label(self.handle, i)) for i in range(n)]
        n = _api.weft_dataiter_get_num_data(self.handle)
        return [NDArray(_api.weft_dataiter_get_data(self.handle, i)) for i in range(n)]

    def getdata(self):
        return self._arrays(False)[0]

    def getlabel(self):
        return self._arrays(True)[0]

    def getindex(self):
        n = _api.weft_dataiter_get_index_size(self.handle)
        out = np.empty(n, dtype=np.uint64)
        if n:
            _api.weft_dataiter_get_index(self.handle, out)
        return out

    def getpad(self):
        return _api.weft_dataiter_get_pad(self.handle)


class LibSVMDataIter(MXDataIter):
    """LibSVMIter's batches as MXNet gives them: csr data, and csr labels when the labels
    come from a second LibSVM file (dense ones otherwise), made csr by the C++ iterator;
    each array comes back as the class of its storage type."""

    def _arrays(self, is_label):
        if is_label:
            n = _api.weft_dataiter_get_num_label(self.handle)
            return [_sparse._wrap(_api.weft_dataiter_get_label(self.handle, i)) for i in range(n)]
        n = _api.weft_dataiter_get_num_data(self.handle)
        return [_sparse._wrap(_api.weft_dataiter_get_data(self.handle, i)) for i in range(n)]
