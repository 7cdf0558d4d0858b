"""MXNet 1.9's spatial, ROI, CTC and detection operators against numpy references written
here (and PyTorch where it has the same operation), their gradients against central
differences, and their error paths."""
import numpy as np
import pytest

import weft as mx
from weft import nd
from weft.test_utils import assert_almost_equal, check_numeric_gradient

try:
    import torch
except ImportError:  # the numpy references still run
    torch = None

RNG = np.random.RandomState(19)


def arr(x, dtype=np.float64):
    return nd.array(np.asarray(x, dtype=dtype), dtype=dtype)


# ---------------------------------------------------------------- samplers
def norm_coords(n):
    return np.linspace(-1, 1, n) if n > 1 else np.array([-1.0])


def affine_grid_ref(theta, h, w):
    xs, ys = np.meshgrid(norm_coords(w), norm_coords(h))
    base = np.stack([xs.ravel(), ys.ravel(), np.ones(h * w)])
    return (theta.reshape(-1, 2, 3) @ base).reshape(-1, 2, h, w)


def warp_grid_ref(flow):
    _, _, h, w = flow.shape
    xs, ys = np.meshgrid(np.arange(w), np.arange(h))
    out = np.empty_like(flow)
    out[:, 0] = (flow[:, 0] + xs) / ((w - 1) / 2.0) - 1
    out[:, 1] = (flow[:, 1] + ys) / ((h - 1) / 2.0) - 1
    return out


def bilinear_ref(data, grid):
    n, c, h, w = data.shape
    _, _, oh, ow = grid.shape
    out = np.zeros((n, c, oh, ow))
    for b in range(n):
        for i in range(oh):
            for j in range(ow):
                x = (grid[b, 0, i, j] + 1) * (w - 1) / 2.0
                y = (grid[b, 1, i, j] + 1) * (h - 1) / 2.0
                x0, y0 = int(np.floor(x)), int(np.floor(y))
                for yy, xx in ((y0, x0), (y0, x0 + 1), (y0 + 1, x0), (y0 + 1, x0 + 1)):
                    if 0 <= yy < h and 0 <= xx < w:
                        out[b, :, i, j] += data[b, :, yy, xx] * (1 - abs(x - xx)) * (1 - abs(y - yy))
    return out


def test_grid_generator_affine_forward():
    theta = RNG.uniform(-1, 1, (3, 6))
    out = nd.GridGenerator(arr(theta), transform_type="affine", target_shape=(4, 5))
    assert out.shape == (3, 2, 4, 5)
    assert_almost_equal(out.asnumpy(), affine_grid_ref(theta, 4, 5), rtol=1e-12, atol=1e-12)


def test_grid_generator_warp_forward():
    flow = RNG.uniform(-2, 2, (2, 2, 4, 6))
    out = nd.GridGenerator(arr(flow), transform_type="warp")
    assert_almost_equal(out.asnumpy(), warp_grid_ref(flow), rtol=1e-12, atol=1e-12)


def test_grid_generator_gradients():
    check_numeric_gradient("GridGenerator", [RNG.uniform(-1, 1, (2, 6))],
                           params={"transform_type": "affine", "target_shape": (3, 4)})
    check_numeric_gradient("GridGenerator", [RNG.uniform(-1, 1, (2, 2, 3, 4))], params={"transform_type": "warp"})


def test_grid_generator_errors():
    with pytest.raises(mx.base.MXNetError, match=r"affine matrices \(batch, 6\), got shape \(2,5\)"):
        nd.GridGenerator(nd.zeros((2, 5)), transform_type="affine", target_shape=(3, 3))
    with pytest.raises(mx.base.MXNetError, match="target_shape"):
        nd.GridGenerator(nd.zeros((2, 6)), transform_type="affine")
    with pytest.raises(mx.base.MXNetError, match=r"optical flows \(batch, 2, h, w\)"):
        nd.GridGenerator(nd.zeros((2, 3, 4, 4)), transform_type="warp")
    with pytest.raises(mx.base.MXNetError, match="transform_type"):
        nd.GridGenerator(nd.zeros((2, 6)), transform_type="shear", target_shape=(3, 3))
    # A hand-called backward with a gradient of the wrong target size is refused.
    with pytest.raises(mx.base.MXNetError, match="gradient of a grid"):
        nd._internal._backward_GridGenerator(nd.zeros((2, 2, 3, 3)), transform_type="affine", target_shape=(4, 4))


def test_bilinear_sampler_forward_and_torch():
    data = RNG.uniform(-1, 1, (2, 3, 5, 6))
    # Points inside, on the border and outside the image.
    grid = RNG.uniform(-1.3, 1.3, (2, 2, 4, 7))
    out = nd.BilinearSampler(arr(data), arr(grid))
    assert out.shape == (2, 3, 4, 7)
    assert_almost_equal(out.asnumpy(), bilinear_ref(data, grid), rtol=1e-10, atol=1e-12)
    if torch is not None:
        want = torch.nn.functional.grid_sample(torch.from_numpy(data), torch.from_numpy(grid.transpose(0, 2, 3, 1)),
                                               mode="bilinear", padding_mode="zeros", align_corners=True)
        assert_almost_equal(out.asnumpy(), want.numpy(), rtol=1e-10, atol=1e-12)


def test_bilinear_sampler_gradients():
    data = RNG.uniform(-1, 1, (2, 2, 4, 5))
    # Keep the grid points away from pixel lines, where the sampler is not differentiable.
    grid = RNG.uniform(-1.2, 1.2, (2, 2, 3, 3))
    check_numeric_gradient("BilinearSampler", [data, grid], numeric_eps=1e-5, rtol=1e-4, atol=1e-6)


def test_bilinear_sampler_float32_and_identity():
    data = RNG.uniform(-1, 1, (1, 2, 4, 4)).astype(np.float32)
    ident = affine_grid_ref(np.array([[1, 0, 0, 0, 1, 0]], dtype=np.float64), 4, 4).astype(np.float32)
    out = nd.BilinearSampler(nd.array(data), nd.array(ident))
    assert out.dtype == np.float32
    assert_almost_equal(out.asnumpy(), data, rtol=1e-5, atol=1e-6)


def test_bilinear_sampler_errors():
    with pytest.raises(mx.base.MXNetError, match=r"expected a grid \(2, 2, h, w\)"):
        nd.BilinearSampler(nd.zeros((2, 3, 4, 4)), nd.zeros((2, 3, 4, 4)))
    with pytest.raises(mx.base.MXNetError, match=r"expected a grid \(2, 2, h, w\)"):
        nd.BilinearSampler(nd.zeros((2, 3, 4, 4)), nd.zeros((1, 2, 4, 4)))
    with pytest.raises(mx.base.MXNetError, match=r"expected data \(batch, channel, h, w\)"):
        nd.BilinearSampler(nd.zeros((3, 4, 4)), nd.zeros((3, 2, 4, 4)))
    with pytest.raises(mx.base.MXNetError, match="dtype"):
        nd.BilinearSampler(nd.zeros((1, 1, 2, 2)), nd.zeros((1, 2, 2, 2), dtype="float64"))
    with pytest.raises(mx.base.MXNetError, match="ograd"):
        nd._internal._backward_BilinearSampler(nd.zeros((1, 1, 3, 3)), nd.zeros((1, 1, 4, 4)), nd.zeros((1, 2, 2, 2)))


