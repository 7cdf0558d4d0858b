"""weft.symbol: building graphs, inspecting them, shape/type inference and MXNet's JSON
(the fixtures in tests/data/mxnet included)."""
import copy
import json
import os
import pickle

import numpy as np
import pytest

import weft as mx
from weft.base import WeftError

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "data", "mxnet", "upstream")


def mlp():
    data = mx.sym.Variable("data")
    fc1 = mx.sym.FullyConnected(data, num_hidden=16, name="fc1")
    act = mx.sym.Activation(fc1, act_type="relu", name="relu1")
    fc2 = mx.sym.FullyConnected(act, num_hidden=4, name="fc2")
    return mx.sym.SoftmaxOutput(fc2, name="softmax")


def test_composition_names_implicit_variables_like_mxnet():
    net = mlp()
    assert net.list_arguments() == ["data", "fc1_weight", "fc1_bias", "fc2_weight", "fc2_bias", "softmax_label"]
    assert net.list_outputs() == ["softmax_output"]
    assert net.list_auxiliary_states() == []
    assert net.name == "softmax"
    internals = net.get_internals()
    assert "relu1_output" in internals.list_outputs()
    fc1 = internals["fc1_output"]
    assert fc1.get_children().list_outputs() == ["data", "fc1_weight", "fc1_bias"]
    assert fc1.attr("num_hidden") == "16"
    assert mx.sym.Variable("x").get_children() is None


def test_keyword_inputs_and_no_bias():
    w = mx.sym.Variable("w")
    fc = mx.sym.FullyConnected(data=mx.sym.Variable("x"), weight=w, num_hidden=3, no_bias=True, name="fc")
    assert fc.list_arguments() == ["x", "w"]
    with pytest.raises(WeftError, match="unknown input 'wieght'"):
        mx.sym.FullyConnected(mx.sym.Variable("x"), wieght=w, num_hidden=3)
    with pytest.raises(TypeError, match="positional input 1 must be a Symbol"):
        mx.sym.FullyConnected(mx.sym.Variable("x"), 3)
    with pytest.raises(WeftError, match="num_hidden"):
        mx.sym.FullyConnected(mx.sym.Variable("x"), num_hidden="many")


def test_none_positional_inputs_are_left_out_and_bind_ignores_other_names():
    x, w, b = mx.sym.Variable("x"), mx.sym.Variable("w"), mx.sym.Variable("b")
    # As in MXNet: None leaves an input out, the others keep their places by name.
    conv = mx.sym.Convolution(x, w, None, num_filter=2, kernel=(1, 1), no_bias=True, name="c")
    assert conv.list_arguments() == ["x", "w"]
    # A left-out input that the operator needs becomes its usual variable.
    fc = mx.sym.FullyConnected(x, None, b, num_hidden=2, name="fc")
    assert fc.list_arguments() == ["x", "fc_weight", "b"]
    up = mx.sym.contrib.BilinearResize2D(x, None, height=4, width=6)
    assert up.infer_shape(x=(1, 1, 2, 3))[1] == [(1, 1, 4, 6)]
    with pytest.raises(TypeError, match="input 'weight' given by position and by keyword"):
        mx.sym.FullyConnected(x, w, None, weight=w, num_hidden=2)
    with pytest.raises(TypeError, match="positional input 1 must be a Symbol, got int"):
        mx.sym.FullyConnected(x, 3, None, num_hidden=2)
    # bind skips names that are not arguments (here b, and its gradient).
    xv = np.arange(6, dtype=np.float32).reshape(1, 1, 2, 3)
    args = {"x": mx.nd.array(xv), "w": mx.nd.array([[[[2.0]]], [[[-1.0]]]]), "b": None}
    grads = {"x": mx.nd.zeros((1, 1, 2, 3)), "w": mx.nd.zeros((2, 1, 1, 1)), "b": None, "other": mx.nd.ones(1)}
    ex = conv.bind(mx.cpu(), args, args_grad=grads)
    out = ex.forward(is_train=True)[0].asnumpy()
    np.testing.assert_allclose(out, np.concatenate([2 * xv, -xv], axis=1))
    ex.backward(mx.nd.ones((1, 2, 2, 3)))
    np.testing.assert_allclose(grads["x"].asnumpy(), np.ones((1, 1, 2, 3)))
    np.testing.assert_allclose(grads["w"].asnumpy().ravel(), [xv.sum(), xv.sum()])
    with pytest.raises(ValueError, match="key `w` is missing in `args`"):
        conv.bind(mx.cpu(), {"x": mx.nd.array(xv), "b": None})


