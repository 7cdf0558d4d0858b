"""MXNet 1.9 behaviour of Gluon parameters that user code relies on: stype checks, the
storage type of a parameter's variable, ParameterDict printing and shape merging of shared
parameters, saving row_sparse parameters, per-context indexing of `_data`, initializer
equality, SymbolBlock refusing row_sparse variables, load_parameters' dtype_source,
Block.summary, and kvstore row_sparse_pull's nested row_ids."""
import re

import numpy as np
import pytest

import weft as mx
from weft import gluon, nd
from weft.gluon import nn


def test_invalid_stypes_raise_assertion_error():
    with pytest.raises(AssertionError, match="stype='csr'"):
        gluon.Parameter("w", shape=(2, 2), stype="csr")
    with pytest.raises(AssertionError, match="grad_stype='bogus'"):
        gluon.Parameter("w", shape=(2, 2), grad_stype="bogus")


def test_var_carries_storage_type():
    sparse = gluon.Parameter("ws", shape=(4, 3), stype="row_sparse")
    dense = gluon.Parameter("wd", shape=(4, 3))
    assert sparse.var().attr("__storage_type__") == "1"
    assert dense.var().attr("__storage_type__") == "0"
    assert sparse.var().attr("__shape__") == "(4, 3)"


def test_parameter_dict_repr():
    params = gluon.ParameterDict("blk_")
    params.get("weight", shape=(3, 2), dtype="float16")
    lines = repr(params).splitlines()
    assert lines[0] == "blk_ ("
    assert "blk_weight" in lines[1] and "(3, 2)" in lines[1] and "float16" in lines[1]
    assert lines[2] == ")"
    anon = gluon.ParameterDict()
    anon.get("b", shape=(1,))
    assert repr(anon).splitlines()[0] == "("


def test_get_merges_unknown_dimensions_both_ways():
    params = gluon.ParameterDict("p_")
    w = params.get("w", shape=(5, 0))
    assert params.get("w", shape=(5, 7)) is w and w.shape == (5, 7)
    # A later request with an unknown dimension keeps the known one.
    assert params.get("w", shape=(0, 7)) is w and w.shape == (5, 7)
    with pytest.raises(ValueError, match=r"compatible with \(5, 7\), got \(5, 6\)"):
        params.get("w", shape=(5, 6))
    with pytest.raises(ValueError, match="compatible"):
        params.get("w", shape=(5, 7, 1))


class _TwoDense(gluon.Block):
    def __init__(self, in_units=0, **kwargs):
        super().__init__(**kwargs)
        with self.name_scope():
            self.first = nn.Dense(4, in_units=in_units)
            self.second = nn.Dense(4, in_units=in_units)

    def forward(self, x):
        return self.second(self.first(x))


def test_sharing_with_known_and_unknown_input_sizes():
    # A block with unknown input sizes shares one whose sizes are known, and the reverse.
    for known_first in (True, False):
        a = _TwoDense(in_units=3 if known_first else 0, prefix="a_")
        b = _TwoDense(in_units=0 if known_first else 3, prefix="b_", params=a.collect_params())
        assert b.first.weight is a.first.weight
        assert a.first.weight.shape == (4, 3) and a.second.weight.shape == (4, 3)
        a.collect_params().initialize()
        x = nd.array(np.random.RandomState(0).rand(2, 3))
        np.testing.assert_allclose(b.first(x).asnumpy(), a.first(x).asnumpy())
        w = a.first.weight.data().asnumpy()
        expected = x.asnumpy() @ w.T + a.first.bias.data().asnumpy()
        np.testing.assert_allclose(b.first(x).asnumpy(), expected, rtol=1e-5)