def test_spatial_transformer_forward_and_gradients():
    data = RNG.uniform(-1, 1, (2, 3, 5, 5))
    # Chosen so that no sample falls on a pixel line, where the sampler has kinks.
    loc = np.array([[0.83, 0.11, 0.047, -0.093, 0.77, 0.061], [0.71, -0.19, -0.087, 0.13, 0.93, 0.033]])
    out = nd.SpatialTransformer(arr(data), arr(loc), target_shape=(4, 3), transform_type="affine",
                                sampler_type="bilinear")
    assert out.shape == (2, 3, 4, 3)
    want = bilinear_ref(data, affine_grid_ref(loc, 4, 3))
    assert_almost_equal(out.asnumpy(), want, rtol=1e-10, atol=1e-12)
    check_numeric_gradient("SpatialTransformer", [data, loc], numeric_eps=1e-5, rtol=1e-4, atol=1e-6,
                           params={"target_shape": (4, 3), "transform_type": "affine", "sampler_type": "bilinear"})


def test_spatial_transformer_symbol_and_errors():
    sym = mx.sym.SpatialTransformer(mx.sym.var("data"), mx.sym.var("loc"), target_shape=(6, 7),
                                    transform_type="affine", sampler_type="bilinear")
    assert sym.list_outputs() == [sym.name + "_output"]
    _, out_shapes, _ = sym.infer_shape(data=(2, 3, 8, 8), loc=(2, 6))
    assert out_shapes == [(2, 3, 6, 7)]
    with pytest.raises(mx.base.MXNetError, match=r"expected loc of affine matrices \(2, 6\)"):
        nd.SpatialTransformer(nd.zeros((2, 1, 4, 4)), nd.zeros((2, 4)), target_shape=(2, 2),
                              transform_type="affine", sampler_type="bilinear")
    with pytest.raises(mx.base.MXNetError, match="sampler_type"):
        nd.SpatialTransformer(nd.zeros((2, 1, 4, 4)), nd.zeros((2, 6)), target_shape=(2, 2),
                              transform_type="affine", sampler_type="nearest")
    with pytest.raises(mx.base.MXNetError, match="ograd"):
        nd._internal._backward_SpatialTransformer(nd.zeros((2, 1, 3, 3)), nd.zeros((2, 1, 4, 4)), nd.zeros((2, 6)),
                                        target_shape=(2, 2), transform_type="affine", sampler_type="bilinear")


def test_spatial_transformer_in_autograd():
    data = nd.array(RNG.uniform(-1, 1, (1, 1, 4, 4)))
    loc = nd.array([[1, 0, 0, 0, 1, 0]])
    data.attach_grad()
    loc.attach_grad()
    with mx.autograd.record():
        y = nd.SpatialTransformer(data, loc, target_shape=(4, 4), transform_type="affine", sampler_type="bilinear")
        s = y.sum()
    s.backward()
    # The identity transform samples every pixel once with weight one.
    assert_almost_equal(y.asnumpy(), data.asnumpy(), rtol=1e-5, atol=1e-6)
    assert_almost_equal(data.grad.asnumpy(), np.ones((1, 1, 4, 4)), rtol=1e-5, atol=1e-6)
    assert np.all(np.isfinite(loc.grad.asnumpy()))


# ---------------------------------------------------------------- ROI pooling
def roi_pool_ref(data, rois, ph, pw, scale):
    n, c, h, w = data.shape
    out = np.zeros((len(rois), c, ph, pw))
    for r, roi in enumerate(rois):
        b = int(roi[0])
        if not 0 <= b < n:
            continue
        x1, y1, x2, y2 = [int(np.floor(v * scale + 0.5)) for v in roi[1:]]
        rh, rw = max(y2 - y1 + 1, 1), max(x2 - x1 + 1, 1)
        for i in range(ph):
            hs = min(max(int(np.floor(i * rh / ph)) + y1, 0), h)
            he = min(max(int(np.ceil((i + 1) * rh / ph)) + y1, 0), h)
            for j in range(pw):
                ws = min(max(int(np.floor(j * rw / pw)) + x1, 0), w)
                we = min(max(int(np.ceil((j + 1) * rw / pw)) + x1, 0), w)
                if he > hs and we > ws:
                    out[r, :, i, j] = data[b, :, hs:he, ws:we].max(axis=(1, 2))
    return out


ROIS = np.array([[0, 0, 0, 7, 7], [1, 2, 4, 9, 13], [0, 5, 1, 6, 2], [1, -3, -2, 20, 25], [-1, 0, 0, 4, 4],
                 [3, 0, 0, 4, 4], [1, 9, 9, 3, 3]], dtype=np.float64)


def test_roi_pooling_forward():
    data = RNG.uniform(-1, 1, (2, 3, 8, 10))
    out = nd.ROIPooling(arr(data), arr(ROIS), pooled_size=(3, 2), spatial_scale=0.6)
    assert out.shape == (7, 3, 3, 2)
    assert_almost_equal(out.asnumpy(), roi_pool_ref(data, ROIS, 3, 2, 0.6), rtol=0, atol=0)


def test_roi_pooling_gradient():
    # Distinct values, so every bin has one maximum.
    data = RNG.permutation(2 * 2 * 6 * 6).reshape(2, 2, 6, 6) / 10.0
    rois = np.array([[0, 0, 0, 4, 4], [1, 1, 2, 5, 5], [0, 2, 2, 3, 5]])
    check_numeric_gradient("ROIPooling", [data, rois], grad_nodes=[0], params={"pooled_size": (2, 2),
                                                                               "spatial_scale": 1.0})
    x, r = arr(data), arr(rois)
    x.attach_grad()
    with mx.autograd.record():
        y = nd.ROIPooling(x, r, pooled_size=(2, 2), spatial_scale=1.0)
    y.backward(nd.ones_like(y))
    # Each output's gradient lands at its maximum.
    want = np.zeros_like(data)
    out = y.asnumpy()
    for v in out.ravel():
        want[data == v] += 1
    assert_almost_equal(x.grad.asnumpy(), want, rtol=0, atol=0)


def test_roi_pooling_errors():
    with pytest.raises(mx.base.MXNetError, match=r"expected rois \(num_rois, 5\)"):
        nd.ROIPooling(nd.zeros((1, 1, 4, 4)), nd.zeros((2, 4)), pooled_size=(2, 2), spatial_scale=1)
    with pytest.raises(mx.base.MXNetError, match=r"expected data \(batch, channel, h, w\)"):
        nd.ROIPooling(nd.zeros((1, 4, 4)), nd.zeros((2, 5)), pooled_size=(2, 2), spatial_scale=1)
    with pytest.raises(mx.base.MXNetError, match="spatial_scale"):
        nd.ROIPooling(nd.zeros((1, 1, 4, 4)), nd.zeros((2, 5)), pooled_size=(2, 2), spatial_scale=2)
    with pytest.raises(mx.base.MXNetError, match="pooled_size"):
        nd.ROIPooling(nd.zeros((1, 1, 4, 4)), nd.zeros((2, 5)), pooled_size=(2, 0), spatial_scale=1)
    with pytest.raises(mx.base.MXNetError, match="ograd"):
        nd._internal._backward_ROIPooling(nd.zeros((3, 1, 2, 2)), nd.zeros((1, 1, 4, 4)), nd.zeros((2, 5)),
                                pooled_size=(2, 2), spatial_scale=1)


