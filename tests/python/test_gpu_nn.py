"""GPU versions of the layer operators (BatchNorm, Pooling, Activation, LeakyReLU, softmax,
log_softmax, softmin, SoftmaxActivation, LayerNorm, GroupNorm, InstanceNorm) against the CPU
ones: forward outputs and gradients of the same random values in float64, float32 and float16
(the CPU and the GPU entry of each dtype compared with that dtype's tolerances), with
grad_req 'write' and 'add', and BatchNorm's moving statistics after a training forward."""
import numpy as np
import pytest

import weft as mx
from weft import nd
from weft.test_utils import assert_almost_equal, check_consistency

pytestmark = pytest.mark.skipif(mx.context.num_gpus() == 0, reason='no GPU')

GPU_OPS = {
    'Activation', '_backward_Activation',
    'LeakyReLU', '_backward_LeakyReLU',
    'BatchNorm', '_backward_BatchNorm', '_BatchNorm_replay',
    'Pooling', '_backward_Pooling',
    'softmax', '_backward_softmax',
    'log_softmax', '_backward_log_softmax',
    'softmin', '_backward_softmin',
    'SoftmaxActivation', '_backward_SoftmaxActivation',
    'LayerNorm', '_backward_LayerNorm',
    'GroupNorm', '_backward_GroupNorm',
    'InstanceNorm', '_backward_InstanceNorm',
}

DTYPES = ('float64', 'float32', 'float16')


def weighted(sym, name='w'):
    """sym * w with a random w of the output's shape: the gradient reaching sym is then w,
    not the ones check_consistency feeds (under which softmax's and batch-statistics
    BatchNorm's input gradients are all zero)."""
    return sym * mx.sym.Variable(name)


def consistent(sym, shapes, dtypes=DTYPES, grad_req='write', arg_params=None, aux_params=None, typed=('data',),
               **kwargs):
    """check_consistency of sym between the CPU and the GPU, separately for each dtype (the
    names in `typed` get it; the others are inferred)."""
    for dt in dtypes:
        ctx_list = [dict(shapes, ctx=c, type_dict={n: dt for n in typed}) for c in (mx.cpu(), mx.gpu(0))]
        check_consistency(sym, ctx_list, grad_req=grad_req, arg_params=arg_params, aux_params=aux_params, **kwargs)


# ------------------------------------------------------------------ Activation / LeakyReLU
@pytest.mark.parametrize('act', ['relu', 'sigmoid', 'tanh', 'softrelu', 'softsign'])
@pytest.mark.parametrize('grad_req', ['write', 'add'])
def test_activation(act, grad_req):
    data = mx.sym.Variable('data')
    for shape in [(7,), (3, 5, 11), (2, 3, 64, 33)]:
        sym = weighted(mx.sym.Activation(data, act_type=act))
        consistent(sym, {'data': shape, 'w': shape}, grad_req=grad_req, scale=3.0)


@pytest.mark.parametrize('act,slope', [('leaky', 0.25), ('leaky', -1.5), ('elu', 0.7), ('selu', 0.25),
                                       ('gelu', 0.25)])
@pytest.mark.parametrize('grad_req', ['write', 'add'])
def test_leaky_relu(act, slope, grad_req):
    data = mx.sym.Variable('data')
    for shape in [(9,), (4, 6, 10)]:
        sym = weighted(mx.sym.LeakyReLU(data, act_type=act, slope=slope))
        consistent(sym, {'data': shape, 'w': shape}, grad_req=grad_req, scale=2.0)


@pytest.mark.parametrize('grad_req', ['write', 'add'])
def test_prelu(grad_req):
    data, gamma = mx.sym.Variable('data'), mx.sym.Variable('gamma')
    # One slope per channel (axis 1; axis 0 for 1-d data) and one slope for everything.
    for shape, gshape in [((4, 3, 5, 6), (3,)), ((4, 3, 5, 6), (1,)), ((8, 700), (700,)), ((10,), (10,)),
                          ((2, 5, 3, 4, 3), (5,))]:
        sym = weighted(mx.sym.LeakyReLU(data, gamma=gamma, act_type='prelu'))
        consistent(sym, {'data': shape, 'gamma': gshape, 'w': shape}, grad_req=grad_req, typed=('data', 'gamma'))


