"""MXNet 1.9's small public modules under `import weft as mx`: base, util, runtime, the
cpu_shared context, nd.random.randn, kv.KVStoreBase and gluon.utils.download."""
import collections
import hashlib
import http.server
import os
import threading
import warnings

import numpy as np
import pytest

import weft as mx
from weft import nd


# ---------------------------------------------------------------- base
def test_base_names():
    from weft import base
    assert base.py_str(b"caf\xc3\xa9") == "caf\u00e9" and base.py_str("x") == "x"
    with pytest.raises(TypeError, match="expected bytes or str"):
        base.py_str(3)
    a = nd.ones((2,))
    s = mx.sym.var("x")
    assert isinstance(a.handle, base.NDArrayHandle) and isinstance(s.handle, base.SymbolHandle)
    assert isinstance(mx.kv.create("local").handle, base.KVStoreHandle)
    assert base.string_types == (str,) and isinstance(np.float32(1), base.numeric_types)
    assert isinstance(np.int64(3), base.integer_types) and not isinstance(1.5, base.integer_types)
    assert base.mx_real_t is np.float32
    assert base._Null is not None and not base._Null and repr(base._Null) == "_Null"
    assert base._as_list([1]) == [1] and base._as_list((1,)) == [(1,)]
    assert base.c_str("ab").value == b"ab"
    assert list(base.c_array(__import__("ctypes").c_int64, [3, 4])) == [3, 4]
    err = base.NotImplementedForSymbol(base.py_str, "asnumpy")
    assert isinstance(err, NotImplementedError)
    assert str(err) == ('Function py_str (namely operator "asnumpy") is not implemented for Symbol '
                        'and only available in NDArray.')


def test_data_dir_follows_mxnet_home(monkeypatch, tmp_path):
    from weft import base
    monkeypatch.delenv("MXNET_HOME", raising=False)
    assert base.data_dir() == os.path.join(os.path.expanduser("~"), ".mxnet") == base.data_dir_default()
    monkeypatch.setenv("MXNET_HOME", str(tmp_path))
    assert base.data_dir() == str(tmp_path)


# ---------------------------------------------------------------- util
def test_np_shape_switches_and_scopes():
    assert not mx.util.is_np_shape() and not mx.is_np_shape()
    assert mx.util.set_np_shape(True) is False
    assert mx.util.is_np_shape()
    assert mx.util.set_np_shape(False) is True
    with mx.np_shape(True):
        assert mx.is_np_shape()
        with mx.util.np_shape(False):
            assert not mx.is_np_shape()
        assert mx.is_np_shape()
    assert not mx.is_np_shape()

    @mx.use_np_shape
    def inside():
        return mx.is_np_shape()

    @mx.util.use_np_shape
    class Probe(object):
        def method(self):
            return mx.is_np_shape()

        @property
        def prop(self):
            return mx.is_np_shape()

        @staticmethod
        def static():
            return mx.is_np_shape()

    assert inside() and Probe().method() and Probe().prop and Probe.static()
    assert not mx.is_np_shape()
    with pytest.raises(TypeError, match="expected a class or a callable"):
        mx.use_np_shape(3)


def test_np_shape_changes_symbol_shape_inference():
    y = mx.sym.sin(mx.sym.var("data"))
    # Legacy: 0 is unknown, and an unknown shape reads ().
    args, outs, _ = y.infer_shape_partial()
    assert args == [()] and outs == [()]
    args, outs, _ = y.infer_shape_partial(data=(0, 2, 3))
    assert args == [(0, 2, 3)] and outs == [(0, 2, 3)]
    assert y.infer_shape(data=(0, 2))[0] is None
    with mx.np_shape(True):
        # NumPy semantics: 0 is a zero-size dim, -1 and None are unknown.
        args, outs, _ = y.infer_shape(data=(0, 2, 3))
        assert args == [(0, 2, 3)] and outs == [(0, 2, 3)]
        args, outs, _ = y.infer_shape_partial(data=(-1, 2, 3))
        assert args == [(-1, 2, 3)] and outs == [(-1, 2, 3)]
        args, outs, _ = y.infer_shape_partial()
        assert args == [None] and outs == [None]