def bilinear_roi_sample(img, y, x):
    h, w = img.shape[-2:]
    if y < -1 or y > h or x < -1 or x > w:
        return np.zeros(img.shape[:-2])
    y, x = max(y, 0.0), max(x, 0.0)
    y0, x0 = int(y), int(x)
    if y0 >= h - 1:
        y0 = y1 = h - 1
        y = float(y0)
    else:
        y1 = y0 + 1
    if x0 >= w - 1:
        x0 = x1 = w - 1
        x = float(x0)
    else:
        x1 = x0 + 1
    ly, lx = y - y0, x - x0
    return ((1 - ly) * (1 - lx) * img[..., y0, x0] + (1 - ly) * lx * img[..., y0, x1] +
            ly * (1 - lx) * img[..., y1, x0] + ly * lx * img[..., y1, x1])


def roi_align_ref(data, rois, ph, pw, scale, sample_ratio=-1, position_sensitive=False, aligned=False):
    n, c, h, w = data.shape
    oc = c // (ph * pw) if position_sensitive else c
    out = np.zeros((len(rois), oc, ph, pw))
    off = 0.5 if aligned else 0.0
    for r, roi in enumerate(rois):
        b = int(roi[0])
        if not 0 <= b < n:
            continue
        x1, y1, x2, y2 = roi[1:] * scale - off
        rw, rh = x2 - x1, y2 - y1
        if not aligned:
            rw, rh = max(rw, 1.0), max(rh, 1.0)
        bh, bw = rh / ph, rw / pw
        gh = sample_ratio if sample_ratio > 0 else int(np.ceil(bh))
        gw = sample_ratio if sample_ratio > 0 else int(np.ceil(bw))
        for i in range(ph):
            for j in range(pw):
                acc = np.zeros(c)
                for iy in range(gh):
                    for ix in range(gw):
                        acc += bilinear_roi_sample(data[b], y1 + i * bh + (iy + 0.5) * bh / gh,
                                                   x1 + j * bw + (ix + 0.5) * bw / gw)
                acc /= gh * gw
                if position_sensitive:
                    out[r, :, i, j] = acc[np.arange(oc) * ph * pw + i * pw + j]
                else:
                    out[r, :, i, j] = acc
    return out


@pytest.mark.parametrize("sample_ratio,aligned", [(-1, False), (2, False), (-1, True), (3, True)])
def test_roi_align_forward(sample_ratio, aligned):
    data = RNG.uniform(-1, 1, (2, 3, 9, 11))
    rois = np.array([[0, 1.2, 0.7, 15.3, 12.1], [1, 3.3, 4.1, 9.8, 17.6], [1, -4, -3, 30, 25],
                     [0, 6.1, 2.2, 6.9, 3.0], [-1, 0, 0, 4, 4]])
    got = nd.contrib.ROIAlign(arr(data), arr(rois), pooled_size=(2, 3), spatial_scale=0.5,
                              sample_ratio=sample_ratio, aligned=aligned)
    want = roi_align_ref(data, rois, 2, 3, 0.5, sample_ratio, aligned=aligned)
    assert_almost_equal(got.asnumpy(), want, rtol=1e-10, atol=1e-12)


