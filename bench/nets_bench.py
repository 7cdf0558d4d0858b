"""Whole networks, Weft (symbol + executor) beside PyTorch 1.13, same thread count, in one
run: LeNet training step at batch 64; ResNet-50 inference at batch 32 and 1 and a training
step at batch 16; ResNet-18 alongside; VGG-16, Inception-BN and MobileNet v1 inference and
training. Throughput in images/s, and the share of the machine's FP32 peak
(timing.peak_flops: 455 GFLOP/s on the 2 AVX-512 cores the issue was written on, 157 on 2
AVX2 cores at 2.45 GHz; --peak overrides, e.g. with what build/weft_fma_peak measures the
cores to sustain), counting a forward's multiply-adds as the issue
counts ResNet-50's 4.1 "GFLOP" (ResNet-18 1.8, VGG-16 15.5, Inception-BN 2.0, MobileNet
0.57; a training step as 3 forwards): a multiply-add is two floating-point operations, so
the column is half the share of peak by FLOPs. PyTorch runs its own LeNet, torchvision's
ResNets, and for VGG, Inception-BN and MobileNet the network of bench/models.py translated
node by node from Weft's graph of it (torch_from_symbol), so both run the same layers.
--unfused adds Weft's inference with the oneDNN regions off, for comparison.

Each measurement runs in a process of its own, started by this script one after the other:
PyTorch's threads in the same process slowed Weft's figures (ResNet-50 by about 15 %,
LeNet training 2.5x). PyTorch runs as peer.py sets it up (OMP_WAIT_POLICY=PASSIVE), Weft
with the environment this script was started with, as its users run it: on a quiet
machine OpenMP's default (threads spin a little before they sleep) ran LeNet's step 1.8x
faster than PASSIVE (3637 against 1993 images/s), while on a machine busy with other jobs
spinning threads cost Weft up to 5x there (export OMP_WAIT_POLICY=PASSIVE then). The
table is printed as the measurements come in, with the load average
before and after, since other work on the machine moves every figure. With --cpu-clock,
time is the process's CPU time divided by the thread count instead of the wall clock: on a
machine shared with other jobs that estimates the time alone, leaving out the time the
threads waited for a core."""
import argparse
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from timing import peak_flops, record  # noqa: E402

# Multiply-adds per image, as the issue counts ResNet-50's "4.1 GFLOP".
GFLOP = {"resnet50": 4.1e9, "resnet18": 1.8e9, "vgg16": 15.5e9, "inception_bn": 2.0e9, "mobilenet": 0.57e9}

# name, network, input shape, batch, training, FLOP key
CASES = [
    ("LeNet train", "lenet", (1, 28, 28), 64, True, None),
    ("ResNet-50 infer", "resnet50", (3, 224, 224), 32, False, "resnet50"),
    ("ResNet-50 infer", "resnet50", (3, 224, 224), 1, False, "resnet50"),
    ("ResNet-50 train", "resnet50", (3, 224, 224), 16, True, "resnet50"),
    ("ResNet-18 infer", "resnet18", (3, 224, 224), 32, False, "resnet18"),
    ("ResNet-18 infer", "resnet18", (3, 224, 224), 1, False, "resnet18"),
    ("ResNet-18 train", "resnet18", (3, 224, 224), 16, True, "resnet18"),
    ("VGG-16 infer", "vgg16", (3, 224, 224), 16, False, "vgg16"),
    ("VGG-16 train", "vgg16", (3, 224, 224), 8, True, "vgg16"),
    ("Inception-BN inf", "inception_bn", (3, 224, 224), 32, False, "inception_bn"),
    ("Inception-BN tr", "inception_bn", (3, 224, 224), 16, True, "inception_bn"),
    ("MobileNet infer", "mobilenet", (3, 224, 224), 32, False, "mobilenet"),
    ("MobileNet train", "mobilenet", (3, 224, 224), 16, True, "mobilenet"),
]


