"""Module, BucketingModule and executor behaviours MXNet 1.9's users rely on: where
group2ctxs puts the arrays, how buckets are named, saved and loaded, what executor groups
and reshaped executors share, what the monitor reports."""
import math

import numpy as np
import pytest

import weft as mx
from weft.module.executor_group import DataParallelExecutorGroup
from weft.test_utils import same_array


def _grouped_sum():
    with mx.AttrScope(ctx_group="dev1"):
        a = mx.sym.var("a") * 2
    with mx.AttrScope(ctx_group="dev2"):
        b = mx.sym.var("b")
        c = a + b
    return c


@pytest.mark.parametrize("group2ctxs,ctxs,expect", [
    ({"dev1": mx.cpu(1), "dev2": mx.cpu(2)}, [mx.cpu(0)], [[mx.cpu(1), mx.cpu(2)]]),
    # A list value gives the i-th device's group context; a one-element list serves all.
    ({"dev1": [mx.cpu(3), mx.cpu(4)], "dev2": [mx.cpu(5)]}, [mx.cpu(0), mx.cpu(1)],
     [[mx.cpu(3), mx.cpu(5)], [mx.cpu(4), mx.cpu(5)]]),
    ([{"dev1": mx.cpu(6), "dev2": mx.cpu(7)}, {"dev1": mx.cpu(2), "dev2": mx.cpu(3)}], [mx.cpu(0), mx.cpu(1)],
     [[mx.cpu(6), mx.cpu(7)], [mx.cpu(2), mx.cpu(3)]]),
])
def test_group2ctxs_puts_inputs_and_their_gradients_on_the_group_context(group2ctxs, ctxs, expect):
    shape = (4, 3)
    mod = mx.mod.Module(_grouped_sum(), context=ctxs, data_names=["a", "b"], label_names=None,
                        group2ctxs=group2ctxs)
    mod.bind(data_shapes=[("a", shape), ("b", shape)], inputs_need_grad=True)
    mod.init_params()
    a = np.arange(12, dtype=np.float32).reshape(shape)
    b = np.ones(shape, np.float32)
    mod.forward(mx.io.DataBatch(data=[mx.nd.array(a), mx.nd.array(b)]), is_train=True)
    mod.backward([mx.nd.ones(shape)])
    for e, (ctx_a, ctx_b) in zip(mod._exec_group.execs, expect):
        assert e.arg_dict["a"].context == ctx_a and e.grad_dict["a"].context == ctx_a
        assert e.arg_dict["b"].context == ctx_b and e.grad_dict["b"].context == ctx_b
    np.testing.assert_array_equal(mod.get_outputs()[0].asnumpy(), 2 * a + b)
    grads = mod.get_input_grads()
    np.testing.assert_array_equal(grads[0].asnumpy(), np.full(shape, 2.0))
    np.testing.assert_array_equal(grads[1].asnumpy(), np.ones(shape))


def test_group2ctxs_bad_lengths_are_errors():
    with pytest.raises(ValueError, match=r"group2ctxs\['dev1'\] has 3 contexts; expected 1 or 2"):
        mx.mod.Module(_grouped_sum(), context=[mx.cpu(0), mx.cpu(1)], data_names=["a", "b"], label_names=None,
                      group2ctxs={"dev1": [mx.cpu(1)] * 3})
    with pytest.raises(ValueError, match="group2ctxs has 1 entries for 2 contexts"):
        mx.mod.Module(_grouped_sum(), context=[mx.cpu(0), mx.cpu(1)], data_names=["a", "b"], label_names=None,
                      group2ctxs=[{}])


def test_perplexity_scores_out_of_range_labels_as_the_nearest_class():
    probs = np.array([[0.1, 0.2, 0.7], [0.5, 0.25, 0.25], [0.6, 0.3, 0.1]], np.float32)
    labels = np.array([3, -2, 1], np.float32)  # 3 -> class 2, -2 -> class 0
    metric = mx.metric.Perplexity(ignore_label=None)
    metric.update([mx.nd.array(labels)], [mx.nd.array(probs)])
    expect = math.exp(-(math.log(0.7) + math.log(0.5) + math.log(0.3)) / 3)
    assert metric.get()[1] == pytest.approx(expect, rel=1e-6)
    # The ignored label is left out, not clipped.
    metric = mx.metric.Perplexity(ignore_label=-2)
    metric.update([mx.nd.array(labels)], [mx.nd.array(probs)])
    assert metric.get()[1] == pytest.approx(math.exp(-(math.log(0.7) + math.log(0.3)) / 2), rel=1e-6)


