"""FullyConnected forward + backward on MLP shapes (784 -> 1024 -> 1024 -> 10 at batch 64
and 256), float32: Weft's FullyConnected and _backward_FullyConnected against torch's
F.linear with autograd (gradients for data, weight and bias), in milliseconds per
forward + backward, per layer and for the three layers in a row (best of 3 alternating rounds). Same thread
count (2).
"""
import peer  # first: it sets the environment the libraries read

import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

import weft  # noqa: E402
from weft.ndarray import _ops  # noqa: E402

LAYERS = ((784, 1024), (1024, 1024), (1024, 10))
BATCHES = (64, 256)
MIN_SECONDS = 0.3  # repeat each measurement until at least this long has passed
ROUNDS = 3

fc = _ops.get("FullyConnected")
fc_backward = _ops.get("_backward_FullyConnected")


def repeat_timed(run, sync):
    return peer.seconds_per_call(run, MIN_SECONDS, sync=sync)


def make_layers(rng, batch, layers):
    x = rng.standard_normal((batch, layers[0][0]), dtype=np.float32)
    params = [(rng.standard_normal((o, i), dtype=np.float32) * 0.03, rng.standard_normal(o, dtype=np.float32))
              for i, o in layers]
    return x, params


def weft_step(x_np, params_np):
    """A function running forward then backward through the layers, and its result."""
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

    return run, last


def torch_step(x_np, params_np):
    x = torch.from_numpy(x_np).requires_grad_(True)
    params = [(torch.from_numpy(w).requires_grad_(True), torch.from_numpy(b).requires_grad_(True))
              for w, b in params_np]
    heads = [torch.ones(x_np.shape[0], w.shape[0]) for w, _ in params_np]
    last = {}

    def run():
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

    def zero():
        for w, b in params:
            w.grad = None
            b.grad = None
        x.grad = None

    return run, last, zero


def bench(batch, layers, rng):
    x_np, params_np = make_layers(rng, batch, layers)
    run_w, last_w = weft_step(x_np, params_np)
    run_t, last_t, zero = torch_step(x_np, params_np)

    def run_t_clean():
        zero()
        run_t()

    # Rounds alternate between the two so that load from elsewhere on the machine hits
    # both alike; the best round of each is reported.
    tw = tt = float("inf")
    for _ in range(ROUNDS):
        tw = min(tw, repeat_timed(run_w, weft.nd.waitall))
        tt = min(tt, repeat_timed(run_t_clean, lambda: None))
    np.testing.assert_allclose(last_w["out"].asnumpy(), last_t["out"].detach().numpy(), rtol=1e-3, atol=1e-3)
    np.testing.assert_allclose(last_w["grads"][-1][1].asnumpy(), last_t["w0_grad"].numpy(), rtol=1e-3, atol=1e-2)
    return tw, tt


def main():
    rng = np.random.default_rng(0)
    print(f"{'batch':>5} {'layer':>16} {'Weft ms':>9} {'torch ms':>9} {'torch/Weft':>11}")
    for batch in BATCHES:
        rows = [(f"{i}->{o}", [(i, o)]) for i, o in LAYERS] + [("784-1024-1024-10", list(LAYERS))]
        for label, layers in rows:
            tw, tt = bench(batch, layers, rng)
            print(f"{batch:>5} {label:>16} {tw * 1e3:>9.3f} {tt * 1e3:>9.3f} {tt / tw:>11.2f}")
            peer.record(f"FullyConnected {label} batch {batch}", tw * 1e3, tt * 1e3, "ms", False)


if __name__ == "__main__":
    main()
