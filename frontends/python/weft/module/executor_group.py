"""Data parallelism: one executor per context, each running a slice of the batch
(MXNet 1.x's DataParallelExecutorGroup)."""
from collections import OrderedDict

import numpy as np

from .. import ndarray as nd
from ..ndarray.ndarray import NDArray

__all__ = ["DataParallelExecutorGroup"]


def _batch_axis(desc):
    # A DataDesc's layout names the batch axis with 'N'; no layout means axis 0, and a layout
    # without 'N' means the array is not split (every device gets it whole).
    layout = getattr(desc, "layout", None)
    if not layout:
        return 0
    return layout.find("N")


def _desc_name_shape(desc):
    return desc[0], tuple(desc[1])


def _desc_dtype(desc):
    dtype = getattr(desc, "dtype", None)
    return np.float32 if dtype is None else dtype


def split_input_slice(batch_size, work_load_list):
    """Slices of the batch axis, one per device, sized in proportion to work_load_list."""
    total_work_load = float(sum(work_load_list))
    sizes = [int(round(w * batch_size / total_work_load)) for w in work_load_list]
    sizes[-1] = batch_size - sum(sizes[:-1])
    slices, end = [], 0
    for size in sizes:
        begin, end = end, min(end + size, batch_size)
        if begin >= end:
            raise ValueError("cannot split a batch of %d samples over %d devices (work loads %s): some device "
                             "would get no sample" % (batch_size, len(work_load_list), list(work_load_list)))
        slices.append(slice(begin, end))
    return slices


def _as_ndarray(value):
    return value if isinstance(value, NDArray) else nd.array(np.asarray(value))


def _load_general(sources, targets, axes):
    """Copies each source array's slices into the per-device arrays."""
    for src, dst_list, axis in zip(sources, targets, axes):
        src = _as_ndarray(src)
        for islice, dst in dst_list:
            if axis < 0 or (islice.start == 0 and islice.stop == src.shape[axis]):
                src.copyto(dst)
            elif axis == 0:
                src[islice.start:islice.stop].copyto(dst)
            else:
                nd.slice_axis(src, axis=axis, begin=islice.start, end=islice.stop).copyto(dst)


def _merge_multi_context(outputs, axes):
    """Joins each output's per-device parts along its batch axis (on the first device)."""
    merged = []
    for parts, axis in zip(outputs, axes):
        if len(parts) == 1 or axis < 0 or parts[0] is None:
            merged.append(parts[0])
        else:
            ctx = parts[0].context
            merged.append(nd.concatenate([p.as_in_context(ctx) for p in parts], axis=axis))
    return merged


