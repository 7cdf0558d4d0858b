"""KVStore: parameter synchronisation by key, as MXNet 1.x's ``mx.kv``.

``create('local')`` sums on the CPU, ``create('device')`` where the values live,
``create('dist_sync')`` / ``'dist_async'`` across processes through servers (launched by
tools/launch.py with the DMLC_* environment). Push and pull return at once; reading
the pulled arrays waits.
"""
import atexit
import weakref

import numpy as np

from ..base import _api, atomic_write, WeftTypeError
from .. import ndarray as nd
from ..ndarray.ndarray import NDArray
from ..ndarray.sparse import _wrap
from . import optimizer_wire
from .base import KVStoreBase

__all__ = ["KVStore", "create", "KVStoreServer"]


def _key_text(key):
    if isinstance(key, bool) or not isinstance(key, (int, str)):
        raise TypeError("kvstore: a key must be an int or a str, got %s" % type(key).__name__)
    if isinstance(key, int) and key < 0:
        raise ValueError("kvstore: an int key must be >= 0, got %d" % key)
    return str(key)


def _as_list(value, what):
    if isinstance(value, NDArray):
        return [value]
    if isinstance(value, (list, tuple)) and all(isinstance(v, NDArray) for v in value) and value:
        return list(value)
    raise TypeError("kvstore %s: expected an NDArray or a non-empty list of NDArrays, got %s"
                    % (what, type(value).__name__))


def _flatten(key, value, what):
    """Keys and values as flat, aligned lists: a key repeats once per value it has."""
    if isinstance(key, (list, tuple)):
        if not isinstance(value, (list, tuple)) or len(value) != len(key):
            raise ValueError("kvstore %s: expected a list of %d values for the %d keys, got %r"
                             % (what, len(key), len(key), type(value).__name__))
        keys, vals = [], []
        for k, v in zip(key, value):
            vs = _as_list(v, what)
            keys.extend([_key_text(k)] * len(vs))
            vals.extend(vs)
        return keys, vals
    vs = _as_list(value, what)
    return [_key_text(key)] * len(vs), vs


def _dense(values):
    """The stores keep dense values: sparse ones (row_sparse gradients) are pushed densely."""
    if all(v.stype == "default" for v in values):
        return values
    return [v if v.stype == "default" else v.tostype("default") for v in values]


def _key_back(text):
    return int(text) if text.isdigit() else text


