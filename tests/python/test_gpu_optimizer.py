"""GPU against CPU for every update operator with GPU code and the helpers of mixed
precision and LARS: the same random weights, gradients and states on both devices, one
and several steps (new gradients each step), every output and every updated state
compared; float32 (and float64 / float16 where the operator takes them) weights, float16
weights with float32 master copies for the mp_ and multi_mp_ forms. The multi-tensor forms
also run groups larger than one launch's table and tensors larger than one chunk. Last,
gluon.Trainer with SGD (momentum), Adam, AdamW, RMSProp and LAMB moves parameters on the
GPU to the values it gives on the CPU."""
import numpy as np
import pytest

import weft as mx
from weft import gluon, nd
from weft.test_utils import assert_almost_equal

pytestmark = pytest.mark.skipif(mx.context.num_gpus() == 0, reason='no GPU')

GPU_OPS = {
    'sgd_update', 'sgd_mom_update', 'mp_sgd_update', 'mp_sgd_mom_update', 'nag_mom_update', 'mp_nag_mom_update',
    'signsgd_update', 'signum_update', 'adam_update', '_adamw_update', '_mp_adamw_update', 'lamb_update_phase1',
    'lamb_update_phase2', 'mp_lamb_update_phase1', 'mp_lamb_update_phase2', 'rmsprop_update', 'rmspropalex_update',
    'adagrad_update', '_sparse_adagrad_update', 'adadelta_update', 'ftrl_update', 'ftml_update',
    'multi_sgd_update', 'multi_sgd_mom_update', 'multi_mp_sgd_update', 'multi_mp_sgd_mom_update',
    'preloaded_multi_sgd_update', 'preloaded_multi_sgd_mom_update', 'preloaded_multi_mp_sgd_update',
    'preloaded_multi_mp_sgd_mom_update', '_multi_adamw_update', '_multi_mp_adamw_update', '_multi_lamb_update',
    '_multi_mp_lamb_update', '_contrib_group_adagrad_update',
    'all_finite', 'multi_all_finite', 'multi_sum_sq', 'multi_lars', 'reset_arrays',
}

SHAPE = (7, 33)


def _op(name):
    for ns in (nd, nd._internal):
        if hasattr(ns, name):
            return getattr(ns, name)
    raise AttributeError(name)


def _tol(dtype):
    # float16 allows a rounding step or two of the stored states to differ (the GPU fuses
    # multiply-adds the CPU build does not).
    return {'float16': (1e-2, 1e-2), 'float32': (1e-4, 1e-5), 'float64': (1e-9, 1e-10)}[str(np.dtype(dtype))]


# Input roles: 'w' weight, 'g' gradient (new each step), 's' signed state, 'p' positive
# state, 'w32' float32 master copy of the weight, 'f' float32 signed state, 'fp' float32
# positive state, ('scalar', value) a one-element array in the weight's dtype, ('scalar32',
# value) a float32 one.
def _make(role, shape, dtype, rng, weight=None):
    if role == 'w':
        return rng.uniform(-1, 1, shape).astype(dtype)
    if role == 'g':
        return rng.normal(0, 1, shape).astype(dtype)
    if role == 's':
        return (0.1 * rng.normal(0, 1, shape)).astype(dtype)
    if role == 'p':
        return rng.uniform(0.5, 1.5, shape).astype(dtype)
    if role == 'w32':
        return weight.astype(np.float32)
    if role == 'f':
        return (0.1 * rng.normal(0, 1, shape)).astype(np.float32)
    if role == 'fp':
        return rng.uniform(0.5, 1.5, shape).astype(np.float32)
    kind, value = role
    return np.array([value], dtype=dtype if kind == 'scalar' else np.float32)


