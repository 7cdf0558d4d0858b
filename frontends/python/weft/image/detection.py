"""Object-detection augmenters and ImageDetIter, as MXNet 1.9's `mx.image.detection`.

A detection label is a float array of shape (objects, width >= 5): column 0 the class id
(-1 marks padding), columns 1-4 the box (xmin, ymin, xmax, ymax) as fractions of the image's
width and height, any further columns carried along. A detection augmenter is a callable
`(image, label) -> (image, label)` that keeps the boxes on the objects: a flip mirrors the x
coordinates, a crop re-expresses them in the window and drops the objects it cuts away, a pad
shrinks them into the larger canvas.

The raw labels stored in .rec/.lst files carry a header: `[header_width, object_width,
(header_width - 2 more values), object 1, object 2, ...]`.
"""
import json
import logging
import math
import numbers
import random
import warnings

import numpy as np

from .. import ndarray as nd
from ..io import DataBatch
from ..ndarray import NDArray
from .image import (Augmenter, CastAug, ColorJitterAug, ColorNormalizeAug, ForceResizeAug, HueJitterAug,
                    ImageIter, LightingAug, RandomGrayAug, ResizeAug, copyMakeBorder, fixed_crop,
                    _PCA_EIGVAL, _PCA_EIGVEC)

__all__ = ["DetAugmenter", "DetBorrowAug", "DetRandomSelectAug", "DetHorizontalFlipAug", "DetRandomCropAug",
           "DetRandomPadAug", "CreateMultiRandCropAugmenter", "CreateDetAugmenter", "ImageDetIter"]


def _box_areas(boxes):
    """Areas of (n, 4) boxes (xmin, ymin, xmax, ymax); inverted boxes have area 0."""
    return np.maximum(0, boxes[:, 2] - boxes[:, 0]) * np.maximum(0, boxes[:, 3] - boxes[:, 1])


def _as_range(value, name, aug):
    if isinstance(value, (tuple, list)):
        if len(value) != 2:
            raise ValueError("%s: %s must be a number or a (low, high) pair, got %r" % (aug, name, value))
        return tuple(value)
    if not isinstance(value, numbers.Number):
        raise TypeError("%s: %s must be a number or a (low, high) pair, got %r" % (aug, name, value))
    logging.info("%s: fixed %s %s", aug, name, value)
    return (value, value)


class DetAugmenter(object):
    """Base of the detection augmenters: callables on (image (H, W, C), label (n, 5+)) whose
    constructor arguments dumps() writes as JSON."""

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

    def __call__(self, src, label):
        raise NotImplementedError("%s must implement __call__(src, label)" % type(self).__name__)


class DetBorrowAug(DetAugmenter):
    """Runs a classification Augmenter that leaves the boxes where they are (colour, cast,
    normalisation, resizes of the whole image) on the image only."""

    def __init__(self, augmenter):
        if not isinstance(augmenter, Augmenter):
            raise TypeError("DetBorrowAug: expected a weft.image.Augmenter, got %s" % type(augmenter).__name__)
        super(DetBorrowAug, self).__init__(augmenter=augmenter.dumps())
        self.augmenter = augmenter

    def dumps(self):
        return [type(self).__name__.lower(), self.augmenter.dumps()]

    def __call__(self, src, label):
        return self.augmenter(src), label


class DetRandomSelectAug(DetAugmenter):
    """Applies one augmenter of aug_list drawn at random, or none with probability skip_prob
    (always none when aug_list is empty)."""

    def __init__(self, aug_list, skip_prob=0):
        super(DetRandomSelectAug, self).__init__(skip_prob=skip_prob)
        if not isinstance(aug_list, (list, tuple)):
            aug_list = [aug_list]
        for aug in aug_list:
            if not isinstance(aug, DetAugmenter):
                raise ValueError("DetRandomSelectAug: aug_list may hold only DetAugmenters, got %s"
                                 % type(aug).__name__)
        self.aug_list = list(aug_list)
        self.skip_prob = skip_prob if self.aug_list else 1

    def dumps(self):
        return [type(self).__name__.lower(), [aug.dumps() for aug in self.aug_list]]

    def __call__(self, src, label):
        if random.random() < self.skip_prob:
            return src, label
        return random.choice(self.aug_list)(src, label)


