"""The int8 layers on CPUs without VNNI (AVX2: Zen 3, older Intel), checked on any x86 CPU by
capping oneDNN at AVX2 in a child process (ONEDNN_MAX_CPU_ISA is read once, when oneDNN
starts). Without VNNI oneDNN adds pairs of u8 x s8 products in int16, which saturates with
full-range weights; the int8 products must still give the integers numpy gives."""
import os
import subprocess
import sys
import textwrap

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))

# Full-range data and weights, sizes where oneDNN's JIT kernels run (channels and inputs in
# multiples of its blocks), padded borders, both layouts, s8 and u8 data.
EXACT_PRODUCTS = textwrap.dedent("""
    import numpy as np
    import weft as mx

    rng = np.random.RandomState(7)
    one = lambda v: mx.nd.array([v])

    def data(dtype, shape):
        lo, hi = (-127, 128) if dtype == "int8" else (0, 256)
        return rng.randint(lo, hi, shape).astype(dtype)

    def conv_ref(x, w, pad):
        x, w = x.astype(np.int64), w.astype(np.int64)
        xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
        k, oh, ow = w.shape[2], x.shape[2] + 2 * pad - w.shape[2] + 1, x.shape[3] + 2 * pad - w.shape[3] + 1
        y = np.zeros((x.shape[0], w.shape[0], oh, ow), np.int64)
        for i in range(k):
            for j in range(k):
                y += np.einsum("nchw,fc->nfhw", xp[:, :, i:i + oh, j:j + ow], w[:, :, i, j])
        return y

    checked = 0
    for dtype in ("int8", "uint8"):
        lo = -1.0 if dtype == "int8" else 0.0
        for c, f, pad in ((16, 32, 1), (32, 16, 0), (3, 8, 1)):
            x, w = data(dtype, (2, c, 7, 6)), data("int8", (f, c, 3, 3))
            ref = conv_ref(x, w, pad)
            for layout in ("NCHW", "NHWC"):
                xs, ws = (x, w) if layout == "NCHW" else (x.transpose(0, 2, 3, 1), w.transpose(0, 2, 3, 1))
                y = mx.nd.contrib.quantized_conv(mx.nd.array(xs, dtype=dtype), mx.nd.array(ws, dtype="int8"),
                                                 one(lo), one(1.0), one(-1.0), one(1.0), num_filter=f,
                                                 kernel=(3, 3), pad=(pad, pad), no_bias=True, layout=layout)[0]
                got = y.asnumpy() if layout == "NCHW" else y.asnumpy().transpose(0, 3, 1, 2)
                assert np.array_equal(got, ref), (dtype, c, f, pad, layout, np.abs(got - ref).max())
                checked += 1
        for m, k, n in ((4, 64, 32), (96, 8, 24)):
            x, w = data(dtype, (m, k)), data("int8", (n, k))
            y = mx.nd.contrib.quantized_fully_connected(mx.nd.array(x, dtype=dtype), mx.nd.array(w, dtype="int8"),
                                                        one(lo), one(1.0), one(-1.0), one(1.0), num_hidden=n,
                                                        no_bias=True)[0].asnumpy()
            ref = x.astype(np.int64) @ w.astype(np.int64).T
            assert np.array_equal(y, ref), (dtype, m, k, n, np.abs(y - ref).max())
            checked += 1
    print("checked", checked)
""")


def _capped(args, isa="AVX2", verbose=False):
    env = dict(os.environ)
    env.pop("DNNL_MAX_CPU_ISA", None)
    env.pop("DNNL_VERBOSE", None)
    env["ONEDNN_MAX_CPU_ISA"] = isa
    env["ONEDNN_VERBOSE"] = "1" if verbose else "0"
    return subprocess.run([sys.executable] + args, env=env, capture_output=True, text=True, timeout=600, cwd=HERE)


def test_int8_conv_and_fc_exact_under_avx2():
    proc = _capped(["-c", EXACT_PRODUCTS], verbose=True)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-3000:]
    assert "checked 16" in proc.stdout
    # The cap took effect: oneDNN ran AVX2 kernels, none with VNNI.
    runs = [ln for ln in proc.stdout.splitlines() if ln.startswith("onednn_verbose,exec,cpu,")]
    assert any("avx2" in ln for ln in runs), runs[:5]
    assert not any("vnni" in ln for ln in runs), [ln for ln in runs if "vnni" in ln][:3]


@pytest.mark.parametrize("tests", [
    # The int8 LSTM against its integer reference and the float LSTM, and the quantization pass on it.
    ["test_quantized_rnn.py"],
    # The MKLDNN_QUANTIZE folds (fused requantize / float output) against the unfused graph and float32.
    ["test_mkldnn_quantize.py"],
    # The quantized conv and FC: exact int32, fused requantize, sum and relu, channel-wise, NHWC.
    ["test_contrib_quantized_ops.py", "-k", "conv or fully_connected"],
    # MXNet's oneDNN subgraph nodes in their int8 form: exact int32 against numpy, results against float32.
    ["test_sg_mkldnn_int8.py"],
])
def test_int8_suites_under_avx2(tests):
    proc = _capped(["-m", "pytest", "-q", "-p", "no:cacheprovider"] + tests)
    assert proc.returncode == 0, proc.stdout[-4000:]
    assert " passed" in proc.stdout and "failed" not in proc.stdout
