"""Convolution and pooling on ResNet-like layers at batch 32: Weft's Convolution /
_backward_Convolution and Pooling / _backward_Pooling against torch.nn.functional with
autograd, float32, same thread count, in milliseconds per call and as a Weft/torch ratio
(below 1 means Weft is faster). Forward and forward+backward are timed separately.
"""
import peer  # first: it sets the environment the libraries read

import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

import weft  # noqa: E402
from weft import nd  # noqa: E402

BATCH = 32
# (name, in channels, out channels, kernel, stride, pad, spatial size)
CONV_LAYERS = [
    ("3x3 64->64 @56", 64, 64, 3, 1, 1, 56),
    ("3x3 128->128 @28", 128, 128, 3, 1, 1, 28),
    ("3x3 256->256 @14", 256, 256, 3, 1, 1, 14),
    ("3x3 512->512 @7", 512, 512, 3, 1, 1, 7),
    ("1x1 256->64 @56", 256, 64, 1, 1, 0, 56),
    ("1x1 64->256 @56", 64, 256, 1, 1, 0, 56),
    ("1x1 512->128 @28", 512, 128, 1, 1, 0, 28),
    ("3x3/2 128->128 @56", 128, 128, 3, 2, 1, 56),
]
MIN_SECONDS = 1.0
MIN_RUNS = 3


def timed(run):
    return peer.seconds_per_call(run, MIN_SECONDS, MIN_RUNS)


def report(name, what, t_weft, t_torch, flops=None):
    rate = ""
    if flops:
        rate = "  %6.1f GFLOP/s" % (flops / t_weft / 1e9)
    print("%-22s %-8s weft %8.2f ms  torch %8.2f ms  ratio %5.2f%s"
          % (name, what, t_weft * 1e3, t_torch * 1e3, t_weft / t_torch, rate), flush=True)
    peer.record("%s %s" % (name, what), t_weft * 1e3, t_torch * 1e3, "ms", False)


def bench_conv(name, cin, cout, k, stride, pad, size):
    rng = np.random.RandomState(0)
    x_np = rng.uniform(-1, 1, (BATCH, cin, size, size)).astype(np.float32)
    w_np = rng.uniform(-0.1, 0.1, (cout, cin, k, k)).astype(np.float32)
    b_np = rng.uniform(-0.1, 0.1, (cout,)).astype(np.float32)
    params = dict(kernel=(k, k), stride=(stride, stride), pad=(pad, pad), num_filter=cout)
    x, w, b = nd.array(x_np), nd.array(w_np), nd.array(b_np)
    y = nd.Convolution(x, w, b, **params)
    og = nd.array(rng.uniform(-1, 1, y.shape).astype(np.float32))
    check = F.conv2d(torch.tensor(x_np), torch.tensor(w_np), torch.tensor(b_np), stride=stride, padding=pad)
    np.testing.assert_allclose(y.asnumpy(), check.numpy(), rtol=1e-3, atol=1e-3)

    def weft_fwd():
        nd.Convolution(x, w, b, **params)
        nd.waitall()

    def weft_fwd_bwd():
        nd.Convolution(x, w, b, **params)
        nd.invoke("_backward_Convolution", [og, x, w], params)
        nd.waitall()

    xt = torch.tensor(x_np, requires_grad=True)
    wt = torch.tensor(w_np, requires_grad=True)
    bt = torch.tensor(b_np, requires_grad=True)
    ogt = torch.tensor(og.asnumpy())

    def torch_fwd():
        with torch.no_grad():
            F.conv2d(xt, wt, bt, stride=stride, padding=pad)

    def torch_fwd_bwd():
        xt.grad = wt.grad = bt.grad = None
        F.conv2d(xt, wt, bt, stride=stride, padding=pad).backward(ogt)

    out = (size + 2 * pad - k) // stride + 1
    flops = 2.0 * BATCH * cout * cin * k * k * out * out
    report(name, "fwd", timed(weft_fwd), timed(torch_fwd), flops)
    report(name, "fwd+bwd", timed(weft_fwd_bwd), timed(torch_fwd_bwd), 3 * flops)


def bench_pool():
    name = "maxpool 3x3/2 64@112"
    rng = np.random.RandomState(0)
    x_np = rng.uniform(-1, 1, (BATCH, 64, 112, 112)).astype(np.float32)
    params = dict(kernel=(3, 3), stride=(2, 2), pad=(1, 1), pool_type="max")
    x = nd.array(x_np)
    y = nd.Pooling(x, **params)
    np.testing.assert_array_equal(y.asnumpy(), F.max_pool2d(torch.tensor(x_np), 3, 2, 1).numpy())
    og = nd.array(rng.uniform(-1, 1, y.shape).astype(np.float32))

    def weft_fwd():
        nd.Pooling(x, **params)
        nd.waitall()

    def weft_fwd_bwd():
        out = nd.Pooling(x, **params)
        nd.invoke("_backward_Pooling", [og, x, out], params)
        nd.waitall()

    xt = torch.tensor(x_np, requires_grad=True)
    ogt = torch.tensor(og.asnumpy())

    def torch_fwd():
        with torch.no_grad():
            F.max_pool2d(xt, 3, 2, 1)

    def torch_fwd_bwd():
        xt.grad = None
        F.max_pool2d(xt, 3, 2, 1).backward(ogt)

    report(name, "fwd", timed(weft_fwd), timed(torch_fwd))
    report(name, "fwd+bwd", timed(weft_fwd_bwd), timed(torch_fwd_bwd))


def main():
    print("batch %d, float32, torch %s with %d threads" % (BATCH, torch.__version__, torch.get_num_threads()))
    for layer in CONV_LAYERS:
        bench_conv(*layer)
    bench_pool()


if __name__ == "__main__":
    main()
