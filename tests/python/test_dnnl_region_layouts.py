"""Which oneDNN primitives the inference regions pick, and that each choice computes what
the graph means: Winograd for 3x3 stride-1 convolutions at every batch size where oneDNN has
it (AVX-512; off with WEFT_CONV_WINOGRAD=0), oneDNN's own layout (nhwc on AVX-512) for strided convolutions with
a window, the CPU's blocked layout elsewhere (nChw16c with AVX-512, nChw8c on AVX2), with
reorders only where two layouts meet. The executor's
debug_str lists every primitive of a region under its "oneDNN region" line."""
import os
import subprocess
import sys

import numpy as np
import pytest

import weft as mx

from test_dnnl_region import bind, conv_bn, copy_params, fill, outputs, pair, assert_same, bottleneck

sym = mx.sym


def primitives(ex):
    """The primitive lines of every region: {node name: [what it runs, ...]}."""
    lines = ex.debug_str().splitlines()
    out = {}
    for i, line in enumerate(lines):
        if line.startswith("  ") and i and (lines[i - 1].startswith("oneDNN region") or lines[i - 1].startswith("  ")):
            name, what = line.strip().split(": ", 1)
            out.setdefault(name, []).append(what)
    return out


def avx512(prims):
    return any("avx512_core" in w for ws in prims.values() for w in ws)


def winograd_on():
    return os.environ.get("WEFT_CONV_WINOGRAD") != "0"


def conv_ref(x, w, stride, pad):
    """Cross-correlation in float64 (NCHW, OIHW weights)."""
    n, c, h, wd = x.shape
    f, _, kh, kw = w.shape
    xp = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    oh, ow = (h + 2 * pad - kh) // stride + 1, (wd + 2 * pad - kw) // stride + 1
    y = np.zeros((n, f, oh, ow))
    for a in range(kh):
        for b in range(kw):
            win = xp[:, :, a:a + stride * (oh - 1) + 1:stride, b:b + stride * (ow - 1) + 1:stride]
            y += np.einsum("nchw,fc->nfhw", win, w[:, :, a, b].astype(np.float64))
    return y


def bn_relu_ref(y, ex, name, relu=True):
    g = ex.arg_dict[name + "_bn_gamma"].asnumpy().astype(np.float64)[None, :, None, None]
    b = ex.arg_dict[name + "_bn_beta"].asnumpy().astype(np.float64)[None, :, None, None]
    m = ex.aux_dict[name + "_bn_moving_mean"].asnumpy().astype(np.float64)[None, :, None, None]
    v = ex.aux_dict[name + "_bn_moving_var"].asnumpy().astype(np.float64)[None, :, None, None]
    y = (y - m) / np.sqrt(v + 2e-5) * g + b
    return np.maximum(y, 0) if relu else y


def two_convs(stride):
    # a 1x1 convolution, then a 3x3 one with the given stride, both with BatchNorm + relu
    x = conv_bn(sym.Variable("data"), "a", 16, (1, 1))
    return conv_bn(x, "b", 32, (3, 3), (stride, stride), (1, 1))


def reference(ex, stride):
    x = ex.arg_dict["data"].asnumpy()
    a = bn_relu_ref(conv_ref(x, ex.arg_dict["a_weight"].asnumpy(), 1, 0), ex, "a")
    return bn_relu_ref(conv_ref(a, ex.arg_dict["b_weight"].asnumpy(), stride, 1), ex, "b")


def assert_close_to(y, ref):
    scale = float(np.abs(ref).max())
    assert scale > 1.0
    np.testing.assert_allclose(y, ref, rtol=1e-4, atol=1e-4 * scale)