class DetHorizontalFlipAug(DetAugmenter):
    """Mirrors image and boxes left to right with probability p."""

    def __init__(self, p):
        super(DetHorizontalFlipAug, self).__init__(p=p)
        self.p = p

    def __call__(self, src, label):
        if random.random() < self.p:
            src = nd.flip(src, axis=1) if isinstance(src, NDArray) else np.ascontiguousarray(src[:, ::-1])
            label = self._flip_label(label)
        return src, label

    @staticmethod
    def _flip_label(label):
        out = np.array(label, copy=True)
        out[:, 1] = 1.0 - label[:, 3]
        out[:, 3] = 1.0 - label[:, 1]
        return out


class DetRandomCropAug(DetAugmenter):
    """Crops a random window (area a fraction in area_range of the image's, aspect ratio
    width/height in aspect_ratio_range) that keeps every object it touches at least
    min_object_covered covered; objects left with less than min_eject_coverage of their area
    are dropped from the label. A window is drawn up to max_attempts times; when none fits,
    the image and label are returned unchanged. Invalid ranges disable the augmenter (with a
    warning), as MXNet does."""

    def __init__(self, min_object_covered=0.1, aspect_ratio_range=(0.75, 1.33), area_range=(0.05, 1.0),
                 min_eject_coverage=0.3, max_attempts=50):
        aspect_ratio_range = _as_range(aspect_ratio_range, "aspect_ratio_range", "DetRandomCropAug")
        area_range = _as_range(area_range, "area_range", "DetRandomCropAug")
        super(DetRandomCropAug, self).__init__(min_object_covered=min_object_covered,
                                               aspect_ratio_range=aspect_ratio_range, area_range=area_range,
                                               min_eject_coverage=min_eject_coverage, max_attempts=max_attempts)
        self.min_object_covered = min_object_covered
        self.min_eject_coverage = min_eject_coverage
        self.max_attempts = max_attempts
        self.aspect_ratio_range = aspect_ratio_range
        self.area_range = area_range
        self.enabled = False
        if area_range[1] <= 0 or area_range[0] > area_range[1]:
            warnings.warn("DetRandomCropAug is disabled: invalid area_range %s" % (area_range,))
        elif aspect_ratio_range[0] <= 0 or aspect_ratio_range[0] > aspect_ratio_range[1]:
            warnings.warn("DetRandomCropAug is disabled: invalid aspect_ratio_range %s" % (aspect_ratio_range,))
        else:
            self.enabled = True

    def __call__(self, src, label):
        crop = self._random_crop_proposal(label, src.shape[0], src.shape[1])
        if crop:
            x, y, w, h, label = crop
            src = fixed_crop(src, x, y, w, h, None)
        return src, label

    def _window_size(self, height, width):
        """A (w, h) drawn within the area and aspect-ratio ranges that fits the image, or None."""
        min_area = self.area_range[0] * height * width
        max_area = self.area_range[1] * height * width
        ratio = random.uniform(*self.aspect_ratio_range)
        if ratio <= 0:
            return None
        lo = max(1, int(math.ceil(math.sqrt(min_area / ratio))))
        hi = min(height, int(math.floor(math.sqrt(max_area / ratio))), int(math.floor(width / ratio)))
        if lo > hi:
            return None
        h = random.randint(lo, hi)
        w = min(width, max(1, int(round(h * ratio))))
        # rounding w may push the area out of range by a row's worth: draw again then
        if not min_area <= w * h <= max_area:
            return None
        return w, h

    def _satisfies_constraints(self, label, window, height, width):
        """The window (x1, y1, x2, y2, pixels) covers at least min_object_covered of each
        object (larger than 2 pixels) it touches, and touches at least one."""
        x1, y1, x2, y2 = window
        if (x2 - x1) * (y2 - y1) < 2:
            return False
        boxes = label[:, 1:5]
        areas = _box_areas(boxes)
        objects = boxes[areas * width * height > 2]
        if not len(objects):
            return False
        win = np.array([x1 / width, y1 / height, x2 / width, y2 / height])
        inter = np.concatenate([np.maximum(objects[:, :2], win[:2]), np.minimum(objects[:, 2:], win[2:])], axis=1)
        coverage = _box_areas(inter) / _box_areas(objects)
        touched = coverage[coverage > 0]
        return touched.size > 0 and touched.min() > self.min_object_covered

    def _update_labels(self, label, crop_box, height, width):
        """label in the coordinates of crop_box (x, y, w, h pixels), without the objects it
        leaves outside or cuts below min_eject_coverage; None when no object is left."""
        x, y, w, h = crop_box
        sx, sy = float(w) / width, float(h) / height
        out = np.array(label, dtype=np.float64 if label.dtype == np.float64 else np.float32, copy=True)
        out[:, (1, 3)] = np.clip((label[:, (1, 3)] - float(x) / width) / sx, 0, 1)
        out[:, (2, 4)] = np.clip((label[:, (2, 4)] - float(y) / height) / sy, 0, 1)
        with np.errstate(divide="ignore", invalid="ignore"):
            kept = _box_areas(out[:, 1:5]) * sx * sy / _box_areas(label[:, 1:5])
        valid = (out[:, 3] > out[:, 1]) & (out[:, 4] > out[:, 2]) & (kept > self.min_eject_coverage)
        if not valid.any():
            return None
        return out[valid]

    def _random_crop_proposal(self, label, height, width):
        """(x, y, w, h, new label) of an accepted window, or () after max_attempts draws."""
        if not self.enabled or height <= 0 or width <= 0:
            return ()
        label = np.asarray(label)
        for _ in range(self.max_attempts):
            size = self._window_size(height, width)
            if size is None:
                continue
            w, h = size
            y = random.randint(0, height - h)
            x = random.randint(0, width - w)
            if self._satisfies_constraints(label, (x, y, x + w, y + h), height, width):
                new_label = self._update_labels(label, (x, y, w, h), height, width)
                if new_label is not None:
                    return (x, y, w, h, new_label)
        return ()


