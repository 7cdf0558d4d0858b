"""MXNet 1.9.1's random operators beyond the basic generators: the per-element _sample_*
samplers, the negative binomial generators, the *_like samplers, the densities
_random_pdf_* with their gradients, _sample_unique_zipfian, and the dispatch of
nd.random / sym.random to _sample_* for array parameters. Distributions are checked by
moments within a few standard errors and by Kolmogorov-Smirnov distances against closed
form CDFs, with fixed seeds (scipy is not installed: densities come from math.lgamma)."""
import math

import numpy as np
import pytest

import weft as mx
from weft.test_utils import check_numeric_gradient

N = 20000


def ks_distance(samples, cdf):
    x = np.sort(np.asarray(samples, dtype=np.float64))
    n = len(x)
    c = cdf(x)
    return max(np.max(np.arange(1, n + 1) / n - c), np.max(c - np.arange(0, n) / n))


# Critical value of the KS distance at about 1e-4 significance for n samples.
def ks_bound(n):
    return 2.2 / math.sqrt(n)


def check_moments(x, mean, var, what):
    x = np.asarray(x, dtype=np.float64)
    n = len(x)
    # Five standard errors: the mean's is sqrt(var/n); the variance's about var*sqrt(2/n)
    # (heavier tails than normal get a wider margin).
    assert abs(x.mean() - mean) < 5 * math.sqrt(var / n) + 1e-12, (what, x.mean(), mean)
    assert abs(x.var() - var) < 8 * var * math.sqrt(2.0 / n) + 1e-12, (what, x.var(), var)


def normal_cdf(mu, sigma):
    return lambda x: 0.5 * (1 + np.vectorize(math.erf)((x - mu) / (sigma * math.sqrt(2))))


def erlang_cdf(k, scale):
    def cdf(x):
        y = x / scale
        return 1 - np.exp(-y) * sum(y ** j / math.factorial(j) for j in range(k))
    return cdf


# ---------------------------------------------------------------- _sample_*
def test_sample_uniform_normal_exponential_gamma_per_element():
    mx.random.seed(42)
    low, high = np.array([0.0, -3.0]), np.array([1.0, 5.0])
    u = mx.nd.sample_uniform(mx.nd.array(low), mx.nd.array(high), shape=(N,)).asnumpy()
    assert u.shape == (2, N) and u.dtype == np.float32
    for i in range(2):
        assert u[i].min() >= low[i] and u[i].max() < high[i]
        assert ks_distance(u[i], lambda x, i=i: (x - low[i]) / (high[i] - low[i])) < ks_bound(N)
    mu, sigma = np.array([[0.0, 10.0], [-2.0, 3.0]]), np.array([[1.0, 0.5], [2.0, 4.0]])
    z = mx.nd._internal._sample_normal(mx.nd.array(mu), mx.nd.array(sigma), shape=(N,), dtype="float64").asnumpy()
    assert z.shape == (2, 2, N) and z.dtype == np.float64
    for idx in np.ndindex(2, 2):
        assert ks_distance(z[idx], normal_cdf(mu[idx], sigma[idx])) < ks_bound(N)
    lam = np.array([0.5, 4.0])
    e = mx.nd._internal._sample_exponential(mx.nd.array(lam), shape=(N,)).asnumpy()
    for i in range(2):
        assert ks_distance(e[i], lambda x, i=i: 1 - np.exp(-lam[i] * x)) < ks_bound(N)
    # Gamma with whole shapes has the Erlang CDF; a shape below 1 is checked by moments.
    alpha, beta = np.array([3.0, 0.4]), np.array([2.0, 1.5])
    g = mx.nd._internal._sample_gamma(mx.nd.array(alpha), mx.nd.array(beta), shape=(N,)).asnumpy()
    assert ks_distance(g[0], erlang_cdf(3, 2.0)) < ks_bound(N)
    check_moments(g[1], 0.4 * 1.5, 0.4 * 1.5 ** 2, "gamma(0.4, 1.5)")


