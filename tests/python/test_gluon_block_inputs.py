"""HybridBlock inputs as MXNet 1.9's Gluon takes them: None for optional inputs (left out
of the hybridized graph, and fixed by the first hybridized call), the errors for mixed
NDArray/Symbol inputs, for no array at all, for scalars and several contexts once
hybridized; the warnings of unregistered block containers and of a Sequential of
HybridBlocks; split_data's uneven slices; register_op_hook on hybridized blocks."""
import warnings

import numpy as np
import pytest

import weft as mx
from weft import autograd, gluon, nd
from weft.gluon import nn
from weft.test_utils import assert_almost_equal


class Pick(gluon.HybridBlock):
    """a, b or their weighted sum, whichever are given."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        with self.name_scope():
            self.scale = self.params.get("scale", shape=(1,), init=mx.init.Constant(3.0))

    def hybrid_forward(self, F, a, b=None, scale=None):
        if a is None:
            return F.broadcast_mul(b, scale)
        if b is None:
            return a * 2
        return a * 2 + F.broadcast_mul(b, scale)


class Nested(gluon.HybridBlock):
    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        with self.name_scope():
            self.inner = Pick()

    def hybrid_forward(self, F, a, b):
        return self.inner(a, b) + 1


@pytest.mark.parametrize("hybridize", [False, True])
@pytest.mark.parametrize("given", [(True, True), (False, True), (True, False)])
def test_none_inputs(hybridize, given):
    a, b = np.arange(4, dtype=np.float32), np.arange(4, 8, dtype=np.float32)
    ref = (2 * a if given[0] else 0) + (3 * b if given[1] else 0) + 1
    net = Nested()
    net.initialize()
    if hybridize:
        net.hybridize()
    args = [nd.array(v) if g else None for v, g in zip((a, b), given)]
    for x in args:
        if x is not None:
            x.attach_grad()
    for _ in range(2):  # the second call runs the cached graph
        with autograd.record():
            y = net(*args)
        y.backward()
        assert_almost_equal(y.asnumpy(), ref)
    if given[1]:
        assert_almost_equal(args[1].grad.asnumpy(), np.full(4, 3.0, np.float32))
        assert_almost_equal(net.inner.scale.grad().asnumpy(), np.array([b.sum()], np.float32))
    if given[0]:
        assert_almost_equal(args[0].grad.asnumpy(), np.full(4, 2.0, np.float32))


def test_hybridized_inputs_fixed_by_first_call():
    net = Nested()
    net.initialize()
    net.hybridize()
    ones = nd.ones((3,))
    net(None, ones)
    with pytest.raises(ValueError, match=r"\(array, array\), do not match.*\(None, array\)"):
        net(ones, ones)
    net.hybridize()  # a new hybridization may take other inputs
    assert_almost_equal(net(ones, ones).asnumpy(), np.full(3, 6.0, np.float32))
    # Leaving out a defaulted input is the same as passing None.
    pick = Pick()
    pick.initialize()
    pick.hybridize()
    assert_almost_equal(pick(ones, None).asnumpy(), pick(ones).asnumpy())
    with pytest.raises(ValueError, match="do not match"):
        pick(ones, ones)


@pytest.mark.parametrize("hybridize", [False, True])
def test_input_errors(hybridize):
    net = Nested()
    net.initialize()
    if hybridize:
        net.hybridize()
    with pytest.raises(ValueError, match="no NDArray or Symbol among the inputs"):
        net(None, None)
    with pytest.raises(ValueError, match="mix NDArrays and Symbols"):
        net(nd.ones((3,)), mx.sym.var("a"))
    with pytest.raises(ValueError, match="mix NDArrays and Symbols"):
        net(mx.sym.var("a"), nd.ones((3,)))


def test_scalars_and_contexts():
    class Add(gluon.HybridBlock):
        def hybrid_forward(self, F, a, b):
            return a + b

    net = Add()
    # Not hybridized, a block runs its Python code: scalars are fine.
    assert_almost_equal(net(nd.ones((2,)), 1).asnumpy(), np.full(2, 2.0, np.float32))
    net.hybridize()
    with pytest.raises(ValueError, match="takes NDArrays.*input 1 is int"):
        net(nd.ones((2,)), 1)
    with pytest.raises(ValueError, match="runs on one context"):
        net(nd.ones((2,), ctx=mx.cpu(1)), nd.ones((2,), ctx=mx.cpu(2)))
    assert_almost_equal(net(nd.ones((2,)), nd.ones((2,))).asnumpy(), np.full(2, 2.0, np.float32))


def test_symbol_block_refuses_none():
    data = mx.sym.var("data")
    block = gluon.SymbolBlock(data * 2, [data])
    with pytest.raises(ValueError, match="every input of the symbol must be given"):
        block(None)


def test_unregistered_container_warning():
    class InList(gluon.Block):
        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            with self.name_scope():
                self.layers = [nn.Dense(3), nn.Dense(4)]

    class InDict(gluon.Block):
        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            self.table = {"a": (1, nn.Dense(3))}

    class Registered(gluon.Block):
        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            with self.name_scope():
                self.layers = nn.Sequential()
                self.layers.add(nn.Dense(3))
                self.plain = {"a": [1, 2], "b": "x"}

    for cls, count in [(InList, 1), (InDict, 1), (Registered, 0)]:
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            params = cls().collect_params()
        assert len(w) == count, (cls, [str(x.message) for x in w])
        if count:
            assert "unregistered container with Blocks" in str(w[0].message)
            assert len(params) == 0
        else:
            assert len(params) == 2


def test_sequential_of_hybrid_blocks_warns():
    for children, count in [([nn.Dense(3), nn.Dense(2)], 1), ([nn.Dense(3), nn.Sequential()], 0)]:
        net = nn.Sequential()
        net.add(*children)
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            net.hybridize()
        assert len(w) == count
        if count:
            assert "Consider using HybridSequential" in str(w[0].message)
    # The children are hybridized all the same.
    assert net[0]._active


@pytest.mark.parametrize("size, slices, axis", [(33, 15, 1), (33, 4, 1), (10, 3, 0), (128, 8, 0)])
def test_split_data_uneven(size, slices, axis):
    shape = [4, 4]
    shape[axis] = size
    x = np.random.RandomState(0).rand(*shape).astype(np.float32)
    parts = gluon.utils.split_data(nd.array(x), slices, batch_axis=axis, even_split=False)
    expected = np.array_split(x, slices, axis=axis)
    assert [p.shape for p in parts] == [e.shape for e in expected]
    for p, e in zip(parts, expected):
        assert_almost_equal(p.asnumpy(), e)
    if size % slices:
        with pytest.raises(ValueError, match="cannot be split evenly"):
            gluon.utils.split_data(nd.array(x), slices, batch_axis=axis)


def test_register_op_hook_reports_operator_values():
    net = nn.HybridSequential(prefix="net_")
    with net.name_scope():
        net.add(nn.Dense(3, flatten=False), nn.AvgPool1D())
    net.initialize()
    net.hybridize()
    x = nd.array(np.random.RandomState(2).rand(2, 4, 3).astype(np.float32))
    seen = []
    net.register_op_hook(lambda name, op, arr: seen.append((name, op, arr.asnumpy())))
    y = net(x)
    names = [n for n, _, _ in seen]
    assert names == [b"net_dense0_fwd_output", b"net_pool0_fwd_output"]
    assert [op for _, op, _ in seen] == [b"FullyConnected", b"Pooling"]
    assert_almost_equal(seen[-1][2], y.asnumpy())
    # monitor_all: each operator's inputs first, by "<node>_<input>", never the variables.
    seen.clear()
    net.register_op_hook(lambda name, op, arr: seen.append((name, op, arr.asnumpy())), monitor_all=True)
    net(x)
    assert [n for n, _, _ in seen] == [b"net_dense0_fwd_data", b"net_dense0_fwd_weight", b"net_dense0_fwd_bias",
                                       b"net_dense0_fwd_output", b"net_pool0_fwd_data", b"net_pool0_fwd_output"]
    assert_almost_equal(seen[1][2], net[0].weight.data().asnumpy())
    assert_almost_equal(seen[0][2], x.asnumpy())


class _DenseReluTranspose(nn.HybridBlock):
    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        with self.name_scope():
            self.dense = nn.Dense(2)

    def hybrid_forward(self, F, x):
        return F.transpose(F.Activation(self.dense(x), act_type="relu"))


def test_op_hook_names_outputs_by_index_where_mxnet_names_none():
    # MXNet's CachedOp names an output "<node>_<name>" for operators that name their outputs
    # (FullyConnected, Activation: "output"), else "<node>_<index>" (transpose: "_0"); an
    # input "<node>_<input name>", or "<node>_input<i>" where MXNet lists no input names.
    net = _DenseReluTranspose(prefix="net_")
    net.initialize()
    net.hybridize()
    x = nd.array(np.random.RandomState(5).uniform(-1, 1, (3, 4)).astype(np.float32))
    seen = []
    net.register_op_hook(lambda name, op, arr: seen.append((name, op, arr.asnumpy())), monitor_all=True)
    y = net(x)
    assert [(n, op) for n, op, _ in seen] == [
        (b"net_dense0_fwd_data", b"FullyConnected"), (b"net_dense0_fwd_weight", b"FullyConnected"),
        (b"net_dense0_fwd_bias", b"FullyConnected"), (b"net_dense0_fwd_output", b"FullyConnected"),
        (b"net_activation0_input0", b"Activation"), (b"net_activation0_output", b"Activation"),
        (b"net_transpose0_input0", b"transpose"), (b"net_transpose0_0", b"transpose")]
    w, b = net.dense.weight.data().asnumpy(), net.dense.bias.data().asnumpy()
    fc = x.asnumpy().dot(w.T) + b
    assert_almost_equal(seen[3][2], fc, rtol=1e-5, atol=1e-6)
    assert_almost_equal(seen[5][2], np.maximum(fc, 0), rtol=1e-5, atol=1e-6)
    assert_almost_equal(seen[7][2], y.asnumpy())


def _backward_then_call(net, x):
    """A recorded forward and backward of `net` on a copy of `x`, then a plain call on `x`."""
    xh = x.copy()
    xh.attach_grad()
    with autograd.record():
        out = net(xh)
    out.backward()
    net(x).wait_to_read()
    nd.waitall()


def test_a_shared_child_does_not_keep_its_last_parent_alive():
    # A child's name scope is entered inside its parent's each time the parent runs; the
    # child kept a link to that scope, so a layer shared by several networks held the last
    # one (and the input, gradient and intermediate arrays of its cached graph) alive.
    import gc
    import weakref

    class Net(gluon.HybridBlock):
        def __init__(self, child, **kwargs):
            super().__init__(**kwargs)
            with self.name_scope():
                self.child = child

        def hybrid_forward(self, F, x):
            return self.child(x.slice(begin=(0, 0, 0, 0), end=(2, 2, 4, 4)))

    pool = nn.AvgPool2D(strides=(2, 2))
    x = nd.random.uniform(shape=(4, 8, 64, 64))
    ctx = mx.cpu()
    gc.collect()
    nd.waitall()
    base = ctx.memory_stat("bytes_in_use")
    net = Net(pool)
    net.hybridize()
    _backward_then_call(net, x)  # the last call traces: the child's scope is entered inside the parent's
    alive = weakref.ref(net)
    del net
    gc.collect()
    nd.waitall()
    assert alive() is None
    assert ctx.memory_stat("bytes_in_use") == base
    assert pool(nd.ones((1, 1, 4, 4))).shape == (1, 1, 2, 2)  # the child still works alone


@pytest.mark.parametrize("hybridize", [False, True])
def test_a_dropped_network_is_freed_at_once_without_the_cycle_collector(hybridize):
    # A block and its name scope referred to each other (and two nested recursive helpers to
    # themselves), so every dropped network waited for Python's cyclic collector, which runs by
    # object counts, not bytes: a hybridized network kept its cached graph's arrays (inputs,
    # gradients, intermediates) until then. (A Trainer and its Parameters still refer to each
    # other, as in MXNet.)
    import gc
    import weakref

    class Net(gluon.HybridBlock):
        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            with self.name_scope():
                self.conv = nn.Conv2D(4, 3)
                self.pool = nn.GlobalAvgPool2D()
                self.out = nn.Dense(3)

        def hybrid_forward(self, F, x):
            return self.out(self.pool(self.conv(x)))

    x = nd.random.uniform(shape=(2, 3, 16, 16))

    def train_and_drop():
        net = Net()
        net.initialize()
        if hybridize:
            net.hybridize()
        _backward_then_call(net, x)
        return weakref.ref(net)

    ctx = mx.cpu()
    train_and_drop()  # the operators' workspaces grow once, and stay
    gc.collect()
    nd.waitall()
    base = ctx.memory_stat("bytes_in_use")
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        alive = train_and_drop()
        nd.waitall()
        assert alive() is None
        assert ctx.memory_stat("bytes_in_use") == base
    finally:
        if was_enabled:
            gc.enable()


def test_a_copied_block_names_its_children_after_the_copy():
    import copy
    import pickle

    net = nn.HybridSequential(prefix="net_")
    with net.name_scope():
        net.add(nn.Dense(3))
    net.initialize()
    for dup in (copy.deepcopy(net), pickle.loads(pickle.dumps(net))):
        with dup.name_scope():
            extra = nn.Dense(2)
        assert extra.prefix == "net_dense1_"
        dup.add(extra)
        dup.initialize()
        assert dup(nd.ones((1, 4))).shape == (1, 2)
        assert len(net) == 1


def test_a_scope_made_for_another_object_keeps_it():
    # MXNet's _BlockScope(obj) takes any object with a prefix; a scope made for an object
    # only the scope refers to keeps it (a block's own scope holds its block weakly), in
    # this thread and in another one, each with its own current scope.
    import threading
    from weft.gluon import block as gblock

    class Holder:
        def __init__(self, prefix):
            self.prefix = prefix
            self._empty_prefix = False

    seen = {}

    def spawned():
        with gblock._BlockScope(Holder("spawned_")):
            seen["thread"] = mx.name.NameManager.current.get(None, "hello")

    with gblock._BlockScope(Holder("main_")):
        t = threading.Thread(target=spawned)
        t.start()
        t.join()
        seen["main"] = mx.name.NameManager.current.get(None, "hello")
    assert seen == {"thread": "spawned_hello0", "main": "main_hello0"}
