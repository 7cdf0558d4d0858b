"""The host-memory pool's bound on the freed blocks it keeps (WEFT_STORAGE_POOL_LIMIT_MB).

Each case runs in its own process: the limit is read when the first array is allocated."""
import os
import subprocess
import sys

import pytest

MB = 1 << 20


def _run(code, **env_vars):
    env = {k: v for k, v in os.environ.items() if k not in ("WEFT_STORAGE_POOL", "WEFT_STORAGE_POOL_LIMIT_MB")}
    env.update(env_vars)
    return subprocess.run([sys.executable, "-c", code], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          text=True, timeout=120)


_CYCLE = """
import weft as mx
c = mx.cpu()
def cycle(sizes):
    arrs = [mx.nd.ones((n,)) for n in sizes]
    mx.nd.waitall()
    del arrs
    mx.nd.waitall()
"""


def test_pool_keeps_no_more_than_its_limit_and_drops_the_largest_blocks_first():
    code = _CYCLE + """
cycle([4 << 20, 6 << 20, 8 << 20, 10 << 20])   # float32: 16, 24, 32 and 40 MiB
pooled = c.memory_stat('bytes_pooled')
os_allocs = c.memory_stat('num_os_allocs')
# 16 + 24 fit in 64 MiB; 40 and 32 MiB, the largest, went back to the OS
print(pooled >> 20)
b = mx.nd.ones((6 << 20,)); b.wait_to_read()
print(c.memory_stat('num_os_allocs') - os_allocs)
"""
    run = _run(code, WEFT_STORAGE_POOL_LIMIT_MB="64")
    assert run.returncode == 0, run.stderr
    pooled_mb, new_os_allocs = (int(v) for v in run.stdout.split())
    assert pooled_mb == 40
    assert new_os_allocs == 0  # the cached 24 MiB block was reused


def test_changing_sizes_do_not_grow_the_cache_past_the_limit():
    # A process whose array sizes change (one model after another) kept every size it had
    # ever freed, until the OS killed it.
    code = _CYCLE + """
peak = 0
for step in range(12):
    cycle([(5 + step) << 20, (17 + step) << 20])
    peak = max(peak, c.memory_stat('bytes_pooled'))
print(peak >> 20)
"""
    run = _run(code, WEFT_STORAGE_POOL_LIMIT_MB="200")
    assert run.returncode == 0, run.stderr
    peak_mb = int(run.stdout)
    assert 100 < peak_mb <= 200
    unbounded = _run(code, WEFT_STORAGE_POOL_LIMIT_MB=str(1 << 20))
    assert unbounded.returncode == 0, unbounded.stderr
    assert int(unbounded.stdout) > 400  # what the same loop kept without a limit (600 MiB)


def test_a_zero_limit_keeps_nothing():
    code = _CYCLE + """
cycle([1000, 1 << 20])
print(c.memory_stat('bytes_pooled'), c.memory_stat('bytes_in_use'))
"""
    run = _run(code, WEFT_STORAGE_POOL_LIMIT_MB="0")
    assert run.returncode == 0, run.stderr
    assert run.stdout.split()[0] == "0"


@pytest.mark.parametrize("value", ["abc", "-5", "12MB", "1e3"])
def test_a_bad_limit_is_a_clear_error(value):
    code = """
import weft as mx
try:
    mx.nd.zeros((3,)).wait_to_read()
except mx.base.MXNetError as e:
    print(type(e).__name__, e)
"""
    run = _run(code, WEFT_STORAGE_POOL_LIMIT_MB=value)
    assert run.returncode == 0, run.stderr
    assert "WEFT_STORAGE_POOL_LIMIT_MB: expected a whole number of MiB, got '%s'" % value in run.stdout
    assert run.stdout.startswith("WeftValueError")
