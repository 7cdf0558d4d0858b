"""MXNet 1.9 transforms of gluon.data.vision that Weft lacked: CropResize against numpy
slicing and Resize, the colour jitters (their factor ranges and invariants), RandomLighting
and RandomApply."""
import random

import numpy as np
import pytest

import weft as mx
from weft import nd
from weft.gluon.data.vision import transforms as T


def _img(shape=(6, 8, 3), seed=0):
    return np.random.RandomState(seed).uniform(0.1, 1.0, shape).astype(np.float32)


def test_crop_resize():
    a = _img()
    out = T.CropResize(2, 1, 4, 3)(mx.nd.array(a))
    np.testing.assert_array_equal(out.asnumpy(), a[1:4, 2:6])
    resized = T.CropResize(2, 1, 4, 3, size=(8, 6))(a)
    np.testing.assert_allclose(resized, T.Resize((8, 6))(a[1:4, 2:6].copy()), rtol=1e-6)
    batch = np.stack([a, a * 0.5])
    np.testing.assert_array_equal(T.CropResize(0, 0, 2, 2)(batch), batch[:, :2, :2])
    with pytest.raises(ValueError, match="does not fit"):
        T.CropResize(6, 0, 4, 3)(a)
    # As in MXNet, bad regions and sizes are MXNetErrors when the transform runs.
    with pytest.raises(mx.base.MXNetError, match="positive width"):
        T.CropResize(0, 0, 0, 3)(a)
    with pytest.raises(mx.base.MXNetError, match="positive int"):
        T.CropResize(0, 0, 2, 2, (-2, 2))(a)
    with pytest.raises(mx.base.MXNetError, match="does not fit"):
        T.CropResize(6, 0, 4, 3)(a)


def test_resize_checks_at_call_and_matches_imresize_on_uint8():
    rng = np.random.RandomState(0)
    img = rng.randint(0, 256, (30, 20, 3)).astype(np.uint8)
    x = nd.array(img, dtype="uint8")
    for interp in (0, 1, 2, 3):
        np.testing.assert_array_equal(T.Resize((12, 17), interpolation=interp)(x).asnumpy(),
                                      mx.image.imresize(x, 12, 17, interp).asnumpy())
    np.testing.assert_array_equal(T.Resize(15, keep_ratio=True)(x).asnumpy(),
                                  mx.image.imresize(x, 15, 22, 1).asnumpy())
    with pytest.raises(mx.base.MXNetError, match="positive size"):
        T.Resize(-3)(x)
    with pytest.raises(mx.base.MXNetError, match="positive int"):
        T.Resize((3, 3, 3))(x)
    # Other dtypes resize as imresize resizes them, keeping their dtype, every interpolation.
    for dtype in ("float32", "float64"):
        for interp in (0, 1, 2, 3):
            got = T.Resize((12, 17), interpolation=interp)(x.astype(dtype))
            assert got.dtype == np.dtype(dtype)
            np.testing.assert_array_equal(got.asnumpy(), mx.image.imresize(x.astype(dtype), 12, 17, interp).asnumpy())
    with pytest.raises(ValueError, match="interpolation 7"):
        T.Resize(5, interpolation=7)


def test_tensor_transforms_reject_bad_shapes_with_mxnet_errors():
    with pytest.raises(mx.base.MXNetError, match="expected data of shape"):
        T.ToTensor()(nd.zeros((2, 2, 4, 4, 3), dtype="uint8"))
    with pytest.raises(mx.base.MXNetError, match="expected data of shape"):
        T.Normalize(0.5, 0.5)(nd.zeros((2, 2, 3, 4, 4)))
    with pytest.raises(mx.base.MXNetError, match="channels"):
        T.Normalize((0, 1, 2), (1, 1, 1))(nd.zeros((4, 4, 4)))


def test_random_brightness_scales_by_one_factor_in_range():
    a = _img(seed=1)
    for _ in range(5):
        out = T.RandomBrightness(0.4)(mx.nd.array(a)).asnumpy()
        ratio = out / a
        assert np.ptp(ratio) < 1e-5 and 0.6 - 1e-6 <= ratio.mean() <= 1.4 + 1e-6
    np.testing.assert_allclose(T.RandomBrightness(0)(a), a, rtol=1e-6)   # numpy in, numpy out


