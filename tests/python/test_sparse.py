"""Sparse storage (csr, row_sparse): construction, conversion, files, operators, against numpy."""
import os
import json
import pickle

import numpy as np
import pytest

import weft as mx
from weft import nd

DATA = os.path.join(os.path.dirname(__file__), "..", "data", "mxnet", "synthetic")


def _rand_dense(shape, density, seed, zero_rows=()):
    rng = np.random.RandomState(seed)
    x = rng.uniform(-2, 2, shape).astype(np.float32)
    x[rng.uniform(size=shape) > density] = 0
    for r in zero_rows:
        x[r] = 0
    return x


def _csr_parts(dense):
    data, indices, indptr = [], [], [0]
    for row in dense:
        for c, v in enumerate(row):
            if v != 0:
                data.append(v)
                indices.append(c)
        indptr.append(len(data))
    return np.array(data, dtype=dense.dtype), np.array(indices), np.array(indptr)


def test_csr_from_parts_matches_dense():
    dense = _rand_dense((6, 5), 0.4, 0, zero_rows=(2,))
    data, indices, indptr = _csr_parts(dense)
    a = nd.sparse.csr_matrix((data, indices, indptr), shape=(6, 5))
    assert isinstance(a, nd.sparse.CSRNDArray)
    assert a.stype == "csr" and a.shape == (6, 5) and a.dtype == np.float32
    np.testing.assert_array_equal(a.asnumpy(), dense)
    np.testing.assert_array_equal(a.data.asnumpy(), data)
    np.testing.assert_array_equal(a.indices.asnumpy(), indices)
    np.testing.assert_array_equal(a.indptr.asnumpy(), indptr)
    assert a.indices.dtype == np.int64 and a.indptr.dtype == np.int64


def test_csr_from_dense_and_row_sparse_from_parts():
    dense = _rand_dense((7, 4), 0.3, 1, zero_rows=(0, 5))
    a = nd.sparse.csr_matrix(dense)
    np.testing.assert_array_equal(a.asnumpy(), dense)
    assert a.data.shape == (int((dense != 0).sum()),)
    rows = np.array([1, 3, 6])
    vals = np.arange(12, dtype=np.float32).reshape(3, 4) + 1
    r = nd.sparse.row_sparse_array((vals, rows), shape=(8, 4))
    assert isinstance(r, nd.sparse.RowSparseNDArray) and r.stype == "row_sparse"
    want = np.zeros((8, 4), np.float32)
    want[rows] = vals
    np.testing.assert_array_equal(r.asnumpy(), want)
    np.testing.assert_array_equal(r.indices.asnumpy(), rows)
    np.testing.assert_array_equal(r.data.asnumpy(), vals)


@pytest.mark.parametrize("src", ["default", "csr", "row_sparse"])
@pytest.mark.parametrize("dst", ["default", "csr", "row_sparse"])
def test_cast_storage_round_trips(src, dst):
    dense = _rand_dense((5, 6), 0.35, 2, zero_rows=(1, 4))
    x = nd.array(dense)
    if src != "default":
        x = nd.cast_storage(x, src)
    y = nd.cast_storage(x, dst)
    assert y.stype == dst
    np.testing.assert_array_equal(y.asnumpy(), dense)
    np.testing.assert_array_equal(x.tostype(dst).asnumpy(), dense)
    if dst == "row_sparse":
        np.testing.assert_array_equal(y.indices.asnumpy(), [0, 2, 3])


def test_row_sparse_higher_rank_and_dtypes():
    dense = np.zeros((4, 2, 3), np.float64)
    dense[2] = np.arange(6).reshape(2, 3) + 0.5
    r = nd.array(dense, dtype=np.float64).tostype("row_sparse")
    assert r.dtype == np.float64 and r.data.shape == (1, 2, 3)
    np.testing.assert_array_equal(r.asnumpy(), dense)
    i = nd.array([[0, 3], [0, 0]], dtype=np.int32).tostype("csr")
    assert i.dtype == np.int32
    np.testing.assert_array_equal(i.asnumpy(), [[0, 3], [0, 0]])