VOCAB, EMBED, HIDDEN, BATCH = 12, 4, 5, 3


def _sym_gen(seq_len):
    # Unnamed operators: the bucketing module must name them alike in every bucket.
    data = mx.sym.var("data")
    label = mx.sym.var("softmax_label")
    embed = mx.sym.Embedding(data, input_dim=VOCAB, output_dim=EMBED)
    pred = mx.sym.FullyConnected(mx.sym.Reshape(embed, shape=(-1, EMBED)), num_hidden=VOCAB)
    out = mx.sym.SoftmaxOutput(pred, mx.sym.Reshape(label, shape=(-1,)), name="softmax")
    return out, ("data",), ("softmax_label",)


def _bucket_batch(key, seed):
    rng = np.random.RandomState(seed)
    data = mx.nd.array(rng.randint(0, VOCAB, (BATCH, key)))
    label = mx.nd.array(rng.randint(0, VOCAB, (BATCH, key)))
    return mx.io.DataBatch([data], [label], bucket_key=key,
                           provide_data=[mx.io.DataDesc("data", (BATCH, key))],
                           provide_label=[mx.io.DataDesc("softmax_label", (BATCH, key))])


def _bound_bucketing(default_key=6):
    mod = mx.mod.BucketingModule(_sym_gen, default_bucket_key=default_key)
    mod.bind([("data", (BATCH, default_key))], [("softmax_label", (BATCH, default_key))])
    mod.init_params(initializer=mx.init.Uniform(0.3))
    return mod


def test_bucketing_module_names_every_bucket_alike():
    mx.sym.Embedding(mx.sym.var("x"), input_dim=2, output_dim=2)  # advances the global name counter
    mod = _bound_bucketing()
    assert mod.symbol.list_arguments()[1] == "embedding0_weight"
    mod.switch_bucket(3, [("data", (BATCH, 3))], [("softmax_label", (BATCH, 3))])
    assert mod.symbol.list_arguments() == mod._buckets[6].symbol.list_arguments()
    # The buckets share the parameters.
    assert same_array(mod._buckets[3]._exec_group.execs[0].arg_dict["embedding0_weight"],
                      mod._buckets[6]._exec_group.execs[0].arg_dict["embedding0_weight"])


def test_bucketing_module_save_checkpoint_and_load(tmp_path):
    mod = _bound_bucketing()
    mod.init_optimizer(optimizer_params={"learning_rate": 0.5})
    for key, seed in ((6, 0), (3, 1)):
        mod.forward_backward(_bucket_batch(key, seed))
        mod.update()
    prefix = str(tmp_path / "bm")
    mod.save_checkpoint(prefix, 2)
    saved = mx.nd.load(prefix + ".buckets")[0].asnumpy()
    assert sorted(saved.tolist()) == [3, 6] and saved.dtype == np.int32

    loaded = mx.mod.BucketingModule.load(prefix, 2, sym_gen=_sym_gen, default_bucket_key=6)
    assert sorted(loaded._buckets) == [3, 6] and not loaded.binded
    loaded.bind([("data", (BATCH, 6))], [("softmax_label", (BATCH, 6))], for_training=False)
    want, got = mod.get_params()[0], loaded.get_params()[0]
    assert set(want) == set(got)
    for name in want:
        np.testing.assert_array_equal(got[name].asnumpy(), want[name].asnumpy(), err_msg=name)
    # The saved bucket 3 is bound on first use, sharing the default bucket's parameters.
    batch = _bucket_batch(3, 7)
    mod.forward(batch, is_train=False)
    loaded.forward(batch, is_train=False)
    assert loaded._buckets[3].binded
    np.testing.assert_allclose(loaded.get_outputs()[0].asnumpy(), mod.get_outputs()[0].asnumpy(), rtol=1e-6)

    with pytest.raises(ValueError, match="needs sym_gen and default_bucket_key"):
        mx.mod.BucketingModule.load(prefix, 2, sym_gen=_sym_gen)
    with pytest.raises(ValueError, match="default bucket 9 is not among the saved buckets"):
        mx.mod.BucketingModule.load(prefix, 2, sym_gen=_sym_gen, default_bucket_key=9)


