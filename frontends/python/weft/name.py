"""Automatic names for symbols, as MXNet's `mx.name`: NameManager gives "<hint><n>" with a
counter per hint; Prefix adds a prefix to every name made inside its `with` block."""
import threading

__all__ = ["NameManager", "Prefix", "current"]

_state = threading.local()


class NameManager:
    """Makes unique names from hints: fullyconnected0, fullyconnected1, ..."""

    def __init__(self):
        self._counter = {}
        self._old = None

    def get(self, name, hint):
        """`name` when given, else a fresh name made from `hint`."""
        if name:
            return name
        n = self._counter.get(hint, 0)
        self._counter[hint] = n + 1
        return "%s%d" % (hint, n)

    def __enter__(self):
        self._old = current()
        _state.current = self
        return self

    def __exit__(self, *exc):
        _state.current = self._old


class Prefix(NameManager):
    """A NameManager that prefixes every name it gives, explicit ones too."""

    def __init__(self, prefix):
        super().__init__()
        self._prefix = prefix

    def get(self, name, hint):
        return self._prefix + super().get(name, hint)


def current():
    """The NameManager in effect on this thread."""
    if not hasattr(_state, "current"):
        _state.current = NameManager()
    return _state.current
