"""MXNet 1.9.1's argument names and base-class interfaces that Weft's Python API lacked
(found by comparing the parameters of every public function and method of MXNet 1.9.1's
python/mxnet with Weft's): NDArrayIter(layout=), SymbolBlock.imports(allow_missing=,
ignore_extra=), nd.arange(infer_range=), nd.from_dlpack(dlpack=), sym.Group(create_fn=),
InternalError(msg=) and BaseModule's abstract methods."""
import warnings

import numpy as np
import pytest

import weft as mx
from weft import gluon, nd


# ---------------------------------------------------------------- NDArrayIter(layout=)
def test_ndarray_iter_batches_along_the_layouts_batch_axis():
    T, N, C = 5, 7, 3
    data = np.arange(T * N * C, dtype=np.float32).reshape(T, N, C)
    label = np.arange(N, dtype=np.float32)
    it = mx.io.NDArrayIter(data, label, batch_size=3, layout="TNC", last_batch_handle="pad")
    assert it.provide_data[0].shape == (T, 3, C) and it.provide_data[0].layout == "TNC"
    assert it.provide_label[0].shape == (3,)  # a 1-D label is batched along its only axis
    batches = list(it)
    assert len(batches) == 3 and [b.pad for b in batches] == [0, 0, 2]
    np.testing.assert_array_equal(batches[1].data[0].asnumpy(), data[:, 3:6])
    np.testing.assert_array_equal(batches[2].data[0].asnumpy(), np.concatenate([data[:, 6:], data[:, :2]], axis=1))
    np.testing.assert_array_equal(batches[2].label[0].asnumpy(), [6, 0, 1])


def test_ndarray_iter_layout_roll_over_and_shuffle():
    data = np.arange(2 * 5, dtype=np.float32).reshape(2, 5)  # 5 samples along axis 1
    it = mx.io.NDArrayIter(data, batch_size=2, layout="CN", last_batch_handle="roll_over")
    first = [b.data[0].asnumpy() for b in it]
    assert len(first) == 2
    it.reset()
    carried = next(iter(it))
    assert carried.pad == 1
    np.testing.assert_array_equal(carried.data[0].asnumpy(), np.concatenate([data[:, 4:], data[:, :1]], axis=1))
    np.random.seed(3)
    shuffled = mx.io.NDArrayIter(data, batch_size=5, layout="CN", shuffle=True)
    got = next(iter(shuffled)).data[0].asnumpy()
    assert sorted(got[0].tolist()) == data[0].tolist()
    np.testing.assert_array_equal(got[1], got[0] + 5)  # columns stay whole


def test_ndarray_iter_layout_errors():
    with pytest.raises(ValueError, match="layout must name the batch axis.*'CHW'"):
        mx.io.NDArrayIter(np.zeros((4, 2)), layout="CHW")
    with pytest.raises(ValueError, match="batch axis at 2.*shape \\(4, 2\\)"):
        mx.io.NDArrayIter(np.zeros((4, 2)), layout="TCN")


# ---------------------------------------------------------------- SymbolBlock.imports
def _exported(tmp_path, extra=False, drop_last_bias=False):
    net = gluon.nn.HybridSequential()
    net.add(gluon.nn.Dense(3, in_units=4), gluon.nn.Dense(2, in_units=3))
    net.initialize()
    net.hybridize()
    x = nd.ones((1, 4))
    want = net(x).asnumpy()
    prefix = str(tmp_path / "net")
    net.export(prefix)
    params = nd.load(prefix + "-0000.params")
    if extra:
        params["arg:unused_weight"] = nd.ones((2,))
    if drop_last_bias:
        del params[sorted(k for k in params if k.endswith("_bias"))[-1]]
    nd.save(prefix + "-0000.params", params)
    return prefix, x, want


