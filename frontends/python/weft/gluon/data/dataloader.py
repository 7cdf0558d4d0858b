"""DataLoader: batches of a Dataset, loaded in the calling thread or by parallel workers,
with MXNet 1.x's arguments and behaviour.

How workers are made
--------------------
With num_workers > 0 and thread_pool=False (the default) the workers are processes made by
fork(), as in MXNet: they inherit the dataset and batchify_fn (lambdas and local functions
included, nothing is pickled) and a script needs no `if __name__ == "__main__":` guard.
Weft's engine runs operators on C++ worker threads, which a forked child would not have:
around every fork (weft.base registers the hooks with os.register_at_fork) the engine
finishes what was pushed and stops its threads, which start again on demand in the parent
and in the child, so both keep using NDArrays. A worker makes each batch in cpu_shared
memory (default_mp_batchify_fn stacks the samples straight into it; other arrays are
copied there) and sends it as MXNet does: pickled by multiprocessing's ForkingPickler,
which this module teaches to send an NDArray as its shared-memory segment (reduce_ndarray:
a duplicate of the segment's descriptor travels over a Unix socket, with the shape and
dtype). The parent maps the segment: its batches are NDArrays on cpu_shared that share the
worker's memory, with no copy of the data on either side. Segments are anonymous (nothing in
/dev/shm), and the kernel frees each once both processes have dropped it. The workers live
as long as the DataLoader.

thread_pool=True runs the workers as threads of this process, which share the engine (its
API is thread-safe); as in MXNet, they too collate with default_mp_batchify_fn unless given a
batchify_fn, so their batches are on cpu_shared like the processes'. That suits datasets whose work releases the GIL (decoding, numpy, weft
operators).

Batches come back in sampler order whatever the worker that made them. Abandoning an
iteration midway is safe: the batches still in flight are dropped when they arrive. A
worker that dies or a batch that takes longer than `timeout` seconds raises an error instead
of hanging, and the workers are shut down when the DataLoader is garbage-collected or the
interpreter exits.
"""
import collections
import itertools
import multiprocessing
import os
import pickle
import queue
import random
import signal
import threading
import time
import traceback
import weakref
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as _FutureTimeout
from multiprocessing.reduction import DupFd, ForkingPickler

import numpy as np

from ... import ndarray as nd
from ...base import _api
from ...context import cpu_pinned, cpu_shared
from ...ndarray import NDArray
from ...ndarray.ndarray import _new_from_shared_mem
from .sampler import BatchSampler, RandomSampler, SequentialSampler

__all__ = ["DataLoader", "default_batchify_fn", "default_mp_batchify_fn"]


# ------------------------------------------------------------------------ NDArrays between processes
def rebuild_ndarray(pid, fd, shape, dtype):
    """An NDArray over the shared segment reduce_ndarray sent (MXNet's name). `fd` is
    multiprocessing's DupFd: detaching it receives a descriptor of this process."""
    del pid  # the segment is reached through the descriptor received, which is this process's
    fd = fd.detach()
    try:
        return NDArray(_new_from_shared_mem(os.getpid(), fd, shape, dtype))
    finally:
        # The array maps the segment through a descriptor of its own.
        os.close(fd)


def _rebuild_empty(shape, dtype):
    return nd.empty(shape, ctx=cpu_shared(), dtype=dtype)


def reduce_ndarray(data):
    """How multiprocessing's ForkingPickler sends an NDArray (MXNet's name): its memory in
    cpu_shared (copied there if it is elsewhere, or a view at an offset), named by a duplicate
    of the segment's descriptor, which keeps the segment alive until the receiver has it
    even if this process frees the array first."""
    if data.size == 0:
        return _rebuild_empty, (data.shape, data.dtype)
    data = data.as_in_context(cpu_shared())
    if _api.weft_ndarray_get_shared_mem(data)[2] != 0:
        data = data.copy()
    pid, fd, shape, dtype = data._to_shared_mem()
    return rebuild_ndarray, (pid, DupFd(fd), shape, dtype)