def test_np_array_scope_and_set_np():
    assert not mx.is_np_array()
    with mx.np_array(True):
        assert mx.util.is_np_array()
        # Weft has no mx.np yet: arrays made in the scope are still nd.NDArrays.
        assert type(nd.ones((1,))) is nd.NDArray
    assert not mx.is_np_array()

    @mx.use_np
    def both():
        return mx.is_np_shape(), mx.is_np_array()

    assert both() == (True, True)
    try:
        mx.util.set_np()
        assert mx.is_np_shape() and mx.is_np_array()
    finally:
        mx.util.reset_np()
    assert not mx.is_np_shape() and not mx.is_np_array()
    with pytest.raises(ValueError, match="need NumPy shape semantics"):
        mx.util.set_np(shape=False, array=True)
    with pytest.raises(NotImplementedError, match="mx.np"):
        mx.util.set_np(dtype=True)
    assert not mx.is_np_shape()


def test_set_module_getenv_setenv_and_gpus():
    @mx.util.set_module("weft.somewhere")
    def f():
        pass

    assert f.__module__ == "weft.somewhere"
    name = "WEFT_UTIL_TEST_VAR"
    mx.util.setenv(name, "42")
    assert mx.util.getenv(name) == "42" == os.environ[name]
    mx.util.setenv(name, None)
    assert mx.util.getenv(name) is None and name not in os.environ
    assert mx.util.get_gpu_count() == mx.num_gpus() == len(mx.test_utils.list_gpus())
    if mx.util.get_gpu_count() == 0:
        with pytest.raises(RuntimeError, match="no GPU is usable"):
            mx.util.get_gpu_memory(0)
    else:
        free, total = mx.util.get_gpu_memory(0)
        assert 0 < free <= total


# ---------------------------------------------------------------- runtime
def test_runtime_features_list_the_build():
    feats = mx.runtime.Features()
    assert feats is mx.runtime.Features()
    names = [f.name for f in mx.runtime.feature_list()]
    assert names[:5] == ["CUDA", "CUDNN", "NCCL", "CUDA_RTC", "TENSORRT"] and "TVM_OP" in names
    assert list(feats.keys()) == names
    for f in feats.values():
        assert isinstance(f.enabled, bool)
        assert repr(f) == ("\u2714 " if f.enabled else "\u2716 ") + f.name
    # CUDA is compiled in exactly when the library can count GPUs (it reports 0 without it).
    if mx.num_gpus() > 0:
        assert feats.is_enabled("CUDA")
    assert not feats.is_enabled("tensorrt") and not feats.is_enabled("TVM_OP")
    assert feats.is_enabled("INT64_TENSOR_SIZE") and feats.is_enabled("CXX14")
    assert feats.is_enabled("OPENMP")
    with pytest.raises(RuntimeError, match="Feature 'NOPE' is unknown"):
        feats.is_enabled("nope")


