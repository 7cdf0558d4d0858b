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
