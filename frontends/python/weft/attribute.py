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

__all__ = ["AttrScope", "current"]

_HIDDEN = ("ctx_group", "lr_mult", "wd_mult", "force_mirroring", "mirror_stage", "profiler_scope")

_state = threading.local()


def hidden_key(key):
    """The stored name of attribute `key`: "__key__" for MXNet's hidden keys."""
    return "__%s__" % key if key in _HIDDEN else key


class AttrScope:
    """Attributes given to every symbol made inside the `with` block."""

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
        _state.current = self
        return self

    def __exit__(self, *exc):
        _state.current = self._old


def current():
    """The AttrScope in effect on this thread (an empty one outside every `with`)."""
    if not hasattr(_state, "current"):
        _state.current = AttrScope()
    return _state.current
