"""mx.contrib.quantization: the entropy threshold search (_contrib_calibrate_entropy) against a
numpy reference, the calibration collectors, the graph rewrite on the symbol's structure, and
quantized models against their float32 originals."""
import numpy as np
import pytest

import weft as mx


# ------------------------------------------------------------------ entropy threshold search

def _smooth(v, eps=1e-4):
    zeros = v == 0
    nonzeros = (~zeros).sum()
    if nonzeros == 0:
        return None
    out = v - eps * zeros.sum() / nonzeros
    out[zeros] = eps
    return None if (out <= 0).any() else out


def _kl_threshold(hist, edges, num_quantized_bins):
    """The window [-t, t] of least KL divergence, written out loop by loop."""
    hist = hist.astype(np.float64)
    n = len(hist)
    zero = n // 2
    best_d, best_t = np.inf, edges[zero + num_quantized_bins // 2 + 1]
    for half in range(num_quantized_bins // 2, zero + 1):
        start, stop = zero - half, zero + half + 1
        window = hist[start:stop]
        p = window.copy()
        p[0] += hist[:start].sum()
        p[-1] += hist[stop:].sum()
        width = len(p) // num_quantized_bins
        q = np.zeros(len(p))
        for j in range(num_quantized_bins):
            lo = j * width
            hi = len(p) if j == num_quantized_bins - 1 else lo + width
            support = p[lo:hi] != 0
            if support.any():
                q[lo:hi][support] = window[lo:hi].sum() / support.sum()
        ps, qs = _smooth(p), _smooth(q)
        if ps is None or qs is None:
            continue
        ps, qs = ps / ps.sum(), qs / qs.sum()
        d = float(np.sum(ps * np.log(ps / qs)))
        if d < best_d:
            best_d, best_t = d, edges[stop]
    return best_t, best_d


@pytest.mark.parametrize("seed,bins,nq", [(0, 1001, 255), (1, 401, 31), (2, 2001, 511), (3, 255, 255)])
def test_calibrate_entropy_matches_reference(seed, bins, nq):
    rng = np.random.RandomState(seed)
    x = np.concatenate([rng.laplace(0, 1, 20000), rng.randn(30) * 15])
    th = np.abs(x).max()
    hist, edges = np.histogram(x, bins=bins, range=(-th, th))
    t, d = mx.nd.contrib.calibrate_entropy(mx.nd.array(hist), mx.nd.array(edges), num_quantized_bins=nq)
    rt, rd = _kl_threshold(hist, edges.astype(np.float32), nq)
    assert t.shape == (1,) and d.shape == (1,)
    assert t.asscalar() == pytest.approx(rt, rel=1e-6)
    assert d.asscalar() == pytest.approx(rd, rel=1e-4, abs=1e-7)


def test_calibrate_entropy_clips_outliers_and_keeps_uniform_ranges():
    rng = np.random.RandomState(4)
    # A narrow bulk with a few far outliers: the threshold clips them, well inside the range.
    x = np.concatenate([rng.randn(50000), [-40.0, 40.0, 35.0]])
    hist, edges = np.histogram(x, bins=2001, range=(-40, 40))
    t = mx.nd.contrib.calibrate_entropy(mx.nd.array(hist), mx.nd.array(edges))[0].asscalar()
    assert 2.0 < t < 10.0
    # Values spread evenly over the whole range lose most by clipping: the full range wins.
    hist = np.full(1001, 100.0)
    edges = np.linspace(-1, 1, 1002)
    t = mx.nd.contrib.calibrate_entropy(mx.nd.array(hist), mx.nd.array(edges))[0].asscalar()
    assert t == pytest.approx(1.0)


def test_calibrate_entropy_refuses_bad_inputs():
    hist, edges = mx.nd.ones((11,)), mx.nd.array(np.linspace(-1, 1, 12))
    with pytest.raises(mx.base.MXNetError, match="n odd"):
        mx.nd.contrib.calibrate_entropy(mx.nd.ones((10,)), mx.nd.ones((11,)))
    with pytest.raises(mx.base.MXNetError, match=r"hist_edges of shape \(12,\)"):
        mx.nd.contrib.calibrate_entropy(hist, mx.nd.ones((11,)))
    with pytest.raises(mx.base.MXNetError, match="num_quantized_bins <= the number of bins"):
        mx.nd.contrib.calibrate_entropy(hist, edges, num_quantized_bins=13)
    with pytest.raises(mx.base.MXNetError, match="expected float32 input 'hist', got int32"):
        mx.nd.contrib.calibrate_entropy(hist.astype("int32"), edges, num_quantized_bins=5)