def test_bucketing_module_load_dict():
    mod = _bound_bucketing()
    arg, aux = mod.get_params()
    with mx.name.NameManager():
        sym6 = _sym_gen(6)[0]
    loaded = mx.mod.BucketingModule.load_dict({6: sym6}, sym_gen=_sym_gen, default_bucket_key=6,
                                              arg_params=arg, aux_params=aux)
    loaded.bind([("data", (BATCH, 6))], [("softmax_label", (BATCH, 6))], for_training=False)
    batch = _bucket_batch(6, 3)
    mod.forward(batch, is_train=False)
    loaded.forward(batch, is_train=False)
    np.testing.assert_allclose(loaded.get_outputs()[0].asnumpy(), mod.get_outputs()[0].asnumpy(), rtol=1e-6)
    with pytest.raises(ValueError, match="needs sym_dict, arg_params, aux_params"):
        mx.mod.BucketingModule.load_dict({6: sym6}, sym_gen=_sym_gen, default_bucket_key=6, arg_params=arg)


def test_total_exec_bytes_counts_what_a_binding_allocates():
    mod = _bound_bucketing()
    default = mod._buckets[6]
    # data + label (3x6 float32 each) and the parameters with their gradients.
    params = VOCAB * EMBED + VOCAB * EMBED + VOCAB
    assert default._total_exec_bytes == (2 * BATCH * 6 + 2 * params) * 4
    before = default._total_exec_bytes
    mod.switch_bucket(3, [("data", (BATCH, 3))], [("softmax_label", (BATCH, 3))])
    # The smaller bucket shares the parameters and views the default bucket's inputs.
    assert mod._buckets[3]._total_exec_bytes == 0
    del mod._buckets[3]
    mod.switch_bucket(3, [("data", (BATCH, 3))], [("softmax_label", (BATCH, 3))])
    assert default._total_exec_bytes == before


def test_executor_group_shares_its_input_arrays_with_a_group_bound_on_it():
    data = mx.sym.var("data")
    net = mx.sym.FullyConnected(data, num_hidden=3, name="fc")
    extra = mx.sym.FullyConnected(net, num_hidden=2, name="extra")
    ctxs = [mx.cpu(0), mx.cpu(1)]
    g1 = DataParallelExecutorGroup(net, ctxs, [1, 1], [("data", (4, 5))], None, ["fc_weight", "fc_bias"],
                                   for_training=True, inputs_need_grad=True)
    for buf in g1.shared_data_arrays:
        assert sorted(buf) == ["data", "grad of data"]
    g2 = DataParallelExecutorGroup(extra, ctxs, [1, 1], [("data", (2, 5))], None, ["fc_weight", "fc_bias"],
                                   for_training=True, inputs_need_grad=True, shared_group=g1)
    assert g2.shared_data_arrays is g1.shared_data_arrays
    for i in range(2):
        buf = g1.shared_data_arrays[i]
        # Arguments that are no parameter of g1 go to the buffer too (MXNet's shared_buffer).
        assert sorted(buf) == ["data", "extra_bias", "extra_weight", "grad of data"]
        e1, e2 = g1.execs[i], g2.execs[i]
        assert same_array(e1.arg_dict["fc_weight"], e2.arg_dict["fc_weight"])
        # The smaller input (1 row per device) is a view of the first group's (2 rows).
        e2.arg_dict["data"][:] = 7
        np.testing.assert_array_equal(e1.arg_dict["data"].asnumpy()[:1], np.full((1, 5), 7))
        assert e2.arg_dict["data"].shape == (1, 5)
    # A larger input gets new memory, which then replaces the buffer's entry.
    g3 = DataParallelExecutorGroup(net, ctxs, [1, 1], [("data", (8, 5))], None, ["fc_weight", "fc_bias"],
                                   for_training=True, inputs_need_grad=True, shared_group=g1)
    assert g3.shared_data_arrays[0]["data"].shape == (4, 5)
    assert not same_array(g3.execs[0].arg_dict["data"], g1.execs[0].arg_dict["data"])


