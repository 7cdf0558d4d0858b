"""The executor's inference pass (oneDNN regions): with no gradient asked for,
Forward(is_train=False) runs connected Convolution/BatchNorm/Activation/add/Pooling nodes as
one "_dnnl_region" node each. Its outputs must equal the same executor built with the pass
off (WEFT_EXEC_DNNL_FUSE=0), which runs every operator on its own."""
import os

import numpy as np
import pytest

import weft as mx
from weft.base import WeftError

sym = mx.sym


def conv_bn(x, name, filters, kernel, stride=(1, 1), pad=(0, 0), act="relu", groups=1, bias=False,
            fix_gamma=False, dilate=(1, 1)):
    x = sym.Convolution(x, num_filter=filters, kernel=kernel, stride=stride, pad=pad, num_group=groups,
                        dilate=dilate, no_bias=not bias, name=name)
    x = sym.BatchNorm(x, fix_gamma=fix_gamma, eps=2e-5, name=name + "_bn")
    return sym.Activation(x, act_type=act, name=name + "_act") if act else x


def bottleneck(x, name, width, stride, project):
    y = conv_bn(x, name + "_c1", width, (1, 1))
    y = conv_bn(y, name + "_c2", width, (3, 3), stride, (1, 1))
    y = conv_bn(y, name + "_c3", width * 4, (1, 1), act=None)
    sc = conv_bn(x, name + "_sc", width * 4, (1, 1), stride, act=None) if project else x
    return sym.Activation(y + sc, act_type="relu", name=name + "_out")


def bind(net, shape, fuse, grad_req="null"):
    old = os.environ.get("WEFT_EXEC_DNNL_FUSE")
    os.environ["WEFT_EXEC_DNNL_FUSE"] = "1" if fuse else "0"
    try:
        return net.simple_bind(mx.cpu(), grad_req=grad_req, data=shape)
    finally:
        if old is None:
            del os.environ["WEFT_EXEC_DNNL_FUSE"]
        else:
            os.environ["WEFT_EXEC_DNNL_FUSE"] = old


def fill(ex, seed):
    rng = np.random.RandomState(seed)
    for name, arr in ex.arg_dict.items():
        arr[:] = rng.normal(0, 0.5, arr.shape).astype(np.float32)
    for name, arr in ex.aux_dict.items():
        if name.endswith("var"):
            arr[:] = rng.uniform(0.5, 2.0, arr.shape).astype(np.float32)
        else:
            arr[:] = rng.normal(0, 0.3, arr.shape).astype(np.float32)


def copy_params(src, dst):
    for name, arr in src.arg_dict.items():
        dst.arg_dict[name][:] = arr.asnumpy()
    for name, arr in src.aux_dict.items():
        dst.aux_dict[name][:] = arr.asnumpy()


def outputs(ex, is_train=False):
    return [o.asnumpy() for o in ex.forward(is_train=is_train)]


def pair(net, shape, seed=0):
    fused, plain = bind(net, shape, True), bind(net, shape, False)
    fill(fused, seed)
    copy_params(fused, plain)
    return fused, plain


def assert_same(fused, plain, is_train=False):
    a, b = outputs(fused, is_train), outputs(plain, is_train)
    assert len(a) == len(b)
    for x, y in zip(a, b):
        assert x.shape == y.shape
        scale = max(1.0, float(np.abs(y).max()))
        np.testing.assert_allclose(x, y, rtol=1e-4, atol=1e-4 * scale)


def regions(ex):
    return [line for line in ex.debug_str().splitlines() if line.startswith("oneDNN region")]


def resnet_block_net(project, stride, width=8, pool=True, head=False):
    x = sym.Variable("data")
    x = conv_bn(x, "stem", 16, (3, 3), (1, 1), (1, 1))
    if pool:
        x = sym.Pooling(x, pool_type="max", kernel=(3, 3), stride=(2, 2), pad=(1, 1), name="pool0")
    x = bottleneck(x, "u0", width, stride, project)
    x = bottleneck(x, "u1", width, (1, 1), False)
    if head:
        x = sym.Pooling(x, pool_type="avg", global_pool=True, kernel=(1, 1), name="gap")
        x = sym.FullyConnected(sym.Flatten(x), num_hidden=7, name="fc")
    return x


