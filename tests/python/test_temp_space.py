"""The shared workspace: one grow-only temporary buffer per context, which operators such
as the oneDNN convolutions borrow for their blocked-layout copies and scratchpads, and
which the engine hands to one operator at a time (they all write its variable).
Convolutions of shapes needing very different sizes of it give the same bits in whatever
order they run, however the buffer grew in between, and when several executors run at
once. (That the buffers it grows out of go back to the system, not into the pool, is
tests/cpp/resource_test.cc's TempSpace.GrowingLeavesNothingPooled.)"""
import numpy as np

import weft as mx

sym = mx.sym

# (data shape, filters, kernel, stride, pad); oneDNN runs each on its own layouts and
# algorithm (direct, Winograd, pointwise), so each needs its own amount of workspace.
SHAPES = [
    ((2, 3, 9, 9), 4, 3, 1, 1),
    ((8, 16, 28, 28), 32, 3, 1, 1),
    ((4, 8, 15, 15), 16, 3, 2, 0),
    ((3, 32, 7, 7), 64, 1, 1, 0),
]


def windows(x, k, s, p):
    """x (N, C, H, W) -> (N, C, k, k, OH, OW): the input under each kernel tap."""
    xp = np.pad(x, ((0, 0), (0, 0), (p, p), (p, p)))
    oh = (x.shape[2] + 2 * p - k) // s + 1
    ow = (x.shape[3] + 2 * p - k) // s + 1
    return np.stack([np.stack([xp[:, :, i:i + s * oh:s, j:j + s * ow:s] for j in range(k)], 2) for i in range(k)], 2)


def bind(i):
    shape, f, k, s, p = SHAPES[i]
    net = sym.Convolution(sym.Variable("data"), num_filter=f, kernel=(k, k), stride=(s, s), pad=(p, p),
                          no_bias=True, name="conv")
    ex = net.simple_bind(mx.cpu(), data=shape)
    rng = np.random.RandomState(i)
    for arr in ex.arg_dict.values():
        arr[:] = rng.randn(*arr.shape).astype(np.float32)
    head = mx.nd.array(rng.randn(*ex.outputs[0].shape).astype(np.float32))
    return ex, head


def push(ex, head):
    ex.forward(is_train=True)
    ex.backward([head])


def read(ex):
    return [ex.outputs[0].asnumpy(), ex.grad_dict["data"].asnumpy(), ex.grad_dict["conv_weight"].asnumpy()]


def test_convolutions_sharing_the_workspace_agree_in_any_order_and_concurrently():
    bound = [bind(i) for i in range(len(SHAPES))]
    first = []
    for ex, head in bound:
        push(ex, head)
        first.append(read(ex))
    # Against numpy: the output and the weight gradient (the data gradient is checked by
    # the identities below and by the convolution tests).
    for (shape, f, k, s, p), (ex, head), (y, _, dw) in zip(SHAPES, bound, first):
        x = ex.arg_dict["data"].asnumpy().astype(np.float64)
        w = ex.arg_dict["conv_weight"].asnumpy().astype(np.float64)
        win = windows(x, k, s, p)
        np.testing.assert_allclose(y, np.einsum("ncijhw,fcij->nfhw", win, w), rtol=1e-4, atol=1e-4)
        np.testing.assert_allclose(dw, np.einsum("ncijhw,nfhw->fcij", win, head.asnumpy().astype(np.float64)),
                                   rtol=1e-4, atol=1e-3)
    # In reverse order, each waited for, then all of them pushed at once, twice over:
    # the same bits each time.
    for i in reversed(range(len(SHAPES))):
        push(*bound[i])
        for a, b in zip(first[i], read(bound[i][0])):
            assert np.array_equal(a, b), SHAPES[i]
    for _ in range(2):
        for ex, head in bound:
            push(ex, head)
        mx.nd.waitall()
        for i, (ex, _) in enumerate(bound):
            for a, b in zip(first[i], read(ex)):
                assert np.array_equal(a, b), SHAPES[i]

