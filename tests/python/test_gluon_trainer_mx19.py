"""MXNet 1.9's gluon.Trainer internals that scripts touch: _updaters, _kvstore,
_update_on_kvstore, _init_kvstore, custom stores, save/load_states and the stale-gradient
check."""
import numpy as np
import pytest

import weft as mx
from weft import autograd, gluon, nd
from weft.gluon import nn


def _two_ctx_param(name="x", shape=(4,), **kwargs):
    p = gluon.Parameter(name, shape=shape, **kwargs)
    p.initialize(ctx=[mx.cpu(0), mx.cpu(1)], init="zeros")
    return p


def _backward_each(p, scales=None):
    """On context k the loss is scales[k] * sum(w): its gradient is scales[k] everywhere."""
    with autograd.record():
        losses = [(w * (1.0 if scales is None else scales[k])).sum() for k, w in enumerate(p.list_data())]
    for loss in losses:
        loss.backward()


def test_kvstore_attributes_before_and_after_init():
    p = _two_ctx_param()
    trainer = gluon.Trainer([p], "sgd", {"learning_rate": 1.0})
    assert isinstance(trainer._updaters, list) and len(trainer._updaters) == 2
    assert trainer._kvstore is None and trainer._update_on_kvstore is None and not trainer._kv_initialized
    trainer._init_kvstore()
    assert trainer._kvstore.type == "device" and trainer._update_on_kvstore is True
    assert trainer._kvstore._updater is not None


def test_one_context_needs_no_store():
    p = gluon.Parameter("x", shape=(3,))
    p.initialize(init="zeros")
    trainer = gluon.Trainer([p], "sgd", {"learning_rate": 1.0})
    _backward_each(p)
    trainer.step(1)
    assert trainer._kvstore is None and trainer._update_on_kvstore is None
    assert trainer._optimizer is trainer._updaters[0].optimizer
    np.testing.assert_array_equal(p.data().asnumpy(), -np.ones(3))


@pytest.mark.parametrize("update_on_kvstore", [None, True, False])
def test_contexts_reduced_through_the_store(update_on_kvstore):
    p = _two_ctx_param()
    trainer = gluon.Trainer([p], "sgd", {"learning_rate": 0.5}, update_on_kvstore=update_on_kvstore)
    _backward_each(p, scales=[1.0, 3.0])
    trainer.step(1)
    assert trainer._update_on_kvstore is (update_on_kvstore is not False)
    for w in p.list_data():
        np.testing.assert_allclose(w.asnumpy(), np.full(4, -2.0))


def test_environment_turns_updates_on_the_store_off(monkeypatch):
    monkeypatch.setenv("MXNET_UPDATE_ON_KVSTORE", "0")
    p = _two_ctx_param()
    trainer = gluon.Trainer([p], "sgd", {"learning_rate": 1.0})
    trainer._init_kvstore()
    assert trainer._update_on_kvstore is False


def test_no_store_leaves_the_contexts_apart():
    # kvstore=None: MXNet reduces nothing; each context is updated with its own gradient.
    p = _two_ctx_param()
    trainer = gluon.Trainer([p], "sgd", {"learning_rate": 1.0}, kvstore=None)
    _backward_each(p, scales=[1.0, 3.0])
    trainer.step(1)
    assert trainer._kvstore is None
    np.testing.assert_array_equal(p.data(mx.cpu(0)).asnumpy(), np.full(4, -1.0))
    np.testing.assert_array_equal(p.data(mx.cpu(1)).asnumpy(), np.full(4, -3.0))


def test_reduce_and_update_separately_only_off_the_store():
    p = _two_ctx_param()
    trainer = gluon.Trainer([p], "sgd", {"learning_rate": 1.0})
    with pytest.raises(AssertionError, match="update_on_kvstore"):
        trainer.allreduce_grads()
    with pytest.raises(AssertionError, match="update_on_kvstore"):
        trainer.update(1)
    split = gluon.Trainer([p], "sgd", {"learning_rate": 1.0}, update_on_kvstore=False)
    _backward_each(p, scales=[0.0, 2.0])
    split.allreduce_grads()
    for g in p.list_grad():
        np.testing.assert_array_equal(g.asnumpy(), np.full(4, 2.0))
    split.update(1)
    for w in p.list_data():
        np.testing.assert_array_equal(w.asnumpy(), np.full(4, -2.0))


def test_teststore_cannot_update():
    p = _two_ctx_param()
    kv = mx.kv.create("teststore")
    trainer = gluon.Trainer([p], "sgd", {"learning_rate": 1.0}, kvstore=kv)
    _backward_each(p)
    trainer.step(1)
    assert trainer._update_on_kvstore is False
    np.testing.assert_array_equal(p.data(mx.cpu(1)).asnumpy(), np.full(4, -2.0))
    refused = gluon.Trainer([p], "sgd", kvstore=kv, update_on_kvstore=True)
    with pytest.raises(ValueError, match="update_on_kvstore=True is not possible with TestStore"):
        refused._init_kvstore()