@pytest.mark.parametrize("batch", [1, 3, 4])
@pytest.mark.parametrize("hw", [(16, 16), (13, 11)])
def test_conv_bn_relu_matches_the_operators_alone(batch, hw):
    net = conv_bn(conv_bn(sym.Variable("data"), "a", 8, (3, 3), pad=(1, 1)), "b", 5, (3, 3), (2, 2), (1, 1))
    fused, plain = pair(net, (batch, 3) + hw)
    assert len(regions(fused)) == 1 and "a_bn" in regions(fused)[0]
    assert regions(plain) == []
    assert_same(fused, plain)


@pytest.mark.parametrize("project,stride", [(True, (2, 2)), (True, (1, 1)), (False, (1, 1))])
# With AVX-512 the region uses blocked layouts and Winograd for the 3x3 convolutions at every
# batch size (without Winograd, from batch 4 on).
@pytest.mark.parametrize("batch,hw", [(1, (15, 15)), (3, (20, 17)), (5, (14, 14))])
def test_bottleneck_blocks_match(project, stride, batch, hw):
    # Identity shortcuts need as many channels in as out: the stem has 16 = 4 * width 4.
    net = resnet_block_net(project, stride, width=4 if not project else 8)
    fused, plain = pair(net, (batch, 3) + hw)
    assert len(regions(fused)) == 1
    assert_same(fused, plain)


@pytest.mark.parametrize("batch", [1, 3])
def test_resnet_head_pooling_and_fc(batch):
    net = sym.SoftmaxOutput(resnet_block_net(True, (2, 2), head=True), name="softmax")
    fused = bind(net, (batch, 3, 23, 19), True)
    plain = bind(net, (batch, 3, 23, 19), False)
    fill(fused, 4)
    copy_params(fused, plain)
    assert len(regions(fused)) == 1
    assert_same(fused, plain)


@pytest.mark.parametrize("act", ["relu", "sigmoid", "tanh", "softrelu"])
def test_groups_depthwise_dilation_bias_fix_gamma_and_activations(act):
    x = sym.Variable("data")
    x = conv_bn(x, "c1", 12, (3, 3), (1, 1), (1, 1), act=act, bias=True, fix_gamma=True)
    x = conv_bn(x, "c2", 12, (3, 3), (2, 2), (1, 1), act=act, groups=3)
    x = conv_bn(x, "dw", 12, (3, 3), (1, 1), (2, 2), act=act, groups=12, dilate=(2, 2))
    x = conv_bn(x, "c3", 6, (5, 3), (1, 2), (2, 1), act=None, groups=2, bias=True)
    x = sym.Activation(sym.Pooling(x, pool_type="avg", kernel=(2, 2), stride=(2, 2)), act_type=act)
    fused, plain = pair(x, (4, 4, 17, 14), seed=2)
    assert len(regions(fused)) == 1
    assert_same(fused, plain)


def test_standalone_add_and_activation_and_avg_pool_without_padding_count():
    # Neither add operand comes from a convolution read once, so the add is its own
    # primitive; the relu after a pooling is an eltwise primitive.
    x = sym.Variable("data")
    c = sym.Convolution(x, num_filter=6, kernel=(3, 3), pad=(1, 1), name="c")
    p1 = sym.Pooling(c, pool_type="max", kernel=(3, 3), stride=(1, 1), pad=(1, 1), name="p1")
    p2 = sym.Pooling(c, pool_type="avg", kernel=(3, 3), stride=(1, 1), pad=(1, 1), count_include_pad=False,
                     name="p2")
    y = sym.Activation(p1 + p2, act_type="relu", name="r")
    y = sym.Activation(sym.Pooling(y, pool_type="avg", kernel=(2, 2), stride=(2, 2), name="p3"), act_type="tanh")
    fused, plain = pair(y, (2, 3, 9, 9), seed=3)
    assert len(regions(fused)) == 1
    assert_same(fused, plain)