THREADS = 2  # the peer's torch.set_num_threads; Weft's oneDNN uses every core (2 here)


def images_per_s(step, batch, min_time=3.0, min_steps=3, cpu_clock=False):
    step()  # warm-up: primitive creation, first allocations
    steps, start, cpu = 0, time.perf_counter(), time.process_time()
    while steps < min_steps or time.perf_counter() - start < min_time:
        step()
        steps += 1
    if cpu_clock:
        return steps * batch / ((time.process_time() - cpu) / THREADS)
    return steps * batch / (time.perf_counter() - start)


def weft_net(name):
    import weft as mx
    from models import NETWORKS, conv_bn_relu, head

    def resnet18(classes=1000):
        sym = mx.sym
        x = conv_bn_relu(sym.Variable("data"), "conv0", 64, (7, 7), (2, 2), (3, 3))
        x = sym.Pooling(x, pool_type="max", kernel=(3, 3), stride=(2, 2), pad=(1, 1))
        for stage, width in enumerate((64, 128, 256, 512)):
            for b in range(2):
                name = "s%d_u%d" % (stage, b)
                stride = (2, 2) if b == 0 and stage > 0 else (1, 1)
                y = conv_bn_relu(x, name + "_c1", width, (3, 3), stride, (1, 1))
                y = conv_bn_relu(y, name + "_c2", width, (3, 3), (1, 1), (1, 1), relu=False)
                sc = conv_bn_relu(x, name + "_sc", width, (1, 1), stride, relu=False) if stage > 0 and b == 0 else x
                x = sym.Activation(y + sc, act_type="relu")
        x = sym.Pooling(x, pool_type="avg", global_pool=True, kernel=(7, 7))
        return head(x, classes)
    return resnet18() if name == "resnet18" else NETWORKS[name][0]()


def weft_step(net, shape, batch, train, dnnl_fuse):
    # The executor reads WEFT_EXEC_DNNL_FUSE when it binds: off, inference runs every
    # operator on its own instead of oneDNN regions.
    os.environ["WEFT_EXEC_DNNL_FUSE"] = "1" if dnnl_fuse else "0"
    import numpy as np
    import weft as mx
    sym = weft_net(net)
    # Gradients of the parameters only: PyTorch computes none for its input batch either.
    grad_req = {name: "write" if train and name not in ("data", "softmax_label") else "null"
                for name in sym.list_arguments()}
    ex = sym.simple_bind(mx.cpu(), grad_req=grad_req, data=(batch,) + shape, softmax_label=(batch,))
    rng = np.random.RandomState(0)
    for name, arr in ex.arg_dict.items():
        if name != "softmax_label":
            arr[:] = rng.normal(0, 0.05, arr.shape).astype(np.float32)
    for name, arr in ex.aux_dict.items():
        arr[:] = 1.0 if name.endswith("var") else 0.0

    def step():
        ex.forward(is_train=train)
        if train:
            ex.backward()
        mx.nd.waitall()
    return step


def dump_graph(net, shape):
    """Prints bench/models.py's network `net` as JSON: its graph and its arguments' shapes
    (for the PyTorch worker, which does not load Weft)."""
    import json
    sym = weft_net(net)
    arg_shapes, _, _ = sym.infer_shape(data=(1,) + shape)
    print(json.dumps({"graph": json.loads(sym.tojson()), "shapes": dict(zip(sym.list_arguments(), arg_shapes))}))


