"""Gluon with row_sparse weights: Parameter(stype='row_sparse') as MXNet 1.9 has it (rows
pulled through the Trainer's kvstore, which applies the optimizer), checked against the same
training with dense weights."""
import numpy as np
import pytest

import weft as mx
from weft import autograd, gluon, nd
from weft.gluon.contrib.nn import SparseEmbedding

V, D = 40, 3


def _init_weight():
    return np.random.RandomState(0).uniform(-1, 1, (V, D)).astype(np.float32)


def test_row_sparse_parameter_api():
    p = gluon.Parameter("w", shape=(V, D), stype="row_sparse", grad_stype="row_sparse")
    p.initialize(init=mx.init.Constant(0.5))
    with pytest.raises(RuntimeError, match="storage type is row_sparse.*row_sparse_data"):
        p.data()
    with pytest.raises(RuntimeError, match="list_row_sparse_data"):
        p.list_data()
    with pytest.raises(RuntimeError, match="no Trainer"):
        p.row_sparse_data(nd.array([1]))
    trainer = gluon.Trainer([p], "sgd", {"learning_rate": 0.1}, kvstore="local")
    with pytest.raises(TypeError, match="row_id must be an NDArray"):
        p.row_sparse_data([1, 2])
    w = p.row_sparse_data(nd.array([7, 2, 7], dtype="int64"))
    assert w.stype == "row_sparse" and w.shape == (V, D)
    assert w.indices.asnumpy().tolist() == [2, 7]
    np.testing.assert_array_equal(w.data.asnumpy(), np.full((2, D), 0.5))
    ws = p.list_row_sparse_data(nd.array([0]))
    assert len(ws) == 1 and ws[0].indices.asnumpy().tolist() == [0]
    with pytest.raises(RuntimeError, match="another Trainer"):
        gluon.Trainer([p], "sgd")
    # As in MXNet, the store's settings are checked when it is first made, not by the constructor.
    v = gluon.Parameter("v", shape=(2, 2), stype="row_sparse")
    v.initialize()
    refused = gluon.Trainer([v], "sgd", update_on_kvstore=False)
    with pytest.raises(ValueError, match="update_on_kvstore=False"):
        refused._init_kvstore()
    with pytest.raises(AssertionError, match="update_on_kvstore"):
        trainer.update(1)
    with pytest.raises(AssertionError, match="update_on_kvstore"):
        trainer.allreduce_grads()
    dense = gluon.Parameter("d", shape=(2, 2))
    dense.initialize()
    with pytest.raises(RuntimeError, match="row_sparse_data\\(\\) is for row_sparse parameters"):
        dense.row_sparse_data(nd.array([0]))
    with pytest.raises(AssertionError, match="expected stype and grad_stype"):
        gluon.Parameter("c", shape=(2, 2), stype="csr")
    np.testing.assert_array_equal(p._reduce().asnumpy(), np.full((V, D), 0.5))


def test_row_sparse_weight_needs_a_kvstore():
    p = gluon.Parameter("w", shape=(4, 2), stype="row_sparse")
    p.initialize()
    gluon.Trainer([p], "sgd", kvstore=None)
    with pytest.raises(TypeError, match="need a kvstore"):
        p.row_sparse_data(nd.array([0]))


class _Model(gluon.Block):
    """Embedding (sparse or dense weight) followed by a dense layer."""

    def __init__(self, kind, **kwargs):
        super().__init__(**kwargs)
        with self.name_scope():
            if kind == "sparse_weight":
                self.emb = SparseEmbedding(V, D)
            else:
                self.emb = gluon.nn.Embedding(V, D, sparse_grad=kind == "sparse_grad")
            self.out = gluon.nn.Dense(1, in_units=D)

    def forward(self, x):
        return self.out(self.emb(x).sum(axis=1))


