"""Whole networks, Weft (symbol + executor) beside PyTorch 1.13, same thread count, in one
run: LeNet training step at batch 64; ResNet-50 inference at batch 32 and 1 and a training
step at batch 16; ResNet-18 alongside. Throughput in images/s, and for ResNets the share of
the machine's FP32 peak (455 GFLOP/s on these 2 cores), counting a ResNet-50 forward as 4.1
GFLOP and ResNet-18 as 1.8 (a training step as 3 forwards), as the issue does. --unfused
adds Weft's inference with the oneDNN regions off, for comparison."""
import argparse
import os
import sys

import peer  # noqa: F401  (first: it sets the environment the libraries read)

import time  # noqa: E402

import numpy as np  # noqa: E402
import torch  # noqa: E402
import torchvision  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import weft as mx  # noqa: E402
from models import lenet, resnet50, conv_bn_relu, head  # noqa: E402

PEAK = 455e9
GFLOP = {"resnet50": 4.1e9, "resnet18": 1.8e9}


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


class TorchLeNet(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.c1, self.c2 = torch.nn.Conv2d(1, 20, 5), torch.nn.Conv2d(20, 50, 5)
        self.f1, self.f2 = torch.nn.Linear(800, 500), torch.nn.Linear(500, 10)

    def forward(self, x):
        x = torch.max_pool2d(torch.relu(self.c1(x)), 2)
        x = torch.max_pool2d(torch.relu(self.c2(x)), 2)
        return self.f2(torch.relu(self.f1(x.flatten(1))))


def weft_runner(net, shape, batch, train, dnnl_fuse=True):
    # The executor reads WEFT_EXEC_DNNL_FUSE when it binds: off, inference runs every
    # operator on its own instead of oneDNN regions.
    old = os.environ.get("WEFT_EXEC_DNNL_FUSE")
    os.environ["WEFT_EXEC_DNNL_FUSE"] = "1" if dnnl_fuse else "0"
    try:
        ex = net.simple_bind(mx.cpu(), grad_req="write" if train else "null", data=(batch,) + shape,
                             softmax_label=(batch,))
    finally:
        if old is None:
            del os.environ["WEFT_EXEC_DNNL_FUSE"]
        else:
            os.environ["WEFT_EXEC_DNNL_FUSE"] = old
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


def torch_runner(model, shape, batch, train):
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


def images_per_s(step, batch, min_time=3.0, min_steps=3):
    step()  # warm-up: primitive creation, first allocations
    steps, start = 0, time.perf_counter()
    while steps < min_steps or time.perf_counter() - start < min_time:
        step()
        steps += 1
    return steps * batch / (time.perf_counter() - start)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", default="", help="run the cases whose name contains this (e.g. 'infer')")
    parser.add_argument("--batch", type=int, default=0, help="run only the cases of this batch size")
    parser.add_argument("--unfused", action="store_true",
                        help="also time inference with the oneDNN regions off (WEFT_EXEC_DNNL_FUSE=0)")
    parser.add_argument("--seconds", type=float, default=3.0, help="minimum timed seconds per measurement")
    args = parser.parse_args()
    cases = [
        ("LeNet train", lenet, TorchLeNet, (1, 28, 28), 64, True, None),
        ("ResNet-50 infer", resnet50, torchvision.models.resnet50, (3, 224, 224), 32, False, "resnet50"),
        ("ResNet-50 infer", resnet50, torchvision.models.resnet50, (3, 224, 224), 1, False, "resnet50"),
        ("ResNet-50 train", resnet50, torchvision.models.resnet50, (3, 224, 224), 16, True, "resnet50"),
        ("ResNet-18 infer", resnet18, torchvision.models.resnet18, (3, 224, 224), 32, False, "resnet18"),
        ("ResNet-18 infer", resnet18, torchvision.models.resnet18, (3, 224, 224), 1, False, "resnet18"),
        ("ResNet-18 train", resnet18, torchvision.models.resnet18, (3, 224, 224), 16, True, "resnet18"),
    ]
    print("%-16s %5s %12s %12s %10s %12s%s" % ("case", "batch", "Weft img/s", "torch img/s", "Weft/torch",
                                              "Weft % peak", "  unfused img/s" if args.unfused else ""))
    for name, net, model, shape, batch, train, flops_key in cases:
        if args.only not in name or (args.batch and batch != args.batch):
            continue
        w = images_per_s(weft_runner(net(), shape, batch, train), batch, args.seconds)
        t = images_per_s(torch_runner(model(), shape, batch, train), batch, args.seconds)
        peak = ""
        if flops_key:
            peak = "%.0f%%" % (100 * w * GFLOP[flops_key] * (3 if train else 1) / PEAK)
        unfused = ""
        if args.unfused and not train:
            unfused = "%15.1f" % images_per_s(weft_runner(net(), shape, batch, train, dnnl_fuse=False), batch,
                                              args.seconds)
        print("%-16s %5d %12.1f %12.1f %10.2f %12s%s" % (name, batch, w, t, w / t, peak, unfused), flush=True)


if __name__ == "__main__":
    main()
