"""The executor's training pass (oneDNN training regions): with a gradient asked for,
connected Convolution/BatchNorm/relu/add nodes run as one "_dnnl_train_region" node and its
"_backward_dnnl_train_region", keeping blocked layouts between them. Outputs, every gradient
and the moving statistics must equal the same executor built with the pass off
(WEFT_EXEC_DNNL_TRAIN_FUSE=0), which runs every operator on its own."""
import os
import subprocess
import sys

import numpy as np
import pytest

import weft as mx
from weft.base import WeftError
from test_nn_conv import HAS_AVX512_CORE

sym = mx.sym


def conv_bn(x, name, filters, kernel, stride=(1, 1), pad=(0, 0), relu=True, fix_gamma=False, bias=False,
            groups=1):
    x = sym.Convolution(x, num_filter=filters, kernel=kernel, stride=stride, pad=pad, no_bias=not bias,
                        num_group=groups, name=name)
    x = sym.BatchNorm(x, fix_gamma=fix_gamma, eps=2e-5, momentum=0.8, name=name + "_bn")
    return sym.Activation(x, act_type="relu", name=name + "_relu") if relu else x


def bottleneck(x, name, width, stride, project, fix_gamma=False, bias=False):
    y = conv_bn(x, name + "_c1", width, (1, 1), fix_gamma=fix_gamma)
    y = conv_bn(y, name + "_c2", width, (3, 3), stride, (1, 1), bias=bias)
    y = conv_bn(y, name + "_c3", width * 4, (1, 1), relu=False)
    sc = conv_bn(x, name + "_sc", width * 4, (1, 1), stride, relu=False) if project else x
    return sym.Activation(y + sc, act_type="relu", name=name + "_out")


