"""weft.gluon.data: datasets, samplers, transforms and the DataLoader against numpy,
torchvision and hand-computed values.

DataLoader worker processes are forked, so what they run may be defined anywhere (lambdas
included); torch is imported only inside the tests that use it.
"""
import gzip
import multiprocessing
import os
import random
import shutil
import struct
import threading
import time
import warnings

import numpy as np
import pytest

import weft
from weft.gluon import data as gdata
from weft.gluon.data.vision import transforms as T

FASHION = "/usr/share/datasets/fashion-mnist"
SYNTH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data", "mxnet", "synthetic")


def _parse_idx_gz(path):
    with gzip.open(path, "rb") as f:
        raw = f.read()
    magic = struct.unpack(">I", raw[:4])[0]
    ndim = magic & 0xFF
    dims = struct.unpack(">%dI" % ndim, raw[4:4 + 4 * ndim])
    return np.frombuffer(raw, np.uint8, offset=4 + 4 * ndim).reshape(dims)


def _run_bounded(fn, seconds):
    """Runs fn in a thread; fails the test if it has not finished after `seconds`."""
    box = {}

    def target():
        try:
            box["value"] = fn()
        except BaseException as exc:  # handed to the test thread
            box["error"] = exc

    t = threading.Thread(target=target, daemon=True)
    t.start()
    t.join(seconds)
    assert not t.is_alive(), "did not finish within %gs" % seconds
    if "error" in box:
        raise box["error"]
    return box.get("value")


# ------------------------------------------------------------------ picklable helpers
class IndexDataset(gdata.Dataset):
    """Sample i is (a float32 vector [i, i + 0.5], the int i)."""

    def __init__(self, n):
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        if not 0 <= i < self.n:
            raise IndexError("IndexDataset: index %d out of range for %d samples" % (i, self.n))
        return np.array([i, i + 0.5], np.float32), i


class DyingDataset(IndexDataset):
    """Kills the process that loads sample 3: a worker crashing."""

    def __getitem__(self, i):
        if i == 3:
            os._exit(7)
        return super().__getitem__(i)


class ListBatchSampler:
    """Yields whatever lists of indices `batches` holds at the start of an epoch."""

    def __init__(self, batches):
        self.batches = batches

    def __iter__(self):
        return iter(list(self.batches))

    def __len__(self):
        return len(self.batches)


def double_first(x):
    return x * 2


def sum_and_list(samples):
    """A custom batchify_fn: the data summed into an NDArray, the labels as a numpy array."""
    data = np.stack([s[0] for s in samples])
    return {"sum": weft.nd.array(data.sum(axis=0)), "labels": np.array([s[1] for s in samples])}


def local_lock_batch(samples):
    """A batchify_fn whose result cannot be pickled."""
    return threading.Lock()


# ------------------------------------------------------------------ datasets
def test_simple_and_array_dataset():
    ds = gdata.SimpleDataset([10, 20, 30])
    assert len(ds) == 3 and ds[1] == 20 and ds[-1] == 30

    x = np.arange(12, dtype=np.float32).reshape(4, 3)
    y = weft.nd.array([5, 6, 7, 8])
    ads = gdata.ArrayDataset(x, y)
    assert len(ads) == 4
    data, label = ads[2]
    np.testing.assert_array_equal(data, x[2])
    # A 1-D NDArray is read as numpy, so its samples are scalars (MXNet's behaviour).
    assert isinstance(label, np.floating) and label == 7
    single = gdata.ArrayDataset(weft.nd.array(x))
    np.testing.assert_array_equal(single[3].asnumpy(), x[3])

    with pytest.raises(ValueError, match="array 0 has 4 samples but array 1 has 2"):
        gdata.ArrayDataset(x, np.zeros(2))
    with pytest.raises(IndexError, match="index 4 is out of range for a dataset of 4 samples"):
        ads[4]
    with pytest.raises(TypeError, match="expected an integer index, got 'a'"):
        ads["a"]
    with pytest.raises(IndexError, match="SimpleDataset: index -4"):
        ds[-4]


