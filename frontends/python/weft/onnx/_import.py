"""ONNX model -> Symbol, arg_params, aux_params.

Initializers and Constant nodes are kept as numpy values while converters may still fold
them (a Reshape's shape, Clip's bounds, a scalar operand); a constant a Weft operator reads
as an array becomes a parameter variable of the same name. Ranks for ONNX's right-aligned
broadcasting come from ONNX's own shape inference.
"""
import numpy as np

_CONVERTERS = {}


class UnsupportedOnnx(Exception):
    """Raised for an ONNX operator or attribute Weft cannot import (the message names it)."""


def converts(*ops):
    def register(fn):
        for op in ops:
            _CONVERTERS[op] = fn
        return fn
    return register


def supported_onnx_operators():
    """ONNX operator types import_model converts."""
    return sorted(_CONVERTERS)


class _Node:
    def __init__(self, importer, proto):
        self.imp = importer
        self.proto = proto
        self.op = proto.op_type
        self.name = proto.name or (proto.output[0] if proto.output else proto.op_type)
        self.attrs = {a.name: importer.onnx.helper.get_attribute_value(a) for a in proto.attribute}
        for k, v in list(self.attrs.items()):
            if isinstance(v, bytes):
                self.attrs[k] = v.decode()
            elif isinstance(v, list) and v and isinstance(v[0], bytes):
                self.attrs[k] = [x.decode() for x in v]
        self.inputs = list(proto.input)

    def attr(self, key, default=None):
        return self.attrs.get(key, default)

    def has(self, i):
        return i < len(self.inputs) and self.inputs[i] != ""

    def const(self, i):
        """The value of input i when it is a constant, else None."""
        return self.imp.consts.get(self.inputs[i]) if self.has(i) else None

    def need_const(self, i, what):
        v = self.const(i)
        if v is None:
            self.fail("%s (input %d, '%s') must be a constant" % (what, i, self.inputs[i] if self.has(i) else ""))
        return v

    def sym(self, i):
        return self.imp.symbol(self.inputs[i])

    def rank(self, i):
        return self.imp.rank(self.inputs[i])

    def shape(self, i):
        return self.imp.shape(self.inputs[i])

    def fail(self, what):
        raise UnsupportedOnnx("import_model: ONNX node '%s' (%s): %s" % (self.name, self.op, what))


class Importer:
    def __init__(self, onnx, model):
        from .. import symbol as sym
        from .. import ndarray as nd
        self.onnx = onnx
        self.sym = sym
        self.nd = nd
        try:
            model = onnx.shape_inference.infer_shapes(model)
        except Exception:  # noqa: BLE001 - inference is only a help for ranks; conversion reports what it lacks
            pass
        self.model = model
        graph = model.graph
        self.opset = max((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), default=13)
        self.consts = {t.name: onnx.numpy_helper.to_array(t) for t in graph.initializer}
        self.shapes = {}
        for vi in list(graph.input) + list(graph.value_info) + list(graph.output):
            t = vi.type.tensor_type
            if t.HasField("shape"):
                self.shapes[vi.name] = tuple(d.dim_value if d.HasField("dim_value") else None for d in t.shape.dim)
        self.values = {}
        self.arg_params = {}
        self.aux_params = {}
        self.aux_names = set()
        # Outputs of Shape nodes -> the symbol whose shape they are, for the patterns that
        # use a shape only to size another tensor (ConstantOfShape, Expand).
        self.shape_of = {}
        self.inputs = [i.name for i in graph.input if i.name not in self.consts]
        for name in self.inputs:
            self.values[name] = sym.var(name)

    # ---------------------------------------------------------------- values
    def symbol(self, name):
        if name in self.values:
            return self.values[name]
        if name in self.consts:
            value = self.consts[name]
            array = self.nd.array(value, dtype=value.dtype if value.dtype != np.float64 else np.float32)
            # The shape on the variable lets inference size what only reads it (a broadcast bias).
            self.values[name] = self.sym.var(name, shape=array.shape, dtype=array.dtype)
            (self.aux_params if name in self.aux_names else self.arg_params)[name] = array
            return self.values[name]
        raise UnsupportedOnnx("import_model: value '%s' is read before any node makes it" % name)

    def shape(self, name):
        if name in self.consts:
            return self.consts[name].shape
        return self.shapes.get(name)

    def rank(self, name):
        s = self.shape(name)
        return None if s is None else len(s)

    # ---------------------------------------------------------------- run
    def run(self):
        for proto in self.model.graph.node:
            node = _Node(self, proto)
            convert = _CONVERTERS.get(node.op)
            if convert is None or proto.domain not in ("", "ai.onnx"):
                raise UnsupportedOnnx("import_model: no conversion for ONNX operator '%s' (node '%s'); supported: %s"
                                      % (node.op, node.name, ", ".join(supported_onnx_operators())))
            outs = convert(node)
            outs = outs if isinstance(outs, (list, tuple)) else [outs]
            for name, value in zip(proto.output, outs):
                if name == "" or value is None:
                    continue
                if isinstance(value, np.ndarray):
                    self.consts[name] = value
                else:
                    self.values[name] = value
        heads = [self.symbol(o.name) for o in self.model.graph.output]
        out = heads[0] if len(heads) == 1 else self.sym.Group(heads)
        return out, self.arg_params, self.aux_params