def torch_from_symbol(net, shape):
    """A PyTorch module computing bench/models.py's network `net` (up to its SoftmaxOutput)
    node by node from Weft's graph of it: PyTorch then runs the very network Weft runs,
    with its own convolution, BatchNorm and linear modules. The graph comes from a Weft
    process (dump_graph)."""
    import json
    import torch
    import torch.nn.functional as F

    run = subprocess.run([sys.executable, os.path.abspath(__file__), "--dump-graph", net], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, check=True)
    dumped = json.loads(run.stdout)
    graph, shapes = dumped["graph"], {k: tuple(v) for k, v in dumped["shapes"].items()}
    nodes = graph["nodes"]

    def tup(text):
        return tuple(int(v) for v in text.strip("()").split(",") if v.strip())

    class FromSymbol(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.layers = torch.nn.ModuleDict()
            for i, n in enumerate(nodes):
                a, op = n.get("attrs", {}), n["op"]
                weight = nodes[n["inputs"][1][0]]["name"] if len(n.get("inputs", [])) > 1 else None
                if op == "Convolution":
                    f, c = shapes[weight][0], shapes[weight][1] * int(a.get("num_group", 1))
                    self.layers[str(i)] = torch.nn.Conv2d(
                        c, f, tup(a["kernel"]), tup(a.get("stride", "(1,1)")), tup(a.get("pad", "(0,0)")),
                        groups=int(a.get("num_group", 1)), bias=a.get("no_bias", "False") != "True")
                elif op == "BatchNorm":
                    self.layers[str(i)] = torch.nn.BatchNorm2d(shapes[weight][0], eps=float(a.get("eps", 1e-3)))
                elif op == "FullyConnected":
                    self.layers[str(i)] = torch.nn.Linear(shapes[weight][1], int(a["num_hidden"]))
                elif op == "Dropout":
                    self.layers[str(i)] = torch.nn.Dropout(float(a.get("p", 0.5)))

        def forward(self, x):
            vals = {}
            for i, n in enumerate(nodes):
                op, a = n["op"], n.get("attrs", {})
                ins = [vals.get((j, k)) for j, k, *_ in n.get("inputs", [])]
                if op == "null":
                    out = x if n["name"] == "data" else None
                elif str(i) in self.layers:
                    out = self.layers[str(i)](ins[0])
                elif op == "Activation":
                    out = F.relu(ins[0])
                elif op == "Pooling":
                    if a.get("global_pool") == "True":
                        out = F.adaptive_avg_pool2d(ins[0], 1) if a["pool_type"] == "avg" else \
                            F.adaptive_max_pool2d(ins[0], 1)
                    else:
                        pool = F.max_pool2d if a["pool_type"] == "max" else F.avg_pool2d
                        out = pool(ins[0], tup(a["kernel"]), tup(a.get("stride", "(1,1)")),
                                   tup(a.get("pad", "(0,0)")))
                elif op == "Concat":
                    out = torch.cat(ins, dim=int(a.get("dim", 1)))
                elif op in ("elemwise_add", "_Plus", "_plus"):
                    out = ins[0] + ins[1]
                elif op == "Flatten":
                    out = ins[0].flatten(1)
                elif op == "SoftmaxOutput":
                    out = ins[0]  # logits: the step adds the loss
                else:
                    raise ValueError("torch_from_symbol: no translation for %s" % op)
                vals[(i, 0)] = out
            return vals[tuple(graph["heads"][0][:2])]
    return FromSymbol()


def torch_step(net, shape, batch, train):
    import peer  # noqa: F401  (first: it sets the environment the libraries read)
    import torch
    import torchvision

    class TorchLeNet(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.c1, self.c2 = torch.nn.Conv2d(1, 20, 5), torch.nn.Conv2d(20, 50, 5)
            self.f1, self.f2 = torch.nn.Linear(800, 500), torch.nn.Linear(500, 10)

        def forward(self, x):
            x = torch.max_pool2d(torch.relu(self.c1(x)), 2)
            x = torch.max_pool2d(torch.relu(self.c2(x)), 2)
            return self.f2(torch.relu(self.f1(x.flatten(1))))

    zoo = {"lenet": TorchLeNet, "resnet50": torchvision.models.resnet50, "resnet18": torchvision.models.resnet18}
    model = zoo[net]() if net in zoo else torch_from_symbol(net, shape)
    x = torch.rand((batch,) + shape)
    y = torch.zeros(batch, dtype=torch.long)
    model.train(train)

    def step():
        if train:
            model.zero_grad()
            torch.nn.functional.cross_entropy(model(x), y).backward()
        else:
            with torch.no_grad():
                model(x)
    return step


def worker(args):
    """One measurement (in a process of its own): prints images/s as the last line."""
    name, net, shape, batch, train, _ = CASES[args.case]
    if args.worker == "torch":
        step = torch_step(net, shape, batch, train)
    else:
        step = weft_step(net, shape, batch, train, dnnl_fuse=args.worker == "weft")
    print("%.6f" % images_per_s(step, batch, args.seconds, cpu_clock=args.cpu_clock), flush=True)


def measure(case, who, args):
    cmd = [sys.executable, os.path.abspath(__file__), "--worker", who, "--case", str(case), "--seconds",
           str(args.seconds)] + (["--cpu-clock"] if args.cpu_clock else [])
    run = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if run.returncode != 0:
        sys.exit("nets_bench: the %s measurement of '%s' failed (exit %d):\n%s" %
                 (who, CASES[case][0], run.returncode, run.stderr[-4000:]))
    return float(run.stdout.strip().splitlines()[-1])


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", default="", help="run the cases whose name contains this (e.g. 'infer')")
    parser.add_argument("--batch", type=int, default=0, help="run only the cases of this batch size")
    parser.add_argument("--unfused", action="store_true",
                        help="also time inference with the oneDNN regions off (WEFT_EXEC_DNNL_FUSE=0)")
    parser.add_argument("--seconds", type=float, default=3.0, help="minimum timed seconds per measurement")
    parser.add_argument("--cpu-clock", action="store_true",
                        help="time by process CPU time / threads (estimates the unloaded time on a busy machine)")
    parser.add_argument("--peak", type=float, default=0,
                        help="the FP32 peak in GFLOP/s for the %% column (default: reckoned from /proc/cpuinfo)")
    parser.add_argument("--worker", choices=("weft", "weft-unfused", "torch"), help=argparse.SUPPRESS)
    parser.add_argument("--case", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--dump-graph", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.dump_graph:
        dump_graph(args.dump_graph, next(c[2] for c in CASES if c[1] == args.dump_graph))
        return
    if args.worker:
        worker(args)
        return
    print("load average at start: %.2f %.2f %.2f%s" % (os.getloadavg() + (
        ("; clock: CPU time / %d threads" % THREADS) if args.cpu_clock else "",)))
    peak, how = (args.peak * 1e9, "given") if args.peak else peak_flops()
    print("FP32 peak: %.0f GFLOP/s (%s)" % (peak / 1e9, how))
    print("%-16s %5s %12s %12s %10s %12s%s" % ("case", "batch", "Weft img/s", "torch img/s", "Weft/torch",
                                              "Weft % peak", "  unfused img/s" if args.unfused else ""), flush=True)
    for i, (name, _, _, batch, train, flops_key) in enumerate(CASES):
        if args.only not in name or (args.batch and batch != args.batch):
            continue
        w = measure(i, "weft", args)
        t = measure(i, "torch", args)
        share, note = "", None
        if flops_key:
            macs = w * GFLOP[flops_key] * (3 if train else 1)
            share = "%.0f%%" % (100 * macs / peak)
            note = ("%.0f%% of peak counting a multiply-add as one operation (as issue 23 counts); "
                    "%.0f%% of the FMA peak's FLOPs" % (100 * macs / peak, 200 * macs / peak))
        unfused = ""
        if args.unfused and not train:
            unfused = "%15.1f" % measure(i, "weft-unfused", args)
        print("%-16s %5d %12.1f %12.1f %10.2f %12s%s" % (name, batch, w, t, w / t, share, unfused), flush=True)
        record("%s batch %d" % (name, batch), w, t, "images/s", True, note)
    print("load average at end: %.2f %.2f %.2f" % os.getloadavg())


if __name__ == "__main__":
    main()