def test_dataset_transform_filter_take_shard():
    ads = gdata.ArrayDataset(np.arange(10), np.arange(10) * 10)
    lazy = ads.transform(lambda d, l: (d + 1, l - 1))
    assert lazy[3] == (4, 29)
    eager = ads.transform(lambda d, l: d * l, lazy=False)
    assert isinstance(eager, gdata.SimpleDataset) and [eager[i] for i in range(10)] == [i * i * 10 for i in range(10)]
    first = ads.transform_first(double_first)
    assert first[4] == (8, 40)
    plain = gdata.SimpleDataset([1, 2, 3]).transform_first(double_first)
    assert plain[2] == 6

    evens = ads.filter(lambda s: s[0] % 2 == 0)
    assert len(evens) == 5 and [evens[i][0] for i in range(5)] == [0, 2, 4, 6, 8]
    assert [ads.take(3)[i][0] for i in range(3)] == [0, 1, 2]
    assert len(ads.take(None)) == 10 and len(ads.take(50)) == 10
    sampled = ads.sample(gdata.SequentialSampler(3, start=5))
    assert [sampled[i][1] for i in range(3)] == [50, 60, 70]

    # 10 samples in 3 shards: sizes 4, 3, 3, contiguous and adding up to the whole.
    shards = [ads.shard(3, k) for k in range(3)]
    assert [len(s) for s in shards] == [4, 3, 3]
    assert [s[i][0] for s in shards for i in range(len(s))] == list(range(10))
    with pytest.raises(ValueError, match="0 <= index < num_shards=3, got 3"):
        ads.shard(3, 3)
    with pytest.raises(IndexError, match="index 3 is out of range for a dataset of 3"):
        shards[1][3]


def test_fashion_mnist_matches_numpy_parse():
    if not os.path.isdir(FASHION):
        pytest.skip("Fashion-MNIST is not installed in " + FASHION)
    test_images = _parse_idx_gz(os.path.join(FASHION, "t10k-images-idx3-ubyte.gz"))
    test_labels = _parse_idx_gz(os.path.join(FASHION, "t10k-labels-idx1-ubyte.gz"))
    ds = gdata.vision.FashionMNIST(root=FASHION, train=False)
    assert len(ds) == 10000
    img, label = ds[123]
    assert isinstance(img, weft.nd.NDArray) and img.shape == (28, 28, 1) and img.dtype == np.uint8
    assert isinstance(label, np.int32) and label == test_labels[123]
    np.testing.assert_array_equal(img.asnumpy()[:, :, 0], test_images[123])
    # The whole set, through a DataLoader: every image and label equal to the parse.
    (images, labels), = list(gdata.DataLoader(ds, batch_size=10000))
    np.testing.assert_array_equal(images.asnumpy()[..., 0], test_images)
    np.testing.assert_array_equal(labels.asnumpy(), test_labels)

    train = gdata.vision.FashionMNIST(root=FASHION, train=True, transform=lambda d, l: (d.astype("float32"), l + 100))
    train_labels = _parse_idx_gz(os.path.join(FASHION, "train-labels-idx1-ubyte.gz"))
    assert len(train) == 60000
    img, label = train[59999]
    assert img.dtype == np.float32 and label == train_labels[59999] + 100