def test_sample_discrete_per_element():
    mx.random.seed(7)
    lam = np.array([0.7, 25.0])
    p = mx.nd._internal._sample_poisson(mx.nd.array(lam), shape=(N,)).asnumpy()
    for i in range(2):
        assert np.all(p[i] == np.round(p[i])) and p[i].min() >= 0
        check_moments(p[i], lam[i], lam[i], "poisson")
    k, prob = np.array([3.0, 10.0]), np.array([0.4, 0.8])
    nb = mx.nd._internal._sample_negative_binomial(mx.nd.array(k), mx.nd.array(prob), shape=(N,)).asnumpy()
    for i in range(2):
        check_moments(nb[i], k[i] * (1 - prob[i]) / prob[i], k[i] * (1 - prob[i]) / prob[i] ** 2, "negbin")
    mu, alpha = np.array([2.0, 6.0, 3.0]), np.array([0.5, 0.1, 0.0])
    gnb = mx.nd._internal._sample_generalized_negative_binomial(mx.nd.array(mu), mx.nd.array(alpha),
                                                                shape=(N,)).asnumpy()
    for i in range(3):
        check_moments(gnb[i], mu[i], mu[i] + alpha[i] * mu[i] ** 2, "gen negbin")


def test_sample_reproducible_and_shapes():
    mu, sigma = mx.nd.array([0.0, 1.0, 2.0]), mx.nd.array([1.0, 1.0, 1.0])
    mx.random.seed(3)
    a = mx.nd._internal._sample_normal(mu, sigma, shape=(4, 5)).asnumpy()
    mx.random.seed(3)
    b = mx.nd._internal._sample_normal(mu, sigma, shape=(4, 5)).asnumpy()
    c = mx.nd._internal._sample_normal(mu, sigma, shape=(4, 5)).asnumpy()
    assert a.shape == (3, 4, 5)
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)
    # No `shape`: one draw per distribution.
    assert mx.nd._internal._sample_poisson(mx.nd.array([[1.0, 2.0]])).shape == (1, 2)


def test_sample_errors():
    with pytest.raises(mx.base.MXNetError, match="shape"):
        mx.nd._internal._sample_normal(mx.nd.ones((2,)), mx.nd.ones((3,)), shape=(2,)).wait_to_read()
    with pytest.raises(mx.base.MXNetError, match="sigma >= 0"):
        mx.nd._internal._sample_normal(mx.nd.zeros((2,)), mx.nd.array([1.0, -1.0])).wait_to_read()
    with pytest.raises(mx.base.MXNetError, match="alpha > 0"):
        mx.nd._internal._sample_gamma(mx.nd.array([-1.0]), mx.nd.array([1.0])).wait_to_read()
    with pytest.raises(mx.base.MXNetError, match="lam >= 0"):
        mx.nd._internal._sample_poisson(mx.nd.array([float("nan")])).wait_to_read()
    with pytest.raises(mx.base.MXNetError, match=r"p in \(0, 1\]"):
        mx.nd._internal._sample_negative_binomial(mx.nd.array([2.0]), mx.nd.array([0.0])).wait_to_read()
    with pytest.raises(mx.base.MXNetError, match="floating-point"):
        mx.nd._internal._sample_exponential(mx.nd.array([1, 2], dtype="int32")).wait_to_read()
    with pytest.raises(mx.base.MXNetError, match="dtype"):
        mx.nd._internal._sample_exponential(mx.nd.array([1.0]), dtype="int32").wait_to_read()


def test_sample_gradient_is_zero():
    mu, sigma = mx.nd.array([0.0, 1.0]), mx.nd.array([1.0, 2.0])
    mu.attach_grad()
    sigma.attach_grad()
    with mx.autograd.record():
        y = mx.nd._internal._sample_normal(mu, sigma, shape=(3,))
    y.backward(mx.nd.ones_like(y))
    np.testing.assert_array_equal(mu.grad.asnumpy(), np.zeros(2))
    np.testing.assert_array_equal(sigma.grad.asnumpy(), np.zeros(2))


# ---------------------------------------------------------------- generators and _like
def test_random_negative_binomial_generators():
    mx.random.seed(5)
    x = mx.nd.random.negative_binomial(k=4, p=0.3, shape=(N,)).asnumpy()
    check_moments(x, 4 * 0.7 / 0.3, 4 * 0.7 / 0.09, "negbin generator")
    assert np.all(x == np.round(x))
    y = mx.nd.random.generalized_negative_binomial(mu=3.0, alpha=0.25, shape=(N,), dtype="float64").asnumpy()
    assert y.dtype == np.float64
    check_moments(y, 3.0, 3.0 + 0.25 * 9.0, "gen negbin generator")
    z = mx.nd.random_generalized_negative_binomial(mu=2.0, alpha=0.0, shape=(N,)).asnumpy()
    check_moments(z, 2.0, 2.0, "gen negbin alpha 0")
    # Raised where the array made is read, as MXNet's kernels raise them.
    with pytest.raises(mx.base.MXNetError, match="'k'"):
        mx.nd.random.negative_binomial(k=0, p=0.5).asnumpy()
    with pytest.raises(mx.base.MXNetError, match="'p'"):
        mx.nd.random.negative_binomial(k=1, p=1.5).asnumpy()
    with pytest.raises(mx.base.MXNetError, match="'alpha'"):
        mx.nd.random.generalized_negative_binomial(mu=1, alpha=-1).asnumpy()


