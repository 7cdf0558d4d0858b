"""Image decoding, resizing and augmenters, as mxnet.image: NDArrays in HWC layout (uint8
when decoded; the colour augmenters after CastAug work on float32).

    img = weft.image.imread('cat.jpg')          # (H, W, 3) RGB
    small = weft.image.imresize(img, 64, 48)    # width 64, height 48

JPEG goes through libjpeg-turbo and PNG through libpng inside the C library.
"""
import json
import math
import numbers
import os
import random

import numpy as np

from ..base import _api, WeftIOError
from .. import ndarray as nd
from .. import recordio
from ..io import DataBatch, DataIter
from ..ndarray import NDArray

__all__ = ["imdecode", "imread", "imresize", "resize_short", "fixed_crop", "center_crop", "scale_down",
           "copyMakeBorder", "random_crop", "random_size_crop", "color_normalize", "imrotate", "random_rotate",
           "Augmenter", "SequentialAug", "ResizeAug", "ForceResizeAug", "RandomCropAug", "RandomSizedCropAug",
           "CenterCropAug", "RandomOrderAug", "BrightnessJitterAug", "ContrastJitterAug", "SaturationJitterAug",
           "HueJitterAug", "ColorJitterAug", "LightingAug", "ColorNormalizeAug", "RandomGrayAug",
           "HorizontalFlipAug", "CastAug", "CreateAugmenter", "ImageIter"]


def _as_bytes(buf):
    if isinstance(buf, NDArray):
        return buf.asnumpy().astype(np.uint8).tobytes()
    if isinstance(buf, np.ndarray):
        return np.ascontiguousarray(buf, dtype=np.uint8).tobytes()
    if isinstance(buf, (bytes, bytearray, memoryview)):
        return buf
    raise TypeError("imdecode: expected bytes, a numpy array or an NDArray of the encoded image, got %s"
                    % type(buf).__name__)


def _write_out(res, out):
    if out is None:
        return res
    if tuple(out.shape) != tuple(res.shape):
        raise ValueError("out has shape %s, the result has %s" % (out.shape, res.shape))
    out[:] = res
    return out


def imdecode(buf, flag=1, to_rgb=1, out=None):
    """Decodes a JPEG or PNG image. flag 1: colour (H, W, 3); 0: grey (H, W, 1); -1: as
    stored. to_rgb=0 gives BGR (OpenCV's order)."""
    if flag not in (-1, 0, 1):
        raise ValueError("imdecode: flag must be 1 (colour), 0 (grey) or -1 (unchanged), got %r" % (flag,))
    res = NDArray(_api.weft_image_decode(_as_bytes(buf), int(flag), 1 if to_rgb else 0))
    return _write_out(res, out)


def imread(filename, flag=1, to_rgb=1, out=None):
    """Reads and decodes an image file (see imdecode)."""
    try:
        with open(filename, "rb") as f:
            data = f.read()
    except OSError as err:
        # MXNet's imread fails with MXNetError; WeftIOError is one and an OSError too.
        raise WeftIOError("imread: cannot read %r: %s" % (filename, err.strerror or err)) from err
    return imdecode(data, flag=flag, to_rgb=to_rgb, out=out)


def imresize(src, w, h, interp=1, out=None):
    """Resizes an (H, W[, C]) image to width w and height h. interp as cv2: 0 nearest,
    1 bilinear, 2 bicubic, 3 area, 4 Lanczos (8 taps). uint8 images go through the decoder's resize; other
    dtypes (float images, as MXNet's imresize takes) through the _image_resize operator,
    keeping their dtype."""
    if not isinstance(src, NDArray):
        src = nd.array(np.asarray(src, dtype=np.uint8), dtype=np.uint8)
    if np.dtype(src.dtype) != np.uint8:
        image = src.reshape(tuple(src.shape) + (1,)) if src.ndim == 2 else src
        res = nd.image.resize(image, size=(int(w), int(h)), interp=int(interp))
        return _write_out(res.reshape((int(h), int(w))) if src.ndim == 2 else res, out)
    res = NDArray(_api.weft_image_resize(src, int(w), int(h), int(interp)))
    return _write_out(res, out)


def scale_down(src_size, size):
    """Scales (w, h) `size` down so that it fits in `src_size` (w, h), keeping its ratio."""
    w, h = size
    sw, sh = src_size
    if sh < h:
        w, h = float(w * sh) / h, sh
    if sw < w:
        w, h = sw, float(h * sw) / w
    return int(w), int(h)