def _leaky_nd(ctx, x, train, seed, **kwargs):
    mx.random.seed(seed)
    xa = nd.array(x, ctx=ctx, dtype=x.dtype)
    xa.attach_grad()
    w = nd.array(np.linspace(-1, 1, x.size).reshape(x.shape), ctx=ctx, dtype=x.dtype)
    with mx.autograd.record(train_mode=train):
        y = nd.LeakyReLU(xa, **kwargs)
        loss = y * w
    loss.backward()
    return y.asnumpy(), xa.grad.asnumpy()


@pytest.mark.parametrize('dtype', DTYPES)
def test_rrelu_inference(dtype):
    # Outside training the slope is the midpoint of the bounds, on both devices.
    x = np.random.RandomState(3).normal(size=(5, 7, 9)).astype(dtype)
    kw = dict(act_type='rrelu', lower_bound=0.1, upper_bound=0.6)
    y_cpu, g_cpu = _leaky_nd(mx.cpu(), x, False, 11, **kw)
    y_gpu, g_gpu = _leaky_nd(mx.gpu(0), x, False, 11, **kw)
    assert_almost_equal(y_gpu, y_cpu)
    assert_almost_equal(g_gpu, g_cpu)
    neg = x < 0
    assert_almost_equal(y_gpu[neg].astype(np.float64) / x[neg], np.full(neg.sum(), 0.35), rtol=1e-2, atol=1e-3)


@pytest.mark.parametrize('dtype', DTYPES)
def test_rrelu_training(dtype):
    # Training draws one slope per element in [lower, upper) from Philox with the CPU's
    # counters, and GPU i shares CPU i's stream of the seed: after the same seed both devices
    # draw the same slopes, and the gradient uses the slopes the forward drew.
    x = np.random.RandomState(4).normal(size=(6, 5, 40)).astype(dtype)
    kw = dict(act_type='rrelu', lower_bound=0.1, upper_bound=0.6)
    y_cpu, g_cpu = _leaky_nd(mx.cpu(), x, True, 11, **kw)
    y1, g1 = _leaky_nd(mx.gpu(0), x, True, 11, **kw)
    y2, g2 = _leaky_nd(mx.gpu(0), x, True, 11, **kw)
    y3, _ = _leaky_nd(mx.gpu(0), x, True, 12, **kw)
    assert_almost_equal(y1, y_cpu)
    assert_almost_equal(g1, g_cpu)
    assert (y1 == y2).all() and (g1 == g2).all()
    assert (y1 != y3).any()
    neg, pos = x < 0, x > 0
    slopes = y1[neg].astype(np.float64) / x[neg]
    assert slopes.min() >= 0.1 - 1e-2 and slopes.max() <= 0.6 + 1e-2 and slopes.std() > 0.05
    assert_almost_equal(y1[pos], x[pos])
    w = np.linspace(-1, 1, x.size).reshape(x.shape)
    expect = np.where(x > 0, 1.0, y1.astype(np.float64) / np.where(x == 0, 1, x)) * w
    tol = dict(rtol=2e-2, atol=2e-2) if dtype == 'float16' else dict(rtol=1e-4, atol=1e-5)
    assert_almost_equal(g1[x != 0], expect[x != 0], **tol)


# ------------------------------------------------------------------ softmax family
@pytest.mark.parametrize('op', ['softmax', 'log_softmax', 'softmin'])
@pytest.mark.parametrize('grad_req', ['write', 'add'])
def test_softmax(op, grad_req):
    data = mx.sym.Variable('data')
    cases = [((5, 17), -1, None), ((5, 17), 0, 2.0), ((3, 1000), -1, 0.5), ((2, 300, 4), 1, None),
             ((4, 3, 5, 6), 2, 1.5), ((6, 1), -1, None), ((2, 2, 2, 33), 0, None), ((3, 7, 40), 1, 0.7)]
    for shape, axis, t in cases:
        kw = {'axis': axis} if t is None else {'axis': axis, 'temperature': t}
        sym = weighted(getattr(mx.sym, op)(data, **kw))
        consistent(sym, {'data': shape, 'w': shape}, grad_req=grad_req, scale=4.0)


@pytest.mark.parametrize('op', ['softmax', 'log_softmax', 'softmin'])
@pytest.mark.parametrize('in_dtype', ['float16', 'float32'])
def test_softmax_output_dtype(op, in_dtype):
    # dtype='float64': the output is float64, the gradient the data's dtype.
    data = mx.sym.Variable('data')
    sym = weighted(getattr(mx.sym, op)(data, axis=1, dtype='float64'))
    consistent(sym, {'data': (3, 40, 2), 'w': (3, 40, 2)}, dtypes=(in_dtype,))


