"""weft.test_utils against MXNet 1.9's public helpers: names, signatures, defaults and what
`from weft.test_utils import *` brings in."""
import inspect
import math
import os

import numpy as np
import pytest

import weft as mx
from weft import nd
from weft import test_utils as tu


def test_star_import_gives_modules_and_names_as_mxnet():
    scope = {}
    exec("from weft.test_utils import *", scope)  # pylint: disable=exec-used
    assert scope["np"] is np and scope["mx"] is mx and scope["nd"] is nd
    assert scope["os"] is os and scope["math"] is math
    for name in ("assert_almost_equal", "rand_ndarray", "default_context", "set_default_context", "environment",
                 "Context", "current_context", "array", "Symbol", "use_np", "getenv", "setenv", "Features",
                 "rnd", "npt", "OrderedDict", "contextmanager", "verify_generator", "DummyIter"):
        assert name in scope, name
    assert not [n for n in scope if n.startswith("_") and n != "__builtins__"]


def test_signatures_and_defaults_follow_mxnet():
    sig = lambda f: str(inspect.signature(f))  # noqa: E731
    assert sig(tu.rand_ndarray) == ("(shape, stype='default', density=None, dtype=None, modifier_func=None, "
                                    "shuffle_csr_indices=False, distribution=None, ctx=None)")
    assert sig(tu.rand_shape_nd) == "(num_dim, dim=10, allow_zero_size=False)"
    assert sig(tu.compare_optimizer) == ("(opt1, opt2, shape, dtype, w_stype='default', g_stype='default', "
                                         "rtol=0.0001, atol=1e-05, compare_states=True, ntensors=1)")
    assert sig(tu.verify_generator) == ("(generator, buckets, probs, nsamples=1000000, nrepeat=5, "
                                        "success_rate=0.2, alpha=0.05)")
    assert sig(tu.check_speed) == "(sym, location=None, ctx=None, N=20, grad_req=None, typ='whole', **kwargs)"
    assert sig(tu.download) == "(url, fname=None, dirname=None, overwrite=False, retries=5)"
    assert tu.default_rtols()[np.dtype(np.float32)] == 1e-4 and tu.default_atols()[np.dtype(np.float16)] == 1e-1
    assert tu.default_rtols()[np.dtype(np.int32)] == 0
    assert tu.get_rtol() == 1e-5 and tu.get_atol() == 1e-20 and tu.get_rtol(0.5) == 0.5
    assert tu.get_atol(dtype=np.float32) == 1e-3
    assert tu.default_numeric_eps()[np.dtype(np.float32)] == 1.0 / 2 ** 9
    assert tu.get_etol() == 0 and tu.get_etol(0.1) == 0.1


def test_tolerances_by_dtype():
    x32, x16 = np.zeros(2, np.float32), nd.zeros((2,), dtype="float16")
    assert tu.effective_dtype(x32) == np.float32 and tu.effective_dtype(x16) == np.float16
    assert tu.get_tols(x32, x16, None, None) == (1e-2, 1e-1)
    assert tu.get_tols(x32, 1.0, None, None) == (1e-4, 1e-3)
    assert tu.get_tols(x32, x32, 0.5, {np.dtype(np.float32): 0.25}) == (0.5, 0.25)
    assert tu.get_tolerance(x32, None, tu.default_rtols()) == 1e-4


def test_default_context_follows_the_current_one():
    before = mx.current_context()
    try:
        tu.set_default_context(mx.cpu(1))
        assert tu.default_context() == mx.cpu(1) == mx.current_context()
    finally:
        tu.set_default_context(before)
    assert tu.default_context() == before


