"""Dense and layout operators of the neural-network family: FullyConnected, Dropout,
Embedding, SwapAxis, Pad, UpSampling and the Sequence operators, against torch and numpy,
with gradients against torch autograd (float32) and central differences (float64)."""
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import weft
from weft import nd
from weft.base import WeftError, _api
from weft.ndarray.ndarray import NDArray, _param_str
from weft.test_utils import assert_almost_equal, check_numeric_gradient

RNG = np.random.RandomState(7)


def rand(*shape, dtype=np.float32):
    return RNG.uniform(-1, 1, size=shape).astype(dtype)


def op_grad(op, inputs, outputs, heads, params):
    """The operator's registered gradient for forward `inputs`/`outputs` (NDArrays) and
    output gradients `heads`; None where an input gets none."""
    keys = [k for k, v in params.items() if v is not None]
    vals = [_param_str(params[k]) for k in keys]
    grads = _api.weft_imperative_gradient(_api.weft_op_get(op), len(inputs), inputs, len(outputs), outputs, heads,
                                          len(keys), keys, vals)
    return [None if g is None else NDArray(g).asnumpy() for g in grads]


def torch_grads(fn, arrays, head):
    ts = [torch.tensor(a, requires_grad=True) for a in arrays]
    out = fn(*ts)
    out.backward(torch.tensor(head))
    return out.detach().numpy(), [t.grad.numpy() for t in ts]


# ---------------------------------------------------------------- FullyConnected
@pytest.mark.parametrize("dshape,hidden,flatten,no_bias", [
    ((1, 5), 3, True, False), ((4, 7), 1, True, False), ((6, 3, 5), 9, True, False), ((2, 3, 4, 5), 11, True, True),
    ((6, 3, 5), 4, False, False), ((1, 2, 3, 7), 5, False, True), ((13, 17), 19, False, False)])
