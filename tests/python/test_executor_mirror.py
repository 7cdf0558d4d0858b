"""Backward mirroring (WEFT_BACKWARD_DO_MIRROR / MXNET_BACKWARD_DO_MIRROR): the backward
recomputes cheap forward values instead of keeping them, and every output, gradient and
auxiliary state stays bit-identical to a run without it."""
import numpy as np
import pytest

import weft as mx
from weft.base import WeftError

sym = mx.sym


def mlp():
    x = sym.Variable("data")
    for i in range(3):
        x = sym.Activation(sym.FullyConnected(x, num_hidden=16, name="fc%d" % i), act_type="relu", name="relu%d" % i)
    x = sym.FullyConnected(x, num_hidden=4, name="out")
    return sym.SoftmaxOutput(x, name="softmax")


def conv_bn(x, name, filters, act=True):
    x = sym.Convolution(x, num_filter=filters, kernel=(3, 3), pad=(1, 1), no_bias=True, name=name)
    x = sym.BatchNorm(x, fix_gamma=False, eps=2e-5, name=name + "_bn")
    return sym.Activation(x, act_type="relu", name=name + "_relu") if act else x


def residual():
    x = conv_bn(sym.Variable("data"), "c0", 8)
    y = conv_bn(conv_bn(x, "c1", 8), "c2", 8, act=False)
    x = sym.Activation(x + y, act_type="relu", name="sum_relu")
    x = sym.Pooling(x, pool_type="max", kernel=(2, 2), stride=(2, 2), name="pool")
    x = sym.Activation(x, act_type="tanh", name="tanh")
    x = sym.FullyConnected(sym.Flatten(x), num_hidden=5, name="fc")
    return sym.SoftmaxOutput(x, name="softmax")


def dropout_net():
    x = sym.Activation(sym.FullyConnected(sym.Variable("data"), num_hidden=32, name="fc0"), act_type="sigmoid",
                       name="sig")
    x = sym.Dropout(x, p=0.5, name="drop")
    x = sym.Activation(x, act_type="relu", name="relu")
    x = sym.FullyConnected(x * 2.0, num_hidden=3, name="fc1")
    return sym.SoftmaxOutput(x, name="softmax")


def resnet_like(blocks=4, width=8):
    """A stem and `blocks` residual blocks (two 3x3 convolutions with BatchNorm, the second
    block of each pair strided with a projected shortcut), pooled into a classifier."""
    x = sym.Pooling(conv_bn(sym.Variable("data"), "stem", width), pool_type="max", kernel=(2, 2), stride=(2, 2),
                    name="stem_pool")
    for b in range(blocks):
        stride = (2, 2) if b % 2 else (1, 1)
        name = "b%d" % b
        y = sym.Convolution(x, num_filter=width, kernel=(3, 3), pad=(1, 1), stride=stride, no_bias=True,
                            name=name + "_c1")
        y = sym.Activation(sym.BatchNorm(y, fix_gamma=False, name=name + "_c1_bn"), act_type="relu",
                           name=name + "_c1_relu")
        y = conv_bn(y, name + "_c2", width, act=False)
        if b % 2:
            x = sym.Convolution(x, num_filter=width, kernel=(1, 1), stride=stride, no_bias=True, name=name + "_proj")
        x = sym.Activation(x + y, act_type="relu", name=name + "_relu")
    x = sym.Pooling(x, pool_type="avg", global_pool=True, kernel=(1, 1), name="gpool")
    x = sym.FullyConnected(sym.Flatten(x), num_hidden=5, name="fc")
    return sym.SoftmaxOutput(x, name="softmax")


NETS = {
    "mlp": (mlp, (6, 10), 4),
    "residual": (residual, (4, 3, 8, 8), 5),
    "dropout": (dropout_net, (8, 12), 3),
    "resnet_like": (resnet_like, (4, 3, 16, 16), 5),
}


