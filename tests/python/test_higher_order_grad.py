"""Gradients of gradients: autograd.grad(..., create_graph=True) differentiated again.

Every `_backward_<op>` operator has a gradient built from differentiable operators, so the
n-th derivative of a unary function comes out of n nested autograd.grad calls. Each order is
compared with its closed form in numpy; the backward operators' own gradients are checked
against central differences."""
import math

import numpy as np
import pytest

import weft as mx
from weft import autograd, nd
from weft.test_utils import check_numeric_gradient

LN2, LN10 = math.log(2.0), math.log(10.0)
SQRT_PI = math.sqrt(math.pi)


def _sig(x):
    return 1 / (1 + np.exp(-x))


# name -> (domain (low, high), [f', f'', f'''] in numpy; None where an order is not checked)
UNARY = {
    "sin": ((-3, 3), [np.cos, lambda x: -np.sin(x), lambda x: -np.cos(x)]),
    "cos": ((-3, 3), [lambda x: -np.sin(x), lambda x: -np.cos(x), np.sin]),
    "tan": ((-1.2, 1.2), [lambda x: 1 + np.tan(x) ** 2,
                          lambda x: 2 * np.tan(x) * (1 + np.tan(x) ** 2),
                          lambda x: (1 + np.tan(x) ** 2) * (2 + 6 * np.tan(x) ** 2)]),
    "sinh": ((-2, 2), [np.cosh, np.sinh, np.cosh]),
    "cosh": ((-2, 2), [np.sinh, np.cosh, np.sinh]),
    "tanh": ((-2, 2), [lambda x: 1 - np.tanh(x) ** 2,
                       lambda x: -2 * np.tanh(x) * (1 - np.tanh(x) ** 2),
                       lambda x: (1 - np.tanh(x) ** 2) * (6 * np.tanh(x) ** 2 - 2)]),
    "arcsin": ((-0.9, 0.9), [lambda x: (1 - x * x) ** -0.5, lambda x: x * (1 - x * x) ** -1.5,
                             lambda x: (1 + 2 * x * x) * (1 - x * x) ** -2.5]),
    "arccos": ((-0.9, 0.9), [lambda x: -(1 - x * x) ** -0.5, lambda x: -x * (1 - x * x) ** -1.5,
                             lambda x: -(1 + 2 * x * x) * (1 - x * x) ** -2.5]),
    "arctan": ((-3, 3), [lambda x: 1 / (1 + x * x), lambda x: -2 * x / (1 + x * x) ** 2,
                         lambda x: (6 * x * x - 2) / (1 + x * x) ** 3]),
    "arcsinh": ((-3, 3), [lambda x: (x * x + 1) ** -0.5, lambda x: -x * (x * x + 1) ** -1.5,
                          lambda x: (2 * x * x - 1) * (x * x + 1) ** -2.5]),
    "arccosh": ((1.2, 3), [lambda x: (x * x - 1) ** -0.5, lambda x: -x * (x * x - 1) ** -1.5,
                           lambda x: (2 * x * x + 1) * (x * x - 1) ** -2.5]),
    "arctanh": ((-0.9, 0.9), [lambda x: 1 / (1 - x * x), lambda x: 2 * x / (1 - x * x) ** 2,
                              lambda x: (2 + 6 * x * x) / (1 - x * x) ** 3]),
    "exp": ((-2, 2), [np.exp, np.exp, np.exp]),
    "expm1": ((-2, 2), [np.exp, np.exp, np.exp]),
    "log": ((0.5, 3), [lambda x: 1 / x, lambda x: -1 / x ** 2, lambda x: 2 / x ** 3]),
    "log2": ((0.5, 3), [lambda x: 1 / (x * LN2), lambda x: -1 / (x ** 2 * LN2), lambda x: 2 / (x ** 3 * LN2)]),
    "log10": ((0.5, 3), [lambda x: 1 / (x * LN10), lambda x: -1 / (x ** 2 * LN10),
                         lambda x: 2 / (x ** 3 * LN10)]),
    "log1p": ((-0.5, 3), [lambda x: 1 / (1 + x), lambda x: -1 / (1 + x) ** 2, lambda x: 2 / (1 + x) ** 3]),
    "sqrt": ((0.5, 3), [lambda x: 0.5 * x ** -0.5, lambda x: -0.25 * x ** -1.5, lambda x: 0.375 * x ** -2.5]),
    "rsqrt": ((0.5, 3), [lambda x: -0.5 * x ** -1.5, lambda x: 0.75 * x ** -2.5, lambda x: -1.875 * x ** -3.5]),
    "cbrt": ((0.5, 3), [lambda x: x ** (-2 / 3) / 3, lambda x: -2 / 9 * x ** (-5 / 3),
                        lambda x: 10 / 27 * x ** (-8 / 3)]),
    "rcbrt": ((0.5, 3), [lambda x: -x ** (-4 / 3) / 3, lambda x: 4 / 9 * x ** (-7 / 3),
                         lambda x: -28 / 27 * x ** (-10 / 3)]),
    "reciprocal": ((0.5, 3), [lambda x: -1 / x ** 2, lambda x: 2 / x ** 3, lambda x: -6 / x ** 4]),
    "square": ((-3, 3), [lambda x: 2 * x, lambda x: 2 + 0 * x, lambda x: 0 * x]),
    "abs": ((-3, 3), [np.sign, lambda x: 0 * x, lambda x: 0 * x]),
    "degrees": ((-3, 3), [lambda x: 180 / math.pi + 0 * x, lambda x: 0 * x, lambda x: 0 * x]),
    "radians": ((-3, 3), [lambda x: math.pi / 180 + 0 * x, lambda x: 0 * x, lambda x: 0 * x]),
    "relu": ((-3, 3), [lambda x: (x > 0).astype(x.dtype), lambda x: 0 * x, lambda x: 0 * x]),
    "sigmoid": ((-3, 3), [lambda x: _sig(x) * (1 - _sig(x)),
                          lambda x: _sig(x) * (1 - _sig(x)) * (1 - 2 * _sig(x)),
                          lambda x: _sig(x) * (1 - _sig(x)) * (1 - 6 * _sig(x) + 6 * _sig(x) ** 2)]),
    "softsign": ((-3, 3), [lambda x: (1 + np.abs(x)) ** -2, lambda x: -2 * np.sign(x) * (1 + np.abs(x)) ** -3,
                           lambda x: 6 * (1 + np.abs(x)) ** -4]),
    "erf": ((-2, 2), [lambda x: 2 / SQRT_PI * np.exp(-x * x), lambda x: -4 / SQRT_PI * x * np.exp(-x * x),
                      lambda x: 2 / SQRT_PI * np.exp(-x * x) * (4 * x * x - 2)]),
}


