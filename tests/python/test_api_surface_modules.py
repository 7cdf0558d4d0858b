"""MXNet 1.9.1's smaller modules: mx.log, mx.registry, mx.engine, mx.error, mx.libinfo,
mx.misc, mx.kvstore.kvstore_server, mx.io.utils, mx.util.get_cuda_compute_capability and
mx.optimizer.NDabs, by behaviour."""
import json
import logging
import os
import re

import numpy as np
import pytest

import weft as mx
from weft import libinfo, misc  # not imported by the package, as in MXNet


# ---------------------------------------------------------------- log
def test_get_logger_formats_like_mxnet(capsys):
    logger = mx.log.get_logger("weft_test_api_surface", level=mx.log.INFO)
    assert logger is mx.log.get_logger("weft_test_api_surface")
    assert len(logger.handlers) == 1  # a second call adds no second handler
    logger.info("hello %d", 3)
    logger.debug("hidden")
    err = capsys.readouterr().err
    assert re.search(r"\x1b\[32mI\d{4} \d\d:\d\d:\d\d %d .*test_api_surface_modules\.py:"
                     r"test_get_logger_formats_like_mxnet:\d+\]\x1b\[0m hello 3" % os.getpid(), err), err
    assert "hidden" not in err
    logger.warning("careful")
    assert capsys.readouterr().err.startswith("\x1b[31mW")


def test_get_logger_to_file_and_deprecated_name(tmp_path):
    path = tmp_path / "log.txt"
    logger = mx.log.get_logger("weft_test_api_file", filename=str(path), filemode="w", level=mx.log.DEBUG)
    logger.debug("to the file")
    for h in logger.handlers:
        h.flush()
    assert "to the file" in path.read_text()
    with pytest.warns(DeprecationWarning, match="get_logger"):
        assert mx.log.getLogger("weft_test_api_file") is logger
    assert mx.log.get_logger() is logging.getLogger()


# ---------------------------------------------------------------- registry
def test_registry_register_alias_create():
    class Base:
        def __init__(self, value=0):
            self.value = value

    class Thing(Base):
        pass

    register = mx.registry.get_register_func(Base, "thing")
    alias = mx.registry.get_alias_func(Base, "thing")
    create = mx.registry.get_create_func(Base, "thing")
    register(Thing)
    alias("other", "THIRD")(Thing)
    assert set(mx.registry.get_registry(Base)) == {"thing", "other", "third"}
    assert create("Thing", 3).value == 3
    assert create("third", value=4).value == 4
    assert create(thing="other").value == 0
    assert create('["thing", {"value": 5}]').value == 5
    assert create('{"thing": "other", "value": 6}').value == 6
    assert create({"thing": "thing", "value": 7}).value == 7
    inst = Thing()
    assert create(inst) is inst
    with pytest.raises(ValueError, match="already an instance"):
        create(inst, 1)
    with pytest.raises(ValueError, match="not registered"):
        create("nope")
    with pytest.raises(TypeError, match="subclass of Base"):
        register(int)

    class Other(Base):
        pass

    with pytest.warns(UserWarning, match="overriding"):
        register(Other, "thing")
    assert create("thing").__class__ is Other


def test_weft_registries_are_mx_registry_tables():
    opt = mx.registry.get_create_func(mx.optimizer.Optimizer, "optimizer")("sgd", learning_rate=0.5)
    assert isinstance(opt, mx.optimizer.SGD) and opt.lr == 0.5
    init = mx.registry.get_create_func(mx.init.Initializer, "initializer")("xavier")
    assert isinstance(init, mx.init.Xavier)
    metric = mx.registry.get_create_func(mx.metric.EvalMetric, "metric")("acc")
    assert isinstance(metric, mx.metric.Accuracy)

    @mx.init.register
    class Sevens(mx.init.Initializer):
        def _init_weight(self, _, arr):
            arr[:] = 7

    assert mx.registry.get_registry(mx.init.Initializer)["sevens"] is Sevens


# ---------------------------------------------------------------- engine
def test_engine_bulk_size_is_set_and_restored():
    prev = mx.engine.set_bulk_size(12)
    try:
        assert mx.engine.set_bulk_size(12) == 12
        with mx.engine.bulk(3):
            assert mx.engine.set_bulk_size(3) == 3
            x = mx.nd.zeros((1,))
            for _ in range(10):
                x += 1
        assert x.asscalar() == 10
        assert mx.engine.set_bulk_size(12) == 12
    finally:
        mx.engine.set_bulk_size(prev)
    with pytest.raises(ValueError, match=">= 0"):
        mx.engine.set_bulk_size(-1)


