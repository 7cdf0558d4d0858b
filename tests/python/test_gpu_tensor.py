"""GPU against CPU for the shape, copy, cast, slicing, joining and random operators.

Every case binds the same symbol on mx.cpu() and mx.gpu(0) with the same inputs, head
gradients and (for grad_req='add') the same starting gradients, in float32, float16 and
float64, and requires the GPU's outputs and gradients to equal the CPU's: these operators
only move or convert elements, so both devices must produce the same bits (sums over
repeated elements, the gradients of tile and repeat, may round in another order). The
random generators must give the CPU's values for the same seed. Skipped without a GPU.
"""
import numpy as np
import pytest

import weft as mx
from weft.test_utils import check_consistency

pytestmark = pytest.mark.skipif(mx.context.num_gpus() == 0, reason='no GPU')

GPU_OPS = {
    'Flatten', 'reshape', 'expand_dims', 'squeeze', 'reshape_like',
    'Cast', '_backward_cast', 'amp_cast', '_backward_amp_cast', 'amp_multicast', '_backward_amp_multicast',
    'transpose', 'slice', '_backward_slice', 'slice_axis', '_backward_slice_axis', 'slice_like',
    '_backward_slice_like', 'flip', 'tile', '_backward_tile', 'repeat', '_backward_repeat', 'Concat',
    '_rnn_param_concat', '_backward_concat', 'split', '_split_v2', 'stack', 'SwapAxis', 'topk', '_backward_topk', 'sort', 'argsort',
    '_arange', '_linspace', '_slice_assign', '_slice_assign_scalar', 'broadcast_to', 'broadcast_axis',
    'broadcast_like', 'depth_to_space', 'space_to_depth',
    '_random_uniform', '_random_normal', '_random_randint', '_random_exponential', '_random_gamma',
    '_random_poisson', '_random_negative_binomial', '_random_generalized_negative_binomial',
    '_random_uniform_like', '_random_normal_like', '_random_gamma_like', '_random_exponential_like',
    '_random_poisson_like', '_random_negative_binomial_like', '_random_generalized_negative_binomial_like',
}

DTYPES = [np.float32, np.float16, np.float64]


def _run(sym, ctx, dtype, inputs, heads, grad_req, start_grads):
    names = sym.list_arguments()
    ex = sym.simple_bind(ctx, grad_req=grad_req, type_dict={n: dtype for n in names},
                         **{n: inputs[n].shape for n in names})
    for n in names:
        ex.arg_dict[n][:] = inputs[n].astype(dtype)
        if grad_req == 'add':
            ex.grad_dict[n][:] = start_grads[n].astype(dtype)
    outs = ex.forward(is_train=True)
    ex.backward([mx.nd.array(h, ctx=ctx, dtype=o.dtype) for h, o in zip(heads, outs)])
    return [o.asnumpy() for o in outs], {n: ex.grad_dict[n].asnumpy() for n in names}


def _compare(sym, shapes, grad_req='write', exact=True, seed=0):
    """Runs sym on both devices in every dtype and compares outputs and gradients."""
    rng = np.random.RandomState(seed)
    inputs = {n: rng.uniform(-4, 4, size=s) for n, s in shapes.items()}
    start = {n: rng.uniform(-1, 1, size=s) for n, s in shapes.items()}
    _, out_shapes, _ = sym.infer_shape(**shapes)
    heads = [rng.uniform(-2, 2, size=s) for s in out_shapes]
    for dtype in DTYPES:
        cpu_outs, cpu_grads = _run(sym, mx.cpu(), dtype, inputs, heads, grad_req, start)
        gpu_outs, gpu_grads = _run(sym, mx.gpu(0), dtype, inputs, heads, grad_req, start)
        for c, g in zip(cpu_outs, gpu_outs):
            assert g.dtype == c.dtype and g.shape == c.shape
            np.testing.assert_array_equal(g, c)
        for n in cpu_grads:
            if exact:
                np.testing.assert_array_equal(gpu_grads[n], cpu_grads[n], err_msg='gradient of %s' % n)
            else:
                tol = 1e-2 if dtype == np.float16 else 1e-5
                np.testing.assert_allclose(gpu_grads[n].astype(np.float64), cpu_grads[n].astype(np.float64),
                                           rtol=tol, atol=tol, err_msg='gradient of %s' % n)


