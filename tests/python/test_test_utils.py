"""weft.test_utils behaves as MXNet's helpers do, including failing when it should."""
import os
import sys

import numpy as np
import pytest

import weft as mx
from weft import nd
from weft import test_utils as tu


def test_almost_equal_and_assert():
    a = np.array([1.0, 2.0, 3.0])
    assert tu.almost_equal(a, a + 1e-9)
    assert not tu.almost_equal(a, a + 1e-2)
    tu.assert_almost_equal(nd.array(a), a, rtol=1e-6)
    with pytest.raises(AssertionError, match="1 of 3 elements differ"):
        tu.assert_almost_equal(a, np.array([1.0, 2.5, 3.0]), rtol=1e-3, atol=1e-3)
    with pytest.raises(AssertionError):
        tu.assert_almost_equal(np.array([np.nan]), np.array([np.nan]))
    tu.assert_almost_equal(np.array([np.nan]), np.array([np.nan]), equal_nan=True)
    assert tu.same(nd.array([1, 2]), np.array([1, 2], np.float32))
    assert not tu.same(np.array([1, 2]), np.array([1, 3]))


def test_default_context():
    assert tu.default_context() == mx.cpu()
    tu.set_default_context(mx.cpu(0))
    assert tu.default_context() == mx.cpu(0)


def test_random_shapes_and_arrays():
    for _ in range(20):
        s2, s3, sn = tu.rand_shape_2d(4, 5), tu.rand_shape_3d(), tu.rand_shape_nd(4, 3)
        assert len(s2) == 2 and 1 <= s2[0] <= 4 and 1 <= s2[1] <= 5
        assert len(s3) == 3 and len(sn) == 4 and all(1 <= d <= 3 for d in sn)
    r = tu.rand_ndarray((3, 4), dtype=np.float64)
    assert r.shape == (3, 4) and r.dtype == np.float64
    # Standard normal values, as MXNet's rand_ndarray (it draws through random_arrays).
    assert np.all(np.isfinite(r.asnumpy())) and r.asnumpy().std() > 0
    one = tu.random_arrays((2, 3))
    assert isinstance(one, np.ndarray) and one.shape == (2, 3)
    two = tu.random_arrays((2,), (3, 1))
    assert [a.shape for a in two] == [(2,), (3, 1)]


def test_np_reduce():
    x = np.arange(24.0).reshape(2, 3, 4)
    assert np.array_equal(tu.np_reduce(x, (0, 2), True, np.sum), x.sum(axis=(0, 2), keepdims=True))
    assert np.array_equal(tu.np_reduce(x, 1, False, np.max), x.max(axis=1))


def test_numeric_grad_and_check_numeric_gradient():
    x = np.random.uniform(0.5, 2, size=(2, 3))
    g = tu.numeric_grad(lambda v: float(np.sum(v[0] ** 3)), [x.copy()], eps=1e-5)[0]
    np.testing.assert_allclose(g, 3 * x ** 2, rtol=1e-6)
    tu.check_numeric_gradient("square", [x], numeric_eps=1e-5, rtol=1e-4)
    tu.check_numeric_gradient(nd.broadcast_mul, [x, x[:1]], numeric_eps=1e-5, rtol=1e-4)
    # `take` gives its index input a zero gradient, which is not the derivative of the
    # value in the index (it jumps where the index rounds): the check must reject it.
    with pytest.raises(AssertionError, match=r"analytic take\[1\]"):
        tu.check_numeric_gradient("take", [x, np.array([1.0, 0.0])], numeric_eps=1e-5)


def test_assert_exception():
    tu.assert_exception(lambda: nd.ones((2, 2)).reshape((3, 3)), mx.MXNetError)
    with pytest.raises(AssertionError):
        tu.assert_exception(lambda: None, ValueError)


def test_environment_sets_and_restores():
    os.environ.pop("WEFT_TEST_VAR", None)
    with tu.environment("WEFT_TEST_VAR", "1"):
        assert os.environ["WEFT_TEST_VAR"] == "1"
        with tu.environment({"WEFT_TEST_VAR": None}):
            assert "WEFT_TEST_VAR" not in os.environ
        assert os.environ["WEFT_TEST_VAR"] == "1"
    assert "WEFT_TEST_VAR" not in os.environ


def test_discard_stderr(capfd):
    with tu.discard_stderr():
        os.write(2, b"hidden\n")
    os.write(2, b"shown\n")
    err = capfd.readouterr().err
    assert "hidden" not in err and "shown" in err


def test_retry():
    calls = []

    @tu.retry(3)
    def flaky():
        calls.append(1)
        assert len(calls) >= 2

    flaky()
    assert len(calls) == 2

    @tu.retry(2)
    def always():
        raise AssertionError("no")

    with pytest.raises(AssertionError):
        always()


def test_check_consistency_takes_one_symbol_per_entry():
    data = mx.sym.var("data")
    ctx = {"ctx": mx.cpu(), "data": (3, 4)}
    gt = mx.test_utils.check_consistency([mx.sym.abs(data), abs(data)], ctx_list=[ctx, ctx])
    assert gt["data"].shape == (3, 4)
    with pytest.raises(AssertionError):
        mx.test_utils.check_consistency([mx.sym.abs(data), mx.sym.negative(data)], ctx_list=[ctx, ctx])
    with pytest.raises(ValueError, match="2 symbols for 1 ctx_list entries"):
        mx.test_utils.check_consistency([data, data], ctx_list=[ctx])
