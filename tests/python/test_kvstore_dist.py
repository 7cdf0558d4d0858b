"""The distributed key-value store with real processes on loopback: 1 scheduler, 2 servers
and 2 workers started by tools/launch.py running tests/dist/kv_worker.py. Every job is
bounded in time and uses a free port."""
import os
import signal
import subprocess
import sys
import threading
import time

import ctypes
import socket

import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LAUNCH = os.path.join(ROOT, "tools", "launch.py")
WORKER = os.path.join(ROOT, "tests", "dist", "kv_worker.py")


def launch(args, workers=2, servers=2, timeout=40, heartbeat=10, wait=True, port=0, env=None):
    env = dict(os.environ, WEFT_KVSTORE_HEARTBEAT_TIMEOUT=str(heartbeat), OMP_NUM_THREADS="1", **(env or {}))
    cmd = [sys.executable, LAUNCH, "-n", str(workers), "-s", str(servers), "--grace", "20", "--port", str(port),
           sys.executable, WORKER] + [str(a) for a in args]
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            start_new_session=True)
    if not wait:
        return proc
    try:
        out, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, _ = proc.communicate()
        pytest.fail("the job did not end within %d s:\n%s" % (timeout, out))
    return proc.returncode, out


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


def test_killing_a_worker_ends_the_job_with_an_error_naming_it(tmp_path):
    proc = launch(["kill", tmp_path], heartbeat=2, wait=False)
    try:
        pid_file = tmp_path / "pid-1"
        deadline = time.monotonic() + 30
        while not pid_file.exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert pid_file.exists(), "worker 1 never started"
        time.sleep(0.5)
        os.kill(int(pid_file.read_text()), signal.SIGKILL)
        killed_at = time.monotonic()
        out, _ = proc.communicate(timeout=20)
        took = time.monotonic() - killed_at
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
    assert proc.returncode != 0
    # The scheduler names the lost worker, and every other process exits with that error.
    assert "lost worker 1" in out, out
    for role in ("scheduler", "server 0", "server 1", "worker"):
        assert any(line.startswith("[%s" % role) and "lost worker 1" in line for line in out.splitlines()), out
    assert "killing" not in out, out  # nobody had to be killed by the launcher
    assert took < 2 + 2 + 4, "the job took %.1f s to end after the kill" % took
    assert not no_process_left(str(tmp_path))


def test_launch_reports_failure_and_bad_arguments(tmp_path):
    rc = subprocess.run([sys.executable, LAUNCH, "-n", "1", "-s", "1", sys.executable, "-c",
                         "import sys; sys.exit(3)"], capture_output=True, text=True, timeout=30)
    # Without weft the scheduler and server never start a role, so they exit at once too.
    assert rc.returncode == 3, rc.stdout + rc.stderr
    bad = subprocess.run([sys.executable, LAUNCH, "-n", "0", "true"], capture_output=True, text=True, timeout=30)
    assert bad.returncode != 0 and "-n must be >= 1" in bad.stderr


class Intruder(object):
    """A raw ZeroMQ DEALER (libzmq through ctypes) aimed at the scheduler's port."""

    def __init__(self, port, curve=None):
        self.lib = lib = ctypes.CDLL("libzmq.so.5")
        lib.zmq_ctx_new.restype = ctypes.c_void_p
        lib.zmq_socket.restype = ctypes.c_void_p
        lib.zmq_socket.argtypes = [ctypes.c_void_p, ctypes.c_int]
        lib.zmq_connect.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
        lib.zmq_send.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_size_t, ctypes.c_int]
        lib.zmq_setsockopt.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_size_t]
        lib.zmq_close.argtypes = [ctypes.c_void_p]
        lib.zmq_ctx_term.argtypes = [ctypes.c_void_p]
        self.ctx = lib.zmq_ctx_new()
        self.sock = lib.zmq_socket(self.ctx, 5)  # ZMQ_DEALER
        if curve is not None:
            server_key, public, secret = curve
            lib.zmq_setsockopt(self.sock, 50, server_key, 40)  # ZMQ_CURVE_SERVERKEY
            lib.zmq_setsockopt(self.sock, 48, public, 40)      # ZMQ_CURVE_PUBLICKEY
            lib.zmq_setsockopt(self.sock, 49, secret, 40)      # ZMQ_CURVE_SECRETKEY
        lib.zmq_connect(self.sock, b"tcp://127.0.0.1:%d" % port)

    def send(self, *frames):
        for i, f in enumerate(frames):
            self.lib.zmq_send(self.sock, f, len(f), 2 if i + 1 < len(frames) else 0)  # ZMQ_SNDMORE

    def close(self):
        self.lib.zmq_setsockopt(self.sock, 17, (0).to_bytes(4, "little"), 4)  # ZMQ_LINGER = 0
        self.lib.zmq_close(self.sock)
        self.lib.zmq_ctx_term(self.ctx)


