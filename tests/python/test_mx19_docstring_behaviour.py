"""Behaviour that MXNet 1.9.1's docstrings and operator descriptions show by example
(`help(mx.nd.X)`), checked with values worked out by hand or with numpy."""
import json

import numpy as np
import pytest

import weft as mx


# ---------------------------------------------------------------- NDArray methods
def test_ndarray_slice_assign_scalar_writes_in_place_and_returns_self():
    x = mx.nd.ones((2, 2, 2))
    y = x.slice_assign_scalar(0, (0, 0, None), (1, 1, None), (None, None, None))
    assert y is x
    want = np.ones((2, 2, 2), np.float32)
    want[0, 0, :] = 0
    np.testing.assert_array_equal(x.asnumpy(), want)


def test_ndarray_slice_assign_with_steps():
    x = mx.nd.array(np.arange(24).reshape(4, 6))
    rhs = mx.nd.array(-np.arange(6).reshape(2, 3) - 1)
    y = x.slice_assign(rhs, (0, 1), (4, 6), (2, 2))
    assert y is x
    want = np.arange(24, dtype=np.float32).reshape(4, 6)
    want[0:4:2, 1:6:2] = -np.arange(6).reshape(2, 3) - 1
    np.testing.assert_array_equal(x.asnumpy(), want)


def test_ndarray_slice_assign_shape_mismatch_is_an_error():
    x = mx.nd.ones((2, 3))
    with pytest.raises(mx.base.MXNetError):
        x.slice_assign(mx.nd.zeros((2, 2)), (0, 0), (1, 3), (None, None)).wait_to_read()


def test_ndarray_python2_division_names():
    x = mx.nd.full((2, 3), 4.0)
    y = mx.nd.full((2, 3), 2.0)
    np.testing.assert_array_equal(x.__div__(y).asnumpy(), np.full((2, 3), 2.0))
    np.testing.assert_array_equal(x.__rdiv__(y).asnumpy(), np.full((2, 3), 0.5))
    np.testing.assert_array_equal(x.__rdiv__(1).asnumpy(), np.full((2, 3), 0.25))
    z = x.__idiv__(8)
    np.testing.assert_array_equal(x.asnumpy(), np.full((2, 3), 0.5))
    assert z is x


# ---------------------------------------------------------------- Symbol
def test_symbol_negation_is_mul_scalar_minus_one():
    a = mx.sym.Variable("a")
    neg = -a
    nodes = json.loads(neg.tojson())["nodes"]
    assert nodes[-1]["op"] == "_mul_scalar"
    assert float(nodes[-1]["attrs"]["scalar"]) == -1.0
    assert neg.name.startswith("_mulscalar")
    out = neg.eval(ctx=mx.cpu(), a=mx.nd.array([[1, -2, 3]]))[0]
    np.testing.assert_array_equal(out.asnumpy(), [[-1, 2, -3]])


def test_symbol_python2_division_names():
    x, y = mx.sym.Variable("x"), mx.sym.Variable("y")
    args = dict(ctx=mx.cpu(), x=mx.nd.full((2, 3), 3.0), y=mx.nd.ones((2, 3)))
    np.testing.assert_allclose(x.__rdiv__(y).eval(**args)[0].asnumpy(), np.full((2, 3), 1 / 3.0), rtol=1e-6)
    np.testing.assert_allclose(x.__div__(y).eval(**args)[0].asnumpy(), np.full((2, 3), 3.0))
    np.testing.assert_allclose(x.__rdiv__(6).eval(**args)[0].asnumpy(), np.full((2, 3), 2.0))


