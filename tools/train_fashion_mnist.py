"""The main job: trains LeNet on Fashion-MNIST with Weft.

The network is built as a Symbol (two convolution + max-pooling stages, two fully
connected layers, SoftmaxOutput), bound once to an executor that runs the planned graph
forward and backward; the parameters are updated with SGD with momentum written as array
operations. Test accuracy comes from a second executor bound to the same parameter arrays.

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


def lenet():
    data = mx.sym.Variable("data")
    h = mx.sym.Convolution(data, kernel=(5, 5), num_filter=20, name="conv1")
    h = mx.sym.Activation(h, act_type="relu", name="relu1")
    h = mx.sym.Pooling(h, pool_type="max", kernel=(2, 2), stride=(2, 2), name="pool1")
    h = mx.sym.Convolution(h, kernel=(5, 5), num_filter=50, name="conv2")
    h = mx.sym.Activation(h, act_type="relu", name="relu2")
    h = mx.sym.Pooling(h, pool_type="max", kernel=(2, 2), stride=(2, 2), name="pool2")
    h = mx.sym.Flatten(h, name="flatten")
    h = mx.sym.FullyConnected(h, num_hidden=500, name="fc1")
    h = mx.sym.Activation(h, act_type="relu", name="relu3")
    h = mx.sym.FullyConnected(h, num_hidden=NUM_CLASSES, name="fc2")
    return mx.sym.SoftmaxOutput(h, name="softmax")


def init_params(executor, rng):
    """Xavier-uniform weights (fan in + fan out), zero biases."""
    for name, arr in executor.arg_dict.items():
        if name in ("data", "softmax_label"):
            continue
        if name.endswith("_bias"):
            arr[:] = 0
            continue
        fan_out, fan_in = arr.shape[0], int(np.prod(arr.shape[1:]))
        receptive = int(np.prod(arr.shape[2:])) if len(arr.shape) > 2 else 1
        limit = np.sqrt(6.0 / (fan_in + fan_out * receptive))
        arr[:] = rng.uniform(-limit, limit, size=arr.shape).astype(np.float32)


def train(args):
    train_x, train_y = load_split(args.data_dir, "train")
    test_x, test_y = load_split(args.data_dir, "t10k")
    print(f"Fashion-MNIST: {train_x.shape[0]} training and {test_x.shape[0]} test images from {args.data_dir}")
    rng = np.random.default_rng(args.seed)
    net = lenet()
    batch = args.batch_size
    trainer = net.simple_bind(mx.cpu(), data=(batch, 1, 28, 28), softmax_label=(batch,),
                              grad_req={n: "write" for n in net.list_arguments() if n not in ("data", "softmax_label")})
    init_params(trainer, rng)
    params = [n for n in net.list_arguments() if n in trainer.grad_dict]
    momenta = {n: nd.zeros(trainer.arg_dict[n].shape) for n in params}
    print(f"LeNet: {sum(int(np.prod(trainer.arg_dict[n].shape)) for n in params):,} parameters; "
          f"{trainer.debug_str().splitlines()[-2]}")
    # The evaluation executor reads the trainer's parameter arrays: no copies.
    eval_batch = 1000
    evaluator = net.bind(mx.cpu(), {**{n: trainer.arg_dict[n] for n in params},
                                    "data": nd.zeros((eval_batch, 1, 28, 28)),
                                    "softmax_label": nd.zeros((eval_batch,))}, grad_req="null")
    num_batches = train_x.shape[0] // batch

    def accuracy():
        correct = 0
        for b in range(0, test_x.shape[0], eval_batch):
            evaluator.arg_dict["data"][:] = test_x[b:b + eval_batch].reshape(-1, 1, 28, 28)
            probs = evaluator.forward(is_train=False)[0]
            correct += int((nd.argmax(probs, axis=1).asnumpy() == test_y[b:b + eval_batch]).sum())
        return correct / test_x.shape[0]

    for epoch in range(args.epochs):
        lr = args.lr * args.lr_decay ** epoch
        order = rng.permutation(train_x.shape[0])
        x_epoch = nd.array(train_x[order].reshape(-1, 1, 28, 28))
        y_epoch = nd.array(train_y[order].astype(np.float32))
        start = interval_start = time.perf_counter()
        loss_sum = 0.0
        for b in range(num_batches):
            rows = slice(b * batch, (b + 1) * batch)
            trainer.arg_dict["data"][:] = x_epoch[rows]
            trainer.arg_dict["softmax_label"][:] = y_epoch[rows]
            probs = trainer.forward(is_train=True)[0]
            trainer.backward()
            for n in params:
                # SoftmaxOutput's gradient is summed over the batch: scale it to a mean.
                mom = momenta[n]
                mom[:] = args.momentum * mom - (lr / batch) * trainer.grad_dict[n] - lr * args.wd * trainer.arg_dict[n]
                trainer.arg_dict[n][:] += mom
            if (b + 1) % args.log_every == 0 or b + 1 == num_batches:
                picked = nd.pick(probs, trainer.arg_dict["softmax_label"], axis=1).asnumpy()
                loss_sum = float(-np.log(np.maximum(picked, 1e-12)).mean())
                now = time.perf_counter()
                done = (b % args.log_every + 1) * batch
                print(f"epoch {epoch + 1}/{args.epochs}  batch {b + 1}/{num_batches}  "
                      f"loss {loss_sum:.4f}  {done / (now - interval_start):,.0f} samples/s", flush=True)
                interval_start = now
        epoch_seconds = time.perf_counter() - start
        acc = accuracy()
        print(f"epoch {epoch + 1}: lr {lr:.4f}, {num_batches * batch / epoch_seconds:,.0f} samples/s, "
              f"test accuracy {acc:.2%}", flush=True)

    if acc < args.min_accuracy:
        print(f"test accuracy {acc:.2%} is below the expected {args.min_accuracy:.0%}", file=sys.stderr)
        return 1
    print(f"final test accuracy {acc:.2%}")
    return 0


def parse_args():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--data-dir", default=DATA_DIR, help="folder of the *-ubyte.gz files (default: %(default)s)")
    p.add_argument("--epochs", type=int, default=5)
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--lr", type=float, default=0.05, help="learning rate of the first epoch")
    p.add_argument("--lr-decay", type=float, default=0.7, help="factor applied to the learning rate each epoch")
    p.add_argument("--momentum", type=float, default=0.9)
    p.add_argument("--wd", type=float, default=1e-4, help="weight decay")
    p.add_argument("--seed", type=int, default=0, help="seed of the initialisation and shuffling")
    p.add_argument("--log-every", type=int, default=100, help="batches between progress lines")
    p.add_argument("--min-accuracy", type=float, default=0.85,
                   help="exit with an error when the final test accuracy is lower (default: %(default)s)")
    return p.parse_args()


if __name__ == "__main__":
    sys.exit(train(parse_args()))
