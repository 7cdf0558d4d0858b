"""Convolution and Deconvolution on the GPU (cuDNN's graph API, or Weft's direct kernels
with cudnn_off) against the CPU operators: forward and every gradient, float32 and float16,
1-D/2-D/3-D, stride, pad, dilate, groups (depthwise included), no_bias, grad_req 'add',
cudnn_tune and MXNET_CUDNN_AUTOTUNE_DEFAULT, and Deconvolution's adj and target_shape.

float32 convolutions may run on TF32 tensor cores (WEFT_CUDNN_ALLOW_TF32, default 1), whose
10-bit mantissa gives errors near 1e-3 of the values' scale: those comparisons use 1e-2,
and one test turns TF32 off to compare at 1e-4."""
import numpy as np
import pytest

import weft as mx
from weft.test_utils import check_consistency, environment

GPU_OPS = {"Convolution", "_backward_Convolution", "Deconvolution", "_backward_Deconvolution"}

pytestmark = pytest.mark.skipif(mx.context.num_gpus() == 0, reason="no GPU")

F16, F32, F64 = np.dtype(np.float16), np.dtype(np.float32), np.dtype(np.float64)
# With TF32 and float16 inputs, each product carries ~5e-4 relative error; sums over a few
# hundred terms of size ~1 stay within these.
LOOSE_RTOL = {F16: 2e-2, F32: 1e-2}
LOOSE_ATOL = {F16: 5e-2, F32: 2e-2}


def _ctx_list(shape, dtypes=("float32", "float16")):
    entries = [{"ctx": mx.cpu(), "data": shape, "type_dict": {"data": np.float32}}]
    for dt in dtypes:
        entries.append({"ctx": mx.gpu(0), "data": shape, "type_dict": {"data": np.dtype(dt).type}})
    return entries


def _conv(**kw):
    return mx.sym.Convolution(data=mx.sym.Variable("data"), name="conv", **kw)


def _deconv(**kw):
    return mx.sym.Deconvolution(data=mx.sym.Variable("data"), name="deconv", **kw)


CONV_CASES = [
    # 1-D
    ((2, 4, 12), dict(kernel=(3,), num_filter=6)),
    ((2, 4, 12), dict(kernel=(3,), num_filter=6, stride=(2,), pad=(1,), dilate=(2,))),
    # 2-D
    ((2, 4, 9, 9), dict(kernel=(3, 3), num_filter=8)),
    ((2, 4, 9, 9), dict(kernel=(3, 3), num_filter=8, pad=(1, 1))),
    ((2, 4, 10, 9), dict(kernel=(3, 2), num_filter=8, stride=(2, 2), pad=(1, 0))),
    ((2, 4, 11, 11), dict(kernel=(3, 3), num_filter=4, dilate=(2, 2), pad=(2, 2))),
    ((2, 4, 8, 8), dict(kernel=(1, 1), num_filter=8, no_bias=True)),
    ((2, 8, 9, 9), dict(kernel=(3, 3), num_filter=4, num_group=2, pad=(1, 1))),
    # depthwise, and depthwise with a channel multiplier
    ((2, 8, 9, 9), dict(kernel=(3, 3), num_filter=8, num_group=8, pad=(1, 1))),
    ((2, 4, 9, 9), dict(kernel=(3, 3), num_filter=8, num_group=4, stride=(2, 2), no_bias=True)),
    # 3-D
    ((2, 3, 5, 6, 6), dict(kernel=(3, 3, 3), num_filter=4, pad=(1, 1, 1))),
    ((2, 4, 6, 7, 7), dict(kernel=(2, 3, 3), num_filter=4, stride=(2, 2, 1), num_group=2)),
]


@pytest.mark.parametrize("shape,kw", CONV_CASES)
def test_convolution_matches_cpu(shape, kw):
    check_consistency(_conv(**kw), _ctx_list(shape), rtol=LOOSE_RTOL, atol=LOOSE_ATOL)