class DetRandomPadAug(DetAugmenter):
    """Places the image at a random spot of a larger canvas filled with pad_val (area a
    multiple in area_range of the image's, aspect ratio in aspect_ratio_range, at least 2
    pixels larger each way), shrinking the boxes to match. Up to max_attempts draws; when none
    fits, the image is returned unchanged."""

    def __init__(self, aspect_ratio_range=(0.75, 1.33), area_range=(1.0, 3.0), max_attempts=50,
                 pad_val=(128, 128, 128)):
        if not isinstance(pad_val, (list, tuple)) and not isinstance(pad_val, numbers.Number):
            raise TypeError("DetRandomPadAug: pad_val must be a number or one value per channel, got %r" % (pad_val,))
        aspect_ratio_range = _as_range(aspect_ratio_range, "aspect_ratio_range", "DetRandomPadAug")
        area_range = _as_range(area_range, "area_range", "DetRandomPadAug")
        super(DetRandomPadAug, self).__init__(aspect_ratio_range=aspect_ratio_range, area_range=area_range,
                                              max_attempts=max_attempts, pad_val=pad_val)
        self.pad_val = pad_val
        self.aspect_ratio_range = aspect_ratio_range
        self.area_range = area_range
        self.max_attempts = max_attempts
        self.enabled = False
        if area_range[1] <= 1.0 or area_range[0] > area_range[1]:
            warnings.warn("DetRandomPadAug is disabled: invalid area_range %s" % (area_range,))
        elif aspect_ratio_range[0] <= 0 or aspect_ratio_range[0] > aspect_ratio_range[1]:
            warnings.warn("DetRandomPadAug is disabled: invalid aspect_ratio_range %s" % (aspect_ratio_range,))
        else:
            self.enabled = True

    def __call__(self, src, label):
        height, width = src.shape[0], src.shape[1]
        pad = self._random_pad_proposal(label, height, width)
        if pad:
            x, y, w, h, label = pad
            if isinstance(self.pad_val, numbers.Number):
                src = copyMakeBorder(src, y, h - y - height, x, w - x - width, 0, value=self.pad_val)
            else:
                src = copyMakeBorder(src, y, h - y - height, x, w - x - width, 0, values=self.pad_val)
        return src, label

    @staticmethod
    def _update_labels(label, pad_box, height, width):
        x, y, w, h = pad_box
        out = np.array(label, copy=True)
        out[:, (1, 3)] = (label[:, (1, 3)] * width + x) / w
        out[:, (2, 4)] = (label[:, (2, 4)] * height + y) / h
        return out

    def _random_pad_proposal(self, label, height, width):
        """(x, y, w, h, new label): the image's place (x, y) in a w x h canvas, or ()."""
        if not self.enabled or height <= 0 or width <= 0:
            return ()
        min_area = self.area_range[0] * height * width
        max_area = self.area_range[1] * height * width
        for _ in range(self.max_attempts):
            ratio = random.uniform(*self.aspect_ratio_range)
            if ratio <= 0:
                continue
            # the canvas must hold the image: h >= height and w = h * ratio >= width
            lo = max(height, int(math.ceil(math.sqrt(min_area / ratio))), int(math.ceil(width / ratio)))
            hi = int(math.floor(math.sqrt(max_area / ratio)))
            if lo > hi:
                continue
            h = random.randint(lo, hi)
            w = int(round(h * ratio))
            if h - height < 2 or w - width < 2:
                continue  # a border of a pixel or less changes nothing worth the copy
            y = random.randint(0, h - height)
            x = random.randint(0, w - width)
            return (x, y, w, h, self._update_labels(np.asarray(label), (x, y, w, h), height, width))
        return ()