def _softmax_length_nd(op, ctx, x, length, axis, w):
    xa = nd.array(x, ctx=ctx, dtype=x.dtype)
    la = nd.array(length, ctx=ctx, dtype=length.dtype)
    xa.attach_grad()
    with mx.autograd.record():
        y = getattr(nd, op)(xa, la, axis=axis, use_length=True)
        loss = y * nd.array(w, ctx=ctx, dtype=x.dtype)
    loss.backward()
    return y.asnumpy(), xa.grad.asnumpy()


@pytest.mark.parametrize('op', ['softmax', 'log_softmax', 'softmin'])
@pytest.mark.parametrize('dtype', DTYPES)
@pytest.mark.parametrize('len_dtype', ['int32', 'int64', 'float32'])
def test_softmax_use_length(op, dtype, len_dtype):
    rng = np.random.RandomState(5)
    for shape, axis in [((4, 9), -1), ((3, 300, 2), 1), ((2, 5, 64), 1)]:
        x = rng.normal(size=shape).astype(dtype)
        w = rng.normal(size=shape).astype(dtype)
        lshape = tuple(d for i, d in enumerate(shape) if i != axis % len(shape))
        length = rng.randint(0, shape[axis] + 1, size=lshape).astype(len_dtype)
        y_cpu, g_cpu = _softmax_length_nd(op, mx.cpu(), x, length, axis, w)
        y_gpu, g_gpu = _softmax_length_nd(op, mx.gpu(0), x, length, axis, w)
        tol = dict(rtol=1e-2, atol=1e-2) if dtype == 'float16' else {}
        assert_almost_equal(y_gpu, y_cpu, **tol)
        assert_almost_equal(g_gpu, g_cpu, **tol)
        # Positions at or beyond a row's length are outputs of 0 with gradient 0.
        mask = np.moveaxis(np.arange(shape[axis]).reshape([-1] + [1] * (len(shape) - 1)) >=
                           np.expand_dims(length, 0).astype(np.int64), 0, axis % len(shape))
        assert (y_gpu[mask] == 0).all() and (g_gpu[mask] == 0).all()


@pytest.mark.parametrize('mode', ['instance', 'channel'])
def test_softmax_activation(mode):
    data = mx.sym.Variable('data')
    for shape in [(4, 10), (3, 5, 4, 6), (2, 4, 8, 8)]:
        sym = weighted(mx.sym.SoftmaxActivation(data, mode=mode))
        consistent(sym, {'data': shape, 'w': shape}, scale=3.0)


# ------------------------------------------------------------------ BatchNorm
def _bn_aux(c, rng):
    return {'bn_moving_mean': rng.normal(size=(c,)), 'bn_moving_var': rng.uniform(0.5, 2.0, size=(c,))}


@pytest.mark.parametrize('fix_gamma', [True, False])
@pytest.mark.parametrize('use_global_stats', [False, True])
@pytest.mark.parametrize('grad_req', ['write', 'add'])
def test_batch_norm(fix_gamma, use_global_stats, grad_req):
    rng = np.random.RandomState(7)
    data = mx.sym.Variable('data')
    for shape, axis in [((8, 3), 1), ((4, 5, 6, 7), 1), ((2, 3, 4, 5), -1), ((3, 4, 9), 2), ((6, 2, 3), 0),
                        ((2, 6, 3, 4, 5), 1), ((64, 4, 33, 17), 1)]:
        bn = mx.sym.BatchNorm(data, name='bn', fix_gamma=fix_gamma, use_global_stats=use_global_stats, axis=axis,
                              eps=1e-3, momentum=0.8)
        consistent(weighted(bn), {'data': shape, 'w': shape}, grad_req=grad_req,
                   aux_params=_bn_aux(shape[axis], rng), scale=2.0)


def test_batch_norm_output_mean_var():
    rng = np.random.RandomState(8)
    data = mx.sym.Variable('data')
    bn = mx.sym.BatchNorm(data, name='bn', fix_gamma=False, output_mean_var=True, eps=1e-4)
    shape = (6, 4, 5, 3)
    w = [mx.sym.Variable('w%d' % i) for i in range(3)]
    sym = mx.sym.Group([bn[i] * w[i] for i in range(3)])
    consistent(sym, {'data': shape, 'w0': shape, 'w1': (4,), 'w2': (4,)}, aux_params=_bn_aux(4, rng))