def resize_short(src, size, interp=2):
    """Resizes so that the shorter side is `size`, keeping the aspect ratio."""
    h, w = src.shape[0], src.shape[1]
    if h > w:
        new_h, new_w = size * h // w, size
    else:
        new_h, new_w = size, size * w // h
    return imresize(src, new_w, new_h, interp=interp)


def fixed_crop(src, x0, y0, w, h, size=None, interp=2):
    """The (x0, y0, w, h) window of src, resized to `size` (w, h) when given."""
    if x0 < 0 or y0 < 0 or x0 + w > src.shape[1] or y0 + h > src.shape[0]:
        raise ValueError("fixed_crop: window (%d, %d, %d, %d) does not fit in a %dx%d image"
                         % (x0, y0, w, h, src.shape[1], src.shape[0]))
    out = src[y0:y0 + h, x0:x0 + w] if isinstance(src, np.ndarray) else \
        nd.array(src.asnumpy()[y0:y0 + h, x0:x0 + w], dtype=np.uint8)
    if size is not None and (w, h) != tuple(size):
        out = imresize(out, size[0], size[1], interp=interp)
    return out


def center_crop(src, size, interp=2):
    """Crops the centre of src to `size` (w, h) (scaled down to fit); returns (image, (x0, y0, w, h))."""
    h, w = src.shape[0], src.shape[1]
    new_w, new_h = scale_down((w, h), size)
    x0 = int((w - new_w) / 2)
    y0 = int((h - new_h) / 2)
    out = fixed_crop(src, x0, y0, new_w, new_h, size, interp)
    return out, (x0, y0, new_w, new_h)


def _get_interp_method(interp, sizes=()):
    """cv2's method for interp 0-4; 9: area when shrinking, bicubic when enlarging, else
    bilinear (sizes = (old_h, old_w, new_h, new_w)); 10: one of 0-4 at random."""
    if interp == 9:
        if not sizes:
            return 2
        oh, ow, nh, nw = sizes
        if nh > oh and nw > ow:
            return 2
        if nh < oh and nw < ow:
            return 3
        return 1
    if interp == 10:
        return random.randint(0, 4)
    if interp not in (0, 1, 2, 3, 4):
        raise ValueError("unknown interp method %r (0-4, 9 auto or 10 random)" % (interp,))
    return interp


_BORDERS = {0: "constant", 1: "edge", 2: "symmetric", 3: "wrap", 4: "reflect"}


def copyMakeBorder(src, top, bot, left, right, type=0, value=0.0, values=None, out=None):  # noqa: A002 (MXNet's name)
    """src padded by top/bot rows and left/right columns, as cv2.copyMakeBorder: type 0
    constant (`value`, or per channel `values`), 1 replicate, 2 reflect, 3 wrap, 4
    reflect-101. cv2's BORDER_ISOLATED flag (16, which MXNet's DetRandomPadAug passes) may be
    added: it matters only for views into a larger image, which Weft's arrays never are.
    `out`, an NDArray of the padded shape, receives the result (and is returned)."""
    if isinstance(type, int) and type & 16:
        type &= ~16  # noqa: A001
    if type not in _BORDERS:
        raise ValueError("copyMakeBorder: type must be 0 (constant), 1 (replicate), 2 (reflect), 3 (wrap) or 4 "
                         "(reflect 101), got %r" % (type,))
    a = src.asnumpy() if isinstance(src, NDArray) else np.asarray(src)
    widths = [(top, bot), (left, right)] + [(0, 0)] * (a.ndim - 2)
    if type == 0:
        if values is not None and a.ndim == 3:
            padded = np.stack([np.pad(a[..., c], widths[:2], mode="constant", constant_values=values[c])
                               for c in range(a.shape[2])], axis=2)
        else:
            padded = np.pad(a, widths, mode="constant", constant_values=value)
    else:
        padded = np.pad(a, widths, mode=_BORDERS[type])
    if out is not None:
        return _write_out(nd.array(padded, dtype=out.dtype), out)
    return nd.array(padded, dtype=a.dtype) if isinstance(src, NDArray) else padded