# --------------------------------------------------------------------------- helpers
def _sym():
    from .. import symbol
    return symbol


def _op(name):
    """The symbol function of operator `name`, internal names (`_plus_scalar`) included."""
    return _sym()._internal.__dict__[name]


def _symmetric_pads(node, pads, ndim):
    pads = list(pads or [0] * (2 * ndim))
    begin, end = pads[:ndim], pads[ndim:]
    if begin != end:
        node.fail("asymmetric pads %s are not supported" % pads)
    return tuple(begin)


def _check_auto_pad(node):
    mode = node.attr("auto_pad", "NOTSET")
    if mode not in ("NOTSET", "VALID"):
        node.fail("auto_pad=%s is not supported (export with explicit pads)" % mode)


def _align(node, i, other_rank):
    """Input i as a symbol with at least other_rank dimensions (ONNX broadcasts right-aligned)."""
    s = node.sym(i)
    r = node.rank(i)
    if r is not None and other_rank is not None and r < other_rank:
        shape = node.shape(i)
        if shape is None or any(d is None for d in shape):
            node.fail("cannot broadcast an input of unknown shape")
        s = _sym().reshape(s, shape=(1,) * (other_rank - r) + tuple(shape))
    return s


_BROADCAST = {"Add": ("broadcast_add", "_plus_scalar", "_plus_scalar"),
              "Sub": ("broadcast_sub", "_minus_scalar", "_rminus_scalar"),
              "Mul": ("broadcast_mul", "_mul_scalar", "_mul_scalar"),
              "Div": ("broadcast_div", "_div_scalar", "_rdiv_scalar"),
              "Pow": ("broadcast_power", "_power_scalar", "_rpower_scalar"),
              "Max": ("broadcast_maximum", "_maximum_scalar", "_maximum_scalar"),
              "Min": ("broadcast_minimum", "_minimum_scalar", "_minimum_scalar")}


@converts(*_BROADCAST)
def _binary(node):
    sym = _sym()
    array_op, scalar_op, rscalar_op = _BROADCAST[node.op]
    if len(node.inputs) != 2:
        if node.op in ("Max", "Min"):
            out = node.sym(0)
            for i in range(1, len(node.inputs)):
                out = _op(array_op)(out, node.sym(i))
            return out
        node.fail("expected 2 inputs, got %d" % len(node.inputs))
    a, b = node.const(0), node.const(1)
    if a is not None and b is not None:
        fn = {"Add": np.add, "Sub": np.subtract, "Mul": np.multiply, "Div": np.divide, "Pow": np.power,
              "Max": np.maximum, "Min": np.minimum}[node.op]
        return np.asarray(fn(a, b), dtype=np.result_type(a, b))
    if b is not None and b.size == 1:
        return _op(scalar_op)(node.sym(0), scalar=float(b.ravel()[0]))
    if a is not None and a.size == 1:
        return _op(rscalar_op)(node.sym(1), scalar=float(a.ravel()[0]))
    ra, rb = node.rank(0), node.rank(1)
    target = max(r for r in (ra, rb, 0) if r is not None)
    return _op(array_op)(_align(node, 0, target), _align(node, 1, target))


