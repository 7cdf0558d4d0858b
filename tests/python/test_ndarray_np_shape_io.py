"""NDArray save/load under MXNet's numpy shape semantics (mx.util.np_shape): V3 records with
0-d and zero-size arrays, byte for byte as MXNet 1.9 writes them, and each kind of record
refused in the other mode."""
import os
import pickle
import struct

import numpy as np
import pytest

import weft as mx
from weft import nd

SYNTHETIC = os.path.join(os.path.dirname(__file__), "..", "data", "mxnet", "synthetic")
V2, V3 = 0xF993FAC9, 0xF993FACA


@pytest.fixture(autouse=True)
def np_shape_off():
    mx.util.set_np_shape(False)
    yield
    mx.util.set_np_shape(False)


def record(magic, shape, values, dtype_code=0, np_dtype=np.float32, stype=0, dev=(1, 0)):
    """One dense record from the documented layout (FORMATS.md 2.2)."""
    out = struct.pack("<Ii", magic, stype) + struct.pack("<i", len(shape))
    out += b"".join(struct.pack("<q", d) for d in shape)
    out += struct.pack("<iii", dev[0], dev[1], dtype_code)
    return out + np.asarray(values, dtype=np_dtype).tobytes()


def file_of(records, names=()):
    out = struct.pack("<QQQ", 0x112, 0, len(records)) + b"".join(records)
    out += struct.pack("<Q", len(names))
    for n in names:
        out += struct.pack("<Q", len(n)) + n.encode()
    return out


def test_np_shape_save_writes_mxnet_v3_bytes(tmp_path):
    a = nd.array([[1, 2, 3], [4, 5, 6]])
    s = nd.array(np.float32(7.5).reshape(()))
    z = nd.array(np.zeros((2, 0, 3), np.float32))
    assert s.shape == ()
    with mx.util.np_shape(True):
        got = nd.save_tobuffer({"a": a, "s": s, "z": z})
        nd.save(str(tmp_path / "np.params"), {"a": a, "s": s, "z": z})
    want = file_of([record(V3, (2, 3), [1, 2, 3, 4, 5, 6]), record(V3, (), [7.5]), record(V3, (2, 0, 3), [])],
                   ["a", "s", "z"])
    assert got == want
    assert (tmp_path / "np.params").read_bytes() == want
    # Off, the same arrays (less the 0-d one) are V2 records.
    assert nd.save_tobuffer([a, z]) == file_of([record(V2, (2, 3), [1, 2, 3, 4, 5, 6]), record(V2, (2, 0, 3), [])])


def test_np_shape_round_trip_scalar_and_zero_size(tmp_path):
    rng = np.random.RandomState(3)
    shapes = [(2, 0, 1), (0,), (), (), (0, 4), (), (3, 0, 0, 0), (2, 1), (0, 5, 0)]
    values = [rng.randint(0, 10, size=sh).astype(np.float32) for sh in shapes]
    fname = str(tmp_path / "list")
    with mx.util.np_shape(True):
        nd.save(fname, [nd.array(v) for v in values])
        back = nd.load(fname)
    assert [b.shape for b in back] == shapes
    for v, b in zip(values, back):
        np.testing.assert_array_equal(b.asnumpy(), v)
    # Off, zero-size arrays round-trip as V2 records too.
    nd.save(fname, [nd.array(v) for v in values if v.ndim > 0])
    assert [b.shape for b in nd.load(fname)] == [sh for sh in shapes if sh != ()]


def test_np_shape_reads_hand_made_v3_files_and_the_fixture():
    data = file_of([record(V3, (), [3.25], 1, np.float64), record(V3, (1, 2), [-1, 9], 4, np.int32)], ["x", "y"])
    with mx.util.np_shape(True):
        got = nd.load_frombuffer(data)
        fixture = nd.load(os.path.join(SYNTHETIC, "np_shape_v3.params"))
    assert got["x"].shape == () and got["x"].dtype == np.float64 and got["x"].asnumpy() == 3.25
    assert got["y"].dtype == np.int32 and got["y"].asnumpy().tolist() == [[-1, 9]]
    assert fixture["scalar"].shape == () and fixture["scalar"].asscalar() == 3.5
    np.testing.assert_array_equal(fixture["ones"].asnumpy(), np.ones((2, 2), np.float32))
    # Saved again in numpy-shape mode, the fixture's bytes come back exactly.
    with mx.util.np_shape(True):
        resaved = nd.save_tobuffer(fixture)
    with open(os.path.join(SYNTHETIC, "np_shape_v3.params"), "rb") as f:
        assert resaved == f.read()
    # A shape with an unknown (-1) dimension is an uninitialised array: the record ends there.
    unknown = struct.pack("<Iii", V3, 0, 2) + struct.pack("<qq", 2, -1)
    with mx.util.np_shape(True):
        back = nd.load_frombuffer(file_of([unknown, record(V3, (1,), [4])]))
    assert len(back) == 2 and back[1].asnumpy().tolist() == [4]


def test_each_kind_of_record_is_refused_in_the_other_mode(tmp_path):
    fname = str(tmp_path / "f")
    with mx.util.np_shape(True):
        nd.save(fname, [nd.ones((2,))])
    with pytest.raises(mx.base.MXNetError, match="saved in numpy-shape mode"):
        nd.load(fname)
    with pytest.raises(mx.base.MXNetError, match="saved in numpy-shape mode"):
        nd.load(os.path.join(SYNTHETIC, "np_shape_v3.params"))
    nd.save(fname, [nd.ones((2,))])
    with mx.util.np_shape(True):
        with pytest.raises(mx.base.MXNetError, match="not saved in numpy-shape mode"):
            nd.load(fname)
        with pytest.raises(mx.base.MXNetError, match="not saved in numpy-shape mode"):
            nd.load(os.path.join(SYNTHETIC, "dense_list_v2.params"))
    # MXNet's process-wide mode (2) also reads the classic records.
    mx.util.set_np_shape(2)
    assert mx.util.is_np_shape()
    np.testing.assert_array_equal(nd.load(fname)[0].asnumpy(), [1, 1])
    mx.util.set_np_shape(False)
    np.testing.assert_array_equal(nd.load(fname)[0].asnumpy(), [1, 1])


def test_np_shape_refuses_sparse_and_legacy_refuses_0d():
    csr = nd.array([[0, 1], [2, 0]]).tostype("csr")
    with mx.util.np_shape(True):
        with pytest.raises(mx.base.MXNetError, match="only dense arrays"):
            nd.save_tobuffer([csr])
        sparse_v3 = struct.pack("<Ii", V3, 2) + b"\0" * 64
        with pytest.raises(mx.base.MXNetError, match="only dense"):
            nd.load_frombuffer(file_of([sparse_v3]))
    with pytest.raises(mx.base.MXNetError, match="0-d array cannot be written as a V2 record"):
        nd.save_tobuffer([nd.array(np.float32(1).reshape(()))])


def test_pickle_follows_the_mode():
    s = nd.array(np.float32(2.5).reshape(()))
    with mx.util.np_shape(True):
        raw = pickle.dumps(s)
        back = pickle.loads(raw)
    assert back.shape == () and back.asscalar() == 2.5
    with pytest.raises(mx.base.MXNetError, match="saved in numpy-shape mode"):
        pickle.loads(raw)
    v = nd.array([1.0, 2.0])
    raw2 = pickle.dumps(v)
    with mx.util.np_shape(True):
        with pytest.raises(mx.base.MXNetError, match="not saved in numpy-shape mode"):
            pickle.loads(raw2)
