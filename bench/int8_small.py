"""int8 against float32 inference, side by side in one process: a small conv net (two 3x3
convolutions with relu, max pooling, two dense layers; 3x32x32 images) quantized with
quantize_model_mkldnn, and a 2-layer LSTM (T=--seq-len, input and state --hidden) quantized
with quantize_model (_contrib_quantized_rnn), both at --batch-size. Random weights (speed
does not depend on them), naive calibration on 2 batches. For each model: milliseconds per
batch, wall and CPU time (medians of --repeats runs after warm-up, the two models
alternating), the int8/float32 speed-ups, and the int8 outputs' largest error relative to
float32's largest magnitude. Prints the CPU model
and the load average before and after, as other jobs on the machine move the speeds.
Usage: bench/int8_small.py [--batch-size 32] [--repeats 20]
"""
import argparse
import os
import platform
import time

import numpy as np

import weft as mx
from weft.contrib import quantization as qz


def cpu_model():
    """The model name with family and model numbers (a virtual machine may name only the
    vendor), and whether it has AVX512-VNNI, which oneDNN's int8 kernels use."""
    info = {}
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                key, _, value = line.partition(":")
                info.setdefault(key.strip(), value.strip())
    except OSError:
        return platform.processor()
    vnni = "avx512_vnni" in info.get("flags", "").split()
    return "%s family %s model %s, %s" % (info.get("model name", "?"), info.get("cpu family", "?"),
                                          info.get("model", "?"), "AVX512-VNNI" if vnni else "no AVX512-VNNI")


def conv_net():
    x = mx.sym.var("data")
    x = mx.sym.Activation(mx.sym.Convolution(x, kernel=(3, 3), num_filter=32, pad=(1, 1), name="conv0"),
                          act_type="relu", name="relu0")
    x = mx.sym.Pooling(x, kernel=(2, 2), stride=(2, 2), pool_type="max", name="pool0")
    x = mx.sym.Activation(mx.sym.Convolution(x, kernel=(3, 3), num_filter=64, pad=(1, 1), name="conv1"),
                          act_type="relu", name="relu1")
    x = mx.sym.Pooling(x, kernel=(2, 2), stride=(2, 2), pool_type="max", name="pool1")
    x = mx.sym.Activation(mx.sym.FullyConnected(x, num_hidden=128, name="fc0"), act_type="relu", name="relu2")
    return mx.sym.FullyConnected(x, num_hidden=10, name="fc1")


def lstm_net(hidden):
    x = mx.sym.var("data")
    return mx.sym.RNN(x, mx.sym.var("lstm_parameters"), mx.sym.var("lstm_state"), mx.sym.var("lstm_state_cell"),
                      state_size=hidden, num_layers=2, mode="lstm", name="lstm")


def init(sym, shapes, rng):
    arg_shapes, _, _ = sym.infer_shape(**shapes)
    args = {}
    for n, s in zip(sym.list_arguments(), arg_shapes):
        if n in shapes:
            continue
        if n.endswith("state") or n.endswith("state_cell"):
            args[n] = mx.nd.zeros(s)
        else:
            fan_in = int(np.prod(s[1:])) if len(s) > 1 else 4 * 64
            args[n] = mx.nd.array(rng.normal(0, np.sqrt(1.0 / fan_in), s))
    return args


def timed(pair, data, repeats):
    """Medians of wall and CPU milliseconds per batch of the float32 and int8 (sym, args) in
    `pair`, run alternately so that a change of load hits both alike; and their outputs.
    The process's CPU time counts every thread of it and not the time other jobs take the
    core: under load it is the steadier figure."""
    exes = [sym.bind(mx.cpu(), dict(args, data=mx.nd.array(data)), grad_req="null") for sym, args in pair]
    outs = []
    for exe in exes:
        for _ in range(3):
            out = exe.forward(is_train=False)[0].asnumpy()
        outs.append(out)
    wall, cpu = [[], []], [[], []]
    for _ in range(repeats):
        for k, exe in enumerate(exes):
            t, c = time.perf_counter(), time.process_time()
            exe.forward(is_train=False)[0].wait_to_read()
            wall[k].append(time.perf_counter() - t)
            cpu[k].append(time.process_time() - c)
    med = [[float(np.median(v)) * 1000.0 for v in w] for w in (wall, cpu)]
    return med[0], med[1], outs


