"""The distributed key-value store with real processes on loopback: 1 scheduler, 2 servers
and 2 workers started by tools/launch.py running tests/dist/kv_worker.py, or a scheduler
and a server started directly with the test playing the other nodes by hand
(tests/dist/wire.py: strangers, forged messages, a pickle). Every job is bounded in time
and uses a free port."""
import os
import pickle
import re
import signal
import socket
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

import weft as mx
from weft import lr_scheduler
from weft.kvstore import optimizer_wire

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LAUNCH = os.path.join(ROOT, "tools", "launch.py")
WORKER = os.path.join(ROOT, "tests", "dist", "kv_worker.py")
sys.path.insert(0, os.path.join(ROOT, "tests", "dist"))
import wire  # noqa: E402  (the protocol spoken by hand, beside kv_worker.py)


def launch(args, workers=2, servers=2, timeout=40, heartbeat=10, wait=True, port=0, env=None):
    """Runs kv_worker.py through launch.py (heartbeat None: the default timeout)."""
    env = dict(os.environ, OMP_NUM_THREADS="1", **(env or {}))
    env.pop("WEFT_KVSTORE_HEARTBEAT_TIMEOUT", None)
    if heartbeat is not None:
        env["WEFT_KVSTORE_HEARTBEAT_TIMEOUT"] = str(heartbeat)
    cmd = [sys.executable, LAUNCH, "-n", str(workers), "-s", str(servers), "--grace", "20", "--port", str(port),
           sys.executable, WORKER] + [str(a) for a in args]
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            start_new_session=True)
    if not wait:
        return proc
    try:
        out, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        out = end_job(proc, args[1])
        pytest.fail("the job did not end within %d s:\n%s" % (timeout, out))
    return proc.returncode, out


def wait_until_training(tmp_path):
    """Waits (30 s at most) until both workers of a kv_worker.py "kill" job have written their
    pid files, which they do once training has begun."""
    deadline = time.monotonic() + 30
    while not all((tmp_path / ("pid-%d" % r)).exists() for r in range(2)) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert all((tmp_path / ("pid-%d" % r)).exists() for r in range(2)), "the workers never started training"


def end_job(proc, tag):
    """Kills the launcher `proc` and every process of its job (the processes whose command
    line holds `tag`), and returns the launcher's output. Each node runs in a session of its
    own: killing the launcher's group alone would leave the job running without it."""
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGKILL)
    for pid in no_process_left(str(tag)):
        try:
            os.kill(int(pid), signal.SIGKILL)
        except ProcessLookupError:
            pass
    out, _ = proc.communicate()
    return out


def no_process_left(tag):
    ps = subprocess.run(["pgrep", "-f", tag], capture_output=True, text=True).stdout.split()
    return [p for p in ps if int(p) != os.getpid()]


def test_dist_sync_sums_split_keys_string_keys_and_server_optimizer(tmp_path):
    rc, out = launch(["sync", tmp_path])
    assert rc == 0, out
    big = (1200, 1000)
    base = np.arange(np.prod(big)).reshape(big) % 7
    got = [np.load(tmp_path / ("sync-%d.npz" % r)) for r in range(2)]
    assert sorted(int(g["rank"][0]) for g in got) == [0, 1] and all(int(g["rank"][1]) == 2 for g in got)
    for g in got:
        for step in range(3):
            np.testing.assert_array_equal(g["small%d" % step], np.full((3, 4), 3.0 * (step + 1)))
            np.testing.assert_array_equal(g["big%d" % step], 2 * base + 1)  # ranks 0 and 1
            np.testing.assert_array_equal(g["name%d" % step], np.full(6, 1 + 1 + 0 + 1))
        for step in range(2):  # ranks 0 and 1 push step + rank + 1
            np.testing.assert_array_equal(g["late_big%d" % step], np.full(big, 2.0 * step + 3))
            np.testing.assert_array_equal(g["late_small%d" % step], np.full((3, 4), 2.0 * step + 3))
        np.testing.assert_array_equal(g["pushpull_big"], np.full(big, 1.0 + 2.0))
        np.testing.assert_array_equal(g["pushpull_self"], np.full((3, 4), 10.0 + 11.0))
        # SGD on the servers, once on the sum of both workers' gradients.
        np.testing.assert_allclose(g["w"], np.full(4, 1 - 0.1 * (1 + 2)), rtol=1e-6)
        # Each worker's 0.3 goes out 2-bit compressed as 0.25: weight -= 0.1 * 0.5.
        np.testing.assert_allclose(g["compressed"], np.full(1000, -0.05), rtol=1e-6)
        # Next push: 0.3 + residual 0.05 is still one step of 0.25 each.
        np.testing.assert_allclose(g["compressed_pushpull"], np.full(1000, -0.1), rtol=1e-6)
    assert not no_process_left(str(tmp_path))


def test_dist_row_sparse_pull_reads_the_summed_rows_across_servers(tmp_path):
    rc, out = launch(["rowsparse", tmp_path])
    assert rc == 0, out
    shape = (1999, 601)
    base = (np.arange(np.prod(shape)) % 11).reshape(shape).astype(np.float32)
    ids = [[0, 998, 999, 1000, 1998], [3, 999, 1500]]
    for r in range(2):
        got = np.load(tmp_path / ("rowsparse-%d.npz" % r))
        for step in range(2):
            summed = 2 * base * (step + 1) + 1  # ranks 0 and 1
            np.testing.assert_array_equal(got["emb_idx%d" % step], ids[step])
            np.testing.assert_array_equal(got["emb_rows%d" % step], summed[ids[step]])
            small = np.zeros((5, 3), np.float32)
            small[[0, 4]] = 2 * step + 3
            np.testing.assert_array_equal(got["small%d" % step], small)
        assert "row id 1999 at position 0 is out of range [0, 1999)" in str(got["error"][0])
    assert not no_process_left(str(tmp_path))


