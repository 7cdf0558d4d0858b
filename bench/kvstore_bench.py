"""Distributed key-value store throughput on loopback (not a test).

    PYTHONPATH=build/python python3 bench/kvstore_bench.py [--no-mlp]

1. push+pull of 4 MiB and 64 MiB float32 keys, 2 workers and 2 servers (dist_sync; both
   keys are split over the two servers), as push then pull and as one pushpull (the push's
   answer carries the new value), against a raw ZeroMQ transfer of the same bytes
   between the same processes: each worker sends each server its half of the key without
   copying and a thread of the server process sends the very message back, which the
   worker copies into an array (libzmq's zmq_msg_* through ctypes): the traffic of one
   push+pull with no work on the server. Raw, push+pull and pushpull batches take turns,
   and a batch ends when both workers are through. Throughput counts the bytes a worker
   moves per second (out + back); the ratio is store / raw, each kind timed by its
   fastest batch of 5 (the machine is shared; the medians are printed too).
2. MLP training samples/s with 2 dist_sync workers against 1 worker (same per-worker batch).

The same file is the program of every process (launched by tools/launch.py); without
DMLC_ROLE it is the driver.
"""
import ctypes
import glob
import os
import subprocess
import sys
import threading
import time

import numpy as np

from timing import record

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SIZES = {"4MiB": 1 << 20, "64MiB": 16 << 20}  # float32 elements
ROUNDS = {"4MiB": 20, "64MiB": 2}  # rounds per timed batch
BATCHES = 5  # timed batches of each kind, taking turns


# ------------------------------------------------------------------ raw ZeroMQ through ctypes
class Zmq(object):
    """The few libzmq calls the raw transfer needs, with zero-copy messages (zmq_msg_*)."""
    ROUTER, DEALER, SNDMORE, LAST_ENDPOINT = 6, 5, 2, 32

    def __init__(self):
        self.lib = lib = ctypes.CDLL("libzmq.so.5")
        vp, sz = ctypes.c_void_p, ctypes.c_size_t
        sig = {
            "zmq_ctx_new": (vp, []), "zmq_socket": (vp, [vp, ctypes.c_int]),
            "zmq_bind": (ctypes.c_int, [vp, ctypes.c_char_p]), "zmq_connect": (ctypes.c_int, [vp, ctypes.c_char_p]),
            "zmq_getsockopt": (ctypes.c_int, [vp, ctypes.c_int, vp, vp]), "zmq_close": (ctypes.c_int, [vp]),
            "zmq_msg_init": (ctypes.c_int, [vp]), "zmq_msg_init_size": (ctypes.c_int, [vp, sz]),
            "zmq_msg_init_data": (ctypes.c_int, [vp, vp, sz, vp, vp]),
            "zmq_msg_send": (ctypes.c_int, [vp, vp, ctypes.c_int]),
            "zmq_msg_recv": (ctypes.c_int, [vp, vp, ctypes.c_int]),
            "zmq_msg_data": (vp, [vp]), "zmq_msg_size": (sz, [vp]), "zmq_msg_close": (ctypes.c_int, [vp]),
        }
        for name, (res, args) in sig.items():
            getattr(lib, name).restype = res
            getattr(lib, name).argtypes = args
        self.ctx = lib.zmq_ctx_new()

    def socket(self, kind):
        return self.lib.zmq_socket(self.ctx, kind)

    @staticmethod
    def msg():
        return ctypes.create_string_buffer(64)  # zmq_msg_t

    def send_view(self, sock, address, nbytes, more=False):
        """Sends nbytes at address without copying (the caller keeps the memory alive and
        unchanged until the reply shows the message is through)."""
        m = self.msg()
        self.lib.zmq_msg_init_data(m, address, nbytes, None, None)
        if self.lib.zmq_msg_send(m, sock, self.SNDMORE if more else 0) < 0:
            raise OSError("zmq_msg_send failed")

    def recv(self, sock):
        m = self.msg()
        self.lib.zmq_msg_init(m)
        if self.lib.zmq_msg_recv(m, sock, 0) < 0:
            raise OSError("zmq_msg_recv failed")
        return m


