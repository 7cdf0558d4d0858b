#!/usr/bin/env python3
"""Starts a distributed Weft job: one scheduler, SERVERS servers and WORKERS workers, all
running the same command with MXNet's DMLC_* environment (a server or scheduler process
runs its role when it imports weft, then exits).

    tools/launch.py -n 2 -s 2 python3 train.py --epochs 3
    tools/launch.py -n 4 -s 2 --launcher ssh -H hosts.txt python3 train.py

Every line a process prints is forwarded with its role and rank ("[worker 1] ...").
Each job gets its own CURVE key pair (from libzmq), handed to the processes it starts in
WEFT_KVSTORE_CURVE_PUBLIC_KEY / WEFT_KVSTORE_CURVE_SECRET_KEY (over ssh the secret goes
through the connection's input, not the command line): only holders of the secret key
can join the job, and all traffic is encrypted. Keys already set in launch.py's own
environment are used instead. `launch.py --print-keys` prints a fresh pair for other
launchers (Kubernetes operators, schedulers) to put in every node's environment.
The exit status is 0 when every process succeeded, else the first failure's status (or 1).
When one process fails, the others are given --grace seconds to end by themselves (they
do: the scheduler tells them which node was lost) before they are killed. Interrupted
(Ctrl-C, SIGTERM or SIGHUP), the launcher passes SIGTERM on to every process it started,
waits for them and exits with 128 + the signal's number; only a launcher killed outright
(SIGKILL) leaves the job to end by itself, as each node does once it loses the scheduler.
"""
import argparse
import ctypes
import ctypes.util
import os
import shlex
import signal
import socket
import subprocess
import sys
import threading
import time


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def local_ip_towards(host):
    """The address of this machine that `host` can reach (for the scheduler under ssh)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        try:
            s.connect((host, 9))
            return s.getsockname()[0]
        except OSError:
            return "127.0.0.1"


KEY_VARS = ("WEFT_KVSTORE_CURVE_PUBLIC_KEY", "WEFT_KVSTORE_CURVE_SECRET_KEY")


def job_keys():
    """The job's CURVE key pair (public, secret) as Z85 text: the caller's when both are
    in the environment, else a new one from libzmq's zmq_curve_keypair."""
    given = [os.environ.get(v, "") for v in KEY_VARS]
    if all(given):
        return tuple(given)
    if any(given):
        raise SystemExit("launch.py: only one of %s and %s is set; set both, or neither for a new pair" % KEY_VARS)
    lib = ctypes.CDLL(ctypes.util.find_library("zmq") or "libzmq.so.5")
    public, secret = ctypes.create_string_buffer(41), ctypes.create_string_buffer(41)
    if lib.zmq_curve_keypair(public, secret) != 0:
        raise SystemExit("launch.py: this libzmq cannot make CURVE keys (built without CURVE support), so the "
                         "job cannot be authenticated; install a libzmq with CURVE (Debian's has it)")
    return public.value.decode(), secret.value.decode()


def read_hosts(path):
    hosts = []
    with open(path) as f:
        for line in f:
            line = line.split("#", 1)[0].strip()
            if line:
                hosts.append(line)
    if not hosts:
        raise SystemExit("launch.py: the host file %s lists no host" % path)
    return hosts


def forward(stream, prefix, out, lock):
    for raw in iter(stream.readline, b""):
        line = raw.decode(errors="replace").rstrip("\n")
        with lock:
            out.write("[%s] %s\n" % (prefix, line))
            out.flush()
    stream.close()


STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


class Interrupted(Exception):
    def __init__(self, signum):
        super().__init__(signum)
        self.signum = signum


def interrupted(signum, frame):
    raise Interrupted(signum)


