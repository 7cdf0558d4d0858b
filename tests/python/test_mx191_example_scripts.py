"""Behaviours that MXNet 1.9.1's example scripts (its example/ folder) rely on, found by
running those scripts under Weft; each test checks its behaviour against values computed
here."""
import ctypes
import json

import numpy as np
import pytest

import weft as mx
from weft import nd


def _ops(text):
    return [n["op"] for n in json.loads(text)["nodes"]]


def _half_precision_net():
    data, w = mx.sym.var("data"), mx.sym.var("w")
    fc = mx.sym.FullyConnected(mx.sym.amp_cast(data, dtype="float16", name="data_half"),
                               mx.sym.amp_cast(w, dtype="float16", name="w_half"),
                               num_hidden=3, no_bias=True, name="fc")
    return mx.sym.amp_cast(fc, dtype="float32", name="fc_single")


def test_symbol_save_and_tojson_leave_out_amp_casts_unless_asked(tmp_path):
    # MXNet's Symbol.save/tojson(remove_amp_cast=True): the mixed-precision casts are left
    # out by default; scripts pass remove_amp_cast=False to keep them.
    net = _half_precision_net()
    assert _ops(net.tojson()) == ["null", "null", "FullyConnected"]
    assert _ops(net.tojson(remove_amp_cast=False)) == ["null", "amp_cast", "null", "amp_cast", "FullyConnected",
                                                       "amp_cast"]
    net.save(str(tmp_path / "plain.json"))
    net.save(str(tmp_path / "cast.json"), remove_amp_cast=False)
    plain, cast = mx.sym.load(str(tmp_path / "plain.json")), mx.sym.load(str(tmp_path / "cast.json"))
    assert _ops(plain.tojson(remove_amp_cast=False)) == ["null", "null", "FullyConnected"]
    assert _ops(cast.tojson(remove_amp_cast=False)).count("amp_cast") == 3

    rng = np.random.RandomState(0)
    x, w = rng.rand(2, 5) + 1 / 3, rng.rand(3, 5) + 1 / 7
    single = plain.eval(data=nd.array(x), w=nd.array(w))[0]
    np.testing.assert_allclose(single.asnumpy(), x @ w.T, rtol=1e-6)
    half = cast.eval(data=nd.array(x), w=nd.array(w))[0]
    assert half.dtype == np.float32
    x16, w16 = x.astype(np.float16).astype(np.float64), w.astype(np.float16).astype(np.float64)
    np.testing.assert_allclose(half.asnumpy(), x16 @ w16.T, rtol=2e-3)
    assert np.abs(half.asnumpy() - single.asnumpy()).max() > 1e-4


def test_checkpoints_and_exports_keep_amp_casts_only_when_asked(tmp_path):
    net = _half_precision_net()
    w = nd.array(np.ones((3, 5)))
    mx.model.save_checkpoint(str(tmp_path / "a"), 0, net, {"w": w}, {})
    mx.model.save_checkpoint(str(tmp_path / "b"), 0, net, {"w": w}, {}, remove_amp_cast=False)
    assert "amp_cast" not in _ops((tmp_path / "a-symbol.json").read_text())
    assert _ops((tmp_path / "b-symbol.json").read_text()).count("amp_cast") == 3


def test_symbol_without_casts_saves_the_same_either_way(tmp_path):
    net = mx.sym.FullyConnected(mx.sym.var("data"), num_hidden=2, name="fc")
    assert net.tojson() == net.tojson(remove_amp_cast=False)
    net.save(str(tmp_path / "a.json"))
    net.save(str(tmp_path / "b.json"), remove_amp_cast=False)
    assert (tmp_path / "a.json").read_text() == (tmp_path / "b.json").read_text()


def test_base_lib_imports_and_says_which_mxnet_functions_weft_lacks():
    # Scripts written for MXNet import _LIB beside check_call (example/quantization,
    # example/ssd), often without calling it.
    from weft.base import _LIB, check_call  # pylint: disable=unused-import
    major, minor, patch, abi = (ctypes.c_int() for _ in range(4))
    _LIB.weft_get_version(ctypes.byref(major), ctypes.byref(minor), ctypes.byref(patch), ctypes.byref(abi))
    assert "%d.%d.%d" % (major.value, minor.value, patch.value) == mx.base._library_version()
    assert not hasattr(_LIB, "MXSymbolSaveToFile")
    with pytest.raises(AttributeError, match=r"_LIB\.MXNDArrayCreate: .*MXNet's C API.*weft_\*"):
        _LIB.MXNDArrayCreate  # pylint: disable=pointless-statement