@converts("Sum")
def _sum(node):
    if len(node.inputs) == 1:
        return node.sym(0)
    return _sym().add_n(*[node.sym(i) for i in range(len(node.inputs))])


_UNARY = {"Relu": ("Activation", {"act_type": "relu"}), "Sigmoid": ("Activation", {"act_type": "sigmoid"}),
          "Tanh": ("Activation", {"act_type": "tanh"}), "Softplus": ("Activation", {"act_type": "softrelu"}),
          "Softsign": ("Activation", {"act_type": "softsign"}), "Exp": ("exp", {}), "Log": ("log", {}),
          "Sqrt": ("sqrt", {}), "Neg": ("negative", {}), "Abs": ("abs", {}), "Erf": ("erf", {}),
          "Floor": ("floor", {}), "Ceil": ("ceil", {}), "Reciprocal": ("reciprocal", {}), "Sin": ("sin", {}),
          "Cos": ("cos", {})}


@converts(*_UNARY)
def _unary(node):
    op, kwargs = _UNARY[node.op]
    return _op(op)(node.sym(0), **kwargs)


@converts("Identity", "Dropout")
def _identity(node):
    c = node.const(0)
    if c is not None:
        return c
    return node.sym(0)


@converts("LeakyRelu")
def _leaky(node):
    return _sym().LeakyReLU(node.sym(0), act_type="leaky", slope=float(node.attr("alpha", 0.01)))


@converts("Elu")
def _elu(node):
    return _sym().LeakyReLU(node.sym(0), act_type="elu", slope=float(node.attr("alpha", 1.0)))


@converts("Selu")
def _selu(node):
    if abs(node.attr("alpha", 1.67326319217681884765625) - 1.6732632423543772) > 1e-6 or \
            abs(node.attr("gamma", 1.05070102214813232421875) - 1.0507009873554805) > 1e-6:
        node.fail("only SELU's standard alpha and gamma are supported")
    return _sym().LeakyReLU(node.sym(0), act_type="selu")


@converts("PRelu")
def _prelu(node):
    slope = node.need_const(1, "the slope")
    channels = node.shape(0)[1] if node.shape(0) and len(node.shape(0)) > 1 else slope.size
    flat = slope.reshape(-1)
    if flat.size == 1:
        flat = np.repeat(flat, channels)
    elif flat.size != channels:
        node.fail("a slope of shape %s is not per channel" % (slope.shape,))
    name = node.inputs[1] + "_prelu"
    node.imp.consts[name] = flat.astype(np.float32)
    return _sym().LeakyReLU(node.sym(0), node.imp.symbol(name), act_type="prelu")


@converts("Conv")
def _conv(node):
    _check_auto_pad(node)
    w = node.need_const(1, "the weight")
    kernel = tuple(node.attr("kernel_shape", w.shape[2:]))
    nd_ = len(kernel)
    args = [node.sym(0), node.sym(1)] + ([node.sym(2)] if node.has(2) else [])
    return _sym().Convolution(*args, kernel=kernel, num_filter=int(w.shape[0]),
                              stride=tuple(node.attr("strides", (1,) * nd_)),
                              dilate=tuple(node.attr("dilations", (1,) * nd_)),
                              pad=_symmetric_pads(node, node.attr("pads"), nd_), num_group=int(node.attr("group", 1)),
                              no_bias=not node.has(2), name=node.name)


