"""MXNet 1.9 transforms of gluon.data.vision that Weft lacked: CropResize against numpy
slicing and Resize, the colour jitters (their factor ranges and invariants), RandomLighting
and RandomApply."""
import random

import numpy as np
import pytest

import weft as mx
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
    with pytest.raises(ValueError, match="positive width"):
        T.CropResize(0, 0, 0, 3)


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
