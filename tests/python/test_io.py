"""weft.io: NDArrayIter's last_batch_handle modes against hand-computed batches, ResizeIter,
PrefetchingIter, and the C++ iterators (MNISTIter, CSVIter, LibSVMIter) through the DataIter
C API: each sample once per epoch, sharding, pad counts, values against numpy parses, and
every error path."""
import gzip
import os
import struct
import subprocess
import sys

import numpy as np
import pytest

import weft as mx
from weft.base import _api

HERE = os.path.dirname(os.path.abspath(__file__))
SYN = os.path.join(HERE, "..", "data", "mxnet", "synthetic")
TINY_IMG = os.path.join(SYN, "tiny-images-idx3-ubyte")
TINY_LAB = os.path.join(SYN, "tiny-labels-idx1-ubyte")
FASHION = "/usr/share/datasets/fashion-mnist"


def tiny_pixels():
    i, y, x = np.meshgrid(np.arange(20), np.arange(28), np.arange(28), indexing="ij")
    return ((3 * y + 5 * x + 11 * i) % 256).astype(np.float32) / 256.0


def parse_idx(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as f:
        raw = f.read()
    ndim = raw[3]
    dims = struct.unpack(">" + "I" * ndim, raw[4:4 + 4 * ndim])
    return np.frombuffer(raw, dtype=np.uint8, offset=4 + 4 * ndim).reshape(dims)


def batches(it):
    return [(b.data[0].asnumpy(), b.label[0].asnumpy() if b.label else None, b.pad) for b in it]


# ------------------------------------------------------------------ DataDesc / DataBatch
def test_datadesc_and_databatch():
    d = mx.io.DataDesc("data", (4, 3), np.float32, "NCHW")
    assert d.name == "data" and d.shape == (4, 3) and d.dtype == np.float32 and d.layout == "NCHW"
    assert d == ("data", (4, 3))
    assert mx.io.DataDesc.get_batch_axis("TNC") == 1
    assert mx.io.DataDesc.get_batch_axis(None) == 0
    descs = mx.io.DataDesc.get_list([("a", (2,)), ("b", (3,))], [("a", np.int32), ("b", np.float64)])
    assert [(x.name, x.shape, x.dtype) for x in descs] == [("a", (2,), np.int32), ("b", (3,), np.float64)]
    b = mx.io.DataBatch([mx.nd.zeros((2, 3))], [mx.nd.zeros((2,))], pad=1)
    assert b.pad == 1 and b.index is None
    assert "data shapes: [(2, 3)]" in str(b)
    with pytest.raises(TypeError, match="list of NDArrays"):
        mx.io.DataBatch(mx.nd.zeros((2,)))


# ------------------------------------------------------------------ NDArrayIter
def make_data(n=10):
    data = np.arange(n * 2, dtype=np.float32).reshape(n, 2)
    label = np.arange(n, dtype=np.float32)
    return data, label


def test_ndarrayiter_pad():
    data, label = make_data()
    it = mx.io.NDArrayIter(data, label, batch_size=4, last_batch_handle="pad")
    assert it.provide_data == [("data", (4, 2))] and it.provide_label == [("softmax_label", (4,))]
    got = batches(it)
    assert [g[1].tolist() for g in got] == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9, 0, 1]]
    assert [g[2] for g in got] == [0, 0, 2]
    np.testing.assert_array_equal(got[2][0], data[[8, 9, 0, 1]])
    it.reset()
    assert [g[1].tolist() for g in batches(it)] == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9, 0, 1]]


def test_ndarrayiter_discard():
    data, label = make_data()
    it = mx.io.NDArrayIter(data, label, batch_size=4, last_batch_handle="discard")
    got = batches(it)
    assert [g[1].tolist() for g in got] == [[0, 1, 2, 3], [4, 5, 6, 7]]
    assert [g[2] for g in got] == [0, 0]
    it.reset()
    assert len(batches(it)) == 2


