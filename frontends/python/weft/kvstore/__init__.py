"""Key-value stores for parameter synchronisation (MXNet's ``mx.kv``)."""
from .kvstore import KVStore, KVStoreServer, create, _run_role
from .base import KVStoreBase, TestStore

__all__ = ["KVStore", "KVStoreServer", "create", "KVStoreBase", "TestStore"]