def _away_from_kinks(name, x):
    # abs, relu and softsign are not differentiable at 0: keep samples off it.
    if name in ("abs", "relu", "softsign"):
        x = np.where(np.abs(x) < 0.1, x + 0.3 * np.sign(x + 1e-12), x)
    return x


def _nested_grads(op, x_np, orders, **params):
    """The first `orders` derivatives of op at x_np, each taken with its own random head
    gradient; returns them and the running products of the head gradients."""
    rng = np.random.RandomState(7)
    x = nd.array(x_np, dtype="float64")
    x.attach_grad()
    heads = [rng.uniform(0.5, 1.5, size=x_np.shape) for _ in range(orders)]
    grads = []
    with autograd.record():
        y = op(x, **params)
        for h in heads:
            y = autograd.grad(y, x, head_grads=nd.array(h, dtype="float64"), create_graph=True, retain_graph=True)[0]
            grads.append(y.asnumpy())
    scales = np.cumprod(np.stack(heads), axis=0)
    return grads, scales


@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_first_second_third_derivative(name):
    (lo, hi), derivs = UNARY[name]
    x = _away_from_kinks(name, np.random.RandomState(0).uniform(lo, hi, size=(3, 4)))
    grads, scales = _nested_grads(getattr(nd, name), x, 3)
    for order, (got, d, s) in enumerate(zip(grads, derivs, scales), start=1):
        np.testing.assert_allclose(got, d(x) * s, rtol=1e-6, atol=1e-9, err_msg="order %d of %s" % (order, name))


def test_erfinv_second_derivative():
    x = np.random.RandomState(1).uniform(-0.8, 0.8, size=(5,))
    y = nd.erfinv(nd.array(x, dtype="float64")).asnumpy()
    grads, scales = _nested_grads(nd.erfinv, x, 2)
    np.testing.assert_allclose(grads[0], SQRT_PI / 2 * np.exp(y * y) * scales[0], rtol=1e-6)
    np.testing.assert_allclose(grads[1], math.pi / 2 * y * np.exp(2 * y * y) * scales[1], rtol=1e-6)


# The value each `_backward_<name>` reads besides out_grad: the forward input, or for these
# the forward output (any value in the domain of the formula in terms of the output).
READS_OUTPUT = {"sqrt", "cbrt", "tan", "tanh", "sigmoid", "relu", "erfinv"}
BACKWARD_DOMAIN = {"erfinv": (-0.8, 0.8), "sqrt": (0.5, 3), "cbrt": (0.5, 3), "tanh": (-0.9, 0.9),
                   "sigmoid": (0.1, 0.9), "tan": (-2, 2), "relu": (0.2, 2)}


