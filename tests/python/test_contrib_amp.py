"""weft.contrib.amp: graph conversion (casts where the op lists put them), bfloat16 and
float16 results against float32, conversion of models and hybrid blocks, and the
imperative init / dynamic loss scaling path (in subprocesses: amp.init rewraps the
operator functions of the whole process)."""
import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import weft as mx
from weft.contrib import amp
from weft.gluon import nn

BF16 = "12"


def _net():
    data = mx.sym.var("data")
    c1 = mx.sym.Convolution(data, num_filter=8, kernel=(3, 3), pad=(1, 1), name="conv1")
    c2 = mx.sym.Convolution(data, num_filter=8, kernel=(3, 3), pad=(1, 1), name="conv2")
    bn = mx.sym.BatchNorm(c1, name="bn")
    act = mx.sym.Activation(bn, act_type="relu", name="relu")
    add = mx.sym.elemwise_add(act, c2, name="add")
    pool = mx.sym.Pooling(add, kernel=(2, 2), stride=(2, 2), pool_type="max", name="pool")
    flat = mx.sym.Flatten(pool, name="flat")
    fc = mx.sym.FullyConnected(flat, num_hidden=10, name="fc")
    return mx.sym.softmax(fc, name="out")


def _nodes(sym):
    g = json.loads(sym.tojson(remove_amp_cast=False))
    return g["nodes"]


def _input_ops(sym, name):
    """(op, attrs) of each node feeding the node called name."""
    nodes = _nodes(sym)
    node = next(n for n in nodes if n["name"] == name)
    return [(nodes[e[0]]["op"], nodes[e[0]].get("attrs", {}), nodes[e[0]]) for e in node["inputs"]]


def _params(sym, shapes, seed=0):
    rng = np.random.RandomState(seed)
    arg_shapes, _, aux_shapes = sym.infer_shape(**shapes)
    # Weights scaled by fan-in (as an initializer would), so that the logits stay near 1.
    args = {n: mx.nd.array((rng.uniform(-1, 1, s) / np.sqrt(np.prod(s[1:]) if len(s) > 1 else 1)).astype(np.float32))
            for n, s in zip(sym.list_arguments(), arg_shapes) if n not in shapes}
    aux = {n: mx.nd.array(rng.uniform(0.5, 1.0, s).astype(np.float32))
           for n, s in zip(sym.list_auxiliary_states(), aux_shapes)}
    return args, aux


def _run(sym, data, args, aux):
    exe = sym.bind(mx.cpu(), dict(args, data=data), aux_states=dict(aux), grad_req="null")
    return exe.forward(is_train=False)[0]


def test_convert_symbol_bf16_places_casts():
    conv = amp.convert_symbol(_net(), target_dtype="bfloat16")
    # Convolution and FullyConnected run in bfloat16: every input cast, one shared cast of data.
    for name in ("conv1", "conv2"):
        ins = _input_ops(conv, name)
        assert all(op == "amp_cast" and a["dtype"] == "bfloat16" for op, a, _ in ins), (name, ins)
    # fc's data is already bf16 (everything from the convolutions on runs in bf16): no cast.
    fc = _input_ops(conv, "fc")
    assert fc[0][0] == "Flatten" and all(op == "amp_cast" and a["dtype"] == "bfloat16" for op, a, _ in fc[1:])
    casts_of_data = [n for n in _nodes(conv) if n["op"] == "amp_cast" and n["name"].startswith("data_")]
    assert len(casts_of_data) == 1
    # BatchNorm takes the bf16 data as it is, with its float32 parameters (no casts at all).
    assert [op for op, _, _ in _input_ops(conv, "bn")] == ["Convolution", "null", "null", "null", "null"]
    # elemwise_add of two bfloat16 entries needs no cast.
    assert [op for op, _, _ in _input_ops(conv, "add")] == ["Activation", "Convolution"]
    # Neutral ops are left alone; softmax gets its input in float32.
    assert [op for op, _, _ in _input_ops(conv, "pool")] == ["elemwise_add"]
    assert [op for op, _, _ in _input_ops(conv, "flat")] == ["Pooling"]
    out = _input_ops(conv, "out")
    assert out[0][0] == "amp_cast" and out[0][1]["dtype"] == "float32"
    # remove_amp_cast gives back the original graph.
    assert conv.remove_amp_cast().tojson() == _net().tojson()


def test_convert_symbol_types_and_values_bf16():
    sym = _net()
    data = mx.nd.array(np.random.RandomState(1).uniform(-1, 1, (4, 3, 8, 8)).astype(np.float32))
    args, aux = _params(sym, {"data": data.shape})
    conv = amp.convert_symbol(sym, target_dtype="bfloat16")
    # The parameters' types cannot be inferred through the casts: the float32 model gives them.
    _, out_types, _ = conv.infer_type(**{n: np.float32 for n in conv.list_arguments()})
    assert out_types == [np.float32]
    ref = _run(sym, data, args, aux).asnumpy()
    got = _run(conv, data, args, aux).asnumpy()
    np.testing.assert_allclose(got, ref, rtol=2e-2, atol=2e-3)
    assert not np.array_equal(got, ref)  # it did run in a narrower type