# Only dense NDArrays: ForkingPickler looks reducers up by exact type, so sparse arrays keep
# their own pickling (their raw bytes).
ForkingPickler.register(NDArray, reduce_ndarray)


def _check_same_shapes(arrays, who):
    first = arrays[0].shape
    for i, a in enumerate(arrays):
        if a.shape != first:
            raise ValueError("%s: samples must have one shape to be stacked into a batch; sample 0 "
                             "has shape %s but sample %d has shape %s" % (who, first, i, a.shape))


def default_batchify_fn(data):
    """Collates a list of samples into a batch: NDArrays are stacked on a new first axis,
    tuples are collated element by element into a list, anything else goes through
    numpy.asarray into an NDArray of the same dtype."""
    if isinstance(data[0], NDArray):
        _check_same_shapes(data, "default_batchify_fn")
        return nd.stack(*data, num_args=len(data))
    if isinstance(data[0], tuple):
        return [default_batchify_fn(list(field)) for field in zip(*data)]
    data = np.asarray(data)
    return nd.array(data, dtype=data.dtype)


def default_mp_batchify_fn(data):
    """The collation of worker processes (MXNet's): default_batchify_fn's, with the batch made
    in cpu_shared memory, so that it reaches the parent without a copy."""
    if isinstance(data[0], NDArray):
        _check_same_shapes(data, "default_mp_batchify_fn")
        out = nd.empty((len(data),) + data[0].shape, ctx=cpu_shared(), dtype=data[0].dtype)
        return nd.stack(*data, num_args=len(data), out=out)
    if isinstance(data[0], tuple):
        return [default_mp_batchify_fn(list(field)) for field in zip(*data)]
    data = np.asarray(data)
    return nd.array(data, dtype=data.dtype, ctx=cpu_shared())


def _map_leaves(obj, fn):
    if isinstance(obj, list):
        return [_map_leaves(x, fn) for x in obj]
    if type(obj) is tuple:
        return tuple(_map_leaves(x, fn) for x in obj)
    if isinstance(obj, dict):
        return {k: _map_leaves(v, fn) for k, v in obj.items()}
    return fn(obj)


def _send(batch):
    """A batch as bytes for the parent: its NDArrays as shared segments (reduce_ndarray)."""
    return bytes(ForkingPickler.dumps(batch, pickle.HIGHEST_PROTOCOL))


def _discard(batch):
    """Drops a batch nobody will read. Unpickling it takes its segments' descriptors from the
    worker (which holds them until then); freeing the arrays then frees the segments."""
    try:
        pickle.loads(batch)
    except Exception:  # the worker is gone (refused, unauthenticated), and its descriptors with it
        pass


def _as_in_context(obj, ctx):
    return _map_leaves(obj, lambda x: x.as_in_context(ctx) if isinstance(x, NDArray) else x)


class _RemoteTraceback(Exception):
    """Carries a worker's traceback as the cause of the error re-raised in the parent."""

    def __init__(self, tb):
        super().__init__(tb)
        self.tb = tb

    def __str__(self):
        return "\n(in a DataLoader worker process)\n" + self.tb


def _picklable_error(exc):
    try:
        pickle.loads(pickle.dumps(exc))
        return exc
    except Exception:  # an exception type that cannot travel: keep its type name and message
        return RuntimeError("%s: %s" % (type(exc).__name__, exc))