def test_ndarrayiter_roll_over():
    data, label = make_data()
    it = mx.io.NDArrayIter(data, label, batch_size=4, last_batch_handle="roll_over")
    # Epoch 1: 8 and 9 do not fill a batch; they start epoch 2 (pad of that batch = 2, as MXNet).
    assert [g[1].tolist() for g in batches(it)] == [[0, 1, 2, 3], [4, 5, 6, 7]]
    # Epoch 2 (hand-computed): cursor -2 gives the cached [8, 9] + [0, 1] (pad 2, as MXNet
    # counts the cached samples), then cursor 2 -> [2..5], cursor 6 -> [6..9] (full).
    it.reset()
    got = batches(it)
    assert [g[1].tolist() for g in got] == [[8, 9, 0, 1], [2, 3, 4, 5], [6, 7, 8, 9]]
    assert [g[2] for g in got] == [2, 0, 0]
    np.testing.assert_array_equal(got[0][0], data[[8, 9, 0, 1]])
    # Epoch 2 ended on a full batch: epoch 3 starts from 0 and caches [8, 9] again.
    it.reset()
    assert [g[1].tolist() for g in batches(it)] == [[0, 1, 2, 3], [4, 5, 6, 7]]
    it.reset()
    assert batches(it)[0][1].tolist() == [8, 9, 0, 1]
    # hard_reset forgets the cached samples.
    batches(it)
    it.hard_reset()
    assert [g[1].tolist() for g in batches(it)] == [[0, 1, 2, 3], [4, 5, 6, 7]]


def test_ndarrayiter_shuffle_each_sample_once_and_dict_list_inputs():
    np.random.seed(7)
    data, label = make_data(12)
    it = mx.io.NDArrayIter({"b": data, "a": data * 10}, {"y": label}, batch_size=3, shuffle=True)
    assert [d.name for d in it.provide_data] == ["a", "b"]  # a dict is sorted by name
    for _ in range(2):
        seen = []
        for b in it:
            a, bb, y = b.data[0].asnumpy(), b.data[1].asnumpy(), b.label[0].asnumpy()
            np.testing.assert_array_equal(a, bb * 10)
            np.testing.assert_array_equal(bb[:, 0], y * 2)  # rows stay aligned with labels
            seen += y.tolist()
        assert sorted(seen) == list(range(12))
        it.reset()
    lst = mx.io.NDArrayIter([data, data + 1], batch_size=12)
    assert [d.name for d in lst.provide_data] == ["_0_data", "_1_data"]
    assert lst.provide_label == []
    b = lst.next()
    assert b.label == []
    np.testing.assert_array_equal(b.data[1].asnumpy(), data + 1)
    nd_in = mx.io.NDArrayIter(mx.nd.array(data), batch_size=5, last_batch_handle="discard")
    assert [x.data[0].shape for x in nd_in] == [(5, 2), (5, 2)]


def test_ndarrayiter_errors():
    data, label = make_data()
    with pytest.raises(ValueError, match="last_batch_handle"):
        mx.io.NDArrayIter(data, label, last_batch_handle="wrap")
    with pytest.raises(ValueError, match="at least as many samples"):
        mx.io.NDArrayIter(data, label[:5])
    with pytest.raises(TypeError, match="must be an NDArray"):
        mx.io.NDArrayIter("not data")
    with pytest.raises(ValueError, match="batch_size"):
        mx.io.NDArrayIter(data, batch_size=0)
    with pytest.raises(ValueError, match="data must be given"):
        mx.io.NDArrayIter(None)


# ------------------------------------------------------------------ ResizeIter / PrefetchingIter
def test_resizeiter_lengthens_and_shortens():
    data, label = make_data()
    base = mx.io.NDArrayIter(data, label, batch_size=4, last_batch_handle="discard")
    r = mx.io.ResizeIter(base, 5)
    assert [b.label[0].asnumpy()[0] for b in r] == [0, 4, 0, 4, 0]
    r.reset()
    assert len(list(r)) == 5
    short = mx.io.ResizeIter(mx.io.NDArrayIter(data, label, batch_size=2), 2)
    assert [b.label[0].asnumpy().tolist() for b in short] == [[0, 1], [2, 3]]
    with pytest.raises(ValueError, match="size must be positive"):
        mx.io.ResizeIter(base, 0)


def test_prefetchingiter_joins_and_renames():
    data, label = make_data(8)
    a = mx.io.NDArrayIter(data, label, batch_size=4)
    b = mx.io.NDArrayIter(data * 2, label, batch_size=4)
    p = mx.io.PrefetchingIter([a, b], rename_data=[{"data": "x"}, {"data": "z"}])
    assert [d.name for d in p.provide_data] == ["x", "z"]
    assert p.batch_size == 4
    for epoch in range(2):
        got = list(p)
        assert len(got) == 2
        for i, batch in enumerate(got):
            np.testing.assert_array_equal(batch.data[0].asnumpy(), data[4 * i:4 * i + 4])
            np.testing.assert_array_equal(batch.data[1].asnumpy(), 2 * data[4 * i:4 * i + 4])
            assert len(batch.label) == 2
        p.reset()
    p.close()