def _train(kind, optimizer, params, steps=6):
    net = _Model(kind)
    net.initialize(mx.init.Constant(0.2))
    net.emb.weight.set_data(nd.array(_init_weight()))
    trainer = gluon.Trainer(net.collect_params(), optimizer, dict(params), kvstore="device")
    rng = np.random.RandomState(3)
    losses = []
    for _ in range(steps):
        x = nd.array(rng.randint(0, V // 2, (6, 4)))  # rows V/2.. are never used
        y = nd.array(rng.uniform(-1, 1, (6, 1)))
        with autograd.record():
            loss = ((net(x) - y) ** 2).mean()
        loss.backward()
        trainer.step(6)
        losses.append(float(loss.asscalar()))
    weight = net.emb.weight._reduce().asnumpy() if kind == "sparse_weight" else net.emb.weight.data().asnumpy()
    return np.array(losses), weight, net.out.weight.data().asnumpy()


@pytest.mark.parametrize("optimizer,params", [
    ("sgd", {"learning_rate": 0.3}),
    ("sgd", {"learning_rate": 0.3, "momentum": 0.9}),
    ("adam", {"learning_rate": 0.05}),
])
def test_sparse_weight_training_matches_dense_training(optimizer, params):
    # Lazy updates (the default) touch only the rows each step used, with a row_sparse
    # gradient and a dense weight alike.
    ls, ws, os_ = _train("sparse_weight", optimizer, params)
    lg, wg, og = _train("sparse_grad", optimizer, params)
    np.testing.assert_allclose(ls, lg, rtol=1e-5)
    np.testing.assert_allclose(ws, wg, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(os_, og, rtol=1e-5, atol=1e-6)
    assert ls[-1] < ls[0]
    # Without lazy updates every row moves: dense training's numbers.
    ls, ws, os_ = _train("sparse_weight", optimizer, dict(params, lazy_update=False))
    ld, wd, od = _train("dense", optimizer, params)
    np.testing.assert_allclose(ls, ld, rtol=1e-5)
    np.testing.assert_allclose(ws, wd, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(os_, od, rtol=1e-5, atol=1e-6)


def test_sparse_weight_updates_lazily_as_sparse_gradients_do():
    """Weight decay: the kvstore's update touches only the rows a step used (MXNet's lazy
    update), as a row_sparse gradient does with a dense weight, unlike a dense update."""
    params = {"learning_rate": 0.3, "wd": 0.1, "momentum": 0.5}
    ls, ws, _ = _train("sparse_weight", "sgd", params)
    lg, wg, _ = _train("sparse_grad", "sgd", params)
    _, wd, _ = _train("dense", "sgd", params)
    np.testing.assert_allclose(ls, lg, rtol=1e-5)
    np.testing.assert_allclose(ws, wg, rtol=1e-5, atol=1e-6)
    init = _init_weight()
    np.testing.assert_array_equal(ws[V // 2:], init[V // 2:])  # never used: untouched
    assert not np.allclose(wd[V // 2:], init[V // 2:])        # the dense update decays them


def test_sparse_weight_save_and_load(tmp_path):
    net = _Model("sparse_weight")
    net.initialize()
    trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.5})
    x = nd.array([[1, 2], [3, 1]])
    with autograd.record():
        loss = net(x).sum()
    loss.backward()
    trainer.step(2)
    full = net.emb.weight._reduce().asnumpy()
    path = str(tmp_path / "m.params")
    net.save_parameters(path)
    other = _Model("sparse_weight")
    other.load_parameters(path)
    other_trainer = gluon.Trainer(other.collect_params(), "sgd", {"learning_rate": 0.5})
    assert other_trainer is not None
    np.testing.assert_array_equal(other.emb.weight._reduce().asnumpy(), full)
    np.testing.assert_array_equal(other(x).asnumpy(), net(x).asnumpy())
    # The file holds a dense array, as MXNet's.
    assert nd.load(path)["emb.weight"].stype == "default"