def _run_single(name, roles, kwargs, dtype, steps, out_idx=0, out_dtype=None, shape=SHAPE):
    """Runs the op `steps` times on each device (out = input out_idx, or a fresh array when
    out_idx is None) and returns the final arrays of both devices."""
    rng = np.random.RandomState(1234)
    init = []
    for r in roles:
        init.append(_make(r, shape, dtype, rng, weight=init[0] if init else None))
    grads = [[rng.normal(0, 1, shape).astype(dtype) if r == 'g' else None for r in roles] for _ in range(steps)]
    results = []
    for ctx in (mx.cpu(), mx.gpu(0)):
        arrs = [nd.array(a, ctx=ctx, dtype=a.dtype) for a in init]
        out = arrs[out_idx] if out_idx is not None else nd.zeros(shape, ctx=ctx, dtype=out_dtype or dtype)
        for step in range(steps):
            for j, r in enumerate(roles):
                if r == 'g' and step > 0:
                    arrs[j] = nd.array(grads[step][j], ctx=ctx, dtype=grads[step][j].dtype)
            _op(name)(*arrs, out=out, **kwargs)
        results.append([a.asnumpy() for a in arrs] + [out.asnumpy()])
    return results


def _compare(results, names):
    cpu, gpu = results
    for j, (a, b) in enumerate(zip(cpu, gpu)):
        rtol, atol = _tol(a.dtype)
        assert a.dtype == b.dtype, (names, j)
        assert_almost_equal(b, a, rtol=rtol, atol=atol, names=('gpu %s[%d]' % (names, j), 'cpu'))


COMMON = dict(rescale_grad=0.7, clip_gradient=0.9)

SINGLE = [
    ('sgd_update', ['w', 'g'], dict(lr=0.1, wd=0.01, **COMMON)),
    ('sgd_mom_update', ['w', 'g', 's'], dict(lr=0.1, momentum=0.9, wd=0.01, **COMMON)),
    ('nag_mom_update', ['w', 'g', 's'], dict(lr=0.1, momentum=0.9, wd=0.01, **COMMON)),
    ('signsgd_update', ['w', 'g'], dict(lr=0.05, wd=0.01, **COMMON)),
    ('signum_update', ['w', 'g', 's'], dict(lr=0.05, momentum=0.9, wd=0.01, wd_lh=0.02, **COMMON)),
    ('adam_update', ['w', 'g', 's', 'p'], dict(lr=0.01, beta1=0.9, beta2=0.99, epsilon=1e-6, wd=0.01, **COMMON)),
    ('_adamw_update', ['w', 'g', 's', 'p', ('scalar', 0.7)],
     dict(lr=0.01, beta1=0.9, beta2=0.99, epsilon=1e-6, wd=0.01, eta=0.5, clip_gradient=0.9)),
    ('lamb_update_phase1', ['w', 'g', 's', 'p'],
     dict(beta1=0.9, beta2=0.99, epsilon=1e-6, t=3, wd=0.01, **COMMON)),
    ('rmsprop_update', ['w', 'g', 'p'], dict(lr=0.01, gamma1=0.9, epsilon=1e-6, wd=0.01, clip_weights=0.8, **COMMON)),
    ('rmspropalex_update', ['w', 'g', 'p', 's', 's'],
     dict(lr=0.01, gamma1=0.9, gamma2=0.8, epsilon=1e-6, wd=0.01, clip_weights=0.8, **COMMON)),
    ('adagrad_update', ['w', 'g', 'p'], dict(lr=0.05, epsilon=1e-6, wd=0.01, **COMMON)),
    # Dense arrays: the AdaGrad kernel without weight decay (which the operator refuses).
    ('_sparse_adagrad_update', ['w', 'g', 'p'], dict(lr=0.05, epsilon=1e-6, **COMMON)),
    ('adadelta_update', ['w', 'g', 'p', 'p'], dict(rho=0.9, epsilon=1e-5, wd=0.01, **COMMON)),
    ('ftrl_update', ['w', 'g', 's', 'p'], dict(lr=0.1, lamda1=0.01, beta=1.0, wd=0.01, **COMMON)),
    ('ftml_update', ['w', 'g', 'p', 'p', 's'],
     dict(lr=0.05, beta1=0.6, beta2=0.99, epsilon=1e-6, t=2, wd=0.01, rescale_grad=0.7, clip_grad=0.9)),
]


