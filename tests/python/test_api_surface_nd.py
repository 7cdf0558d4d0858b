"""MXNet 1.9.1's module-level functions of mx.nd / mx.sym (ndarray.py, symbol.py, utils.py,
op.py, contrib's isinf/isnan/isfinite) against numpy."""
import io as _io
import operator

import numpy as np
import pytest

import weft as mx

rng = np.random.RandomState(7)

# name -> (numpy function, scalar-scalar result function)
BINARY = {
    "add": (np.add, operator.add),
    "subtract": (np.subtract, operator.sub),
    "multiply": (np.multiply, operator.mul),
    "divide": (np.divide, operator.truediv),
    "true_divide": (np.true_divide, operator.truediv),
    "modulo": (np.mod, operator.mod),
    "power": (np.power, operator.pow),
    "maximum": (np.maximum, max),
    "minimum": (np.minimum, min),
    "equal": (np.equal, lambda x, y: int(x == y)),
    "not_equal": (np.not_equal, lambda x, y: int(x != y)),
    "greater": (np.greater, lambda x, y: int(x > y)),
    "greater_equal": (np.greater_equal, lambda x, y: int(x >= y)),
    "lesser": (np.less, lambda x, y: int(x < y)),
    "lesser_equal": (np.less_equal, lambda x, y: int(x <= y)),
    "logical_and": (np.logical_and, lambda x, y: int(bool(x) and bool(y))),
    "logical_or": (np.logical_or, lambda x, y: int(bool(x) or bool(y))),
    "logical_xor": (np.logical_xor, lambda x, y: int(bool(x) != bool(y))),
}


def _operands(name):
    a = rng.uniform(0.5, 3.0, size=(2, 1, 4)).astype(np.float32)
    b = rng.uniform(0.5, 3.0, size=(3, 1)).astype(np.float32)
    if name.startswith("logical") or "equal" in name:
        a = np.round(a)  # ties and zeros exercise the comparisons
        b = np.round(b) - 1
    return a, b


@pytest.mark.parametrize("name", sorted(BINARY))
def test_module_binary_functions_follow_numpy(name):
    fn = getattr(mx.nd, name)
    assert getattr(mx.ndarray.ndarray, name) is fn
    ref, scalar_ref = BINARY[name]
    a, b = _operands(name)
    tol = dict(rtol=1e-5, atol=1e-6)
    # array with array, broadcasting both ways
    np.testing.assert_allclose(fn(mx.nd.array(a), mx.nd.array(b)).asnumpy(), ref(a, b).astype(np.float32), **tol)
    # array with number and number with array (the reflected scalar operator)
    s = 2.0
    np.testing.assert_allclose(fn(mx.nd.array(a), s).asnumpy(), ref(a, np.float32(s)).astype(np.float32), **tol)
    np.testing.assert_allclose(fn(s, mx.nd.array(a)).asnumpy(), ref(np.float32(s), a).astype(np.float32), **tol)
    # two numbers: a number, as Python computes it
    assert fn(3, 2) == scalar_ref(3, 2)
    assert not isinstance(fn(3.5, 2), mx.nd.NDArray)
    with pytest.raises(TypeError, match="not supported"):
        fn(mx.nd.array(a), "x")


def test_eye_and_linspace():
    for n, m, k in [(3, 0, 0), (3, 5, 1), (4, 2, -1)]:
        np.testing.assert_array_equal(mx.nd.eye(n, m, k).asnumpy(), np.eye(n, m or None, k, dtype=np.float32))
    assert mx.nd.eye(2, dtype="float64").dtype == np.float64
    np.testing.assert_allclose(mx.nd.linspace(2.0, 3.0, 5).asnumpy(), np.linspace(2.0, 3.0, 5), rtol=1e-6)
    np.testing.assert_allclose(mx.nd.linspace(2.0, 3.0, 5, endpoint=False).asnumpy(),
                               np.linspace(2.0, 3.0, 5, endpoint=False), rtol=1e-6)
    assert mx.nd.linspace(0, 1, 3, dtype="int32").dtype == np.int32


