"""MXNet 1.9 behaviours of the samplers and of the chi-square helpers its tests use:
buckets that do not cover the support, multinomial rows that do not sum to 1, the
gradient of multinomial's log probabilities, generator shapes left to the graph."""
import math

import numpy as np
import pytest

import weft as mx
from weft import test_utils as tu


# ---------------------------------------------------------------- chi-square helpers
def test_chi_square_check_discrete_buckets_short_of_the_support():
    # Poisson(4) on 0..9 leaves ~0.8% of the mass outside: counted as one more bucket, so
    # observed and expected totals agree and a right generator passes.
    lam, n = 4.0, 200000
    buckets = list(range(10))
    probs = [math.exp(-lam) * lam ** k / math.factorial(k) for k in buckets]
    rng = np.random.RandomState(3)
    p, obs, exp = tu.chi_square_check(lambda x: rng.poisson(lam, x), buckets, probs, nsamples=n)
    assert len(obs) == len(exp) == len(buckets) + 1
    assert obs.sum() == n
    np.testing.assert_allclose(exp.sum(), n, rtol=1e-12)
    np.testing.assert_allclose(exp[-1], n * (1 - sum(probs)), rtol=1e-6)
    assert p > 1e-4


def test_chi_square_check_rejects_samples_outside_full_buckets():
    # The buckets hold all the probability: samples outside them make the test fail.
    buckets, probs = [0, 1], [0.5, 0.5]
    p, obs, exp = tu.chi_square_check(lambda x: np.array([0, 1, 2, 2] * (x // 4)), buckets, probs, nsamples=4000)
    assert obs[-1] == 2000
    assert p < 1e-10


def test_chi_square_check_sums_agree_with_truncated_probabilities():
    # Equal-probability ppf buckets: n * 1/3 is not a whole count; the expected totals
    # still equal the samples'.
    buckets, probs = tu.gen_buckets_probs_with_ppf(lambda q: q, 3)
    rng = np.random.RandomState(0)
    p, obs, exp = tu.chi_square_check(lambda x: rng.uniform(size=x), buckets, probs, nsamples=100000)
    assert len(obs) == 3 and obs.sum() == 100000
    np.testing.assert_allclose(exp.sum(), 100000, rtol=1e-12)


def test_verify_generator_passes_weft_uniform_and_fails_a_wrong_one():
    buckets, probs = tu.gen_buckets_probs_with_ppf(lambda q: -1 + 3 * q, 5)
    mx.random.seed(5)
    pvals = tu.verify_generator(lambda x: mx.nd.random.uniform(-1, 2, shape=x), buckets, probs, nsamples=50000,
                                nrepeat=3)
    assert len(pvals) == 3
    with pytest.raises(AssertionError, match="Generator test fails"):
        tu.verify_generator(lambda x: mx.nd.random.normal(0.5, 1, shape=x), buckets, probs, nsamples=50000,
                            nrepeat=3)


# ---------------------------------------------------------------- multinomial
def test_multinomial_rows_not_summing_to_one_are_drawn_in_proportion():
    probs = np.array([[0.125, 0.25, 0.25], [0.0625, 0.125, 0.1875]], np.float32)
    mx.random.seed(7)
    n = 40000
    out = mx.nd.random.multinomial(mx.nd.array(probs), shape=n, get_prob=False)
    assert isinstance(out, mx.nd.NDArray) and out.shape == (2, n)
    got = out.asnumpy().astype(np.int64)
    for r in range(2):
        freq = np.bincount(got[r], minlength=3) / n
        np.testing.assert_allclose(freq, probs[r] / probs[r].sum(), atol=0.015)
    both = mx.nd.random.multinomial(mx.nd.array(probs), shape=5, get_prob=True)
    assert isinstance(both, list) and len(both) == 2
    idx = both[0].asnumpy().astype(np.int64)
    # As MXNet: the log of the row's entry, not of the normalised probability.
    np.testing.assert_allclose(both[1].asnumpy(), np.log(np.take_along_axis(probs, idx, 1)), rtol=1e-6)


def test_multinomial_row_without_mass_errors():
    with pytest.raises(mx.base.MXNetError, match="distribution 1 to have a positive total"):
        mx.nd.random.multinomial(mx.nd.array([[0.5, 0.5], [0, 0]])).asnumpy()
    with pytest.raises(mx.base.MXNetError, match=r"in \[0, 1\]"):
        mx.nd.random.multinomial(mx.nd.array([[0.5, -0.5]])).asnumpy()


def _log_prob_objective(p, samples, weights):
    # sum_j weights[j] * log p[row, samples[row, j]] for fixed samples
    rows = np.arange(p.shape[0])[:, None]
    return float((weights * np.log(p[rows, samples])).sum())


@pytest.mark.parametrize("dtype", ["int32", "uint8", "float32"])
def test_multinomial_log_prob_gradient(dtype):
    p = np.array([[0.1, 0.2, 0.3, 0.4], [0.4, 0.3, 0.2, 0.1]], np.float64)
    x = mx.nd.array(p, dtype="float64")
    x.attach_grad()
    w = np.random.RandomState(2).uniform(0.5, 2, (2, 300))
    mx.random.seed(11)
    with mx.autograd.record():
        y, logp = mx.nd.random.multinomial(x, shape=300, get_prob=True, dtype=dtype)
        obj = (logp * mx.nd.array(w, dtype="float64")).sum()
    obj.backward()
    samples = y.asnumpy().astype(np.int64)
    # Central differences of the objective with the draws held fixed.
    numeric = np.zeros_like(p)
    eps = 1e-6
    for i in np.ndindex(*p.shape):
        hi, lo = p.copy(), p.copy()
        hi[i] += eps
        lo[i] -= eps
        numeric[i] = (_log_prob_objective(hi, samples, w) - _log_prob_objective(lo, samples, w)) / (2 * eps)
    np.testing.assert_allclose(x.grad.asnumpy(), numeric, rtol=1e-5, atol=1e-6)


def test_multinomial_samples_only_get_zero_gradient():
    x = mx.nd.array([[0.3, 0.7]])
    x.attach_grad()
    with mx.autograd.record():
        y = mx.nd.random.multinomial(x, shape=4, dtype="float32")
        z = y * 2
    z.backward()
    np.testing.assert_array_equal(x.grad.asnumpy(), np.zeros((1, 2)))


def test_backward_sample_multinomial_checks_its_inputs():
    data = mx.nd.array([[0.5, 0.5], [0.2, 0.8]])
    ograd = mx.nd.ones((2, 3))
    samples = mx.nd.array([[0, 1, 1], [1, 1, 0]], dtype="int32")
    g = mx.nd._internal._backward_sample_multinomial(ograd, data, samples)
    np.testing.assert_allclose(g.asnumpy(), [[2.0, 4.0], [5.0, 2.5]], rtol=1e-6)
    with pytest.raises(mx.base.MXNetError, match="of one shape"):
        mx.nd._internal._backward_sample_multinomial(mx.nd.ones((2, 4)), data, samples).asnumpy()
    with pytest.raises(mx.base.MXNetError, match="of one shape"):
        mx.nd._internal._backward_sample_multinomial(mx.nd.ones((3, 3)), mx.nd.ones((3, 2)), samples).asnumpy()
    with pytest.raises(mx.base.MXNetError, match=r"categories in \[0, 2\), got 2"):
        bad = mx.nd.array([[0, 2, 1], [1, 1, 0]], dtype="int32")
        mx.nd._internal._backward_sample_multinomial(ograd, data, bad).asnumpy()


# ---------------------------------------------------------------- generator shapes in graphs
def test_symbol_generator_without_shape_takes_the_graph_shape():
    x = mx.sym.var("x")
    # MXNet ignores keyword Symbols given to an operator without inputs: data is dropped.
    y = mx.sym.random.randn(data=mx.sym.ones((9, 9)), loc=3, scale=0.5) + x
    _, out_shapes, _ = y.infer_shape(x=(200, 300))
    assert out_shapes == [(200, 300)]
    mx.random.seed(1)
    ex = y.bind(mx.cpu(), {"x": mx.nd.zeros((200, 300))})
    out = ex.forward()[0].asnumpy()
    assert out.shape == (200, 300)
    assert abs(out.mean() - 3) < 0.02 and abs(out.std() - 0.5) < 0.02


def test_generator_without_shape_and_nothing_to_infer_from():
    y = mx.sym.random.uniform(0, 1)
    # Unknown, in MXNet 1.x's spelling of a partial result.
    assert y.infer_shape_partial()[1] == [()]
    with pytest.raises(mx.base.MXNetError, match="cannot infer the output shapes"):
        mx.nd._internal._random_uniform()
    # A given shape still means what it says, () included.
    assert mx.nd._internal._random_uniform(shape=()).shape == ()
