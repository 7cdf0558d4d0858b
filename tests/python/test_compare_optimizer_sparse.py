"""test_utils.compare_optimizer with row_sparse weights and gradients (MXNet 1.9's helper):
opt2 updates the sparse arrays, opt1 the dense copies, and the weights must agree."""
import numpy as np
import pytest

import weft as mx
from weft.test_utils import compare_optimizer


@pytest.mark.parametrize("w_stype,g_stype", [("row_sparse", "row_sparse"), ("default", "row_sparse"),
                                             ("row_sparse", "default")])
def test_group_adagrad_sparse_matches_dense(w_stype, g_stype):
    mx.random.seed(3)
    make = mx.optimizer.contrib.GroupAdaGrad
    compare_optimizer(make(learning_rate=0.1, wd=0.0), make(learning_rate=0.1, wd=0.0), (5, 4), np.float32,
                      w_stype=w_stype, g_stype=g_stype, compare_states=False)


def test_sgd_row_sparse_weight_matches_dense():
    mx.random.seed(4)
    make = mx.optimizer.SGD
    compare_optimizer(make(learning_rate=0.2, lazy_update=False), make(learning_rate=0.2, lazy_update=False),
                      (6, 3), np.float32, w_stype="row_sparse", g_stype="default")


def test_sparse_compare_optimizer_detects_a_different_update():
    mx.random.seed(5)
    with pytest.raises(AssertionError):
        compare_optimizer(mx.optimizer.SGD(learning_rate=0.2), mx.optimizer.SGD(learning_rate=0.7), (6, 3),
                          np.float32, w_stype="row_sparse", g_stype="default")


def test_several_shapes_refuse_sparse():
    with pytest.raises(NotImplementedError, match="several shapes"):
        compare_optimizer(mx.optimizer.SGD(), mx.optimizer.SGD(), [(2, 2), (3,)], np.float32,
                          w_stype="row_sparse", ntensors=2)
