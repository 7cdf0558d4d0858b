"""MNISTIter against PyTorch's DataLoader: one epoch over Fashion-MNIST's 60000 training
images, batch 128, shuffled, as float32 (batch, 1, 28, 28) images and float32 labels.

Weft's MNISTIter reads the gzip IDX files itself and prepares batches on its prefetch
thread; PyTorch's DataLoader (num_workers=0, the fastest setting for tensors already in
memory) batches a TensorDataset of the same values, parsed once with numpy. Load time
(decompressing and converting the files) is printed apart from the epoch time.

    PYTHONPATH=<build>/python python3 bench/mnist_iter_bench.py
"""
import gzip
import os
import struct
import sys

import peer  # first: it sets the environment the libraries read

import time  # noqa: E402

import numpy as np  # noqa: E402
import torch  # noqa: E402
from torch.utils.data import DataLoader, TensorDataset  # noqa: E402

import weft  # noqa: E402

ROOT = "/usr/share/datasets/fashion-mnist"
IMAGES = os.path.join(ROOT, "train-images-idx3-ubyte.gz")
LABELS = os.path.join(ROOT, "train-labels-idx1-ubyte.gz")
BATCH = 128


def parse_idx(path):
    with gzip.open(path, "rb") as f:
        raw = f.read()
    ndim = raw[3]
    dims = struct.unpack(">" + "I" * ndim, raw[4:4 + 4 * ndim])
    return np.frombuffer(raw, dtype=np.uint8, offset=4 + 4 * ndim).reshape(dims)


def weft_epoch(it):
    it.reset()
    n = 0
    for batch in it:
        n += batch.data[0].shape[0] - batch.pad
    return n


def torch_epoch(loader):
    n = 0
    for x, y in loader:
        n += x.shape[0]
    return n


def main():
    if not os.path.exists(IMAGES):
        sys.exit("Fashion-MNIST not found under %s" % ROOT)

    t0 = time.perf_counter()
    it = weft.io.MNISTIter(image=IMAGES, label=LABELS, batch_size=BATCH, shuffle=True, silent=True)
    weft_load = time.perf_counter() - t0

    t0 = time.perf_counter()
    images = torch.from_numpy(parse_idx(IMAGES).astype(np.float32)[:, None] / 256.0)
    labels = torch.from_numpy(parse_idx(LABELS).astype(np.float32))
    loader = DataLoader(TensorDataset(images, labels), batch_size=BATCH, shuffle=True, drop_last=True, num_workers=0)
    torch_load = time.perf_counter() - t0

    # Same samples per epoch: MNISTIter drops the trailing partial batch, so does drop_last.
    assert weft_epoch(it) == torch_epoch(loader) == (60000 // BATCH) * BATCH

    # A sanity check that both see the same values: the first weft batch against numpy.
    it.reset()
    first = it.next()
    idx = first.index.astype(np.int64)
    np.testing.assert_array_equal(first.data[0].asnumpy(), images.numpy()[idx])
    np.testing.assert_array_equal(first.label[0].asnumpy(), labels.numpy()[idx])

    t_weft = peer.seconds_per_call(lambda: weft_epoch(it), min_seconds=3.0, min_runs=3)
    t_torch = peer.seconds_per_call(lambda: torch_epoch(loader), min_seconds=3.0, min_runs=3)
    print("Fashion-MNIST train, 60000 images, batch %d, shuffled, float32 (B,1,28,28)" % BATCH)
    print("load (gunzip + convert):   weft MNISTIter %.3f s   numpy+torch %.3f s" % (weft_load, torch_load))
    print("epoch: weft MNISTIter %.1f ms   torch DataLoader %.1f ms   torch/weft = %.2fx"
          % (t_weft * 1e3, t_torch * 1e3, t_torch / t_weft))
    peer.record("Fashion-MNIST epoch, batch %d" % BATCH, t_weft * 1e3, t_torch * 1e3, "ms", False)


if __name__ == "__main__":
    main()
