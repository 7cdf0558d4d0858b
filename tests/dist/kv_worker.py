"""The worker program of the distributed key-value store tests (tests/python/
test_kvstore_dist.py starts it through tools/launch.py; servers and the scheduler run the
same command and never get past `import weft`).

    kv_worker.py sync OUTDIR    exact sums: small, big (split over servers), string keys;
                                SGD on the servers; 2-bit compression
    kv_worker.py async OUTDIR   dist_async: SGD on a quadratic converges
    kv_worker.py device OUTDIR  dist_device_sync: per-device values summed, then over workers
    kv_worker.py mlp OUTDIR BATCH STEPS   MLP training; parameters saved after every step
    kv_worker.py kill OUTDIR    pushes and pulls until the job breaks
    kv_worker.py late_barrier OUTDIR   worker 1 reaches the barrier long after worker 0
    kv_worker.py late_push OUTDIR      worker 1 pushes long after worker 0
    kv_worker.py rowsparse OUTDIR      row_sparse_pull after pushes, from a key split over the
                                       servers with a row across the split
    kv_worker.py sparse_gluon OUTDIR   gluon SparseEmbedding (row_sparse weight) + Dense trained
                                       with a dist_sync Trainer; final weights saved
    kv_worker.py rowpush OUTDIR        row_sparse pushes (rows only on the wire) to a key split
                                       over the servers, mixed with dense pushes; SGD on the servers
    kv_worker.py blocked OUTDIR OP     worker 0 blocks in OP (barrier, push or pull) for good:
                                       worker 1 never joins it

With WEFT_TEST_LOG_DIR set, every process (of any role) writes its output to its own file
there, ROLE-PID.log, instead of to the launcher: a cluster's nodes log where they run, and
what a node says on its way out stays readable when the launcher is gone.

Each worker writes what it saw under OUTDIR (rank-named files) for the test to compare.
"""
import gzip
import os
import sys
import time

import numpy as np

