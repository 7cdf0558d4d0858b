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
        nd.CTCLoss(nd.zeros((5, 1, 4)), nd.array([[1, 3]]), blank_label="last").wait_to_read()
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