def test_convert_symbol_widest_type_casts_known_types():
    # Both input types of the add are known (bf16 from the dense layer, float32 from sin):
    # the narrower is cast to the wider with amp_cast, as MXNet's pass does, no multicast.
    x, y = mx.sym.var("x"), mx.sym.var("y")
    res = mx.sym.elemwise_add(mx.sym.FullyConnected(x, y, num_hidden=3, no_bias=True, name="fc"),
                              mx.sym.sin(y, name="sin"), name="add")
    conv = amp.convert_symbol(res, target_dtype="bfloat16", target_dtype_ops=["FullyConnected"], fp32_ops=["sin"])
    ins = _input_ops(conv, "add")
    assert [op for op, _, _ in ins] == ["amp_cast", "sin"]
    assert ins[0][1]["dtype"] == "float32"
    assert "amp_multicast" not in conv.tojson(remove_amp_cast=False)
    rs = np.random.RandomState(4)
    xv, yv = rs.uniform(-1, 1, (3, 3)), rs.uniform(-1, 1, (3, 3))
    got = conv.bind(mx.cpu(), {"x": mx.nd.array(xv), "y": mx.nd.array(yv)}, grad_req="null").forward()[0]
    assert got.dtype == np.float32
    np.testing.assert_allclose(got.asnumpy(), xv @ yv.T + np.sin(yv), rtol=2e-2, atol=2e-2)


def test_convert_symbol_float16_values():
    sym = _net()
    data = mx.nd.array(np.random.RandomState(2).uniform(-1, 1, (2, 3, 8, 8)).astype(np.float32))
    args, aux = _params(sym, {"data": data.shape})
    conv = amp.convert_symbol(sym, target_dtype="float16")
    assert all(a["dtype"] == "float16" for op, a, _ in _input_ops(conv, "conv1"))
    np.testing.assert_allclose(_run(conv, data, args, aux).asnumpy(), _run(sym, data, args, aux).asnumpy(),
                               rtol=5e-3, atol=5e-4)


def test_convert_symbol_widest_type_multicast():
    data, other = mx.sym.var("data"), mx.sym.var("other")
    fc = mx.sym.FullyConnected(data, num_hidden=4, name="fc")
    # slice_like runs as its inputs come: with a bf16 and a float32 input its output type is
    # known only at run time, so the add brings its inputs together with an amp_multicast.
    add = mx.sym.elemwise_add(mx.sym.slice_like(fc, other, name="like"), other, name="add")
    conv = amp.convert_symbol(add, target_dtype="bfloat16")
    ins = _input_ops(conv, "add")
    assert [op for op, _, _ in ins] == ["amp_multicast", "amp_multicast"]
    assert ins[0][2] is ins[1][2] and ins[0][1]["num_outputs"] == "2"
    x, o = np.random.RandomState(7).uniform(-1, 1, (3, 5)), np.random.RandomState(8).uniform(-1, 1, (3, 4))
    w, b = np.random.RandomState(9).uniform(-1, 1, (4, 5)), np.zeros(4)
    exe = conv.bind(mx.cpu(), {k: mx.nd.array(v) for k, v in
                               dict(data=x, other=o, fc_weight=w, fc_bias=b).items()}, grad_req="null")
    got = exe.forward()[0]
    assert got.dtype == np.float32  # the widest type of bf16 and float32
    np.testing.assert_allclose(got.asnumpy(), x @ w.T + o, rtol=2e-2, atol=2e-2)


def test_convert_symbol_excluded_and_conditional():
    data = mx.sym.var("data")
    fc = mx.sym.FullyConnected(data, num_hidden=4, name="fc")
    act = mx.sym.Activation(fc, act_type="softrelu", name="act")
    act2 = mx.sym.Activation(act, act_type="relu", name="act2")
    fc2 = mx.sym.FullyConnected(act2, num_hidden=4, name="fc2")
    conv = amp.convert_symbol(fc2, target_dtype="bfloat16", excluded_sym_names=["fc2"])
    # softrelu is conditionally float32, relu is neutral, the excluded fc2 stays float32.
    act_in = _input_ops(conv, "act")
    assert act_in[0][0] == "amp_cast" and act_in[0][1]["dtype"] == "float32"
    assert [op for op, _, _ in _input_ops(conv, "act2")] == ["Activation"]
    assert [op for op, _, _ in _input_ops(conv, "fc2")] == ["Activation", "null", "null"]


def test_convert_hybrid_block_dense_reading_bf16_gets_bf16_weights():
    # Only Convolution runs in bfloat16; the Dense after it reads bfloat16 data, so its
    # weights (declared float32 by Gluon) become bfloat16, as MXNet's type inference makes
    # them, and the converted block runs.
    net = nn.HybridSequential()
    net.add(nn.Conv2D(4, 3), nn.Flatten(), nn.Dense(3))
    net.initialize(mx.init.Xavier())
    net.hybridize()
    x = mx.nd.array(np.random.RandomState(11).uniform(-1, 1, (2, 2, 6, 6)).astype(np.float32))
    ref = net(x).asnumpy()
    low = amp.convert_hybrid_block(net, target_dtype="bfloat16", target_dtype_ops=["Convolution"])
    attrs = low._sym.attr_dict()
    dense = [k for k in attrs if k.endswith("_weight") and "dense" in k]
    assert dense and all(attrs[k]["__dtype__"] == BF16 for k in dense)
    got = low(x)
    assert got.dtype == mx.nd.bfloat16
    np.testing.assert_allclose(got.astype("float32").asnumpy(), ref, rtol=3e-2, atol=3e-2)