class KVStore(KVStoreBase):
    """A key-value store (see ``create``)."""

    def __init__(self, handle):
        self.handle = handle
        self._updater = None
        self._int_keys = None
        self._compressed = False
        self._updater_cb = None
        _live.add(self)

    def __del__(self):
        self.close()

    def close(self):
        """Frees the store now; a dist worker leaves the job (waiting for its pending work)."""
        handle, self.handle = getattr(self, "handle", None), None
        if handle is not None and _api is not None:
            _api.weft_kvstore_free(handle)

    # ---------------------------------------------------------------- properties
    @property
    def type(self):
        """The type given to ``create``."""
        return _api.weft_kvstore_get_type(self.handle)

    @property
    def rank(self):
        """This worker's rank (0 outside dist)."""
        return _api.weft_kvstore_get_rank(self.handle)

    @property
    def num_workers(self):
        """Number of workers (1 outside dist)."""
        return _api.weft_kvstore_get_num_workers(self.handle)

    # ---------------------------------------------------------------- data
    def init(self, key, value):
        """Initialises key(s) with value(s): an int or str key and an NDArray, or lists."""
        keys, vals = _flatten(key, value, "init")
        self._check_key_kind(key)
        vals = _dense(vals)
        _api.weft_kvstore_init(self.handle, len(keys), keys, vals)

    def push(self, key, value, priority=0):
        """Pushes value(s): per key an NDArray or a list of NDArrays (one per device),
        which are summed; the sum updates the stored value (through the updater, if set)."""
        keys, vals = _flatten(key, value, "push")
        self._check_key_kind(key)
        if self._updater is not None and "dist" not in self.type and not self._compressed:
            # A key's one row_sparse value (a gradient) reaches the updater as it is, so that
            # the optimizer touches only its rows (lazy updates); other sparse values go dense.
            once = {k for k in keys if keys.count(k) == 1}
            vals = [v if v.stype == "default" or (v.stype == "row_sparse" and k in once and
                                                   v.context.device_type == "cpu")
                    else v.tostype("default") for k, v in zip(keys, vals)]
        elif "dist" in self.type and not self._compressed:
            # A key's one row_sparse value (a gradient) crosses the network as its rows only.
            once = {k for k in keys if keys.count(k) == 1}
            vals = [v if v.stype == "default" or (v.stype == "row_sparse" and k in once and
                                                   v.context.device_type == "cpu")
                    else v.tostype("default") for k, v in zip(keys, vals)]
        else:
            vals = _dense(vals)
        _api.weft_kvstore_push(self.handle, len(keys), keys, vals, priority)

    def pull(self, key, out=None, priority=0, ignore_sparse=True):
        """Copies the stored value of key(s) into out (an NDArray or a list, one per device)."""
        if out is None:
            raise ValueError("kvstore pull: 'out' is required")
        keys, outs = _flatten(key, out, "pull")
        self._check_key_kind(key)
        # As MXNet: sparse outputs are skipped with ignore_sparse, else get the whole value.
        sparse_outs = [(k, o) for k, o in zip(keys, outs) if o.stype != "default"]
        dense = [(k, o) for k, o in zip(keys, outs) if o.stype == "default"]
        if dense:
            _api.weft_kvstore_pull(self.handle, len(dense), [k for k, _ in dense], [o for _, o in dense], priority)
        if ignore_sparse:
            return
        for k, o in sparse_outs:
            full = nd.empty(o.shape, ctx=o.context, dtype=o.dtype)
            _api.weft_kvstore_pull(self.handle, 1, [k], [full], priority)
            _api.weft_ndarray_sparse_assign(o, full.tostype(o.stype))

    def _check_key_kind(self, keys):
        """A store takes int keys or str keys, never both (MXNet's "Mixed key types")."""
        kinds = {isinstance(k, int) for k in (keys if isinstance(keys, (list, tuple)) else [keys])}
        if len(kinds) > 1:
            raise WeftTypeError("kvstore: mixed key types are not allowed, got %r" % (keys,))
        if self._int_keys is None:
            self._int_keys = kinds.pop()
        elif self._int_keys not in kinds:
            raise WeftTypeError("kvstore: mixed key types are not allowed: this store uses %s keys, got %r"
                                % ("int" if self._int_keys else "str", keys))

    def row_sparse_pull(self, key, out=None, priority=0, row_ids=None):
        """Pulls only the rows `row_ids` (an NDArray of indices, or one per `out`) of key(s)'
        stored value(s) into RowSparseNDArray(s) `out`: afterwards `out` stores exactly those
        rows (sorted, without repeats). Only those rows are read from the store, and a dist
        store's servers send only them."""
        from ..ndarray import sparse  # pylint: disable=import-outside-toplevel
        if out is None or row_ids is None:
            raise ValueError("kvstore row_sparse_pull: 'out' and 'row_ids' are required")
        keys, outs = _flatten(key, out, "row_sparse_pull")
        self._check_key_kind(key)
        if isinstance(row_ids, (list, tuple)):
            if isinstance(key, (list, tuple)) and len(row_ids) == len(key):
                # One entry per key: a list aligned with that key's outputs, or one id
                # array shared by all of them (MXNet's nesting of row_ids follows out's).
                ids = []
                for o, r in zip(out, row_ids):
                    n = len(o) if isinstance(o, (list, tuple)) else 1
                    ids.extend(r if isinstance(r, (list, tuple)) else [r] * n)
            else:
                ids = list(row_ids)
        else:
            ids = [row_ids] * len(outs)
        if len(ids) != len(outs):
            raise ValueError("kvstore row_sparse_pull: expected one row_ids per output (%d), got %d"
                             % (len(outs), len(ids)))
        for k, o, r in zip(keys, outs, ids):
            if not isinstance(o, sparse.RowSparseNDArray):
                raise WeftTypeError("kvstore row_sparse_pull: expected RowSparseNDArray outputs, got %s"
                                % type(o).__name__)
            host_ids = r.asnumpy() if isinstance(r, NDArray) else np.asarray(r)
            if host_ids.size and (not np.all(np.isfinite(host_ids)) or np.any(host_ids != np.floor(host_ids))):
                raise ValueError("kvstore row_sparse_pull: row ids must be integers, got %s" % (host_ids,))
            rows = np.unique(host_ids.astype(np.int64))
            rows_nd = nd.array(rows, ctx=o.context, dtype="int64")
            vals = nd.empty((len(rows),) + tuple(o.shape[1:]), ctx=o.context, dtype=o.dtype)
            _api.weft_kvstore_pull_rows(self.handle, k, rows_nd, vals, priority)
            got = sparse.RowSparseNDArray(_api.weft_ndarray_create_sparse(1, tuple(o.shape), vals, 1, [rows_nd]))
            _api.weft_ndarray_sparse_assign(o, got)

    def broadcast(self, key, value, out, priority=0):
        """Initialises key(s) with value(s) and pulls the stored value(s) into out: in a dist
        store every worker then starts from the same value."""
        self.init(key, value)
        self.pull(key, out=out, priority=priority)

    @staticmethod
    def is_capable(capability):
        """Weft's stores run optimizers (set_optimizer): OPTIMIZER is the one capability."""
        if capability.lower() == KVStoreBase.OPTIMIZER:
            return True
        raise ValueError("kvstore is_capable: unknown capability '%s' (expected '%s')"
                         % (capability, KVStoreBase.OPTIMIZER))

    def pushpull(self, key, value, out=None, priority=0):
        """Push then pull in one call; without ``out`` the pulled value goes into ``value``."""
        keys, vals = _flatten(key, value, "pushpull")
        self._check_key_kind(key)
        pkeys, outs = _flatten(key, value if out is None else out, "pushpull")
        _api.weft_kvstore_pushpull(self.handle, len(keys), keys, vals, len(pkeys), pkeys, outs, priority)

    # ---------------------------------------------------------------- updates
    def set_optimizer(self, optimizer):
        """Runs ``optimizer`` on the store: on the servers for a dist store (rank 0 sends a
        JSON description of it, see optimizer_wire; every worker waits until the servers
        have it), here otherwise. A dist store takes Weft's registered optimizers and
        schedulers, with plain parameters; anything else is refused with an error naming it."""
        if "dist" in self.type:
            body = optimizer_wire.describe(optimizer)
            # Checked here as the servers will check it, so that a problem is reported
            # where the optimizer was made.
            optimizer_wire.rebuild(body)
            if self.rank == 0:
                self._send_command_to_servers(_SET_OPTIMIZER, body)
            self._barrier()
        else:
            from .. import optimizer as opt
            self._set_updater(opt.get_updater(optimizer))

    def _set_updater(self, updater):
        """Sets ``updater(key, merged, stored)``, which changes ``stored`` in place (None: the
        pushed sum replaces the stored value)."""
        if updater is None:
            cb = None
        else:
            def cb(key, merged, stored):
                merged, stored = _wrap(merged), NDArray(stored)
                # The sum is made where the pushed values live (a 'device' store), which
                # need not be where the store keeps the value.
                if merged.context != stored.context:
                    merged = merged.copyto(stored.context)
                updater(_key_back(key), merged, stored)
        _api.weft_kvstore_set_updater(self.handle, cb)
        # The library calls back through these: they live as long as the store uses them.
        self._updater, self._updater_cb = updater, cb

    set_updater = _set_updater

    def set_gradient_compression(self, compression_params):
        """``{'type': '2bit', 'threshold': 0.5}``: pushed gradients are quantized to
        +-threshold or 0 with error feedback (device and dist stores)."""
        if not isinstance(compression_params, dict):
            raise TypeError("kvstore: compression_params must be a dict, got %s" % type(compression_params).__name__)
        keys = [str(k) for k in compression_params]
        vals = [str(v) for v in compression_params.values()]
        _api.weft_kvstore_set_gradient_compression(self.handle, len(keys), keys, vals)
        self._compressed = str(compression_params.get("type", "none")) != "none"

    def save_optimizer_states(self, fname, dump_optimizer=False):
        """Saves the updater's states (and the optimizer when dump_optimizer) to fname."""
        if self._updater is None or not hasattr(self._updater, "get_states"):
            raise RuntimeError("kvstore: no optimizer states to save (set_optimizer on a non-dist store first; "
                               "dist stores keep the states on the servers)")
        atomic_write(fname, self._updater.get_states(dump_optimizer))

    def load_optimizer_states(self, fname):
        """Loads states saved by save_optimizer_states."""
        if self._updater is None or not hasattr(self._updater, "set_states"):
            raise RuntimeError("kvstore: no updater to load optimizer states into (set_optimizer first)")
        with open(fname, "rb") as f:
            self._updater.set_states(f.read())

    # ---------------------------------------------------------------- dist
    def _barrier(self):
        """Blocks until every worker has reached it."""
        _api.weft_kvstore_barrier(self.handle)

    barrier = _barrier

    def _send_command_to_servers(self, head, body):
        """Sends (head, body bytes) to every server's command handler and waits."""
        if isinstance(body, str):
            body = body.encode()
        _api.weft_kvstore_send_command_to_servers(self.handle, head, bytes(body))


