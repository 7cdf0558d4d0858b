"""weft.init: name dispatch, each initializer's statistics against its formula, Mixed, Load."""
import json
import warnings

import numpy as np
import pytest

import weft as mx
from weft.initializer import InitDesc


def _fill(init, name, shape, attrs=None):
    arr = mx.nd.zeros(shape)
    init(InitDesc(name, attrs), arr)
    return arr.asnumpy()


def test_alias_module():
    assert mx.init is mx.initializer
    assert mx.init.Xavier is mx.initializer.Xavier


def test_name_dispatch_and_suffixes():
    init = mx.init.Uniform(0.5)
    w = _fill(init, "fc1_weight", (50, 40))
    assert np.abs(w).max() <= 0.5 and np.abs(w).max() > 0.4
    np.testing.assert_array_equal(_fill(init, "fc1_bias", (7,)), 0)
    np.testing.assert_array_equal(_fill(init, "bn_gamma", (7,)), 1)
    np.testing.assert_array_equal(_fill(init, "bn_beta", (7,)), 0)
    for name, val in [("bn_moving_mean", 0), ("bn_moving_var", 1), ("bn_moving_inv_var", 0),
                      ("x_moving_avg", 0), ("q_min", 0), ("q_max", 1)]:
        arr = mx.nd.full((3,), 5.0)
        init(InitDesc(name), arr)
        np.testing.assert_array_equal(arr.asnumpy(), val, err_msg=name)


def test_unknown_name_errors():
    with pytest.raises(ValueError, match="Unknown initialization pattern for fc1_something"):
        mx.init.Xavier()(InitDesc("fc1_something"), mx.nd.zeros((2, 2)))
    with pytest.raises(TypeError, match="NDArray"):
        mx.init.Xavier()(InitDesc("fc1_weight"), np.zeros((2, 2)))


def test_init_attribute_overrides_name():
    w = _fill(mx.init.Xavier(), "fc1_weight", (3, 4), {"__init__": mx.init.Constant(2.5).dumps()})
    np.testing.assert_array_equal(w, 2.5)
    # The attribute also gives a rule to names the dispatch does not know.
    np.testing.assert_array_equal(_fill(mx.init.Xavier(), "odd_param", (3,), {"__init__": "ones"}), 1)
    # From a real symbol's attributes.
    v = mx.sym.Variable("emb", init=mx.init.Constant(-1.0))
    attrs = v.attr_dict()["emb"]
    np.testing.assert_array_equal(_fill(mx.init.Uniform(), "emb", (2, 2), attrs), -1.0)


def test_global_init_recorded():
    init = mx.init.One()
    desc = InitDesc("w_weight")
    init(desc, mx.nd.zeros((2,)))
    assert desc.global_init is init