@pytest.mark.parametrize('steps', [1, 4])
@pytest.mark.parametrize('dtype', ['float32', 'float64', 'float16'])
@pytest.mark.parametrize('name,roles,kwargs', SINGLE, ids=[s[0] for s in SINGLE])
def test_single_update_matches_cpu(name, roles, kwargs, dtype, steps):
    out_idx = None if name == 'lamb_update_phase1' else 0
    _compare(_run_single(name, roles, kwargs, dtype, steps, out_idx=out_idx), name)


def test_lamb_phase2_matches_cpu():
    for dtype in ('float32', 'float64'):
        for r1, r2, lb, ub in ((0.8, 1.7, -1, -1), (0.8, 1.7, 1.0, 2.0), (0.0, 1.7, -1, -1), (3.0, 1.7, 0.5, 2.0)):
            roles = ['w', 'g', ('scalar', r1), ('scalar', r2)]
            _compare(_run_single('lamb_update_phase2', roles, dict(lr=0.1, lower_bound=lb, upper_bound=ub), dtype, 2),
                     'lamb_update_phase2')


MP = [
    ('mp_sgd_update', ['w', 'g', 'w32'], dict(lr=0.1, wd=0.01, **COMMON)),
    ('mp_sgd_mom_update', ['w', 'g', 'f', 'w32'], dict(lr=0.1, momentum=0.9, wd=0.01, **COMMON)),
    ('mp_nag_mom_update', ['w', 'g', 'f', 'w32'], dict(lr=0.1, momentum=0.9, wd=0.01, **COMMON)),
    ('_mp_adamw_update', ['w', 'g', 'f', 'fp', 'w32', ('scalar32', 0.7)],
     dict(lr=0.01, beta1=0.9, beta2=0.99, epsilon=1e-6, wd=0.01, eta=0.5, clip_gradient=0.9)),
]


@pytest.mark.parametrize('steps', [1, 4])
@pytest.mark.parametrize('dtype', ['float16', 'float32'])
@pytest.mark.parametrize('name,roles,kwargs', MP, ids=[m[0] for m in MP])
def test_mp_update_matches_cpu(name, roles, kwargs, dtype, steps):
    _compare(_run_single(name, roles, kwargs, dtype, steps), name)


def test_mp_lamb_phases_match_cpu():
    kw1 = dict(beta1=0.9, beta2=0.99, epsilon=1e-6, t=2, wd=0.01, **COMMON)
    _compare(_run_single('mp_lamb_update_phase1', ['w', 'g', 'f', 'fp', 'w32'], kw1, 'float16', 3, out_idx=None,
                         out_dtype='float32'), 'mp_lamb_update_phase1')
    # phase 2: float16 weight, float32 direction, norms and master copy.
    roles = ['w', 'fp', ('scalar32', 0.9), ('scalar32', 1.3), 'w32']
    _compare(_run_single('mp_lamb_update_phase2', roles, dict(lr=0.1, lower_bound=0.2, upper_bound=5.0), 'float16', 3),
             'mp_lamb_update_phase2')


@pytest.mark.parametrize('name', ['_adamw_update', '_mp_adamw_update'])
@pytest.mark.parametrize('scale', [0.0, float('inf'), float('nan')])
def test_adamw_skips_step_on_bad_scale(name, scale):
    if name == '_adamw_update':
        roles = ['w', 'g', 's', 'p', ('scalar', scale)]
        dtype = 'float32'
    else:
        roles = ['w', 'g', 'f', 'fp', 'w32', ('scalar32', scale)]
        dtype = 'float16'
    cpu, gpu = _run_single(name, roles, dict(lr=0.01, eta=1.0, wd=0.1), dtype, 2)
    for a, b in zip(cpu, gpu):
        assert_almost_equal(b, a, rtol=0, atol=0, equal_nan=True)


# ---------------------------------------------------------------- multi-tensor forms
def _multi_shapes(count):
    # Sizes around one chunk (4096) and beyond, and empty-ish small ones.
    base = [(3, 5), (4096,), (4097,), (130, 70), (1,), (2, 2, 3)]
    return [base[i % len(base)] for i in range(count)]


