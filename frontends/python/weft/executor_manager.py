"""weft.executor_manager (MXNet's mxnet.executor_manager): the data-parallel executors of
MXNet's first training loop (before Module), kept for code that drives them directly.

A DataParallelExecutorGroup binds one executor per context on that context's slice of the
batch (inputs from the iterator's provide_data/provide_label, gradients for the parameters);
a DataParallelExecutorManager holds one group, or one per bucket key when given a `sym_gen`,
all groups sharing the parameters and, where sizes allow, the input arrays.
"""
import logging

import numpy as np

from .io import DataDesc
from .ndarray import NDArray, zeros

__all__ = ["DataParallelExecutorGroup", "DataParallelExecutorManager"]


def _split_input_slice(batch_size, work_load_list):
    """Slices of [0, batch_size), one per device, sized in proportion to work_load_list
    (rounded; the last takes the rest). ValueError when some slice would be empty."""
    total = sum(work_load_list)
    counts = [round(w * batch_size / total) for w in work_load_list]
    if sum(counts) < batch_size:
        counts[-1] += batch_size - sum(counts)
    slices, end = [], 0
    for count in counts:
        begin = min(end, batch_size)
        end = min(begin + count, batch_size)
        if begin >= end:
            raise ValueError("Too many slices: splitting a batch of %d by %s leaves some device no sample"
                             % (batch_size, list(work_load_list)))
        slices.append(slice(int(begin), int(end)))
    return slices


def _check_arguments(symbol):
    """ValueError naming a duplicated argument or auxiliary state name of `symbol`."""
    args = symbol.list_arguments()
    for kind, names in (("argument", args), ("auxiliary param", symbol.list_auxiliary_states())):
        seen = set()
        for name in names:
            if name in seen:
                raise ValueError('Find duplicated %s name "%s", please make the weight name non-duplicated (using '
                                 'name arguments), arguments are %s' % (kind, name, args))
            seen.add(name)


def _load_general(data, targets):
    """Copies each source array into its target: a whole NDArray, or (slice, array) pairs
    that each receive their slice of the batch."""
    for src, dst in zip(data, targets):
        if isinstance(dst, NDArray):
            src.copyto(dst)
        else:
            for part, arr in dst:
                src[part].copyto(arr)


def _load_data(batch, targets):
    _load_general(batch.data, targets)


def _load_label(batch, targets):
    _load_general(batch.label, targets)


def _bind_exec(sym, ctx, input_shapes, param_names, need_grad=False, base_exec=None, shared_data_arrays=None,
               input_types=None, logger=logging):
    """An executor of `sym` on `ctx` for inputs of `input_shapes`: parameters (and their
    gradients) taken from `base_exec` when given, inputs from `shared_data_arrays` when one
    of the same size is there. need_grad: False, True (every non-input) or a set of names."""
    arg_shapes, _, aux_shapes = sym.infer_shape(**input_shapes)
    if arg_shapes is None:
        raise ValueError("_bind_exec: the input shapes %s do not determine every argument's shape" % input_shapes)
    if input_types is None:
        input_types = {k: np.float32 for k in input_shapes}
    arg_types, _, aux_types = sym.infer_type(**input_types)
    arg_names = sym.list_arguments()
    if need_grad is False:
        need_grad = set()
    elif need_grad is True:
        need_grad = set(arg_names) - set(input_shapes)
    elif not isinstance(need_grad, set):
        raise TypeError("need_grad must be a bool or a set of names, got %s" % type(need_grad).__name__)
    grad_req = {name: ("write" if name in need_grad else "null") for name in arg_names}
    grads = {} if need_grad else None
    args = []
    for name, shape, dtype in zip(arg_names, arg_shapes, arg_types):
        if name not in param_names:
            arr = None if shared_data_arrays is None else shared_data_arrays.get(name)
            if arr is not None and int(np.prod(arr.shape)) == int(np.prod(shape)):
                arr = arr.reshape(shape)
            else:
                if arr is not None:
                    logger.warning("bucketing: input %s of shape %s does not fit the shared array of shape %s; "
                                   "allocating another", name, shape, arr.shape)
                arr = zeros(shape, ctx, dtype=dtype)
                if shared_data_arrays is not None:
                    shared_data_arrays[name] = arr
        elif base_exec is None:
            arr = zeros(shape, ctx, dtype=dtype)
            if name in need_grad:
                grads[name] = zeros(shape, ctx, dtype=dtype)
        else:
            arr = base_exec.arg_dict[name]
            if tuple(arr.shape) != tuple(shape):
                raise ValueError("_bind_exec: parameter %s has shape %s in the shared executor, %s here"
                                 % (name, arr.shape, shape))
            if name in need_grad:
                grads[name] = base_exec.grad_dict[name]
        args.append(arr)
    if base_exec is None:
        aux = [zeros(s, ctx, dtype=t) for s, t in zip(aux_shapes, aux_types)]
    else:
        aux = list(base_exec.aux_arrays)
    # The parameters, gradients and states are already base_exec's arrays; MXNet's
    # shared_exec adds only a memory-pool hint, which Weft's bind does not take.
    return sym.bind(ctx=ctx, args=args, args_grad=grads, aux_states=aux, grad_req=grad_req)