def test_runtime_features_agree_with_the_library():
    """What Features() says matches the libraries libweft really needs and the CPU."""
    import weft
    here = os.path.dirname(weft.__file__)
    lib = [n for n in os.listdir(here) if n.startswith("libweft.so")][0]
    import subprocess
    try:
        needed = subprocess.run(["readelf", "-d", os.path.join(here, lib)], capture_output=True, text=True,
                                check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("readelf is not available")
    feats = mx.runtime.Features()
    assert feats.is_enabled("MKLDNN") == ("libdnnl" in needed)
    assert feats.is_enabled("DIST_KVSTORE") == ("libzmq" in needed)
    assert feats.is_enabled("CUDA") == ("libcudart" in needed)
    assert feats.is_enabled("BLAS_OPEN") == ("libopenblas" in needed)
    assert feats.is_enabled("OPENCV") == ("opencv" in needed)
    # Code built for the build machine (-march=native) only runs where its instructions
    # exist, so a feature the build enabled is one this CPU has.
    with open("/proc/cpuinfo") as f:
        flags = next(line for line in f if line.startswith("flags")).split()
    for feat, flag in (("CPU_AVX", "avx"), ("CPU_AVX2", "avx2"), ("F16C", "f16c"), ("CPU_SSE4_2", "sse4_2")):
        if feats.is_enabled(feat):
            assert flag in flags, feat
    assert feats.is_enabled("SSE") and feats.is_enabled("CPU_SSE2")


# ---------------------------------------------------------------- cpu_shared
def test_cpu_shared_context_makes_shared_arrays():
    ctx = mx.cpu_shared(0)
    assert ctx.device_type == "cpu_shared" and ctx.device_typeid == 5 and str(ctx) == "cpu_shared(0)"
    assert mx.Context(5, 0) == ctx and mx.Context("cpu_shared") == ctx and ctx != mx.cpu(0)
    a = nd.array([[1, 2], [3, 4]], ctx=ctx)
    b = nd.ones((2, 2), ctx=ctx)
    # The arrays live in shared memory (tests/python/test_cpu_shared.py) and compute as CPU ones.
    assert a.context == ctx and (a + b).context == ctx
    np.testing.assert_array_equal((a + b).asnumpy(), [[2, 3], [4, 5]])
    with ctx:
        c = nd.zeros((3,))
    assert c.context == ctx and c.asnumpy().tolist() == [0, 0, 0]
    assert a.as_in_context(ctx) is a
    np.testing.assert_array_equal(a.as_in_context(mx.cpu()).asnumpy(), a.asnumpy())


# ---------------------------------------------------------------- randn
def test_randn_signature_and_distribution():
    mx.random.seed(7)
    x = nd.random.randn(200, 300)
    assert x.shape == (200, 300) and x.dtype == np.float32
    v = x.asnumpy()
    assert abs(v.mean()) < 0.02 and abs(v.std() - 1) < 0.02
    mx.random.seed(7)
    np.testing.assert_array_equal(mx.random.randn(200, 300).asnumpy(), v)
    y = nd.random.randn(4000, loc=3.0, scale=0.5, dtype="float64")
    assert y.dtype == np.float64 and abs(y.asnumpy().mean() - 3) < 0.05 and abs(y.asnumpy().std() - 0.5) < 0.05
    assert nd.random.randn().shape == (1,)
    out = nd.zeros((2, 3))
    nd.random.randn(2, 3, out=out)
    assert out.asnumpy().std() > 0
    with pytest.raises(TypeError, match="expected a number or an NDArray for loc"):
        nd.random.randn(2, loc="0")
    # Array parameters draw per element (_sample_normal), as MXNet's randn does.
    z = nd.random.randn(2, loc=nd.array([0.0, 100.0]), scale=nd.ones((2,)))
    assert z.shape == (2, 2) and abs(z.asnumpy()[1].mean() - 100) < 10
    with pytest.raises(TypeError, match="all be NDArrays or all numbers"):
        nd.random.randn(2, scale=nd.ones((2,)))
    with pytest.raises(TypeError, match="unexpected keyword arguments"):
        nd.random.randn(2, mean=1)


# ---------------------------------------------------------------- KVStoreBase
def test_kvstore_base_register_and_create():
    @mx.kv.KVStoreBase.register
    class SumTwice(mx.kv.KVStoreBase):
        """Doubles every pushpull: proves create() returns the registered class."""

        def pushpull(self, key, value, out=None, priority=0):
            (out if out is not None else value)[:] = value * 2

        @staticmethod
        def is_capable(capability):
            return False

        @property
        def type(self):
            return "sumtwice"

    kv = mx.kv.create("SumTwice")
    assert isinstance(kv, SumTwice) and isinstance(kv, mx.kv.KVStoreBase) and kv.type == "sumtwice"
    a = nd.array([1, 2])
    kv.pushpull(0, a)
    assert a.asnumpy().tolist() == [2, 4]
    with pytest.raises(NotImplementedError, match="SumTwice.broadcast"):
        kv.broadcast(0, a, out=a)
    with pytest.raises(NotImplementedError, match="rank"):
        kv.rank
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        mx.kv.KVStoreBase.register(SumTwice)
    assert any("replaces" in str(x.message) for x in w)
    with pytest.raises(TypeError, match="subclass of KVStoreBase"):
        mx.kv.KVStoreBase.register(int)
    # Built-in names still reach the native stores.
    assert mx.kv.create("local").type == "local"
    del mx.kv.KVStoreBase.kv_registry["sumtwice"]


def test_teststore_broadcast_and_pushpull():
    kv = mx.kv.create("teststore")
    assert isinstance(kv, mx.kv.TestStore) and kv.type == "teststore" and kv.rank == 0 and kv.num_workers == 1
    assert kv.is_capable(mx.kv.KVStoreBase.OPTIMIZER) is False
    with pytest.raises(ValueError, match="unknown capability"):
        kv.is_capable("teleport")
    outs = [nd.zeros((2,)), nd.zeros((2,))]
    kv.broadcast("w", nd.array([3, 4]), out=outs)
    assert [o.asnumpy().tolist() for o in outs] == [[3, 4], [3, 4]]
    vals = [nd.array([1, 2]), nd.array([10, 20])]
    out = nd.zeros((2,))
    kv.pushpull("g", vals, out=out)
    assert out.asnumpy().tolist() == [11, 22]
    kv.pushpull(["a", "b"], [[nd.ones((1,)), nd.ones((1,))], nd.array([5])])


# ---------------------------------------------------------------- gluon.utils.download
@pytest.fixture
def http_server(tmp_path):
    served = tmp_path / "served"
    served.mkdir()
    (served / "data.bin").write_bytes(b"weft" * 1000)
    hits = []

    class Handler(http.server.SimpleHTTPRequestHandler):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, directory=str(served), **kwargs)

        def do_GET(self):
            hits.append(self.path)
            super().do_GET()

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield "http://127.0.0.1:%d" % server.server_address[1], hits
    server.shutdown()
    server.server_close()