def test_random_helpers():
    np.random.seed(3)
    shapes = [tu.rand_shape_nd(3, 4) for _ in range(50)]
    assert all(len(s) == 3 and all(1 <= d <= 4 for d in s) and all(type(d) is int for d in s) for s in shapes)
    assert any(0 in tu.rand_shape_nd(4, 1, allow_zero_size=True) for _ in range(50))
    assert any(0 in tu.rand_shape_2d(1, 1, allow_zero_size=True) for _ in range(50))
    x, y = tu.rand_coord_2d(2, 4, 10, 11)
    assert 2 <= x <= 4 and 10 <= y <= 11
    r = tu.rand_ndarray((300, 40))
    assert r.dtype == np.float32 and r.context == tu.default_context()
    v = r.asnumpy()
    # Standard normal values, as MXNet's random_arrays.
    assert v.min() < 0 < v.max() and abs(v.mean()) < 0.05 and abs(v.std() - 1) < 0.05
    assert tu.rand_ndarray((2, 2), dtype="float64").dtype == np.float64
    lo_hi = tu.random_uniform_arrays((1000,), (2, 3), low=-2, high=-1)
    assert len(lo_hi) == 2 and lo_hi[1].shape == (2, 3) and -2 <= lo_hi[0].min() and lo_hi[0].max() < -1
    with pytest.raises(TypeError, match="unexpected keyword"):
        tu.random_uniform_arrays((2,), scale=3)
    pop = list(range(10))
    s = tu.random_sample(pop, 4)
    assert len(s) == 4 and len(set(s)) == 4 and set(s) <= set(pop) and pop == list(range(10))
    with pytest.raises(ValueError, match="0 <= k <= 10"):
        tu.random_sample(pop, 11)
    assert tu.random_arrays(()).shape == ()


def test_small_array_builders():
    assert tu.create_2d_tensor(3, 2).asnumpy().tolist() == [[0, 0], [1, 1], [2, 2]]
    assert tu.create_vector(4).asnumpy().tolist() == [0, 1, 2, 3]
    np.testing.assert_array_equal(tu.get_identity_mat(3).asnumpy(), np.eye(3))
    assert tu.get_identity_mat_batch(2).shape == (2, 2, 2)
    np.testing.assert_array_equal(tu.assign_each(np.array([1, 2]), lambda v: v * 3), [3, 6])
    np.testing.assert_array_equal(tu.assign_each2(np.array([1, 2]), np.array([3, 4]), lambda a, b: a - b), [-2, -2])
    a = np.arange(24.0).reshape(2, 3, 4)
    np.testing.assert_array_equal(tu.collapse_sum_like(a, (3, 1)), a.sum(axis=(0, 2)).reshape(3, 1))
    assert tu.collapse_sum_like(a, (0,)).shape == (0,)
    m = tu.new_matrix_with_real_eigvals_2d(4)
    assert np.all(np.abs(np.linalg.eigvals(m).imag) < 1e-8)
    s = tu.new_sym_matrix_with_real_eigvals_nd((2, 3, 3))
    assert s.shape == (2, 3, 3) and np.allclose(s, np.swapaxes(s, -1, -2))
    q = tu.new_orthonormal_matrix_2d(3)
    np.testing.assert_allclose(q.T @ q, np.eye(3), atol=1e-10)


def test_comparisons():
    a = np.array([1.0, np.nan, 3.0])
    tu.assert_almost_equal_ignore_nan(a, np.array([1.0, 5.0, np.nan]))
    with pytest.raises(AssertionError):
        tu.assert_almost_equal_ignore_nan(a, np.array([2.0, np.nan, 3.0]))
    x = np.zeros(100, np.float32)
    y = x.copy()
    y[:5] = 1
    tu.assert_almost_equal_with_err(x, y, etol=0.06)
    with pytest.raises(AssertionError, match="5.0000% of the elements differ"):
        tu.assert_almost_equal_with_err(x, y, etol=0.04)
    with pytest.raises(AssertionError):
        tu.assert_almost_equal_with_err(x, y)
    tu.assert_allclose(nd.array([1, 2]), np.array([1, 2], np.float32))
    tu.compare_ndarray_tuple((nd.ones((2,)), (nd.zeros((1,)),)), (np.ones(2), (np.zeros(1),)))
    with pytest.raises(AssertionError):
        tu.compare_ndarray_tuple((nd.ones((2,)),), (np.zeros(2),))
    with pytest.raises(AssertionError, match="a.shape = \\(2,\\) and b.shape = \\(3,\\)"):
        tu.checkShapes(np.zeros(2), np.zeros(3))
    base = nd.arange(6).reshape((2, 3))
    assert tu.same_array(base, base.reshape((2, 3)))
    assert not tu.same_array(base, base.copy())
    d = mx.sym.var("d")
    assert tu.same_symbol_structure(mx.sym.relu(d), mx.sym.relu(mx.sym.var("e")))
    assert not tu.same_symbol_structure(mx.sym.relu(d), mx.sym.sigmoid(d))


