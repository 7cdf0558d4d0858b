"""One training step of the benchmark MLP from Python, for bench/frontend_overhead.py.

    python_step.py --batch 128 --steps 200 --warmup 20

The step, the same in every language's step program (Go's bench/frontend_step/go, R's
r_step.R): an executor bound to the MLP 784-512-512-10 (relu, SoftmaxOutput; data and
labels bound once), forward in training mode, backward, sgd_mom_update (lr 0.1, momentum
0.9, rescale 1/batch) of each of the 6 parameters into itself. The engine runs ahead of the
front end as in real training: the clock stops after a wait for all work at the end. Prints
one JSON line {"lang", "ms_per_step", "batch", "steps"}.
"""
import argparse
import json
import time

import numpy as np

import weft as mx

HIDDEN = (512, 512)


def mlp():
    x = mx.sym.Variable("data")
    for i, h in enumerate(HIDDEN):
        x = mx.sym.FullyConnected(x, num_hidden=h, name="fc%d" % (i + 1))
        x = mx.sym.Activation(x, act_type="relu", name="relu%d" % (i + 1))
    x = mx.sym.FullyConnected(x, num_hidden=10, name="fc%d" % (len(HIDDEN) + 1))
    return mx.sym.SoftmaxOutput(x, name="softmax")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--batch", type=int, default=128)
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--warmup", type=int, default=20)
    args = ap.parse_args()
    n = args.batch
    net = mlp()
    params = [a for a in net.list_arguments() if a not in ("data", "softmax_label")]
    exe = net.simple_bind(mx.cpu(), grad_req={p: "write" for p in params}, data=(n, 784), softmax_label=(n,))
    rng = np.random.default_rng(0)
    exe.arg_dict["data"][:] = rng.random((n, 784), dtype=np.float32)
    exe.arg_dict["softmax_label"][:] = np.arange(n) % 10
    for p in params:
        exe.arg_dict[p][:] = rng.uniform(-0.05, 0.05, exe.arg_dict[p].shape).astype(np.float32)
    weights = [exe.arg_dict[p] for p in params]
    grads = [exe.grad_dict[p] for p in params]
    moms = [mx.nd.zeros(w.shape) for w in weights]
    update = mx.nd.sgd_mom_update
    rescale = 1.0 / n

    def step():
        exe.forward(is_train=True)
        exe.backward()
        for w, g, m in zip(weights, grads, moms):
            update(w, g, m, lr=0.1, momentum=0.9, rescale_grad=rescale, out=w)

    for _ in range(args.warmup):
        step()
    mx.nd.waitall()
    start = time.perf_counter()
    for _ in range(args.steps):
        step()
    mx.nd.waitall()
    elapsed = time.perf_counter() - start
    print(json.dumps({"lang": "python", "ms_per_step": 1000 * elapsed / args.steps, "batch": n, "steps": args.steps}))


if __name__ == "__main__":
    main()