@converts("ConvTranspose")
def _conv_transpose(node):
    _check_auto_pad(node)
    w = node.need_const(1, "the weight")
    kernel = tuple(node.attr("kernel_shape", w.shape[2:]))
    nd_ = len(kernel)
    group = int(node.attr("group", 1))
    args = [node.sym(0), node.sym(1)] + ([node.sym(2)] if node.has(2) else [])
    kwargs = {}
    if node.attr("output_shape"):
        kwargs["target_shape"] = tuple(node.attr("output_shape"))[-nd_:]
    return _sym().Deconvolution(*args, kernel=kernel, num_filter=int(w.shape[1]) * group,
                                stride=tuple(node.attr("strides", (1,) * nd_)),
                                dilate=tuple(node.attr("dilations", (1,) * nd_)),
                                pad=_symmetric_pads(node, node.attr("pads"), nd_),
                                adj=tuple(node.attr("output_padding", (0,) * nd_)), num_group=group,
                                no_bias=not node.has(2), name=node.name, **kwargs)


def _fully_connected(node, x, weight, bias, flatten):
    imp = node.imp
    wname = node.name + "_weight"
    imp.consts[wname] = np.ascontiguousarray(weight, dtype=np.float32)
    args = [x, imp.symbol(wname)]
    if bias is not None:
        bname = node.name + "_bias"
        imp.consts[bname] = np.ascontiguousarray(bias, dtype=np.float32)
        args.append(imp.symbol(bname))
    return _sym().FullyConnected(*args, num_hidden=int(weight.shape[0]), no_bias=bias is None, flatten=flatten,
                                 name=node.name)


@converts("Gemm")
def _gemm(node):
    sym = _sym()
    alpha, beta = float(node.attr("alpha", 1.0)), float(node.attr("beta", 1.0))
    ta, tb = int(node.attr("transA", 0)), int(node.attr("transB", 0))
    b = node.const(1)
    c = node.const(2) if node.has(2) else None
    if not ta and b is not None and (not node.has(2) or (c is not None and c.size in (1, b.shape[0 if tb else 1]))):
        weight = (b if tb else b.T) * alpha
        bias = None
        if c is not None:
            bias = np.broadcast_to(c.reshape(-1) * beta, (weight.shape[0],))
        return _fully_connected(node, node.sym(0), weight, bias, flatten=False)
    y = sym.dot(node.sym(0), node.sym(1), transpose_a=bool(ta), transpose_b=bool(tb))
    if alpha != 1.0:
        y = y * alpha
    if node.has(2):
        cs = node.sym(2) if beta == 1.0 else node.sym(2) * beta
        y = sym.broadcast_add(y, _align(node, 2, 2) if beta == 1.0 else cs)
    return y


@converts("MatMul")
def _matmul(node):
    sym = _sym()
    b = node.const(1)
    if b is not None and b.ndim == 2:
        return _fully_connected(node, node.sym(0), b.T, None, flatten=False)
    ra, rb = node.rank(0), node.rank(1)
    if ra == 2 and rb == 2:
        return sym.dot(node.sym(0), node.sym(1))
    if ra == 3 and rb == 3:
        return sym.batch_dot(node.sym(0), node.sym(1))
    node.fail("MatMul of ranks %s and %s is not supported" % (ra, rb))


@converts("BatchNormalization")
def _batchnorm(node):
    imp = node.imp
    for i in (3, 4):
        imp.aux_names.add(node.inputs[i])
    return _sym().BatchNorm(*[node.sym(i) for i in range(5)], eps=float(node.attr("epsilon", 1e-5)),
                            momentum=float(node.attr("momentum", 0.9)), fix_gamma=False, use_global_stats=True,
                            name=node.name)