def test_values_read_outside_a_region_and_several_outputs():
    x = sym.Variable("data")
    a = conv_bn(x, "a", 8, (3, 3), pad=(1, 1))
    b = conv_bn(a, "b", 8, (3, 3), pad=(1, 1))
    # `a` is read by the region (b) and outside it (the sum), and both are outputs.
    net = sym.Group([b, sym.sum(a, axis=(2, 3), name="s"), a])
    fused, plain = pair(net, (2, 3, 10, 10), seed=5)
    assert len(regions(fused)) == 1
    assert_same(fused, plain)


def test_parameter_changes_between_calls_are_seen():
    net = resnet_block_net(True, (2, 2))
    fused, plain = pair(net, (2, 3, 16, 16), seed=6)
    assert_same(fused, plain)
    rng = np.random.RandomState(7)
    for name in ["u0_c2_weight", "stem_weight", "u1_c3_bn_gamma", "u0_sc_bn_beta"]:
        v = rng.normal(0, 0.5, fused.arg_dict[name].shape).astype(np.float32)
        before = outputs(fused)[0]
        fused.arg_dict[name][:] = v
        plain.arg_dict[name][:] = v
        assert not np.allclose(before, outputs(fused)[0])
        assert_same(fused, plain)
    for name in ["u0_c1_bn_moving_var", "u1_c2_bn_moving_mean"]:
        v = rng.uniform(0.5, 3.0, fused.aux_dict[name].shape).astype(np.float32)
        before = outputs(fused)[0]
        fused.aux_dict[name][:] = v
        plain.aux_dict[name][:] = v
        after = outputs(fused)[0]
        assert not np.allclose(before, after)
        assert_same(fused, plain)


def test_each_folded_parameter_change_is_seen_alone():
    # A region folds a convolution's bias and its BatchNorm's four arrays only when one of
    # them changed since the last call: a change to any single one must show, and calls
    # with nothing changed give the same result.
    net = conv_bn(conv_bn(sym.Variable("data"), "a", 16, (3, 3), pad=(1, 1), bias=True), "b", 16, (1, 1), act=None,
                  bias=True)
    fused, plain = pair(net, (1, 16, 9, 9), seed=11)
    rng = np.random.RandomState(12)
    for name in ["a_bias", "b_bias", "a_bn_gamma", "b_bn_beta", "a_bn_moving_mean", "b_bn_moving_var"]:
        arrays = (fused.arg_dict, plain.arg_dict) if name in fused.arg_dict else (fused.aux_dict, plain.aux_dict)
        before = outputs(fused)[0]
        np.testing.assert_array_equal(outputs(fused)[0], before)
        v = rng.uniform(0.5, 2.0, arrays[0][name].shape).astype(np.float32)
        for d in arrays:
            d[name][:] = v
        assert not np.allclose(before, outputs(fused)[0]), name
        assert_same(fused, plain)


def test_weight_change_changes_the_output():
    net = conv_bn(conv_bn(sym.Variable("data"), "a", 8, (3, 3), pad=(1, 1)), "b", 4, (1, 1))
    fused, plain = pair(net, (1, 3, 8, 8), seed=8)
    before = outputs(fused)[0]
    w = fused.arg_dict["b_weight"].asnumpy()
    fused.arg_dict["b_weight"][:] = w * 2 + 0.1
    plain.arg_dict["b_weight"][:] = w * 2 + 0.1
    after = outputs(fused)[0]
    assert not np.allclose(before, after)
    np.testing.assert_allclose(after, outputs(plain)[0], rtol=1e-4, atol=1e-4)
    # Writing the same array again through another view also counts as a change.
    fused.arg_dict["b_weight"][:] = w
    np.testing.assert_allclose(outputs(fused)[0], before, rtol=1e-5, atol=1e-5)


def test_training_mode_forward_uses_batch_statistics_as_without_the_pass():
    net = resnet_block_net(True, (2, 2))
    fused, plain = pair(net, (3, 3, 12, 12), seed=9)
    assert_same(fused, plain, is_train=True)
    # Training mode updated the moving statistics the same way in both.
    for name in fused.aux_dict:
        np.testing.assert_allclose(fused.aux_dict[name].asnumpy(), plain.aux_dict[name].asnumpy(), rtol=1e-5,
                                   atol=1e-6)
    assert_same(fused, plain)


