"""Memory planning: the executor's internal memory (the values between operators, not the
parameters, inputs or gradients) with planning against one buffer per value, for training
(forward + backward; by default, with the oneDNN training regions recomputing nothing,
WEFT_EXEC_DNNL_TRAIN_RECOMPUTE=0, with backward mirroring, WEFT_BACKWARD_DO_MIRROR=1, with
the links of convolution chains recomputed too, WEFT_BACKWARD_MIRROR_CONV=1, and with
segment checkpointing, WEFT_BACKWARD_MIRROR_SEGMENT) and inference at batch 64; then the
peak resident memory of one ResNet-50 training step (batch 64) in Weft (in those modes)
and in PyTorch, each in fresh processes, repeated.
The MXNet paper reports about 2x savings in training and 4x in inference."""
import os
import re
import subprocess
import sys

import peer  # first: it sets the environment the libraries read

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

BATCH = 64
# The VGG-like MXNet graph of issue 23 (training regions against the planner), when present.
VGG_MXNET = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "shared", "compat", "mxnet",
                         "upstream", "mkldnn_model1-symbol.json")
# The stride of segment checkpointing measured (WEFT_BACKWARD_MIRROR_SEGMENT).
SEGMENT = "4"

# One training step (forward + backward at batch BATCH, parameters and gradients included)
# in a fresh process. Each prints two figures: the peak resident memory above the level
# after the imports (what the aim compares), and the library's own account: for Weft the
# storage's peak of bytes handed out (planned arena, arguments, gradients, workspace); for
# PyTorch SAVED_TORCH measures the storage its autograd saves for the backward, which the
# forward must hold at its end whatever the allocator does: a floor under torch's peak.
# Peaks are read from /proc/self/status (VmHWM: the high-water mark of this process image),
# not from getrusage's ru_maxrss, which Linux carries over from the forking parent through
# exec: a child of a parent holding 3 GB would report its first 3 GB as the baseline. That
# made the figures depend on what this script had done before (torch at 3699 MB once,
# 5800 MB another time, for the same step).
STATUS = r"""
def kb(field):
    with open("/proc/self/status") as f:
        return next(int(l.split()[1]) for l in f if l.startswith(field + ":"))
"""

STEP_WEFT = r"""
import sys, numpy as np
sys.path.insert(0, {bench!r})
import weft as mx
from models import resnet50
""" + STATUS + r"""
base = kb("VmRSS")
net = resnet50()
# The images and labels get no gradient, as in the PyTorch step (an input without
# requires_grad) and in MXNet's Module.
req = {{n: "null" if n in ("data", "softmax_label") else "write" for n in net.list_arguments()}}
ex = net.simple_bind(mx.cpu(), grad_req=req, data=({b}, 3, 224, 224), softmax_label=({b},))
ex.arg_dict["data"][:] = np.random.RandomState(0).rand({b}, 3, 224, 224).astype(np.float32)
ex.forward(is_train=True)
ex.backward()
mx.nd.waitall()
print((kb("VmHWM") - base) / 1024.0, mx.cpu().memory_stat("peak_bytes") / 2**20)
"""

STEP_TORCH = r"""
import torch, torchvision
""" + STATUS + r"""
base = kb("VmRSS")
model = torchvision.models.resnet50()
x = torch.rand({b}, 3, 224, 224)
y = torch.zeros({b}, dtype=torch.long)
loss = torch.nn.functional.cross_entropy(model(x), y)
loss.backward()
print((kb("VmHWM") - base) / 1024.0)
"""

# The storage bytes of the distinct tensors autograd saves for the backward, in a process
# of its own so that the step measured above runs without the counting hooks.
SAVED_TORCH = r"""
import torch, torchvision
model = torchvision.models.resnet50()
x = torch.rand({b}, 3, 224, 224)
saved = {{}}
def pack(t):
    s = t.storage()
    saved[s.data_ptr()] = s.nbytes()
    return t
with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
    model(x)
print(sum(saved.values()) / 2**20)
"""

# Fresh processes per configuration: the spread says how far one figure can be trusted.
REPEATS = 3


def internal_mb(text, which):
    return int(re.search(r"Total (\d+) MB " + which, text).group(1))