def test_convert_symbol_conditional_op_casts_its_variables():
    # A conditional float32 operator whose condition holds casts its variable inputs to
    # float32 as well (as MXNet's pass does); an unconditional float32 one (or one whose
    # condition fails) reads them directly. Auxiliary states are never cast.
    x, w = mx.sym.var("x"), mx.sym.var("w")
    fc = mx.sym.FullyConnected(x, w, num_hidden=3, no_bias=True, name="fc")
    for values, want in ((["True"], ["amp_cast", "amp_cast"]), (["False"], ["null", "null"])):
        conv = amp.convert_symbol(fc, target_dtype="bfloat16", target_dtype_ops=[], fp32_ops=[],
                                  conditional_fp32_ops=[("FullyConnected", "no_bias", values)])
        ins = _input_ops(conv, "fc")
        assert [op for op, _, _ in ins] == want
        assert all(a["dtype"] == "float32" for op, a, _ in ins if op == "amp_cast")
        xv = np.random.RandomState(5).uniform(-1, 1, (2, 4)).astype(np.float32)
        wv = np.random.RandomState(6).uniform(-1, 1, (3, 4)).astype(np.float32)
        got = conv.bind(mx.cpu(), {"x": mx.nd.array(xv), "w": mx.nd.array(wv)}, grad_req="null").forward()[0]
        assert got.dtype == np.float32
        np.testing.assert_allclose(got.asnumpy(), xv @ wv.T, rtol=1e-5, atol=1e-6)
    conv = amp.convert_symbol(fc, target_dtype="bfloat16", target_dtype_ops=[], fp32_ops=["FullyConnected"],
                              conditional_fp32_ops=[])
    assert [op for op, _, _ in _input_ops(conv, "fc")] == ["null", "null"]
    bn = mx.sym.BatchNorm(mx.sym.var("d"), fix_gamma=True, name="bn")
    conv = amp.convert_symbol(bn, target_dtype="bfloat16", target_dtype_ops=[], fp32_ops=[],
                              conditional_fp32_ops=[("BatchNorm", "fix_gamma", ["True"])])
    ins = _input_ops(conv, "bn")
    assert [op for op, _, _ in ins] == ["amp_cast", "amp_cast", "amp_cast", "null", "null"]
    assert [n for n in conv.list_auxiliary_states()] == ["bn_moving_mean", "bn_moving_var"]


def test_convert_symbol_user_lists_and_errors():
    sym = _net()
    conv = amp.convert_symbol(sym, target_dtype="bfloat16", target_dtype_ops=["FullyConnected"],
                              fp32_ops=["softmax"], conditional_fp32_ops=[])
    assert [op for op, _, _ in _input_ops(conv, "conv1")] == ["null", "null", "null"]
    with pytest.raises(ValueError, match="two lists"):
        amp.convert_symbol(sym, target_dtype="bfloat16", target_dtype_ops=["softmax"], fp32_ops=["softmax"])
    with pytest.raises(ValueError, match="none of the lists"):
        amp.convert_symbol(sym, target_dtype="bfloat16", target_dtype_ops=["no_such_op"])
    # MXNet refuses conflicting lists with an assert: scripts catching AssertionError still
    # see these errors. elemwise_add only casts to the widest type, so it is in none of the lists.
    with pytest.raises(AssertionError, match="none of the lists"):
        amp.convert_symbol(sym, target_dtype="bfloat16", target_dtype_ops=["FullyConnected"],
                           fp32_ops=["elemwise_add"])
    with pytest.raises(AssertionError, match="two lists"):
        amp.convert_symbol(sym, target_dtype="bfloat16", target_dtype_ops=["FullyConnected"],
                           fp32_ops=["FullyConnected"])
    with pytest.raises(ValueError, match="float16' or 'bfloat16"):
        amp.convert_symbol(sym, target_dtype="int8")
    with pytest.raises(TypeError, match="Symbol"):
        amp.convert_symbol("data")
    with pytest.raises(ValueError, match="conditional_fp32_ops"):
        amp.convert_symbol(sym, target_dtype="bfloat16", conditional_fp32_ops=[("Activation", "act_type")])


def test_convert_model_casts_optional_params():
    sym = _net()
    data = mx.nd.array(np.random.RandomState(3).uniform(-1, 1, (2, 3, 8, 8)).astype(np.float32))
    args, aux = _params(sym, {"data": data.shape})
    ref = _run(sym, data, args, aux).asnumpy()
    conv, cargs, caux = amp.convert_model(sym, dict(args), dict(aux), target_dtype="bfloat16",
                                          cast_optional_params=True)
    attrs = conv.attr_dict()
    # Weights read only by bf16 layers become bf16 variables and arrays; BatchNorm's stay float32.
    for name in ("conv1_weight", "conv2_bias", "fc_weight"):
        assert attrs[name]["__dtype__"] == BF16
        assert cargs[name].dtype == mx.nd.bfloat16
    assert cargs["bn_gamma"].dtype == np.float32 and caux["bn_moving_mean"].dtype == np.float32
    assert not any(n["op"] == "amp_cast" and n["inputs"] and _nodes(conv)[n["inputs"][0][0]]["name"] == "fc_weight"
                   for n in _nodes(conv))
    got = _run(conv, data, cargs, caux).asnumpy()
    np.testing.assert_allclose(got, ref, rtol=2e-2, atol=2e-3)
    with pytest.raises(TypeError, match="dicts"):
        amp.convert_model(sym, [], {}, target_dtype="bfloat16")