# Command heads understood by KVStoreServer. The body of _SET_OPTIMIZER is JSON
# (optimizer_wire); pickles, which older versions sent, are refused.
_SET_OPTIMIZER = 0

_live = weakref.WeakSet()


@atexit.register
def _close_all():
    # A dist worker must leave the job before the interpreter goes, or the others wait.
    for kv in list(_live):
        kv.close()


def create(name="local"):
    """A new store: 'local' (sums on the CPU), 'device' (sums values on GPUs on a GPU, with
    NCCL where built in; host values as 'local'), 'nccl' (as 'device'), 'dist_sync'
    (= 'dist'), 'dist_async', 'dist_device_sync' (sums on a GPU before sending)."""
    if not isinstance(name, str):
        raise TypeError("kvstore: name must be a str, got %s" % type(name).__name__)
    # A store registered with KVStoreBase.register comes first, as in MXNet.
    if name.lower() in KVStoreBase.kv_registry:
        return KVStoreBase.kv_registry[name.lower()]()
    return KVStore(_api.weft_kvstore_create(name))


class KVStoreServer(object):
    """The server side of a dist store: runs the updates the workers' optimizer asks for."""

    def __init__(self, kvstore):
        self.kvstore = kvstore
        self._controller_cb = self._controller()

    def _controller(self):
        def control(head, body):
            if head == _SET_OPTIMIZER:
                from .. import optimizer as opt
                self.kvstore._set_updater(opt.get_updater(optimizer_wire.rebuild(body)))
            else:
                raise ValueError("kvstore server: unknown command %d (expected %d, set optimizer)"
                                 % (head, _SET_OPTIMIZER))
        return control

    def run(self):
        """Serves until every worker has left; raises naming the lost node if the job breaks."""
        _api.weft_kvstore_run_server(self.kvstore.handle, self._controller_cb)


def _run_role():
    """In a server or scheduler process (DMLC_ROLE), runs that role and exits, so that the
    launcher can start the same command for every role (as MXNet)."""
    import sys
    role = _api.weft_kvstore_get_role()
    if role == "worker":
        return
    try:
        if role == "scheduler":
            _api.weft_kvstore_run_scheduler()
        else:
            kv = create("dist")
            KVStoreServer(kv).run()
            kv.close()
    except Exception as e:  # the message names the lost node; a traceback adds nothing
        sys.stderr.write("weft %s: %s\n" % (role, e))
        sys.stderr.flush()
        sys.exit(1)
    sys.exit(0)