class Batches(mx.io.DataIter):
    def __init__(self, data, axis, batch):
        super().__init__(batch)
        self.data, self.axis, self.batch, self.pos = data, axis, batch, 0
        shape = list(data.shape)
        shape[axis] = batch
        self.provide_data = [mx.io.DataDesc("data", tuple(shape))]
        self.provide_label = []

    def reset(self):
        self.pos = 0

    def next(self):
        if self.pos + self.batch > self.data.shape[self.axis]:
            raise StopIteration
        b = np.take(self.data, range(self.pos, self.pos + self.batch), axis=self.axis)
        self.pos += self.batch
        return mx.io.DataBatch(data=[mx.nd.array(b)], pad=0)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--repeats", type=int, default=20)
    ap.add_argument("--seq-len", type=int, default=32)
    ap.add_argument("--hidden", type=int, default=256)
    a = ap.parse_args()
    rng = np.random.RandomState(0)
    print("CPU: %s; OMP_NUM_THREADS=%s; load average before: %s" %
          (cpu_model(), os.environ.get("OMP_NUM_THREADS", "unset"), " ".join("%.2f" % v for v in os.getloadavg())))
    b = a.batch_size
    rows = []

    sym = conv_net()
    args = init(sym, {"data": (b, 3, 32, 32)}, rng)
    data = rng.uniform(0, 1, (3 * b, 3, 32, 32)).astype(np.float32)
    qsym, qargs, _ = qz.quantize_model_mkldnn(sym, args, {}, data_names=["data"], label_names=None,
                                              calib_mode="naive", calib_data=Batches(data[:2 * b], 0, b),
                                              quantized_dtype="auto")
    wall, cpu, (f_out, q_out) = timed([(sym, args), (qsym, qargs)], data[2 * b:], a.repeats)
    rows.append(("conv net 3x32x32", wall, cpu, np.abs(q_out - f_out).max() / np.abs(f_out).max()))

    sym = lstm_net(a.hidden)
    shape = (a.seq_len, b, a.hidden)
    args = init(sym, {"data": shape}, rng)
    data = rng.uniform(-1, 1, (a.seq_len, 3 * b, a.hidden)).astype(np.float32)
    qsym, qargs, _ = qz.quantize_model(sym, args, {}, data_names=["data"], label_names=None, calib_mode="naive",
                                       calib_data=Batches(data[:, :2 * b], 1, b), quantized_dtype="auto")
    wall, cpu, (f_out, q_out) = timed([(sym, args), (qsym, qargs)], data[:, 2 * b:], a.repeats)
    rows.append(("LSTM 2x%d, T=%d" % (a.hidden, a.seq_len), wall, cpu,
                 np.abs(q_out - f_out).max() / np.abs(f_out).max()))

    print("batch %d, median of %d runs each, float32 and int8 alternating" % (b, a.repeats))
    print("%-20s %10s %10s %8s %10s %10s %8s %11s" % ("model", "f32 wall", "int8 wall", "speedup", "f32 cpu",
                                                     "int8 cpu", "speedup", "max relerr"))
    for name, wall, cpu, err in rows:
        print("%-20s %8.2fms %8.2fms %7.2fx %8.2fms %8.2fms %7.2fx %11.4f" %
              (name, wall[0], wall[1], wall[0] / wall[1], cpu[0], cpu[1], cpu[0] / cpu[1], err))
    print("load average after: %s" % " ".join("%.2f" % v for v in os.getloadavg()))


if __name__ == "__main__":
    main()
