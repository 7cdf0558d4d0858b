"""mx.contrib.quantization: the entropy threshold search (_contrib_calibrate_entropy) against a
numpy reference, the calibration collectors, the graph rewrite on the symbol's structure, and
quantized models against their float32 originals."""
import json

import numpy as np
import pytest

import weft as mx


# ------------------------------------------------------------------ entropy threshold search

def _smooth(v, eps=1e-4):
    zeros = v == 0
    nonzeros = (~zeros).sum()
    if nonzeros == 0:
        return None
    out = v - eps * zeros.sum() / nonzeros
    out[zeros] = eps
    return None if (out <= 0).any() else out


def _kl_threshold(hist, edges, num_quantized_bins):
    """The window [-t, t] of least KL divergence, written out loop by loop."""
    hist = hist.astype(np.float64)
    n = len(hist)
    zero = n // 2
    best_d, best_t = np.inf, edges[zero + num_quantized_bins // 2 + 1]
    for half in range(num_quantized_bins // 2, zero + 1):
        start, stop = zero - half, zero + half + 1
        window = hist[start:stop]
        p = window.copy()
        p[0] += hist[:start].sum()
        p[-1] += hist[stop:].sum()
        width = len(p) // num_quantized_bins
        q = np.zeros(len(p))
        for j in range(num_quantized_bins):
            lo = j * width
            hi = len(p) if j == num_quantized_bins - 1 else lo + width
            support = p[lo:hi] != 0
            if support.any():
                q[lo:hi][support] = window[lo:hi].sum() / support.sum()
        ps, qs = _smooth(p), _smooth(q)
        if ps is None or qs is None:
            continue
        ps, qs = ps / ps.sum(), qs / qs.sum()
        d = float(np.sum(ps * np.log(ps / qs)))
        if d < best_d:
            best_d, best_t = d, edges[stop]
    return best_t, best_d


@pytest.mark.parametrize("seed,bins,nq", [(0, 1001, 255), (1, 401, 31), (2, 2001, 511), (3, 255, 255)])
def test_calibrate_entropy_matches_reference(seed, bins, nq):
    rng = np.random.RandomState(seed)
    x = np.concatenate([rng.laplace(0, 1, 20000), rng.randn(30) * 15])
    th = np.abs(x).max()
    hist, edges = np.histogram(x, bins=bins, range=(-th, th))
    t, d = mx.nd.contrib.calibrate_entropy(mx.nd.array(hist), mx.nd.array(edges), num_quantized_bins=nq)
    rt, rd = _kl_threshold(hist, edges.astype(np.float32), nq)
    assert t.shape == (1,) and d.shape == (1,)
    assert t.asscalar() == pytest.approx(rt, rel=1e-6)
    assert d.asscalar() == pytest.approx(rd, rel=1e-4, abs=1e-7)


def test_calibrate_entropy_clips_outliers_and_keeps_uniform_ranges():
    rng = np.random.RandomState(4)
    # A narrow bulk with a few far outliers: the threshold clips them, well inside the range.
    x = np.concatenate([rng.randn(50000), [-40.0, 40.0, 35.0]])
    hist, edges = np.histogram(x, bins=2001, range=(-40, 40))
    t = mx.nd.contrib.calibrate_entropy(mx.nd.array(hist), mx.nd.array(edges))[0].asscalar()
    assert 2.0 < t < 10.0
    # Values spread evenly over the whole range lose most by clipping: the full range wins.
    hist = np.full(1001, 100.0)
    edges = np.linspace(-1, 1, 1002)
    t = mx.nd.contrib.calibrate_entropy(mx.nd.array(hist), mx.nd.array(edges))[0].asscalar()
    assert t == pytest.approx(1.0)


def test_calibrate_entropy_refuses_bad_inputs():
    hist, edges = mx.nd.ones((11,)), mx.nd.array(np.linspace(-1, 1, 12))
    with pytest.raises(mx.base.MXNetError, match="n odd"):
        mx.nd.contrib.calibrate_entropy(mx.nd.ones((10,)), mx.nd.ones((11,)))
    with pytest.raises(mx.base.MXNetError, match=r"hist_edges of shape \(12,\)"):
        mx.nd.contrib.calibrate_entropy(hist, mx.nd.ones((11,)))
    with pytest.raises(mx.base.MXNetError, match="num_quantized_bins <= the number of bins"):
        mx.nd.contrib.calibrate_entropy(hist, edges, num_quantized_bins=13)
    with pytest.raises(mx.base.MXNetError, match="expected float32 input 'hist', got int32"):
        mx.nd.contrib.calibrate_entropy(hist.astype("int32"), edges, num_quantized_bins=5)


# ------------------------------------------------------------------ collectors

from weft.contrib import quantization as qz  # noqa: E402


def test_smooth_distribution_moves_mass_onto_zeros():
    p = np.array([0, 4, 0, 6, 0], dtype=np.float64)
    s = qz._smooth_distribution(p, eps=0.01)
    np.testing.assert_allclose(s, [0.01, 4 - 0.015, 0.01, 6 - 0.015, 0.01], rtol=1e-6)
    assert s.sum() == pytest.approx(p.sum())
    with pytest.raises(ValueError, match="All entries are 0"):
        qz._smooth_distribution(np.zeros(4))


def test_combine_histogram_keeps_old_bins_when_widening():
    bins, old_th = 11, 1.0
    step = 2 * old_th / bins
    grow = int((2.5 - old_th) // step + 1)
    th = old_th + grow * step
    rng = np.random.RandomState(5)
    # Values at bin centres, so that no value sits on an edge of either grid.
    first = -old_th + (rng.randint(0, bins, 300) + 0.5) * step
    second = -th + (rng.randint(0, bins + 2 * grow, 200) + 0.5) * step
    hist, edges = np.histogram(first, bins=bins, range=(-old_th, old_th))
    new_th = np.abs(second).max()
    assert int((new_th - old_th) // step + 1) == grow
    out = qz.combine_histogram((hist, edges, first.min(), first.max(), old_th), second, second.min(), second.max(),
                               new_th)
    counts, new_edges, lo, hi, new_th = out
    assert new_th == pytest.approx(th) and len(counts) == bins + 2 * grow
    expected, _ = np.histogram(np.concatenate([first, second]), bins=bins + 2 * grow, range=(-th, th))
    np.testing.assert_array_equal(counts, expected)
    assert (lo, hi) == (min(first.min(), second.min()), max(first.max(), second.max()))
    # A narrower batch lands in the existing bins.
    narrow = np.array([0.0, 0.1])
    counts2 = qz.combine_histogram(out, narrow, 0.0, 0.1, 0.1)[0]
    np.testing.assert_array_equal(counts2 - counts, np.histogram(narrow, bins=len(counts), range=(-th, th))[0])


def test_min_max_collector_filters_and_accumulates():
    c = qz._LayerOutputMinMaxCollector(include_layer=["a_output", "data"])
    c.collect("a_output", mx.nd.array([[-1.0, 2.0]]))
    c.collect("a_output", mx.nd.array([[0.5, 3.0]]))
    c.collect("data", np.array([0.25, 0.75]))
    c.collect("b_output", mx.nd.array([100.0]))
    assert c.min_max_dict == {"a_output": (-1.0, 3.0), "data": (0.25, 0.75)}
    assert c.post_collect() is c.min_max_dict
    assert isinstance(c, qz.CalibrationCollector)


@pytest.mark.parametrize("dtype", ["int8", "auto"])
def test_histogram_collector_thresholds_match_reference(dtype):
    rng = np.random.RandomState(6)
    c = qz._LayerHistogramCollector(num_bins=1001, include_layer=["x", "r"], quantized_dtype=dtype)
    batches = [rng.laplace(0, 1, 4000), rng.laplace(0, 1.5, 4000)]
    for b in batches:
        c.collect("x", mx.nd.array(b))
        c.collect("r", mx.nd.array(np.maximum(b, 0)))
    c.collect("ignored", mx.nd.array(batches[0]))
    assert sorted(c.hist_dict) == ["r", "x"]
    hists = {k: v for k, v in c.hist_dict.items()}
    th = c.post_collect()
    for name in ("x", "r"):
        hist, edges, lo, hi, _ = hists[name]
        nq = 511 if (lo >= 0 and dtype == "auto") else 255
        ref, _ = _kl_threshold(hist, edges.astype(np.float32), nq)
        expect = (0.0, ref) if (lo >= 0 and dtype == "auto") else (-ref, ref)
        np.testing.assert_allclose(th[name], expect, rtol=1e-6)
    assert th["x"][1] < np.abs(np.concatenate(batches)).max()


# ------------------------------------------------------------------ the graph rewrite

def _chain_net():
    """data -> pool0 -> conv0 -> relu0 -> pool1 -> fc0, then fc0 -> sig0 -> fc1 and fc0 -> relu1,
    fc1 and relu1 the outputs."""
    x = mx.sym.var("data")
    x = mx.sym.Pooling(x, kernel=(2, 2), pool_type="max", name="pool0")
    x = mx.sym.Convolution(x, kernel=(3, 3), num_filter=4, name="conv0")
    x = mx.sym.Activation(x, act_type="relu", name="relu0")
    x = mx.sym.Pooling(x, kernel=(2, 2), pool_type="avg", name="pool1")
    x = mx.sym.FullyConnected(x, num_hidden=8, name="fc0")
    r = mx.sym.Activation(x, act_type="relu", name="relu1")
    s = mx.sym.Activation(x, act_type="sigmoid", name="sig0")
    return mx.sym.Group([mx.sym.FullyConnected(s, num_hidden=3, name="fc1"), r])


@pytest.fixture
def all_quantized_ops_registered(monkeypatch):
    """The rewrite's structure, whichever quantized operators this build has."""
    monkeypatch.setattr(qz, "_registered", lambda op: True)


def _rewrite(sym, params=(), mode="smart", dtype="int8", **kw):
    graph, calib = qz._quantize_json(sym, kw.get("excluded_sym_names"), kw.get("excluded_op_names"), list(params),
                                     dtype, mode, "tensor-wise")
    nodes = graph["nodes"]
    by_name = {n["name"]: n for n in nodes}

    def src(node, k):
        return nodes[node["inputs"][k][0]]
    return nodes, by_name, src, calib, graph


def test_rewrite_smart_quantizes_between_convolutions_and_dense_layers(all_quantized_ops_registered):
    sym = _chain_net()
    params = [n for n in sym.list_arguments() if n != "data"]
    nodes, by_name, src, calib, graph = _rewrite(sym, params)
    ops = {n["name"]: n["op"] for n in nodes}
    # pool0 only feeds a convolution and relu1 only follows one: they stay float32.
    assert ops["pool0"] == "Pooling" and ops["relu1"] == "Activation"
    assert ops["quantized_conv0"] == "_contrib_quantized_conv"
    assert ops["quantized_relu0"] == "_contrib_quantized_act"
    assert ops["quantized_pool1"] == "_contrib_quantized_pooling"
    assert ops["quantized_fc0"] == "_contrib_quantized_fully_connected"
    assert ops["quantized_fc1"] == "_contrib_quantized_fully_connected"
    assert not {"conv0", "relu0", "pool1", "fc0", "fc1"} & set(ops)
    # The convolution reads pool0 through a quantize node, then weight and bias as int8
    # variables, then (min, max) of each in order.
    conv = by_name["quantized_conv0"]
    names = [src(conv, k)["name"] for k in range(9)]
    assert names == ["pool0_output_quantize", "conv0_weight_quantize", "conv0_bias_quantize",
                     "pool0_output_quantize", "pool0_output_quantize", "conv0_weight_quantize_min",
                     "conv0_weight_quantize_max", "conv0_bias_quantize_min", "conv0_bias_quantize_max"]
    assert [e[1] for e in conv["inputs"][3:5]] == [1, 2]
    assert by_name["pool0_output_quantize"]["attrs"] == {"out_type": "int8"}
    # The int8 parameters carry no attributes (MXNet's attr_dict() lists none of them); their
    # types come from the quantized layers' inference.
    assert not by_name["conv0_weight_quantize"].get("attrs")
    qsym = mx.sym.load_json(json.dumps(graph))
    arg_types, _, _ = qsym.infer_type(data="float32")
    types = dict(zip(qsym.list_arguments(), arg_types))
    assert types["conv0_weight_quantize"] == np.int8 and types["conv0_bias_quantize"] == np.int8
    assert types["conv0_weight_quantize_min"] == np.float32 and types["fc1_weight_quantize_max"] == np.float32
    assert not any("_quantize" in k and "out_type" not in v for k, v in qsym.attr_dict().items())
    # int32 results are requantized; the int8 chain runs on to fc0 without a float value.
    assert src(by_name["quantized_relu0"], 0)["name"] == "requantize_conv0"
    assert by_name["requantize_conv0"]["op"] == "_contrib_requantize"
    assert src(by_name["quantized_fc0"], 0)["name"] == "quantized_pool1"
    # relu1 and sig0 read fc0 back as float through one dequantize; fc1 quantizes sig0's
    # output; both outputs are float.
    assert src(by_name["relu1"], 0)["name"] == "fc0_dequantize"
    assert src(by_name["sig0"], 0) is by_name["fc0_dequantize"]
    assert [n["op"] for n in nodes].count("_contrib_dequantize") == 2
    assert src(by_name["quantized_fc1"], 0)["name"] == "sig0_output_quantize"
    heads = [nodes[h[0]]["name"] for h in graph["heads"]]
    assert heads == ["fc1_dequantize", "relu1"]
    assert calib == ["pool0_output", "conv0_output", "fc0_output", "sig0_output", "fc1_output"]
    # The float weights are gone; only int8 ones and their ranges remain.
    variables = {n["name"] for n in nodes if n["op"] == "null"}
    assert "conv0_weight" not in variables and "fc1_bias_quantize_max" in variables


def test_rewrite_full_mode_and_dtype(all_quantized_ops_registered):
    nodes, by_name, src, calib, _ = _rewrite(_chain_net(), mode="full", dtype="auto")
    ops = {n["name"]: n["op"] for n in nodes}
    assert "Pooling" not in ops.values() and ops["quantized_relu1"] == "_contrib_quantized_act"
    assert ops["sig0"] == "Activation"
    assert by_name["data_quantize"]["attrs"] == {"out_type": "auto"}
    assert by_name["requantize_fc0"]["attrs"] == {"out_type": "auto"}
    # Without offline params the weights are quantized in the graph, from the variables.
    assert by_name["conv0_weight_quantize"]["op"] == "_contrib_quantize_v2"
    assert calib[:3] == ["data", "conv0_weight", "conv0_bias"]


def test_rewrite_exclusions_keep_float(all_quantized_ops_registered):
    sym = _chain_net()
    nodes, by_name, src, calib, _ = _rewrite(sym, excluded_sym_names=["conv0"])
    ops = {n["name"]: n["op"] for n in nodes}
    # Without conv0, relu0 and pool1 no longer lie between two must-quantize nodes.
    assert ops["conv0"] == "Convolution" and ops["relu0"] == "Activation" and ops["pool1"] == "Pooling"
    assert ops["quantized_fc0"] == "_contrib_quantized_fully_connected"
    nodes, by_name, src, calib, _ = _rewrite(sym, excluded_op_names=["FullyConnected"])
    ops = {n["name"]: n["op"] for n in nodes}
    assert ops["fc0"] == "FullyConnected" and ops["fc1"] == "FullyConnected"
    assert ops["pool1"] == "Pooling" and src(by_name["fc0"], 0)["name"] == "pool1"
    assert src(by_name["pool1"], 0)["name"] == "relu0"
    assert ops["quantized_conv0"] == "_contrib_quantized_conv"
    nodes, by_name, src, calib, _ = _rewrite(sym, mode="full", excluded_op_names=["Convolution", "FullyConnected"])
    assert {n["op"] for n in nodes} >= {"_contrib_quantized_pooling", "_contrib_quantized_act"}


def test_rewrite_skips_unsupported_attributes_and_unregistered_ops(monkeypatch):
    x = mx.sym.var("data")
    a = mx.sym.Activation(x, act_type="tanh", name="tanh0")
    p = mx.sym.Pooling(a, kernel=(2, 2), pool_type="sum", name="sum0")
    c = mx.sym.Convolution(p, kernel=(1, 1), num_filter=2, name="conv0")
    sym = mx.sym.Concat(c, c, dim=0, name="cat0")
    monkeypatch.setattr(qz, "_registered", lambda op: True)
    nodes = _rewrite(sym, mode="full")[0]
    ops = {n["name"]: n["op"] for n in nodes}
    assert ops["tanh0"] == "Activation" and ops["sum0"] == "Pooling" and ops["cat0"] == "Concat"
    monkeypatch.setattr(qz, "_registered", lambda op: op != "_contrib_quantized_conv")
    nodes = _rewrite(sym, mode="full")[0]
    assert "conv0" in {n["name"] for n in nodes}


def test_rewrite_refuses_unknown_options():
    sym = _chain_net()
    with pytest.raises(ValueError, match="quantize_mode"):
        qz._quantize_symbol(sym, quantize_mode="all")
    with pytest.raises(ValueError, match="quantized_dtype"):
        qz._quantize_symbol(sym, quantized_dtype="int4")
    with pytest.raises(ValueError, match="quantize_granularity"):
        qz._quantize_symbol(sym, quantize_granularity="row")
    with pytest.raises(ValueError, match="excluded_sym_names must be a list"):
        qz.quantize_model(sym, {}, {}, excluded_sym_names="conv0", calib_mode="none")
    with pytest.raises(ValueError, match="calib_data must be provided"):
        qz.quantize_model(sym, {}, {}, calib_mode="naive")
    with pytest.raises(ValueError, match="unknown calibration mode"):
        qz.quantize_model(sym, {}, {}, calib_mode="percentile")


# ------------------------------------------------------------------ BatchNorm folding and collection

def _conv_bn_net():
    x = mx.sym.var("data")
    x = mx.sym.Convolution(x, kernel=(3, 3), num_filter=6, no_bias=True, name="conv0")
    x = mx.sym.BatchNorm(x, fix_gamma=False, eps=1e-5, name="bn0")
    x = mx.sym.Activation(x, act_type="relu", name="relu0")
    y = mx.sym.Convolution(x, kernel=(3, 3), num_filter=4, pad=(1, 1), name="conv1")
    y = mx.sym.BatchNorm(y, name="bn1")  # fix_gamma=True: gamma counts as 1
    # conv2's output is also read by the addition: its BatchNorm must stay.
    z = mx.sym.Convolution(x, kernel=(3, 3), num_filter=4, pad=(1, 1), name="conv2")
    z = mx.sym.elemwise_add(mx.sym.BatchNorm(z, fix_gamma=False, name="bn2"), z, name="add0")
    out = mx.sym.FullyConnected(mx.sym.elemwise_add(y, z, name="add1"), num_hidden=5, name="fc0")
    return out


def _random_params(sym, data_shape, seed=0):
    rng = np.random.RandomState(seed)
    arg_shapes, _, aux_shapes = sym.infer_shape(data=data_shape)
    args = {n: mx.nd.array(rng.uniform(-0.5, 0.5, s) + (1.0 if n.endswith("gamma") else 0.0))
            for n, s in zip(sym.list_arguments(), arg_shapes) if n != "data"}
    aux = {n: mx.nd.array(rng.uniform(0.5, 1.5, s) if n.endswith("var") else rng.uniform(-0.3, 0.3, s))
           for n, s in zip(sym.list_auxiliary_states(), aux_shapes)}
    return args, aux


def _forward(sym, args, aux, data):
    names, aux_names = set(sym.list_arguments()), set(sym.list_auxiliary_states())
    exe = sym.bind(mx.cpu(), {k: v for k, v in dict(args, data=mx.nd.array(data)).items() if k in names},
                   aux_states={k: v for k, v in aux.items() if k in aux_names})
    return [o.asnumpy() for o in exe.forward(is_train=False)]


def test_fold_batch_norm_keeps_outputs():
    sym = _conv_bn_net()
    data = np.random.RandomState(1).uniform(-1, 1, (2, 3, 8, 8)).astype(np.float32)
    args, aux = _random_params(sym, data.shape)
    folded, fargs, faux = qz._fold_batch_norm(sym, args, aux)
    ops = [n["op"] for n in __import__("json").loads(folded.tojson())["nodes"]]
    assert ops.count("BatchNorm") == 1  # bn2 stays: conv2's output has another reader
    assert "bn0_gamma" not in fargs and "bn0_moving_var" not in faux and "bn2_gamma" in fargs
    assert "conv0_bias" in fargs and "conv0_bias" in folded.list_arguments()
    np.testing.assert_allclose(_forward(folded, fargs, faux, data)[0], _forward(sym, args, aux, data)[0],
                               rtol=1e-4, atol=1e-5)
    # The caller's arrays are left alone.
    assert args["conv1_weight"].shape == fargs["conv1_weight"].shape
    assert not np.allclose(args["conv1_weight"].asnumpy(), fargs["conv1_weight"].asnumpy())


def test_collection_sees_values_inside_fused_regions():
    sym = _conv_bn_net()
    data = np.random.RandomState(2).uniform(-1, 1, (4, 3, 8, 8)).astype(np.float32)
    args, aux = _random_params(sym, data.shape)
    it = mx.io.NDArrayIter(data, batch_size=2)
    mod = mx.mod.Module(sym, data_names=["data"], label_names=None)
    with qz._unfused():
        mod.bind(data_shapes=it.provide_data, for_training=False)
    mod.set_params(args, aux)
    c = qz._LayerOutputMinMaxCollector(include_layer=None)
    assert qz._collect_layer_statistics(mod, it, c) == 4
    internals = sym.get_internals()
    names = ["data", "conv0_output", "bn0_output", "relu0_output", "add0_output", "add1_output", "fc0_output"]
    values = _forward(mx.sym.Group([internals[n] for n in names]), args, aux, data)
    for n, v in zip(names, values):
        assert c.min_max_dict[n] == pytest.approx((v.min(), v.max()), rel=1e-5), n
    c = qz._LayerOutputMinMaxCollector(include_layer=None)
    assert qz._collect_layer_statistics(mod, it, c, max_num_examples=1) == 2
    v = _forward(internals["relu0_output"], args, aux, data[:2])[0]
    assert c.min_max_dict["relu0_output"] == pytest.approx((v.min(), v.max()), rel=1e-5)


def _residual_net():
    x = mx.sym.var("data")
    a = mx.sym.Activation(mx.sym.Convolution(x, kernel=(3, 3), pad=(1, 1), num_filter=4, name="conv0"),
                          act_type="relu", name="relu0")
    b = mx.sym.Convolution(a, kernel=(3, 3), pad=(1, 1), num_filter=4, name="conv1")
    b = mx.sym.Activation(mx.sym.elemwise_add(b, a, name="add0"), act_type="relu", name="relu1")
    c = mx.sym.Convolution(b, kernel=(1, 1), num_filter=2, name="conv2")
    d = mx.sym.Activation(mx.sym.FullyConnected(c, num_hidden=6, name="fc0"), act_type="relu", name="relu2")
    return mx.sym.FullyConnected(d, num_hidden=3, name="fc1")


def test_rewrite_fuses_sum_and_relu_into_products(all_quantized_ops_registered, monkeypatch):
    monkeypatch.setattr(qz, "_takes", lambda op, param: True)
    sym = _residual_net()
    params = [n for n in sym.list_arguments() if n != "data"]
    graph, calib = qz._quantize_json(sym, None, None, params, "auto", "full", "tensor-wise", fuse=True)
    nodes = graph["nodes"]
    by_name = {n["name"]: n for n in nodes}
    ops = [n["op"] for n in nodes]
    assert "Activation" not in ops and "elemwise_add" not in ops and "_contrib_quantized_act" not in ops
    assert by_name["quantized_relu0"]["attrs"]["with_relu"] == "True"
    fused = by_name["quantized_relu1"]
    assert fused["op"] == "_contrib_quantized_conv" and fused["attrs"]["num_filter"] == "4"
    assert fused["attrs"]["with_sum"] == "True" and fused["attrs"]["with_relu"] == "True"
    # data, weight, bias, their ranges, then the residual's int8 value and range.
    assert len(fused["inputs"]) == 12
    assert [nodes[e[0]]["name"] for e in fused["inputs"][9:]] == ["requantize_relu0"] * 3
    assert [e[1] for e in fused["inputs"][9:]] == [0, 1, 2]
    assert "with_relu" not in by_name["quantized_conv2"]["attrs"]
    assert by_name["quantized_relu2"]["op"] == "_contrib_quantized_fully_connected"
    assert by_name["quantized_relu2"]["attrs"]["with_relu"] == "True"
    assert calib == ["data", "relu0_output", "relu1_output", "conv2_output", "relu2_output", "fc1_output"]
    # A relu (or an addition) the user excludes stays a float node after the product.
    graph, _ = qz._quantize_json(sym, ["relu1"], None, params, "auto", "full", "tensor-wise", fuse=True)
    by_name = {n["name"]: n for n in graph["nodes"]}
    assert by_name["relu1"]["op"] == "Activation" and "with_relu" not in by_name["quantized_add0"]["attrs"]
    assert by_name["quantized_add0"]["attrs"]["with_sum"] == "True"


def test_quantize_params_int8_with_own_ranges():
    rng = np.random.RandomState(7)
    w = rng.uniform(-0.3, 0.7, (4, 3)).astype(np.float32)
    args = ["fc_weight_quantize", "fc_weight_quantize_min", "fc_weight_quantize_max", "gamma", "x_min", "x_max"]
    qsym = mx.sym.Group([mx.sym.var(n) for n in args])
    params = {"fc_weight": mx.nd.array(w), "gamma": mx.nd.array([2.0]), "unused": mx.nd.array([1.0])}
    out = qz._quantize_params(qsym, params, {"x": (-1.5, 2.5)})
    assert sorted(out) == sorted(args)
    r = np.abs(w).max()
    expect = (np.sign(w) * np.minimum(np.floor(np.abs(w) * 127 / r + 0.5), 127)).astype(np.int8)
    assert out["fc_weight_quantize"].dtype == np.int8
    np.testing.assert_array_equal(out["fc_weight_quantize"].asnumpy(), expect)
    np.testing.assert_allclose([out["fc_weight_quantize_min"].asscalar(), out["fc_weight_quantize_max"].asscalar()],
                               [-r, r], rtol=1e-6)
    assert out["gamma"] is params["gamma"]
    assert (out["x_min"].asscalar(), out["x_max"].asscalar()) == (-1.5, 2.5)


def test_quantize_params_channel_wise_per_output_channel():
    rng = np.random.RandomState(8)
    # Output channels whose magnitudes differ by orders: one range for all would leave the
    # small ones a few levels at most.
    w = rng.uniform(-1, 1, (6, 3, 3, 3)).astype(np.float32) * np.array([1e-3, 0.1, 1, 10, 0.5, 0])[:, None, None, None]
    data = mx.sym.var("data")
    sym = mx.sym.Convolution(data, kernel=(3, 3), num_filter=6, no_bias=True, name="conv0")
    qsym, _ = qz._quantize_symbol(sym, offline_params=["conv0_weight"], quantize_granularity="channel-wise")
    node = _nodes(qsym)["quantized_conv0"]
    assert node["attrs"]["channel_wise"] == "True"
    out = qz._quantize_params(qsym, {"conv0_weight": mx.nd.array(w)}, {})
    r = np.abs(w.reshape(6, -1)).max(1).astype(np.float64)
    scale = np.where(r > 0, 127 / np.where(r > 0, r, 1), 0)[:, None, None, None]
    expect = (np.sign(w) * np.minimum(np.floor(np.abs(w.astype(np.float64)) * scale + 0.5), 127)).astype(np.int8)
    np.testing.assert_array_equal(out["conv0_weight_quantize"].asnumpy(), expect)
    np.testing.assert_allclose(out["conv0_weight_quantize_min"].asnumpy(), -r, rtol=1e-6)
    np.testing.assert_allclose(out["conv0_weight_quantize_max"].asnumpy(), r, rtol=1e-6)
    # Every non-zero channel uses the full int8 scale.
    assert (np.abs(expect.reshape(6, -1)).max(1) == [127] * 5 + [0]).all()
    # The quantized graph infers the ranges' shapes from the layer.
    arg_shapes, _, _ = qsym.infer_shape(data=(1, 3, 5, 5))
    shapes = dict(zip(qsym.list_arguments(), arg_shapes))
    assert shapes["conv0_weight_quantize_min"] == (6,) and shapes["conv0_weight_quantize_max"] == (6,)


# ------------------------------------------------------------------ quantized models against float32

import json  # noqa: E402

def _mlp():
    x = mx.sym.var("data")
    x = mx.sym.Activation(mx.sym.FullyConnected(x, num_hidden=64, name="fc0"), act_type="relu", name="relu0")
    x = mx.sym.Activation(mx.sym.FullyConnected(x, num_hidden=32, name="fc1"), act_type="relu", name="relu1")
    return mx.sym.FullyConnected(x, num_hidden=10, name="fc2")


def _lenet(bn=False):
    x = mx.sym.var("data")
    x = mx.sym.Convolution(x, kernel=(5, 5), num_filter=8, name="conv0")
    if bn:
        x = mx.sym.BatchNorm(x, fix_gamma=False, name="bn0")
    x = mx.sym.Activation(x, act_type="relu", name="relu0")
    x = mx.sym.Pooling(x, kernel=(2, 2), stride=(2, 2), pool_type="max", name="pool0")
    x = mx.sym.Convolution(x, kernel=(5, 5), num_filter=16, name="conv1")
    if bn:
        x = mx.sym.BatchNorm(x, fix_gamma=False, name="bn1")
    x = mx.sym.Activation(x, act_type="relu", name="relu1")
    x = mx.sym.Pooling(x, kernel=(2, 2), stride=(2, 2), pool_type="avg", name="pool1")
    x = mx.sym.Flatten(x, name="flat0")
    x = mx.sym.Activation(mx.sym.FullyConnected(x, num_hidden=32, name="fc0"), act_type="relu", name="relu2")
    return mx.sym.FullyConnected(x, num_hidden=10, name="fc1")


def _model(name, seed=0):
    sym = {"mlp": _mlp, "lenet": _lenet, "lenet_bn": lambda: _lenet(True)}[name]()
    shape = (8, 48) if name == "mlp" else (8, 1, 28, 28)
    rng = np.random.RandomState(seed)
    arg_shapes, _, aux_shapes = sym.infer_shape(data=shape)
    args = {}
    for n, s in zip(sym.list_arguments(), arg_shapes):
        if n.endswith("weight"):
            fan_in = int(np.prod(s[1:]))
            args[n] = mx.nd.array(rng.normal(0, np.sqrt(2.0 / fan_in), s))
        elif n.endswith("gamma"):
            args[n] = mx.nd.array(rng.uniform(0.5, 1.5, s))
        elif n != "data":
            args[n] = mx.nd.array(rng.uniform(-0.1, 0.1, s))
    aux = {n: mx.nd.array(rng.uniform(0.5, 1.5, s) if n.endswith("var") else rng.uniform(-0.2, 0.2, s))
           for n, s in zip(sym.list_auxiliary_states(), aux_shapes)}
    data = rng.uniform(0, 1, (64,) + shape[1:]).astype(np.float32)
    return sym, args, aux, data


def _close(q, f, tol):
    """int8 outputs within tol of float32's largest magnitude, and mostly the same top class."""
    err = np.abs(q - f).max() / np.abs(f).max()
    assert err < tol, err
    assert (q.argmax(1) == f.argmax(1)).mean() >= 0.9


def _ops(sym):
    return [n["op"] for n in json.loads(sym.tojson())["nodes"]]


def _nodes(sym):
    return {n["name"]: n for n in json.loads(sym.tojson())["nodes"]}


@pytest.mark.parametrize("name", ["mlp", "lenet"])
@pytest.mark.parametrize("calib_mode", ["naive", "entropy"])
def test_quantize_model_close_to_float(name, calib_mode):
    sym, args, aux, data = _model(name)
    calib = mx.io.NDArrayIter(data[:32], batch_size=16)
    qsym, qargs, qaux = qz.quantize_model(sym, args, aux, data_names=["data"], label_names=None,
                                          calib_mode=calib_mode, calib_data=calib, quantized_dtype="auto")
    ops = _ops(qsym)
    assert ops.count("_contrib_quantized_fully_connected") == (3 if name == "mlp" else 2)
    assert ops.count("_contrib_quantized_conv") == (0 if name == "mlp" else 2)
    nodes = _nodes(qsym)
    for n in nodes.values():
        if n["op"] in ("_contrib_quantize_v2", "_contrib_requantize"):
            assert "min_calib_range" in n["attrs"] and "max_calib_range" in n["attrs"], n["name"]
    # Calibrated on non-negative data, the input is uint8 over [0, max].
    assert float(nodes["data_quantize"]["attrs"]["min_calib_range"]) == 0.0
    assert qargs["fc0_weight_quantize"].dtype == np.int8 and "fc0_weight" not in qargs
    held_out = data[32:]
    f = _forward(sym, args, aux, held_out)[0]
    q = _forward(qsym, qargs, qaux, held_out)[0]
    # Entropy ranges clip the calibration data's rare extremes, which held-out data reaches.
    _close(q, f, 0.06 if calib_mode == "naive" else 0.1)


def test_channel_wise_weights_bring_int8_closer_to_float():
    """BatchNorm scales spread over three orders of magnitude, folded into the convolutions,
    give their output channels very different weight ranges: one range per channel keeps the
    small channels' weights, one per tensor rounds many of them to 0."""
    sym, args, aux, data = _model("lenet_bn")
    rng = np.random.RandomState(5)
    for bn, c in (("bn0", 8), ("bn1", 16)):
        args[bn + "_gamma"] = mx.nd.array(10.0 ** rng.uniform(-2, 1, c))
    f = _forward(sym, args, aux, data[32:])[0]
    err, agree = {}, {}
    for g in ("tensor-wise", "channel-wise"):
        qsym, qargs, qaux = qz.quantize_model_mkldnn(sym, args, aux, label_names=None, calib_mode="naive",
                                                     calib_data=mx.io.NDArrayIter(data[:32], batch_size=16),
                                                     quantized_dtype="auto", quantize_granularity=g)
        channel_wise = [n["name"] for n in _nodes(qsym).values() if n.get("attrs", {}).get("channel_wise") == "True"]
        assert sorted(channel_wise) == ([] if g == "tensor-wise" else
                                        ["quantized_fc1", "quantized_relu0", "quantized_relu1", "quantized_relu2"])
        if g == "channel-wise":
            assert qargs["conv1_weight_quantize_min"].shape == (16,)
            assert qargs["fc0_weight_quantize_max"].shape == (32,)
        q = _forward(qsym, qargs, qaux, data[32:])[0]
        err[g] = np.abs(q - f).max() / np.abs(f).max()
        agree[g] = (q.argmax(1) == f.argmax(1)).mean()
    assert err["channel-wise"] < 0.5 * err["tensor-wise"], err
    assert err["channel-wise"] < 0.12 and agree["channel-wise"] >= agree["tensor-wise"], (err, agree)


def test_channels_last_pass_keeps_outputs_and_moves_no_value_between_convolutions():
    """The residual net (a sum fused into a convolution, a 1x1 convolution, dense layers) and
    LeNet (pooling between convolutions) quantized, then put channels-last: the same outputs
    bit for bit, every 2-D convolution NHWC with its weights transposed, and transposes only
    where a NHWC value meets another kind of node."""
    for sym, shape, want_transposes in ((_residual_net(), (4, 3, 6, 6), 2), (_lenet(), (4, 1, 28, 28), 4)):
        data = np.random.RandomState(11).uniform(0, 1, (8,) + shape[1:]).astype(np.float32)
        args, aux = _random_params(sym, shape)
        qsym, qargs, qaux = qz.quantize_model_mkldnn(sym, args, aux, label_names=None, calib_mode="naive",
                                                     calib_data=mx.io.NDArrayIter(data, batch_size=4),
                                                     quantized_dtype="auto")
        last, largs = qz._channels_last(qsym, qargs)
        nodes = _nodes(last)
        convs = [n for n in nodes.values() if n["op"] == "_contrib_quantized_conv"]
        assert convs and all(n["attrs"]["layout"] == "NHWC" for n in convs)
        transposes = [n for n in nodes.values() if n["op"] == "transpose"]
        assert len(transposes) == want_transposes, [n["name"] for n in transposes]
        for name, value in qargs.items():
            if name.endswith("weight_quantize") and value.ndim == 4:
                np.testing.assert_array_equal(largs[name].asnumpy(), value.asnumpy().transpose(0, 2, 3, 1))
        np.testing.assert_array_equal(_forward(last, largs, qaux, data)[0], _forward(qsym, qargs, qaux, data)[0])


def test_quantize_model_naive_ranges_are_the_float_extremes():
    sym, args, aux, data = _model("mlp")
    qsym, _, _ = qz.quantize_model(sym, args, aux, label_names=None, calib_mode="naive",
                                   calib_data=mx.io.NDArrayIter(data, batch_size=16), quantized_dtype="int8")
    internals = sym.get_internals()
    fc1 = _forward(internals["fc1_output"], args, aux, data)[0]
    relu0 = _forward(internals["relu0_output"], args, aux, data)[0]
    nodes = _nodes(qsym)
    assert [float(nodes["requantize_fc1"]["attrs"][k]) for k in ("min_calib_range", "max_calib_range")] == \
        pytest.approx([fc1.min(), fc1.max()], rel=1e-5)
    # In smart mode relu0 sits between two dense layers: it is quantized, and fc1 reads it as int8.
    assert nodes["quantized_relu0"]["op"] == "_contrib_quantized_act"
    assert relu0.min() == 0.0
    assert nodes["data_quantize"]["attrs"]["out_type"] == "int8"
    assert float(nodes["data_quantize"]["attrs"]["max_calib_range"]) == pytest.approx(data.max(), rel=1e-6)


def test_quantize_model_without_calibration_measures_ranges_at_run_time():
    sym, args, aux, data = _model("lenet")
    qsym, qargs, qaux = qz.quantize_model(sym, args, aux, label_names=None, calib_mode="none")
    assert not any("min_calib_range" in n.get("attrs", {}) for n in _nodes(qsym).values())
    _close(_forward(qsym, qargs, qaux, data)[0], _forward(sym, args, aux, data)[0], 0.06)


def test_excluded_layers_stay_float():
    sym, args, aux, data = _model("lenet")
    calib = mx.io.NDArrayIter(data[:32], batch_size=16)
    qsym, qargs, qaux = qz.quantize_model(sym, args, aux, label_names=None, calib_mode="naive", calib_data=calib,
                                          excluded_sym_names=["conv1"], excluded_op_names=["Pooling"])
    nodes = _nodes(qsym)
    assert nodes["conv1"]["op"] == "Convolution" and nodes["pool0"]["op"] == "Pooling"
    assert nodes["pool1"]["op"] == "Pooling" and "quantized_conv0" in nodes
    assert "conv1_weight" in qargs and "conv1_weight" in qsym.list_arguments()
    _close(_forward(qsym, qargs, qaux, data[32:])[0], _forward(sym, args, aux, data[32:])[0], 0.06)


def test_quantize_model_mkldnn_folds_batch_norm_and_fuses(monkeypatch):
    sym, args, aux, data = _model("lenet_bn")
    calib = mx.io.NDArrayIter(data[:32], batch_size=16)
    qsym, qargs, qaux = qz.quantize_model_mkldnn(sym, args, aux, label_names=None, calib_mode="naive",
                                                 calib_data=calib, quantized_dtype="auto")
    ops = _ops(qsym)
    assert "BatchNorm" not in ops and "Activation" not in ops and "_contrib_quantized_act" not in ops
    # Each product writes 8 bits itself, and the last one its float output (no dequantize).
    assert ops.count("_contrib_requantize") == 0 and ops.count("_contrib_dequantize") == 0
    nodes = _nodes(qsym)
    conv = nodes["quantized_relu0"]
    assert conv["op"] == "_contrib_quantized_conv" and conv["attrs"]["with_relu"] == "True"
    assert "min_calib_range" in conv["attrs"]
    last = nodes["quantized_fc1"]["attrs"]
    assert last["enable_float_output"] == "True" and "min_calib_range" not in last
    assert qsym.list_outputs() == ["quantized_fc1_output"]
    assert not qaux and "bn0_gamma" not in qargs
    q = _forward(qsym, qargs, qaux, data[32:])[0]
    _close(q, _forward(sym, args, aux, data[32:])[0], 0.06)
    # Against the same graph with the logits requantized to int8 then dequantized: within
    # half an int8 step of their calibrated range (the calibration data, so no clipping).
    monkeypatch.setattr(qz, "_fuse_dequantize", lambda s: s)
    usym, uargs, uaux = qz.quantize_model_mkldnn(sym, args, aux, label_names=None, calib_mode="naive",
                                                 calib_data=mx.io.NDArrayIter(data[:32], batch_size=16),
                                                 quantized_dtype="auto")
    fc1 = _nodes(usym)["quantized_fc1"]["attrs"]
    step = max(abs(float(fc1["min_calib_range"])), abs(float(fc1["max_calib_range"]))) / 127
    q_calib, u_calib = _forward(qsym, qargs, qaux, data[:32])[0], _forward(usym, uargs, uaux, data[:32])[0]
    assert np.abs(q_calib - u_calib).max() <= step * 0.5001
    assert not np.array_equal(q_calib, u_calib)


def test_quantize_graph_then_calib_graph_as_quantize_model():
    sym, args, aux, data = _model("lenet")
    qsym, qargs, qaux, collector = qz.quantize_graph(sym, args, aux, calib_mode="naive", quantize_mode="smart")
    assert isinstance(collector, qz._LayerOutputMinMaxCollector)
    assert not any("min_calib_range" in n.get("attrs", {}) for n in _nodes(qsym).values())
    with qz._unfused():
        exe = sym.simple_bind(mx.cpu(), data=(32,) + data.shape[1:], grad_req="null")
    exe.copy_params_from(args, aux)
    exe.set_monitor_callback(collector.collect, monitor_all=True)
    exe.forward(is_train=False, data=mx.nd.array(data[:32]))
    mx.nd.waitall()
    csym, cargs, _ = qz.calib_graph(qsym, args, aux, collector, calib_mode="naive")
    ref, rargs, _ = qz.quantize_model(sym, args, aux, label_names=None, calib_mode="naive",
                                      calib_data=mx.io.NDArrayIter(data[:32], batch_size=32))
    assert json.loads(csym.tojson())["nodes"] == json.loads(ref.tojson())["nodes"]
    assert sorted(cargs) == sorted(rargs)
    with pytest.raises(ValueError, match="naive or entropy"):
        qz.calib_graph(qsym, args, aux, collector, calib_mode="none")


def test_customized_collector_sets_its_ranges():
    class Fixed(qz.CalibrationCollector):
        def collect(self, name, arr):
            if self._wanted(name):
                self.min_max_dict[name] = (-4.0, 4.0)

    sym, args, aux, _ = _model("mlp")
    qsym, qargs, qaux, collector = qz.quantize_graph(sym, args, aux, calib_mode="customize",
                                                     LayerOutputCollector=Fixed())
    for name in collector.include_layer:
        collector.collect(name, None)
    collector.collect("not_a_layer", None)
    assert "not_a_layer" not in collector.min_max_dict
    csym, _, _ = qz.calib_graph(qsym, args, aux, collector, calib_mode="customize")
    ranged = [n for n in _nodes(csym).values() if "min_calib_range" in n.get("attrs", {})]
    assert len(ranged) == len(collector.include_layer)
    assert all(float(n["attrs"]["max_calib_range"]) == 4.0 for n in ranged)


def _gluon_net():
    net = mx.gluon.nn.HybridSequential(prefix="net_")
    with net.name_scope():
        net.add(mx.gluon.nn.Conv2D(8, 3, padding=1), mx.gluon.nn.BatchNorm(), mx.gluon.nn.Activation("relu"),
                mx.gluon.nn.MaxPool2D(2), mx.gluon.nn.Conv2D(8, 3, padding=1, activation="relu"),
                mx.gluon.nn.Flatten(), mx.gluon.nn.Dense(32, activation="relu"), mx.gluon.nn.Dense(10))
    net.initialize(mx.init.Xavier(magnitude=2.0))
    return net


@pytest.mark.parametrize("calib_mode", ["naive", "entropy"])
def test_quantize_net_v2_on_a_hybrid_block(calib_mode, tmp_path):
    mx.random.seed(3)
    net = _gluon_net()
    rng = np.random.RandomState(3)
    x = rng.uniform(0, 1, (48, 1, 12, 12)).astype(np.float32)
    y = rng.randint(0, 10, 48).astype(np.float32)
    float_out = net(mx.nd.array(x[32:])).asnumpy()
    # A DataLoader of (data, label): the label is not an input of the network and is left out.
    loader = mx.gluon.data.DataLoader(mx.gluon.data.ArrayDataset(x[:32], y[:32]), batch_size=8)
    qnet = qz.quantize_net_v2(net, quantized_dtype="auto", calib_mode=calib_mode, calib_data=loader,
                              exclude_layers_match=["dense1"], num_calib_batches=3)
    assert isinstance(qnet, mx.gluon.SymbolBlock)
    nodes = _nodes(qnet._sym)
    assert nodes["net_dense1_fwd"]["op"] == "FullyConnected"
    assert any(n["op"] == "_contrib_quantized_conv" for n in nodes.values())
    assert qnet.collect_params()["net_conv0_weight_quantize"].data().dtype == np.int8
    out = qnet(mx.nd.array(x[32:])).asnumpy()
    _close(out, float_out, 0.08)
    # Saved and loaded again, symbol and int8 parameters, it gives the same outputs.
    qnet.hybridize()
    qnet(mx.nd.array(x[32:]))
    sym_file, params_file = qnet.export(str(tmp_path / "q"))
    again = mx.gluon.SymbolBlock.imports(sym_file, ["data"], params_file)
    assert again.collect_params()["net_conv0_weight_quantize"].data().dtype == np.int8
    np.testing.assert_array_equal(again(mx.nd.array(x[32:])).asnumpy(), out)
    sym, qargs, qaux = mx.model.load_checkpoint(str(tmp_path / "q"), 0)
    np.testing.assert_array_equal(_forward(sym, qargs, qaux, x[32:])[0], out)


def test_quantize_net_without_calibration_and_with_data_shapes():
    mx.random.seed(4)
    net = _gluon_net()
    x = np.random.RandomState(4).uniform(0, 1, (32, 1, 12, 12)).astype(np.float32)
    float_out = net(mx.nd.array(x)).asnumpy()
    with pytest.warns(UserWarning, match="quantize_net_v2"):
        qnet = qz.quantize_net(net, quantized_dtype="int8", data_shapes=[(32, 1, 12, 12)], calib_mode="none")
    _close(qnet(mx.nd.array(x)).asnumpy(), float_out, 0.08)
    with pytest.raises(ValueError, match="data_shapes required"):
        qz.quantize_net_v2(_gluon_net())
    with pytest.raises(ValueError, match="calib_data must be provided"):
        qz.quantize_net_v2(_gluon_net(), data_shapes=[(8, 1, 12, 12)], calib_mode="naive")


def test_concat_and_addition_quantized_in_full_mode():
    x = mx.sym.var("data")
    a = mx.sym.Convolution(x, kernel=(3, 3), pad=(1, 1), num_filter=4, name="conv_a")
    b = mx.sym.Convolution(x, kernel=(3, 3), pad=(1, 1), num_filter=4, name="conv_b")
    c = mx.sym.Convolution(mx.sym.Concat(a, b, dim=1, name="cat0"), kernel=(1, 1), num_filter=4, name="conv_c")
    s = mx.sym.elemwise_add(c, a, name="add0")
    sym = mx.sym.FullyConnected(mx.sym.Activation(s, act_type="relu", name="relu0"), num_hidden=5, name="fc0")
    rng = np.random.RandomState(9)
    arg_shapes, _, _ = sym.infer_shape(data=(8, 2, 6, 6))
    args = {n: mx.nd.array(rng.normal(0, 0.4, sh)) for n, sh in zip(sym.list_arguments(), arg_shapes) if n != "data"}
    data = rng.uniform(-1, 1, (48, 2, 6, 6)).astype(np.float32)
    qsym, qargs, qaux = qz.quantize_model(sym, args, {}, label_names=None, calib_mode="naive", quantize_mode="full",
                                          calib_data=mx.io.NDArrayIter(data[:32], batch_size=16))
    nodes = _nodes(qsym)
    assert nodes["quantized_cat0"]["op"] == "_contrib_quantized_concat"
    assert nodes["quantized_add0"]["op"] == "_contrib_quantized_elemwise_add"
    assert "min_calib_range" in nodes["requantize_add0"]["attrs"]
    _close(_forward(qsym, qargs, qaux, data[32:])[0], _forward(sym, args, {}, data[32:])[0], 0.06)


def test_contrib_quant_is_mxnet_short_name_of_quantization():
    # MXNet 1.9's scripts and tests call mx.contrib.quant.quantize_model / _quantize_params.
    assert mx.contrib.quant is mx.contrib.quantization
    w = mx.nd.array(np.array([[-2.0, 0.5], [1.0, 0.25]], dtype=np.float32))
    d = mx.sym.Variable("data")
    qsym, qargs, _ = mx.contrib.quant.quantize_model(
        mx.sym.FullyConnected(d, num_hidden=2, no_bias=True, name="fc"), {"fc_weight": w}, {},
        calib_mode="none", quantized_dtype="int8", quantize_mode="full")
    np.testing.assert_array_equal(qargs["fc_weight_quantize"].asnumpy(), [[-127, 32], [64, 16]])
    assert qargs["fc_weight_quantize_max"].asscalar() == 2.0


def test_quantized_dtype_uint8_clips_negative_values_to_zero():
    # quantized_dtype='uint8' forces uint8 onto data with negatives: calibration gives the
    # range [0, max] (the layers read uint8 with a zero point of 0), so the quantized dense
    # layer computes on the data with its negatives clipped, as MXNet's oneDNN quantize does.
    rs = np.random.RandomState(3)
    data = rs.uniform(-1, 1, (16, 6)).astype(np.float32)
    # Non-negative weights keep the products non-negative (the requantized uint8 output
    # would clip negative results too).
    w = rs.uniform(0, 1, (4, 6)).astype(np.float32)
    sym = mx.sym.FullyConnected(mx.sym.Variable("data"), num_hidden=4, no_bias=True, name="fc")
    args = {"fc_weight": mx.nd.array(w)}
    qsym, qargs, qaux = qz.quantize_model(sym, args, {}, label_names=None, calib_mode="naive",
                                          calib_data=mx.io.NDArrayIter(data, batch_size=8),
                                          quantized_dtype="uint8", quantize_mode="full")
    attrs = _nodes(qsym)["data_quantize"]["attrs"]
    assert attrs["out_type"] == "uint8"
    assert float(attrs["min_calib_range"]) == 0.0
    assert float(attrs["max_calib_range"]) == pytest.approx(data.max(), rel=1e-6)
    got = _forward(qsym, qargs, qaux, data)[0]
    # The output's calibrated range is the float layer's: larger results saturate at its max.
    want = np.minimum(np.maximum(data, 0) @ w.T, (data @ w.T).max())
    np.testing.assert_allclose(got, want, atol=0.02 * np.abs(want).max())
    assert np.abs(got - data @ w.T).max() > 0.1  # the negatives did not pass
