"""Issue 20's GPU figures: Weft against the GPU machine's PyTorch (eager), side by side in
one run, each framework in a process of its own, on gpu(0).

Cases (the same model, loss and SGD with momentum 0.9 on both sides, random data made on
the device once, so the figures are the step alone):
  resnet50_train_b64       ResNet-50 v1 training, float32 (TF32 convolutions on both sides)
  resnet50_train_amp_b64   the same with mixed precision, float16 with dynamic loss scaling
                           (Weft's contrib.amp, PyTorch's torch.autocast and GradScaler)
  resnet50_infer_b1/b64    ResNet-50 inference
  lenet_train_b64          LeNet (conv 20@5x5, pool, conv 50@5x5, pool, fc 500, fc 10)
  mlp_train_b64            MLP 784-512-512-10
  resnet50_train_mem_b64   device memory in use after the float32 training steps (MB; the
                           caching allocators of both keep their peak, so this is it, plus
                           the CUDA context)
Targets (issue 20): ResNet-50 training >= 1.0x (AMP too), inference >= 1.2x, LeNet and MLP
>= 1.5x, memory <= 0.8x PyTorch's.

    python bench/gpu_train_bench.py [--json FILE] [--cases a,b] [--seconds S]

A case that fails on one side is reported with its error and the others go on. Figures go
to --json (a list of records) and, through timing.record, to $WEFT_BENCH_RECORD.
"""
import argparse
import json
import os
import subprocess
import sys
import time

BENCH = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, BENCH)
from timing import record  # noqa: E402

CASES = ["lenet_train_b64", "mlp_train_b64", "resnet50_infer_b1", "resnet50_infer_b64", "resnet50_train_b64",
         "resnet50_train_amp_b64", "resnet50_train_mem_b64"]
TARGETS = {"resnet50_train_b64": 1.0, "resnet50_train_amp_b64": 1.0, "resnet50_infer_b1": 1.2,
           "resnet50_infer_b64": 1.2, "lenet_train_b64": 1.5, "mlp_train_b64": 1.5, "resnet50_train_mem_b64": 1 / 0.8}


def timed(step, sync, seconds, warmup=3, min_steps=5):
    """Seconds per step: warm-up steps (plans, autotuning, allocator growth), then steps
    until `seconds` have passed and at least min_steps ran, synchronised at both ends."""
    for _ in range(warmup):
        step()
    sync()
    n, t0 = 0, time.perf_counter()
    while True:
        step()
        n += 1
        if n >= min_steps and time.perf_counter() - t0 >= seconds:
            break
    sync()
    return (time.perf_counter() - t0) / n


def case_shape(case):
    model, mode = case.split("_")[0], case.split("_")[1]
    batch = int(case.rsplit("_b", 1)[1])
    return model, mode, batch, "_amp_" in case, "_mem_" in case


# ---------------------------------------------------------------- PyTorch
def run_torch(cases, seconds):
    import torch
    import torch.nn as tnn
    import torchvision
    torch.backends.cudnn.allow_tf32 = True  # PyTorch's default for convolutions
    torch.backends.cuda.matmul.allow_tf32 = True  # the same rule for FullyConnected as Weft's
    torch.backends.cudnn.benchmark = True  # eager PyTorch at its best: cuDNN picks by timing
    dev = torch.device("cuda:0")
    print("torch %s, CUDA %s, cuDNN %s, %s; cudnn.benchmark=True, TF32 convolutions and matmuls"
          % (torch.__version__, torch.version.cuda, torch.backends.cudnn.version(), torch.cuda.get_device_name(0)),
          file=sys.stderr)

    def model_for(name):
        if name == "resnet50":
            return torchvision.models.resnet50(num_classes=1000), (3, 224, 224), 1000
        if name == "lenet":
            return tnn.Sequential(tnn.Conv2d(1, 20, 5), tnn.Tanh(), tnn.MaxPool2d(2), tnn.Conv2d(20, 50, 5), tnn.Tanh(),
                                  tnn.MaxPool2d(2), tnn.Flatten(), tnn.Linear(800, 500), tnn.Tanh(),
                                  tnn.Linear(500, 10)), (1, 28, 28), 10
        return tnn.Sequential(tnn.Flatten(), tnn.Linear(784, 512), tnn.ReLU(), tnn.Linear(512, 512), tnn.ReLU(),
                              tnn.Linear(512, 10)), (1, 28, 28), 10

    out = {}
    for case in cases:
        name, mode, batch, amp, mem = case_shape(case)
        try:
            net, shape, classes = model_for(name)
            net = net.to(dev)
            x = torch.randn((batch,) + shape, device=dev)
            y = torch.randint(0, classes, (batch,), device=dev)
            sync = torch.cuda.synchronize
            if mode == "infer":
                net.eval()

                def step():
                    with torch.no_grad():
                        net(x)
            else:
                net.train()
                opt = torch.optim.SGD(net.parameters(), lr=0.01, momentum=0.9)
                loss_fn = tnn.CrossEntropyLoss()
                scaler = torch.amp.GradScaler("cuda") if amp else None

                def step():
                    opt.zero_grad(set_to_none=True)
                    if amp:
                        with torch.autocast("cuda", dtype=torch.float16):
                            loss = loss_fn(net(x), y)
                        scaler.scale(loss).backward()
                        scaler.step(opt)
                        scaler.update()
                    else:
                        loss = loss_fn(net(x), y)
                        loss.backward()
                        opt.step()
            s = timed(step, sync, seconds)
            if mem:
                free, total = torch.cuda.mem_get_info(0)
                out[case] = (total - free) / 2**20
            else:
                out[case] = batch / s
            del net
            torch.cuda.empty_cache()
        except Exception as e:  # reported, the other cases go on
            out[case] = "error: %s" % e
        print("CASE " + json.dumps({case: out[case]}), flush=True)
    return out