# ------------------------------------------------------------------------ worker processes
def _worker_loop(dataset, batchify_fn, task_queue, result_queue, seed):
    """The body of a forked worker process: loads the batches it is sent until it is sent
    None or its parent is gone."""
    # Ctrl-C reaches the whole process group: the parent handles it and stops the workers.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    from ... import random as weft_random
    random.seed(seed)
    np.random.seed(seed)
    weft_random.seed(seed)
    parent = multiprocessing.parent_process()
    while True:
        try:
            task = task_queue.get(timeout=1.0)
        except queue.Empty:
            if parent is not None and not parent.is_alive():
                break
            continue
        if task is None:
            break
        key, indices = task
        try:
            # Pickled here rather than by the queue's feeder thread, which would only print
            # the error of a batch that cannot be pickled and leave the parent waiting.
            batch = _send(batchify_fn([dataset[i] for i in indices]))
            result_queue.put((key, batch, None))
        except Exception as exc:
            result_queue.put((key, None, (_picklable_error(exc), traceback.format_exc())))
    # Results nobody will read must not keep this process alive at exit.
    result_queue.cancel_join_thread()


def _shutdown_processes(workers, task_queue, result_queue):
    for _ in workers:
        try:
            task_queue.put(None)
        except (OSError, ValueError):
            break
    deadline = time.monotonic() + 2.0
    for w in workers:
        w.join(timeout=max(0.0, deadline - time.monotonic()))
    for w in workers:
        if w.is_alive():
            w.terminate()
            w.join(timeout=1.0)
    # Batches made and never read need nothing more: their segments went with the workers'
    # descriptors.
    for q in (task_queue, result_queue):
        q.cancel_join_thread()
        q.close()


class _ProcessWorkers:
    """Forked worker processes sharing one task queue and one result queue."""

    def __init__(self, dataset, batchify_fn, num_workers):
        ctx = multiprocessing.get_context("fork")
        self._tasks = ctx.Queue()
        self._results = ctx.Queue()
        # Drawn from numpy's generator so that np.random.seed makes the workers' random
        # augmentations reproducible; one seed per worker so they differ from each other.
        base = int(np.random.randint(0, 2 ** 31 - num_workers))
        self._workers = [ctx.Process(target=_worker_loop,
                                     args=(dataset, batchify_fn, self._tasks, self._results, base + i),
                                     daemon=True, name="weft-dataloader-%d" % i) for i in range(num_workers)]
        for w in self._workers:
            w.start()
        self._finalizer = weakref.finalize(self, _shutdown_processes, self._workers, self._tasks, self._results)
        self._serials = itertools.count()
        self._live = set()
        self._arrived = {}
        # Epochs iterated from several threads share the result queue. Reentrant because
        # an abandoned iterator's __del__ (close) may run inside result() on this thread.
        self._lock = threading.RLock()

    def open(self):
        with self._lock:
            serial = next(self._serials)
            self._live.add(serial)
            return serial

    def close(self, serial):
        with self._lock:
            self._live.discard(serial)
            for key in list(self._arrived):
                if key[0] == serial:
                    batch, _ = self._arrived.pop(key)
                    if batch is not None:
                        _discard(batch)

    def submit(self, serial, seq, indices):
        self._tasks.put(((serial, seq), indices))
        return (serial, seq)

    def result(self, key, timeout):
        with self._lock:
            return self._result(key, timeout)

    def _result(self, key, timeout):
        deadline = time.monotonic() + timeout
        while key not in self._arrived:
            self._check_workers()
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise multiprocessing.TimeoutError(
                    "DataLoader: no batch from the worker processes within timeout=%gs" % timeout)
            try:
                rkey, batch, error = self._results.get(timeout=min(remaining, 0.5))
            except queue.Empty:
                continue
            if rkey[0] in self._live:
                self._arrived[rkey] = (batch, error)
            elif batch is not None:
                _discard(batch)
        batch, error = self._arrived.pop(key)
        if error is not None:
            self._raise(error, None)
        try:
            return pickle.loads(batch)
        except (OSError, EOFError):
            # The worker that made the batch hands its segments over as they are unpickled:
            # one that died since cannot, and its death is the error to report. Its socket
            # closes a moment before the process can be reaped.
            deadline = time.monotonic() + 2.0
            while time.monotonic() < deadline:
                self._check_workers()
                time.sleep(0.01)
            raise

    def _check_workers(self):
        dead = [w for w in self._workers if not w.is_alive()]
        if dead:
            raise RuntimeError("DataLoader: worker process %s (pid %d) exited unexpectedly with code %s"
                               % (dead[0].name, dead[0].pid, dead[0].exitcode))

    @staticmethod
    def _raise(error, context):
        exc, tb = error
        if context is not None:
            raise RuntimeError("DataLoader: %s: %s" % (context, exc)) from _RemoteTraceback(tb)
        raise exc from _RemoteTraceback(tb)

    def shutdown(self):
        self._finalizer()