# ---------------------------------------------------------------- error
def test_error_classes_follow_the_status_and_registered_names():
    with pytest.raises(mx.error.MXNetError) as info:
        mx.nd.zeros((2, 3)).reshape((7,))
    assert isinstance(info.value, ValueError)
    with pytest.raises(IndexError):
        try:
            mx.nd.zeros((2, 3)).transpose(axes=(0, 5))
        except mx.error.MXNetError as e:
            assert isinstance(e, mx.error.MXNetError)
            raise
    # MXNet's names map to MXNetError subclasses that are also the built-in class.
    for name, builtin in [("ValueError", ValueError), ("TypeError", TypeError), ("IndexError", IndexError),
                          ("AttributeError", AttributeError), ("NotImplementedError", NotImplementedError)]:
        e = mx.base.error(mx.base.ERR_RUNTIME, "%s: from an extension" % name)
        assert isinstance(e, builtin) and isinstance(e, mx.error.MXNetError), name
    internal = mx.base.error(mx.base.ERR_INTERNAL, "invariant broken")
    assert isinstance(internal, mx.error.InternalError) and "please report" in str(internal)

    @mx.error.register
    class MyExtensionError(mx.error.MXNetError):
        pass

    assert isinstance(mx.base.error(mx.base.ERR_RUNTIME, "MyExtensionError: bad\nmore"), MyExtensionError)
    assert isinstance(mx.base.error(mx.base.ERR_RUNTIME, "mxnet.error.MyExtensionError: bad"), MyExtensionError)
    mx.error.register("Renamed", ValueError)
    plain = mx.base.error(mx.base.ERR_RUNTIME, "Renamed: x")
    assert type(plain) is ValueError
    # a message naming an unregistered class keeps the status's class
    assert type(mx.base.error(mx.base.ERR_SHAPE, "Convolution: bad")) is mx.base.WeftShapeError


# ---------------------------------------------------------------- libinfo, misc
def test_libinfo_finds_the_library_and_headers():
    libs = libinfo.find_lib_path()
    assert libs and all(os.path.isfile(p) for p in libs)
    assert os.path.basename(libs[0]).startswith("libweft.so")
    with pytest.raises(RuntimeError, match="Cannot find"):
        libinfo.find_lib_path("libnot_a_library")
    assert libinfo.__version__ == mx.__version__
    try:
        inc = libinfo.find_include_path()
    except RuntimeError as e:
        assert "weft/c_api.h" in str(e)
    else:
        assert os.path.isfile(os.path.join(inc, "weft", "c_api.h"))


