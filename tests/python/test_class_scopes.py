"""Context.default_ctx, AttrScope.current and NameManager.current: class attributes that
read and assign a per-thread value, as MXNet 1.x scripts use them."""
import threading

import pytest

import weft as mx
from weft.attribute import AttrScope
from weft.context import Context
from weft.name import NameManager, Prefix


def _in_thread(fn):
    out = []
    t = threading.Thread(target=lambda: out.append(fn()))
    t.start()
    t.join()
    return out[0]


def test_default_ctx_assign_is_per_thread():
    old = Context.default_ctx
    try:
        Context.default_ctx = mx.cpu(3)
        assert mx.current_context() == mx.cpu(3)
        assert Context.default_ctx == mx.cpu(3)
        # Another thread starts from cpu(0) and its assignment stays there.
        assert _in_thread(lambda: Context.default_ctx) == mx.cpu(0)

        def other():
            Context.default_ctx = mx.gpu(7)
            return Context.default_ctx
        assert _in_thread(other) == mx.gpu(7)
        assert Context.default_ctx == mx.cpu(3)
        with mx.cpu(5):
            assert Context.default_ctx == mx.cpu(5)
        assert Context.default_ctx == mx.cpu(3)
    finally:
        Context.default_ctx = old
    assert isinstance(Context.__dict__["default_ctx"], mx.base.classproperty)


def test_attrscope_current_assign():
    try:
        AttrScope.current = AttrScope(group="a")
        v = mx.sym.var("v")
        assert v.attr("group") == "a"
        assert _in_thread(lambda: AttrScope.current._attr) == {}
        with AttrScope(other="b"):
            assert AttrScope.current._attr == {"group": "a", "other": "b"}
        assert AttrScope.current._attr == {"group": "a"}
    finally:
        AttrScope.current = AttrScope()
    assert mx.sym.var("w").attr("group") is None


def test_namemanager_current_assign_and_subclass():
    try:
        NameManager.current = NameManager()
        assert NameManager.current.get(None, "hint") == "hint0"
        assert mx.sym.FullyConnected(mx.sym.var("d"), num_hidden=2).name == "fullyconnected0"
        assert _in_thread(lambda: NameManager.current._counter) == {}
        # Assigning through a subclass sets the same per-thread value.
        Prefix.current = Prefix("p_")
        assert NameManager.current.get(None, "x") == "p_x0"
        assert mx.sym.Activation(mx.sym.var("d"), act_type="relu").name == "p_activation0"
    finally:
        NameManager.current = NameManager()


def test_read_only_classproperty_rejects_assignment():
    class Meta(metaclass=mx.base._ClassPropertyMeta):
        @mx.base.classproperty
        def fixed(cls):
            return 1
    assert Meta.fixed == 1
    with pytest.raises(AttributeError, match="read-only"):
        Meta.fixed = 2
    Meta.other = 3
    assert Meta.other == 3