def _consistency(sym, shapes, grad_req='write'):
    """MXNet's form: float64 on the CPU as the reference for float32 and float16 on the GPU."""
    ctx_list = [dict(ctx=mx.cpu(), type_dict={n: np.float64 for n in shapes}, **shapes)]
    for dt in (np.float32, np.float16):
        ctx_list.append(dict(ctx=mx.gpu(0), type_dict={n: dt for n in shapes}, **shapes))
    check_consistency(sym, ctx_list, grad_req=grad_req)


X = mx.sym.Variable('x')
Y = mx.sym.Variable('y')

COPY_CASES = [
    (mx.sym.Flatten(X), {'x': (2, 3, 4, 5)}),
    (mx.sym.Flatten(X), {'x': (7,)}),
    (mx.sym.reshape(X, shape=(0, -1)), {'x': (3, 4, 5)}),
    (mx.sym.Reshape(X, shape=(-3, 2, -1)), {'x': (2, 3, 8)}),
    (mx.sym.expand_dims(X, axis=1), {'x': (3, 5)}),
    (mx.sym.expand_dims(X, axis=-1), {'x': (4,)}),
    (mx.sym.squeeze(X), {'x': (1, 3, 1, 5)}),
    (mx.sym.squeeze(X, axis=2), {'x': (2, 3, 1)}),
    (mx.sym.reshape_like(X, Y), {'x': (6, 4), 'y': (2, 3, 4)}),
]

SHAPE_CASES = [
    (mx.sym.transpose(X), {'x': (5, 7)}),
    (mx.sym.transpose(X), {'x': (37, 65)}),          # the tiled path with partial tiles
    (mx.sym.transpose(X), {'x': (64, 96)}),
    (mx.sym.transpose(X, axes=(0, 2, 1)), {'x': (3, 33, 40)}),   # batched tiles
    (mx.sym.transpose(X, axes=(1, 0, 2)), {'x': (4, 5, 6)}),
    (mx.sym.transpose(X, axes=(0, 2, 3, 1)), {'x': (2, 3, 4, 5)}),
    (mx.sym.transpose(X, axes=(3, 1, 0, 2)), {'x': (2, 3, 4, 5)}),
    (mx.sym.transpose(X), {'x': (2, 1, 3, 1, 4)}),
    (mx.sym.slice(X, begin=(1, None), end=(4, None)), {'x': (5, 6)}),
    (mx.sym.slice(X, begin=(None, 5, 1), end=(None, 0, 4), step=(1, -2, 2)), {'x': (3, 7, 6)}),
    (mx.sym.slice(X, begin=(-1,), end=(None,), step=(-1,)), {'x': (8, 3)}),
    (mx.sym.slice_axis(X, axis=1, begin=1, end=-1), {'x': (3, 6, 2)}),
    (mx.sym.slice_axis(X, axis=0, begin=-2, end=None), {'x': (5, 4)}),
    (mx.sym.slice_like(X, Y), {'x': (6, 7), 'y': (3, 4)}),
    (mx.sym.slice_like(X, Y, axes=(1,)), {'x': (4, 7, 3), 'y': (2, 5, 3)}),
    (mx.sym.flip(X, axis=0), {'x': (4, 5)}),
    (mx.sym.reverse(X, axis=(0, 2)), {'x': (3, 4, 5)}),
    (mx.sym.Concat(X, Y, dim=1), {'x': (2, 3, 4), 'y': (2, 5, 4)}),
    (mx.sym.concat(X, Y, dim=0), {'x': (3, 4), 'y': (1, 4)}),
    (mx.sym.Concat(X, Y, dim=-1), {'x': (2, 3, 1), 'y': (2, 3, 6)}),
    (mx.sym._internal._rnn_param_concat(X, Y, dim=0, num_args=2), {'x': (7,), 'y': (5,)}),
    (mx.sym.stack(X, Y, axis=0), {'x': (3, 4), 'y': (3, 4)}),
    (mx.sym.stack(X, Y, axis=2), {'x': (3, 4), 'y': (3, 4)}),
    (mx.sym.split(X, num_outputs=3, axis=1), {'x': (2, 6, 3)}),
    (mx.sym.SliceChannel(X, num_outputs=2, axis=0, squeeze_axis=True), {'x': (2, 5)}),
    (mx.sym.split(X, num_outputs=4, axis=-1), {'x': (3, 8)}),
    (mx.sym.SwapAxis(X, dim1=0, dim2=2), {'x': (3, 4, 5)}),
    (mx.sym.swapaxes(X, dim1=1, dim2=-1), {'x': (2, 3, 4, 5)}),
    (mx.sym.SwapAxis(X, dim1=1, dim2=1), {'x': (2, 3)}),
    (mx.sym.SwapAxis(X, dim1=0, dim2=1), {'x': (40, 70)}),   # the tiled transpose path
    (mx.sym.depth_to_space(X, block_size=2), {'x': (2, 12, 3, 4)}),
    (mx.sym.space_to_depth(X, block_size=3), {'x': (2, 2, 6, 9)}),
]

