"""Automatic names for symbols, as MXNet's `mx.name`: NameManager gives "<hint><n>" with a
counter per hint; Prefix adds a prefix to every name made inside its `with` block."""
import threading

from .base import _ClassPropertyMeta, classproperty

__all__ = ["NameManager", "Prefix", "current"]


class NameManager(metaclass=_ClassPropertyMeta):
    """Makes unique names from hints: fullyconnected0, fullyconnected1, ..."""

    # The manager in effect, per thread (MXNet's NameManager._current;
    # `NameManager.current` reads and assigns it).
    _current = threading.local()

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
        NameManager._current.value = self
        return self

    def __exit__(self, *exc):
        NameManager._current.value = self._old

    @classproperty
    def current(cls):
        """The manager in effect on this thread; assignable, as in MXNet."""
        return current()

    @current.setter
    def current(cls, manager):
        NameManager._current.value = manager


class Prefix(NameManager):
    """A NameManager that prefixes every name it gives, explicit ones too."""

    def __init__(self, prefix):
        super().__init__()
        self._prefix = prefix

    def get(self, name, hint):
        return self._prefix + super().get(name, hint)


def current():
    """The NameManager in effect on this thread."""
    if not hasattr(NameManager._current, "value"):
        NameManager._current.value = NameManager()
    return NameManager._current.value