def test_mnist_plain_idx_files_and_errors(tmp_path):
    shutil.copy(os.path.join(SYNTH, "tiny-images-idx3-ubyte"), tmp_path / "t10k-images-idx3-ubyte")
    shutil.copy(os.path.join(SYNTH, "tiny-labels-idx1-ubyte"), tmp_path / "t10k-labels-idx1-ubyte")
    ds = gdata.vision.MNIST(root=str(tmp_path), train=False)
    assert len(ds) == 20
    y, x = np.mgrid[0:28, 0:28]
    for i in (0, 7, 19):
        img, label = ds[i]
        np.testing.assert_array_equal(img.asnumpy()[:, :, 0], (3 * y + 5 * x + 11 * i) % 256)
        assert label == i % 10

    with pytest.raises(FileNotFoundError, match="no 'train-images-idx3-ubyte' or 'train-images-idx3-ubyte.gz'"):
        gdata.vision.MNIST(root=str(tmp_path), train=True)
    raw = (tmp_path / "t10k-labels-idx1-ubyte").read_bytes()
    (tmp_path / "t10k-labels-idx1-ubyte").write_bytes(raw[:-3])
    with pytest.raises(ValueError, match=r"declares shape \(20,\) \(20 bytes of data\) but holds 17 bytes"):
        gdata.vision.MNIST(root=str(tmp_path), train=False)
    (tmp_path / "t10k-labels-idx1-ubyte").write_bytes(struct.pack(">I", 2051) + raw[4:])
    with pytest.raises(ValueError, match="expected magic 0x00000801, got 0x00000803"):
        gdata.vision.MNIST(root=str(tmp_path), train=False)


def test_record_file_dataset_reads_fixture():
    expected = __import__("json").load(open(os.path.join(SYNTH, "expected.json")))["tiny.rec"]
    ds = gdata.RecordFileDataset(os.path.join(SYNTH, "tiny.rec"))
    assert len(ds) == len(expected) == 4
    for i, rec in enumerate(expected):
        assert ds[i] == bytes.fromhex(rec["record_hex"])
    with pytest.raises(IndexError, match="RecordFileDataset: index 4 is out of range"):
        ds[4]
    with pytest.raises(FileNotFoundError, match="no such file: '.*missing.rec'"):
        gdata.RecordFileDataset(os.path.join(SYNTH, "missing.rec"))


def _png(array):
    import io
    Image = pytest.importorskip("PIL.Image")
    buf = io.BytesIO()
    Image.fromarray(array).save(buf, format="PNG")
    return buf.getvalue()


def test_image_record_dataset(tmp_path):
    from weft import recordio
    images = [_image(5, 7, seed=s) for s in range(3)]
    rec_path, idx_path = str(tmp_path / "imgs.rec"), str(tmp_path / "imgs.idx")
    writer = recordio.MXIndexedRecordIO(idx_path, rec_path, "w")
    for i, img in enumerate(images):
        label = float(i) + 0.5 if i < 2 else np.array([1.0, 2.0, 3.0], np.float32)
        writer.write_idx(i, recordio.pack(recordio.IRHeader(0, label, i, 0), _png(img)))
    writer.close()

    ds = gdata.vision.ImageRecordDataset(rec_path)
    assert len(ds) == 3
    img, label = ds[1]
    assert isinstance(img, weft.nd.NDArray) and img.shape == (5, 7, 3) and img.dtype == np.uint8
    np.testing.assert_array_equal(img.asnumpy(), images[1])
    assert label == 1.5
    np.testing.assert_array_equal(ds[2][1], [1.0, 2.0, 3.0])
    tensor_ds = gdata.vision.ImageRecordDataset(rec_path, transform=lambda d, l: (T.ToTensor()(d), l * 2))
    data, label = tensor_ds[0]
    np.testing.assert_allclose(data.asnumpy(), images[0].transpose(2, 0, 1) / np.float32(255), atol=1e-7)
    assert label == 1.0
    # Through worker processes: the dataset reopens its file there.
    loader = gdata.DataLoader(ds.take(2), batch_size=2, num_workers=1, timeout=20)
    (batch, labels), = _run_bounded(lambda: list(loader), 60)
    np.testing.assert_array_equal(batch.asnumpy(), np.stack(images[:2]))
    np.testing.assert_array_equal(labels.asnumpy(), [0.5, 1.5])
    loader.close()


