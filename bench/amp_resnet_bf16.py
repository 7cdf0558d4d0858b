"""ResNet-50 v1 inference in float32 against the same model converted to bfloat16 with
mx.contrib.amp.convert_hybrid_block (convolutions, dense layer, pooling and BatchNorm in
bf16 on oneDNN), side by side: milliseconds per batch and the top-1 agreement of the two
on random inputs. Usage: bench/amp_resnet_bf16.py [--batch-size 32] [--iters 5]
"""
import argparse
import os
import time

import numpy as np

import weft as mx
from weft.contrib import amp
from weft.gluon.model_zoo import vision


def timed(net, x, iters):
    net(x).wait_to_read()  # binds the graph and plans the primitives
    start = time.perf_counter()
    for _ in range(iters):
        out = net(x)
    out.wait_to_read()
    return (time.perf_counter() - start) / iters * 1000, out


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--iters", type=int, default=5)
    args = ap.parse_args()
    mx.random.seed(0)
    net = vision.resnet50_v1(classes=1000)
    net.initialize(mx.init.Xavier())
    net.hybridize()
    x = mx.nd.array(np.random.RandomState(0).uniform(-1, 1, (args.batch_size, 3, 224, 224)).astype(np.float32))
    f32_ms, f32_out = timed(net, x, args.iters)
    low = amp.convert_hybrid_block(net, target_dtype="bfloat16", cast_optional_params=True)
    bf16_ms, bf16_out = timed(low, x, args.iters)
    agree = float((f32_out.asnumpy().argmax(1) == bf16_out.astype("float32").asnumpy().argmax(1)).mean())
    with open("/proc/cpuinfo") as f:
        cpu = next((l.split(":", 1)[1].strip() for l in f if l.startswith("model name")), "?")
    print("ResNet-50 v1 inference, batch %d, %d iterations, CPU: %s, OMP_NUM_THREADS=%s, load average %.1f"
          % (args.batch_size, args.iters, cpu, os.environ.get("OMP_NUM_THREADS", "unset"), os.getloadavg()[0]))
    print("  float32   %8.1f ms/batch" % f32_ms)
    print("  bfloat16  %8.1f ms/batch   (%.2fx)   top-1 agreement with float32 %.3f"
          % (bf16_ms, f32_ms / bf16_ms, agree))


if __name__ == "__main__":
    main()