def small_resnet(width=16, fix_gamma=False, bias=False):
    x = conv_bn(sym.Variable("data"), "stem", width, (3, 3), pad=(1, 1), bias=bias)
    x = bottleneck(x, "b1", width // 2 if width >= 32 else width, (1, 1), True, fix_gamma, bias)
    x = bottleneck(x, "b2", width // 2 if width >= 32 else width, (2, 2), True)
    x = bottleneck(x, "b3", width // 2 if width >= 32 else width, (1, 1), False)
    x = sym.Pooling(x, pool_type="avg", global_pool=True, kernel=(1, 1))
    x = sym.FullyConnected(sym.Flatten(x), num_hidden=5, name="fc")
    return sym.SoftmaxOutput(x, name="softmax")


def bind(net, shape, fuse, grad_req="write"):
    old = os.environ.get("WEFT_EXEC_DNNL_TRAIN_FUSE")
    os.environ["WEFT_EXEC_DNNL_TRAIN_FUSE"] = "1" if fuse else "0"
    try:
        return net.simple_bind(mx.cpu(), grad_req=grad_req, data=shape)
    finally:
        if old is None:
            del os.environ["WEFT_EXEC_DNNL_TRAIN_FUSE"]
        else:
            os.environ["WEFT_EXEC_DNNL_TRAIN_FUSE"] = old


def regions(ex):
    return [l for l in ex.debug_str().splitlines() if l.startswith("Op:_dnnl_train_region")]


def pair(net, shape, grad_req="write", seed=0):
    fused, plain = bind(net, shape, True, grad_req), bind(net, shape, False, grad_req)
    rng = np.random.RandomState(seed)
    for name, arr in fused.arg_dict.items():
        if name == "softmax_label":
            v = rng.randint(0, 5, arr.shape).astype(np.float32)
        else:
            v = rng.normal(0, 0.5, arr.shape).astype(np.float32)
        arr[:] = v
        plain.arg_dict[name][:] = v
    for name, arr in fused.aux_dict.items():
        v = rng.uniform(0.5, 2.0, arr.shape) if name.endswith("var") else rng.normal(0, 0.3, arr.shape)
        arr[:] = v.astype(np.float32)
        plain.aux_dict[name][:] = v.astype(np.float32)
    for ex in (fused, plain):
        for name, g in ex.grad_dict.items():
            if g is not None:
                g[:] = 0.25  # kAddTo adds onto this; kWriteTo must overwrite it
    return fused, plain


def close(a, b, what):
    scale = max(1.0, float(np.abs(b).max()))
    np.testing.assert_allclose(a, b, rtol=2e-4, atol=2e-4 * scale, err_msg=what)


def step_and_compare(fused, plain, steps=1, is_train=True):
    for _ in range(steps):
        for ex in (fused, plain):
            ex.forward(is_train=is_train)
            if is_train:
                ex.backward()
    for a, b in zip(fused.outputs, plain.outputs):
        close(a.asnumpy(), b.asnumpy(), "output")
    for name, g in plain.grad_dict.items():
        if g is not None:
            close(fused.grad_dict[name].asnumpy(), g.asnumpy(), "gradient of " + name)
    for name, a in plain.aux_dict.items():
        close(fused.aux_dict[name].asnumpy(), a.asnumpy(), name)


@pytest.mark.parametrize("batch,width", [(4, 16), (4, 32), (2, 16), (5, 8)])
def test_training_step_matches_the_operators_alone(batch, width):
    # (4, 16/32): blocked nChw16c with the region's own BatchNorm loops; batch 2 and 8
    # channels: layouts oneDNN picks, with its BatchNorm primitives.
    fused, plain = pair(small_resnet(width), (batch, 3, 12, 12))
    assert len(regions(fused)) >= 1 and regions(plain) == []
    step_and_compare(fused, plain, steps=2)


def test_convolution_with_padded_channels_stays_out():
    # 20 -> 50 channels: 32 x 64 in AVX-512's 16-channel blocks, which the operator's gemm
    # convolution avoids; 32 -> 48 fills its blocks and joins. With 8-channel blocks
    # (24 x 56) both join.
    for cin, cout in [(20, 50), (32, 48)]:
        x = sym.Convolution(sym.Variable("data"), num_filter=cout, kernel=(3, 3), pad=(1, 1), name="c")
        net = sym.Activation(sym.BatchNorm(x, name="bn"), act_type="relu")
        fused, plain = pair(net, (4, cin, 6, 6))
        joined = bool(regions(fused))
        assert joined == (cin == 32 or not HAS_AVX512_CORE), (cin, cout, regions(fused))
        step_and_compare(fused, plain)


def test_fix_gamma_and_convolution_bias():
    fused, plain = pair(small_resnet(16, fix_gamma=True, bias=True), (4, 3, 8, 8))
    assert regions(fused)
    step_and_compare(fused, plain)
    assert "b1_c2_bias" in fused.grad_dict
    # fix_gamma: gamma gets a zero gradient, as from the operator.
    assert np.all(fused.grad_dict["b1_c1_bn_gamma"].asnumpy() == 0)


@pytest.mark.parametrize("channels", [3, 16])
def test_grad_req_add_accumulates(channels):
    # With 16 channels the stem convolution reads the data inside the region, which then
    # adds the data's gradient into its array.
    fused, plain = pair(small_resnet(16), (4, channels, 8, 8), grad_req="add")
    assert regions(fused)
    step_and_compare(fused, plain, steps=2)


def test_grad_req_null_for_some_arguments():
    net = small_resnet(16)
    req = {n: "write" for n in net.list_arguments()}
    req["data"] = "null"
    req["b2_c2_weight"] = "null"
    req["stem_bn_gamma"] = "add"
    fused, plain = pair(net, (4, 3, 8, 8), grad_req=req)
    assert regions(fused)
    assert fused.grad_dict.get("data") is None
    step_and_compare(fused, plain)


def test_forward_at_inference_uses_the_moving_statistics():
    fused, plain = pair(small_resnet(16), (4, 3, 8, 8))
    step_and_compare(fused, plain, is_train=False)
    step_and_compare(fused, plain, is_train=True)


def test_outputs_read_inside_and_outside_a_region():
    # relu1's output feeds the next convolution and is also an output of the symbol's
    # graph through a second head: the region exports it in NCHW and takes its gradient in.
    data = sym.Variable("data")
    a = conv_bn(data, "c1", 16, (3, 3), pad=(1, 1))
    b = conv_bn(a, "c2", 16, (3, 3), pad=(1, 1))
    c = sym.Convolution(b, num_filter=16, kernel=(1, 1), no_bias=True, name="c3")
    side = sym.sum(sym.square(a), name="side")
    net = sym.Group([sym.sum(c, name="main"), side])
    fused, plain = pair(net, (4, 16, 6, 6))
    assert len(regions(fused)) == 1
    for ex in (fused, plain):
        ex.forward(is_train=True)
        ex.backward([mx.nd.array([1.0]), mx.nd.array([0.5])])
    for n, g in plain.grad_dict.items():
        close(fused.grad_dict[n].asnumpy(), g.asnumpy(), n)


def test_switch_off_and_mirroring_leave_the_graph_alone(monkeypatch):
    net = small_resnet(16)
    assert regions(bind(net, (4, 3, 8, 8), False)) == []
    assert regions(bind(net, (4, 3, 8, 8), True, grad_req="null")) == []  # inference: the other pass
    monkeypatch.setenv("WEFT_BACKWARD_DO_MIRROR", "1")
    assert regions(bind(net, (4, 3, 8, 8), True)) == []


def test_image_stem_convolution_stays_out():
    ex = bind(small_resnet(16), (4, 3, 8, 8), True)
    debug = ex.debug_str()
    assert "Op:Convolution, Name=stem" in debug and "Name=dnnl_train_region_b1_c1" in debug


def test_float64_graphs_are_left_alone():
    net = small_resnet(16)
    ex = net.simple_bind(mx.cpu(), grad_req="write", type_dict={"data": np.float64}, data=(4, 3, 8, 8))
    assert regions(ex) == []


def test_region_nodes_cannot_be_called_directly():
    with pytest.raises(WeftError, match="made by the executor's training pass"):
        mx.nd._internal._dnnl_train_region(mx.nd.zeros((1, 1, 2, 2)))
    with pytest.raises(WeftError, match="no training region 12345"):
        mx.nd._internal._backward_dnnl_train_region(mx.nd.zeros((1,)), region=12345)


def onednn_log(lines, net="small_resnet(16)", shape=(8, 3, 12, 12)):
    """oneDNN's log (DNNL_VERBOSE) of `lines` run in a child process (the log is set when
    oneDNN loads) after binding `fused`, `net` (a function of this file called) at `shape`
    with its training regions; `mx` is weft there."""
    code = "\n".join([
        "import sys",
        "sys.path.insert(0, %r)" % os.path.dirname(os.path.abspath(__file__)),
        "from test_dnnl_train_region import %s, pair, regions" % net.split("(")[0],
        "fused, _ = pair(%s, %r)" % (net, shape),
        "assert regions(fused)",
        "mx = sys.modules['weft']",
    ] + lines)
    run = subprocess.run([sys.executable, "-c", code], env=dict(os.environ, DNNL_VERBOSE="1"),
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert run.returncode == 0, run.stderr
    return run.stdout


def test_no_region_primitive_falls_back_to_onednns_reference_kernels():
    # The regions' blocked layout must be the CPU's (nChw16c with AVX-512, nChw8c on AVX2):
    # forcing the other leaves oneDNN only its reference convolutions. oneDNN's log of the
    # primitives a training step runs, in a child process (the log is set when oneDNN loads).
    step = onednn_log([
        "print('STEP', flush=True)",
        "fused.forward(is_train=True)",
        "fused.backward()",
        "mx.nd.waitall()",
    ]).split("STEP", 1)[1]
    convs = [ln.split(",") for ln in step.splitlines() if ",exec," in ln and ",convolution," in ln]
    passes = {f[5] for f in convs}
    assert {"forward_training", "backward_data", "backward_weights"} <= passes, passes
    assert not any(f[4].startswith("ref") for f in convs), sorted({f[4] for f in convs})


def dilated_net():
    # A 3x3 convolution of dilation 6 (padding 6), as in DeepLab's and SSD's fc6: oneDNN's
    # jit kernels refuse it on blocked data, where the regions used to force nChw8c/16c.
    x = conv_bn(sym.Variable("data"), "dil", 16, (3, 3), pad=(1, 1))
    x = sym.Convolution(x, kernel=(3, 3), pad=(6, 6), dilate=(6, 6), num_filter=16, name="dil2", no_bias=True)
    x = sym.Activation(sym.BatchNorm(x, fix_gamma=False, name="dil2_bn"), act_type="relu")
    x = sym.Pooling(x, pool_type="avg", global_pool=True, kernel=(1, 1))
    return sym.SoftmaxOutput(sym.FullyConnected(sym.Flatten(x), num_hidden=5, name="fc"), name="softmax")


def test_dilated_convolution_matches_the_operators_alone():
    fused, plain = pair(dilated_net(), (4, 16, 19, 19))
    assert len(regions(fused)) >= 1
    step_and_compare(fused, plain, steps=2)
    step_and_compare(fused, plain, is_train=False)


def test_dilated_convolution_avoids_onednns_reference_kernels():
    # Where the forced blocked layout leaves oneDNN only its reference kernel (thousands of
    # times slower: VGG's fc6 at batch 4 took minutes), the regions let oneDNN pick the
    # layouts. oneDNN's log of a training step and of an inference region, in a child process.
    log = onednn_log([
        "fused.forward(is_train=True)",
        "fused.backward()",
        "infer = dilated_net().simple_bind(mx.cpu(), grad_req='null', data=(4, 16, 19, 19))",
        "infer.forward(is_train=False)",
        "mx.nd.waitall()",
        "assert 'oneDNN region' in infer.debug_str()",
    ], net="dilated_net()", shape=(4, 16, 19, 19))
    convs = [ln.split(",") for ln in log.splitlines() if ",exec," in ln and ",convolution," in ln]
    passes = {f[5] for f in convs if any(x.startswith("mb") and "dh5" in x for x in f)}
    assert {"forward_training", "backward_data", "backward_weights", "forward_inference"} <= passes, passes
    assert not any(f[4].startswith("ref") for f in convs), sorted({(f[4], f[5]) for f in convs})


def test_predictions_follow_weights_written_between_calls():
    # At inference a region keeps its reordered weights between calls and reorders one again
    # only after its array was written: by assignment here, by an optimizer in training. The
    # output is the feature map itself (a softmax would saturate and hide stale weights).
    x = conv_bn(sym.Variable("data"), "stem", 16, (3, 3), pad=(1, 1))
    fused, plain = pair(bottleneck(x, "b1", 16, (1, 1), True), (4, 3, 8, 8))
    assert regions(fused)
    rng = np.random.RandomState(5)
    head = mx.nd.array(rng.normal(0, 1, fused.outputs[0].shape).astype(np.float32))
    for step in range(3):
        step_and_compare(fused, plain, is_train=False)
        if step == 1:
            for ex in (fused, plain):
                ex.forward(is_train=True)
                ex.backward([head])
            step_and_compare(fused, plain, is_train=False)
        v = rng.normal(0, 0.5, fused.arg_dict["b1_c2_weight"].shape).astype(np.float32)
        for ex in (fused, plain):
            ex.arg_dict["b1_c2_weight"][:] = v


def test_predictions_reorder_weights_only_when_they_change():
    # oneDNN's log of the reorders of each prediction, in a child process.
    log = onednn_log([
        # The stem reads 3 channels: it stays out of the regions (its operator reorders at each call).
        "shapes = {'x'.join(map(str, a.shape)): n for n, a in fused.arg_dict.items()",
        "          if n.endswith('_weight') and n != 'stem_weight'}",
        "print('SHAPES', ' '.join(shapes), flush=True)",
        "for step in range(4):",
        "    if step == 3:",
        "        fused.arg_dict['b1_c2_weight'][:] = 0.5",
        "    print('STEP', flush=True)",
        "    fused.forward(is_train=False)",
        "    mx.nd.waitall()",
    ])
    shapes = set(log.split("SHAPES ", 1)[1].splitlines()[0].split())
    steps = log.split("STEP")[1:]
    reordered = [[ln.split(",")[-2] for ln in s.splitlines() if ",exec," in ln and ",reorder," in ln
                  and ln.split(",")[-2] in shapes] for s in steps]
    assert len(reordered[0]) >= 4, reordered[0]      # every region convolution's weights, once
    assert reordered[1] == reordered[2] == [], reordered
    assert reordered[3] == ["16x16x3x3"], reordered[3]  # b1_c2's alone


def vgg_blocks(width=32):
    # Regions of conv-relu chains whose inputs and outputs are read by pooling outside them:
    # the backward reads its convolution's source from the region's input and its last
    # relu's result from the region's output, which no copy in "saved" duplicates.
    x = sym.Variable("data")
    for b, (convs, filters) in enumerate([(2, width), (3, 2 * width)]):
        for i in range(convs):
            x = sym.Convolution(x, num_filter=filters, kernel=(3, 3), pad=(1, 1), name="c%d_%d" % (b, i))
            x = sym.Activation(x, act_type="relu", name="r%d_%d" % (b, i))
        x = sym.Pooling(x, pool_type="max", kernel=(2, 2), stride=(2, 2), name="p%d" % b)
    x = sym.FullyConnected(sym.Flatten(x), num_hidden=5, name="fc")
    return sym.SoftmaxOutput(x, name="softmax")


def planned_mb(ex):
    text = ex.debug_str()
    return tuple(int(text.split(" MB " + w)[0].rsplit("Total ", 1)[1]) for w in ("allocated", "without"))


@pytest.mark.parametrize("grad_req", ["write", "add"])
def test_regions_reading_their_inputs_and_outputs_back(grad_req):
    fused, plain = pair(vgg_blocks(16), (4, 16, 12, 12), grad_req=grad_req)
    assert len(regions(fused)) == 2
    step_and_compare(fused, plain, steps=2)
    # Only the summation order of the convolutions differs: gradients agree to about
    # 1e-6 of their largest magnitude.
    for name, g in plain.grad_dict.items():
        if g is not None:
            b = g.asnumpy()
            assert np.abs(fused.grad_dict[name].asnumpy() - b).max() <= 1e-5 * max(1.0, np.abs(b).max()), name


def run_steps(executors, steps=2):
    for _ in range(steps):
        for ex in executors:
            ex.forward(is_train=True)
            ex.backward()


@pytest.mark.parametrize("level", ["1", "2"])
@pytest.mark.parametrize("batch,width,grad_req", [(4, 16, "write"), (4, 32, "add"), (2, 16, "write")])
def test_recomputing_in_the_backward_changes_no_bit(monkeypatch, level, batch, width, grad_req):
    # WEFT_EXEC_DNNL_TRAIN_RECOMPUTE=1 computes the BatchNorm+relu results the backward
    # reads again from their sources and statistics, 2 the residual adds too: the same
    # loops and primitives on the same inputs, so every output, gradient and moving
    # statistic equals the region that keeps them (0) to the bit. Batch 2 takes oneDNN's
    # layouts and BatchNorm primitives, whose results stay kept.
    net = small_resnet(width)
    shape = (batch, 3, 12, 12)
    monkeypatch.setenv("WEFT_EXEC_DNNL_TRAIN_RECOMPUTE", "0")
    kept, plain = pair(net, shape, grad_req)
    monkeypatch.setenv("WEFT_EXEC_DNNL_TRAIN_RECOMPUTE", level)
    again, _ = pair(net, shape, grad_req)
    assert regions(again)
    run_steps([kept, again, plain])
    for a, b in zip(again.outputs, kept.outputs):
        np.testing.assert_array_equal(a.asnumpy(), b.asnumpy())
    for name, g in kept.grad_dict.items():
        if g is not None:
            np.testing.assert_array_equal(again.grad_dict[name].asnumpy(), g.asnumpy(), err_msg=name)
    for name, a in kept.aux_dict.items():
        np.testing.assert_array_equal(again.aux_dict[name].asnumpy(), a.asnumpy(), err_msg=name)
    for name, g in plain.grad_dict.items():
        if g is not None:
            close(again.grad_dict[name].asnumpy(), g.asnumpy(), "gradient of " + name)


@pytest.mark.parametrize("level,adds", [("0", 3), ("2", 0)])
def test_batch_norm_and_residual_add_run_in_one_pass_in_training(level, adds):
    # When the backward recomputes a residual block's output (levels 1 and 2), the
    # BatchNorm before its add writes no result of its own in the training forward: the
    # add is done in the BatchNorm's pass, so no oneDNN add primitive runs (three with
    # level 0, one per block); at inference the two steps stay. Results equal the graph
    # without regions (and, to the bit, level 0: test_recomputing_in_the_backward_changes_no_bit).
    code = "\n".join([
        "import sys",
        "sys.path.insert(0, %r)" % os.path.dirname(os.path.abspath(__file__)),
        "from test_dnnl_train_region import small_resnet, pair, regions, step_and_compare",
        "fused, plain = pair(small_resnet(16), (4, 3, 12, 12))",
        "assert regions(fused)",
        "print('TRAIN', flush=True)",
        "step_and_compare(fused, plain)",
        "print('INFER', flush=True)",
        "step_and_compare(fused, plain, is_train=False)",
        "print('ok', flush=True)",
    ])
    env = dict(os.environ, WEFT_EXEC_DNNL_TRAIN_RECOMPUTE=level, ONEDNN_VERBOSE="1")
    run = subprocess.run([sys.executable, "-c", code], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True)
    assert run.returncode == 0, run.stderr[-3000:]
    out = run.stdout
    assert out.strip().endswith("ok")
    train = out[out.index("TRAIN"):out.index("INFER")].splitlines()
    infer = out[out.index("INFER"):].splitlines()
    # the training forward comes before the first backward primitive
    forward = train[:next(i for i, l in enumerate(train) if ",backward" in l)]
    assert any(",convolution," in l for l in forward)
    assert sum(l.startswith("onednn_verbose,exec,cpu,binary,") for l in forward) == adds
    assert sum(l.startswith("onednn_verbose,exec,cpu,binary,") for l in infer) == 3


def test_recomputing_plans_less_memory(monkeypatch):
    # Batch 16 of 32x32: a residual block's values are 2-8 MB. Recomputing keeps fewer of
    # them from the forward to the backward (exact bytes: tests/cpp/dnnl_train_region_test.cc).
    net = small_resnet(64)
    planned = {}
    for level in ("0", "1", "2"):
        monkeypatch.setenv("WEFT_EXEC_DNNL_TRAIN_RECOMPUTE", level)
        planned[level] = planned_mb(bind(net, (16, 3, 32, 32), True))[0]
    assert max(planned["1"], planned["2"]) < planned["0"], planned


@pytest.mark.parametrize("value", ["3", "yes", "-1", "22"])
def test_a_malformed_recompute_level_is_named(monkeypatch, value):
    monkeypatch.setenv("WEFT_EXEC_DNNL_TRAIN_RECOMPUTE", value)
    with pytest.raises(mx.base.MXNetError, match="WEFT_EXEC_DNNL_TRAIN_RECOMPUTE: expected 0, 1 or 2, got '%s'"
                       % value):
        bind(small_resnet(64), (16, 3, 32, 32), True)


def test_vgg_regions_plan_no_more_than_the_operators_alone():
    # An image stem outside the regions, then regions of conv-relu chains between poolings
    # (the VGG-like graph's shape): the backward takes the incoming gradient through the
    # last relu in one pass, in place of the relu's result read back, and a region input's
    # gradient takes the incoming gradient's memory; so the regions plan no more than the
    # operators alone (before, every region's backward held blocked copies of its output,
    # its gradient and its input at once: 97 MB planned here against 77 MB) and save more
    # than 3x over one buffer per value.
    net = vgg_blocks(32)
    fused, plain = bind(net, (32, 3, 64, 64), True), bind(net, (32, 3, 64, 64), False)
    assert len(regions(fused)) == 2
    (planned, naive), (planned_plain, _) = planned_mb(fused), planned_mb(plain)
    assert planned <= planned_plain, (planned, planned_plain)
    assert naive >= 3 * planned, (planned, naive)


@pytest.mark.parametrize("net,shape", [(lambda: vgg_blocks(16), (4, 3, 12, 12)),
                                       (lambda: small_resnet(16), (4, 3, 12, 12))])
def test_backward_in_place_of_its_inputs_changes_no_bit(monkeypatch, net, shape):
    # The region's backward writes temporaries and gradients in the memory of inputs it has
    # read for the last time where the planner lets it (WEFT_EXEC_PLAN_MEMORY, the default);
    # with one buffer per value they are separate. Every output and gradient is the same.
    net = net()
    monkeypatch.setenv("WEFT_EXEC_PLAN_MEMORY", "0")
    apart, _ = pair(net, shape)
    monkeypatch.setenv("WEFT_EXEC_PLAN_MEMORY", "1")
    shared, plain = pair(net, shape)
    assert regions(shared)
    run_steps([apart, shared, plain])
    for a, b in zip(shared.outputs, apart.outputs):
        np.testing.assert_array_equal(a.asnumpy(), b.asnumpy())
    for name, g in apart.grad_dict.items():
        if g is not None:
            np.testing.assert_array_equal(shared.grad_dict[name].asnumpy(), g.asnumpy(), err_msg=name)
    for name, g in plain.grad_dict.items():
        if g is not None:
            close(shared.grad_dict[name].asnumpy(), g.asnumpy(), "gradient of " + name)


def test_backward_still_queued_when_its_executor_goes():
    # A script may drop a Module right after update() while its backward still waits on the
    # engine: the queued backward keeps its region (it failed with "no training region N").
    import gc
    fused, plain = pair(small_resnet(16), (4, 3, 12, 12))
    data = fused.arg_dict["data"]
    want = data.asnumpy()
    # The data is written behind a slow product, so everything after it is still queued
    # when the executor is dropped.
    big = mx.nd.ones((1200, 1200)) / 1200
    slow = mx.nd.dot(mx.nd.dot(big, big), big).sum().reshape((1, 1, 1, 1))
    mx.nd.broadcast_add(mx.nd.array(want), slow * 0, out=data)
    fused.forward(is_train=True)
    fused.backward()
    grads = {name: g for name, g in fused.grad_dict.items() if g is not None}
    del fused, data
    gc.collect()
    plain.forward(is_train=True)
    plain.backward()
    for name, g in grads.items():
        close(g.asnumpy(), plain.grad_dict[name].asnumpy(), "gradient of " + name)