def test_symbol_compose_name_renames_the_head_node():
    data = mx.sym.Variable("data")
    net1 = mx.sym.FullyConnected(data=data, name="fc1", num_hidden=10)
    net2 = mx.sym.FullyConnected(name="fc3", num_hidden=10)
    composed = net2(fc3_data=net1, name="composed")
    assert composed.name == "composed"
    assert composed.list_outputs() == ["composed_output"]
    # The call composes a copy: net2 keeps its name and its free input.
    assert net2.name == "fc3"
    assert "fc3_data" in net2.list_arguments()
    assert composed.list_arguments() == ["data", "fc1_weight", "fc1_bias", "fc3_weight", "fc3_bias"]
    net2._compose(fc3_data=net1, name="renamed")
    assert net2.name == "renamed"
    # Without a name the head keeps its own.
    again = mx.sym.FullyConnected(name="fc4", num_hidden=2)(fc4_data=data)
    assert again.name == "fc4"


# ---------------------------------------------------------------- operators
def test_rint_rounds_halves_down_as_mxnet():
    x = mx.nd.array([-1.5, 1.5, -1.9, 1.9, 2.1, 2.5, -2.5, 0.5, -0.5, 3.49])
    got = mx.nd.rint(x).asnumpy()
    # MXNet picks floor at a tie (nearer of floor and ceil otherwise).
    np.testing.assert_array_equal(got, [-2, 1, -2, 2, 2, 2, -3, 0, -1, 3])
    special = mx.nd.rint(mx.nd.array([np.inf, -np.inf, np.nan], dtype="float64")).asnumpy()
    assert special[0] == np.inf and special[1] == -np.inf and np.isnan(special[2])
    ints = mx.nd.array([-3, 4], dtype="int32")
    np.testing.assert_array_equal(mx.nd.rint(ints).asnumpy(), [-3, 4])


def test_rint_symbol_and_sparse_agree():
    x = mx.nd.array([[0, 1.5], [2.5, 0]])
    sym = mx.sym.rint(mx.sym.Variable("x")).eval(ctx=mx.cpu(), x=x)[0].asnumpy()
    np.testing.assert_array_equal(sym, [[0, 1], [2, 0]])
    csr = mx.nd.rint(x.tostype("csr"))
    np.testing.assert_array_equal(csr.asnumpy(), [[0, 1], [2, 0]])


def test_cast_to_uint8_wraps_like_mxnet():
    got = mx.nd.cast(mx.nd.array([300, 11.1, 10.9, -1, -3]), dtype="uint8")
    assert got.dtype == np.uint8
    np.testing.assert_array_equal(got.asnumpy(), [44, 11, 10, 255, 253])


def test_cast_to_int8_wraps_and_astype_agrees():
    x = mx.nd.array([200, -129, 127.9, -128.5, 1000])
    want = np.array([200, -129, 127, -128, 1000], dtype=np.int64).astype(np.int8)
    np.testing.assert_array_equal(mx.nd.Cast(x, dtype="int8").asnumpy(), want)
    np.testing.assert_array_equal(x.astype("int8").asnumpy(), want)
    np.testing.assert_array_equal(x.astype("uint8").asnumpy(), want.astype(np.uint8))


def test_cast_values_beyond_32_bits_and_nan_give_zero_for_bytes():
    x = mx.nd.array([3e9, -3e9, np.nan, 255.0], dtype="float64")
    np.testing.assert_array_equal(x.astype("uint8").asnumpy(), [0, 0, 0, 255])
    np.testing.assert_array_equal(x.astype("int8").asnumpy(), [0, 0, 0, -1])


def test_cast_to_wider_integers_still_saturates():
    x = mx.nd.array([1e10, -1e10, np.nan])
    np.testing.assert_array_equal(x.astype("int32").asnumpy(), [2**31 - 1, -2**31, 0])


def test_cast_float16_rounds_to_nearest():
    # MXNet's documentation shows 11.09375 (from an older truncating conversion); its
    # float16 conversion rounds to nearest, as numpy does.
    got = mx.nd.cast(mx.nd.array([1e20, 11.1]), dtype="float16").asnumpy()
    assert got.dtype == np.float16
    np.testing.assert_array_equal(got, np.array([np.inf, 11.1015625], np.float16))