@pytest.mark.filterwarnings("ignore:ImageFolderDataset")
def test_image_folder_dataset(tmp_path):
    cats = [_image(4, 6, seed=10), _image(6, 4, seed=11)]
    dog = np.random.RandomState(12).randint(0, 256, size=(3, 5)).astype(np.uint8)
    (tmp_path / "cat").mkdir()
    (tmp_path / "dog").mkdir()
    (tmp_path / "cat" / "a.png").write_bytes(_png(cats[0]))
    (tmp_path / "cat" / "b.PNG").write_bytes(_png(cats[1]))
    (tmp_path / "dog" / "c.png").write_bytes(_png(dog))
    (tmp_path / "dog" / "notes.txt").write_text("not an image")
    (tmp_path / "README").write_text("not a class")
    with pytest.warns(UserWarning, match="ignoring .*notes.txt of type .txt"):
        ds = gdata.vision.ImageFolderDataset(str(tmp_path))
    assert ds.synsets == ["cat", "dog"] and len(ds) == 3
    assert [(os.path.basename(f), l) for f, l in ds.items] == [("a.png", 0), ("b.PNG", 0), ("c.png", 1)]
    img, label = ds[1]
    assert label == 0
    np.testing.assert_array_equal(img.asnumpy(), cats[1])
    grey = gdata.vision.ImageFolderDataset(str(tmp_path), flag=0, transform=lambda d, l: (d.shape, l))
    assert grey[2] == ((3, 5, 1), 1)
    np.testing.assert_array_equal(gdata.vision.ImageFolderDataset(str(tmp_path), flag=0)[2][0].asnumpy()[..., 0], dog)
    with pytest.raises(FileNotFoundError, match="is not a folder"):
        gdata.vision.ImageFolderDataset(str(tmp_path / "nope"))


# ------------------------------------------------------------------ samplers
def test_samplers_exact_sequences():
    assert list(gdata.SequentialSampler(5)) == [0, 1, 2, 3, 4]
    assert list(gdata.SequentialSampler(3, start=4)) == [4, 5, 6]
    np.random.seed(3)
    order = list(gdata.RandomSampler(10))
    np.random.seed(3)
    expected = np.arange(10)
    np.random.shuffle(expected)
    assert order == expected.tolist() and sorted(order) == list(range(10))
    assert list(gdata.IntervalSampler(7, 3)) == [0, 3, 6, 1, 4, 2, 5]
    assert list(gdata.IntervalSampler(7, 3, rollover=False)) == [0, 3, 6]

    seq = gdata.SequentialSampler(7)
    keep = gdata.BatchSampler(seq, 3, "keep")
    assert len(keep) == 3 and list(keep) == [[0, 1, 2], [3, 4, 5], [6]]
    discard = gdata.BatchSampler(seq, 3, "discard")
    assert len(discard) == 2 and list(discard) == [[0, 1, 2], [3, 4, 5]]
    roll = gdata.BatchSampler(seq, 3, "rollover")
    assert len(roll) == 2
    assert list(roll) == [[0, 1, 2], [3, 4, 5]]
    # The leftover 6 opens the next epoch: 8 indices make two full batches, 2 roll over.
    assert len(roll) == 2
    assert list(roll) == [[6, 0, 1], [2, 3, 4]]
    # 5 and 6 left over: 9 indices, three full batches, nothing left.
    assert len(roll) == 3
    assert list(roll) == [[5, 6, 0], [1, 2, 3], [4, 5, 6]]
    assert len(roll) == 2 and list(roll) == [[0, 1, 2], [3, 4, 5]]
    with pytest.raises(ValueError, match="last_batch must be one of 'keep', 'discard', 'rollover', got 'pad'"):
        gdata.BatchSampler(seq, 3, "pad")
    with pytest.raises(ValueError, match="batch_size to be an integer >= 1, got 0"):
        gdata.BatchSampler(seq, 0)


# ------------------------------------------------------------------ transforms
def _image(h=6, w=8, c=3, seed=0):
    return np.random.RandomState(seed).randint(0, 256, size=(h, w, c)).astype(np.uint8)


