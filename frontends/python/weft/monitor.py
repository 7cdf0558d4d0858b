"""Monitor, as MXNet 1.x's `mx.monitor.Monitor`: statistics of every value an executor
computes, collected every `interval` batches (install on executors, or Module.install_monitor)."""
import logging
import math
import re

from . import ndarray as nd

__all__ = ["Monitor"]


def _default_stat(x):
    # MXNet's default: the root mean square of the array, norm(x) / sqrt(size).
    return nd.norm(x) / math.sqrt(max(x.size, 1))


def _text(value):
    if not isinstance(value, nd.NDArray):
        return str(value)
    return str(value.asscalar()) if value.size == 1 else str(value.asnumpy())


class Monitor:
    """Collects stat_func(value) for the values whose names match `pattern`, on the batches
    where tic() activates it (every `interval`-th); toc() returns them."""

    def __init__(self, interval, stat_func=None, pattern=".*", sort=False, monitor_all=False):
        self.interval = interval
        self.stat_func = stat_func or _default_stat
        self.activated = False
        self.queue = []
        self.step = 0
        self.exes = []
        self.re_prog = re.compile(pattern)
        self.sort = sort
        self.monitor_all = monitor_all

    def stat_helper(self, name, array):
        """The executor's callback: queues the statistic when active and the name matches."""
        if not self.activated or not self.re_prog.match(name):
            return
        self.queue.append((self.step, name, self.stat_func(array)))

    def install(self, exe):
        exe.set_monitor_callback(self.stat_helper, self.monitor_all)
        self.exes.append(exe)

    def tic(self):
        """Starts collecting if this batch is one of every `interval`."""
        if self.step % self.interval == 0:
            self.queue = []
            self.activated = True
        self.step += 1

    def toc(self):
        """Stops collecting; returns [(step, name, statistic as text)], the executors'
        arguments included."""
        if not self.activated:
            return []
        for exe in self.exes:
            for name, array in exe.arg_dict.items():
                if self.re_prog.match(name):
                    self.queue.append((self.step, name, self.stat_func(array)))
        self.activated = False
        res = []
        queue = sorted(self.queue, key=lambda q: q[1]) if self.sort else self.queue
        for n, name, value in queue:
            values = value if isinstance(value, (list, tuple)) else [value]
            text = "\t".join(_text(v) for v in values)
            res.append((n, name, text))
        self.queue = []
        return res

    def toc_print(self):
        for n, name, text in self.toc():
            logging.info("Batch: %7d %30s %s", n, name, text)