def test_convert_hybrid_block_bf16():
    net = nn.HybridSequential()
    net.add(nn.Conv2D(6, 3, activation="relu"), nn.MaxPool2D(2), nn.BatchNorm(), nn.Flatten(), nn.Dense(5))
    net.initialize(mx.init.Xavier())
    x = mx.nd.array(np.random.RandomState(4).uniform(-1, 1, (3, 2, 10, 10)).astype(np.float32))
    with pytest.raises(RuntimeError, match="forward pass first"):
        amp.convert_hybrid_block(net, target_dtype="bfloat16")
    net.hybridize()
    ref = net(x).asnumpy()
    low = amp.convert_hybrid_block(net, target_dtype="bfloat16", cast_optional_params=True)
    got = low(x)
    # The last layer (Dense) runs in bf16 and its output is not cast back, as in MXNet.
    assert got.dtype == mx.nd.bfloat16
    np.testing.assert_allclose(got.astype("float32").asnumpy(), ref, rtol=2e-2, atol=2e-2)
    ops = [n["op"] for n in _nodes(low._sym)]
    assert "amp_cast" in ops
    with pytest.raises(TypeError, match="HybridBlock"):
        amp.convert_hybrid_block(nn.Sequential(), target_dtype="bfloat16")


def _run_script(code):
    env = dict(os.environ, OMP_NUM_THREADS="1")
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, env=env,
                          timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout


def test_init_wraps_imperative_and_symbolic_bf16():
    out = _run_script("""
        import numpy as np, weft as mx
        from weft.contrib import amp
        from weft.gluon import nn
        amp.init(target_dtype="bfloat16")
        amp.init(target_dtype="bfloat16")  # a second call does nothing
        try:
            amp.init(target_dtype="float16")
            raise SystemExit("switching type did not fail")
        except RuntimeError as e:
            assert "already initialized" in str(e)
        x = mx.nd.array(np.random.uniform(-1, 1, (4, 6)).astype(np.float32))
        w = mx.nd.array(np.random.uniform(-1, 1, (3, 6)).astype(np.float32))
        y = mx.nd.FullyConnected(x, w, no_bias=True, num_hidden=3)
        assert y.dtype == mx.nd.bfloat16, y.dtype
        ref = x.asnumpy() @ w.asnumpy().T
        np.testing.assert_allclose(y.astype("float32").asnumpy(), ref, rtol=2e-2, atol=2e-2)
        s = mx.nd.softmax(y)
        assert s.dtype == np.float32, s.dtype
        z = mx.nd.elemwise_add(y, mx.nd.ones((4, 3)))
        assert z.dtype == np.float32, z.dtype
        r = mx.nd.relu(y)
        assert r.dtype == mx.nd.bfloat16
        # A hybridized Gluon net traces the wrapped symbol functions.
        net = nn.HybridSequential()
        net.add(nn.Conv2D(4, 3), nn.BatchNorm(), nn.Activation("relu"), nn.Dense(3))
        net.initialize()
        net.hybridize()
        out = net(mx.nd.ones((2, 1, 6, 6)))
        graph = next(iter(net._cached.values())).sym.tojson(remove_amp_cast=False)
        print("casts", graph.count('"amp_cast"'), out.dtype == mx.nd.bfloat16)
    """)
    casts, dtype = out.split()[1:]
    # Conv2D's data, weight and bias, Dense's data, weight and bias (BatchNorm takes bf16 as is).
    assert int(casts) >= 6 and dtype == "True", out


def test_loss_scaling_and_overflow_skip():
    _run_script("""
        import numpy as np, weft as mx
        from weft import autograd, gluon
        from weft.contrib import amp
        # No float16 operators: the gradients stay float32, so the scaled ones are exact multiples.
        amp.init(target_dtype="float16", target_precision_ops=[])
        def make():
            net = gluon.nn.Dense(2, in_units=3)
            net.initialize(mx.init.Constant(0.5))
            return net, gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.1})
        try:
            amp.scale_loss(mx.nd.ones(1), make()[1]).__enter__()
            raise SystemExit("scale_loss without init_trainer did not fail")
        except RuntimeError as e:
            assert "init_trainer" in str(e)
        x = mx.nd.array(np.arange(6, dtype=np.float32).reshape(2, 3))
        ref_net, ref_tr = make()
        with autograd.record():
            loss = ref_net(x).sum()
        loss.backward()
        ref_grad = ref_net.weight.grad().asnumpy().copy()
        ref_tr.step(2)
        net, tr = make()
        amp.init_trainer(tr)
        scale = tr._amp_loss_scaler.loss_scale
        assert scale == 2.0 ** 16
        with autograd.record():
            loss = net(x).sum()
            with amp.scale_loss(loss, tr) as scaled:
                pass
        scaled.backward()
        np.testing.assert_allclose(net.weight.grad().asnumpy(), ref_grad * scale, rtol=1e-6)
        tr.step(2)
        np.testing.assert_allclose(net.weight.data().asnumpy(), ref_net.weight.data().asnumpy(), rtol=1e-6)
        # An overflowing step is skipped and halves the scale for the next one.
        before = net.weight.data().asnumpy().copy()
        with autograd.record():
            with amp.scale_loss(net(x).sum(), tr) as scaled:
                pass
        scaled.backward()
        net.weight.grad()[:] = np.inf
        tr.step(2)
        np.testing.assert_array_equal(net.weight.data().asnumpy(), before)
        assert tr._amp_loss_scaler.loss_scale == scale
        # The halved scale takes effect at the next step's check, as in MXNet.
        with autograd.record():
            with amp.scale_loss(net(x).sum(), tr) as scaled:
                pass
        scaled.backward()
        tr.step(2)
        assert tr._amp_loss_scaler.loss_scale == scale / 2
        # unscale divides the gradients now and restores the trainer's own scale.
        with autograd.record():
            with amp.scale_loss(net(x).sum(), tr) as scaled:
                pass
        scaled.backward()
        g = net.weight.grad().asnumpy().copy()
        amp.unscale(tr)
        np.testing.assert_allclose(net.weight.grad().asnumpy(), g / (scale / 2), rtol=1e-6)
        assert tr._scale == tr._amp_original_scale
    """)