@pytest.mark.parametrize('dtype', ['float32', 'float16'])
def test_batch_norm_replay(dtype):
    # Memory mirroring recomputes a BatchNorm from the mean and inverse std its forward
    # saved: on each device the replay gives the forward's output bits, and the two devices
    # agree within the dtype's tolerance.
    rng = np.random.RandomState(9)
    x = rng.normal(1.0, 2.0, (6, 4, 5, 3)).astype(dtype)
    gamma, beta = rng.uniform(0.5, 1.5, 4).astype('float32'), rng.normal(0, 1, 4).astype('float32')
    mm, mv = np.zeros(4, 'float32'), np.ones(4, 'float32')
    params = {'eps': 1e-4, 'fix_gamma': False, 'output_mean_var': True}
    results = []
    for ctx in (mx.cpu(), mx.gpu(0)):
        ins = [nd.array(a, ctx=ctx, dtype=a.dtype) for a in (x, gamma, beta, mm, mv)]
        with mx.autograd.train_mode():
            y, mean, invstd = nd.BatchNorm(*ins, **params)
            again = nd.invoke('_BatchNorm_replay', [ins[0], ins[1], ins[2], mean, invstd], params)
        assert np.array_equal(again[0].asnumpy(), y.asnumpy())
        results.append([a.asnumpy() for a in again])
    tol = 1e-2 if dtype == 'float16' else 1e-5
    for cpu, gpu in zip(*results):
        assert_almost_equal(gpu, cpu, rtol=tol, atol=tol)


def _bn_train_nd(ctx, x, gamma, beta, mm, mv, dy, **kw):
    args = [nd.array(a, ctx=ctx, dtype=a.dtype) for a in (x, gamma, beta)]
    aux = [nd.array(a, ctx=ctx, dtype=a.dtype) for a in (mm, mv)]
    for a in args:
        a.attach_grad()
    with mx.autograd.record(train_mode=kw.pop('train', True)):
        y = nd.BatchNorm(*args, *aux, **kw)
    y.backward(nd.array(dy, ctx=ctx, dtype=dy.dtype))
    return [y.asnumpy()] + [a.asnumpy() for a in aux] + [a.grad.asnumpy() for a in args]


@pytest.mark.parametrize('dtype', DTYPES)
@pytest.mark.parametrize('axis,shape', [(1, (16, 5, 7, 3)), (-1, (4, 6, 8)), (1, (300, 2))])
@pytest.mark.parametrize('train', [True, False])
def test_batch_norm_moving_stats(dtype, axis, shape, train):
    # A training forward updates moving = moving * momentum + batch * (1 - momentum) the same
    # way on both devices (the data has a large mean, where a naive variance would cancel);
    # an inference forward leaves the statistics alone and normalises with them.
    rng = np.random.RandomState(9)
    c = shape[axis]
    x = (rng.normal(size=shape) * 0.5 + 20.0).astype(dtype)
    gamma, beta = rng.normal(size=(c,)).astype(dtype), rng.normal(size=(c,)).astype(dtype)
    mm, mv = (rng.normal(size=(c,)) + 20).astype(dtype), rng.uniform(0.1, 1.0, size=(c,)).astype(dtype)
    dy = rng.normal(size=shape).astype(dtype)
    kw = dict(axis=axis, fix_gamma=False, momentum=0.7, eps=1e-5, train=train)
    cpu = _bn_train_nd(mx.cpu(), x, gamma, beta, mm, mv, dy, **dict(kw))
    gpu = _bn_train_nd(mx.gpu(0), x, gamma, beta, mm, mv, dy, **dict(kw))
    tol = dict(rtol=2e-2, atol=5e-2) if dtype == 'float16' else dict(rtol=1e-4, atol=1e-4)
    for name, a, b in zip(['out', 'moving_mean', 'moving_var', 'd data', 'd gamma', 'd beta'], gpu, cpu):
        assert_almost_equal(a, b, names=(name + ' (gpu)', name + ' (cpu)'), **tol)
    red = tuple(i for i in range(len(shape)) if i != axis % len(shape))
    if train:
        batch_var = x.astype(np.float64).var(axis=red)
        assert_almost_equal(gpu[2], mv * 0.7 + batch_var * 0.3, **tol)
    else:
        assert (gpu[1] == mm).all() and (gpu[2] == mv).all()