class _AffineTwo(mx.operator.CustomOp):
    """out0 = data * w + b (broadcast over rows), out1 = data.sum(axis=1); gradient of out0."""

    def forward(self, is_train, req, in_data, out_data, aux):
        x, w, b = in_data
        self.assign(out_data[0], req[0], x * w.reshape((1, -1)) + b.reshape((1, -1)))
        self.assign(out_data[1], req[1], x.sum(axis=1))

    def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
        x, w, _ = in_data
        g = out_grad[0]
        self.assign(in_grad[0], req[0], g * w.reshape((1, -1)))
        self.assign(in_grad[1], req[1], (g * x).sum(axis=0))
        self.assign(in_grad[2], req[2], g.sum(axis=0))


@mx.operator.register("t_affine_two")
class _AffineTwoProp(mx.operator.CustomOpProp):
    seen_types = []

    def __init__(self):
        super().__init__(need_top_grad=True)

    def list_arguments(self):
        return ["data", "weight", "bias"]

    def list_outputs(self):
        return ["scaled", "total"]

    def infer_shape(self, in_shape):
        n = in_shape[0][1]
        return [in_shape[0], [n], [n]], [in_shape[0], [in_shape[0][0]]], []

    def infer_type(self, in_type):
        # As MXNet's example/restricted-boltzmann-machine: the parameters take the data's
        # dtype, which nothing else in the graph gives them.
        _AffineTwoProp.seen_types.append(list(in_type))
        t = in_type[0]
        return [t, t, t], [t, t], []

    def create_operator(self, ctx, in_shapes, in_dtypes):
        return _AffineTwo()


def test_custom_op_infer_type_types_parameters_from_the_data():
    _AffineTwoProp.seen_types.clear()
    net = mx.sym.Custom(mx.sym.var("data"), mx.sym.var("aff_weight"), mx.sym.var("aff_bias"), op_type="t_affine_two",
                        name="aff")
    args, outs, aux = net.infer_type(data="float64")
    assert args == [np.float64] * 3 and outs == [np.float64] * 2 and aux == []
    # Asked as MXNet asks: numpy types, None for the dtypes not known yet.
    assert [np.float64, None, None] in _AffineTwoProp.seen_types
    # A Module binds it from the data's dtype alone and trains it.
    mod = mx.mod.Module(mx.sym.MakeLoss(mx.sym.sum(net[0])), data_names=["data"], label_names=None)
    mod.bind(data_shapes=[mx.io.DataDesc("data", (2, 3), np.float64)])
    mod.init_params(mx.init.Constant(0.5))
    x = np.arange(6, dtype=np.float64).reshape(2, 3)
    mod.forward(mx.io.DataBatch([nd.array(x, dtype=np.float64)]), is_train=True)
    mod.backward()
    assert mod.get_outputs()[0].dtype == np.float64
    # Initializers give a "bias" zeros, whatever their pattern (MXNet's rule).
    np.testing.assert_allclose(mod.get_outputs()[0].asnumpy(), (x * 0.5).sum())
    grads = dict(zip(mod._exec_group.param_names, mod._exec_group.grad_arrays))
    np.testing.assert_allclose(grads["aff_weight"][0].asnumpy(), x.sum(axis=0))
    np.testing.assert_allclose(grads["aff_bias"][0].asnumpy(), [2, 2, 2])


def test_custom_op_infer_type_unknown_data_stays_unknown():
    net = mx.sym.Custom(mx.sym.var("data"), mx.sym.var("w"), mx.sym.var("b"), op_type="t_affine_two")
    assert net.infer_type() == (None, None, None)
    # The weight's dtype alone is given to infer_type, which types everything from the data
    # (still unknown): nothing is decided yet, and nothing fails.
    assert net.infer_type_partial(w="float32")[0][0] is None


class _TwoOutputs(mx.gluon.HybridBlock):
    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        with self.name_scope():
            self.w = self.params.get("w", shape=(3,), init=mx.init.Constant(2.0))
            self.b = self.params.get("b", shape=(3,), init=mx.init.Constant(1.0))

    def hybrid_forward(self, F, x, w, b):
        return F.Custom(x, w, b, op_type="t_affine_two")


@pytest.mark.parametrize("hybridize", [False, True])
def test_block_returning_a_multi_output_symbol_gives_a_list(hybridize):
    # MXNet's blocks return one array per output of a multi-output Symbol (a Custom
    # operator's): example/restricted-boltzmann-machine's hybridized block calls out[0].backward().
    net = _TwoOutputs()
    net.initialize()
    if hybridize:
        net.hybridize()
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    with mx.autograd.record():
        out = net(nd.array(x))
    assert isinstance(out, list) and len(out) == 2
    np.testing.assert_allclose(out[0].asnumpy(), x * 2 + 1)
    np.testing.assert_allclose(out[1].asnumpy(), x.sum(axis=1))
    out[0].backward()
    np.testing.assert_allclose(net.w.grad().asnumpy(), x.sum(axis=0))
    np.testing.assert_allclose(net.b.grad().asnumpy(), [2, 2, 2])


