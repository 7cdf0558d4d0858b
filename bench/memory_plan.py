"""Memory planning: the executor's internal memory (the values between operators, not the
parameters, inputs or gradients) with planning against one buffer per value, for training
(forward + backward; without and with backward mirroring, WEFT_BACKWARD_DO_MIRROR=1, and
with the links of convolution chains recomputed too, WEFT_BACKWARD_MIRROR_CONV=1) and
inference at batch 64; then the peak resident memory of one ResNet-50 training step
(batch 64) in Weft (in those three modes) and in PyTorch, each in a fresh process.
The MXNet paper reports about 2x savings in training and 4x in inference."""
import os
import re
import subprocess
import sys

import peer  # noqa: F401  (first: it sets the environment the libraries read)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

BATCH = 64

STEP_WEFT = r"""
import resource, sys, numpy as np
sys.path.insert(0, {bench!r})
import weft as mx
from models import resnet50
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
ex = resnet50().simple_bind(mx.cpu(), data=({b}, 3, 224, 224), softmax_label=({b},))
ex.arg_dict["data"][:] = np.random.RandomState(0).rand({b}, 3, 224, 224).astype(np.float32)
ex.forward(is_train=True)
ex.backward()
mx.nd.waitall()
print((resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - base) / 1024.0)
"""

STEP_TORCH = r"""
import resource, torch, torchvision
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
model = torchvision.models.resnet50()
x = torch.rand({b}, 3, 224, 224)
y = torch.zeros({b}, dtype=torch.long)
loss = torch.nn.functional.cross_entropy(model(x), y)
loss.backward()
print((resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - base) / 1024.0)
"""


def internal_mb(text, which):
    return int(re.search(r"Total (\d+) MB " + which, text).group(1))


# Training modes: (name, environment read at bind).
MODES = (("", {"WEFT_BACKWARD_DO_MIRROR": "0"}),
         (" mirrored", {"WEFT_BACKWARD_DO_MIRROR": "1", "WEFT_BACKWARD_MIRROR_CONV": "0"}),
         (" mirrored+conv", {"WEFT_BACKWARD_DO_MIRROR": "1", "WEFT_BACKWARD_MIRROR_CONV": "1"}))


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
    return float(subprocess.check_output([sys.executable, "-c", src], env=dict(os.environ, **(env or {}))))


def main():
    from models import NETWORKS
    print("internal memory at batch %d (MB): planned / one buffer per value (ratio)" % BATCH)
    print("%-14s %22s %22s %22s %22s" % ("network", "training", "training, mirrored", "mirrored+conv", "inference"))
    for name, (build, shape) in NETWORKS.items():
        net = build()
        row = []
        for grad_req, env in [("write", env) for _, env in MODES] + [("null", {})]:
            planned, naive = bind_mb(net, shape, grad_req, env)
            row.append("%6d / %6d (%4.1fx)" % (planned, naive, naive / max(planned, 1)))
        print("%-14s %22s %22s %22s %22s" % ((name,) + tuple(row)), flush=True)

    bench = os.path.dirname(os.path.abspath(__file__))
    weft_src = STEP_WEFT.format(bench=bench, b=BATCH)
    weft_mb = [step_mb(weft_src, env) for _, env in MODES]
    torch_mb = step_mb(STEP_TORCH.format(b=BATCH))
    for (mode, _), mb in zip(MODES, weft_mb):
        print("ResNet-50 training step, batch %d, peak resident memory above start: Weft%s %.0f MB, torch %.0f MB "
              "(Weft/torch %.2f)" % (BATCH, mode, mb, torch_mb, mb / torch_mb))


if __name__ == "__main__":
    main()