def random_crop(src, size, interp=2):
    """A random window of `size` (w, h) (scaled down to fit) of src, resized to size;
    returns (image, (x0, y0, w, h))."""
    h, w = src.shape[0], src.shape[1]
    new_w, new_h = scale_down((w, h), size)
    x0 = random.randint(0, w - new_w)
    y0 = random.randint(0, h - new_h)
    return fixed_crop(src, x0, y0, new_w, new_h, size, interp), (x0, y0, new_w, new_h)


def random_size_crop(src, size, area, ratio, interp=2, **kwargs):
    """A random window covering a fraction of src's area drawn from `area` ((min, max), or
    min with max 1) with aspect ratio drawn log-uniformly from `ratio`, resized to size; after
    ten draws that do not fit, center_crop. Returns (image, (x0, y0, w, h))."""
    if "min_area" in kwargs:
        area = kwargs.pop("min_area")
    if kwargs:
        raise TypeError("random_size_crop: unexpected arguments %s" % sorted(kwargs))
    h, w = src.shape[0], src.shape[1]
    if isinstance(area, numbers.Number):
        area = (area, 1.0)
    for _ in range(10):
        target = random.uniform(area[0], area[1]) * h * w
        aspect = np.exp(random.uniform(np.log(ratio[0]), np.log(ratio[1])))
        new_w = int(round(np.sqrt(target * aspect)))
        new_h = int(round(np.sqrt(target / aspect)))
        if new_w <= w and new_h <= h:
            x0 = random.randint(0, w - new_w)
            y0 = random.randint(0, h - new_h)
            return fixed_crop(src, x0, y0, new_w, new_h, size, interp), (x0, y0, new_w, new_h)
    return center_crop(src, size, interp)


def color_normalize(src, mean, std=None):
    """(src - mean) / std (std optional), broadcast over the channels."""
    if mean is not None:
        src = src - mean
    if std is not None:
        src = src / std
    return src


def _rotate_chw(a, degrees, zoom_in, zoom_out):
    """(N, C, H, W) float images rotated about their centres by `degrees` (one per image):
    each output pixel samples the input bilinearly at its rotated position, zero outside
    (coordinates normalised to [-1, 1] after the rotation, so the aspect ratio holds);
    zoom_in scales so that no padding shows, zoom_out so that the whole input fits."""
    h, w = a.shape[-2], a.shape[-1]
    rad = np.deg2rad(np.asarray(degrees, dtype=np.float64)).reshape(-1, 1, 1)
    hc, wc = (h - 1) / 2.0, (w - 1) / 2.0
    ys = (np.arange(h, dtype=np.float64) - hc).reshape(1, h, 1)
    xs = (np.arange(w, dtype=np.float64) - wc).reshape(1, 1, w)
    gx = (xs * np.cos(rad) - ys * np.sin(rad)) / wc
    gy = (xs * np.sin(rad) + ys * np.cos(rad)) / hc
    if zoom_in or zoom_out:
        rho, corner = math.hypot(h, w), math.atan2(h, w)
        turn = np.abs(rad)
        max_x = np.maximum(np.abs(rho * np.cos(corner + turn)), np.abs(rho * np.cos(corner - turn)))
        max_y = np.maximum(np.abs(rho * np.sin(corner + turn)), np.abs(rho * np.sin(corner - turn)))
        scale = np.maximum(max_x / w, max_y / h) if zoom_out else np.minimum(w / max_x, h / max_y)
        gx, gy = gx * scale, gy * scale
    sx, sy = (gx + 1) * (w - 1) / 2, (gy + 1) * (h - 1) / 2
    x0, y0 = np.floor(sx).astype(np.int64), np.floor(sy).astype(np.int64)
    fx, fy = sx - x0, sy - y0
    batch = np.arange(a.shape[0]).reshape(-1, 1, 1)
    out = np.zeros(a.shape, dtype=np.float64)
    for dy, wy in ((0, 1 - fy), (1, fy)):
        for dx, wx in ((0, 1 - fx), (1, fx)):
            yy, xx = y0 + dy, x0 + dx
            inside = (yy >= 0) & (yy < h) & (xx >= 0) & (xx < w)
            vals = a[batch, :, np.clip(yy, 0, h - 1), np.clip(xx, 0, w - 1)]   # (N, H, W, C)
            out += np.moveaxis(vals * (wy * wx * inside)[..., None], -1, 1)
    return out.astype(np.float32)