def _pool(node, pool_type):
    _check_auto_pad(node)
    kernel = tuple(node.attr("kernel_shape"))
    nd_ = len(kernel)
    if any(d != 1 for d in node.attr("dilations", ())):
        node.fail("dilated pooling is not supported")
    kwargs = dict(kernel=kernel, stride=tuple(node.attr("strides", (1,) * nd_)),
                  pad=_symmetric_pads(node, node.attr("pads"), nd_), pool_type=pool_type,
                  pooling_convention="full" if node.attr("ceil_mode", 0) else "valid")
    if pool_type == "avg":
        kwargs["count_include_pad"] = bool(node.attr("count_include_pad", 0))
    if pool_type == "lp":
        kwargs["p_value"] = int(node.attr("p", 2))
    return _sym().Pooling(node.sym(0), name=node.name, **kwargs)


@converts("MaxPool")
def _maxpool(node):
    if len(node.proto.output) > 1 and node.proto.output[1]:
        node.fail("the Indices output is not supported")
    return _pool(node, "max")


@converts("AveragePool")
def _avgpool(node):
    return _pool(node, "avg")


@converts("LpPool")
def _lppool(node):
    return _pool(node, "lp")


@converts("GlobalAveragePool", "GlobalMaxPool", "GlobalLpPool")
def _global_pool(node):
    pool_type = {"GlobalAveragePool": "avg", "GlobalMaxPool": "max", "GlobalLpPool": "lp"}[node.op]
    rank = node.rank(0) or 4
    kwargs = {"p_value": int(node.attr("p", 2))} if pool_type == "lp" else {}
    return _sym().Pooling(node.sym(0), kernel=(1,) * (rank - 2), global_pool=True, pool_type=pool_type,
                          name=node.name, **kwargs)


@converts("Flatten")
def _flatten(node):
    axis = int(node.attr("axis", 1))
    rank = node.rank(0)
    if axis < 0 and rank is not None:
        axis += rank
    if axis == 1:
        return _sym().Flatten(node.sym(0))
    if axis == 0:
        return _sym().reshape(node.sym(0), shape=(1, -1))
    shape = node.shape(0)
    if shape is None or any(d is None for d in shape[:axis]):
        node.fail("Flatten at axis %d needs the input's leading dimensions" % axis)
    return _sym().reshape(node.sym(0), shape=(int(np.prod(shape[:axis])), -1))


@converts("Reshape")
def _reshape(node):
    shape = node.need_const(1, "the shape")
    if node.attr("allowzero", 0) and 0 in shape:
        node.fail("allowzero=1 with a 0 in the shape is not supported")
    c = node.const(0)
    if c is not None:
        return c.reshape([c.shape[i] if d == 0 else d for i, d in enumerate(shape)])
    return _sym().reshape(node.sym(0), shape=tuple(int(d) for d in shape))


@converts("Concat")
def _concat(node):
    values = [node.const(i) for i in range(len(node.inputs))]
    if all(v is not None for v in values):
        return np.concatenate(values, axis=int(node.attr("axis")))
    return _sym().Concat(*[node.sym(i) for i in range(len(node.inputs))], dim=int(node.attr("axis")),
                         name=node.name)


def _softmax_like(node, op):
    rank = node.rank(0)
    default = -1 if node.imp.opset >= 13 else 1
    axis = int(node.attr("axis", default))
    if rank is not None and axis < 0:
        axis += rank
    fn = _op(op)
    if node.imp.opset >= 13 or (rank is not None and axis == rank - 1):
        return fn(node.sym(0), axis=axis)
    # Before opset 13 the input is flattened into 2-D at axis, softmax taken over the rows.
    shape = node.shape(0)
    if shape is None or any(d is None for d in shape):
        node.fail("softmax before opset 13 at axis %d needs the input's shape" % axis)
    flat = _sym().reshape(node.sym(0), shape=(int(np.prod(shape[:axis])), -1))
    return _sym().reshape(fn(flat, axis=-1), shape=tuple(shape))


@converts("Softmax")
def _softmax(node):
    return _softmax_like(node, "softmax")


@converts("LogSoftmax")
def _log_softmax(node):
    return _softmax_like(node, "log_softmax")


