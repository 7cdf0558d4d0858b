"""NDArray from Python: creation, dtypes, arithmetic, indexing, views, copies, files,
DLPack, pickling and errors, checked against numpy."""
import inspect
import json
import os
import pickle

import numpy as np
import pytest

import weft as mx
from weft import nd
from weft.test_utils import assert_almost_equal, same

DATA = os.path.join(os.path.dirname(__file__), "..", "data", "mxnet")
DTYPES = [np.float32, np.float64, np.float16, np.uint8, np.int8, np.int32, np.int64, np.bool_]


def test_readme_example():
    assert same((mx.nd.ones((2, 3)) * 2).asnumpy(), np.full((2, 3), 2, np.float32))


def test_version_and_context():
    assert mx.__version__.count(".") == 2
    a = nd.zeros((2, 3))
    assert a.context == mx.cpu(0) and a.ctx == mx.cpu()
    assert str(mx.gpu(1)) == "gpu(1)"
    assert mx.num_gpus() >= 0
    with mx.Context("cpu", 0):
        assert mx.current_context() == mx.cpu(0)


@pytest.mark.parametrize("dtype", DTYPES)
def test_array_round_trip_every_dtype(dtype):
    rng = np.random.RandomState(0)
    src = (rng.uniform(-50, 50, size=(3, 4, 5))).astype(dtype)
    a = nd.array(src, dtype=dtype)
    assert a.dtype == np.dtype(dtype)
    assert a.shape == (3, 4, 5) and a.size == 60 and a.ndim == 3
    assert same(a.asnumpy(), src)
    assert same(np.asarray(a), src)


def test_creation_functions():
    assert same(nd.zeros((2, 3), dtype="int32").asnumpy(), np.zeros((2, 3), np.int32))
    assert same(nd.ones(4).asnumpy(), np.ones(4, np.float32))
    assert same(nd.full((2, 2), 7.5).asnumpy(), np.full((2, 2), 7.5, np.float32))
    assert same(nd.arange(0, 10, 2).asnumpy(), np.arange(0, 10, 2, dtype=np.float32))
    assert same(nd.arange(3, repeat=2).asnumpy(), np.array([0, 0, 1, 1, 2, 2], np.float32))
    assert nd.empty((0, 3)).shape == (0, 3)
    assert nd.array([[1, 2], [3, 4]]).dtype == np.float32
    # MXNet's rule: float32 unless the source is an NDArray or a dtype is given.
    assert nd.array(np.arange(3, dtype=np.int64)).dtype == np.float32
    assert nd.array(np.arange(3.0)).dtype == np.float32
    assert nd.array(np.arange(3, dtype=np.int64), dtype="int64").dtype == np.int64
    assert nd.array(nd.array([1, 2], dtype="int32")).dtype == np.int32


def test_zero_size_arrays():
    # MXNet's legacy shape mode reads a 0 as an unknown size: zeros, ones and full refuse it
    # there, and make zero-size arrays (and scalars) under numpy shape semantics.
    for make in (lambda s: nd.zeros(s), lambda s: nd.ones(s), lambda s: nd.full(s, 2)):
        for shape in ((0, 4), ()):
            with pytest.raises(mx.base.MXNetError, match="legacy shape mode reads as unknown"):
                make(shape)
            with mx.util.np_shape():
                assert make(shape).shape == shape
    with pytest.raises(mx.base.MXNetError, match="reps=.* has a zero entry"):
        nd.tile(nd.ones((2, 2)), (1, 0))
    with mx.util.np_shape():
        assert nd.tile(nd.ones((2, 2)), (1, 0)).shape == (2, 0)
        a = nd.zeros((0, 4))
    assert a.asnumpy().shape == (0, 4)
    assert (a + 1).shape == (0, 4)
    assert nd.sum(a, axis=0).asnumpy().tolist() == [0, 0, 0, 0]


BINARY = [("+", np.add), ("-", np.subtract), ("*", np.multiply), ("/", np.divide), ("**", np.power)]


@pytest.mark.parametrize("op,ref", BINARY)
@pytest.mark.parametrize("lshape,rshape", [((3, 4), (3, 4)), ((3, 4), (1, 4)), ((2, 1, 5), (3, 1)),
                                           ((1,), (4, 2)), ((4, 0), (1, 0))])
