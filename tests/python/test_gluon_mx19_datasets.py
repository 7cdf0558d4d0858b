"""CIFAR-10/100 (MXNet 1.9's gluon.data.vision names) read from their binary files, in root,
in the published archive's folder or from the archive itself; absent files are a clear
error (nothing is downloaded)."""
import io
import os
import tarfile

import numpy as np
import pytest

from weft.gluon.data.vision import CIFAR10, CIFAR100


def _records(n, label_bytes, seed):
    rs = np.random.RandomState(seed)
    labels = rs.randint(0, 100, (n, label_bytes)).astype(np.uint8)
    images = rs.randint(0, 256, (n, 3, 32, 32)).astype(np.uint8)
    raw = np.concatenate([labels, images.reshape(n, -1)], axis=1).tobytes()
    return raw, labels, images.transpose(0, 2, 3, 1)


def test_cifar10_train_and_test(tmp_path):
    parts = [_records(3, 1, i) for i in range(6)]
    names = ["data_batch_%d.bin" % i for i in range(1, 6)] + ["test_batch.bin"]
    folder = tmp_path / "cifar-10-batches-bin"
    folder.mkdir()
    for name, (raw, _, _) in zip(names, parts):
        (folder / name).write_bytes(raw)
    train = CIFAR10(root=str(tmp_path))
    assert len(train) == 15
    img, label = train[4]
    np.testing.assert_array_equal(img.asnumpy(), parts[1][2][1])
    assert img.shape == (32, 32, 3) and img.dtype == np.uint8 and label == parts[1][1][1, 0]
    test = CIFAR10(root=str(tmp_path), train=False, transform=lambda d, l: (d.astype("float32") / 255, l + 1))
    img, label = test[2]
    np.testing.assert_allclose(img.asnumpy(), parts[5][2][2] / 255.0, rtol=1e-6)
    assert label == parts[5][1][2, 0] + 1


def test_cifar100_labels_and_archive(tmp_path):
    raw, labels, images = _records(4, 2, 9)
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        info = tarfile.TarInfo("cifar-100-binary/test.bin")
        info.size = len(raw)
        tar.addfile(info, io.BytesIO(raw))
    (tmp_path / "cifar-100-binary.tar.gz").write_bytes(buf.getvalue())
    coarse = CIFAR100(root=str(tmp_path), train=False)
    fine = CIFAR100(root=str(tmp_path), train=False, fine_label=True)
    assert os.path.isfile(str(tmp_path / "cifar-100-binary" / "test.bin"))
    assert [coarse[i][1] for i in range(4)] == list(labels[:, 0])
    assert [fine[i][1] for i in range(4)] == list(labels[:, 1])
    np.testing.assert_array_equal(fine[3][0].asnumpy(), images[3])


def test_missing_and_broken_files(tmp_path):
    with pytest.raises(FileNotFoundError, match="train.bin not found.*does not download"):
        CIFAR100(root=str(tmp_path))
    (tmp_path / "test_batch.bin").write_bytes(bytes(100))
    with pytest.raises(ValueError, match="not a whole number of 3073-byte records"):
        CIFAR10(root=str(tmp_path), train=False)


def test_datasets_module_names_the_modules_scripts_import_from_it(tmp_path):
    # LipNet's loader reads frames with `from mxnet.gluon.data.vision.datasets import image`.
    from weft.gluon.data.vision.datasets import image, dataset, recordio, download, check_sha1
    import weft as mx
    assert image is mx.image and recordio is mx.recordio and dataset is mx.gluon.data.dataset
    assert download is mx.gluon.utils.download and check_sha1 is mx.gluon.utils.check_sha1
    from PIL import Image
    pixels = (np.arange(4 * 6 * 3) * 5 % 256).astype(np.uint8).reshape(4, 6, 3)
    Image.fromarray(pixels).save(str(tmp_path / "f.png"))
    np.testing.assert_array_equal(image.imread(str(tmp_path / "f.png")).asnumpy(), pixels)