def _run_multi(name, group, kwargs, dtype, steps, count, preloaded=False, scale=None, mp=False):
    rng = np.random.RandomState(99)
    shapes = _multi_shapes(count)
    init = []
    for shp in shapes:
        w = rng.uniform(-1, 1, shp).astype(dtype)
        grp = []
        for r in group:
            grp.append(w if r == 'w' else _make(r, shp, dtype, rng, weight=w))
        init.append(grp)
    lrs = rng.uniform(0.01, 0.1, count).astype(np.float32)
    wds = rng.uniform(0.0, 0.02, count).astype(np.float32)
    grads = [[rng.normal(0, 1, shp).astype(dtype) for shp in shapes] for _ in range(steps)]
    kw = dict(kwargs)
    if not preloaded:
        kw['learning_rates' if 'lamb' in name else 'lrs'] = [float(x) for x in lrs]
        kw['wds'] = [float(x) for x in wds]
    key = 'num_tensors' if 'lamb' in name else 'num_weights'
    kw[key] = count
    results = []
    for ctx in (mx.cpu(), mx.gpu(0)):
        groups = [[nd.array(a, ctx=ctx, dtype=a.dtype) for a in grp] for grp in init]
        extra = []
        if preloaded:
            extra += [nd.array(lrs, ctx=ctx), nd.array(wds, ctx=ctx)]
        if scale is not None:
            extra.append(nd.array([scale], ctx=ctx, dtype='float32'))
        outs = [grp[0] for grp in groups]
        for step in range(steps):
            if step > 0:
                for grp, gnew in zip(groups, grads[step]):
                    grp[1] = nd.array(gnew, ctx=ctx, dtype=gnew.dtype)
            _op(name)(*([a for grp in groups for a in grp] + extra), out=outs, **kw)
        results.append([a.asnumpy() for grp in groups for a in grp])
    return results


MULTI_SGD = [
    ('multi_sgd_update', ['w', 'g'], {}, False),
    ('multi_sgd_mom_update', ['w', 'g', 's'], dict(momentum=0.9), False),
    ('multi_mp_sgd_update', ['w', 'g', 'w32'], {}, True),
    ('multi_mp_sgd_mom_update', ['w', 'g', 'f', 'w32'], dict(momentum=0.9), True),
]


@pytest.mark.parametrize('count', [3, 45])
@pytest.mark.parametrize('preloaded', [False, True])
@pytest.mark.parametrize('name,group,kwargs,mp', MULTI_SGD, ids=[m[0] for m in MULTI_SGD])
def test_multi_sgd_matches_cpu(name, group, kwargs, mp, preloaded, count):
    op = ('preloaded_' + name) if preloaded else name
    dtypes = ['float16', 'float32'] if mp else ['float32', 'float64', 'float16']
    for dtype in dtypes:
        res = _run_multi(op, group, dict(rescale_grad=0.7, clip_gradient=0.9, **kwargs), dtype, 3, count,
                         preloaded=preloaded)
        _compare(res, op)


@pytest.mark.parametrize('count', [2, 41])
@pytest.mark.parametrize('mp', [False, True])
def test_multi_adamw_matches_cpu(mp, count):
    name = '_multi_mp_adamw_update' if mp else '_multi_adamw_update'
    group = ['w', 'g', 'f', 'fp', 'w32'] if mp else ['w', 'g', 's', 'p']
    kw = dict(beta1=0.9, beta2=0.99, epsilon=1e-6, clip_gradient=0.9, etas=[0.5 + 0.01 * i for i in range(count)])
    for dtype in (['float16', 'float32'] if mp else ['float32', 'float64']):
        for scale in (0.7, 0.0):
            res = _run_multi(name, group, kw, dtype, 3, count, scale=scale)
            _compare(res, name)


@pytest.mark.parametrize('count', [3, 43])
@pytest.mark.parametrize('mp', [False, True])
def test_multi_lamb_matches_cpu(mp, count):
    name = '_multi_mp_lamb_update' if mp else '_multi_lamb_update'
    group = ['w', 'g', 'f', 'fp', 'w32'] if mp else ['w', 'g', 's', 'p']
    for dtype in (['float16', 'float32'] if mp else ['float32', 'float64', 'float16']):
        for bounds in (dict(), dict(lower_bound=0.5, upper_bound=3.0)):
            for bias_correction in (True, False):
                kw = dict(beta1=0.9, beta2=0.99, epsilon=1e-6, rescale_grad=0.7, clip_gradient=0.9,
                          bias_correction=bias_correction, step_count=[1 + i % 5 for i in range(count)], **bounds)
                _compare(_run_multi(name, group, kw, dtype, 3, count), name)