SUM_CASES = [
    (mx.sym.broadcast_to(X, shape=(3, 4, 5)), {'x': (3, 1, 5)}),
    (mx.sym.broadcast_axis(X, axis=(0, 2), size=(4, 3)), {'x': (1, 5, 1)}),
    (mx.sym.broadcast_like(X, Y), {'x': (1, 6), 'y': (4, 6)}),
    (mx.sym.tile(X, reps=(2, 3)), {'x': (3, 4)}),
    (mx.sym.tile(X, reps=(2, 1, 2)), {'x': (3, 5)}),
    (mx.sym.tile(X, reps=(3,)), {'x': (2, 4)}),
    (mx.sym.repeat(X, repeats=3), {'x': (2, 3)}),
    (mx.sym.repeat(X, repeats=2, axis=1), {'x': (3, 4, 2)}),
    (mx.sym.repeat(X, repeats=4, axis=-1), {'x': (5, 3)}),
]


@pytest.mark.parametrize('grad_req', ['write', 'add'])
@pytest.mark.parametrize('case', range(len(COPY_CASES)))
def test_copy_ops_match_cpu(case, grad_req):
    sym, shapes = COPY_CASES[case]
    _compare(sym, shapes, grad_req)


@pytest.mark.parametrize('grad_req', ['write', 'add'])
@pytest.mark.parametrize('case', range(len(SHAPE_CASES)))
def test_shape_ops_match_cpu(case, grad_req):
    sym, shapes = SHAPE_CASES[case]
    _compare(sym, shapes, grad_req)


@pytest.mark.parametrize('grad_req', ['write', 'add'])
@pytest.mark.parametrize('case', range(len(SUM_CASES)))
def test_tile_repeat_match_cpu(case, grad_req):
    sym, shapes = SUM_CASES[case]
    _compare(sym, shapes, grad_req, exact=False)


@pytest.mark.parametrize('case', [0, 3, 6, 9, 13, 16, 17, 21, 22])
def test_shape_ops_consistency(case):
    sym, shapes = SHAPE_CASES[case]
    _consistency(sym, shapes)
    _consistency(sym, shapes, grad_req='add')


def test_large_transpose_and_concat():
    # Enough elements for many blocks of the grid-stride loops.
    x = np.random.RandomState(3).uniform(size=(300, 517)).astype(np.float32)
    for ctx_out in (mx.gpu(0),):
        got = mx.nd.transpose(mx.nd.array(x, ctx=ctx_out)).asnumpy()
        np.testing.assert_array_equal(got, x.T)
        y = mx.nd.array(x, ctx=ctx_out)
        got = mx.nd.concat(y, y[:, :17], dim=1).asnumpy()
        np.testing.assert_array_equal(got, np.concatenate([x, x[:, :17]], axis=1))


def test_split_v2_matches_cpu():
    x = np.arange(60, dtype=np.float32).reshape(3, 20)
    for args in [dict(indices_or_sections=4, axis=1), dict(indices_or_sections=(2, 9, 15), axis=1)]:
        cpu = mx.nd.split_v2(mx.nd.array(x), **args)
        gpu = mx.nd.split_v2(mx.nd.array(x, ctx=mx.gpu(0)), **args)
        assert len(cpu) == len(gpu)
        for c, g in zip(cpu, gpu):
            np.testing.assert_array_equal(g.asnumpy(), c.asnumpy())


CAST_DTYPES = ['float32', 'float64', 'float16', 'bfloat16', 'uint8', 'int8', 'int32', 'int64', 'bool']