def test_compare_optimizer():
    tu.compare_optimizer(mx.optimizer.SGD(learning_rate=0.1, momentum=0.9), mx.optimizer.SGD(learning_rate=0.1,
                         momentum=0.9), (3, 4), np.float32)
    with pytest.raises(AssertionError):
        tu.compare_optimizer(mx.optimizer.SGD(learning_rate=0.1), mx.optimizer.SGD(learning_rate=0.2), (3, 4),
                             np.float32)


def test_simple_forward_and_check_speed():
    x = mx.sym.var("x")
    y = mx.sym.var("y")
    out = tu.simple_forward(x * 2 + y, x=np.array([1.0, 2.0]), y=np.array([10.0, 20.0]))
    np.testing.assert_allclose(out, [12.0, 24.0])
    two = tu.simple_forward(mx.sym.Group([x + 1, x - 1]), x=np.array([1.0]))
    assert [o.tolist() for o in two] == [[2.0], [0.0]]
    net = mx.sym.FullyConnected(x, num_hidden=8, name="fc")
    t = tu.check_speed(net, N=3, x=(4, 5))
    assert 0 < t < 5
    loc = {"x": np.ones((4, 5)), "fc_weight": np.ones((8, 5)), "fc_bias": np.zeros(8)}
    assert 0 < tu.check_speed(net, location=loc, N=2, typ="forward") < 5
    with pytest.raises(ValueError, match="'whole' or 'forward'"):
        tu.check_speed(net, N=1, typ="both", x=(4, 5))


def test_hybridize_consistency():
    def build(prefix):
        return mx.gluon.nn.Dense(3, in_units=4, prefix=prefix)

    data = [nd.array(np.random.uniform(size=(2, 4)))]
    tu.check_gluon_hybridize_consistency(build, data)


def test_distribution_checks():
    rng = np.random.RandomState(0)
    normal = lambda n: rng.normal(0, 1.0, size=n)  # noqa: E731
    assert tu.mean_check(normal, 0, 1.0, nsamples=100000)
    assert not tu.mean_check(lambda n: rng.normal(0.1, 1.0, size=n), 0, 1.0, nsamples=100000)
    assert tu.var_check(normal, 1.0, nsamples=100000)
    assert not tu.var_check(lambda n: rng.normal(0, 1.2, size=n), 1.0, nsamples=100000)
    buckets, probs = tu.gen_buckets_probs_with_ppf(lambda p: p * 2 - 1, 4)
    assert buckets == [(-1.0, -0.5), (-0.5, 0.0), (0.0, 0.5), (0.5, 1.0)] and probs == [0.25] * 4
    uniform = lambda n: rng.uniform(-1, 1, size=n)  # noqa: E731
    p, obs, exp = tu.chi_square_check(uniform, buckets, probs, nsamples=20000)
    assert obs.sum() == 20000 and list(exp) == [5000] * 4 and 0.0001 < p <= 1
    pvals = tu.verify_generator(uniform, buckets, probs, nsamples=20000)
    assert len(pvals) == 5
    with pytest.raises(AssertionError, match="Generator test fails"):
        tu.verify_generator(lambda n: rng.uniform(-1, 0.8, size=n), buckets, probs, nsamples=20000)
    # Discrete buckets: the values themselves.
    p, obs, _ = tu.chi_square_check(lambda n: rng.randint(0, 3, size=n), [0, 1, 2], [1 / 3.0] * 3, nsamples=30000)
    assert obs.sum() == 30000 and p > 1e-4
    # Weft's own sampler passes too.
    mx.random.seed(11)
    tu.verify_generator(lambda n: nd.random.uniform(-1, 1, shape=(n,)).asnumpy(), buckets, probs, nsamples=20000)


def test_chi_square_p_value_is_right_without_scipy():
    # Known values of the chi-square survival function.
    assert abs(tu._gamma_q(1.0, 1.0) - math.exp(-1)) < 1e-12  # dof 2, stat 2
    assert abs(tu._gamma_q(0.5, 3.841458820694124 / 2) - 0.05) < 1e-9  # dof 1
    assert abs(tu._gamma_q(5.0, 18.307038053275146 / 2) - 0.05) < 1e-9  # dof 10
    assert abs(tu._gamma_q(2.5, 0.5) - 0.9625657732472964) < 1e-9  # dof 5, stat 1 (series branch)