def test_zero_jitter_is_identity_and_grey_survives_saturation_and_hue():
    a = _img(seed=2)
    for t in (T.RandomContrast(0), T.RandomSaturation(0), T.RandomColorJitter(), T.RandomLighting(0)):
        np.testing.assert_allclose(t(mx.nd.array(a)).asnumpy(), a, rtol=1e-5, atol=1e-6)
    grey = np.repeat(_img((5, 4, 1), 3), 3, axis=2)
    for t in (T.RandomSaturation(0.8), T.RandomHue(0.3)):
        np.testing.assert_allclose(t(mx.nd.array(grey)).asnumpy(), grey, rtol=1e-4, atol=1e-5)
    moved = T.RandomLighting(0.5)(mx.nd.array(a)).asnumpy()
    assert moved.shape == a.shape and not np.allclose(moved, a)
    with pytest.raises(ValueError, match="non-negative"):
        T.RandomContrast(-0.1)
    with pytest.raises(ValueError, match="expected data of shape"):
        T.RandomHue(0.1)(mx.nd.ones((2, 3)))


def test_random_apply():
    a = _img(seed=4)
    flip = T.RandomApply([T.CropResize(0, 0, 8, 6), T.RandomBrightness(0.0), T.Cast("float64")], p=1.0)
    assert flip(a).dtype == np.float64
    never = T.RandomApply(T.Cast("float64"), p=0.0)
    assert never(a) is a
    half = T.RandomApply(T.Cast("float64"), p=0.5)
    random.seed(7)
    first = [half(a).dtype for _ in range(20)]
    random.seed(7)
    assert [half(a).dtype for _ in range(20)] == first
    assert set(first) == {np.dtype(np.float32), np.dtype(np.float64)}
    with pytest.raises(ValueError, match="p must be"):
        T.RandomApply([], p=1.5)


def _torch_rotate(a, degrees):
    """Rotation through torch's affine_grid/grid_sample (corner-aligned, zero padding)."""
    import torch
    import torch.nn.functional as TF
    n, c, h, w = a.shape
    rad = np.deg2rad(degrees)
    hc, wc = (h - 1) / 2.0, (w - 1) / 2.0
    theta = np.array([[np.cos(rad), -hc / wc * np.sin(rad), 0], [wc / hc * np.sin(rad), np.cos(rad), 0]])
    theta = torch.from_numpy(np.repeat(theta[None], n, axis=0))
    grid = TF.affine_grid(theta, (n, c, h, w), align_corners=True)
    return TF.grid_sample(torch.from_numpy(a.astype(np.float64)), grid, mode="bilinear", padding_mode="zeros",
                          align_corners=True).numpy()


def test_rotate_matches_torch_and_rot90():
    a = _img((2, 3, 7, 9), 5)
    np.testing.assert_allclose(T.Rotate(30)(a), _torch_rotate(a, 30), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(T.Rotate(-75)(mx.nd.array(a[0])).asnumpy(), _torch_rotate(a[:1], -75)[0],
                               rtol=1e-4, atol=1e-5)
    sq = _img((3, 5, 5), 6)
    np.testing.assert_allclose(T.Rotate(90)(sq), np.rot90(sq, 1, axes=(1, 2)), atol=1e-5)
    np.testing.assert_allclose(T.Rotate(180)(sq), sq[:, ::-1, ::-1], atol=1e-5)


def test_rotate_zoom_and_random_rotation():
    ones = np.ones((1, 8, 8), np.float32)
    assert T.Rotate(40, zoom_in=True)(ones).min() > 1 - 1e-5        # no padding shows
    out = T.Rotate(40, zoom_out=True)(ones)
    assert out[0, 0, 0] == 0 and abs(out[0, 4, 4] - 1) < 1e-5          # the whole image fits, corners padded
    assert T.Rotate(40)(ones)[0, 0, 0] == 0
    with pytest.raises(ValueError, match="cannot both"):
        T.Rotate(10, zoom_in=True, zoom_out=True)
    with pytest.raises(TypeError, match="float32"):
        T.Rotate(10)(np.ones((1, 4, 4), np.uint8))
    a = _img((4, 2, 6, 6), 7)
    np.random.seed(3)
    got = T.RandomRotation((-20, 20))(a)
    np.random.seed(3)
    np.random.random()                     # the draw that decides whether to rotate comes first
    angles = np.random.uniform(-20, 20, size=4)
    for i, angle in enumerate(angles):
        np.testing.assert_allclose(got[i], _torch_rotate(a[i:i + 1], angle)[0], rtol=1e-4, atol=1e-5)
    assert T.RandomRotation((0, 90), rotate_with_proba=0.0)(a) is a
    with pytest.raises(ValueError, match="ordered pair"):
        T.RandomRotation((10, -10))