def CreateMultiRandCropAugmenter(min_object_covered=0.1, aspect_ratio_range=(0.75, 1.33), area_range=(0.05, 1.0),
                                 min_eject_coverage=0.3, max_attempts=50, skip_prob=0):
    """A DetRandomSelectAug over several DetRandomCropAugs: each argument is one value for all
    of them or a list with one value per augmenter (a tuple is one range, a list of tuples one
    range each); lists of different lengths other than 1 are an error."""
    params = [min_object_covered, aspect_ratio_range, area_range, min_eject_coverage, max_attempts]
    params = [p if isinstance(p, list) else [p] for p in params]
    count = max(len(p) for p in params)
    for name, p in zip(("min_object_covered", "aspect_ratio_range", "area_range", "min_eject_coverage",
                        "max_attempts"), params):
        if len(p) not in (1, count):
            raise ValueError("CreateMultiRandCropAugmenter: %s has %d values, the other lists %d" % (name, len(p), count))
    params = [p * count if len(p) == 1 else p for p in params]
    augs = [DetRandomCropAug(min_object_covered=moc, aspect_ratio_range=arr, area_range=ar, min_eject_coverage=mec,
                             max_attempts=ma) for moc, arr, ar, mec, ma in zip(*params)]
    return DetRandomSelectAug(augs, skip_prob=skip_prob)


def _check_channel_stats(value, name, default):
    if value is True:
        return np.array(default)
    if value is not None and (not isinstance(value, (np.ndarray, NDArray)) or value.shape[0] not in (1, 3)):
        raise ValueError("CreateDetAugmenter: %s must be True or an array of 1 or 3 values, got %r" % (name, value))
    return value


