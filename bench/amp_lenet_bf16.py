"""LeNet on Fashion-MNIST, one epoch in float32 and one with bfloat16 automatic mixed
precision (mx.contrib.amp.init('bfloat16'): convolutions and dense layers in bfloat16,
float32 master weights), side by side: test accuracy and training time.

Each precision runs in its own process (amp.init rewraps the operator functions of the
whole process). Usage: bench/amp_lenet_bf16.py [--epochs 1] [--batch-size 64]
"""
import argparse
import json
import os
import subprocess
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples"))


def train(mode, args):
    import weft as mx
    from weft import autograd, gluon
    from fashion_mnist_gluon import DATA_DIR, evaluate, lenet, mnist_iter
    if mode == "bfloat16":
        from weft.contrib import amp
        amp.init(target_dtype="bfloat16")
    mx.random.seed(args.seed)
    np.random.seed(args.seed)
    train_it = mnist_iter(DATA_DIR, "train", args.batch_size, True, args.seed)
    test_it = mnist_iter(DATA_DIR, "t10k", args.batch_size, False, args.seed)
    net = lenet()
    net.initialize(mx.init.Xavier())
    net.hybridize()
    trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": args.lr, "momentum": 0.9})
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    start = time.perf_counter()
    for _ in range(args.epochs):
        train_it.reset()
        for batch in train_it:
            with autograd.record():
                # The loss takes float32 logits (bfloat16 ones are cast back first).
                loss = loss_fn(net(batch.data[0]).astype("float32"), batch.label[0])
            loss.backward()
            trainer.step(batch.data[0].shape[0])
    mx.nd.waitall()
    seconds = time.perf_counter() - start
    acc = evaluate(lambda x: net(x).astype("float32"), test_it)
    return {"mode": mode, "accuracy": acc, "train_seconds": seconds}


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--epochs", type=int, default=1)
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--lr", type=float, default=0.05)
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--mode", choices=["float32", "bfloat16"], help="run one precision in this process")
    args = ap.parse_args()
    if args.mode:
        print(json.dumps(train(args.mode, args)))
        return
    results = []
    for mode in ("float32", "bfloat16"):
        out = subprocess.run([sys.executable, __file__, "--mode", mode, "--epochs", str(args.epochs),
                              "--batch-size", str(args.batch_size), "--lr", str(args.lr), "--seed", str(args.seed)],
                             check=True, capture_output=True, text=True).stdout
        results.append(json.loads(out.strip().splitlines()[-1]))
    with open("/proc/cpuinfo") as f:
        cpu = next((l.split(":", 1)[1].strip() for l in f if l.startswith("model name")), "?")
    print("LeNet, Fashion-MNIST, %d epoch(s), batch %d, CPU: %s, load average %.1f"
          % (args.epochs, args.batch_size, cpu, os.getloadavg()[0]))
    for r in results:
        print("  %-9s test accuracy %.4f   training %.1f s" % (r["mode"], r["accuracy"], r["train_seconds"]))
    print("  bfloat16 - float32 accuracy: %+.4f" % (results[1]["accuracy"] - results[0]["accuracy"]))


if __name__ == "__main__":
    main()
