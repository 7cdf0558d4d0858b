"""weft.recordio against the dmlc RecordIO format (FORMATS.md section 4) and MXNet's fixtures."""
import json
import os
import pickle
import struct

import numpy as np
import pytest

import weft
from weft import recordio

HERE = os.path.dirname(os.path.abspath(__file__))
SYNTH = os.path.join(HERE, "..", "data", "mxnet", "synthetic")
MAGIC = 0xCED7230A
MAGIC_BYTES = struct.pack("<I", MAGIC)


def encode_reference(payload):
    """The on-disk bytes of one record, written from the format description, independently
    of the library: cut at every 4-aligned magic word, flags 1/2/3 (0 for a whole record),
    then zero padding to 4."""
    out = b""
    cuts = [i for i in range(0, len(payload) - 3, 4) if payload[i:i + 4] == MAGIC_BYTES]
    start = 0
    for n, i in enumerate(cuts):
        out += MAGIC_BYTES + struct.pack("<I", ((1 if n == 0 else 2) << 29) | (i - start)) + payload[start:i]
        start = i + 4
    rest = payload[start:]
    out += MAGIC_BYTES + struct.pack("<I", ((3 if cuts else 0) << 29) | len(rest)) + rest
    return out + b"\0" * (-len(payload) % 4)


def write_records(path, records):
    w = recordio.MXRecordIO(path, "w")
    for r in records:
        w.write(r)
    w.close()


def read_records(path):
    r = recordio.MXRecordIO(path, "r")
    out = []
    while True:
        rec = r.read()
        if rec is None:
            break
        out.append(rec)
    r.close()
    return out


def test_round_trip_bit_exact(tmp_path):
    rng = np.random.RandomState(0)
    records = [rng.bytes(n) for n in range(0, 37)]
    records += [MAGIC_BYTES, MAGIC_BYTES * 3, b"ab" + MAGIC_BYTES + b"cd", b"abcd" + MAGIC_BYTES + b"x",
                MAGIC_BYTES + b"1234" + MAGIC_BYTES, b"\x0a\x23\xd7"]
    path = str(tmp_path / "a.rec")
    write_records(path, records)
    with open(path, "rb") as f:
        raw = f.read()
    assert raw == b"".join(encode_reference(r) for r in records)
    assert read_records(path) == records


def test_fixture_tiny_rec(tmp_path):
    with open(os.path.join(SYNTH, "expected.json")) as f:
        expected = json.load(f)["tiny.rec"]
    idx_path = os.path.join(SYNTH, "tiny.idx")
    rec_path = os.path.join(SYNTH, "tiny.rec")
    rec = recordio.MXIndexedRecordIO(idx_path, rec_path, "r")
    assert rec.keys == [e["key"] for e in expected]
    assert rec.idx == {0: 0, 1: 36, 2: 88, 3: 148}
    # Random order, by key.
    for e in reversed(expected):
        data = rec.read_idx(e["key"])
        assert data.hex() == e["record_hex"]
        assert len(data) == e["record_len"]
    h0, s0 = recordio.unpack(rec.read_idx(0))
    assert (h0.flag, h0.label, h0.id, h0.id2, s0) == (0, 3.0, 100, 0, b"abc")
    h1, s1 = recordio.unpack(rec.read_idx(1))
    assert h1.flag == 3 and h1.id == 101 and s1 == b"hello!!!"
    np.testing.assert_array_equal(h1.label, np.array([1, 2, 3], np.float32))
    h2, s2 = recordio.unpack(rec.read_idx(2))
    assert (h2.label, s2) == (7.0, MAGIC_BYTES + b"XYZW" + MAGIC_BYTES + b"tail!")
    h3, s3 = recordio.unpack(rec.read_idx(3))
    assert (h3.label, h3.id, s3) == (-1.0, 103, b"")
    rec.close()

    # Writing the same records with write_idx reproduces both files byte for byte.
    out = recordio.MXIndexedRecordIO(str(tmp_path / "t.idx"), str(tmp_path / "t.rec"), "w")
    out.write_idx(0, recordio.pack(recordio.IRHeader(0, 3.0, 100, 0), b"abc"))
    out.write_idx(1, recordio.pack(recordio.IRHeader(0, [1.0, 2.0, 3.0], 101, 0), b"hello!!!"))
    out.write_idx(2, recordio.pack(recordio.IRHeader(0, 7.0, 102, 0), MAGIC_BYTES + b"XYZW" + MAGIC_BYTES + b"tail!"))
    out.write_idx(3, recordio.pack(recordio.IRHeader(0, -1.0, 103, 0), b""))
    out.close()
    for name, ref in (("t.rec", rec_path), ("t.idx", idx_path)):
        with open(str(tmp_path / name), "rb") as a, open(ref, "rb") as b:
            assert a.read() == b.read(), name


def test_reader_reset_tell_and_pickle(tmp_path):
    path = str(tmp_path / "p.rec")
    write_records(path, [b"one", b"two", b"three"])
    r = recordio.MXRecordIO(path, "r")
    assert r.tell() == 0
    assert r.read() == b"one"
    assert r.tell() == 12
    r2 = pickle.loads(pickle.dumps(r))
    assert r2.read() == b"one"  # a pickled reader reopens at the start
    assert r.read() == b"two"
    r.reset()
    assert r.read() == b"one"
    r.close()
    r.close()  # closing twice is harmless
    with pytest.raises(weft.MXNetError, match="closed"):
        r.read()
    with pytest.raises(ValueError, match="Invalid flag"):
        recordio.MXRecordIO(path, "x")
    with pytest.raises(weft.MXNetError, match="cannot open"):
        recordio.MXRecordIO(str(tmp_path / "missing.rec"), "r")