# ------------------------------------------------------------------------ worker threads
def _load_batch(dataset, batchify_fn, indices):
    return batchify_fn([dataset[i] for i in indices])


class _ThreadWorkers:
    """A pool of threads of this process calling the dataset and batchify_fn directly."""

    def __init__(self, dataset, batchify_fn, num_workers):
        self._dataset = dataset
        self._batchify_fn = batchify_fn
        self._executor = ThreadPoolExecutor(num_workers, thread_name_prefix="weft-dataloader")
        self._finalizer = weakref.finalize(self, self._executor.shutdown, wait=False, cancel_futures=True)

    def open(self):
        return None

    def close(self, serial):
        pass

    def submit(self, serial, seq, indices):
        return self._executor.submit(_load_batch, self._dataset, self._batchify_fn, indices)

    def result(self, future, timeout):
        try:
            return future.result(timeout)
        except _FutureTimeout:
            raise multiprocessing.TimeoutError(
                "DataLoader: no batch from the worker threads within timeout=%gs" % timeout) from None

    def shutdown(self):
        self._finalizer()


class _MultiWorkerIter:
    """One epoch over workers: keeps up to `prefetch` batches in flight, yields in order."""

    def __init__(self, pool, batch_sampler, prefetch, timeout, pin_ctx):
        self._pool = pool
        self._serial = pool.open()
        self._batches = iter(batch_sampler)
        self._pending = collections.deque()
        self._timeout = timeout
        self._pin_ctx = pin_ctx
        self._sent = 0
        for _ in range(prefetch):
            self._push_next()

    def _push_next(self):
        indices = next(self._batches, None)
        if indices is None:
            return
        self._pending.append(self._pool.submit(self._serial, self._sent, indices))
        self._sent += 1

    def __iter__(self):
        return self

    def __next__(self):
        if not self._pending:
            self.close()
            raise StopIteration
        handle = self._pending.popleft()
        try:
            batch = self._pool.result(handle, self._timeout)
        except BaseException:
            self.close()
            raise
        self._push_next()
        if self._pin_ctx is not None:
            batch = _as_in_context(batch, self._pin_ctx)
        return batch

    def close(self):
        self._pending.clear()
        self._pool.close(self._serial)

    def __del__(self):
        self.close()


