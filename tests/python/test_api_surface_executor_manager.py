"""mx.executor_manager: MXNet's first data-parallel executors, against one executor on the
whole batch."""
import numpy as np
import pytest

import weft as mx
from weft import executor_manager as em


def _net():
    data = mx.sym.var("data")
    fc = mx.sym.FullyConnected(data, num_hidden=3, name="fc")
    return mx.sym.SoftmaxOutput(fc, name="softmax")


def _iter(batch=6, seed=0):
    rs = np.random.RandomState(seed)
    x = rs.uniform(-1, 1, (12, 5)).astype(np.float32)
    y = rs.randint(0, 3, 12).astype(np.float32)
    return mx.io.NDArrayIter(x, y, batch_size=batch)


def test_split_input_slice_and_argument_checks():
    assert em._split_input_slice(10, [1, 1, 2]) == [slice(0, 2), slice(2, 4), slice(4, 10)]
    assert em._split_input_slice(7, [1, 1]) == [slice(0, 4), slice(4, 7)]
    with pytest.raises(ValueError, match="Too many slices"):
        em._split_input_slice(2, [1, 1, 1])
    x = mx.sym.var("x")
    with pytest.raises(ValueError, match='duplicated argument name "w"'):
        em._check_arguments(mx.sym.FullyConnected(x, mx.sym.var("w"), no_bias=True, num_hidden=2) +
                            mx.sym.FullyConnected(x, mx.sym.var("w"), no_bias=True, num_hidden=2))


def test_manager_splits_the_batch_and_sums_to_the_full_gradient():
    sym = _net()
    it = _iter()
    args = sym.list_arguments()
    params = [n for n in args if n not in ("data", "softmax_label")]
    ctx = [mx.cpu(0), mx.cpu(1)]
    mgr = em.DataParallelExecutorManager(sym, ctx, it, args, params, sym.list_auxiliary_states(),
                                         work_load_list=[1, 2])
    assert mgr.slices == [slice(0, 2), slice(2, 6)]
    rs = np.random.RandomState(1)
    values = {"fc_weight": mx.nd.array(rs.uniform(-1, 1, (3, 5))), "fc_bias": mx.nd.array(rs.uniform(-1, 1, (3,)))}
    mgr.set_params(values, {})
    batch = next(iter(it))
    mgr.load_data_batch(batch)
    mgr.forward(is_train=True)
    mgr.backward()
    # one executor on the whole batch
    ref = sym.simple_bind(mx.cpu(), data=(6, 5), softmax_label=(6,))
    ref.copy_params_from(values)
    ref.forward(is_train=True, data=batch.data[0], softmax_label=batch.label[0])
    ref.backward()
    for name, grads in zip(mgr.param_names, mgr.grad_arrays):
        np.testing.assert_allclose(sum(g.asnumpy() for g in grads), ref.grad_dict[name].asnumpy(), rtol=1e-5,
                                   atol=1e-6)
    metric = mx.metric.Accuracy()
    mgr.update_metric(metric, batch.label)
    ref_metric = mx.metric.Accuracy()
    ref_metric.update(batch.label, ref.outputs)
    assert metric.get() == ref_metric.get()
    # copy_to averages the devices' copies (equal here) into the given arrays
    out = {k: mx.nd.zeros(v.shape) for k, v in values.items()}
    mgr.copy_to(out, {})
    for k in values:
        np.testing.assert_allclose(out[k].asnumpy(), values[k].asnumpy(), rtol=1e-6)


def test_manager_binds_a_group_per_bucket_sharing_parameters():
    sym = _net()
    it = _iter()
    it.default_bucket_key = 6
    args = sym.list_arguments()
    params = ["fc_weight", "fc_bias"]
    made = []

    def sym_gen(key):
        made.append(key)
        return _net()

    mgr = em.DataParallelExecutorManager(sym, [mx.cpu()], it, args, params, [], sym_gen=sym_gen)
    batch = next(iter(it))
    batch.bucket_key = 7
    batch.provide_data, batch.provide_label = it.provide_data, it.provide_label
    mgr.load_data_batch(batch)
    assert made == [7] and mgr.curr_execgrp is not mgr.execgrp
    # the bucket's executor writes into the default group's parameter arrays: shared memory
    mgr.curr_execgrp.param_arrays[0][0][:] = 3.0
    assert (mgr.execgrp.param_arrays[0][0].asnumpy() == 3.0).all()
    mgr.forward(is_train=True)
    mgr.backward()
    assert mgr.curr_execgrp.grad_arrays[0][0].asnumpy().any()
    assert mgr.grad_arrays is mgr.execgrp.grad_arrays
    with pytest.raises(NotImplementedError, match="bucketing"):
        mgr.install_monitor(mx.monitor.Monitor(1))