@pytest.mark.parametrize("name", sorted((set(UNARY) - {"exp", "log"}) | {"erfinv"}))
def test_backward_operator_numeric_gradient(name):
    lo, hi = BACKWARD_DOMAIN.get(name, UNARY.get(name, ((0, 0),))[0])
    rng = np.random.RandomState(3)
    v = _away_from_kinks(name, rng.uniform(lo, hi, size=(2, 3)))
    og = rng.uniform(-1, 1, size=(2, 3))
    check_numeric_gradient("_backward_" + name, [og, v], numeric_eps=1e-5, rtol=1e-4, atol=1e-6)


ACTIVATIONS = {
    "relu": lambda x: 0 * x,
    "sigmoid": lambda x: _sig(x) * (1 - _sig(x)) * (1 - 2 * _sig(x)),
    "tanh": lambda x: -2 * np.tanh(x) * (1 - np.tanh(x) ** 2),
    "softrelu": lambda x: _sig(x) * (1 - _sig(x)),
    "softsign": lambda x: -2 * np.sign(x) * (1 + np.abs(x)) ** -3,
}


@pytest.mark.parametrize("act_type", sorted(ACTIVATIONS))
def test_activation_second_derivative(act_type):
    x = _away_from_kinks("relu", np.random.RandomState(2).uniform(-3, 3, size=(4, 5)))
    grads, scales = _nested_grads(nd.Activation, x, 2, act_type=act_type)
    np.testing.assert_allclose(grads[1], ACTIVATIONS[act_type](x) * scales[1], rtol=1e-6, atol=1e-9)


@pytest.mark.parametrize("act_type", sorted(ACTIVATIONS))
def test_backward_activation_numeric_gradient(act_type):
    rng = np.random.RandomState(5)
    v = _away_from_kinks("relu", rng.uniform(-2, 2, size=(3, 4)))
    og = rng.uniform(-1, 1, size=(3, 4))
    check_numeric_gradient("_backward_Activation", [og, v], params={"act_type": act_type},
                           numeric_eps=1e-5, rtol=1e-4, atol=1e-6)


def test_clip_and_dropout_second_derivative_is_zero_and_first_is_linear_in_head():
    x = np.random.RandomState(6).uniform(-2, 2, size=(4, 6))
    grads, scales = _nested_grads(nd.clip, x, 2, a_min=-1.0, a_max=1.0)
    np.testing.assert_allclose(grads[0], ((x >= -1) & (x <= 1)) * scales[0])
    np.testing.assert_allclose(grads[1], 0 * x)
    grads, scales = _nested_grads(nd.Dropout, x, 2, p=0.5)
    kept = grads[0] != 0
    assert 0 < kept.sum() < x.size
    np.testing.assert_allclose(grads[0][kept], 2 * scales[0][kept])
    np.testing.assert_allclose(grads[1], 0 * x)


def test_backward_clip_and_dropout_gradient_to_out_grad():
    rng = np.random.RandomState(8)
    x = rng.uniform(-2, 2, size=(3, 4))
    check_numeric_gradient("_backward_clip", [rng.uniform(-1, 1, size=(3, 4)), x], params={"a_min": -1, "a_max": 1},
                           grad_nodes=[0], numeric_eps=1e-5, rtol=1e-5, atol=1e-8)
    mask = (rng.uniform(size=(3, 4)) > 0.5) * 2.0
    check_numeric_gradient("_backward_Dropout", [rng.uniform(-1, 1, size=(3, 4)), mask], params={"p": 0.5},
                           grad_nodes=[0], numeric_eps=1e-5, rtol=1e-5, atol=1e-8)


