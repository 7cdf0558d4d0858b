#!/usr/bin/env python3
"""Writes the seed corpus of each fuzz target into tests/fuzz/corpus/<target>/: small valid
inputs of every format (MXNet's fixtures from tests/data/mxnet and files Weft writes), so
that fuzzing starts from inputs that reach deep into each reader. Regression inputs of
defects found by fuzzing are added beside them by hand (tools/fuzz.sh says where).

    .venv/bin/python tests/fuzz/make_corpus.py
"""
import gzip
import io
import os
import shutil
import struct
import zlib

import numpy as np

import weft as mx

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
FIXTURES = os.path.join(REPO, "tests", "data", "mxnet")
CORPUS = os.path.join(HERE, "corpus")


def put(target, name, data):
    folder = os.path.join(CORPUS, target)
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, name), "wb") as f:
        f.write(data)


def fixture(*parts):
    with open(os.path.join(FIXTURES, *parts), "rb") as f:
        return f.read()


def symbol_json():
    for sub in ("upstream", "synthetic"):
        for name in sorted(os.listdir(os.path.join(FIXTURES, sub))):
            if name.endswith(".json") and name != "expected.json":
                data = fixture(sub, name)
                if len(data) < 64 << 10:
                    put("fuzz_symbol_json", sub + "_" + name, data)
    data = mx.sym.Variable("data")
    net = mx.sym.Convolution(data, kernel=(5, 5), num_filter=4, name="c1")
    net = mx.sym.Pooling(mx.sym.Activation(net, act_type="relu"), kernel=(2, 2), stride=(2, 2), pool_type="max")
    net = mx.sym.BatchNorm(net, name="bn")
    net = mx.sym.Concat(net, net, num_args=2)
    net = mx.sym.SoftmaxOutput(mx.sym.FullyConnected(mx.sym.Flatten(net), num_hidden=3), name="sm")
    put("fuzz_symbol_json", "lenet_like.json", net.tojson().encode())


def ndarray_list():
    for name in ("dense_dict_v2.params", "dense_list_v2.params", "np_shape_v3.params", "raw_single_v2.nd"):
        put("fuzz_ndarray_list", name, fixture("synthetic", name))
    put("fuzz_ndarray_list", "legacy_v0", fixture("upstream", "legacy_ndarray.v0"))
    arrays = {"arg:w": mx.nd.array(np.arange(6).reshape(2, 3), dtype="float32"),
              "aux:i": mx.nd.array([1, 2, 3], dtype="int64"), "u8": mx.nd.array([7], dtype="uint8"),
              "f16": mx.nd.array([0.5, 1.5], dtype="float16")}
    put("fuzz_ndarray_list", "weft_named.params", bytes(mx.nd.save_tobuffer(arrays)))
    put("fuzz_ndarray_list", "weft_list.params", bytes(mx.nd.save_tobuffer(list(arrays.values()))))


def png(width, height, color_type, channels):
    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
    rows = b"".join(b"\x00" + bytes((x * 7 + y) % 256 for x in range(width * channels)) for y in range(height))
    ihdr = struct.pack(">IIBBBBB", width, height, 8, color_type, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b"")


def images():
    for ct, ch, name in ((0, 1, "grey"), (2, 3, "rgb"), (4, 2, "grey_alpha"), (6, 4, "rgba")):
        put("fuzz_image_decode", "png_" + name, png(5, 4, ct, ch))
    rec = mx.recordio.MXRecordIO(os.path.join(CORPUS, "tmp.rec"), "w")
    img = mx.nd.array(np.arange(4 * 5 * 3).reshape(4, 5, 3) % 256, dtype="uint8")
    packed = mx.recordio.pack_img(mx.recordio.IRHeader(0, 1.0, 0, 0), img.asnumpy(), quality=90, img_fmt=".jpg")
    rec.write(packed)
    rec.close()
    os.remove(os.path.join(CORPUS, "tmp.rec"))
    header, jpeg = mx.recordio.unpack(packed)
    put("fuzz_image_decode", "jpeg_rgb", jpeg)
    return packed


def recordio(image_record):
    put("fuzz_recordio", "tiny_rec", b"\x00" + fixture("synthetic", "tiny.rec"))
    put("fuzz_recordio", "tiny_idx", b"\x01" + fixture("synthetic", "tiny.idx"))
    path = os.path.join(CORPUS, "tmp.rec")
    rec = mx.recordio.MXRecordIO(path, "w")
    rec.write(image_record)
    rec.write(b"x" * 10)
    rec.close()
    with open(path, "rb") as f:
        put("fuzz_recordio", "image_record", b"\x00" + f.read())
    os.remove(path)


def text_iters():
    put("fuzz_text_iters", "csv", b"\x00" + b"1,2,3\n4,5,6\n7.5,-8,9e2\n")
    put("fuzz_text_iters", "libsvm", b"\x01" + b"1 0:1.5 3:2\n0 7:-1\n2 1:3 2:4 5:0.25\n")


def mnist():
    images_bytes = fixture("synthetic", "tiny-images-idx3-ubyte")
    labels_bytes = fixture("synthetic", "tiny-labels-idx1-ubyte")
    split = len(images_bytes)
    put("fuzz_mnist", "plain", struct.pack(">H", split) + images_bytes + labels_bytes)
    gz = gzip.compress(images_bytes, mtime=0)
    put("fuzz_mnist", "gzip_images", struct.pack(">H", len(gz)) + gz + labels_bytes)


def kvstore_wire():
    """Well-formed requests (first byte 8: an 80-byte header frame, then the payload) and an
    address book."""
    def header(type_, flags=1, payload=16):
        # magic, version, type, sender, flags, request, key, offset, count, total, dtype,
        # head, threshold, reserved, payload bytes: protocol.h's Header.
        return struct.pack("<IHHiIQqQQQiifIQ", 0x4B564657, 2, type_, 0, flags, 7, 3, 0, 4, 4, 0, 0, 0.0, 0, payload)
    for name, h, body in (("push", header(21), bytes(16)), ("pull", header(22, payload=0), b""),
                          ("init", header(20, flags=0), bytes(16)), ("compressed", header(21, 3, 4), bytes(4)),
                          ("row_push", header(25, payload=36), struct.pack("<qqq", 2, 1, 1) + bytes(12))):
        put("fuzz_kvstore_wire", name, bytes([8]) + h + body)
    put("fuzz_kvstore_wire", "address_book", b"server 0 tcp://127.0.0.1:9001\nworker 0 abcdef\nworker 1 123456\n")


def c_api():
    rng = np.random.RandomState(0)
    for i in range(8):
        put("fuzz_c_api", "random_%d" % i, bytes(rng.randint(0, 256, 96).astype(np.uint8)))


if __name__ == "__main__":
    for target in os.listdir(CORPUS) if os.path.isdir(CORPUS) else []:
        folder = os.path.join(CORPUS, target)
        for name in os.listdir(folder):
            if not name.startswith("regression_"):
                os.remove(os.path.join(folder, name))
    symbol_json()
    ndarray_list()
    recordio(images())
    text_iters()
    mnist()
    kvstore_wire()
    c_api()
    for target in sorted(os.listdir(CORPUS)):
        print(target, len(os.listdir(os.path.join(CORPUS, target))), "inputs")
