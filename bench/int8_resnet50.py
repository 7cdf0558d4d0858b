"""ResNet-50 v1 (Gluon model zoo) inference in int8 against float32, batch --batch-size:
images/s of each, and how often the int8 model's top-1 class agrees with float32's on
--eval-batches held-out batches.

There is no network here, so no pretrained weights: the weights are Xavier-random (seed 0)
and the images synthetic (smooth random patterns: random 7x7 fields upsampled to 224x224,
plus a little pixel noise). To make the activations those of a working network rather than
of random layers (whose values grow or vanish from layer to layer), each BatchNorm's moving
mean and variance are set to the statistics of its input on --stats-batches synthetic
batches (one training-mode pass with momentum 0): every BatchNorm then normalises its
input, as in a trained network. The agreement is still a weaker test than on ImageNet: with
random weights the top two logits can lie closer than a trained network's.

The int8 model comes from mx.contrib.quantization.quantize_net_v2 (the oneDNN path:
BatchNorm folded into the convolutions, residual additions and relus fused into them,
calibrated on --calib-batches other synthetic batches, --calib-mode naive or entropy).
float32 runs the hybridized network as Weft runs it (oneDNN inference regions). The model
is built here and saved; float32 and int8 are each measured in a process of their own, one
after the other, with the load average printed beside the figures.
With --trained PREFIX the weights are instead those bench/int8_resnet50_train.py trained on
Fashion-MNIST (10 classes, 32x32 inputs): calibration takes --calib-batches batches of
training images and the agreement is measured on --eval-batches batches of held-out test
images at the training size, while the speed is measured at 224x224 (the test images
upscaled 7x) with the same weights. Each mode reports wall time and the process's CPU time
per batch (CPU time / wall time shows how much of the machine it got).
--granularity channel-wise (the default) quantizes weights per output channel, tensor-wise one range per array.
--flow picks the int8 models measured beside float32: 'v2' (quantize_net_v2, the default),
'mxnet' (MXNet 1.9's oneDNN flow of example/quantization: the symbol through
get_backend_symbol('MKLDNN_QUANTIZE'), contrib.quant.quantize_model with calib_mode and
quantize_mode 'full', get_backend_symbol('MKLDNN_QUANTIZE') again, run in a Module), or
'all' (both). Each mode runs in a process of its own.
Usage: bench/int8_resnet50.py [--batch-size 32] [--iters 10] [--calib-mode naive]
       [--trained PREFIX] [--granularity channel-wise] [--flow v2|mxnet|all]
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np


def synthetic_images(rng, n):
    fields = rng.normal(0, 1, (n, 3, 7, 7)).astype(np.float32)
    images = np.kron(fields, np.ones((1, 1, 32, 32), np.float32))
    return images + rng.normal(0, 0.1, images.shape).astype(np.float32)


def build(args, prefix):
    """The model with data-derived BatchNorm statistics, saved at prefix, and the batches."""
    import weft as mx
    from weft import autograd
    from weft.gluon import nn
    from weft.gluon.model_zoo import vision
    mx.random.seed(0)
    rng = np.random.RandomState(0)
    net = vision.resnet50_v1(classes=1000)
    net.initialize(mx.init.Xavier())
    norms = []

    def find(block):
        if isinstance(block, nn.BatchNorm):
            norms.append(block)
        for child in block._children.values():
            find(child)
    find(net)
    for bn in norms:
        bn._kwargs["momentum"] = 0.0
    net.hybridize()
    stats = mx.nd.array(synthetic_images(rng, args.stats_batches * 8))
    with autograd.record(train_mode=True):
        net(stats).wait_to_read()
    for bn in norms:
        bn._kwargs["momentum"] = 0.9
    net.export(prefix)
    for name, count in (("calib", args.calib_batches), ("eval", args.eval_batches)):
        mx.nd.save("%s-%s.nd" % (prefix, name),
                   [mx.nd.array(synthetic_images(rng, args.batch_size)) for _ in range(count)])


def trained_batches(args, prefix):
    """Fashion-MNIST batches for the --trained model: calibration (training images), held-out
    evaluation (test images), both at the training size; saved beside the model."""
    import weft as mx
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from int8_resnet50_train import load, prepare
    rng = np.random.RandomState(1)
    images, _ = load("train")
    pick = rng.choice(len(images), args.calib_batches * args.batch_size, replace=False)
    test, _ = load("t10k")
    # Test images the training script's accuracy check (the first 2000) did not use.
    test = test[5000:]
    for name, src, count in (("calib", images[pick], args.calib_batches), ("eval", test, args.eval_batches)):
        mx.nd.save("%s-%s.nd" % (prefix, name),
                   [mx.nd.array(prepare(src[i * args.batch_size:(i + 1) * args.batch_size], args.train_size))
                    for i in range(count)])


def calib_iter(batches):
    """The calibration batches as the DataIter quantize_model takes (one pass)."""
    import weft as mx

    class Batches(mx.io.DataIter):
        def __init__(self):
            super().__init__(batches[0].shape[0])
            self.provide_data = [mx.io.DataDesc("data", batches[0].shape)]
            self.provide_label = None

        def __iter__(self):
            return iter([mx.io.DataBatch([b], []) for b in batches])

        def reset(self):
            pass
    return Batches()


def mxnet_flow(args, model, prefix):
    """The int8 model through MXNet 1.9's oneDNN flow, as a Module bound for inference, and the
    seconds its quantization took; returns (forward(x) -> output, seconds)."""
    import weft as mx
    from weft.contrib import quant
    sym, arg_params, aux_params = mx.model.load_checkpoint(model, 0)
    calib = mx.nd.load(prefix + "-calib.nd")
    it = calib_iter(calib)
    start = time.perf_counter()
    sym = sym.get_backend_symbol("MKLDNN_QUANTIZE")
    qsym, qargs, qauxs = quant.quantize_model(
        sym=sym, arg_params=arg_params, aux_params=aux_params, ctx=mx.cpu(), excluded_sym_names=None,
        calib_mode=args.calib_mode, calib_data=it, num_calib_examples=len(calib) * it.batch_size,
        quantized_dtype="auto", quantize_mode="full", quantize_granularity=args.granularity, label_names=None)
    qsym = qsym.get_backend_symbol("MKLDNN_QUANTIZE")
    seconds = time.perf_counter() - start
    mod = mx.mod.Module(symbol=qsym, label_names=None, context=mx.cpu())
    mod.bind(for_training=False, data_shapes=[("data", calib[0].shape)])
    mod.set_params(qargs, qauxs)

    bound = [calib[0].shape]

    def forward(x):
        if x.shape != bound[0]:
            mod.reshape(data_shapes=[("data", x.shape)])
            bound[0] = x.shape
        mod.forward(mx.io.DataBatch([x], []), is_train=False)
        return mod.get_outputs()[0]
    return forward, seconds


def run(mode, args, prefix):
    import weft as mx
    from weft.contrib import quantization
    model = args.trained or prefix
    calib_seconds = 0.0
    if mode == "mxnet":
        net, calib_seconds = mxnet_flow(args, model, prefix)
    else:
        net = mx.gluon.SymbolBlock.imports(model + "-symbol.json", ["data"], model + "-0000.params")
    if mode == "v2":
        calib = mx.nd.load(prefix + "-calib.nd")
        start = time.perf_counter()
        net = quantization.quantize_net_v2(net, quantized_dtype="auto", calib_mode=args.calib_mode,
                                           calib_data=calib, ctx=mx.cpu(), quantize_granularity=args.granularity)
        calib_seconds = time.perf_counter() - start
    if mode != "mxnet":
        net.hybridize()
    evals = mx.nd.load(prefix + "-eval.nd")
    top1 = [net(x).asnumpy().argmax(1).tolist() for x in evals]
    x = evals[0]
    if args.trained:
        # The speed at 224x224: the held-out images upscaled 7x (nearest).
        x = mx.nd.array(np.kron(x.asnumpy(), np.ones((1, 1, 224 // x.shape[2], 224 // x.shape[3]), np.float32)))
    net(x).wait_to_read()
    best, best_cpu = float("inf"), float("inf")
    for _ in range(args.repeats):
        start, cpu_start = time.perf_counter(), time.process_time()
        for _ in range(args.iters):
            out = net(x)
        out.wait_to_read()
        wall, cpu = (time.perf_counter() - start) / args.iters, (time.process_time() - cpu_start) / args.iters
        if wall < best:
            best, best_cpu = wall, cpu
    return {"mode": mode, "images_per_s": args.batch_size / best, "wall_s": best, "cpu_s": best_cpu,
            "shape": list(x.shape), "top1": top1, "calib_seconds": calib_seconds, "load": os.getloadavg()}


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--iters", type=int, default=10)
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--stats-batches", type=int, default=2)
    ap.add_argument("--calib-batches", type=int, default=4)
    ap.add_argument("--eval-batches", type=int, default=4)
    ap.add_argument("--calib-mode", choices=("naive", "entropy"), default="naive")
    ap.add_argument("--granularity", choices=("tensor-wise", "channel-wise"), default="channel-wise")
    ap.add_argument("--trained", help="prefix of the model bench/int8_resnet50_train.py saved")
    ap.add_argument("--train-size", type=int, default=32, help="the --trained model's input size")
    ap.add_argument("--flow", choices=("v2", "mxnet", "all"), default="v2",
                    help="the int8 flow(s): quantize_net_v2, MXNet's quantize_model + MKLDNN_QUANTIZE, or both")
    ap.add_argument("--mode", choices=("float32", "v2", "mxnet"), help="measure one model in this process")
    ap.add_argument("--prefix", help="the saved model and batches (with --mode)")
    args = ap.parse_args()
    if args.mode:
        print(json.dumps(run(args.mode, args, args.prefix)))
        return

    info = {}
    with open("/proc/cpuinfo") as f:
        for line in f:
            key, _, value = line.partition(":")
            info.setdefault(key.strip(), value.strip())
    cpu = "%s, family %s model %s" % (info.get("model name", "?"), info.get("cpu family", "?"), info.get("model", "?"))
    flags = info.get("flags", "")
    load_before = os.getloadavg()
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        prefix = os.path.join(tmp, "resnet50")
        if args.trained:
            trained_batches(args, prefix)
        else:
            build(args, prefix)
        modes = ["float32"] + (["v2", "mxnet"] if args.flow == "all" else [args.flow])
        for mode in modes:
            cmd = [sys.executable, os.path.abspath(__file__), "--mode", mode, "--prefix", prefix] + sys.argv[1:]
            out = subprocess.run(cmd, check=True, stdout=subprocess.PIPE, text=True).stdout
            results[mode] = json.loads(out.strip().splitlines()[-1])
    f32 = results["float32"]
    names = {"float32": "float32", "v2": "int8 quantize_net_v2", "mxnet": "int8 MXNet flow"}
    print("ResNet-50 v1 inference, batch %d, input %s, weights %s, CPU: %s (%d cores, AVX512-VNNI %s), "
          "OMP_NUM_THREADS=%s" % (args.batch_size, "x".join(map(str, f32["shape"][1:])),
                                  "trained on Fashion-MNIST" if args.trained else "random",
                                  cpu, os.cpu_count(), "yes" if "avx512_vnni" in flags else "no",
                                  os.environ.get("OMP_NUM_THREADS", "unset")))
    print("load average (1/5/15 min) before %.1f/%.1f/%.1f, after %.1f/%.1f/%.1f"
          % (load_before + os.getloadavg()))
    for mode in modes:
        r = results[mode]
        print("  %-21s %8.1f images/s  wall %.3f s/batch  cpu %.3f s/batch  (load at the end %.1f)"
              % (names[mode], r["images_per_s"], r["wall_s"], r["cpu_s"], r["load"][0]))
    for mode in modes[1:]:
        r = results[mode]
        agree = np.mean([a == b for x, y in zip(f32["top1"], r["top1"]) for a, b in zip(x, y)])
        print("  %s / float32: %.2fx by wall time, %.2fx by CPU time (%s, %s calibration on %d batches took %.0f s); "
              "top-1 agreement with float32 on %d held-out images: %.4f"
              % (names[mode], f32["wall_s"] / r["wall_s"], f32["cpu_s"] / r["cpu_s"], args.granularity,
                 args.calib_mode, args.calib_batches, r["calib_seconds"], args.eval_batches * args.batch_size, agree))


if __name__ == "__main__":
    main()
