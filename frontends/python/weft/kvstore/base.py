"""KVStoreBase: the interface of MXNet 1.9's pluggable key-value stores, and their registry.

A class decorated with ``@KVStoreBase.register`` is created by ``weft.kv.create(name)``
under its class name in lower case, as MXNet's Horovod and BytePS stores are:

    @mx.kv.KVStoreBase.register
    class MyStore(mx.kv.KVStoreBase):
        ...
    kv = mx.kv.create("mystore")

``TestStore`` (registered as 'teststore') is MXNet's reference implementation of the
interface: one process, values summed and copied where they are.
"""
import warnings

from ..ndarray.ndarray import NDArray

__all__ = ["KVStoreBase", "TestStore"]


class KVStoreBase(object):
    """The methods a key-value store gives the training loop (Gluon's Trainer, Module).
    Subclasses implement them; this class only defines the interface and the registry."""

    # A capability asked with is_capable: whether the store runs the optimizer itself.
    OPTIMIZER = "optimizer"

    kv_registry = {}

    def broadcast(self, key, value, out, priority=0):
        """Sets key(s) to value(s) and copies them into out (an NDArray or a list per key):
        the first call for a key initialises it on every worker."""
        raise NotImplementedError("%s.broadcast: a KVStoreBase subclass must implement it" % type(self).__name__)

    def pushpull(self, key, value, out=None, priority=0):
        """Sums value(s) of key(s) over devices (and workers) and writes the result into out
        (into value when out is None)."""
        raise NotImplementedError("%s.pushpull: a KVStoreBase subclass must implement it" % type(self).__name__)

    def set_optimizer(self, optimizer):
        """Makes the store apply `optimizer` to pushed gradients (where is_capable(OPTIMIZER))."""
        raise NotImplementedError("%s.set_optimizer: a KVStoreBase subclass must implement it"
                                  % type(self).__name__)

    def save_optimizer_states(self, fname, dump_optimizer=False):
        """Saves the optimizer's states (and the optimizer, with dump_optimizer) to fname."""
        raise NotImplementedError("%s.save_optimizer_states: a KVStoreBase subclass must implement it"
                                  % type(self).__name__)

    def load_optimizer_states(self, fname):
        """Loads states saved by save_optimizer_states."""
        raise NotImplementedError("%s.load_optimizer_states: a KVStoreBase subclass must implement it"
                                  % type(self).__name__)

    @staticmethod
    def is_capable(capability):
        """Whether the store has `capability` (KVStoreBase.OPTIMIZER)."""
        raise NotImplementedError("is_capable: a KVStoreBase subclass must implement it")

    @property
    def type(self):
        """The store's type name."""
        raise NotImplementedError("%s.type: a KVStoreBase subclass must implement it" % type(self).__name__)

    @property
    def rank(self):
        """This worker's rank."""
        raise NotImplementedError("%s.rank: a KVStoreBase subclass must implement it" % type(self).__name__)

    @property
    def num_workers(self):
        """The number of workers."""
        raise NotImplementedError("%s.num_workers: a KVStoreBase subclass must implement it"
                                  % type(self).__name__)

    @staticmethod
    def register(klass):
        """Class decorator: makes `klass` creatable as kv.create(klass.__name__.lower()).
        Registering a name again replaces the earlier class, with a warning."""
        if not isinstance(klass, type) or not issubclass(klass, KVStoreBase):
            raise TypeError("KVStoreBase.register: expected a subclass of KVStoreBase, got %r" % (klass,))
        name = klass.__name__.lower()
        if name in KVStoreBase.kv_registry:
            warnings.warn("KVStoreBase.register: the key-value store %s replaces %s, registered as '%s' before"
                          % (klass, KVStoreBase.kv_registry[name], name), stacklevel=2)
        KVStoreBase.kv_registry[name] = klass
        return klass


def _values(value, what):
    if isinstance(value, NDArray):
        return [value]
    if isinstance(value, (list, tuple)) and value and all(isinstance(v, NDArray) for v in value):
        return list(value)
    raise TypeError("teststore %s: expected an NDArray or a non-empty list of NDArrays, got %s"
                    % (what, type(value).__name__))


def _per_key(key, value, what):
    # [(key, [arrays])] for one key or a list of keys with a value per key.
    if isinstance(key, (list, tuple)):
        if not isinstance(value, (list, tuple)) or len(value) != len(key):
            raise ValueError("teststore %s: expected %d values for the %d keys, got %r"
                             % (what, len(key), len(key), value))
        return [(k, _values(v, what)) for k, v in zip(key, value)]
    return [(key, _values(value, what))]


@KVStoreBase.register
class TestStore(KVStoreBase):
    """A one-process store: broadcast copies, pushpull sums the values of each key over
    devices. It keeps no optimizer (is_capable(OPTIMIZER) is False)."""

    def broadcast(self, key, value, out, priority=0):
        values = _per_key(key, value, "broadcast")
        outs = _per_key(key, out, "broadcast")
        for (k, vs), (_, os_) in zip(values, outs):
            if len(vs) != 1:
                raise ValueError("teststore broadcast: expected one value for key %r, got %d" % (k, len(vs)))
            for o in os_:
                vs[0].copyto(o)

    def pushpull(self, key, value, out=None, priority=0):
        values = _per_key(key, value, "pushpull")
        outs = values if out is None else _per_key(key, out, "pushpull")
        for (_, vs), (_, os_) in zip(values, outs):
            total = vs[0].copyto(vs[0].context)
            for v in vs[1:]:
                total += v.as_in_context(total.context)
            for o in os_:
                total.copyto(o)

    @staticmethod
    def is_capable(capability):
        if capability.lower() == KVStoreBase.OPTIMIZER:
            return False
        raise ValueError("teststore is_capable: unknown capability '%s' (expected '%s')"
                         % (capability, KVStoreBase.OPTIMIZER))

    @property
    def type(self):
        return "teststore"

    @property
    def rank(self):
        return 0

    @property
    def num_workers(self):
        return 1


def create(name="local"):
    """The store `name`: a class registered with KVStoreBase.register, else one of Weft's
    (local, device, dist_sync, ...); the same as weft.kv.create."""
    from .kvstore import create as _create  # pylint: disable=import-outside-toplevel
    return _create(name)