@pytest.mark.parametrize('dtype', DTYPES)
@pytest.mark.parametrize('axis,shape', [(1, (16, 8, 48, 48)), (1, (50, 3, 61, 67)), (-1, (2, 48, 48, 64)),
                                        (1, (65536, 5))])
@pytest.mark.parametrize('train', [True, False])
@pytest.mark.parametrize('fix_gamma', [False, True])
def test_batch_norm_split_path(dtype, axis, shape, train, fix_gamma):
    # Tensors of 2^18 elements and more take the GPU's split path (chunks of a channel reduced
    # into temporary space, then an elementwise pass): rows of channels (NCHW), a last chunk
    # shorter than the others, channels last and a batch of feature vectors.
    rng = np.random.RandomState(13)
    c = shape[axis]
    x = (rng.normal(size=shape) * 0.7 + 3.0).astype(dtype)
    gamma, beta = rng.normal(size=(c,)).astype(dtype), rng.normal(size=(c,)).astype(dtype)
    mm, mv = rng.normal(size=(c,)).astype(dtype), rng.uniform(0.1, 1.0, size=(c,)).astype(dtype)
    dy = rng.normal(size=shape).astype(dtype)
    kw = dict(axis=axis, fix_gamma=fix_gamma, momentum=0.9, eps=1e-5, train=train)
    cpu = _bn_train_nd(mx.cpu(), x, gamma, beta, mm, mv, dy, **dict(kw))
    gpu = _bn_train_nd(mx.gpu(0), x, gamma, beta, mm, mv, dy, **dict(kw))
    # Sums of 10^5..10^6 terms in float (float16's accumulation type too) on both devices.
    tol = dict(rtol=3e-2, atol=8e-2) if dtype == 'float16' else dict(rtol=2e-3, atol=2e-3)
    if dtype == 'float64':
        tol = dict(rtol=1e-9, atol=1e-8)
    for name, a, b in zip(['out', 'moving_mean', 'moving_var', 'd data', 'd gamma', 'd beta'], gpu, cpu):
        assert_almost_equal(a, b, names=(name + ' (gpu)', name + ' (cpu)'), **tol)


def test_batch_norm_split_path_accumulates():
    rng = np.random.RandomState(14)
    data = mx.sym.Variable('data')
    bn = mx.sym.BatchNorm(data, name='bn', fix_gamma=False, eps=1e-3, momentum=0.8)
    shape = (8, 16, 48, 48)
    consistent(weighted(bn), {'data': shape, 'w': shape}, grad_req='add', aux_params=_bn_aux(16, rng), scale=2.0)


# ------------------------------------------------------------------ Pooling
POOL_CASES = [
    # (data shape, kwargs)
    ((2, 3, 10, 9), dict(kernel=(3, 3), stride=(2, 2), pad=(1, 1))),
    ((2, 3, 10, 9), dict(kernel=(3, 3), stride=(1, 1))),
    ((2, 3, 8, 8), dict(kernel=(2, 2), stride=(2, 2))),
    ((2, 3, 11, 7), dict(kernel=(3, 2), stride=(2, 3), pad=(1, 1), pooling_convention='full')),
    ((2, 3, 13), dict(kernel=(4,), stride=(3,), pad=(2,))),
    ((2, 3, 13), dict(kernel=(4,), stride=(3,), pooling_convention='same')),
    ((2, 3, 12), dict(kernel=(5,), stride=(2,), pooling_convention='same')),
    ((1, 2, 5, 6, 7), dict(kernel=(2, 3, 2), stride=(2, 1, 2), pad=(1, 1, 0))),
    ((1, 2, 5, 6, 7), dict(kernel=(3, 3, 3), stride=(2, 2, 2), pooling_convention='full')),
    ((2, 3, 6, 5), dict(kernel=(1, 1), global_pool=True)),
    ((2, 3, 40), dict(kernel=(1,), global_pool=True)),
    ((1, 2, 3, 4, 5), dict(kernel=(1, 1, 1), global_pool=True)),
]