def raw_server(out, workers):
    """Sends every message back to its sender as received (no copy) until each worker has
    said it is done (an empty message)."""
    z = Zmq()
    s = z.socket(Zmq.ROUTER)
    z.lib.zmq_bind(s, b"tcp://127.0.0.1:*")
    ep = ctypes.create_string_buffer(256)
    n = ctypes.c_size_t(256)
    z.lib.zmq_getsockopt(s, Zmq.LAST_ENDPOINT, ep, ctypes.byref(n))
    tmp = os.path.join(out, "tmp-raw-server-%d" % os.getpid())
    with open(tmp, "w") as f:
        f.write(ep.value.decode())
    os.rename(tmp, os.path.join(out, "raw-server-%d" % os.getpid()))
    done = 0
    while done < workers:
        ident, body = z.recv(s), z.recv(s)
        if z.lib.zmq_msg_size(body) == 0:
            done += 1
            z.lib.zmq_msg_close(ident)
            z.lib.zmq_msg_close(body)
            continue
        z.lib.zmq_msg_send(ident, s, Zmq.SNDMORE)
        z.lib.zmq_msg_send(body, s, 0)
    z.lib.zmq_close(s)


class RawWorker(object):
    """A worker's end of the raw transfer: per round it sends each server its part of the
    key without copying and copies the answer into an array, as a pull does."""

    def __init__(self, out, servers):
        self.z = z = Zmq()
        while len(glob.glob(os.path.join(out, "raw-server-[0-9]*"))) < servers:
            time.sleep(0.05)
        self.socks = []
        for path in sorted(glob.glob(os.path.join(out, "raw-server-[0-9]*"))):
            s = z.socket(Zmq.DEALER)
            z.lib.zmq_connect(s, open(path).read().encode())
            self.socks.append(s)

    def round_trip(self, data, back):
        z, part = self.z, data.nbytes // len(self.socks)
        for i, s in enumerate(self.socks):
            z.send_view(s, data.ctypes.data + i * part, part)
        for i, s in enumerate(self.socks):
            m = z.recv(s)
            ctypes.memmove(back.ctypes.data + i * part, z.lib.zmq_msg_data(m), z.lib.zmq_msg_size(m))
            z.lib.zmq_msg_close(m)

    def close(self):
        for s in self.socks:
            self.z.send_view(s, None, 0)
            self.z.lib.zmq_close(s)


