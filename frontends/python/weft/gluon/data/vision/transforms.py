"""Image transforms of gluon.data.vision, as in MXNet 1.x.

Images are (H, W, C) arrays (batches (N, H, W, C)) until ToTensor makes them (C, H, W)
float32. Each transform takes an NDArray and returns one on the same context, or takes a
numpy array and returns numpy. They are plain callables (they hold no parameters), so
they work in Dataset.transform and in DataLoader worker processes alike. ToTensor and
Normalize run as nd.image.to_tensor and nd.image.normalize on NDArrays, as MXNet's do, and
Cast and a single image's flips as other weft operators (about five times faster per sample
than a round trip through numpy, and asynchronous); the others compute in numpy.

Resizing follows OpenCV's cv2.resize, which MXNet uses: interpolation 1 is bilinear with
half-pixel centres and edge clamping, 0 is nearest (floor(dst * src_size / dst_size));
uint8 results are rounded half up (OpenCV's fixed-point arithmetic can differ by 1 on
some pixels). The random transforms draw from Python's `random` module, as
mx.image.random_size_crop does, so random.seed makes them reproducible.
"""
import math
import numbers
import random

import numpy as np

from .... import ndarray as nd
from ....base import WeftValueError
from ....image.image import _rotate_chw, imresize
from ....ndarray import NDArray

__all__ = ["Compose", "Cast", "ToTensor", "Normalize", "Resize", "CenterCrop", "RandomResizedCrop",
           "RandomFlipLeftRight", "RandomFlipTopBottom", "CropResize", "RandomBrightness", "RandomContrast",
           "RandomSaturation", "RandomHue", "RandomColorJitter", "RandomLighting", "RandomApply", "Rotate",
           "RandomRotation"]

_INTERP_NAMES = {0: "nearest", 1: "bilinear", 2: "bicubic", 3: "area"}


class _Transform:
    """Calls forward(x) on the data; subclasses implement _apply on numpy arrays and may
    implement _apply_nd with operators on NDArrays (returning None where they do not)."""

    def __call__(self, x):
        return self.forward(x)

    def forward(self, x):
        if isinstance(x, NDArray):
            out = self._apply_nd(x)
            if out is not None:
                return out
            out = self._apply(x.asnumpy())
            return nd.array(out, ctx=x.context, dtype=out.dtype)
        if isinstance(x, np.ndarray):
            return self._apply(x)
        raise TypeError("%s: expected an NDArray or a numpy array, got %s" % (type(self).__name__, type(x).__name__))

    def _apply(self, a):
        raise NotImplementedError("%s must implement _apply" % type(self).__name__)

    def _apply_nd(self, x):
        return None

    def __repr__(self):
        return "%s(%s)" % (type(self).__name__, ", ".join("%s=%r" % kv for kv in self._repr_args()))

    def _repr_args(self):
        return []


def _check_ndim(a, ndims, layout, who):
    if a.ndim not in ndims:
        expected = " or ".join("(%s)" % ", ".join(layout[-n:]) for n in ndims)
        raise WeftValueError("%s: expected data of shape %s, got shape %s" % (who, expected, a.shape))


def _check_interp(interpolation, who):
    if interpolation not in _INTERP_NAMES:
        raise ValueError("%s: interpolation %r is not supported; expected 0 (nearest), 1 (bilinear), 2 (bicubic) "
                         "or 3 (area)" % (who, interpolation))
    return interpolation


def _wh(size, who):
    """(width, height) from an int or a (width, height) pair, both positive."""
    if isinstance(size, numbers.Integral):
        size = (size, size)
    if len(size) != 2 or not all(isinstance(s, numbers.Integral) and s > 0 for s in size):
        raise WeftValueError("%s: expected size to be a positive int or (width, height), got %r" % (who, size))
    return int(size[0]), int(size[1])


def _resize(a, width, height, interpolation):
    """a (H, W, C) or (N, H, W, C) resized to height x width, keeping its dtype, as
    mx.image.imresize resizes it: uint8 images through the image core's resize (OpenCV's
    fixed-point rounding), the others through the _image_resize operator."""
    y_axis = a.ndim - 3
    h, w = a.shape[y_axis], a.shape[y_axis + 1]
    if (h, w) == (height, width):
        return a.copy()
    if a.dtype == np.uint8:
        images = a if a.ndim == 4 else a[None]
        out = np.stack([imresize(nd.array(im, dtype=np.uint8), width, height, interpolation).asnumpy()
                        for im in images])
        return out if a.ndim == 4 else out[0]
    return nd.image.resize(nd.array(a, dtype=a.dtype), size=(width, height), interp=interpolation).asnumpy()