def test_executors_with_gradients_form_no_region_and_train_alike():
    net = sym.sum(resnet_block_net(True, (2, 2)), name="loss")
    a = bind(net, (2, 3, 12, 12), True, grad_req="write")
    b = bind(net, (2, 3, 12, 12), False, grad_req="write")
    fill(a, 10)
    copy_params(a, b)
    assert regions(a) == []
    for ex in (a, b):
        ex.forward(is_train=True)
        ex.backward()
    for name in a.grad_dict:
        np.testing.assert_allclose(a.grad_dict[name].asnumpy(), b.grad_dict[name].asnumpy(), rtol=1e-4, atol=1e-4)
    assert_same(a, b)


def test_graphs_the_pass_cannot_handle_are_left_alone():
    x = sym.Variable("data")
    # A single convolution: nothing to gain.
    one = sym.Convolution(x, num_filter=4, kernel=(3, 3), name="c")
    # 1-D convolutions and a BatchNorm on another axis are not region operators.
    conv1d = sym.Activation(sym.Convolution(sym.Variable("data"), num_filter=4, kernel=(3,), name="c1"),
                            act_type="relu")
    axis_bn = sym.BatchNorm(sym.Convolution(sym.Variable("data"), num_filter=4, kernel=(1, 1), name="c2"),
                            axis=2, name="bn")
    for net, shape in [(one, (2, 3, 8, 8)), (conv1d, (2, 3, 9)), (axis_bn, (2, 3, 4, 4))]:
        fused, plain = pair(net, shape, seed=11)
        assert regions(fused) == []
        assert_same(fused, plain)
    # float64 stays with the operators.
    net = conv_bn(sym.Variable("data"), "d", 4, (3, 3))
    ex = net.simple_bind(mx.cpu(), grad_req="null", type_dict={"data": np.float64}, data=(1, 2, 6, 6))
    assert regions(ex) == []


def test_conv_with_a_computed_weight_is_not_folded():
    # The weight is computed by the graph, not a variable: the convolution stays outside.
    x = sym.Variable("data")
    w = sym.Variable("w") * 2
    y = sym.Activation(sym.Convolution(x, w, num_filter=4, kernel=(3, 3), no_bias=True, name="c"),
                       act_type="relu")
    fused = y.simple_bind(mx.cpu(), grad_req="null", data=(1, 2, 6, 6), w=(4, 2, 3, 3))
    assert regions(fused) == []


def test_region_node_cannot_be_called_directly():
    with pytest.raises(WeftError, match="made by the executor's inference pass"):
        mx.nd._internal._dnnl_region(mx.nd.zeros((1, 1, 2, 2)))
    with pytest.raises(WeftError, match="made by the executor's inference pass"):
        mx.sym._internal._dnnl_region(mx.sym.Variable("x"))


def test_region_reading_an_outside_value_late_and_writing_outputs_in_between():
    # The add folds into convolution `a`, which then runs after the pooling `p` has been
    # written out (p is also a graph output): a's outside source x is read where a was.
    x = sym.Activation(sym.Variable("data"), act_type="sigmoid", name="x")
    a = sym.Convolution(x, num_filter=3, kernel=(3, 3), pad=(1, 1), name="a")
    p = sym.Pooling(x, pool_type="max", kernel=(3, 3), stride=(1, 1), pad=(1, 1), name="p")
    net = sym.Group([sym.Activation(a + p, act_type="relu", name="r"), p])
    fused, plain = pair(net, (2, 3, 7, 9), seed=12)
    assert len(regions(fused)) == 1 and "x" not in regions(fused)[0].split("(")[1].split(", ")
    assert_same(fused, plain)


def test_a_path_leaving_and_reentering_a_region_splits_it():
    # a + exp(a): the add reads the region (a) and an outside node that reads it too, so it
    # cannot join a's region (the region could not run as one node); c starts another.
    a = conv_bn(sym.Variable("data"), "a", 4, (3, 3), pad=(1, 1))
    b = a + sym.exp(a * 0.1)
    c = conv_bn(b, "c", 4, (3, 3), pad=(1, 1))
    fused, plain = pair(c, (2, 3, 6, 6), seed=13)
    assert regions(fused) == ["oneDNN region dnnl_region_a: 3 nodes (a, a_bn, a_act)",
                              "oneDNN region dnnl_region_c: 3 nodes (c, c_bn, c_act)"]
    assert_same(fused, plain)