def test_zeros_and_copy():
    z = nd.sparse.zeros("csr", (3, 4))
    assert z.stype == "csr" and z.data.shape == (0,)
    np.testing.assert_array_equal(z.asnumpy(), np.zeros((3, 4)))
    zr = nd.sparse.zeros("row_sparse", (5, 2), dtype="float64")
    assert zr.dtype == np.float64 and zr.indices.shape == (0,)
    np.testing.assert_array_equal(zr.asnumpy(), np.zeros((5, 2)))
    zd = nd.sparse.zeros("default", (2, 2))
    assert zd.stype == "default"
    dense = _rand_dense((4, 4), 0.5, 3)
    a = nd.sparse.csr_matrix(dense)
    b = a.copy()
    assert b.stype == "csr" and b.handle != a.handle
    np.testing.assert_array_equal(b.asnumpy(), dense)
    target = nd.ones((4, 4))
    assert a.copyto(target) is target
    np.testing.assert_array_equal(target.asnumpy(), dense)


def test_bad_parts_are_reported():
    # Made as MXNet makes them; check_format reports the fault (test_sparse_check_format.py
    # covers the two check levels and every path that reads such an array).
    bad = [nd.sparse.csr_matrix(([1.0, 2.0], [0, 1], [0, 1, 1]), shape=(2, 2)),
           nd.sparse.csr_matrix(([1.0], [5], [0, 1, 1]), shape=(2, 3)),
           nd.sparse.csr_matrix(([1.0, 2.0], [1, 0], [0, 2]), shape=(1, 3)),
           nd.sparse.csr_matrix(([1.0], [0], [0, 1]), shape=(2, 3)),
           nd.sparse.row_sparse_array((np.ones((2, 3)), [0, 1]), shape=(4, 2)),
           nd.sparse.row_sparse_array((np.ones((2, 3)), [3, 1]), shape=(4, 3))]
    texts = ["indptr must end at nnz", "out of range", "strictly increasing", "expected indptr of length 3",
             "expected data of shape", "strictly increasing"]
    for a, text in zip(bad, texts):
        with pytest.raises(mx.base.MXNetError, match=text):
            a.check_format()
    with pytest.raises(mx.base.MXNetError, match="2-D input for stype .csr."):
        nd.cast_storage(nd.ones((2, 2, 2)), "csr")
    with pytest.raises(ValueError, match="stype"):
        nd.cast_storage(nd.ones((2, 2)), "coo")
    # The core refuses to read a sparse array's (absent) dense memory.
    with pytest.raises(mx.base.MXNetError, match="no dense memory"):
        nd.NDArray.asnumpy(nd.sparse.zeros("csr", (2, 2)))


def test_save_load_round_trip_and_mxnet_file(tmp_path):
    dense = _rand_dense((6, 5), 0.4, 4, zero_rows=(3,))
    c = nd.sparse.csr_matrix(dense)
    r = nd.array(dense).tostype("row_sparse")
    d = nd.array(dense)
    path = str(tmp_path / "s.params")
    nd.save(path, {"c": c, "r": r, "d": d})
    got = nd.load(path)
    assert got["c"].stype == "csr" and got["r"].stype == "row_sparse" and got["d"].stype == "default"
    for k in "crd":
        np.testing.assert_array_equal(got[k].asnumpy(), dense)
    # MXNet's file of a row_sparse and a csr array.
    exp = json.load(open(os.path.join(DATA, "expected.json")))["sparse_v2.params"]
    mxf = nd.load(os.path.join(DATA, "sparse_v2.params"))
    assert sorted(mxf) == sorted(exp)
    for k, e in exp.items():
        assert mxf[k].stype == e["stype"]
        np.testing.assert_array_equal(mxf[k].asnumpy(), np.array(e["dense_values"], np.float32))
    # Saving what was loaded writes MXNet's bytes back unchanged.
    again = str(tmp_path / "again.params")
    nd.save(again, {k: mxf[k] for k in sorted(mxf)})
    keys = sorted(mxf)
    assert nd.save_tobuffer({k: mxf[k] for k in keys}) == open(again, "rb").read()
    original = open(os.path.join(DATA, "sparse_v2.params"), "rb").read()
    if list(nd.load(os.path.join(DATA, "sparse_v2.params")).keys()) == keys:
        assert open(again, "rb").read() == original
    # Pickling goes through the raw record.
    p = pickle.loads(pickle.dumps(c))
    assert p.stype == "csr"
    np.testing.assert_array_equal(p.asnumpy(), dense)


