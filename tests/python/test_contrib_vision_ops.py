"""MXNet 1.9's contrib vision operators: the deformable convolutions, deformable
position-sensitive ROI pooling, rotated ROI align and the RPN proposal operators, against
numpy references written here (and torchvision's deform_conv2d where it computes the same
thing), their gradients against central differences, and their error paths."""
import math

import numpy as np
import pytest

import weft as mx
from weft import nd
from weft.test_utils import assert_almost_equal, check_numeric_gradient

try:
    import torch
    import torchvision
except ImportError:  # the numpy references still run
    torch = None

RNG = np.random.RandomState(21)


def arr(x, dtype=np.float64):
    return nd.array(np.asarray(x, dtype=dtype), dtype=dtype)


def round_half_away(v):
    return math.floor(v + 0.5) if v >= 0 else -math.floor(-v + 0.5)


# ---------------------------------------------------------------- deformable convolution
def sample_plain(img, y, x):
    """DCNv1's sample: points inside [0, H) x [0, W) only, the last row/column held."""
    h, w = img.shape
    if not (0 <= y < h and 0 <= x < w):
        return 0.0
    y, x = min(y, h - 1), min(x, w - 1)
    y0, x0 = int(math.floor(y)), int(math.floor(x))
    y1, x1 = min(y0 + 1, h - 1), min(x0 + 1, w - 1)
    ly, lx = y - y0, x - x0
    return ((1 - ly) * (1 - lx) * img[y0, x0] + (1 - ly) * lx * img[y0, x1] + ly * (1 - lx) * img[y1, x0]
            + ly * lx * img[y1, x1])


def sample_zero_padded(img, y, x):
    """DCNv2's sample: the map surrounded by zeros, points in (-1, H) x (-1, W)."""
    h, w = img.shape
    if not (-1 < y < h and -1 < x < w):
        return 0.0
    padded = np.pad(img, 1)
    y, x = y + 1, x + 1
    y0, x0 = int(math.floor(y)), int(math.floor(x))
    ly, lx = y - y0, x - x0
    return ((1 - ly) * (1 - lx) * padded[y0, x0] + (1 - ly) * lx * padded[y0, x0 + 1]
            + ly * (1 - lx) * padded[y0 + 1, x0] + ly * lx * padded[y0 + 1, x0 + 1])


def deform_conv_ref(x, off, w, b, kernel, stride=(1, 1), pad=(0, 0), dilate=(1, 1), groups=1, dgroups=1,
                    mask=None):
    n_, c_, h, wd = x.shape
    f_ = w.shape[0]
    kh, kw = kernel
    oh = (h + 2 * pad[0] - dilate[0] * (kh - 1) - 1) // stride[0] + 1
    ow = (wd + 2 * pad[1] - dilate[1] * (kw - 1) - 1) // stride[1] + 1
    cg, fg, per_dg, K = c_ // groups, f_ // groups, c_ // dgroups, kh * kw
    sample = sample_plain if mask is None else sample_zero_padded
    out = np.zeros((n_, f_, oh, ow))
    for n in range(n_):
        for yo in range(oh):
            for xo in range(ow):
                for c in range(c_):
                    d, g = c // per_dg, c // cg
                    for i in range(kh):
                        for j in range(kw):
                            k = i * kw + j
                            y = yo * stride[0] - pad[0] + i * dilate[0] + off[n, d * 2 * K + 2 * k, yo, xo]
                            xx = xo * stride[1] - pad[1] + j * dilate[1] + off[n, d * 2 * K + 2 * k + 1, yo, xo]
                            v = sample(x[n, c], y, xx)
                            if mask is not None:
                                v *= mask[n, d * K + k, yo, xo]
                            out[n, g * fg:(g + 1) * fg, yo, xo] += w[g * fg:(g + 1) * fg, c - g * cg, i, j] * v
    if b is not None:
        out += b.reshape(1, -1, 1, 1)
    return out


def away_from_kinks(shape):
    """Offsets whose fractional parts keep every sample clear of pixel rows and columns,
    where bilinear interpolation has kinks that central differences would straddle."""
    return RNG.randint(-2, 3, shape) + RNG.uniform(0.15, 0.85, shape)


CONFIGS = [
    dict(kernel=(3, 3), pad=(1, 1)),
    dict(kernel=(3, 2), stride=(2, 1), dilate=(1, 2), pad=(0, 1)),
    dict(kernel=(2, 2), num_group=2, num_deformable_group=2),
    dict(kernel=(1, 1), no_bias=True),
]