def imrotate(src, rotation_degrees, zoom_in=False, zoom_out=False):
    """Rotates a (C, H, W) float32 image by rotation_degrees (a number), or each image of an
    (N, C, H, W) batch by its own angle (a number or N of them), about the centre."""
    if zoom_in and zoom_out:
        raise ValueError("imrotate: zoom_in and zoom_out cannot both be True")
    if src.dtype != np.float32:
        raise TypeError("imrotate: only float32 images are supported, got %s" % np.dtype(src.dtype).name)
    a = src.asnumpy() if isinstance(src, NDArray) else np.asarray(src)
    if a.ndim == 3:
        if not isinstance(rotation_degrees, numbers.Number):
            raise TypeError("imrotate: one image takes one angle (a number)")
        a = a[None]
    elif a.ndim != 4:
        raise ValueError("imrotate: expected (C, H, W) or (N, C, H, W), got shape %s" % (a.shape,))
    angles = rotation_degrees.asnumpy() if isinstance(rotation_degrees, NDArray) else np.asarray(rotation_degrees)
    angles = np.broadcast_to(angles.astype(np.float64).reshape(-1), (a.shape[0],)) if angles.size == 1 else \
        angles.reshape(-1)
    if angles.size != a.shape[0]:
        raise ValueError("imrotate: %d images but %d angles" % (a.shape[0], angles.size))
    out = _rotate_chw(a, angles, zoom_in, zoom_out)
    if src.ndim == 3:
        out = out[0]
    return nd.array(out) if isinstance(src, NDArray) else out


def random_rotate(src, angle_limits, zoom_in=False, zoom_out=False):
    """imrotate by angles drawn uniformly (numpy's generator) from angle_limits, one per image."""
    n = 1 if src.ndim == 3 else src.shape[0]
    angles = np.random.uniform(angle_limits[0], angle_limits[1], size=n)
    return imrotate(src, float(angles[0]) if src.ndim == 3 else nd.array(angles), zoom_in=zoom_in,
                    zoom_out=zoom_out)


class Augmenter(object):
    """Base of the augmenters: callables on one (H, W, C) image whose constructor arguments
    dumps() writes as JSON."""

    def __init__(self, **kwargs):
        self._kwargs = {}
        for k, v in kwargs.items():
            if isinstance(v, NDArray):
                v = v.asnumpy()
            if isinstance(v, np.ndarray):
                v = v.tolist()
            self._kwargs[k] = v

    def dumps(self):
        return json.dumps([type(self).__name__.lower(), self._kwargs])

    def __call__(self, src):
        raise NotImplementedError("%s must implement __call__" % type(self).__name__)


class SequentialAug(Augmenter):
    """Applies `ts` in order."""

    def __init__(self, ts):
        super(SequentialAug, self).__init__()
        self.ts = ts

    def dumps(self):
        return [type(self).__name__.lower(), [t.dumps() for t in self.ts]]

    def __call__(self, src):
        for t in self.ts:
            src = t(src)
        return src


class RandomOrderAug(SequentialAug):
    """Applies `ts` in a random order (Python's `random`)."""

    def __call__(self, src):
        random.shuffle(self.ts)
        return super(RandomOrderAug, self).__call__(src)