def test_prefetchingiter_reraises_errors():
    class Broken(mx.io.DataIter):
        provide_data = [mx.io.DataDesc("data", (2, 1))]
        provide_label = []

        def next(self):
            raise IOError("record 3 is corrupt")

    p = mx.io.PrefetchingIter(Broken(2))
    with pytest.raises(IOError, match="record 3 is corrupt"):
        p.next()
    with pytest.raises(StopIteration):
        p.next()
    p.close()


# ------------------------------------------------------------------ registry / C API
def test_registry_lists_iterators_with_params():
    names = [_api.weft_dataiter_type_name(i) for i in range(_api.weft_dataiter_type_count())]
    for n in ("MNISTIter", "CSVIter", "LibSVMIter"):
        assert n in names
        assert callable(getattr(mx.io, n))
    params = {p[0]: p for p in (_api.weft_dataiter_type_param("CSVIter", i)
                                for i in range(_api.weft_dataiter_type_num_params("CSVIter")))}
    assert params["data_csv"][4] is True and params["data_csv"][2] == ""
    assert params["round_batch"][2] in ("True", "true", "1")
    assert "data_csv : string" in mx.io.CSVIter.__doc__
    assert "round_batch" in mx.io.CSVIter.__doc__
    with pytest.raises(mx.base.WeftNotFoundError, match="unknown data iterator 'Nope'"):
        _api.weft_dataiter_type_doc("Nope")


def test_c_api_misuse_is_reported():
    it = mx.io.MNISTIter(image=TINY_IMG, label=TINY_LAB, batch_size=5, silent=True)
    with pytest.raises(mx.base.WeftValueError, match="no current batch"):
        it.getpad()
    assert it.iter_next()
    with pytest.raises(IndexError, match="1 data arrays, got index 3"):
        _api.weft_dataiter_get_data(it.handle, 3)
    with pytest.raises(TypeError, match="keyword arguments only"):
        mx.io.MNISTIter(TINY_IMG)


# ------------------------------------------------------------------ MNISTIter
def test_mnist_fixture_values_and_epochs():
    pix = tiny_pixels()
    it = mx.io.MNISTIter(image=TINY_IMG, label=TINY_LAB, batch_size=4, shuffle=False, silent=True)
    assert it.provide_data[0].shape == (4, 1, 28, 28) and it.provide_label[0].shape == (4,)
    for _ in range(2):
        got = list(it)
        assert len(got) == 5
        for k, b in enumerate(got):
            np.testing.assert_array_equal(b.data[0].asnumpy(), pix[4 * k:4 * k + 4, None])
            np.testing.assert_array_equal(b.label[0].asnumpy(), np.arange(4 * k, 4 * k + 4) % 10)
            assert b.pad == 0
            assert b.index.tolist() == list(range(4 * k, 4 * k + 4))
        it.reset()


def test_mnist_shuffle_and_sharding_cover_every_sample_once():
    pix = tiny_pixels().reshape(20, -1)
    order = []
    for part in range(4):
        it = mx.io.MNISTIter(image=TINY_IMG, label=TINY_LAB, batch_size=5, shuffle=True, seed=11, flat=True,
                             num_parts=4, part_index=part, prefetch_buffer=2, silent=True)
        got = list(it)
        assert len(got) == 1
        idx = got[0].index
        np.testing.assert_array_equal(got[0].data[0].asnumpy(), pix[idx.astype(np.int64)])
        np.testing.assert_array_equal(got[0].label[0].asnumpy(), idx % 10)
        assert sorted(idx.tolist()) == list(range(5 * part, 5 * part + 5))  # contiguous shares
        order += idx.tolist()
    assert sorted(order) == list(range(20))
    whole = mx.io.MNISTIter(image=TINY_IMG, label=TINY_LAB, batch_size=20, shuffle=True, seed=11, silent=True)
    perm = whole.next().index.tolist()
    assert sorted(perm) == list(range(20)) and perm != list(range(20))
    again = mx.io.MNISTIter(image=TINY_IMG, label=TINY_LAB, batch_size=20, shuffle=True, seed=11, silent=True)
    assert again.next().index.tolist() == perm  # the seed fixes the order


def test_mnist_drops_the_partial_batch():
    it = mx.io.MNISTIter(image=TINY_IMG, label=TINY_LAB, batch_size=6, shuffle=False, silent=True)
    assert len(list(it)) == 3