def test_to_tensor_normalize_cast_compose_vs_torchvision():
    torch = pytest.importorskip("torch")
    tvt = pytest.importorskip("torchvision.transforms")
    img = _image()
    ref = tvt.ToTensor()(img).numpy()
    out = T.ToTensor()(weft.nd.array(img))
    assert isinstance(out, weft.nd.NDArray) and out.dtype == np.float32 and out.shape == (3, 6, 8)
    np.testing.assert_allclose(out.asnumpy(), ref, rtol=0, atol=1e-7)
    batch = np.stack([img, _image(seed=1)])
    np.testing.assert_allclose(T.ToTensor()(batch)[1], tvt.ToTensor()(batch[1]).numpy(), atol=1e-7)

    mean, std = (0.1, 0.2, 0.3), (0.5, 0.25, 2.0)
    ref_norm = tvt.Normalize(mean, std)(torch.from_numpy(ref)).numpy()
    np.testing.assert_allclose(T.Normalize(mean, std)(out).asnumpy(), ref_norm, rtol=1e-6, atol=1e-6)
    composed = T.Compose([T.ToTensor(), T.Normalize(mean, std)])
    np.testing.assert_allclose(composed(img), tvt.Compose([tvt.ToTensor(), tvt.Normalize(mean, std)])(img).numpy(),
                               rtol=1e-6, atol=1e-6)
    # One value for every channel.
    np.testing.assert_allclose(T.Normalize(0.5, 0.5)(ref), (ref - 0.5) / 0.5, rtol=1e-6)

    cast = T.Cast("float16")(weft.nd.array(img))
    assert cast.dtype == np.float16
    np.testing.assert_array_equal(cast.asnumpy(), img.astype(np.float16))
    assert T.Cast()(img).dtype == np.float32


def test_transform_input_errors():
    with pytest.raises(ValueError, match=r"ToTensor: expected data of shape \(H, W, C\) or \(N, H, W, C\), "
                                         r"got shape \(28, 28\)"):
        T.ToTensor()(np.zeros((28, 28), np.uint8))
    with pytest.raises(ValueError, match="mean has 2 values but the data has 3 channels"):
        T.Normalize((0.1, 0.2), 1.0)(np.zeros((3, 4, 4), np.float32))
    with pytest.raises(TypeError, match="expected float data \\(apply ToTensor first\\), got uint8"):
        T.Normalize()(np.zeros((3, 4, 4), np.uint8))
    with pytest.raises(TypeError, match="expected an NDArray or a numpy array, got list"):
        T.Resize(4)([[1, 2]])
    with pytest.raises(ValueError, match=r"RandomResizedCrop: expected data of shape \(H, W, C\), got shape"):
        T.RandomResizedCrop(4)(np.zeros((2, 5, 5, 3), np.uint8))


def _torch_bilinear(img, height, width):
    import torch
    t = torch.from_numpy(np.ascontiguousarray(img.transpose(2, 0, 1)[None]).astype(np.float64))
    out = torch.nn.functional.interpolate(t, size=(height, width), mode="bilinear", align_corners=False)
    return out[0].numpy().transpose(1, 2, 0)


def test_resize_vs_torch_bilinear():
    pytest.importorskip("torch")
    img = _image(7, 10)
    fimg = img.astype(np.float32) / 7
    for width, height in ((5, 3), (16, 11), (10, 4)):
        ref = _torch_bilinear(fimg, height, width)
        out = T.Resize((width, height))(weft.nd.array(fimg))
        assert out.shape == (height, width, 3) and out.dtype == np.float32
        np.testing.assert_allclose(out.asnumpy(), ref, rtol=1e-5, atol=1e-5)
        out8 = T.Resize((width, height))(img)
        assert out8.dtype == np.uint8
        assert np.abs(out8.astype(np.int64) - np.floor(_torch_bilinear(img, height, width) + 0.5)).max() <= 1
    # keep_ratio: the short side (height 7) becomes 14, the long side 10 * 14 // 7 = 20.
    assert T.Resize(14, keep_ratio=True)(img).shape == (14, 20, 3)
    assert T.Resize(14)(img).shape == (14, 14, 3)
    batch = np.stack([fimg, fimg[::-1]])
    np.testing.assert_allclose(T.Resize((5, 3))(batch)[1], _torch_bilinear(fimg[::-1], 3, 5), rtol=1e-5, atol=1e-5)
    # Nearest: source index floor(dst * src / dst_size).
    near = T.Resize((4, 3), interpolation=0)(img)
    np.testing.assert_array_equal(near, img[[0, 2, 4]][:, [0, 2, 5, 7]])