def test_misc_factor_scheduler():
    sched = misc.FactorScheduler(step=3, factor=0.5)
    sched.base_lr = 0.8
    assert [sched(i) for i in range(8)] == [0.8 * 0.5 ** (i // 3) for i in range(8)]
    with pytest.raises(ValueError):
        misc.FactorScheduler(step=0)
    with pytest.raises(ValueError):
        misc.FactorScheduler(step=2, factor=1.0)
    with pytest.raises(NotImplementedError):
        misc.LearningRateScheduler()(0)


# ---------------------------------------------------------------- kvstore, io, util, optimizer leftovers
def test_module_paths_and_leftovers():
    from weft.kvstore import kvstore_server
    assert kvstore_server.KVStoreServer is mx.kv.KVStoreServer
    from weft.kvstore import base as kv_base
    assert isinstance(kv_base.create("local"), mx.kv.KVStore)
    assert mx.optimizer.NDabs is mx.nd.abs and mx.optimizer.optimizer.NDabs is mx.nd.abs
    with pytest.raises(ValueError, match="gpu context"):
        mx.util.get_cuda_compute_capability(mx.cpu())
    if mx.util.get_gpu_count() == 0:
        with pytest.raises((OSError, RuntimeError)):
            mx.util.get_cuda_compute_capability(mx.gpu(0))
    else:
        assert mx.util.get_cuda_compute_capability(mx.gpu(0)) >= 30


def test_io_utils_helpers():
    from weft.io import utils
    data = utils._init_data([np.arange(6).reshape(3, 2), np.ones((3, 1))], allow_empty=False, default_name="data")
    assert [k for k, _ in data] == ["_0_data", "_1_data"]
    assert utils._has_instance(data, mx.nd.NDArray)
    assert not utils._has_instance(data, mx.nd.sparse.CSRNDArray)
    shuffled = utils._getdata_by_idx(data, np.array([2, 0, 1]))
    np.testing.assert_array_equal(shuffled[0][1].asnumpy(), np.arange(6).reshape(3, 2)[[2, 0, 1]])
    part = utils._slice_along_batch_axis(mx.nd.arange(12).reshape((3, 4)), slice(1, 3), 1)
    np.testing.assert_array_equal(part.asnumpy(), np.arange(12).reshape(3, 4)[:, 1:3])


# ---------------------------------------------------------------- autograd.get_symbol
def test_autograd_get_symbol_rebuilds_the_recorded_graph():
    rs = np.random.RandomState(0)
    xv = rs.uniform(-1, 1, (3, 4)).astype(np.float32)
    wv = rs.uniform(-1, 1, (2, 4)).astype(np.float32)
    x, w = mx.nd.array(xv), mx.nd.array(wv)
    x.attach_grad()
    w.attach_grad()
    const = mx.nd.array(np.full((3, 2), 0.5, np.float32))  # read without a history: a variable too
    with mx.autograd.record():
        y = mx.nd.tanh(mx.nd.FullyConnected(x * 2 + 1, w, no_bias=True, num_hidden=2)) * const
    sym = mx.autograd.get_symbol(y)
    assert isinstance(sym, mx.sym.Symbol)
    args = sym.list_arguments()
    assert args == ["var0", "var1", "var2"]
    ops = [n["op"] for n in json.loads(sym.tojson())["nodes"] if n["op"] != "null"]
    assert ops == ["_mul_scalar", "_plus_scalar", "FullyConnected", "tanh", "elemwise_mul"]
    # the walk meets x, then w, then the constant
    exe = sym.bind(mx.cpu(), {"var0": x.copy(), "var1": w.copy(), "var2": const},
                   args_grad={"var0": mx.nd.zeros((3, 4)), "var1": mx.nd.zeros((2, 4)), "var2": mx.nd.zeros((3, 2))})
    np.testing.assert_allclose(exe.forward(is_train=True)[0].asnumpy(), y.asnumpy(), rtol=1e-6)
    y.backward()
    exe.backward(mx.nd.ones((3, 2)))
    np.testing.assert_allclose(exe.grad_dict["var0"].asnumpy(), x.grad.asnumpy(), rtol=1e-5)
    np.testing.assert_allclose(exe.grad_dict["var1"].asnumpy(), w.grad.asnumpy(), rtol=1e-5)
    assert mx.sym.load_json(sym.tojson()).list_arguments() == args


def test_autograd_get_symbol_errors():
    with pytest.raises(mx.base.MXNetError, match="no recorded history"):
        mx.autograd.get_symbol(mx.nd.ones((2,)))

    class Twice(mx.autograd.Function):
        def forward(self, x):
            return x * 2

        def backward(self, dy):
            return dy * 2

    x = mx.nd.ones((2,))
    x.attach_grad()
    with mx.autograd.record():
        y = Twice()(x) + 1
    with pytest.raises(NotImplementedError, match="custom function"):
        mx.autograd.get_symbol(y)


def test_util_numpy_ufunc_wrappers():
    assert mx.util.np_ufunc_legal_option("casting", "unsafe")
    assert not mx.util.np_ufunc_legal_option("casting", "wild")
    assert mx.util.np_ufunc_legal_option("dtype", np.float16) and mx.util.np_ufunc_legal_option("dtype", "int64")
    assert not mx.util.np_ufunc_legal_option("dtype", "complex64")
    assert mx.util.np_ufunc_legal_option("subok", False) and not mx.util.np_ufunc_legal_option("subok", 1)
    assert not mx.util.np_ufunc_legal_option("axis", 0)

    @mx.util.wrap_np_unary_func
    def neg(x, out=None):
        return -x

    @mx.util.wrap_np_binary_func
    def plus(x1, x2, out=None):
        return x1 + x2

    assert neg(2, casting="same_kind", where=True) == -2
    assert plus(2, 3, order="K", dtype=None) == 5
    with pytest.raises(NotImplementedError, match="casting=unsafe"):
        neg(1, casting="unsafe")
    with pytest.raises(TypeError, match="not understood"):
        plus(1, 2, casting="wild")
    with pytest.raises(TypeError, match="invalid keyword"):
        neg(1, axis=0)