def _bf16_vs_f32(fn, arrays, rtol=1e-2, grad_req="write"):
    """fn on bfloat16 copies of arrays against fn on float32: output and input gradients
    (from one common head gradient), each within rtol of the float32 result's largest value."""
    results = {}
    head = None
    for dt in ("float32", "bfloat16"):
        xs = [mx.nd.array(a).astype(dt) for a in arrays]
        for x in xs:
            x.attach_grad(grad_req=grad_req)
            if grad_req == "add":
                x.grad[:] = mx.nd.ones(x.shape, dtype=dt)
        with mx.autograd.record():
            y = fn(*xs)
        assert y.dtype == (np.float32 if dt == "float32" else mx.nd.bfloat16), (dt, y.dtype)
        if head is None:
            head = np.random.RandomState(9).uniform(-1, 1, y.shape).astype(np.float32)
        y.backward(mx.nd.array(head).astype(dt))
        results[dt] = [y.astype("float32").asnumpy()] + [x.grad.astype("float32").asnumpy() for x in xs]
    for name, ref, got in zip(["output"] + ["grad%d" % i for i in range(len(arrays))], results["float32"],
                              results["bfloat16"]):
        scale = max(np.abs(ref).max(), 1e-6)
        assert np.abs(got - ref).max() <= rtol * scale, (name, np.abs(got - ref).max() / scale)


@pytest.mark.parametrize("grad_req", ["write", "add"])
@pytest.mark.parametrize("shape,filters,kernel,stride,pad", [
    ((4, 1, 28, 28), 20, (5, 5), (1, 1), (0, 0)),     # LeNet's first layer (one channel)
    ((4, 20, 12, 12), 50, (5, 5), (1, 1), (0, 0)),    # LeNet's second
    ((2, 16, 9, 9), 32, (3, 3), (2, 2), (1, 1)),
    ((2, 32, 7, 7), 64, (1, 1), (1, 1), (0, 0)),      # pointwise
])
def test_bf16_convolution_close_to_float32(shape, filters, kernel, stride, pad, grad_req):
    rng = np.random.RandomState(5)
    fan_in = shape[1] * kernel[0] * kernel[1]
    x = rng.uniform(-1, 1, shape)
    w = rng.uniform(-1, 1, (filters, shape[1]) + kernel) / np.sqrt(fan_in)
    b = rng.uniform(-1, 1, (filters,))
    _bf16_vs_f32(lambda x, w, b: mx.nd.Convolution(x, w, b, kernel=kernel, stride=stride, pad=pad,
                                                   num_filter=filters), [x, w, b], grad_req=grad_req)


def test_bf16_dense_pool_activation_concat_elemwise_close_to_float32():
    rng = np.random.RandomState(6)
    x = rng.uniform(-1, 1, (8, 40))
    w = rng.uniform(-1, 1, (30, 40)) / np.sqrt(40)
    b = rng.uniform(-1, 1, (30,))
    for req in ("write", "add"):
        _bf16_vs_f32(lambda x, w, b: mx.nd.FullyConnected(x, w, b, num_hidden=30), [x, w, b], grad_req=req)
    for ta in (False, True):
        for tb in (False, True):
            a = rng.uniform(-1, 1, (12, 5) if ta else (5, 12))
            c = rng.uniform(-1, 1, (7, 12) if tb else (12, 7))
            _bf16_vs_f32(lambda a, c: mx.nd.dot(a, c, transpose_a=ta, transpose_b=tb), [a, c])
    _bf16_vs_f32(lambda a, c: mx.nd.batch_dot(a, c), [rng.uniform(-1, 1, (3, 4, 6)), rng.uniform(-1, 1, (3, 6, 5))])
    img = rng.uniform(-1, 1, (2, 8, 10, 10))
    for pool_type in ("max", "avg"):
        for req in ("write", "add"):
            _bf16_vs_f32(lambda x: mx.nd.Pooling(x, kernel=(2, 2), stride=(2, 2), pool_type=pool_type), [img],
                         grad_req=req)
            # Overlapping windows with padding (ResNet's stem pooling): oneDNN's kernels.
            _bf16_vs_f32(lambda x: mx.nd.Pooling(x, kernel=(3, 3), stride=(2, 2), pad=(1, 1), pool_type=pool_type),
                         [img], grad_req=req)
    for act in ("relu", "sigmoid", "tanh"):
        _bf16_vs_f32(lambda x: mx.nd.Activation(x, act_type=act), [img])
    _bf16_vs_f32(lambda a, b: mx.nd.Concat(a, b, dim=1), [img, img[:, :3]])
    _bf16_vs_f32(lambda a, b: mx.nd.elemwise_add(a, b) * b, [img, img[::-1]])