def curve_keypair():
    lib = ctypes.CDLL("libzmq.so.5")
    public, secret = ctypes.create_string_buffer(41), ctypes.create_string_buffer(41)
    assert lib.zmq_curve_keypair(public, secret) == 0
    return public.value, secret.value


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def gated_job_with_intruder(tmp_path, args, messages, expect, curve=None, env=None):
    """Runs a job whose workers wait for a gate file, sends an intruder's messages to the
    scheduler, waits until its output shows each of `expect`, then opens the gate. The
    scheduler therefore always lives long enough to receive them: a short job left the
    intruder's reconnects (every 100-200 ms) no window on a loaded machine."""
    port = free_port()
    gate = tmp_path / "gate"
    proc = launch(args, port=port, wait=False, env=dict(env or {}, WEFT_TEST_GATE=str(gate)))
    lines = []

    def read():  # line by line, so that the loop below sees each as it comes
        for line in iter(proc.stdout.readline, ""):
            lines.append(line)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    intruder = Intruder(port, curve=curve)
    try:
        for m in messages:
            intruder.send(m)
        deadline = time.monotonic() + 30
        while not all(any(e in l for l in list(lines)) for e in expect) and time.monotonic() < deadline:
            time.sleep(0.02)
        gate.touch()
        proc.wait(timeout=40)
        reader.join(timeout=10)
    finally:
        intruder.close()
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    return proc.returncode, "".join(lines)


def test_malformed_messages_are_dropped_and_logged(tmp_path):
    header = bytearray(80)
    header[0:4] = (0x4B564657).to_bytes(4, "little")
    header[4:6] = (1).to_bytes(2, "little")
    header[6:8] = (3).to_bytes(2, "little")             # a heartbeat...
    header[72:80] = (100).to_bytes(8, "little")         # ...announcing a missing payload
    expect = ["dropped a malformed message: header of 3 bytes",
              "dropped a malformed message: bad magic number",
              "announces 100 payload bytes, the message has 0"]
    rc, out = gated_job_with_intruder(tmp_path, ["async", tmp_path],
                                      [b"xyz", b"\0" * 80, bytes(header)], expect)  # no header; bad magic
    assert rc == 0, out
    for e in expect:
        assert e in out, out
    np.testing.assert_allclose(np.load(tmp_path / "async-0.npy"), np.linspace(-1, 1, 10), atol=1e-3)


def test_curve_authentication_admits_the_job_and_refuses_others(tmp_path):
    public, secret = curve_keypair()
    keys = {"WEFT_KVSTORE_CURVE_PUBLIC_KEY": public.decode(), "WEFT_KVSTORE_CURVE_SECRET_KEY": secret.decode()}
    other_public, other_secret = curve_keypair()
    refused = "scheduler: refused a connection from 127.0.0.1 (not the job's CURVE key)"
    rc, out = gated_job_with_intruder(tmp_path, ["sync", tmp_path], [b"\0" * 80], [refused],
                                      curve=(public, other_public, other_secret), env=keys)
    assert rc == 0, out
    assert refused in out, out
    # The intruder's message never reached the scheduler's loop.
    assert "malformed" not in out, out
    g = np.load(tmp_path / "sync-0.npz")
    np.testing.assert_array_equal(g["small2"], np.full((3, 4), 9.0))
    bad = launch(["sync", tmp_path], env={"WEFT_KVSTORE_CURVE_PUBLIC_KEY": public.decode()}, timeout=30)
    assert bad[0] != 0 and "CURVE needs both" in bad[1], bad[1]


def test_ssh_launcher_runs_each_node_through_ssh(tmp_path):
    # A stand-in for ssh that runs the remote command here, as `ssh host command` would
    # there: what is checked is the command line and environment launch.py builds.
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "ssh"
    fake.write_text('#!/bin/sh\nwhile [ "$1" = "-o" ]; do shift 2; done\n'
                    'echo "ssh to $1" >> "%s"\nshift\nexec sh -c "$1"\n' % (tmp_path / "ssh.log"))
    fake.chmod(0o755)
    hosts = tmp_path / "hosts"
    hosts.write_text("# two names for this machine\n127.0.0.1\nlocalhost\n")
    env = dict(os.environ, PATH="%s:%s" % (bin_dir, os.environ["PATH"]), WEFT_KVSTORE_HEARTBEAT_TIMEOUT="10")
    res = subprocess.run([sys.executable, LAUNCH, "-n", "2", "-s", "2", "--launcher", "ssh", "-H", str(hosts),
                          sys.executable, WORKER, "async", str(tmp_path)],
                         env=env, capture_output=True, text=True, timeout=40)
    assert res.returncode == 0, res.stdout + res.stderr
    log = (tmp_path / "ssh.log").read_text().split("\n")
    # Servers and workers go round-robin over the hosts; the scheduler runs here.
    assert sorted(l for l in log if l) == ["ssh to 127.0.0.1", "ssh to 127.0.0.1", "ssh to localhost",
                                           "ssh to localhost"]
    np.testing.assert_allclose(np.load(tmp_path / "async-1.npy"), np.linspace(-1, 1, 10), atol=1e-3)
