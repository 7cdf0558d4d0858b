"""Devices: Context, cpu(), gpu(i), cpu_pinned(), cpu_shared() and the default context.

`with weft.gpu(0):` makes arrays created inside the block default to that context, as in
MXNet; the default is per thread.
"""
import threading
import warnings

from .base import _api, _ClassPropertyMeta, classproperty

__all__ = ["Context", "cpu", "gpu", "cpu_pinned", "cpu_shared", "current_context", "num_gpus", "gpu_memory_info"]


class Context(metaclass=_ClassPropertyMeta):
    """A device: a type ('cpu', 'gpu', 'cpu_pinned', 'cpu_shared') and an id.

    Context('gpu', 1), Context(other_context), and MXNet's numeric device types
    (1 cpu, 2 gpu, 3 cpu_pinned, 5 cpu_shared) are accepted."""

    devtype2str = {1: "cpu", 2: "gpu", 3: "cpu_pinned", 5: "cpu_shared"}
    devstr2type = {"cpu": 1, "gpu": 2, "cpu_pinned": 3, "cpu_shared": 5}
    _default_ctx = threading.local()

    __slots__ = ("device_typeid", "device_id", "_old_ctx")

    def __init__(self, device_type, device_id=0):
        if isinstance(device_type, Context):
            self.device_typeid = device_type.device_typeid
            self.device_id = device_type.device_id
        else:
            if isinstance(device_type, str):
                if device_type not in self.devstr2type:
                    raise ValueError("Context: expected a device type in %s, got '%s'"
                                     % (sorted(self.devstr2type), device_type))
                self.device_typeid = self.devstr2type[device_type]
            else:
                if device_type not in self.devtype2str:
                    raise ValueError("Context: expected a device type code in %s, got %r"
                                     % (sorted(self.devtype2str), device_type))
                self.device_typeid = int(device_type)
            self.device_id = int(device_id)
        self._old_ctx = None

    @property
    def device_type(self):
        return self.devtype2str[self.device_typeid]

    def _as_tuple(self):
        # The C API's weft_context_t as the SWIG typemap takes it.
        return (self.device_typeid, self.device_id)

    def _param_text(self):
        # The context as an operator parameter ("cpu_shared(0)").
        return "%s(%d)" % (self.device_type, self.device_id)

    def __hash__(self):
        return hash((self.device_typeid, self.device_id))

    def __eq__(self, other):
        return (isinstance(other, Context) and self.device_typeid == other.device_typeid
                and self.device_id == other.device_id)

    def __ne__(self, other):
        return not self.__eq__(other)

    def __str__(self):
        return "%s(%d)" % (self.device_type, self.device_id)

    __repr__ = __str__

    def __enter__(self):
        self._old_ctx = current_context()
        Context._default_ctx.value = self
        return self

    def __exit__(self, ptype, value, trace):
        Context._default_ctx.value = self._old_ctx

    @classproperty
    def default_ctx(cls):
        """This thread's default context (MXNet's Context.default_ctx, deprecated there as
        here); assignable."""
        warnings.warn("Context.default_ctx is deprecated; use Context.current_context()", DeprecationWarning)
        return current_context()

    @default_ctx.setter
    def default_ctx(cls, ctx):
        warnings.warn("Context.default_ctx is deprecated; use test_utils.set_default_context", DeprecationWarning)
        Context._default_ctx.value = ctx

    def empty_cache(self):
        """Returns the memory pooled for this context to the OS or the driver."""
        _api.weft_storage_release_pooled(self._as_tuple())

    def memory_stat(self, stat):
        """Storage statistic of this context: 'bytes_in_use', 'peak_bytes', 'bytes_pooled',
        'num_allocs' or 'num_os_allocs'."""
        stats = {"bytes_in_use": 0, "peak_bytes": 1, "bytes_pooled": 2, "num_allocs": 3, "num_os_allocs": 4}
        if stat not in stats:
            raise ValueError("memory_stat: expected one of %s, got '%s'" % (sorted(stats), stat))
        return _api.weft_storage_get_stat(self._as_tuple(), stats[stat])


def cpu(device_id=0):
    """The CPU context."""
    return Context("cpu", device_id)


def gpu(device_id=0):
    """The context of GPU `device_id`."""
    return Context("gpu", device_id)


def cpu_pinned(device_id=0):
    """Page-locked host memory, for fast copies to and from GPUs."""
    return Context("cpu_pinned", device_id)


def cpu_shared(device_id=0):
    """Host memory that other processes can map (MXNet's cpu_shared, device type 5): each
    array's memory is a shared-memory segment, which NDArray._to_shared_mem names and
    ndarray._new_from_shared_mem maps in another process. DataLoader worker processes hand
    their batches back in it, and multiprocessing sends NDArrays through it. Operators use it
    as CPU memory, and arrays on it mix with CPU arrays in one call."""
    return Context("cpu_shared", device_id)


def num_gpus():
    """The number of usable GPUs (0 without CUDA support)."""
    return _api.weft_get_gpu_count()


def gpu_memory_info(device_id=0):
    """(free, total) bytes of GPU `device_id`'s memory, as the CUDA driver reports them.
    Memory Weft's pool keeps for reuse counts as used; raises MXNetError without that GPU."""
    return tuple(_api.weft_get_gpu_memory_info(device_id))


def current_context():
    """The default context of this thread: cpu(0) unless changed by `with ctx:`."""
    ctx = getattr(Context._default_ctx, "value", None)
    if ctx is None:
        ctx = Context("cpu", 0)
        Context._default_ctx.value = ctx
    return ctx


def _param_context(ctx):
    """The context of the parameters an array on `ctx` computes with: as in MXNet, host
    memory of every kind shares one copy, so cpu_pinned(i) and cpu_shared(i) (a DataLoader's
    batches) use cpu(i)'s."""
    if ctx is not None and ctx.device_typeid in (3, 5):
        return Context("cpu", ctx.device_id)
    return ctx


def _from_tuple(pair):
    # The C API's context as the SWIG typemap returns it: (device_type, device_id).
    return Context(pair[0], pair[1])