@pytest.mark.parametrize("batch", [1, 4])
def test_residual_add_of_the_convolutions_own_source(batch):
    # relu(bn(conv(x)) + x): the value added is also what the convolution reads, so the sum
    # cannot accumulate in x's memory.
    x = conv_bn(sym.Variable("data"), "a", 16, (3, 3), pad=(1, 1))
    y = sym.Activation(conv_bn(x, "b", 16, (3, 3), pad=(1, 1), act=None) + x, act_type="relu")
    fused, plain = pair(y, (batch, 3, 9, 10), seed=14)
    assert len(regions(fused)) == 1
    assert_same(fused, plain)


def inception_net(widths, pool="avg", blocks=2):
    """A stem, then `blocks` Inception blocks whose branches (1x1; 1x1 then 3x3; pooling then
    1x1) have `widths` channels each, joined by a Concat of channels."""
    x = conv_bn(sym.Variable("data"), "stem", 16, (3, 3), pad=(1, 1))
    for i in range(blocks):
        a = conv_bn(x, "b%d_1x1" % i, widths[0], (1, 1))
        b = conv_bn(conv_bn(x, "b%d_3x3r" % i, 8, (1, 1)), "b%d_3x3" % i, widths[1], (3, 3), pad=(1, 1))
        p = sym.Pooling(x, pool_type=pool, kernel=(3, 3), stride=(1, 1), pad=(1, 1), name="b%d_pool" % i)
        c = conv_bn(p, "b%d_proj" % i, widths[2], (1, 1))
        x = sym.Concat(a, b, c, dim=1, name="b%d_concat" % i)
    return x


def primitive_lines(ex):
    return [ln.strip() for ln in ex.debug_str().splitlines() if ln.startswith("  ")]


@pytest.mark.parametrize("batch", [1, 5])
@pytest.mark.parametrize("widths,pool", [((8, 16, 8), "avg"), ((16, 8, 16), "max"), ((5, 12, 3), "avg")])
def test_inception_blocks_with_their_concats_are_one_region(batch, widths, pool):
    # Each Concat joins the region, so the next block's branches join it too: one region,
    # whose only reorder into NCHW is its output's (the Concats' parts fill whole channel
    # blocks or, with 5, 12 and 3 channels, are joined in NCHW).
    fused, plain = pair(inception_net(widths, pool), (batch, 3, 12, 10), seed=31)
    found = regions(fused)
    assert len(found) == 1 and "b0_concat" in found[0] and "b1_concat" in found[0], found
    concats = [ln for ln in primitive_lines(fused) if " concat " in ln]
    assert [c.split(":")[0] for c in concats] == ["b0_concat", "b1_concat"], concats
    outputs = [ln for ln in primitive_lines(fused) if "(output" in ln]
    assert len(outputs) == 1, outputs
    assert_same(fused, plain)


def test_concat_read_outside_along_other_axes_and_of_region_inputs():
    # A Concat whose parts are the region's input and a convolution, read by the region and
    # outside it (both outputs); a Concat along the height stays an operator of its own.
    x = sym.Variable("data")
    a = conv_bn(x, "a", 8, (3, 3), pad=(1, 1))
    j = sym.Concat(x, a, dim=1, name="j")
    b = conv_bn(j, "b", 8, (1, 1))
    h = sym.Concat(b, a, dim=2, name="h")
    net = sym.Group([sym.Pooling(h, pool_type="max", kernel=(2, 2), stride=(2, 2), name="p"), j])
    fused, plain = pair(net, (4, 8, 6, 6), seed=37)
    members = [r.split("(", 1)[1].rstrip(")").split(", ") for r in regions(fused)]
    assert any("j" in m and "b" in m for m in members), members
    assert not any("h" in m for m in members), members
    assert_same(fused, plain)