class DataLoader:
    """Loads batches from `dataset`.

    Parameters (as MXNet 1.x's gluon.data.DataLoader)
    ----------
    dataset : Dataset
    batch_size : int, required unless batch_sampler is given
    shuffle : bool, draw the samples in a random order each epoch
    sampler : Sampler of sample indices (not with shuffle)
    last_batch : 'keep' (default), 'discard' or 'rollover': what happens to a final short batch
    batch_sampler : Sampler of lists of indices (excludes batch_size, shuffle, sampler, last_batch)
    batchify_fn : collates a list of samples into a batch (default_batchify_fn)
    num_workers : int, workers loading batches in parallel (0: load in the calling thread)
    pin_memory : bool, return batches in page-locked memory (cpu_pinned)
    pin_device_id : int, the device whose pinned memory is used
    prefetch : int, batches kept in flight (default 2 * num_workers)
    thread_pool : bool, workers are threads rather than forked processes (see the module's docstring)
    timeout : seconds to wait for one batch from the workers before raising
    auto_reload : bool, start loading the next epoch's first batches as soon as an epoch
        ends (and the first epoch's at construction) rather than when it is iterated
    """

    def __init__(self, dataset, batch_size=None, shuffle=False, sampler=None, last_batch=None,
                 batch_sampler=None, batchify_fn=None, num_workers=0, pin_memory=False, pin_device_id=0,
                 prefetch=None, thread_pool=False, timeout=120, auto_reload=False):
        self._dataset = dataset
        self._pin_memory = bool(pin_memory)
        self._pin_device_id = pin_device_id
        self._thread_pool = bool(thread_pool)
        self._timeout = timeout
        if batch_sampler is None:
            if batch_size is None:
                raise ValueError("DataLoader: batch_size must be specified unless batch_sampler is specified")
            if sampler is None:
                sampler = RandomSampler(len(dataset)) if shuffle else SequentialSampler(len(dataset))
            elif shuffle:
                raise ValueError("DataLoader: shuffle must not be specified if sampler is specified")
            batch_sampler = BatchSampler(sampler, batch_size, last_batch if last_batch else "keep")
        elif batch_size is not None or shuffle or sampler is not None or last_batch is not None:
            raise ValueError("DataLoader: batch_size, shuffle, sampler and last_batch must not be "
                             "specified if batch_sampler is specified")
        self._batch_sampler = batch_sampler
        if isinstance(num_workers, bool) or not isinstance(num_workers, (int, np.integer)):
            raise ValueError("DataLoader: expected num_workers to be an int, got %r" % (num_workers,))
        self._num_workers = max(0, int(num_workers))
        self._prefetch = max(0, int(prefetch) if prefetch is not None else 2 * self._num_workers)
        self._user_batchify_fn = batchify_fn
        self._batchify_fn = default_batchify_fn if batchify_fn is None else batchify_fn
        if not timeout > 0:
            raise ValueError("DataLoader: timeout must be positive, got %r" % (timeout,))
        self._workers = None
        self._iter = None
        self.auto_reload = bool(auto_reload)
        if self.auto_reload:
            self.refresh()

    def _start_workers(self):
        # Workers collate into shared memory unless the user collates, as in MXNet, whose
        # worker threads too return cpu_shared batches.
        worker_fn = self._user_batchify_fn
        if self._thread_pool:
            return _ThreadWorkers(self._dataset, worker_fn or default_mp_batchify_fn, self._num_workers)
        if worker_fn is None or worker_fn is default_batchify_fn:
            worker_fn = default_mp_batchify_fn
        return _ProcessWorkers(self._dataset, worker_fn, self._num_workers)

    def _new_iter(self):
        pin_ctx = cpu_pinned(self._pin_device_id) if self._pin_memory else None
        if self._num_workers == 0:
            return self._same_thread_iter(pin_ctx)
        if self._workers is None:
            self._workers = self._start_workers()
        return _MultiWorkerIter(self._workers, self._batch_sampler, max(1, self._prefetch), self._timeout, pin_ctx)

    def refresh(self):
        """Starts loading an epoch now (its first `prefetch` batches, with workers); the
        next iteration yields it."""
        self.clean()
        self._iter = self._new_iter()

    def clean(self):
        """Drops an epoch that refresh started and nobody iterated."""
        it, self._iter = self._iter, None
        if isinstance(it, _MultiWorkerIter):
            it.close()

    def __iter__(self):
        it, self._iter = self._iter, None
        if it is None:
            it = self._new_iter()
        return self._reloading(it) if self.auto_reload else it

    def _reloading(self, it):
        for batch in it:
            yield batch
        if self._iter is None:
            self.refresh()

    def _same_thread_iter(self, pin_ctx):
        for indices in self._batch_sampler:
            batch = self._batchify_fn([self._dataset[i] for i in indices])
            if pin_ctx is not None:
                batch = _as_in_context(batch, pin_ctx)
            yield batch

    def __len__(self):
        return len(self._batch_sampler)

    def close(self):
        """Stops the workers now rather than when the DataLoader is garbage-collected; a
        later iteration starts new ones."""
        self.clean()
        if self._workers is not None:
            self._workers.shutdown()
            self._workers = None