@pytest.mark.parametrize('pool_type', ['max', 'avg', 'sum', 'lp'])
@pytest.mark.parametrize('grad_req', ['write', 'add'])
def test_pooling(pool_type, grad_req):
    data = mx.sym.Variable('data')
    for shape, kw in POOL_CASES:
        variants = [dict(kw)]
        if pool_type == 'avg':
            variants.append(dict(kw, count_include_pad=False))
        if pool_type == 'lp':
            variants = [dict(kw, p_value=p) for p in (1, 2, 3)]
        for v in variants:
            sym = mx.sym.Pooling(data, pool_type=pool_type, **v)
            out_shape = sym.infer_shape(data=shape)[1][0]
            sym = weighted(sym)
            # lp's gradient divides by the output: keep it away from 0 with positive data.
            params = None
            if pool_type == 'lp':
                rng = np.random.RandomState(2)
                params = {'data': rng.uniform(0.5, 2.0, size=shape), 'w': rng.normal(size=out_shape)}
            # float16 max pooling: the GPU is compared with the CPU in float16, where both
            # see the same rounded values and the same ties.
            consistent(sym, {'data': shape, 'w': out_shape}, grad_req=grad_req, arg_params=params)


def test_pooling_max_ties_go_to_first():
    # A window of equal values gives its whole gradient to its first cell, on both devices.
    x = np.ones((1, 1, 4, 4), dtype=np.float32)
    for ctx in (mx.cpu(), mx.gpu(0)):
        xa = nd.array(x, ctx=ctx)
        xa.attach_grad()
        with mx.autograd.record():
            y = nd.Pooling(xa, kernel=(2, 2), stride=(2, 2), pool_type='max')
        y.backward()
        expect = np.zeros((4, 4), dtype=np.float32)
        expect[::2, ::2] = 1
        assert_almost_equal(xa.grad.asnumpy()[0, 0], expect)
        xa = nd.array(x, ctx=ctx)
        xa.attach_grad()
        with mx.autograd.record():
            y = nd.Pooling(xa, kernel=(3, 3), stride=(1, 1), pool_type='max')
        y.backward()
        expect = np.zeros((4, 4), dtype=np.float32)
        expect[:2, :2] = 1
        assert_almost_equal(xa.grad.asnumpy()[0, 0], expect)


# ------------------------------------------------------------------ LayerNorm / GroupNorm / InstanceNorm
@pytest.mark.parametrize('grad_req', ['write', 'add'])
def test_layer_norm(grad_req):
    data = mx.sym.Variable('data')
    for shape, axis in [((4, 10), -1), ((3, 5, 300), -1), ((3, 7, 4), 1), ((6, 3, 2), 0), ((2, 1030), 1)]:
        sym = weighted(mx.sym.LayerNorm(data, axis=axis, eps=1e-4))
        consistent(sym, {'data': shape, 'w': shape}, grad_req=grad_req)


@pytest.mark.parametrize('grad_req', ['write', 'add'])
def test_group_norm(grad_req):
    data = mx.sym.Variable('data')
    for shape, groups in [((2, 4, 5, 6), 1), ((2, 4, 5, 6), 2), ((3, 6, 7), 3), ((2, 8, 3, 2, 2), 8)]:
        sym = weighted(mx.sym.GroupNorm(data, num_groups=groups, eps=1e-4))
        consistent(sym, {'data': shape, 'w': shape}, grad_req=grad_req)


@pytest.mark.parametrize('grad_req', ['write', 'add'])
def test_instance_norm(grad_req):
    data = mx.sym.Variable('data')
    for shape in [(2, 3, 5), (3, 4, 6, 7), (2, 2, 3, 4, 5)]:
        sym = weighted(mx.sym.InstanceNorm(data, eps=1e-3))
        consistent(sym, {'data': shape, 'w': shape}, grad_req=grad_req)


@pytest.mark.parametrize('op,kw', [('LayerNorm', dict(axis=1)), ('GroupNorm', dict(num_groups=2))])
def test_norm_mean_std_outputs(op, kw):
    data = mx.sym.Variable('data')
    shape = (3, 4, 5)
    norm = getattr(mx.sym, op)(data, output_mean_var=True, **kw)
    stat = norm.infer_shape(data=shape)[1][1]
    w = [mx.sym.Variable('w%d' % i) for i in range(3)]
    sym = mx.sym.Group([norm[i] * w[i] for i in range(3)])
    consistent(sym, {'data': shape, 'w0': shape, 'w1': stat, 'w2': stat})