@pytest.mark.parametrize("flatten", [True, False])
@pytest.mark.parametrize("no_bias", [False, True])
def test_fully_connected_second_order(flatten, no_bias):
    rng = np.random.RandomState(9)
    xs = rng.uniform(-1, 1, size=(2, 3, 4))
    hidden = 5
    cols = 12 if flatten else 4
    ws = rng.uniform(-1, 1, size=(hidden, cols))
    x2 = xs.reshape(2, 12) if flatten else xs.reshape(6, 4)
    x, w = nd.array(xs, dtype="float64"), nd.array(ws, dtype="float64")
    args = [x, w]
    if not no_bias:
        args.append(nd.array(rng.uniform(-1, 1, size=(hidden,)), dtype="float64"))
    for a in args:
        a.attach_grad()
    out_shape = (2, hidden) if flatten else (2, 3, hidden)
    o_y = rng.uniform(-1, 1, size=out_shape)
    o_x = rng.uniform(-1, 1, size=xs.shape)
    o_w = rng.uniform(-1, 1, size=ws.shape)
    with autograd.record():
        y = nd.FullyConnected(*args, num_hidden=hidden, flatten=flatten, no_bias=no_bias)
        x_grad, w_grad = autograd.grad(y, [x, w], head_grads=nd.array(o_y, dtype="float64"), create_graph=True,
                                       retain_graph=True)
        # d/dw <x_grad, o_x> and d/dx <w_grad, o_w>, and both with respect to the head o_y
        z = (x_grad * nd.array(o_x, dtype="float64")).sum() + (w_grad * nd.array(o_w, dtype="float64")).sum()
    z.backward()
    oy2 = o_y.reshape(-1, hidden)
    ox2 = o_x.reshape(x2.shape)
    np.testing.assert_allclose(x_grad.asnumpy(), (oy2 @ ws).reshape(xs.shape), rtol=1e-10)
    np.testing.assert_allclose(w_grad.asnumpy(), oy2.T @ x2, rtol=1e-10)
    np.testing.assert_allclose(w.grad.asnumpy(), oy2.T @ ox2, rtol=1e-10)
    np.testing.assert_allclose(x.grad.asnumpy(), (oy2 @ o_w).reshape(xs.shape), rtol=1e-10)
    if not no_bias:
        np.testing.assert_allclose(args[2].grad.asnumpy(), 0 * args[2].asnumpy())


@pytest.mark.parametrize("flatten", [True, False])
@pytest.mark.parametrize("no_bias", [False, True])
def test_backward_fully_connected_numeric_gradient(flatten, no_bias):
    rng = np.random.RandomState(10)
    x = rng.uniform(-1, 1, size=(2, 3, 4))
    w = rng.uniform(-1, 1, size=(5, 12 if flatten else 4))
    og = rng.uniform(-1, 1, size=(2, 5) if flatten else (2, 3, 5))
    # With a bias, the backward also takes it (for its shape only: it gets no gradient).
    inputs = [og, x, w] if no_bias else [og, x, w, rng.uniform(-1, 1, size=(5,))]
    check_numeric_gradient("_backward_FullyConnected", inputs,
                           params={"num_hidden": 5, "flatten": flatten, "no_bias": no_bias},
                           grad_nodes=[0, 1, 2], numeric_eps=1e-5, rtol=1e-5, atol=1e-8)


def test_symbolic_second_order_through_backward_operator():
    # The gradient graph of a symbol's gradient: d/dx of sum(og * cos x) is -og * sin x.
    x = mx.sym.Variable("x")
    og = mx.sym.Variable("og")
    g = mx.sym._internal._backward_sin(og, x)
    xv = np.random.RandomState(11).uniform(-2, 2, size=(3,))
    ogv = np.random.RandomState(12).uniform(-1, 1, size=(3,))
    exe = g.bind(mx.cpu(), {"x": nd.array(xv), "og": nd.array(ogv)},
                 args_grad={"x": nd.zeros((3,)), "og": nd.zeros((3,))})
    exe.forward(is_train=True)
    exe.backward(nd.ones((3,)))
    np.testing.assert_allclose(exe.grad_dict["x"].asnumpy(), -ogv * np.sin(xv), rtol=1e-5)
    np.testing.assert_allclose(exe.grad_dict["og"].asnumpy(), np.cos(xv), rtol=1e-5)


def test_backward_operator_rejects_mismatched_shapes():
    with pytest.raises(mx.base.MXNetError, match="_backward_sin"):
        nd._internal._backward_sin(nd.ones((2, 3)), nd.ones((3, 2)))
    with pytest.raises(mx.base.MXNetError, match="_backward_FullyConnected"):
        nd._internal._backward_FullyConnected(nd.ones((2, 5)), nd.ones((2, 4)), nd.ones((5, 3)), nd.ones((5,)),
                                              num_hidden=5)
    with pytest.raises(mx.base.MXNetError, match="input 'bias' has shape"):
        nd._internal._backward_FullyConnected(nd.ones((2, 5)), nd.ones((2, 3)), nd.ones((5, 3)), nd.ones((4,)),
                                              num_hidden=5)


def test_operator_without_higher_order_gradient_says_so():
    # gammaln's derivative (digamma) has no operator here: the second order reports it.
    x = nd.array([1.5, 2.5])
    x.attach_grad()
    with autograd.record():
        g = autograd.grad(nd.gammaln(x), x, create_graph=True)[0]
    with pytest.raises(mx.base.MXNetError, match="_backward_gammaln"):
        g.backward()