@pytest.mark.skipif(not os.path.isdir(FASHION), reason="Fashion-MNIST is not installed")
def test_fashion_mnist_gz_matches_numpy_parse():
    img = os.path.join(FASHION, "t10k-images-idx3-ubyte.gz")
    lab = os.path.join(FASHION, "t10k-labels-idx1-ubyte.gz")
    images = parse_idx(img).astype(np.float32) / 256.0
    labels = parse_idx(lab).astype(np.float32)
    it = mx.io.MNISTIter(image=img, label=lab, batch_size=1000, shuffle=False, flat=True, silent=True)
    n = 0
    for b in it:
        np.testing.assert_array_equal(b.data[0].asnumpy(), images[n:n + 1000].reshape(1000, -1))
        np.testing.assert_array_equal(b.label[0].asnumpy(), labels[n:n + 1000])
        n += 1000
    assert n == 10000


def test_mnist_ignores_unknown_parameters_with_a_warning(capfd):
    # MXNet's iterators drop keys they do not know; scripts pass MNISTIter a data_shape.
    it = mx.io.MNISTIter(image=TINY_IMG, label=TINY_LAB, data_shape=(784,), batch_size=4, flat=True,
                         shuffle=False, silent=True)
    err = capfd.readouterr().err
    assert "Iterator 'MNISTIter': ignoring unknown parameter 'data_shape'" in err and "batch_size" in err
    b = next(iter(it))
    np.testing.assert_array_equal(b.data[0].asnumpy(), tiny_pixels()[:4].reshape(4, 784))
    np.testing.assert_array_equal(b.label[0].asnumpy(), np.arange(4))


def test_test_utils_get_mnist_iterator_reads_data_folder(tmp_path, monkeypatch, capfd):
    import shutil
    (tmp_path / "data").mkdir()
    for split in ("train", "t10k"):
        shutil.copy(TINY_IMG, tmp_path / "data" / ("%s-images-idx3-ubyte" % split))
        shutil.copy(TINY_LAB, tmp_path / "data" / ("%s-labels-idx1-ubyte" % split))
    monkeypatch.chdir(tmp_path)
    from weft.test_utils import get_mnist_iterator
    train, val = get_mnist_iterator(5, (784,))
    b = next(iter(val))
    assert b.data[0].shape == (5, 784)
    # MNISTIter shuffles by default (MXNet's default), validation too: b.index says which rows.
    rows = b.index.astype(int)
    np.testing.assert_array_equal(b.data[0].asnumpy(), tiny_pixels()[rows].reshape(5, 784))
    np.testing.assert_array_equal(b.label[0].asnumpy(), rows % 10)
    assert sorted(int(i) for t in train for i in t.index) == list(range(20))
    train, val = get_mnist_iterator(4, (1, 28, 28), num_parts=2, part_index=1)
    assert next(iter(val)).data[0].shape == (4, 1, 28, 28)
    assert "unknown parameter" not in capfd.readouterr().err


def test_mnist_errors(tmp_path):
    with pytest.raises(mx.base.WeftNotFoundError, match="cannot open MNISTIter image file '/no/such/file'"):
        mx.io.MNISTIter(image="/no/such/file", label=TINY_LAB)
    with pytest.raises(mx.base.WeftIOError, match="magic 0x00000801, expected 0x00000803"):
        mx.io.MNISTIter(image=TINY_LAB, label=TINY_LAB)
    raw = open(TINY_IMG, "rb").read()
    cut = tmp_path / "cut-idx3-ubyte"
    cut.write_bytes(raw[:-1])
    with pytest.raises(mx.base.WeftIOError, match="truncated: expected 15680 bytes .* holds 15679"):
        mx.io.MNISTIter(image=str(cut), label=TINY_LAB)
    gz = tmp_path / "img.gz"
    gz.write_bytes(gzip.compress(raw)[:200])
    with pytest.raises(mx.base.WeftIOError, match=str(gz)):
        mx.io.MNISTIter(image=str(gz), label=TINY_LAB)
    # An unknown parameter is ignored, as MXNet's iterators ignore it (with a warning here).
    ignored = mx.io.MNISTIter(image=TINY_IMG, label=TINY_LAB, batch_size=2, batchsize=3, input_shape=(1, 28, 28)).next()
    plain = mx.io.MNISTIter(image=TINY_IMG, label=TINY_LAB, batch_size=2).next()
    np.testing.assert_array_equal(ignored.data[0].asnumpy(), plain.data[0].asnumpy())
    with pytest.raises(mx.base.WeftValueError, match="part_index must be less than num_parts"):
        mx.io.MNISTIter(image=TINY_IMG, label=TINY_LAB, num_parts=2, part_index=5)
    with pytest.raises(mx.base.WeftValueError, match="batch_size"):
        mx.io.MNISTIter(image=TINY_IMG, label=TINY_LAB, batch_size=0)


