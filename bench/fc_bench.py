"""FullyConnected forward + backward on MLP shapes (784 -> 1024 -> 1024 -> 10 at batch 64
and 256), float32: Weft's FullyConnected and _backward_FullyConnected against torch's
F.linear with autograd (gradients for data, weight and bias), in milliseconds per
forward + backward, per layer and for the three layers in a row. Same thread count (2).

Each framework runs in a process of its own (worker.py), as training_bench.py does: in one
process PyTorch's threads and OpenMP settings slow Weft and the other way round. The PyTorch
worker makes each case's data and writes it, with its output and first weight gradient, to
a file the Weft worker reads: both compute the same thing and the largest differences are
checked. The two take turns, `--rounds` timed runs each, the best of each reported.

    .venv/bin/python bench/fc_bench.py [--rounds R] [--seconds S]
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

LAYERS = ((784, 1024), (1024, 1024), (1024, 10))
BATCHES = (64, 256)
# (label, layers) per row: each layer alone, then the three in a row.
ROWS = [(f"{i}->{o}", [(i, o)]) for i, o in LAYERS] + [("784-1024-1024-10", list(LAYERS))]


def make_layers(seed, batch, layers):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((batch, layers[0][0]), dtype=np.float32)
    params = [(rng.standard_normal((o, i), dtype=np.float32) * 0.03, rng.standard_normal(o, dtype=np.float32))
              for i, o in layers]
    return x, params


def torch_step(x_np, params_np):
    """A function running forward then backward through the layers (gradients reset first),
    and the dictionary its last run leaves its output and first weight gradient in."""
    import torch
    import torch.nn.functional as F
    x = torch.from_numpy(x_np).requires_grad_(True)
    params = [(torch.from_numpy(w).requires_grad_(True), torch.from_numpy(b).requires_grad_(True))
              for w, b in params_np]
    heads = [torch.ones(x_np.shape[0], w.shape[0]) for w, _ in params_np]
    last = {}

    def run():
        for w, b in params:
            w.grad = None
            b.grad = None
        x.grad = None
        inp = x
        outs = []
        for w, b in params:
            out = F.linear(inp, w, b)
            outs.append(out)
            # Layers run on detached inputs with their own heads, as the Weft side does.
            inp = out.detach().requires_grad_(True)
        for out, head in zip(outs, heads):
            out.backward(head)
        last["out"], last["w0_grad"] = outs[-1], params[0][0].grad

    return run, last


def weft_step(x_np, params_np):
    import weft
    from weft.ndarray import _ops
    fc, fc_backward = _ops.get("FullyConnected"), _ops.get("_backward_FullyConnected")
    x = weft.nd.array(x_np)
    params = [(weft.nd.array(w), weft.nd.array(b)) for w, b in params_np]
    heads = [weft.nd.ones((x_np.shape[0], w.shape[0])) for w, _ in params_np]
    last = {}

    def run():
        acts = [x]
        for (w, b), (w_np, _) in zip(params, params_np):
            acts.append(fc(acts[-1], w, b, num_hidden=w_np.shape[0]))
        # Each layer's backward takes its own head (ones), as the torch side does.
        last["grads"] = [fc_backward(heads[i], acts[i], params[i][0], params[i][1], num_hidden=params_np[i][0].shape[0])
                         for i in reversed(range(len(params)))]
        last["out"] = acts[-1]
        weft.nd.waitall()

    return run, last


def off_by(got, want, rtol, atol):
    """How far `got` is from `want` in units of numpy.allclose's tolerance (1 or less: close)."""
    return float((np.abs(got - want) / (atol + rtol * np.abs(want))).max())


def serve(framework):
    if framework == "torch":
        import peer  # noqa: F401  (first: it sets the environment the libraries read)
    from timing import seconds_per_call
    state = {}

    def answer(words):
        if words[0] == "setup":  # setup <batch> <row> <file>
            batch, row, path = int(words[1]), int(words[2]), words[3]
            state.pop("run", None)  # the last case's arrays go before the next case's come
            if framework == "torch":
                x_np, params_np = make_layers(batch * 10 + row, batch, ROWS[row][1])
                state["run"], last = torch_step(x_np, params_np)
                state["run"]()
                np.savez(path, x=x_np, out=last["out"].detach().numpy(), w0_grad=last["w0_grad"].numpy(),
                         **{"w%d" % i: w for i, (w, _) in enumerate(params_np)},
                         **{"b%d" % i: b for i, (_, b) in enumerate(params_np)})
                return ["ok"]
            data = np.load(path)
            n = len(ROWS[row][1])
            params_np = [(data["w%d" % i], data["b%d" % i]) for i in range(n)]
            state["run"], last = weft_step(data["x"], params_np)
            state["run"]()
            return ["%.3e" % off_by(last["out"].asnumpy(), data["out"], 1e-3, 1e-3),
                    "%.3e" % off_by(last["grads"][-1][1].asnumpy(), data["w0_grad"], 1e-3, 1e-2)]
        if words[0] == "time":  # time <seconds>
            return ["%.6e" % seconds_per_call(state["run"], float(words[1]))]
        raise ValueError("fc_bench worker: unknown command %r" % words)
    worker.serve(answer)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rounds", type=int, default=3, help="interleaved timed runs per framework (the best is shown)")
    p.add_argument("--seconds", type=float, default=0.3, help="minimum seconds per timed run")
    args = worker.parse_or_serve(p, serve)
    if args is None:
        return
    weft_w, torch_w = worker.start_pair(__file__)
    try:
        with tempfile.TemporaryDirectory() as tmp:
            print(f"{'batch':>5} {'layer':>16} {'Weft ms':>9} {'torch ms':>9} {'torch/Weft':>11}", flush=True)
            for batch in BATCHES:
                for row, (label, _) in enumerate(ROWS):
                    path = os.path.join(tmp, "fc.npz")
                    torch_w.ask("setup", batch, row, path)
                    off_out, off_grad = (float(e) for e in weft_w.ask("setup", batch, row, path))
                    if off_out > 1 or off_grad > 1:
                        sys.exit("fc_bench: Weft and torch differ on %s at batch %d: output by %.2f, first weight "
                                 "gradient by %.2f times the tolerance" % (label, batch, off_out, off_grad))
                    tw, tt = worker.best_times(weft_w, torch_w, args.rounds, "time", args.seconds)
                    print(f"{batch:>5} {label:>16} {tw * 1e3:>9.3f} {tt * 1e3:>9.3f} {tt / tw:>11.2f}", flush=True)
                    record(f"FullyConnected {label} batch {batch}", tw * 1e3, tt * 1e3, "ms", False)
    finally:
        weft_w.close()
        torch_w.close()
    print("load average at end: %.2f %.2f %.2f" % os.getloadavg())


if __name__ == "__main__":
    main()
