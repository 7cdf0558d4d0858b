"""Sparse gradient buffers seen from Python as MXNet's mutable sparse arrays: the buffer object
given to mark_variables holds the gradient after a backward, attach_grad's storage type
defaults to the array's, and detach keeps the storage type."""
import numpy as np
import pytest

import weft as mx


@pytest.mark.parametrize("stype", ["row_sparse", "csr"])
def test_mark_variables_sparse_buffer_receives_gradient(stype):
    x_np = np.array([[1.0, -2.0, 0.5], [0.0, 3.0, -1.5]], dtype=np.float32)
    x = mx.nd.array(x_np)
    buf = mx.nd.zeros(x.shape).tostype(stype)
    mx.autograd.mark_variables([x], [buf])
    with mx.autograd.record():
        y = (x * x * 2.0).sum()
    y.backward()
    assert buf.stype == stype
    np.testing.assert_allclose(buf.asnumpy(), 4.0 * x_np, rtol=1e-6)


def test_mark_variables_sparse_buffer_follows_every_backward_and_add():
    x = mx.nd.array(np.arange(6, dtype=np.float32).reshape(3, 2))
    buf = mx.nd.zeros(x.shape).tostype("row_sparse")
    mx.autograd.mark_variables([x], [buf], grad_reqs="add")
    for _ in range(2):
        with mx.autograd.record():
            y = (x * 3.0).sum()
        y.backward()
    np.testing.assert_allclose(buf.asnumpy(), np.full((3, 2), 6.0, np.float32))


def test_marking_again_detaches_the_old_buffer():
    x = mx.nd.ones((2, 2))
    old = mx.nd.zeros((2, 2)).tostype("row_sparse")
    mx.autograd.mark_variables([x], [old])
    new = mx.nd.zeros((2, 2)).tostype("row_sparse")
    mx.autograd.mark_variables([x], [new])
    with mx.autograd.record():
        y = (x * 5.0).sum()
    y.backward()
    np.testing.assert_allclose(new.asnumpy(), np.full((2, 2), 5.0, np.float32))
    np.testing.assert_allclose(old.asnumpy(), np.zeros((2, 2), np.float32))


@pytest.mark.parametrize("array_stype", ["default", "csr", "row_sparse"])
@pytest.mark.parametrize("grad_stype", [None, "default", "csr", "row_sparse"])
def test_attach_grad_stype_defaults_to_array_stype(array_stype, grad_stype):
    x = mx.nd.zeros((2, 3), stype=array_stype)
    x.attach_grad(stype=grad_stype)
    assert x.grad.stype == (array_stype if grad_stype is None else grad_stype)
    assert x.grad.shape == (2, 3)
    assert x.detach().stype == array_stype


def test_row_sparse_weight_gets_row_sparse_dot_gradient():
    lhs_np = np.array([[0.0, 2.0, 0.0, 1.0], [0.0, 0.0, 0.0, -3.0]], dtype=np.float32)
    lhs = mx.nd.array(lhs_np).tostype("csr")
    rhs = mx.nd.ones((4, 3)).tostype("row_sparse")
    rhs.attach_grad()
    with mx.autograd.record():
        y = mx.nd.dot(lhs, rhs)
    y.backward()
    assert rhs.grad.stype == "row_sparse"
    np.testing.assert_allclose(rhs.grad.asnumpy(), lhs_np.T.dot(np.ones((2, 3), np.float32)), rtol=1e-6)