def test_hybridized_block_returning_a_group_and_an_array():
    class Net(mx.gluon.HybridBlock):
        def hybrid_forward(self, F, x):
            return [F.Group([x + 1, x * 3]), F.sum(x)]

    net = Net()
    net.hybridize()
    x = np.array([[1.0, 2.0]], np.float32)
    pair, total = net(nd.array(x))
    np.testing.assert_allclose(pair[0].asnumpy(), x + 1)
    np.testing.assert_allclose(pair[1].asnumpy(), x * 3)
    np.testing.assert_allclose(total.asnumpy(), [3.0])


def test_quantization_star_import_gives_what_mxnets_gives():
    # MXNet's contrib.quantization has no __all__, so its star import brings the names it
    # imports: example/quantization/imagenet_gen_qsym.py calls cpu() after it.
    scope = {}
    exec("from weft.contrib.quantization import *", scope)  # pylint: disable=exec-used
    assert scope["cpu"]() == mx.cpu()
    for name in ("quantize_model", "quantize_model_mkldnn", "Module", "NDArray", "Symbol", "DataBatch", "nd_save",
                 "nd_load", "sym_load"):
        assert name in scope, name
    assert scope["nd_load"] is mx.nd.load and scope["Module"] is mx.mod.Module


def test_image_record_iter_takes_mxnets_chunk_shuffle_parameters(tmp_path):
    import io as _io
    from PIL import Image
    rec_path = str(tmp_path / "x.rec")
    rec = mx.recordio.MXRecordIO(rec_path, "w")
    rng = np.random.RandomState(1)
    pixels = [rng.randint(0, 256, (8, 8, 3)).astype(np.uint8) for _ in range(4)]
    for i, p in enumerate(pixels):
        buf = _io.BytesIO()
        Image.fromarray(p).save(buf, format="PNG")
        rec.write(mx.recordio.pack(mx.recordio.IRHeader(0, float(i), i, 0), buf.getvalue()))
    rec.close()
    common = dict(path_imgrec=rec_path, data_shape=(3, 8, 8), batch_size=4, preprocess_threads=1)
    plain = mx.io.ImageRecordIter(**common).next()
    chunked = mx.io.ImageRecordIter(shuffle_chunk_seed=3, shuffle_chunk_size=64, verbose=False, **common).next()
    np.testing.assert_array_equal(chunked.label[0].asnumpy(), [0, 1, 2, 3])
    np.testing.assert_array_equal(chunked.data[0].asnumpy(), plain.data[0].asnumpy())
    np.testing.assert_array_equal(chunked.data[0].asnumpy(), np.stack(pixels).transpose(0, 3, 1, 2))
    with pytest.raises(mx.base.MXNetError, match="shuffle_chunk_size"):
        mx.io.ImageRecordIter(shuffle_chunk_size=-1, **common)


def test_symbol_operators_name_their_nodes_as_mxnet():
    # MXNet's names come from its internal functions (_Plus, _MulScalar, ...): example/ssd
    # picks a ResNet's feature layers by them ('_plus12').
    a, b = mx.sym.var("a"), mx.sym.var("b")
    with mx.name.NameManager():
        got = [(a + b).name, (a - b).name, (a * b).name, (a / b).name, (a + 1).name, (1 - a).name, (a * 2).name,
               (2 / a).name, (a ** 2).name, (a == b).name, (a > 1).name, (a + b).name]
    assert got == ["_plus0", "_minus0", "_mul0", "_div0", "_plusscalar0", "_rminusscalar0", "_mulscalar0",
                   "_rdivscalar0", "_powerscalar0", "_equal0", "_greater_scalar0", "_plus1"]
    with mx.name.Prefix("blk_"):
        s = a * b + 3
    assert s.name == "blk__plusscalar0"
    assert s.get_internals().list_outputs() == ["a", "b", "blk__mul0_output", "blk__plusscalar0_output"]
    x, y = np.array([1.0, 2.0], np.float32), np.array([3.0, 5.0], np.float32)
    np.testing.assert_allclose(s.eval(a=nd.array(x), b=nd.array(y))[0].asnumpy(), x * y + 3)


def test_data_iter_subclass_defining_getdata_only_gives_unlabelled_batches():
    # example/vae-gan's RandIter: iter_next and getdata only; MXNet's DataIter gives None for
    # the label and the padding.
    class Noise(mx.io.DataIter):
        def __init__(self):
            super().__init__(batch_size=2)
            self.count = 0

        def iter_next(self):
            self.count += 1
            return self.count <= 2

        def getdata(self):
            return [nd.full((2, 3), self.count)]

    batches = list(Noise())
    assert len(batches) == 2
    assert [b.label for b in batches] == [None, None] and batches[0].pad is None
    np.testing.assert_array_equal(batches[1].data[0].asnumpy(), np.full((2, 3), 2.0))