def test_truncated_sparse_record_errors(tmp_path):
    buf = nd.save_tobuffer([nd.sparse.csr_matrix(_rand_dense((3, 3), 0.6, 5))])
    with pytest.raises(mx.base.MXNetError, match="truncated"):
        nd.load_frombuffer(buf[:-12])


def test_dense_fallback_operators():
    dense = _rand_dense((4, 6), 0.5, 6)
    rhs = np.random.RandomState(7).uniform(-1, 1, (6, 3)).astype(np.float32)
    c = nd.sparse.csr_matrix(dense)
    out = nd.dot(c, nd.array(rhs))
    assert out.stype == "default"
    np.testing.assert_allclose(out.asnumpy(), dense @ rhs, rtol=1e-5, atol=1e-5)
    lhs_t = np.random.RandomState(8).uniform(-1, 1, (4, 2)).astype(np.float32)
    np.testing.assert_allclose(nd.dot(c, nd.array(lhs_t), transpose_a=True).asnumpy(), dense.T @ lhs_t,
                               rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(nd.sparse.dot(c, nd.array(rhs)).asnumpy(), dense @ rhs, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(nd.sum(c, axis=1).asnumpy(), dense.sum(axis=1), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(nd.exp(c).asnumpy(), np.exp(dense), rtol=1e-6)
    np.testing.assert_allclose((nd.array(dense) + c).asnumpy(), 2 * dense, rtol=1e-6)


def test_sparse_arithmetic_keeps_storage():
    a_d = _rand_dense((6, 4), 0.4, 9, zero_rows=(0, 2))
    b_d = _rand_dense((6, 4), 0.4, 10, zero_rows=(2, 5))
    for stype in ("csr", "row_sparse"):
        a, b = nd.array(a_d).tostype(stype), nd.array(b_d).tostype(stype)
        for got, want in ((a + b, a_d + b_d), (a - b, a_d - b_d), (a * b, a_d * b_d),
                          (nd.sparse.elemwise_add(a, b), a_d + b_d)):
            assert got.stype == stype
            np.testing.assert_allclose(got.asnumpy(), want, rtol=1e-6)
        s = a * 3.0
        assert s.stype == stype
        np.testing.assert_allclose(s.asnumpy(), a_d * 3.0, rtol=1e-6)
        np.testing.assert_allclose((-a).asnumpy(), -a_d, rtol=1e-6)


def test_retain_and_csr_row_slice():
    dense = _rand_dense((8, 3), 1.0, 11, zero_rows=(0, 4))
    r = nd.array(dense).tostype("row_sparse")
    kept = nd.sparse.retain(r, nd.array([1, 4, 6], dtype="int64"))
    want = np.zeros_like(dense)
    want[[1, 6]] = dense[[1, 6]]
    assert kept.stype == "row_sparse"
    np.testing.assert_array_equal(kept.asnumpy(), want)
    np.testing.assert_array_equal(kept.indices.asnumpy(), [1, 6])
    c = nd.sparse.csr_matrix(_rand_dense((7, 5), 0.5, 12))
    full = c.asnumpy()
    for key in (slice(2, 5), slice(None, 3), 4, -1):
        part = c[key]
        assert part.stype == "csr"
        want = full[key] if isinstance(key, slice) else full[key:key + 1 if key != -1 else None]
        np.testing.assert_array_equal(part.asnumpy(), want)


def test_scipy_input_when_available():
    spsp = pytest.importorskip("scipy.sparse")
    m = spsp.random(5, 7, density=0.3, format="coo", random_state=0, dtype=np.float32)
    a = nd.sparse.csr_matrix(m)
    np.testing.assert_array_equal(a.asnumpy(), m.toarray())
    np.testing.assert_array_equal(a.asscipy().toarray(), m.toarray())


def _rsp_grad(shape, rows, seed):
    vals = np.random.RandomState(seed).uniform(-1, 1, (len(rows),) + shape[1:]).astype(np.float32)
    dense = np.zeros(shape, np.float32)
    dense[rows] = vals
    return nd.sparse.row_sparse_array((vals, rows), shape=shape), dense


def test_sgd_lazy_update_touches_only_grad_rows():
    shape, rows = (10, 3), [1, 4, 7]
    w0 = np.random.RandomState(0).uniform(-1, 1, shape).astype(np.float32)
    g, g_dense = _rsp_grad(shape, rows, 1)
    w = nd.array(w0)
    nd.sgd_update(w, g, lr=0.1, wd=0.01, out=w)
    want = w0.copy()
    want[rows] = w0[rows] - 0.1 * (g_dense[rows] + 0.01 * w0[rows])
    np.testing.assert_allclose(w.asnumpy(), want, rtol=1e-6, atol=1e-7)
    # lazy_update=False is the standard update: weight decay reaches every row.
    w = nd.array(w0)
    nd.sgd_update(w, g, lr=0.1, wd=0.01, lazy_update=False, out=w)
    np.testing.assert_allclose(w.asnumpy(), w0 - 0.1 * (g_dense + 0.01 * w0), rtol=1e-6, atol=1e-7)
    # Without `out`, a new weight; the old one is left alone.
    w = nd.array(w0)
    new = nd.sgd_update(w, g, lr=0.1, wd=0.01)
    np.testing.assert_allclose(new.asnumpy(), want, rtol=1e-6, atol=1e-7)
    np.testing.assert_array_equal(w.asnumpy(), w0)


def test_sgd_mom_and_adam_lazy_updates():
    shape, rows = (8, 2, 3), [0, 5, 6]
    rng = np.random.RandomState(2)
    w0 = rng.uniform(-1, 1, shape).astype(np.float32)
    m0 = rng.uniform(-1, 1, shape).astype(np.float32)
    v0 = rng.uniform(0, 1, shape).astype(np.float32)
    g, g_dense = _rsp_grad(shape, rows, 3)
    w, mom = nd.array(w0), nd.array(m0)
    nd.sgd_mom_update(w, g, mom, lr=0.05, momentum=0.9, wd=0.1, out=w)
    want_m = m0.copy()
    want_m[rows] = 0.9 * m0[rows] - 0.05 * (g_dense[rows] + 0.1 * w0[rows])
    want_w = w0.copy()
    want_w[rows] = w0[rows] + want_m[rows]
    np.testing.assert_allclose(mom.asnumpy(), want_m, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(w.asnumpy(), want_w, rtol=1e-5, atol=1e-6)
    # Adam: the stored rows move as the dense update moves them, the others not at all.
    w, mean, var = nd.array(w0), nd.array(m0), nd.array(v0)
    nd.adam_update(w, g, mean, var, lr=0.01, wd=0.1, out=w)
    dw, dmean, dvar = nd.array(w0), nd.array(m0), nd.array(v0)
    nd.adam_update(dw, nd.array(g_dense), dmean, dvar, lr=0.01, wd=0.1, out=dw)
    others = [r for r in range(shape[0]) if r not in rows]
    for got, dense, orig in ((w, dw, w0), (mean, dmean, m0), (var, dvar, v0)):
        np.testing.assert_allclose(got.asnumpy()[rows], dense.asnumpy()[rows], rtol=1e-5, atol=1e-6)
        np.testing.assert_array_equal(got.asnumpy()[others], orig[others])


def test_lazy_update_shape_errors():
    g, _ = _rsp_grad((6, 2), [1], 4)
    with pytest.raises(mx.base.MXNetError, match="expected a gradient of shape"):
        nd.sgd_update(nd.zeros((5, 2)), g, lr=0.1)
    with pytest.raises(mx.base.MXNetError, match="expected input 2 of shape"):
        nd.sgd_mom_update(nd.zeros((6, 2)), g, nd.zeros((6, 3)), lr=0.1)


def test_optimizer_lazy_update_with_row_sparse_grad():
    shape, rows = (9, 4), [2, 3, 8]
    w0 = np.random.RandomState(5).uniform(-1, 1, shape).astype(np.float32)
    g, g_dense = _rsp_grad(shape, rows, 6)
    opt = mx.optimizer.SGD(learning_rate=0.1, momentum=0.9, wd=0.01, lazy_update=True)
    w = nd.array(w0)
    state = opt.create_state(0, w)
    opt.update(0, w, g, state)
    others = [r for r in range(shape[0]) if r not in rows]
    np.testing.assert_array_equal(w.asnumpy()[others], w0[others])
    mom = -0.1 * (g_dense[rows] + 0.01 * w0[rows])
    np.testing.assert_allclose(w.asnumpy()[rows], w0[rows] + mom, rtol=1e-5, atol=1e-6)


def test_embedding_sparse_grad_is_row_sparse():
    rng = np.random.RandomState(13)
    w0 = rng.uniform(-1, 1, (20, 4)).astype(np.float32)
    idx = np.array([[3, 7, 3], [15, 0, 7]], dtype=np.float32)
    ograd = rng.uniform(-1, 1, (2, 3, 4)).astype(np.float32)
    w = nd.array(w0)
    w.attach_grad(stype="row_sparse")
    with mx.autograd.record():
        out = nd.Embedding(nd.array(idx), w, input_dim=20, output_dim=4, sparse_grad=True)
    out.backward(nd.array(ograd))
    g = w.grad
    assert g.stype == "row_sparse"
    np.testing.assert_array_equal(g.indices.asnumpy(), [0, 3, 7, 15])
    want = np.zeros_like(w0)
    np.add.at(want, idx.reshape(-1).astype(int), ograd.reshape(-1, 4))
    np.testing.assert_allclose(g.asnumpy(), want, rtol=1e-6, atol=1e-7)
    # The dense gradient agrees (same op, dense buffer).
    wd = nd.array(w0)
    wd.attach_grad()
    with mx.autograd.record():
        out = nd.Embedding(nd.array(idx), wd, input_dim=20, output_dim=4, sparse_grad=True)
    out.backward(nd.array(ograd))
    assert wd.grad.stype == "default"
    np.testing.assert_allclose(wd.grad.asnumpy(), want, rtol=1e-6, atol=1e-7)


def test_gluon_embedding_sparse_grad_with_trainer():
    from weft import gluon
    for sparse in (True, False):
        mx.random.seed(0)
        emb = gluon.nn.Embedding(50, 3, sparse_grad=sparse)
        emb.initialize(mx.init.Uniform(0.5))
        trainer = gluon.Trainer(emb.collect_params(), "sgd", {"learning_rate": 0.5, "momentum": 0.9, "wd": 0.1})
        w0 = emb.weight.data().asnumpy().copy()
        for step in range(2):
            x = nd.array([[1, 4], [4, 9 + step]])
            with mx.autograd.record():
                loss = (emb(x) ** 2).sum()
            loss.backward()
            g = emb.weight.grad()
            assert g.stype == ("row_sparse" if sparse else "default")
            trainer.step(1)
        w = emb.weight.data().asnumpy()
        touched = [1, 4, 9, 10]
        untouched = [r for r in range(50) if r not in touched]
        if sparse:
            # Lazy update: weight decay and momentum reach only the rows a step used.
            np.testing.assert_array_equal(w[untouched], w0[untouched])
        else:
            assert not np.allclose(w[untouched], w0[untouched])
        assert not np.allclose(w[touched], w0[touched])


def test_gluon_parameter_storage_types():
    from weft import gluon
    p = gluon.Parameter("p", shape=(4, 2), grad_stype="row_sparse")
    p.initialize(mx.init.Zero())
    assert p.grad().stype == "row_sparse" and p.grad().indices.shape == (0,)
    with pytest.raises(AssertionError, match="grad_stype"):
        gluon.Parameter("q", shape=(2,), grad_stype="csr")
    with pytest.raises(AssertionError, match="stype='csr'"):
        gluon.Parameter("r", shape=(2, 2), stype="csr")


def test_kvstore_row_sparse_pull_and_sparse_push():
    kv = mx.kv.create("local")
    w0 = np.arange(24, dtype=np.float32).reshape(6, 4)
    kv.init("w", nd.array(w0))
    out = nd.sparse.zeros("row_sparse", (6, 4))
    kv.row_sparse_pull("w", out=out, row_ids=nd.array([4, 1, 4], dtype="int64"))
    assert out.stype == "row_sparse"
    np.testing.assert_array_equal(out.indices.asnumpy(), [1, 4])
    want = np.zeros_like(w0)
    want[[1, 4]] = w0[[1, 4]]
    np.testing.assert_array_equal(out.asnumpy(), want)
    # A row_sparse push replaces the stored value (no updater) with its dense equivalent.
    g, g_dense = _rsp_grad((6, 4), [0, 5], 14)
    kv.push("w", g)
    full = nd.zeros((6, 4))
    kv.pull("w", out=full)
    np.testing.assert_allclose(full.asnumpy(), g_dense, rtol=1e-6)
    with pytest.raises(TypeError, match="RowSparseNDArray"):
        kv.row_sparse_pull("w", out=nd.zeros((6, 4)), row_ids=nd.array([1]))
    with pytest.raises(IndexError, match="row id 9 at position 0 is out of range"):
        kv.row_sparse_pull("w", out=out, row_ids=nd.array([9]))
    with pytest.raises(ValueError, match="integers"):
        kv.row_sparse_pull("w", out=out, row_ids=nd.array([1.5]))
    # Several outputs with their own row ids; an empty request stores nothing.
    outs = [nd.sparse.zeros("row_sparse", (6, 4)) for _ in range(2)]
    kv.row_sparse_pull("w", out=outs, row_ids=[nd.array([5]), nd.array([], dtype="int64")])
    np.testing.assert_array_equal(outs[0].indices.asnumpy(), [5])
    np.testing.assert_allclose(outs[0].data.asnumpy(), g_dense[[5]], rtol=1e-6)
    assert outs[1].indices.asnumpy().size == 0
    # The core refuses unsorted or repeated ids and a destination of the wrong shape.
    bad = nd.zeros((2, 4))
    with pytest.raises(mx.base.MXNetError, match="strictly increasing"):
        mx.base._api.weft_kvstore_pull_rows(kv.handle, "w", nd.array([3, 1], dtype="int64"), bad, 0)
    with pytest.raises(mx.base.MXNetError, match=r"expected a dense destination of shape \(1,4\)"):
        mx.base._api.weft_kvstore_pull_rows(kv.handle, "w", nd.array([3], dtype="int64"), bad, 0)
    with pytest.raises(mx.base.MXNetError, match="expected 'src' of dst's storage type"):
        mx.base._api.weft_ndarray_sparse_assign(out, nd.sparse.zeros("row_sparse", (5, 4)))


def test_libsvm_iter_gives_csr_batches(tmp_path):
    rng = np.random.RandomState(15)
    dense = (rng.rand(7, 5) * (rng.rand(7, 5) > 0.6)).astype(np.float32)
    labels = rng.randint(0, 2, size=7).astype(np.float32)
    path = tmp_path / "d.libsvm"
    with open(path, "w") as f:
        for row, y in zip(dense, labels):
            f.write("%g %s\n" % (y, " ".join("%d:%r" % (j, float(v)) for j, v in enumerate(row) if v != 0)))
    it = mx.io.LibSVMIter(data_libsvm=str(path), data_shape=(5,), batch_size=3, round_batch=False)
    batches = list(it)
    assert all(b.data[0].stype == "csr" for b in batches)
    assert all(b.label[0].stype == "default" for b in batches)
    np.testing.assert_allclose(np.concatenate([b.data[0].asnumpy() for b in batches])[:7], dense, rtol=1e-6)
    np.testing.assert_array_equal(np.concatenate([b.label[0].asnumpy() for b in batches])[:7], labels)


def test_ndarray_iter_with_csr_data():
    dense = _rand_dense((10, 4), 0.5, 16)
    labels = np.arange(10, dtype=np.float32)
    it = mx.io.NDArrayIter(nd.sparse.csr_matrix(dense), labels, batch_size=3, last_batch_handle="discard")
    batches = list(it)
    assert len(batches) == 3
    for k, b in enumerate(batches):
        assert b.data[0].stype == "csr" and b.data[0].shape == (3, 4)
        np.testing.assert_array_equal(b.data[0].asnumpy(), dense[3 * k:3 * k + 3])
        np.testing.assert_array_equal(b.label[0].asnumpy(), labels[3 * k:3 * k + 3])
    np.random.seed(1)
    shuffled = mx.io.NDArrayIter(nd.sparse.csr_matrix(dense), labels, batch_size=5, shuffle=True,
                                 last_batch_handle="discard")
    for b in shuffled:
        assert b.data[0].stype == "csr"
        # Each sample keeps its label through the shuffle.
        rows = b.label[0].asnumpy().astype(int)
        np.testing.assert_array_equal(b.data[0].asnumpy(), dense[rows])
    with pytest.raises(NotImplementedError, match="discard"):
        mx.io.NDArrayIter(nd.sparse.csr_matrix(dense), labels, batch_size=3)