def _cast_source(dtype):
    vals = np.array([0, 1, -1, 2.5, -2.5, 127.6, -128.7, 255.4, 300, -300, 1e10, -1e10, 65504, 1e-3], np.float64)
    if dtype in ('float32', 'float64', 'float16', 'bfloat16'):
        vals = np.concatenate([vals, [np.nan, np.inf, -np.inf]])
    return mx.nd.array(vals, dtype='float64').astype(dtype)


@pytest.mark.parametrize('src', CAST_DTYPES)
def test_cast_every_dtype_pair_matches_cpu(src):
    x = _cast_source(src)
    xg = x.as_in_context(mx.gpu(0))
    for dst in CAST_DTYPES:
        c = mx.nd.Cast(x, dtype=dst)
        g = mx.nd.Cast(xg, dtype=dst)
        assert g.dtype == c.dtype
        np.testing.assert_array_equal(g.astype('float64').asnumpy(), c.astype('float64').asnumpy(),
                                      err_msg='%s -> %s' % (src, dst))


@pytest.mark.parametrize('grad_req', ['write', 'add'])
@pytest.mark.parametrize('dst', ['float16', 'float32', 'float64'])
def test_cast_gradient_matches_cpu(dst, grad_req):
    _compare(mx.sym.Cast(X, dtype=dst), {'x': (4, 5)}, grad_req)


@pytest.mark.parametrize('grad_req', ['write', 'add'])
def test_amp_cast_matches_cpu(grad_req):
    _compare(mx.sym.amp_cast(X, dtype='float16'), {'x': (3, 4)}, grad_req)
    _compare(mx.sym.amp_multicast(X, Y, num_outputs=2), {'x': (3, 4), 'y': (2, 2)}, grad_req)


def test_amp_multicast_mixed_dtypes():
    a = mx.nd.array(np.linspace(-3, 3, 12).reshape(3, 4), dtype='float16')
    b = mx.nd.array(np.linspace(-1, 1, 4), dtype='float32')
    for narrow in (False, True):
        cpu = mx.nd.amp_multicast(a, b, num_outputs=2, cast_narrow=narrow)
        gpu = mx.nd.amp_multicast(a.as_in_context(mx.gpu(0)), b.as_in_context(mx.gpu(0)), num_outputs=2,
                                  cast_narrow=narrow)
        for c, g in zip(cpu, gpu):
            assert c.dtype == g.dtype
            np.testing.assert_array_equal(g.asnumpy(), c.asnumpy())


def test_integer_and_bool_dtypes_move_unchanged():
    # Writes move raw bits whatever the dtype; compare every element with the CPU's.
    base = np.arange(-6, 18).reshape(2, 3, 4)
    for dtype in ('int32', 'int64', 'uint8', 'int8', 'bool', 'bfloat16'):
        x = mx.nd.array(base, dtype='float64').astype(dtype)
        xg = x.as_in_context(mx.gpu(0))
        for f in (lambda a: mx.nd.transpose(a, axes=(2, 0, 1)), lambda a: mx.nd.flip(a, axis=1),
                  lambda a: mx.nd.slice(a, begin=(None, 1), end=(None, 3)), lambda a: mx.nd.tile(a, reps=(2, 1)),
                  lambda a: mx.nd.concat(a, a, dim=2), lambda a: mx.nd.Flatten(a)):
            c, g = f(x), f(xg)
            assert c.dtype == g.dtype
            np.testing.assert_array_equal(g.astype('float64').asnumpy(), c.astype('float64').asnumpy())


@pytest.mark.parametrize('dtype', ['float32', 'float16', 'float64', 'int32', 'int64', 'uint8'])
def test_arange_linspace_match_cpu(dtype):
    calls = [
        lambda ctx: mx.nd.arange(3, 40, 2.5 if dtype.startswith('float') else 3, ctx=ctx, dtype=dtype),
        lambda ctx: mx.nd.arange(0, 9, ctx=ctx, dtype=dtype, repeat=3),
        lambda ctx: mx.nd.arange(20, ctx=ctx, dtype=dtype),
        lambda ctx: mx.nd._internal._linspace(0, 10, 7, ctx=ctx, dtype=dtype),
        lambda ctx: mx.nd._internal._linspace(1, 2, 6, endpoint=False, ctx=ctx, dtype=dtype),
        lambda ctx: mx.nd._internal._linspace(5, 5, 1, ctx=ctx, dtype=dtype),
    ]
    for f in calls:
        c, g = f(mx.cpu()), f(mx.gpu(0))
        assert c.dtype == g.dtype and c.shape == g.shape
        np.testing.assert_array_equal(g.asnumpy(), c.asnumpy())


