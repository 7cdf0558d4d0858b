"""The engine's bound on what pending operations write (WEFT_ENGINE_MAX_PENDING_BYTES): an
imperative loop that never reads a result keeps a fixed footprint, however large each
operation's output. Each case runs in its own process, since the engine reads the knob once."""
import json
import os
import subprocess
import sys
import textwrap

# Each step writes a new 8 MB array and drops the previous one; the operation takes about a
# millisecond and its push microseconds, so an unbounded loop runs far ahead of the engine and
# holds every output it queued.
_LOOP = textwrap.dedent("""
    import json, sys
    import numpy as np
    import weft as mx

    def kib(field):
        with open("/proc/self/status") as f:
            return next(int(l.split()[1]) for l in f if l.startswith(field + ":"))

    steps = int(sys.argv[1])
    a = mx.nd.ones((2048, 1024))
    c = a + 1
    c.wait_to_read()
    base = kib("VmRSS")
    for i in range(steps):
        c = a + i
    mx.nd.waitall()
    last = c.asnumpy()
    assert last.shape == (2048, 1024) and (last == steps).all(), last[0, :4]
    print(json.dumps({"grown_mb": (kib("VmHWM") - base) / 1024.0}))
""")


def run_loop(steps, max_bytes):
    env = dict(os.environ, WEFT_ENGINE_MAX_PENDING_BYTES=str(max_bytes), OMP_NUM_THREADS="1")
    proc = subprocess.run([sys.executable, "-c", _LOOP, str(steps)], env=env, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])["grown_mb"]


def test_a_loop_that_never_reads_keeps_its_footprint_under_the_byte_bound():
    # 300 steps of 8 MB outputs are 2.4 GB if every output is held; a 16 MB bound keeps two
    # pending (and a few finished ones wait for their deletion behind them in the queue), so
    # the peak grows by a few outputs, not hundreds.
    grown = run_loop(300, 16 << 20)
    assert grown < 96, grown


def test_without_the_byte_bound_the_same_loop_holds_what_it_queued():
    # The check above can fail: with the byte bound off (only the count bound of 4096
    # operations), 40 steps queue all their outputs, about 320 MB.
    grown = run_loop(40, 0)
    assert grown > 160, grown


# A Gluon training loop that never reads a value: the Trainer has no throttle of its own,
# the engine's byte bound holds it back. Two dense layers of 1024 on a batch of 128: each
# step writes about 20 MB (activations, gradients, updated weights) and computes for tens of
# milliseconds, while its Python takes about one.
_TRAIN = textwrap.dedent("""
    import json, sys
    import numpy as np
    import weft as mx
    from weft import autograd, gluon

    def kib(field):
        with open("/proc/self/status") as f:
            return next(int(l.split()[1]) for l in f if l.startswith(field + ":"))

    steps, read_each_step = int(sys.argv[1]), sys.argv[2] == "1"
    mx.random.seed(0)
    net = gluon.nn.Sequential()
    net.add(gluon.nn.Dense(1024, activation="relu"), gluon.nn.Dense(1024))
    net.initialize(mx.init.Xavier())
    trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.01})
    rng = np.random.RandomState(0)
    x = mx.nd.array(rng.normal(size=(128, 1024)))
    y = mx.nd.array(rng.normal(size=(128, 1024)))
    loss_fn = gluon.loss.L2Loss()

    def step():
        with autograd.record():
            loss = loss_fn(net(x), y)
        loss.backward()
        trainer.step(128)
        return loss

    step().wait_to_read()
    base = kib("VmRSS")
    for _ in range(steps):
        loss = step()
        if read_each_step:
            loss.wait_to_read()
    mx.nd.waitall()
    w = net[1].weight.data().asnumpy()
    print(json.dumps({"grown_mb": (kib("VmHWM") - base) / 1024.0, "w": float(np.abs(w).sum()),
                      "w0": [float(v) for v in w[0, :4]]}))
""")


def run_training(steps, read_each_step, max_bytes):
    env = dict(os.environ, WEFT_ENGINE_MAX_PENDING_BYTES=str(max_bytes), OMP_NUM_THREADS="1")
    proc = subprocess.run([sys.executable, "-c", _TRAIN, str(steps), "1" if read_each_step else "0"], env=env,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_a_training_loop_that_never_reads_is_held_back_by_the_engine():
    free = run_training(30, False, 16 << 20)
    waited = run_training(30, True, 16 << 20)
    # The same steps ran in the same order: the weights agree with a loop that waits.
    assert free["w0"] == waited["w0"] and free["w"] == waited["w"], (free, waited)
    # 30 steps of about 20 MB are 600 MB if all are held; under a 16 MB bound the peak stays
    # within a few steps of the loop that waits at every step.
    assert free["grown_mb"] < waited["grown_mb"] + 64, (free, waited)


# A custom operator whose forward pushes work of its own, in a loop that never reads: with a
# bound of 8 operations the queue is full of work waiting for the custom operator, whose
# callback needs the GIL. A push that waited for room holding the GIL, or a push from the
# callback that waited for room behind the operation it serves, could only go on after the
# engine's stall timeout (half a second) each time: 40 steps took over 20 seconds.
_CUSTOM = textwrap.dedent("""
    import json, sys, time
    import numpy as np
    import weft as mx

    class Chain(mx.operator.CustomOp):
        def forward(self, is_train, req, in_data, out_data, aux):
            y = in_data[0]
            for _ in range(6):
                y = mx.nd.sigmoid(y) * 2 - 0.5
            self.assign(out_data[0], req[0], y)

        def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
            self.assign(in_grad[0], req[0], out_grad[0])

    @mx.operator.register("bp_chain")
    class ChainProp(mx.operator.CustomOpProp):
        def list_arguments(self):
            return ["data"]

        def infer_shape(self, in_shape):
            return in_shape, [in_shape[0]], []

        def create_operator(self, ctx, shapes, dtypes):
            return Chain()

    steps = int(sys.argv[1])
    x = mx.nd.ones((4, 4))
    start = time.time()
    for i in range(steps):
        y = mx.nd.Custom(x, op_type="bp_chain")
        for _ in range(12):
            y = y + 1
    mx.nd.waitall()
    took = time.time() - start
    expected = np.ones((4, 4))
    for _ in range(6):
        expected = 2 / (1 + np.exp(-expected)) - 0.5
    np.testing.assert_allclose(y.asnumpy(), expected + 12, rtol=1e-5)
    print(json.dumps({"seconds": took}))
""")


def test_custom_operators_that_push_work_do_not_stall_under_the_bound():
    env = dict(os.environ, WEFT_ENGINE_MAX_PENDING="8", OMP_NUM_THREADS="1")
    proc = subprocess.run([sys.executable, "-c", _CUSTOM, "40"], env=env, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr
    took = json.loads(proc.stdout.strip().splitlines()[-1])["seconds"]
    # The work is a few milliseconds; a single stall is 0.5 s and the old behaviour stalled
    # at every step.
    assert took < 6, took