class ResizeAug(Augmenter):
    """resize_short to `size`."""

    def __init__(self, size, interp=2):
        super(ResizeAug, self).__init__(size=size, interp=interp)
        self.size, self.interp = size, interp

    def __call__(self, src):
        h, w = src.shape[0], src.shape[1]
        new_h, new_w = (self.size * h // w, self.size) if h > w else (self.size, self.size * w // h)
        return imresize(src, new_w, new_h, interp=_get_interp_method(self.interp, (h, w, new_h, new_w)))


class ForceResizeAug(Augmenter):
    """Resizes to `size` (w, h), ignoring the aspect ratio."""

    def __init__(self, size, interp=2):
        super(ForceResizeAug, self).__init__(size=size, interp=interp)
        self.size, self.interp = size, interp

    def __call__(self, src):
        sizes = (src.shape[0], src.shape[1], self.size[1], self.size[0])
        return imresize(src, self.size[0], self.size[1], interp=_get_interp_method(self.interp, sizes))


class RandomCropAug(Augmenter):
    """random_crop to `size` (w, h)."""

    def __init__(self, size, interp=2):
        super(RandomCropAug, self).__init__(size=size, interp=interp)
        self.size, self.interp = size, interp

    def __call__(self, src):
        return random_crop(src, self.size, _get_interp_method(self.interp))[0]


class RandomSizedCropAug(Augmenter):
    """random_size_crop to `size` (w, h) with `area` and `ratio`."""

    def __init__(self, size, area, ratio, interp=2, **kwargs):
        if "min_area" in kwargs:
            area = kwargs.pop("min_area")
        if kwargs:
            raise TypeError("RandomSizedCropAug: unexpected arguments %s" % sorted(kwargs))
        super(RandomSizedCropAug, self).__init__(size=size, area=area, ratio=ratio, interp=interp)
        self.size, self.area, self.ratio, self.interp = size, area, ratio, interp

    def __call__(self, src):
        return random_size_crop(src, self.size, self.area, self.ratio, _get_interp_method(self.interp))[0]


class CenterCropAug(Augmenter):
    """center_crop to `size` (w, h)."""

    def __init__(self, size, interp=2):
        super(CenterCropAug, self).__init__(size=size, interp=interp)
        self.size, self.interp = size, interp

    def __call__(self, src):
        return center_crop(src, self.size, _get_interp_method(self.interp))[0]


_GREY = (0.299, 0.587, 0.114)


class BrightnessJitterAug(Augmenter):
    """Multiplies by 1 + U(-brightness, brightness)."""

    def __init__(self, brightness):
        super(BrightnessJitterAug, self).__init__(brightness=brightness)
        self.brightness = brightness

    def __call__(self, src):
        return src * (1.0 + random.uniform(-self.brightness, self.brightness))


class ContrastJitterAug(Augmenter):
    """Blends with the image's mean grey level: alpha * src + (1 - alpha) * mean grey, alpha =
    1 + U(-contrast, contrast)."""

    def __init__(self, contrast):
        super(ContrastJitterAug, self).__init__(contrast=contrast)
        self.contrast = contrast

    def __call__(self, src):
        alpha = 1.0 + random.uniform(-self.contrast, self.contrast)
        grey = nd.sum(src * nd.array([[list(_GREY)]], dtype=src.dtype)) * (3.0 * (1.0 - alpha) / src.size)
        return src * alpha + grey


class SaturationJitterAug(Augmenter):
    """Blends each pixel with its grey level: alpha * src + (1 - alpha) * grey, alpha = 1 +
    U(-saturation, saturation)."""

    def __init__(self, saturation):
        super(SaturationJitterAug, self).__init__(saturation=saturation)
        self.saturation = saturation

    def __call__(self, src):
        alpha = 1.0 + random.uniform(-self.saturation, self.saturation)
        grey = nd.sum(src * nd.array([[list(_GREY)]], dtype=src.dtype), axis=2, keepdims=True)
        return src * alpha + grey * (1.0 - alpha)


class HueJitterAug(Augmenter):
    """Rotates the hue by U(-hue, hue) * 180 degrees, through YIQ space (a linear map of RGB)."""

    _TO_YIQ = np.array([[0.299, 0.587, 0.114], [0.596, -0.274, -0.321], [0.211, -0.523, 0.311]])
    _FROM_YIQ = np.array([[1.0, 0.956, 0.621], [1.0, -0.272, -0.647], [1.0, -1.107, 1.705]])

    def __init__(self, hue):
        super(HueJitterAug, self).__init__(hue=hue)
        self.hue = hue

    def __call__(self, src):
        alpha = random.uniform(-self.hue, self.hue)
        c, s = np.cos(alpha * np.pi), np.sin(alpha * np.pi)
        turn = np.array([[1.0, 0.0, 0.0], [0.0, c, -s], [0.0, s, c]])
        t = (self._FROM_YIQ @ turn @ self._TO_YIQ).T
        return nd.dot(src, nd.array(t, dtype=src.dtype))


class ColorJitterAug(RandomOrderAug):
    """Brightness, contrast and saturation jitters (those above 0) in a random order."""

    def __init__(self, brightness, contrast, saturation):
        ts = []
        if brightness > 0:
            ts.append(BrightnessJitterAug(brightness))
        if contrast > 0:
            ts.append(ContrastJitterAug(contrast))
        if saturation > 0:
            ts.append(SaturationJitterAug(saturation))
        super(ColorJitterAug, self).__init__(ts)


class LightingAug(Augmenter):
    """AlexNet's PCA noise: adds eigvec . (alpha * eigval) per channel, alpha ~ N(0, alphastd)
    (numpy's generator)."""

    def __init__(self, alphastd, eigval, eigvec):
        super(LightingAug, self).__init__(alphastd=alphastd, eigval=eigval, eigvec=eigvec)
        self.alphastd = alphastd
        self.eigval = np.asarray(eigval)
        self.eigvec = np.asarray(eigvec)

    def __call__(self, src):
        alpha = np.random.normal(0, self.alphastd, size=(3,))
        return src + nd.array(np.dot(self.eigvec * alpha, self.eigval), dtype=src.dtype)


class ColorNormalizeAug(Augmenter):
    """color_normalize with `mean` and `std`."""

    def __init__(self, mean, std):
        super(ColorNormalizeAug, self).__init__(mean=mean, std=std)
        self.mean = mean if mean is None or isinstance(mean, NDArray) else nd.array(mean)
        self.std = std if std is None or isinstance(std, NDArray) else nd.array(std)

    def __call__(self, src):
        return color_normalize(src, self.mean, self.std)


class RandomGrayAug(Augmenter):
    """With probability p, every channel becomes 0.21 R + 0.72 G + 0.07 B."""

    def __init__(self, p):
        super(RandomGrayAug, self).__init__(p=p)
        self.p = p
        self.mat = np.array([[0.21] * 3, [0.72] * 3, [0.07] * 3])

    def __call__(self, src):
        if random.random() < self.p:
            src = nd.dot(src, nd.array(self.mat, dtype=src.dtype))
        return src


class HorizontalFlipAug(Augmenter):
    """Mirrors left to right with probability p."""

    def __init__(self, p):
        super(HorizontalFlipAug, self).__init__(p=p)
        self.p = p

    def __call__(self, src):
        if random.random() < self.p:
            src = nd.flip(src, axis=1)
        return src


class CastAug(Augmenter):
    """Casts to `typ` (float32 by default)."""

    def __init__(self, typ="float32"):
        super(CastAug, self).__init__(type=typ)
        self.typ = typ

    def __call__(self, src):
        return src.astype(self.typ)


_PCA_EIGVAL = np.array([55.46, 4.794, 1.148])
_PCA_EIGVEC = np.array([[-0.5675, 0.7192, 0.4009], [-0.5808, -0.0045, -0.8140], [-0.5836, -0.6948, 0.4203]])


def CreateAugmenter(data_shape, resize=0, rand_crop=False, rand_resize=False, rand_mirror=False, mean=None,
                    std=None, brightness=0, contrast=0, saturation=0, hue=0, pca_noise=0, rand_gray=0,
                    inter_method=2):
    """MXNet's standard augmenter list for images of data_shape (C, H, W): optional short-side
    resize; a random-sized, random or centre crop; optional mirror; cast to float32; colour,
    hue, PCA-lighting and grey jitters; normalisation (mean/std True: ImageNet's)."""
    augs = []
    if resize > 0:
        augs.append(ResizeAug(resize, inter_method))
    crop = (data_shape[2], data_shape[1])
    if rand_resize:
        if not rand_crop:
            raise ValueError("CreateAugmenter: rand_resize needs rand_crop=True")
        augs.append(RandomSizedCropAug(crop, 0.08, (3.0 / 4.0, 4.0 / 3.0), inter_method))
    elif rand_crop:
        augs.append(RandomCropAug(crop, inter_method))
    else:
        augs.append(CenterCropAug(crop, inter_method))
    if rand_mirror:
        augs.append(HorizontalFlipAug(0.5))
    augs.append(CastAug())
    if brightness or contrast or saturation:
        augs.append(ColorJitterAug(brightness, contrast, saturation))
    if hue:
        augs.append(HueJitterAug(hue))
    if pca_noise > 0:
        augs.append(LightingAug(pca_noise, _PCA_EIGVAL, _PCA_EIGVEC))
    if rand_gray > 0:
        augs.append(RandomGrayAug(rand_gray))
    if mean is True:
        mean = nd.array([123.68, 116.28, 103.53])
    elif mean is not None and (not isinstance(mean, (np.ndarray, NDArray)) or mean.shape[0] not in (1, 3)):
        raise ValueError("CreateAugmenter: mean must be True or an array of 1 or 3 values")
    if std is True:
        std = nd.array([58.395, 57.12, 57.375])
    elif std is not None and (not isinstance(std, (np.ndarray, NDArray)) or std.shape[0] not in (1, 3)):
        raise ValueError("CreateAugmenter: std must be True or an array of 1 or 3 values")
    if mean is not None or std is not None:
        augs.append(ColorNormalizeAug(mean, std))
    return augs


class ImageIter(DataIter):
    """Batches of augmented images from a RecordIO file (path_imgrec, with path_imgidx for
    shuffling and partitions), an image list file (path_imglist: index, labels, path, tab
    separated) or a list `imglist` of [label(s)..., path] items, paths under path_root.

    Each image is decoded (3 channels), passed through aug_list (default
    CreateAugmenter(data_shape, **kwargs)) and stored as (C, H, W) float32; labels are
    (batch,) or (batch, label_width) of `dtype`. last_batch_handle: 'pad' fills the last
    batch from the start (DataBatch.pad says how many), 'discard' drops it, 'roll_over' carries
    it into the next epoch. Images whose decoded shape is not (H, W, 3) are skipped."""

    def __init__(self, batch_size, data_shape, label_width=1, path_imgrec=None, path_imglist=None, path_root=None,
                 path_imgidx=None, shuffle=False, part_index=0, num_parts=1, aug_list=None, imglist=None,
                 data_name="data", label_name="softmax_label", dtype="float32", last_batch_handle="pad", **kwargs):
        super(ImageIter, self).__init__(batch_size)
        if not (path_imgrec or path_imglist or isinstance(imglist, list)):
            raise ValueError("ImageIter: give path_imgrec, path_imglist or imglist")
        if dtype not in ("int32", "float32", "int64", "float64"):
            raise ValueError("ImageIter: label dtype must be int32, float32, int64 or float64, got %r" % (dtype,))
        if last_batch_handle not in ("pad", "discard", "roll_over"):
            raise ValueError("ImageIter: last_batch_handle must be 'pad', 'discard' or 'roll_over', got %r"
                             % (last_batch_handle,))
        self.check_data_shape(data_shape)
        self.imgrec, self.imgidx = None, None
        if path_imgrec:
            if path_imgidx:
                self.imgrec = recordio.MXIndexedRecordIO(path_imgidx, path_imgrec, "r")
                self.imgidx = list(self.imgrec.keys)
            else:
                self.imgrec = recordio.MXRecordIO(path_imgrec, "r")
        keys = []
        self.imglist = None
        if path_imglist:
            self.imglist = {}
            with open(path_imglist) as fin:
                for line in fin:
                    fields = line.strip().split("\t")
                    if len(fields) < 3:
                        continue
                    key = int(fields[0])
                    self.imglist[key] = (np.array(fields[1:-1], dtype=dtype), fields[-1])
                    keys.append(key)
        elif isinstance(imglist, list):
            self.imglist = {}
            for i, item in enumerate(imglist, 1):
                if len(item) > 2:
                    label = np.array(item[:-1], dtype=dtype)
                else:
                    label = np.array(item[0], dtype=dtype).reshape(-1)
                self.imglist[str(i)] = (label, item[-1])
                keys.append(str(i))
        self.path_root = path_root
        self.data_shape = tuple(data_shape)
        self.label_width = label_width
        self.dtype = dtype
        self.shuffle = shuffle
        self.provide_data = [(data_name, (batch_size,) + self.data_shape)]
        self.provide_label = [(label_name, (batch_size, label_width) if label_width > 1 else (batch_size,))]
        if self.imgrec is None:
            self.seq = keys
        elif shuffle or num_parts > 1 or path_imgidx:
            if self.imgidx is None:
                raise ValueError("ImageIter: shuffling or partitions of a .rec file need path_imgidx")
            self.seq = self.imgidx
        else:
            self.seq = None
        if num_parts > 1:
            if not 0 <= part_index < num_parts:
                raise ValueError("ImageIter: part_index %d is not in [0, %d)" % (part_index, num_parts))
            per = len(self.seq) // num_parts
            self.seq = self.seq[part_index * per:(part_index + 1) * per]
        self.auglist = CreateAugmenter(self.data_shape, **kwargs) if aug_list is None else aug_list
        self.last_batch_handle = last_batch_handle
        self.num_image = len(self.seq) if self.seq is not None else None
        self.cur = 0
        self._allow_read = True
        self._cache = None
        self.reset()

    def reset(self):
        if self.seq is not None and self.shuffle:
            random.shuffle(self.seq)
        # a rolled-over partial batch keeps its place in the sequence
        if self.last_batch_handle != "roll_over" or self._cache is None:
            if self.imgrec is not None:
                self.imgrec.reset()
            self.cur = 0
            self._allow_read = True

    def hard_reset(self):
        """reset(), dropping a rolled-over partial batch."""
        self._cache = None
        if self.seq is not None and self.shuffle:
            random.shuffle(self.seq)
        if self.imgrec is not None:
            self.imgrec.reset()
        self.cur = 0
        self._allow_read = True

    def check_data_shape(self, data_shape):
        """Only (3, height, width) images are supported."""
        if len(data_shape) != 3 or data_shape[0] != 3:
            raise ValueError("ImageIter: data_shape must be (3, height, width), got %r" % (data_shape,))

    def read_image(self, fname):
        """The bytes of image file fname (under path_root)."""
        with open(os.path.join(self.path_root, fname) if self.path_root is not None else fname, "rb") as f:
            return f.read()

    def imdecode(self, s):
        return imdecode(s)

    def check_valid_image(self, data):
        if len(data.shape) != 3 or data.shape[2] != 3 or 0 in data.shape:
            raise RuntimeError("ImageIter: the image decodes to shape %s, not (H, W, 3)" % (data.shape,))

    def augmentation_transform(self, data):
        for aug in self.auglist:
            data = aug(data)
        return data

    def postprocess_data(self, datum):
        """(H, W, C) -> (C, H, W)."""
        return np.transpose(datum.asnumpy() if isinstance(datum, NDArray) else np.asarray(datum), (2, 0, 1))

    def next_sample(self):
        """(label, encoded image) of the next image; StopIteration at the end (rewinding
        unless last_batch_handle is 'discard')."""
        if not self._allow_read:
            raise StopIteration
        if self.seq is not None:
            if self.cur >= self.num_image:
                if self.last_batch_handle != "discard":
                    self.cur = 0
                raise StopIteration
            idx = self.seq[self.cur]
            self.cur += 1
            if self.imgrec is not None:
                header, img = recordio.unpack(self.imgrec.read_idx(idx))
                return (header.label if self.imglist is None else self.imglist[idx][0]), img
            label, fname = self.imglist[idx]
            return label, self.read_image(fname)
        record = self.imgrec.read()
        if record is None:
            if self.last_batch_handle != "discard":
                self.imgrec.reset()
            raise StopIteration
        header, img = recordio.unpack(record)
        return header.label, img

    def _fill(self, data, label, start):
        i = start
        try:
            while i < self.batch_size:
                lab, raw = self.next_sample()
                img = self.imdecode(raw)
                try:
                    self.check_valid_image(img)
                except RuntimeError:
                    continue
                img = self.postprocess_data(self.augmentation_transform(img))
                if img.shape != self.data_shape:
                    raise ValueError("ImageIter: the augmenters give images of shape %s, data_shape is %s"
                                     % (img.shape, self.data_shape))
                data[i] = img
                label[i] = np.asarray(lab, dtype=self.dtype).reshape(label[i].shape)
                i += 1
        except StopIteration:
            if not i:
                raise
        return i

    def _empty_label(self):
        """The label array of a new batch, before _fill writes it."""
        return np.zeros(self.provide_label[0][1], dtype=self.dtype)

    def next(self):
        if self._cache is not None:
            data, label, filled = self._cache
        else:
            data = np.zeros((self.batch_size,) + self.data_shape, dtype=np.float32)
            label = self._empty_label()
            filled = self._fill(data, label, 0)
        pad = self.batch_size - filled
        if pad:
            if self.last_batch_handle == "discard":
                raise StopIteration
            if self.last_batch_handle == "roll_over" and self._cache is None:
                self._cache = (data, label, filled)
                raise StopIteration
            self._fill(data, label, filled)
            if self.last_batch_handle == "pad":
                self._allow_read = False
            else:
                self._cache = None
        # as MXNet, pad counts the samples read after the end, roll_over's included
        return DataBatch([nd.array(data)], [nd.array(label, dtype=label.dtype)], pad=pad)