def test_batchnorm_moving_stats_are_auxiliary_states():
    bn = mx.sym.BatchNorm(mx.sym.Variable("data"), name="bn")
    assert bn.list_arguments() == ["data", "bn_gamma", "bn_beta"]
    assert bn.list_auxiliary_states() == ["bn_moving_mean", "bn_moving_var"]
    assert bn.list_inputs() == ["data", "bn_gamma", "bn_beta", "bn_moving_mean", "bn_moving_var"]
    args, outs, aux = bn.infer_shape(data=(4, 3, 5, 5))
    assert args == [(4, 3, 5, 5), (3,), (3,)]
    assert outs == [(4, 3, 5, 5)]
    assert aux == [(3,), (3,)]


def test_name_manager_and_prefix():
    x = mx.sym.Variable("x")
    with mx.name.NameManager():
        a, b = mx.sym.exp(x), mx.sym.exp(x)
        assert (a.name, b.name) == ("exp0", "exp1")
        with mx.name.Prefix("net_"):
            assert mx.sym.exp(x).name == "net_exp0"
            assert mx.sym.exp(x, name="e").name == "net_e"


def test_operators_group_and_indexing():
    a, b = mx.sym.Variable("a"), mx.sym.Variable("b")
    expr = (2 * a - 1) / b + a ** 2
    assert expr.list_arguments() == ["a", "b"]
    g = mx.sym.Group([a, expr])
    assert len(g) == 2
    assert g.name is None
    assert g[1].list_outputs() == expr.list_outputs()
    with pytest.raises(WeftError, match="out of range"):
        g[2]
    with pytest.raises(ValueError, match="no output named"):
        g["nope"]
    parts = mx.sym.split(a, num_outputs=3, axis=0, name="sp")
    assert parts.list_outputs() == ["sp_output0", "sp_output1", "sp_output2"]


def test_infer_shape_partial_and_errors():
    net = mlp()
    args, outs, aux = net.infer_shape(data=(8, 10))
    assert args == [(8, 10), (16, 10), (16,), (4, 16), (4,), (8,)]
    assert outs == [(8, 4)]
    assert net.infer_shape() == (None, None, None)
    partial_args, _, _ = mlp().infer_shape_partial()
    assert partial_args[0] == ()
    with pytest.raises(WeftError, match="'nope' is not an input of the symbol"):
        net.infer_shape(nope=(1,))
    a, b = mx.sym.Variable("a"), mx.sym.Variable("b")
    with pytest.raises(WeftError, match=r"Node 'plus'.*\(2,3\).*\(3,2\)|Node 'plus'.*\(3,2\).*\(2,3\)"):
        mx.sym.elemwise_add(a, b, name="plus").infer_shape(a=(2, 3), b=(3, 2))
    # Positional shapes follow list_arguments.
    assert mx.sym.elemwise_add(a, b).infer_shape((2, 2))[0] == [(2, 2), (2, 2)]


def test_infer_type():
    a = mx.sym.Variable("a", dtype="float64")
    s = mx.sym.exp(a) + mx.sym.Variable("b")
    args, outs, _ = s.infer_type()
    assert [t.__name__ for t in args] == ["float64", "float64"]
    assert outs[0].__name__ == "float64"
    assert mx.sym.exp(mx.sym.Variable("c")).infer_type() == (None, None, None)


def test_variable_attributes():
    v = mx.sym.Variable("w", shape=(3, 4), lr_mult=0.5, wd_mult=2, dtype="int32", __tag__="x")
    assert v.attr("__shape__") == "(3, 4)"
    assert v.attr("__lr_mult__") == "0.5"
    assert v.attr("__wd_mult__") == "2"
    assert v.attr("__dtype__") == "4"
    # The hidden keys are listed under both names, as MXNet lists them.
    assert v.list_attr() == {"__shape__": "(3, 4)", "__lr_mult__": "0.5", "__wd_mult__": "2",
                             "lr_mult": "0.5", "wd_mult": "2", "__dtype__": "4", "__tag__": "x"}
    with pytest.raises(ValueError, match="__like_this__"):
        mx.sym.Variable("w", colour="red")
    v._set_attr(__lr_mult__="3")
    assert v.attr("__lr_mult__") == "3"
    assert v.attr("missing") is None