class DataParallelExecutorGroup:
    """Binds `symbol` once per context with the batch split across them. Parameters live on
    every device (param_arrays[i] is the list of device copies of param_names[i]); so do
    their gradients. With shared_group, parameters, gradients and auxiliary states of equal
    shape are the shared group's arrays (how buckets share weights)."""

    def __init__(self, symbol, contexts, workload, data_shapes, label_shapes, param_names, for_training,
                 inputs_need_grad, shared_group=None, logger=None, fixed_param_names=None, grad_req="write",
                 state_names=None, group2ctxs=None):
        self.param_names = list(param_names)
        self.group2ctxs = list(group2ctxs) if group2ctxs is not None else [None] * len(contexts)
        self.arg_names = symbol.list_arguments()
        self.aux_names = symbol.list_auxiliary_states()
        self.symbol = symbol
        self.contexts = list(contexts)
        self.workload = list(workload)
        self.for_training = for_training
        self.inputs_need_grad = inputs_need_grad
        self.logger = logger
        self.fixed_param_names = list(fixed_param_names or [])
        self.state_names = list(state_names or [])
        if len(self.workload) != len(self.contexts):
            raise ValueError("work_load_list has %d entries for %d contexts" % (len(self.workload), len(self.contexts)))

        data_names = [_desc_name_shape(d)[0] for d in data_shapes]
        self.grad_req = self._grad_reqs(grad_req, data_names)
        self.execs = []
        self._default_execs = None
        self._default_key = None
        self._monitor = None
        # Bytes of the arrays this group allocated itself (not those shared with shared_group),
        # as MXNet's _total_exec_bytes counts what a binding added.
        self._total_exec_bytes = 0
        # Per context, {name: array} of the arrays that are not parameters (inputs, labels,
        # and gradients as "grad of <name>"): a group bound with this one as shared_group
        # takes views of them where they are large enough, as MXNet's shared_buffer.
        self.shared_data_arrays = shared_group.shared_data_arrays if shared_group is not None \
            else [{} for _ in self.contexts]
        self.data_shapes = None
        self.label_shapes = None
        self.bind_exec(data_shapes, label_shapes, shared_group)

    def _grad_reqs(self, grad_req, data_names):
        if not self.for_training:
            return {name: "null" for name in self.arg_names}
        if isinstance(grad_req, str):
            reqs = {}
            for name in self.arg_names:
                if name in self.param_names:
                    reqs[name] = "null" if name in self.fixed_param_names else grad_req
                elif name in data_names:
                    reqs[name] = grad_req if self.inputs_need_grad else "null"
                else:
                    reqs[name] = "null"
            return reqs
        if isinstance(grad_req, (list, tuple)):
            if len(grad_req) != len(self.arg_names):
                raise ValueError("grad_req has %d entries for the %d arguments %s"
                                 % (len(grad_req), len(self.arg_names), self.arg_names))
            return dict(zip(self.arg_names, grad_req))
        if isinstance(grad_req, dict):
            # As in MXNet: arguments the dict leaves out get the defaults of grad_req='write',
            # and names that are not arguments (MXNet's own tests pass 'parameters') are ignored.
            reqs = self._grad_reqs("write", data_names)
            reqs.update((name, req) for name, req in grad_req.items() if name in reqs)
            return reqs
        raise TypeError("grad_req must be a str, list or dict, got %s" % type(grad_req).__name__)

    # ------------------------------------------------------------------ binding
    def decide_slices(self, data_shapes):
        axes = [_batch_axis(d) for d in data_shapes]
        batch_size = None
        for desc, axis in zip(data_shapes, axes):
            if axis < 0:
                continue
            name, shape = _desc_name_shape(desc)
            if batch_size is None:
                batch_size = shape[axis]
            elif shape[axis] != batch_size:
                raise ValueError("all inputs must have the same batch size: %s has %d along axis %d, expected %d"
                                 % (name, shape[axis], axis, batch_size))
        if batch_size is None:
            raise ValueError("no input has a batch axis (layouts %s)"
                             % [getattr(d, "layout", None) for d in data_shapes])
        self.batch_size = batch_size
        self.slices = split_input_slice(batch_size, self.workload)
        return axes

    def _sliced_shape(self, shapes, i, axes):
        sliced = []
        for desc, axis in zip(shapes, axes):
            name, shape = _desc_name_shape(desc)
            shape = list(shape)
            if axis >= 0:
                shape[axis] = self.slices[i].stop - self.slices[i].start
            sliced.append((name, tuple(shape)))
        return sliced

    def _bind_ith_exec(self, i, data_shapes, label_shapes, shared_group):
        ctx = self.contexts[i]
        shared_exec = shared_group.execs[i] if shared_group is not None else None
        shapes = dict(self._sliced_shape(data_shapes, i, self.data_layouts))
        if label_shapes is not None:
            shapes.update(self._sliced_shape(label_shapes, i, self.label_layouts))
        shapes = {k: v for k, v in shapes.items() if k in self.arg_names}
        arg_shapes, _, aux_shapes = self.symbol.infer_shape(**shapes)
        if arg_shapes is None:
            raise ValueError("the input shapes %s do not determine every shape of the graph; still unknown: %s"
                             % (shapes, self.symbol.infer_shape_partial(**shapes)))
        types = {_desc_name_shape(d)[0]: _desc_dtype(d) for d in list(data_shapes) + list(label_shapes or [])}
        types = {k: v for k, v in types.items() if k in self.arg_names}
        arg_types, _, aux_types = self.symbol.infer_type(**types)
        if arg_types is None:
            raise ValueError("the input dtypes %s do not determine every dtype of the graph" % types)

        # Variables declared with a sparse `stype` get arrays of it, and gradients the storage
        # types simple_bind gives them (the executor then runs the sparse kernels).
        stypes = self.symbol._arg_stypes(None)
        grad_stypes = self.symbol._grad_stypes(stypes)

        # A variable in a ctx_group that group2ctx maps lives (with its gradient) on that
        # group's context, as simple_bind places it in MXNet.
        group2ctx = self.group2ctxs[i] or {}
        attrs = self.symbol.attr_dict() if group2ctx else {}

        buffer = self.shared_data_arrays[i]

        def reuse(pool, name, shape, dtype, stype="default", key=None):
            arr = pool.get(name) if pool is not None else None
            if arr is not None and tuple(arr.shape) == tuple(shape) and np.dtype(arr.dtype) == np.dtype(dtype) \
                    and arr.stype == stype:
                return arr
            where = group2ctx.get(attrs.get(name, {}).get("__ctx_group__"), ctx)
            size = int(np.prod(shape, dtype=np.int64))
            if key is not None and stype == "default":
                held = buffer.get(key)
                if held is not None and held.stype == "default" and held.context == where \
                        and np.dtype(held.dtype) == np.dtype(dtype) and held.size >= size:
                    return held.reshape((-1,))[:size].reshape(shape)
            self._total_exec_bytes += size * np.dtype(dtype).itemsize
            arr = nd.zeros(shape, ctx=where, dtype=dtype, stype=stype)
            if key is not None and stype == "default":
                buffer[key] = arr
            return arr

        shared_args = shared_exec.arg_dict if shared_exec is not None else None
        shared_grads = shared_exec.grad_dict if shared_exec is not None else None
        args, grads, reqs = [], [], []
        for name, shape, dtype in zip(self.arg_names, arg_shapes, arg_types):
            is_param = name in self.param_names
            args.append(reuse(shared_args if is_param else None, name, shape, dtype, stypes[name],
                              key=None if is_param else name))
            req = self.grad_req[name]
            grads.append(None if req == "null" else reuse(shared_grads if is_param else None, name, shape, dtype,
                                                          grad_stypes[name],
                                                          key=None if is_param else "grad of " + name))
            reqs.append(req)
        shared_aux = shared_exec.aux_dict if shared_exec is not None else None
        aux = [reuse(shared_aux, name, shape, dtype)
               for name, shape, dtype in zip(self.aux_names, aux_shapes, aux_types)]
        return self.symbol.bind(ctx, args, args_grad=grads, grad_req=reqs, aux_states=aux,
                                group2ctx=self.group2ctxs[i])

    def bind_exec(self, data_shapes, label_shapes, shared_group=None, reshape=False):
        """Binds (or, with reshape, re-shapes from the first binding) one executor per context."""
        self.data_layouts = self.decide_slices(data_shapes)
        self.label_layouts = [_batch_axis(d) for d in label_shapes] if label_shapes is not None else None
        if reshape and self._shape_key(data_shapes, label_shapes) == self._default_key:
            # Back to the shapes first bound (the batch after an epoch's short last one).
            self.execs = list(self._default_execs)
        elif reshape:
            execs = []
            for i, default in enumerate(self._default_execs):
                shapes = dict(self._sliced_shape(data_shapes, i, self.data_layouts))
                if label_shapes is not None:
                    shapes.update(self._sliced_shape(label_shapes, i, self.label_layouts))
                shapes = {k: v for k, v in shapes.items() if k in self.arg_names}
                # Inputs left out of the shapes (a label inferred from the data) may follow the
                # new batch size; parameters must keep theirs, or the devices and buckets
                # would stop sharing them.
                new = default.reshape(partial_shaping=True, allow_up_sizing=True, **shapes)
                for name in self.param_names:
                    if tuple(new.arg_dict[name].shape) != tuple(default.arg_dict[name].shape):
                        raise ValueError("reshape to %s changes the shape of parameter %s from %s to %s"
                                         % (shapes, name, default.arg_dict[name].shape, new.arg_dict[name].shape))
                execs.append(new)
            self.execs = execs
        else:
            self.execs = [self._bind_ith_exec(i, data_shapes, label_shapes, shared_group)
                          for i in range(len(self.contexts))]
            self._default_execs = list(self.execs)
            self._default_key = self._shape_key(data_shapes, label_shapes)
        self.data_shapes = list(data_shapes)
        self.label_shapes = list(label_shapes) if label_shapes is not None else None
        self._collect_arrays()
        if self._monitor is not None:
            # Executors made by a reshape report to the monitor too.
            for e in self.execs:
                if e not in self._monitor.exes:
                    self._monitor.install(e)

    def install_monitor(self, mon):
        """Has every executor (and those later reshapes make) report its values to `mon`."""
        self._monitor = mon
        for e in self.execs:
            mon.install(e)

    def _collect_arrays(self):
        data_names = [_desc_name_shape(d)[0] for d in self.data_shapes]
        self.data_names = data_names
        self.data_arrays = [[(self.slices[i], e.arg_dict[name]) for i, e in enumerate(self.execs)]
                            for name in data_names]
        self.state_arrays = [[e.arg_dict[name] for e in self.execs] for name in self.state_names]
        if self.label_shapes is not None:
            present = [(_desc_name_shape(d)[0], axis) for d, axis in zip(self.label_shapes, self.label_layouts)
                       if _desc_name_shape(d)[0] in self.arg_names]
            self.label_names = [n for n, _ in present]
            self._loaded_label_layouts = [a for _, a in present]
            self.label_arrays = [[(self.slices[i], e.arg_dict[name]) for i, e in enumerate(self.execs)]
                                 for name, _ in present]
        else:
            self.label_names = []
            self._loaded_label_layouts = []
            self.label_arrays = None
        self.param_arrays = [[e.arg_arrays[self.arg_names.index(name)] for e in self.execs]
                             for name in self.param_names]
        if self.for_training:
            self.grad_arrays = [[e.grad_dict.get(name) for e in self.execs] for name in self.param_names]
        else:
            self.grad_arrays = None
        if self.inputs_need_grad:
            # An input bound with grad_req 'null' has no gradient array: None, as in MXNet.
            self.input_grad_arrays = [[e.grad_dict.get(name) for e in self.execs] for name in data_names]
        else:
            self.input_grad_arrays = None
        self.aux_arrays = [[e.aux_arrays[i] for e in self.execs] for i in range(len(self.aux_names))]
        outputs = self.symbol.list_outputs()
        self.output_names = outputs
        attrs = self.symbol.attr_dict()
        self.output_layouts = []
        for name in outputs:
            layout = attrs.get(name[:-len("_output")] if name.endswith("_output") else name, {}).get("__layout__")
            self.output_layouts.append(layout.find("N") if layout else 0)

    @staticmethod
    def _shape_key(data_shapes, label_shapes):
        return ([_desc_name_shape(d) for d in data_shapes],
                None if label_shapes is None else [_desc_name_shape(d) for d in label_shapes])

    def reshape(self, data_shapes, label_shapes):
        """Re-shapes the executors for a new batch shape; parameters stay the same arrays."""
        if self._shape_key(data_shapes, label_shapes) == self._shape_key(self.data_shapes, self.label_shapes):
            return
        if self._default_execs is None:
            raise RuntimeError("reshape before the executors were bound")
        self.bind_exec(data_shapes, label_shapes, reshape=True)

    # ------------------------------------------------------------------ parameters
    def set_params(self, arg_params, aux_params, allow_extra=False):
        for e in self.execs:
            e.copy_params_from(arg_params, aux_params, allow_extra_params=allow_extra)

    def get_params(self, arg_params, aux_params):
        """Writes the average over devices of each parameter (they are equal when every
        device takes the same step) into the given dicts' arrays."""
        for name, block in zip(self.param_names, self.param_arrays):
            self._average_into(block, arg_params[name])
        for name, block in zip(self.aux_names, self.aux_arrays):
            self._average_into(block, aux_params[name])

    @staticmethod
    def _average_into(block, target):
        if len(block) == 1:
            block[0].copyto(target)
            return
        total = block[0].as_in_context(target.context).copy()
        for w in block[1:]:
            total += w.as_in_context(target.context)
        total /= len(block)
        total.astype(target.dtype).copyto(target)

    # ------------------------------------------------------------------ running
    def forward(self, data_batch, is_train=None):
        _load_general(data_batch.data, self.data_arrays, self.data_layouts)
        if is_train is None:
            is_train = self.for_training
        labels = getattr(data_batch, "label", None)
        if self.label_arrays is not None and labels:
            label_positions = [i for i, d in enumerate(self.label_shapes) if _desc_name_shape(d)[0] in self.arg_names]
            if len(labels) != len(self.label_shapes):
                raise ValueError("the batch has %d labels; the module was bound with %d (%s)"
                                 % (len(labels), len(self.label_shapes), [d[0] for d in self.label_shapes]))
            _load_general([labels[i] for i in label_positions], self.label_arrays, self._loaded_label_layouts)
        for e in self.execs:
            e.forward(is_train=is_train)

    def backward(self, out_grads=None):
        if not self.for_training:
            raise RuntimeError("backward needs a module bound with for_training=True")
        if out_grads is not None and not isinstance(out_grads, (list, tuple)):
            out_grads = [out_grads]
        for i, e in enumerate(self.execs):
            if out_grads is None:
                e.backward()
                continue
            islice = self.slices[i]
            parts = []
            for grad, axis in zip(out_grads, self.output_layouts):
                grad = _as_ndarray(grad)
                if axis < 0:
                    part = grad
                elif axis == 0:
                    part = grad[islice.start:islice.stop]
                else:
                    part = nd.slice_axis(grad, axis=axis, begin=islice.start, end=islice.stop)
                parts.append(part.as_in_context(self.contexts[i]))
            e.backward(out_grads=parts)

    def get_outputs(self, merge_multi_context=True, begin=0, end=None):
        if end is None:
            end = len(self.output_names)
        outputs = [[e.outputs[i] for e in self.execs] for i in range(begin, end)]
        if merge_multi_context:
            return _merge_multi_context(outputs, self.output_layouts[begin:end])
        return outputs

    def get_input_grads(self, merge_multi_context=True):
        if not self.inputs_need_grad:
            raise RuntimeError("input gradients need a module bound with inputs_need_grad=True")
        if merge_multi_context:
            return _merge_multi_context(self.input_grad_arrays, self.data_layouts)
        return self.input_grad_arrays

    def get_states(self, merge_multi_context=True):
        if merge_multi_context:
            return _merge_multi_context(self.state_arrays, [0] * len(self.state_arrays))
        return self.state_arrays

    def set_states(self, states=None, value=None):
        if states is not None:
            if value is not None:
                raise ValueError("set_states takes states or value, not both")
            for src_list, dst_list in zip(states, self.state_arrays):
                for src, dst in zip(src_list, dst_list):
                    src.copyto(dst)
        elif value is not None:
            for dst_list in self.state_arrays:
                for dst in dst_list:
                    dst[:] = value
        else:
            raise ValueError("set_states needs states or value")

    def update_metric(self, eval_metric, labels, pre_sliced=False):
        """Feeds every device's outputs and its slice of the labels to the metric."""
        for i, (e, islice) in enumerate(zip(self.execs, self.slices)):
            if pre_sliced:
                labels_slice = labels[i]
            else:
                labels_slice = []
                axes = self.label_layouts if self.label_layouts is not None else [0] * len(labels)
                for label, axis in zip(labels, axes):
                    label = _as_ndarray(label)
                    if axis == 0:
                        labels_slice.append(label[islice.start:islice.stop])
                    elif axis > 0:
                        labels_slice.append(nd.slice_axis(label, axis=axis, begin=islice.start, end=islice.stop))
                    else:
                        labels_slice.append(label)
            label_names = [d[0] for d in self.label_shapes] if self.label_shapes else \
                ["label%d" % j for j in range(len(labels_slice))]
            labels_ = OrderedDict(zip(label_names, labels_slice))
            preds = OrderedDict(zip(self.output_names, e.outputs))
            if hasattr(eval_metric, "update_dict"):
                eval_metric.update_dict(labels_, preds)
            else:
                eval_metric.update(list(labels_.values()), list(preds.values()))

    @property
    def output_shapes(self):
        shapes = []
        for name, out, axis in zip(self.output_names, self.execs[0].outputs, self.output_layouts):
            shape = list(out.shape)
            if axis >= 0:
                shape[axis] = self.batch_size
            shapes.append((name, tuple(shape)))
        return shapes