# ---------------------------------------------------------------- Weft
def run_weft(cases, seconds, device="gpu"):
    import weft as mx
    from weft import autograd, gluon
    from weft.gluon import nn
    ctx = mx.gpu(0) if device == "gpu" else mx.cpu()
    feats = mx.runtime.Features()
    print("weft %s: %s; MXNET_CUDNN_AUTOTUNE_DEFAULT=%s, WEFT_CUDNN_ALLOW_TF32=%s"
          % (getattr(mx, "__version__", "?"), ", ".join(f for f in ("CUDA", "CUDNN", "NCCL") if feats.is_enabled(f)),
             os.environ.get("MXNET_CUDNN_AUTOTUNE_DEFAULT"), os.environ.get("WEFT_CUDNN_ALLOW_TF32", "1")),
          file=sys.stderr)

    def model_for(name):
        if name == "resnet50":
            return gluon.model_zoo.vision.resnet50_v1(classes=1000), (3, 224, 224), 1000
        net = nn.HybridSequential()
        if name == "lenet":
            net.add(nn.Conv2D(20, 5, activation="tanh"), nn.MaxPool2D(2), nn.Conv2D(50, 5, activation="tanh"),
                    nn.MaxPool2D(2), nn.Flatten(), nn.Dense(500, activation="tanh"), nn.Dense(10))
        else:
            net.add(nn.Dense(512, activation="relu"), nn.Dense(512, activation="relu"), nn.Dense(10))
        return net, (1, 28, 28), 10

    out = {}
    for case in cases:
        name, mode, batch, amp, mem = case_shape(case)
        try:
            if amp:
                # MXNet's AMP training: operators patched before the model is made, the
                # trainer's dynamic loss scaling.
                from weft.contrib import amp as wamp
                wamp.init(target_dtype="float16")
            net, shape, classes = model_for(name)
            net.initialize(mx.init.Xavier(), ctx=ctx)
            net.hybridize(static_alloc=True, static_shape=True)
            x = mx.nd.random.normal(shape=(batch,) + shape, ctx=ctx)
            y = mx.nd.array(list(range(batch)), ctx=ctx) % classes
            sync = mx.nd.waitall
            if mode == "infer":
                def step():
                    net(x)
            else:
                trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.01, "momentum": 0.9})
                loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
                if amp:
                    wamp.init_trainer(trainer)

                def step():
                    with autograd.record():
                        loss = loss_fn(net(x), y)
                        if amp:
                            with wamp.scale_loss(loss, trainer) as scaled:
                                loss = scaled
                    loss.backward()
                    trainer.step(batch)
            s = timed(step, sync, seconds)
            profile = os.environ.get("WEFT_GPU_BENCH_PROFILE")
            if profile and not mem:
                # Where the time goes: three more steps under the profiler (which waits for
                # each GPU operation, so its times are the kernels'), its table per case.
                mx.profiler.set_config(profile_all=True, aggregate_stats=True,
                                       filename=os.path.join(profile, case + ".json"))
                mx.profiler.set_state("run")
                for _ in range(3):
                    step()
                sync()
                mx.profiler.set_state("stop")
                with open(os.path.join(profile, case + ".txt"), "w") as f:
                    f.write(mx.profiler.dumps(reset=True))
            if mem and device == "gpu":
                free, total = mx.context.gpu_memory_info(0)
                out[case] = (total - free) / 2**20
            else:
                out[case] = batch / s
            del net
        except Exception as e:  # reported, the other cases go on
            out[case] = "error: %s" % str(e).splitlines()[0][:300]
        print("CASE " + json.dumps({case: out[case]}), flush=True)
    return out


