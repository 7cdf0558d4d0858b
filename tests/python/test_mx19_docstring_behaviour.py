"""Behaviour that MXNet 1.9.1's docstrings and operator descriptions show by example
(`help(mx.nd.X)`), checked with values worked out by hand or with numpy."""
import json

import numpy as np
import pytest

import weft as mx


# ---------------------------------------------------------------- NDArray methods
def test_ndarray_slice_assign_scalar_writes_in_place_and_returns_self():
    x = mx.nd.ones((2, 2, 2))
    y = x.slice_assign_scalar(0, (0, 0, None), (1, 1, None), (None, None, None))
    assert y is x
    want = np.ones((2, 2, 2), np.float32)
    want[0, 0, :] = 0
    np.testing.assert_array_equal(x.asnumpy(), want)


def test_ndarray_slice_assign_with_steps():
    x = mx.nd.array(np.arange(24).reshape(4, 6))
    rhs = mx.nd.array(-np.arange(6).reshape(2, 3) - 1)
    y = x.slice_assign(rhs, (0, 1), (4, 6), (2, 2))
    assert y is x
    want = np.arange(24, dtype=np.float32).reshape(4, 6)
    want[0:4:2, 1:6:2] = -np.arange(6).reshape(2, 3) - 1
    np.testing.assert_array_equal(x.asnumpy(), want)


def test_ndarray_slice_assign_shape_mismatch_is_an_error():
    x = mx.nd.ones((2, 3))
    with pytest.raises(mx.base.MXNetError):
        x.slice_assign(mx.nd.zeros((2, 2)), (0, 0), (1, 3), (None, None)).wait_to_read()


def test_ndarray_python2_division_names():
    x = mx.nd.full((2, 3), 4.0)
    y = mx.nd.full((2, 3), 2.0)
    np.testing.assert_array_equal(x.__div__(y).asnumpy(), np.full((2, 3), 2.0))
    np.testing.assert_array_equal(x.__rdiv__(y).asnumpy(), np.full((2, 3), 0.5))
    np.testing.assert_array_equal(x.__rdiv__(1).asnumpy(), np.full((2, 3), 0.25))
    z = x.__idiv__(8)
    np.testing.assert_array_equal(x.asnumpy(), np.full((2, 3), 0.5))
    assert z is x


# ---------------------------------------------------------------- Symbol
def test_symbol_negation_is_mul_scalar_minus_one():
    a = mx.sym.Variable("a")
    neg = -a
    nodes = json.loads(neg.tojson())["nodes"]
    assert nodes[-1]["op"] == "_mul_scalar"
    assert float(nodes[-1]["attrs"]["scalar"]) == -1.0
    assert neg.name.startswith("_mulscalar")
    out = neg.eval(ctx=mx.cpu(), a=mx.nd.array([[1, -2, 3]]))[0]
    np.testing.assert_array_equal(out.asnumpy(), [[-1, 2, -3]])


def test_symbol_python2_division_names():
    x, y = mx.sym.Variable("x"), mx.sym.Variable("y")
    args = dict(ctx=mx.cpu(), x=mx.nd.full((2, 3), 3.0), y=mx.nd.ones((2, 3)))
    np.testing.assert_allclose(x.__rdiv__(y).eval(**args)[0].asnumpy(), np.full((2, 3), 1 / 3.0), rtol=1e-6)
    np.testing.assert_allclose(x.__div__(y).eval(**args)[0].asnumpy(), np.full((2, 3), 3.0))
    np.testing.assert_allclose(x.__rdiv__(6).eval(**args)[0].asnumpy(), np.full((2, 3), 2.0))