def test_center_crop_and_random_resized_crop():
    pytest.importorskip("torch")
    img = _image(9, 12)
    # 12 x 9 image, 5 x 4 crop: x0 = int(7 / 2) = 3, y0 = int(5 / 2) = 2.
    np.testing.assert_array_equal(T.CenterCrop((5, 4))(img), img[2:6, 3:8])
    np.testing.assert_array_equal(T.CenterCrop(3)(weft.nd.array(img)).asnumpy(), img[3:6, 4:7])
    # Larger than the image: the largest centred 9 x 9 region, resized up to 18 x 18.
    big = T.CenterCrop(18)(img.astype(np.float32))
    np.testing.assert_allclose(big, _torch_bilinear(img[:, 1:10].astype(np.float32), 18, 18), rtol=1e-5, atol=1e-4)

    fimg = img.astype(np.float32)
    # The whole image at its own aspect ratio: a plain resize.
    whole = T.RandomResizedCrop((6, 4), scale=(1.0, 1.0), ratio=(12 / 9, 12 / 9))(fimg)
    np.testing.assert_allclose(whole, _torch_bilinear(fimg, 4, 6), rtol=1e-5, atol=1e-4)
    # Replaying the draws of Python's generator gives the crop box.
    rrc = T.RandomResizedCrop((5, 5), scale=(0.3, 0.6), ratio=(0.8, 1.25))
    random.seed(11)
    out = rrc(fimg)
    random.seed(11)
    area = random.uniform(0.3, 0.6) * 108
    aspect = np.exp(random.uniform(np.log(0.8), np.log(1.25)))
    w, h = int(round(np.sqrt(area * aspect))), int(round(np.sqrt(area / aspect)))
    assert w <= 12 and h <= 9
    x0, y0 = random.randint(0, 12 - w), random.randint(0, 9 - h)
    np.testing.assert_allclose(out, _torch_bilinear(fimg[y0:y0 + h, x0:x0 + w], 5, 5), rtol=1e-5, atol=1e-4)


def test_random_flip_left_right():
    img = _image(4, 5)
    random.seed(5)
    outs = [T.RandomFlipLeftRight()(weft.nd.array(img)).asnumpy() for _ in range(20)]
    random.seed(5)
    coins = [random.random() < 0.5 for _ in range(20)]
    assert 0 < sum(coins) < 20
    for out, flip in zip(outs, coins):
        np.testing.assert_array_equal(out, img[:, ::-1] if flip else img)
    random.seed(1)
    batch = T.RandomFlipLeftRight()(np.stack([img] * 6))
    random.seed(1)
    for out in batch:
        np.testing.assert_array_equal(out, img[:, ::-1] if random.random() < 0.5 else img)


# ------------------------------------------------------------------ DataLoader
def _labels_of(loader):
    return np.concatenate([batch[1].asnumpy() for batch in loader]).tolist()