def _crop_resize(a, x0, y0, w, h, size, interpolation):
    """The w x h region at (x0, y0) of an (H, W, C) / (N, H, W, C) array, resized to size
    (width, height) when it differs."""
    y_axis = a.ndim - 3
    index = [slice(None)] * a.ndim
    index[y_axis] = slice(y0, y0 + h)
    index[y_axis + 1] = slice(x0, x0 + w)
    out = a[tuple(index)]
    if (w, h) != tuple(size):
        return _resize(out, size[0], size[1], interpolation)
    return np.ascontiguousarray(out)


def _scale_down(src_size, size):
    """mx.image.scale_down: `size` (w, h) shrunk, keeping its aspect ratio, to fit src_size."""
    w, h = size
    sw, sh = src_size
    if sh < h:
        w, h = float(w * sh) / h, sh
    if sw < w:
        w, h = sw, float(h * sw) / w
    return int(w), int(h)


class Compose:
    """Applies the transforms one after the other."""

    def __init__(self, transforms):
        self._transforms = list(transforms)
        for t in self._transforms:
            if not callable(t):
                raise TypeError("Compose: expected callable transforms, got %r" % (t,))

    def __call__(self, x):
        for t in self._transforms:
            x = t(x)
        return x

    def __len__(self):
        return len(self._transforms)

    def __getitem__(self, i):
        return self._transforms[i]

    def __repr__(self):
        return "Compose(\n%s\n)" % "\n".join("  " + repr(t) for t in self._transforms)


class Cast(_Transform):
    """The data as `dtype` (default float32)."""

    def __init__(self, dtype="float32"):
        self._dtype = np.dtype(dtype)

    def forward(self, x):
        if isinstance(x, NDArray):
            return x.astype(self._dtype)
        return super().forward(x)

    def _apply(self, a):
        return a.astype(self._dtype)

    def _repr_args(self):
        return [("dtype", self._dtype.name)]


class ToTensor(_Transform):
    """(H, W, C) in [0, 255] to (C, H, W) float32 in [0, 1]; batches (N, H, W, C) to
    (N, C, H, W)."""

    @staticmethod
    def _axes(x):
        _check_ndim(x, (3, 4), ("N", "H", "W", "C"), "ToTensor")
        return (2, 0, 1) if x.ndim == 3 else (0, 3, 1, 2)

    def _apply(self, a):
        axes = self._axes(a)
        return np.ascontiguousarray((a.astype(np.float32) / np.float32(255)).transpose(axes))

    def _apply_nd(self, x):
        self._axes(x)
        return nd.image.to_tensor(x)


class Normalize(_Transform):
    """(x - mean[c]) / std[c] on (C, H, W) or (N, C, H, W) float data; mean and std are one
    value for all channels or one per channel."""

    def __init__(self, mean=0.0, std=1.0):
        self._mean = np.atleast_1d(np.asarray(mean, dtype=np.float64))
        self._std = np.atleast_1d(np.asarray(std, dtype=np.float64))
        for name, v in (("mean", self._mean), ("std", self._std)):
            if v.ndim != 1 or v.size == 0:
                raise ValueError("Normalize: expected %s to be a number or a sequence of numbers, got %r"
                                 % (name, mean if name == "mean" else std))
        if np.any(self._std == 0):
            raise ValueError("Normalize: std must not contain zeros, got %r" % (std,))

    def _stats(self, x):
        """mean and std as (C, 1, 1) numpy arrays of x's dtype, C its channels."""
        _check_ndim(x, (3, 4), ("N", "C", "H", "W"), "Normalize")
        dtype = np.dtype(x.dtype)
        if not np.issubdtype(dtype, np.floating):
            raise TypeError("Normalize: expected float data (apply ToTensor first), got %s" % dtype)
        channels = x.shape[-3]
        stats = []
        for name, v in (("mean", self._mean), ("std", self._std)):
            if v.size not in (1, channels):
                raise WeftValueError("Normalize: %s has %d values but the data has %d channels (shape %s)"
                                     % (name, v.size, channels, x.shape))
            stats.append(np.broadcast_to(v.astype(dtype), (channels,)).reshape(-1, 1, 1))
        return stats

    def _apply(self, a):
        mean, std = self._stats(a)
        return (a - mean) / std

    def _apply_nd(self, x):
        self._stats(x)  # the checks and messages of the numpy path
        return nd.image.normalize(x, mean=tuple(self._mean.tolist()), std=tuple(self._std.tolist()))

    def _repr_args(self):
        return [("mean", self._mean.tolist()), ("std", self._std.tolist())]


