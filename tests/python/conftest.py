"""Session-wide settings of the Python test suite.

WEFT_TEST_CTX=gpu(0) (any context: cpu(0), gpu(1), ...) makes that context the default
context of every test, as MXNet's GPU suite does with set_default_context before rerunning
its CPU tests: operator, Gluon and Module tests that create arrays, bind executors or
initialise blocks on the default context then run on it. Unset, nothing changes.
"""
import os
import re

import pytest


def _context_from_env():
    spec = os.environ.get("WEFT_TEST_CTX", "").strip()
    if not spec:
        return None
    m = re.fullmatch(r"(cpu|gpu|cpu_pinned)(?:\((\d+)\))?", spec)
    if m is None:
        raise pytest.UsageError("WEFT_TEST_CTX: expected a context such as gpu(0) or cpu(0), got %r" % spec)
    import weft as mx
    ctx = mx.Context(m.group(1), int(m.group(2) or 0))
    if ctx.device_type == "gpu" and ctx.device_id >= mx.context.num_gpus():
        raise pytest.UsageError("WEFT_TEST_CTX=%s: this machine has %d usable GPU(s)" %
                                (spec, mx.context.num_gpus()))
    return ctx


_TEST_CTX = _context_from_env()


def pytest_report_header(config):
    return "weft default context: %s" % (_TEST_CTX if _TEST_CTX is not None else "cpu(0) (WEFT_TEST_CTX unset)")


@pytest.fixture(autouse=True)
def _weft_default_context():
    # Set again before every test: a test may change the default context and leave it so.
    if _TEST_CTX is None:
        yield
        return
    from weft.test_utils import set_default_context
    set_default_context(_TEST_CTX)
    yield
