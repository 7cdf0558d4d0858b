"""weft.kvstore.kvstore_server (MXNet's mxnet.kvstore.kvstore_server): the server side of a
dist store. A process started with DMLC_ROLE=server or scheduler runs its role when weft is
imported (kvstore._run_role), so nothing runs at this module's import."""
from .kvstore import KVStoreServer

__all__ = ["KVStoreServer"]
