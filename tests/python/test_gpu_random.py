"""GPU against CPU for the per-element samplers (_sample_uniform, _sample_normal, ...) and
_shuffle: after the same mx.random.seed both devices reserve the same counters and run the
same per-element code (core/op/random/sampler.h), so they draw the same values. Uniform
draws and shuffles involve no transcendental function and must match bit for bit; the
other samplers call log, cos, pow and lgamma in double, whose last bit may differ between
CUDA and the host's libm, so a value may move by one rounding step (or, rarely, a rejection
test flips): those are compared as the generators' tests in test_gpu_tensor.py compare
them. Skipped without a GPU."""
import numpy as np
import pytest

import weft as mx
from weft import nd

pytestmark = pytest.mark.skipif(mx.context.num_gpus() == 0, reason='no GPU')

GPU_OPS = {
    '_sample_uniform', '_sample_normal', '_sample_gamma', '_sample_exponential', '_sample_poisson',
    '_sample_negative_binomial', '_sample_generalized_negative_binomial', '_shuffle',
}

PSHAPE = (4, 3)
RNG = np.random.RandomState(31)
# Valid parameters of each family (the second array, where there is one).
FAMILIES = {
    'uniform': (RNG.uniform(-2, 0, PSHAPE), RNG.uniform(0.5, 3, PSHAPE)),
    'normal': (RNG.normal(0, 2, PSHAPE), RNG.uniform(0.1, 2, PSHAPE)),
    'gamma': (RNG.uniform(0.3, 4, PSHAPE), RNG.uniform(0.5, 2, PSHAPE)),
    'exponential': (RNG.uniform(0.5, 3, PSHAPE),),
    'poisson': (np.where(RNG.uniform(0, 1, PSHAPE) < 0.5, RNG.uniform(0, 9, PSHAPE), RNG.uniform(10, 60, PSHAPE)),),
    'negative_binomial': (RNG.uniform(1, 6, PSHAPE), RNG.uniform(0.1, 1, PSHAPE)),
    'generalized_negative_binomial': (RNG.uniform(0, 6, PSHAPE), RNG.uniform(0, 2, PSHAPE)),
}


def _sample(name, params, ctx, pdtype, odtype, shape, seed):
    mx.random.seed(seed)
    args = [nd.array(p, ctx=ctx, dtype=pdtype) for p in params]
    op = getattr(nd._internal, '_sample_' + name)
    first = op(*args, shape=shape, dtype=odtype).asnumpy()
    # A second draw continues the stream the same way on both devices.
    second = op(*args, shape=shape, dtype=odtype).asnumpy()
    return first, second


def _assert_same_draw(c, g):
    assert c.dtype == g.dtype and c.shape == g.shape
    c64, g64 = c.astype(np.float64), g.astype(np.float64)
    tol = 1e-3 if c.dtype == np.float16 else 1e-6
    close = np.isclose(g64, c64, rtol=tol, atol=tol)
    assert close.mean() > 0.999, 'only %.4f of the values agree' % close.mean()


@pytest.mark.parametrize('odtype', ['float32', 'float16', 'float64'])
@pytest.mark.parametrize('pdtype', ['float32', 'float16', 'float64'])
@pytest.mark.parametrize('name', sorted(FAMILIES))
def test_sample_same_seed_same_values(name, pdtype, odtype):
    params = FAMILIES[name]
    c1, c2 = _sample(name, params, mx.cpu(), pdtype, odtype, (30, 7), 11)
    g1, g2 = _sample(name, params, mx.gpu(0), pdtype, odtype, (30, 7), 11)
    assert c1.shape == PSHAPE + (30, 7)
    for c, g in ((c1, g1), (c2, g2)):
        if name == 'uniform' and odtype != 'float64':
            # A multiply-add on 53 random bits, rounded to the output type: the same bits.
            np.testing.assert_array_equal(g.view(np.uint8), c.view(np.uint8))
        else:
            _assert_same_draw(c, g)
    assert not np.array_equal(g1, g2)