@converts("Clip")
def _clip(node):
    big = float(np.finfo(np.float32).max)
    if node.imp.opset >= 11:
        lo = node.const(1) if node.has(1) else None
        hi = node.const(2) if node.has(2) else None
        if (node.has(1) and lo is None) or (node.has(2) and hi is None):
            node.fail("the bounds must be constants")
        lo = -big if lo is None else float(lo)
        hi = big if hi is None else float(hi)
    else:
        lo, hi = float(node.attr("min", -big)), float(node.attr("max", big))
    return _sym().clip(node.sym(0), a_min=lo, a_max=hi)


@converts("Transpose")
def _transpose(node):
    perm = node.attr("perm")
    c = node.const(0)
    if c is not None:
        return np.transpose(c, perm)
    return _sym().transpose(node.sym(0), axes=tuple(perm) if perm else ())


@converts("Constant")
def _constant(node):
    onnx = node.imp.onnx
    if "value" in node.attrs:
        return onnx.numpy_helper.to_array(node.attrs["value"])
    for key, dtype in (("value_float", np.float32), ("value_floats", np.float32), ("value_int", np.int64),
                       ("value_ints", np.int64)):
        if key in node.attrs:
            return np.asarray(node.attrs[key], dtype=dtype)
    node.fail("only tensor, float and int constants are supported")


def _axes(node, attr_name="axes", input_index=1):
    if node.has(input_index):
        return [int(a) for a in node.need_const(input_index, "the axes")]
    return [int(a) for a in node.attr(attr_name, [])]


@converts("Squeeze")
def _squeeze(node):
    axes = _axes(node)
    c = node.const(0)
    if c is not None:
        return np.squeeze(c, axis=tuple(axes) if axes else None)
    return _sym().squeeze(node.sym(0), axis=tuple(axes) if axes else None)


@converts("Unsqueeze")
def _unsqueeze(node):
    axes = _axes(node)
    c = node.const(0)
    rank = (c.ndim if c is not None else node.rank(0))
    if rank is None and any(a < 0 for a in axes):
        node.fail("negative axes need the input's rank")
    out_rank = (rank or 0) + len(axes)
    axes = sorted(a % out_rank for a in axes)
    if c is not None:
        for a in axes:
            c = np.expand_dims(c, a)
        return c
    s = node.sym(0)
    for a in axes:
        s = _sym().expand_dims(s, axis=a)
    return s


@converts("Gather")
def _gather(node):
    axis = int(node.attr("axis", 0))
    data, idx = node.const(0), node.const(1)
    if data is not None and idx is not None:
        return np.take(data, idx, axis=axis)
    if data is not None and data.ndim == 2 and axis == 0:
        return _sym().Embedding(node.sym(1), node.sym(0),
                                input_dim=int(data.shape[0]), output_dim=int(data.shape[1]), name=node.name)
    if idx is not None:
        name = node.name + "_indices"
        node.imp.consts[name] = idx.astype(np.float32)
        return _sym().take(node.sym(0), node.imp.symbol(name), axis=axis, mode="wrap")
    return _sym().take(node.sym(0), node.sym(1), axis=axis, mode="wrap")


def _reduce(node, op):
    axes = _axes(node) if (op == "sum" and node.imp.opset >= 13) else [int(a) for a in node.attr("axes", [])]
    keep = bool(node.attr("keepdims", 1))
    kwargs = {"keepdims": keep}
    if axes:
        kwargs["axis"] = tuple(axes)
    return _op(op)(node.sym(0), **kwargs)


@converts("ReduceMean")
def _reduce_mean(node):
    return _reduce(node, "mean")


@converts("ReduceSum")
def _reduce_sum(node):
    return _reduce(node, "sum")


@converts("ReduceMax")
def _reduce_max(node):
    return _reduce(node, "max")


@converts("ReduceMin")
def _reduce_min(node):
    return _reduce(node, "min")


@converts("ReduceProd")
def _reduce_prod(node):
    return _reduce(node, "prod")


