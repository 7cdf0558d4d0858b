"""Vision datasets of gluon.data, as in MXNet 1.x: MNIST and Fashion-MNIST from local IDX
files, images packed in RecordIO files, and image folders."""
import gzip
import os
import struct
import warnings

import numpy as np

from .... import ndarray as nd
from ..dataset import Dataset, RecordFileDataset, _check_index

__all__ = ["MNIST", "FashionMNIST", "ImageRecordDataset", "ImageFolderDataset"]


def data_dir():
    """MXNet's data folder: $MXNET_HOME, else ~/.mxnet."""
    return os.environ.get("MXNET_HOME", os.path.join(os.path.expanduser("~"), ".mxnet"))


def _read_idx(path, magic, who):
    """The header dims and the uint8 payload of an IDX file (gzip or plain)."""
    opener = gzip.open if path.endswith(".gz") else open
    try:
        with opener(path, "rb") as fin:
            raw = fin.read()
    except (OSError, EOFError) as exc:
        raise ValueError("%s: cannot read '%s': %s" % (who, path, exc)) from None
    ndim = 3 if magic == 2051 else 1
    head = 4 * (1 + ndim)
    if len(raw) < head:
        raise ValueError("%s: '%s' is %d bytes, shorter than its %d-byte IDX header" % (who, path, len(raw), head))
    fields = struct.unpack(">%dI" % (1 + ndim), raw[:head])
    if fields[0] != magic:
        raise ValueError("%s: '%s' is not an IDX %s file: expected magic 0x%08x, got 0x%08x"
                         % (who, path, "image" if ndim == 3 else "label", magic, fields[0]))
    dims = fields[1:]
    expected = int(np.prod(dims))
    if len(raw) - head != expected:
        raise ValueError("%s: '%s' declares shape %s (%d bytes of data) but holds %d bytes"
                         % (who, path, tuple(dims), expected, len(raw) - head))
    return dims, np.frombuffer(raw, dtype=np.uint8, offset=head)


class _DownloadedDataset(Dataset):
    """A dataset held in memory: data (an NDArray) and labels (numpy), with an optional
    transform(data, label)."""

    def __init__(self, root, transform):
        self._root = os.path.expanduser(root)
        self._transform = transform
        self._data = None
        self._label = None
        self._get_data()

    def __getitem__(self, idx):
        idx = _check_index(idx, len(self._label), type(self).__name__)
        if self._transform is not None:
            return self._transform(self._data[idx], self._label[idx])
        return self._data[idx], self._label[idx]

    def __len__(self):
        return len(self._label)

    def _get_data(self):
        raise NotImplementedError("%s must implement _get_data" % type(self).__name__)


class MNIST(_DownloadedDataset):
    """The MNIST digits: samples (image, label), image a (28, 28, 1) uint8 NDArray, label an
    int32 scalar.

    Read from the IDX files under `root` (`train-images-idx3-ubyte.gz` ... as published,
    or the same names without .gz). Weft downloads nothing: the files must be there.
    """

    _files = {True: ("train-images-idx3-ubyte", "train-labels-idx1-ubyte"),
              False: ("t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte")}

    def __init__(self, root=os.path.join(data_dir(), "datasets", "mnist"), train=True, transform=None):
        self._train = train
        super().__init__(root, transform)

    def _find(self, name):
        for candidate in (name + ".gz", name):
            path = os.path.join(self._root, candidate)
            if os.path.isfile(path):
                return path
        raise FileNotFoundError("%s: no '%s' or '%s.gz' under '%s'. Weft does not download data sets: put the "
                                "IDX files there or pass root= (e.g. root='/usr/share/datasets/fashion-mnist' "
                                "for Fashion-MNIST)" % (type(self).__name__, name, name, self._root))

    def _get_data(self):
        who = type(self).__name__
        image_name, label_name = self._files[bool(self._train)]
        image_path, label_path = self._find(image_name), self._find(label_name)
        (count,), labels = _read_idx(label_path, 2049, who)
        (n, rows, cols), pixels = _read_idx(image_path, 2051, who)
        if n != count:
            raise ValueError("%s: '%s' holds %d images but '%s' holds %d labels"
                             % (who, image_path, n, label_path, count))
        self._label = labels.astype(np.int32)
        self._data = nd.array(pixels.reshape(n, rows, cols, 1), dtype=np.uint8)


class FashionMNIST(MNIST):
    """Fashion-MNIST: the MNIST layout and file names, ten classes of clothing.
    Debian's copy is in /usr/share/datasets/fashion-mnist."""

    def __init__(self, root=os.path.join(data_dir(), "datasets", "fashion-mnist"), train=True, transform=None):
        super().__init__(root, train, transform)


class ImageRecordDataset(RecordFileDataset):
    """Images packed in a RecordIO file (with its .idx): samples (image, label), image the
    decoded (H, W, C) uint8 NDArray (flag=0: one grey channel, 1: three colour channels),
    label the record's label (a float, or an array for multi-label records)."""

    def __init__(self, filename, flag=1, transform=None):
        super().__init__(filename)
        self._flag = flag
        self._transform = transform

    def __getitem__(self, idx):
        from .... import image, recordio
        record = super().__getitem__(idx)
        header, img = recordio.unpack(record)
        decoded = image.imdecode(img, self._flag)
        if self._transform is not None:
            return self._transform(decoded, header.label)
        return decoded, header.label


class ImageFolderDataset(Dataset):
    """Images in one folder per class: root/<class>/<image>. Classes are the sorted folder
    names (`synsets`), labelled 0, 1, ...; samples are (image, label) with the image decoded
    as by ImageRecordDataset. Files other than .jpg, .jpeg and .png are skipped with a
    warning."""

    def __init__(self, root, flag=1, transform=None):
        self._root = os.path.expanduser(root)
        self._flag = flag
        self._transform = transform
        self._exts = [".jpg", ".jpeg", ".png"]
        self._list_images(self._root)

    def _list_images(self, root):
        if not os.path.isdir(root):
            raise FileNotFoundError("ImageFolderDataset: '%s' is not a folder" % root)
        self.synsets = []
        self.items = []
        for folder in sorted(os.listdir(root)):
            path = os.path.join(root, folder)
            if not os.path.isdir(path):
                warnings.warn("ImageFolderDataset: ignoring %s, which is not a folder" % path, stacklevel=3)
                continue
            label = len(self.synsets)
            self.synsets.append(folder)
            for filename in sorted(os.listdir(path)):
                filename = os.path.join(path, filename)
                ext = os.path.splitext(filename)[1]
                if ext.lower() not in self._exts:
                    warnings.warn("ImageFolderDataset: ignoring %s of type %s; only %s are supported"
                                  % (filename, ext, ", ".join(self._exts)), stacklevel=3)
                    continue
                self.items.append((filename, label))

    def __getitem__(self, idx):
        from .... import image
        filename, label = self.items[_check_index(idx, len(self.items), "ImageFolderDataset")]
        img = image.imread(filename, self._flag)
        if self._transform is not None:
            return self._transform(img, label)
        return img, label

    def __len__(self):
        return len(self.items)
