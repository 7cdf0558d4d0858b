"""Attribute scopes for symbols, as MXNet 1.x's `mx.AttrScope`:

    with weft.AttrScope(ctx_group='dev1'):
        data = weft.sym.Variable('data')
        fc1 = weft.sym.FullyConnected(data, num_hidden=8, name='fc1')

gives every variable and operator node made inside the block those attributes (and the
variables an operator makes for its missing inputs, fc1_weight here, a copy of the
operator's). Scopes nest: an inner scope adds to (and overrides) the outer one's. The keys
MXNet treats as hidden (ctx_group, lr_mult, wd_mult, force_mirroring, mirror_stage,
profiler_scope) are stored as "__key__", as MXNet saves them: `__ctx_group__` is what
Symbol.bind's group2ctx reads.
"""
import collections
import threading

from .base import _ClassPropertyMeta, classproperty

__all__ = ["AttrScope", "current"]

_HIDDEN = ("ctx_group", "lr_mult", "wd_mult", "force_mirroring", "mirror_stage", "profiler_scope")


def hidden_key(key):
    """The stored name of attribute `key`: "__key__" for MXNet's hidden keys."""
    return "__%s__" % key if key in _HIDDEN else key


class AttrScope(metaclass=_ClassPropertyMeta):
    """Attributes given to every symbol made inside the `with` block."""

    # The scope in effect, per thread (MXNet's AttrScope._current; `AttrScope.current`
    # reads and assigns it).
    _current = threading.local()

    # How many graphs of each name the control-flow functions have traced (MXNet's
    # counter, which makes their `__subgraph_name__` marks unique).
    _subgraph_names = collections.defaultdict(int)

    def __init__(self, **kwargs):
        for key, value in kwargs.items():
            if not isinstance(value, str):
                raise ValueError("AttrScope: attribute values must be strings, got %r for %r" % (value, key))
        self._attr = {hidden_key(k): v for k, v in kwargs.items()}
        self._old = None

    def get(self, attr):
        """The scope's attributes updated with `attr` (a dict, or None), as stored names."""
        ret = dict(self._attr)
        if attr:
            ret.update({hidden_key(k): v for k, v in attr.items()})
        return ret

    def __enter__(self):
        self._old = current()
        merged = dict(self._old._attr)
        merged.update(self._attr)
        self._attr = merged
        AttrScope._current.value = self
        return self

    def __exit__(self, *exc):
        AttrScope._current.value = self._old

    @classproperty
    def current(cls):
        """The scope in effect on this thread; assignable, as in MXNet."""
        return current()

    @current.setter
    def current(cls, scope):
        AttrScope._current.value = scope


def current():
    """The AttrScope in effect on this thread (an empty one outside every `with`)."""
    if not hasattr(AttrScope._current, "value"):
        AttrScope._current.value = AttrScope()
    return AttrScope._current.value