def test_save_row_sparse_parameter_and_load_dense_or_sparse(tmp_path):
    fname = str(tmp_path / "p.params")
    src = gluon.ParameterDict("net_")
    src.get("d", shape=(4, 3))
    src.get("s", shape=(4, 3), stype="row_sparse")
    src.initialize(init=mx.init.Uniform(1.0))
    gluon.Trainer(src, "sgd")
    rows = nd.arange(0, 4)
    want_s = src.get("s").row_sparse_data(rows).asnumpy()
    want_d = src.get("d").data().asnumpy()
    assert np.abs(want_s).sum() > 0
    src.save(fname)
    saved = nd.load(fname)
    assert saved["net_s"].stype == "default"
    np.testing.assert_array_equal(saved["net_s"].asnumpy(), want_s)

    dense = gluon.ParameterDict("net_")
    dense.get("d", shape=(4, 3))
    dense.get("s", shape=(4, 3))
    dense.load(fname)
    np.testing.assert_array_equal(dense.get("s").data().asnumpy(), want_s)
    np.testing.assert_array_equal(dense.get("d").data().asnumpy(), want_d)

    sparse = gluon.ParameterDict("net_")
    sparse.get("d", shape=(4, 3))
    sparse.get("s", shape=(4, 3), stype="row_sparse")
    sparse.load(fname)
    gluon.Trainer(sparse, "sgd")
    got = sparse.get("s").row_sparse_data(nd.array([1, 3]))
    assert got.stype == "row_sparse"
    np.testing.assert_array_equal(got.indices.asnumpy(), [1, 3])
    np.testing.assert_array_equal(got.data.asnumpy(), want_s[[1, 3]])


def test_data_indexed_by_context_position():
    p = gluon.Parameter("w", shape=(2, 3))
    ctxs = [mx.cpu(1), mx.cpu(2)]
    p.initialize(init=mx.init.Uniform(1.0), ctx=ctxs)
    assert p._data[0] is p.data(ctxs[0])
    assert p._data[1] is p.data(ctxs[1])
    assert p._data[-1] is p.data(ctxs[1])
    assert p._data[ctxs[1]] is p.data(ctxs[1])
    with pytest.raises(IndexError):
        p._data[2]


def test_initializer_equality():
    assert mx.init.Constant(-10.0) == mx.init.Constant(-10.0)
    assert mx.init.Constant(-10.0) != mx.init.Constant(1.0)
    assert mx.init.Xavier(magnitude=2) == mx.init.Xavier(magnitude=2)
    assert mx.init.Xavier(magnitude=2) != mx.init.Xavier(magnitude=3)
    assert mx.init.Zero() != mx.init.One()
    assert mx.init.Zero() != "zeros"
    assert hash(mx.init.Normal(0.5)) == hash(mx.init.Normal(0.5))


def test_shared_parameter_keeps_its_initializer():
    class Blk(gluon.HybridBlock):
        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            with self.name_scope():
                self.p = self.params.get("p", shape=(2,), init=mx.init.Constant(-3.0))

    first = Blk()
    shared = Blk(params=first.collect_params())
    other = Blk()
    assert shared.p is first.p and other.p is not first.p
    assert other.p.init == first.p.init
    first.initialize()
    np.testing.assert_array_equal(shared.p.data().asnumpy(), [-3.0, -3.0])


def test_symbol_block_refuses_row_sparse_variables():
    data = mx.sym.var("data")
    weight = mx.sym.var("weight", stype="row_sparse")
    out = mx.sym.dot(data, weight)
    with pytest.raises(AssertionError, match="'weight' has storage type row_sparse"):
        gluon.SymbolBlock(out, data)
    # Default-storage variables are fine.
    gluon.SymbolBlock(mx.sym.dot(data, mx.sym.var("w2")), data)


def test_load_parameters_dtype_source(tmp_path):
    fname = str(tmp_path / "d.params")
    net = nn.Dense(3, in_units=2)
    net.initialize(init=mx.init.Uniform(1.0))
    net.cast("float16")
    want = net.weight.data().asnumpy()
    net.save_parameters(fname)
    net.cast("float32")
    net.load_parameters(fname, cast_dtype=True, dtype_source="saved")
    assert net.weight.dtype == np.float16 and net.weight.data().dtype == np.float16
    np.testing.assert_array_equal(net.weight.data().asnumpy(), want)
    net.cast("float32")
    net.load_parameters(fname, cast_dtype=True, dtype_source="current")
    assert net.weight.data().dtype == np.float32
    np.testing.assert_array_equal(net.weight.data().asnumpy(), want.astype(np.float32))


def _summary_lines(capsys, net, *inputs):
    net.summary(*inputs)
    return capsys.readouterr().out.splitlines()


def _figure(lines, label):
    for line in lines:
        if line.strip().startswith(label):
            return int(line.rsplit(":", 1)[1])
    raise AssertionError("no line %r in the summary" % label)