def CreateDetAugmenter(data_shape, resize=0, rand_crop=0, rand_pad=0, rand_gray=0, rand_mirror=False, mean=None,
                       std=None, brightness=0, contrast=0, saturation=0, pca_noise=0, hue=0, inter_method=2,
                       min_object_covered=0.1, aspect_ratio_range=(0.75, 1.33), area_range=(0.05, 3.0),
                       min_eject_coverage=0.3, max_attempts=50, pad_val=(127, 127, 127)):
    """MXNet's detection augmenter list for output images of data_shape (C, H, W), in order:
    short-side resize (resize > 0); random crops with probability rand_crop (the crop
    arguments may be lists: one crop augmenter per value, see CreateMultiRandCropAugmenter);
    mirror (rand_mirror); random pad with probability rand_pad (area up to area_range[1]);
    forced resize to (W, H); cast to float32; colour, hue, PCA-lighting and grey jitters;
    normalisation (mean/std True: ImageNet's)."""
    augs = []
    if resize > 0:
        augs.append(DetBorrowAug(ResizeAug(resize, inter_method)))
    if rand_crop > 0:
        augs.append(CreateMultiRandCropAugmenter(min_object_covered, aspect_ratio_range, area_range,
                                                 min_eject_coverage, max_attempts, skip_prob=1 - rand_crop))
    if rand_mirror:
        augs.append(DetHorizontalFlipAug(0.5))
    # padding comes after the crops and the flip: they then work on the smaller image
    if rand_pad > 0:
        pad = DetRandomPadAug(aspect_ratio_range, (1.0, area_range[1]), max_attempts, pad_val)
        augs.append(DetRandomSelectAug([pad], 1 - rand_pad))
    augs.append(DetBorrowAug(ForceResizeAug((data_shape[2], data_shape[1]), inter_method)))
    augs.append(DetBorrowAug(CastAug()))
    if brightness or contrast or saturation:
        augs.append(DetBorrowAug(ColorJitterAug(brightness, contrast, saturation)))
    if hue:
        augs.append(DetBorrowAug(HueJitterAug(hue)))
    if pca_noise > 0:
        augs.append(DetBorrowAug(LightingAug(pca_noise, _PCA_EIGVAL, _PCA_EIGVEC)))
    if rand_gray > 0:
        augs.append(DetBorrowAug(RandomGrayAug(rand_gray)))
    mean = _check_channel_stats(mean, "mean", [123.68, 116.28, 103.53])
    std = _check_channel_stats(std, "std", [58.395, 57.12, 57.375])
    if mean is not None or std is not None:
        augs.append(DetBorrowAug(ColorNormalizeAug(mean, std)))
    return augs