def conv_case(cfg, n=2, c=4, f=4, h=6, w=5):
    kh, kw = cfg["kernel"]
    st, dl, pd = cfg.get("stride", (1, 1)), cfg.get("dilate", (1, 1)), cfg.get("pad", (0, 0))
    oh = (h + 2 * pd[0] - dl[0] * (kh - 1) - 1) // st[0] + 1
    ow = (w + 2 * pd[1] - dl[1] * (kw - 1) - 1) // st[1] + 1
    dg, g = cfg.get("num_deformable_group", 1), cfg.get("num_group", 1)
    x = RNG.uniform(-1, 1, (n, c, h, w))
    weight = RNG.uniform(-1, 1, (f, c // g, kh, kw))
    bias = None if cfg.get("no_bias") else RNG.uniform(-1, 1, (f,))
    return x, weight, bias, (n, dg * 2 * kh * kw, oh, ow), (n, dg * kh * kw, oh, ow)


def ref_kwargs(cfg):
    return dict(kernel=cfg["kernel"], stride=cfg.get("stride", (1, 1)), pad=cfg.get("pad", (0, 0)),
                dilate=cfg.get("dilate", (1, 1)), groups=cfg.get("num_group", 1),
                dgroups=cfg.get("num_deformable_group", 1))


def conv_inputs(x, off, weight, bias, mask=None):
    ins = [arr(x), arr(off)] + ([arr(mask)] if mask is not None else []) + [arr(weight)]
    return ins + ([arr(bias)] if bias is not None else [])


@pytest.mark.parametrize("cfg", CONFIGS)
def test_deformable_conv_zero_offsets_is_convolution(cfg):
    x, weight, bias, off_shape, mask_shape = conv_case(cfg)
    params = dict(cfg, num_filter=4)
    conv_params = {k: v for k, v in params.items() if k != "num_deformable_group"}
    want = nd.Convolution(*([arr(x), arr(weight)] + ([arr(bias)] if bias is not None else [])), **conv_params)
    got = nd.contrib.DeformableConvolution(*conv_inputs(x, np.zeros(off_shape), weight, bias), **params)
    assert_almost_equal(got.asnumpy(), want.asnumpy(), rtol=1e-10, atol=1e-10)
    got = nd.contrib.ModulatedDeformableConvolution(*conv_inputs(x, np.zeros(off_shape), weight, bias,
                                                                 np.ones(mask_shape)), **params)
    assert_almost_equal(got.asnumpy(), want.asnumpy(), rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("shift", [(1, -1), (-2, 0), (0, 2)])
def test_deformable_conv_integer_offsets_shift_the_input(shift):
    # One whole-pixel displacement for every tap is a convolution of the shifted input
    # (zeros shifted in): without padding every tap's own position lies inside the map.
    x = RNG.uniform(-1, 1, (2, 3, 7, 6))
    weight = RNG.uniform(-1, 1, (5, 3, 3, 3))
    dy, dx = shift
    shifted = np.zeros_like(x)
    ys, xs = slice(max(0, -dy), min(7, 7 - dy)), slice(max(0, -dx), min(6, 6 - dx))
    shifted[:, :, ys, xs] = x[:, :, max(0, dy):min(7, 7 + dy), max(0, dx):min(6, 6 + dx)]
    off = np.zeros((2, 18, 5, 4))
    off[:, 0::2], off[:, 1::2] = dy, dx
    got = nd.contrib.DeformableConvolution(arr(x), arr(off), arr(weight), kernel=(3, 3), num_filter=5, no_bias=True)
    want = nd.Convolution(arr(shifted), arr(weight), kernel=(3, 3), num_filter=5, no_bias=True)
    assert_almost_equal(got.asnumpy(), want.asnumpy(), rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("cfg", CONFIGS[:3])
def test_deformable_conv_fractional_offsets(cfg):
    x, weight, bias, off_shape, _ = conv_case(cfg)
    # Some samples land outside the map, some in the last row or column.
    off = RNG.uniform(-3, 3, off_shape)
    got = nd.contrib.DeformableConvolution(*conv_inputs(x, off, weight, bias), num_filter=4, **cfg)
    want = deform_conv_ref(x, off, weight, bias, **ref_kwargs(cfg))
    assert_almost_equal(got.asnumpy(), want, rtol=1e-10, atol=1e-10)


def test_deformable_conv_border_rules():
    # A point in the last row's band [h - 1, h) holds that row; one at or past h reads 0; the
    # modulated form interpolates towards the zeros outside instead.
    img = np.arange(1.0, 13.0).reshape(1, 1, 3, 4)
    w = np.ones((1, 1, 1, 1))
    off = np.zeros((1, 2, 3, 4))
    off[0, 0, 2, 1] = 0.5   # y = 2.5, inside the last row's band
    off[0, 0, 1, 1] = 1.75  # y = 2.75
    off[0, 0, 0, 1] = 3.0   # y = 3: outside
    off[0, 1, 0, 0] = -0.5  # x = -0.5: outside for the plain form, half a zero for the modulated
    plain = nd.contrib.DeformableConvolution(arr(img), arr(off), arr(w), kernel=(1, 1), num_filter=1, no_bias=True)
    p = plain.asnumpy()[0, 0]
    assert p[2, 1] == img[0, 0, 2, 1] and p[1, 1] == img[0, 0, 2, 1] and p[0, 1] == 0 and p[0, 0] == 0
    mod = nd.contrib.ModulatedDeformableConvolution(arr(img), arr(off), arr(np.ones((1, 1, 3, 4))), arr(w),
                                                    kernel=(1, 1), num_filter=1, no_bias=True).asnumpy()[0, 0]
    assert mod[2, 1] == pytest.approx(0.5 * img[0, 0, 2, 1])
    assert mod[1, 1] == pytest.approx(0.25 * img[0, 0, 2, 1])
    assert mod[0, 0] == pytest.approx(0.5 * img[0, 0, 0, 0])
    assert mod[0, 1] == 0


def test_deformable_conv_samples_off_the_map_read_nothing():
    # A NaN pixel reaches only the samples that interpolate it, not those off the map.
    img = RNG.uniform(-1, 1, (1, 1, 4, 4))
    img[0, 0, 0, 0] = np.nan
    off = np.zeros((1, 2, 4, 4))
    off[0, 0, 3, 3] = 50.0
    w = np.ones((1, 1, 1, 1))
    plain = nd.contrib.DeformableConvolution(arr(img), arr(off), arr(w), kernel=(1, 1), num_filter=1, no_bias=True)
    mod = nd.contrib.ModulatedDeformableConvolution(arr(img), arr(off), arr(np.ones((1, 1, 4, 4))), arr(w),
                                                    kernel=(1, 1), num_filter=1, no_bias=True)
    for y in (plain.asnumpy()[0, 0], mod.asnumpy()[0, 0]):
        assert np.isnan(y[0, 0]) and y[3, 3] == 0
        assert np.isfinite(y.ravel()[1:]).all()


@pytest.mark.parametrize("cfg", CONFIGS[:3])
def test_modulated_deformable_conv_forward(cfg):
    x, weight, bias, off_shape, mask_shape = conv_case(cfg)
    off = RNG.uniform(-3, 3, off_shape)
    mask = RNG.uniform(0, 1, mask_shape)
    got = nd.contrib.ModulatedDeformableConvolution(*conv_inputs(x, off, weight, bias, mask), num_filter=4, **cfg)
    want = deform_conv_ref(x, off, weight, bias, mask=mask, **ref_kwargs(cfg))
    assert_almost_equal(got.asnumpy(), want, rtol=1e-10, atol=1e-10)
    if torch is not None:
        kw = ref_kwargs(cfg)
        t = torchvision.ops.deform_conv2d(
            torch.from_numpy(x), torch.from_numpy(off), torch.from_numpy(weight),
            None if bias is None else torch.from_numpy(bias), stride=kw["stride"], padding=kw["pad"],
            dilation=kw["dilate"], mask=torch.from_numpy(mask))
        assert_almost_equal(got.asnumpy(), t.numpy(), rtol=1e-10, atol=1e-10)


def test_modulated_with_unit_mask_equals_deformable_interior():
    x = RNG.uniform(-1, 1, (2, 4, 7, 7))
    weight = RNG.uniform(-1, 1, (3, 4, 3, 3))
    bias = RNG.uniform(-1, 1, (3,))
    # Taps of a 3x3 kernel without padding sit at 0..6; offsets in (0.05, 0.95) keep them in [0, 6).
    off = RNG.uniform(0.05, 0.95, (2, 18, 5, 5))
    off[:, 0::2, 4, :] *= -1  # rows whose last tap sits on row 6 look up instead
    off[:, 1::2, :, 4] *= -1
    args = dict(kernel=(3, 3), num_filter=3)
    plain = nd.contrib.DeformableConvolution(arr(x), arr(off), arr(weight), arr(bias), **args)
    mod = nd.contrib.ModulatedDeformableConvolution(arr(x), arr(off), arr(np.ones((2, 9, 5, 5))), arr(weight),
                                                    arr(bias), **args)
    assert_almost_equal(mod.asnumpy(), plain.asnumpy(), rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("cfg", CONFIGS[:3])
def test_deformable_conv_gradients(cfg):
    x, weight, bias, off_shape, _ = conv_case(cfg, n=1, h=5, w=5)
    off = away_from_kinks(off_shape)
    ins = [x, off, weight] + ([bias] if bias is not None else [])
    check_numeric_gradient("_contrib_DeformableConvolution", ins, params=dict(cfg, num_filter=4),
                           grad_nodes=list(range(len(ins))))


@pytest.mark.parametrize("cfg", CONFIGS[:3])
def test_modulated_deformable_conv_gradients(cfg):
    x, weight, bias, off_shape, mask_shape = conv_case(cfg, n=1, h=5, w=5)
    off = away_from_kinks(off_shape)
    mask = RNG.uniform(-1, 1, mask_shape)
    ins = [x, off, mask, weight] + ([bias] if bias is not None else [])
    check_numeric_gradient("_contrib_ModulatedDeformableConvolution", ins, params=dict(cfg, num_filter=4),
                           grad_nodes=list(range(len(ins))))


def test_deformable_conv_float32_and_symbol():
    x, weight, bias, off_shape, mask_shape = conv_case(CONFIGS[0])
    off = RNG.uniform(-2, 2, off_shape)
    got = nd.contrib.DeformableConvolution(*[arr(v, np.float32) for v in (x, off, weight, bias)], kernel=(3, 3),
                                           pad=(1, 1), num_filter=4)
    assert got.dtype == np.float32
    assert_almost_equal(got.asnumpy(), deform_conv_ref(x.astype(np.float32), off.astype(np.float32),
                                                       weight.astype(np.float32), bias.astype(np.float32),
                                                       kernel=(3, 3), pad=(1, 1)), rtol=1e-4, atol=1e-4)
    sym = mx.sym.contrib.DeformableConvolution(mx.sym.var("data"), mx.sym.var("offset"), kernel=(3, 3),
                                               pad=(1, 1), num_filter=4, num_deformable_group=2, name="dc")
    assert sym.list_arguments() == ["data", "offset", "dc_weight", "dc_bias"]
    args, outs, _ = sym.infer_shape(data=(2, 4, 6, 5))
    assert args == [(2, 4, 6, 5), (2, 36, 6, 5), (4, 4, 3, 3), (4,)]
    assert outs == [(2, 4, 6, 5)]
    msym = mx.sym.contrib.ModulatedDeformableConvolution(mx.sym.var("data"), mx.sym.var("offset"),
                                                         mx.sym.var("mask"), kernel=(3, 3), num_filter=2,
                                                         no_bias=True, name="mdc")
    assert msym.list_arguments() == ["data", "offset", "mask", "mdc_weight"]
    args, outs, _ = msym.infer_shape(data=(1, 4, 6, 5))
    assert args == [(1, 4, 6, 5), (1, 18, 4, 3), (1, 9, 4, 3), (2, 4, 3, 3)] and outs == [(1, 2, 4, 3)]


def test_deformable_conv_backward_accumulates():
    x, weight, bias, off_shape, _ = conv_case(CONFIGS[0], n=1)
    off = RNG.uniform(-2, 2, off_shape)
    ins = [arr(v) for v in (x, off, weight, bias)]
    grads = [nd.ones(v.shape, dtype=np.float64) for v in ins]
    for v, g in zip(ins, grads):
        v.attach_grad(grad_req="add")
        v.grad[:] = g
    with mx.autograd.record():
        y = nd.contrib.DeformableConvolution(*ins, kernel=(3, 3), pad=(1, 1), num_filter=4)
    head = nd.array(RNG.uniform(-1, 1, y.shape), dtype=np.float64)
    y.backward(head)
    once = [v.grad.asnumpy() - 1 for v in ins]
    for v in ins:
        v.grad[:] = 0
    with mx.autograd.record():
        y = nd.contrib.DeformableConvolution(*ins, kernel=(3, 3), pad=(1, 1), num_filter=4)
    y.backward(head)
    for a, v in zip(once, ins):
        assert_almost_equal(a, v.grad.asnumpy(), rtol=1e-10, atol=1e-10)
    assert_almost_equal(once[3], head.asnumpy().sum(axis=(0, 2, 3)), rtol=1e-10, atol=1e-10)


def test_deformable_conv_errors():
    x, w = nd.zeros((1, 4, 5, 5)), nd.zeros((2, 4, 3, 3))
    with pytest.raises(mx.base.MXNetError, match="not divisible by num_deformable_group"):
        nd.contrib.DeformableConvolution(x, nd.zeros((1, 54, 3, 3)), w, kernel=(3, 3), num_filter=2,
                                         num_deformable_group=3, no_bias=True)
    with pytest.raises(mx.base.MXNetError, match=r"input 'offset' has shape \(1,18,5,5\)"):
        nd.contrib.DeformableConvolution(x, nd.zeros((1, 18, 5, 5)), w, kernel=(3, 3), num_filter=2, no_bias=True)
    with pytest.raises(mx.base.MXNetError, match="only 2-D kernels"):
        nd.contrib.DeformableConvolution(nd.zeros((1, 4, 5, 5, 5)), nd.zeros((1, 54, 3, 3, 3)),
                                         nd.zeros((2, 4, 3, 3, 3)), kernel=(3, 3, 3), num_filter=2, no_bias=True)
    with pytest.raises(mx.base.MXNetError, match="not divisible by num_group"):
        nd.contrib.DeformableConvolution(x, nd.zeros((1, 18, 3, 3)), w, kernel=(3, 3), num_filter=3, num_group=2,
                                         no_bias=True)
    with pytest.raises(mx.base.MXNetError, match="larger than the padded input"):
        nd.contrib.DeformableConvolution(x, nd.zeros((1, 72, 1, 1)), w, kernel=(6, 6), num_filter=2, no_bias=True)
    with pytest.raises(mx.base.MXNetError, match="layout"):
        nd.contrib.DeformableConvolution(x, nd.zeros((1, 18, 3, 3)), w, kernel=(3, 3), num_filter=2, no_bias=True,
                                         layout="NHWC")
    with pytest.raises(mx.base.MXNetError, match=r"input 'mask' has shape \(1,18,3,3\)"):
        nd.contrib.ModulatedDeformableConvolution(x, nd.zeros((1, 18, 3, 3)), nd.zeros((1, 18, 3, 3)), w,
                                                  kernel=(3, 3), num_filter=2, no_bias=True)
    with pytest.raises(mx.base.MXNetError, match="im2col_step"):
        nd.contrib.ModulatedDeformableConvolution(nd.zeros((6, 4, 5, 5)), nd.zeros((6, 18, 3, 3)),
                                                  nd.zeros((6, 9, 3, 3)), w, kernel=(3, 3), num_filter=2,
                                                  no_bias=True, im2col_step=4)
    with pytest.raises(mx.base.MXNetError, match="num_filter .3. is not divisible by num_deformable_group"):
        nd.contrib.ModulatedDeformableConvolution(x, nd.zeros((1, 36, 3, 3)), nd.zeros((1, 18, 3, 3)),
                                                  nd.zeros((3, 4, 3, 3)), kernel=(3, 3), num_filter=3,
                                                  num_deformable_group=2, no_bias=True)
    with pytest.raises(mx.base.MXNetError, match="float"):
        nd.contrib.DeformableConvolution(nd.zeros((1, 4, 5, 5), dtype="int32"), nd.zeros((1, 18, 3, 3),
                                         dtype="int32"), nd.zeros((2, 4, 3, 3), dtype="int32"), kernel=(3, 3),
                                         num_filter=2, no_bias=True)
    # Hand-called backward operators check every input they read.
    with pytest.raises(mx.base.MXNetError, match="ograd"):
        nd._internal._backward_DeformableConvolution(nd.zeros((1, 2, 2, 2)), x, nd.zeros((1, 18, 3, 3)), w,
                                                     kernel=(3, 3), num_filter=2, no_bias=True)
    with pytest.raises(mx.base.MXNetError, match="offset"):
        nd._internal._backward_DeformableConvolution(nd.zeros((1, 2, 3, 3)), x, nd.zeros((1, 18, 2, 3)), w,
                                                     kernel=(3, 3), num_filter=2, no_bias=True)
    with pytest.raises(mx.base.MXNetError, match="weight"):
        nd._internal._backward_DeformableConvolution(nd.zeros((1, 2, 3, 3)), x, nd.zeros((1, 18, 3, 3)),
                                                     nd.zeros((2, 4, 2, 3)), kernel=(3, 3), num_filter=2,
                                                     no_bias=True)
    with pytest.raises(mx.base.MXNetError, match="mask"):
        nd._internal._backward_ModulatedDeformableConvolution(nd.zeros((1, 2, 3, 3)), x, nd.zeros((1, 18, 3, 3)),
                                                              nd.zeros((1, 9, 3, 4)), w, kernel=(3, 3),
                                                              num_filter=2, no_bias=True)


# ---------------------------------------------------------------- DeformablePSROIPooling
def dpsroi_ref(data, rois, trans, scale, output_dim, group, pooled, part, spp, trans_std):
    n_, _, h, w = data.shape
    r_ = rois.shape[0]
    out, count = np.zeros((r_, output_dim, pooled, pooled)), np.zeros((r_, output_dim, pooled, pooled))
    classes = 1 if trans is None else trans.shape[1] // 2
    for r in range(r_):
        b = rois[r, 0]
        if not 0 <= b < n_:
            continue
        x1 = round_half_away(rois[r, 1]) * scale - 0.5
        y1 = round_half_away(rois[r, 2]) * scale - 0.5
        x2 = (round_half_away(rois[r, 3]) + 1) * scale - 0.5
        y2 = (round_half_away(rois[r, 4]) + 1) * scale - 0.5
        rw, rh = max(x2 - x1, 0.1), max(y2 - y1, 0.1)
        bw, bh = rw / pooled, rh / pooled
        for c in range(output_dim):
            cls = c // (output_dim // classes)
            for ph in range(pooled):
                for pw in range(pooled):
                    parth, partw = ph * part // pooled, pw * part // pooled
                    tx = ty = 0.0
                    if trans is not None:
                        tx = trans[r, 2 * cls, parth, partw] * trans_std
                        ty = trans[r, 2 * cls + 1, parth, partw] * trans_std
                    ws, hs = pw * bw + x1 + tx * rw, ph * bh + y1 + ty * rh
                    gh, gw = min(ph * group // pooled, group - 1), min(pw * group // pooled, group - 1)
                    img = data[int(b), (c * group + gh) * group + gw]
                    vals = []
                    for ih in range(spp):
                        for iw in range(spp):
                            x, y = ws + iw * bw / spp, hs + ih * bh / spp
                            if x < -0.5 or x > w - 0.5 or y < -0.5 or y > h - 0.5:
                                continue
                            x, y = min(max(x, 0), w - 1), min(max(y, 0), h - 1)
                            xa, xb, ya, yb = math.floor(x), math.ceil(x), math.floor(y), math.ceil(y)
                            lx, ly = x - xa, y - ya
                            vals.append((1 - lx) * (1 - ly) * img[ya, xa] + (1 - lx) * ly * img[yb, xa]
                                        + lx * (1 - ly) * img[ya, xb] + lx * ly * img[yb, xb])
                    if vals:
                        out[r, c, ph, pw] = np.mean(vals)
                    count[r, c, ph, pw] = len(vals)
    return out, count


DPS_ROIS = np.array([[0, 2, 3, 17, 13], [1, 0, 0, 22, 19], [1, 6.4, 5.6, 8.6, 7.4], [-1, 0, 0, 4, 4],
                     [0, -12, -9, 40, 35], [2, 1, 1, 9, 9]])


@pytest.mark.parametrize("pooled,group,part,spp", [(3, 3, 3, 2), (4, 2, 2, 3), (2, 2, 0, 1)])
def test_deformable_psroi_pooling_forward(pooled, group, part, spp):
    data = RNG.uniform(-1, 1, (2, 2 * group * group, 9, 11))
    part_eff = part or pooled
    trans = RNG.uniform(-1, 1, (len(DPS_ROIS), 2, part_eff, part_eff))
    params = dict(spatial_scale=0.5, output_dim=2, group_size=group, pooled_size=pooled, part_size=part,
                  sample_per_part=spp, trans_std=0.3)
    got = nd.contrib.DeformablePSROIPooling(arr(data), arr(DPS_ROIS), arr(trans), **params)
    want, _ = dpsroi_ref(data, DPS_ROIS, trans, 0.5, 2, group, pooled, part_eff, spp, 0.3)
    assert got.shape == (len(DPS_ROIS), 2, pooled, pooled)
    assert_almost_equal(got.asnumpy(), want, rtol=1e-12, atol=1e-12)
    plain = nd.contrib.DeformablePSROIPooling(arr(data), arr(DPS_ROIS), no_trans=True,
                                              **dict(params, trans_std=0.0))
    want, _ = dpsroi_ref(data, DPS_ROIS, None, 0.5, 2, group, pooled, part_eff, spp, 0.0)
    assert_almost_equal(plain.asnumpy(), want, rtol=1e-12, atol=1e-12)


def test_deformable_psroi_pooling_classes_and_top_count():
    # Two trans classes: output channels 0-1 move with class 0, 2-3 with class 1.
    data = RNG.uniform(-1, 1, (1, 4 * 4, 8, 8))
    rois = np.array([[0, 3, 2, 12, 13], [0, 0, 0, 15, 15]])
    trans = RNG.uniform(-1, 1, (2, 4, 2, 2))
    params = dict(spatial_scale=0.5, output_dim=4, group_size=2, pooled_size=2, sample_per_part=2, trans_std=0.5)
    sym = mx.sym.contrib.DeformablePSROIPooling(mx.sym.var("data"), mx.sym.var("rois"), mx.sym.var("trans"),
                                                **params)
    assert len(sym.list_outputs()) == 1
    # Both outputs, the hidden top_count included, written into arrays given by the caller.
    outs = [nd.zeros((2, 4, 2, 2), dtype=np.float64) for _ in range(2)]
    nd.invoke("_contrib_DeformablePSROIPooling", [arr(data), arr(rois), arr(trans)], params, out=outs)
    got, count = [o.asnumpy() for o in outs]
    want, want_count = dpsroi_ref(data, rois, trans, 0.5, 4, 2, 2, 2, 2, 0.5)
    assert_almost_equal(got, want, rtol=1e-12, atol=1e-12)
    assert_almost_equal(count, want_count)


@pytest.mark.parametrize("no_trans", [False, True])
def test_deformable_psroi_pooling_gradients(no_trans):
    data = RNG.uniform(-1, 1, (2, 2 * 4, 7, 8))
    rois = np.array([[0, 1, 2, 9, 11], [1, 3, 1, 12, 10], [0, 4, 4, 6, 7]])
    trans = RNG.uniform(-0.4, 0.4, (3, 2, 2, 2))
    params = dict(spatial_scale=0.7, output_dim=2, group_size=2, pooled_size=2, sample_per_part=2,
                  trans_std=0.2 if not no_trans else 0.0, no_trans=no_trans)
    ins = [data, rois] + ([] if no_trans else [trans])
    # A small step: trans moves samples, and a step straddling a pixel line meets a kink.
    check_numeric_gradient("_contrib_DeformablePSROIPooling", ins, params=params, numeric_eps=1e-5,
                           grad_nodes=[0] if no_trans else [0, 2])


def test_deformable_psroi_pooling_errors():
    data, rois = nd.zeros((1, 8, 4, 4)), nd.zeros((2, 5))
    with pytest.raises(mx.base.MXNetError, match=r"at least output_dim \* group_size\^2 = 18 channels"):
        nd.contrib.DeformablePSROIPooling(data, rois, spatial_scale=1, output_dim=2, group_size=3, pooled_size=3,
                                          no_trans=True)
    with pytest.raises(mx.base.MXNetError, match=r"expected rois \(num_rois, 5\)"):
        nd.contrib.DeformablePSROIPooling(data, nd.zeros((2, 4)), spatial_scale=1, output_dim=2, group_size=2,
                                          pooled_size=2, no_trans=True)
    with pytest.raises(mx.base.MXNetError, match="classes dividing output_dim"):
        nd.contrib.DeformablePSROIPooling(data, rois, nd.zeros((2, 3, 2, 2)), spatial_scale=1, output_dim=2,
                                          group_size=2, pooled_size=2)
    with pytest.raises(mx.base.MXNetError, match=r"input 'trans' has shape \(1,2,2,2\)"):
        nd.contrib.DeformablePSROIPooling(data, rois, nd.zeros((1, 2, 2, 2)), spatial_scale=1, output_dim=2,
                                          group_size=2, pooled_size=2)
    with pytest.raises(mx.base.MXNetError, match="group_size"):
        nd.contrib.DeformablePSROIPooling(data, rois, spatial_scale=1, output_dim=2, pooled_size=2, no_trans=True)
    with pytest.raises(mx.base.MXNetError, match="ograd"):
        nd._internal._backward_DeformablePSROIPooling(nd.zeros((2, 2, 3, 3)), data, rois, nd.zeros((2, 2, 2, 2)),
                                                      spatial_scale=1, output_dim=2, group_size=2, pooled_size=2)
    with pytest.raises(mx.base.MXNetError, match="trans"):
        nd._internal._backward_DeformablePSROIPooling(nd.zeros((2, 2, 2, 2)), data, rois, nd.zeros((2, 2, 3, 2)),
                                                      spatial_scale=1, output_dim=2, group_size=2, pooled_size=2)


# ---------------------------------------------------------------- RROIAlign
def rroi_align_ref(data, rois, pooled, scale, ratio):
    n_, c_, h, w = data.shape
    ph_, pw_ = pooled
    out = np.zeros((rois.shape[0], c_, ph_, pw_))
    for r, (b, cx, cy, rw, rh, deg) in enumerate(rois):
        if not 0 <= b < n_:
            continue
        cx, cy, rw, rh = cx * scale, cy * scale, max(rw * scale, 1.0), max(rh * scale, 1.0)
        th = math.radians(deg)
        gh = ratio if ratio > 0 else math.ceil(rh / ph_)
        gw = ratio if ratio > 0 else math.ceil(rw / pw_)
        for i in range(ph_):
            for j in range(pw_):
                acc = np.zeros(c_)
                for iy in range(gh):
                    for ix in range(gw):
                        yy = -rh / 2 + (i + (iy + 0.5) / gh) * rh / ph_
                        xx = -rw / 2 + (j + (ix + 0.5) / gw) * rw / pw_
                        x = xx * math.cos(th) + yy * math.sin(th) + cx
                        y = yy * math.cos(th) - xx * math.sin(th) + cy
                        if y < -1 or y > h or x < -1 or x > w:
                            continue
                        y, x = min(max(y, 0), h - 1), min(max(x, 0), w - 1)
                        y0, x0 = int(y), int(x)
                        y1, x1 = min(y0 + 1, h - 1), min(x0 + 1, w - 1)
                        ly, lx = y - y0, x - x0
                        img = data[int(b)]
                        acc += ((1 - ly) * (1 - lx) * img[:, y0, x0] + (1 - ly) * lx * img[:, y0, x1]
                                + ly * (1 - lx) * img[:, y1, x0] + ly * lx * img[:, y1, x1])
                out[r, :, i, j] = acc / (gh * gw)
    return out


RROIS = np.array([[0, 10, 8, 12, 6, 30], [1, 5, 6, 9, 14, -75], [0, 4, 4, 0.5, 0.2, 10], [2, 3, 3, 4, 4, 0],
                  [1, 14, 12, 30, 30, 135]])


@pytest.mark.parametrize("ratio", [-1, 2])
def test_rroi_align_forward(ratio):
    data = RNG.uniform(-1, 1, (2, 3, 9, 10))
    got = nd.contrib.RROIAlign(arr(data), arr(RROIS), pooled_size=(2, 3), spatial_scale=0.6, sampling_ratio=ratio)
    assert got.shape == (5, 3, 2, 3)
    assert_almost_equal(got.asnumpy(), rroi_align_ref(data, RROIS, (2, 3), 0.6, ratio), rtol=1e-12, atol=1e-12)


def test_rroi_align_unrotated_is_roi_align():
    data = RNG.uniform(-1, 1, (1, 2, 12, 12))
    boxes = np.array([[0, 1.5, 2.0, 9.0, 7.5], [0, 3.0, 1.0, 10.0, 11.0]])
    rot = np.array([[0, (b[1] + b[3]) / 2, (b[2] + b[4]) / 2, b[3] - b[1], b[4] - b[2], 0] for b in boxes])
    want = nd.contrib.ROIAlign(arr(data), arr(boxes), pooled_size=(3, 2), spatial_scale=1.0, sample_ratio=2)
    got = nd.contrib.RROIAlign(arr(data), arr(rot), pooled_size=(3, 2), spatial_scale=1.0, sampling_ratio=2)
    assert_almost_equal(got.asnumpy(), want.asnumpy(), rtol=1e-12, atol=1e-12)
    # Half a turn visits the same samples from the opposite corner.
    rot[:, 5] = 180
    got = nd.contrib.RROIAlign(arr(data), arr(rot), pooled_size=(3, 2), spatial_scale=1.0, sampling_ratio=2)
    assert_almost_equal(got.asnumpy(), want.asnumpy()[:, :, ::-1, ::-1], rtol=1e-9, atol=1e-9)


def test_rroi_align_gradient_and_errors():
    data = RNG.uniform(-1, 1, (2, 2, 7, 8))
    rois = np.array([[0, 3.3, 3.1, 4.2, 3.4, 25], [1, 4.1, 2.7, 5.3, 2.9, -60]])
    check_numeric_gradient("_contrib_RROIAlign", [data, rois], grad_nodes=[0],
                           params={"pooled_size": (2, 2), "spatial_scale": 1.0, "sampling_ratio": 2})
    with pytest.raises(mx.base.MXNetError, match=r"expected rois \(num_rois, 6\)"):
        nd.contrib.RROIAlign(nd.zeros((1, 2, 4, 4)), nd.zeros((1, 5)), pooled_size=(2, 2), spatial_scale=1)
    with pytest.raises(mx.base.MXNetError, match="pooled_size"):
        nd.contrib.RROIAlign(nd.zeros((1, 2, 4, 4)), nd.zeros((1, 6)), pooled_size=(2, 0), spatial_scale=1)
    with pytest.raises(mx.base.MXNetError, match="not finite"):
        nd.contrib.RROIAlign(nd.zeros((1, 2, 4, 4)), nd.array([[0, 1, 1, np.inf, 2, 0]]), pooled_size=(2, 2),
                             spatial_scale=1).asnumpy()
    with pytest.raises(mx.base.MXNetError, match="ograd"):
        nd._internal._backward_RROIAlign(nd.zeros((1, 2, 3, 2)), nd.zeros((1, 2, 4, 4)), nd.zeros((1, 6)),
                                         pooled_size=(2, 2), spatial_scale=1)


# ---------------------------------------------------------------- Proposal / MultiProposal
def anchors_ref(stride, scales, ratios):
    out = []
    ctr = (stride - 1) / 2.0
    for r in ratios:
        for s in scales:
            w = math.floor(math.sqrt(math.floor(stride * stride / r)) + 0.5)
            h = math.floor(w * r + 0.5)
            w, h = w * s, h * s
            out.append([ctr - (w - 1) / 2, ctr - (h - 1) / 2, ctr + (w - 1) / 2, ctr + (h - 1) / 2])
    return np.array(out)


def proposal_ref(cls_prob, bbox_pred, im_info, stride=16, scales=(4, 8, 16, 32), ratios=(0.5, 1, 2), pre=6000,
                 post=300, thresh=0.7, min_size=16, iou_loss=False):
    base = anchors_ref(stride, scales, ratios)
    a_, (n_, _, h, w) = len(base), cls_prob.shape
    rows, scores = [], []
    for b in range(n_):
        dets = []
        real_h, real_w = int(im_info[b, 0] / stride), int(im_info[b, 1] / stride)
        for y in range(h):
            for x in range(w):
                for a in range(a_):
                    an = base[a] + [x * stride, y * stride, x * stride, y * stride]
                    d = bbox_pred[b, 4 * a:4 * a + 4, y, x]
                    if iou_loss:
                        box = an + d
                    else:
                        bw, bh = an[2] - an[0] + 1, an[3] - an[1] + 1
                        cx, cy = an[0] + (bw - 1) / 2, an[1] + (bh - 1) / 2
                        pcx, pcy, pw, ph = d[0] * bw + cx, d[1] * bh + cy, math.exp(d[2]) * bw, math.exp(d[3]) * bh
                        box = np.array([pcx - (pw - 1) / 2, pcy - (ph - 1) / 2, pcx + (pw - 1) / 2,
                                        pcy + (ph - 1) / 2])
                    box = np.clip(box, 0, [im_info[b, 1] - 1, im_info[b, 0] - 1] * 2)
                    score = -1.0 if y >= real_h or x >= real_w else cls_prob[b, a_ + a, y, x]
                    ms = min_size * im_info[b, 2]
                    if box[2] - box[0] + 1 < ms or box[3] - box[1] + 1 < ms:
                        box = box + [-ms / 2, -ms / 2, ms / 2, ms / 2]
                        score = -1.0
                    dets.append((box, score))
        order = np.argsort(-np.array([s for _, s in dets]), kind="stable")
        count = len(dets)
        pre_n = min(pre, count) if pre > 0 else count
        cand = [dets[i] for i in order[:pre_n]]
        keep, alive = [], [True] * len(cand)
        for i, (bi, _) in enumerate(cand):
            if len(keep) >= min(post, pre_n):
                break
            if not alive[i]:
                continue
            keep.append(i)
            for j in range(i + 1, len(cand)):
                bj = cand[j][0]
                iw = max(0.0, min(bi[2], bj[2]) - max(bi[0], bj[0]) + 1)
                ih = max(0.0, min(bi[3], bj[3]) - max(bi[1], bj[1]) + 1)
                inter = iw * ih
                ai = (bi[2] - bi[0] + 1) * (bi[3] - bi[1] + 1)
                aj = (bj[2] - bj[0] + 1) * (bj[3] - bj[1] + 1)
                if alive[j] and inter / (ai + aj - inter) > thresh:
                    alive[j] = False
        for i in range(post):
            box, score = cand[keep[i % len(keep)]]
            rows.append([b] + list(box))
            scores.append([score])
    return np.array(rows), np.array(scores)


def test_proposal_anchors_are_faster_rcnns():
    # The well-known anchors of stride 16, scales (8, 16, 32), ratios (0.5, 1, 2).
    want = [[-84, -40, 99, 55], [-176, -88, 191, 103], [-360, -184, 375, 199], [-56, -56, 71, 71],
            [-120, -120, 135, 135], [-248, -248, 263, 263], [-36, -80, 51, 95], [-80, -168, 95, 183],
            [-168, -344, 183, 359]]
    assert_almost_equal(anchors_ref(16, (8, 16, 32), (0.5, 1, 2)), np.array(want, dtype=float))
    # With no deltas and min size 0, the 9 best scores at cell (24, 24) of a 48x48 map give
    # that cell's anchors, 24 * 16 pixels from the origin, in the anchors' order.
    cls = np.zeros((1, 18, 48, 48))
    cls[0, 9:, 24, 24] = np.linspace(0.9, 0.1, 9)
    out, score = nd.contrib.Proposal(arr(cls), arr(np.zeros((1, 36, 48, 48))), arr([[768, 768, 1]]),
                                     scales=(8, 16, 32), ratios=(0.5, 1, 2), rpn_min_size=0, threshold=1.0,
                                     rpn_pre_nms_top_n=9, rpn_post_nms_top_n=9, output_score=True)
    assert_almost_equal(out.asnumpy()[:, 1:], np.array(want, dtype=float) + 384)
    assert_almost_equal(score.asnumpy()[:, 0], np.linspace(0.9, 0.1, 9), rtol=1e-6, atol=1e-7)


def test_proposal_hand_case():
    # A 2x2 map of one 16-pixel anchor each ([0,0,15,15] moved by 16 per cell), no deltas.
    cls = np.zeros((1, 2, 2, 2))
    cls[0, 1] = [[0.1, 0.9], [0.5, 0.3]]
    deltas = np.zeros((1, 4, 2, 2))
    out, score = nd.contrib.Proposal(arr(cls), arr(deltas), arr([[32, 32, 1]]), scales=(1,), ratios=(1,),
                                     rpn_post_nms_top_n=6, output_score=True)
    want = [[0, 16, 0, 31, 15], [0, 0, 16, 15, 31], [0, 16, 16, 31, 31], [0, 0, 0, 15, 15],
            [0, 16, 0, 31, 15], [0, 0, 16, 15, 31]]  # the kept boxes repeat
    assert_almost_equal(out.asnumpy(), np.array(want, dtype=float))
    assert_almost_equal(score.asnumpy()[:, 0], [0.9, 0.5, 0.3, 0.1, 0.9, 0.5])
    # Decoding: x shifted by a quarter width (4 px) and doubled in height (centre 7.5 holds).
    deltas[0, :, 0, 0] = [0.25, 0, 0, math.log(2)]
    cls[0, 1, 0, 0] = 2.0
    out = nd.contrib.Proposal(arr(cls), arr(deltas), arr([[32, 32, 1]]), scales=(1,), ratios=(1,),
                              rpn_post_nms_top_n=1)
    assert_almost_equal(out.asnumpy(), [[0, 4, 0, 19, 23]], atol=1e-4)  # y1 = 7.5 - 15.5 clipped to 0
    # Clipping to an image of 24 x 20 pixels: its real extent is one cell high and wide, so
    # the other cells score -1 and sort last, and boxes end at 19 and 23.
    out, score = nd.contrib.Proposal(arr(cls), arr(deltas), arr([[24, 20, 1]]), scales=(1,), ratios=(1,),
                                     rpn_post_nms_top_n=4, output_score=True, rpn_min_size=1)
    assert_almost_equal(out.asnumpy()[0], [0, 4, 0, 19, 23], atol=1e-4)
    assert_almost_equal(score.asnumpy()[:, 0], [2.0, -1, -1, -1])
    assert_almost_equal(out.asnumpy()[1:], [[0, 16, 0, 19, 15], [0, 0, 16, 15, 23], [0, 16, 16, 19, 23]])


def test_proposal_min_size_and_nms():
    # Two anchors at one cell: [0,0,15,15] and [-8,-8,23,23] (clipped to [0,0,23,23] by a 31-pixel image); IoU 256/576.
    cls = np.array([0, 0, 0.4, 0.8]).reshape(1, 4, 1, 1)
    deltas = np.zeros((1, 8, 1, 1))
    info = arr([[31, 31, 1]])
    out = nd.contrib.Proposal(arr(cls), arr(deltas), info, scales=(1, 2), ratios=(1,), threshold=0.4,
                              rpn_post_nms_top_n=2)
    assert_almost_equal(out.asnumpy(), [[0, 0, 0, 23, 23], [0, 0, 0, 23, 23]])  # the small one suppressed
    out = nd.contrib.Proposal(arr(cls), arr(deltas), info, scales=(1, 2), ratios=(1,), threshold=0.5,
                              rpn_post_nms_top_n=2)
    assert_almost_equal(out.asnumpy(), [[0, 0, 0, 23, 23], [0, 0, 0, 15, 15]])
    # rpn_min_size 20 (times scale 1): the 16-pixel box scores -1 and grows by 10 a side.
    out, score = nd.contrib.Proposal(arr(cls), arr(deltas), info, scales=(1, 2), ratios=(1,), threshold=0.5,
                                     rpn_post_nms_top_n=2, rpn_min_size=20, output_score=True)
    assert_almost_equal(out.asnumpy(), [[0, 0, 0, 23, 23], [0, -10, -10, 25, 25]])
    assert_almost_equal(score.asnumpy()[:, 0], [0.8, -1])
    # The image scale multiplies the minimum size: 10 * 2 = 20 filters the same box.
    out = nd.contrib.Proposal(arr(cls), arr(deltas), arr([[31, 31, 2]]), scales=(1, 2), ratios=(1,),
                              threshold=0.5, rpn_post_nms_top_n=2, rpn_min_size=10)
    assert_almost_equal(out.asnumpy()[1], [0, -10, -10, 25, 25])
    # rpn_pre_nms_top_n=1 leaves one candidate, which repeats.
    out = nd.contrib.Proposal(arr(cls), arr(deltas), info, scales=(1, 2), ratios=(1,), threshold=0.5,
                              rpn_post_nms_top_n=2, rpn_pre_nms_top_n=1)
    assert_almost_equal(out.asnumpy(), [[0, 0, 0, 23, 23], [0, 0, 0, 23, 23]])


@pytest.mark.parametrize("iou_loss", [False, True])
def test_proposal_against_reference(iou_loss):
    h, w = 5, 6
    cls = RNG.uniform(0, 1, (1, 2 * 6, h, w))
    deltas = RNG.uniform(-0.3, 0.3, (1, 4 * 6, h, w)) * (8 if iou_loss else 1)
    info = np.array([[70.0, 90.0, 1.2]])
    kw = dict(stride=16, scales=(2, 4), ratios=(0.5, 1, 2), pre=40, post=12, thresh=0.6, min_size=8,
              iou_loss=iou_loss)
    want_rows, want_scores = proposal_ref(cls, deltas, info, **kw)
    out, score = nd.contrib.Proposal(arr(cls, np.float32), arr(deltas, np.float32), arr(info, np.float32),
                                     feature_stride=16, scales=(2, 4), ratios=(0.5, 1, 2), rpn_pre_nms_top_n=40,
                                     rpn_post_nms_top_n=12, threshold=0.6, rpn_min_size=8, iou_loss=iou_loss,
                                     output_score=True)
    assert out.dtype == np.float32
    assert_almost_equal(out.asnumpy(), want_rows, rtol=1e-5, atol=1e-3)
    assert_almost_equal(score.asnumpy(), want_scores, rtol=1e-6, atol=1e-6)


def test_multi_proposal_is_proposal_per_image():
    n, h, w = 3, 4, 4
    cls = RNG.uniform(0, 1, (n, 2 * 3, h, w))
    deltas = RNG.uniform(-0.2, 0.2, (n, 4 * 3, h, w))
    info = np.array([[64, 64, 1.0], [50, 40, 0.5], [33, 64, 2.0]])
    params = dict(feature_stride=16, scales=(1, 2, 3), ratios=(1,), rpn_pre_nms_top_n=20, rpn_post_nms_top_n=5,
                  threshold=0.5, rpn_min_size=4)
    out, score = nd.contrib.MultiProposal(arr(cls), arr(deltas), arr(info), output_score=True, **params)
    assert out.shape == (15, 5) and score.shape == (15, 1)
    for b in range(n):
        one, one_score = nd.contrib.Proposal(arr(cls[b:b + 1]), arr(deltas[b:b + 1]), arr(info[b:b + 1]),
                                             output_score=True, **params)
        rows = out.asnumpy()[b * 5:(b + 1) * 5]
        assert (rows[:, 0] == b).all()
        assert_almost_equal(rows[:, 1:], one.asnumpy()[:, 1:])
        assert_almost_equal(score.asnumpy()[b * 5:(b + 1) * 5], one_score.asnumpy())
    want_rows, want_scores = proposal_ref(cls, deltas, info, stride=16, scales=(1, 2, 3), ratios=(1,), pre=20,
                                          post=5, thresh=0.5, min_size=4)
    assert_almost_equal(out.asnumpy(), want_rows, rtol=1e-5, atol=1e-3)


def test_proposal_outputs_gradient_and_errors():
    sym = mx.sym.contrib.Proposal(mx.sym.var("cls_prob"), mx.sym.var("bbox_pred"), mx.sym.var("im_info"))
    assert len(sym.list_outputs()) == 1
    args, outs, _ = sym.infer_shape(cls_prob=(1, 24, 3, 4))
    assert args == [(1, 24, 3, 4), (1, 48, 3, 4), (1, 3)] and outs == [(300, 5)]
    sym = mx.sym.contrib.MultiProposal(mx.sym.var("cls_prob"), mx.sym.var("bbox_pred"), mx.sym.var("im_info"),
                                       output_score=True, rpn_post_nms_top_n=7)
    assert len(sym.list_outputs()) == 2
    _, outs, _ = sym.infer_shape(cls_prob=(2, 24, 3, 4))
    assert outs == [(14, 5), (14, 1)]
    # No gradient flows to the inputs: zeros, as in MXNet.
    cls = arr(RNG.uniform(0, 1, (1, 2, 2, 2)))
    cls.attach_grad()
    with mx.autograd.record():
        out = nd.contrib.Proposal(cls, nd.zeros((1, 4, 2, 2), dtype=np.float64), arr([[32, 32, 1]]), scales=(1,),
                                  ratios=(1,), rpn_post_nms_top_n=2)
    out.backward(nd.ones(out.shape, dtype=np.float64))
    assert (cls.grad.asnumpy() == 0).all()
    with pytest.raises(mx.base.MXNetError, match="expected one image"):
        nd.contrib.Proposal(nd.zeros((2, 24, 2, 2)), nd.zeros((2, 48, 2, 2)), nd.zeros((2, 3)))
    with pytest.raises(mx.base.MXNetError, match=r"2 \* 12 anchors"):
        nd.contrib.Proposal(nd.zeros((1, 18, 2, 2)), nd.zeros((1, 36, 2, 2)), nd.zeros((1, 3)))
    with pytest.raises(mx.base.MXNetError, match="bbox_pred"):
        nd.contrib.Proposal(nd.zeros((1, 24, 2, 2)), nd.zeros((1, 36, 2, 2)), nd.zeros((1, 3)))
    with pytest.raises(mx.base.MXNetError, match="im_info"):
        nd.contrib.MultiProposal(nd.zeros((2, 24, 2, 2)), nd.zeros((2, 48, 2, 2)), nd.zeros((1, 3)))
    with pytest.raises(mx.base.MXNetError, match="more than the feature map"):
        nd.contrib.Proposal(nd.zeros((1, 24, 2, 2)), nd.zeros((1, 48, 2, 2)), nd.array([[48, 32, 1]])).wait_to_read()


# ---------------------------------------------------------------- empty maps
@pytest.mark.parametrize("op,shape,rois,params", [
    ("ROIAlign", (1, 2, 0, 4), [[0, 0, 0, 2, 2]], dict(pooled_size=(2, 2), spatial_scale=1.0)),
    ("RROIAlign", (1, 2, 0, 4), [[0, 1, 1, 2, 2, 30]], dict(pooled_size=(2, 2), spatial_scale=1.0)),
    ("DeformablePSROIPooling", (1, 8, 3, 0), [[0, 0, 0, 2, 2]],
     dict(spatial_scale=1.0, output_dim=2, group_size=2, pooled_size=2, no_trans=True)),
])
def test_roi_operators_pool_an_empty_map_to_zeros(op, shape, rois, params):
    # A map without pixels has nothing to interpolate: zeros, and no read outside the array.
    with mx.util.np_shape():  # a zero size is an unknown one in MXNet's legacy mode
        x = nd.ones(shape, dtype=np.float64)
    x.attach_grad()
    with mx.autograd.record():
        y = getattr(nd.contrib, op)(x, arr(rois), **params)
    y.backward(nd.ones(y.shape, dtype=np.float64))
    assert y.shape == (1, 2, 2, 2) and (y.asnumpy() == 0).all()
    assert x.grad.shape == shape


def test_modulated_deformable_conv_in_a_bound_graph():
    # The executor's path (graph gradient, memory planning) gives what autograd gives.
    x, weight, bias, off_shape, mask_shape = conv_case(CONFIGS[2], n=2)
    off, mask = RNG.uniform(-2, 2, off_shape), RNG.uniform(0, 1, mask_shape)
    params = dict(CONFIGS[2], num_filter=4)
    names = ["data", "offset", "mask", "weight", "bias"]
    values = [x, off, mask, weight, bias]
    sym = mx.sym.contrib.ModulatedDeformableConvolution(*[mx.sym.var(n) for n in names], **params)
    args = {n: arr(v) for n, v in zip(names, values)}
    grads = {n: nd.zeros(v.shape, dtype=np.float64) for n, v in zip(names, values)}
    ex = sym.bind(mx.cpu(), args, args_grad=grads)
    head = RNG.uniform(-1, 1, ex.forward(is_train=True)[0].shape)
    ex.backward(arr(head))
    ins = [arr(v) for v in values]
    for v in ins:
        v.attach_grad()
    with mx.autograd.record():
        y = nd.contrib.ModulatedDeformableConvolution(*ins, **params)
    y.backward(arr(head))
    assert_almost_equal(ex.outputs[0].asnumpy(), y.asnumpy(), rtol=1e-12, atol=1e-12)
    for n, v in zip(names, ins):
        assert_almost_equal(grads[n].asnumpy(), v.grad.asnumpy(), rtol=1e-12, atol=1e-12)