@pytest.mark.parametrize("fix_gamma", [False, True])
def test_bf16_batchnorm_with_float32_statistics(fix_gamma):
    rng = np.random.RandomState(10)
    x = rng.uniform(-2, 2, (4, 3, 5, 5)).astype(np.float32)
    gamma, beta = rng.uniform(0.5, 1.5, 3).astype(np.float32), rng.uniform(-1, 1, 3).astype(np.float32)
    head = rng.uniform(-1, 1, x.shape).astype(np.float32)
    res = {}
    for dt in ("float32", "bfloat16"):
        xs = mx.nd.array(x).astype(dt)
        g, b = mx.nd.array(gamma), mx.nd.array(beta)
        mm, mv = mx.nd.zeros(3), mx.nd.ones(3)
        for a in (xs, g, b):
            a.attach_grad()
        with mx.autograd.record():
            y = mx.nd.BatchNorm(xs, g, b, mm, mv, fix_gamma=fix_gamma, momentum=0.5)
        assert y.dtype == xs.dtype
        y.backward(mx.nd.array(head).astype(dt))
        assert g.grad.dtype == np.float32 and mm.dtype == np.float32 and xs.grad.dtype == xs.dtype
        res[dt] = [a.astype("float32").asnumpy() for a in (y, xs.grad, g.grad, b.grad, mm, mv)]
    for name, ref, got in zip(["y", "dx", "dgamma", "dbeta", "moving_mean", "moving_var"], res["float32"],
                              res["bfloat16"]):
        assert np.abs(got - ref).max() <= 2e-2 * max(np.abs(ref).max(), 1e-3), name
    # Inference with the moving statistics, in a bound graph.
    sym = mx.sym.BatchNorm(mx.sym.var("data", dtype="bfloat16"), name="bn")
    arg_types, out_types, aux_types = sym.infer_type(data="bfloat16")
    assert out_types == [mx.nd.bfloat16] and set(arg_types[1:]) == {np.float32} and set(aux_types) == {np.float32}
    with pytest.raises(mx.base.MXNetError, match="gamma"):
        mx.nd.BatchNorm(mx.nd.ones((2, 3)).astype("bfloat16"), mx.nd.ones(3).astype("float16"), mx.nd.zeros(3),
                        mx.nd.zeros(3), mx.nd.ones(3))


def test_bf16_lists_name_each_operator_once():
    import collections
    from weft.contrib.amp.lists import symbol_bf16 as l
    names = (l.BF16_FUNCS + l.BF16_FP32_FUNCS + l.FP32_FUNCS + l.WIDEST_TYPE_CASTS +
             [c[0] for c in l.CONDITIONAL_FP32_FUNCS])
    assert [n for n, k in collections.Counter(names).items() if k > 1] == []
    # Activation is conditional only: a relu after a bf16 convolution stays bf16 (no cast),
    # a softrelu gets float32 input.
    conv = mx.sym.Convolution(mx.sym.var("data"), kernel=(1, 1), num_filter=2, name="conv")
    for act, want in (("relu", ["Convolution"]), ("softrelu", ["amp_cast"])):
        out = amp.convert_symbol(mx.sym.Activation(conv, act_type=act, name="act"), target_dtype="bfloat16")
        assert [op for op, _, _ in _input_ops(out, "act")] == want


def test_converted_model_declares_parameter_types_and_binds_from_data_alone():
    # conv (bf16) -> BatchNorm -> dense layer not among the target ops: the dense layer runs
    # as its input comes (bf16), so its weights are declared bf16, the convolution's float32
    # (read through casts); a Module binds the result given only the data's shape.
    rs = np.random.RandomState(5)
    data = mx.sym.var("data")
    conv = mx.sym.Convolution(data, kernel=(3, 3), num_filter=4, name="conv")
    bn = mx.sym.BatchNorm(conv, fix_gamma=False, name="bn")
    fc = mx.sym.FullyConnected(bn, num_hidden=3, name="fc")
    x = mx.nd.array(rs.uniform(-1, 1, (2, 2, 6, 6)))
    mod = mx.mod.Module(fc, label_names=None)
    mod.bind(data_shapes=[("data", x.shape)], for_training=False)
    mod.init_params(initializer=mx.init.Uniform(0.5))
    args, aux = mod.get_params()
    mod.forward(mx.io.DataBatch([x], []), is_train=False)
    want = mod.get_outputs()[0].asnumpy()
    sym, args16, aux16 = amp.convert_model(fc, args, aux, target_dtype="bfloat16", target_dtype_ops=["Convolution"])
    attrs = sym.attr_dict()
    assert attrs["fc_weight"]["__dtype__"] == str(mx.nd.ndarray.dtype_id("bfloat16"))
    assert attrs["conv_weight"]["__dtype__"] == str(mx.nd.ndarray.dtype_id("float32"))
    assert args16["fc_weight"].dtype == mx.nd.bfloat16 and args16["conv_weight"].dtype == np.float32
    arg_types, _, _ = sym.infer_type(data="float32")
    assert dict(zip(sym.list_arguments(), arg_types))["fc_weight"] == mx.nd.bfloat16
    m16 = mx.mod.Module(sym, label_names=None)
    m16.bind(data_shapes=[("data", x.shape)], for_training=False)
    m16.set_params(args16, aux16)
    m16.forward(mx.io.DataBatch([x], []), is_train=False)
    got = m16.get_outputs()[0].astype("float32").asnumpy()
    np.testing.assert_allclose(got, want, rtol=5e-2, atol=5e-2 * np.abs(want).max())