def test_cast_gradient_goes_back_to_the_input_dtype():
    x = mx.nd.array([1.0, 300.0])
    x.attach_grad()
    with mx.autograd.record():
        y = mx.nd.cast(x, dtype="uint8")
    y.backward(mx.nd.array([2, 3], dtype="uint8"))
    assert x.grad.dtype == np.float32
    np.testing.assert_array_equal(x.grad.asnumpy(), [2, 3])


# ---------------------------------------------------------------- Gluon and optimizer names
def test_hybridblock_infer_type_sets_parameter_dtypes():
    net = mx.gluon.nn.HybridSequential()
    net.add(mx.gluon.nn.Dense(3, in_units=4), mx.gluon.nn.BatchNorm(in_channels=3))
    net.cast("float64")
    net.infer_type(mx.nd.ones((2, 4), dtype="float64"))
    dtypes = {p.name.split("_", 1)[1]: np.dtype(p.dtype) for p in net.collect_params().values()}
    assert set(dtypes.values()) == {np.dtype(np.float64)}
    assert "weight" in dtypes and "running_mean" in dtypes
    with pytest.raises(mx.base.MXNetError):
        net.infer_type(mx.nd.ones((2, 4), dtype="float16"))


def test_parameterdict_load_dict_takes_nd_load_output_and_pairs():
    src = mx.gluon.nn.Dense(2, in_units=3, prefix="d_")
    src.initialize(mx.init.Normal())
    saved = {"arg:" + k: v.data() for k, v in src.collect_params().items()}
    dst = mx.gluon.nn.Dense(2, in_units=3, prefix="d_")
    dst.collect_params().load_dict(saved, ctx=mx.cpu())
    for k, v in src.collect_params().items():
        np.testing.assert_array_equal(dst.collect_params()[k].data().asnumpy(), v.data().asnumpy())
    # A list of pairs and a restore prefix, as MXNet's accepts.
    other = mx.gluon.nn.Dense(2, in_units=3, prefix="net_d_")
    other.collect_params().load_dict([(k, v.data()) for k, v in src.collect_params().items()], ctx=mx.cpu(),
                                      restore_prefix="net_")
    np.testing.assert_array_equal(other.weight.data().asnumpy(), src.weight.data().asnumpy())
    with pytest.raises(ValueError, match="is missing in param_dict"):
        mx.gluon.nn.Dense(2, in_units=3, prefix="d_").collect_params().load_dict({"d_weight": src.weight.data()})
    with pytest.raises(ValueError, match="loaded from param_dict is not present in ParameterDict"):
        dst.collect_params().load_dict(dict(saved, **{"arg:extra": mx.nd.ones(1)}))
    dst.collect_params().load_dict(dict(saved, **{"arg:extra": mx.nd.ones(1)}), ignore_extra=True)


def test_optimizer_set_lr_scale_is_deprecated():
    with pytest.raises(DeprecationWarning):
        mx.optimizer.SGD().set_lr_scale({"w": 2.0})


