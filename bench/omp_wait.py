"""How OpenMP's wait policy moves Weft's small training steps, on a quiet machine and beside
other work.

Weft's kernels split work with OpenMP (libgomp). Between parallel regions libgomp's threads
spin for a while (GOMP_SPINCOUNT, 300,000 turns by default) before they sleep; with
OMP_WAIT_POLICY=PASSIVE they sleep at once and each region pays a wake-up. On a quiet machine
spinning is faster; when other processes want the cores, a spinning thread holds a core the
working thread needs. This script measures the hybridized Gluon LeNet training step (batch
64, the main job's) and the MLP step under each policy, first alone and then beside
`--busy` processes that each spin on a core (as a compile job beside a training run does),
each case in a fresh process, taking turns, and prints samples/s.

    python bench/omp_wait.py [--busy 1] [--steps 200] [--rounds 3]
"""
import argparse
import json
import multiprocessing
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import report  # noqa: E402

# (label, environment) for the Weft process; None removes the variable.
POLICIES = [
    ("libgomp default", {"OMP_WAIT_POLICY": None, "GOMP_SPINCOUNT": None}),
    ("GOMP_SPINCOUNT=30000", {"OMP_WAIT_POLICY": None, "GOMP_SPINCOUNT": "30000"}),
    ("GOMP_SPINCOUNT=10000", {"OMP_WAIT_POLICY": None, "GOMP_SPINCOUNT": "10000"}),
    ("GOMP_SPINCOUNT=2000", {"OMP_WAIT_POLICY": None, "GOMP_SPINCOUNT": "2000"}),
    ("OMP_WAIT_POLICY=PASSIVE", {"OMP_WAIT_POLICY": "PASSIVE", "GOMP_SPINCOUNT": None}),
]


def worker(kind, steps):
    import numpy as np
    import weft as mx
    from weft import autograd, gluon
    from weft.gluon import nn
    batch = 64 if kind == "lenet" else 128
    net = nn.HybridSequential()
    if kind == "lenet":
        net.add(nn.Conv2D(20, 5, activation="relu"), nn.MaxPool2D(2, 2), nn.Conv2D(50, 5, activation="relu"),
                nn.MaxPool2D(2, 2), nn.Flatten(), nn.Dense(500, activation="relu"), nn.Dense(10))
        shape = (batch, 1, 28, 28)
    else:
        net.add(nn.Dense(512, activation="relu"), nn.Dense(512, activation="relu"), nn.Dense(10))
        shape = (batch, 784)
    net.initialize(mx.init.Xavier())
    net.hybridize()
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.01, "momentum": 0.9})
    rng = np.random.RandomState(0)
    x = mx.nd.array(rng.rand(*shape).astype(np.float32))
    y = mx.nd.array(rng.randint(0, 10, batch).astype(np.float32))

    def step():
        with autograd.record():
            loss = loss_fn(net(x), y)
        loss.backward()
        trainer.step(batch)

    for _ in range(20):
        step()
    mx.nd.waitall()
    t = time.perf_counter()
    for _ in range(steps):
        step()
    mx.nd.waitall()
    print(json.dumps({"samples_per_s": steps * batch / (time.perf_counter() - t)}))


def spin(stop):
    while not stop.is_set():
        pass


def run_case(kind, env_changes, steps):
    env = dict(os.environ)
    for k, v in env_changes.items():
        if v is None:
            env.pop(k, None)
        else:
            env[k] = v
    out = subprocess.run([sys.executable, __file__, "--worker", kind, "--steps", str(steps)],
                         env=env, capture_output=True, text=True, check=True).stdout
    return json.loads(out.strip().splitlines()[-1])["samples_per_s"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--worker")
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--busy", type=int, default=1, help="spinning processes beside the run in the loaded case")
    ap.add_argument("--models", default="lenet,mlp")
    args = ap.parse_args()
    if args.worker:
        worker(args.worker, args.steps)
        return
    cpu = report.cpu_info()
    print("cpu: %s, family %s, model %s; load average before: %.2f"
          % (cpu["name"], cpu["family"], cpu["model"], os.getloadavg()[0]))
    for busy in (0, args.busy):
        stop = multiprocessing.Event()
        spinners = [multiprocessing.Process(target=spin, args=(stop,)) for _ in range(busy)]
        for p in spinners:
            p.start()
        try:
            for kind in args.models.split(","):
                best = {label: 0.0 for label, _ in POLICIES}
                for _ in range(args.rounds):
                    for label, env in POLICIES:
                        best[label] = max(best[label], run_case(kind, env, args.steps))
                for label, _ in POLICIES:
                    print("%-6s %d busy  %-26s %9.0f samples/s (best of %d)" % (kind, busy, label, best[label], args.rounds),
                          flush=True)
        finally:
            stop.set()
            for p in spinners:
                p.join()
    print("load average after: %.2f" % os.getloadavg()[0])


if __name__ == "__main__":
    main()