class ImageDetIter(ImageIter):
    """Batches of augmented images and their boxes from a RecordIO file, an image list file
    or `imglist` (as ImageIter; each raw label is `[header_width, object_width, ...header,
    objects...]`).

    Data is (batch, C, H, W) float32; the label (provide_label) is (batch, max objects,
    object_width) float32, where max objects is the largest count of valid objects over the
    data set (read once at construction) and the rows past an image's objects are -1.
    Samples whose label holds no valid box, or that the augmenters leave without one, are
    skipped. aug_list defaults to CreateDetAugmenter(data_shape, **kwargs)."""

    def __init__(self, batch_size, data_shape, path_imgrec=None, path_imglist=None, path_root=None, path_imgidx=None,
                 shuffle=False, part_index=0, num_parts=1, aug_list=None, imglist=None, data_name="data",
                 label_name="label", last_batch_handle="pad", **kwargs):
        super(ImageDetIter, self).__init__(batch_size=batch_size, data_shape=data_shape, path_imgrec=path_imgrec,
                                           path_imglist=path_imglist, path_root=path_root, path_imgidx=path_imgidx,
                                           shuffle=shuffle, part_index=part_index, num_parts=num_parts, aug_list=[],
                                           imglist=imglist, data_name=data_name, label_name=label_name,
                                           last_batch_handle=last_batch_handle)
        self.auglist = CreateDetAugmenter(data_shape, **kwargs) if aug_list is None else aug_list
        self.label_shape = self._estimate_label_shape()
        self.provide_label = [(label_name, (self.batch_size,) + self.label_shape)]

    def _estimate_label_shape(self):
        """(largest object count, object width) over every sample."""
        max_count, width = 0, None
        self.reset()
        try:
            while True:
                label, _ = self.next_sample()
                label = self._parse_label(label)
                max_count = max(max_count, label.shape[0])
                width = label.shape[1]
        except StopIteration:
            pass
        self.reset()
        if width is None:
            raise ValueError("ImageDetIter: the data set has no sample to read the label shape from")
        return (max_count, width)

    def _parse_label(self, label):
        """The (objects, object_width) boxes of a raw label, without the degenerate ones."""
        raw = (label.asnumpy() if isinstance(label, NDArray) else np.asarray(label, dtype=np.float32)).ravel()
        if raw.size < 7:
            raise RuntimeError("ImageDetIter: a raw label needs at least 7 values ([header_width, object_width, "
                               "header..., objects...]), got %d" % raw.size)
        header_width, obj_width = int(raw[0]), int(raw[1])
        if header_width < 2 or obj_width < 5 or header_width >= raw.size:
            raise RuntimeError("ImageDetIter: a raw label needs header_width >= 2 and object_width >= 5, got %d and "
                               "%d in a label of %d values" % (header_width, obj_width, raw.size))
        if (raw.size - header_width) % obj_width:
            raise RuntimeError("ImageDetIter: label of %d values after a header of %d is not a whole number of "
                               "objects of width %d" % (raw.size, header_width, obj_width))
        objects = raw[header_width:].reshape(-1, obj_width)
        objects = objects[(objects[:, 3] > objects[:, 1]) & (objects[:, 4] > objects[:, 2])]
        if not len(objects):
            raise RuntimeError("ImageDetIter: a sample has no valid box (xmax > xmin and ymax > ymin)")
        return objects

    def _check_valid_label(self, label):
        if label.ndim != 2 or label.shape[1] < 5:
            raise RuntimeError("ImageDetIter: expected a label of shape (objects, 5 or more), got %s" % (label.shape,))
        valid = (label[:, 0] >= 0) & (label[:, 3] > label[:, 1]) & (label[:, 4] > label[:, 2])
        if not valid.any():
            raise RuntimeError("ImageDetIter: the augmented label has no valid object")

    def check_label_shape(self, label_shape):
        """A new label shape must keep the object width and may only add rows."""
        if len(label_shape) != 2:
            raise ValueError("ImageDetIter: label_shape must be (objects, object_width), got %r" % (label_shape,))
        if label_shape[0] < self.label_shape[0]:
            raise ValueError("ImageDetIter: label_shape cannot reduce the object count from %d to %d"
                             % (self.label_shape[0], label_shape[0]))
        if label_shape[1] != self.provide_label[0][1][2]:
            raise ValueError("ImageDetIter: label_shape object width must stay %d, got %d"
                             % (self.provide_label[0][1][2], label_shape[1]))

    def reshape(self, data_shape=None, label_shape=None):
        """Changes the output data shape (C, H, W) and/or the label shape (objects, width)."""
        if data_shape is not None:
            self.check_data_shape(data_shape)
            self.data_shape = tuple(data_shape)
            self.provide_data = [(self.provide_data[0][0], (self.batch_size,) + self.data_shape)]
        if label_shape is not None:
            self.check_label_shape(label_shape)
            self.label_shape = tuple(label_shape)
            self.provide_label = [(self.provide_label[0][0], (self.batch_size,) + self.label_shape)]

    def sync_label_shape(self, it, verbose=False):
        """Gives this iterator and `it` (another ImageDetIter, e.g. validation) the larger of
        their object counts; returns `it`."""
        if not isinstance(it, ImageDetIter):
            raise TypeError("ImageDetIter.sync_label_shape: expected an ImageDetIter, got %s" % type(it).__name__)
        if self.label_shape[1] != it.label_shape[1]:
            raise ValueError("ImageDetIter.sync_label_shape: object widths differ: %d and %d"
                             % (self.label_shape[1], it.label_shape[1]))
        count = max(self.label_shape[0], it.label_shape[0])
        for one in (self, it):
            if one.label_shape[0] < count:
                one.reshape(None, (count, one.label_shape[1]))
                if verbose:
                    logging.info("ImageDetIter: label_shape is now (%d, %d)", count, one.label_shape[1])
        return it

    def augmentation_transform(self, data, label):  # pylint: disable=arguments-differ
        for aug in self.auglist:
            data, label = aug(data, label)
        return data, label

    def _next_augmented(self):
        """(image, boxes) of the next sample whose label and image are valid after the augmenters."""
        while True:
            label, raw = self.next_sample()
            data = self.imdecode(raw)
            try:
                self.check_valid_image(data)
                data, label = self.augmentation_transform(data, self._parse_label(label))
                self._check_valid_label(label)
            except RuntimeError as e:
                logging.debug("ImageDetIter: skipping a sample: %s", e)
                continue
            return data, label

    def _fill(self, data, label, start):
        i = start
        try:
            while i < self.batch_size:
                img, boxes = self._next_augmented()
                img = self.postprocess_data(img)
                if img.shape != self.data_shape:
                    raise ValueError("ImageDetIter: the augmenters give images of shape %s, data_shape is %s"
                                     % (img.shape, self.data_shape))
                if boxes.shape[0] > label.shape[1] or boxes.shape[1] != label.shape[2]:
                    raise ValueError("ImageDetIter: a sample has %d objects of width %d, the label shape is %s"
                                     % (boxes.shape[0], boxes.shape[1], label.shape[1:]))
                data[i] = img
                label[i] = -1
                label[i, :boxes.shape[0]] = boxes
                i += 1
        except StopIteration:
            if not i:
                raise
        return i

    def _empty_label(self):
        # Rows with fewer objects than the label width are padded with -1, as MXNet's.
        return np.full(self.provide_label[0][1], -1, dtype=np.float32)

    def draw_next(self, color=None, thickness=2, mean=None, std=None, clip=True, waitKey=None,
                  window_name="draw_next", id2labels=None):
        """Yields the next images (H, W, 3) uint8, BGR as OpenCV shows them, augmented, with
        their boxes drawn (`color` RGB, random per box when None); mean/std (True: ImageNet's)
        undo a normalisation. With waitKey, each image is shown in an OpenCV window for that
        many milliseconds, and with id2labels the class names are written: both need cv2."""
        cv2 = None
        if waitKey is not None or id2labels is not None:
            try:
                import cv2  # pylint: disable=import-outside-toplevel
            except ImportError as e:
                warnings.warn("ImageDetIter.draw_next: cv2 is not available (%s): images are not shown and class "
                              "names not written" % e)
        std = _check_channel_stats(std, "std", [58.395, 57.12, 57.375])
        mean = _check_channel_stats(mean, "mean", [123.68, 116.28, 103.53])
        bgr = tuple(color[::-1]) if color else None
        while True:
            try:
                data, label = self._next_augmented()
            except StopIteration:
                return
            image = (data.asnumpy() if isinstance(data, NDArray) else np.asarray(data)).astype(np.float64)
            if std is not None:
                image = image * np.asarray(std.asnumpy() if isinstance(std, NDArray) else std)
            if mean is not None:
                image = image + np.asarray(mean.asnumpy() if isinstance(mean, NDArray) else mean)
            image = image[:, :, ::-1]
            if clip:
                image = np.clip(image, 0, 255)
            image = np.ascontiguousarray(image.astype(np.uint8))
            height, width = image.shape[:2]
            for row in label:
                if row[0] < 0:
                    continue
                x1, y1 = int(row[1] * width), int(row[2] * height)
                x2, y2 = int(row[3] * width), int(row[4] * height)
                box_color = bgr if bgr else tuple(int(c) for c in np.random.rand(3) * 255)
                _draw_rectangle(image, x1, y1, x2, y2, box_color, thickness)
                if cv2 is not None and id2labels is not None and int(row[0]) in id2labels:
                    text = "%s" % id2labels[int(row[0])]
                    text_h = cv2.getTextSize(text, cv2.FONT_HERSHEY_SIMPLEX, 0.5, 2)[0][1]
                    cv2.putText(image, text, (x1 + 5, y1 + text_h + 5), cv2.FONT_HERSHEY_SIMPLEX, 0.5,
                                (255, 255, 255), 2)
            if cv2 is not None and waitKey is not None:
                cv2.imshow(window_name, image)
                cv2.waitKey(waitKey)
            yield image


def _draw_rectangle(image, x1, y1, x2, y2, color, thickness):
    """Draws the outline of (x1, y1)-(x2, y2) into image (H, W, 3), `thickness` pixels wide
    inwards, clipped to the image."""
    height, width = image.shape[:2]
    x1, x2 = sorted((x1, x2))
    y1, y2 = sorted((y1, y2))
    t = max(1, int(thickness))
    xa, xb = max(0, x1), min(width, x2 + 1)
    ya, yb = max(0, y1), min(height, y2 + 1)
    if xa >= xb or ya >= yb:
        return
    color = np.asarray(color, dtype=image.dtype)
    image[ya:min(yb, y1 + t), xa:xb] = color
    image[max(ya, y2 + 1 - t):yb, xa:xb] = color
    image[ya:yb, xa:min(xb, x1 + t)] = color
    image[ya:yb, max(xa, x2 + 1 - t):xb] = color
