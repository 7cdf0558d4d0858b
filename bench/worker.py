"""Long-lived worker processes for benchmarks that compare frameworks: each framework runs
in a process of its own, so that neither's thread pools, allocator or OpenMP settings slow
the other (PyTorch's threads in Weft's process cost Weft 15 % on ResNet-50 and more on small
steps), while the processes stay up between timed runs and can take turns with each other.

The parent sends one line of words, the worker answers one line. Imports neither framework."""
import os
import subprocess
import sys


class Worker:
    """A child running `script --worker <args...>`, which answers with serve()."""

    def __init__(self, script, args, env=None, drop=()):
        self.name = " ".join(args)
        full_env = {k: v for k, v in os.environ.items() if k not in drop}
        full_env.update(env or {})
        # stderr is the parent's: a worker's traceback reaches the terminal as it happens.
        self.proc = subprocess.Popen([sys.executable, os.path.abspath(script), "--worker"] + list(args),
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=full_env)

    def ask(self, *words):
        self.proc.stdin.write(" ".join(str(w) for w in words) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            code = self.proc.wait()
            sys.exit("worker '%s' exited (status %s) without answering %r" % (self.name, code, words))
        return line.split()

    def close(self):
        if self.proc.poll() is None:
            self.proc.stdin.close()
            self.proc.wait()


def serve(answer):
    """The worker's loop: answer(words) -> list of values, for each line until stdin closes."""
    for line in sys.stdin:
        words = line.split()
        # An empty line asks only whether the worker is up, its imports done (start_pair).
        print(" ".join(str(v) for v in answer(words)) if words else "ready", flush=True)


def parse_or_serve(parser, serve_framework):
    """Parses the command line of a script whose start_pair workers run the script itself
    with the hidden --worker option: in such a worker, runs serve_framework(name) until the
    parent closes it and returns None; in the parent, returns the parsed arguments."""
    import argparse
    parser.add_argument("--worker", choices=("weft", "torch"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        serve_framework(args.worker)
        return None
    return args


def start_pair(script):
    """Prints the load average and each framework's OpenMP wait policy, then starts
    `script`'s two workers: (Weft's, PyTorch's). PyTorch's starts with the peer's
    environment (peer_env.py) already set: a worker script imports numpy, and with it
    OpenBLAS, before it imports peer.py, and OpenBLAS reads its core only when it loads."""
    import peer_env
    print("load average at start: %.2f %.2f %.2f" % os.getloadavg())
    print("OMP_WAIT_POLICY for Weft: %s; PyTorch: PASSIVE" % os.environ.get("OMP_WAIT_POLICY", "(unset)"))
    print("peer: " + peer_env.BLAS_LINE)
    torch_env = dict(peer_env.environment())
    # peer.py's report goes to stderr there: the worker's stdout is the line protocol.
    torch_env["WEFT_BENCH_WORKER"] = "1"
    torch_w = Worker(script, ["torch"], torch_env, drop=("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE"))
    # Weft's worker starts only once PyTorch's is up: peer.py times its reference step while
    # it imports, and beside Weft's start (imports, thread pools) that step ran 3-30x slower.
    torch_w.ask()
    return Worker(script, ["weft"]), torch_w


def best_times(weft_w, torch_w, rounds, *command):
    """(Weft's, PyTorch's) least answer to `command` (a time, the answer's first word) over
    `rounds` rounds that alternate between the two, so that load from elsewhere on the
    machine hits both alike."""
    tw = tt = float("inf")
    for _ in range(rounds):
        tw = min(tw, float(weft_w.ask(*command)[0]))
        tt = min(tt, float(torch_w.ask(*command)[0]))
    return tw, tt
