"""Training throughput on Fashion-MNIST, Weft (hybridized Gluon, Module, imperative Gluon)
side by side with PyTorch, LeNet's convolutions alone, and the time each takes to reach 89 %
test accuracy with LeNet.

Models: MLP 784-512-512-10 (ReLU) and LeNet (conv 20@5x5, pool, conv 50@5x5, pool, fc 500,
fc 10), SGD with momentum 0.9, batch 128 and 64. The batches are prepared in memory for
both frameworks, so the figures are the training step alone. Issue 5's targets: hybridized
Gluon and Module >= 1.3x PyTorch's samples/s, imperative Gluon >= 1.0x.

Each framework runs in a process of its own (worker.py), kept up for the whole run: PyTorch
set up as peer.py sets it (OMP_WAIT_POLICY=PASSIVE, 2 threads), Weft with the environment
this script was started with. The machine's speed drifts within a minute, so the two take
turns: `rounds` interleaved timed runs of each, the best of each reported, with the load
average printed before and after.

    python bench/training_bench.py [--steps N] [--rounds R] [--models mlp,lenet]
        [--batches 128,64] [--skip-conv-layers] [--skip-time-to-accuracy]
"""
import argparse
import gzip
import importlib
import os
import struct
import sys
import time

import numpy as np

BENCH = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, BENCH)
import worker  # noqa: E402
from timing import record  # noqa: E402

# The framework a worker runs, imported when the worker starts (never both in one process).
mx = autograd = gluon = nd = nn = torch = None


def import_weft():
    global mx, autograd, gluon, nd, nn
    mx = importlib.import_module("weft")
    autograd, gluon, nd = mx.autograd, mx.gluon, mx.nd
    nn = mx.gluon.nn


def import_torch():
    global torch
    importlib.import_module("peer")  # first: it sets the environment OpenMP and OpenBLAS read
    torch = importlib.import_module("torch")


DATA = "/usr/share/datasets/fashion-mnist"


def read_idx(path):
    with gzip.open(path, "rb") as f:
        raw = f.read()
    ndim = raw[3]
    dims = struct.unpack(">" + "I" * ndim, raw[4:4 + 4 * ndim])
    return np.frombuffer(raw, dtype=np.uint8, offset=4 + 4 * ndim).reshape(dims)


def load(split):
    x = read_idx(os.path.join(DATA, "%s-images-idx3-ubyte.gz" % split)).astype(np.float32)[:, None] / 255.0
    y = read_idx(os.path.join(DATA, "%s-labels-idx1-ubyte.gz" % split)).astype(np.int64)
    return x, y


# ------------------------------------------------------------------------------- Weft
def weft_net(kind):
    net = nn.HybridSequential(prefix="%s_" % kind)
    with net.name_scope():
        if kind == "mlp":
            net.add(nn.Flatten(), nn.Dense(512, activation="relu"), nn.Dense(512, activation="relu"), nn.Dense(10))
        else:
            net.add(nn.Conv2D(20, 5, activation="relu"), nn.MaxPool2D(2, 2), nn.Conv2D(50, 5, activation="relu"),
                    nn.MaxPool2D(2, 2), nn.Flatten(), nn.Dense(500, activation="relu"), nn.Dense(10))
    net.initialize(mx.init.Xavier(magnitude=2.24))
    return net


def weft_symbol(kind):
    s = mx.sym
    h = s.var("data")
    if kind == "mlp":
        h = s.Activation(s.FullyConnected(s.Flatten(h), num_hidden=512, name="fc1"), act_type="relu")
        h = s.Activation(s.FullyConnected(h, num_hidden=512, name="fc2"), act_type="relu")
        h = s.FullyConnected(h, num_hidden=10, name="fc3")
    else:
        h = s.Pooling(s.Activation(s.Convolution(h, kernel=(5, 5), num_filter=20, name="conv1"), act_type="relu"),
                      pool_type="max", kernel=(2, 2), stride=(2, 2))
        h = s.Pooling(s.Activation(s.Convolution(h, kernel=(5, 5), num_filter=50, name="conv2"), act_type="relu"),
                      pool_type="max", kernel=(2, 2), stride=(2, 2))
        h = s.Activation(s.FullyConnected(s.Flatten(h), num_hidden=500, name="fc1"), act_type="relu")
        h = s.FullyConnected(h, num_hidden=10, name="fc2")
    return s.SoftmaxOutput(h, name="softmax")