@pytest.mark.parametrize('shape', [(), (5,), (2, 3)])
def test_sample_shapes_and_scalar_block(shape):
    # shape=() draws one value per distribution.
    params = FAMILIES['uniform']
    c, _ = _sample('uniform', params, mx.cpu(), 'float32', 'float32', shape, 3)
    g, _ = _sample('uniform', params, mx.gpu(0), 'float32', 'float32', shape, 3)
    assert g.shape == PSHAPE + shape
    np.testing.assert_array_equal(g, c)
    lo, hi = params
    lo = lo.astype(np.float32).reshape(PSHAPE + (1,) * len(shape))
    hi = hi.astype(np.float32).reshape(PSHAPE + (1,) * len(shape))
    assert (g >= lo).all() and (g < hi).all()


def test_sample_moments_on_gpu():
    # One distribution per row, many draws each: the GPU's draws follow the distributions.
    mu = np.array([0.5, 3.0, 20.0])
    alpha = np.array([2.0, 0.5, 1.5])
    n = 200000
    x = nd._internal._sample_gamma(nd.array(alpha, ctx=mx.gpu(0)), nd.array(mu / alpha, ctx=mx.gpu(0)),
                                   shape=(n,)).asnumpy().astype(np.float64)
    for r in range(3):
        mean, var = mu[r], alpha[r] * (mu[r] / alpha[r]) ** 2
        assert abs(x[r].mean() - mean) < 5 * np.sqrt(var / n)
        assert abs(x[r].var() - var) < 0.03 * var


def test_sample_invalid_parameters():
    # The CPU rejects a distribution it cannot draw from; the GPU, which cannot stop on a
    # value it reads, gives NaN for that distribution's elements and draws the others.
    alpha = np.array([1.5, -1.0, 2.0])
    beta = np.array([1.0, 1.0, 0.5])
    with pytest.raises(mx.base.MXNetError, match='distribution 1'):
        nd._internal._sample_gamma(nd.array(alpha), nd.array(beta), shape=(4,)).asnumpy()
    g = nd._internal._sample_gamma(nd.array(alpha, ctx=mx.gpu(0)), nd.array(beta, ctx=mx.gpu(0)),
                                   shape=(4,)).asnumpy()
    assert np.isnan(g[1]).all()
    assert np.isfinite(g[[0, 2]]).all() and (g[[0, 2]] > 0).all()


def test_sample_mismatched_parameters_error_on_gpu():
    ctx = mx.gpu(0)
    with pytest.raises(mx.base.MXNetError, match='_sample_normal'):
        nd._internal._sample_normal(nd.zeros((3,), ctx=ctx), nd.ones((4,), ctx=ctx), shape=(2,)).asnumpy()


@pytest.mark.parametrize('dtype', ['float32', 'float16', 'float64', 'int32', 'int64', 'uint8'])
@pytest.mark.parametrize('shape', [(12, 5), (300,), (7, 2, 3), (1, 4)])
def test_shuffle_same_seed_same_permutation(dtype, shape):
    x = np.arange(int(np.prod(shape))).reshape(shape).astype(dtype)
    res = []
    for ctx in (mx.cpu(), mx.gpu(0)):
        mx.random.seed(13)
        a = nd.array(x, ctx=ctx, dtype=dtype)
        first = nd.random.shuffle(a).asnumpy()
        # In place (out=input): the rows are read from a copy on both devices.
        nd._internal._shuffle(a, out=a)
        res.append((first, a.asnumpy()))
    (c1, c2), (g1, g2) = res
    for c, g in ((c1, g1), (c2, g2)):
        assert g.dtype == np.dtype(dtype)
        np.testing.assert_array_equal(g, c)
        # A permutation of whole rows.
        rows = lambda a: sorted(map(tuple, a.reshape(shape[0], -1).tolist()))
        assert rows(g) == rows(x)
    if shape[0] > 10:
        assert not np.array_equal(g1, x) and not np.array_equal(g2, g1)


def test_shuffle_zero_dim_and_empty():
    for ctx in (mx.cpu(), mx.gpu(0)):
        s = nd.random.shuffle(nd.array([4.5], ctx=ctx).reshape(()))
        assert s.shape == () and s.asscalar() == 4.5
        e = nd.random.shuffle(nd.zeros((0, 3), ctx=ctx))
        assert e.shape == (0, 3)
