"""BatchNorm (training forward + backward), softmax and relu on ResNet-like shapes:
Weft against torch.nn.functional with autograd, float32, same thread count, in
milliseconds per call and as a Weft/torch ratio (below 1 means Weft is faster).

Each framework runs in a process of its own (worker.py), as training_bench.py does: in one
process PyTorch's threads and OpenMP settings slow Weft and the other way round. Both make
each case's data from the same seed; the PyTorch worker writes its output (BatchNorm's and
softmax's) to a file that the Weft worker compares its own with. The two take turns,
`--rounds` timed runs each, the best of each reported.

    .venv/bin/python bench/norm_bench.py [--rounds R] [--seconds S]
"""
import argparse
import os
import sys
import tempfile

import numpy as np

BENCH = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, BENCH)
import worker  # noqa: E402
from timing import record  # noqa: E402

BATCH = 32
# (channels, spatial size) of ResNet-50 stages' activations.
BN_SHAPES = [(64, 112), (256, 56), (512, 28), (1024, 14), (2048, 7)]
SOFTMAX_SHAPES = [(BATCH, 1000), (BATCH * 128, 512)]
RELU_SHAPES = [(BATCH, 64, 112, 112), (BATCH, 256, 56, 56)]
CASES = ([("BatchNorm %dx%d@%d" % (BATCH, c, size), "fwd+bwd", "bn", (c, size)) for c, size in BN_SHAPES]
         + [("softmax %s" % (shape,), "fwd", "softmax", shape) for shape in SOFTMAX_SHAPES]
         + [("relu %s" % (shape,), "fwd+bwd", "relu", shape) for shape in RELU_SHAPES])
MIN_RUNS = 3


def bn_data(c, size):
    rng = np.random.RandomState(0)
    x = rng.uniform(-1, 1, (BATCH, c, size, size)).astype(np.float32)
    gamma, beta = rng.uniform(0.5, 1.5, c).astype(np.float32), rng.uniform(-0.5, 0.5, c).astype(np.float32)
    out_grad = rng.uniform(-1, 1, x.shape).astype(np.float32)
    return x, gamma, beta, out_grad


def torch_case(kind, arg, ref_path):
    """The timed function of a case; writes the output Weft's is checked against, if any."""
    import torch
    import torch.nn.functional as F
    if kind == "bn":
        x_np, g_np, b_np, og_np = bn_data(*arg)
        np.save(ref_path, F.batch_norm(torch.tensor(x_np), None, None, torch.tensor(g_np), torch.tensor(b_np),
                                       training=True, eps=1e-5).numpy())
        xt = torch.tensor(x_np, requires_grad=True)
        gt = torch.tensor(g_np, requires_grad=True)
        bt = torch.tensor(b_np, requires_grad=True)
        rm, rv = torch.zeros(arg[0]), torch.ones(arg[0])
        ogt = torch.tensor(og_np)

        def run():
            xt.grad = gt.grad = bt.grad = None
            F.batch_norm(xt, rm, rv, gt, bt, training=True, momentum=0.1, eps=1e-5).backward(ogt)
        return run
    if kind == "softmax":
        xt = torch.tensor(np.random.RandomState(1).randn(*arg).astype(np.float32))
        np.save(ref_path, F.softmax(xt, dim=-1).numpy())
        return lambda: F.softmax(xt, dim=-1)
    xt = torch.tensor(np.random.RandomState(2).randn(*arg).astype(np.float32), requires_grad=True)
    ogt = torch.tensor(np.random.RandomState(3).randn(*arg).astype(np.float32))

    def run_relu():
        xt.grad = None
        F.relu(xt).backward(ogt)
    return run_relu


def weft_case(kind, arg, ref_path):
    """The timed function of a case, and how far its output is from PyTorch's in units of
    numpy.allclose's tolerance (0 where nothing is compared)."""
    import weft
    from weft import nd

    def off_by(got, rtol, atol):
        want = np.load(ref_path)
        return float((np.abs(got - want) / (atol + rtol * np.abs(want))).max())

    if kind == "bn":
        x_np, g_np, b_np, og_np = bn_data(*arg)
        x, g, b, og = nd.array(x_np), nd.array(g_np), nd.array(b_np), nd.array(og_np)
        mm, mv = nd.zeros((arg[0],)), nd.ones((arg[0],))
        params = dict(fix_gamma=False, eps=1e-5, momentum=0.9)
        with weft.autograd.train_mode():
            off = off_by(nd.BatchNorm(x, g, b, mm, mv, **params).asnumpy(), 1e-3, 1e-3)

        def run():
            with weft.autograd.train_mode():
                out = nd.BatchNorm(x, g, b, mm, mv, output_mean_var=True, **params)
                nd.invoke("_backward_BatchNorm", [og, x, g, out[1], out[2]], params)
            nd.waitall()
        return run, off
    if kind == "softmax":
        x = nd.array(np.random.RandomState(1).randn(*arg).astype(np.float32))

        def run_softmax():
            nd.softmax(x)
            nd.waitall()
        return run_softmax, off_by(nd.softmax(x).asnumpy(), 1e-4, 1e-6)
    x = nd.array(np.random.RandomState(2).randn(*arg).astype(np.float32))
    og = nd.array(np.random.RandomState(3).randn(*arg).astype(np.float32))

    def run_relu():
        nd.Activation(x, act_type="relu")
        nd.invoke("_backward_Activation", [og, x], {"act_type": "relu"})
        nd.waitall()
    return run_relu, 0.0


def serve(framework):
    if framework == "torch":
        import peer  # noqa: F401  (first: it sets the environment the libraries read)
    from timing import seconds_per_call
    state = {}

    def answer(words):
        if words[0] == "setup":  # setup <case index> <file>
            _, _, kind, arg = CASES[int(words[1])]
            state.pop("run", None)  # the last case's arrays go before the next case's come
            if framework == "torch":
                state["run"] = torch_case(kind, arg, words[2])
                return ["ok"]
            state["run"], off = weft_case(kind, arg, words[2])
            return ["%.3e" % off]
        if words[0] == "time":  # time <seconds>
            return ["%.6e" % seconds_per_call(state["run"], float(words[1]), MIN_RUNS)]
        raise ValueError("norm_bench worker: unknown command %r" % words)
    worker.serve(answer)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rounds", type=int, default=2, help="interleaved timed runs per framework (the best is shown)")
    p.add_argument("--seconds", type=float, default=0.5, help="minimum seconds per timed run")
    args = worker.parse_or_serve(p, serve)
    if args is None:
        return
    weft_w, torch_w = worker.start_pair(__file__)
    try:
        with tempfile.TemporaryDirectory() as tmp:
            for i, (name, what, _, _) in enumerate(CASES):
                path = os.path.join(tmp, "ref.npy")
                torch_w.ask("setup", i, path)
                off = float(weft_w.ask("setup", i, path)[0])
                if off > 1:
                    sys.exit("norm_bench: Weft's %s differs from torch's by %.2f times the tolerance" % (name, off))
                tw, tt = worker.best_times(weft_w, torch_w, args.rounds, "time", args.seconds)
                print("%-28s %-8s weft %8.2f ms  torch %8.2f ms  ratio %5.2f" % (name, what, tw * 1e3, tt * 1e3,
                                                                                 tw / tt), flush=True)
                record("%s %s" % (name, what), tw * 1e3, tt * 1e3, "ms", False)
    finally:
        weft_w.close()
        torch_w.close()
    print("load average at end: %.2f %.2f %.2f" % os.getloadavg())


if __name__ == "__main__":
    main()