def test_roi_align_position_sensitive():
    data = RNG.uniform(-1, 1, (1, 12, 6, 6))
    rois = np.array([[0, 0.5, 0.5, 5.5, 4.5], [0, 1, 2, 3, 5]])
    got = nd.contrib.ROIAlign(arr(data), arr(rois), pooled_size=(2, 3), spatial_scale=1.0, sample_ratio=2,
                              position_sensitive=True)
    assert got.shape == (2, 2, 2, 3)
    want = roi_align_ref(data, rois, 2, 3, 1.0, 2, position_sensitive=True)
    assert_almost_equal(got.asnumpy(), want, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("position_sensitive", [False, True])
def test_roi_align_gradient(position_sensitive):
    data = RNG.uniform(-1, 1, (2, 4, 5, 6))
    rois = np.array([[0, 0.3, 0.6, 4.4, 3.7], [1, 1.1, 0.2, 5.3, 4.9], [0, 2.2, 1.3, 3.1, 2.6]])
    check_numeric_gradient("_contrib_ROIAlign", [data, rois], grad_nodes=[0],
                           params={"pooled_size": (2, 2), "spatial_scale": 1.0, "sample_ratio": 2,
                                   "position_sensitive": position_sensitive})


def test_roi_align_errors():
    with pytest.raises(mx.base.MXNetError, match="divisible by pooled_size"):
        nd.contrib.ROIAlign(nd.zeros((1, 5, 4, 4)), nd.zeros((1, 5)), pooled_size=(2, 2), spatial_scale=1,
                            position_sensitive=True)
    with pytest.raises(mx.base.MXNetError, match="positive width"):
        nd.contrib.ROIAlign(nd.zeros((1, 1, 4, 4)), nd.array([[0, 2, 2, 2, 3]]), pooled_size=(2, 2),
                            spatial_scale=1, aligned=True).wait_to_read()
    with pytest.raises(mx.base.MXNetError, match="not finite"):
        nd.contrib.ROIAlign(nd.zeros((1, 1, 4, 4)), nd.array([[0, 0, 0, np.inf, 3]]), pooled_size=(2, 2),
                            spatial_scale=1).wait_to_read()
    with pytest.raises(mx.base.MXNetError, match="ograd"):
        nd._internal._backward_ROIAlign(nd.zeros((2, 1, 3, 3)), nd.zeros((1, 1, 4, 4)), nd.zeros((2, 5)),
                              pooled_size=(2, 2), spatial_scale=1)


def psroi_ref(data, rois, scale, output_dim, pooled, group):
    n, c, h, w = data.shape
    out = np.zeros((len(rois), output_dim, pooled, pooled))
    for r, roi in enumerate(rois):
        b = int(roi[0])
        if not 0 <= b < n:
            continue
        rnd = lambda v: np.sign(v) * np.floor(abs(v) + 0.5)
        x1, y1 = rnd(roi[1]) * scale, rnd(roi[2]) * scale
        x2, y2 = (rnd(roi[3]) + 1) * scale, (rnd(roi[4]) + 1) * scale
        bh, bw = max(y2 - y1, 0.1) / pooled, max(x2 - x1, 0.1) / pooled
        for i in range(pooled):
            hs = min(max(int(np.floor(i * bh + y1)), 0), h)
            he = min(max(int(np.ceil((i + 1) * bh + y1)), 0), h)
            for j in range(pooled):
                ws = min(max(int(np.floor(j * bw + x1)), 0), w)
                we = min(max(int(np.ceil((j + 1) * bw + x1)), 0), w)
                if he <= hs or we <= ws:
                    continue
                gi, gj = min(i * group // pooled, group - 1), min(j * group // pooled, group - 1)
                for k in range(output_dim):
                    out[r, k, i, j] = data[b, (k * group + gi) * group + gj, hs:he, ws:we].mean()
    return out


@pytest.mark.parametrize("group_size", [0, 2])
def test_psroi_pooling(group_size):
    pooled, group = 3, group_size or 3
    data = RNG.uniform(-1, 1, (2, 2 * group * group, 7, 8))
    rois = np.array([[0, 1, 2, 9, 11], [1, 0, 0, 15, 13], [1, 4.4, 3.6, 4.6, 3.4], [-1, 0, 0, 2, 2],
                     [0, -5, -5, 30, 30]])
    got = nd.contrib.PSROIPooling(arr(data), arr(rois), spatial_scale=0.5, output_dim=2, pooled_size=pooled,
                                  group_size=group_size)
    assert got.shape == (5, 2, pooled, pooled)
    assert_almost_equal(got.asnumpy(), psroi_ref(data, rois, 0.5, 2, pooled, group), rtol=1e-12, atol=1e-12)
    check_numeric_gradient("_contrib_PSROIPooling", [data, rois], grad_nodes=[0],
                           params={"spatial_scale": 0.5, "output_dim": 2, "pooled_size": pooled,
                                   "group_size": group_size})


def test_psroi_pooling_errors():
    with pytest.raises(mx.base.MXNetError, match=r"at least output_dim \* group_size\^2 = 18 channels"):
        nd.contrib.PSROIPooling(nd.zeros((1, 8, 4, 4)), nd.zeros((1, 5)), spatial_scale=1, output_dim=2,
                                pooled_size=3)
    with pytest.raises(mx.base.MXNetError, match="output_dim"):
        nd.contrib.PSROIPooling(nd.zeros((1, 8, 4, 4)), nd.zeros((1, 5)), spatial_scale=1, pooled_size=3)
    with pytest.raises(mx.base.MXNetError, match="ograd"):
        nd._internal._backward_PSROIPooling(nd.zeros((1, 2, 2, 2)), nd.zeros((1, 18, 4, 4)), nd.zeros((1, 5)),
                                            spatial_scale=1, output_dim=2, pooled_size=3)


# ---------------------------------------------------------------- CTC
def ctc_ref(acts, labels, data_lengths, blank):
    """Negative log-likelihood per sequence by the forward recursion in probability space."""
    t_max, b_size, a = acts.shape
    e = np.exp(acts - acts.max(axis=2, keepdims=True))
    probs = e / e.sum(axis=2, keepdims=True)
    out = []
    for b in range(b_size):
        ext = [blank]
        for lab in labels[b]:
            ext += [lab, blank]
        s_len, steps = len(ext), data_lengths[b]
        alpha = np.zeros(s_len)
        alpha[0] = probs[0, b, blank]
        if s_len > 1:
            alpha[1] = probs[0, b, ext[1]]
        for t in range(1, steps):
            prev = alpha.copy()
            for s in range(s_len):
                v = prev[s] + (prev[s - 1] if s >= 1 else 0)
                if s >= 2 and ext[s] != blank and ext[s] != ext[s - 2]:
                    v += prev[s - 2]
                alpha[s] = v * probs[t, b, ext[s]]
        p = alpha[-1] + (alpha[-2] if s_len > 1 else 0)
        out.append(-np.log(p))
    return np.array(out)


def padded(labels, width, pad):
    return np.array([list(l) + [pad] * (width - len(l)) for l in labels], dtype=np.float64)


LABELS = [[1, 2, 2], [3], [2, 1, 3, 3], []]


@pytest.mark.parametrize("blank_label", ["first", "last"])
def test_ctc_loss_forward(blank_label):
    acts = RNG.uniform(-2, 2, (9, 4, 5))
    if blank_label == "first":
        labels, pad, blank = LABELS, 0, 0
    else:
        labels, pad, blank = [[v - 1 for v in l] for l in LABELS], -1, 4
    loss = nd.CTCLoss(arr(acts), arr(padded(labels, 4, pad)), blank_label=blank_label)
    assert loss.shape == (4,)
    assert_almost_equal(loss.asnumpy(), ctc_ref(acts, labels, [9] * 4, blank), rtol=1e-10, atol=1e-10)


def test_ctc_loss_lengths_and_torch():
    acts = RNG.uniform(-2, 2, (8, 3, 6))
    labels = [[1, 2], [5, 5, 4], [3]]
    data_len = np.array([8, 6, 3])
    # Padding after label_lengths is not read, whatever its value.
    label_mat = np.array([[1, 2, 4, 4], [5, 5, 4, 1], [3, 3, 3, 3]], dtype=np.float64)
    label_len = np.array([2, 3, 1])
    for fn in (nd.CTCLoss, nd.ctc_loss, nd.contrib.CTCLoss, nd.contrib.ctc_loss):
        loss = fn(arr(acts), arr(label_mat), arr(data_len), arr(label_len), use_data_lengths=True,
                  use_label_lengths=True)
        assert_almost_equal(loss.asnumpy(), ctc_ref(acts, labels, data_len, 0), rtol=1e-10, atol=1e-10)
    # Only label lengths: the third input is label_lengths.
    loss = nd.CTCLoss(arr(acts), arr(label_mat), arr(label_len), use_label_lengths=True)
    assert_almost_equal(loss.asnumpy(), ctc_ref(acts, labels, [8] * 3, 0), rtol=1e-10, atol=1e-10)
    if torch is not None:
        logp = torch.from_numpy(acts).log_softmax(2)
        want = torch.nn.functional.ctc_loss(logp, torch.tensor([1, 2, 5, 5, 4, 3]), torch.tensor(data_len),
                                            torch.tensor(label_len), blank=0, reduction="none")
        got = nd.CTCLoss(arr(acts), arr(label_mat), arr(data_len), arr(label_len), use_data_lengths=True,
                         use_label_lengths=True)
        assert_almost_equal(got.asnumpy(), want.numpy(), rtol=1e-10, atol=1e-10)


def test_ctc_loss_gradient():
    acts = RNG.uniform(-1, 1, (6, 3, 4))
    labels = padded([[1, 2], [3, 3], [2]], 2, 0)
    check_numeric_gradient("CTCLoss", [acts, labels], grad_nodes=[0], numeric_eps=1e-5, rtol=1e-5, atol=1e-7)
    check_numeric_gradient("CTCLoss", [acts, labels, np.array([6, 4, 2])], grad_nodes=[0], numeric_eps=1e-5,
                           rtol=1e-5, atol=1e-7, params={"use_data_lengths": True})


def test_ctc_loss_gradient_matches_torch_float32():
    if torch is None:
        pytest.skip("PyTorch is not installed")
    acts = RNG.uniform(-2, 2, (7, 2, 5)).astype(np.float32)
    label_mat = np.array([[1, 2, 0], [4, 4, 3]], dtype=np.float32)
    x = nd.array(acts)
    x.attach_grad()
    with mx.autograd.record():
        loss = nd.CTCLoss(x, nd.array(label_mat))
    loss.backward()
    t = torch.from_numpy(acts).requires_grad_()
    want = torch.nn.functional.ctc_loss(t.log_softmax(2), torch.tensor([1, 2, 4, 4, 3]), torch.tensor([7, 7]),
                                        torch.tensor([2, 3]), blank=0, reduction="sum")
    want.backward()
    assert_almost_equal(loss.asnumpy().sum(), want.item(), rtol=1e-5, atol=1e-5)
    assert_almost_equal(x.grad.asnumpy(), t.grad.numpy(), rtol=1e-4, atol=1e-5)


def test_ctc_loss_infeasible_is_infinite():
    acts = RNG.uniform(-1, 1, (2, 1, 3))
    # Two equal labels need a blank between them: three steps at least.
    loss = nd.CTCLoss(arr(acts), arr([[1, 1]]))
    assert np.isinf(loss.asnumpy()[0])


def test_ctc_loss_errors():
    with pytest.raises(mx.base.MXNetError, match=r"expected label \(2, label_sequence_length\)"):
        nd.CTCLoss(nd.zeros((5, 2, 4)), nd.zeros((3, 2)))
    with pytest.raises(mx.base.MXNetError, match="cannot be longer than the sequences"):
        nd.CTCLoss(nd.zeros((2, 2, 4)), nd.zeros((2, 3)))
    with pytest.raises(mx.base.MXNetError, match="is not a class of the alphabet"):
        nd.CTCLoss(nd.zeros((5, 1, 4)), nd.array([[1, 7]])).wait_to_read()
    with pytest.raises(mx.base.MXNetError, match="is not a class of the alphabet"):
        nd.CTCLoss(nd.zeros((5, 1, 4)), nd.array([[1, 4]]), blank_label="last").wait_to_read()
    with pytest.raises(mx.base.MXNetError, match=r"data_lengths\[0\] = 9"):
        nd.CTCLoss(nd.zeros((5, 1, 4)), nd.array([[1, 2]]), nd.array([9]), use_data_lengths=True).wait_to_read()
    with pytest.raises(mx.base.MXNetError, match="blank_label"):
        nd.CTCLoss(nd.zeros((5, 1, 4)), nd.array([[1, 2]]), blank_label="middle")
    with pytest.raises(mx.base.MXNetError, match="ograd"):
        nd._internal._backward_ctc_loss(nd.zeros((3,)), nd.zeros((5, 2, 4)))


@pytest.mark.parametrize("layout,label_layout", [("NTC", "NT"), ("TNC", "TN")])
def test_gluon_ctc_loss(layout, label_layout):
    acts = RNG.uniform(-2, 2, (3, 7, 5))  # (N, T, C)
    labels = [[0, 1], [3, 3, 2], [2]]
    label_mat = padded(labels, 3, -1)
    pred = acts if layout == "NTC" else acts.transpose(1, 0, 2)
    lab = label_mat if label_layout == "NT" else label_mat.T
    loss_fn = mx.gluon.loss.CTCLoss(layout=layout, label_layout=label_layout)
    want = ctc_ref(acts.transpose(1, 0, 2), labels, [7] * 3, 4)
    got = loss_fn(nd.array(pred), nd.array(lab))
    assert_almost_equal(got.asnumpy(), want, rtol=1e-5, atol=1e-5)
    # Lengths, and the same through a hybridized block.
    pred_len, lab_len = np.array([7, 5, 4]), np.array([2, 3, 1])
    want = ctc_ref(acts.transpose(1, 0, 2), labels, pred_len, 4)
    loss_fn.hybridize()
    got = loss_fn(nd.array(pred), nd.array(lab), nd.array(pred_len), nd.array(lab_len))
    assert_almost_equal(got.asnumpy(), want, rtol=1e-5, atol=1e-5)


def test_gluon_ctc_loss_layout_checks():
    with pytest.raises(AssertionError, match="NTC"):
        mx.gluon.loss.CTCLoss(layout="CTN")
    with pytest.raises(AssertionError, match="NT"):
        mx.gluon.loss.CTCLoss(label_layout="TT")


# ---------------------------------------------------------------- detection
def corners(b, fmt):
    b = np.asarray(b, dtype=np.float64)
    if fmt == "corner":
        return b
    return np.stack([b[..., 0] - b[..., 2] / 2, b[..., 1] - b[..., 3] / 2, b[..., 0] + b[..., 2] / 2,
                     b[..., 1] + b[..., 3] / 2], axis=-1)


def iou_ref(a, b, fmt="corner"):
    a, b = corners(a, fmt).reshape(-1, 4), corners(b, fmt).reshape(-1, 4)
    out = np.zeros((len(a), len(b)))
    for i, p in enumerate(a):
        for j, q in enumerate(b):
            w = min(p[2], q[2]) - max(p[0], q[0])
            h = min(p[3], q[3]) - max(p[1], q[1])
            if w > 0 and h > 0:
                area = lambda r: max(r[2] - r[0], 0) * max(r[3] - r[1], 0)
                out[i, j] = w * h / (area(p) + area(q) - w * h)
    return out


def rand_boxes(n, fmt="corner"):
    xy = RNG.uniform(0, 10, (n, 2))
    wh = RNG.uniform(0.5, 5, (n, 2))
    return np.concatenate([xy, xy + wh], 1) if fmt == "corner" else np.concatenate([xy, wh], 1)


@pytest.mark.parametrize("fmt", ["corner", "center"])
def test_box_iou(fmt):
    a = rand_boxes(6, fmt).reshape(2, 3, 4)
    b = rand_boxes(5, fmt)
    got = nd.contrib.box_iou(arr(a), arr(b), format=fmt)
    assert got.shape == (2, 3, 5)
    assert_almost_equal(got.asnumpy().reshape(6, 5), iou_ref(a, b, fmt), rtol=1e-12, atol=1e-12)
    with pytest.raises(mx.base.MXNetError, match=r"expected boxes \(\.\.\., 4\)"):
        nd.contrib.box_iou(nd.zeros((3, 5)), nd.zeros((2, 4)))


def nms_ref(data, overlap_thresh=0.5, valid_thresh=0, topk=-1, coord_start=2, score_index=1, id_index=-1,
            background_id=-1, force_suppress=False, in_format="corner", out_format="corner"):
    shape = data.shape
    d = data.reshape(-1, shape[-2], shape[-1])
    out = -np.ones_like(d)
    for b in range(len(d)):
        rows = d[b]
        idx = [i for i in range(len(rows)) if rows[i, score_index] > valid_thresh and
               (id_index < 0 or rows[i, id_index] != background_id)]
        idx = sorted(idx, key=lambda i: -rows[i, score_index])
        if topk >= 0:
            idx = idx[:topk]
        keep = []
        for i in idx:
            ok = True
            for k in keep:
                if id_index >= 0 and not force_suppress and rows[k, id_index] != rows[i, id_index]:
                    continue
                if iou_ref(rows[k, coord_start:coord_start + 4], rows[i, coord_start:coord_start + 4],
                           in_format)[0, 0] > overlap_thresh:
                    ok = False
                    break
            if ok:
                keep.append(i)
        for c, i in enumerate(keep):
            out[b, c] = rows[i]
            if in_format != out_format:
                box = corners(rows[i, coord_start:coord_start + 4], in_format)
                if out_format == "center":
                    box = np.array([(box[0] + box[2]) / 2, (box[1] + box[3]) / 2, box[2] - box[0], box[3] - box[1]])
                out[b, c, coord_start:coord_start + 4] = box
    return out.reshape(shape)


def rand_dets(batch, n, cls=3):
    boxes = rand_boxes(batch * n).reshape(batch, n, 4)
    # Clusters of overlapping boxes, so suppression happens.
    boxes[:, 1::2] = boxes[:, 0:-1:2][:, :boxes[:, 1::2].shape[1]] + RNG.uniform(-0.3, 0.3, boxes[:, 1::2].shape)
    ids = RNG.randint(0, cls, (batch, n, 1)).astype(np.float64)
    scores = RNG.permutation(batch * n).reshape(batch, n, 1) / float(batch * n)
    return np.concatenate([ids, scores, boxes], axis=2)


@pytest.mark.parametrize("kwargs", [
    {},
    {"overlap_thresh": 0.3, "topk": 5},
    {"id_index": 0, "force_suppress": False},
    {"id_index": 0, "force_suppress": True, "background_id": 1},
    {"valid_thresh": 0.4, "out_format": "center"},
    {"in_format": "center", "out_format": "corner"},
])
def test_box_nms(kwargs):
    data = rand_dets(2, 10)
    if kwargs.get("in_format") == "center":
        c = corners(data[..., 2:6], "corner")
        data[..., 2:6] = np.stack([(c[..., 0] + c[..., 2]) / 2, (c[..., 1] + c[..., 3]) / 2, c[..., 2] - c[..., 0],
                                   c[..., 3] - c[..., 1]], -1)
    got = nd.contrib.box_nms(arr(data), **kwargs)
    assert_almost_equal(got.asnumpy(), nms_ref(data, **kwargs), rtol=1e-12, atol=1e-12)


def test_box_nms_layout_params_and_alias():
    # Score last, coordinates first, class in the middle; three leading batch axes.
    data = rand_dets(6, 7)[:, :, [2, 3, 4, 5, 0, 1]].reshape(2, 3, 7, 6)
    params = {"coord_start": 0, "score_index": 5, "id_index": 4, "overlap_thresh": 0.2}
    got = nd.contrib.box_non_maximum_suppression(arr(data), **params)
    assert_almost_equal(got.asnumpy(), nms_ref(data, **params), rtol=1e-12, atol=1e-12)
    # topk=0 keeps the input as it is.
    assert_almost_equal(nd.contrib.box_nms(arr(data), topk=0, **params).asnumpy(), data, rtol=0, atol=0)


def test_box_nms_gradient():
    data = rand_dets(2, 8)
    x = arr(data)
    x.attach_grad()
    head = RNG.uniform(-1, 1, data.shape)
    with mx.autograd.record():
        y = nd.contrib.box_nms(x, overlap_thresh=0.4)
    y.backward(arr(head))
    out = y.asnumpy()
    want = np.zeros_like(data)
    for b in range(2):
        for c in range(8):
            if out[b, c, 0] < 0 and out[b, c, 1] < 0:
                continue
            i = [k for k in range(8) if np.array_equal(data[b, k], out[b, c])][0]
            want[b, i] = head[b, c]
    assert_almost_equal(x.grad.asnumpy(), want, rtol=0, atol=0)
    check_numeric_gradient("_contrib_box_nms", [data], numeric_eps=1e-6, params={"overlap_thresh": 0.4})


def test_box_nms_errors():
    with pytest.raises(mx.base.MXNetError, match="at least 5 values"):
        nd.contrib.box_nms(nd.zeros((3, 4)))
    with pytest.raises(mx.base.MXNetError, match="at least 6 values"):
        nd.contrib.box_nms(nd.zeros((3, 5)), id_index=0)
    with pytest.raises(mx.base.MXNetError, match="score_index 3 must lie"):
        nd.contrib.box_nms(nd.zeros((3, 6)), score_index=3)
    with pytest.raises(mx.base.MXNetError, match="coord_start"):
        nd.contrib.box_nms(nd.zeros((3, 6)), coord_start=3)
    with pytest.raises(mx.base.MXNetError, match="in_format"):
        nd.contrib.box_nms(nd.zeros((3, 6)), in_format="xywh")
    with pytest.raises(mx.base.MXNetError, match=r"record\[0\] = 7 names no input box"):
        nd._internal._backward_contrib_box_nms(nd.zeros((3, 6)), nd.array([[7], [0], [1]])).wait_to_read()
    with pytest.raises(mx.base.MXNetError, match="record"):
        nd._internal._backward_contrib_box_nms(nd.zeros((3, 6)), nd.zeros((2, 1)))


def bipartite_ref(scores, threshold, is_ascend=False, topk=-1):
    r, c = scores.shape
    order = np.argsort(scores.ravel() if is_ascend else -scores.ravel(), kind="stable")
    rows, cols, count = -np.ones(r), -np.ones(c), 0
    for i in order:
        a, b = divmod(i, c)
        if rows[a] != -1 or cols[b] != -1:
            continue
        v = scores.ravel()[i]
        if not (v < threshold if is_ascend else v > threshold):
            break
        rows[a], cols[b] = b, a
        count += 1
        if topk > 0 and count > topk:
            break
    return rows, cols


@pytest.mark.parametrize("kwargs", [{"threshold": 0.1}, {"threshold": 0.6, "is_ascend": True},
                                    {"threshold": 0.05, "topk": 2}])
def test_bipartite_matching(kwargs):
    scores = RNG.uniform(0, 1, (2, 5, 4))
    rows, cols = nd.contrib.bipartite_matching(arr(scores), **kwargs)
    assert rows.shape == (2, 5) and cols.shape == (2, 4)
    for b in range(2):
        want_r, want_c = bipartite_ref(scores[b], **kwargs)
        assert_almost_equal(rows.asnumpy()[b], want_r, rtol=0, atol=0)
        assert_almost_equal(cols.asnumpy()[b], want_c, rtol=0, atol=0)
    with pytest.raises(mx.base.MXNetError, match="threshold"):
        nd.contrib.bipartite_matching(arr(scores))


def encode_ref(samples, matches, anchors, refs, means, stds):
    out, mask = np.zeros(anchors.shape), np.zeros(anchors.shape)
    for b in range(anchors.shape[0]):
        for i in range(anchors.shape[1]):
            if samples[b, i] <= 0.5:
                continue
            a, g = anchors[b, i], refs[b, int(matches[b, i])]
            aw, ah, gw, gh = a[2] - a[0], a[3] - a[1], g[2] - g[0], g[3] - g[1]
            t = np.array([(g[0] + gw / 2 - a[0] - aw / 2) / aw, (g[1] + gh / 2 - a[1] - ah / 2) / ah,
                          np.log(gw / aw), np.log(gh / ah)])
            out[b, i] = (t - means) / stds
            mask[b, i] = 1
    return out, mask


def test_box_encode_decode():
    anchors = rand_boxes(8).reshape(2, 4, 4)
    refs = rand_boxes(6).reshape(2, 3, 4)
    samples = np.array([[1, -1, 1, 0], [1, 1, -1, 1]], dtype=np.float64)
    matches = np.array([[2, 0, 1, 1], [0, 2, 1, 1]], dtype=np.float64)
    means, stds = np.array([0.1, -0.1, 0.0, 0.2]), np.array([0.1, 0.1, 0.2, 0.2])
    t, m = nd.contrib.box_encode(arr(samples), arr(matches), arr(anchors), arr(refs), arr(means), arr(stds))
    want_t, want_m = encode_ref(samples, matches, anchors, refs, means, stds)
    assert_almost_equal(t.asnumpy(), want_t, rtol=1e-12, atol=1e-12)
    assert_almost_equal(m.asnumpy(), want_m, rtol=0, atol=0)
    # Decoding the targets (without the means) gives the matched references back.
    t0, _ = nd.contrib.box_encode(arr(samples), arr(matches), arr(anchors), arr(refs), arr(np.zeros(4)),
                                  arr(stds))
    for b in range(2):
        dec = nd.contrib.box_decode(t0[b:b + 1], arr(anchors[b:b + 1]), std0=0.1, std1=0.1, std2=0.2, std3=0.2,
                                    format="corner").asnumpy()[0]
        for i in range(4):
            if samples[b, i] > 0.5:
                assert_almost_equal(dec[i], refs[b, int(matches[b, i])], rtol=1e-10, atol=1e-10)
    with pytest.raises(mx.base.MXNetError, match=r"matches\[0, 0\] = 5 names no reference box"):
        nd.contrib.box_encode(arr(samples), arr(np.full((2, 4), 5.0)), arr(anchors), arr(refs), arr(means),
                              arr(stds))[0].wait_to_read()
    with pytest.raises(mx.base.MXNetError, match=r"expected refs \(2, M, 4\)"):
        nd.contrib.box_encode(arr(samples), arr(matches), arr(anchors), arr(refs[:1]), arr(means), arr(stds))


def decode_ref(x, anchors, stds, clip, fmt):
    a = corners(anchors[0], fmt)
    aw, ah = a[:, 2] - a[:, 0], a[:, 3] - a[:, 1]
    ax, ay = a[:, 0] + aw / 2, a[:, 1] + ah / 2
    ox, oy = x[..., 0] * stds[0] * aw + ax, x[..., 1] * stds[1] * ah + ay
    dw, dh = x[..., 2] * stds[2], x[..., 3] * stds[3]
    if clip > 0:
        dw, dh = np.minimum(dw, clip), np.minimum(dh, clip)
    w, h = np.exp(dw) * aw / 2, np.exp(dh) * ah / 2
    return np.stack([ox - w, oy - h, ox + w, oy + h], -1)


@pytest.mark.parametrize("fmt,clip", [("center", -1.0), ("corner", 0.3)])
def test_box_decode(fmt, clip):
    x = RNG.uniform(-1, 1, (2, 5, 4))
    anchors = rand_boxes(5, fmt)[None]
    stds = [0.1, 0.2, 0.3, 0.4]
    got = nd.contrib.box_decode(arr(x), arr(anchors), std0=0.1, std1=0.2, std2=0.3, std3=0.4, clip=clip, format=fmt)
    assert_almost_equal(got.asnumpy(), decode_ref(x, anchors, stds, clip, fmt), rtol=1e-12, atol=1e-12)
    with pytest.raises(mx.base.MXNetError, match=r"expected anchors \(1, 5, 4\)"):
        nd.contrib.box_decode(arr(x), arr(rand_boxes(4)[None]))


def prior_ref(h, w, sizes, ratios, steps=(-1, -1), offsets=(0.5, 0.5), clip=False):
    sy, sx = (1.0 / h, 1.0 / w) if steps[0] <= 0 else steps
    out = []
    for r in range(h):
        for c in range(w):
            cy, cx = (r + offsets[0]) * sy, (c + offsets[1]) * sx
            for s, q in [(s, ratios[0]) for s in sizes] + [(sizes[0], q) for q in ratios[1:]]:
                bw, bh = s * h / w * np.sqrt(q) / 2, s / np.sqrt(q) / 2
                out.append([cx - bw, cy - bh, cx + bw, cy + bh])
    out = np.array(out)[None]
    return np.clip(out, 0, 1) if clip else out


@pytest.mark.parametrize("kwargs", [{}, {"sizes": (0.3, 0.6), "ratios": (1, 2, 0.5)},
                                    {"sizes": (0.9,), "ratios": (1, 3), "clip": True, "steps": (0.2, 0.1),
                                     "offsets": (0.25, 0.75)}])
def test_multibox_prior(kwargs):
    got = nd.contrib.MultiBoxPrior(nd.zeros((2, 3, 4, 5)), **kwargs)
    want = prior_ref(4, 5, kwargs.get("sizes", (1,)), kwargs.get("ratios", (1,)), kwargs.get("steps", (-1, -1)),
                     kwargs.get("offsets", (0.5, 0.5)), kwargs.get("clip", False))
    assert got.shape == want.shape
    assert_almost_equal(got.asnumpy(), want, rtol=1e-5, atol=1e-6)
    with pytest.raises(mx.base.MXNetError, match="offsets must lie in"):
        nd.contrib.MultiBoxPrior(nd.zeros((1, 1, 2, 2)), offsets=(0.5, 1.5))
    with pytest.raises(mx.base.MXNetError, match=r"expected data \(batch, channel, height, width\)"):
        nd.contrib.MultiBoxPrior(nd.zeros((1, 2, 2)))


def target_ref(anchors, labels, preds, overlap=0.5, ignore=-1.0, ratio=-1.0, mine_thresh=0.5,
               var=(0.1, 0.1, 0.2, 0.2)):
    a = anchors[0]
    n_a = len(a)
    loc, mask = np.zeros((len(labels), n_a * 4)), np.zeros((len(labels), n_a * 4))
    cls = np.full((len(labels), n_a), ignore)
    for b, lab in enumerate(labels):
        g = [row for row in lab]
        n_g = next((i for i, row in enumerate(lab) if row[0] == -1), len(lab))
        if n_g == 0:
            continue
        g = lab[:n_g]
        iou = np.zeros((n_a, n_g))
        for j in range(n_a):
            for k in range(n_g):
                p, q = a[j], g[k, 1:5]
                inter = max(0, min(p[2], q[2]) - max(p[0], q[0])) * max(0, min(p[3], q[3]) - max(p[1], q[1]))
                uni = (p[2] - p[0]) * (p[3] - p[1]) + (q[2] - q[0]) * (q[3] - q[1]) - inter
                iou[j, k] = inter / uni if uni != 0 else 0
        flag, match = -np.ones(n_a, int), [(-1.0, -1)] * n_a
        free = iou.copy()
        for _ in range(n_g):
            j, k = np.unravel_index(np.argmax(free), free.shape)
            if free[j, k] <= 1e-6:
                break
            match[j], flag[j] = (free[j, k], k), 1
            free[j, :] = -1
            free[:, k] = -1
        for j in range(n_a):
            if flag[j] != 1 and overlap > 0:
                match[j] = (iou[j].max(), int(np.argmax(iou[j])))
                if match[j][0] > overlap:
                    flag[j] = 1
        if ratio > 0:
            pos = int((flag == 1).sum())
            want = min(int(pos * ratio), n_a - pos)
            cand = []
            for j in range(n_a):
                if flag[j] == 1:
                    continue
                if iou[j].max() < mine_thresh:
                    e = np.exp(preds[b, :, j] - preds[b, :, j].max())
                    cand.append((e[0] / e.sum(), j))
            cand.sort(key=lambda t: t[0])
            for _, j in cand[:want]:
                flag[j] = 0
        else:
            flag[flag != 1] = 0
        for j in range(n_a):
            if flag[j] == 0:
                cls[b, j] = 0
            elif flag[j] == 1:
                q = g[match[j][1]]
                cls[b, j] = q[0] + 1
                p = a[j]
                aw, ah, gw, gh = p[2] - p[0], p[3] - p[1], q[3] - q[1], q[4] - q[2]
                loc[b, 4 * j:4 * j + 4] = [((q[1] + q[3]) / 2 - (p[0] + p[2]) / 2) / aw / var[0],
                                           ((q[2] + q[4]) / 2 - (p[1] + p[3]) / 2) / ah / var[1],
                                           np.log(gw / aw) / var[2], np.log(gh / ah) / var[3]]
                mask[b, 4 * j:4 * j + 4] = 1
    return loc, mask, cls


@pytest.mark.parametrize("kwargs", [{}, {"negative_mining_ratio": 2.0}, {"overlap_threshold": 0.2,
                                                                        "ignore_label": -2.0}])
def test_multibox_target(kwargs):
    anchors = nd.contrib.MultiBoxPrior(nd.zeros((1, 1, 4, 4)), sizes=(0.3, 0.5), ratios=(1, 2)).asnumpy()
    labels = np.array([[[1, 0.1, 0.1, 0.45, 0.4], [0, 0.5, 0.55, 0.9, 0.95], [-1, -1, -1, -1, -1]],
                       [[2, 0.2, 0.3, 0.7, 0.6], [-1, -1, -1, -1, -1], [-1, -1, -1, -1, -1]]])
    preds = RNG.uniform(-1, 1, (2, 3, anchors.shape[1]))
    loc, mask, cls = nd.contrib.MultiBoxTarget(nd.array(anchors), nd.array(labels), nd.array(preds), **kwargs)
    want = target_ref(anchors.astype(np.float64), labels, preds, kwargs.get("overlap_threshold", 0.5),
                      kwargs.get("ignore_label", -1.0), kwargs.get("negative_mining_ratio", -1.0))
    assert_almost_equal(cls.asnumpy(), want[2], rtol=0, atol=0)
    assert_almost_equal(mask.asnumpy(), want[1], rtol=0, atol=0)
    assert_almost_equal(loc.asnumpy(), want[0], rtol=1e-4, atol=1e-4)
    with pytest.raises(mx.base.MXNetError, match=r"expected cls_pred \(2, num_classes, 48\)"):
        nd.contrib.MultiBoxTarget(nd.array(anchors), nd.array(labels), nd.zeros((2, 3, 5)))


def detection_ref(cls_prob, loc_pred, anchors, threshold=0.01, clip=True, nms_threshold=0.5, force_suppress=False,
                  nms_topk=-1, var=(0.1, 0.1, 0.2, 0.2)):
    b_size, _, n_a = cls_prob.shape
    out = -np.ones((b_size, n_a, 6))
    a = anchors[0]
    for b in range(b_size):
        rows = []
        for i in range(n_a):
            j = 1 + int(np.argmax(cls_prob[b, 1:, i]))
            score = cls_prob[b, j, i]
            if score < threshold:
                continue
            p, l = a[i], loc_pred[b, 4 * i:4 * i + 4]
            aw, ah = p[2] - p[0], p[3] - p[1]
            ox, oy = l[0] * var[0] * aw + (p[0] + p[2]) / 2, l[1] * var[1] * ah + (p[1] + p[3]) / 2
            w, h = np.exp(l[2] * var[2]) * aw / 2, np.exp(l[3] * var[3]) * ah / 2
            box = np.array([ox - w, oy - h, ox + w, oy + h])
            rows.append([j - 1, score] + list(np.clip(box, 0, 1) if clip else box))
        order = sorted(range(len(rows)), key=lambda i: -rows[i][1])
        keep = len(order) if nms_topk <= 0 else min(nms_topk, len(order))
        res = [list(rows[i]) for i in order[:keep]] + [[-1] + list(rows[i][1:]) for i in range(keep, len(rows))]
        for i in range(keep):
            if res[i][0] < 0:
                continue
            for j in range(i + 1, keep):
                if res[j][0] >= 0 and (force_suppress or res[i][0] == res[j][0]):
                    if iou_ref(res[i][2:], res[j][2:])[0, 0] >= nms_threshold:
                        res[j][0] = -1
        if res:
            out[b, :len(res)] = res
    return out


@pytest.mark.parametrize("kwargs", [{}, {"force_suppress": True, "nms_threshold": 0.3},
                                    {"nms_topk": 5, "clip": False, "threshold": 0.3}])
def test_multibox_detection(kwargs):
    anchors = nd.contrib.MultiBoxPrior(nd.zeros((1, 1, 3, 3)), sizes=(0.4, 0.6), ratios=(1,)).asnumpy()
    n_a = anchors.shape[1]
    logits = RNG.uniform(-2, 2, (2, 4, n_a))
    cls_prob = np.exp(logits) / np.exp(logits).sum(1, keepdims=True)
    loc_pred = RNG.uniform(-1, 1, (2, n_a * 4))
    got = nd.contrib.MultiBoxDetection(nd.array(cls_prob), nd.array(loc_pred), nd.array(anchors), **kwargs)
    assert got.shape == (2, n_a, 6)
    want = detection_ref(cls_prob.astype(np.float32).astype(np.float64), loc_pred, anchors.astype(np.float64),
                         **kwargs)
    assert_almost_equal(got.asnumpy(), want, rtol=1e-4, atol=1e-5)
    with pytest.raises(mx.base.MXNetError, match=r"expected loc_pred \(2, 72\)"):
        nd.contrib.MultiBoxDetection(nd.array(cls_prob), nd.zeros((2, 8)), nd.array(anchors))


def test_detection_ops_have_zero_gradients():
    x = nd.array(rand_boxes(3))
    y = nd.array(rand_boxes(2))
    x.attach_grad()
    y.attach_grad()
    with mx.autograd.record():
        z = nd.contrib.box_iou(x, y)
    z.backward()
    assert np.all(x.grad.asnumpy() == 0) and np.all(y.grad.asnumpy() == 0)


# ---------------------------------------------------------------- graphs and dtypes
def test_sampler_chain_in_an_executor():
    theta, img = mx.sym.var("theta"), mx.sym.var("img")
    sym = mx.sym.BilinearSampler(img, mx.sym.GridGenerator(theta, transform_type="affine", target_shape=(3, 4)))
    assert sym.list_outputs() == [sym.name + "_output"]
    location = {"theta": np.array([[0.93, 0.07, 0.03, -0.05, 0.88, 0.02]]), "img": RNG.rand(1, 2, 5, 5)}
    check_numeric_gradient(sym, location, numeric_eps=1e-3, rtol=1e-2, atol=1e-3)


def test_roi_pooling_in_an_executor_matches_the_imperative_call():
    data = RNG.permutation(72).reshape(2, 1, 6, 6).astype(np.float32)
    rois = np.array([[0, 0, 0, 4, 4], [1, 1, 1, 5, 5]], np.float32)
    sym = mx.sym.ROIPooling(mx.sym.var("data"), mx.sym.var("rois"), pooled_size=(2, 2), spatial_scale=1.0)
    sym = mx.sym.load_json(sym.tojson())
    ex = sym.bind(mx.cpu(), {"data": nd.array(data), "rois": nd.array(rois)},
                  args_grad={"data": nd.zeros(data.shape), "rois": nd.zeros(rois.shape)})
    out = ex.forward(is_train=True)[0]
    ex.backward(nd.ones(out.shape))
    want = nd.ROIPooling(nd.array(data), nd.array(rois), pooled_size=(2, 2), spatial_scale=1.0)
    assert_almost_equal(out.asnumpy(), want.asnumpy(), rtol=0, atol=0)
    assert ex.grad_dict["data"].asnumpy().sum() == out.size
    assert not ex.grad_dict["rois"].asnumpy().any()


@pytest.mark.parametrize("dtype", ["float16", "float32"])
def test_low_precision_dtypes(dtype):
    tol = 2e-2 if dtype == "float16" else 1e-5
    data = RNG.uniform(-1, 1, (1, 2, 5, 6))
    grid = RNG.uniform(-1.2, 1.2, (1, 2, 3, 4))
    got = nd.BilinearSampler(nd.array(data, dtype=dtype), nd.array(grid, dtype=dtype))
    assert got.dtype == np.dtype(dtype)
    want = bilinear_ref(data, grid.astype(dtype).astype(np.float64))
    assert_almost_equal(got.asnumpy().astype(np.float64), want, rtol=tol, atol=tol)
    dets = rand_dets(1, 8)
    got = nd.contrib.box_nms(nd.array(dets, dtype=dtype), overlap_thresh=0.45)
    want = nms_ref(dets.astype(dtype).astype(np.float64), overlap_thresh=0.45)
    assert_almost_equal(got.asnumpy().astype(np.float64), want, rtol=tol, atol=tol)
    rois = np.array([[0, 0.5, 0.5, 5.5, 4.5]])
    got = nd.contrib.ROIAlign(nd.array(data, dtype=dtype), nd.array(rois, dtype=dtype), pooled_size=(2, 2),
                              spatial_scale=1.0)
    want = roi_align_ref(data.astype(dtype).astype(np.float64), rois, 2, 2, 1.0)
    assert_almost_equal(got.asnumpy().astype(np.float64), want, rtol=tol, atol=tol)