def test_reshaped_executor_shares_the_output_memory():
    x = mx.sym.var("x")
    y = mx.sym.FullyConnected(x, num_hidden=4, name="fc")
    exe = y.simple_bind(mx.cpu(), x=(5, 4), grad_req="null")
    exe.arg_dict["x"][:] = np.arange(20, dtype=np.float32).reshape(5, 4)
    exe.arg_dict["fc_weight"][:] = np.eye(4, dtype=np.float32)
    exe.arg_dict["fc_bias"][:] = 1
    exe.forward()
    small = exe.reshape(x=(3, 4))
    small.arg_dict["x"][:] = -np.ones((3, 4), np.float32)
    small.forward()
    np.testing.assert_array_equal(small.outputs[0].asnumpy(), np.zeros((3, 4)))
    # As MXNet's: the smaller executor's values live in the first one's memory.
    np.testing.assert_array_equal(exe.outputs[0].asnumpy()[:3], np.zeros((3, 4)))
    np.testing.assert_array_equal(exe.arg_dict["x"].asnumpy()[:3], -np.ones((3, 4)))
    exe.arg_dict["x"][:] = np.arange(20, dtype=np.float32).reshape(5, 4)
    exe.forward()
    np.testing.assert_array_equal(exe.outputs[0].asnumpy(), np.arange(20).reshape(5, 4) + 1)
    # A grown input is new memory; the weights stay shared.
    big = exe.reshape(allow_up_sizing=True, x=(6, 4))
    big.arg_dict["x"][:] = 0
    assert exe.arg_dict["x"].asnumpy().sum() == np.arange(20).sum()
    assert same_array(big.arg_dict["fc_weight"], exe.arg_dict["fc_weight"])


def test_reshape_does_not_lend_memory_holding_folded_constants():
    # `w * 3` depends on no input: it is folded once at bind and must survive a reshaped
    # executor's runs.
    x = mx.sym.var("x")
    w = mx.sym.var("w")
    y = mx.sym.broadcast_mul(x, w * 3)
    exe = y.bind(mx.cpu(), {"x": mx.nd.ones((4, 2)), "w": mx.nd.array([1, 2])})
    small = exe.reshape(x=(2, 2), w=(2,))
    small.arg_dict["x"][:] = 5
    small.forward()
    np.testing.assert_array_equal(small.outputs[0].asnumpy(), [[15, 30], [15, 30]])
    exe.arg_dict["x"][:] = 1
    exe.forward()
    np.testing.assert_array_equal(exe.outputs[0].asnumpy(), np.tile([3, 6], (4, 1)))


def test_monitor_reports_every_output_of_a_step():
    x = mx.sym.var("data")
    x = mx.sym.FullyConnected(x, num_hidden=2, name="fc")
    out = mx.sym.LinearRegressionOutput(x, name="reg")
    mod = mx.mod.Module(out, label_names=["reg_label"])
    mod.bind([("data", (1, 2))], [("reg_label", (1, 2))])
    mod.init_params()
    names = []
    mon = mx.mon.Monitor(1, stat_func=lambda a: mx.nd.norm(a), pattern=".*")
    mod.install_monitor(mon)
    mon.tic()
    mod.forward_backward(mx.io.DataBatch([mx.nd.ones((1, 2))], [mx.nd.zeros((1, 2))]))
    names = sorted(n for _, n, _ in mon.toc())
    # The data's gradient (not asked for) and the label's are reported too, as in MXNet.
    assert {"fc_backward_output0", "fc_backward_output1", "fc_backward_output2", "fc_bias", "fc_output",
            "fc_weight"} <= set(names)
    assert [n for n in names if n.startswith("reg")] == [
        "reg_backward_output0", "reg_backward_output1", "reg_label", "reg_output"]


@pytest.mark.parametrize("name", ["LinearRegressionOutput", "LogisticRegressionOutput", "MAERegressionOutput"])
def test_regression_backward_gives_data_and_a_zero_label_gradient(name):
    out = mx.nd.array([[0.2, 0.9], [0.4, 0.1]])
    label = mx.nd.array([[0.0, 1.0], [1.0, 0.0]])
    op = getattr(mx.nd._internal, "_backward_" + name)
    d_data, d_label = op(out, label, grad_scale=2.0)
    diff = out.asnumpy() - label.asnumpy()
    expect = np.sign(diff) if name.startswith("MAE") else diff
    np.testing.assert_allclose(d_data.asnumpy(), expect * 2.0 / 2, rtol=1e-6)
    np.testing.assert_array_equal(d_label.asnumpy(), np.zeros((2, 2)))
    assert d_label.dtype == label.dtype
    # Through autograd the label still gets no gradient.
    x, y = mx.nd.array([[0.5, 0.5]]), mx.nd.array([[1.0, 0.0]])
    x.attach_grad()
    y.attach_grad()
    with mx.autograd.record():
        o = getattr(mx.nd, name)(x, y)
    o.backward()
    np.testing.assert_array_equal(y.grad.asnumpy(), np.zeros((1, 2)))
    with pytest.raises(mx.base.MXNetError, match="label"):
        op(out, mx.nd.zeros((3, 2)))


