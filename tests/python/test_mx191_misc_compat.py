"""MXNet 1.9 behaviours that scripts and test suites rely on (issue 21): metric configs
round-tripped through JSON, KVStore.broadcast / is_capable / key-kind checks / sparse pulls."""
import json

import numpy as np
import pytest

import weft as mx


# ---------------------------------------------------------------- metric
@pytest.mark.parametrize("name,args,kwargs", [("acc", (), {"axis": 0}), ("f1", (), {}),
                                              ("perplexity", (-1,), {}), ("mse", (), {"name": "m"})])
def test_metric_create_from_json_config(name, args, kwargs):
    metric = mx.metric.create(name, *args, **kwargs)
    again = mx.metric.create(json.dumps(metric.get_config()))
    assert type(again) is type(metric)
    assert again.get_config() == metric.get_config()


def test_metric_create_from_bad_json():
    with pytest.raises(ValueError, match="not valid JSON"):
        mx.metric.create('{"metric": ')


# ---------------------------------------------------------------- kvstore
def test_kvstore_broadcast_inits_and_pulls():
    kv = mx.kv.create("local")
    assert isinstance(kv, mx.kv.KVStoreBase)
    assert kv.is_capable(mx.kv.KVStoreBase.OPTIMIZER)
    with pytest.raises(ValueError, match="unknown capability"):
        kv.is_capable("teleport")
    outs = [mx.nd.zeros((2, 3)), mx.nd.zeros((2, 3))]
    kv.broadcast(3, mx.nd.full((2, 3), 7), out=outs)
    for o in outs:
        np.testing.assert_array_equal(o.asnumpy(), np.full((2, 3), 7))
    lists = [[mx.nd.zeros((2,))], [mx.nd.zeros((2,))]]
    kv.broadcast([4, 5], [mx.nd.array([1, 2]), mx.nd.array([3, 4])], out=lists)
    np.testing.assert_array_equal(lists[1][0].asnumpy(), [3, 4])


def test_kvstore_refuses_mixed_key_types():
    kv = mx.kv.create("local")
    kv.init(1, mx.nd.ones((2,)))
    with pytest.raises(mx.base.MXNetError, match="mixed key types"):
        kv.init("a", mx.nd.ones((2,)))
    with pytest.raises(mx.base.MXNetError, match="mixed key types"):
        kv.pull(["a"], out=[mx.nd.ones((2,))])
    skv = mx.kv.create("local")
    with pytest.raises(mx.base.MXNetError, match="mixed key types"):
        skv.init([1, "b"], [mx.nd.ones((2,)), mx.nd.ones((2,))])


def test_kvstore_pull_into_sparse_outputs():
    kv = mx.kv.create("local")
    kv.init(0, mx.nd.array([[1, 2], [3, 4], [5, 6]]))
    out = (mx.nd.ones((3, 2)) * 9).tostype("row_sparse")
    kv.pull(0, out=out)  # ignore_sparse: the row_sparse output is left as it was
    np.testing.assert_array_equal(out.asnumpy(), np.full((3, 2), 9))
    kv.pull(0, out=out, ignore_sparse=False)
    assert out.stype == "row_sparse"
    np.testing.assert_array_equal(out.asnumpy(), [[1, 2], [3, 4], [5, 6]])
    with pytest.raises(mx.base.MXNetError, match="RowSparseNDArray"):
        kv.row_sparse_pull(0, out=mx.nd.ones((3, 2)), row_ids=mx.nd.array([1]))