def test_download_checks_sha1_and_skips_good_files(http_server, tmp_path):
    from weft.gluon.utils import download, check_sha1
    base, hits = http_server
    body = b"weft" * 1000
    sha1 = hashlib.sha1(body).hexdigest()
    dest = tmp_path / "out"
    dest.mkdir()
    fname = download(base + "/data.bin", path=str(dest), sha1_hash=sha1)
    assert fname == str(dest / "data.bin") and open(fname, "rb").read() == body
    assert check_sha1(fname, sha1) and check_sha1(fname, sha1.upper()) and not check_sha1(fname, "0" * 40)
    assert len(hits) == 1
    # The right file is there: no second request.
    assert download(base + "/data.bin", path=fname, sha1_hash=sha1) == fname and len(hits) == 1
    assert download(base + "/data.bin", path=fname) == fname and len(hits) == 1
    # A file with the wrong content is fetched again; overwrite always fetches.
    open(fname, "wb").write(b"stale")
    download(base + "/data.bin", path=fname, sha1_hash=sha1)
    assert open(fname, "rb").read() == body and len(hits) == 2
    download(base + "/data.bin", path=fname, overwrite=True)
    assert len(hits) == 3
    # A hash that the served file does not have is refused, and no file is left behind.
    other = tmp_path / "other.bin"
    with pytest.raises(UserWarning, match="SHA-1"):
        download(base + "/data.bin", path=str(other), sha1_hash="1" * 40)
    assert not [n for n in os.listdir(tmp_path) if n.startswith("other.bin")]


def test_download_file_url_and_failures(tmp_path):
    from weft.gluon.utils import download
    src = tmp_path / "src.txt"
    src.write_bytes(b"hello")
    got = download("file://" + str(src), path=str(tmp_path / "copy.txt"))
    assert open(got, "rb").read() == b"hello"
    # Nothing listens on port 9 of loopback: every attempt fails and the error names the URL.
    url = "http://127.0.0.1:9/model.params"
    with pytest.raises(RuntimeError, match=r"could not download 'http://127.0.0.1:9/model.params'.*3 attempt"):
        download(url, path=str(tmp_path / "m.params"), retries=2)
    assert not os.path.exists(tmp_path / "m.params")
    with pytest.raises(RuntimeError, match="missing.bin"):
        download("file://" + str(tmp_path / "missing.bin"), path=str(tmp_path / "x"), retries=0)