@pytest.mark.parametrize('shape', [(6, 5), (3, 700), (5000, 3)])
@pytest.mark.parametrize('dtype', ['float32', 'float64', 'float16'])
def test_group_adagrad_matches_cpu(dtype, shape):
    rng = np.random.RandomState(3)
    w = rng.uniform(-1, 1, shape).astype(dtype)
    hist = rng.uniform(0, 1, (shape[0], 1)).astype(dtype)
    grads = [rng.normal(0, 1, shape).astype(dtype) for _ in range(3)]
    res = []
    for ctx in (mx.cpu(), mx.gpu(0)):
        W = nd.array(w, ctx=ctx, dtype=dtype)
        H = nd.array(hist, ctx=ctx, dtype=dtype)
        for g in grads:
            nd.contrib.group_adagrad_update(W, nd.array(g, ctx=ctx, dtype=dtype), H, out=W, lr=0.1, rescale_grad=0.7,
                                            clip_gradient=0.9, epsilon=1e-5)
        res.append([W.asnumpy(), H.asnumpy()])
    _compare(res, '_contrib_group_adagrad_update')


def test_multi_update_errors_on_gpu():
    ctx = mx.gpu(0)
    w = nd.zeros((3,), ctx=ctx)
    g = nd.zeros((4,), ctx=ctx)
    with pytest.raises(mx.base.MXNetError, match='multi_sgd_update'):
        nd.multi_sgd_update(w, g, out=[w], lrs=[0.1], wds=[0.0], num_weights=1)
        w.wait_to_read()
    lrs = nd.zeros((2,), ctx=ctx)
    with pytest.raises(mx.base.MXNetError, match='lrs'):
        nd.preloaded_multi_sgd_update(w, w, lrs, nd.zeros((1,), ctx=ctx), out=[w], num_weights=1)
        w.wait_to_read()


# ---------------------------------------------------------------- helpers
def test_all_finite_matches_cpu():
    rng = np.random.RandomState(5)
    good = rng.normal(0, 1, (5000,)).astype(np.float32)
    bad = good.copy()
    bad[4321] = np.inf
    nan16 = good.astype(np.float16)
    nan16[17] = np.nan
    for ctx in (mx.gpu(0),):
        for arrs, want in (([good], 1), ([bad], 0), ([nan16], 0)):
            got = nd.all_finite(nd.array(arrs[0], ctx=ctx, dtype=arrs[0].dtype))
            assert got.context == ctx and got.asscalar() == want
        many = [nd.array(good, ctx=ctx) for _ in range(44)]
        assert nd.multi_all_finite(*many, num_arrays=44).asscalar() == 1
        many[43] = nd.array(bad, ctx=ctx)
        assert nd.multi_all_finite(*many, num_arrays=44).asscalar() == 0
        # init_output=False keeps a flag that is already 0 ...
        flag = nd.zeros((1,), ctx=ctx)
        nd.all_finite(nd.array(good, ctx=ctx), init_output=False, out=flag)
        assert flag.asscalar() == 0
        # ... and one that is 1 where everything is finite.
        flag = nd.ones((1,), ctx=ctx)
        nd.multi_all_finite(nd.array(good, ctx=ctx), nd.array(good, ctx=ctx), num_arrays=2, init_output=False,
                            out=flag)
        assert flag.asscalar() == 1