@converts("Pad")
def _pad(node):
    pads = [int(p) for p in (node.need_const(1, "the pads") if node.imp.opset >= 11 else node.attr("pads"))]
    value = 0.0
    if node.imp.opset >= 11 and node.has(2):
        value = float(node.need_const(2, "the constant value"))
    elif node.imp.opset < 11:
        value = float(node.attr("value", 0.0))
    rank = len(pads) // 2
    width = []
    for d in range(rank):
        width += [pads[d], pads[d + rank]]
    mode = node.attr("mode", "constant")
    return _sym().Pad(node.sym(0), mode=mode, pad_width=tuple(width), constant_value=value)


@converts("LRN")
def _lrn(node):
    return _sym().LRN(node.sym(0), nsize=int(node.attr("size")), alpha=float(node.attr("alpha", 1e-4)),
                      beta=float(node.attr("beta", 0.75)), knorm=float(node.attr("bias", 1.0)))


@converts("Cast")
def _cast(node):
    onnx = node.imp.onnx
    to = node.attr("to")
    dtype = onnx.helper.tensor_dtype_to_np_dtype(to) if hasattr(onnx.helper, "tensor_dtype_to_np_dtype") \
        else onnx.mapping.TENSOR_TYPE_TO_NP_TYPE[to]
    c = node.const(0)
    if c is not None:
        return c.astype(dtype)
    return _sym().Cast(node.sym(0), dtype=np.dtype(dtype).name)


@converts("LSTM", "GRU", "RNN")
def _rnn(node):
    """ONNX recurrent nodes (layout 0: [seq, batch, feature]) as Weft's fused RNN operator."""
    sym = _sym()
    imp = node.imp
    if int(node.attr("layout", 0)) != 0:
        node.fail("only layout=0 (sequence first) is supported")
    if node.has(4):
        node.fail("sequence_lens is not supported")
    if node.attr("clip") is not None:
        node.fail("cell clipping is not supported")
    direction = node.attr("direction", "forward")
    if direction not in ("forward", "bidirectional"):
        node.fail("direction=%s is not supported" % direction)
    dirs = 2 if direction == "bidirectional" else 1
    hidden = int(node.attr("hidden_size"))
    if node.op == "LSTM":
        mode, gates, order = "lstm", 4, [0, 2, 3, 1]
        if node.has(7):
            node.fail("peephole weights are not supported")
    elif node.op == "GRU":
        mode, gates, order = "gru", 3, [1, 0, 2]
        if int(node.attr("linear_before_reset", 0)) != 1:
            node.fail("only linear_before_reset=1 (the cuDNN form) is supported")
    else:
        acts = node.attr("activations", ["Tanh"] * dirs)
        if len(set(acts)) != 1 or acts[0] not in ("Tanh", "Relu"):
            node.fail("activations %s are not supported" % (acts,))
        mode, gates, order = ("rnn_tanh" if acts[0] == "Tanh" else "rnn_relu"), 1, [0]
    if node.op in ("LSTM", "GRU") and node.attr("activations") not in (None, [], ["Sigmoid", "Tanh", "Tanh"] * dirs,
                                                                       ["Sigmoid", "Tanh"] * dirs):
        node.fail("activations %s are not supported" % (node.attr("activations"),))
    W = node.need_const(1, "W")
    R = node.need_const(2, "R")
    B = node.const(3) if node.has(3) else np.zeros((dirs, 2 * gates * hidden), np.float32)
    weights, biases = [], []
    for d in range(dirs):
        w = W[d].reshape(gates, hidden, -1)[order]
        r = R[d].reshape(gates, hidden, hidden)[order]
        weights += [w.ravel(), r.ravel()]
        bw = B[d][:gates * hidden].reshape(gates, hidden)[order]
        br = B[d][gates * hidden:].reshape(gates, hidden)[order]
        biases += [bw.ravel(), br.ravel()]
    pname = node.name + "_parameters"
    imp.consts[pname] = np.concatenate(weights + biases).astype(np.float32)
    x_shape = node.shape(0)

    def state(i):
        if node.has(i):
            return node.sym(i)
        if x_shape is None or x_shape[1] is None:
            node.fail("a missing initial state needs the batch size from the input's shape")
        return sym.zeros((dirs, x_shape[1], hidden))

    args = [node.sym(0), imp.symbol(pname), state(5)]
    if mode == "lstm":
        args.append(state(6))
    out = sym.RNN(*args, state_size=hidden, num_layers=1, bidirectional=dirs == 2, mode=mode, state_outputs=True,
                  name=node.name)
    y = sym.transpose(sym.reshape(out[0], shape=(0, 0, dirs, hidden)), axes=(0, 2, 1, 3))
    results = [y, out[1]]
    if mode == "lstm":
        results.append(out[2])
    return results


