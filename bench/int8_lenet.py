"""LeNet on Fashion-MNIST trained in float32 (the main job's network and recipe), then
quantized to int8 with mx.contrib.quantization.quantize_net_v2 (the oneDNN path: quantized
convolutions and dense layers with their relu fused, uint8/int8 chosen by calibration),
calibrated on --calib-batches batches of training data with naive (min/max) and entropy (KL)
ranges. Side by side: test accuracy, and inference speed over the test set at --batch-size.

The float32 model is trained here, saved, and each of float32, int8-naive and int8-entropy
is loaded, calibrated and evaluated in a process of its own, one after the other. The load
average is printed with the figures: other jobs on the machine move the speeds, not the
accuracies. Usage: bench/int8_lenet.py [--epochs 3] [--calib-batches 10]
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples"))

MODES = ("float32", "int8-naive", "int8-entropy")


def train(args, prefix):
    import weft as mx
    from weft import autograd, gluon
    from fashion_mnist_gluon import DATA_DIR, evaluate, lenet, mnist_iter
    mx.random.seed(args.seed)
    np.random.seed(args.seed)
    train_it = mnist_iter(DATA_DIR, "train", 64, True, args.seed)
    net = lenet()
    net.initialize(mx.init.Xavier())
    net.hybridize()
    trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": args.lr, "momentum": 0.9})
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    for epoch in range(args.epochs):
        train_it.reset()
        if epoch == args.epochs - 1 and args.epochs > 1:
            trainer.set_learning_rate(args.lr * 0.1)
        for batch in train_it:
            with autograd.record():
                loss = loss_fn(net(batch.data[0]), batch.label[0])
            loss.backward()
            trainer.step(batch.data[0].shape[0])
    net.export(prefix)
    return evaluate(net, mnist_iter(DATA_DIR, "t10k", 100, False, args.seed))


def run(mode, args, prefix):
    """Loads the float32 model, quantizes it for an int8 mode, and measures it."""
    import weft as mx
    from weft.contrib import quantization
    from fashion_mnist_gluon import DATA_DIR, evaluate, mnist_iter
    net = mx.gluon.SymbolBlock.imports(prefix + "-symbol.json", ["data"], prefix + "-0000.params")
    calib_seconds = 0.0
    if mode != "float32":
        calib = mnist_iter(DATA_DIR, "train", 64, True, args.seed + 1)
        start = time.perf_counter()
        net = quantization.quantize_net_v2(net, quantized_dtype="auto", calib_mode=mode.split("-")[1],
                                           calib_data=calib, num_calib_batches=args.calib_batches, ctx=mx.cpu())
        calib_seconds = time.perf_counter() - start
    net.hybridize()
    test = mnist_iter(DATA_DIR, "t10k", args.batch_size, False, args.seed)
    accuracy = evaluate(net, test)
    batches = []
    test.reset()
    for batch in test:
        batches.append(batch.data[0])
    net(batches[0]).wait_to_read()
    best = float("inf")
    for _ in range(args.repeats):
        start = time.perf_counter()
        for x in batches:
            out = net(x)
        out.wait_to_read()
        best = min(best, time.perf_counter() - start)
    return {"mode": mode, "accuracy": accuracy, "images_per_s": len(batches) * args.batch_size / best,
            "calib_seconds": calib_seconds}


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--lr", type=float, default=0.05)
    ap.add_argument("--calib-batches", type=int, default=10)
    ap.add_argument("--batch-size", type=int, default=100)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--mode", choices=MODES, help="measure one model in this process")
    ap.add_argument("--prefix", help="the saved float32 model (with --mode)")
    args = ap.parse_args()
    if args.mode:
        print(json.dumps(run(args.mode, args, args.prefix)))
        return

    with open("/proc/cpuinfo") as f:
        cpu = next((line.split(":", 1)[1].strip() for line in f if line.startswith("model name")), "?")
    load_before = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as tmp:
        prefix = os.path.join(tmp, "lenet")
        start = time.perf_counter()
        trained = train(args, prefix)
        print("LeNet, Fashion-MNIST: %d epochs of float32 training in %.0f s, test accuracy %.4f"
              % (args.epochs, time.perf_counter() - start, trained), flush=True)
        results = []
        for mode in MODES:
            cmd = [sys.executable, os.path.abspath(__file__), "--mode", mode, "--prefix", prefix]
            for k in ("epochs", "lr", "calib_batches", "batch_size", "repeats", "seed"):
                cmd += ["--" + k.replace("_", "-"), str(getattr(args, k))]
            out = subprocess.run(cmd, check=True, stdout=subprocess.PIPE, text=True).stdout
            results.append(json.loads(out.strip().splitlines()[-1]))
    print("CPU: %s, %d cores, OMP_NUM_THREADS=%s, load average %.1f before, %.1f after"
          % (cpu, os.cpu_count(), os.environ.get("OMP_NUM_THREADS", "unset"), load_before, os.getloadavg()[0]))
    print("%-14s %10s %12s %14s" % ("model", "accuracy", "images/s", "calibration s"))
    base = results[0]
    for r in results:
        print("%-14s %10.4f %12.0f %14.1f   accuracy %+.2f%%, speed %.2fx float32"
              % (r["mode"], r["accuracy"], r["images_per_s"], r["calib_seconds"],
                 100 * (r["accuracy"] - base["accuracy"]), r["images_per_s"] / base["images_per_s"]))


if __name__ == "__main__":
    main()
