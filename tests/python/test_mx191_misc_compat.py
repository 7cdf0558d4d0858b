"""MXNet 1.9 behaviours that scripts and test suites rely on (issue 21): metric configs
round-tripped through JSON, KVStore.broadcast / is_capable / key-kind checks / sparse pulls."""
import json

import numpy as np
import pytest

import weft as mx


# ---------------------------------------------------------------- metric
@pytest.mark.parametrize("name,args,kwargs", [("acc", (), {"axis": 0}), ("f1", (), {}),
                                              ("perplexity", (-1,), {}), ("mse", (), {"name": "m"})])
def test_metric_create_from_json_config(name, args, kwargs):
    metric = mx.metric.create(name, *args, **kwargs)
    again = mx.metric.create(json.dumps(metric.get_config()))
    assert type(again) is type(metric)
    assert again.get_config() == metric.get_config()


def test_metric_create_from_bad_json():
    with pytest.raises(ValueError, match="not valid JSON"):
        mx.metric.create('{"metric": ')


# ---------------------------------------------------------------- kvstore
def test_kvstore_broadcast_inits_and_pulls():
    kv = mx.kv.create("local")
    assert isinstance(kv, mx.kv.KVStoreBase)
    assert kv.is_capable(mx.kv.KVStoreBase.OPTIMIZER)
    with pytest.raises(ValueError, match="unknown capability"):
        kv.is_capable("teleport")
    outs = [mx.nd.zeros((2, 3)), mx.nd.zeros((2, 3))]
    kv.broadcast(3, mx.nd.full((2, 3), 7), out=outs)
    for o in outs:
        np.testing.assert_array_equal(o.asnumpy(), np.full((2, 3), 7))
    lists = [[mx.nd.zeros((2,))], [mx.nd.zeros((2,))]]
    kv.broadcast([4, 5], [mx.nd.array([1, 2]), mx.nd.array([3, 4])], out=lists)
    np.testing.assert_array_equal(lists[1][0].asnumpy(), [3, 4])


def test_kvstore_refuses_mixed_key_types():
    kv = mx.kv.create("local")
    kv.init(1, mx.nd.ones((2,)))
    with pytest.raises(mx.base.MXNetError, match="mixed key types"):
        kv.init("a", mx.nd.ones((2,)))
    with pytest.raises(mx.base.MXNetError, match="mixed key types"):
        kv.pull(["a"], out=[mx.nd.ones((2,))])
    skv = mx.kv.create("local")
    with pytest.raises(mx.base.MXNetError, match="mixed key types"):
        skv.init([1, "b"], [mx.nd.ones((2,)), mx.nd.ones((2,))])


def test_kvstore_pull_into_sparse_outputs():
    kv = mx.kv.create("local")
    kv.init(0, mx.nd.array([[1, 2], [3, 4], [5, 6]]))
    out = (mx.nd.ones((3, 2)) * 9).tostype("row_sparse")
    kv.pull(0, out=out)  # ignore_sparse: the row_sparse output is left as it was
    np.testing.assert_array_equal(out.asnumpy(), np.full((3, 2), 9))
    kv.pull(0, out=out, ignore_sparse=False)
    assert out.stype == "row_sparse"
    np.testing.assert_array_equal(out.asnumpy(), [[1, 2], [3, 4], [5, 6]])
    with pytest.raises(mx.base.MXNetError, match="RowSparseNDArray"):
        kv.row_sparse_pull(0, out=mx.nd.ones((3, 2)), row_ids=mx.nd.array([1]))


# ---------------------------------------------------------------- contrib.text
def test_text_checks_are_value_and_assertion_errors():
    from weft.contrib import text
    counter = text.utils.count_tokens_from_str("a b b c c c")
    for bad in ({"min_freq": 0}, {"reserved_tokens": ["b", "b"]}, {"reserved_tokens": ["<unk>"]}):
        with pytest.raises(AssertionError):
            text.vocab.Vocabulary(counter, **bad)
        with pytest.raises(ValueError):
            text.vocab.Vocabulary(counter, **bad)