@converts("Shape")
def _shape(node):
    c = node.const(0)
    if c is not None:
        return np.asarray(c.shape, dtype=np.int64)
    node.imp.shape_of[node.proto.output[0]] = node.sym(0)
    return _op("shape_array")(node.sym(0))


@converts("ConstantOfShape")
def _constant_of_shape(node):
    value = node.attr("value")
    v = node.imp.onnx.numpy_helper.to_array(value) if value is not None else np.zeros(1, np.float32)
    shape = node.const(0)
    if shape is not None:
        return np.full([int(d) for d in shape], v.ravel()[0], dtype=v.dtype)
    like = node.imp.shape_of.get(node.inputs[0])
    if like is None:
        node.fail("the shape must be a constant or the output of a Shape node")
    scalar = float(v.ravel()[0])
    zeros = _op("zeros_like")(like)
    return zeros if scalar == 0.0 else _op("_plus_scalar")(zeros, scalar=scalar)


@converts("Expand")
def _expand(node):
    like = node.imp.shape_of.get(node.inputs[1])
    if like is not None:
        return _op("broadcast_like")(node.sym(0), like)
    target = [int(d) for d in node.need_const(1, "the shape")]
    c = node.const(0)
    if c is not None:
        return c * np.ones(target, dtype=c.dtype)
    x = _align(node, 0, len(target))
    rank = max(len(target), node.rank(0) or 0)
    target = [1] * (rank - len(target)) + target
    # broadcast_to keeps an input dimension where the target says 0; ONNX's 1 means the same.
    return _op("broadcast_to")(x, shape=tuple(0 if d == 1 else d for d in target))


@converts("Slice")
def _slice(node):
    if node.imp.opset >= 10:
        starts = [int(v) for v in node.need_const(1, "the starts")]
        ends = [int(v) for v in node.need_const(2, "the ends")]
        axes = [int(v) for v in node.const(3)] if node.has(3) else list(range(len(starts)))
        steps = [int(v) for v in node.const(4)] if node.has(4) else [1] * len(starts)
        if (node.has(3) and node.const(3) is None) or (node.has(4) and node.const(4) is None):
            node.fail("the axes and steps must be constants")
    else:
        starts, ends = list(node.attr("starts")), list(node.attr("ends"))
        axes = list(node.attr("axes", range(len(starts))))
        steps = [1] * len(starts)
    c = node.const(0)
    rank = c.ndim if c is not None else node.rank(0)
    if rank is None:
        if any(a < 0 for a in axes):
            node.fail("negative axes need the input's rank")
        rank = max(axes) + 1
    axes = [a % rank for a in axes]
    big = 2 ** 62
    begin, end, step = [None] * (max(axes) + 1), [None] * (max(axes) + 1), [None] * (max(axes) + 1)
    for a, b, e, s in zip(axes, starts, ends, steps):
        begin[a] = None if (s > 0 and b == 0) or abs(b) >= big else b
        end[a] = None if abs(e) >= big else e
        step[a] = s
    if c is not None:
        return c[tuple(slice(b, e, s) for b, e, s in zip(begin, end, step))]
    return _op("slice")(node.sym(0), begin=tuple(begin), end=tuple(end), step=tuple(step))