def test_from_numpy_shares_memory_and_freezes_the_source():
    src = np.arange(12, dtype=np.float32).reshape(3, 4)
    x = mx.nd.from_numpy(src)
    assert not src.flags.writeable
    np.testing.assert_array_equal(x.asnumpy(), src)
    x[:] = 5  # written through the NDArray, seen by numpy: one buffer
    x.wait_to_read()
    assert (src == 5).all()
    with pytest.raises(ValueError, match="C-contiguous"):
        mx.nd.from_numpy(np.zeros((4, 4), np.float32)[:, ::2])
    copy_src = np.ones(3, np.float64)
    y = mx.nd.from_numpy(copy_src, zero_copy=False)
    assert copy_src.flags.writeable and y.dtype == np.float64
    copy_src[0] = 9
    assert y.asnumpy()[0] == 1


def test_onehot_encode_writes_out():
    idx = np.array([0, 3, 1, 2], np.float32)
    out = mx.nd.zeros((4, 5))
    res = mx.nd.onehot_encode(mx.nd.array(idx), out)
    assert res is out
    np.testing.assert_array_equal(out.asnumpy(), np.eye(5, dtype=np.float32)[idx.astype(int)])


def test_legacy_imdecode_crops_subtracts_and_fills_a_batch_slot():
    pil = pytest.importorskip("PIL.Image")
    img = rng.randint(0, 255, size=(6, 8, 3)).astype(np.uint8)
    buf = _io.BytesIO()
    pil.fromarray(img).save(buf, format="PNG")
    data = buf.getvalue()
    chw = img.transpose(2, 0, 1).astype(np.float32)
    np.testing.assert_array_equal(mx.nd.imdecode(data).asnumpy(), chw)
    np.testing.assert_array_equal(mx.nd.imdecode(data, clip_rect=(1, 2, 5, 6)).asnumpy(), chw[:, 2:6, 1:5])
    mean = mx.nd.full((3, 6, 8), 10.0)
    np.testing.assert_array_equal(mx.nd.imdecode(data, mean=mean).asnumpy(), chw - 10)
    batch = mx.nd.zeros((2, 3, 6, 8))
    mx.nd.imdecode(data, out=batch, index=1)
    np.testing.assert_array_equal(batch.asnumpy()[1], chw)
    assert batch.asnumpy()[0].sum() == 0
    grey = mx.nd.imdecode(data, channels=1).asnumpy()
    assert grey.shape == (1, 6, 8)
    with pytest.raises(ValueError, match="out has room"):
        mx.nd.imdecode(data, out=mx.nd.zeros((3, 5, 8)))


def test_contrib_isinf_isnan_isfinite():
    v = np.array([1.0, np.inf, -np.inf, np.nan, 0.0, -3.0], np.float32)
    x = mx.nd.array(v)
    np.testing.assert_array_equal(mx.nd.contrib.isinf(x).asnumpy(), np.isinf(v).astype(np.float32))
    np.testing.assert_array_equal(mx.nd.contrib.isnan(x).asnumpy(), np.isnan(v).astype(np.float32))
    np.testing.assert_array_equal(mx.nd.contrib.isfinite(x).asnumpy(), np.isfinite(v).astype(np.float32))


def test_op_modules_hold_every_public_operator():
    from weft.ndarray import op as nd_op
    from weft.symbol import op as sym_op
    public = {o.name for o in mx.ndarray._ops.list_ops() if not o.name.startswith("_")}
    for name in public:
        # the operators' functions (Custom among them, which mx.operator replaces); mx.nd's
        # hand-written cast_storage wraps the generated one
        assert getattr(nd_op, name) is mx.ndarray._ops.get(name), name
        assert getattr(sym_op, name) is getattr(mx.sym, name), name
    assert not any(n.startswith("_") and callable(v) and n != "_ops" for n, v in vars(nd_op).items()
                   if not n.startswith("__"))
    np.testing.assert_allclose(nd_op.relu(mx.nd.array([-1.0, 2.0])).asnumpy(), [0.0, 2.0])