# Training modes: (name, environment read at bind).
MODES = (("", {"WEFT_BACKWARD_DO_MIRROR": "0"}),
         (" recomputing nothing", {"WEFT_BACKWARD_DO_MIRROR": "0", "WEFT_EXEC_DNNL_TRAIN_RECOMPUTE": "0"}),
         (" mirrored", {"WEFT_BACKWARD_DO_MIRROR": "1", "WEFT_BACKWARD_MIRROR_CONV": "0"}),
         (" mirrored+conv", {"WEFT_BACKWARD_DO_MIRROR": "1", "WEFT_BACKWARD_MIRROR_CONV": "1"}),
         (" segments", {"WEFT_BACKWARD_DO_MIRROR": "1", "WEFT_BACKWARD_MIRROR_SEGMENT": SEGMENT}))


def bind_mb(net, shape, grad_req, env):
    """(planned, unshared) internal MB of `net` bound at batch BATCH under `env`."""
    import weft as mx
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        ex = net.simple_bind(mx.cpu(), grad_req=grad_req, data=(BATCH,) + shape, softmax_label=(BATCH,))
        text = ex.debug_str()
    finally:
        for k, v in saved.items():
            if v is None:
                del os.environ[k]
            else:
                os.environ[k] = v
    return internal_mb(text, "allocated"), internal_mb(text, "without")


def step_mb(src, env=None):
    """(min, max) over REPEATS fresh processes of each figure `src` prints."""
    runs = [[float(v) for v in subprocess.check_output([sys.executable, "-c", src],
                                                        env=dict(os.environ, **(env or {}))).split()]
            for _ in range(REPEATS)]
    return [(min(col), max(col)) for col in zip(*runs)]


def span(r):
    return "%.0f" % r[0] if round(r[0]) == round(r[1]) else "%.0f-%.0f" % r


def planned_table():
    import weft as mx
    from models import NETWORKS
    networks = dict(NETWORKS)
    if os.path.exists(VGG_MXNET):
        networks["vgg_mxnet"] = (lambda: mx.sym.load(VGG_MXNET), (3, 224, 224))
    print("internal memory at batch %d (MB): planned / one buffer per value (ratio); training without the "
          "oneDNN training regions (WEFT_EXEC_DNNL_TRAIN_FUSE=0) in the second column" % BATCH)
    print("%-14s" % "network" + " %22s" * 7 % ("training", "training, no regions", "recomputing nothing",
                                               "training, mirrored", "mirrored+conv", "segments of " + SEGMENT,
                                               "inference"))
    no_regions = dict(MODES[0][1], WEFT_EXEC_DNNL_TRAIN_FUSE="0")
    for name, (build, shape) in networks.items():
        net = build()
        row = []
        envs = [MODES[0][1], no_regions] + [env for _, env in MODES[1:]]
        for grad_req, env in [("write", env) for env in envs] + [("null", {})]:
            planned, naive = bind_mb(net, shape, grad_req, env)
            row.append("%6d / %6d (%4.1fx)" % (planned, naive, naive / max(planned, 1)))
        print("%-14s" % name + " %22s" * 7 % tuple(row), flush=True)



def step_table():
    bench = os.path.dirname(os.path.abspath(__file__))
    weft_src = STEP_WEFT.format(bench=bench, b=BATCH)
    torch_rss, = step_mb(STEP_TORCH.format(b=BATCH))
    torch_saved = float(subprocess.check_output([sys.executable, "-c", SAVED_TORCH.format(b=BATCH)]))
    print("ResNet-50 training step, batch %d, min-max of %d fresh processes: peak resident memory above start "
          "(MB); Weft's storage peak / torch's tensors saved for the backward (MB)" % (BATCH, REPEATS))
    print("%-22s %12s %12s %16s" % ("", "peak RSS", "own account", "RSS / torch RSS"))
    print("%-22s %12s %12.0f" % ("torch", span(torch_rss), torch_saved), flush=True)
    for mode, env in MODES:
        rss, peak = step_mb(weft_src, env)
        print("%-22s %12s %12s %16s" % ("Weft" + mode, span(rss), span(peak),
                                        "%.2f-%.2f" % (rss[0] / torch_rss[1], rss[1] / torch_rss[0])), flush=True)
        peer.record("ResNet-50 training step at batch %d, peak RSS%s" % (BATCH, mode), rss[0], torch_rss[0], "MB", False)


def main():
    import argparse
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--only", choices=("planned", "step"), help="print one of the two tables")
    args = parser.parse_args()
    if args.only != "step":
        planned_table()
    if args.only != "planned":
        step_table()


if __name__ == "__main__":
    main()