def weft_gluon_steps(kind, batches, hybridize, lr=0.05):
    net = weft_net(kind)
    if hybridize:
        net.hybridize()
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": lr, "momentum": 0.9, "wd": 1e-4})

    def step(i):
        x, y = batches[i % len(batches)]
        with autograd.record():
            loss = loss_fn(net(x), y)
        loss.backward()
        trainer.step(x.shape[0])
    return step, net


def weft_module_steps(kind, batches, lr=0.05):
    batch = batches[0][0].shape[0]
    mod = mx.mod.Module(weft_symbol(kind), data_names=["data"], label_names=["softmax_label"], context=mx.cpu())
    mod.bind(data_shapes=[("data", batches[0][0].shape)], label_shapes=[("softmax_label", (batch,))])
    mod.init_params(mx.init.Xavier(magnitude=2.24))
    mod.init_optimizer(optimizer="sgd", optimizer_params={"learning_rate": lr, "momentum": 0.9, "wd": 1e-4})
    dbs = [mx.io.DataBatch([x], [y]) for x, y in batches]

    def step(i):
        mod.forward_backward(dbs[i % len(dbs)])
        mod.update()
    return step, mod


# ------------------------------------------------------------------------------- PyTorch
def torch_net(kind):
    if kind == "mlp":
        return torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(784, 512), torch.nn.ReLU(),
                                   torch.nn.Linear(512, 512), torch.nn.ReLU(), torch.nn.Linear(512, 10))
    return torch.nn.Sequential(torch.nn.Conv2d(1, 20, 5), torch.nn.ReLU(), torch.nn.MaxPool2d(2, 2),
                               torch.nn.Conv2d(20, 50, 5), torch.nn.ReLU(), torch.nn.MaxPool2d(2, 2),
                               torch.nn.Flatten(), torch.nn.Linear(800, 500), torch.nn.ReLU(),
                               torch.nn.Linear(500, 10))


def torch_steps(kind, batches, lr=0.05):
    net = torch_net(kind)
    opt = torch.optim.SGD(net.parameters(), lr=lr, momentum=0.9, weight_decay=1e-4)
    loss_fn = torch.nn.CrossEntropyLoss()

    def step(i):
        x, y = batches[i % len(batches)]
        opt.zero_grad()
        loss = loss_fn(net(x), y)
        loss.backward()
        opt.step()
    return step, net


def warm_up(step, sync):
    # The first steps create oneDNN's primitives and grow the memory pools, and whichever
    # framework runs first also warms the machine's caches and clocks: at least 30 steps and
    # 2 seconds of each are not timed.
    start, i = time.perf_counter(), 0
    while i < 30 or time.perf_counter() - start < 2.0:
        step(i)
        i += 1
        if i % 10 == 0:
            sync()
    sync()


def samples_per_second(step, batch, steps, sync):
    sync()
    start = time.perf_counter()
    for i in range(steps):
        step(i)
    sync()
    return steps * batch / (time.perf_counter() - start)


def batches_for(framework, kind, batch, train_x, train_y):
    """The runs a worker times for one model and batch: (step, sync) pairs."""
    n = batch * 20
    if framework == "weft":
        wb = [(nd.array(train_x[i:i + batch]), nd.array(train_y[i:i + batch].astype(np.float32)))
              for i in range(0, n, batch)]
        return [(weft_gluon_steps(kind, wb, True)[0], nd.waitall), (weft_module_steps(kind, wb)[0], nd.waitall),
                (weft_gluon_steps(kind, wb, False)[0], nd.waitall)]
    tb = [(torch.from_numpy(train_x[i:i + batch]), torch.from_numpy(train_y[i:i + batch]))
          for i in range(0, n, batch)]
    return [(torch_steps(kind, tb)[0], lambda: None)]


def throughput(weft_w, torch_w, steps, rounds, models, batches):
    print("%-6s %5s %14s %14s %14s %14s %8s %8s %8s" % ("model", "batch", "gluon-hybrid", "module",
                                                      "gluon-imper.", "pytorch", "hyb/pt", "mod/pt", "imp/pt"))
    for kind in models:
        for batch in batches:
            runs = [(weft_w, k) for k in range(int(weft_w.ask("setup", kind, batch)[0]))]
            runs += [(torch_w, k) for k in range(int(torch_w.ask("setup", kind, batch)[0]))]
            best = [0.0] * len(runs)
            for _ in range(rounds):
                for k, (w, index) in enumerate(runs):
                    best[k] = max(best[k], float(w.ask("time", index, steps)[0]))
            hyb, mod, imp, pt = best
            print("%-6s %5d %14.0f %14.0f %14.0f %14.0f %8.2f %8.2f %8.2f"
                  % (kind, batch, hyb, mod, imp, pt, hyb / pt, mod / pt, imp / pt), flush=True)
            for how, value in (("Gluon hybridized", hyb), ("Module", mod), ("Gluon imperative", imp)):
                record("%s batch %d, %s" % (kind, batch, how), value, pt, "samples/s", True)