# ------------------------------------------------------------------ CSVIter
def test_csv_round_trip_and_round_batch(tmp_path):
    data = np.arange(7 * 6, dtype=np.float32).reshape(7, 2, 3) / 4
    label = np.arange(7, dtype=np.float32) * 3
    dpath, lpath = tmp_path / "d.csv", tmp_path / "l.csv"
    np.savetxt(dpath, data.reshape(7, -1), delimiter=",", fmt="%.6g")
    np.savetxt(lpath, label, delimiter=",", fmt="%.6g")
    it = mx.io.CSVIter(data_csv=str(dpath), data_shape=(2, 3), label_csv=str(lpath), batch_size=3)
    assert it.provide_data[0].shape == (3, 2, 3) and it.provide_label[0].shape == (3,)
    got = list(it)
    assert [b.pad for b in got] == [0, 0, 2]
    rows = [0, 1, 2, 3, 4, 5, 6, 0, 1]  # round_batch: the last batch wraps to the start
    np.testing.assert_array_equal(np.concatenate([b.data[0].asnumpy() for b in got]), data[rows])
    np.testing.assert_array_equal(np.concatenate([b.label[0].asnumpy() for b in got]), label[rows])
    # Excluding pads, each sample exactly once.
    real = sum([b.index[:3 - b.pad].tolist() for b in got], [])
    assert sorted(real) == list(range(7))
    it2 = mx.io.CSVIter(data_csv=str(dpath), data_shape=(6,), batch_size=3, round_batch=False)
    got2 = list(it2)
    assert [b.pad for b in got2] == [0, 0, 2]
    np.testing.assert_array_equal(got2[2].data[0].asnumpy()[0], data[6].reshape(-1))
    np.testing.assert_array_equal(got2[2].data[0].asnumpy()[1:], 0)
    assert all((b.label[0].asnumpy() == 0).all() for b in got2)  # no label_csv: zeros


def test_csv_next_epoch_after_wrap(tmp_path):
    dpath = tmp_path / "d.csv"
    np.savetxt(dpath, np.arange(7, dtype=np.float32)[:, None], delimiter=",")
    it = mx.io.CSVIter(data_csv=str(dpath), data_shape=(1,), batch_size=3)
    assert [b.index.tolist() for b in it] == [[0, 1, 2], [3, 4, 5], [6, 0, 1]]
    it.reset()
    assert [b.index.tolist() for b in it] == [[2, 3, 4], [5, 6, 0]]
    it.reset()
    assert [b.index.tolist() for b in it] == [[1, 2, 3], [4, 5, 6]]


def test_csv_errors(tmp_path):
    bad = tmp_path / "bad.csv"
    bad.write_text("1,2,3\n4,5,6\n7,8\n")
    with pytest.raises(mx.base.WeftShapeError, match="line 3 has 2 values, expected 3"):
        mx.io.CSVIter(data_csv=str(bad), data_shape=(3,), batch_size=1)
    bad.write_text("1,2,3\n4,abc,6\n")
    with pytest.raises(mx.base.WeftValueError, match="line 2: expected a number in column 2, got 'abc,6'"):
        mx.io.CSVIter(data_csv=str(bad), data_shape=(3,), batch_size=1)
    with pytest.raises(mx.base.WeftNotFoundError, match="missing.csv"):
        mx.io.CSVIter(data_csv=str(tmp_path / "missing.csv"), data_shape=(3,), batch_size=1)
    with pytest.raises(mx.base.WeftValueError, match="required parameter 'data_shape'"):
        mx.io.CSVIter(data_csv=str(bad), batch_size=1)


# ------------------------------------------------------------------ LibSVMIter
def test_libsvm_round_trip(tmp_path):
    rng = np.random.RandomState(0)
    dense = (rng.rand(9, 6) * (rng.rand(9, 6) > 0.5)).astype(np.float32)
    labels = rng.randint(0, 3, size=9).astype(np.float32)
    path = tmp_path / "d.libsvm"
    with open(path, "w") as f:
        for row, y in zip(dense, labels):
            f.write("%g %s\n" % (y, " ".join("%d:%r" % (j, float(v)) for j, v in enumerate(row) if v != 0)))
    it = mx.io.LibSVMIter(data_libsvm=str(path), data_shape=(6,), batch_size=4, round_batch=False)
    got = list(it)
    assert [b.pad for b in got] == [0, 0, 3]
    np.testing.assert_allclose(np.concatenate([b.data[0].asnumpy() for b in got])[:9], dense, rtol=1e-6)
    np.testing.assert_array_equal(np.concatenate([b.label[0].asnumpy() for b in got])[:9], labels)
    # Sharding over parts adds up to the whole set.
    seen = []
    for part in range(3):
        p = mx.io.LibSVMIter(data_libsvm=str(path), data_shape=(6,), batch_size=3, num_parts=3, part_index=part)
        for b in p:
            seen += b.index[:3 - b.pad].tolist()
    assert sorted(seen) == list(range(9))