def test_nd_exports_the_dtype_tables_and_indexing_helpers():
    assert mx.nd._DTYPE_NP_TO_MX[np.float32] == 0 and mx.nd._DTYPE_NP_TO_MX[np.int64] == 6
    assert mx.nd._DTYPE_MX_TO_NP[4] is np.int32
    # An array's dtype, a numpy dtype object and a dtype's name look up as the scalar type.
    for dt, code in (("float32", 0), ("float16", 2), ("uint8", 3), ("int64", 6)):
        x = mx.nd.zeros((2,), dtype=dt)
        assert mx.nd._DTYPE_NP_TO_MX[x.dtype] == code and x.dtype in mx.nd._DTYPE_NP_TO_MX
        assert mx.nd._DTYPE_NP_TO_MX[dt] == code and mx.nd._DTYPE_NP_TO_MX.get(np.dtype(dt)) == code
        assert mx.nd._DTYPE_NP_TO_MX[x.asnumpy().dtype] == code
    assert mx.nd._DTYPE_NP_TO_MX[None] == -1
    assert mx.nd._DTYPE_NP_TO_MX.get(np.complex64) is None and np.complex64 not in mx.nd._DTYPE_NP_TO_MX
    with pytest.raises(KeyError):
        mx.nd._DTYPE_NP_TO_MX["complex64"]
    assert mx.nd._GRAD_REQ_MAP == {"null": 0, "write": 1, "add": 3}
    # indexing_key_expand_implicit_axes: the expanded key (as its docstring shows it) and,
    # as MXNet's code returns it, the 0-d boolean code (-1: none).
    shape = (3, 4, 5)
    expand = mx.nd.indexing_key_expand_implicit_axes
    assert expand(np.s_[2, 1, 1], shape) == ((2, 1, 1), -1)
    assert expand(np.s_[0], shape) == ((0, slice(None), slice(None)), -1)
    assert expand(np.s_[0, ...], shape) == ((0, slice(None), slice(None)), -1)
    assert expand(np.s_[:2, None, 0, ...], shape) == ((slice(None, 2), None, 0, slice(None)), -1)
    assert mx.nd.get_oshape_of_gather_nd_op((2, 3, 4), (2, 5)) == (5, 4)


def test_symbol_scalar_attributes_keep_the_numbers_text():
    # MXNet writes str(scalar) into the graph: `a * 2` saves "scalar": "2" (debug_str shows
    # scalar=2), `a * 2.5` saves "2.5".
    a = mx.sym.Variable("a")
    cases = [(a * 2, "_mul_scalar", "2"), (a * 2.5, "_mul_scalar", "2.5"), (2 - a, "_rminus_scalar", "2"),
             (a / 4, "_div_scalar", "4"), (a ** 2, "_power_scalar", "2"), (-a, "_mul_scalar", "-1.0"),
             (a + True, "_plus_scalar", "1.0")]
    for sym, op, text in cases:
        node = json.loads(sym.tojson())["nodes"][-1]
        assert (node["op"], node["attrs"]["scalar"]) == (op, text)
    assert "scalar=2\n" in (a * 2).debug_str()
    out = ((2 - a) / 4).eval(ctx=mx.cpu(), a=mx.nd.array([1, 3]))[0]
    np.testing.assert_allclose(out.asnumpy(), [0.25, -0.25])
    ints = (mx.sym.Variable("i") * 3).eval(ctx=mx.cpu(), i=mx.nd.array([2, 5], dtype="int32"))[0]
    assert ints.dtype == np.int32
    np.testing.assert_array_equal(ints.asnumpy(), [6, 15])


def test_symbol_group_repr_lists_node_names():
    a, b = mx.sym.Variable("a"), mx.sym.Variable("b")
    c = mx.sym.elemwise_add(a, b, name="c")
    assert repr(mx.sym.Group([a, c])) == "<Symbol group [a, c]>"
    assert repr(c.get_internals()) == "<Symbol group [a, b, c]>"
    assert repr(mx.sym.split(a, num_outputs=2, name="s")) == "<Symbol group [s, s]>"
    assert repr(c) == "<Symbol c>"


def test_errors_are_runtime_errors_as_mxnets():
    # MXNet's MXNetError derives from RuntimeError; code catching RuntimeError around a
    # failing bind or operator call must catch Weft's errors too.
    assert issubclass(mx.base.MXNetError, RuntimeError)
    x = mx.sym.Variable("x")
    y = mx.sym.FullyConnected(x, num_hidden=4, name="fc")
    with pytest.raises(RuntimeError, match="Shape inconsistent"):
        y.simple_bind(mx.cpu(), x=(5, 4), fc_weight=(3, 3))
    with pytest.raises(RuntimeError):
        mx.nd.dot(mx.nd.ones((2, 3)), mx.nd.ones((2, 3))).wait_to_read()
    # ... and keeps the built-in kinds numpy-minded code relies on.
    with pytest.raises(ValueError):
        mx.nd.dot(mx.nd.ones((2, 3)), mx.nd.ones((2, 3))).wait_to_read()