def run(net, data_shape, classes, mirror, monkeypatch, steps=2, convs=False, segment=0):
    """Binds with mirroring on or off (and convolutions recomputed or not, segments of
    `segment` cuts or not), runs `steps` training steps (Dropout seeded the same) and
    returns the outputs, gradients and auxiliary states, and the names the monitor saw."""
    monkeypatch.setenv("WEFT_BACKWARD_DO_MIRROR", "1" if mirror else "0")
    monkeypatch.setenv("WEFT_BACKWARD_MIRROR_CONV", "1" if convs else "0")
    monkeypatch.setenv("WEFT_BACKWARD_MIRROR_SEGMENT", str(segment))
    # Bit-identical only with the same kernels: mirroring turns the oneDNN training regions off.
    monkeypatch.setenv("WEFT_EXEC_DNNL_TRAIN_FUSE", "0")
    ex = net().simple_bind(mx.cpu(), data=data_shape)
    rng = np.random.RandomState(7)
    for name, arr in ex.arg_dict.items():
        if name == "softmax_label":
            arr[:] = rng.randint(0, classes, size=arr.shape).astype(np.float32)
        else:
            arr[:] = rng.randn(*arr.shape).astype(np.float32)
    for name, arr in ex.aux_dict.items():
        arr[:] = (rng.rand(*arr.shape) + 0.5).astype(np.float32)
    seen = []
    ex.set_monitor_callback(lambda name, arr: seen.append(name))
    mx.random.seed(42)
    result = {}
    for step in range(steps):
        outs = ex.forward(is_train=True)
        ex.backward()
        for i, o in enumerate(outs):
            result["out%d_step%d" % (i, step)] = o.asnumpy().copy()
        for name, g in ex.grad_dict.items():
            if g is not None:
                result["grad_%s_step%d" % (name, step)] = g.asnumpy().copy()
    for name, a in ex.aux_dict.items():
        result["aux_" + name] = a.asnumpy().copy()
    return result, seen


@pytest.mark.parametrize("name", sorted(NETS))
def test_mirroring_gives_bit_identical_outputs_gradients_and_aux(name, monkeypatch):
    build, shape, classes = NETS[name]
    off, seen_off = run(build, shape, classes, False, monkeypatch)
    on, seen_on = run(build, shape, classes, True, monkeypatch)
    assert sorted(on) == sorted(off)
    for key in off:
        assert off[key].dtype == on[key].dtype and np.array_equal(off[key], on[key]), key
    assert not any("_mirror" in n for n in seen_off)
    mirrors = {n for n in seen_on if "_mirror" in n}
    assert mirrors, "mirroring on made no recomputation"
    # Dropout draws a new mask at every call: it is never recomputed.
    assert not any(n.startswith("drop") for n in mirrors)
    if name == "residual":
        # BatchNorm, ReLU and Pooling are recomputed; convolutions and the loss are not.
        for expected in ("c0_bn_mirror_output", "c0_relu_mirror_output", "pool_mirror_output"):
            assert expected in mirrors
        assert not any(n.startswith(("c0_mirror", "c1_mirror", "c2_mirror", "fc_mirror", "softmax"))
                       for n in mirrors)


def test_recomputing_the_links_of_convolution_chains_changes_no_bit(monkeypatch):
    off, _ = run(residual, (4, 3, 8, 8), 5, False, monkeypatch)
    on, seen = run(residual, (4, 3, 8, 8), 5, True, monkeypatch, convs=True)
    for key in off:
        assert np.array_equal(off[key], on[key]), key
    # c1 feeds (through BatchNorm and ReLU) only c2: recomputed. c0 feeds c1 and the sum,
    # c2 the sum: kept.
    assert "c1_mirror_output" in seen
    assert not any(n.startswith(("c0_mirror", "c2_mirror")) for n in seen)


