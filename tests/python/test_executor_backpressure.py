"""An executor loop that never reads a result stays about one step ahead of the engine:
its memory stays put and a final wait takes about one step, not everything it pushed."""
import time

import numpy as np

import weft as mx


def rss_mb():
    with open("/proc/self/status") as f:
        return next(int(l.split()[1]) for l in f if l.startswith("VmRSS:")) / 1024.0


def lenet_executor():
    x = mx.sym.Variable("data")
    for i in range(2):
        x = mx.sym.Convolution(x, num_filter=16, kernel=(5, 5), name="c%d" % i)
        x = mx.sym.Pooling(mx.sym.Activation(x, act_type="tanh"), kernel=(2, 2), stride=(2, 2), pool_type="max")
    net = mx.sym.SoftmaxOutput(mx.sym.FullyConnected(mx.sym.Flatten(x), num_hidden=10, name="fc"), name="softmax")
    ex = net.simple_bind(mx.cpu(), data=(64, 1, 28, 28), softmax_label=(64,))
    rng = np.random.RandomState(0)
    for name, a in ex.arg_dict.items():
        a[:] = rng.randint(0, 10, a.shape) if name == "softmax_label" else rng.normal(0, 0.1, a.shape)
    return ex


def test_a_loop_that_never_reads_stays_one_step_ahead():
    ex = lenet_executor()
    ex.forward(is_train=True)
    ex.backward()
    mx.nd.waitall()
    start = time.perf_counter()
    ex.forward(is_train=True)
    ex.backward()
    mx.nd.waitall()
    step = time.perf_counter() - start
    steps = 60
    rss = []
    for i in range(steps):
        ex.forward(is_train=True)
        ex.backward()
        if i in (steps // 4, steps - 1):
            rss.append(rss_mb())
    start = time.perf_counter()
    mx.nd.waitall()
    drain = time.perf_counter() - start
    # Unbounded, the wait ran all 60 steps (the pushes take microseconds); bounded, it runs
    # the one or two left. Ten steps' time leaves room for a loaded machine.
    assert drain < 10 * step + 0.5, (drain, step)
    assert rss[1] - rss[0] < 16, rss
    # The results are those of the last step, as if every step had been waited for.
    out = ex.outputs[0].asnumpy()
    grad = ex.grad_dict["fc_weight"].asnumpy()
    ex.forward(is_train=True)
    ex.backward()
    np.testing.assert_array_equal(ex.outputs[0].asnumpy(), out)
    np.testing.assert_array_equal(ex.grad_dict["fc_weight"].asnumpy(), grad)