def test_environment_checks_the_c_runtime():
    with tu.environment({"WEFT_TU_A": "1", "WEFT_TU_B": "2"}):
        assert tu.getenv("WEFT_TU_A") == "1" and os.environ["WEFT_TU_B"] == "2"
    assert tu.getenv("WEFT_TU_A") is None
    with pytest.raises(AssertionError):
        with tu.environment("WEFT_TU_A", "1"):
            raise AssertionError("body fails")
    assert "WEFT_TU_A" not in os.environ


def test_machine_queries():
    assert list(tu.list_gpus()) == list(range(mx.num_gpus()))
    os.environ.pop("CD_JOB", None)
    assert tu.is_cd_run() is False
    with tu.environment("CD_JOB", "1"):
        assert tu.is_cd_run() is True
    assert tu.has_tvm_ops() is False and tu.is_op_runnable() is True
    assert tu.is_aarch64_run() == (os.uname().machine == "aarch64")


def test_download_helpers_without_network(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    src = tmp_path / "blob.txt"
    src.write_bytes(b"abc")
    got = tu.download("file://" + str(src), fname="copy.txt", dirname=str(tmp_path / "d"))
    assert got == str(tmp_path / "d" / "copy.txt") and open(got, "rb").read() == b"abc"
    src.write_bytes(b"changed")
    assert open(tu.download("file://" + str(src), fname="copy.txt", dirname=str(tmp_path / "d")), "rb").read() == b"abc"
    with pytest.raises(RuntimeError, match="http://127.0.0.1:9/x.bin"):
        tu.download("http://127.0.0.1:9/x.bin", retries=0)
    # get_mnist names the file it lacks (the first it needs) and where it would come from.
    with pytest.raises(RuntimeError, match="train-labels-idx1-ubyte.gz"):
        monkeypatch.setattr(tu, "_MNIST_URL", "http://127.0.0.1:9/mnist/")
        tu.get_mnist()
    assert tu.download_model("no-such-model") == (None, 0)


def test_get_mnist_reads_local_files(tmp_path, monkeypatch):
    import gzip
    import struct
    monkeypatch.chdir(tmp_path)
    rng = np.random.RandomState(0)
    for prefix, n in (("train", 5), ("t10k", 3)):
        labels = rng.randint(0, 10, size=n).astype(np.uint8)
        images = rng.randint(0, 256, size=(n, 28, 28)).astype(np.uint8)
        with gzip.open(tmp_path / ("%s-labels-idx1-ubyte.gz" % prefix), "wb") as f:
            f.write(struct.pack(">II", 2049, n) + labels.tobytes())
        with gzip.open(tmp_path / ("%s-images-idx3-ubyte.gz" % prefix), "wb") as f:
            f.write(struct.pack(">IIII", 2051, n, 28, 28) + images.tobytes())
    data = tu.get_mnist()
    assert data["train_data"].shape == (5, 1, 28, 28) and data["test_label"].shape == (3,)
    assert data["train_data"].dtype == np.float32 and 0 <= data["train_data"].min() and data["train_data"].max() <= 1


def test_dummy_iter_repeats_the_first_batch():
    it = mx.io.NDArrayIter(nd.arange(8).reshape((4, 2)), nd.arange(4), batch_size=2)
    dummy = tu.DummyIter(it)
    first = next(dummy)
    assert next(dummy) is first and dummy.batch_size == 2
    assert first.data[0].asnumpy().tolist() == [[0, 1], [2, 3]]


def test_check_numeric_gradient_on_symbols():
    x, y = mx.sym.var("x"), mx.sym.var("y")
    np.random.seed(0)
    xv, yv = np.random.uniform(0.5, 1.5, (3, 4)), np.random.uniform(0.5, 1.5, (3, 4))
    # MXNet's form: a Symbol, values in float32 by default, default eps and tolerances.
    tu.check_numeric_gradient(x * y + mx.sym.sin(x), [xv, yv])
    tu.check_numeric_gradient(mx.sym.square(x), {"x": xv}, numeric_eps=1e-3, rtol=1e-2, dtype=np.float64)
    fc = mx.sym.FullyConnected(x, num_hidden=2, name="fc")
    loc = {"x": xv, "fc_weight": np.random.uniform(-1, 1, (2, 4)), "fc_bias": np.zeros(2)}
    tu.check_numeric_gradient(fc, loc, grad_nodes=["x", "fc_weight"], rtol=1e-2, atol=1e-3)
    tu.check_numeric_gradient(fc, loc, grad_nodes={"x": "add", "fc_weight": "write", "fc_bias": "null"},
                              rtol=1e-2, atol=1e-3)
    # A wrong gradient is caught: BlockGrad's gradient is 0, its numeric derivative is not.
    with pytest.raises(AssertionError, match="NUMERICAL_x"):
        tu.check_numeric_gradient(mx.sym.BlockGrad(x) * 2, [xv])
    with pytest.raises(ValueError, match="too small"):
        tu.check_numeric_gradient(mx.sym.square(x), [xv], numeric_eps=1e-7)
    with pytest.raises(ValueError, match="lacks \\['y'\\]"):
        tu.check_numeric_gradient(x * y, {"x": xv})


def test_numeric_grad_with_an_executor():
    x = mx.sym.var("x")
    xv = np.array([[1.0, 2.0], [3.0, -1.0]])
    exe = (x * x).bind(mx.cpu(), args={"x": nd.array(xv, dtype="float64")})
    g = tu.numeric_grad(exe, {"x": xv.copy()}, eps=1e-4, dtype=np.float64)
    np.testing.assert_allclose(g["x"], 2 * xv, rtol=1e-6)


def test_check_consistency_returns_and_takes_ground_truth():
    x, y = mx.sym.var("x"), mx.sym.var("y")
    s = x * y
    ctx_list = [{"ctx": mx.cpu(), "x": (3,), "y": (3,), "type_dict": {"x": np.float64, "y": np.float64}},
                {"ctx": mx.cpu(), "x": (3,), "y": (3,), "type_dict": {"x": np.float32, "y": np.float32}}]
    args = {"x": np.array([1.0, 2.0, 3.0]), "y": np.array([4.0, 5.0, 6.0])}
    gt = tu.check_consistency(s, ctx_list, arg_params=args)
    np.testing.assert_allclose(gt[s.list_outputs()[0]], [4.0, 10.0, 18.0])
    np.testing.assert_allclose(gt["x"], args["y"])
    tu.check_consistency(s, ctx_list, arg_params=args, ground_truth={s.list_outputs()[0]: np.array([4, 10, 18.0])})
    with pytest.raises(AssertionError):
        tu.check_consistency(s, ctx_list, arg_params=args, ground_truth={"x": np.zeros(3)})
    tu.check_consistency(s, ctx_list, arg_params=args, ground_truth={"x": np.zeros(3)}, raise_on_err=False)


def test_get_im2rec_path(monkeypatch, tmp_path):
    repo = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    monkeypatch.setenv("MXNET_HOME", repo)
    assert tu.get_im2rec_path() == os.path.join(repo, "tools", "im2rec.py")
    monkeypatch.setenv("MXNET_HOME", str(tmp_path))
    with pytest.raises(IOError, match="Could not find the im2rec tool"):
        tu.get_im2rec_path()


def test_sparse_random_helpers():
    np.random.seed(5)
    c = tu.rand_ndarray((40, 50), "csr", density=0.1)
    assert c.stype == "csr" and c.shape == (40, 50) and c.dtype == np.float32
    v = c.asnumpy()
    assert (v != 0).sum() == 200 and v.min() >= 0 and v.max() < 1
    r = tu.rand_ndarray((200, 3), "row_sparse", density=0.25, dtype="float64")
    assert r.stype == "row_sparse" and r.dtype == np.float64
    assert 20 < len(r.indices.asnumpy()) < 80 and (r.asnumpy()[r.indices.asnumpy()] != 0).all()
    arr, (vals, idx) = tu.rand_sparse_ndarray((6, 2), "row_sparse", rsp_indices=np.array([1, 4]), data_init=3,
                                              modifier_func=lambda x: x * 2)
    assert idx.tolist() == [1, 4] and (vals == 6).all() and arr.asnumpy()[[1, 4]].tolist() == [[6, 6], [6, 6]]
    arr, (indptr, indices, data) = tu.rand_sparse_ndarray((8, 32), "csr", density=0.5, distribution="powerlaw")
    counts = np.diff(indptr.asnumpy())
    assert counts[0] >= 1 and counts[2] == 2 * counts[1] and counts.sum() == 128
    assert data.asnumpy().min() > 1
    with pytest.raises(ValueError, match="too low"):
        tu.rand_sparse_ndarray((8, 4), "csr", density=0.1, distribution="powerlaw")
    with pytest.raises(ValueError, match="density has to be between"):
        tu.rand_sparse_ndarray((8, 4), "csr", density=1.5)
    with pytest.raises(ValueError, match="not supported for row_sparse"):
        tu.rand_sparse_ndarray((8, 4), "row_sparse", distribution="powerlaw")
    with pytest.raises(ValueError, match="unknown storage type"):
        tu.rand_sparse_ndarray((8, 4), "coo")
    z, (zv, zi) = tu.rand_sparse_ndarray((5, 2), "row_sparse", density=0.0)
    assert z.stype == "row_sparse" and not z.asnumpy().any() and zv.size == 0
    a = tu.create_sparse_array((9, 2), "row_sparse", rsp_indices=[7, 2, 5], data_init=1.5)
    assert a.indices.asnumpy().tolist() == [2, 5, 7] and (a.data.asnumpy() == 1.5).all()
    zd = tu.create_sparse_array_zd((9, 2), "row_sparse", density=0.9)
    assert zd.indices.asnumpy().size == 0
    zd = tu.create_sparse_array_zd((9, 2), "row_sparse", density=0.9, rsp_indices=[3])
    assert zd.indices.asnumpy().tolist() == [3]
    assert tu.create_sparse_array((4, 6), "csr", density=0.5, shuffle_csr_indices=True).stype == "csr"
    with pytest.raises(AssertionError, match="Unknown storage type"):
        tu.create_sparse_array((2, 2), "coo")

    class Parts:
        indptr = np.array([0, 3, 5])
        indices = np.arange(5)
    np.random.seed(0)
    tu.shuffle_csr_column_indices(Parts)
    assert sorted(Parts.indices[:3]) == [0, 1, 2] and sorted(Parts.indices[3:]) == [3, 4]
    assert Parts.indices.tolist() != list(range(5))
    out = tu.assign_each(np.array([[1, 2], [3, 4]]), lambda x: x * 10)
    assert out.dtype == np.float64 and out.tolist() == [[10, 20], [30, 40]]
    assert tu.assign_each2(np.array([1, 2]), np.array([3, 4]), lambda x, y: x - y).tolist() == [-2, -2]


def test_compare_optimizer_sparse_gradient():
    tu.compare_optimizer(mx.optimizer.SGD(learning_rate=0.1, momentum=0.9, lazy_update=False),
                         mx.optimizer.SGD(learning_rate=0.1, momentum=0.9, lazy_update=False), (6, 3), np.float32,
                         g_stype="row_sparse")


def test_check_numeric_gradient_accepts_sparse_gradient_storage():
    x = mx.sym.var("x")
    w = mx.sym.var("w")
    sym = mx.sym.dot(x, w)
    loc = {"x": np.random.rand(3, 4), "w": np.random.rand(4, 2)}
    tu.check_numeric_gradient(sym, loc, grad_stype_dict={"w": "row_sparse"}, numeric_eps=1e-3, rtol=1e-2, atol=1e-3)
    with pytest.raises(ValueError, match="grad_stype_dict"):
        tu.check_numeric_gradient(sym, loc, grad_stype_dict={"w": "coo"})


def test_check_numeric_gradient_list_location_drops_values_beyond_the_arguments():
    # MXNet pairs a list location with the arguments by zip: a bias given to a layer built
    # without one is left out; fewer values than arguments is still an error.
    from weft.test_utils import check_numeric_gradient
    rs = np.random.RandomState(2)
    sym = mx.sym.FullyConnected(mx.sym.Variable("data"), num_hidden=2, no_bias=True, name="fc")
    x, w, b = rs.uniform(-1, 1, (3, 4)), rs.uniform(-1, 1, (2, 4)), rs.uniform(-1, 1, (2,))
    check_numeric_gradient(sym, [x, w, b], numeric_eps=1e-3, rtol=1e-2, atol=1e-3)
    with pytest.raises(ValueError, match="expected 2 values"):
        check_numeric_gradient(sym, [x])
    # A wrong analytic gradient (BlockGrad hides half of it) is still caught with the extra value.
    with pytest.raises(AssertionError):
        check_numeric_gradient(sym + mx.sym.BlockGrad(sym), [x, w, b], numeric_eps=1e-3, rtol=1e-2, atol=1e-3)