def test_variable_integer_shape_is_one_dimensional():
    # MXNet's tests write shape=(1), an int: a 1-d variable whose shape inference uses it.
    b = mx.sym.var("b", shape=(3))
    assert b.attr("__shape__") == "(3,)"
    out = mx.sym.broadcast_add(mx.sym.var("x"), b)
    args, outs, _ = out.infer_shape(x=(2, 3))
    assert args == [(2, 3), (3,)] and outs == [(2, 3)]


def test_copy_call_and_pickle():
    net = mlp()
    c = copy.deepcopy(net)
    c._set_attr(__mark__="1")
    assert net.attr("__mark__") is None
    data2 = mx.sym.exp(mx.sym.Variable("raw"), name="pre")
    composed = net(data=data2)
    assert composed.list_arguments()[0] == "raw"
    assert net.list_arguments()[0] == "data"
    back = pickle.loads(pickle.dumps(net))
    assert back.tojson() == net.tojson()


def test_json_round_trip_and_files(tmp_path):
    net = mlp()
    text = net.tojson()
    doc = json.loads(text)
    assert doc["attrs"]["mxnet_version"] == ["int", 10901]
    assert [n["op"] for n in doc["nodes"]][:4] == ["null", "null", "null", "FullyConnected"]
    assert doc["nodes"][3]["attrs"] == {"num_hidden": "16"}
    assert doc["heads"] == [[len(doc["nodes"]) - 1, 0, 0]]
    again = mx.sym.load_json(text)
    assert again.tojson() == text
    path = str(tmp_path / "net-symbol.json")
    net.save(path)
    assert mx.sym.load(path).tojson() == text
    assert "Op:FullyConnected, Name=fc1" in net.debug_str()


@pytest.mark.parametrize("fixture", ["clojure_mlp-symbol.json", "mkldnn_model1-symbol.json"])
def test_mxnet_fixtures_load_infer_and_save_the_same_nodes(fixture):
    path = os.path.join(FIXTURES, fixture)
    sym = mx.sym.load(path)
    with open(path) as f:
        original = json.load(f)
    saved = json.loads(sym.tojson())
    strip = lambda n: (n["op"], n["name"], n.get("attrs", {}), [list(e[:2]) for e in n["inputs"]])  # noqa: E731
    assert [strip(n) for n in saved["nodes"]] == [strip(n) for n in original["nodes"]]
    assert saved["arg_nodes"] == original["arg_nodes"]
    assert [h[:2] for h in saved["heads"]] == [h[:2] for h in original["heads"]]
    assert mx.sym.load_json(sym.tojson()).tojson() == sym.tojson()
    if fixture.startswith("clojure"):
        _, outs, _ = sym.infer_shape(data=(32, 784))
        assert outs == [(32, 10)]
    else:
        args, outs, _ = sym.infer_shape(data=(1, 3, 224, 224))
        assert outs == [(1, 1000)]
        assert args[sym.list_arguments().index("fc6_weight")] == (1024, 512, 3, 3)


def test_legacy_0_8_file_is_upgraded():
    sym = mx.sym.load(os.path.join(FIXTURES, "save_000800.json"))
    attrs = sym.attr_dict()
    assert attrs["data"]["__ctx_group__"] == "stage1"
    assert attrs["data"]["__lr_mult__"] == "0.2"
    assert attrs["fc1_weight"]["__lr_mult__"] == "1.2"  # from fc1's weight_lr_mult
    assert attrs["fc1"]["__wd_mult__"] == "0.3"
    assert "weight_lr_mult" not in attrs["fc1"]
    assert attrs["fc2"]["__lr_mult__"] == "0.01"
    # Auxiliary states were not saved before 0.9: they are made on load.
    assert sym.list_auxiliary_states() == ["batchnorm0_moving_mean", "batchnorm0_moving_var"]
    _, outs, aux = sym.infer_shape(data=(5, 20))
    assert outs == [(5, 10)]
    assert aux == [(10,), (10,)]