@pytest.mark.parametrize('dtype', ['float32', 'float16', 'float64', 'int32', 'uint8', 'bool'])
def test_slice_assign_matches_cpu(dtype):
    base = np.arange(60).reshape(3, 4, 5) % 7
    lhs = mx.nd.array(base, dtype='float64').astype(dtype)
    rhs = mx.nd.array(np.arange(12).reshape(2, 2, 3) % 5, dtype='float64').astype(dtype)
    box = dict(begin=(1, None, 4), end=(3, 3, None), step=(1, 2, -2))
    for ctx in (mx.gpu(0),):
        c = mx.nd._internal._slice_assign(lhs, rhs, **box)
        g = mx.nd._internal._slice_assign(lhs.as_in_context(ctx), rhs.as_in_context(ctx), **box)
        np.testing.assert_array_equal(g.astype('float64').asnumpy(), c.astype('float64').asnumpy())
        c = mx.nd._internal._slice_assign_scalar(lhs, scalar=3, **box)
        g = mx.nd._internal._slice_assign_scalar(lhs.as_in_context(ctx), scalar=3, **box)
        np.testing.assert_array_equal(g.astype('float64').asnumpy(), c.astype('float64').asnumpy())
        # NDArray item assignment on the device.
        xc, xg = lhs.copy(), lhs.as_in_context(ctx)
        xc[1:3, 0] = 1
        xg[1:3, 0] = 1
        xc[0] = rhs[0, 0, 0]
        xg[0] = rhs[0, 0, 0].as_in_context(ctx)
        np.testing.assert_array_equal(xg.astype('float64').asnumpy(), xc.astype('float64').asnumpy())


# ---------------------------------------------------------------- topk, sort, argsort

def _with_ties(shape, seed):
    # Few distinct values so that ties (broken by position, as a stable sort does) are common.
    return np.random.RandomState(seed).randint(-3, 4, size=shape).astype(np.float64)


SORT_CASES = [
    (lambda x: mx.sym.topk(x, k=3, axis=-1, ret_typ='value'), (4, 9)),
    (lambda x: mx.sym.topk(x, k=2, axis=0, ret_typ='value', is_ascend=True), (6, 5)),
    (lambda x: mx.sym.topk(x, k=4, axis=1, ret_typ='both'), (3, 11, 2)),
    (lambda x: mx.sym.topk(x, k=5, axis=None, ret_typ='value'), (4, 6)),
    (lambda x: mx.sym.sort(x, axis=-1), (5, 7)),
    (lambda x: mx.sym.sort(x, axis=0, is_ascend=False), (8, 3)),
    (lambda x: mx.sym.sort(x, axis=1), (2, 1500, 2)),      # more than one shared-memory chunk
]


@pytest.mark.parametrize('grad_req', ['write', 'add'])
@pytest.mark.parametrize('case', range(len(SORT_CASES)))
def test_topk_sort_match_cpu(case, grad_req):
    make, shape = SORT_CASES[case]
    x = mx.sym.Variable('x')
    sym = make(x)
    rng = np.random.RandomState(case)
    inputs = {'x': _with_ties(shape, case)}
    start = {'x': rng.uniform(-1, 1, size=shape)}
    _, out_shapes, _ = sym.infer_shape(x=shape)
    heads = [rng.uniform(-2, 2, size=s) for s in out_shapes]
    for dtype in DTYPES:
        c_outs, c_grads = _run(sym, mx.cpu(), dtype, inputs, heads, grad_req, start)
        g_outs, g_grads = _run(sym, mx.gpu(0), dtype, inputs, heads, grad_req, start)
        for c, g in zip(c_outs, g_outs):
            np.testing.assert_array_equal(g, c)
        np.testing.assert_array_equal(g_grads['x'], c_grads['x'])


