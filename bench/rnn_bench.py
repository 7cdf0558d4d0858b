"""LSTM language-model layer: Weft's fused RNN operator against torch.nn.LSTM, float32,
same thread count, in milliseconds per call and as a Weft/torch ratio (below 1 means Weft
is faster). Forward alone and forward + backward are timed; Weft's backward is the
operator's gradient `_backward_RNN` (what autograd runs), which recomputes the forward.
"""
import os

import peer  # noqa: F401  (first: it sets the environment the libraries read)

import numpy as np  # noqa: E402
import torch  # noqa: E402

import weft  # noqa: E402
from weft import nd  # noqa: E402

MIN_SECONDS = 1.0
MIN_RUNS = 3
# (name, mode, T, N, I, H, layers, bidirectional)
CONFIGS = [
    ("lstm T35 N32 256->256 x2", "lstm", 35, 32, 256, 256, 2, False),
    ("lstm T35 N32 256->256 x2 bidir", "lstm", 35, 32, 256, 256, 2, True),
    ("gru  T35 N32 256->256 x2", "gru", 35, 32, 256, 256, 2, False),
]


def timed(run):
    return peer.seconds_per_call(run, MIN_SECONDS, MIN_RUNS)


def torch_module(mode, I, H, L, bidir):
    cls = torch.nn.LSTM if mode == "lstm" else torch.nn.GRU
    return cls(I, H, num_layers=L, bidirectional=bidir)


def packed_params(m, L, bidir):
    """MXNet's packing: all weights (i2h, h2h per layer and direction), then all biases."""
    weights, biases = [], []
    for l in range(L):
        for sfx in ["", "_reverse"][: 2 if bidir else 1]:
            weights += [getattr(m, "weight_ih_l%d%s" % (l, sfx)), getattr(m, "weight_hh_l%d%s" % (l, sfx))]
            biases += [getattr(m, "bias_ih_l%d%s" % (l, sfx)), getattr(m, "bias_hh_l%d%s" % (l, sfx))]
    return torch.cat([t.detach().reshape(-1) for t in weights + biases]).numpy()


def bench(name, mode, T, N, I, H, L, bidir):
    D = 2 if bidir else 1
    m = torch_module(mode, I, H, L, bidir)
    x = torch.randn(T, N, I, requires_grad=True)
    h0 = torch.zeros(L * D, N, H, requires_grad=True)
    c0 = torch.zeros(L * D, N, H, requires_grad=True)
    dy = torch.randn(T, N, D * H)

    def torch_fwd():
        with torch.no_grad():
            m(x, (h0, c0)) if mode == "lstm" else m(x, h0)

    def torch_fwd_bwd():
        y = m(x, (h0, c0))[0] if mode == "lstm" else m(x, h0)[0]
        y.backward(dy)

    kw = dict(state_size=H, num_layers=L, bidirectional=bidir, mode=mode)
    ins = [nd.array(x.detach().numpy()), nd.array(packed_params(m, L, bidir)), nd.array(h0.detach().numpy())]
    if mode == "lstm":
        ins.append(nd.array(c0.detach().numpy()))
    wdy = nd.array(dy.numpy())
    # Outputs written in place each call, so allocation is not what is timed.
    out = nd.RNN(*ins, **kw)
    grads = nd.invoke("_backward_RNN", ins + [wdy], kw)

    def weft_fwd():
        nd.invoke("RNN", ins, kw, out=[out])
        weft.nd.waitall()

    def weft_fwd_bwd():
        nd.invoke("RNN", ins, kw, out=[out])
        nd.invoke("_backward_RNN", ins + [wdy], kw, out=grads)
        weft.nd.waitall()

    ref = m(x, (h0, c0))[0] if mode == "lstm" else m(x, h0)[0]
    err = float(np.abs(out.asnumpy() - ref.detach().numpy()).max())
    rows = []
    for what, w, t in (("forward", weft_fwd, torch_fwd), ("forward+backward", weft_fwd_bwd, torch_fwd_bwd)):
        tw, tt = timed(w), timed(t)
        rows.append((what, tw * 1e3, tt * 1e3, tw / tt))
    print("%s (max |weft - torch| = %.1e)" % (name, err))
    for what, tw, tt, ratio in rows:
        print("  %-17s weft %8.2f ms   torch %8.2f ms   weft/torch %5.2f" % (what, tw, tt, ratio))


def main():
    print("threads: torch %d; weft uses OMP_NUM_THREADS=%s" % (torch.get_num_threads(),
                                                                os.environ.get("OMP_NUM_THREADS", "(all cores)")))
    for cfg in CONFIGS:
        bench(*cfg)


if __name__ == "__main__":
    main()