def node_throughput(out):
    role = os.environ["DMLC_ROLE"]
    workers, servers = int(os.environ["DMLC_NUM_WORKER"]), int(os.environ["DMLC_NUM_SERVER"])
    raw = None
    if role == "server":
        # The raw echo runs beside the store's server in the same process (the store's
        # loop releases the GIL), so that raw and store batches can take turns.
        threading.Thread(target=raw_server, args=(out, workers), daemon=True).start()
        while not glob.glob(os.path.join(out, "raw-server-%d" % os.getpid())):
            time.sleep(0.01)
    elif role == "worker":
        raw = RawWorker(out, servers)
    import weft as mx  # a server or the scheduler runs its role here and exits
    kv = mx.kv.create("dist_sync")
    lines = []
    for key, (name, n) in enumerate(SIZES.items()):
        grad = mx.nd.ones((n,))
        weight = mx.nd.zeros((n,))
        kv.init(key, weight)
        data, back = np.ones(n, np.float32), np.empty(n, np.float32)
        rounds = {
            "raw": lambda: raw.round_trip(data, back),
            "push+pull": lambda: (kv.push(key, grad), kv.pull(key, out=weight)),
            "pushpull": lambda: kv.pushpull(key, grad, out=weight),
        }
        per = {how: [] for how in rounds}
        for b in range(BATCHES + 1):
            # The kinds take turns, batch by batch, so that a busy moment of the shared
            # machine falls on all of them alike. The workers start each batch together and
            # a batch ends when both are through (a barrier, timed for every kind alike):
            # a sync round moves both workers' bytes, so the raw transfer is timed for
            # both workers' bytes too, not for one that got the servers to itself.
            for how, one_round in rounds.items():
                kv._barrier()
                t = time.perf_counter()
                for _ in range(ROUNDS[name]):
                    one_round()
                weight.wait_to_read()
                kv._barrier()
                if b > 0:  # the first batch warms up
                    per[how].append((time.perf_counter() - t) / ROUNDS[name])
        assert np.array_equal(back, data)
        # The servers' answer is the sum of both workers' pushes of ones.
        assert np.array_equal(weight.asnumpy()[:4], np.full(4, kv.num_workers, np.float32))
        gb = 2 * n * 4 / 1e9
        best = {how: min(v) for how, v in per.items()}
        median = {how: sorted(v)[len(v) // 2] for how, v in per.items()}
        for how in ("push+pull", "pushpull"):
            lines.append("%s %s %-9s kv %.3f GB/s raw %.3f GB/s ratio %.2f (medians %.3f / %.3f GB/s, ratio %.2f)"
                         % (kv.rank, name, how, gb / best[how], gb / best["raw"], best["raw"] / best[how],
                            gb / median[how], gb / median["raw"], median["raw"] / median[how]))
    raw.close()
    print("\n".join("RESULT " + l for l in lines), flush=True)


def node_mlp(batch, steps):
    import weft as mx
    kv = mx.kv.create("dist_sync")
    data = mx.sym.var("data")
    net = mx.sym.FullyConnected(data, num_hidden=256, name="fc1")
    net = mx.sym.Activation(net, act_type="relu")
    net = mx.sym.FullyConnected(net, num_hidden=10, name="fc2")
    net = mx.sym.SoftmaxOutput(net, mx.sym.var("softmax_label"), name="softmax")
    ex = net.simple_bind(mx.cpu(), data=(batch, 784), softmax_label=(batch,))
    names = ["fc1_weight", "fc1_bias", "fc2_weight", "fc2_bias"]
    rng = np.random.default_rng(0)
    for i, name in enumerate(names):
        ex.arg_dict[name][:] = mx.nd.array(rng.normal(0, 0.05, ex.arg_dict[name].shape).astype(np.float32))
        kv.init(i, ex.arg_dict[name])
    kv.set_optimizer(mx.optimizer.create("sgd", learning_rate=0.1, rescale_grad=1.0 / (batch * kv.num_workers)))
    ex.arg_dict["data"][:] = mx.nd.array(rng.random((batch, 784)).astype(np.float32))
    ex.arg_dict["softmax_label"][:] = mx.nd.array(rng.integers(0, 10, batch).astype(np.float32))

    def step():
        ex.forward(is_train=True)
        ex.backward()
        for i, name in enumerate(names):
            kv.push(i, ex.grad_dict[name], priority=-i)
            kv.pull(i, out=ex.arg_dict[name], priority=-i)

    step()
    mx.nd.waitall()
    t = time.perf_counter()
    for _ in range(steps):
        step()
    mx.nd.waitall()
    rate = batch * kv.num_workers * steps / (time.perf_counter() - t)
    if kv.rank == 0:
        print("RESULT mlp %d workers %.0f samples/s" % (kv.num_workers, rate), flush=True)


def launch(workers, servers, args):
    cmd = [sys.executable, os.path.join(ROOT, "tools", "launch.py"), "-n", str(workers), "-s", str(servers),
           sys.executable, os.path.abspath(__file__)] + [str(a) for a in args]
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    if res.returncode != 0:
        raise SystemExit("the job failed:\n" + res.stdout + res.stderr)
    return [l.split("RESULT ", 1)[1] for l in res.stdout.splitlines() if "RESULT " in l]


def main():
    import tempfile
    with tempfile.TemporaryDirectory() as out:
        rows = launch(2, 2, ["throughput", out])
    print("push+pull per worker, 2 workers x 2 servers on loopback (rank size: store, raw ZeroMQ, ratio)")
    for r in sorted(rows):
        print("  worker " + r)
        rank, name, how, _, kv_gb, _, _, raw_gb = r.split()[:8]
        if rank == "0":
            record("%s %s, 2 workers x 2 servers" % (name, how), float(kv_gb), float(raw_gb), "GB/s", True)
    if "--no-mlp" in sys.argv:
        return
    one = launch(1, 2, ["mlp", 64, 30])
    two = launch(2, 2, ["mlp", 64, 30])
    print("MLP 784-256-10, batch 64 per worker, dist_sync:")
    print("  " + one[0])
    print("  " + two[0])


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "throughput":
        node_throughput(sys.argv[2])
    elif len(sys.argv) > 1 and sys.argv[1] == "mlp":
        node_mlp(int(sys.argv[2]), int(sys.argv[3]))
    else:
        main()