def test_legacy_string_name():
    arr = mx.nd.zeros((4, 4))
    with pytest.warns(DeprecationWarning):
        mx.init.Constant(3.0)("fc_weight", arr)
    np.testing.assert_array_equal(arr.asnumpy(), 3.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        up = mx.nd.zeros((1, 1, 4, 4))
        mx.init.Zero()("upsampling0_weight", up)
        np.testing.assert_allclose(up.asnumpy(), mx.initializer._bilinear_kernel((1, 1, 4, 4)))
        loc = mx.nd.zeros((6,))
        mx.init.Zero()("stn_loc_bias", loc)
        np.testing.assert_array_equal(loc.asnumpy(), [1, 0, 0, 0, 1, 0])


def test_create_dumps_register():
    x = mx.init.create("xavier", magnitude=2, factor_type="in")
    assert isinstance(x, mx.init.Xavier) and x.magnitude == 2 and x.factor_type == "in"
    back = mx.init.create(x.dumps())
    assert isinstance(back, mx.init.Xavier) and back._kwargs == x._kwargs
    assert json.loads(mx.init.MSRAPrelu(slope=0.1).dumps()) == ["msraprelu", {"factor_type": "avg", "slope": 0.1}]
    assert isinstance(mx.init.create("zeros"), mx.init.Zero)
    assert isinstance(mx.init.create("ONES"), mx.init.One)
    assert mx.init.create(x) is x
    with pytest.raises(ValueError, match="not a registered initializer"):
        mx.init.create("nosuchinit")

    @mx.init.register
    class Twice(mx.init.Initializer):
        def _init_weight(self, _, arr):
            arr[:] = 2
    np.testing.assert_array_equal(_fill(mx.init.create("twice"), "a_weight", (2,)), 2)


def test_constant_array_value_and_dumps():
    val = np.arange(6, dtype=np.float32).reshape(2, 3)
    c = mx.init.Constant(mx.nd.array(val))
    np.testing.assert_array_equal(_fill(c, "c_weight", (2, 3)), val)
    assert json.loads(c.dumps()) == ["constant", {"value": val.tolist()}]


def test_uniform_normal_stats():
    mx.random.seed(7)
    u = _fill(mx.init.Uniform(0.2), "a_weight", (400, 500))
    assert u.min() >= -0.2 and u.max() <= 0.2
    assert abs(u.std() - 0.2 / np.sqrt(3)) < 2e-3 and abs(u.mean()) < 2e-3
    n = _fill(mx.init.Normal(0.3), "a_weight", (400, 500))
    assert abs(n.std() - 0.3) < 3e-3 and abs(n.mean()) < 3e-3


def test_seed_reproducible():
    mx.random.seed(11)
    a = _fill(mx.init.Xavier(), "a_weight", (30, 20))
    mx.random.seed(11)
    b = _fill(mx.init.Xavier(), "a_weight", (30, 20))
    np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("factor_type", ["avg", "in", "out"])
@pytest.mark.parametrize("rnd_type", ["uniform", "gaussian"])
def test_xavier_scale(rnd_type, factor_type):
    shape = (64, 32, 5, 5)  # fan_in = 32*25, fan_out = 64*25
    fan_in, fan_out = 32 * 25.0, 64 * 25.0
    factor = {"avg": (fan_in + fan_out) / 2, "in": fan_in, "out": fan_out}[factor_type]
    magnitude = 2.34
    scale = np.sqrt(magnitude / factor)
    mx.random.seed(3)
    w = _fill(mx.init.Xavier(rnd_type, factor_type, magnitude), "conv_weight", shape)
    if rnd_type == "uniform":
        assert w.min() >= -scale and w.max() <= scale
        assert w.max() > 0.99 * scale and w.min() < -0.99 * scale
        expected_std = scale / np.sqrt(3)
    else:
        expected_std = scale
    assert abs(w.std() / expected_std - 1) < 0.02


def test_xavier_errors():
    with pytest.raises(ValueError, match="at least 2D"):
        _fill(mx.init.Xavier(), "v_weight", (10,))
    with pytest.raises(ValueError, match="factor_type"):
        mx.init.Xavier(factor_type="sideways")
    with pytest.raises(ValueError, match="rnd_type"):
        mx.init.Xavier(rnd_type="cauchy")


def test_msraprelu():
    slope = 0.25
    shape = (128, 64, 3, 3)
    mx.random.seed(5)
    w = _fill(mx.init.MSRAPrelu("in", slope), "c_weight", shape)
    expected = np.sqrt(2.0 / (1 + slope ** 2) / (64 * 9))
    assert abs(w.std() / expected - 1) < 0.02
    assert abs(w.mean()) < 0.02 * expected


@pytest.mark.parametrize("rand_type", ["uniform", "normal"])
def test_orthogonal(rand_type):
    scale = 1.5
    w = _fill(mx.init.Orthogonal(scale, rand_type), "o_weight", (20, 4, 3, 3))
    m = w.reshape(20, -1) / scale  # 20 x 36: rows orthonormal
    np.testing.assert_allclose(m @ m.T, np.eye(20), atol=1e-5)
    tall = _fill(mx.init.Orthogonal(scale, rand_type), "o_weight", (50, 10)) / scale  # columns orthonormal
    np.testing.assert_allclose(tall.T @ tall, np.eye(10), atol=1e-5)


def test_bilinear_exact():
    w = _fill(mx.init.Bilinear(), "up_weight", (2, 1, 4, 4))
    # kernel 4: f = 2, c = 0.75, taps 1 - |x/2 - 0.75| = .25 .75 .75 .25
    tri = np.array([0.25, 0.75, 0.75, 0.25])
    for k in range(2):
        np.testing.assert_allclose(w[k, 0], np.outer(tri, tri), rtol=1e-6)
    w3 = _fill(mx.init.Bilinear(), "up_weight", (1, 1, 3, 3))
    # kernel 3: f = 2, c = (4 - 1 - 0) / 4 = 0.75 as in MXNet's formula (which centres by f,
    # not by the kernel size), taps 1 - |x/2 - 0.75| = .25 .75 .75
    tri3 = np.array([0.25, 0.75, 0.75])
    np.testing.assert_allclose(w3[0, 0], np.outer(tri3, tri3), rtol=1e-6)
    with pytest.raises(ValueError, match="4-d"):
        _fill(mx.init.Bilinear(), "up_weight", (3, 3))


def test_lstm_bias():
    b = _fill(mx.init.LSTMBias(2.5), "lstm_i2h_bias", (4 * 5,), {"__init__": mx.init.LSTMBias(2.5).dumps()})
    expected = np.zeros(20)
    expected[5:10] = 2.5
    np.testing.assert_array_equal(b, expected)
    with pytest.raises(ValueError, match="multiple of 4"):
        _fill(mx.init.LSTMBias(), "x_weight", (6,))


def test_fused_rnn_lstm_layout():
    # One layer, unidirectional LSTM, input 3, hidden 2: weights 4*2*3 + 4*2*2, biases 2 * 4*2.
    init = mx.init.FusedRNN(mx.init.Constant(0.5), num_hidden=2, num_layers=1, mode="lstm", forget_bias=3.0)
    total = 24 + 16 + 16
    # As in MXNet, the fused initializer reaches the parameter through its "__init__" attribute.
    attrs = {"__init__": init.dumps()}
    p = _fill(mx.init.Xavier(), "rnn_parameters", (total,), attrs)
    np.testing.assert_array_equal(p[:40], 0.5)
    bias = p[40:].reshape(2, 4, 2)  # (i2h, h2h) x gates (i, f, c, o) x hidden
    np.testing.assert_array_equal(bias[:, 1], 3.0)
    np.testing.assert_array_equal(bias[:, [0, 2, 3]], 0.0)
    with pytest.raises(ValueError, match="does not fit"):
        _fill(mx.init.Xavier(), "rnn_parameters", (total + 1,), attrs)


def test_mixed_routing():
    init = mx.init.Mixed(["fc2.*", ".*"], [mx.init.Constant(7.0), mx.init.Zero()])
    a, b = mx.nd.ones((3,)), mx.nd.ones((3,))
    init(InitDesc("fc2_weight"), a)
    init(InitDesc("fc1_weight"), b)
    np.testing.assert_array_equal(a.asnumpy(), 7.0)
    np.testing.assert_array_equal(b.asnumpy(), 0.0)
    strict = mx.init.Mixed(["conv.*"], [mx.init.One()])
    with pytest.raises(ValueError, match="did not match any pattern"):
        strict("fc_weight", mx.nd.zeros((1,)))
    with pytest.raises(ValueError, match="2 patterns but 1"):
        mx.init.Mixed(["a", "b"], [mx.init.One()])


def test_load_from_params_file(tmp_path):
    fname = str(tmp_path / "net-0001.params")
    w = np.random.RandomState(0).randn(3, 4).astype(np.float32)
    mx.nd.save(fname, {"arg:fc_weight": mx.nd.array(w), "aux:bn_moving_mean": mx.nd.array([1.0, 2.0])})
    init = mx.init.Load(fname, default_init=mx.init.Constant(9.0))
    assert sorted(init.param) == ["bn_moving_mean", "fc_weight"]
    out = mx.nd.zeros((3, 4))
    init("fc_weight", out)
    np.testing.assert_array_equal(out.asnumpy(), w)
    mm = mx.nd.zeros((2,))
    init("bn_moving_mean", mm)
    np.testing.assert_array_equal(mm.asnumpy(), [1.0, 2.0])
    other = mx.nd.zeros((2,))
    init(InitDesc("fc_bias"), other)  # not in the file: default_init (through its name dispatch)
    np.testing.assert_array_equal(other.asnumpy(), 0.0)
    with pytest.raises(ValueError, match="shape mismatch"):
        init("fc_weight", mx.nd.zeros((4, 3)))
    with pytest.raises(ValueError, match="no default_init"):
        mx.init.Load({"a": mx.nd.zeros((1,))})("b", mx.nd.zeros((1,)))


def test_load_from_dict_plain_names():
    init = mx.init.Load({"x_weight": mx.nd.full((2,), 4.0)})
    out = mx.nd.zeros((2,))
    init("x_weight", out)
    np.testing.assert_array_equal(out.asnumpy(), 4.0)


def test_set_verbosity_logs(caplog):
    import logging
    caplog.set_level(logging.INFO)
    init = mx.init.Constant(2.0).set_verbosity(True)
    init(InitDesc("fc_weight"), mx.nd.zeros((4,)))
    init(InitDesc("fc_bias"), mx.nd.zeros((4,)))
    msgs = [r.getMessage() for r in caplog.records]
    # the default summary is norm / sqrt(size): 2.0 for the weight, 0.0 for the bias
    assert msgs == ["Initialized fc_weight as weight: 2.0", "Initialized fc_bias as bias: 0.0"]


@pytest.mark.parametrize("mode,bidirectional,layers", [("lstm", False, 1), ("gru", True, 2), ("rnn_tanh", True, 3)])
def test_fused_rnn_fits_rnn_operator(mode, bidirectional, layers):
    """The packed size the RNN operator infers is the one FusedRNN lays out: every weight
    comes from `init` (ones here) and every bias is zero (LSTM forget gates aside)."""
    states = [mx.sym.Variable("state")] + ([mx.sym.Variable("cell")] if mode == "lstm" else [])
    rnn = mx.sym.RNN(mx.sym.Variable("data"), mx.sym.Variable("rnn_parameters"), *states, state_size=5,
                     num_layers=layers, mode=mode, bidirectional=bidirectional, name="rnn")
    arg_shapes, _, _ = rnn.infer_shape(data=(4, 2, 3))
    total = dict(zip(rnn.list_arguments(), arg_shapes))["rnn_parameters"][0]
    gates = {"lstm": 4, "gru": 3, "rnn_tanh": 1}[mode]
    dirs = 2 if bidirectional else 1
    n_weights = sum(dirs * gates * 5 * ((3 if layer == 0 else 5 * dirs) + 5) for layer in range(layers))
    n_biases = layers * dirs * 2 * gates * 5
    assert total == n_weights + n_biases
    init = mx.init.FusedRNN(mx.init.One(), 5, layers, mode, bidirectional, forget_bias=0.0)
    p = _fill(mx.init.Xavier(), "rnn_parameters", (total,), {"__init__": init.dumps()})
    np.testing.assert_array_equal(p[:n_weights], 1.0)
    np.testing.assert_array_equal(p[n_weights:], 0.0)


def test_prelu_gamma_defaults_to_a_quarter():
    # An implicitly created gamma carries MXNet's default initializer, which the global one
    # does not override; one given by the caller keeps its own.
    net = mx.sym.LeakyReLU(data=mx.sym.Variable("data"), act_type="prelu", name="p")
    assert json.loads(net.attr_dict()["p_gamma"]["__init__"]) == ["Constant", {"value": 0.25}]
    mod = mx.mod.Module(net, label_names=None)
    mod.bind(data_shapes=[("data", (4, 6))])
    mod.init_params(mx.init.Uniform(5.0))
    np.testing.assert_array_equal(mod.get_params()[0]["p_gamma"].asnumpy(), np.full(6, 0.25, np.float32))
    own = mx.sym.LeakyReLU(data=mx.sym.Variable("data"), gamma=mx.sym.Variable("g", init=mx.init.One()),
                           act_type="prelu")
    assert json.loads(own.attr_dict()["g"]["__init__"])[0] == "one"
    plain = mx.sym.LeakyReLU(data=mx.sym.Variable("data"), act_type="leaky", name="q")
    assert "__init__" not in plain.attr_dict().get("q_gamma", {})


def test_constant_dumps_keeps_kwargs_json_ready():
    init = mx.init.Constant(mx.nd.array([[1.0, 2.0]]))
    text = init.dumps()
    assert json.loads(text) == ["constant", {"value": [[1.0, 2.0]]}]
    assert text == json.dumps(["constant", init._kwargs])
    arr = mx.nd.zeros((1, 2))
    init(InitDesc("w_weight"), arr)
    np.testing.assert_array_equal(arr.asnumpy(), [[1.0, 2.0]])
