"""BatchNorm (training forward + backward), softmax and relu on ResNet-like shapes:
Weft against torch.nn.functional with autograd, float32, same thread count, in
milliseconds per call and as a Weft/torch ratio (below 1 means Weft is faster).
"""
import peer  # first: it sets the environment the libraries read

import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

import weft  # noqa: E402
from weft import nd  # noqa: E402

BATCH = 32
# (channels, spatial size) of ResNet-50 stages' activations.
BN_SHAPES = [(64, 112), (256, 56), (512, 28), (1024, 14), (2048, 7)]
SOFTMAX_SHAPES = [(BATCH, 1000), (BATCH * 128, 512)]
RELU_SHAPES = [(BATCH, 64, 112, 112), (BATCH, 256, 56, 56)]
MIN_SECONDS = 0.7
MIN_RUNS = 3


def timed(run):
    return peer.seconds_per_call(run, MIN_SECONDS, MIN_RUNS)


def report(name, what, t_weft, t_torch):
    print("%-28s %-8s weft %8.2f ms  torch %8.2f ms  ratio %5.2f"
          % (name, what, t_weft * 1e3, t_torch * 1e3, t_weft / t_torch), flush=True)
    peer.record("%s %s" % (name, what), t_weft * 1e3, t_torch * 1e3, "ms", False)


def bench_batch_norm(c, size):
    rng = np.random.RandomState(0)
    x_np = rng.uniform(-1, 1, (BATCH, c, size, size)).astype(np.float32)
    g_np, b_np = rng.uniform(0.5, 1.5, c).astype(np.float32), rng.uniform(-0.5, 0.5, c).astype(np.float32)
    x, g, b = nd.array(x_np), nd.array(g_np), nd.array(b_np)
    mm, mv = nd.zeros((c,)), nd.ones((c,))
    og_np = rng.uniform(-1, 1, x_np.shape).astype(np.float32)
    og = nd.array(og_np)
    params = dict(fix_gamma=False, eps=1e-5, momentum=0.9)
    with weft.autograd.train_mode():
        y = nd.BatchNorm(x, g, b, mm, mv, **params)
    ref = F.batch_norm(torch.tensor(x_np), None, None, torch.tensor(g_np), torch.tensor(b_np), training=True, eps=1e-5)
    np.testing.assert_allclose(y.asnumpy(), ref.numpy(), rtol=1e-3, atol=1e-3)

    def weft_fwd_bwd():
        with weft.autograd.train_mode():
            out = nd.BatchNorm(x, g, b, mm, mv, output_mean_var=True, **params)
            nd.invoke("_backward_BatchNorm", [og, x, g, out[1], out[2]], params)
        nd.waitall()

    xt = torch.tensor(x_np, requires_grad=True)
    gt = torch.tensor(g_np, requires_grad=True)
    bt = torch.tensor(b_np, requires_grad=True)
    rm, rv = torch.zeros(c), torch.ones(c)
    ogt = torch.tensor(og_np)

    def torch_fwd_bwd():
        xt.grad = gt.grad = bt.grad = None
        F.batch_norm(xt, rm, rv, gt, bt, training=True, momentum=0.1, eps=1e-5).backward(ogt)

    report("BatchNorm %dx%d@%d" % (BATCH, c, size), "fwd+bwd", timed(weft_fwd_bwd), timed(torch_fwd_bwd))


def bench_softmax(shape):
    x_np = np.random.RandomState(1).randn(*shape).astype(np.float32)
    x = nd.array(x_np)
    np.testing.assert_allclose(nd.softmax(x).asnumpy(), F.softmax(torch.tensor(x_np), dim=-1).numpy(), rtol=1e-4,
                               atol=1e-6)
    xt = torch.tensor(x_np)

    def weft_fwd():
        nd.softmax(x)
        nd.waitall()

    def torch_fwd():
        F.softmax(xt, dim=-1)

    report("softmax %s" % (shape,), "fwd", timed(weft_fwd), timed(torch_fwd))


def bench_relu(shape):
    x_np = np.random.RandomState(2).randn(*shape).astype(np.float32)
    og_np = np.random.RandomState(3).randn(*shape).astype(np.float32)
    x, og = nd.array(x_np), nd.array(og_np)

    def weft_fwd_bwd():
        nd.Activation(x, act_type="relu")
        nd.invoke("_backward_Activation", [og, x], {"act_type": "relu"})
        nd.waitall()

    xt = torch.tensor(x_np, requires_grad=True)
    ogt = torch.tensor(og_np)

    def torch_fwd_bwd():
        xt.grad = None
        F.relu(xt).backward(ogt)

    report("relu %s" % (shape,), "fwd+bwd", timed(weft_fwd_bwd), timed(torch_fwd_bwd))


def main():
    print("float32, torch %s with %d threads" % (torch.__version__, torch.get_num_threads()))
    for c, size in BN_SHAPES:
        bench_batch_norm(c, size)
    for shape in SOFTMAX_SHAPES:
        bench_softmax(shape)
    for shape in RELU_SHAPES:
        bench_relu(shape)


if __name__ == "__main__":
    main()