@pytest.mark.parametrize('dtype', ['float32', 'float16', 'float64'])
def test_multi_sum_sq_and_lars_match_cpu(dtype):
    rng = np.random.RandomState(8)
    shapes = [(3,), (5000,), (64, 65), (1,)] * 40  # 160 arrays: more than one launch's table
    arrays = [rng.normal(0, 1, s).astype(dtype) for s in shapes]
    res = []
    for ctx in (mx.cpu(), mx.gpu(0)):
        res.append(nd.multi_sum_sq(*[nd.array(a, ctx=ctx, dtype=dtype) for a in arrays],
                                   num_arrays=len(arrays)).asnumpy())
    assert_almost_equal(res[1], res[0], rtol=1e-5, atol=1e-6)
    n = 50
    lrs = rng.uniform(0.01, 0.1, n).astype(np.float32)
    wss = rng.uniform(0, 4, n).astype(np.float32)
    gss = rng.uniform(0, 4, n).astype(np.float32)
    wss[3] = 0
    gss[7] = 0
    wds = rng.uniform(0, 0.01, n).astype(np.float32)
    res = []
    for ctx in (mx.cpu(), mx.gpu(0)):
        a = [nd.array(x, ctx=ctx) for x in (lrs, wss, gss, wds)]
        res.append(nd.multi_lars(*a, eta=0.01, eps=1e-8, rescale_grad=0.5).asnumpy())
    assert_almost_equal(res[1], res[0], rtol=1e-6, atol=1e-8)


def test_reset_arrays_on_gpu():
    ctx = mx.gpu(0)
    a = nd.ones((3, 4), ctx=ctx)
    b = nd.ones((5000,), ctx=ctx, dtype='float16')
    c = nd.ones((2,), ctx=ctx)
    nd.reset_arrays(a, b, num_arrays=2)
    assert np.all(a.asnumpy() == 0) and np.all(b.asnumpy() == 0) and np.all(c.asnumpy() == 1)


# ---------------------------------------------------------------- Trainer on the GPU
def _train(ctx, optimizer, opt_kwargs, dtype, steps=3):
    """Parameters given the same values and, at each step, the same gradients on `ctx`,
    updated by a Trainer; returns the final values. Gradients are written directly, so
    that only the optimizer's operators run on the device; they are marked fresh, as a
    backward would, or the Trainer refuses them as stale (MXNet's UserWarning)."""
    rng = np.random.RandomState(21)
    shapes = [(16, 10), (16,), (4, 16), (4,), (70, 90)]
    params = []
    for i, shp in enumerate(shapes):
        p = gluon.Parameter('p%d' % i, shape=shp, dtype=dtype)
        p.initialize(ctx=ctx)
        p.set_data(nd.array(rng.uniform(-0.5, 0.5, shp), ctx=ctx, dtype=dtype))
        params.append(p)
    trainer = gluon.Trainer(params, optimizer, dict(opt_kwargs))
    for _ in range(steps):
        for p in params:
            p.grad(ctx)[:] = nd.array(rng.normal(0, 1, p.shape), ctx=ctx, dtype=dtype)
            p.data(ctx)._fresh_grad = True
        trainer.step(8)
    return {p.name: p.data(ctx).asnumpy() for p in params}


TRAINERS = [
    ('sgd', dict(learning_rate=0.1, momentum=0.9, wd=0.001), 'float32'),
    ('sgd', dict(learning_rate=0.1, momentum=0.9, wd=0.001, multi_precision=True), 'float16'),
    ('adam', dict(learning_rate=0.01, wd=0.001), 'float32'),
    ('adamw', dict(learning_rate=0.01, wd=0.01), 'float32'),
    ('rmsprop', dict(learning_rate=0.01, gamma1=0.9), 'float32'),
    ('rmsprop', dict(learning_rate=0.01, gamma1=0.9, centered=True), 'float32'),
    ('lamb', dict(learning_rate=0.01, wd=0.01), 'float32'),
    ('nag', dict(learning_rate=0.05, momentum=0.9), 'float32'),
]


@pytest.mark.parametrize('optimizer,kwargs,dtype', TRAINERS,
                         ids=['%s-%s-%d' % (t[0], t[2], i) for i, t in enumerate(TRAINERS)])
def test_trainer_gpu_matches_cpu(optimizer, kwargs, dtype):
    cpu = _train(mx.cpu(), optimizer, kwargs, dtype)
    gpu = _train(mx.gpu(0), optimizer, kwargs, dtype)
    rtol, atol = _tol(dtype)
    for k in cpu:
        assert_almost_equal(gpu[k], cpu[k], rtol=rtol, atol=atol, names=('gpu ' + k, 'cpu ' + k))