def test_libsvm_batches_are_csr_built_from_the_stored_values(tmp_path):
    # A billion features: a dense batch of 3 rows would be 12 GB; csr holds the stored values.
    width = 10 ** 9
    lines = ["1 5:0.5 999999999:2", "0", "2 7:1 3:-1 7:4", "1 0:3"]
    path = tmp_path / "wide.libsvm"
    path.write_text("\n".join(lines) + "\n")
    it = mx.io.LibSVMIter(data_libsvm=str(path), data_shape=(width,), batch_size=3)
    assert it.provide_data[0].shape == (3, width)
    b1, b2 = list(it)
    d = b1.data[0]
    assert isinstance(d, mx.nd.sparse.CSRNDArray) and d.shape == (3, width)
    # Row 2 gives feature 7 twice: the last value stays; its columns come out sorted.
    np.testing.assert_array_equal(d.indptr.asnumpy(), [0, 2, 2, 4])
    np.testing.assert_array_equal(d.indices.asnumpy(), [5, 999999999, 3, 7])
    np.testing.assert_array_equal(d.data.asnumpy(), [0.5, 2, -1, 4])
    np.testing.assert_array_equal(b1.label[0].asnumpy(), [1, 0, 2])
    # round_batch: the last batch is filled from the start of the data, and says so.
    assert b2.pad == 2 and b2.index.tolist() == [3, 0, 1]
    np.testing.assert_array_equal(b2.data[0].indptr.asnumpy(), [0, 1, 3, 3])
    np.testing.assert_array_equal(b2.data[0].indices.asnumpy(), [0, 5, 999999999])
    np.testing.assert_array_equal(b2.label[0].asnumpy(), [1, 1, 0])
    # Zero padding leaves empty rows; labels from a second file come as csr too.
    lab = tmp_path / "lab.libsvm"
    lab.write_text("0 1:1\n0 0:1 2:0.5\n0\n0 2:3\n")
    it = mx.io.LibSVMIter(data_libsvm=str(path), data_shape=(width,), label_libsvm=str(lab), label_shape=(3,),
                          batch_size=3, round_batch=False)
    got = list(it)
    assert got[1].pad == 2 and got[1].data[0].indptr.asnumpy().tolist() == [0, 1, 1, 1]
    labels = np.concatenate([b.label[0].asnumpy() for b in got])
    assert all(b.label[0].stype == "csr" for b in got)
    np.testing.assert_array_equal(labels, [[0, 1, 0], [1, 0, 0.5], [0, 0, 0], [0, 0, 3], [0, 0, 0], [0, 0, 0]])


def write_libsvm(path, rng, rows, width, nnz, gz=False):
    """A LibSVM file of `rows` lines (some blank, some without features, a few giving a
    feature twice or out of order) and its rows as (label, {column: value})."""
    want, lines = [], []
    for i in range(rows):
        cols = rng.randint(0, width, size=rng.randint(0, nnz + 1))
        vals = np.round(rng.uniform(-9, 9, size=cols.size), 4)
        label = float(rng.randint(-3, 4))
        lines.append("%g %s" % (label, " ".join("%d:%g" % (c, v) for c, v in zip(cols, vals))))
        want.append((label, dict(zip(cols.tolist(), vals.tolist()))))  # a repeated column keeps its last value
        if i % 97 == 0:
            lines.append("  ")
    text = ("\r\n" if gz else "\n").join(lines) + "\n"
    if gz:
        with gzip.open(path, "wb") as f:
            f.write(text.encode())
    else:
        path.write_text(text)
    return want


def dense_rows(rows, width):
    out = np.zeros((len(rows), width), np.float32)
    for i, (_, cols) in enumerate(rows):
        for c, v in cols.items():
            out[i, c] = v
    return out


def libsvm_reference(n, batch, wrap, epochs):
    """The batches (row numbers within the part, -1 for padding; pad) of `epochs` epochs
    over a part of n rows, as round_batch and reset define them."""
    out, pos, overflow = [], 0, 0
    for _ in range(epochs):
        epoch = []
        while overflow == 0 and pos < n:
            rows = list(range(pos, min(pos + batch, n)))
            pos += len(rows)
            rest = batch - len(rows)
            if rest and wrap:
                rows += [r % n for r in range(rest)]
                overflow, pos = rest, rest % n
            elif rest:
                rows += [-1] * rest
            epoch.append((rows, rest))
        out.append(epoch)
        if overflow:
            overflow = 0
        else:
            pos = 0
    return out