# Batch 1 and 2 too: there oneDNN's F(2x2, 3x3) and F(4x4, 3x3) kernels on the blocked
# layout beat its direct ones on nhwc for ResNet's 3x3 layers.
@pytest.mark.parametrize("batch,hw", [(1, (12, 12)), (2, (9, 13)), (4, (12, 12)), (6, (9, 13))])
def test_winograd_in_a_region_matches_the_float64_reference(batch, hw):
    fused, plain = pair(two_convs(1), (batch, 8) + hw, seed=20)
    prims = primitives(fused)
    assert [w.split()[0] for w in prims["b"]][-2:] == ["convolution", "reorder"]
    if avx512(prims) and winograd_on():
        assert "wino" in prims["b"][-2].split()[1], prims["b"]
        # the 1x1 convolution writes nChw16c, which the Winograd kernel reads as it is
        assert prims["a"] == ["convolution jit_1x1:avx512_core nchw -> nChw16c"] or \
            prims["a"][-1].endswith("-> nChw16c")
        assert not any(w.startswith("reorder") for w in prims["b"][:-1])
    ref = reference(fused, 1)
    assert_close_to(outputs(fused)[0], ref)
    assert_close_to(outputs(plain)[0], ref)


@pytest.mark.parametrize("batch", [1, 5])
def test_strided_3x3_convolution_matches_the_float64_reference(batch):
    fused, plain = pair(two_convs(2), (batch, 8, 15, 14), seed=21)
    prims = primitives(fused)
    conv = [w for w in prims["b"] if w.startswith("convolution")]
    assert len(conv) == 1
    if avx512(prims):
        # oneDNN's brgconv on nhwc; from batch 4 the nChw16c source is reordered in, the
        # result out. Below, a region with no convolution for Winograd keeps nhwc
        # throughout (no reorder between the two convolutions).
        assert "nhwc -> nhwc" in conv[0] and "brgconv" in conv[0]
        if batch >= 4:
            assert prims["b"][0] == "reorder nChw16c -> nhwc (an operand)"
        else:
            assert prims["a"][-1].endswith("-> nhwc") and not any(w.startswith("reorder") for w in prims["b"][:-1])
    assert_close_to(outputs(fused)[0], reference(fused, 2))
    assert_same(fused, plain)


def test_stride_2_bottleneck_at_batch_4_matches_the_operators_alone():
    # ResNet's downsampling unit with 16-channel multiples, as the blocked layouts need.
    x = conv_bn(sym.Variable("data"), "stem", 64, (3, 3), (1, 1), (1, 1))
    x = bottleneck(x, "u0", 32, (2, 2), True)
    x = bottleneck(x, "u1", 32, (1, 1), False)
    fused, plain = pair(x, (4, 3, 14, 14), seed=22)
    prims = primitives(fused)
    assert set(prims) >= {"stem", "u0_c1", "u0_c2", "u0_c3", "u0_sc", "u1_c1", "u1_c2", "u1_c3"}
    if avx512(prims):
        assert "jit_wino" in prims["u1_c2"][-1]
        assert any("nhwc -> nhwc" in w for w in prims["u0_c2"])
    assert_same(fused, plain)


def test_no_region_convolution_falls_back_to_onednns_reference_kernel():
    # The blocked layout must be the one this CPU's kernels use (nChw16c with AVX-512,
    # nChw8c on AVX2); forcing the other leaves oneDNN only its reference convolution.
    x = conv_bn(sym.Variable("data"), "stem", 32, (3, 3), (1, 1), (1, 1))
    x = bottleneck(x, "u0", 16, (2, 2), True)
    x = bottleneck(x, "u1", 16, (1, 1), False)
    fused, plain = pair(x, (8, 16, 12, 12), seed=25)
    convs = [w for ws in primitives(fused).values() for w in ws if w.startswith("convolution")]
    assert len(convs) >= 8
    assert not any(w.split()[1].startswith("ref") for w in convs), convs
    block = "nChw16c" if avx512(primitives(fused)) else "nChw8c"
    assert any(w.endswith("-> " + block) for w in convs), convs
    assert_same(fused, plain)


