"""LSTM language-model layer: Weft's fused RNN operator against torch.nn.LSTM, float32,
same thread count, in milliseconds per call and as a Weft/torch ratio (below 1 means Weft
is faster). Forward alone (inference) and forward + backward are timed, the latter through
each framework's autograd as training runs it: the gradients of the input, the initial
states and the weights, Weft's backward starting from the training forward's reserve.

Each framework runs in a process of its own (worker.py), as training_bench.py does:
PyTorch set up as peer.py sets it (OMP_WAIT_POLICY=PASSIVE, 2 threads), Weft with the
environment this script was started with. In one process both ran under PASSIVE, which
slowed Weft's many short parallel regions per time step by up to 1.7x. The PyTorch worker
makes each configuration's weights and data and writes them, with its output, to a file
the Weft worker reads: both compute the same thing and the largest difference is printed.
The two take turns, `--rounds` timed runs each, the best of each reported.

    .venv/bin/python bench/rnn_bench.py [--rounds R] [--seconds S]
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

# (name, mode, T, N, I, H, layers, bidirectional)
CONFIGS = [
    ("lstm T35 N32 256->256 x2", "lstm", 35, 32, 256, 256, 2, False),
    ("lstm T35 N32 256->256 x2 bidir", "lstm", 35, 32, 256, 256, 2, True),
    ("gru  T35 N32 256->256 x2", "gru", 35, 32, 256, 256, 2, False),
]


def packed_params(m, L, bidir):
    """MXNet's packing: all weights (i2h, h2h per layer and direction), then all biases."""
    weights, biases = [], []
    for l in range(L):
        for sfx in ["", "_reverse"][: 2 if bidir else 1]:
            weights += [getattr(m, "weight_ih_l%d%s" % (l, sfx)), getattr(m, "weight_hh_l%d%s" % (l, sfx))]
            biases += [getattr(m, "bias_ih_l%d%s" % (l, sfx)), getattr(m, "bias_hh_l%d%s" % (l, sfx))]
    return np.concatenate([t.detach().numpy().reshape(-1) for t in weights + biases])


def torch_runs(cfg, path):
    """PyTorch's forward and forward+backward for `cfg`; writes the data, the packed
    weights and its output to `path` for the Weft worker."""
    import torch
    _, mode, T, N, I, H, L, bidir = cfg
    D = 2 if bidir else 1
    torch.manual_seed(0)
    m = (torch.nn.LSTM if mode == "lstm" else torch.nn.GRU)(I, H, num_layers=L, bidirectional=bidir)
    x = torch.randn(T, N, I, requires_grad=True)
    h0 = torch.zeros(L * D, N, H, requires_grad=True)
    c0 = torch.zeros(L * D, N, H, requires_grad=True)
    dy = torch.randn(T, N, D * H)

    def run():
        return m(x, (h0, c0))[0] if mode == "lstm" else m(x, h0)[0]

    def fwd():
        with torch.no_grad():
            run()

    def fwd_bwd():
        run().backward(dy)

    np.savez(path, x=x.detach().numpy(), params=packed_params(m, L, bidir), h0=h0.detach().numpy(),
             c0=c0.detach().numpy(), dy=dy.numpy(), ref=run().detach().numpy())
    return fwd, fwd_bwd


def weft_runs(cfg, path):
    """Weft's forward and forward+backward on the data of `path`, and the largest
    difference of its output from PyTorch's."""
    import weft
    from weft import autograd, nd
    _, mode, T, N, I, H, L, bidir = cfg
    data = np.load(path)
    kw = dict(state_size=H, num_layers=L, bidirectional=bidir, mode=mode)
    ins = [nd.array(data["x"]), nd.array(data["params"]), nd.array(data["h0"])]
    if mode == "lstm":
        ins.append(nd.array(data["c0"]))
    for a in ins:
        a.attach_grad()
    dy = nd.array(data["dy"])
    # The forward's output written in place each call, so allocation is not what is timed.
    out = nd.RNN(*ins, **kw)
    err = float(np.abs(out.asnumpy() - data["ref"]).max())

    def fwd():
        nd.invoke("RNN", ins, kw, out=[out])
        weft.nd.waitall()

    def fwd_bwd():
        with autograd.record():
            y = nd.RNN(*ins, **kw)
        y.backward(dy)
        weft.nd.waitall()
    return fwd, fwd_bwd, err


def serve(framework):
    if framework == "torch":
        import peer  # noqa: F401  (first: it sets the environment the libraries read)
    from timing import seconds_per_call
    runs = {}

    def answer(words):
        if words[0] == "setup":  # setup <config index> <file>
            cfg = CONFIGS[int(words[1])]
            if framework == "torch":
                runs["fwd"], runs["fwd_bwd"] = torch_runs(cfg, words[2])
                return ["ok"]
            runs["fwd"], runs["fwd_bwd"], err = weft_runs(cfg, words[2])
            return [err]
        if words[0] == "time":  # time <fwd|fwd_bwd> <seconds>
            return [seconds_per_call(runs[words[1]], float(words[2]), 3)]
        raise ValueError("rnn_bench worker: unknown command %r" % words)
    worker.serve(answer)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rounds", type=int, default=3, help="interleaved timed runs per framework (the best is shown)")
    p.add_argument("--seconds", type=float, default=1.0, help="minimum seconds per timed run")
    args = worker.parse_or_serve(p, serve)
    if args is None:
        return
    weft_w, torch_w = worker.start_pair(__file__)
    try:
        with tempfile.TemporaryDirectory() as tmp:
            for i, cfg in enumerate(CONFIGS):
                path = os.path.join(tmp, "rnn%d.npz" % i)
                torch_w.ask("setup", i, path)
                err = float(weft_w.ask("setup", i, path)[0])
                print("%s (max |weft - torch| = %.1e)" % (cfg[0], err))
                for what in ("fwd", "fwd_bwd"):
                    tw, tt = worker.best_times(weft_w, torch_w, args.rounds, "time", what, args.seconds)
                    label = "forward" if what == "fwd" else "forward+backward"
                    print("  %-17s weft %8.2f ms   torch %8.2f ms   weft/torch %5.2f" % (label, tw * 1e3, tt * 1e3,
                                                                                        tw / tt), flush=True)
                    record("%s %s" % (cfg[0], label), tw * 1e3, tt * 1e3, "ms", False)
    finally:
        weft_w.close()
        torch_w.close()
    print("load average at end: %.2f %.2f %.2f" % os.getloadavg())


if __name__ == "__main__":
    main()