def test_variable_takes_an_int_shape():
    v = mx.sym.var("b", shape=(1))
    assert v.attr("__shape__") == "(1,)"
    _, out, _ = (v + 1).infer_shape()
    assert out == [(1,)]


def test_row_sparse_full_slice_is_itself():
    rsp = mx.nd.array([[0, 0], [1, 2], [0, 0]]).tostype("row_sparse")
    assert rsp[:] is rsp
    rsp[:] += 1
    np.testing.assert_array_equal(rsp.asnumpy(), [[1, 1], [2, 3], [1, 1]])
    with pytest.raises(mx.base.NotSupportedForSparseNDArray):
        rsp[1:]


def test_aggregated_optimizer_updates_weights_on_several_contexts():
    opt = mx.optimizer.SGD(learning_rate=0.5)
    opt.aggregate_num = 4
    updater = mx.optimizer.get_updater(opt)
    weights = [mx.nd.ones((2,), ctx=mx.cpu(1)), mx.nd.ones((2,), ctx=mx.cpu(2)), mx.nd.ones((2,), ctx=mx.cpu(1))]
    grads = [mx.nd.full((2,), k + 1.0, ctx=w.context) for k, w in enumerate(weights)]
    updater([0, 1, 2], grads, weights)
    for k, w in enumerate(weights):
        np.testing.assert_allclose(w.asnumpy(), 1 - 0.5 * (k + 1))


def test_bind_takes_name_shape_dtype_tuples_and_binds_that_dtype():
    # MXNet makes DataDesc(*t) of each tuple: (name, shape, dtype[, layout]), as the legacy
    # word_lm example's iterator provides for its int32 token ids.
    data = mx.sym.var("data")
    net = mx.sym.Embedding(data, input_dim=10, output_dim=3, name="emb")
    mod = mx.mod.Module(net, data_names=["data"], label_names=None)
    mod.bind(data_shapes=[("data", (2, 4), np.int32, "NT")], for_training=False)
    assert mod.data_shapes[0].dtype == np.int32 and mod.data_shapes[0].layout == "NT"
    weight = np.arange(30, dtype=np.float32).reshape(10, 3) / 7
    mod.init_params(arg_params={"emb_weight": mx.nd.array(weight)})
    ids = np.array([[0, 9, 3, 3], [7, 1, 2, 8]], dtype=np.int32)
    mod.forward(mx.io.DataBatch([mx.nd.array(ids, dtype=np.int32)]), is_train=False)
    assert mod._exec_group.execs[0].arg_dict["data"].dtype == np.int32
    np.testing.assert_allclose(mod.get_outputs()[0].asnumpy(), weight[ids], rtol=1e-6)
    with pytest.raises(TypeError, match=r"\(name, shape\[, dtype\[, layout\]\]\) tuple"):
        mx.mod.Module(net, label_names=None).bind(data_shapes=[("data",)])


def test_bind_with_other_label_names_warns_and_binds():
    # MXNet checks data names strictly but only warns when the label shapes name other labels.
    net = mx.sym.LinearRegressionOutput(mx.sym.FullyConnected(mx.sym.var("data"), num_hidden=1, name="fc"),
                                        name="lro")
    mod = mx.mod.Module(net, data_names=["data"], label_names=["lro_label"])
    with pytest.warns(UserWarning, match=r"label shapes name \['other'\].*label_names are \['lro_label'\]"):
        mod.bind(data_shapes=[("data", (3, 2))], label_shapes=[("other", (3, 1))], for_training=False)
    with pytest.raises(ValueError, match=r"data shapes name \['x'\]"):
        mx.mod.Module(net, data_names=["data"], label_names=["lro_label"]).bind(data_shapes=[("x", (3, 2))])