def test_custom_embedding_bad_file_and_update_shape(tmp_path):
    from weft.contrib import text
    bad = tmp_path / "bad.txt"
    bad.write_text("a 0.1 0.2\nb 0.3 0.4\nc\n")
    with pytest.raises(AssertionError, match="line 3"):
        text.embedding.CustomEmbedding(str(bad), " ")
    ragged = tmp_path / "ragged.txt"
    ragged.write_text("a 0.1 0.2\nb 0.3 0.4 0.5\n")
    with pytest.raises(AssertionError, match="token 'b' has 3 values"):
        text.embedding.CustomEmbedding(str(ragged), " ")
    good = tmp_path / "good.txt"
    good.write_text("a 0.1 0.2\nb 0.3 0.4\n")
    emb = text.embedding.CustomEmbedding(str(good), " ")
    with pytest.raises(AssertionError, match=r"shape \(1, 2\)"):
        emb.update_token_vectors("a", mx.nd.zeros((2, 2)))
    with pytest.raises(ValueError, match="unknown"):
        emb.update_token_vectors("zzz", mx.nd.zeros((2,)))
    emb.update_token_vectors("b", mx.nd.array([7, 8]))
    np.testing.assert_allclose(emb.get_vecs_by_tokens("b").asnumpy(), [7, 8])


# ---------------------------------------------------------------- operators
def test_operator_without_parameters_keeps_extra_attributes():
    a, b = mx.nd.array([[1, -2]]), mx.nd.array([[0, 0]])
    np.testing.assert_array_equal(mx.nd.broadcast_maximum(a, b, axis=1).asnumpy(), [[1, 0]])
    s = mx.sym.broadcast_maximum(mx.sym.var("a"), mx.sym.var("b"), axis=1)
    assert s.attr_dict()[s.name]["axis"] == "1"
    # Operators with parameters still refuse unknown ones.
    with pytest.raises(mx.base.MXNetError, match="axes_typo"):
        mx.nd.transpose(a, axes_typo=(1, 0))


def _ctc_reference(logits, label):
    """-log p(label | logits) by the CTC forward recursion (blank = last class)."""
    lp = logits - np.log(np.exp(logits).sum(axis=1, keepdims=True))
    steps, classes = logits.shape
    blank = classes - 1
    ext = [blank]
    for lab in label:
        ext += [lab, blank]
    # Dynamic programme over extended positions, so labels equal to the blank stay symbols.
    S = len(ext)
    alpha = np.full(S, -np.inf)
    alpha[0] = lp[0, ext[0]]
    if S > 1:
        alpha[1] = lp[0, ext[1]]
    for t in range(1, steps):
        new = np.full(S, -np.inf)
        for s in range(S):
            terms = [alpha[s]] + ([alpha[s - 1]] if s >= 1 else [])
            if s >= 2 and s % 2 == 1 and ext[s] != ext[s - 2]:
                terms.append(alpha[s - 2])
            new[s] = np.logaddexp.reduce(terms) + lp[t, ext[s]]
        alpha = new
    total = np.logaddexp(alpha[-1], alpha[-2]) if S > 1 else alpha[-1]
    return -total


def test_ctc_loss_takes_the_blank_index_inside_label_lengths():
    rng = np.random.default_rng(3)
    logits = rng.standard_normal((6, 1, 4)).astype(np.float32)
    label = np.array([[3, 1, 1, 2]], dtype=np.float32)
    loss = mx.nd.CTCLoss(mx.nd.array(logits), mx.nd.array(label), mx.nd.array([3]), use_label_lengths=True,
                         blank_label="last")
    np.testing.assert_allclose(loss.asnumpy(), [_ctc_reference(logits[:, 0], [3, 1, 1])], rtol=1e-4)
    with pytest.raises(mx.base.MXNetError, match="is not a class of the alphabet of 4"):
        mx.nd.CTCLoss(mx.nd.array(logits), mx.nd.array([[1, 4]]), blank_label="last").wait_to_read()


def test_symbol_function_skips_none_inputs_by_position():
    pred, label = mx.sym.var("pred"), mx.sym.var("label")
    s = mx.sym.CTCLoss(pred, label, None, None)
    assert s.list_arguments() == ["pred", "label"]
    w = mx.sym.var("w")
    fc = mx.sym.FullyConnected(pred, w, None, num_hidden=3, no_bias=True)
    assert fc.list_arguments() == ["pred", "w"]
    assert fc.infer_shape(pred=(2, 5))[0] == [(2, 5), (3, 5)]
    with pytest.raises(TypeError, match="given by position and by keyword"):
        mx.sym.CTCLoss(pred, label, None, data=pred)


# ---------------------------------------------------------------- io / image
def test_ndarrayiter_pad_wraps_a_batch_larger_than_the_data():
    data = np.arange(10, dtype=np.float32)
    it = mx.io.NDArrayIter(data=data, batch_size=25, shuffle=False, last_batch_handle="pad")
    batch = it.next()
    np.testing.assert_array_equal(batch.data[0].asnumpy(), np.concatenate([data, data, data[:5]]))
    assert batch.pad == 15