@pytest.mark.parametrize("shape,kw", [CONV_CASES[1], CONV_CASES[3], CONV_CASES[7], CONV_CASES[8], CONV_CASES[10]])
def test_convolution_without_tf32_matches_cpu_tightly(shape, kw):
    with environment("WEFT_CUDNN_ALLOW_TF32", "0"):
        check_consistency(_conv(**kw), _ctx_list(shape, ("float32",)), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("shape,kw", [CONV_CASES[3], CONV_CASES[8]])
def test_convolution_float64_matches_cpu(shape, kw):
    ctx_list = [{"ctx": mx.cpu(), "data": shape, "type_dict": {"data": np.float64}},
                {"ctx": mx.gpu(0), "data": shape, "type_dict": {"data": np.float64}}]
    check_consistency(_conv(**kw), ctx_list, rtol=1e-7, atol=1e-9)


@pytest.mark.parametrize("shape,kw", [CONV_CASES[1], CONV_CASES[4], CONV_CASES[7], CONV_CASES[9], CONV_CASES[11]])
def test_convolution_cudnn_off_runs_the_direct_kernels(shape, kw):
    check_consistency(_conv(cudnn_off=True, **kw), _ctx_list(shape), rtol=LOOSE_RTOL, atol=LOOSE_ATOL)
    with environment("WEFT_CUDNN_ALLOW_TF32", "0"):
        check_consistency(_conv(cudnn_off=True, **kw), _ctx_list(shape, ("float32",)), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("tune", ["fastest", "limited_workspace", "off"])
def test_convolution_cudnn_tune(tune):
    for shape, kw in (CONV_CASES[3], CONV_CASES[8], CONV_CASES[10]):
        check_consistency(_conv(cudnn_tune=tune, **kw), _ctx_list(shape), rtol=LOOSE_RTOL, atol=LOOSE_ATOL)


@pytest.mark.parametrize("value", ["1", "2"])
def test_autotune_default_environment_variable(value):
    shape, kw = CONV_CASES[4]
    with environment("MXNET_CUDNN_AUTOTUNE_DEFAULT", value):
        check_consistency(_conv(**kw), _ctx_list(shape), rtol=LOOSE_RTOL, atol=LOOSE_ATOL)


@pytest.mark.skipif(not mx.runtime.Features().is_enabled("CUDNN"), reason="built without cuDNN")
def test_autotune_default_rejects_unknown_values():
    shape, kw = CONV_CASES[3]
    data = mx.nd.ones(shape, ctx=mx.gpu(0))
    weight = mx.nd.ones((8, 4, 3, 3), ctx=mx.gpu(0))
    bias = mx.nd.zeros((8,), ctx=mx.gpu(0))
    with environment("MXNET_CUDNN_AUTOTUNE_DEFAULT", "7"):
        with pytest.raises(mx.base.MXNetError, match="MXNET_CUDNN_AUTOTUNE_DEFAULT is '7'"):
            mx.nd.Convolution(data, weight, bias, **kw).asnumpy()


def _grads_with_add(sym, ctx, shapes, values, initial, head, dtype):
    ex = sym.simple_bind(ctx, grad_req="add", type_dict={"data": dtype}, data=shapes["data"])
    for name in ex.arg_dict:
        ex.arg_dict[name][:] = values[name]
        ex.grad_dict[name][:] = initial[name]
    ex.forward(is_train=True)
    ex.backward([mx.nd.array(head, ctx=ctx, dtype=dtype)])
    return {name: g.asnumpy() for name, g in ex.grad_dict.items()}


@pytest.mark.parametrize("make,shape,kw", [
    (_conv, (2, 4, 9, 9), dict(kernel=(3, 3), num_filter=8, pad=(1, 1))),
    (_conv, (2, 8, 9, 9), dict(kernel=(3, 3), num_filter=8, num_group=8, cudnn_off=True)),
    (_deconv, (2, 4, 5, 5), dict(kernel=(3, 3), num_filter=6, stride=(2, 2), no_bias=False)),
])
def test_grad_req_add_accumulates(make, shape, kw):
    sym = make(**kw)
    arg_shapes, out_shapes, _ = sym.infer_shape(data=shape)
    rng = np.random.RandomState(3)
    values = {n: rng.uniform(-1, 1, s).astype(np.float32) for n, s in zip(sym.list_arguments(), arg_shapes)}
    initial = {n: rng.uniform(-1, 1, s).astype(np.float32) for n, s in zip(sym.list_arguments(), arg_shapes)}
    zeros = {n: np.zeros(s, np.float32) for n, s in zip(sym.list_arguments(), arg_shapes)}
    head = rng.uniform(-1, 1, out_shapes[0]).astype(np.float32)
    with environment("WEFT_CUDNN_ALLOW_TF32", "0"):
        cpu = _grads_with_add(sym, mx.cpu(), {"data": shape}, values, initial, head, np.float32)
        gpu = _grads_with_add(sym, mx.gpu(0), {"data": shape}, values, initial, head, np.float32)
        fresh = _grads_with_add(sym, mx.gpu(0), {"data": shape}, values, zeros, head, np.float32)
    for name in cpu:
        np.testing.assert_allclose(gpu[name], cpu[name], rtol=1e-4, atol=1e-4, err_msg=name)
        # The GPU added its gradient to what was there rather than overwriting it.
        np.testing.assert_allclose(gpu[name] - initial[name], fresh[name], rtol=1e-4, atol=1e-4, err_msg=name)
        assert np.abs(fresh[name]).max() > 0


DECONV_CASES = [
    ((2, 4, 7), dict(kernel=(3,), num_filter=5, stride=(2,), no_bias=False)),
    ((2, 4, 5, 5), dict(kernel=(3, 3), num_filter=6)),
    ((2, 4, 5, 5), dict(kernel=(4, 4), num_filter=6, stride=(2, 2), pad=(1, 1), no_bias=False)),
    ((2, 4, 5, 6), dict(kernel=(3, 3), num_filter=6, stride=(2, 2), pad=(1, 1), adj=(1, 1), no_bias=False)),
    ((2, 4, 5, 5), dict(kernel=(3, 3), num_filter=6, stride=(2, 2), target_shape=(10, 10))),
    ((2, 4, 6, 6), dict(kernel=(3, 3), num_filter=8, num_group=2, dilate=(2, 2), pad=(1, 1))),
    ((2, 4, 6, 6), dict(kernel=(3, 3), num_filter=4, num_group=4, stride=(2, 2), no_bias=False)),
    # adj reaching a whole stride (allowed as it is below dilate): cuDNN's symmetric padding
    # cannot express it, so the direct kernels run it.
    ((2, 3, 5, 5), dict(kernel=(3, 3), num_filter=4, dilate=(2, 2), adj=(1, 1))),
    ((2, 3, 3, 4, 4), dict(kernel=(3, 3, 3), num_filter=4, stride=(2, 2, 2), pad=(1, 1, 1), no_bias=False)),
]


@pytest.mark.parametrize("shape,kw", DECONV_CASES)
def test_deconvolution_matches_cpu(shape, kw):
    check_consistency(_deconv(**kw), _ctx_list(shape), rtol=LOOSE_RTOL, atol=LOOSE_ATOL)


@pytest.mark.parametrize("shape,kw", [DECONV_CASES[2], DECONV_CASES[3], DECONV_CASES[4], DECONV_CASES[6]])
def test_deconvolution_tight_and_cudnn_off(shape, kw):
    with environment("WEFT_CUDNN_ALLOW_TF32", "0"):
        check_consistency(_deconv(**kw), _ctx_list(shape, ("float32",)), rtol=1e-4, atol=1e-4)
        check_consistency(_deconv(cudnn_off=True, **kw), _ctx_list(shape, ("float32",)), rtol=1e-4, atol=1e-4)
    check_consistency(_deconv(cudnn_off=True, cudnn_tune="fastest", **kw), _ctx_list(shape),
                      rtol=LOOSE_RTOL, atol=LOOSE_ATOL)


def test_convolution_on_an_empty_batch():
    # Nothing to sum over: weight and bias gradients are zero, outputs empty.
    sym = _conv(kernel=(3, 3), num_filter=4, pad=(1, 1))
    ex = sym.simple_bind(mx.gpu(0), data=(0, 2, 5, 5))
    for name in ex.arg_dict:
        ex.arg_dict[name][:] = np.ones(ex.arg_dict[name].shape, np.float32)
        ex.grad_dict[name][:] = np.full(ex.grad_dict[name].shape, 7, np.float32)
    out = ex.forward(is_train=True)[0]
    assert out.shape == (0, 4, 5, 5)
    ex.backward([mx.nd.zeros(out.shape, ctx=mx.gpu(0))])
    assert np.all(ex.grad_dict["conv_weight"].asnumpy() == 0)
    assert np.all(ex.grad_dict["conv_bias"].asnumpy() == 0)


def _bf16(values, ctx):
    # Cast on the CPU, then copy the bytes over: the comparison needs no other GPU operator.
    return mx.nd.array(values, ctx=mx.cpu()).astype("bfloat16").as_in_context(ctx)


@pytest.mark.parametrize("cudnn_off", [False, True])
@pytest.mark.parametrize("op,shape,kw", [
    ("Convolution", (2, 4, 9, 9), dict(kernel=(3, 3), num_filter=8, pad=(1, 1))),
    ("Convolution", (2, 8, 9, 9), dict(kernel=(3, 3), num_filter=8, num_group=8, stride=(2, 2))),
    ("Deconvolution", (2, 4, 5, 5), dict(kernel=(3, 3), num_filter=6, stride=(2, 2), no_bias=False)),
])
def test_bfloat16_matches_cpu(op, shape, kw, cudnn_off):
    params = dict(kw, cudnn_off=cudnn_off)
    sym = getattr(mx.sym, op)(data=mx.sym.Variable("data"), name="c", **params)
    arg_shapes, out_shapes, _ = sym.infer_shape(data=shape)
    rng = np.random.RandomState(5)
    values = [rng.uniform(-1, 1, s).astype(np.float32) for s in arg_shapes]
    head = rng.uniform(-1, 1, out_shapes[0]).astype(np.float32)
    results = []
    for ctx in (mx.cpu(), mx.gpu(0)):
        ins = [_bf16(v, ctx) for v in values]
        out = mx.nd.invoke(op, ins, params)
        grads = mx.nd.invoke("_backward_" + op, [_bf16(head, ctx), ins[0], ins[1]], params)
        results.append([a.as_in_context(mx.cpu()).astype("float32").asnumpy() for a in [out] + grads])
    cpu, gpu = results
    assert len(gpu) == len(arg_shapes) + 1
    # One bfloat16 rounding (2^-8 relative) of sums of size up to ~5 apart.
    for name, got, want in zip(["output"] + sym.list_arguments(), gpu, cpu):
        np.testing.assert_allclose(got, want, rtol=2e-2, atol=5e-2, err_msg=name)
        assert np.abs(want).max() > 0
