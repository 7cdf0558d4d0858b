"""Row-sparse updates of the optimizers MXNet 1.9 runs row by row for a row_sparse gradient
(FTRL, AdaGrad through _sparse_adagrad_update, GroupAdaGrad): the gradient's rows of the
weight and states get the dense update's values, and the other rows stay as they were."""
import numpy as np
import pytest

import weft as mx
from weft import nd

ROWS, COLS = 7, 3
TOUCHED = [1, 4, 5]


def _grad():
    g = np.zeros((ROWS, COLS), np.float32)
    g[TOUCHED] = np.random.RandomState(1).uniform(-1, 1, (len(TOUCHED), COLS))
    return g


def _start(shape, seed, low=-1.0):
    return np.random.RandomState(seed).uniform(low, 1, shape).astype(np.float32)


def _check_rows(sparse_result, dense_result, start):
    untouched = [r for r in range(ROWS) if r not in TOUCHED]
    np.testing.assert_allclose(sparse_result[TOUCHED], dense_result[TOUCHED], rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(sparse_result[untouched], start[untouched])


@pytest.mark.parametrize("op,states,params", [
    ("ftrl_update", [(ROWS, COLS), (ROWS, COLS)], {"lr": 0.1, "lamda1": 0.01, "beta": 1.0, "wd": 0.02}),
    ("adagrad_update", [(ROWS, COLS)], {"lr": 0.1, "epsilon": 1e-7, "wd": 0.05, "rescale_grad": 0.5}),
    ("_sparse_adagrad_update", [(ROWS, COLS)], {"lr": 0.1, "epsilon": 1e-7, "clip_gradient": 0.3}),
    ("_contrib_group_adagrad_update", [(ROWS, 1)], {"lr": 0.1, "epsilon": 1e-5}),
])
def test_update_op_with_row_sparse_grad_touches_only_its_rows(op, states, params):
    w0 = _start((ROWS, COLS), 0)
    # Histories and FTRL's n are sums of squares: non-negative.
    s0 = [_start(s, 10 + i, low=0.0) for i, s in enumerate(states)]
    g = _grad()
    fn = {"_sparse_adagrad_update": nd.sparse.adagrad_update,
          "_contrib_group_adagrad_update": nd.contrib.group_adagrad_update}.get(op, getattr(nd, op, None))
    # Dense reference: the same operator with the dense gradient.
    wd_, sd = nd.array(w0), [nd.array(s) for s in s0]
    fn(wd_, nd.array(g), *sd, out=wd_, **params)
    # Row-sparse gradient.
    ws, ss = nd.array(w0), [nd.array(s) for s in s0]
    out = fn(ws, nd.array(g).tostype("row_sparse"), *ss, out=ws, **params)
    assert out.stype == "default"
    _check_rows(ws.asnumpy(), wd_.asnumpy(), w0)
    for a, b, s in zip(ss, sd, s0):
        if s.shape[1] == 1:
            untouched = [r for r in range(ROWS) if r not in TOUCHED]
            np.testing.assert_allclose(a.asnumpy()[TOUCHED], b.asnumpy()[TOUCHED], rtol=1e-5, atol=1e-6)
            np.testing.assert_array_equal(a.asnumpy()[untouched], s[untouched])
        else:
            _check_rows(a.asnumpy(), b.asnumpy(), s)


def test_ftrl_dense_update_differs_on_untouched_rows():
    # Why FTRL needs the row path: its dense update rewrites every row from (z, n), so a
    # densified row_sparse gradient would change the rows the batch did not use.
    w0, z0, n0 = _start((ROWS, COLS), 0), _start((ROWS, COLS), 1), _start((ROWS, COLS), 2, low=0.0)
    w = nd.array(w0)
    nd.ftrl_update(w, nd.array(_grad()), nd.array(z0), nd.array(n0), out=w, lr=0.1)
    untouched = [r for r in range(ROWS) if r not in TOUCHED]
    assert not np.allclose(w.asnumpy()[untouched], w0[untouched])


def test_update_row_sparse_errors():
    w = nd.array(_start((ROWS, COLS), 0))
    g = nd.array(_grad()).tostype("row_sparse")
    with pytest.raises(mx.base.MXNetError, match="expected input 2 of shape \\(7,3\\)"):
        nd.ftrl_update(w, g, nd.zeros((ROWS, 2)), nd.zeros((ROWS, COLS)), out=w, lr=0.1)
    with pytest.raises(mx.base.MXNetError, match="expected input 2 of shape"):
        nd.contrib.group_adagrad_update(w, g, nd.zeros((ROWS, 2)), out=w, lr=0.1)


@pytest.mark.parametrize("name,params", [
    ("ftrl", {"learning_rate": 0.1, "lamda1": 0.01, "wd": 0.01}),
    ("adagrad", {"learning_rate": 0.1, "wd": 0.05}),
    ("groupadagrad", {"learning_rate": 0.1}),
])
def test_optimizer_row_sparse_grads_update_the_used_rows_as_dense(name, params):
    opt_sparse = mx.optimizer.create(name, **params)
    opt_dense = mx.optimizer.create(name, **params)
    w0 = _start((ROWS, COLS), 0)
    ws, wd_ = nd.array(w0), nd.array(w0)
    st_s, st_d = opt_sparse.create_state(0, ws), opt_dense.create_state(0, wd_)
    g = _grad()
    opt_sparse.update(0, ws, nd.array(g).tostype("row_sparse"), st_s)
    opt_dense.update(0, wd_, nd.array(g), st_d)
    _check_rows(ws.asnumpy(), wd_.asnumpy(), w0)
    # A second step on other rows leaves the first step's rows as they were.
    after_first = ws.asnumpy().copy()
    g2 = np.zeros_like(g)
    g2[[0, 6]] = 0.5
    opt_sparse.update(0, ws, nd.array(g2).tostype("row_sparse"), st_s)
    np.testing.assert_array_equal(ws.asnumpy()[TOUCHED], after_first[TOUCHED])
    assert not np.allclose(ws.asnumpy()[[0, 6]], after_first[[0, 6]])


@pytest.mark.parametrize("op,states,params", [
    ("sgd_update", [], {"lr": 0.1, "wd": 0.03}),
    ("sgd_mom_update", [(ROWS, COLS)], {"lr": 0.1, "momentum": 0.9, "wd": 0.03}),
    ("adam_update", [(ROWS, COLS), (ROWS, COLS)], {"lr": 0.1, "wd": 0.03}),
    ("ftrl_update", [(ROWS, COLS), (ROWS, COLS)], {"lr": 0.1, "lamda1": 0.01, "wd": 0.02}),
])
def test_row_sparse_weight_and_states_storing_every_row_update_lazily(op, states, params):
    # MXNet's optimizers hand a row_sparse weight (every row stored) and row_sparse states
    # to the update: the gradient's rows change, the others (wd included) stay as they were.
    w0 = _start((ROWS, COLS), 0)
    s0 = [_start(s, 10 + i, low=0.0) for i, s in enumerate(states)]
    g = _grad()
    fn = getattr(nd, op)
    wd_, sd = nd.array(w0), [nd.array(s) for s in s0]
    fn(wd_, nd.array(g), *sd, out=wd_, **params)
    ws = nd.array(w0).tostype("row_sparse")
    ss = [nd.array(s).tostype("row_sparse") for s in s0]
    assert ws.indices.shape == (ROWS,)
    fn(ws, nd.array(g).tostype("row_sparse"), *ss, out=ws, **params)
    assert ws.stype == "row_sparse"
    _check_rows(ws.asnumpy(), wd_.asnumpy(), w0)
    for a, b, s in zip(ss, sd, s0):
        _check_rows(a.asnumpy(), b.asnumpy(), s)


def test_row_sparse_weight_missing_rows_takes_the_dense_update():
    # A weight that does not store every row is not a dense array in disguise: the update
    # runs densely (every row decays) instead of writing into rows it does not hold.
    w0 = _start((ROWS, COLS), 0)
    w0[2] = 0
    w = nd.array(w0).tostype("row_sparse")
    assert w.indices.shape == (ROWS - 1,)
    g = nd.array(_grad()).tostype("row_sparse")
    out = nd.sgd_update(w, g, lr=0.1, wd=0.5)
    expected = (1 - 0.05) * w0 - 0.1 * _grad()
    np.testing.assert_allclose(out.asnumpy(), expected, rtol=1e-5, atol=1e-6)