def test_symbol_block_imports_refuses_extra_parameters_unless_ignored(tmp_path):
    prefix, x, want = _exported(tmp_path, extra=True)
    with pytest.raises(Exception, match="unused_weight"):
        gluon.SymbolBlock.imports(prefix + "-symbol.json", ["data"], prefix + "-0000.params")
    block = gluon.SymbolBlock.imports(prefix + "-symbol.json", ["data"], prefix + "-0000.params", ignore_extra=True)
    np.testing.assert_allclose(block(x).asnumpy(), want, rtol=1e-6)


def test_symbol_block_imports_allow_missing(tmp_path):
    prefix, x, _ = _exported(tmp_path, drop_last_bias=True)
    with pytest.raises(Exception, match="bias"):
        gluon.SymbolBlock.imports(prefix + "-symbol.json", ["data"], prefix + "-0000.params")
    block = gluon.SymbolBlock.imports(prefix + "-symbol.json", "data", prefix + "-0000.params", allow_missing=True)
    missing = [p for p in block.collect_params().values() if p._data is None]
    assert len(missing) == 1 and missing[0].name.endswith("_bias")
    missing[0].initialize()
    assert block(x).shape == (1, 2)


# ---------------------------------------------------------------- ndarray and symbol
def test_arange_infer_range_is_deprecated_and_ignored():
    with pytest.warns(DeprecationWarning, match="infer_range"):
        a = nd.arange(2, 8, 2, infer_range=False)
    np.testing.assert_array_equal(a.asnumpy(), [2, 4, 6])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        nd.arange(3)


def test_from_dlpack_takes_mxnets_argument_name():
    a = nd.array([[1, 2], [3, 4]])
    b = nd.from_dlpack(dlpack=nd.to_dlpack_for_read(a))
    np.testing.assert_array_equal(b.asnumpy(), a.asnumpy())


def test_group_create_fn():
    class Tagged(mx.sym.Symbol):
        pass

    g = mx.sym.Group([mx.sym.var("a"), mx.sym.var("b") * 2], create_fn=Tagged)
    assert type(g) is Tagged and len(g.list_outputs()) == 2
    assert type(mx.sym.Group([mx.sym.var("a")])) is mx.sym.Symbol


def test_internal_error_takes_msg():
    e = mx.base.InternalError(msg="broken")
    assert str(e).startswith("broken") and "internal error" in str(e)
    assert isinstance(e, mx.base.MXNetError)


# ---------------------------------------------------------------- BaseModule
class _Half(mx.mod.BaseModule):
    """A user's module that implements nothing yet."""


@pytest.mark.parametrize("prop", ["data_names", "output_names", "data_shapes", "label_shapes", "output_shapes"])
def test_base_module_abstract_properties(prop):
    with pytest.raises(NotImplementedError, match="_Half does not implement " + prop):
        getattr(_Half(), prop)


@pytest.mark.parametrize("call", [
    lambda m: m.bind([("data", (1, 2))]), lambda m: m.init_params(), lambda m: m.init_optimizer(),
    lambda m: m.forward(None), lambda m: m.backward(), lambda m: m.get_outputs(), lambda m: m.get_input_grads(),
    lambda m: m.update(), lambda m: m.update_metric(mx.metric.Accuracy(), []), lambda m: m.get_params()])
def test_base_module_abstract_methods(call):
    with pytest.raises(NotImplementedError, match="_Half does not implement"):
        call(_Half())


def test_base_module_states_default_to_none():
    m = _Half()
    with pytest.raises(Exception, match="bind"):
        m.get_states(merge_multi_context=False)
    m.binded = m.params_initialized = True
    assert m.get_states(merge_multi_context=False) == []
    m.set_states()
    with pytest.raises(AssertionError):
        m.set_states(value=1)


def test_python_loss_module_inherits_the_empty_states():
    mod = mx.mod.PythonLossModule()
    mod.bind([("data", (2, 3))], [("softmax_label", (2,))])
    mod.init_params()
    assert mod.get_states(merge_multi_context=False) == []