def test_summary_rows_and_totals(capsys):
    net = nn.Sequential()
    with net.name_scope():
        net.add(nn.Embedding(10, 4))
        net.add(nn.Dense(4, flatten=False))
        net.add(nn.Dense(10, flatten=False, params=net[0].params))  # shares the (10, 4) weight
    net.initialize()
    net[1].bias.grad_req = "null"
    lines = _summary_lines(capsys, net, nd.ones((2, 5)))
    rows = {}
    for line in lines:
        m = re.match(r"\s*(\w+-\d+|Input)\s+(.*\S)\s+(\d+)$", line)
        if m:
            rows[m.group(1)] = (m.group(2), int(m.group(3)))
    # The Sequential container has no row; layers are numbered in the order they ran.
    assert rows == {"Input": ("(2, 5)", 0), "Embedding-1": ("(2, 5, 4)", 40),
                    "Dense-2": ("(2, 5, 4)", 4 * 4 + 4), "Dense-3": ("(2, 5, 10)", 10 * 4 + 10)}
    total = 40 + 20 + 50
    assert _figure(lines, "Total params") == total
    assert _figure(lines, "Non-trainable params") == 4
    assert _figure(lines, "Trainable params") == total - 4
    assert _figure(lines, "Shared params in forward computation graph") == 40
    assert _figure(lines, "Unique parameters in model") == total - 40


def test_summary_nested_outputs_and_hybridized(capsys):
    net = gluon.rnn.LSTM(3, input_size=2)
    net.initialize()
    state = net.begin_state(4)
    lines = _summary_lines(capsys, net, nd.ones((5, 4, 2)), state)
    assert any(re.match(r"\s*Input\s+\(5, 4, 2\), \[\(1, 4, 3\), \(1, 4, 3\)\]\s+0$", l) for l in lines)
    # i2h (4 gates x 3, 2 inputs) and h2h (4 gates x 3, 3 states) weights, and their biases.
    params = 4 * 3 * (2 + 3) + 2 * 4 * 3
    assert any(re.match(r"\s*LSTM-1\s+\(5, 4, 3\), .*\s%d$" % params, l) for l in lines)
    hybrid = nn.HybridSequential()
    hybrid.add(nn.Dense(2, in_units=3))
    hybrid.initialize()
    hybrid.hybridize()
    with pytest.raises(AssertionError, match="hybridized"):
        hybrid.summary(nd.ones((1, 3)))


def test_row_sparse_pull_nested_row_ids():
    kv = mx.kv.create("local")
    shape = (5, 2)
    init = nd.array(np.arange(10).reshape(shape)).tostype("row_sparse")
    kv.init(["a", "b"], [init, init])
    outs = [[nd.sparse.zeros("row_sparse", shape, ctx=mx.cpu(i)) for i in range(2)] for _ in range(2)]
    rows = [[nd.array([0, 4]), nd.array([1])], [nd.array([2]), nd.array([3, 3])]]
    kv.row_sparse_pull(["a", "b"], out=outs, row_ids=rows)
    full = np.arange(10).reshape(shape)
    for key_outs, key_rows in zip(outs, rows):
        for o, r in zip(key_outs, key_rows):
            ids = np.unique(r.asnumpy().astype(np.int64))
            np.testing.assert_array_equal(o.indices.asnumpy(), ids)
            np.testing.assert_array_equal(o.data.asnumpy(), full[ids])
    # One id array per key serves all of that key's outputs.
    kv.row_sparse_pull(["a", "b"], out=outs, row_ids=[nd.array([1]), nd.array([0, 2])])
    assert [o.indices.asnumpy().tolist() for o in outs[0]] == [[1], [1]]
    assert [o.indices.asnumpy().tolist() for o in outs[1]] == [[0, 2], [0, 2]]
    with pytest.raises(ValueError, match="one row_ids per output"):
        kv.row_sparse_pull(["a", "b"], out=outs, row_ids=[nd.array([1])] * 3)


class _DotTimesInput(gluon.HybridBlock):
    def __init__(self, units, **kwargs):
        super().__init__(**kwargs)
        with self.name_scope():
            self.w = self.params.get("w", shape=(units, units))

    def hybrid_forward(self, F, x, w):
        return F.dot(x, w) * x


