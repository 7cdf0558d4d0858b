"""Trains ResNet-50 v1 (Gluon model zoo, 10 classes) briefly on Fashion-MNIST so that
bench/int8_resnet50.py can measure int8 against float32 with realistically trained weights
instead of random ones (whose top two logits lie so close that int8's agreement with
float32 says little).

The 28x28 grey images are padded to --size (32 by default) and repeated over 3 channels,
normalised with the training set's mean and deviation. Adam (--lr, cosine decay after a
short warm-up; SGD with momentum diverged from scratch in so few steps), --steps steps of
--batch-size, stopped early after --max-minutes. The network is exported (hybridized) as
<prefix>-symbol.json / <prefix>-0000.params; the test accuracy on --test-images held-out
images is printed. The same weights run at any input size (the network ends in global
average pooling), so the benchmark times them at 224x224.
Usage: bench/int8_resnet50_train.py --prefix /tmp/fmnist_resnet50 [--steps 400]
"""
import argparse
import gzip
import os
import time

import numpy as np

DATA_DIR = "/usr/share/datasets/fashion-mnist"
MEAN, STD = 0.2860, 0.3530


def load(split, data_dir=DATA_DIR):
    """(images uint8 (n, 28, 28), labels int) of a Fashion-MNIST split ('train' or 't10k')."""
    with gzip.open(os.path.join(data_dir, "%s-images-idx3-ubyte.gz" % split)) as f:
        images = np.frombuffer(f.read(), np.uint8, offset=16).reshape(-1, 28, 28)
    with gzip.open(os.path.join(data_dir, "%s-labels-idx1-ubyte.gz" % split)) as f:
        labels = np.frombuffer(f.read(), np.uint8, offset=8).astype(np.int64)
    return images, labels


def prepare(images, size):
    """float32 (n, 3, size, size): normalised, zero-padded (in normalised units) to size."""
    x = (images.astype(np.float32) / 255.0 - MEAN) / STD
    pad = (size - 28) // 2
    x = np.pad(x, ((0, 0), (pad, size - 28 - pad), (pad, size - 28 - pad)), constant_values=-MEAN / STD)
    return np.repeat(x[:, None], 3, axis=1)


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--prefix", required=True)
    ap.add_argument("--size", type=int, default=32)
    ap.add_argument("--steps", type=int, default=400)
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--lr", type=float, default=0.001)
    ap.add_argument("--max-minutes", type=float, default=20.0)
    ap.add_argument("--test-images", type=int, default=2000)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()

    import weft as mx
    from weft import autograd, gluon
    from weft.gluon.model_zoo import vision
    mx.random.seed(args.seed)
    rng = np.random.RandomState(args.seed)
    images, labels = load("train")
    net = vision.resnet50_v1(classes=10)
    net.initialize(mx.init.Xavier(magnitude=2))
    net.hybridize()
    schedule = mx.lr_scheduler.CosineScheduler(max_update=args.steps, base_lr=args.lr, final_lr=args.lr / 20,
                                               warmup_steps=20)
    trainer = gluon.Trainer(net.collect_params(), "adam", {"learning_rate": args.lr, "lr_scheduler": schedule})
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    start = time.time()
    order = rng.permutation(len(images))
    for step in range(args.steps):
        idx = order[(step * args.batch_size) % len(order):][:args.batch_size]
        x = mx.nd.array(prepare(images[idx], args.size))
        y = mx.nd.array(labels[idx])
        with autograd.record():
            loss = loss_fn(net(x), y)
        loss.backward()
        trainer.step(args.batch_size)
        if step % 20 == 0 or step == args.steps - 1:
            print("step %d loss %.4f (%.0f s)" % (step, loss.mean().asscalar(), time.time() - start), flush=True)
        if time.time() - start > args.max_minutes * 60:
            print("stopped after %d steps (time limit)" % (step + 1))
            break
    net.export(args.prefix)
    test_images, test_labels = load("t10k")
    n = args.test_images
    correct = 0
    for i in range(0, n, 100):
        out = net(mx.nd.array(prepare(test_images[i:i + 100], args.size))).asnumpy()
        correct += int((out.argmax(1) == test_labels[i:i + 100]).sum())
    print("trained %.0f s; float32 test accuracy on %d images: %.4f" % (time.time() - start, n, correct / n))


if __name__ == "__main__":
    main()
