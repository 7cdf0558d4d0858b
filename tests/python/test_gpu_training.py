"""Whole training loops on the GPU against the same loops on the CPU: the same initial
parameters and batches must give the same losses and parameters after several SGD steps
(TF32 off, so float32 on both devices is plain float32). The operators themselves are
checked one by one in the other test_gpu_*.py files; here they run together, through a
hybridized Gluon block with its Trainer and through a bound Module."""
import os

import numpy as np
import pytest

import weft as mx
from weft import autograd, gluon, nd
from weft.gluon import nn

pytestmark = pytest.mark.skipif(mx.context.num_gpus() == 0, reason="no GPU")

# Whole loops: the operators they use are listed by the per-area modules.
GPU_OPS = set()


@pytest.fixture(autouse=True)
def _no_tf32(monkeypatch):
    monkeypatch.setenv("WEFT_CUDNN_ALLOW_TF32", "0")


def lenet():
    net = nn.HybridSequential()
    net.add(nn.Conv2D(8, 5, activation="relu"), nn.BatchNorm(), nn.MaxPool2D(2),
            nn.Conv2D(16, 3, activation="tanh"), nn.AvgPool2D(2), nn.Flatten(),
            nn.Dense(32, activation="relu"), nn.Dropout(0.0), nn.Dense(10))
    return net


def mlp():
    net = nn.HybridSequential()
    net.add(nn.Dense(64, activation="relu"), nn.Dense(64, activation="sigmoid"), nn.Dense(10))
    return net


def train(make, ctx, params, batches, optimizer, opt_args, hybridize):
    net = make()
    net.initialize(ctx=ctx)
    net(nd.array(batches[0][0], ctx=ctx))  # shapes known, so the parameters can be set
    # Each new block gets new parameter names: the parameters are matched in order.
    for p, value in zip(net.collect_params().values(), params):
        p.set_data(nd.array(value, ctx=ctx))
    if hybridize:
        net.hybridize()
    trainer = gluon.Trainer(net.collect_params(), optimizer, opt_args)
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    losses = []
    for x, y in batches:
        x, y = nd.array(x, ctx=ctx), nd.array(y, ctx=ctx)
        with autograd.record():
            loss = loss_fn(net(x), y)
        loss.backward()
        trainer.step(x.shape[0])
        losses.append(loss.mean().asscalar())
    return losses, [p.data().asnumpy() for p in net.collect_params().values()]


def initial_params(make, shape):
    net = make()
    net.initialize(mx.init.Xavier(magnitude=2.0))
    net(nd.zeros(shape))
    return [p.data().asnumpy() for p in net.collect_params().values()]


@pytest.mark.parametrize("make,shape", [(lenet, (16, 1, 28, 28)), (mlp, (16, 784))])
@pytest.mark.parametrize("optimizer,opt_args", [("sgd", {"learning_rate": 0.05, "momentum": 0.9}),
                                                ("adam", {"learning_rate": 0.002})])
@pytest.mark.parametrize("hybridize", [False, True])
def test_gluon_training_matches_cpu(make, shape, optimizer, opt_args, hybridize):
    rng = np.random.RandomState(0)
    # Two batches in turn, so that the loss on each falls as the steps fit them.
    two = [(rng.uniform(-1, 1, shape).astype(np.float32), rng.randint(0, 10, shape[0]).astype(np.float32))
           for _ in range(2)]
    batches = two * 3
    params = initial_params(make, shape)
    cpu_losses, cpu_params = train(make, mx.cpu(), params, batches, optimizer, opt_args, hybridize)
    gpu_losses, gpu_params = train(make, mx.gpu(0), params, batches, optimizer, opt_args, hybridize)
    np.testing.assert_allclose(gpu_losses, cpu_losses, rtol=2e-3, atol=1e-4)
    assert cpu_losses[-2] < cpu_losses[0] and cpu_losses[-1] < cpu_losses[1]  # the loop trains at all
    assert len(gpu_params) == len(cpu_params)
    for k, (g, c) in enumerate(zip(gpu_params, cpu_params)):
        np.testing.assert_allclose(g, c, rtol=2e-3, atol=2e-4, err_msg="parameter %d" % k)


def test_module_training_matches_cpu():
    data = mx.sym.var("data")
    net = mx.sym.Convolution(data, num_filter=8, kernel=(3, 3), name="conv")
    net = mx.sym.BatchNorm(net, name="bn")
    net = mx.sym.Activation(net, act_type="relu")
    net = mx.sym.Pooling(net, kernel=(2, 2), stride=(2, 2), pool_type="max")
    net = mx.sym.FullyConnected(mx.sym.Flatten(net), num_hidden=10, name="fc")
    net = mx.sym.SoftmaxOutput(net, name="softmax")
    rng = np.random.RandomState(1)
    x = rng.uniform(-1, 1, (32, 3, 12, 12)).astype(np.float32)
    y = rng.randint(0, 10, 32).astype(np.float32)
    results = []
    for ctx in (mx.cpu(), mx.gpu(0)):
        mod = mx.mod.Module(net, context=ctx)
        it = mx.io.NDArrayIter(x, y, batch_size=8, label_name="softmax_label")
        mod.bind(it.provide_data, it.provide_label)
        mx.random.seed(3)
        mod.init_params(mx.init.Xavier())
        if ctx == mx.gpu(0):  # the CPU's initial parameters, whatever each device drew
            mod.set_params(*results[0][0])
        mod.init_optimizer(optimizer="sgd", optimizer_params={"learning_rate": 0.1, "momentum": 0.9})
        initial = tuple({k: v.copy() for k, v in group.items()} for group in mod.get_params())
        for batch in it:
            mod.forward_backward(batch)
            mod.update()
        results.append((initial, mod.get_params(), mod.get_outputs()[0].asnumpy()))
    (_, cpu_params, cpu_out), (_, gpu_params, gpu_out) = results
    np.testing.assert_allclose(gpu_out, cpu_out, rtol=2e-3, atol=1e-4)
    for group in (0, 1):
        for name, value in cpu_params[group].items():
            np.testing.assert_allclose(gpu_params[group][name].asnumpy(), value.asnumpy(), rtol=2e-3, atol=2e-4,
                                       err_msg=name)


def test_initializers_run_on_the_gpu():
    # Gluon's initializers draw on the parameter's device with the CPU's generator stream.
    for init in (mx.init.Xavier(), mx.init.Normal(0.1), mx.init.Uniform(0.2), mx.init.MSRAPrelu()):
        got = []
        for ctx in (mx.cpu(), mx.gpu(0)):
            mx.random.seed(11)
            net = nn.Dense(20, in_units=30)
            net.initialize(init, ctx=ctx)
            got.append(net.weight.data().asnumpy())
        np.testing.assert_allclose(got[1], got[0], rtol=1e-6, atol=1e-7)
        assert got[0].std() > 0