class Resize(_Transform):
    """Resizes (H, W, C) images or (N, H, W, C) batches to `size`: (width, height), or an
    int for a square, or with keep_ratio an int for the short side (the long side scaled
    in proportion, rounded down)."""

    def __init__(self, size, keep_ratio=False, interpolation=1):
        # As in MXNet, a bad size is reported when the transform runs.
        self._size = int(size) if isinstance(size, numbers.Integral) else size
        self._keep = keep_ratio
        self._interpolation = _check_interp(interpolation, "Resize")

    def _target(self, h, w):
        if not isinstance(self._size, int):
            return _wh(self._size, "Resize")
        if self._size <= 0:
            raise WeftValueError("Resize: expected a positive size, got %r" % (self._size,))
        if not self._keep:
            return self._size, self._size
        if h > w:
            return self._size, h * self._size // w
        return w * self._size // h, self._size

    def _apply(self, a):
        _check_ndim(a, (3, 4), ("N", "H", "W", "C"), "Resize")
        width, height = self._target(a.shape[-3], a.shape[-2])
        return _resize(a, width, height, self._interpolation)

    def _repr_args(self):
        return [("size", self._size), ("keep_ratio", self._keep), ("interpolation", self._interpolation)]


class CenterCrop(_Transform):
    """The centre of an (H, W, C) image (or of each image of a batch) at size (width,
    height), or an int for a square. An image smaller than size gives the largest centred
    region of size's aspect ratio, resized up to size."""

    def __init__(self, size, interpolation=1):
        self._size = _wh(size, "CenterCrop")
        self._interpolation = _check_interp(interpolation, "CenterCrop")

    def _apply(self, a):
        _check_ndim(a, (3, 4), ("N", "H", "W", "C"), "CenterCrop")
        h, w = a.shape[-3], a.shape[-2]
        new_w, new_h = _scale_down((w, h), self._size)
        x0, y0 = int((w - new_w) / 2), int((h - new_h) / 2)
        return _crop_resize(a, x0, y0, new_w, new_h, self._size, self._interpolation)

    def _repr_args(self):
        return [("size", self._size), ("interpolation", self._interpolation)]


class RandomResizedCrop(_Transform):
    """A random region of an (H, W, C) image, covering a fraction of its area drawn
    uniformly from `scale` with an aspect ratio (width / height) drawn log-uniformly from
    `ratio`, resized to `size`. After ten draws that do not fit it falls back to
    CenterCrop(size)."""

    def __init__(self, size, scale=(0.08, 1.0), ratio=(3.0 / 4.0, 4.0 / 3.0), interpolation=1):
        self._size = _wh(size, "RandomResizedCrop")
        if isinstance(scale, numbers.Number):
            scale = (scale, 1.0)
        if len(scale) != 2 or not 0 < scale[0] <= scale[1]:
            raise ValueError("RandomResizedCrop: expected scale=(min, max) with 0 < min <= max, got %r" % (scale,))
        if len(ratio) != 2 or not 0 < ratio[0] <= ratio[1]:
            raise ValueError("RandomResizedCrop: expected ratio=(min, max) with 0 < min <= max, got %r" % (ratio,))
        self._scale = tuple(scale)
        self._ratio = tuple(ratio)
        self._interpolation = _check_interp(interpolation, "RandomResizedCrop")

    def _apply(self, a):
        _check_ndim(a, (3,), ("H", "W", "C"), "RandomResizedCrop")
        h, w = a.shape[0], a.shape[1]
        log_ratio = (math.log(self._ratio[0]), math.log(self._ratio[1]))
        for _ in range(10):
            target_area = random.uniform(*self._scale) * h * w
            aspect = math.exp(random.uniform(*log_ratio))
            new_w = int(round(math.sqrt(target_area * aspect)))
            new_h = int(round(math.sqrt(target_area / aspect)))
            if new_w <= w and new_h <= h:
                x0 = random.randint(0, w - new_w)
                y0 = random.randint(0, h - new_h)
                return _crop_resize(a, x0, y0, new_w, new_h, self._size, self._interpolation)
        new_w, new_h = _scale_down((w, h), self._size)
        return _crop_resize(a, int((w - new_w) / 2), int((h - new_h) / 2), new_w, new_h, self._size,
                            self._interpolation)

    def _repr_args(self):
        return [("size", self._size), ("scale", self._scale), ("ratio", self._ratio),
                ("interpolation", self._interpolation)]