class DataParallelExecutorGroup:
    """One executor per context over `slices` of the batch; `data_arrays`/`label_arrays`
    hold (slice, array) pairs per input, `param_arrays`/`grad_arrays`/`aux_arrays` one list
    per parameter (or state) with its array on each device."""

    def __init__(self, sym, arg_names, param_names, ctx, slices, train_data, shared_group=None):
        _check_arguments(sym)
        self.shared_data_arrays = [{} for _ in ctx] if shared_group is None else shared_group.shared_data_arrays
        self.data_names = [x[0] for x in train_data.provide_data]
        self.label_names = [x[0] for x in train_data.provide_label]
        self.aux_names = sym.list_auxiliary_states()
        self.param_idx = [i for i, name in enumerate(arg_names) if name in param_names]
        self.param_names = [arg_names[i] for i in self.param_idx]
        self.train_execs = []
        for i, ctxi in enumerate(ctx):
            shapes, types = {}, {}
            for desc in list(train_data.provide_data) + list(train_data.provide_label):
                shapes[desc[0]] = (slices[i].stop - slices[i].start,) + tuple(desc[1][1:])
                types[desc[0]] = desc.dtype if isinstance(desc, DataDesc) else np.float32
            shared_exec = None if shared_group is None else shared_group.train_execs[i]
            self.train_execs.append(_bind_exec(sym, ctxi, shapes, self.param_names, need_grad=True,
                                               base_exec=shared_exec, shared_data_arrays=self.shared_data_arrays[i],
                                               input_types=types))
        self.data_arrays = [[(slices[i], e.arg_dict[name]) for i, e in enumerate(self.train_execs)]
                            for name in self.data_names]
        self.label_arrays = [[(slices[i], e.arg_dict[name]) for i, e in enumerate(self.train_execs)]
                             for name in self.label_names]
        self.param_arrays = [[e.arg_arrays[i] for e in self.train_execs] for i in self.param_idx]
        self.grad_arrays = [[e.grad_arrays[i] for e in self.train_execs] for i in self.param_idx]
        self.aux_arrays = [[e.aux_arrays[i] for e in self.train_execs] for i in range(len(self.aux_names))]
        self.slices = slices

    def load_data_batch(self, data_batch):
        """Copies each device's slice of the batch's data and labels in."""
        _load_data(data_batch, self.data_arrays)
        _load_label(data_batch, self.label_arrays)

    def forward(self, is_train=False):
        for texec in self.train_execs:
            texec.forward(is_train=is_train)

    def backward(self):
        for texec in self.train_execs:
            texec.backward()

    def update_metric(self, metric, labels, pre_sliced=False):
        """Updates `metric` with each device's outputs against its slice of `labels` (or
        labels[i] for device i when pre_sliced)."""
        for i, (texec, part) in enumerate(zip(self.train_execs, self.slices)):
            labels_slice = labels[i] if pre_sliced else [label[part] for label in labels]
            metric.update(labels_slice, texec.outputs)


class DataParallelExecutorManager:
    """The executor groups of a training run on the contexts `ctx`, with the batch split by
    work_load_list; with sym_gen, one group per bucket key of the batches loaded."""

    def __init__(self, symbol, ctx, train_data, arg_names, param_names, aux_names, work_load_list=None, logger=None,
                 sym_gen=None):
        logger = logger or logging
        logger.info("Start training with %s", str(ctx))
        if work_load_list is None:
            work_load_list = [1] * len(ctx)
        if not isinstance(work_load_list, list) or len(work_load_list) != len(ctx):
            raise ValueError("Invalid settings for work load: expected a list of %d numbers, got %r"
                             % (len(ctx), work_load_list))
        self.slices = _split_input_slice(train_data.batch_size, work_load_list)
        self.arg_names = arg_names
        self.param_names = param_names
        self.aux_names = aux_names
        self.ctx = ctx
        self.execgrp = DataParallelExecutorGroup(symbol, arg_names, param_names, ctx, self.slices, train_data)
        self.symbol = symbol
        self.sym_gen = sym_gen
        self.curr_execgrp = None  # the group of the batch loaded last
        if sym_gen is not None:
            self.execgrp_bucket = {train_data.default_bucket_key: self.execgrp}

    def install_monitor(self, monitor):
        if self.sym_gen is not None:
            raise NotImplementedError("Monitoring is not implemented for bucketing")
        for texec in self.execgrp.train_execs:
            monitor.install(texec)

    def set_params(self, arg_params, aux_params):
        """Copies the dicts arg_params/aux_params (by name) into every device's arrays."""
        for texec in self.execgrp.train_execs:
            texec.copy_params_from(arg_params, aux_params)

    def copy_to(self, arg_params, aux_params):
        """Writes the devices' average of each parameter and state into the dicts' arrays."""
        for name, block in zip(self.param_names, self.param_arrays):
            (sum(w.copyto(arg_params[name].context) for w in block) / len(block)).copyto(arg_params[name])
        for name, block in zip(self.aux_names, self.aux_arrays):
            (sum(w.copyto(aux_params[name].context) for w in block) / len(block)).copyto(aux_params[name])

    @property
    def param_arrays(self):
        # every group shares the first group's parameters
        return self.execgrp.param_arrays

    @property
    def grad_arrays(self):
        return self.execgrp.grad_arrays

    @property
    def aux_arrays(self):
        return self.execgrp.aux_arrays

    def load_data_batch(self, data_batch):
        """Picks (or binds, for a new bucket key) the batch's group and loads the batch."""
        if self.sym_gen is not None:
            key = data_batch.bucket_key
            if key not in self.execgrp_bucket:
                self.execgrp_bucket[key] = DataParallelExecutorGroup(self.sym_gen(key), self.arg_names,
                                                                     self.param_names, self.ctx, self.slices,
                                                                     data_batch, shared_group=self.execgrp)
            self.curr_execgrp = self.execgrp_bucket[key]
        else:
            self.curr_execgrp = self.execgrp
        self.curr_execgrp.load_data_batch(data_batch)

    def forward(self, is_train=False):
        self.curr_execgrp.forward(is_train=is_train)

    def backward(self):
        self.curr_execgrp.backward()

    def update_metric(self, metric, labels, pre_sliced=False):
        self.curr_execgrp.update_metric(metric, labels, pre_sliced)