if os.environ.get("WEFT_TEST_LOG_DIR"):
    # Before weft is imported: a server or scheduler runs its role during the import.
    _log = os.open(os.path.join(os.environ["WEFT_TEST_LOG_DIR"], "%s-%d.log" % (
        os.environ.get("DMLC_ROLE", "worker"), os.getpid())), os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    os.dup2(_log, 1)
    os.dup2(_log, 2)
    os.close(_log)

import weft as mx  # noqa: E402

MODE, OUT = sys.argv[1], sys.argv[2]


def arr(x):
    return mx.nd.array(np.asarray(x, dtype=np.float32))


def pulled(kv, key, shape):
    out = mx.nd.zeros(shape)
    kv.pull(key, out=out)
    return out.asnumpy()


def run_sync():
    kv = mx.kv.create("dist_sync")
    rank, n = kv.rank, kv.num_workers
    small, big = (3, 4), (1200, 1000)  # big: 1.2M elements, over the split bound
    kv.init(5, arr(np.zeros(small)))
    kv.init(6, arr(np.zeros(big)))
    kv.init(8, arr(np.arange(6)))
    results = {}
    for step in range(3):
        # Every worker pushes values that depend on its rank and the step: the servers'
        # answer must be their exact sum.
        kv.push(5, arr(np.full(small, (rank + 1) * (step + 1))))
        kv.push(6, arr(np.arange(np.prod(big)).reshape(big) % 7 + rank))
        kv.push(8, [arr(np.ones(6)), arr(np.full(6, rank))])  # two "devices"
        results["small%d" % step] = pulled(kv, 5, small)
        results["big%d" % step] = pulled(kv, 6, big)
        results["name%d" % step] = pulled(kv, 8, (6,))
    # A pull goes out right behind its push and the servers hold it until the round is
    # summed: with one worker pushing late, the other's pull, already waiting on the
    # servers, must still read the sum of both pushes (and not the previous round's).
    for step in range(2):
        if rank == step % 2:
            time.sleep(0.3)
        kv.push(6, arr(np.full(big, step + rank + 1.0)))
        kv.push(5, arr(np.full(small, step + rank + 1.0)))
        results["late_big%d" % step] = pulled(kv, 6, big)
        results["late_small%d" % step] = pulled(kv, 5, small)
    # pushpull: the servers answer the push with the new value (into another array, and
    # into the pushed array itself).
    pp = mx.nd.zeros(big)
    kv.pushpull(6, arr(np.full(big, rank + 1.0)), out=pp)
    results["pushpull_big"] = pp.asnumpy()
    mine = arr(np.full(small, rank + 10.0))
    kv.pushpull(5, mine)
    results["pushpull_self"] = mine.asnumpy()
    # The optimizer runs on the servers from here on: weight -= lr * sum of gradients.
    kv.init(9, arr(np.ones(4)))
    kv.set_optimizer(mx.optimizer.create("sgd", learning_rate=0.1))
    kv.push(9, arr(np.full(4, rank + 1.0)))
    results["w"] = pulled(kv, 9, (4,))
    kv.init(77, arr(np.zeros(1000)))
    kv.set_gradient_compression({"type": "2bit", "threshold": 0.25})
    kv.push(77, arr(np.full(1000, 0.3)))
    results["compressed"] = pulled(kv, 77, (1000,))
    out = mx.nd.zeros((1000,))
    kv.pushpull(77, arr(np.full(1000, 0.3)), out=out)
    results["compressed_pushpull"] = out.asnumpy()
    results["rank"] = np.array([rank, n])
    np.savez(os.path.join(OUT, "sync-%d.npz" % rank), **results)


def run_async():
    kv = mx.kv.create("dist_async")
    target = np.linspace(-1, 1, 10).astype(np.float32)
    kv.init(0, arr(np.zeros(10)))
    kv.set_optimizer(mx.optimizer.create("sgd", learning_rate=0.05))
    w = np.zeros(10, np.float32)
    for _ in range(150):
        kv.push(0, arr(w - target))  # the gradient of |w - target|^2 / 2
        w = pulled(kv, 0, (10,))
    kv._barrier()
    np.save(os.path.join(OUT, "async-%d.npy" % kv.rank), pulled(kv, 0, (10,)))


def run_device():
    """dist_device_sync: each worker pushes one value per device (GPUs where there are any,
    else the host), summed on the worker (on a GPU when the values are there) and then
    over the workers on the servers."""
    kv = mx.kv.create("dist_device_sync")
    rank = kv.rank
    ctxs = [mx.gpu(i) for i in range(mx.num_gpus())] or [mx.cpu(), mx.cpu()]
    shape = (1100, 1000)  # split over the servers
    kv.init("d", arr(np.zeros(shape)))
    results = {}
    for step in range(2):
        vals = [mx.nd.array(np.full(shape, (rank + 1) * (i + 1) + step, np.float32), ctx=c)
                for i, c in enumerate(ctxs)]
        kv.push("d", vals)
        outs = [mx.nd.zeros(shape, ctx=c) for c in ctxs]
        kv.pull("d", out=outs)
        results["step%d" % step] = np.stack([o.asnumpy() for o in outs])
    results["devices"] = np.array([len(ctxs)])
    np.savez(os.path.join(OUT, "device-%d.npz" % rank), **results)


def load_fashion(n):
    root = "/usr/share/datasets/fashion-mnist"
    with gzip.open(os.path.join(root, "train-images-idx3-ubyte.gz")) as f:
        images = np.frombuffer(f.read(), np.uint8, offset=16)[: n * 784].reshape(n, 784)
    with gzip.open(os.path.join(root, "train-labels-idx1-ubyte.gz")) as f:
        labels = np.frombuffer(f.read(), np.uint8, offset=8)[:n]
    return images.astype(np.float32) / 255.0, labels.astype(np.float32)


def run_mlp():
    batch, steps = int(sys.argv[3]), int(sys.argv[4])
    kv = mx.kv.create("dist_sync")
    rank, n = kv.rank, kv.num_workers
    total = batch * n
    data = mx.sym.var("data")
    net = mx.sym.FullyConnected(data, num_hidden=32, name="fc1")
    net = mx.sym.Activation(net, act_type="relu")
    net = mx.sym.FullyConnected(net, num_hidden=10, name="fc2")
    net = mx.sym.SoftmaxOutput(net, mx.sym.var("softmax_label"), normalization="null", name="softmax")
    ex = net.simple_bind(mx.cpu(), data=(batch, 784), softmax_label=(batch,))
    names = ["fc1_weight", "fc1_bias", "fc2_weight", "fc2_bias"]
    rng = np.random.default_rng(42)  # the same start on every worker; rank 0's reaches the servers
    for i, name in enumerate(names):
        shape = ex.arg_dict[name].shape
        ex.arg_dict[name][:] = arr(rng.normal(0, 0.05, shape))
        kv.init(i, ex.arg_dict[name])
    # The summed gradient of the whole (doubled) batch, averaged: as 1 worker with it.
    kv.set_optimizer(mx.optimizer.create("sgd", learning_rate=0.5, momentum=0.9, rescale_grad=1.0 / total))
    x, y = load_fashion(total * steps)
    history = []
    for step in range(steps):
        lo = step * total + rank * batch
        ex.arg_dict["data"][:] = arr(x[lo:lo + batch])
        ex.arg_dict["softmax_label"][:] = arr(y[lo:lo + batch])
        ex.forward(is_train=True)
        ex.backward()
        for i, name in enumerate(names):
            kv.push(i, ex.grad_dict[name], priority=-i)
            kv.pull(i, out=ex.arg_dict[name], priority=-i)
        history.append(np.concatenate([ex.arg_dict[k].asnumpy().ravel() for k in names]))
    np.save(os.path.join(OUT, "mlp-%d-of-%d.npy" % (rank, n)), np.stack(history))


def run_kill():
    kv = mx.kv.create("dist_sync")
    with open(os.path.join(OUT, "pid-%d" % kv.rank), "w") as f:
        f.write(str(os.getpid()))
    kv.init(0, arr(np.zeros(100)))
    while True:
        kv.push(0, arr(np.ones(100)))
        pulled(kv, 0, (100,))
        time.sleep(0.01)


def run_late_barrier():
    kv = mx.kv.create("dist_sync")
    if kv.rank == 1:
        time.sleep(8)  # longer than the test's WEFT_KVSTORE_REQUEST_TIMEOUT
    kv._barrier()


def run_late_push():
    kv = mx.kv.create("dist_sync")
    kv.init(3, arr(np.zeros(10)))
    if kv.rank == 1:
        time.sleep(8)  # longer than the test's WEFT_KVSTORE_REQUEST_TIMEOUT
    kv.push(3, arr(np.ones(10)))
    pulled(kv, 3, (10,))


def run_blocked():
    """Worker 0 waits in a barrier, a push or a pull that only worker 1 could complete;
    worker 1 never comes. blocked-0 appears just before worker 0 blocks."""
    op = sys.argv[3]
    kv = mx.kv.create("dist_sync")
    kv.init(0, arr(np.zeros(10)))
    with open(os.path.join(OUT, "pid-%d" % kv.rank), "w") as f:
        f.write(str(os.getpid()))
    if kv.rank != 0:
        time.sleep(3600)
    open(os.path.join(OUT, "blocked-0"), "w").close()
    if op == "barrier":
        kv._barrier()
    elif op == "push":  # in dist_sync a push is answered once every worker has pushed
        kv.push(0, arr(np.ones(10)))
        mx.nd.waitall()
    else:
        kv.push(0, arr(np.ones(10)))
        pulled(kv, 0, (10,))
    sys.exit("kv_worker: the %s came back although worker 1 never took part" % op)


def wait_for_gate():
    """A test that must see the scheduler handle something first (an intruder's messages)
    names a file in WEFT_TEST_GATE and creates it once it has: until then no worker
    registers, so the job cannot end before it."""
    gate = os.environ.get("WEFT_TEST_GATE")
    if not gate:
        return
    deadline = time.monotonic() + 30
    while not os.path.exists(gate):
        if time.monotonic() > deadline:
            sys.exit("kv_worker: the gate file %s did not appear within 30 s" % gate)
        time.sleep(0.02)


def run_rowsparse():
    kv = mx.kv.create("dist_sync")
    rank = kv.rank
    # 1999 x 601 = 1.2M elements: split over the two servers at element 600696, inside row 999.
    shape = (1999, 601)
    base = (np.arange(np.prod(shape)) % 11).reshape(shape).astype(np.float32)
    kv.init(6, arr(np.zeros(shape)))
    kv.init(7, arr(np.zeros((5, 3))))
    results = {}
    ids = [[0, 998, 999, 1000, 1998], [999, 3, 999, 1500]]
    for step in range(2):
        kv.push(6, arr(base * (step + 1) + rank))
        kv.push(7, arr(np.full((5, 3), step + rank + 1.0)))
        out = mx.nd.sparse.zeros("row_sparse", shape)
        kv.row_sparse_pull(6, out=out, row_ids=mx.nd.array(ids[step], dtype="int64"))
        results["emb_idx%d" % step] = out.indices.asnumpy()
        results["emb_rows%d" % step] = out.data.asnumpy()
        small = mx.nd.sparse.zeros("row_sparse", (5, 3))
        kv.row_sparse_pull(7, out=small, row_ids=mx.nd.array([4, 0]))
        results["small%d" % step] = small.asnumpy()
    try:
        kv.row_sparse_pull(6, out=mx.nd.sparse.zeros("row_sparse", shape), row_ids=mx.nd.array([1999]))
        results["error"] = np.array(["none"])
    except mx.base.MXNetError as e:
        results["error"] = np.array([str(e)])
    np.savez(os.path.join(OUT, "rowsparse-%d.npz" % rank), **results)


def run_rowpush():
    kv = mx.kv.create("dist_sync")
    rank = kv.rank
    # 1999 x 601: split over the two servers inside row 999, as in run_rowsparse.
    shape = (1999, 601)
    kv.init("emb", arr(np.zeros(shape)))
    kv.init("sgd", arr(np.ones((6, 2))))  # one key type per store, as MXNet requires
    rng = np.random.RandomState(100 + rank)
    # Per step and rank: the rows pushed (none at all for rank 1 in step 1; step 2 has rank
    # 0 push densely and rank 1 by rows, in the same round).
    rows = [[[0, 998, 999, 1998], [5, 999, 1000]], [[3, 999], []], [None, [1, 1500]]]
    results = {}
    for step, per_rank in enumerate(rows):
        mine = per_rank[rank]
        dense = np.zeros(shape, np.float32)
        if mine is None:
            dense[:] = rng.uniform(-1, 1, shape)
            kv.push("emb", arr(dense))
        else:
            dense[mine] = rng.uniform(-1, 1, (len(mine), shape[1]))
            kv.push("emb", arr(dense).tostype("row_sparse"))
        results["pushed%d" % step] = dense
        results["emb%d" % step] = pulled(kv, "emb", shape)
    # With an optimizer on the servers: SGD on the summed rows.
    kv.set_optimizer(mx.optimizer.SGD(learning_rate=0.5))
    g = np.zeros((6, 2), np.float32)
    g[[rank, 4]] = rank + 1.0
    kv.push("sgd", arr(g).tostype("row_sparse"))
    results["sgd"] = pulled(kv, "sgd", (6, 2))
    np.savez(os.path.join(OUT, "rowpush-%d.npz" % rank), **results)


def run_sparse_gluon():
    from sparse_model import SparseNet, sparse_gluon_batches
    vocab = 3000  # 3000 x 5 weight; rows vocab/2.. are never used
    net = SparseNet(vocab)
    net.initialize(mx.init.Constant(0.1))
    net.emb.weight.set_data(mx.nd.array(np.random.RandomState(7).uniform(-1, 1, (vocab, 5))))
    kv = mx.kv.create("dist_sync")
    kv_rank = kv.rank
    trainer = mx.gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.2}, kvstore=kv)
    for x, y in sparse_gluon_batches(kv_rank, 4, vocab):
        with mx.autograd.record():
            loss = ((net(mx.nd.array(x)) - mx.nd.array(y)) ** 2).sum()
        loss.backward()
        trainer.step(4)
    np.savez(os.path.join(OUT, "sparse_gluon-%d.npz" % kv_rank), emb=net.emb.weight._reduce().asnumpy(),
             out=net.out.weight.data().asnumpy(), rank=np.array([kv_rank]))


wait_for_gate()
{"sparse_gluon": run_sparse_gluon, "rowsparse": run_rowsparse, "rowpush": run_rowpush, "sync": run_sync, "async": run_async, "device": run_device, "mlp": run_mlp, "kill": run_kill,
 "late_barrier": run_late_barrier,
 "late_push": run_late_push, "blocked": run_blocked}[MODE]()