def test_gluon_utils_repo_urls_and_hook_handle(monkeypatch):
    from weft.gluon import utils
    monkeypatch.delenv("MXNET_GLUON_REPO", raising=False)
    assert utils._get_repo_url() == "https://apache-mxnet.s3-accelerate.dualstack.amazonaws.com/"
    monkeypatch.setenv("MXNET_GLUON_REPO", "http://127.0.0.1:8000/mirror")
    assert utils._get_repo_file_url("gluon/models", "a.zip") == "http://127.0.0.1:8000/mirror/gluon/models/a.zip"
    assert utils._brief_print_list(range(3)) == "'0', '1', '2'"
    assert utils._brief_print_list(range(20)) == "'0', '1', '2', ..., '16', '17', '18', '19'"
    hooks = collections.OrderedDict()  # weakly referenced, as a Block's hook dicts
    hook = lambda *a: None  # noqa: E731
    with utils.HookHandle() as h:
        h.attach(hooks, hook)
        assert list(hooks.values()) == [hook]
        with pytest.raises(RuntimeError, match="already attached"):
            h.attach(hooks, hook)
    assert len(hooks) == 0
    for shape, known in (((2, 3), True), ((0, 3), False), ((), False), (None, False)):
        assert utils.shape_is_known(shape) is known
    with mx.np_shape(True):
        assert utils.shape_is_known((0, 3)) and utils.shape_is_known(()) and not utils.shape_is_known((-1, 3))


def test_operator_namespaces_hold_prefixed_operators():
    import weft as mx
    from weft.ndarray import _ops
    names = [n for info in _ops.list_ops() for n in [info.name] + info.aliases]
    for prefix, nd_ns, sym_ns in (("_contrib_", mx.nd.contrib, mx.sym.contrib),
                                  ("_linalg_", mx.nd.linalg, mx.sym.linalg),
                                  ("_image_", mx.nd.image, mx.sym.image)):
        for n in names:
            if n.startswith(prefix) and n.isidentifier():
                short = n[len(prefix):]
                assert getattr(nd_ns, short) is mx.nd._internal.__dict__[n]
                assert getattr(sym_ns, short).__name__ == n


def test_explicit_none_reaches_optional_parameters():
    """axis=None means every axis for operators whose parameter takes None (as in MXNet);
    leaving the keyword out keeps the operator's default (the last axis for sort)."""
    import numpy as np
    import weft as mx
    x = np.array([[3.0, 1.0], [0.0, 2.0]], dtype=np.float32)
    a = mx.nd.array(x)
    np.testing.assert_array_equal(mx.nd.sort(a, axis=None).asnumpy(), np.sort(x, axis=None))
    np.testing.assert_array_equal(mx.nd.sort(a).asnumpy(), np.sort(x, axis=-1))
    np.testing.assert_array_equal(mx.nd.sum(a, axis=None).asnumpy(), [x.sum()])
    s = mx.sym.sort(mx.sym.var("a"), axis=None)
    out = s.bind(mx.cpu(), {"a": a}).forward()[0]
    np.testing.assert_array_equal(out.asnumpy(), np.sort(x, axis=None))


def test_symbol_functions_take_parameters_by_position():
    import numpy as np
    import weft as mx
    x = np.array([0.1, 0.5, 0.9], dtype=np.float32)
    s = mx.sym.clip(mx.sym.var("x"), 0.2, 0.8)
    out = s.bind(mx.cpu(), {"x": mx.nd.array(x)}).forward()[0].asnumpy()
    np.testing.assert_allclose(out, np.clip(x, 0.2, 0.8))
    np.testing.assert_allclose(mx.nd.clip(mx.nd.array(x), 0.2, 0.8).asnumpy(), np.clip(x, 0.2, 0.8))
    import pytest
    with pytest.raises(TypeError, match="given by position and by keyword"):
        mx.sym.clip(mx.sym.var("x"), 0.2, a_min=0.1)
    with pytest.raises(TypeError, match="by position"):
        mx.sym.clip(mx.sym.var("x"), 0.2, 0.8, 0.9)