@pytest.mark.parametrize("name", sorted(NETS))
@pytest.mark.parametrize("segment", [1, 2, 3])
def test_segment_checkpointing_gives_bit_identical_outputs_gradients_and_aux(name, segment, monkeypatch):
    build, shape, classes = NETS[name]
    off, _ = run(build, shape, classes, False, monkeypatch)
    on, seen = run(build, shape, classes, True, monkeypatch, segment=segment)
    assert sorted(on) == sorted(off)
    for key in off:
        assert off[key].dtype == on[key].dtype and np.array_equal(off[key], on[key]), key
    mirrors = {n for n in seen if "_mirror" in n}
    # In a plain chain every operator is a cut, and which are recomputed depends on the
    # stride; a residual block's inner operators are no cuts: always recomputed.
    if name in ("residual", "resnet_like"):
        assert mirrors
    assert not any(n.startswith(("drop_mirror", "softmax")) for n in mirrors)
    if name == "resnet_like":
        # The cuts: the stem's convolution, BatchNorm, ReLU and pooling (1-4), each
        # block's sum and output ReLU (b0's 5 and 6, b1's 7 and 8, ...), then the global
        # pooling, Flatten and fc. Every segment-th is kept: b0_relu for strides 1, 2 and
        # 3, b1_relu for 1 and 2 only. Convolutions inside the segments are recomputed.
        assert any(n.startswith("b1_c1_mirror") for n in mirrors), sorted(mirrors)
        assert not any(n.startswith("b0_relu_mirror") for n in mirrors), sorted(mirrors)
        assert any(n.startswith("b1_relu_mirror") for n in mirrors) == (segment == 3), sorted(mirrors)


def test_segment_checkpointing_plans_less_memory_than_recomputing_cheap_operators(monkeypatch):
    planned = {}
    for mode, env in (("mirror+conv", {"WEFT_BACKWARD_MIRROR_CONV": "1", "WEFT_BACKWARD_MIRROR_SEGMENT": "0"}),
                      ("segments", {"WEFT_BACKWARD_MIRROR_CONV": "0", "WEFT_BACKWARD_MIRROR_SEGMENT": "2"})):
        monkeypatch.setenv("WEFT_BACKWARD_DO_MIRROR", "1")
        for k, v in env.items():
            monkeypatch.setenv(k, v)
        ex = resnet_like(blocks=8, width=16).simple_bind(mx.cpu(), data=(32, 3, 64, 64))
        planned[mode] = planned_mb(ex)
    assert planned["segments"] < planned["mirror+conv"], planned


def test_a_bad_segment_stride_is_an_error(monkeypatch):
    monkeypatch.setenv("WEFT_BACKWARD_DO_MIRROR", "1")
    monkeypatch.setenv("WEFT_BACKWARD_MIRROR_SEGMENT", "-2")
    with pytest.raises(WeftError, match="WEFT_BACKWARD_MIRROR_SEGMENT: expected an integer.*got '-2'"):
        mlp().simple_bind(mx.cpu(), data=(2, 10))