def epochs_of(it, count):
    # Reset only after a whole epoch: the prefetcher may have read past what was consumed
    # (round_batch's carry-over then depends on how far it got).
    out = [list(it)]
    for _ in range(count - 1):
        it.reset()
        out.append(list(it))
    return out


@pytest.mark.parametrize("gz", [False, True])
def test_libsvm_streams_a_file_larger_than_its_chunk_with_the_same_batches(tmp_path, gz):
    # About 2.5 MB of text: more than the 1 MiB the reader holds at a time, so batches are
    # made across chunk boundaries, rewinds and part starts.
    rng = np.random.RandomState(3)
    width, lwidth = 1000, 7
    path, lab = tmp_path / ("d.libsvm" + (".gz" if gz else "")), tmp_path / "l.libsvm"
    rows = write_libsvm(path, rng, 20011, width, 24, gz=gz)
    labels = write_libsvm(lab, np.random.RandomState(4), 20011, lwidth, 3)
    x, y = dense_rows(rows, width), dense_rows(labels, lwidth)
    first = np.array([r[0] for r in rows], np.float32)
    assert len(gzip.open(path).read() if gz else path.read_bytes()) > 2 << 20
    for num_parts, part, batch, wrap, label_file in [(1, 0, 256, True, False), (1, 0, 256, False, True),
                                                     (3, 1, 500, True, True), (3, 2, 333, False, False),
                                                     (4, 3, 7000, True, False)]:
        lo, hi = (int(len(rows) / num_parts * k) for k in (part, part + 1))
        kw = dict(label_libsvm=str(lab), label_shape=(lwidth,)) if label_file else {}
        it = mx.io.LibSVMIter(data_libsvm=str(path), data_shape=(width,), batch_size=batch, round_batch=wrap,
                              num_parts=num_parts, part_index=part, **kw)
        want = libsvm_reference(hi - lo, batch, wrap, 3)
        got = epochs_of(it, 3)
        assert [len(e) for e in got] == [len(e) for e in want], (num_parts, part, batch, wrap)
        for epoch_got, epoch_want in zip(got, want):
            for b, (idx, pad) in zip(epoch_got, epoch_want):
                idx = np.array(idx)
                assert b.pad == pad
                assert b.data[0].stype == "csr"
                keep = idx >= 0
                np.testing.assert_array_equal(b.index[keep], lo + idx[keep])
                d = b.data[0].asnumpy()
                np.testing.assert_array_equal(d[keep], x[lo + idx[keep]])
                assert not d[~keep].any()
                l = b.label[0].asnumpy()
                ref = y[lo + idx[keep]] if label_file else first[lo + idx[keep]]
                np.testing.assert_array_equal(l[keep], ref)
                assert not l[~keep].any()


def test_libsvm_memory_follows_the_batch_not_the_file(tmp_path):
    # 40 MB of text holding 4 million stored values (48 MB as csr): read whole, the file
    # and its rows took about 90 MB before the first batch; streamed, a few MB.
    path = tmp_path / "big.libsvm"
    rng = np.random.RandomState(0)
    with open(path, "w") as f:
        for _ in range(20):
            cols = np.sort(rng.randint(0, 100000, size=(10000, 20)), axis=1)
            f.write("".join("1 " + " ".join("%d:0.25" % c for c in row) + "\n" for row in cols))
    assert os.path.getsize(path) > 30e6
    script = """
import resource, sys
import weft as mx
def rss(field):
    for line in open("/proc/self/status"):
        if line.startswith(field):
            return int(line.split()[1]) / 1024.0
it = mx.io.LibSVMIter(data_libsvm=sys.argv[1], data_shape=(100000,), batch_size=8, prefetch_buffer=0)
it.reset(); it.next(); it.reset()
base = rss("VmRSS")
open("/proc/self/clear_refs", "w").write("5")  # VmHWM starts again from now
it = mx.io.LibSVMIter(data_libsvm=sys.argv[1], data_shape=(100000,), batch_size=256)
b = it.next()
first = rss("VmHWM") - base
n = 1 + sum(1 for _ in it)
print(first, rss("VmHWM") - base, n)
"""
    out = subprocess.run([sys.executable, "-c", script, str(path)], capture_output=True, text=True, timeout=300,
                         env=dict(os.environ, OMP_NUM_THREADS="1"))
    assert out.returncode == 0, out.stderr
    first, whole, batches = out.stdout.split()
    assert int(batches) == 200000 // 256 + 1
    print("peak over the start: %s MB at the first batch, %s MB over the epoch" % (first, whole))
    assert float(first) < 20 and float(whole) < 20, (first, whole)