@pytest.mark.parametrize('dtype', ['float32', 'float16', 'float64', 'int32', 'int64'])
def test_topk_indices_mask_argsort_match_cpu(dtype):
    base = _with_ties((6, 40), 2)
    if dtype.startswith('float'):
        base[1, 3] = np.nan
        base[4, [0, 7, 9]] = np.nan
    x = mx.nd.array(base, dtype='float64').astype(dtype)
    xg = x.as_in_context(mx.gpu(0))
    calls = [
        lambda a: mx.nd.topk(a, k=5, axis=1),
        lambda a: mx.nd.topk(a, k=5, axis=1, ret_typ='indices', dtype='int32', is_ascend=True),
        lambda a: mx.nd.topk(a, k=3, axis=0, ret_typ='mask'),
        lambda a: mx.nd.topk(a, k=7, axis=None, ret_typ='indices', dtype='int64'),
        lambda a: mx.nd.argsort(a, axis=1),
        lambda a: mx.nd.argsort(a, axis=0, is_ascend=False, dtype='int64'),
        lambda a: mx.nd.sort(a, axis=1, is_ascend=False),
    ]
    for f in calls:
        c, g = f(x), f(xg)
        assert c.dtype == g.dtype and c.shape == g.shape
        np.testing.assert_array_equal(g.asnumpy(), c.asnumpy())


def test_sort_long_rows_match_numpy_stable():
    x = np.random.RandomState(8).randint(0, 50, size=(3, 5000)).astype(np.float32)
    got = mx.nd.argsort(mx.nd.array(x, ctx=mx.gpu(0)), axis=1, dtype='int64').asnumpy()
    np.testing.assert_array_equal(got, np.argsort(x, axis=1, kind='stable'))
    got = mx.nd.sort(mx.nd.array(x, ctx=mx.gpu(0)), axis=1, is_ascend=False).asnumpy()
    np.testing.assert_array_equal(got, -np.sort(-x, axis=1))


# ---------------------------------------------------------------- random generators

GENERATORS = [
    ('uniform', dict(low=-2.0, high=3.0)),
    ('normal', dict(loc=1.5, scale=2.0)),
    ('exponential', dict(scale=0.5)),
    ('gamma', dict(alpha=0.7, beta=2.0)),
    ('gamma', dict(alpha=4.0, beta=0.5)),
    ('poisson', dict(lam=3.0)),
    ('poisson', dict(lam=40.0)),
    ('negative_binomial', dict(k=3, p=0.4)),
    ('generalized_negative_binomial', dict(mu=2.0, alpha=0.3)),
]


def _draw(name, params, ctx, dtype, shape, seed):
    mx.random.seed(seed)
    return getattr(mx.nd.random, name)(shape=shape, dtype=dtype, ctx=ctx, **params).asnumpy()


def _assert_same_draw(c, g):
    # The samplers run the same double-precision code on both devices; the GPU's log and
    # cos may differ from the host's in the last bit, which can move a rounded value by one
    # step (or, rarely, flip a rejection test), so allow a handful of near misses.
    assert c.dtype == g.dtype and c.shape == g.shape
    c64, g64 = c.astype(np.float64), g.astype(np.float64)
    tol = 1e-3 if c.dtype == np.float16 else 1e-6
    close = np.isclose(g64, c64, rtol=tol, atol=tol)
    assert close.mean() > 0.999, 'only %.4f of the values agree' % close.mean()


@pytest.mark.parametrize('dtype', ['float32', 'float16', 'float64'])
@pytest.mark.parametrize('case', range(len(GENERATORS)))
def test_random_same_seed_same_values(case, dtype):
    name, params = GENERATORS[case]
    c = _draw(name, params, mx.cpu(), dtype, (50, 41), 11)
    g = _draw(name, params, mx.gpu(0), dtype, (50, 41), 11)
    _assert_same_draw(c, g)
    # A second draw continues the stream in the same way on both devices.
    mx.random.seed(5)
    a1 = getattr(mx.nd.random, name)(shape=(300,), dtype=dtype, ctx=mx.cpu(), **params).asnumpy()
    a2 = getattr(mx.nd.random, name)(shape=(300,), dtype=dtype, ctx=mx.cpu(), **params).asnumpy()
    mx.random.seed(5)
    b1 = getattr(mx.nd.random, name)(shape=(300,), dtype=dtype, ctx=mx.gpu(0), **params).asnumpy()
    b2 = getattr(mx.nd.random, name)(shape=(300,), dtype=dtype, ctx=mx.gpu(0), **params).asnumpy()
    _assert_same_draw(a1, b1)
    _assert_same_draw(a2, b2)
    assert not np.array_equal(b1, b2)