def test_ndarrayiter_ignores_extra_label_samples():
    data = np.arange(8, dtype=np.float32).reshape(4, 2)
    label = np.arange(10, dtype=np.float32)
    it = mx.io.NDArrayIter(data, {"label": label}, batch_size=3, last_batch_handle="pad")
    batches = [(b.data[0].asnumpy(), b.label[0].asnumpy()) for b in it]
    assert len(batches) == 2
    np.testing.assert_array_equal(batches[1][1], [3, 0, 1])
    with pytest.raises(ValueError, match="at least as many samples"):
        mx.io.NDArrayIter(data, label[:3])


def test_img_alias_and_imread_error(tmp_path):
    assert mx.img is mx.image
    with pytest.raises(mx.base.MXNetError, match="cannot read"):
        mx.img.imread(str(tmp_path / "absent.jpg"))


# ---------------------------------------------------------------- gluon
def test_hybridized_block_with_data_dependent_shape_runs_imperatively():
    class Masked(mx.gluon.HybridBlock):
        def hybrid_forward(self, F, data, index):
            return F.contrib.boolean_mask(data, index) * 2

    block = Masked()
    block.hybridize()
    data = mx.nd.array([[1, 2, 3], [4, 5, 6], [7, 8, 9]])
    data.attach_grad()
    for index, rows in (([0, 1, 1], [1, 2]), ([1, 0, 0], [0])):
        with mx.autograd.record():
            out = block(data, mx.nd.array(index))
        out.backward()
        np.testing.assert_array_equal(out.asnumpy(), data.asnumpy()[rows] * 2)
        grad = np.zeros((3, 3))
        grad[rows] = 2
        np.testing.assert_array_equal(data.grad.asnumpy(), grad)


# ---------------------------------------------------------------- partial shape inference
def _arg_shapes(sym, **known):
    args, _, _ = sym.infer_shape(**known)
    assert args is not None, "inference left shapes unknown"
    return dict(zip(sym.list_arguments(), args))


@pytest.mark.parametrize("make,known,want", [
    (lambda x, y: mx.sym.dot(x, y), {"x": (0, 3, 4), "y": (4, 5)}, (0, 3, 5)),
    (lambda x, y: mx.sym.dot(x, y, transpose_b=True), {"x": (0, 4), "y": (6, 4)}, (0, 6)),
    (lambda x, y: mx.sym.batch_dot(x, y), {"x": (0, 3, 4), "y": (0, 4, 5)}, (0, 3, 5)),
    (lambda x, y: mx.sym.Embedding(x, y, input_dim=100, output_dim=10), {"x": (0, 5), "y": (100, 10)}, (0, 5, 10)),
    (lambda x, y: mx.sym.pick(x, y, axis=1), {"x": (0, 3, 3), "y": (0, 3)}, (0, 3)),
    (lambda x, y: mx.sym.Concat(x, y, dim=1), {"x": (0, 3), "y": (0, 4)}, (0, 7)),
])
def test_partial_shapes_flow_forward(make, known, want):
    s = make(mx.sym.var("x"), mx.sym.var("y"))
    _, out, _ = s.infer_shape_partial(**known)
    assert out == [want]
    with mx.np_shape(True):
        _, out, _ = s.infer_shape_partial(**{k: tuple(-1 if d == 0 else d for d in v) for k, v in known.items()})
        assert out == [tuple(-1 if d == 0 else d for d in want)]


def test_partial_shape_stays_unknown_when_it_depends_on_unknown_dims():
    s = mx.sym.batch_dot(mx.sym.var("x"), mx.sym.var("y"))
    _, out, _ = s.infer_shape_partial(x=(0, 3, 4), y=(0, 0, 5))
    assert out == [()]
    _, out, _ = mx.sym.sum(mx.sym.var("x"), axis=0).infer_shape_partial(x=(0, 4))
    assert out == [(4,)]
    _, out, _ = mx.sym.reshape(mx.sym.var("x"), shape=(-1,)).infer_shape_partial(x=(0, 4))
    assert out == [(0,)]