class _RandomFlip(_Transform):
    _axis = None

    def _apply_nd(self, x):
        if x.ndim != 3:
            return None
        return nd.flip(x, axis=self._axis) if random.random() < 0.5 else x.copy()

    def _apply(self, a):
        _check_ndim(a, (3, 4), ("N", "H", "W", "C"), type(self).__name__)
        if a.ndim == 3:
            return np.flip(a, self._axis).copy() if random.random() < 0.5 else a.copy()
        # Each image of a batch gets its own draw.
        return np.stack([np.flip(img, self._axis) if random.random() < 0.5 else img for img in a])


class RandomFlipLeftRight(_RandomFlip):
    """Mirrors an (H, W, C) image left to right with probability 0.5 (each image of a
    batch independently)."""
    _axis = 1


class RandomFlipTopBottom(_RandomFlip):
    """Flips an (H, W, C) image upside down with probability 0.5 (each image of a batch
    independently)."""
    _axis = 0


class CropResize(_Transform):
    """The `width` x `height` region at column `x`, row `y` of an (H, W, C) image (or of each
    image of a batch), resized to `size` ((width, height) or an int) when given."""

    def __init__(self, x, y, width, height, size=None, interpolation=None):
        self._box = (int(x), int(y), int(width), int(height))
        self._size = size
        self._interpolation = _check_interp(1 if interpolation is None else interpolation, "CropResize")

    def _apply(self, a):
        _check_ndim(a, (3, 4), ("N", "H", "W", "C"), "CropResize")
        x, y, w, h = self._box
        # As in MXNet, a bad region is reported when the transform runs.
        if min(x, y) < 0 or min(w, h) <= 0:
            raise WeftValueError("CropResize: expected x, y >= 0 and a positive width and height, got %r"
                                 % (self._box,))
        if x + w > a.shape[-2] or y + h > a.shape[-3]:
            raise WeftValueError("CropResize: the region %r does not fit the image of shape %s" % (self._box, a.shape))
        size = (w, h) if self._size is None else _wh(self._size, "CropResize")
        return _crop_resize(a, x, y, w, h, size, self._interpolation)

    def _repr_args(self):
        return [("box", self._box), ("size", self._size), ("interpolation", self._interpolation)]


class _ColorOp(_Transform):
    """A transform that is one nd.image operator on (H, W, C) images: numpy inputs go
    through an NDArray."""

    def _op(self, x):
        raise NotImplementedError

    def _apply_nd(self, x):
        _check_ndim(x, (3,), ("H", "W", "C"), type(self).__name__)
        return self._op(x)

    def _apply(self, a):
        return self._apply_nd(nd.array(a, dtype=a.dtype)).asnumpy()


def _jitter_range(amount, who):
    if amount < 0:
        raise ValueError("%s: expected a non-negative amount, got %r" % (who, amount))
    return max(0.0, 1.0 - amount), 1.0 + amount


class RandomBrightness(_ColorOp):
    """Scales the image by a factor uniform in [max(0, 1 - brightness), 1 + brightness]."""

    def __init__(self, brightness):
        self._args = _jitter_range(brightness, "RandomBrightness")

    def _op(self, x):
        return nd.image.random_brightness(x, *self._args)


class RandomContrast(_ColorOp):
    """Blends the image with its mean grey level by a factor uniform in
    [max(0, 1 - contrast), 1 + contrast]."""

    def __init__(self, contrast):
        self._args = _jitter_range(contrast, "RandomContrast")

    def _op(self, x):
        return nd.image.random_contrast(x, *self._args)


class RandomSaturation(_ColorOp):
    """Blends the image with its grey version by a factor uniform in
    [max(0, 1 - saturation), 1 + saturation]."""

    def __init__(self, saturation):
        self._args = _jitter_range(saturation, "RandomSaturation")

    def _op(self, x):
        return nd.image.random_saturation(x, *self._args)