@pytest.mark.parametrize("text,message", [
    ("{", "not valid JSON"),
    ('{"nodes": [], "heads": []}', "missing the top-level field 'arg_nodes'"),
    ('{"nodes": [{"op": "Nope", "name": "n", "inputs": []}], "arg_nodes": [], "heads": [[0, 0]]}',
     "unknown operator 'Nope'"),
    ('{"nodes": [{"op": "exp", "name": "e", "inputs": [[0, 0]]}], "arg_nodes": [], "heads": [[0, 0]]}',
     "does not come before it"),
    ('{"nodes": [{"op": "null", "name": "x", "inputs": []}], "arg_nodes": [0], "heads": [[0, 4]]}',
     "refers to output 4"),
    ('{"nodes": [{"op": "null", "inputs": []}], "arg_nodes": [0], "heads": [[0, 0]]}', "missing the field 'name'"),
    ('{"nodes": [{"op": "null", "name": "x", "inputs": "no"}], "arg_nodes": [0], "heads": [[0, 0]]}',
     "'inputs' must be an array"),
])
def test_malformed_json_is_a_clear_error(text, message):
    with pytest.raises(WeftError, match=message):
        mx.sym.load_json(text)


def test_missing_file_is_an_error(tmp_path):
    with pytest.raises(WeftError, match="cannot open"):
        mx.sym.load(str(tmp_path / "absent.json"))


def test_methods_comparisons_and_constants():
    x = mx.sym.var("x")
    out = mx.sym.Group([x.reshape((3, 2)), x.sum(axis=1), (x > 0.5) + (x <= 0.25), x.astype("float64"),
                        mx.sym.maximum(x, 0.5), mx.sym.minimum(x, x * 2), mx.sym.zeros((2, 3)) + mx.sym.ones((2, 3))])
    xv = np.array([[0.1, 0.7, 0.3], [0.9, 0.2, 0.6]], dtype=np.float32)
    res = [r.asnumpy() for r in out.eval(ctx=mx.cpu(), x=mx.nd.array(xv))]
    np.testing.assert_allclose(res[0], xv.reshape(3, 2))
    np.testing.assert_allclose(res[1], xv.sum(axis=1), rtol=1e-6)
    np.testing.assert_allclose(res[2], (xv > 0.5) + (xv <= 0.25))
    assert res[3].dtype == np.float64
    np.testing.assert_allclose(res[4], np.maximum(xv, 0.5))
    np.testing.assert_allclose(res[5], np.minimum(xv, 2 * xv))
    np.testing.assert_allclose(res[6], np.ones((2, 3)))
    with pytest.raises(AttributeError, match="no attribute 'not_an_operator'"):
        x.not_an_operator()
    np.testing.assert_allclose(mx.nd.maximum(mx.nd.array(xv), 0.5).asnumpy(), np.maximum(xv, 0.5))
    np.testing.assert_allclose(mx.nd.minimum(0.5, mx.nd.array(xv)).asnumpy(), np.minimum(xv, 0.5))


def test_comparisons_build_nodes_and_symbols_refuse_truth_tests():
    x, y = mx.sym.Variable("x"), mx.sym.Variable("y")
    xv = np.array([[1, 2], [3, 4]], dtype=np.float32)
    yv = np.array([[1, 0], [3, 5]], dtype=np.float32)
    cases = [(x == y, xv == yv), (x != y, xv != yv), (x == 3, xv == 3), (x != 2, xv != 2),
             (x - True, xv - 1), (x * False, xv * 0)]
    for sym, want in cases:
        args = {n: mx.nd.array({"x": xv, "y": yv}[n]) for n in sym.list_arguments()}
        out = sym.bind(mx.cpu(), args).forward()[0].asnumpy()
        np.testing.assert_array_equal(out, want.astype(np.float32))
    with pytest.raises(mx.base.NotImplementedForSymbol):
        bool(x == y)
    with pytest.raises(TypeError, match="Symbol or a number"):
        x == "x"  # noqa: B015
    assert {x: 1, y: 2}[y] == 2  # still hashable, by identity