def test_arithmetic_with_broadcasting(op, ref, lshape, rshape):
    rng = np.random.RandomState(1)
    x = rng.uniform(0.5, 2, size=lshape).astype(np.float32)
    y = rng.uniform(0.5, 2, size=rshape).astype(np.float32)
    got = eval("a %s b" % op, {"a": nd.array(x), "b": nd.array(y)})
    assert_almost_equal(got, ref(x, y), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("op,ref", BINARY + [("%", np.mod)])
def test_arithmetic_with_scalars_both_sides(op, ref):
    x = np.array([[0.5, 1.5, 2.5], [3.0, 4.5, 6.0]], np.float32)
    a = nd.array(x)
    assert_almost_equal(eval("a %s 2.0" % op, {"a": a}), ref(x, np.float32(2.0)), rtol=1e-6)
    assert_almost_equal(eval("3.0 %s a" % op, {"a": a}), ref(np.float32(3.0), x), rtol=1e-6)
    assert_almost_equal(eval("a %s np.float64(2)" % op, {"a": a, "np": np}), ref(x, np.float32(2)), rtol=1e-6)
    assert_almost_equal(eval("a %s np.int64(2)" % op, {"a": a, "np": np}), ref(x, np.float32(2)), rtol=1e-6)


def test_integer_arithmetic_keeps_dtype():
    a = nd.array(np.array([7, -7, 9], np.int32), dtype=np.int32)
    assert (a + 1).dtype == np.int32
    assert same((a * 3).asnumpy(), np.array([21, -21, 27], np.int32))


def test_comparisons_return_arrays():
    x = np.array([1, 2, 3, 4], np.float32)
    a = nd.array(x)
    b = nd.array(x[::-1].copy())
    for op, ref in [("==", np.equal), ("!=", np.not_equal), ("<", np.less), ("<=", np.less_equal),
                    (">", np.greater), (">=", np.greater_equal)]:
        assert same(eval("a %s b" % op, {"a": a, "b": b}), ref(x, x[::-1]).astype(np.float32))
        assert same(eval("a %s 2" % op, {"a": a}), ref(x, 2).astype(np.float32))
    assert (a == None) is False  # noqa: E711


def test_in_place_operators_write_into_the_same_array():
    a = nd.ones((2, 2))
    h = a.handle
    a += 2
    a *= nd.full((2, 2), 3)
    a -= 1
    a /= 2
    assert a.handle == h
    assert same(a.asnumpy(), np.full((2, 2), 4, np.float32))


def test_unary_operators_and_conversions():
    a = nd.array([-1.5, 2.0])
    assert same((-a).asnumpy(), np.array([1.5, -2.0], np.float32))
    assert same(abs(a).asnumpy(), np.array([1.5, 2.0], np.float32))
    s = nd.array([3.25])
    assert float(s) == 3.25 and int(s) == 3 and s.asscalar() == np.float32(3.25)
    assert bool(nd.array([1])) and not bool(nd.array([0]))
    with pytest.raises(ValueError, match="ambiguous"):
        bool(nd.ones(2))
    with pytest.raises(ValueError, match="1 element"):
        nd.ones(2).asscalar()


def test_indexing_views_share_memory():
    x = np.arange(24, dtype=np.float32).reshape(4, 6)
    a = nd.array(x)
    row = a[1]
    assert same(row.asnumpy(), x[1])
    rows = a[1:3]
    assert same(rows.asnumpy(), x[1:3])
    rows[:] = 0  # a view: writes reach the parent
    x[1:3] = 0
    assert same(a.asnumpy(), x)
    assert same(a[-1].asnumpy(), x[-1])
    vec = nd.arange(5)
    assert vec[2].shape == (1,) and vec[2].asscalar() == 2
    with pytest.raises(IndexError):
        a[4]


def test_general_indexing_matches_numpy():
    x = np.arange(60, dtype=np.float32).reshape(3, 4, 5)
    a = nd.array(x)
    for key in [(1, slice(None), 2), (slice(None, None, 2), 1), (Ellipsis, 3), (slice(1, None), slice(None, 2), -1),
                (slice(None, None, -1),), (2, 3, 4)]:
        want = x[key]
        got = a[key].asnumpy()
        assert got.reshape(want.shape if want.ndim else (1,)).tolist() == (want if want.ndim else want.reshape(1)).tolist(), key
    idx = nd.array([2, 0], dtype="int64")
    assert same(a[idx].asnumpy(), x[[2, 0]])
    assert same(a[[0, 2]].asnumpy(), x[[0, 2]])


def test_slice_assignment():
    x = np.zeros((3, 4), np.float32)
    a = nd.array(x)
    a[0] = 5
    x[0] = 5
    a[1:3] = nd.array(np.arange(4, dtype=np.float32))  # broadcast over the rows
    x[1:3] = np.arange(4)
    a[:, 1] = -1  # a multi-axis key
    x[:, 1] = -1
    a[2] = np.array([9, 8, 7, 6])
    x[2] = [9, 8, 7, 6]
    assert same(a.asnumpy(), x)
    a[:] = 1.5
    assert same(a.asnumpy(), np.full((3, 4), 1.5, np.float32))


def test_reshape_codes():
    a = nd.arange(24).reshape((2, 3, 4))
    assert a.reshape(-1).shape == (24,)
    assert a.reshape((0, -1)).shape == (2, 12)
    assert a.reshape((-2,)).shape == (2, 3, 4)
    assert a.reshape((-3, 4)).shape == (6, 4)
    assert a.reshape((-4, 1, 2, -2)).shape == (1, 2, 3, 4)
    assert a.reshape((6, 0), reverse=True).shape == (6, 4)
    b = a.reshape(4, 6)
    assert same(b.asnumpy(), np.arange(24, dtype=np.float32).reshape(4, 6))
    with pytest.raises(mx.MXNetError):
        a.reshape((5, -1))


def test_copies_casts_and_contexts():
    a = nd.array([1.7, -2.2, 3.5])
    b = a.copy()
    b += 1
    assert same(a.asnumpy(), np.array([1.7, -2.2, 3.5], np.float32))
    assert a.astype("int32").dtype == np.int32
    assert same(a.astype(np.int32).asnumpy(), np.array([1, -2, 3], np.int32))
    assert a.astype(np.float32, copy=False) is a
    c = nd.zeros(3)
    a.copyto(c)
    assert same(c.asnumpy(), a.asnumpy())
    assert a.as_in_context(mx.cpu()) is a
    assert a.copyto(mx.cpu()).context == mx.cpu()
    t = nd.array([[1, 2, 3]]).T
    assert t.shape == (3, 1)


def test_operator_methods():
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    a = nd.array(x)
    assert_almost_equal(a.sum(axis=1), x.sum(axis=1))
    assert_almost_equal(a.mean(), x.mean().reshape(1))
    assert same(a.transpose().asnumpy(), x.T)
    with pytest.raises(AttributeError):
        a.no_such_method()


def test_generated_operators_have_signatures_and_docs():
    sig = inspect.signature(nd.sum)
    assert list(sig.parameters)[0] == "data"
    assert "axis" in sig.parameters and "keepdims" in sig.parameters and "out" in sig.parameters
    assert "axis" in nd.sum.__doc__
    assert "*data" in str(inspect.signature(nd.concat))
    assert nd._internal._plus_scalar is not None
    out = nd.zeros((2, 2))
    r = nd.broadcast_add(nd.ones((2, 2)), nd.ones((1, 2)), out=out)
    assert r is out and same(out.asnumpy(), np.full((2, 2), 2, np.float32))
    assert same(nd.concat(nd.ones((1, 2)), nd.zeros((1, 2)), dim=0).asnumpy(), np.array([[1, 1], [0, 0]], np.float32))


def test_errors_carry_the_core_message():
    with pytest.raises(mx.base.WeftError) as e:
        nd.broadcast_add(nd.ones((2, 3)), nd.ones((4, 5)))
    assert "(2,3)" in str(e.value).replace(" ", "") and "(4,5)" in str(e.value).replace(" ", "")
    assert mx.MXNetError is mx.base.WeftError
    with pytest.raises(mx.MXNetError, match="axis"):
        nd.sum(nd.ones((2, 2)), axis=5)
    with pytest.raises(mx.MXNetError, match="keepdims"):
        nd.sum(nd.ones((2, 2)), keepdims="maybe")
    with pytest.raises(mx.MXNetError, match="no_such_param"):
        nd.sum(nd.ones((2, 2)), no_such_param=1)
    with pytest.raises(TypeError, match="NDArray"):
        nd.sum(np.ones(3))
    with pytest.raises(TypeError):
        nd.array([1, 2], dtype="complex64")


def test_save_load_round_trip(tmp_path):
    rng = np.random.RandomState(3)
    data = {"arg:w": nd.array(rng.randn(3, 4).astype(np.float32)),
            "aux:i": nd.array(np.array([1, -2, 2 ** 40], np.int64)),
            "h": nd.array(np.array([1.5, -2], np.float16)),
            "e": nd.array(np.zeros((2, 0), np.float32))}
    path = str(tmp_path / "x.params")
    nd.save(path, data)
    back = nd.load(path)
    assert sorted(back) == sorted(data)
    for k in data:
        assert back[k].dtype == data[k].dtype and same(back[k].asnumpy(), data[k].asnumpy())
    nd.save(path, [data["arg:w"], data["aux:i"]])
    lst = nd.load(path)
    assert isinstance(lst, list) and len(lst) == 2
    assert same(lst[0].asnumpy(), data["arg:w"].asnumpy())
    # The same bytes through memory, and saving what was loaded gives the same file.
    buf = nd.save_tobuffer([data["arg:w"], data["aux:i"]])
    assert buf == open(path, "rb").read()
    assert same(nd.load_frombuffer(buf)[1].asnumpy(), data["aux:i"].asnumpy())


def _expected(name):
    with open(os.path.join(DATA, "synthetic", "expected.json")) as f:
        return json.load(f)[name]


def test_mxnet_fixtures_load_bit_exactly(tmp_path):
    exp = _expected("dense_dict_v2.params")
    got = nd.load(os.path.join(DATA, "synthetic", "dense_dict_v2.params"))
    assert sorted(got) == sorted(exp)
    for k, e in exp.items():
        assert np.dtype(got[k].dtype).name == e["dtype"] and list(got[k].shape) == e["shape"], k
        assert same(got[k].asnumpy(), np.array(e["values"], dtype=e["dtype"]).reshape(e["shape"])), k
    # Weft writes these files byte for byte as MXNet's layout has them.
    path = str(tmp_path / "again.params")
    nd.save(path, got)
    again = nd.load(path)
    for k in exp:
        assert same(again[k].asnumpy(), got[k].asnumpy())
    lst = nd.load(os.path.join(DATA, "synthetic", "dense_list_v2.params"))
    for arr, e in zip(lst, _expected("dense_list_v2.params")):
        assert same(arr.asnumpy(), np.array(e["values"], dtype=e["dtype"]))
    legacy = nd.load(os.path.join(DATA, "upstream", "legacy_ndarray.v0"))
    assert len(legacy) == 6
    for arr in legacy:
        assert same(arr.asnumpy(), np.arange(128, dtype=np.float32))


def test_raw_bytes_and_pickle():
    with open(os.path.join(DATA, "synthetic", "raw_single_v2.nd"), "rb") as f:
        raw = f.read()
    a = nd.ndarray._from_raw_bytes(raw)
    assert same(a.asnumpy(), np.array([[1, 2, 3]], np.float32))
    b = pickle.loads(pickle.dumps(nd.array(np.arange(6).reshape(2, 3), dtype=np.int32)))
    assert b.dtype == np.int32 and same(b.asnumpy(), np.arange(6).reshape(2, 3))


def test_corrupt_files_are_clear_errors(tmp_path):
    good = open(os.path.join(DATA, "synthetic", "dense_dict_v2.params"), "rb").read()
    for cut in [0, 7, 20, len(good) // 2, len(good) - 1]:
        p = tmp_path / ("cut%d.params" % cut)
        p.write_bytes(good[:cut])
        with pytest.raises(mx.MXNetError) as e:
            nd.load(str(p))
        assert str(p) in str(e.value)
    bad = bytearray(good)
    bad[0] ^= 0xFF
    with pytest.raises(mx.MXNetError, match="magic|header"):
        nd.load_frombuffer(bytes(bad))
    with pytest.raises(mx.MXNetError):
        nd.load(str(tmp_path / "missing.params"))
    with pytest.raises(TypeError):
        nd.save(str(tmp_path / "x"), {1: nd.ones(1)})


def test_dlpack_round_trips_share_memory():
    a = nd.array(np.arange(6, dtype=np.float32).reshape(2, 3))
    x = np.from_dlpack(a)
    assert same(x, np.arange(6).reshape(2, 3))
    b = nd.from_dlpack(np.arange(4, dtype=np.int64))
    assert b.dtype == np.int64 and same(b.asnumpy(), np.arange(4))
    c = nd.from_dlpack(a.to_dlpack_for_read())
    c[:] = 9
    # The imported array has its own engine variable: its writes are awaited through it.
    c.wait_to_read()
    assert same(a.asnumpy(), np.full((2, 3), 9, np.float32))
    torch = pytest.importorskip("torch")
    t = torch.utils.dlpack.from_dlpack(a.to_dlpack_for_write())
    t += 1
    assert same(a.asnumpy(), np.full((2, 3), 10, np.float32))
    d = nd.from_dlpack(torch.arange(5, dtype=torch.float64))
    assert same(d.asnumpy(), np.arange(5, dtype=np.float64))
    with pytest.raises(mx.MXNetError, match="contiguous|stride"):
        nd.from_dlpack(torch.arange(10, dtype=torch.float32)[::2])


def test_waitall_and_wait_to_read():
    a = nd.ones((100, 100))
    for _ in range(10):
        a = a + 1
    a.wait_to_read()
    nd.waitall()
    mx.waitall()
    assert a.asnumpy()[0, 0] == 11


def test_an_error_is_raised_by_the_wait_that_sees_it_first_and_not_again_by_waitall():
    bad = nd.softmax_cross_entropy(nd.ones((2, 3)), nd.array([0, 9]))  # label 9 of 3 classes
    with pytest.raises(mx.MXNetError, match="label 9"):
        bad.asnumpy()
    bad.wait_to_read()  # raised once, as in MXNet: later waits do not raise it again
    nd.waitall()  # nor does a later waitall
    unseen = nd.softmax_cross_entropy(nd.ones((2, 3)), nd.array([0, 4]))
    with pytest.raises(mx.MXNetError, match="label 4"):
        nd.waitall()
    nd.waitall()
    del unseen


def test_random_seed_reproducible():
    mx.random.seed(42)
    a = nd.random.uniform(0, 1, shape=(1000,)).asnumpy()
    mx.random.seed(42)
    b = mx.random.uniform(0, 1, shape=(1000,)).asnumpy()
    assert same(a, b)
    assert 0 <= a.min() and a.max() < 1 and abs(a.mean() - 0.5) < 0.05
    n = nd.random.normal(2, 3, shape=(20000,)).asnumpy()
    assert abs(n.mean() - 2) < 0.1 and abs(n.std() - 3) < 0.1
    r = nd.random.randint(-3, 4, shape=(5000,)).asnumpy()
    assert r.dtype == np.int32 and set(np.unique(r)) == set(range(-3, 4))
    with pytest.raises(ValueError):
        mx.random.seed("x")


def test_storage_statistics():
    a = nd.ones((256, 1024))
    a.wait_to_read()
    with_a = mx.cpu().memory_stat("bytes_in_use")
    del a
    nd.waitall()
    assert with_a - mx.cpu().memory_stat("bytes_in_use") >= 256 * 1024 * 4
    assert mx.cpu().memory_stat("peak_bytes") >= mx.cpu().memory_stat("bytes_in_use")
    with pytest.raises(ValueError):
        mx.cpu().memory_stat("nonsense")


def test_flatten_squeeze_expand_dims_inplace_are_views():
    base = np.arange(1, 31, dtype=np.float32).reshape(2, 1, 3, 5)
    cases = [
        (lambda a, **k: a.flatten(**k), base.reshape(2, 15)),
        (lambda a, **k: a.squeeze(axis=1, **k), base.reshape(2, 3, 5)),
        (lambda a, **k: a.squeeze(**k), base.reshape(2, 3, 5)),
        (lambda a, **k: a.expand_dims(axis=-1, **k), base[..., None]),
        (lambda a, **k: a.expand_dims(axis=0, **k), base[None]),
    ]
    for fn, want in cases:
        a = mx.nd.array(base)
        copy, view = fn(a), fn(a, inplace=True)
        np.testing.assert_array_equal(copy.asnumpy(), want)
        np.testing.assert_array_equal(view.asnumpy(), want)
        a[0] = -1
        np.testing.assert_array_equal(copy.asnumpy(), want)
        changed = base.copy()
        changed[0] = -1
        np.testing.assert_array_equal(view.asnumpy(), changed.reshape(want.shape))
    assert mx.nd.ones((1, 1, 1)).squeeze(inplace=True).shape == (1,)
    with pytest.raises(ValueError, match="axis 2 has size 3, expected 1"):
        mx.nd.array(base).squeeze(axis=2, inplace=True)
    with pytest.raises(ValueError, match="expected axis in"):
        mx.nd.array(base).expand_dims(axis=5, inplace=True)
    with pytest.raises(mx.base.MXNetError):
        mx.nd.array(base).squeeze(axis=2)


def test_numpy_array_as_shape_parameter():
    target = np.array([3, 2, 4])
    out = mx.nd.ones((1, 2, 1)).broadcast_to(shape=target)
    assert out.shape == (3, 2, 4)
    np.testing.assert_array_equal(out.asnumpy(), np.ones((3, 2, 4), np.float32))
    assert mx.nd.sum(mx.nd.ones((2, 5)), axis=np.array(1)).shape == (2,)
    with pytest.raises(mx.base.MXNetError):
        mx.nd.ones((1, 2)).broadcast_to(shape=np.array([3, 5]))


def test_moveaxis_many_axes_and_errors():
    x = mx.nd.array(np.arange(24, dtype=np.float32).reshape(4, 1, 2, 3))
    for src, dst in [(0, -1), (-1, 0), ([0, 1], [2, 3]), ([3, 0], [1, 0]), ([0, 1, 2], [2, 3, 0]),
                     (range(4), range(4)), ([2, 0], [2, 0])]:
        np.testing.assert_array_equal(mx.nd.moveaxis(x, src, dst).asnumpy(),
                                      np.moveaxis(x.asnumpy(), list(src) if isinstance(src, range) else src,
                                                  list(dst) if isinstance(dst, range) else dst))
    for src, dst, msg in [(4, 0, "out of range"), (-5, 0, "out of range"), (0, 6, "out of range"),
                          ([0, 0], [0, 1], "repeated source"), ([0, 1], [1, 1], "repeated destination"),
                          (0, [0, 1], "1 source axes but 2"), ([0, 1], [0], "2 source axes but 1")]:
        with pytest.raises(ValueError, match=msg):
            mx.nd.moveaxis(x, src, dst)


def test_array_from_zero_dim_source_keeps_shape():
    for src in (np.ones(()), np.float64(2.5), 7):
        out = mx.nd.array(src)
        assert out.shape == ()
        np.testing.assert_array_equal(out.asnumpy(), np.asarray(src, np.float32))
    assert mx.nd.array(np.zeros((0, 2))).shape == (0, 2)
    # Non-contiguous sources are still copied in order.
    src = np.arange(12, dtype=np.float32).reshape(3, 4).T
    np.testing.assert_array_equal(mx.nd.array(src).asnumpy(), src)


def test_from_numpy_twice_shares_the_same_memory():
    src = np.array([[1, 2], [3, 4]], dtype=np.float32)
    a = mx.nd.from_numpy(src)
    b = mx.nd.from_numpy(src)
    assert not src.flags["WRITEABLE"]
    a[0, 1] = 9
    np.testing.assert_array_equal(b.asnumpy(), [[1, 9], [3, 4]])
    np.testing.assert_array_equal(src, [[1, 9], [3, 4]])
    frozen = np.broadcast_to(np.ones(3, np.float32), (2, 3))
    with pytest.raises(ValueError):
        mx.nd.from_numpy(frozen)


def test_reshape_like_method_takes_the_operator_arguments():
    x = mx.nd.array(np.arange(30, dtype=np.float32).reshape(5, 6))
    np.testing.assert_array_equal(x.reshape_like(mx.nd.ones((3, 10))).asnumpy(), np.arange(30).reshape(3, 10))
    np.testing.assert_array_equal(x.reshape_like(rhs=mx.nd.ones((2, 15))).asnumpy(), np.arange(30).reshape(2, 15))
    out = x.reshape_like(mx.nd.ones((7, 2, 3)), lhs_begin=1, lhs_end=2, rhs_begin=1, rhs_end=3)
    assert out.shape == (5, 2, 3)
    with pytest.raises(mx.base.MXNetError):
        x.reshape_like(mx.nd.ones((4, 4)))