def test_utils_dispatch_on_storage_type(tmp_path):
    sp = pytest.importorskip("scipy.sparse")
    from weft.ndarray import utils
    assert utils.zeros((2, 3)).stype == "default"
    z = utils.zeros((2, 3), stype="csr")
    assert isinstance(z, mx.nd.sparse.CSRNDArray) and z.asnumpy().sum() == 0
    assert isinstance(utils.empty((4, 2), stype="row_sparse"), mx.nd.sparse.RowSparseNDArray)
    dense = np.array([[0, 1.5, 0], [2, 0, 0]], np.float32)
    c = utils.array(sp.csr_matrix(dense))
    assert isinstance(c, mx.nd.sparse.CSRNDArray)
    np.testing.assert_array_equal(c.asnumpy(), dense)
    r = utils.array(mx.nd.sparse.row_sparse_array(dense))
    assert isinstance(r, mx.nd.sparse.RowSparseNDArray)
    d = utils.array(dense)
    assert d.stype == "default"
    assert mx.nd.zeros((2, 2), stype="row_sparse").stype == "row_sparse"  # nd.zeros is utils.zeros
    fname = str(tmp_path / "mixed.params")
    utils.save(fname, {"c": c, "d": d})
    back = utils.load(fname)
    assert isinstance(back["c"], mx.nd.sparse.CSRNDArray)
    np.testing.assert_array_equal(back["c"].asnumpy(), dense)
    with open(fname, "rb") as f:
        np.testing.assert_array_equal(utils.load_frombuffer(f.read())["d"].asnumpy(), dense)


def _eval(sym, **inputs):
    exe = sym.bind(mx.cpu(), {k: mx.nd.array(v) for k, v in inputs.items()})
    return exe.forward()[0].asnumpy()


def test_symbol_module_functions():
    a = rng.uniform(0.5, 2, (2, 3)).astype(np.float32)
    b = rng.uniform(0.5, 2, (2, 3)).astype(np.float32)
    x, y = mx.sym.var("x"), mx.sym.var("y")
    tol = dict(rtol=1e-5)
    np.testing.assert_allclose(_eval(mx.sym.pow(x, y), x=a, y=b), a ** b, **tol)
    np.testing.assert_allclose(_eval(mx.sym.power(x, 2.0), x=a), a ** 2, **tol)
    np.testing.assert_allclose(_eval(mx.sym.pow(3.0, x), x=a), 3.0 ** a, **tol)
    assert mx.sym.pow(2, 3) == 8
    np.testing.assert_allclose(_eval(mx.sym.hypot(x, y), x=a, y=b), np.hypot(a, b), **tol)
    np.testing.assert_allclose(_eval(mx.sym.hypot(x, 2.0), x=a), np.hypot(a, 2.0), **tol)
    assert mx.sym.hypot(3, 4) == 5
    np.testing.assert_allclose(_eval(mx.sym.maximum(x, 1.0), x=a), np.maximum(a, 1.0))
    np.testing.assert_allclose(_eval(mx.sym.minimum(1.0, x), x=a), np.minimum(a, 1.0))
    assert mx.sym.maximum(2, 5) == 5 and mx.sym.minimum(2, 5) == 2
    with pytest.raises(TypeError, match="not supported"):
        mx.sym.maximum("a", x)
    np.testing.assert_array_equal(_eval(mx.sym.zeros((2, 2))), np.zeros((2, 2)))
    np.testing.assert_array_equal(_eval(mx.sym.ones((3,))), np.ones(3))
    full = _eval(mx.sym.full((2, 3), 7))
    assert full.dtype == np.float32 and (full == 7).all()
    np.testing.assert_array_equal(_eval(mx.sym.eye(3, 4, 1)), np.eye(3, 4, 1))
    np.testing.assert_allclose(_eval(mx.sym.arange(1, 7, 2, repeat=2)), np.repeat(np.arange(1, 7, 2), 2))
    np.testing.assert_allclose(_eval(mx.sym.linspace(0, 1, 4, endpoint=False)), np.linspace(0, 1, 4, endpoint=False))
    assert mx.symbol.symbol.split_v2 is mx.sym.split_v2 and mx.symbol.symbol.histogram is mx.sym.histogram