def test_dataloader_same_thread():
    ds = IndexDataset(10)
    loader = gdata.DataLoader(ds, batch_size=4)
    batches = list(loader)
    assert len(loader) == 3 and [b[0].shape for b in batches] == [(4, 2), (4, 2), (2, 2)]
    assert isinstance(batches[0][0], weft.nd.NDArray) and batches[0][0].dtype == np.float32
    np.testing.assert_array_equal(batches[2][0].asnumpy(), [[8, 8.5], [9, 9.5]])
    assert batches[2][1].dtype == np.int64
    assert _labels_of(loader) == list(range(10))
    np.random.seed(0)
    shuffled = _labels_of(gdata.DataLoader(ds, batch_size=3, shuffle=True))
    assert sorted(shuffled) == list(range(10)) and shuffled != list(range(10))
    assert len(gdata.DataLoader(ds, batch_size=4, last_batch="discard")) == 2
    assert _labels_of(gdata.DataLoader(ds, batch_size=4, last_batch="discard")) == list(range(8))
    roll = gdata.DataLoader(ds, batch_size=4, last_batch="rollover")
    assert _labels_of(roll) == list(range(8)) and _labels_of(roll) == [8, 9] + list(range(10))

    custom = list(gdata.DataLoader(ds, batch_size=5, batchify_fn=sum_and_list))
    assert isinstance(custom[0]["labels"], np.ndarray) and custom[1]["labels"].tolist() == [5, 6, 7, 8, 9]
    np.testing.assert_array_equal(custom[1]["sum"].asnumpy(), [35, 37.5])

    pinned = next(iter(gdata.DataLoader(ds, batch_size=2, pin_memory=True)))
    assert pinned[0].context == weft.cpu_pinned(0)

    with pytest.raises(ValueError, match="batch_size must be specified unless batch_sampler is specified"):
        gdata.DataLoader(ds)
    with pytest.raises(ValueError, match="shuffle must not be specified if sampler is specified"):
        gdata.DataLoader(ds, batch_size=2, shuffle=True, sampler=gdata.SequentialSampler(10))
    with pytest.raises(ValueError, match="must not be specified if batch_sampler is specified"):
        gdata.DataLoader(ds, batch_size=2, batch_sampler=ListBatchSampler([[0]]))
    with pytest.raises(IndexError, match="index 10 out of range"):
        list(gdata.DataLoader(ds, batch_sampler=ListBatchSampler([[0, 10]])))
    with pytest.raises(ValueError, match="sample 0 has shape \\(2,\\) but sample 1 has shape \\(3,\\)"):
        gdata.default_batchify_fn([weft.nd.zeros((2,)), weft.nd.zeros((3,))])


@pytest.mark.parametrize("thread_pool", [False, True])
def test_dataloader_workers(thread_pool):
    ds = IndexDataset(23).transform_first(double_first)
    sampler = ListBatchSampler([list(range(i, min(i + 4, 23))) for i in range(0, 23, 4)])
    loader = gdata.DataLoader(ds, batch_sampler=sampler, num_workers=2, thread_pool=thread_pool, timeout=20)

    def check_epochs():
        for _ in range(2):
            batches = list(loader)
            labels = np.concatenate([b[1].asnumpy() for b in batches])
            assert labels.tolist() == list(range(23))
            data = np.concatenate([b[0].asnumpy() for b in batches])
            np.testing.assert_array_equal(data, 2 * np.stack([np.arange(23), np.arange(23) + 0.5], axis=1))
        # Abandoned midway, twice; the next full epoch still gets everything once.
        it = iter(loader)
        next(it)
        del it
        it = iter(loader)
        next(it)
        next(it)
        assert _labels_of(loader) == list(range(23))
        del it
        # A shuffled order: every sample exactly once.
        sampler.batches = [list(b) for b in np.random.RandomState(2).permutation(23).reshape(-1, 1)]
        assert sorted(_labels_of(loader)) == list(range(23))
        # A bad index fails in a worker and is raised here with its own type and message.
        sampler.batches = [[0, 1], [5, 30], [2]]
        with pytest.raises(IndexError, match="index 30 out of range for 23 samples"):
            list(loader)
        sampler.batches = [[4, 3], [22]]
        assert _labels_of(loader) == [4, 3, 22]

    _run_bounded(check_epochs, 60)
    loader.close()


class SlowDataset(IndexDataset):
    def __getitem__(self, i):
        time.sleep(0.5 if i == 1 else 0)
        return super().__getitem__(i)