def test_fully_connected_vs_torch(dshape, hidden, flatten, no_bias):
    x = rand(*dshape)
    in_size = int(np.prod(dshape[1:])) if flatten else dshape[-1]
    w, b = rand(hidden, in_size), rand(hidden)
    params = dict(num_hidden=hidden, no_bias=no_bias, flatten=flatten)
    ins = [x, w] if no_bias else [x, w, b]

    def ref(xt, wt, bt=None):
        return F.linear(xt.reshape(dshape[0], -1) if flatten else xt, wt, bt)

    y = nd.FullyConnected(*[nd.array(a) for a in ins], **params)
    head = rand(*y.shape)
    ty, tgrads = torch_grads(ref, ins, head)
    assert_almost_equal(y.asnumpy(), ty, rtol=1e-5, atol=1e-5)
    grads = op_grad("FullyConnected", [nd.array(a) for a in ins], [y], [nd.array(head)], params)
    for g, tg in zip(grads, tgrads):
        assert_almost_equal(g, tg, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("dshape,hidden,flatten,no_bias", [((3, 4), 2, True, False), ((2, 2, 3), 3, False, False),
                                                           ((1, 3, 2), 2, True, True)])
def test_fully_connected_numeric_gradient(dshape, hidden, flatten, no_bias):
    in_size = int(np.prod(dshape[1:])) if flatten else dshape[-1]
    loc = [rand(*dshape, dtype=np.float64), rand(hidden, in_size, dtype=np.float64)]
    if not no_bias:
        loc.append(rand(hidden, dtype=np.float64))
    check_numeric_gradient("FullyConnected", loc, params=dict(num_hidden=hidden, flatten=flatten, no_bias=no_bias),
                           numeric_eps=1e-5, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("dshape,hidden,flatten,no_bias", [
    ((64, 1024), 10, True, False), ((256, 1024), 10, True, True), ((64, 10), 1024, True, False),
    ((8, 8, 1024), 10, False, False), ((4, 16, 10), 300, False, True), ((64, 2, 512), 1024, True, False)])
def test_fully_connected_skinny_and_large_vs_numpy(dtype, dshape, hidden, flatten, no_bias):
    # The benchmark's skinny products run on one thread, larger ones on all: both sides of
    # that line, forward and every gradient, against float64 numpy.
    x = rand(*dshape, dtype=dtype)
    in_size = int(np.prod(dshape[1:])) if flatten else dshape[-1]
    w, b = rand(hidden, in_size, dtype=dtype), rand(hidden, dtype=dtype)
    params = dict(num_hidden=hidden, no_bias=no_bias, flatten=flatten)
    ins = [x, w] if no_bias else [x, w, b]
    x2 = x.astype(np.float64).reshape(-1, in_size)
    w64 = w.astype(np.float64)
    ref = x2 @ w64.T + (0 if no_bias else b.astype(np.float64))
    y = nd.FullyConnected(*[nd.array(a, dtype=dtype) for a in ins], **params)
    assert y.dtype == dtype
    tol = 1e-4 if dtype == np.float32 else 1e-10
    assert_almost_equal(y.asnumpy().reshape(ref.shape), ref, rtol=tol, atol=tol)
    head = rand(*y.shape, dtype=dtype)
    h2 = head.astype(np.float64).reshape(ref.shape)
    grads = op_grad("FullyConnected", [nd.array(a, dtype=dtype) for a in ins], [y], [nd.array(head, dtype=dtype)],
                    params)
    assert_almost_equal(grads[0].reshape(x2.shape), h2 @ w64, rtol=tol, atol=tol)
    assert_almost_equal(grads[1], h2.T @ x2, rtol=tol, atol=tol)
    if not no_bias:
        assert_almost_equal(grads[2], h2.sum(axis=0), rtol=tol, atol=tol)


@pytest.mark.parametrize("m,n,k", [(70, 123, 1000), (300, 20, 1000), (1, 5000, 1000), (64, 31, 4096)])
def test_dot_transpose_b_split_into_bands_vs_numpy(m, n, k):
    # float32 products with B transposed, past 1M multiply-adds, are split into bands of
    # 16 columns (or of rows, when there are fewer columns than two bands), partial last
    # band included; dot and batch_dot, writing and adding, against float64 numpy.
    a, b = rand(m, k), rand(n, k)
    ref = a.astype(np.float64) @ b.astype(np.float64).T
    assert_almost_equal(nd.dot(nd.array(a), nd.array(b), transpose_b=True).asnumpy(), ref, rtol=1e-4, atol=1e-4)
    bd = nd.batch_dot(nd.array(np.stack([a, a])), nd.array(np.stack([b, 2 * b])), transpose_b=True).asnumpy()
    assert_almost_equal(bd, np.stack([ref, 2 * ref]), rtol=1e-4, atol=1e-4)
    xa, xb = nd.array(a), nd.array(b)
    xa.attach_grad()
    with weft.autograd.record():
        y = nd.dot(xa, xb, transpose_b=True)
    head = rand(m, n)
    y.backward(nd.array(head))
    assert_almost_equal(xa.grad.asnumpy(), head.astype(np.float64) @ b.astype(np.float64), rtol=1e-4, atol=1e-4)


# Products whose operand read across its rows (B untransposed, A transposed) has rows a
# multiple of 512 floats apart: below AVX-512 Gemm copies that operand into padded rows
# before oneDNN's sgemm. Run here and, in a child process, with oneDNN capped at AVX2 (where
# the copy happens on this machine too), writing and adding, against float64 numpy.
STRIDED_PRODUCTS = textwrap.dedent("""
    import numpy as np
    import weft
    from weft import nd
    rng = np.random.RandomState(3)
    worst = 0.0
    def check(got, ref):
        global worst
        worst = max(worst, float(np.abs(got - ref).max() / max(1.0, np.abs(ref).max())))
    for (m, k, n) in [(64, 512, 512), (3, 256, 1024), (200, 40, 1024), (512, 64, 100), (512, 128, 512), (300, 64, 256)]:
        a, b = rng.uniform(-1, 1, (m, k)).astype(np.float32), rng.uniform(-1, 1, (k, n)).astype(np.float32)
        ref = a.astype(np.float64) @ b.astype(np.float64)
        check(nd.dot(nd.array(a), nd.array(b)).asnumpy(), ref)
        at = np.ascontiguousarray(a.T)
        check(nd.dot(nd.array(at), nd.array(b), transpose_a=True).asnumpy(), ref)
    # FullyConnected at batch 64 with 512 inputs and 1024 outputs: the data gradient reads
    # the 1024x512 weight untransposed, the weight gradient the out-gradient transposed;
    # gradients added twice (grad_req add: the product accumulates into them).
    x, w, bias = (rng.uniform(-1, 1, s).astype(np.float32) for s in [(64, 512), (1024, 512), (1024,)])
    head = rng.uniform(-1, 1, (64, 1024)).astype(np.float32)
    xs, ws, bs = nd.array(x), nd.array(w), nd.array(bias)
    for arr in (xs, ws, bs):
        arr.attach_grad(grad_req="add")
    for _ in range(2):
        with weft.autograd.record():
            y = nd.FullyConnected(xs, ws, bs, num_hidden=1024)
        y.backward(nd.array(head))
    h64 = head.astype(np.float64)
    check(y.asnumpy(), x.astype(np.float64) @ w.astype(np.float64).T + bias)
    check(xs.grad.asnumpy(), 2 * h64 @ w.astype(np.float64))
    check(ws.grad.asnumpy(), 2 * h64.T @ x.astype(np.float64))
    print("worst", worst)
""")


@pytest.mark.parametrize("isa", [None, "AVX2"])
def test_products_with_rows_256_floats_apart_vs_numpy(isa):
    env = dict(os.environ)
    env.pop("ONEDNN_MAX_CPU_ISA", None)
    env.pop("DNNL_MAX_CPU_ISA", None)
    if isa:
        env["ONEDNN_MAX_CPU_ISA"] = isa
    proc = subprocess.run([sys.executable, "-c", STRIDED_PRODUCTS], env=env, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    worst = float(proc.stdout.split()[-1])
    assert worst < 1e-4, proc.stdout


def test_fully_connected_float64_and_out():
    x, w, b = rand(5, 6, dtype=np.float64), rand(4, 6, dtype=np.float64), rand(4, dtype=np.float64)
    out = nd.zeros((5, 4), dtype="float64")
    nd.FullyConnected(nd.array(x, dtype="float64"), nd.array(w, dtype="float64"), nd.array(b, dtype="float64"),
                      num_hidden=4, out=out)
    assert_almost_equal(out.asnumpy(), x @ w.T + b, rtol=1e-12, atol=1e-12)


def test_fully_connected_errors():
    x = nd.array(rand(2, 3, 4))
    with pytest.raises(WeftError, match=r"'weight' has shape \(5,3\).*data of shape \(2,3,4\).*needs \(5,12\)"):
        nd.FullyConnected(x, nd.array(rand(5, 3)), nd.array(rand(5)), num_hidden=5)
    with pytest.raises(WeftError, match=r"'bias' has shape \(4,\).*needs \(5,\)"):
        nd.FullyConnected(x, nd.array(rand(5, 12)), nd.array(rand(4)), num_hidden=5)
    with pytest.raises(WeftError, match=r"'weight' has shape \(5,12\).*flatten=False\) needs \(5,4\)"):
        nd.FullyConnected(x, nd.array(rand(5, 12)), nd.array(rand(5)), num_hidden=5, flatten=False)
    with pytest.raises(WeftError, match="num_hidden"):
        nd.FullyConnected(x, nd.array(rand(5, 12)), nd.array(rand(5)), num_hidden=0)
    with pytest.raises(WeftError, match=r"expected 3 inputs"):
        nd.FullyConnected(x, nd.array(rand(5, 12)), num_hidden=5)


@pytest.mark.parametrize("bias_shape", [(3,), (3, 1)])
def test_fully_connected_backward_gives_the_bias_gradient_in_the_bias_shape(bias_shape):
    x, w, b = rand(4, 5, dtype=np.float64), rand(3, 5, dtype=np.float64), rand(*bias_shape, dtype=np.float64)
    g = rand(4, 3, dtype=np.float64)
    dx, dw, db = nd._internal._backward_FullyConnected(
        nd.array(g, dtype="float64"), nd.array(x, dtype="float64"), nd.array(w, dtype="float64"),
        nd.array(b, dtype="float64"), num_hidden=3)
    assert db.shape == bias_shape
    assert_almost_equal(db.asnumpy(), g.sum(axis=0).reshape(bias_shape), rtol=1e-12, atol=1e-12)
    assert_almost_equal(dx.asnumpy(), g @ w, rtol=1e-12, atol=1e-12)
    assert_almost_equal(dw.asnumpy(), g.T @ x, rtol=1e-12, atol=1e-12)
    with pytest.raises(WeftError, match=r"'bias' has shape \(3,2\).*needs \(3,\)"):
        nd._internal._backward_FullyConnected(nd.array(g), nd.array(x), nd.array(w), nd.ones((3, 2)), num_hidden=3)


def test_fully_connected_gradient_is_one_backward_node_per_layer():
    # The gradient graph holds _backward_FullyConnected alone for each layer (the bias
    # gradient comes out in the bias's shape, column or not, with no reshape node after),
    # and the executor's column bias gradient is the sum of the output gradient's rows.
    x, w, b = weft.sym.var("x"), weft.sym.var("w"), weft.sym.var("b")
    y = weft.sym.FullyConnected(x, w, b, num_hidden=3, name="fc")
    xv, wv, bv = rand(4, 5), rand(3, 5), rand(3, 1)
    exe = y.bind(weft.cpu(), {"x": nd.array(xv), "w": nd.array(wv), "b": nd.array(bv)},
                 args_grad={"x": nd.zeros((4, 5)), "w": nd.zeros((3, 5)), "b": nd.zeros((3, 1))})
    names = []
    exe.set_monitor_callback(lambda name, arr: names.append(name))
    exe.forward(is_train=True)
    g = rand(4, 3)
    exe.backward(nd.array(g))
    assert names == ["fc_output", "fc_backward_output0", "fc_backward_output1", "fc_backward_output2"]
    assert_almost_equal(exe.grad_dict["b"].asnumpy(), g.sum(axis=0)[:, None], rtol=1e-5, atol=1e-6)
    assert_almost_equal(exe.grad_dict["w"].asnumpy(), g.T @ xv, rtol=1e-5, atol=1e-6)


# ---------------------------------------------------------------- Dropout
def test_dropout_identity_in_predict_mode():
    x = rand(7, 9)
    assert np.array_equal(nd.Dropout(nd.array(x), p=0.5).asnumpy(), x)
    with weft.autograd.predict_mode():
        assert np.array_equal(nd.Dropout(nd.array(x), p=0.9).asnumpy(), x)


def test_dropout_training_statistics_and_scale():
    x = RNG.uniform(1, 2, size=(400, 500)).astype(np.float32)
    for p in (0.2, 0.5, 0.8):
        with weft.autograd.train_mode():
            y = nd.Dropout(nd.array(x), p=p).asnumpy()
        kept = y != 0
        assert abs(kept.mean() - (1 - p)) < 0.005, (p, kept.mean())
        assert_almost_equal(y[kept], x[kept] / (1 - p), rtol=1e-6, atol=0)
    # mode='always' drops in predict mode too; p=0 keeps all. p=1 scales by 1 / 0: as in MXNet
    # 1.9 every mask value is 0 * inf, so the output is all NaN rather than all zeros.
    y = nd.Dropout(nd.array(x), p=0.5, mode="always").asnumpy()
    assert abs((y != 0).mean() - 0.5) < 0.005
    with weft.autograd.train_mode():
        assert np.array_equal(nd.Dropout(nd.array(x), p=0.0).asnumpy(), x)
        assert np.isnan(nd.Dropout(nd.array(x), p=1.0).asnumpy()).all()


def test_dropout_seed_reproducible_and_masks_differ():
    x = nd.ones((64, 33))
    with weft.autograd.train_mode():
        weft.random.seed(11)
        a = nd.Dropout(x, p=0.5).asnumpy()
        b = nd.Dropout(x, p=0.5).asnumpy()
        weft.random.seed(11)
        c = nd.Dropout(x, p=0.5).asnumpy()
    assert np.array_equal(a, c)
    assert not np.array_equal(a, b)


def test_dropout_axes_and_backward_uses_mask():
    x = rand(6, 5, 8)
    y, mask = nd.zeros((6, 5, 8)), nd.zeros((6, 1, 8))
    with weft.autograd.train_mode():
        nd.invoke("Dropout", [nd.array(x)], {"p": 0.4, "axes": (1,)}, out=[y, mask])
    m = mask.asnumpy()
    assert set(np.unique(m)) <= {0.0, np.float32(1 / 0.6)}
    assert_almost_equal(y.asnumpy(), x * m, rtol=1e-6, atol=0)
    head = rand(6, 5, 8)
    (gx,) = op_grad("Dropout", [nd.array(x)], [y, mask], [nd.array(head), nd.zeros((6, 1, 8))],
                    {"p": 0.4, "axes": (1,)})
    assert_almost_equal(gx, head * m, rtol=1e-6, atol=0)
    # Without axes: the mask has the data's shape; the gradient is masked the same way.
    y2, mask2 = nd.zeros((4, 9)), nd.zeros((4, 9))
    with weft.autograd.train_mode():
        nd.invoke("Dropout", [nd.array(x[0, :4, :].reshape(4, 8).repeat(2, 1)[:, :9])], {"p": 0.5}, out=[y2, mask2])
    h2 = rand(4, 9)
    (g2,) = op_grad("Dropout", [nd.ones((4, 9))], [y2, mask2], [nd.array(h2), nd.zeros((4, 9))], {"p": 0.5})
    assert_almost_equal(g2, h2 * mask2.asnumpy(), rtol=1e-6, atol=0)
    assert ((mask2.asnumpy() == 0) == (y2.asnumpy() == 0)).all()


def test_dropout_errors():
    with pytest.raises(WeftError, match="'p'"):
        nd.Dropout(nd.ones((2, 2)), p=1.5)
    with pytest.raises(WeftError, match="'mode'"):
        nd.Dropout(nd.ones((2, 2)), mode="sometimes")
    with pytest.raises(WeftError, match="'axes' = 3 is out of range"):
        nd.Dropout(nd.ones((2, 2)), axes=(3,))


# ---------------------------------------------------------------- Embedding
@pytest.mark.parametrize("ishape,vocab,dim,idtype", [((1,), 4, 3, np.int32), ((5,), 7, 1, np.float32),
                                                      ((3, 4), 10, 6, np.int64), ((2, 3, 5), 3, 17, np.float64)])
def test_embedding_vs_torch(ishape, vocab, dim, idtype):
    idx = RNG.randint(0, vocab, size=ishape)
    w = rand(vocab, dim)
    y = nd.Embedding(nd.array(idx.astype(idtype), dtype=np.dtype(idtype).name), nd.array(w), input_dim=vocab,
                     output_dim=dim)
    ty = F.embedding(torch.tensor(idx), torch.tensor(w))
    assert y.shape == ishape + (dim,)
    assert_almost_equal(y.asnumpy(), ty.numpy(), rtol=0, atol=0)
    wt = torch.tensor(w, requires_grad=True)
    head = rand(*y.shape)
    F.embedding(torch.tensor(idx), wt).backward(torch.tensor(head))
    gi, gw = op_grad("Embedding", [nd.array(idx.astype(idtype), dtype=np.dtype(idtype).name), nd.array(w)], [y],
                     [nd.array(head)], dict(input_dim=vocab, output_dim=dim))
    assert gi is None
    assert_almost_equal(gw, wt.grad.numpy(), rtol=1e-5, atol=1e-6)


def test_embedding_clips_out_of_range_and_numeric_gradient():
    w = rand(4, 3)
    y = nd.Embedding(nd.array([-3, 0, 3, 9, 2.7]), nd.array(w), input_dim=4, output_dim=3).asnumpy()
    assert_almost_equal(y, w[[0, 0, 3, 3, 2]], rtol=0, atol=0)
    check_numeric_gradient("Embedding", [np.array([[1, 0], [3, 1]]), rand(4, 2, dtype=np.float64)],
                           params=dict(input_dim=4, output_dim=2, dtype="float64"), grad_nodes=[1],
                           numeric_eps=1e-5, rtol=1e-6, atol=1e-8)


def test_embedding_errors():
    with pytest.raises(WeftError, match=r"'weight' has shape \(5,3\) but the operator expects \(4,3\)"):
        nd.Embedding(nd.array([1, 2]), nd.array(rand(5, 3)), input_dim=4, output_dim=3)
    # the weight's dtype decides (MXNet's rule); an output of another dtype is refused
    assert nd.Embedding(nd.array([1, 2]), nd.array(rand(4, 3), dtype="float64"), input_dim=4,
                        output_dim=3).dtype == np.float64
    with pytest.raises(WeftError, match="float32.*float64|float64.*float32"):
        nd.Embedding(nd.array([1, 2]), nd.array(rand(4, 3), dtype="float64"), input_dim=4, output_dim=3,
                     out=nd.zeros((2, 3))).wait_to_read()
    with pytest.raises(WeftError, match="output_dim"):
        nd.Embedding(nd.array([1, 2]), nd.array(rand(4, 3)), input_dim=4)


# ---------------------------------------------------------------- Flatten, Concat, Cast aliases; SwapAxis
def test_capitalised_aliases():
    x = rand(2, 3, 4)
    assert nd.Flatten(nd.array(x)).shape == (2, 12)
    assert_almost_equal(nd.Concat(nd.array(x), nd.array(x), dim=2).asnumpy(), np.concatenate([x, x], 2))
    assert nd.Cast(nd.array(x), dtype="float64").dtype == np.float64


@pytest.mark.parametrize("shape,d1,d2", [((2, 3, 4), 0, 2), ((1, 5), 1, 0), ((2, 3, 4, 5), 1, -1), ((3, 4), 1, 1),
                                         ((7, 1, 3, 2, 2), 2, 3)])
def test_swapaxis(shape, d1, d2):
    x = rand(*shape)
    y = nd.SwapAxis(nd.array(x), dim1=d1, dim2=d2)
    assert_almost_equal(y.asnumpy(), np.swapaxes(x, d1, d2), rtol=0, atol=0)
    assert_almost_equal(nd.swapaxes(nd.array(x), dim1=d1, dim2=d2).asnumpy(), np.swapaxes(x, d1, d2), rtol=0, atol=0)
    head = rand(*y.shape)
    (g,) = op_grad("SwapAxis", [nd.array(x)], [y], [nd.array(head)], dict(dim1=d1, dim2=d2))
    assert_almost_equal(g, np.swapaxes(head, d1, d2), rtol=0, atol=0)


def test_swapaxis_errors():
    with pytest.raises(WeftError, match="'dim2' = 3 is out of range"):
        nd.SwapAxis(nd.ones((2, 3)), dim1=0, dim2=3)


# ---------------------------------------------------------------- Pad
TORCH_MODE = {"constant": "constant", "edge": "replicate", "reflect": "reflect"}


@pytest.mark.parametrize("shape,pads", [((1, 1, 3, 4), (1, 2, 0, 1)), ((2, 3, 5, 5), (2, 2, 2, 2)),
                                        ((1, 2, 3, 4, 5), (1, 0, 2, 1, 0, 3)), ((2, 1, 2, 3, 4), (1, 1, 1, 1, 1, 1))])
@pytest.mark.parametrize("mode", ["constant", "edge", "reflect"])
def test_pad_vs_torch(shape, pads, mode):
    x = rand(*shape)
    pad_width = (0, 0, 0, 0) + pads
    y = nd.Pad(nd.array(x), mode=mode, pad_width=pad_width, constant_value=1.5)
    # torch lists the pads last axis first.
    tpads = []
    for d in reversed(range(len(pads) // 2)):
        tpads += [pads[2 * d], pads[2 * d + 1]]
    kw = {"value": 1.5} if mode == "constant" else {}
    head = rand(*y.shape)
    ty, (tg,) = torch_grads(lambda t: F.pad(t, tpads, mode=TORCH_MODE[mode], **kw), [x], head)
    assert_almost_equal(y.asnumpy(), ty, rtol=0, atol=0)
    (g,) = op_grad("Pad", [nd.array(x)], [y], [nd.array(head)], dict(mode=mode, pad_width=pad_width,
                                                                         constant_value=1.5))
    assert_almost_equal(g, tg, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("mode", ["constant", "edge", "reflect"])
def test_pad_numeric_gradient(mode):
    check_numeric_gradient("Pad", [rand(1, 2, 3, 3, dtype=np.float64)],
                           params=dict(mode=mode, pad_width=(0, 0, 0, 0, 2, 1, 1, 2)), numeric_eps=1e-5, rtol=1e-6,
                           atol=1e-8)


def test_pad_errors():
    x = nd.ones((1, 1, 3, 3))
    with pytest.raises(WeftError, match="only the spatial axes"):
        nd.Pad(x, pad_width=(1, 0, 0, 0, 1, 1, 1, 1))
    with pytest.raises(WeftError, match=r"must have 8 entries.*got \(1,1\)"):
        nd.Pad(x, pad_width=(1, 1))
    with pytest.raises(WeftError,
                       match=r"'reflect' needs each pad smaller than its axis.*axis 2 of size 3 by \(3, 0\)"):
        nd.Pad(x, mode="reflect", pad_width=(0, 0, 0, 0, 3, 0, 0, 0))
    with pytest.raises(WeftError, match=r"expected 4-D or 5-D data, got shape \(3,3\)"):
        nd.Pad(nd.ones((3, 3)), pad_width=(1, 1, 1, 1))
    with pytest.raises(WeftError, match="'mode'"):
        nd.Pad(x, mode="wrap", pad_width=(0, 0, 0, 0, 1, 1, 1, 1))


# ---------------------------------------------------------------- UpSampling
@pytest.mark.parametrize("shape,scale", [((1, 1, 2, 3), 2), ((2, 3, 3, 3), 3), ((1, 2, 1, 1), 4), ((2, 1, 5, 4), 1)])
def test_upsampling_nearest_vs_torch(shape, scale):
    x = rand(*shape)
    y = nd.UpSampling(nd.array(x), scale=scale, sample_type="nearest")
    head = rand(*y.shape)
    ty, (tg,) = torch_grads(lambda t: F.interpolate(t, scale_factor=scale, mode="nearest"), [x], head)
    assert_almost_equal(y.asnumpy(), ty, rtol=0, atol=0)
    (g,) = op_grad("UpSampling", [nd.array(x)], [y], [nd.array(head)], dict(scale=scale, sample_type="nearest",
                                                                              num_args=1))
    assert_almost_equal(g, tg, rtol=1e-5, atol=1e-6)


def test_upsampling_nearest_multi_input():
    a, b = rand(2, 2, 2, 3), rand(2, 3, 4, 6)
    up = lambda v, s: v.repeat(s, 2).repeat(s, 3)
    y = nd.UpSampling(nd.array(a), nd.array(b), scale=2, sample_type="nearest")
    assert_almost_equal(y.asnumpy(), np.concatenate([up(a, 2), b], 1), rtol=0, atol=0)
    c = rand(2, 2, 1, 1)
    y = nd.UpSampling(nd.array(a), nd.array(c), scale=2, sample_type="nearest", multi_input_mode="sum")
    # c (1x1) is repeated 4x6 times: a broadcast.
    assert_almost_equal(y.asnumpy(), up(a, 2) + np.broadcast_to(c, (2, 2, 4, 6)), rtol=1e-6, atol=1e-6)
    check_numeric_gradient("UpSampling", [rand(1, 1, 2, 2, dtype=np.float64), rand(1, 2, 1, 2, dtype=np.float64)],
                           params=dict(scale=2, sample_type="nearest", num_args=2), numeric_eps=1e-5, rtol=1e-6,
                           atol=1e-8)
    check_numeric_gradient("UpSampling", [rand(1, 2, 2, 2, dtype=np.float64), rand(1, 2, 1, 1, dtype=np.float64)],
                           params=dict(scale=2, sample_type="nearest", num_args=2, multi_input_mode="sum"),
                           numeric_eps=1e-5, rtol=1e-6, atol=1e-8)


def bilinear_weight(channels, scale):
    """MXNet's Bilinear initializer for the UpSampling weight (C, 1, k, k)."""
    k = 2 * scale - scale % 2
    f = np.ceil(k / 2.0)
    c = (2 * f - 1 - f % 2) / (2.0 * f)
    w = np.zeros((channels, 1, k, k), dtype=np.float32)
    for i in range(k * k):
        x, y = i % k, (i // k) % k
        w[:, 0, y, x] = (1 - abs(x / f - c)) * (1 - abs(y / f - c))
    return w


@pytest.mark.parametrize("shape,scale", [((1, 1, 3, 3), 2), ((2, 3, 4, 5), 2), ((1, 2, 3, 2), 3), ((1, 1, 2, 2), 4)])
def test_upsampling_bilinear_vs_torch_deconvolution(shape, scale):
    x = rand(*shape)
    w = bilinear_weight(shape[1], scale)
    y = nd.UpSampling(nd.array(x), nd.array(w), scale=scale, sample_type="bilinear", num_filter=shape[1])
    assert y.shape == (shape[0], shape[1], shape[2] * scale, shape[3] * scale)
    pad = int(np.ceil((scale - 1) / 2.0))
    ref = lambda xt, wt: F.conv_transpose2d(xt, wt, stride=scale, padding=pad, groups=shape[1])
    head = rand(*y.shape)
    ty, (tgx, tgw) = torch_grads(ref, [x, w], head)
    assert_almost_equal(y.asnumpy(), ty, rtol=1e-5, atol=1e-6)
    gx, gw = op_grad("UpSampling", [nd.array(x), nd.array(w)], [y], [nd.array(head)],
                     dict(scale=scale, sample_type="bilinear", num_args=2))
    assert_almost_equal(gx, tgx, rtol=1e-5, atol=1e-5)
    assert_almost_equal(gw, tgw, rtol=1e-5, atol=1e-5)


def test_upsampling_bilinear_numeric_gradient_and_interior():
    check_numeric_gradient("UpSampling", [rand(1, 2, 2, 3, dtype=np.float64), rand(2, 1, 4, 4, dtype=np.float64)],
                           params=dict(scale=2, sample_type="bilinear", num_args=2), numeric_eps=1e-5, rtol=1e-6,
                           atol=1e-8)
    # With the bilinear kernel the interior interpolates linearly: a ramp stays a ramp.
    x = np.arange(6, dtype=np.float32).reshape(1, 1, 1, 6).repeat(4, 2)
    y = nd.UpSampling(nd.array(x), nd.array(bilinear_weight(1, 2)), scale=2, sample_type="bilinear").asnumpy()
    assert_almost_equal(np.diff(y[0, 0, 3, 2:-2]), np.full(7, 0.5, dtype=np.float32), rtol=1e-6, atol=1e-6)


def test_upsampling_errors():
    with pytest.raises(WeftError, match=r"cannot be up-sampled to 4x4.*must divide"):
        nd.UpSampling(nd.ones((1, 1, 2, 2)), nd.ones((1, 1, 3, 3)), scale=2, sample_type="nearest")
    with pytest.raises(WeftError,
                       match=r"'weight' has shape \(2,1,3,3\) but data of shape \(1,2,2,2\) "
                             r"with scale=2 needs \(2,1,4,4\)"):
        nd.UpSampling(nd.ones((1, 2, 2, 2)), nd.ones((2, 1, 3, 3)), scale=2, sample_type="bilinear")
    with pytest.raises(WeftError, match=r"must be 4-D \(N, C, H, W\), got shape \(2,2\)"):
        nd.UpSampling(nd.ones((2, 2)), scale=2, sample_type="nearest")
    with pytest.raises(WeftError, match="'sum' needs equal channels"):
        nd.UpSampling(nd.ones((1, 1, 2, 2)), nd.ones((1, 2, 2, 2)), scale=1, sample_type="nearest",
                      multi_input_mode="sum")
    with pytest.raises(WeftError, match="'sample_type'"):
        nd.UpSampling(nd.ones((1, 1, 2, 2)), scale=2, sample_type="cubic")


# ---------------------------------------------------------------- Sequence operators
def np_seq_mask(x, lens, value, axis):
    y = x.copy()
    for b, n in enumerate(lens):
        idx = [slice(None)] * x.ndim
        idx[1 - axis] = b
        idx[axis] = slice(int(n), None)
        y[tuple(idx)] = value
    return y


@pytest.mark.parametrize("shape,axis", [((5, 3), 0), ((4, 1, 3), 0), ((2, 6, 3, 2), 1), ((1, 7), 1)])
def test_sequence_mask(shape, axis):
    x = rand(*shape)
    B, T = shape[1 - axis], shape[axis]
    lens = RNG.randint(0, T + 1, size=B).astype(np.float32)
    y = nd.SequenceMask(nd.array(x), nd.array(lens), use_sequence_length=True, value=-2.5, axis=axis)
    assert_almost_equal(y.asnumpy(), np_seq_mask(x, lens, -2.5, axis), rtol=0, atol=0)
    assert_almost_equal(nd.SequenceMask(nd.array(x), axis=axis).asnumpy(), x, rtol=0, atol=0)
    head = rand(*shape)
    g, gl = op_grad("SequenceMask", [nd.array(x), nd.array(lens)], [y], [nd.array(head)],
                    dict(use_sequence_length=True, value=-2.5, axis=axis))
    assert gl is None
    assert_almost_equal(g, np_seq_mask(head, lens, 0, axis), rtol=0, atol=0)


def test_sequence_mask_int_lengths_and_clipping():
    x = rand(4, 3)
    y = nd.SequenceMask(nd.array(x), nd.array(np.array([9, -1, 2], dtype=np.int32), dtype="int32"),
                        use_sequence_length=True)
    assert_almost_equal(y.asnumpy(), np_seq_mask(x, [4, 0, 2], 0, 0), rtol=0, atol=0)


@pytest.mark.parametrize("shape,axis,use_len", [((5, 3), 0, True), ((4, 2, 3), 0, False), ((2, 6, 3), 1, True),
                                                ((1, 1), 0, True), ((3, 4, 2, 2), 1, False)])
def test_sequence_last(shape, axis, use_len):
    x = rand(*shape)
    B, T = shape[1 - axis], shape[axis]
    lens = RNG.randint(1, T + 1, size=B).astype(np.float32) if use_len else np.full(B, T)
    ins = [nd.array(x)] + ([nd.array(lens)] if use_len else [])
    y = nd.SequenceLast(*ins, use_sequence_length=use_len, axis=axis)
    xt = x if axis == 0 else np.swapaxes(x, 0, 1)
    ref = np.stack([xt[int(lens[b]) - 1, b] for b in range(B)])
    assert_almost_equal(y.asnumpy(), ref, rtol=0, atol=0)
    head = rand(*ref.shape)
    grads = op_grad("SequenceLast", ins, [y], [nd.array(head)], dict(use_sequence_length=use_len, axis=axis))
    gref = np.zeros_like(xt)
    for b in range(B):
        gref[int(lens[b]) - 1, b] = head[b]
    assert_almost_equal(grads[0], gref if axis == 0 else np.swapaxes(gref, 0, 1), rtol=0, atol=0)
    check_numeric_gradient("SequenceLast", [x.astype(np.float64)] + ([lens] if use_len else []),
                           params=dict(use_sequence_length=use_len, axis=axis), grad_nodes=[0], numeric_eps=1e-5,
                           rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("shape,use_len", [((5, 3), True), ((4, 2, 3), False), ((6, 1, 2, 2), True), ((1, 4), True)])
def test_sequence_reverse(shape, use_len):
    x = rand(*shape)
    T, B = shape[0], shape[1]
    lens = RNG.randint(0, T + 1, size=B).astype(np.float32) if use_len else np.full(B, T)
    ins = [nd.array(x)] + ([nd.array(lens)] if use_len else [])
    y = nd.SequenceReverse(*ins, use_sequence_length=use_len)
    ref = x.copy()
    for b in range(B):
        n = int(lens[b])
        ref[:n, b] = x[:n, b][::-1]
    assert_almost_equal(y.asnumpy(), ref, rtol=0, atol=0)
    head = rand(*shape)
    grads = op_grad("SequenceReverse", ins, [y], [nd.array(head)], dict(use_sequence_length=use_len))
    gref = head.copy()
    for b in range(B):
        n = int(lens[b])
        gref[:n, b] = head[:n, b][::-1]
    assert_almost_equal(grads[0], gref, rtol=0, atol=0)
    if use_len:
        assert grads[1] is None


def test_sequence_errors():
    with pytest.raises(WeftError, match=r"'sequence_length' has shape \(2,\) but data of shape \(4,3\).*needs \(3,\)"):
        nd.SequenceMask(nd.ones((4, 3)), nd.ones((2,)), use_sequence_length=True)
    with pytest.raises(WeftError, match=r"at least 2 dimensions.*got shape \(4,\)"):
        nd.SequenceLast(nd.ones((4,)))
    with pytest.raises(WeftError, match="'axis'"):
        nd.SequenceReverse(nd.ones((4, 3)), axis=1)
    with pytest.raises(WeftError, match="'axis'"):
        nd.SequenceMask(nd.ones((4, 3)), axis=2)
    with pytest.raises(WeftError, match="expected 2 inputs"):
        nd.SequenceLast(nd.ones((4, 3)), use_sequence_length=True)
