"""Convolution, Deconvolution and Pooling: forward and gradients against PyTorch, numeric
gradient checks in float64, and the parameter errors."""
import numpy as np
import pytest
import torch
import torch.nn.functional as F

import weft
from weft import nd
from weft.base import _api
from weft.ndarray.ndarray import NDArray, _param_str
from weft.test_utils import assert_almost_equal, check_numeric_gradient

torch.set_num_threads(2)
RNG = np.random.RandomState(7)


def rand(*shape, dtype=np.float32, lo=-1.0, hi=1.0):
    return RNG.uniform(lo, hi, size=shape).astype(dtype)


def run_with_grad(op, arrays, params, head, dtype):
    """Forward output and the gradient of sum(out * head) for every input, through the
    operator's registered FGradient."""
    inputs = [nd.array(a, dtype=dtype) for a in arrays]
    out = nd.invoke(op, inputs, params)
    outs = out if isinstance(out, list) else [out]
    keys = [k for k, v in params.items() if v is not None]
    vals = [_param_str(params[k]) for k in keys]
    grads = _api.weft_imperative_gradient(_api.weft_op_get(op), len(inputs), inputs, len(outs), outs,
                                          [nd.array(head, dtype=dtype)], len(keys), keys, vals)
    return outs[0].asnumpy(), [NDArray(g).asnumpy() for g in grads]


def tol(dtype):
    return (1e-4, 1e-4) if dtype == np.float32 else (1e-9, 1e-9)


def compare(op, arrays, params, torch_fn, dtype, rtol=None, atol=None):
    arrays = [a.astype(dtype) for a in arrays]
    ts = [torch.tensor(a, requires_grad=True) for a in arrays]
    ref = torch_fn(*ts)
    head = rand(*ref.shape, dtype=dtype)
    ref.backward(torch.tensor(head))
    out, grads = run_with_grad(op, arrays, params, head, dtype)
    r, a = tol(dtype)
    r, a = rtol or r, atol or a
    assert out.shape == tuple(ref.shape)
    assert_almost_equal(out, ref.detach().numpy(), rtol=r, atol=a, names=(op, "torch"))
    for i, (g, t) in enumerate(zip(grads, ts)):
        assert_almost_equal(g, t.grad.numpy(), rtol=r, atol=a, names=("%s grad %d" % (op, i), "torch grad"))


CONV_FNS = {1: F.conv1d, 2: F.conv2d, 3: F.conv3d}
DECONV_FNS = {1: F.conv_transpose1d, 2: F.conv_transpose2d, 3: F.conv_transpose3d}

# (data shape, num_filter, kernel, stride, pad, dilate, groups, bias)
CONV_CASES = [
    ((2, 3, 11), 4, (3,), (1,), (1,), (1,), 1, True),
    ((1, 4, 13), 6, (5,), (2,), (2,), (2,), 2, False),
    ((2, 3, 9, 8), 5, (3, 3), (1, 1), (1, 1), (1, 1), 1, True),
    ((1, 4, 10, 7), 6, (3, 2), (2, 3), (1, 0), (1, 1), 2, True),
    ((2, 6, 9, 9), 6, (3, 3), (2, 2), (1, 1), (1, 1), 6, True),       # depthwise
    ((2, 4, 12, 11), 8, (3, 3), (1, 2), (2, 1), (2, 2), 4, False),    # dilated, grouped
    ((3, 16, 8, 8), 32, (1, 1), (1, 1), (0, 0), (1, 1), 1, True),     # pointwise
    ((1, 3, 7, 5), 2, (7, 5), (1, 1), (0, 0), (1, 1), 1, True),       # kernel = input
    ((2, 2, 5, 6, 7), 4, (3, 2, 3), (1, 2, 1), (1, 0, 1), (1, 1, 2), 2, True),
    ((1, 32, 14, 14), 32, (3, 3), (1, 1), (1, 1), (1, 1), 1, True),
    # One input channel: the weight gradient runs OneChannelWeightsGrad (conv_kernels.cc).
    ((3, 1, 14, 13), 5, (5, 5), (1, 1), (0, 0), (1, 1), 1, True),     # LeNet's first layer
    ((2, 1, 11, 12), 4, (3, 4), (2, 3), (1, 2), (2, 1), 1, False),    # strided, padded, dilated
    ((1, 1, 6, 5), 2, (3, 3), (1, 1), (2, 2), (1, 1), 1, True),       # taps reading only padding
    ((2, 1, 15), 3, (4,), (2,), (3,), (1,), 1, True),                 # 1-D
    # Channels oneDNN pads to 32 x 64 on AVX-512: a gemm convolution there (conv_kernels.cc).
    ((3, 20, 12, 12), 50, (5, 5), (1, 1), (0, 0), (1, 1), 1, True),   # LeNet's second layer
]


def conv_params(nf, k, s, p, d, g, bias):
    return dict(kernel=k, num_filter=nf, stride=s, pad=p, dilate=d, num_group=g, no_bias=not bias)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("case", CONV_CASES)
