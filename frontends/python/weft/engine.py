"""weft.engine (MXNet's mxnet.engine): the bulk size of the engine.

MXNet's engine can bundle up to `size` consecutive operators into one engine task. Weft's
engine has no such bundling: it runs small operations inline on the calling thread instead
(WEFT_ENGINE_INLINE_BYTES, docs/design/engine.md), which saves the same per-task overhead.
The size is kept and returned, so that code that sets and restores it runs unchanged, but
it changes no scheduling.
"""
import threading

_state = threading.local()


def set_bulk_size(size):
    """Sets the bulk size (recorded only, see the module doc) and returns the previous one."""
    if int(size) < 0:
        raise ValueError("set_bulk_size: expected a size >= 0, got %r" % (size,))
    prev = getattr(_state, "size", 0)
    _state.size = int(size)
    return prev


class _BulkScope:
    def __init__(self, size):
        self._size = size
        self._old_size = None

    def __enter__(self):
        self._old_size = set_bulk_size(self._size)
        return self

    def __exit__(self, ptype, value, trace):
        set_bulk_size(self._old_size)


def bulk(size):
    """A scope (`with mx.engine.bulk(10): ...`) with bulk size `size`, restored afterwards."""
    return _BulkScope(size)