def test_dataloader_thread_pool_prefetch_and_timeout():
    ds = IndexDataset(9)
    for prefetch in (0, 1, 5):
        loader = gdata.DataLoader(ds, batch_size=2, num_workers=2, thread_pool=True, prefetch=prefetch)
        assert len(loader) == 5 and _labels_of(loader) == list(range(9))
        loader.close()
    slow = gdata.DataLoader(SlowDataset(4), batch_size=1, num_workers=1, thread_pool=True, timeout=0.1)
    it = iter(slow)
    assert next(it)[1].asnumpy().tolist() == [0]
    with pytest.raises(multiprocessing.TimeoutError, match="no batch from the worker threads within timeout=0.1s"):
        next(it)
    slow.close()


@pytest.mark.parametrize("thread_pool", [False, True])
def test_dataloader_worker_batches_on_cpu_shared(thread_pool):
    # As in MXNet 1.9.1, workers (threads too) collate with default_mp_batchify_fn: batches of
    # numpy samples and of NDArray samples both come back on cpu_shared, with their values.
    for ds in (IndexDataset(7), IndexDataset(7).transform(lambda x, y: (weft.nd.array(x), y))):
        loader = gdata.DataLoader(ds, batch_size=3, num_workers=2, thread_pool=thread_pool, timeout=20)
        batches = _run_bounded(lambda: list(loader), 60)
        assert [len(b[0]) for b in batches] == [3, 3, 1]
        for k, (data, label) in enumerate(batches):
            assert data.context == weft.cpu_shared(0) and label.context == weft.cpu_shared(0)
            idx = np.arange(3 * k, min(3 * k + 3, 7))
            np.testing.assert_array_equal(data.asnumpy(), np.stack([idx, idx + 0.5], axis=1).astype(np.float32))
            assert label.asnumpy().tolist() == idx.tolist()
        loader.close()
    # A batchify_fn of the user's collates as it likes, here on cpu.
    loader = gdata.DataLoader(IndexDataset(4), batch_size=2, num_workers=1, thread_pool=True,
                              batchify_fn=gdata.default_batchify_fn)
    assert all(b[0].context == weft.cpu(0) for b in loader)
    loader.close()


def test_dataloader_worker_processes_custom_batchify_and_crash():
    ds = IndexDataset(12)
    loader = gdata.DataLoader(ds, batch_size=5, batchify_fn=sum_and_list, num_workers=2, timeout=20)
    batches = _run_bounded(lambda: list(loader), 60)
    assert [sorted(b) for b in batches] == [["labels", "sum"]] * 3
    assert isinstance(batches[2]["labels"], np.ndarray) and batches[2]["labels"].tolist() == [10, 11]
    assert isinstance(batches[1]["sum"], weft.nd.NDArray)
    np.testing.assert_array_equal(batches[1]["sum"].asnumpy(), [35, 37.5])
    loader.close()

    # A batch that cannot travel back is an error of that batch, not a wait for the timeout.
    unpicklable = gdata.DataLoader(ds, batch_size=6, batchify_fn=local_lock_batch, num_workers=1, timeout=20)
    with pytest.raises(TypeError, match="cannot pickle '_thread.lock' object"):
        _run_bounded(lambda: list(unpicklable), 60)
    unpicklable.close()

    dying = gdata.DataLoader(DyingDataset(8), batch_size=2, num_workers=1, timeout=20)
    with pytest.raises(RuntimeError, match="exited unexpectedly with code 7"):
        _run_bounded(lambda: list(dying), 60)
    dying.close()


def test_dataloader_forked_workers_take_lambdas():
    # Nothing is pickled to forked workers: a lambda transform runs in the worker processes.
    ds = gdata.SimpleDataset(list(range(6))).transform(lambda x: (np.float32(x + 1), os.getpid()))
    loader = gdata.DataLoader(ds, batch_size=4, num_workers=2, timeout=20)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        batches = _run_bounded(lambda: list(loader), 30)
    assert not [w for w in caught if "pickle" in str(w.message)]
    np.testing.assert_array_equal(batches[1][0].asnumpy(), [5, 6])
    pids = set(np.concatenate([b[1].asnumpy() for b in batches]).tolist())
    assert os.getpid() not in pids
    loader.close()