# Time to accuracy: the same recipe for both, SGD lr 0.05 x 0.7 per epoch, momentum 0.9,
# wd 1e-4, batch 64, shuffled each epoch with the same permutations; seconds of training
# (evaluation excluded) until LeNet's test accuracy reaches the target, checked after each
# epoch.
TARGET, MAX_EPOCHS, TTA_BATCH = 0.89, 8, 64


def permutations(n):
    rng = np.random.RandomState(0)
    return [rng.permutation(n) for _ in range(MAX_EPOCHS)]


def weft_time_to_accuracy(train_x, train_y, test_x, test_y):
    net = weft_net("lenet")
    net.hybridize()
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.05, "momentum": 0.9, "wd": 1e-4})
    test_w = [nd.array(test_x[i:i + 1000]) for i in range(0, len(test_x), 1000)]
    trained = 0.0
    for epoch, p in enumerate(permutations(len(train_x))):
        trainer.set_learning_rate(0.05 * 0.7 ** epoch)
        start = time.perf_counter()
        for i in range(0, len(p) - TTA_BATCH + 1, TTA_BATCH):
            idx = p[i:i + TTA_BATCH]
            x, y = nd.array(train_x[idx]), nd.array(train_y[idx].astype(np.float32))
            with autograd.record():
                loss = loss_fn(net(x), y)
            loss.backward()
            trainer.step(TTA_BATCH)
        nd.waitall()
        trained += time.perf_counter() - start
        pred = np.concatenate([net(x).asnumpy().argmax(1) for x in test_w])
        acc = float((pred == test_y).mean())
        if acc >= TARGET:
            return trained, epoch + 1, acc
    return None


def torch_time_to_accuracy(train_x, train_y, test_x, test_y):
    tnet = torch_net("lenet")
    opt = torch.optim.SGD(tnet.parameters(), lr=0.05, momentum=0.9, weight_decay=1e-4)
    tloss = torch.nn.CrossEntropyLoss()
    trained = 0.0
    tx, ty = torch.from_numpy(train_x), torch.from_numpy(train_y)
    for epoch, p in enumerate(permutations(len(train_x))):
        for g in opt.param_groups:
            g["lr"] = 0.05 * 0.7 ** epoch
        p = torch.from_numpy(p)
        start = time.perf_counter()
        for i in range(0, len(p) - TTA_BATCH + 1, TTA_BATCH):
            idx = p[i:i + TTA_BATCH]
            opt.zero_grad()
            tloss(tnet(tx[idx]), ty[idx]).backward()
            opt.step()
        trained += time.perf_counter() - start
        with torch.no_grad():
            acc = float((tnet(torch.from_numpy(test_x)).argmax(1).numpy() == test_y).mean())
        if acc >= TARGET:
            return trained, epoch + 1, acc
    return None


def time_to_accuracy(weft_w, torch_w):
    results = {}
    for name, w in (("weft", weft_w), ("pytorch", torch_w)):
        answer = w.ask("tta")
        if answer != ["none"]:
            results[name] = (float(answer[0]), int(answer[1]), float(answer[2]))
    for name in ("weft", "pytorch"):
        if name in results:
            t, e, a = results[name]
            print("%-8s reached %.2f%% after %d epochs, %.1f s of training" % (name, 100 * a, e, t))
        else:
            print("%-8s did not reach %.0f%% in %d epochs" % (name, 100 * TARGET, MAX_EPOCHS))
    if len(results) == 2:
        print("time to %.0f%%: PyTorch / Weft = %.2f" % (100 * TARGET, results["pytorch"][0] / results["weft"][0]))
        record("LeNet seconds to %.0f%% test accuracy" % (100 * TARGET), results["weft"][0], results["pytorch"][0],
               "s", False)


# LeNet's two convolutions at batch 128: forward plus weight and bias gradients (the data
# needs none, as in training), Weft's executor beside PyTorch.
CONV_LAYERS, CONV_BATCH = ((1, 20, 28), (20, 50, 12)), 128


