"""simple_bind with group2ctx on a graph with csr / row_sparse arguments (MXNet 1.9's
test_ctx_group_sparse): arrays on their group's context, values and gradients as numpy
computes them, and the same as without groups."""
import numpy as np
import pytest

import weft as mx
from weft import nd


def _net():
    with mx.AttrScope(ctx_group="stage1"):
        lhs = mx.sym.Variable("lhs", stype="csr")
        rhs = mx.sym.Variable("rhs", stype="row_sparse")
        dot = mx.sym.dot(lhs, rhs, name="dot")
    with mx.AttrScope(ctx_group="stage2"):
        return mx.sym.SoftmaxOutput(data=dot, name="softmax")


def _run(group2ctx):
    rs = np.random.RandomState(3)
    lhs = rs.rand(6, 8) * (rs.rand(6, 8) > 0.5)
    rhs = rs.rand(8, 3) * (rs.rand(8, 1) > 0.3)
    label = rs.randint(0, 3, 6)
    sym = _net()
    ex = sym.simple_bind(mx.cpu(0), group2ctx=group2ctx, lhs=(6, 8), rhs=(8, 3))
    out = ex.forward(is_train=True, lhs=nd.array(lhs).tostype("csr"), rhs=nd.array(rhs).tostype("row_sparse"),
                     softmax_label=nd.array(label))[0]
    ex.backward()
    logits = lhs @ rhs
    p = np.exp(logits - logits.max(1, keepdims=True))
    p /= p.sum(1, keepdims=True)
    dlogits = p - np.eye(3)[label]
    return ex, out, p, lhs, rhs, dlogits


def test_sparse_arrays_placed_by_group_and_gradients_cross_back():
    group2ctx = {"stage1": mx.cpu(1), "stage2": mx.cpu(2)}
    ex, out, p, lhs, rhs, dlogits = _run(group2ctx)
    where = dict(zip(_net().list_arguments(), ex.arg_arrays))
    assert where["lhs"].context == mx.cpu(1) and where["lhs"].stype == "csr"
    assert where["rhs"].context == mx.cpu(1) and where["rhs"].stype == "row_sparse"
    assert where["softmax_label"].context == mx.cpu(2)
    # Assigning an array from elsewhere keeps the bound array's context.
    assert ex.arg_dict["lhs"].context == mx.cpu(1)
    assert out.context == mx.cpu(2)
    np.testing.assert_allclose(out.asnumpy(), p, rtol=1e-5, atol=1e-6)
    grads = ex.grad_dict
    assert grads["lhs"].context == mx.cpu(1) and grads["rhs"].context == mx.cpu(1)
    assert grads["rhs"].stype == "row_sparse"
    np.testing.assert_allclose(grads["lhs"].asnumpy(), dlogits @ rhs.T, rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(grads["rhs"].asnumpy(), lhs.T @ dlogits, rtol=1e-4, atol=1e-6)
    _, plain_out, _, _, _, _ = _run(None)
    np.testing.assert_allclose(out.asnumpy(), plain_out.asnumpy(), rtol=1e-6)


def test_sparse_setitem_keeps_context():
    dst = nd.sparse.zeros("row_sparse", (4, 2), ctx=mx.cpu(3))
    src = nd.array([[0, 0], [1, 2], [0, 0], [3, 4]], ctx=mx.cpu(0)).tostype("row_sparse")
    dst[:] = src
    assert dst.context == mx.cpu(3) and dst.indices.context == mx.cpu(3)
    np.testing.assert_array_equal(dst.asnumpy(), src.asnumpy())
    csr = nd.sparse.zeros("csr", (2, 3), ctx=mx.cpu(1))
    csr[:] = np.array([[0, 5, 0], [6, 0, 0]])
    assert csr.context == mx.cpu(1)
    np.testing.assert_array_equal(csr.asnumpy(), [[0, 5, 0], [6, 0, 0]])


def test_unmapped_group_is_an_error():
    ex = _net().simple_bind(mx.cpu(0), group2ctx={"stage1": mx.cpu(1)}, lhs=(6, 8), rhs=(8, 3))
    with pytest.raises(mx.base.MXNetError, match="context group 'stage2', which group2ctx does not map"):
        ex.forward(is_train=True)