def _expect_io_error(path, pieces):
    with pytest.raises(weft.base.WeftIOError) as info:
        read_records(path)
    msg = str(info.value)
    for p in pieces:
        assert p in msg, (p, msg)


def test_corrupt_records(tmp_path):
    with open(os.path.join(SYNTH, "tiny.rec"), "rb") as f:
        good = f.read()
    path = str(tmp_path / "bad.rec")

    def put(data):
        with open(path, "wb") as f:
            f.write(data)

    put(good[:36] + b"XXXX" + good[40:])
    _expect_io_error(path, [path, "bad magic", "offset 36"])
    put(good[:41])
    _expect_io_error(path, [path, "truncated", "offset 36"])
    put(good[:60])
    _expect_io_error(path, [path, "truncated", "offset 36"])
    put(good[0x78:])
    _expect_io_error(path, [path, "offset 0", "continues a record"])
    put(good[:0x78])
    _expect_io_error(path, [path, "ends at offset 120", "starts at offset 88"])
    put(good[88:0x78] + good[:36])
    _expect_io_error(path, [path, "not finished", "offset 32"])
    # A reader never hands out what it read before the damage as a record.
    put(good[:36] + b"XXXX" + good[40:])
    r = recordio.MXRecordIO(path, "r")
    assert r.read() == bytes.fromhex("000000000000404064000000000000000000000000000000616263")
    with pytest.raises(weft.base.WeftIOError):
        r.read()
    r.close()


def test_broken_index(tmp_path):
    rec = os.path.join(SYNTH, "tiny.rec")
    idx = str(tmp_path / "bad.idx")
    with open(idx, "w") as f:
        f.write("0\t0\n1\t36\n2 88\n")
    with pytest.raises(weft.base.WeftIOError, match=r"bad\.idx' line 3"):
        recordio.MXIndexedRecordIO(idx, rec, "r")
    with open(idx, "w") as f:
        f.write("0\t0\nx\t36\n")
    with pytest.raises(weft.base.WeftIOError, match="line 2"):
        recordio.MXIndexedRecordIO(idx, rec, "r")
    # An offset that is not a record start.
    with open(idx, "w") as f:
        f.write("0\t0\n1\t40\n")
    r = recordio.MXIndexedRecordIO(idx, rec, "r")
    with pytest.raises(weft.base.WeftIOError, match="offset 40"):
        r.read_idx(1)
    with pytest.raises(KeyError):
        r.read_idx(7)
    r.close()


def test_pack_unpack():
    s = recordio.pack(recordio.IRHeader(0, 2.5, 7, 9), b"xyz")
    assert s == struct.pack("<IfQQ", 0, 2.5, 7, 9) + b"xyz"
    h, p = recordio.unpack(s)
    assert h == recordio.IRHeader(0, 2.5, 7, 9) and p == b"xyz"
    s = recordio.pack(recordio.IRHeader(5, np.array([1.5, -2.0]), 1, 0), b"q")
    assert s == struct.pack("<IfQQ", 2, 0.0, 1, 0) + struct.pack("<2f", 1.5, -2.0) + b"q"
    h, p = recordio.unpack(s)
    assert h.flag == 2 and p == b"q"
    np.testing.assert_array_equal(h.label, [1.5, -2.0])
    with pytest.raises(weft.base.WeftIOError, match="too short"):
        recordio.unpack(b"short")
    with pytest.raises(weft.base.WeftIOError, match="announces 4 labels"):
        recordio.unpack(struct.pack("<IfQQ", 4, 0.0, 0, 0) + b"\0" * 8)


def _photo_like(h, w, seed=0):
    """Smooth colour fields plus mild noise: JPEG keeps these closely."""
    rng = np.random.RandomState(seed)
    y, x = np.mgrid[0:h, 0:w].astype(np.float32)
    img = np.stack([128 + 80 * np.sin(x / 9.0 + seed), 128 + 80 * np.cos(y / 7.0), (x + y) * 127.0 / (h + w) + 60],
                   axis=2)
    img += rng.normal(0, 2, img.shape)
    return np.clip(img, 0, 255).astype(np.uint8)


def test_pack_img_unpack_img():
    img = _photo_like(40, 56)
    h, back = recordio.unpack_img(recordio.pack_img(recordio.IRHeader(0, 4.0, 3, 0), img, img_fmt=".png"))
    assert h.label == 4.0 and h.id == 3
    np.testing.assert_array_equal(back, img)
    _, back = recordio.unpack_img(recordio.pack_img((0, 1.0, 0, 0), img, quality=95, img_fmt=".jpg"))
    assert back.shape == img.shape
    assert np.abs(back.astype(int) - img.astype(int)).mean() < 3
    # pack_img takes BGR (cv2's order): the stored JPEG decodes to RGB with channels swapped.
    s = recordio.pack_img((0, 1.0, 0, 0), img, quality=100, img_fmt=".jpg")
    rgb = weft.image.imdecode(recordio.unpack(s)[1]).asnumpy()
    assert np.abs(rgb[:, :, ::-1].astype(int) - img.astype(int)).mean() < 2
    grey = img[:, :, 1].copy()
    _, g = recordio.unpack_img(recordio.pack_img((0, 1.0, 0, 0), grey, img_fmt=".png"))
    np.testing.assert_array_equal(g, grey)
    _, g3 = recordio.unpack_img(recordio.pack_img((0, 1.0, 0, 0), grey, img_fmt=".png"), iscolor=1)
    assert g3.shape == grey.shape + (3,)
    with pytest.raises(ValueError, match="img_fmt"):
        recordio.pack_img((0, 1.0, 0, 0), img, img_fmt=".bmp")
    with pytest.raises(weft.base.WeftIOError, match="neither JPEG"):
        recordio.unpack_img(recordio.pack((0, 1.0, 0, 0), b"not an image"))
