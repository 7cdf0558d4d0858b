"""The main job: LeNet on Fashion-MNIST with Weft's Gluon API, hybridized by default.

The batches come from weft.io.MNISTIter over the IDX files of Debian's
dataset-fashion-mnist package. Training uses SGD with momentum and a per-epoch learning-rate
decay; every `--log-every` batches a line shows the speed and the running accuracy. At the
end the model is exported (prefix-symbol.json, prefix-NNNN.params) and loaded back twice,
through gluon.SymbolBlock.imports and through the Module API, and both copies are evaluated
on the test set: their accuracy must equal the trained network's.
"""
import argparse
import os
import sys
import tempfile
import time

import numpy as np

import weft as mx
from weft import autograd, gluon, nd
from weft.gluon import nn

DATA_DIR = "/usr/share/datasets/fashion-mnist"


def lenet():
    net = nn.HybridSequential(prefix="lenet_")
    with net.name_scope():
        net.add(nn.Conv2D(20, kernel_size=5, activation="relu"), nn.MaxPool2D(pool_size=2, strides=2),
                nn.Conv2D(50, kernel_size=5, activation="relu"), nn.MaxPool2D(pool_size=2, strides=2),
                nn.Flatten(), nn.Dense(500, activation="relu"), nn.Dense(10))
    return net


def mnist_iter(data_dir, split, batch_size, shuffle, seed):
    return mx.io.MNISTIter(image=os.path.join(data_dir, "%s-images-idx3-ubyte.gz" % split),
                           label=os.path.join(data_dir, "%s-labels-idx1-ubyte.gz" % split),
                           batch_size=batch_size, shuffle=shuffle, flat=False, seed=seed, silent=True)


def evaluate(predict, data_iter):
    """Accuracy of predict(data) -> logits over the iterator (padding excluded)."""
    metric = mx.metric.Accuracy()
    data_iter.reset()
    for batch in data_iter:
        out = predict(batch.data[0])
        n = batch.data[0].shape[0] - (batch.pad or 0)
        metric.update([batch.label[0][:n]], [out[:n]])
    return metric.get()[1]


def main(args):
    mx.random.seed(args.seed)
    np.random.seed(args.seed)
    train = mnist_iter(args.data_dir, "train", args.batch_size, True, args.seed)
    test = mnist_iter(args.data_dir, "t10k", args.batch_size, False, args.seed)

    net = lenet()
    net.initialize(mx.init.Xavier())
    if not args.no_hybridize:
        net.hybridize()
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    trainer = gluon.Trainer(net.collect_params(), "sgd",
                            {"learning_rate": args.lr, "momentum": args.momentum, "wd": args.wd})
    print("LeNet on Fashion-MNIST from %s: %s, batch %d, %d epochs"
          % (args.data_dir, "hybridized" if not args.no_hybridize else "imperative", args.batch_size, args.epochs))

    metric = mx.metric.Accuracy()
    acc = 0.0
    # On a terminal a live bar per epoch; in a log (CI, a pipe) a line every --log-every batches.
    bar = mx.callback.TerminalProgress(batch_size=args.batch_size, num_epoch=args.epochs) \
        if sys.stdout.isatty() else None
    for epoch in range(args.epochs):
        trainer.set_learning_rate(args.lr * args.lr_decay ** epoch)
        metric.reset()
        train.reset()
        tic = window = time.time()
        samples = window_samples = 0
        for b, batch in enumerate(train):
            data, label = batch.data[0], batch.label[0]
            with autograd.record():
                out = net(data)
                loss = loss_fn(out, label)
            loss.backward()
            trainer.step(data.shape[0])
            samples += data.shape[0]
            window_samples += data.shape[0]
            if bar is not None:
                if (b + 1) % args.log_every == 0:
                    metric.update([label], [out])
                bar(mx.model.BatchEndParam(epoch=epoch, nbatch=b, eval_metric=metric, locals=None))
            elif (b + 1) % args.log_every == 0:
                metric.update([label], [out])
                now = time.time()
                print("epoch %d/%d  batch %d  %.0f samples/s  train accuracy %.4f"
                      % (epoch + 1, args.epochs, b + 1, window_samples / (now - window), metric.get()[1]),
                      flush=True)
                window, window_samples = now, 0
        nd.waitall()
        seconds = time.time() - tic
        acc = evaluate(net, test)
        if bar is not None:
            bar.epoch_end(epoch, [("train-accuracy", metric.get()[1]), ("test-accuracy", acc)])
        print("epoch %d: lr %.4f, %.0f samples/s, %.1f s, test accuracy %.4f"
              % (epoch + 1, trainer.learning_rate, samples / seconds, seconds, acc), flush=True)

    prefix = os.path.join(args.out_dir or tempfile.mkdtemp(prefix="weft-fashion-"), "lenet")
    if args.no_hybridize:
        net.hybridize()
        net(nd.zeros((1, 1, 28, 28)))
    sym_file, params_file = net.export(prefix, epoch=args.epochs)
    print("exported %s and %s" % (sym_file, params_file))

    block = gluon.SymbolBlock.imports(sym_file, ["data"], params_file)
    acc_block = evaluate(block, test)
    sym, arg_params, aux_params = mx.model.load_checkpoint(prefix, args.epochs)
    mod = mx.mod.Module(sym, data_names=["data"], label_names=None, context=mx.cpu())
    mod.bind(data_shapes=test.provide_data, for_training=False)
    mod.set_params(arg_params, aux_params)

    def module_predict(data):
        mod.forward(mx.io.DataBatch([data]), is_train=False)
        return mod.get_outputs()[0]

    acc_module = evaluate(module_predict, test)
    print("reloaded: SymbolBlock.imports test accuracy %.4f, Module test accuracy %.4f" % (acc_block, acc_module))
    if abs(acc_block - acc) > 1e-9 or abs(acc_module - acc) > 1e-9:
        print("the reloaded models disagree with the trained one (%.4f)" % acc, file=sys.stderr)
        return 1
    if acc < args.min_accuracy:
        print("test accuracy %.4f is below the expected %.2f" % (acc, args.min_accuracy), file=sys.stderr)
        return 1
    print("final test accuracy %.4f" % acc)
    return 0


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data-dir", default=DATA_DIR, help="folder of the *-ubyte.gz files (default: %(default)s)")
    p.add_argument("--epochs", type=int, default=5)
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--lr", type=float, default=0.05, help="learning rate of the first epoch")
    p.add_argument("--lr-decay", type=float, default=0.7, help="factor applied to the learning rate each epoch")
    p.add_argument("--momentum", type=float, default=0.9)
    p.add_argument("--wd", type=float, default=1e-4, help="weight decay")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--log-every", type=int, default=100, help="batches between progress lines")
    p.add_argument("--no-hybridize", action="store_true", help="run the network imperatively")
    p.add_argument("--out-dir", default=None, help="where to export the model (default: a new temporary folder)")
    p.add_argument("--min-accuracy", type=float, default=0.89, help="fail below this test accuracy")
    return p.parse_args(argv)


if __name__ == "__main__":
    sys.exit(main(parse_args()))