def test_bucketing_module_checkpoint_keeps_amp_casts_by_default(tmp_path):
    # MXNet's BucketingModule.save_checkpoint has remove_amp_cast=False (Module's is True).
    def sym_gen(key):
        x = mx.sym.amp_cast(mx.sym.var("data"), dtype="float16")
        y = mx.sym.FullyConnected(mx.sym.amp_cast(x, dtype="float32"), num_hidden=2, name="fc")
        return mx.sym.SoftmaxOutput(y, name="softmax"), ("data",), ("softmax_label",)

    mod = mx.mod.BucketingModule(sym_gen, default_bucket_key=3)
    mod.bind([("data", (2, 3))], [("softmax_label", (2,))])
    mod.init_params()
    mod.save_checkpoint(str(tmp_path / "b"), 1)
    assert "amp_cast" in (tmp_path / "b-3-symbol.json").read_text()
    mod.save_checkpoint(str(tmp_path / "c"), 1, remove_amp_cast=True)
    assert "amp_cast" not in (tmp_path / "c-3-symbol.json").read_text()


# ---------------------------------------------------------------- fluent methods
FLUENT_CASES = [("sum", {"axis": 1}), ("mean", {}), ("max", {"axis": 0}), ("argsort", {}), ("topk", {"k": 1}),
                ("clip", {"a_min": 1, "a_max": 3}), ("transpose", {}), ("one_hot", {"depth": 5}),
                ("slice_axis", {"axis": 1, "begin": 0, "end": 1}), ("tile", {"reps": (1, 2)}), ("flip", {"axis": 0}),
                ("softmax", {}), ("norm", {}), ("square", {}), ("rsqrt", {}), ("split", {"num_outputs": 2})]


@pytest.mark.parametrize("name,kwargs", FLUENT_CASES)
def test_fluent_methods_are_class_methods_that_call_the_operator(name, kwargs):
    a = nd.array([[1.0, 4.0], [3.0, 2.0]])
    assert name in vars(mx.nd.NDArray) and name in vars(mx.sym.Symbol)
    got, want = getattr(a, name)(**kwargs), getattr(nd, name)(a, **kwargs)
    got, want = (got, want) if isinstance(got, list) else ([got], [want])
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g.asnumpy(), w.asnumpy())
    x = mx.sym.var("x")
    out = getattr(x, name)(**kwargs)
    bound = out.bind(mx.cpu(), {"x": a})
    for g, w in zip(bound.forward(), want):
        np.testing.assert_array_equal(g.asnumpy(), w.asnumpy())


def test_every_mxnet_fluent_method_is_on_both_classes():
    from weft.ndarray._ops import FLUENT_METHODS
    for cls in (mx.nd.NDArray, mx.sym.Symbol):
        missing = [n for n in FLUENT_METHODS if not callable(getattr(cls, n, None))]
        assert not missing, (cls, missing)
    assert "operator sum" in mx.nd.NDArray.sum.__doc__


def test_sparse_arrays_inherit_the_fluent_methods():
    c = nd.array([[1, 0], [0, 2]]).tostype("csr")
    assert c.sum().asscalar() == 3 and c.square().tostype("default").asnumpy().tolist() == [[1, 0], [0, 4]]


@pytest.mark.parametrize("method", ["asnumpy", "asscalar", "wait_to_read", "detach", "backward", "as_in_context"])
def test_symbol_refuses_value_methods_by_name(method):
    with pytest.raises(mx.base.NotImplementedForSymbol, match="Function %s is not implemented for Symbol" % method):
        getattr(mx.sym.var("x"), method)()


def test_mx_data_iter_debug_skip_load_repeats_the_last_batch(tmp_path):
    rows = np.arange(12, dtype=np.float32).reshape(6, 2)
    np.savetxt(str(tmp_path / "d.csv"), rows, delimiter=",")
    it = mx.io.CSVIter(data_csv=str(tmp_path / "d.csv"), data_shape=(2,), batch_size=2)
    assert len(list(it)) == 3
    it.reset()
    first = it.next().data[0].asnumpy()
    it.debug_skip_load()
    for _ in range(5):  # past the epoch's end: the same batch, never StopIteration
        np.testing.assert_array_equal(it.next().data[0].asnumpy(), first)
    np.testing.assert_array_equal(first, rows[:2])