def test_registered_store_is_used_through_its_interface():
    calls = []

    @mx.kv.KVStoreBase.register
    class CountingStore(mx.kv.KVStoreBase):  # pylint: disable=unused-variable
        def broadcast(self, key, value, out, priority=0):
            calls.append(("broadcast", key))
            for o in out:
                value.copyto(o)

        def pushpull(self, key, value, out=None, priority=0):
            calls.append(("pushpull", key))
            total = value[0].copy()
            for v in value[1:]:
                total += v.as_in_context(total.context)
            for o in (value if out is None else out):
                total.copyto(o)

        @staticmethod
        def is_capable(capability):
            return False

        @property
        def type(self):
            return "countingstore"

    p = _two_ctx_param()
    trainer = gluon.Trainer([p], "sgd", {"learning_rate": 1.0}, kvstore="countingstore")
    _backward_each(p, scales=[1.0, 2.0])
    trainer.step(1)
    assert calls == [("broadcast", 0), ("pushpull", 0)]
    assert trainer._update_on_kvstore is False
    for w in p.list_data():
        np.testing.assert_array_equal(w.asnumpy(), np.full(4, -3.0))


def test_save_and_load_states_keep_the_parameters_and_one_optimizer(tmp_path):
    for update_on_kvstore in (True, False):
        p = _two_ctx_param(lr_mult=1.0)
        trainer = gluon.Trainer([p], "sgd", {"learning_rate": 0.1, "momentum": 0.5},
                                update_on_kvstore=update_on_kvstore)
        _backward_each(p)
        trainer.step(1)
        fname = str(tmp_path / ("t%d.states" % update_on_kvstore))
        trainer.save_states(fname)
        trainer.load_states(fname)
        p.lr_mult = 2.0
        if update_on_kvstore:
            assert trainer._optimizer is trainer._kvstore._updater.optimizer
        else:
            assert all(u.optimizer is trainer._optimizer for u in trainer._updaters)
        assert trainer._optimizer._get_lr(0) == pytest.approx(0.2)


def test_new_data_restarts_the_store():
    p = _two_ctx_param()
    trainer = gluon.Trainer([p], "sgd", {"learning_rate": 0.1})
    _backward_each(p)
    trainer.step(1)
    p.set_data(nd.zeros((4,)))
    assert trainer._kvstore is None and not trainer._kv_initialized
    _backward_each(p)
    trainer.step(1)
    for w in p.list_data():
        np.testing.assert_allclose(w.asnumpy(), np.full(4, -0.2), rtol=1e-6)


@pytest.mark.parametrize("hybridize", [False, True])
def test_stale_gradient_is_named_or_skipped(hybridize):
    used, unused = nn.Dense(2, in_units=3, prefix="used_"), nn.Dense(2, in_units=3, prefix="unused_")
    for b in (used, unused):
        b.initialize(mx.init.One())
        if hybridize:
            b.hybridize()
    params = dict(used.collect_params())
    params.update(unused.collect_params())
    trainer = gluon.Trainer(params, "sgd", {"learning_rate": 1.0})
    with autograd.record():
        loss = used(nd.ones((1, 3))).sum()
    loss.backward()
    with pytest.raises(UserWarning, match="unused_bias.*ignore_stale_grad"):
        trainer.step(1)
    trainer.step(1, ignore_stale_grad=True)
    np.testing.assert_array_equal(used.weight.data().asnumpy(), np.zeros((2, 3)))
    np.testing.assert_array_equal(unused.weight.data().asnumpy(), np.ones((2, 3)))
    # The step consumed the gradients: without a new backward every parameter is stale.
    with pytest.raises(UserWarning, match="used_"):
        trainer.step(1)


def test_row_sparse_weight_on_two_contexts():
    w = gluon.Parameter("emb", shape=(4, 2), stype="row_sparse", grad_stype="row_sparse")
    w.initialize(mx.init.One(), ctx=[mx.cpu(1), mx.cpu(2)])
    trainer = gluon.Trainer([w], "sgd", {"learning_rate": 1.0})
    rows = nd.array([0, 2])
    with autograd.record():
        losses = [nd.Embedding(rows.as_in_context(e.context), e, input_dim=4, output_dim=2, sparse_grad=True).sum()
                  for e in w.list_row_sparse_data(rows)]
    for loss in losses:
        loss.backward()
    trainer.step(1)
    assert trainer._update_on_kvstore is True
    got = w.row_sparse_data(nd.arange(0, 4, ctx=mx.cpu(1))).tostype("default").asnumpy()
    np.testing.assert_array_equal(got, [[-1, -1], [1, 1], [-1, -1], [1, 1]])
    v = gluon.Parameter("v", shape=(2, 2), stype="row_sparse")
    v.initialize()
    with pytest.raises(ValueError, match="update_on_kvstore=False"):
        gluon.Trainer([v], "sgd", update_on_kvstore=False)._init_kvstore()


def test_sparse_copy_between_contexts():
    a = nd.sparse.row_sparse_array((np.array([[1.0, 2.0]], dtype=np.float32), np.array([3])), shape=(5, 2))
    b = a.copyto(mx.cpu(1))
    assert b.stype == "row_sparse" and b.context == mx.cpu(1)
    np.testing.assert_array_equal(b.tostype("default").asnumpy(), a.tostype("default").asnumpy())
    c = nd.sparse.zeros("row_sparse", (5, 2), ctx=mx.cpu(2))
    a.copyto(c)
    assert c.context == mx.cpu(2)
    np.testing.assert_array_equal(c.tostype("default").asnumpy(), a.tostype("default").asnumpy())