def worker_main(framework, cases, seconds, device):
    if framework == "weft":
        run_weft(cases, seconds, device)
    else:
        run_torch(cases, seconds)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", help="write the figures here")
    ap.add_argument("--cases", default=",".join(CASES))
    ap.add_argument("--seconds", type=float, default=2.0, help="timed seconds per case and side")
    ap.add_argument("--timeout", type=float, default=300, help="seconds a worker process may take")
    ap.add_argument("--budget", type=float, default=3600, help="seconds for all the workers together")
    ap.add_argument("--worker", choices=["weft", "torch"], help=argparse.SUPPRESS)
    # A dry run of Weft's side on the CPU, to check this script on a machine without a GPU.
    ap.add_argument("--device", choices=["gpu", "cpu"], default="gpu", help=argparse.SUPPRESS)
    args = ap.parse_args()
    cases = [c for c in args.cases.split(",") if c]
    unknown = [c for c in cases if c not in CASES]
    if unknown:
        ap.error("unknown cases %s; expected some of %s" % (unknown, CASES))
    if args.worker:
        # Like PyTorch's cudnn.benchmark on the other side: cuDNN's plans are timed once per
        # shape (MXNet's own default, 1: the fastest within the workspace limit).
        os.environ.setdefault("MXNET_CUDNN_AUTOTUNE_DEFAULT", "1")
        worker_main(args.worker, cases, args.seconds, args.device)
        return
    results = {"torch": {}, "weft": {}}
    deadline = time.monotonic() + args.budget
    # The memory and AMP cases get fresh processes: earlier cases' cached memory would count
    # in the one, and AMP patches the operators of the process it runs in.
    groups = [[c for c in cases if "_mem_" not in c and "_amp_" not in c], [c for c in cases if "_amp_" in c],
              [c for c in cases if "_mem_" in c]]
    for group in (g for g in groups if g):
        for fw in ("torch", "weft"):
            cmd = [sys.executable, os.path.abspath(__file__), "--worker", fw, "--cases", ",".join(group),
                   "--seconds", str(args.seconds)]
            limit = min(args.timeout, deadline - time.monotonic())
            if limit < 10:
                for c in group:
                    results[fw][c] = "error: not run, the --budget of %d s was spent" % args.budget
                continue
            try:
                proc = subprocess.run(cmd, capture_output=True, text=True, timeout=limit)
                stdout, stderr, why = proc.stdout, proc.stderr, "worker exit %d" % proc.returncode
            except subprocess.TimeoutExpired as e:  # the cases it finished still count
                stdout, stderr = (x.decode() if isinstance(x, bytes) else x or "" for x in (e.stdout, e.stderr))
                why = "worker timed out after %d s" % limit
            sys.stderr.write(stderr[-3000:])
            for c in group:
                results[fw][c] = "error: " + why
            for ln in stdout.splitlines():
                if ln.startswith("CASE "):
                    results[fw].update(json.loads(ln[5:]))
    card = "unknown"
    try:
        card = subprocess.run(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"], capture_output=True,
                              text=True).stdout.strip().splitlines()[0]
    except (OSError, IndexError):
        pass
    rows = []
    print("%-24s %14s %14s %8s %8s  (%s)" % ("case", "weft", "torch", "ratio", "target", card))
    for c in cases:
        w, t = results["weft"].get(c), results["torch"].get(c)
        mem = "_mem_" in c
        ok = isinstance(w, float) and isinstance(t, float)
        # For memory lower is better: the ratio is PyTorch's over Weft's so above 1 is better.
        ratio = (t / w if mem else w / t) if ok and w and t else None
        unit = "MB" if mem else "samples/s"
        print("%-24s %14s %14s %8s %8s" % (c, "%.1f" % w if isinstance(w, float) else "-",
                                            "%.1f" % t if isinstance(t, float) else "-",
                                            "%.2f" % ratio if ratio else "-", "%.2f" % TARGETS[c]))
        for side, v in (("weft", w), ("torch", t)):
            if not isinstance(v, float):
                print("    %s: %s" % (side, v))
        rows.append({"case": c, "unit": unit, "weft": w, "torch": t, "ratio": ratio, "target": TARGETS[c],
                     "card": card, "date": time.strftime("%Y-%m-%d")})
        if ok:
            record(c, w, t, unit, not mem)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