def test_partial_shapes_flow_back_from_later_nodes():
    a = mx.sym.Variable("a", shape=(0, 10))
    fc = mx.sym.FullyConnected(a, num_hidden=21, name="fc")
    shapes = _arg_shapes(fc + mx.sym.Variable("c", shape=(5, 0)))
    assert shapes["a"] == (5, 10) and shapes["c"] == (5, 21) and shapes["fc_weight"] == (21, 10)

    conv = mx.sym.Convolution(mx.sym.Variable("a", shape=(0, 10, 0, 0)), num_filter=21, kernel=(3, 3), pad=(1, 1),
                              name="conv")
    shapes = _arg_shapes(conv + mx.sym.Variable("c", shape=(5, 21, 32, 32)))
    assert shapes["a"] == (5, 10, 32, 32) and shapes["conv_weight"] == (21, 10, 3, 3)
    # A stride other than 1 leaves the input's spatial size open (several sizes fit).
    strided = mx.sym.Convolution(mx.sym.var("a"), num_filter=2, kernel=(3, 3), stride=(2, 2), name="s")
    args, _, _ = (strided + mx.sym.var("c")).infer_shape_partial(a=(0, 1, 0, 0), c=(4, 2, 7, 7))
    assert args[0] == (4, 1, 0, 0)

    cat = mx.sym.Concat(mx.sym.Variable("a", shape=(0, 10)), mx.sym.Variable("b", shape=(0, 5)), dim=1)
    shapes = _arg_shapes(mx.sym.Variable("d", shape=(2, 0)) + cat)
    assert (shapes["a"], shapes["b"], shapes["d"]) == ((2, 10), (2, 5), (2, 15))

    parts = mx.sym.SliceChannel(mx.sym.Variable("a", shape=(0, 15, 0)), num_outputs=3)
    assert _arg_shapes(parts[1] + mx.sym.Variable("c", shape=(3, 5, 2)))["a"] == (3, 15, 2)
    squeezed = mx.sym.SliceChannel(mx.sym.Variable("a", shape=(0, 10)), num_outputs=10, axis=1, squeeze_axis=True)
    assert _arg_shapes(squeezed[1] + mx.sym.Variable("c", shape=(5,)))["a"] == (5, 10)


def test_identity_with_attr_like_rhs_passes_its_shape_to_rhs():
    w = mx.sym.Variable("weight")
    shifted = mx.sym.broadcast_add(w, mx.sym.Variable("wshift", shape=(1,)))
    tied = mx.sym._internal._identity_with_attr_like_rhs(shifted, w)
    net = mx.sym.FullyConnected(mx.sym.var("data"), weight=tied, num_hidden=11, no_bias=True)
    assert _arg_shapes(net, data=(7, 100))["weight"] == (11, 100)
    with pytest.raises(mx.base.MXNetError, match="Shape inconsistent|Incompatible"):
        mx.sym._internal._identity_with_attr_like_rhs(mx.sym.var("p"), mx.sym.var("q")).infer_shape(p=(2, 3), q=(3, 2))


def test_partial_concat_solves_the_one_unknown_piece():
    cat = mx.sym.Concat(mx.sym.var("a"), mx.sym.var("b"), dim=1)
    args, _, _ = (cat + mx.sym.var("c")).infer_shape_partial(a=(2, 3), b=(2, 0), c=(2, 10))
    assert args == [(2, 3), (2, 7), (2, 10)]


# ---------------------------------------------------------------- CSVIter dtype
@pytest.mark.parametrize("dtype,value", [("int32", 200000001), ("int64", 2 ** 40 + 3), ("float32", 1.5)])
def test_csviter_dtype_reads_values_exactly(tmp_path, dtype, value):
    data, label = tmp_path / "d.csv", tmp_path / "l.csv"
    data.write_text("".join("%s,%s\n" % (value, i) for i in range(5)))
    label.write_text("".join("%d\n" % (i * 7) for i in range(5)))
    it = mx.io.CSVIter(data_csv=str(data), data_shape=(2,), label_csv=str(label), batch_size=2, round_batch=False,
                       dtype=dtype)
    assert it.provide_data[0].dtype == np.dtype(dtype)
    batches = [(b.data[0].asnumpy(), b.label[0].asnumpy(), b.pad) for b in it]
    assert [b[2] for b in batches] == [0, 0, 1]
    assert batches[0][0].dtype == np.dtype(dtype)
    np.testing.assert_array_equal(batches[1][0], np.array([[value, 2], [value, 3]], dtype=dtype))
    np.testing.assert_array_equal(batches[2][0], np.array([[value, 4], [0, 0]], dtype=dtype))
    np.testing.assert_array_equal(batches[2][1], np.array([28, 0], dtype=dtype))


def test_csviter_int_dtype_refuses_fractions(tmp_path):
    data = tmp_path / "d.csv"
    data.write_text("1,2.5\n")
    with pytest.raises(mx.base.MXNetError, match="expected ','"):
        it = mx.io.CSVIter(data_csv=str(data), data_shape=(2,), batch_size=1, dtype="int32")
        it.next()
    with pytest.raises(mx.base.MXNetError, match="dtype"):
        mx.io.CSVIter(data_csv=str(data), data_shape=(2,), batch_size=1, dtype="float16")