def test_dist_row_sparse_push_sends_rows_and_sums_as_dense(tmp_path):
    rc, out = launch(["rowpush", tmp_path])
    assert rc == 0, out
    got = [np.load(tmp_path / ("rowpush-%d.npz" % r)) for r in range(2)]
    for step in range(3):
        # The servers' value after a round is the sum of both workers' pushes, whether they
        # came as rows (some crossing the servers' split, some workers with no rows) or dense.
        want = got[0]["pushed%d" % step] + got[1]["pushed%d" % step]
        for g in got:
            np.testing.assert_allclose(g["emb%d" % step], want, rtol=1e-6, atol=1e-6)
    # SGD (lr 0.5) on the servers applied to the sum: rows 0 and 1 get one worker's gradient,
    # row 4 both.
    want = np.ones((6, 2), np.float32)
    want[0] -= 0.5 * 1
    want[1] -= 0.5 * 2
    want[4] -= 0.5 * 3
    for g in got:
        np.testing.assert_allclose(g["sgd"], want, rtol=1e-6)
    assert not no_process_left(str(tmp_path))


def test_dist_gluon_row_sparse_weight_trains_as_one_process_on_both_batches(tmp_path):
    import sparse_model as kb
    rc, out = launch(["sparse_gluon", tmp_path])
    assert rc == 0, out
    # The same training in this process: one local Trainer on both workers' batches at
    # each step (the servers sum the two workers' gradients).
    vocab = 3000
    net = kb.SparseNet(vocab)
    net.initialize(mx.init.Constant(0.1))
    net.emb.weight.set_data(mx.nd.array(np.random.RandomState(7).uniform(-1, 1, (vocab, 5))))
    trainer = mx.gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.2}, kvstore="local")
    for (x0, y0), (x1, y1) in zip(kb.sparse_gluon_batches(0, 4, vocab), kb.sparse_gluon_batches(1, 4, vocab)):
        with mx.autograd.record():
            loss = ((net(mx.nd.array(np.concatenate([x0, x1]))) - mx.nd.array(np.concatenate([y0, y1]))) ** 2).sum()
        loss.backward()
        trainer.step(4)
    want_emb, want_out = net.emb.weight._reduce().asnumpy(), net.out.weight.data().asnumpy()
    for r in range(2):
        got = np.load(tmp_path / ("sparse_gluon-%d.npz" % r))
        np.testing.assert_allclose(got["emb"], want_emb, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(got["out"], want_out, rtol=1e-5, atol=1e-6)
    assert not np.allclose(want_emb, np.random.RandomState(7).uniform(-1, 1, (vocab, 5)).astype(np.float32))
    assert not no_process_left(str(tmp_path))


def test_dist_device_sync_sums_per_device_values_then_over_workers(tmp_path):
    rc, out = launch(["device", tmp_path])
    assert rc == 0, out
    for r in range(2):
        got = np.load(tmp_path / ("device-%d.npz" % r))
        d = int(got["devices"][0])
        for step in range(2):
            # sum over ranks 0, 1 and devices i of (rank + 1) * (i + 1) + step
            expect = sum((rank + 1) * (i + 1) + step for rank in range(2) for i in range(d))
            np.testing.assert_array_equal(got["step%d" % step], np.full((d, 1100, 1000), float(expect)))
    assert not no_process_left(str(tmp_path))


def test_dist_async_converges(tmp_path):
    rc, out = launch(["async", tmp_path])
    assert rc == 0, out
    target = np.linspace(-1, 1, 10)
    for r in range(2):
        np.testing.assert_allclose(np.load(tmp_path / ("async-%d.npy" % r)), target, atol=1e-3)


def test_two_worker_mlp_keeps_workers_identical_and_matches_one_worker(tmp_path):
    steps = 6
    rc, out = launch(["mlp", tmp_path, 16, steps])
    assert rc == 0, out
    rc, out = launch(["mlp", tmp_path, 32, steps], workers=1)
    assert rc == 0, out
    w0, w1 = (np.load(tmp_path / ("mlp-%d-of-2.npy" % r)) for r in range(2))
    single = np.load(tmp_path / "mlp-0-of-1.npy")
    assert w0.shape == (steps, 32 * 784 + 32 + 10 * 32 + 10)
    # Both workers hold exactly the servers' parameters after every step.
    np.testing.assert_array_equal(w0, w1)
    # And training moved them as one worker with the doubled batch does (sums of the two
    # halves' gradients differ from the whole batch's only by rounding).
    np.testing.assert_allclose(w0, single, rtol=1e-4, atol=1e-5)
    assert np.abs(w0[-1] - w0[0]).max() > 1e-3


def job_processes(tag):
    """{pid: DMLC_ROLE} of the processes whose command line holds `tag` (a test's folder)."""
    found = {}
    for pid in no_process_left(tag):
        try:
            with open("/proc/%s/environ" % pid, "rb") as f:
                env = dict(e.split(b"=", 1) for e in f.read().split(b"\0") if b"=" in e)
        except OSError:
            continue
        if b"DMLC_ROLE" in env:
            found[int(pid)] = env[b"DMLC_ROLE"].decode()
    return found


@pytest.mark.parametrize("role", ["worker", "server", "scheduler"])
def test_killing_any_node_ends_the_job_with_an_error_naming_it(tmp_path, role):
    # The default timeouts: a killed process's connections close, which its peers notice
    # within seconds, long before the 20 s heartbeat timeout.
    proc = launch(["kill", tmp_path], heartbeat=None, wait=False)
    try:
        wait_until_training(tmp_path)
        time.sleep(0.5)  # mid-training: both workers are pushing and pulling
        if role == "worker":
            victim = int((tmp_path / "pid-1").read_text())
        else:
            victim = min(pid for pid, r in job_processes(str(tmp_path)).items() if r == role)
        os.kill(victim, signal.SIGKILL)
        killed_at = time.monotonic()
        out, _ = proc.communicate(timeout=30)
        took = time.monotonic() - killed_at
    finally:
        if proc.poll() is None:
            end_job(proc, tmp_path)
    print("killed the %s: the job ended %.1f s later" % (role, took))
    assert proc.returncode != 0
    # Every other process exits with an error naming the lost node.
    named = {"worker": "lost worker 1", "server": "lost server", "scheduler": "lost the scheduler"}[role]
    # The launcher numbers processes in start order, not by rank: count them by kind.
    survivors = {"scheduler": 0 if role == "scheduler" else 1, "server": 1 if role == "server" else 2,
                 "worker": 1 if role == "worker" else 2}
    for kind, n in survivors.items():
        reporting = {l.split("]")[0] for l in out.splitlines() if l.startswith("[" + kind) and named in l}
        assert len(reporting) == n, "expected %d %s(s) to report '%s', got %s:\n%s" % (n, kind, named,
                                                                                      sorted(reporting), out)
    if role == "server":
        assert "pid %d" % victim in out, out
    assert "killing" not in out, out  # nobody had to be killed by the launcher
    assert "its connection closed" in out, out
    # Detection (the 2 s grace after the close), the notice, and each process's 2 s to
    # fail on its own, with room for a loaded machine: far below the heartbeat timeout.
    assert took < 2 + 2 + 6, "the job took %.1f s to end after the kill" % took
    assert not no_process_left(str(tmp_path))


def test_a_hung_node_is_lost_after_the_heartbeat_timeout(tmp_path):
    # A stopped process keeps its connections open: only the heartbeats tell.
    proc = launch(["kill", tmp_path], heartbeat=2, wait=False)
    lines = []
    reader = threading.Thread(target=lambda: lines.extend(iter(proc.stdout.readline, "")), daemon=True)
    reader.start()
    victim = None
    try:
        deadline = time.monotonic() + 30
        while not (tmp_path / "pid-1").exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        time.sleep(0.5)
        victim = int((tmp_path / "pid-1").read_text())
        os.kill(victim, signal.SIGSTOP)
        stopped_at = time.monotonic()
        while not any("no heartbeat" in l for l in list(lines)) and time.monotonic() < stopped_at + 20:
            time.sleep(0.05)
        took = time.monotonic() - stopped_at
        os.kill(victim, signal.SIGKILL)
        proc.wait(timeout=30)
        reader.join(timeout=10)
    finally:
        if proc.poll() is None:
            end_job(proc, tmp_path)
    out = "".join(lines)
    assert "[scheduler] weft scheduler: kvstore scheduler: lost worker 1 (host" in out, out
    assert "pid %d): no heartbeat for 2 s" % victim in out, out
    # Its last heartbeat went out up to one interval (0.4 s) before it stopped.
    assert 2 - 0.5 <= took < 2 + 5, took


def wait_until_gone(pids, tag, timeout):
    """Seconds until none of `pids` runs any more (a zombie no longer counts), and those
    still running after `timeout`."""
    start = time.monotonic()
    while True:
        left = set(pids) & set(job_processes(tag))
        took = time.monotonic() - start
        if not left or took > timeout:
            return took, left
        time.sleep(0.1)


def node_log(logs, role, pid):
    path = logs / ("%s-%d.log" % (role, pid))
    return path.read_text(errors="replace") if path.exists() else "(no log %s)" % path


@pytest.mark.parametrize("output", ["files", "launcher"])
def test_nodes_exit_when_the_launcher_and_the_scheduler_die_together(tmp_path, output):
    # With the launcher gone, nobody reads the nodes' output or ends them: each node must
    # notice the lost scheduler by itself and exit (writing to the dead launcher's pipes
    # fails and must not keep it alive). With "files" each node logs to a file of its own,
    # as on a cluster, where the test reads what it said.
    logs = tmp_path / "logs"
    logs.mkdir()
    port = free_port()
    env = {"WEFT_TEST_LOG_DIR": str(logs)} if output == "files" else None
    proc = launch(["kill", tmp_path], heartbeat=None, wait=False, port=port, env=env)
    try:
        wait_until_training(tmp_path)
        time.sleep(0.5)  # mid-training
        nodes = job_processes(str(tmp_path))
        assert sorted(nodes.values()) == ["scheduler", "server", "server", "worker", "worker"], nodes
        scheduler = next(pid for pid, role in nodes.items() if role == "scheduler")
        os.killpg(proc.pid, signal.SIGKILL)
        os.kill(scheduler, signal.SIGKILL)
        others = set(nodes) - {scheduler}
        took, left = wait_until_gone(others, str(tmp_path), 30)
    finally:
        end_job(proc, tmp_path)
    print("killed the launcher and the scheduler: the other nodes ended %.1f s later" % took)
    assert not left, "still running 30 s after the launcher and the scheduler were killed: %s" % (
        {pid: nodes[pid] for pid in left})
    if output == "files":
        lost = "lost the scheduler at tcp://127.0.0.1:%d: its connection closed" % port
        for pid in others:
            text = node_log(logs, nodes[pid], pid)
            assert lost in text, "the %s (pid %d) did not say '%s':\n%s" % (nodes[pid], pid, lost, text)


@pytest.mark.parametrize("op", ["barrier", "push", "pull"])
def test_a_worker_blocked_in_a_request_exits_when_every_other_process_dies(tmp_path, op):
    # Worker 0 waits for worker 1, which never comes; then every other process of the job
    # (launcher, scheduler, servers, worker 1) is killed at once.
    logs = tmp_path / "logs"
    logs.mkdir()
    proc = launch(["blocked", tmp_path, op], heartbeat=None, wait=False, env={"WEFT_TEST_LOG_DIR": str(logs)})
    try:
        deadline = time.monotonic() + 30
        while not ((tmp_path / "blocked-0").exists() and (tmp_path / "pid-1").exists()) and \
                time.monotonic() < deadline:
            time.sleep(0.1)
        assert (tmp_path / "blocked-0").exists() and (tmp_path / "pid-1").exists(), "the workers never started"
        time.sleep(1)  # worker 0 is waiting now
        blocked = int((tmp_path / "pid-0").read_text())
        nodes = job_processes(str(tmp_path))
        assert blocked in nodes and len(nodes) == 5, nodes
        os.killpg(proc.pid, signal.SIGKILL)
        for pid in set(nodes) - {blocked}:
            os.kill(pid, signal.SIGKILL)
        took, left = wait_until_gone([blocked], str(tmp_path), 30)
    finally:
        end_job(proc, tmp_path)
    text = node_log(logs, "worker", blocked)
    print("worker 0 blocked in a %s ended %.1f s after the others were killed" % (op, took))
    assert not left, "worker 0, blocked in a %s, still ran 30 s after every other process died:\n%s" % (op, text)
    assert "came back" not in text, text
    assert re.search(r"lost (the scheduler|server [01]) at tcp://127\.0\.0\.1:\d+: its connection closed", text), text


def test_launch_passes_sigterm_on_to_every_node(tmp_path):
    proc = launch(["kill", tmp_path], heartbeat=None, wait=False)
    try:
        wait_until_training(tmp_path)
        nodes = job_processes(str(tmp_path))
        assert len(nodes) == 5, nodes
        proc.send_signal(signal.SIGTERM)
        out, _ = proc.communicate(timeout=30)
    finally:
        end_job(proc, tmp_path)
    assert proc.returncode == 128 + signal.SIGTERM, out
    took, left = wait_until_gone(nodes, str(tmp_path), 5)
    assert not left, "nodes left running after the launcher was stopped: %s" % left


def test_launch_reports_failure_and_bad_arguments(tmp_path):
    rc = subprocess.run([sys.executable, LAUNCH, "-n", "1", "-s", "1", sys.executable, "-c",
                         "import sys; sys.exit(3)"], capture_output=True, text=True, timeout=30)
    # Without weft the scheduler and server never start a role, so they exit at once too.
    assert rc.returncode == 3, rc.stdout + rc.stderr
    bad = subprocess.run([sys.executable, LAUNCH, "-n", "0", "true"], capture_output=True, text=True, timeout=30)
    assert bad.returncode != 0 and "-n must be >= 1" in bad.stderr


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def gated_job_with_intruder(tmp_path, args, messages, expect, curve=None, env=None):
    """Runs a job whose workers wait for a gate file, sends an intruder's messages to the
    scheduler, waits until its output shows each of `expect`, then opens the gate. The
    scheduler therefore always lives long enough to receive them: a short job left the
    intruder's reconnects (every 100-200 ms) no window on a loaded machine. `curve`: the
    intruder's wire.Peer keywords (password, or server_key and keys), or a function of the
    job's (public, secret) keys (read from the scheduler's environment) that gives them."""
    port = free_port()
    gate = tmp_path / "gate"
    proc = launch(args, port=port, wait=False, env=dict(env or {}, WEFT_TEST_GATE=str(gate)))
    if callable(curve):
        curve = curve(*scheduler_keys(tmp_path))
    lines = []

    def read():  # line by line, so that the loop below sees each as it comes
        for line in iter(proc.stdout.readline, ""):
            lines.append(line)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    intruder = wire.Peer("tcp://127.0.0.1:%d" % port, **(curve or {}))
    try:
        for m in messages:
            intruder.send_frames([m])
        deadline = time.monotonic() + 30
        while not all(any(e in l for l in list(lines)) for e in expect) and time.monotonic() < deadline:
            time.sleep(0.02)
        gate.touch()
        proc.wait(timeout=40)
        reader.join(timeout=10)
    finally:
        intruder.close()
        if proc.poll() is None:
            end_job(proc, tmp_path)
    return proc.returncode, "".join(lines)


def scheduler_keys(tmp_path):
    """The CURVE keys launch.py gave the scheduler of the job running in tmp_path."""
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        for pid, role in job_processes(str(tmp_path)).items():
            if role == "scheduler":
                with open("/proc/%d/environ" % pid, "rb") as f:
                    env = dict(e.split(b"=", 1) for e in f.read().split(b"\0") if b"=" in e)
                return env[b"WEFT_KVSTORE_CURVE_PUBLIC_KEY"].decode(), env[b"WEFT_KVSTORE_CURVE_SECRET_KEY"].decode()
        time.sleep(0.05)
    pytest.fail("the scheduler did not start")


def test_malformed_messages_are_dropped_and_logged(tmp_path):
    header = bytearray(80)
    header[0:4] = (0x4B564657).to_bytes(4, "little")
    header[4:6] = (wire.VERSION).to_bytes(2, "little")
    header[6:8] = (3).to_bytes(2, "little")             # a heartbeat...
    header[72:80] = (100).to_bytes(8, "little")         # ...announcing a missing payload
    expect = ["dropped a malformed message: header of 3 bytes",
              "dropped a malformed message: bad magic number",
              "announces 100 payload bytes, the message has 0"]
    # The intruder holds the job's keys: this is what a broken member could send.
    rc, out = gated_job_with_intruder(tmp_path, ["async", tmp_path],
                                      [b"xyz", b"\0" * 80, bytes(header)], expect,  # no header; bad magic
                                      curve=lambda public, secret: {"server_key": public, "keys": (public, secret)})
    assert rc == 0, out
    for e in expect:
        assert e in out, out
    np.testing.assert_allclose(np.load(tmp_path / "async-0.npy"), np.linspace(-1, 1, 10), atol=1e-3)


def test_curve_authentication_admits_the_job_and_refuses_others(tmp_path):
    public, secret = wire.curve_keypair()
    keys = {"WEFT_KVSTORE_CURVE_PUBLIC_KEY": public, "WEFT_KVSTORE_CURVE_SECRET_KEY": secret}
    other_public, other_secret = wire.curve_keypair()
    refused = "scheduler: refused a connection from 127.0.0.1 (without the job's key)"
    # CURVE between workers and servers on loopback too (the scheduler always uses it).
    rc, out = gated_job_with_intruder(tmp_path, ["sync", tmp_path], [b"\0" * 80], [refused],
                                      curve={"server_key": public, "keys": (other_public, other_secret)},
                                      env=dict(keys, WEFT_KVSTORE_LOOPBACK_CURVE="1"))
    assert rc == 0, out
    assert refused in out, out
    # The intruder's message never reached the scheduler's loop.
    assert "malformed" not in out, out
    g = np.load(tmp_path / "sync-0.npz")
    np.testing.assert_array_equal(g["small2"], np.full((3, 4), 9.0))
    bad = subprocess.run([sys.executable, LAUNCH, "-n", "1", "true"], capture_output=True, text=True, timeout=30,
                         env=dict(os.environ, WEFT_KVSTORE_CURVE_PUBLIC_KEY=public))
    assert bad.returncode != 0 and "only one of WEFT_KVSTORE_CURVE_PUBLIC_KEY" in bad.stderr, bad.stderr


def test_launch_gives_each_job_its_own_keys_and_strangers_are_refused(tmp_path):
    # No keys given: launch.py makes a pair for the job; a stranger with a wrong key is
    # refused before anything it sends is read.
    refused = "scheduler: refused a connection from 127.0.0.1 (without the job's key)"
    seen = []

    def stranger(public, secret):
        seen.append((public, secret))
        return {"server_key": public, "keys": wire.curve_keypair()}

    rc, out = gated_job_with_intruder(tmp_path, ["async", tmp_path], [wire.header(wire.REGISTER)], [refused],
                                      curve=stranger)
    assert rc == 0, out
    assert refused in out and "registration" not in out, out
    (public, secret), = seen
    assert len(public) == 40 and len(secret) == 40
    printed = subprocess.run([sys.executable, LAUNCH, "--print-keys"], capture_output=True, text=True, timeout=30)
    lines = printed.stdout.split()
    assert [l.split("=", 1)[0] for l in lines] == ["WEFT_KVSTORE_CURVE_PUBLIC_KEY", "WEFT_KVSTORE_CURVE_SECRET_KEY"]
    assert public not in printed.stdout  # a new pair every time


def test_ssh_launcher_runs_each_node_through_ssh(tmp_path):
    # A stand-in for ssh that runs the remote command here, as `ssh host command` would
    # there: what is checked is the command line and environment launch.py builds.
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "ssh"
    fake.write_text('#!/bin/sh\nwhile [ "$1" = "-o" ]; do shift 2; done\n'
                    'echo "ssh to $1" >> "%s"\necho "$2" >> "%s"\nshift\nexec sh -c "$1"\n'
                    % (tmp_path / "ssh.log", tmp_path / "remote.log"))
    fake.chmod(0o755)
    hosts = tmp_path / "hosts"
    hosts.write_text("# two names for this machine\n127.0.0.1\nlocalhost\n")
    public, secret = wire.curve_keypair()
    env = dict(os.environ, PATH="%s:%s" % (bin_dir, os.environ["PATH"]), WEFT_KVSTORE_HEARTBEAT_TIMEOUT="10",
               WEFT_KVSTORE_CURVE_PUBLIC_KEY=public, WEFT_KVSTORE_CURVE_SECRET_KEY=secret)
    res = subprocess.run([sys.executable, LAUNCH, "-n", "2", "-s", "2", "--launcher", "ssh", "-H", str(hosts),
                          sys.executable, WORKER, "async", str(tmp_path)],
                         env=env, capture_output=True, text=True, timeout=40)
    assert res.returncode == 0, res.stdout + res.stderr
    log = (tmp_path / "ssh.log").read_text().split("\n")
    # Servers and workers go round-robin over the hosts; the scheduler runs here.
    assert sorted(l for l in log if l) == ["ssh to 127.0.0.1", "ssh to 127.0.0.1", "ssh to localhost",
                                           "ssh to localhost"]
    # The secret key reached every node (the job ran with CURVE) but no command line,
    # which every user of the remote host can read: it came through ssh's input.
    remote = (tmp_path / "remote.log").read_text()
    assert remote.count(public) == 4 and secret not in remote, remote
    np.testing.assert_allclose(np.load(tmp_path / "async-1.npy"), np.linspace(-1, 1, 10), atol=1e-3)


# ------------------------------------------------------------------ nodes played by hand

def start_nodes(tmp_path, roles, workers=1, servers=1, keys=None, uri="127.0.0.1", env=None):
    """Starts the scheduler and/or servers of a job as real processes (they run their role
    when they import weft); the test plays the other nodes through `wire`. Returns the
    scheduler's port and {role: process}."""
    port = free_port()
    base = {k: v for k, v in os.environ.items() if not k.startswith("WEFT_KVSTORE_CURVE")}
    base.update(DMLC_PS_ROOT_URI=uri, DMLC_PS_ROOT_PORT=str(port), DMLC_NUM_SERVER=str(servers),
                DMLC_NUM_WORKER=str(workers), OMP_NUM_THREADS="1", WEFT_KVSTORE_HEARTBEAT_TIMEOUT="30")
    if keys is not None:
        base.update(WEFT_KVSTORE_CURVE_PUBLIC_KEY=keys[0], WEFT_KVSTORE_CURVE_SECRET_KEY=keys[1])
    base.update(env or {})
    procs = {}
    for role in roles:
        procs[role] = subprocess.Popen([sys.executable, "-c", "import weft", str(tmp_path)],
                                       env=dict(base, DMLC_ROLE=role), stdout=subprocess.PIPE,
                                       stderr=subprocess.STDOUT, text=True, start_new_session=True)
    return port, procs


def finish(procs, timeout=30):
    """{role: (exit status, output)} once every process has ended (killed after `timeout`)."""
    out = {}
    deadline = time.monotonic() + timeout
    for role, p in procs.items():
        try:
            text, _ = p.communicate(timeout=max(1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            text, _ = p.communicate()
            text += "\n(killed by the test after %d s)" % timeout
        out[role] = (p.returncode, text)
    return out


class _Pickled(object):
    """Unpickling this runs `touch PATH`: what an attacker would send as an optimizer."""

    def __init__(self, path):
        self.path = path

    def __reduce__(self):
        return (os.system, ("touch %s" % self.path,))


def test_servers_check_every_request_and_hear_only_registered_workers(tmp_path):
    keys = wire.curve_keypair()
    port, procs = start_nodes(tmp_path, ["scheduler", "server"], keys=keys)
    marker = tmp_path / "pickle-ran"
    peers = []
    try:
        sched = wire.Peer("tcp://127.0.0.1:%d" % port, keys[0], keys)
        peers.append(sched)
        wire.register(sched)
        got = sched.recv_type(wire.ADDRESS_BOOK, timeout=30)
        assert got is not None, "no address book"
        book = wire.read_book(got[1])
        assert got[0]["head"] == 0 and list(book["workers"]) == [0] and len(book["servers"]) == 1, book
        server = wire.Peer(book["servers"][0], routing_id="W0." + book["workers"][0], password=keys[1])
        peers.append(server)
        # Someone without the job's key is refused at the connection.
        guesser = wire.Peer(book["servers"][0], routing_id="W0." + book["workers"][0],
                            password=wire.curve_keypair()[1])
        peers.append(guesser)
        guesser.send(wire.PULL, sender=0, key=1, count=4, total=4, request=1)
        assert guesser.recv(timeout=1.0) is None
        # A member of the job without a worker's token (or with a wrong one) is not heard.
        for rid in (None, "W0." + "0" * 32):
            other = wire.Peer(book["servers"][0], routing_id=rid, password=keys[1])
            peers.append(other)
            other.send(wire.PULL, sender=0, key=1, count=4, total=4, request=1)
            assert other.recv(timeout=1.0) is None

        def ask(type, payload=b"", **fields):
            server.send(type, payload, sender=0, **fields)
            answer = server.recv(timeout=10)
            assert answer is not None, "the server did not answer (did it crash?)"
            return answer[0]["type"], answer[1]

        # The forged init of issue 22: a huge count and no payload (count * 4 wraps to 0).
        kind, text = ask(wire.INIT, key=1, count=1 << 62, total=1 << 62, request=2)
        assert kind == wire.ERROR and b"elements of 4 bytes is over the limit of 2147483648 bytes" in text, text
        kind, text = ask(wire.INIT, key=1, count=1000, total=1000, request=3)
        assert kind == wire.ERROR and b"expected 4000 payload bytes, got 0" in text, text
        kind, text = ask(wire.INIT, b"\0" * 8, key=1, count=2, total=2, dtype=99, request=4)
        assert kind == wire.ERROR and b"unknown dtype code 99" in text, text
        kind, text = ask(wire.PUSH, b"\0" * 8, key=-3, count=2, total=2, request=5)
        assert kind == wire.ERROR and b"key -3 outside [0, 2^31)" in text, text
        # A pickle as the optimizer: refused, never loaded.
        kind, text = ask(wire.COMMAND, pickle.dumps(_Pickled(marker)), head=0, request=6)
        assert kind == wire.ERROR and b"command handler failed on command 0" in text, text
        # A worker's message claiming another rank is dropped.
        server.send(wire.PULL, sender=3, key=1, count=4, total=4, request=7)
        assert server.recv(timeout=1.0) is None
        # The server still serves the job, exactly.
        vals = np.arange(4, dtype=np.float32)
        assert ask(wire.INIT, vals.tobytes(), key=1, count=4, total=4, request=8)[0] == wire.ACK
        kind, text = ask(wire.INIT, vals.tobytes(), key=1, count=4, total=4, request=9)
        assert kind == wire.ERROR and b"the key is initialised already" in text, text
        assert ask(wire.PUSH, (vals * 3).tobytes(), key=1, count=4, total=4, flags=wire.FLAG_SYNC,
                   request=10)[0] == wire.ACK
        kind, data = ask(wire.PULL, key=1, count=4, total=4, flags=wire.FLAG_SYNC, request=11)
        assert kind == wire.PULL_REPLY
        np.testing.assert_array_equal(np.frombuffer(data, np.float32), vals * 3)
        # Row pulls: every claim is checked on the server; only the rows asked come back.
        rows = np.arange(12, dtype=np.float32)
        assert ask(wire.INIT, rows.tobytes(), key=2, count=12, total=12, request=12)[0] == wire.ACK

        def ids(*v):
            return np.array(v, dtype=np.int64).tobytes()
        kind, data = ask(wire.PULL_ROWS, ids(3, 1, 3), key=2, count=12, total=12, request=13)
        assert kind == wire.PULL_REPLY and np.frombuffer(data, np.float32).tolist() == [3, 4, 5, 9, 10, 11], data
        for payload, why in [(ids(3, 4), b"row id 4 at position 0 is out of range [0, 4)"),
                             (ids(3, -1), b"row id -1 at position 0 is out of range"),
                             (ids(3, 2, 1), b"row ids must be strictly increasing, got 2 then 1"),
                             (ids(5, 0), b"a row length of 5 does not divide the key's 12 elements"),
                             (ids(0, 0), b"a row length of 0"),
                             (ids(3), b"a row length and 1 to 12 row ids, got 8 bytes"),
                             (ids(3, 0)[:12], b"got 12 bytes"),
                             (ids(1, *range(13)), b"got 112 bytes")]:
            kind, text = ask(wire.PULL_ROWS, payload, key=2, count=12, total=12, request=14)
            assert kind == wire.ERROR and why in text, (why, text)
        kind, text = ask(wire.PULL_ROWS, ids(3, 0), key=2, count=6, total=12, request=15)
        assert kind == wire.ERROR and b"differs from the stored" in text, text
        kind, text = ask(wire.PULL_ROWS, ids(3, 0), key=9, count=12, total=12, request=16)
        assert kind == wire.ERROR and b"never initialised" in text, text
        # Row pushes: only the rows travel; every claim is checked before anything is written.
        def vals(*v):
            return np.array(v, dtype=np.float32).tobytes()
        for payload, fields, why in [
                (ids(3, 1, 4) + vals(1, 1, 1), {}, b"row id 4 at position 0 is out of range [0, 4)"),
                (ids(3, 2, 1, 0) + vals(*[1] * 6), {}, b"row ids must be strictly increasing, got 1 then 0"),
                (ids(5, 1, 0) + vals(*[1] * 5), {}, b"a row length of 5 does not divide the key's 12 elements"),
                (ids(3, 5, 0), {}, b"a row count of 5 does not fit a payload of 24 bytes"),
                (ids(3, -1), {}, b"a row count of -1"),
                (ids(3, 1, 0) + vals(1, 1), {}, b"expected 36 payload bytes for 1 rows, got 32"),
                (ids(3), {}, b"expected an uncompressed payload of 16 to"),
                (ids(3, 1, 0) + vals(1, 1, 1), {"flags": wire.FLAG_SYNC | 2, "threshold": 0.5},
                 b"expected an uncompressed payload")]:
            kind, text = ask(wire.PUSH_ROWS, payload, key=2, count=12, total=12, request=17, **fields)
            assert kind == wire.ERROR and why in text, (why, text)
        # Nothing was written by the refused pushes; a valid one replaces the value (no
        # updater, one worker) with the rows and zeros elsewhere.
        kind, data = ask(wire.PULL, key=2, count=12, total=12, flags=wire.FLAG_SYNC, request=18)
        assert kind == wire.PULL_REPLY and np.frombuffer(data, np.float32).tolist() == list(range(12)), data
        assert ask(wire.PUSH_ROWS, ids(3, 2, 1, 3) + vals(1, 2, 3, 4, 5, 6), key=2, count=12, total=12,
                   flags=wire.FLAG_SYNC, request=19)[0] == wire.ACK
        kind, data = ask(wire.PULL, key=2, count=12, total=12, flags=wire.FLAG_SYNC, request=20)
        assert kind == wire.PULL_REPLY
        assert np.frombuffer(data, np.float32).tolist() == [0, 0, 0, 1, 2, 3, 0, 0, 0, 4, 5, 6], data
        sched.send(wire.EXIT, sender=0)
        outs = finish(procs)
    finally:
        for p in peers:
            p.close()
        finish(procs, timeout=5)
    assert not marker.exists(), "the pickle was loaded: it ran its command"
    for role, (rc, text) in outs.items():
        assert rc == 0, "%s: %s" % (role, text)
    log = outs["server"][1]
    assert "server: refused a connection from 127.0.0.1 (without the job's key)" in log, log
    assert "dropped a pull from 127.0.0.1, which is no registered worker" in log, log
    assert "dropped a pull from worker 0 that claims to come from worker 3" in log, log
    assert "pickled optimizers are refused" in log, log


def test_scheduler_admits_each_role_up_to_its_count_once_and_only_members(tmp_path):
    keys = wire.curve_keypair()
    # No server is started: the address book cannot go out, so every registration below
    # meets the scheduler in the same state whatever the timing.
    port, procs = start_nodes(tmp_path, ["scheduler"], workers=2, keys=keys,
                              env={"WEFT_KVSTORE_REGISTER_TIMEOUT": "4"})
    endpoint = "tcp://127.0.0.1:%d" % port
    peers = []
    try:
        stranger = wire.Peer(endpoint, keys[0], wire.curve_keypair())
        peers.append(stranger)
        wire.register(stranger, "server", "tcp://127.0.0.1:1")
        members = [wire.Peer(endpoint, keys[0], keys) for _ in range(3)]
        peers.extend(members)
        for m in members[:2]:
            wire.register(m)
            assert m.recv_type(wire.HEARTBEAT_ACK) is not None
        wire.register(members[2])
        lost = members[2].recv_type(wire.NODE_LOST)
        assert lost is not None and b"all 2 workers of the job have registered" in lost[1], lost
        wire.register(members[0])
        lost = members[0].recv_type(wire.NODE_LOST)
        assert lost is not None and b"this connection has registered already" in lost[1], lost
        wire.register(members[1], "scheduler")
        lost = members[1].recv_type(wire.NODE_LOST)
        assert lost is not None and b"the role 'scheduler' is not worker or server" in lost[1], lost
        assert stranger.recv(timeout=0.5) is None
        # The server never registers: the job fails within the registration timeout, and
        # the registered nodes are told why.
        started = time.monotonic()
        for m in members[:2]:
            lost = m.recv_type(wire.NODE_LOST, timeout=15)
            assert lost is not None and b"registration timeout" in lost[1], lost
            assert b"0 of 1 servers and 2 of 2 workers had registered" in lost[1], lost[1]
        outs = finish(procs, timeout=15)
        took = time.monotonic() - started
    finally:
        for p in peers:
            p.close()
        finish(procs, timeout=5)
    rc, log = outs["scheduler"]
    assert rc != 0 and "registration timeout: after 4 s (WEFT_KVSTORE_REGISTER_TIMEOUT)" in log, log
    assert "refused a connection from 127.0.0.1 (without the job's key)" in log, log
    assert log.count("refused a registration") == 3, log
    assert took < 10, took


def test_plaintext_only_on_loopback_unless_allowed(tmp_path):
    # Loopback without keys: the job runs (here it fails for want of a worker, in time).
    port, procs = start_nodes(tmp_path, ["scheduler", "server"], env={"WEFT_KVSTORE_REGISTER_TIMEOUT": "5"})
    outs = finish(procs, timeout=30)
    for role in ("scheduler", "server"):
        rc, log = outs[role]
        assert rc != 0 and "0 of 1 workers had registered" in log, log
        assert "plaintext" not in log, log
    # Any other address needs the keys, or an explicit, loudly logged permission.
    port, procs = start_nodes(tmp_path, ["scheduler"], uri="0.0.0.0")
    rc, log = finish(procs, timeout=20)["scheduler"]
    assert rc != 0 and "refusing to talk in plaintext over 0.0.0.0, which is not a loopback address" in log, log
    port, procs = start_nodes(tmp_path, ["scheduler"], uri="0.0.0.0",
                              env={"WEFT_KVSTORE_ALLOW_PLAINTEXT": "1", "WEFT_KVSTORE_REGISTER_TIMEOUT": "1"})
    rc, log = finish(procs, timeout=20)["scheduler"]
    assert "WARNING: talking in plaintext over 0.0.0.0 (WEFT_KVSTORE_ALLOW_PLAINTEXT=1)" in log, log
    assert rc != 0 and "registration timeout" in log, log


@pytest.mark.parametrize("what", ["barrier", "push"])
def test_a_request_nobody_answers_times_out_with_a_named_error(tmp_path, what):
    started = time.monotonic()
    rc, out = launch(["late_" + what, tmp_path], timeout=60, env={"WEFT_KVSTORE_REQUEST_TIMEOUT": "2"})
    assert rc != 0
    expected = {"barrier": "barrier timeout: the other workers did not reach the barrier within 2 s "
                           "(WEFT_KVSTORE_REQUEST_TIMEOUT)",
                "push": "did not answer the push of key 3 within 2 s (WEFT_KVSTORE_REQUEST_TIMEOUT)"}[what]
    assert expected in out, out
    # The worker that timed out leaves; the others learn it from its closed connections.
    assert "its connection closed" in out, out
    assert time.monotonic() - started < 30


# ------------------------------------------------------------------ optimizers as data

def test_every_builtin_optimizer_and_scheduler_crosses_the_wire_unchanged():
    # contrib.svrg_optimization's _SVRGOptimizer wraps another optimizer object, which the
    # wire's data description cannot hold: it is refused by name (SVRGModule updates on its
    # workers' stores); its _AssignmentOptimizer crosses like the others.
    svrg = mx.optimizer.create("_svrgoptimizer", default_optimizer="sgd")
    with pytest.raises(ValueError, match="_SVRGOptimizer.*default_optimizer"):
        optimizer_wire.describe(svrg)
    for name in sorted(set(mx.optimizer.Optimizer.opt_registry) - {"_svrgoptimizer"}):
        o = mx.optimizer.create(name, learning_rate=0.05, wd=1e-4, rescale_grad=0.5, clip_gradient=2.0,
                                param_idx2name={0: "fc_weight", 1: "fc_bias"})
        o.set_lr_mult({"fc_weight": 2.0, 1: 0.5})
        r = optimizer_wire.rebuild(optimizer_wire.describe(o))
        assert type(r) is type(o)
        assert vars(r) == vars(o), name
        assert r._get_wd(1) == 0.0 and r._get_lr(0) == pytest.approx(0.1)
    schedulers = [lr_scheduler.FactorScheduler(step=5, factor=0.9, base_lr=0.2),
                  lr_scheduler.MultiFactorScheduler(step=[10, 20], factor=0.5, base_lr=0.2),
                  lr_scheduler.PolyScheduler(100, base_lr=0.2, pwr=3, warmup_steps=5),
                  lr_scheduler.CosineScheduler(100, base_lr=0.2, final_lr=0.01)]
    for sched in schedulers:
        sched(30)  # moved on: its counters travel too
        o = mx.optimizer.SGD(momentum=0.9, lr_scheduler=sched)
        r = optimizer_wire.rebuild(optimizer_wire.describe(o))
        assert type(r.lr_scheduler) is type(sched) and vars(r.lr_scheduler) == vars(sched)
        assert [r.lr_scheduler(t) for t in (31, 60, 120)] == [sched(t) for t in (31, 60, 120)]


def test_what_cannot_be_described_as_data_is_refused_by_name():
    class Mine(mx.optimizer.SGD):
        pass

    with pytest.raises(ValueError, match="Mine cannot be sent to the servers"):
        optimizer_wire.describe(Mine())

    class Steps(lr_scheduler.LRScheduler):
        def __call__(self, n):
            return 0.1

    with pytest.raises(ValueError, match="the lr_scheduler .*Steps cannot be sent"):
        optimizer_wire.describe(mx.optimizer.SGD(lr_scheduler=Steps()))
    with pytest.raises(ValueError, match="optimizer SGD parameter 'momentum' holds .*cannot be described"):
        optimizer_wire.describe(mx.optimizer.SGD(momentum=object()))
    with pytest.raises(ValueError, match="parameter 'wd' is nan: only finite numbers"):
        optimizer_wire.describe(mx.optimizer.SGD(wd=float("nan")))
    kv = mx.kv.create("local")
    kv.set_optimizer(Mine())  # a local store runs it here: any optimizer will do


def test_malformed_optimizer_descriptions_are_refused_before_anything_is_built(tmp_path):
    good = optimizer_wire.describe(mx.optimizer.SGD(momentum=0.9))

    def edited(**change):
        import json
        d = json.loads(good)
        d.update(change)
        return json.dumps(d).encode()

    cases = [
        (pickle.dumps(_Pickled(tmp_path / "ran")), "not one .*pickled optimizers are refused"),
        (b"[" * 100000 + b"]" * 100000, "not one"),
        (edited(name="os.system"), "unknown optimizer 'os.system'"),
        (edited(params={"momentum": "0.9"}), "parameter 'momentum': expected a number .*got a text"),
        (edited(params={"shell": 1}), "unknown field\\(s\\) 'shell'"),
        (edited(state={"update": 1}), "unknown attribute 'update'"),
        (edited(state={"_index_update_count": {}}), "unknown attribute '_index_update_count'"),
        (edited(extra=1), "unknown field\\(s\\) 'extra'"),
        (edited(format="pickle"), "format 'pickle', expected"),
        (edited(lr_scheduler={"name": "LRScheduler", "params": {}}), "unknown lr_scheduler 'LRScheduler'"),
        (edited(lr_mult=[["w", [1]]]), "lr_mult: expected \\[key, number\\] pairs"),
        (good.replace(b'"wd": 0.0', b'"wd": NaN'), "NaN is not a finite number"),
        (b"x" * (optimizer_wire.MAX_BYTES + 1), "over the limit"),
    ]
    for text, why in cases:
        with pytest.raises(ValueError, match=why):
            optimizer_wire.rebuild(text)
    assert not (tmp_path / "ran").exists()