def test_debug_str_lists_each_primitive_under_its_region():
    fused, _ = pair(two_convs(1), (1, 8, 6, 6), seed=23)
    text = fused.debug_str()
    head = text.index("oneDNN region dnnl_region_a: 6 nodes")
    lines = [ln for ln in text[head:].splitlines()[1:] if ln.startswith("  ")]
    # a's convolution (BatchNorm and relu folded in), b's, then the copy of b out to NCHW;
    # reorders of an operand (here the input, into oneDNN's layout) come before their user
    convs = [ln.strip() for ln in lines if " convolution " in ln]
    assert [c.split(":")[0] for c in convs] == ["a", "b"]
    assert all(" -> " in ln for ln in lines)
    assert lines[-1].strip().startswith("b: reorder ") and lines[-1].endswith("-> nchw (output 0)")
    assert len(lines) == 3 + sum(" (an operand)" in ln for ln in lines)


def test_winograd_switch_turns_it_off_in_regions():
    # The switch is read once per process, so the check runs in a fresh one.
    code = "\n".join([
        "import numpy as np, sys",
        "sys.path.insert(0, %r)" % os.path.dirname(os.path.abspath(__file__)),
        "from test_dnnl_region_layouts import two_convs, pair, primitives, reference, outputs, assert_close_to",
        "fused, plain = pair(two_convs(1), (4, 8, 10, 10), seed=24)",
        "prims = primitives(fused)",
        "assert prims['b'] and not any('wino' in w for w in prims['b']), prims['b']",
        "assert_close_to(outputs(fused)[0], reference(fused, 1))",
        "print('ok')",
    ])
    env = dict(os.environ, WEFT_CONV_WINOGRAD="0")
    run = subprocess.run([sys.executable, "-c", code], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True)
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip().endswith("ok")


def test_batch_1_without_winograd_keeps_onednns_layout():
    # Below batch 4 the blocked layout pays only with Winograd: with the switch off, the
    # convolutions take the layout oneDNN picks (nhwc for brgconv with AVX-512) and no
    # reorder separates them. The switch is read once per process: a fresh one.
    code = "\n".join([
        "import numpy as np, sys",
        "sys.path.insert(0, %r)" % os.path.dirname(os.path.abspath(__file__)),
        "from test_dnnl_region_layouts import two_convs, pair, primitives, reference, outputs, assert_close_to, avx512",
        "from test_dnnl_region import assert_same",
        "fused, plain = pair(two_convs(1), (1, 8, 10, 10), seed=27)",
        "prims = primitives(fused)",
        "assert not any('wino' in w for ws in prims.values() for w in ws), prims",
        "if avx512(prims):",
        "    assert prims['b'][0] == 'convolution brgconv:avx512_core nhwc -> nhwc', prims['b']",
        "    assert prims['a'][-1].endswith('-> nhwc'), prims['a']",
        "assert_close_to(outputs(fused)[0], reference(fused, 1))",
        "assert_same(fused, plain)",
        "print('ok')",
    ])
    env = dict(os.environ, WEFT_CONV_WINOGRAD="0")
    run = subprocess.run([sys.executable, "-c", code], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True)
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip().endswith("ok")


@pytest.mark.parametrize("pool", ["avg", "max"])
def test_pooling_of_a_region_input_runs_blocked(pool):
    # Inception's pooling branch: a pooling reads the region's plain NCHW input (a concat's
    # result). It takes the input reordered into the blocked layout: on plain NCHW oneDNN
    # has only its reference kernel on AVX2.
    p = sym.Pooling(sym.Variable("data"), pool_type=pool, kernel=(3, 3), stride=(1, 1), pad=(1, 1), name="pool")
    fused, plain = pair(conv_bn(p, "proj", 16, (1, 1)), (4, 16, 9, 9), seed=26)
    prims = primitives(fused)
    pooling = [w for w in prims["pool"] if w.startswith("pooling")]
    assert len(pooling) == 1 and not pooling[0].split()[1].startswith(("ref", "simple")), prims["pool"]
    block = "nChw16c" if avx512(prims) else "nChw8c"
    assert prims["pool"][0] == "reorder nchw -> %s (an operand)" % block, prims["pool"]
    assert_same(fused, plain)