def test_cast_optional_params_follows_the_graphs_own_casts():
    data = mx.sym.var("data")
    both_bf16 = mx.sym.Group([mx.sym.amp_cast(data, dtype="bfloat16"), mx.sym.amp_cast(data, dtype="bfloat16")])
    mixed = mx.sym.Group([mx.sym.amp_cast(data, dtype="bfloat16"), mx.sym.amp_cast(data, dtype="float32")])
    for sym, want in ((both_bf16, mx.nd.bfloat16), (mixed, np.float32)):
        out = amp.convert_symbol(sym, data_names=[], target_dtype="bfloat16", cast_optional_params=True)
        exe = out.simple_bind(mx.cpu(), data=(1, 2))
        assert exe.arg_arrays[0].dtype == want
        exe.arg_arrays[0][:] = mx.nd.array([[1.5, -2.0]]).astype(want)
        np.testing.assert_array_equal(exe.forward()[0].astype("float32").asnumpy(), [[1.5, -2.0]])


def test_cast_optional_params_stores_a_multicast_of_parameters_in_target():
    # An amp_multicast whose inputs are all parameters can run in bfloat16: its parameters
    # become bfloat16 variables, a declared float32 one too. A data input keeps float32,
    # and so does every input of a multicast that also reads a computed value.
    p1 = mx.sym.var("p1", dtype="float32")
    p2 = mx.sym.var("p2", dtype="bfloat16")
    x = mx.sym.var("x")
    only_params = amp.convert_symbol(mx.sym.amp_multicast(p1, p2, num_outputs=2), target_dtype="bfloat16",
                                     cast_optional_params=True)
    exe = only_params.simple_bind(mx.cpu(), p1=(1, 3), p2=(1, 3))
    assert [a.dtype for a in exe.arg_arrays] == [mx.nd.bfloat16, mx.nd.bfloat16]
    exe.arg_arrays[0][:] = mx.nd.array([[1.5, -2.0, 0.25]]).astype("bfloat16")
    exe.arg_arrays[1][:] = mx.nd.array([[3.0, 0.5, -1.0]]).astype("bfloat16")
    outs = [o.astype("float32").asnumpy() for o in exe.forward()]
    np.testing.assert_array_equal(outs[0], [[1.5, -2.0, 0.25]])
    np.testing.assert_array_equal(outs[1], [[3.0, 0.5, -1.0]])

    with_data = amp.convert_symbol(mx.sym.amp_multicast(p1, x, num_outputs=2), target_dtype="bfloat16",
                                   cast_optional_params=True)
    exe = with_data.simple_bind(mx.cpu(), p1=(1, 3), x=(1, 3))
    assert dict(zip(with_data.list_arguments(), [a.dtype for a in exe.arg_arrays])) == {
        "p1": mx.nd.bfloat16, "x": np.float32}

    computed = amp.convert_symbol(mx.sym.amp_multicast(p1, mx.sym.sin(p2), num_outputs=2),
                                  target_dtype="bfloat16", target_dtype_ops=[], fp32_ops=[],
                                  cast_optional_params=True)
    exe = computed.simple_bind(mx.cpu(), p1=(1, 3), p2=(1, 3))
    assert exe.arg_arrays[0].dtype == np.float32
    # Without cast_optional_params every parameter takes the type inference gives it with
    # float32 data, float32 where it gives none (as in MXNet): the declared bfloat16 goes.
    kept = amp.convert_symbol(mx.sym.amp_multicast(p1, p2, num_outputs=2), target_dtype="bfloat16")
    exe = kept.simple_bind(mx.cpu(), p1=(1, 3), p2=(1, 3))
    assert [a.dtype for a in exe.arg_arrays] == [np.float32, np.float32]


def _input_grad(fn, value, dt, grad_req, head):
    """The gradient of fn's one input `value` (as dt) for head gradient head(y.shape), as
    float32; with grad_req 'add' it starts from ones."""
    a = mx.nd.array(value).astype(dt)
    a.attach_grad(grad_req=grad_req)
    if grad_req == "add":
        a.grad[:] = mx.nd.ones(a.shape, dtype=dt)
    with mx.autograd.record():
        y = fn(a)
    y.backward(head(y.shape).astype(dt))
    return a.grad.astype("float32").asnumpy()