class RandomHue(_ColorOp):
    """Rotates the hue by a factor uniform in [max(0, 1 - hue), 1 + hue]."""

    def __init__(self, hue):
        self._args = _jitter_range(hue, "RandomHue")

    def _op(self, x):
        return nd.image.random_hue(x, *self._args)


class RandomColorJitter(_ColorOp):
    """Random brightness, contrast, saturation and hue changes, in a random order."""

    def __init__(self, brightness=0, contrast=0, saturation=0, hue=0):
        for who, v in (("brightness", brightness), ("contrast", contrast), ("saturation", saturation), ("hue", hue)):
            _jitter_range(v, "RandomColorJitter " + who)
        self._args = (brightness, contrast, saturation, hue)

    def _op(self, x):
        return nd.image.random_color_jitter(x, *self._args)


class RandomLighting(_ColorOp):
    """AlexNet's PCA lighting noise: the RGB eigenvectors of ImageNet scaled by normal
    draws of standard deviation `alpha`."""

    def __init__(self, alpha):
        if alpha < 0:
            raise ValueError("RandomLighting: expected alpha >= 0, got %r" % (alpha,))
        self._alpha = alpha

    def _op(self, x):
        return nd.image.random_lighting(x, self._alpha)


class RandomApply(Compose):
    """Applies `transforms` (a transform or a list, in order) with probability `p`, else
    returns the input unchanged."""

    def __init__(self, transforms, p=0.5):
        if not 0 <= p <= 1:
            raise ValueError("RandomApply: p must be in [0, 1], got %r" % (p,))
        super(RandomApply, self).__init__(transforms if isinstance(transforms, (list, tuple)) else [transforms])
        self.p = p

    def __call__(self, x):
        if self.p < random.random():
            return x
        return super(RandomApply, self).__call__(x)


class Rotate(_Transform):
    """Rotates a (C, H, W) float32 image, or each image of an (N, C, H, W) batch, by
    `rotation_degrees` (counter-clockwise as displayed), as mx.image.imrotate; zoom_in
    scales up so that no padding shows, zoom_out down so that the whole image fits."""

    def __init__(self, rotation_degrees, zoom_in=False, zoom_out=False):
        if zoom_in and zoom_out:
            raise ValueError("Rotate: zoom_in and zoom_out cannot both be True")
        self._args = (rotation_degrees, zoom_in, zoom_out)

    def _apply(self, a):
        if a.dtype != np.float32:
            raise TypeError("Rotate: only float32 images are supported (use ToTensor or Cast first), got %s"
                            % a.dtype)
        _check_ndim(a, (3, 4), ("N", "C", "H", "W"), type(self).__name__)
        degrees, zoom_in, zoom_out = self._angles(a)
        out = _rotate_chw(a if a.ndim == 4 else a[None], degrees, zoom_in, zoom_out)
        return out if a.ndim == 4 else out[0]

    def _angles(self, a):
        return self._args

    def _repr_args(self):
        return [("rotation_degrees", self._args[0]), ("zoom_in", self._args[1]), ("zoom_out", self._args[2])]


class RandomRotation(Rotate):
    """Rotate by an angle drawn uniformly (numpy's generator) from `angle_limits`, one per
    image, with probability `rotate_with_proba` (else the input comes back unchanged)."""

    def __init__(self, angle_limits, zoom_in=False, zoom_out=False, rotate_with_proba=1.0):
        if len(angle_limits) != 2 or angle_limits[0] > angle_limits[1]:
            raise ValueError("RandomRotation: angle_limits must be an ordered pair (low, high), got %r"
                             % (angle_limits,))
        if not 0 <= rotate_with_proba <= 1:
            raise ValueError("RandomRotation: rotate_with_proba must be in [0, 1], got %r" % (rotate_with_proba,))
        super(RandomRotation, self).__init__(0.0, zoom_in, zoom_out)
        self._limits = tuple(angle_limits)
        self._proba = rotate_with_proba

    def forward(self, x):
        if np.random.random() > self._proba:
            return x
        return super(RandomRotation, self).forward(x)

    def _angles(self, a):
        n = a.shape[0] if a.ndim == 4 else 1
        return np.random.uniform(self._limits[0], self._limits[1], size=n), self._args[1], self._args[2]

    def _repr_args(self):
        return [("angle_limits", self._limits), ("zoom_in", self._args[1]), ("zoom_out", self._args[2]),
                ("rotate_with_proba", self._proba)]