def test_uniform_and_normal_bits_equal():
    # Uniform is only a multiply-add on 53 random bits: the values must be identical.
    c = _draw('uniform', dict(low=0.0, high=1.0), mx.cpu(), 'float32', (1000,), 3)
    g = _draw('uniform', dict(low=0.0, high=1.0), mx.gpu(0), 'float32', (1000,), 3)
    np.testing.assert_array_equal(g, c)
    c = _draw('normal', dict(loc=0.0, scale=1.0), mx.cpu(), 'float32', (1000,), 3)
    g = _draw('normal', dict(loc=0.0, scale=1.0), mx.gpu(0), 'float32', (1000,), 3)
    np.testing.assert_allclose(g, c, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize('dtype', ['int32', 'int64'])
def test_randint_same_seed_same_values(dtype):
    c = _draw('randint', dict(low=-5, high=1000), mx.cpu(), dtype, (2000,), 9)
    g = _draw('randint', dict(low=-5, high=1000), mx.gpu(0), dtype, (2000,), 9)
    assert c.dtype == g.dtype
    np.testing.assert_array_equal(g, c)
    assert g.min() >= -5 and g.max() < 1000


@pytest.mark.parametrize('name,params,mean,var', [
    ('uniform', dict(low=-1.0, high=3.0), 1.0, 16.0 / 12),
    ('normal', dict(loc=2.0, scale=0.5), 2.0, 0.25),
    ('exponential', dict(scale=0.25), 0.25, 1.0 / 16),
    ('gamma', dict(alpha=2.5, beta=1.5), 3.75, 2.5 * 1.5 ** 2),
    ('poisson', dict(lam=25.0), 25.0, 25.0),
    ('negative_binomial', dict(k=4, p=0.5), 4.0, 8.0),
    ('generalized_negative_binomial', dict(mu=3.0, alpha=0.5), 3.0, 3.0 + 0.5 * 9.0),
])
def test_random_moments_on_gpu(name, params, mean, var):
    n = 400000
    x = _draw(name, params, mx.gpu(0), 'float32', (n,), 21).astype(np.float64)
    assert abs(x.mean() - mean) < 5 * np.sqrt(var / n)
    assert abs(x.var() - var) < 0.02 * var
    if name == 'uniform':
        assert x.min() >= -1.0 and x.max() < 3.0


@pytest.mark.parametrize('name,params', [
    ('uniform_like', dict(low=-1.0, high=1.0)),
    ('normal_like', dict(loc=0.0, scale=3.0)),
    ('gamma_like', dict(alpha=2.0, beta=1.0)),
    ('exponential_like', dict(lam=1.5)),
    ('poisson_like', dict(lam=2.0)),
    ('negative_binomial_like', dict(k=2, p=0.3)),
    ('generalized_negative_binomial_like', dict(mu=1.0, alpha=0.2)),
])
@pytest.mark.parametrize('dtype', ['float32', 'float16'])
def test_random_like_same_seed_same_values(name, params, dtype):
    data = mx.nd.zeros((30, 20), dtype=dtype)
    mx.random.seed(17)
    c = getattr(mx.nd.random, name)(data, **params).asnumpy()
    mx.random.seed(17)
    g = getattr(mx.nd.random, name)(data.as_in_context(mx.gpu(0)), **params).asnumpy()
    _assert_same_draw(c, g)


def test_initializers_run_on_gpu():
    # Gluon's initializers draw with uniform and normal on the parameter's device.
    net = mx.gluon.nn.Dense(64, in_units=32)
    mx.random.seed(4)
    net.initialize(mx.init.Xavier(), ctx=mx.gpu(0))
    w_gpu = net.weight.data(mx.gpu(0)).asnumpy()
    net2 = mx.gluon.nn.Dense(64, in_units=32)
    mx.random.seed(4)
    net2.initialize(mx.init.Xavier(), ctx=mx.cpu())
    np.testing.assert_allclose(w_gpu, net2.weight.data().asnumpy(), rtol=1e-6, atol=1e-7)
    assert np.abs(w_gpu).max() > 0