def test_given_dtype_wins_over_a_declared_one():
    # As in MXNet: a Variable's dtype is a default that bound arrays or given types override.
    x = mx.sym.Variable("x", dtype="float64")
    s = mx.sym.dot(x, mx.sym.Variable("y"))
    assert s.infer_type()[0] == [np.float64, np.float64]
    assert s.infer_type(x="float32")[0] == [np.float32, np.float32]
    assert s.simple_bind(mx.cpu(), x=(2, 3), y=(3, 1)).arg_dict["x"].dtype == np.float64
    assert s.simple_bind(mx.cpu(), x=(2, 3), y=(3, 1), type_dict={"x": "float16"}).arg_dict["y"].dtype == np.float16
    xv, yv = np.arange(6.0).reshape(2, 3), np.array([[1.0], [-2.0], [0.5]])
    ex = s.bind(mx.cpu(), {"x": mx.nd.array(xv), "y": mx.nd.array(yv)})
    out = ex.forward()[0]
    assert out.dtype == np.float32
    np.testing.assert_allclose(out.asnumpy(), xv @ yv, rtol=1e-6)
    from weft.test_utils import check_numeric_gradient
    check_numeric_gradient(s, [xv, yv], numeric_eps=1e-2, rtol=1e-2, atol=1e-3)
    # So does a given shape; a partly given one is completed from the declaration and must
    # agree with it.
    z = mx.sym.Variable("z", shape=(2, 0))
    assert (z * 2).infer_shape(z=(3, 3))[0] == [(3, 3)]
    w = mx.sym.elemwise_add(z, mx.sym.ones(shape=(2, 5)))
    assert w.infer_shape()[0] == [(2, 5)]
    with pytest.raises(WeftError, match="declared with"):
        (z * 2).infer_shape(z=(3, 0))


@pytest.mark.parametrize("src,spec,reverse,dst", [
    ((2, 3, 5, 5), (0, -1), False, (2, 75)),
    ((2, 3, 5, 4), (-1, 0, 0), False, (8, 3, 5)),
    ((2, 3, 5, 6), (-3, -1), False, (6, 30)),
    ((64, 1, 2, 3), (-4, 16, -1, -2), False, (16, 4, 1, 2, 3)),
    ((2, 3, 5, 5), (0, 0, -1), True, (3, 5, 10)),
    ((1, 2, 3, 64), (-2, -1, 16, -4), True, (1, 2, 3, 4, 16)),
])
def test_reshape_infers_an_unknown_input_dim_back_from_its_output(src, spec, reverse, dst):
    # MXNet 1.x: a 0 in a given shape is unknown; Reshape's output, fixed by the other
    # operand, gives the missing input dim back.
    for i in range(len(src)):
        held = tuple(0 if k == i else d for k, d in enumerate(src))
        net = mx.sym.elemwise_add(mx.sym.Variable("data").reshape(spec, reverse=reverse), mx.sym.ones(shape=dst))
        args, outs, _ = net.infer_shape(data=held)
        assert args == [src] and outs == [dst]


def test_reshape_partial_inference_limits():
    net = mx.sym.Variable("data").reshape((0, -1))
    # Nothing fixes the output: the shape stays partial.
    assert net.infer_shape(data=(2, 0, 5))[0] is None
    assert net.infer_shape_partial(data=(2, 0, 5))[1] == [(2, 0)]
    # Two unknown input dims cannot be told apart by the element count.
    two = mx.sym.elemwise_add(net, mx.sym.ones(shape=(2, 30)))
    assert two.infer_shape(data=(2, 0, 0))[0] is None
    # An output whose size the known input dims do not divide is refused.
    bad = mx.sym.elemwise_add(mx.sym.Variable("data").reshape((-1,)), mx.sym.ones(shape=(7,)))
    with pytest.raises(WeftError, match="not a multiple of the known input dims' product 2"):
        bad.infer_shape(data=(2, 0))


def test_infer_type_partial_leaves_unknown_as_none():
    data = mx.sym.var("data")
    net = mx.sym.FullyConnected(mx.sym.Cast(data, dtype="float16"), num_hidden=3, name="fc")
    arg, out, aux = net.infer_type_partial()
    assert arg == [None, np.float16, np.float16] and out == [np.float16] and aux == []
    assert net.infer_type() == (None, None, None)
    assert net.infer_type_partial(data=np.float64) == ([np.float64, np.float16, np.float16], [np.float16], [])
    assert mx.sym.var("x").infer_type_partial() == ([None], [None], [])


def test_abs_of_symbol_is_the_abs_operator():
    data = mx.sym.var("data")
    out = abs(data)
    assert json.loads(out.tojson())["nodes"][-1]["op"] == "abs"
    x = np.array([[-1.5, 2.0], [0.0, -3.0]], np.float32)
    got = out.eval(ctx=mx.cpu(), data=mx.nd.array(x))[0].asnumpy()
    np.testing.assert_array_equal(got, np.abs(x))
