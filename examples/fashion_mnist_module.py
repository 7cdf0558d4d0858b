#!/usr/bin/env python3
"""LeNet on Fashion-MNIST through the Module API (the MXNet 1.x way: import weft as mx).

    PYTHONPATH=<build>/python python3 examples/fashion_mnist_module.py --epochs 5

Trains with Module.fit (SGD with momentum, the learning rate divided by 10 after epochs 3
and 4; Speedometer logging samples/s and accuracy; about 90 % test accuracy after 5 epochs),
evaluates test accuracy after each epoch, saves a checkpoint (prefix-symbol.json, prefix-%04d.params) after each
epoch, then loads the last one with Module.load and checks it scores the same.
"""
import argparse
import gzip
import logging
import os
import time

import numpy as np

import weft as mx

DATA_DIR = "/usr/share/datasets/fashion-mnist"


def lenet(num_classes=10):
    data = mx.sym.var("data")
    conv1 = mx.sym.Convolution(data, kernel=(5, 5), num_filter=20, name="conv1")
    act1 = mx.sym.Activation(conv1, act_type="relu", name="relu1")
    pool1 = mx.sym.Pooling(act1, pool_type="max", kernel=(2, 2), stride=(2, 2), name="pool1")
    conv2 = mx.sym.Convolution(pool1, kernel=(5, 5), num_filter=50, name="conv2")
    act2 = mx.sym.Activation(conv2, act_type="relu", name="relu2")
    pool2 = mx.sym.Pooling(act2, pool_type="max", kernel=(2, 2), stride=(2, 2), name="pool2")
    flat = mx.sym.Flatten(pool2, name="flatten")
    fc1 = mx.sym.FullyConnected(flat, num_hidden=500, name="fc1")
    act3 = mx.sym.Activation(fc1, act_type="relu", name="relu3")
    fc2 = mx.sym.FullyConnected(act3, num_hidden=num_classes, name="fc2")
    return mx.sym.SoftmaxOutput(fc2, name="softmax")


def read_idx(path, limit=None):
    """An IDX file (plain or gzip) as a numpy array: magic (2 zero bytes, type, ndim), big-endian
    dimensions, then the uint8 values."""
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as f:
        raw = f.read()
    if raw[0] != 0 or raw[1] != 0 or raw[2] != 0x08:
        raise ValueError("%s is not an unsigned-byte IDX file (magic %s)" % (path, raw[:4].hex()))
    ndim = raw[3]
    shape = tuple(int.from_bytes(raw[4 + 4 * i:8 + 4 * i], "big") for i in range(ndim))
    arr = np.frombuffer(raw, dtype=np.uint8, offset=4 + 4 * ndim).reshape(shape)
    return arr if limit is None else arr[:limit]


def iterators(data_dir, batch_size, limit):
    files = {split: (os.path.join(data_dir, "%s-images-idx3-ubyte.gz" % split),
                     os.path.join(data_dir, "%s-labels-idx1-ubyte.gz" % split)) for split in ("train", "t10k")}
    if hasattr(mx.io, "MNISTIter") and limit is None:
        train = mx.io.MNISTIter(image=files["train"][0], label=files["train"][1], batch_size=batch_size,
                                shuffle=True, flat=False, silent=True)
        test = mx.io.MNISTIter(image=files["t10k"][0], label=files["t10k"][1], batch_size=batch_size,
                               shuffle=False, flat=False, silent=True)
        return train, test
    # The numpy reader: for builds without MNISTIter, and for --limit (a subset of the files).
    arrays = {}
    for split, (images, labels) in files.items():
        x = read_idx(images, limit).astype(np.float32)[:, None, :, :] / 255
        arrays[split] = (x, read_idx(labels, limit).astype(np.float32))
    train = mx.io.NDArrayIter(*arrays["train"], batch_size=batch_size, shuffle=True, last_batch_handle="discard")
    test = mx.io.NDArrayIter(*arrays["t10k"], batch_size=batch_size)
    return train, test


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--epochs", type=int, default=5)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--lr", type=float, default=0.05)
    parser.add_argument("--momentum", type=float, default=0.9)
    parser.add_argument("--lr-decay-epochs", default="3,4",
                        help="epochs (comma-separated) after which the learning rate is multiplied by 0.1")
    parser.add_argument("--num-ctx", type=int, default=1, help="CPU contexts to split each batch over")
    parser.add_argument("--limit", type=int, default=None, help="use only the first N images of each split")
    parser.add_argument("--prefix", default="fashion_lenet", help="checkpoint prefix")
    parser.add_argument("--data-dir", default=DATA_DIR)
    parser.add_argument("--log-every", type=int, default=100, help="Speedometer period in batches")
    args = parser.parse_args()

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    mx.random.seed(0)
    np.random.seed(0)
    train, test = iterators(args.data_dir, args.batch_size, args.limit)
    contexts = [mx.cpu(i) for i in range(args.num_ctx)]
    mod = mx.mod.Module(lenet(), context=contexts)

    # The scheduler counts updates; the samples per epoch give the update at each decay epoch.
    samples = args.limit if args.limit is not None else 60000
    per_epoch = samples // args.batch_size
    steps = [int(e) * per_epoch for e in args.lr_decay_epochs.split(",") if e.strip()]
    optimizer_params = {"learning_rate": args.lr, "momentum": args.momentum, "wd": 1e-4}
    if steps:
        optimizer_params["lr_scheduler"] = mx.lr_scheduler.MultiFactorScheduler(step=steps, factor=0.1,
                                                                                base_lr=args.lr)

    tic = time.time()
    mod.fit(train, eval_data=test, eval_metric="acc", num_epoch=args.epochs,
            optimizer="sgd", optimizer_params=optimizer_params,
            initializer=mx.init.Xavier(magnitude=2.0),
            batch_end_callback=mx.callback.Speedometer(args.batch_size, args.log_every),
            epoch_end_callback=mx.callback.do_checkpoint(args.prefix))
    elapsed = time.time() - tic
    acc = dict(mod.score(test, "acc"))["accuracy"]
    logging.info("test accuracy %.4f after %d epochs (%.1f s of training)", acc, args.epochs, elapsed)

    # The checkpoint is what a later run (or MXNet) loads.
    loaded = mx.mod.Module.load(args.prefix, args.epochs, context=contexts)
    loaded.bind(test.provide_data, test.provide_label, for_training=False)
    reloaded = dict(loaded.score(test, "acc"))["accuracy"]
    logging.info("checkpoint %s-symbol.json + %s-%04d.params reloaded: test accuracy %.4f", args.prefix,
                 args.prefix, args.epochs, reloaded)
    if abs(reloaded - acc) > 1e-6:
        raise SystemExit("the reloaded checkpoint scores %.4f, the trained module %.4f" % (reloaded, acc))


if __name__ == "__main__":
    main()