def test_convolution_vs_torch(case, dtype):
    shape, nf, k, s, p, d, g, bias = case
    nd_ = len(k)
    w = rand(nf, shape[1] // g, *k)
    arrays = [rand(*shape), w] + ([rand(nf)] if bias else [])

    def ref(x, w, b=None):
        return CONV_FNS[nd_](x, w, b, stride=s, padding=p, dilation=d, groups=g)

    compare("Convolution", arrays, conv_params(nf, k, s, p, d, g, bias), ref, dtype)


# Shapes that take the float32 oneDNN paths chosen by geometry in conv_kernels.cc (which
# one each takes is checked by test_convolution_fast_paths_taken): Winograd for 3x3 /
# stride 1 at batch >= 4, blocked 1x1 for outputs of at most 16x16 cells, NCHW gemm 1x1
# above that, NCHW gemm for the data gradient of a few-channel input (the 7x7 stem).
FAST_PATH_CASES = [
    ((4, 16, 12, 12), 32, (3, 3), (1, 1), (1, 1), True),    # Winograd
    ((5, 32, 9, 13), 16, (3, 3), (1, 1), (1, 1), False),    # Winograd, odd sizes
    ((4, 16, 8, 8), 16, (3, 3), (1, 1), (0, 0), True),      # Winograd, no padding
    ((3, 32, 7, 7), 48, (1, 1), (1, 1), (0, 0), True),      # blocked 1x1
    ((1, 16, 13, 15), 32, (1, 1), (1, 1), (0, 0), False),   # blocked 1x1, batch 1, odd
    ((2, 16, 20, 17), 32, (1, 1), (1, 1), (0, 0), True),    # NCHW gemm 1x1
    ((2, 3, 23, 21), 16, (7, 7), (2, 2), (3, 3), False),    # stem: NCHW data gradient
    ((1, 3, 16, 16), 16, (7, 7), (2, 2), (3, 3), True),     # stem, batch 1
]


@pytest.mark.parametrize("case", FAST_PATH_CASES)
def test_convolution_fast_paths_vs_torch(case):
    shape, nf, k, s, p, bias = case
    arrays = [rand(*shape), rand(nf, shape[1], *k, lo=-0.3, hi=0.3)] + ([rand(nf)] if bias else [])

    def ref(x, w, b=None):
        return F.conv2d(x, w, b, stride=s, padding=p)

    # Winograd rounds differently from a direct sum; 1e-4 of the output scale (about 1-5)
    # still catches any wrong index.
    compare("Convolution", arrays, conv_params(nf, k, s, p, (1, 1), 1, bias), ref, np.float32, rtol=1e-4,
            atol=2e-4)


def test_convolution_fast_path_accumulates():
    # grad_req "add" on the Winograd and blocked 1x1 paths: two backward passes give twice
    # torch's gradients; out= overwrites whatever the output held.
    from weft import autograd
    for shape, nf, k, p in [((4, 16, 10, 10), 16, (3, 3), (1, 1)), ((2, 32, 7, 7), 16, (1, 1), (0, 0))]:
        x_np, w_np = rand(*shape), rand(nf, shape[1], *k, lo=-0.3, hi=0.3)
        head = rand(shape[0], nf, *shape[2:])
        xt, wt = torch.tensor(x_np, requires_grad=True), torch.tensor(w_np, requires_grad=True)
        yt = F.conv2d(xt, wt, padding=p)
        yt.backward(torch.tensor(head))
        x, w = nd.array(x_np), nd.array(w_np)
        x.attach_grad(grad_req="add")
        w.attach_grad(grad_req="add")
        for _ in range(2):
            with autograd.record():
                y = nd.Convolution(x, w, kernel=k, pad=p, num_filter=nf, no_bias=True)
            y.backward(nd.array(head))
        assert_almost_equal(x.grad.asnumpy(), 2 * xt.grad.numpy(), rtol=1e-4, atol=2e-4)
        assert_almost_equal(w.grad.asnumpy(), 2 * wt.grad.numpy(), rtol=1e-4, atol=2e-4)
        out = nd.array(rand(*y.shape))
        nd.Convolution(x, w, kernel=k, pad=p, num_filter=nf, no_bias=True, out=out)
        assert_almost_equal(out.asnumpy(), yt.detach().numpy(), rtol=1e-4, atol=2e-4)


def _dnnl_verbose(code, env=None):
    """Runs `code` (with weft imported) in a child with oneDNN's verbose log on; returns the
    implementations of the convolution primitives it ran, as (pass, implementation)."""
    import os
    import subprocess
    import sys
    full_env = dict(os.environ, DNNL_VERBOSE="1", **(env or {}))
    out = subprocess.run([sys.executable, "-c", "import numpy as np\nfrom weft import nd\n" + code],
                         env=full_env, capture_output=True, text=True, check=True).stdout
    runs = set()
    for line in out.splitlines():
        f = line.split(",")
        if len(f) > 5 and f[1] == "exec" and f[3] == "convolution":
            runs.add((f[5], f[4]))
        elif len(f) > 5 and f[1] == "exec" and f[3] == "reorder" and "src_f32::blocked:abcd" in f[6]:
            runs.add(("reorder in", f[-2]))
    return runs


_PATH_CODE = """
x = nd.array(np.ones({shape}, np.float32)); w = nd.array(np.ones(({nf}, {c}) + {k}, np.float32))
p = dict(kernel={k}, stride={s}, pad={p}, num_filter={nf}, no_bias=True)
y = nd.Convolution(x, w, **p)
nd.invoke("_backward_Convolution", [nd.ones(y.shape), x, w], p)
nd.waitall()
"""


def _paths(shape, nf, k, s, p, env=None):
    return _dnnl_verbose(_PATH_CODE.format(shape=shape, nf=nf, c=shape[1], k=k, s=s, p=p), env)


def _cpu_flags():
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("flags"):
                return set(line.split(":", 1)[1].split())
    return set()


# oneDNN 2.6 has Winograd kernels for AVX-512 only (avx512_core); elsewhere the operator
# asks for Winograd, is refused and takes the direct kernel.
HAS_AVX512_CORE = {"avx512f", "avx512bw", "avx512vl", "avx512dq"} <= _cpu_flags()


def test_convolution_fast_paths_taken():
    passes = {"forward_training", "backward_data", "backward_weights"}
    wino = _paths((4, 16, 12, 12), 32, (3, 3), (1, 1), (1, 1))
    if HAS_AVX512_CORE:
        assert {ps for ps, impl in wino if "wino" in impl} == passes, wino
    else:
        assert {ps for ps, impl in wino if impl.startswith("jit:")} == passes, wino
    # Off by the environment, and below batch 4: the direct kernel.
    for runs in [_paths((4, 16, 12, 12), 32, (3, 3), (1, 1), (1, 1), {"WEFT_CONV_WINOGRAD": "0"}),
                 _paths((3, 16, 12, 12), 32, (3, 3), (1, 1), (1, 1))]:
        assert runs and not any("wino" in impl for _, impl in runs), runs
    small = _paths((3, 32, 7, 7), 48, (1, 1), (1, 1), (0, 0))
    assert {ps for ps, impl in small if impl.startswith("jit_1x1")} == passes, small
    big = _paths((2, 16, 20, 17), 32, (1, 1), (1, 1), (0, 0))
    assert {ps for ps, impl in big if "gemm" in impl} == passes, big
    # The backward reorders dy (4x32x12x12) once for both passes. Every reorder of a plain
    # array is seen once in the set; with two the verbose log would list it twice, so count.
    code = _PATH_CODE.format(shape=(4, 16, 12, 12), nf=32, c=16, k=(3, 3), s=(1, 1), p=(1, 1))
    code = code.replace('nd.invoke("_backward_Convolution"', 'nd.waitall(); print("BACKWARD")\n'
                        'nd.invoke("_backward_Convolution"')
    import os
    import subprocess
    import sys
    out = subprocess.run([sys.executable, "-c", "import numpy as np\nfrom weft import nd\n" + code],
                         env=dict(os.environ, DNNL_VERBOSE="1"), capture_output=True, text=True,
                         check=True).stdout.split("BACKWARD")[1]
    dy_in = [l for l in out.splitlines() if ",reorder," in l and "src_f32::blocked:abcd" in l
             and l.split(",")[-2] == "4x32x12x12"]
    assert len(dy_in) == 1, dy_in
    # LeNet's second layer: 20 -> 50 channels are 32 x 64 in 16-channel blocks, 24 x 56 in
    # 8-channel ones, so only AVX-512 sends it to the gemm convolution.
    lenet2 = _paths((4, 20, 12, 12), 50, (5, 5), (1, 1), (0, 0))
    kind = "gemm" if HAS_AVX512_CORE else "jit:"
    assert {ps for ps, impl in lenet2 if kind in impl} == passes, lenet2
    stem = dict(_paths((2, 3, 23, 21), 16, (7, 7), (2, 2), (3, 3)))
    assert "gemm" in stem["backward_data"] and "gemm" not in stem["forward_training"], stem
    assert "gemm" not in stem["backward_weights"], stem
    # One channel (a grayscale image): the weight gradient is Weft's own loop
    # (OneChannelWeightsGrad), so oneDNN runs no backward_weights primitive.
    gray = dict(_paths((2, 1, 16, 16), 8, (5, 5), (1, 1), (0, 0)))
    assert "backward_weights" not in gray and "gemm" not in gray["forward_training"], gray


# (data shape, num_filter, kernel, stride, pad, adj, dilate, groups, bias)
DECONV_CASES = [
    ((2, 3, 7), 4, (3,), (2,), (1,), (1,), (1,), 1, True),
    ((1, 4, 6, 5), 6, (3, 3), (1, 1), (1, 1), (0, 0), (1, 1), 1, True),
    ((2, 4, 5, 6), 6, (4, 3), (2, 3), (1, 0), (1, 2), (1, 1), 2, False),
    ((1, 6, 5, 5), 6, (3, 3), (2, 2), (0, 0), (1, 1), (1, 1), 6, True),  # depthwise, adj > pad
    ((2, 2, 4, 5), 4, (3, 3), (1, 2), (2, 1), (0, 1), (2, 1), 2, True),  # dilated
    ((1, 2, 3, 4, 3), 3, (2, 3, 2), (2, 1, 2), (0, 1, 1), (1, 0, 0), (1, 1, 1), 1, True),
]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("case", DECONV_CASES)
def test_deconvolution_vs_torch(case, dtype):
    shape, nf, k, s, p, adj, d, g, bias = case
    w = rand(shape[1], nf // g, *k)
    arrays = [rand(*shape), w] + ([rand(nf)] if bias else [])
    params = dict(kernel=k, num_filter=nf, stride=s, pad=p, adj=adj, dilate=d, num_group=g, no_bias=not bias)

    def ref(x, w, b=None):
        return DECONV_FNS[len(k)](x, w, b, stride=s, padding=p, output_padding=adj, groups=g, dilation=d)

    compare("Deconvolution", arrays, params, ref, dtype)


def test_deconvolution_target_shape():
    # full = 2 * (5 - 1) + 3 = 11 per axis; target 10 takes pad 1 and adj 1, target 9 pad 1.
    x, w = rand(1, 3, 5, 5), rand(3, 2, 3, 3)
    out = nd.Deconvolution(nd.array(x), nd.array(w), kernel=(3, 3), stride=(2, 2), num_filter=2,
                           target_shape=(10, 9)).asnumpy()
    assert out.shape == (1, 2, 10, 9)
    full = F.conv_transpose2d(torch.tensor(x), torch.tensor(w), stride=2).numpy()
    assert_almost_equal(out, full[:, :, 1:11, 1:10], rtol=1e-4, atol=1e-5)


# ---------------------------------------------------------------- pooling
def pool_ref(kind, nd_, k, s, p, ceil=False, include_pad=True):
    def fn(x):
        if kind == "max":
            return getattr(F, "max_pool%dd" % nd_)(x, k, s, p, ceil_mode=ceil)
        if kind == "avg":
            return getattr(F, "avg_pool%dd" % nd_)(x, k, s, p, ceil_mode=ceil, count_include_pad=include_pad)
        if kind == "sum":
            # Sum pooling is average pooling with a divisor of 1 (2-D and 3-D in torch).
            return getattr(F, "avg_pool%dd" % nd_)(x, k, s, p, ceil_mode=ceil, divisor_override=1)
        raise ValueError(kind)
    return fn


POOL_CASES = [
    # (kind, data shape, kernel, stride, pad, convention, count_include_pad)
    ("max", (2, 3, 11), (3,), (2,), (1,), "valid", True),
    ("max", (2, 3, 9, 10), (3, 3), (2, 2), (1, 1), "valid", True),
    ("max", (1, 4, 8, 7), (2, 3), (2, 1), (0, 1), "valid", True),
    ("max", (2, 3, 10, 10), (3, 3), (2, 2), (0, 0), "full", True),
    ("max", (1, 2, 5, 6, 7), (2, 3, 2), (2, 1, 2), (1, 1, 0), "valid", True),
    # 2-D by output row (pooling.cc): LeNet's 2x2 stride 2, overlapping windows at stride 1,
    # a stride of 3 (no compile-time stride), an even kernel padded by half of it.
    ("max", (3, 5, 12, 12), (2, 2), (2, 2), (0, 0), "valid", True),
    ("max", (2, 3, 7, 9), (3, 3), (1, 1), (1, 1), "valid", True),
    ("max", (2, 3, 13, 11), (3, 2), (3, 3), (1, 1), "valid", True),
    # Windows that tile the input (kernel == stride, no padding: TiledMaxBackward), with rows
    # and columns left past the last window; and 'full' windows overhanging the input.
    ("max", (2, 3, 13, 11), (2, 2), (2, 2), (0, 0), "valid", True),
    ("max", (2, 2, 9, 10), (3, 3), (3, 3), (0, 0), "valid", True),
    ("max", (1, 3, 8, 9), (2, 3), (2, 3), (0, 0), "valid", True),
    ("max", (1, 2, 7, 7), (2, 2), (2, 2), (0, 0), "full", True),
    ("max", (2, 3, 10, 34), (2, 2), (2, 2), (0, 0), "valid", True),   # rows of 17: 8, 8 and 1
    ("avg", (2, 3, 13, 11), (3, 2), (3, 3), (1, 1), "valid", False),
    ("avg", (2, 3, 7, 9), (4, 3), (1, 1), (2, 1), "valid", True),
    ("avg", (2, 3, 11), (3,), (2,), (1,), "valid", True),
    ("avg", (2, 3, 9, 10), (3, 3), (2, 2), (1, 1), "valid", True),
    ("avg", (2, 3, 9, 10), (3, 3), (2, 2), (1, 1), "valid", False),
    ("avg", (1, 3, 10, 10), (3, 3), (2, 2), (0, 0), "full", True),
    ("avg", (1, 3, 10, 10), (3, 3), (2, 2), (1, 1), "full", False),
    ("avg", (1, 2, 5, 6, 7), (2, 3, 2), (2, 1, 2), (1, 1, 0), "valid", True),
    ("sum", (2, 3, 9, 10), (3, 3), (2, 2), (1, 1), "valid", True),
    ("sum", (1, 2, 5, 6, 7), (2, 3, 2), (2, 1, 2), (1, 1, 0), "valid", True),
]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("case", POOL_CASES)
def test_pooling_vs_torch(case, dtype):
    kind, shape, k, s, p, conv, inc = case
    params = dict(kernel=k, stride=s, pad=p, pool_type=kind, pooling_convention=conv, count_include_pad=inc)
    compare("Pooling", [rand(*shape)], params, pool_ref(kind, len(k), k, s, p, conv == "full", inc), dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("p", [1, 2, 3])
def test_lp_pooling_vs_torch(p, dtype):
    x = rand(2, 3, 8, 9, lo=0.1, hi=1.0)

    def ref(t):
        return F.lp_pool2d(t, p, (3, 2), (2, 2))

    compare("Pooling", [x], dict(kernel=(3, 2), stride=(2, 2), pool_type="lp", p_value=p), ref, dtype,
            rtol=1e-4 if dtype == np.float32 else 1e-7)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("kind", ["max", "avg"])
def test_pooling_gradient_adds_and_gives_ties_to_the_first_maximum(kind, dtype):
    x = rand(2, 3, 6, 6, dtype=dtype)
    x[:, :, 0:2, 0:2] = 0.5  # a window of four equal values: the first in scan order wins
    net = weft.sym.Pooling(weft.sym.Variable("data"), kernel=(2, 2), stride=(2, 2), pool_type=kind)
    ex = net.simple_bind(weft.cpu(), grad_req="add", data=x.shape, type_dict={"data": dtype})
    ex.arg_dict["data"][:] = x
    ex.grad_dict["data"][:] = np.ones(x.shape, dtype)
    head = nd.array(np.ones((2, 3, 3, 3), dtype), dtype=dtype)
    for _ in range(2):
        ex.forward(is_train=True)
        ex.backward([head])
    g = (ex.grad_dict["data"].asnumpy() - 1.0) / 2  # one step's gradient
    if kind == "max":
        assert np.all(g[:, :, 0, 0] == 1.0) and np.all(g[:, :, 0:2, 0:2].sum(axis=(2, 3)) == 1.0)
        assert g.sum() == 2 * 3 * 3 * 3
    else:
        assert_almost_equal(g, np.full(x.shape, 0.25, dtype), rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_tiled_max_pooling_gradient_adds_and_leaves_the_remainder(dtype):
    # 2x2/2 on 7x25: the last row and column are in no window; a row's 12 windows go 8 and
    # 4 at a time in float32 vectors. With grad_req add, two backward passes add twice the
    # torch gradient to the starting ones and leave the remainder cells at 1. Ties (all
    # four cells, the last three, the middle two) go to the first maximum, as in torch.
    x = rand(2, 3, 7, 25, dtype=dtype)
    x[:, :, 0:2, 0:2] = 0.5
    x[:, :, 2:4, 16:18] = 0.75
    x[:, :, 2, 16] = -0.5
    x[:, :, 4, 6:8] = 0.25
    x[:, :, 5, 6:8] = [0.9, -0.9]
    x[:, :, 4, 7] = 0.9
    head = rand(2, 3, 3, 12, dtype=dtype)
    t = torch.tensor(x, requires_grad=True)
    F.max_pool2d(t, 2, 2).backward(torch.tensor(head))
    net = weft.sym.Pooling(weft.sym.Variable("data"), kernel=(2, 2), stride=(2, 2), pool_type="max")
    ex = net.simple_bind(weft.cpu(), grad_req="add", data=x.shape, type_dict={"data": dtype})
    ex.arg_dict["data"][:] = x
    ex.grad_dict["data"][:] = np.ones(x.shape, dtype)
    for _ in range(2):
        ex.forward(is_train=True)
        ex.backward([nd.array(head, dtype=dtype)])
    g = ex.grad_dict["data"].asnumpy()
    assert_almost_equal(g, 1.0 + 2 * t.grad.numpy(), rtol=1e-6, atol=1e-6)
    assert np.all(g[:, :, 6, :] == 1.0) and np.all(g[:, :, :, 24] == 1.0)


def test_tiled_max_pooling_runs_its_own_loops():
    # Windows that tile the input stay off oneDNN even where it has a JIT kernel for plain
    # NCHW (AVX-512): its backward would run the training forward again first. Overlapping
    # windows still go to oneDNN there, which shows the log is read.
    import os
    import subprocess
    import sys
    code = """import numpy as np
from weft import nd
x = nd.array(np.random.rand(8, 20, 24, 24).astype(np.float32))
for k, st, pad in [((2, 2), (2, 2), (0, 0)), ((3, 3), (2, 2), (1, 1))]:
    p = dict(kernel=k, stride=st, pad=pad, pool_type="max")
    y = nd.Pooling(x, **p)
    nd.waitall()
    print("BEGIN", k[0])
    nd.invoke("_backward_Pooling", [nd.ones(y.shape), x, y], p)
    nd.Pooling(x, **p)
    nd.waitall()
    print("END")
"""
    out = subprocess.run([sys.executable, "-c", code], env=dict(os.environ, DNNL_VERBOSE="1"),
                         capture_output=True, text=True, check=True).stdout
    runs = {}
    for part in out.split("BEGIN ")[1:]:
        body = part.split("END")[0]
        runs[int(part[0])] = [l for l in body.splitlines() if ",exec," in l and ",pooling" in l]
    assert runs[2] == [], runs[2]
    if HAS_AVX512_CORE:
        assert runs[3], "the overlapping pooling ran no oneDNN primitive"


@pytest.mark.parametrize("kind", ["max", "avg", "sum"])
def test_global_pooling(kind):
    x = rand(2, 3, 5, 7)
    out = nd.Pooling(nd.array(x), pool_type=kind, global_pool=True, kernel=(2, 2)).asnumpy()
    red = {"max": np.max, "avg": np.mean, "sum": np.sum}[kind]
    assert out.shape == (2, 3, 1, 1)
    assert_almost_equal(out, red(x, axis=(2, 3), keepdims=True), rtol=1e-5, atol=1e-6)
    out1 = nd.Pooling(nd.array(x[:, :, 0]), pool_type=kind, global_pool=True).asnumpy()
    assert_almost_equal(out1, red(x[:, :, 0], axis=2, keepdims=True), rtol=1e-5, atol=1e-6)


def test_full_convention_overhang_avg():
    # in 5, kernel 2, stride 2, pad 1: full gives 4 windows starting at -1, 1, 3, 5; the last
    # overhangs the padded input (6 cells), so its include-pad divisor is 1 (the pad cell).
    x = rand(1, 1, 5)
    for inc in (True, False):
        out = nd.Pooling(nd.array(x), kernel=(2,), stride=(2,), pad=(1,), pool_type="avg",
                         pooling_convention="full", count_include_pad=inc).asnumpy()[0, 0]
        v = x[0, 0]
        if inc:
            expect = [v[0] / 2, (v[1] + v[2]) / 2, (v[3] + v[4]) / 2, 0.0]
        else:
            expect = [v[0], (v[1] + v[2]) / 2, (v[3] + v[4]) / 2, 0.0]
        assert_almost_equal(out, np.array(expect, dtype=np.float32), rtol=1e-6, atol=1e-7)


def test_same_convention_1d():
    x = rand(2, 3, 7)
    out = nd.Pooling(nd.array(x), kernel=(3,), stride=(2,), pool_type="max", pooling_convention="same")
    assert out.shape == (2, 3, 4)
    ref = F.max_pool1d(torch.tensor(x), 3, 2, 1).numpy()
    assert_almost_equal(out.asnumpy(), ref, rtol=0, atol=0)
    # in 8, stride 2: 4 outputs, total pad 1, all of it after the input.
    x = rand(1, 2, 8)
    out = nd.Pooling(nd.array(x), kernel=(3,), stride=(2,), pool_type="max", pooling_convention="same").asnumpy()
    padded = np.concatenate([x, np.full((1, 2, 1), -np.inf, np.float32)], axis=2)
    ref = np.stack([padded[:, :, i:i + 3].max(axis=2) for i in range(0, 7, 2)], axis=2)
    assert_almost_equal(out, ref, rtol=0, atol=0)


# ---------------------------------------------------------------- numeric gradients (float64)
def test_numeric_gradient_convolution():
    x, w, b = rand(1, 4, 5, 4, dtype=np.float64), rand(4, 2, 3, 2, dtype=np.float64), rand(4, dtype=np.float64)
    check_numeric_gradient("Convolution", [x, w, b],
                           params=dict(kernel=(3, 2), num_filter=4, num_group=2, stride=(2, 1), pad=(1, 1)))
    x1, w1 = rand(2, 2, 7, dtype=np.float64), rand(3, 2, 3, dtype=np.float64)
    check_numeric_gradient("Convolution", [x1, w1],
                           params=dict(kernel=(3,), num_filter=3, dilate=(2,), no_bias=True))


def test_numeric_gradient_one_channel_convolution():
    # The one-channel weight gradient (OneChannelWeightsGrad), with stride, padding and dilation.
    x, w, b = rand(2, 1, 7, 6, dtype=np.float64), rand(3, 1, 3, 2, dtype=np.float64), rand(3, dtype=np.float64)
    check_numeric_gradient("Convolution", [x, w, b],
                           params=dict(kernel=(3, 2), num_filter=3, stride=(2, 1), pad=(1, 1), dilate=(1, 2)))


def test_numeric_gradient_deconvolution():
    x, w, b = rand(1, 2, 3, 4, dtype=np.float64), rand(2, 3, 3, 2, dtype=np.float64), rand(3, dtype=np.float64)
    check_numeric_gradient("Deconvolution", [x, w, b],
                           params=dict(kernel=(3, 2), num_filter=3, stride=(2, 1), pad=(1, 0), adj=(1, 0),
                                       no_bias=False))


@pytest.mark.parametrize("kind", ["max", "avg", "sum", "lp"])
def test_numeric_gradient_pooling(kind):
    x = rand(1, 2, 5, 6, dtype=np.float64, lo=0.1, hi=1.0)
    params = dict(kernel=(3, 2), stride=(2, 2), pad=(1, 0), pool_type=kind, pooling_convention="full")
    if kind == "lp":
        params.update(p_value=2, pad=(0, 0))
    check_numeric_gradient("Pooling", [x], params=params, numeric_eps=1e-5)


# ---------------------------------------------------------------- errors
def test_convolution_errors():
    x, w = nd.array(rand(1, 4, 3, 3)), nd.array(rand(4, 4, 5, 5))
    with pytest.raises(weft.base.WeftError, match=r"Convolution.*kernel \(5,5\) is larger than the padded input "
                                                  r"\(3,3\).*\(1,4,3,3\)"):
        nd.Convolution(x, w, kernel=(5, 5), num_filter=4, no_bias=True).asnumpy()
    with pytest.raises(weft.base.WeftError, match=r"Convolution.*num_filter \(5\) is not divisible by num_group \(2\)"):
        nd.Convolution(x, nd.array(rand(5, 2, 1, 1)), kernel=(1, 1), num_filter=5, num_group=2, no_bias=True)
    with pytest.raises(weft.base.WeftError, match=r"Convolution.*data.*\(1,4,3,3\).*4 channels are not divisible "
                                                  r"by num_group \(3\)"):
        nd.Convolution(x, nd.array(rand(3, 1, 1, 1)), kernel=(1, 1), num_filter=3, num_group=3, no_bias=True)
    with pytest.raises(weft.base.WeftError, match=r"Convolution.*data.*\(1,4,3,3\) of rank 4 but a 1-D kernel "
                                                  r"needs rank 3"):
        nd.Convolution(x, nd.array(rand(4, 4, 1)), kernel=(1,), num_filter=4, no_bias=True)
    with pytest.raises(weft.base.WeftError, match=r"Convolution.*'stride' \(0,1\) must be positive"):
        nd.Convolution(x, nd.array(rand(4, 4, 1, 1)), kernel=(1, 1), stride=(0, 1), num_filter=4, no_bias=True)
    with pytest.raises(weft.base.WeftError, match=r"Convolution.*'pad' \(1,\) has 1 entries but kernel \(1,1\)"):
        nd.Convolution(x, nd.array(rand(4, 4, 1, 1)), kernel=(1, 1), pad=(1,), num_filter=4, no_bias=True)
    with pytest.raises(weft.base.WeftError, match=r"Convolution.*layout 'NCDHW' does not fit a 2-D kernel"):
        nd.Convolution(x, nd.array(rand(4, 4, 1, 1)), kernel=(1, 1), num_filter=4, no_bias=True, layout="NCDHW")
    with pytest.raises(weft.base.WeftError, match=r"Convolution.*weight.*\(4,4,3,3\).*expects \(4,4,5,5\)"):
        nd.Convolution(nd.array(rand(1, 4, 9, 9)), nd.array(rand(4, 4, 3, 3)), kernel=(5, 5), num_filter=4,
                       no_bias=True)
    with pytest.raises(weft.base.WeftError, match=r"Convolution.*dilated by \(3,3\).*larger than the padded input"):
        nd.Convolution(x, nd.array(rand(4, 4, 2, 2)), kernel=(2, 2), dilate=(3, 3), num_filter=4, no_bias=True)


def test_deconvolution_errors():
    x = nd.array(rand(1, 4, 3, 3))
    with pytest.raises(weft.base.WeftError, match=r"Deconvolution.*num_filter \(3\) is not divisible by num_group"):
        nd.Deconvolution(x, nd.array(rand(4, 1, 3, 3)), kernel=(3, 3), num_filter=3, num_group=2)
    with pytest.raises(weft.base.WeftError, match=r"Deconvolution.*'adj' \(2,2\) must be non-negative and smaller "
                                                  r"than stride"):
        nd.Deconvolution(x, nd.array(rand(4, 2, 3, 3)), kernel=(3, 3), num_filter=2, stride=(2, 2), adj=(2, 2))
    with pytest.raises(weft.base.WeftError, match=r"Deconvolution.*target_shape \(20,20\) is not reachable"):
        nd.Deconvolution(x, nd.array(rand(4, 2, 3, 3)), kernel=(3, 3), num_filter=2, target_shape=(20, 20))
    with pytest.raises(weft.base.WeftError, match=r"Deconvolution.*rank 4 but a 3-D kernel needs rank 5"):
        nd.Deconvolution(x, nd.array(rand(4, 2, 3, 3, 3)), kernel=(3, 3, 3), num_filter=2)


def test_pooling_errors():
    x = nd.array(rand(1, 2, 3, 3))
    with pytest.raises(weft.base.WeftError, match=r"Pooling.*kernel \(5,4\) is larger than the padded input \(5,3\)"):
        nd.Pooling(x, kernel=(5, 4), pad=(1, 0), stride=(1, 1), pool_type="max").asnumpy()
    with pytest.raises(weft.base.WeftError, match=r"Pooling.*'kernel' is required unless global_pool"):
        nd.Pooling(x, pool_type="max")
    with pytest.raises(weft.base.WeftError, match=r"Pooling.*'stride' \(0,2\) must be positive"):
        nd.Pooling(x, kernel=(2, 2), stride=(0, 2))
    with pytest.raises(weft.base.WeftError, match=r"Pooling.*pool_type='lp' needs parameter 'p_value'"):
        nd.Pooling(x, kernel=(2, 2), pool_type="lp")
    with pytest.raises(weft.base.WeftError, match=r"Pooling.*'same' supports 1-D pooling only"):
        nd.Pooling(x, kernel=(2, 2), pooling_convention="same")
    with pytest.raises(weft.base.WeftError, match=r"Pooling.*data.*\(1,2,3,3\) of rank 4 but a 1-D kernel"):
        nd.Pooling(x, kernel=(2,))
    with pytest.raises(weft.base.WeftError, match=r"Pooling.*pool_type.*expected one of"):
        nd.Pooling(x, kernel=(2, 2), pool_type="median")


def test_data_gradient_accumulates_through_its_reorder_exactly():
    # Where the data gradient comes out of a blocked layout, grad_req "add" adds it in the
    # reorder to the caller's array instead of through a plain temporary: the result is the
    # float32 sum of what the array held and the gradient written alone, to the bit. Shapes:
    # a 3x3 convolution (Winograd at batch 4) and a strided 1x1 one (ResNet's shortcut).
    for shape, nf, k, s, p, out in [((4, 16, 10, 10), 16, (3, 3), (1, 1), (1, 1), (4, 16, 10, 10)),
                                    ((4, 32, 14, 14), 64, (1, 1), (2, 2), (0, 0), (4, 64, 7, 7))]:
        net = weft.sym.Convolution(weft.sym.Variable("data"), kernel=k, stride=s, pad=p, num_filter=nf,
                                   no_bias=True, name="c")
        x_np, w_np, start = rand(*shape), rand(nf, shape[1], *k, lo=-0.3, hi=0.3), rand(*shape)
        head = rand(*out)
        grads = {}
        for req in ("write", "add"):
            ex = net.simple_bind(weft.cpu(), grad_req={"data": req, "c_weight": "null"}, data=shape)
            ex.arg_dict["data"][:] = x_np
            ex.arg_dict["c_weight"][:] = w_np
            ex.grad_dict["data"][:] = start
            ex.forward(is_train=True)
            ex.backward(nd.array(head))
            grads[req] = ex.grad_dict["data"].asnumpy()
        np.testing.assert_array_equal(grads["add"], start + grads["write"])


@pytest.mark.parametrize("dtype,ulp", [("bfloat16", 2.0 ** -8), ("float16", 2.0 ** -11)])
@pytest.mark.parametrize("deconv", [False, True])
@pytest.mark.parametrize("grad_req", ["write", "add"])
def test_reduced_precision_convolution_rounds_once(dtype, ulp, deconv, grad_req):
    # A 5x5 kernel over 20 channels and a batch of 8: every data-gradient cell sums 25 taps
    # of 50 filters, every weight-gradient cell 8 x 64 products. Kept in bfloat16 or float16,
    # those partial sums lose bits at each add; the result must be float32's on the same
    # (rounded) values, rounded once: within half a unit of the type's last place of the
    # largest value, against about 3 units when the sums are rounded (bfloat16 below
    # AVX512-BF16, where oneDNN has no kernel, before the float32 detour).
    rng = np.random.RandomState(3)
    x = rng.uniform(-1, 1, (8, 20, 12, 12))
    w = rng.uniform(-1, 1, (20, 50, 5, 5) if deconv else (50, 20, 5, 5)) / 20.0
    b = rng.uniform(-1, 1, (50,))

    def run(dt, arrays):
        # The reference runs float32 on values already rounded to `dtype`, the head too.
        xs = [nd.array(a).astype(dt) for a in arrays]
        for t in xs:
            t.attach_grad(grad_req=grad_req)
            if grad_req == "add":
                t.grad[:] = nd.ones(t.shape, dtype=dt)
        with weft.autograd.record():
            if deconv:
                y = nd.Deconvolution(xs[0], xs[1], kernel=(5, 5), num_filter=50, no_bias=True)
            else:
                y = nd.Convolution(xs[0], xs[1], xs[2], kernel=(5, 5), num_filter=50)
        head = nd.array(np.random.RandomState(4).uniform(-1, 1, y.shape)).astype(dtype)
        y.backward(head.astype(dt))
        return [y.astype("float32").asnumpy()] + [t.grad.astype("float32").asnumpy() for t in xs]

    arrays = [x, w] if deconv else [x, w, b]
    rounded = [nd.array(a).astype(dtype).astype("float32").asnumpy() for a in arrays]
    got = run(dtype, arrays)
    ref = run("float32", rounded)
    for name, r, g in zip(["output", "data grad", "weight grad", "bias grad"], ref, got):
        scale = np.abs(r).max()
        assert np.abs(g - r).max() <= ulp * scale, (name, np.abs(g - r).max() / scale)
