"""mx.library.load: a shared library of operators built against weft/op_library.h alone
(tests/oplib/example_ops.c, built by CMake into build/tests/), its operators' values,
gradients and errors."""
import os
import shutil
import subprocess

import numpy as np
import pytest

import weft as mx
from weft.test_utils import check_numeric_gradient

_REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.fixture(scope="module")
def oplib(tmp_path_factory):
    path = os.environ.get("WEFT_TEST_OPLIB", os.path.join(_REPO, "build", "tests", "libweft_example_ops.so"))
    if not os.path.exists(path):
        # A checkout built elsewhere: compile the example the way CMake does.
        cc = shutil.which("cc") or shutil.which("gcc")
        if cc is None:
            pytest.skip("no C compiler to build the example library")
        path = str(tmp_path_factory.mktemp("oplib") / "libweft_example_ops.so")
        subprocess.run([cc, "-shared", "-fPIC", "-O2", "-I", os.path.join(_REPO, "c_api", "include"),
                        os.path.join(_REPO, "tests", "oplib", "example_ops.c"), "-o", path], check=True)
    names = mx.library.load(path, verbose=False)
    assert names == ["my_gemm", "my_scale", "my_fail"]
    return path


def test_load_is_idempotent_and_refuses_bad_files(oplib, tmp_path):
    assert mx.library.load(oplib, verbose=False) == ["my_gemm", "my_scale", "my_fail"]
    with pytest.raises(mx.base.MXNetError, match="no such file"):
        mx.library.load(str(tmp_path / "missing.so"))
    not_a_lib = tmp_path / "junk.so"
    not_a_lib.write_bytes(b"not an ELF file")
    with pytest.raises(mx.base.MXNetError, match="cannot load it"):
        mx.library.load(str(not_a_lib))
    weft_so = [f for f in os.listdir(os.path.dirname(mx.base.__file__)) if f.startswith("libweft.so")][0]
    with pytest.raises(mx.base.MXNetError, match="defines no weft_op_library_init"):
        mx.library.load(os.path.join(os.path.dirname(mx.base.__file__), weft_so))


def test_forward_values(oplib):
    a = np.random.rand(3, 4).astype(np.float32)
    b = np.random.rand(4, 5).astype(np.float32)
    c = mx.nd.my_gemm(mx.nd.array(a), mx.nd.array(b))
    np.testing.assert_allclose(c.asnumpy(), a @ b, rtol=1e-5)
    x = np.random.rand(2, 3)
    for dtype in (np.float32, np.float64):
        y = mx.nd.my_scale(mx.nd.array(x, dtype=dtype), alpha=2.5)
        assert y.dtype == dtype
        np.testing.assert_allclose(y.asnumpy(), 2.5 * x.astype(dtype) + 1, rtol=1e-6)
    # the default of the parameter, as the library reads it
    np.testing.assert_allclose(mx.nd.my_scale(mx.nd.array(x)).asnumpy(), x + 1, rtol=1e-6)


def test_gradients(oplib):
    a = np.random.rand(3, 4).astype(np.float32)
    b = np.random.rand(4, 2).astype(np.float32)
    xa, xb = mx.nd.array(a), mx.nd.array(b)
    xa.attach_grad()
    xb.attach_grad()
    head = np.random.rand(3, 2).astype(np.float32)
    with mx.autograd.record():
        c = mx.nd.my_gemm(xa, xb)
    c.backward(mx.nd.array(head))
    np.testing.assert_allclose(xa.grad.asnumpy(), head @ b.T, rtol=1e-5)
    np.testing.assert_allclose(xb.grad.asnumpy(), a.T @ head, rtol=1e-5)
    sym = mx.sym.my_gemm(mx.sym.Variable("a"), mx.sym.Variable("b"))
    assert sym.list_arguments() == ["a", "b"]
    check_numeric_gradient(sym, {"a": np.random.rand(2, 3), "b": np.random.rand(3, 4)}, numeric_eps=1e-3,
                           rtol=1e-2, atol=1e-3)
    scale = mx.sym.my_scale(mx.sym.Variable("x"), alpha=-1.5)
    check_numeric_gradient(scale, [np.random.rand(3, 3)], numeric_eps=1e-3, rtol=1e-2, atol=1e-3)


def test_gradient_accumulates_with_grad_req_add(oplib):
    sym = mx.sym.my_scale(mx.sym.Variable("x"), alpha=3)
    ex = sym.simple_bind(mx.cpu(), x=(2, 2), grad_req="add")
    ex.arg_dict["x"][:] = 1.0
    ex.grad_dict["x"][:] = 10.0
    for _ in range(2):
        ex.forward(is_train=True)
        ex.backward(mx.nd.ones((2, 2)))
    np.testing.assert_allclose(ex.grad_dict["x"].asnumpy(), np.full((2, 2), 16.0))


def test_errors(oplib):
    y = mx.nd.my_fail(mx.nd.ones((2,)))
    with pytest.raises(mx.base.MXNetError, match="my_fail: this operator always fails"):
        y.asnumpy()
    with pytest.raises(mx.base.MXNetError, match=r"my_gemm: expected \(n, k\) and \(k, m\) matrices"):
        mx.nd.my_gemm(mx.nd.ones((2, 3)), mx.nd.ones((2, 3)))
    with pytest.raises(mx.base.MXNetError, match="my_gemm: expected float32 inputs"):
        mx.nd.my_gemm(mx.nd.ones((2, 3), dtype=np.float64), mx.nd.ones((3, 2), dtype=np.float64))