def test_exported_dtype_tables_and_indexing_helpers():
    nd_mod = mx.ndarray.ndarray
    assert nd_mod._DTYPE_NP_TO_MX[np.float32] == 0 and nd_mod._DTYPE_NP_TO_MX[np.int64] == 6
    assert nd_mod._DTYPE_NP_TO_MX[None] == -1 and nd_mod._DTYPE_MX_TO_NP[7] is np.bool_
    for k, v in nd_mod._DTYPE_MX_TO_NP.items():
        if v is not None and k != 12:
            assert mx.nd.zeros((1,), dtype=v).dtype == v
    assert nd_mod._GRAD_REQ_MAP == {"null": 0, "write": 1, "add": 3}
    code = nd_mod.get_indexing_dispatch_code
    assert code((0, slice(1, 2), None)) == 0
    assert code((mx.nd.array([0, 1]),)) == 1 and code(([0, 1], 2)) == 1 and code(((),)) == 2
    with pytest.raises(ValueError, match="does not support"):
        code((1.5,))
    expand = nd_mod.indexing_key_expand_implicit_axes
    assert expand((0, Ellipsis, 1), (2, 3, 4, 5)) == ((0, slice(None), slice(None), 1), -1)
    assert expand(1, (2, 3)) == ((1, slice(None)), -1)
    assert expand((None, 0), (2, 3)) == ((None, 0, slice(None)), -1)
    assert expand((mx.nd.array(2, dtype="int32"),), (4,)) == ((2,), -1)
    assert expand((True, 0), (2,))[1] == 1 and expand((False,), (2,))[1] == 0
    assert expand((False, True), (2,))[1] == 0 and expand((True, False), (2,))[1] == 0
    with pytest.raises(IndexError, match="more than one ellipsis"):
        expand((Ellipsis, Ellipsis), (2,))
    with pytest.raises(ValueError, match="legacy mode"):
        expand((mx.nd.array([1, 0], dtype="bool"),), (2,))
    # gather_nd's own inference agrees
    data, idx = mx.nd.zeros((4, 5, 6)), mx.nd.zeros((2, 3, 7))
    assert nd_mod.get_oshape_of_gather_nd_op(data.shape, idx.shape) == mx.nd.gather_nd(data, idx).shape == (3, 7, 6)
    assert nd_mod.get_oshape_of_gather_nd_op((4, 5), (2, 9)) == (9,)


def test_cached_op_runs_records_and_updates_aux_states():
    assert mx.nd.op.CachedOp is mx.nd.CachedOp
    x, w = mx.sym.var("x"), mx.sym.var("w")
    net = mx.sym.BatchNorm(mx.sym.FullyConnected(x, w, no_bias=True, num_hidden=3), fix_gamma=False, name="bn")
    op = mx.nd.CachedOp(net, flags=[("static_alloc", True)])
    assert net.list_inputs() == ["x", "w", "bn_gamma", "bn_beta", "bn_moving_mean", "bn_moving_var"]
    xv = rng.uniform(-1, 1, (5, 4)).astype(np.float32)
    wv = rng.uniform(-1, 1, (3, 4)).astype(np.float32)
    head = rng.uniform(-1, 1, (5, 3)).astype(np.float32)
    arrays = [mx.nd.array(xv), mx.nd.array(wv), mx.nd.ones((3,)), mx.nd.zeros((3,)), mx.nd.zeros((3,)),
              mx.nd.ones((3,))]
    # predict mode: the moving statistics normalise
    h = xv @ wv.T
    np.testing.assert_allclose(op(*arrays).asnumpy(), h / np.sqrt(1 + 1e-3), rtol=1e-4, atol=1e-5)
    # training under record: batch statistics, a gradient for w, moving stats updated in place
    arrays[1].attach_grad()
    with mx.autograd.record():
        y = op(*arrays)
        loss = (y * mx.nd.array(head)).sum()
    loss.backward()
    norm = (h - h.mean(0)) / np.sqrt(h.var(0) + 1e-3)
    np.testing.assert_allclose(y.asnumpy(), norm, rtol=1e-3, atol=1e-4)
    np.testing.assert_allclose(arrays[4].asnumpy(), 0.1 * h.mean(0), rtol=1e-4, atol=1e-5)
    ref = net.simple_bind(mx.cpu(), x=(5, 4), grad_req={"x": "null", "w": "write", "bn_gamma": "null",
                                                          "bn_beta": "null"})
    ref.copy_params_from({"w": mx.nd.array(wv), "bn_gamma": mx.nd.ones((3,)), "bn_beta": mx.nd.zeros((3,))})
    ref.forward(is_train=True, x=mx.nd.array(xv))
    ref.backward(mx.nd.array(head))
    np.testing.assert_allclose(arrays[1].grad.asnumpy(), ref.grad_dict["w"].asnumpy(), rtol=1e-4, atol=1e-5)
    out = mx.nd.zeros((5, 3))
    assert op(*arrays, out=out) is out
    np.testing.assert_allclose(out.asnumpy(), op(*arrays).asnumpy())
    with pytest.raises(ValueError, match="expected 6 inputs"):
        op(arrays[0])
    with pytest.raises(TypeError, match="unexpected keyword"):
        op(*arrays, bad=1)
