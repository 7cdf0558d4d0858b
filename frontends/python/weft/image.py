"""Image decoding and resizing, as mxnet.image: uint8 NDArrays in HWC layout.

    img = weft.image.imread('cat.jpg')          # (H, W, 3) RGB
    small = weft.image.imresize(img, 64, 48)    # width 64, height 48

JPEG goes through libjpeg-turbo and PNG through libpng inside the C library.
"""
import numpy as np

from .base import _api
from . import ndarray as nd
from .ndarray import NDArray

__all__ = ["imdecode", "imread", "imresize", "resize_short", "fixed_crop", "center_crop", "scale_down"]


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
    with open(filename, "rb") as f:
        data = f.read()
    return imdecode(data, flag=flag, to_rgb=to_rgb, out=out)


def imresize(src, w, h, interp=1, out=None):
    """Resizes an (H, W[, C]) uint8 image to width w and height h. interp as cv2: 0 nearest,
    1 bilinear, 2 bicubic, 3 area."""
    if not isinstance(src, NDArray):
        src = nd.array(np.asarray(src, dtype=np.uint8), dtype=np.uint8)
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