@pytest.mark.parametrize("dtype,ulp", [("bfloat16", 2.0 ** -8), ("float16", 2.0 ** -11)])
@pytest.mark.parametrize("op", ["Embedding", "take", "take_axis1"])
@pytest.mark.parametrize("grad_req", ["write", "add"])
def test_reduced_precision_gather_gradients_sum_in_float32(dtype, ulp, op, grad_req):
    # 2,000 positions over 10 rows: each row's gradient sums about 200 contributions. Added
    # into a bfloat16 row one by one they lose 2.5 % of the largest value; summed in float32
    # and rounded once, they are within half a unit of the type's last place.
    rng = np.random.RandomState(2)
    idx = mx.nd.array(rng.randint(0, 10, 2000))
    w = rng.uniform(-1, 1, (10, 16) if op != "take_axis1" else (3, 10, 4))

    def fn(weight):
        if op == "Embedding":
            return mx.nd.Embedding(idx, weight, input_dim=10, output_dim=16)
        if op == "take":
            return mx.nd.take(weight, idx)
        return mx.nd.take(weight, idx, axis=1)

    def head(shape):
        return mx.nd.array(np.random.RandomState(2).uniform(-1, 1, shape)).astype(dtype)

    rounded = mx.nd.array(w).astype(dtype).astype("float32").asnumpy()
    ref = _input_grad(fn, rounded, "float32", grad_req, head)
    got = _input_grad(fn, w, dtype, grad_req, head)
    assert np.abs(got - ref).max() <= ulp * np.abs(ref).max(), np.abs(got - ref).max() / np.abs(ref).max()


@pytest.mark.parametrize("dtype,ulp", [("bfloat16", 2.0 ** -8), ("float16", 2.0 ** -11)])
@pytest.mark.parametrize("pool", [dict(pool_type="avg", kernel=(3, 3), stride=(1, 1), pad=(1, 1)),
                                  dict(pool_type="avg", kernel=(5, 5), stride=(1, 1)),
                                  dict(pool_type="max", kernel=(3, 3), stride=(2, 2)),
                                  dict(pool_type="avg", kernel=(3,), stride=(1,))])
@pytest.mark.parametrize("grad_req", ["write", "add"])
def test_reduced_precision_pooling_gradient_sums_in_float32(dtype, ulp, pool, grad_req):
    # Overlapping windows add into the same input cells (9 or 25 of them for the average
    # windows at stride 1): summed in float32 and rounded once, the gradient is float32's on
    # the same values within half a unit of the type's last place of its largest value.
    rng = np.random.RandomState(6)
    shape = (4, 8, 20, 20) if len(pool["kernel"]) == 2 else (4, 8, 40)
    x = rng.uniform(-1, 1, shape)

    def head(shape):
        return mx.nd.array(np.random.RandomState(7).uniform(-1, 1, shape)).astype(dtype)

    rounded = mx.nd.array(x).astype(dtype).astype("float32").asnumpy()
    ref = _input_grad(lambda a: mx.nd.Pooling(a, **pool), rounded, "float32", grad_req, head)
    got = _input_grad(lambda a: mx.nd.Pooling(a, **pool), x, dtype, grad_req, head)
    assert np.abs(got - ref).max() <= ulp * np.abs(ref).max(), np.abs(got - ref).max() / np.abs(ref).max()


def _bucket_sym_gen(key):
    h = mx.sym.FullyConnected(mx.sym.var("data"), num_hidden=3, flatten=False, name="fc1")
    y = mx.sym.FullyConnected(mx.sym.mean(h, axis=1), num_hidden=2, name="fc2")
    return mx.sym.SoftmaxOutput(y, name="softmax"), ("data",), ("softmax_label",)


def _bucket_outputs(mod, key, x):
    mod.switch_bucket(key, [("data", x.shape)], [("softmax_label", (2,))])
    mod.forward(mx.io.DataBatch([mx.nd.array(x)], [mx.nd.zeros(2)]), is_train=False)
    return mod.get_outputs()[0].astype("float32").asnumpy()


@pytest.mark.parametrize("target", ["float16", "bfloat16"])
def test_convert_bucketing_module_converts_every_bound_bucket(target):
    mod = mx.mod.BucketingModule(_bucket_sym_gen, default_bucket_key=5)
    mod.bind([("data", (2, 5, 4))], [("softmax_label", (2,))], for_training=False)
    mod.init_params(mx.init.Xavier())
    rng = np.random.RandomState(0)
    xs = {5: rng.rand(2, 5, 4), 3: rng.rand(2, 3, 4)}
    ref = {k: _bucket_outputs(mod, k, x) for k, x in xs.items()}
    conv = amp.convert_bucketing_module(mod, target_dtype=target)
    assert isinstance(conv, mx.mod.BucketingModule) and sorted(conv._buckets) == [3, 5]
    for key in (3, 5):
        assert conv._buckets[key].symbol.tojson(remove_amp_cast=False).count('"amp_cast"') >= 3
    conv.bind([("data", (2, 5, 4))], [("softmax_label", (2,))], for_training=False)
    tol = 2e-3 if target == "float16" else 1e-2
    for key, x in xs.items():
        got = _bucket_outputs(conv, key, x)
        np.testing.assert_allclose(got, ref[key], rtol=tol, atol=tol)
        assert not np.array_equal(got, ref[key])  # computed in the lower precision


def test_convert_bucketing_module_errors():
    with pytest.raises(TypeError, match="expected a BucketingModule, got Module"):
        amp.convert_bucketing_module(mx.mod.Module(mx.sym.var("data")))
    with pytest.raises(ValueError, match="no bucket"):
        amp.convert_bucketing_module(mx.mod.BucketingModule(_bucket_sym_gen, default_bucket_key=5))
    mod = mx.mod.BucketingModule(_bucket_sym_gen, default_bucket_key=5)
    mod.bind([("data", (2, 5, 4))], [("softmax_label", (2,))], for_training=False)
    with pytest.raises(ValueError, match="not initialised"):
        amp.convert_bucketing_module(mod)
