"""Vision datasets of gluon.data, as in MXNet 1.x: MNIST and Fashion-MNIST from local IDX
files, CIFAR-10/100 from their local binary files, images packed in RecordIO files, and image
folders."""
import gzip
import os
import struct
import tarfile
import warnings

import numpy as np

from .... import ndarray as nd
# MXNet's module imports these at its top and scripts import them from it (LipNet's data
# loader: `from mxnet.gluon.data.vision.datasets import image`).
from .... import base, image, recordio  # noqa: F401
from .. import dataset  # noqa: F401
from ...utils import check_sha1, download  # noqa: F401
from ..dataset import Dataset, RecordFileDataset, _check_index

__all__ = ["MNIST", "FashionMNIST", "CIFAR10", "CIFAR100", "ImageRecordDataset", "ImageFolderDataset"]


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
        idx = _check_index(idx, len(self._label), type(self).__name__, allow_slice=True)
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


def _extract(archive, root, who):
    """Unpacks a tar archive into root, refusing members that would land outside it."""
    base = os.path.realpath(root)
    with tarfile.open(archive) as tar:
        members = tar.getmembers()
        for m in members:
            target = os.path.realpath(os.path.join(base, m.name))
            if not (m.isfile() or m.isdir()) or os.path.commonpath([base, target]) != base:
                raise ValueError("%s: '%s' holds '%s', which is not a plain file inside the archive's folder"
                                 % (who, archive, m.name))
        tar.extractall(base, members=members)


class CIFAR10(_DownloadedDataset):
    """CIFAR-10: samples (image, label), image a (32, 32, 3) uint8 NDArray, label an int32.

    Read from the binary version's files (data_batch_1.bin ... data_batch_5.bin,
    test_batch.bin) in `root` or in its `cifar-10-batches-bin` folder (the published
    archive's layout); a `cifar-10-binary.tar.gz` in `root` is unpacked first. Weft
    downloads nothing."""

    _archive = "cifar-10-binary.tar.gz"
    _folder = "cifar-10-batches-bin"
    _train_files = ["data_batch_%d.bin" % i for i in range(1, 6)]
    _test_files = ["test_batch.bin"]
    _label_bytes = 1

    def __init__(self, root=os.path.join(data_dir(), "datasets", "cifar10"), train=True, transform=None):
        self._train = train
        super().__init__(root, transform)

    def _label_column(self):
        return 0

    def _locate(self, names):
        for folder in (self._root, os.path.join(self._root, self._folder)):
            if all(os.path.isfile(os.path.join(folder, n)) for n in names):
                return folder
        return None

    def _get_data(self):
        who = type(self).__name__
        names = self._train_files if self._train else self._test_files
        folder = self._locate(names)
        archive = os.path.join(self._root, self._archive)
        if folder is None and os.path.isfile(archive):
            _extract(archive, self._root, who)
            folder = self._locate(names)
        if folder is None:
            raise FileNotFoundError("%s: %s not found under '%s' (nor in its '%s' folder, nor as %s there). Weft "
                                    "does not download data sets: put the binary CIFAR files there or pass root="
                                    % (who, ", ".join(names), self._root, self._folder, self._archive))
        record = 3072 + self._label_bytes
        images, labels = [], []
        for name in names:
            path = os.path.join(folder, name)
            raw = np.fromfile(path, dtype=np.uint8)
            if raw.size % record:
                raise ValueError("%s: '%s' holds %d bytes, not a whole number of %d-byte records"
                                 % (who, path, raw.size, record))
            rows = raw.reshape(-1, record)
            labels.append(rows[:, self._label_column()].astype(np.int32))
            images.append(rows[:, self._label_bytes:].reshape(-1, 3, 32, 32).transpose(0, 2, 3, 1))
        self._label = np.concatenate(labels)
        self._data = nd.array(np.concatenate(images), dtype=np.uint8)


class CIFAR100(CIFAR10):
    """CIFAR-100 (train.bin, test.bin, in `root` or its `cifar-100-binary` folder): labels
    are the 20 coarse classes, or the 100 fine ones with fine_label=True."""

    _archive = "cifar-100-binary.tar.gz"
    _folder = "cifar-100-binary"
    _train_files = ["train.bin"]
    _test_files = ["test.bin"]
    _label_bytes = 2

    def __init__(self, root=os.path.join(data_dir(), "datasets", "cifar100"), fine_label=False, train=True,
                 transform=None):
        self._fine_label = fine_label
        super().__init__(root, train, transform)

    def _label_column(self):
        return 1 if self._fine_label else 0


class ImageRecordDataset(RecordFileDataset):
    """Images packed in a RecordIO file (with its .idx): samples (image, label), image the
    decoded (H, W, C) uint8 NDArray (flag=0: one grey channel, 1: three colour channels),
    label the record's label (a float, or an array for multi-label records)."""

    def __init__(self, filename, flag=1, transform=None):
        super().__init__(filename)
        self._flag = flag
        self._transform = transform

    def __getitem__(self, idx):
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