def test_mirrored_batchnorm_updates_the_moving_statistics_once(monkeypatch):
    monkeypatch.setenv("WEFT_BACKWARD_DO_MIRROR", "1")
    x = sym.BatchNorm(sym.Variable("data"), fix_gamma=False, momentum=0.5, name="bn")
    net = sym.MakeLoss(sym.sum(sym.Activation(x, act_type="relu") ** 2))
    ex = net.simple_bind(mx.cpu(), data=(4, 3, 2, 2))
    data = np.random.RandomState(3).randn(4, 3, 2, 2).astype(np.float32)
    ex.arg_dict["data"][:] = data
    ex.arg_dict["bn_gamma"][:] = 1.0
    ex.arg_dict["bn_beta"][:] = 0.1
    ex.aux_dict["bn_moving_mean"][:] = 0.0
    ex.aux_dict["bn_moving_var"][:] = 1.0
    seen = []
    ex.set_monitor_callback(lambda name, arr: seen.append(name))
    ex.forward(is_train=True)
    ex.backward()
    assert "bn_mirror_output" in seen
    mean = data.mean(axis=(0, 2, 3))
    var = data.var(axis=(0, 2, 3))
    np.testing.assert_allclose(ex.aux_dict["bn_moving_mean"].asnumpy(), 0.5 * mean, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(ex.aux_dict["bn_moving_var"].asnumpy(), 0.5 + 0.5 * var, rtol=1e-5)


def test_force_mirroring_attribute_recomputes_a_convolution(monkeypatch):
    def net():
        x = sym.Convolution(sym.Variable("data"), num_filter=4, kernel=(3, 3), pad=(1, 1), name="conv",
                            attr={"__force_mirroring__": "True"})
        x = sym.Activation(x, act_type="tanh", name="act")
        return sym.MakeLoss(sym.sum(x * x), name="loss")

    results = []
    for flag in ("0", "1"):
        monkeypatch.setenv("WEFT_BACKWARD_DO_MIRROR", flag)
        ex = net().simple_bind(mx.cpu(), data=(2, 3, 5, 5))
        rng = np.random.RandomState(1)
        for arr in ex.arg_dict.values():
            arr[:] = rng.randn(*arr.shape).astype(np.float32)
        seen = []
        ex.set_monitor_callback(lambda name, arr: seen.append(name))
        ex.forward(is_train=True)
        ex.backward()
        results.append(({k: v.asnumpy() for k, v in ex.grad_dict.items()}, seen))
    (g_off, seen_off), (g_on, seen_on) = results
    assert "conv_mirror_output" in seen_on and "conv_mirror_output" not in seen_off
    for k in g_off:
        assert np.array_equal(g_off[k], g_on[k]), k


def test_mxnet_variable_enables_mirroring_and_a_bad_value_is_an_error(monkeypatch):
    monkeypatch.delenv("WEFT_BACKWARD_DO_MIRROR", raising=False)
    monkeypatch.setenv("MXNET_BACKWARD_DO_MIRROR", "1")
    ex = mlp().simple_bind(mx.cpu(), data=(2, 10))
    seen = []
    ex.set_monitor_callback(lambda name, arr: seen.append(name))
    ex.forward(is_train=True)
    ex.backward()
    assert "relu0_mirror_output" in seen
    monkeypatch.setenv("WEFT_BACKWARD_DO_MIRROR", "yes")
    with pytest.raises(WeftError, match="WEFT_BACKWARD_DO_MIRROR: expected an integer.*got 'yes'"):
        mlp().simple_bind(mx.cpu(), data=(2, 10))


def test_mirroring_reduces_the_planned_memory_of_training(monkeypatch):
    planned = {}
    for flag in ("0", "1"):
        monkeypatch.setenv("WEFT_BACKWARD_DO_MIRROR", flag)
        ex = residual().simple_bind(mx.cpu(), data=(64, 3, 64, 64))
        planned[flag] = int(ex.debug_str().split("Total ")[1].split(" MB")[0])
    assert planned["1"] < planned["0"], planned


def planned_mb(ex):
    return int(ex.debug_str().split("Total ")[1].split(" MB")[0])


def test_planner_packs_a_chain_into_its_peak_of_live_values():
    # Inference on a chain: the widest pair of neighbouring values (8 MB + 2 MB) is the
    # peak of bytes live at once; ReLU runs in place, the output (2 MB) lives to the end
    # and the planner reaches the peak: 10 MB, against 50 MB unshared (fc: 3 x 8 + 2 x 2,
    # relu: 2 x 8 + 2 x 2, last: 2).
    x = sym.Variable("data")
    for i, width in enumerate((2048, 512, 2048, 512, 2048)):
        x = sym.FullyConnected(x, num_hidden=width, name="fc%d" % i)
        if i < 4:
            x = sym.Activation(x, act_type="relu", name="relu%d" % i)
    x = sym.FullyConnected(x, num_hidden=512, name="last")
    ex = x.simple_bind(mx.cpu(), grad_req="null", data=(1024, 64))
    text = ex.debug_str()
    assert "Total 50 MB without memory sharing" in text
    assert planned_mb(ex) == 10, text.splitlines()[-2:]


@pytest.mark.parametrize("mirror", ["0", "1"])
def test_planning_on_and_off_give_bit_identical_results(mirror, monkeypatch):
    monkeypatch.setenv("WEFT_BACKWARD_DO_MIRROR", mirror)
    results = []
    for plan in ("1", "0"):
        monkeypatch.setenv("WEFT_EXEC_PLAN_MEMORY", plan)
        results.append(run(residual, (4, 3, 8, 8), 5, mirror == "1", monkeypatch)[0])
    assert sorted(results[0]) == sorted(results[1])
    for key in results[0]:
        assert np.array_equal(results[0][key], results[1][key]), key