def test_libsvm_errors(tmp_path):
    path = tmp_path / "d.libsvm"
    path.write_text("1 0:1 7:2\n")
    with pytest.raises(mx.base.WeftIndexError, match="feature index 7 is outside data_shape"):
        mx.io.LibSVMIter(data_libsvm=str(path), data_shape=(4,), batch_size=1)
    path.write_text("1 0=1\n")
    with pytest.raises(mx.base.WeftValueError, match="expected 'index:value'"):
        mx.io.LibSVMIter(data_libsvm=str(path), data_shape=(4,), batch_size=1)
    # A line past the first batch is read, and fails, when its batch is made.
    path.write_text("1 0:1\n0 1:2\n\n1 2:x\n")
    it = mx.io.LibSVMIter(data_libsvm=str(path), data_shape=(4,), batch_size=2)
    it.next()
    with pytest.raises(mx.base.WeftValueError, match="data_libsvm '.*d.libsvm' line 4: expected a value after '2:'"):
        it.next()
    # The label file must have as many rows: checked as the rows are read in one part,
    # before reading any in several.
    path.write_text("1 0:1\n0 1:2\n1 2:1\n")
    lab = tmp_path / "l.libsvm"
    for text, match in [("0 0:1\n0 1:1\n", "label_libsvm '.*l.libsvm' has 2 rows, fewer than data_libsvm"),
                        ("0 0:1\n0 1:1\n0\n0\n", "label_libsvm '.*l.libsvm' has more rows than the 3 of data_libsvm")]:
        lab.write_text(text)
        it = mx.io.LibSVMIter(data_libsvm=str(path), data_shape=(4,), label_libsvm=str(lab), label_shape=(2,),
                              batch_size=2)
        with pytest.raises(mx.base.WeftShapeError, match=match):
            list(it)
        with pytest.raises(mx.base.WeftShapeError, match="has %d rows, expected 3" % text.count("\n")):
            mx.io.LibSVMIter(data_libsvm=str(path), data_shape=(4,), label_libsvm=str(lab), label_shape=(2,),
                             batch_size=2, num_parts=2)
    with pytest.raises(mx.base.WeftNotFoundError, match="data_libsvm '/nonexistent.libsvm'"):
        mx.io.LibSVMIter(data_libsvm="/nonexistent.libsvm", data_shape=(4,), batch_size=2)


def test_cpp_iterators_compose_with_python_wrappers():
    pix = tiny_pixels().reshape(20, -1)
    for prefetch in (0, 3):
        base = mx.io.MNISTIter(image=TINY_IMG, label=TINY_LAB, batch_size=5, shuffle=False, flat=True, silent=True,
                               prefetch_buffer=prefetch)
        # 4 batches per epoch; ResizeIter makes 6, continuing through a reset of the base.
        r = mx.io.ResizeIter(base, 6)
        starts = [int(b.index[0]) for b in r]
        assert starts == [0, 5, 10, 15, 0, 5]
        p = mx.io.PrefetchingIter([mx.io.MNISTIter(image=TINY_IMG, label=TINY_LAB, batch_size=5, shuffle=False,
                                                   flat=True, silent=True, prefetch_buffer=prefetch)],
                                  rename_data=[{"data": "img"}])
        assert p.provide_data[0].name == "img" and p.provide_data[0].shape == (5, 784)
        got = list(p)
        assert len(got) == 4
        np.testing.assert_array_equal(got[3].data[0].asnumpy(), pix[15:20])
        p.close()


def test_python_dataiter_subclass_protocol():
    class Countdown(mx.io.DataIter):
        def __init__(self):
            super(Countdown, self).__init__(batch_size=1)
            self.n = 3

        def reset(self):
            self.n = 3

        def iter_next(self):
            self.n -= 1
            return self.n >= 0

        def getdata(self):
            return [mx.nd.array(np.array([self.n], dtype=np.float32))]

        def getlabel(self):
            return None

        def getpad(self):
            return 0

    it = Countdown()
    assert [b.data[0].asnumpy()[0] for b in it] == [2, 1, 0]
    it.reset()
    assert next(iter(it)).index is None


def test_csv_empty_file_gives_no_batches(tmp_path):
    empty = tmp_path / "empty.csv"
    empty.write_text("\n\n")
    it = mx.io.CSVIter(data_csv=str(empty), data_shape=(3,), batch_size=2)
    assert it.provide_data[0].shape == (2, 3)
    assert list(it) == []
    it.reset()
    assert list(it) == []
