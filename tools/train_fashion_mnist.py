"""The main job: trains a classifier on Fashion-MNIST with Weft.

The model is multinomial logistic regression (softmax regression): logits = x W + b,
softmax cross-entropy loss, minibatch SGD with a learning rate that decays every epoch.
Until autograd lands, the gradient is written out as array operations:
d loss / d logits = (softmax(logits) - onehot(labels)) / batch.

The data are the IDX files of Debian's dataset-fashion-mnist package.
"""
import argparse
import gzip
import os
import struct
import sys
import time

import numpy as np

import weft as mx

nd = mx.nd

DATA_DIR = "/usr/share/datasets/fashion-mnist"
NUM_CLASSES = 10


def read_idx(path):
    """An IDX file (big-endian header, unsigned bytes) as a numpy array."""
    with gzip.open(path, "rb") as f:
        data = f.read()
    zero, dtype_code, ndim = struct.unpack(">HBB", data[:4])
    if zero != 0 or dtype_code != 0x08:
        raise ValueError(f"{path}: expected an IDX file of unsigned bytes, got header {data[:4].hex()}")
    dims = struct.unpack(">" + "I" * ndim, data[4:4 + 4 * ndim])
    values = np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * ndim)
    if values.size != int(np.prod(dims)):
        raise ValueError(f"{path}: header says {dims}, found {values.size} values")
    return values.reshape(dims)


def load_split(data_dir, prefix):
    """Images as float32 rows scaled to [0, 1], and labels, of one split ("train", "t10k")."""
    images = read_idx(os.path.join(data_dir, f"{prefix}-images-idx3-ubyte.gz"))
    labels = read_idx(os.path.join(data_dir, f"{prefix}-labels-idx1-ubyte.gz"))
    if images.shape[0] != labels.shape[0]:
        raise ValueError(f"{prefix}: {images.shape[0]} images but {labels.shape[0]} labels")
    return images.reshape(images.shape[0], -1).astype(np.float32) / 255.0, labels


def one_hot(labels):
    encoded = np.zeros((labels.shape[0], NUM_CLASSES), dtype=np.float32)
    encoded[np.arange(labels.shape[0]), labels] = 1.0
    return encoded


class SoftmaxRegression:
    def __init__(self, num_features):
        self.weight = nd.zeros((num_features, NUM_CLASSES))
        self.bias = nd.zeros((1, NUM_CLASSES))

    def logits(self, x):
        return nd.broadcast_add(nd.dot(x, self.weight), self.bias)

    def sgd_step(self, x, targets, lr):
        """One SGD step on a batch; returns the batch's mean loss as a 1-element array."""
        batch = x.shape[0]
        z = self.logits(x)
        # Subtracting the row maximum keeps exp from overflowing.
        row_max = nd.max(z, axis=1, keepdims=True)
        e = nd.exp(nd.broadcast_sub(z, row_max))
        total = nd.sum(e, axis=1, keepdims=True)
        probs = nd.broadcast_div(e, total)
        # -log softmax(z)[label] = log(total) + row_max - z[label]
        loss = (nd.sum(nd.log(total) + row_max) - nd.sum(z * targets)) / batch
        grad = (probs - targets) / batch
        self.weight -= lr * nd.dot(x, grad, transpose_a=True)
        self.bias -= lr * nd.sum(grad, axis=0, keepdims=True)
        return loss

    def accuracy(self, x, labels):
        predicted = nd.argmax(self.logits(x), axis=1).asnumpy().astype(np.int64)
        return float(np.mean(predicted == labels))


def train(args):
    train_x, train_y = load_split(args.data_dir, "train")
    test_x, test_y = load_split(args.data_dir, "t10k")
    print(f"Fashion-MNIST: {train_x.shape[0]} training and {test_x.shape[0]} test images from {args.data_dir}")
    rng = np.random.default_rng(args.seed)
    model = SoftmaxRegression(train_x.shape[1])
    test_x_nd = nd.array(test_x)
    num_batches = train_x.shape[0] // args.batch_size

    for epoch in range(args.epochs):
        lr = args.lr * args.lr_decay ** epoch
        order = rng.permutation(train_x.shape[0])
        # One upload per epoch; each batch is then a view of rows.
        x_epoch = nd.array(train_x[order])
        t_epoch = nd.array(one_hot(train_y[order]))
        start = interval_start = time.perf_counter()
        for b in range(num_batches):
            rows = slice(b * args.batch_size, (b + 1) * args.batch_size)
            loss = model.sgd_step(x_epoch[rows], t_epoch[rows], lr)
            if (b + 1) % args.log_every == 0 or b + 1 == num_batches:
                loss_value = float(loss.asnumpy()[0])
                now = time.perf_counter()
                done = (b % args.log_every + 1) * args.batch_size
                print(f"epoch {epoch + 1}/{args.epochs}  batch {b + 1}/{num_batches}  "
                      f"loss {loss_value:.4f}  {done / (now - interval_start):,.0f} samples/s", flush=True)
                interval_start = now
        epoch_seconds = time.perf_counter() - start
        accuracy = model.accuracy(test_x_nd, test_y)
        print(f"epoch {epoch + 1}: lr {lr:.4f}, {num_batches * args.batch_size / epoch_seconds:,.0f} samples/s, "
              f"test accuracy {accuracy:.2%}", flush=True)

    if accuracy < args.min_accuracy:
        print(f"test accuracy {accuracy:.2%} is below the expected {args.min_accuracy:.0%}", file=sys.stderr)
        return 1
    print(f"final test accuracy {accuracy:.2%}")
    return 0


def parse_args():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--data-dir", default=DATA_DIR, help="folder of the *-ubyte.gz files (default: %(default)s)")
    p.add_argument("--epochs", type=int, default=8)
    p.add_argument("--batch-size", type=int, default=100)
    p.add_argument("--lr", type=float, default=0.5, help="learning rate of the first epoch")
    p.add_argument("--lr-decay", type=float, default=0.6, help="factor applied to the learning rate each epoch")
    p.add_argument("--seed", type=int, default=0, help="seed of the shuffling")
    p.add_argument("--log-every", type=int, default=100, help="batches between progress lines")
    p.add_argument("--min-accuracy", type=float, default=0.80,
                   help="exit with an error when the final test accuracy is lower (default: %(default)s)")
    return p.parse_args()


if __name__ == "__main__":
    sys.exit(train(parse_args()))