@pytest.mark.parametrize("name,kw,mean,var", [
    ("uniform_like", dict(low=2.0, high=5.0), 3.5, 9.0 / 12),
    ("normal_like", dict(loc=1.0, scale=2.0), 1.0, 4.0),
    ("gamma_like", dict(alpha=2.0, beta=3.0), 6.0, 18.0),
    ("exponential_like", dict(lam=4.0), 0.25, 1.0 / 16),
    ("poisson_like", dict(lam=3.0), 3.0, 3.0),
    ("negative_binomial_like", dict(k=2, p=0.5), 2.0, 4.0),
    ("generalized_negative_binomial_like", dict(mu=2.0, alpha=0.5), 2.0, 4.0),
])
def test_like_samplers(name, kw, mean, var):
    mx.random.seed(9)
    data = mx.nd.ones((100, N // 100), dtype="float64")
    out = getattr(mx.nd.random, name)(data, **kw)
    assert out.shape == data.shape and out.dtype == np.float64
    check_moments(out.asnumpy().ravel(), mean, var, name)
    mx.random.seed(9)
    np.testing.assert_array_equal(getattr(mx.nd.random, name)(data, **kw).asnumpy(), out.asnumpy())
    # The input's values are not read and its gradient is zero.
    x = mx.nd.ones((3,))
    x.attach_grad()
    with mx.autograd.record():
        y = getattr(mx.nd.random, name)(x, **kw)
    y.backward()
    np.testing.assert_array_equal(x.grad.asnumpy(), np.zeros(3))


def test_like_errors():
    with pytest.raises(mx.base.MXNetError, match="floating-point"):
        mx.nd.random.uniform_like(mx.nd.array([1, 2], dtype="int32"))
    with pytest.raises(mx.base.MXNetError, match="'high'"):
        mx.nd.random.uniform_like(mx.nd.ones((2,)), low=1.0, high=0.0).asnumpy()


# ---------------------------------------------------------------- densities
def lg(x):
    return np.vectorize(math.lgamma)(x)


def ref_logpdf(name, x, a, b=None):
    if name == "uniform":
        return -np.log(b - a) + 0 * x
    if name == "normal":
        return -0.5 * ((x - a) / b) ** 2 - np.log(b) - 0.5 * math.log(2 * math.pi)
    if name == "gamma":
        return a * np.log(b) + (a - 1) * np.log(x) - b * x - lg(a)
    if name == "exponential":
        return np.log(a) - a * x
    if name == "poisson":
        return x * np.log(a) - lg(x + 1) - a
    if name == "negative_binomial":
        return lg(x + a) - lg(x + 1) - lg(a) + a * np.log(b) + x * np.log(1 - b)
    if name == "generalized_negative_binomial":
        return ref_logpdf("negative_binomial", x, 1 / b, 1 / (a * b + 1))
    raise ValueError(name)


CASES = [
    ("uniform", [0.2, 1.5], [1.0, 4.0], lambda r, s: r.uniform(0.2, 1.0, s)),
    ("normal", [0.0, -1.0], [1.0, 2.5], lambda r, s: r.normal(0, 2, s)),
    ("gamma", [2.0, 0.7], [1.5, 3.0], lambda r, s: r.uniform(0.2, 3.0, s)),
    ("exponential", [0.5, 2.0], None, lambda r, s: r.uniform(0.1, 3.0, s)),
    ("poisson", [1.5, 6.0], None, lambda r, s: r.integers(0, 9, s).astype(float)),
    ("negative_binomial", [2.0, 5.0], [0.3, 0.6], lambda r, s: r.integers(0, 9, s).astype(float)),
    ("generalized_negative_binomial", [2.0, 4.0], [0.5, 0.2], lambda r, s: r.integers(0, 9, s).astype(float)),
]


@pytest.mark.parametrize("name,a,b,draw", CASES)
@pytest.mark.parametrize("is_log", [False, True])
def test_pdf_values(name, a, b, draw, is_log):
    rng = np.random.default_rng(0)
    x = draw(rng, (2, 3))
    a = np.array(a)
    params = [mx.nd.array(a, dtype="float64")]
    if b is not None:
        b = np.array(b)
        params.append(mx.nd.array(b, dtype="float64"))
    out = getattr(mx.nd.random, "pdf_" + name)(mx.nd.array(x, dtype="float64"), *params, is_log=is_log).asnumpy()
    expect = ref_logpdf(name, x, a[:, None], None if b is None else b[:, None])
    np.testing.assert_allclose(out, expect if is_log else np.exp(expect), rtol=1e-10, atol=1e-12)


def test_pdf_discrete_sums_to_one_and_known_values():
    # A probability mass function sums to 1 over its support.
    xs = np.arange(0, 400, dtype=np.float64)[None, :]
    for name, a, b in [("poisson", 4.0, None), ("negative_binomial", 3.0, 0.4),
                       ("generalized_negative_binomial", 2.0, 0.3)]:
        params = [mx.nd.array([a], dtype="float64")] + ([] if b is None else [mx.nd.array([b], dtype="float64")])
        total = getattr(mx.nd.random, "pdf_" + name)(mx.nd.array(xs, dtype="float64"), *params).asnumpy().sum()
        assert abs(total - 1) < 1e-9, name
    # Closed forms: N(0, 1) at 0 is 1/sqrt(2 pi); Exp(2) at 0 is 2.
    v = mx.nd.random.pdf_normal(mx.nd.array([0.0]), mx.nd.array([0.0]), mx.nd.array([1.0])).asscalar()
    assert abs(v - 1 / math.sqrt(2 * math.pi)) < 1e-6
    assert abs(mx.nd.random.pdf_exponential(mx.nd.array([0.0]), mx.nd.array([2.0])).asscalar() - 2.0) < 1e-6


def ref_dirichlet_logpdf(x, alpha):
    return (np.sum((alpha - 1) * np.log(x), axis=-1) + math.lgamma(alpha.sum()) - lg(alpha).sum())


def test_pdf_dirichlet_values_and_shapes():
    rng = np.random.default_rng(1)
    alpha = np.array([[1.0, 2.0, 3.0], [0.5, 0.5, 4.0]])
    x = rng.dirichlet([1, 1, 1], size=(2, 4))
    out = mx.nd.random.pdf_dirichlet(mx.nd.array(x, dtype="float64"), mx.nd.array(alpha, dtype="float64"),
                                     is_log=True).asnumpy()
    assert out.shape == (2, 4)
    for i in range(2):
        np.testing.assert_allclose(out[i], ref_dirichlet_logpdf(x[i], alpha[i]), rtol=1e-10)
    one = mx.nd.random.pdf_dirichlet(mx.nd.array([0.2, 0.3, 0.5]), mx.nd.array([1.0, 2.0, 3.0]))
    assert one.shape == (1,)
    assert abs(one.asscalar() - 4.5) < 1e-5
    with pytest.raises(mx.base.MXNetError, match="vector length"):
        mx.nd.random.pdf_dirichlet(mx.nd.ones((2, 3)), mx.nd.ones((2, 4)))


def test_pdf_shape_errors():
    with pytest.raises(mx.base.MXNetError, match="leading axes"):
        mx.nd.random.pdf_normal(mx.nd.ones((3, 2)), mx.nd.ones((2,)), mx.nd.ones((2,)))
    with pytest.raises(mx.base.MXNetError, match="shape"):
        mx.nd.random.pdf_normal(mx.nd.ones((2, 2)), mx.nd.ones((2,)), mx.nd.ones((3,)))


GRAD_CASES = [
    ("normal", [0.3, -1.0], [1.0, 2.0], lambda r, s: r.normal(0, 1, s), [0, 1, 2]),
    ("uniform", [0.0, -1.0], [1.0, 2.0], lambda r, s: r.uniform(0.1, 0.9, s), [1, 2]),
    ("gamma", [2.0, 1.5], [1.5, 0.8], lambda r, s: r.uniform(0.5, 2.5, s), [0, 1, 2]),
    ("exponential", [0.7, 2.0], None, lambda r, s: r.uniform(0.2, 2.0, s), [0, 1]),
    ("poisson", [1.5, 4.0], None, lambda r, s: r.integers(0, 6, s).astype(float), [1]),
    ("negative_binomial", [2.5, 4.0], [0.3, 0.6], lambda r, s: r.integers(0, 6, s).astype(float), [1, 2]),
    ("generalized_negative_binomial", [2.0, 3.0], [0.4, 0.7], lambda r, s: r.integers(0, 6, s).astype(float),
     [1, 2]),
]


@pytest.mark.parametrize("name,a,b,draw,nodes", GRAD_CASES)
@pytest.mark.parametrize("is_log", [False, True])
def test_pdf_numeric_gradient(name, a, b, draw, nodes, is_log):
    rng = np.random.default_rng(2)
    x = draw(rng, (2, 3))
    location = [x, np.array(a)] + ([] if b is None else [np.array(b)])
    check_numeric_gradient("_random_pdf_" + name, location, params={"is_log": is_log}, grad_nodes=nodes,
                           numeric_eps=1e-5, rtol=1e-4, atol=1e-7)


def test_pdf_discrete_sample_gradient_is_zero():
    x = mx.nd.array([[1.0, 2.0]], dtype="float64")
    x.attach_grad()
    with mx.autograd.record():
        y = mx.nd.random.pdf_poisson(x, mx.nd.array([2.0], dtype="float64"))
    y.backward()
    np.testing.assert_array_equal(x.grad.asnumpy(), np.zeros((1, 2)))


@pytest.mark.parametrize("is_log", [False, True])
def test_pdf_dirichlet_numeric_gradient(is_log):
    rng = np.random.default_rng(3)
    x = rng.dirichlet([2, 2, 2], size=(2, 2))
    alpha = np.array([[1.5, 2.0, 3.0], [0.8, 1.2, 2.5]])
    check_numeric_gradient("_random_pdf_dirichlet", [x, alpha], params={"is_log": is_log}, grad_nodes=[0, 1],
                           numeric_eps=1e-6, rtol=1e-4, atol=1e-7)


def test_pdf_backward_rejects_ill_fitting_inputs():
    og, x, mu, sigma = mx.nd.ones((2, 3)), mx.nd.ones((2, 3)), mx.nd.ones((2,)), mx.nd.ones((2,))
    with pytest.raises(mx.base.MXNetError, match="ograd"):
        mx.nd._internal._backward_pdf_normal(mx.nd.ones((5,)), x, mu, sigma, og)[0].wait_to_read()
    with pytest.raises(mx.base.MXNetError, match="out"):
        mx.nd._internal._backward_pdf_normal(og, x, mu, sigma, mx.nd.ones((1,)))[0].wait_to_read()
    with pytest.raises(mx.base.MXNetError, match="parameter"):
        mx.nd._internal._backward_pdf_normal(og, x, mu, mx.nd.ones((3,)), og)[0].wait_to_read()


# ---------------------------------------------------------------- unique zipfian
def test_unique_zipfian():
    mx.random.seed(1)
    samples, tries = mx.nd._internal._sample_unique_zipfian(range_max=50, shape=(64, 20))
    s, t = samples.asnumpy(), tries.asnumpy()
    assert s.dtype == np.int64 and t.dtype == np.int64 and s.shape == (64, 20) and t.shape == (64,)
    for row in range(64):
        assert len(set(s[row])) == 20
    assert s.min() >= 0 and s.max() < 50 and np.all(t >= 20)
    # One sample per row: value v has probability (log(v + 1.5) - log(v + 0.5)) / log(range_max)
    # (v + 1 is exp(U log range_max) rounded).
    one, t1 = mx.nd._internal._sample_unique_zipfian(range_max=1000, shape=(N, 1))
    v = one.asnumpy().ravel()
    assert np.all(t1.asnumpy() == 1)
    for c in range(3):
        p = (math.log(c + 1.5) - math.log(max(c + 0.5, 1.0))) / math.log(1000)
        assert abs(np.mean(v == c) - p) < 5 * math.sqrt(p * (1 - p) / N), c
    with pytest.raises(mx.base.MXNetError, match="num_sampled"):
        mx.nd._internal._sample_unique_zipfian(range_max=5, shape=(2, 6))
    with pytest.raises(mx.base.MXNetError, match="batch_size, num_sampled"):
        mx.nd._internal._sample_unique_zipfian(range_max=5, shape=(6,))


# ---------------------------------------------------------------- Python dispatch
def test_nd_random_dispatches_on_arrays():
    mx.random.seed(4)
    loc, scale = mx.nd.array([0.0, 100.0]), mx.nd.array([1.0, 0.1])
    x = mx.nd.random.normal(loc, scale, shape=(N,)).asnumpy()
    assert x.shape == (2, N)
    assert abs(x[0].mean()) < 0.05 and abs(x[1].mean() - 100) < 0.01
    e = mx.nd.random.exponential(mx.nd.array([2.0]), shape=(N,)).asnumpy()
    check_moments(e[0], 2.0, 4.0, "exponential scale array")
    r = mx.nd.random.randn(3, loc=mx.nd.array([5.0]), scale=mx.nd.array([1.0]))
    assert r.shape == (1, 3)
    for fn, args in [(mx.nd.random.uniform, (0.0, 1.0)), (mx.nd.random.gamma, (1.0, 1.0)),
                     (mx.nd.random.poisson, (1.0,)), (mx.nd.random.negative_binomial, (2, 0.5)),
                     (mx.nd.random.generalized_negative_binomial, (1.0, 0.5))]:
        arrays = [mx.nd.array([[a, a]]) for a in args]
        assert fn(*arrays, shape=4).shape == (1, 2, 4)
        assert fn(*args, shape=(2, 2)).shape == (2, 2)
    with pytest.raises(TypeError, match="all be NDArrays or all numbers"):
        mx.nd.random.normal(mx.nd.array([0.0]), 1.0)
    with pytest.raises(TypeError, match="number or an NDArray"):
        mx.nd.random.uniform("a", 1)


def test_sym_random_dispatches_on_symbols():
    mu, sigma = mx.sym.var("mu"), mx.sym.var("sigma")
    y = mx.sym.random.normal(mu, sigma, shape=(5,))
    _, out_shapes, _ = y.infer_shape(mu=(3,), sigma=(3,))
    assert out_shapes == [(3, 5)]
    ex = y.bind(mx.cpu(), {"mu": mx.nd.array([0.0, 50.0, -50.0]), "sigma": mx.nd.array([0.1, 0.1, 0.1])})
    out = ex.forward()[0].asnumpy()
    np.testing.assert_allclose(out.mean(axis=1), [0, 50, -50], atol=0.5)
    g = mx.sym.random.gamma(2.0, 3.0, shape=(2, 2))
    assert g.infer_shape()[1] == [(2, 2)]
    p = mx.sym.random.pdf_normal(mx.sym.var("x"), mu, sigma)
    assert p.infer_shape(x=(3, 4), mu=(3,), sigma=(3,))[1] == [(3, 4)]
    with pytest.raises(TypeError, match="all be Symbols or all numbers"):
        mx.sym.random.uniform(mu, 1.0)


def test_rand_zipfian_nd_and_sym():
    mx.random.seed(2)
    true = mx.nd.array([0, 3, 9])
    s, et, es = mx.nd.contrib.rand_zipfian(true, N, 10)
    v = s.asnumpy()
    assert s.dtype == np.int64 and v.shape == (N,) and v.min() >= 0 and v.max() < 10
    prob = lambda c: np.log((c + 2.0) / (c + 1.0)) / math.log(11)
    for c in range(10):
        p = prob(c)
        assert abs(np.mean(v == c) - p) < 5 * math.sqrt(p * (1 - p) / N), c
    np.testing.assert_allclose(et.asnumpy(), prob(np.array([0.0, 3.0, 9.0])) * N, rtol=1e-12)
    np.testing.assert_allclose(es.asnumpy(), prob(v.astype(np.float64)) * N, rtol=1e-12)
    t = mx.sym.var("t")
    outs = mx.sym.Group(list(mx.sym.contrib.rand_zipfian(t, 6, 4)))
    got = outs.bind(mx.cpu(), {"t": mx.nd.array([1.0])}).forward()
    assert got[0].dtype == np.int64 and got[0].shape == (6,) and got[0].asnumpy().max() < 4
    np.testing.assert_allclose(got[1].asnumpy(), [math.log(1.5) / math.log(5) * 6], rtol=1e-12)


def test_mixtures_with_overflowing_rates_terminate():
    # Gamma(1/alpha) * alpha * mu overflows to inf or NaN for extreme parameters; the
    # Poisson draw must not loop on it.
    out = mx.nd._internal._sample_generalized_negative_binomial(
        mx.nd.array([0.0, 1e300], dtype="float64"), mx.nd.array([1e-320, 1e300], dtype="float64"),
        shape=(4,), dtype="float64").asnumpy()
    assert out.shape == (2, 4)
    nb = mx.nd._internal._sample_negative_binomial(mx.nd.array([1e300], dtype="float64"),
                                                   mx.nd.array([1e-300], dtype="float64"), shape=(3,),
                                                   dtype="float64").asnumpy()
    assert np.all(np.isinf(nb))