def start(args, roles, base, hosts, public_key, secret_key, lock, procs):
    """Starts every node, appending (prefix, Popen, forwarding thread) to procs as it goes."""
    for k, (role, rank) in enumerate(roles):
        env_vars = dict(base, DMLC_ROLE=role)
        stdin = None
        if hosts and role != "scheduler":
            host = hosts[(k - 1) % len(hosts)]
            env_vars["DMLC_NODE_HOST"] = host
            env_vars[KEY_VARS[0]] = public_key
            exports = " ".join("%s=%s" % (key, shlex.quote(v)) for key, v in env_vars.items())
            # The secret key comes as the first line of the input, so that no command line
            # (visible to every user of the remote host) carries it.
            remote = "cd %s && IFS= read -r %s && export %s && env %s %s" % (
                shlex.quote(os.getcwd()), KEY_VARS[1], KEY_VARS[1], exports,
                " ".join(shlex.quote(c) for c in args.command))
            cmd = ["ssh", "-o", "StrictHostKeyChecking=no", "-o", "BatchMode=yes", host, remote]
            env = os.environ.copy()
            stdin = subprocess.PIPE
        else:
            cmd = args.command
            env = dict(os.environ, **env_vars)
            env.update(zip(KEY_VARS, (public_key, secret_key)))
        proc = subprocess.Popen(cmd, env=env, stdin=stdin, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                start_new_session=True)
        if stdin is not None:
            proc.stdin.write((secret_key + "\n").encode())
            proc.stdin.close()
        prefix = role if role == "scheduler" else "%s %d" % (role, rank)
        t = threading.Thread(target=forward, args=(proc.stdout, prefix, sys.stdout, lock), daemon=True)
        t.start()
        procs.append((prefix, proc, t))


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("-n", "--num-workers", type=int, help="number of worker processes (required)")
    p.add_argument("-s", "--num-servers", type=int, default=None, help="number of servers (default: workers)")
    p.add_argument("--launcher", choices=["local", "ssh"], default="local")
    p.add_argument("-H", "--hostfile", help="ssh: a file with one host a line; nodes go round-robin")
    p.add_argument("--port", type=int, default=0, help="the scheduler's port (default: a free one)")
    p.add_argument("--grace", type=float, default=30.0,
                   help="seconds the others get to end by themselves after a failure")
    p.add_argument("--print-keys", action="store_true",
                   help="print a new CURVE key pair as VAR=VALUE lines for another launcher, and exit")
    p.add_argument("command", nargs=argparse.REMAINDER, help="the command every process runs")
    args = p.parse_args(argv)
    if args.print_keys:
        for var, value in zip(KEY_VARS, job_keys()):
            print("%s=%s" % (var, value))
        return 0
    if args.num_workers is None:
        p.error("-n/--num-workers is required")
    if not args.command:
        p.error("a command to run is required")
    if args.num_workers < 1:
        p.error("-n must be >= 1, got %d" % args.num_workers)
    servers = args.num_servers if args.num_servers is not None else args.num_workers
    if servers < 1:
        p.error("-s must be >= 1, got %d" % servers)
    if args.launcher == "ssh" and not args.hostfile:
        p.error("--launcher ssh needs -H HOSTFILE")

    hosts = read_hosts(args.hostfile) if args.launcher == "ssh" else None
    root = local_ip_towards(hosts[0]) if hosts else "127.0.0.1"
    port = args.port or free_port()
    public_key, secret_key = job_keys()
    base = {
        "DMLC_PS_ROOT_URI": root,
        "DMLC_PS_ROOT_PORT": str(port),
        "DMLC_NUM_SERVER": str(servers),
        "DMLC_NUM_WORKER": str(args.num_workers),
    }
    # Each node runs in a session of its own (a terminal's Ctrl-C reaches the launcher
    # only), so the launcher must end them itself when it is told to stop.
    for signum in STOP_SIGNALS:
        signal.signal(signum, interrupted)
    roles = [("scheduler", 0)] + [("server", i) for i in range(servers)] + \
            [("worker", i) for i in range(args.num_workers)]
    lock = threading.Lock()
    procs = []
    status = 0
    failed_at = None
    try:
        start(args, roles, base, hosts, public_key, secret_key, lock, procs)
        while True:
            running = 0
            for prefix, proc, _ in procs:
                rc = proc.poll()
                if rc is None:
                    running += 1
                elif rc != 0 and status == 0:
                    status = rc if rc > 0 else 1
                    failed_at = time.monotonic()
                    with lock:
                        sys.stderr.write("launch.py: %s exited with status %d\n" % (prefix, rc))
            if running == 0:
                break
            if failed_at is not None and time.monotonic() - failed_at > args.grace:
                for prefix, proc, _ in procs:
                    if proc.poll() is None:
                        with lock:
                            sys.stderr.write("launch.py: killing %s (still running %.0f s after a failure)\n"
                                             % (prefix, args.grace))
                        os.killpg(proc.pid, signal.SIGKILL)
            time.sleep(0.05)
    except Interrupted as e:
        for signum in STOP_SIGNALS:  # a second signal must not cut the wait below short
            signal.signal(signum, signal.SIG_IGN)
        for _, proc, _ in procs:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
        status = 128 + e.signum
    for _, proc, t in procs:
        proc.wait()
        t.join(timeout=5)
    return status


if __name__ == "__main__":
    sys.exit(main())