def weft_conv_step(c, f, hw):
    conv = mx.sym.Convolution(mx.sym.var("data"), kernel=(5, 5), num_filter=f, name="c")
    exe = conv.simple_bind(mx.cpu(), data=(CONV_BATCH, c, hw, hw),
                           grad_req={"data": "null", "c_weight": "write", "c_bias": "write"})
    exe.arg_dict["data"][:] = np.random.rand(CONV_BATCH, c, hw, hw).astype(np.float32)
    head = nd.ones(exe.outputs[0].shape)

    def step():
        exe.forward(is_train=True)
        exe.backward([head])
        exe.grad_dict["c_weight"].wait_to_read()
    return step


def torch_conv_step(c, f, hw):
    tx = torch.rand(CONV_BATCH, c, hw, hw)
    tw = torch.rand(f, c, 5, 5, requires_grad=True)
    tb = torch.zeros(f, requires_grad=True)
    tg = torch.ones(CONV_BATCH, f, hw - 4, hw - 4)
    return lambda: torch.autograd.grad(torch.nn.functional.conv2d(tx, tw, tb), [tw, tb], tg)


def lenet_conv_layers(weft_w, torch_w):
    for i, (c, f, hw) in enumerate(CONV_LAYERS):
        w, t = float(weft_w.ask("conv", i)[0]), float(torch_w.ask("conv", i)[0])
        print("conv %2d->%2d on %dx%d, batch %d, forward + weight gradients: Weft %.2f ms, PyTorch %.2f ms, "
              "PyTorch/Weft %.2f" % (c, f, hw, hw, CONV_BATCH, w * 1e3, t * 1e3, t / w))


def serve(framework):
    """A worker's loop: the commands throughput(), time_to_accuracy() and
    lenet_conv_layers() send."""
    from timing import seconds_per_call
    (import_weft if framework == "weft" else import_torch)()
    train_x, train_y = load("train")
    test_x, test_y = load("t10k")
    state = {"runs": [], "batch": 0}

    def answer(words):
        cmd = words[0]
        if cmd == "setup":
            state["runs"] = []  # the last model's arrays go before the next model's come
            kind, batch = words[1], int(words[2])
            state["runs"], state["batch"] = batches_for(framework, kind, batch, train_x, train_y), batch
            for step, sync in state["runs"]:
                warm_up(step, sync)
            return [len(state["runs"])]
        if cmd == "time":
            step, sync = state["runs"][int(words[1])]
            return ["%.3f" % samples_per_second(step, state["batch"], int(words[2]), sync)]
        if cmd == "tta":
            run = weft_time_to_accuracy if framework == "weft" else torch_time_to_accuracy
            result = run(train_x, train_y, test_x, test_y)
            return ["none"] if result is None else ["%.3f" % result[0], result[1], "%.5f" % result[2]]
        if cmd == "conv":
            make = weft_conv_step if framework == "weft" else torch_conv_step
            return ["%.6e" % seconds_per_call(make(*CONV_LAYERS[int(words[1])]))]
        raise ValueError("training_bench worker: unknown command %r" % words)
    worker.serve(answer)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--steps", type=int, default=100, help="timed training steps per run")
    p.add_argument("--rounds", type=int, default=5, help="interleaved timed runs per framework (the best is shown)")
    p.add_argument("--models", default="mlp,lenet", help="comma-separated: mlp, lenet")
    p.add_argument("--batches", default="128,64", help="comma-separated batch sizes")
    p.add_argument("--skip-conv-layers", action="store_true", help="leave out LeNet's convolutions timed alone")
    p.add_argument("--skip-time-to-accuracy", action="store_true")
    args = worker.parse_or_serve(p, serve)
    if args is None:
        return
    weft_w, torch_w = worker.start_pair(__file__)
    try:
        print("samples/s of one training step (data already in memory), best of %d interleaved runs of %d steps"
              % (args.rounds, args.steps), flush=True)
        throughput(weft_w, torch_w, args.steps, args.rounds, args.models.split(","),
                   [int(b) for b in args.batches.split(",")])
        if not args.skip_conv_layers:
            lenet_conv_layers(weft_w, torch_w)
        if not args.skip_time_to_accuracy:
            time_to_accuracy(weft_w, torch_w)
    finally:
        weft_w.close()
        torch_w.close()
    print("load average at end: %.2f %.2f %.2f" % os.getloadavg())


if __name__ == "__main__":
    main()