def test_hybridized_block_with_csr_input_called_twice_in_one_record():
    rs = np.random.RandomState(1)
    x_np = (rs.rand(5, 3) * (rs.rand(5, 3) > 0.4)).astype(np.float32)
    block = _DotTimesInput(3)
    block.initialize(init=mx.init.Uniform(1.0))
    block.hybridize()
    w_np = block.w.data().asnumpy()
    x = nd.array(x_np).tostype("csr")
    np.testing.assert_allclose(block(x).asnumpy(), (x_np @ w_np) * x_np, rtol=1e-5)
    with mx.autograd.record():
        z = block(x) + block(x)
    z.backward()
    # d/dw of sum((x w) * x) is x^T x; the two calls add up.
    np.testing.assert_allclose(block.w.grad().asnumpy(), 2 * x_np.T @ x_np, rtol=1e-5)


class _Emb(gluon.HybridBlock):
    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        with self.name_scope():
            self.embedding = nn.Embedding(8, 2, sparse_grad=True)

    def hybrid_forward(self, F, idx):
        return self.embedding(idx) * 3


def test_hybridized_sparse_grad_block_called_twice_in_one_record():
    net = _Emb()
    net.initialize()
    net.hybridize()
    with mx.autograd.record():
        loss = net(nd.array([0, 2, 2])).sum() + net(nd.array([2, 5])).sum()
    loss.backward()
    grad = net.embedding.weight.grad()
    assert grad.stype == "row_sparse"
    want = np.zeros((8, 2))
    for i in (0, 2, 2, 2, 5):
        want[i] += 3
    np.testing.assert_array_equal(grad.asnumpy(), want)
    # grad_req 'write': a second backward replaces the first.
    with mx.autograd.record():
        loss = net(nd.array([7])).sum()
    loss.backward()
    want = np.zeros((8, 2))
    want[7] = 3
    np.testing.assert_array_equal(net.embedding.weight.grad().asnumpy(), want)


class _WithSymbolBackbone(gluon.HybridBlock):
    """A SymbolBlock child made from a network built in this block's name scope."""

    def __init__(self):
        super().__init__()
        with self.name_scope():
            inner = nn.HybridSequential()
            with inner.name_scope():
                inner.add(nn.Dense(4, in_units=3), nn.Dense(2, in_units=4))
            data = mx.sym.var("data")
            self.backbone = gluon.SymbolBlock(inner(data), data, params=inner.collect_params())

    def hybrid_forward(self, F, x):
        return self.backbone(x)


def test_symbol_block_structural_names_drop_the_common_prefix(tmp_path):
    # The parameter names share "<net>_hybridsequential0_dense"; the keys drop it, so a second
    # network (another name prefix) loads the first one's file.
    x = nd.array(np.random.RandomState(0).uniform(-1, 1, (2, 3)))
    first = _WithSymbolBackbone()
    first.initialize(mx.init.Normal())
    expected = first(x).asnumpy()
    f = str(tmp_path / "net.params")
    first.save_parameters(f)
    assert sorted(nd.load(f)) == ["backbone.0_bias", "backbone.0_weight", "backbone.1_bias", "backbone.1_weight"]
    second = _WithSymbolBackbone()
    assert second.collect_params().keys() != first.collect_params().keys()
    second.load_parameters(f)
    np.testing.assert_allclose(second(x).asnumpy(), expected, rtol=1e-6)


class _Holder(gluon.Block):
    def __init__(self, params=None):
        super().__init__(params=params)
        with self.name_scope():
            self.weight = self.params.get("weight", shape=(3, 3))


class _Pair(gluon.Block):
    def __init__(self):
        super().__init__()
        self.b1 = _Holder()
        self.b2 = _Holder(self.b1.collect_params())


def test_deduplicated_file_loads_a_shared_parameter_under_any_of_its_names(tmp_path):
    pair = _Pair()
    pair.initialize(mx.init.Uniform())
    f = str(tmp_path / "dedup.params")
    pair.save_parameters(f, deduplicate=True)
    assert len(nd.load(f)) == 1
    other = _Pair()
    other.load_parameters(f)
    np.testing.assert_array_equal(other.b2.weight.data().asnumpy(), pair.b1.weight.data().asnumpy())
    # A parameter of which no name is in the file is still missing.
    lone = _Holder()
    nd.save(f, {"b1.other": nd.ones((3, 3))})
    with pytest.raises(ValueError, match="weight' is missing"):
        lone.load_parameters(f, ignore_extra=True)
