"""Shape and dtype errors carry MXNet 1.9's key phrases (what scripts and users search for)
as well as Weft's own "has X but the operator expects Y", and are raised at the call that
makes the mistake, imperatively as in graphs."""
import numpy as np
import pytest

import weft as mx
from weft.base import MXNetError


def test_elementwise_shape_mismatch():
    a, b = mx.nd.ones((2, 3)), mx.nd.ones((3, 2))
    # raised by the call itself: nothing waits on a result
    with pytest.raises(MXNetError) as err:
        mx.nd.elemwise_add(a, b)
    msg = str(err.value)
    assert "Incompatible attr in node  at 1-th input: expected [2,3], got [3,2]" in msg
    assert "input 'rhs' has shape (3,2) but the operator expects (2,3)" in msg


def test_broadcast_mismatch():
    a, c = mx.nd.ones((2, 3)), mx.nd.ones((4, 3))
    for call in (lambda: a + c, lambda: mx.nd.broadcast_add(a, c), lambda: mx.nd.broadcast_mul(c, a)):
        with pytest.raises(MXNetError, match=r"operands could not be broadcast together with shapes "
                                             r"\[(2,3|4,3)\] \[(4,3|2,3)\].*cannot be broadcast together"):
            call()


def test_fully_connected_weight_and_bias_shapes():
    data = mx.nd.ones((2, 4))
    with pytest.raises(MXNetError, match=r"Shape inconsistent, Provided = \[5,3\], inferred shape=\[5,4\]: "
                                         r"input 'weight' has shape \(5,3\)"):
        mx.nd.FullyConnected(data, mx.nd.ones((5, 3)), mx.nd.ones((5,)), num_hidden=5)
    with pytest.raises(MXNetError, match=r"Shape inconsistent, Provided = \[6\], inferred shape=\[5\]"):
        mx.nd.FullyConnected(data, mx.nd.ones((5, 4)), mx.nd.ones((6,)), num_hidden=5)


def test_convolution_weight_shape():
    with pytest.raises(MXNetError, match=r"Shape inconsistent, Provided = \[4,2,3,3\], inferred shape=\[4,3,3,3\].*"
                                         r"input 'weight' has shape \(4,2,3,3\) but the operator expects \(4,3,3,3\)"):
        mx.nd.Convolution(mx.nd.ones((1, 3, 8, 8)), mx.nd.ones((4, 2, 3, 3)), mx.nd.ones((4,)), kernel=(3, 3),
                          num_filter=4)


def test_binary_dtype_mismatch():
    a, b = mx.nd.ones((2, 3)), mx.nd.ones((2, 3), dtype="float64")
    for call in (lambda: a + b, lambda: mx.nd.elemwise_add(a, b), lambda: mx.nd.broadcast_mul(a, b)):
        with pytest.raises(MXNetError, match="Incompatible attr in node  at 1-th input: expected float32, got float64"
                                             ".*has dtype float64 but the operator expects float32"):
            call()


def test_reshape_to_another_size():
    a = mx.nd.ones((2, 3))
    with pytest.raises(MXNetError, match=r"Target shape size is different to source\. Target: \[4,2\] Source: \[2,3\]"
                                         r".*the result \(4,2\) has 8 elements, the input 6"):
        mx.nd.reshape(a, shape=(4, 2))
    with pytest.raises(MXNetError, match=r"target shape must have the same size as current shape.*shape \(2,3\) "
                                         r"\(6 elements\) into \(4,2\)"):
        a.reshape((4, 2))
    x = mx.sym.var("x")
    with pytest.raises(MXNetError, match=r"Error in operator r: .*Target shape size is different to source"):
        mx.sym.reshape(x, shape=(4, 2), name="r").infer_shape(x=(2, 3))


def test_symbolic_inference_errors():
    x, y = mx.sym.var("x"), mx.sym.var("y")
    plus = mx.sym.elemwise_add(x, y, name="plus")
    with pytest.raises(MXNetError, match=r"Error in operator plus: .*Incompatible attr in node plus at 1-th input: "
                                         r"expected \[2,3\], got \[3,2\]"):
        plus.infer_shape(x=(2, 3), y=(3, 2))
    with pytest.raises(MXNetError, match=r"Error in operator plus: .*Incompatible attr in node plus at 1-th input: "
                                         r"expected float32, got float64"):
        plus.infer_type(x="float32", y="float64")
    fc = mx.sym.FullyConnected(x, num_hidden=5, name="fc1")
    with pytest.raises(MXNetError, match=r"Error in operator fc1: .*Shape inconsistent, Provided = \[5,3\], "
                                         r"inferred shape=\[5,4\]"):
        fc.infer_shape(x=(2, 4), fc1_weight=(5, 3))
    with pytest.raises(MXNetError, match=r"Error in operator ba: .*operands could not be broadcast together with "
                                         r"shapes \[2,3\] \[4,3\]"):
        mx.sym.broadcast_add(x, y, name="ba").infer_shape(x=(2, 3), y=(4, 3))


def test_bind_errors():
    x = mx.sym.var("x")
    fc = mx.sym.FullyConnected(x, num_hidden=5, name="fc1")
    with pytest.raises(ValueError, match=r"key `fc1_weight` is missing in `args` \(args lacks \['fc1_weight', "
                                         r"'fc1_bias'\]\)"):
        fc.bind(mx.cpu(), {"x": mx.nd.ones((2, 4))})
    with pytest.raises(ValueError, match="Length of args does not match the number of arguments: expected 3 args"):
        fc.bind(mx.cpu(), [mx.nd.ones((2, 4))])
    with pytest.raises(MXNetError, match="InferShape pass cannot decide shapes for the following arguments.*"
                                         "unknown: x None, fc1_weight None, fc1_bias None"):
        fc.simple_bind(mx.cpu())
    # a bound executor fed the wrong shape at forward time says which argument, before running
    ex = fc.simple_bind(mx.cpu(), x=(2, 4))
    with pytest.raises(ValueError, match=r"Shape not match! Argument x, need: \(2, 4\), received: \(3, 4\)"):
        ex.forward(x=mx.nd.ones((3, 4)))
    with pytest.raises(ValueError, match=r"need: \(2, 4\), received: \(4,\)"):
        ex.forward(x=np.ones(4))
    out = ex.forward(x=mx.nd.ones((2, 4)))[0]
    np.testing.assert_array_equal(out.asnumpy(), np.zeros((2, 5)))
