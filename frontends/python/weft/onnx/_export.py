"""Symbol + parameters -> ONNX model (opset 13).

The graph is walked in the symbol JSON's order; each operator has a converter that emits
ONNX nodes for it. Shapes come from Weft's own shape inference over the graph's internals.
Nodes whose inputs are all parameters (a packed RNN weight vector, a reshaped bias) are
computed once here with Weft and become initializers, as ONNX runtimes would fold them.
"""
import json

import numpy as np

from ._attrs import Attrs

OPSET = 13

_CONVERTERS = {}


class UnsupportedOperator(Exception):
    """Raised for an operator with no ONNX conversion (the message names it)."""


def converts(*ops):
    def register(fn):
        for op in ops:
            _CONVERTERS[op] = fn
        return fn
    return register


def supported_operators():
    """Names of the Weft operators export_model converts."""
    return sorted(_CONVERTERS)


class _Graph:
    """The ONNX graph under construction."""

    def __init__(self, onnx):
        self.onnx = onnx
        self.nodes = []
        self.initializers = {}
        self._count = 0

    def fresh(self, hint):
        self._count += 1
        return "%s__%d" % (hint, self._count)

    def const(self, value, hint, dtype=np.float32):
        name = self.fresh(hint)
        self.initializers[name] = np.asarray(value, dtype=dtype)
        return name

    def ints(self, values, hint):
        return self.const(np.asarray(values, dtype=np.int64), hint, np.int64)

    def add(self, op_type, inputs, hint, num_outputs=1, outputs=None, **attrs):
        outputs = outputs or [self.fresh(hint) for _ in range(num_outputs)]
        attrs = {k: v for k, v in attrs.items() if v is not None}
        self.nodes.append(self.onnx.helper.make_node(op_type, list(inputs), list(outputs), name=self.fresh(hint + "_" + op_type),
                                                     **attrs))
        return outputs[0] if len(outputs) == 1 else outputs


class _Node:
    """What a converter sees of one Weft node."""

    def __init__(self, exporter, nid, node):
        self.exporter = exporter
        self.graph = exporter.graph
        self.nid = nid
        self.attrs = Attrs(node)
        self.name = node["name"]
        self.op = node["op"]
        self.entries = [tuple(e[:2]) for e in node["inputs"]]

    @property
    def inputs(self):
        return [self.exporter.name_of(e) for e in self.entries]

    def input_shape(self, i):
        return self.exporter.shapes[self.entries[i]]

    def output_shape(self, i=0):
        return self.exporter.shapes[(self.nid, i)]

    def param(self, i):
        """The value of input i when it is a parameter (or folded constant), else None."""
        return self.exporter.constants.get(self.entries[i])

    def fail(self, what):
        raise UnsupportedOperator("export_model: operator '%s' (node '%s'): %s" % (self.op, self.name, what))


class Exporter:
    def __init__(self, onnx, sym, params, in_shapes, in_types):
        from .. import symbol as _sym
        self.onnx = onnx
        self.graph = _Graph(onnx)
        self.sym = sym
        internals = sym.get_internals()
        self.doc = json.loads(internals.tojson(remove_amp_cast=False))
        heads = [tuple(h[:2]) for h in self.doc["heads"]]
        self.params = {k: (v.asnumpy() if hasattr(v, "asnumpy") else np.asarray(v)) for k, v in params.items()}
        arg_names = sym.list_arguments() + sym.list_auxiliary_states()
        self.input_names = [n for n in sym.list_arguments() if n not in self.params and not self._is_label(n)]
        if len(in_shapes) != len(self.input_names):
            raise ValueError("export_model: the model has %d inputs (%s) but in_shapes gives %d shapes"
                             % (len(self.input_names), ", ".join(self.input_names), len(in_shapes)))
        self.input_shapes = {n: tuple(int(d) for d in s) for n, s in zip(self.input_names, in_shapes)}
        self.input_types = dict(zip(self.input_names, in_types))
        known = dict(self.input_shapes)
        known.update({k: v.shape for k, v in self.params.items() if k in arg_names})
        _, out_shapes, _ = internals.infer_shape_partial(**known)
        self.shapes = {h: tuple(s) if s is not None else None for h, s in zip(heads, out_shapes)}
        self.names = {}
        self.constants = {}
        self._sym_module = _sym

    def name_of(self, entry):
        """The ONNX name of an entry; a constant becomes an initializer when first read."""
        if entry not in self.names:
            node = self.doc["nodes"][entry[0]]
            name = node["name"] if node["op"] == "null" else self.graph.fresh(node["name"])
            self.graph.initializers[name] = np.ascontiguousarray(self.constants[entry])
            self.names[entry] = name
        return self.names[entry]

    @staticmethod
    def _is_label(name):
        return name.endswith("_label")

    def run(self, name):
        onnx = self.onnx
        nodes = self.doc["nodes"]
        used = self._used_entries()
        for nid, node in enumerate(nodes):
            if node["op"] == "null":
                self._variable(nid, node)
                continue
            if nid not in self.live:
                continue
            n = _Node(self, nid, node)
            if all(e in self.constants for e in n.entries) and n.entries and node["op"] not in ("BatchNorm",):
                self._fold(nid, node)
                continue
            convert = _CONVERTERS.get(node["op"])
            if convert is None:
                raise UnsupportedOperator("export_model: no ONNX conversion for operator '%s' (node '%s'); "
                                          "supported: %s" % (node["op"], node["name"], ", ".join(supported_operators())))
            outs = convert(n)
            outs = outs if isinstance(outs, (list, tuple)) else [outs]
            for i, o in enumerate(outs):
                self.names[(nid, i)] = o
        for head in self.out_heads:
            self.name_of(head)
        return self._model(name)

    def _used_entries(self):
        """Entries any live node or output reads (the labels of loss outputs excluded)."""
        out_heads = [tuple(h[:2]) for h in json.loads(self.sym.tojson(remove_amp_cast=False))["heads"]]
        self.out_heads = out_heads
        nodes = self.doc["nodes"]
        used, stack, seen = set(out_heads), [h[0] for h in out_heads], set()
        while stack:
            nid = stack.pop()
            if nid in seen:
                continue
            seen.add(nid)
            for e in nodes[nid]["inputs"]:
                used.add(tuple(e[:2]))
                stack.append(e[0])
        self.live = seen
        return used

    def _variable(self, nid, node):
        name = node["name"]
        if name in self.params:
            self.constants[(nid, 0)] = self.params[name].astype(np.float32) \
                if self.params[name].dtype == np.float64 else self.params[name]
        else:
            self.names[(nid, 0)] = name

    def _fold(self, nid, node):
        """Computes a node whose inputs are all constants with Weft itself."""
        from .. import ndarray as nd
        n = _Node(self, nid, node)
        fn = nd._internal.__dict__[node["op"]]
        attrs = {k: v for k, v in node.get("attrs", {}).items() if not k.startswith("__")}
        args = [nd.array(self.constants[e], dtype=self.constants[e].dtype) for e in n.entries]
        out = fn(*args, **attrs)
        outs = out if isinstance(out, (list, tuple)) else [out]
        for i, o in enumerate(outs):
            self.constants[(nid, i)] = o.asnumpy()

    def _model(self, name):
        onnx = self.onnx
        helper = onnx.helper
        inputs = []
        for n in self.input_names:
            dtype = onnx.helper.np_dtype_to_tensor_dtype(np.dtype(self.input_types[n])) \
                if hasattr(onnx.helper, "np_dtype_to_tensor_dtype") else \
                onnx.mapping.NP_TYPE_TO_TENSOR_TYPE[np.dtype(self.input_types[n])]
            inputs.append(helper.make_tensor_value_info(n, dtype, list(self.input_shapes[n])))
        outputs = []
        out_names = self.sym.list_outputs()
        for k, head in enumerate(self.out_heads):
            onnx_name = self.names[head]
            wanted = out_names[k]
            if onnx_name != wanted:
                self.graph.add("Identity", [onnx_name], wanted, outputs=[wanted])
            shape = self.shapes.get(head)
            outputs.append(helper.make_tensor_value_info(wanted, onnx.TensorProto.FLOAT,
                                                         list(shape) if shape is not None else None))
        initializers = [onnx.numpy_helper.from_array(v, k) for k, v in self.graph.initializers.items()]
        graph = helper.make_graph(self.graph.nodes, name, inputs, outputs, initializers)
        model = helper.make_model(graph, producer_name="weft", opset_imports=[helper.make_opsetid("", OPSET)])
        return model


# --------------------------------------------------------------------------- converters
def _pads(pad, ndim):
    pad = tuple(pad) or (0,) * ndim
    return list(pad) + list(pad)


@converts("Convolution")
def _conv(n):
    a = n.attrs
    if a.get("layout", "NCHW") not in (None, "NCW", "NCHW", "NCDHW"):
        n.fail("only channel-first layouts are converted, got layout=%s" % a.get("layout"))
    kernel = a.tuple("kernel")
    nd_ = len(kernel)
    inputs = n.inputs[:2] if a.bool("no_bias") else n.inputs[:3]
    return n.graph.add("Conv", inputs, n.name, kernel_shape=list(kernel),
                       strides=list(a.tuple("stride") or (1,) * nd_), dilations=list(a.tuple("dilate") or (1,) * nd_),
                       pads=_pads(a.tuple("pad"), nd_), group=int(a.get("num_group", 1)))


@converts("Deconvolution")
def _deconv(n):
    a = n.attrs
    kernel = a.tuple("kernel")
    nd_ = len(kernel)
    inputs = n.inputs[:2] if a.bool("no_bias", True) else n.inputs[:3]
    target = a.tuple("target_shape")
    kwargs = {}
    if target and any(target):
        kwargs["output_shape"] = list(target)
    else:
        kwargs["pads"] = _pads(a.tuple("pad"), nd_)
        adj = a.tuple("adj")
        if adj and any(adj):
            kwargs["output_padding"] = list(adj)
    return n.graph.add("ConvTranspose", inputs, n.name, kernel_shape=list(kernel),
                       strides=list(a.tuple("stride") or (1,) * nd_), dilations=list(a.tuple("dilate") or (1,) * nd_),
                       group=int(a.get("num_group", 1)), **kwargs)


@converts("FullyConnected")
def _fc(n):
    a = n.attrs
    g = n.graph
    x, w = n.inputs[0], n.inputs[1]
    no_bias = a.bool("no_bias")
    if a.bool("flatten", True):
        if len(n.input_shape(0)) != 2:
            x = g.add("Flatten", [x], n.name, axis=1)
        inputs = [x, w] if no_bias else [x, w, n.inputs[2]]
        return g.add("Gemm", inputs, n.name, transB=1)
    wv = n.param(1)
    wt = g.const(wv.T, n.name + "_weight_t") if wv is not None else g.add("Transpose", [w], n.name)
    y = g.add("MatMul", [x, wt], n.name)
    return y if no_bias else g.add("Add", [y, n.inputs[2]], n.name)


_ACT = {"relu": "Relu", "sigmoid": "Sigmoid", "tanh": "Tanh", "softrelu": "Softplus", "softsign": "Softsign"}


@converts("Activation")
def _activation(n):
    act = n.attrs.get("act_type")
    if act not in _ACT:
        n.fail("act_type=%s has no ONNX equivalent" % act)
    return n.graph.add(_ACT[act], n.inputs[:1], n.name)


@converts("relu", "sigmoid", "tanh", "exp", "log", "sqrt", "abs", "negative", "floor", "ceil", "erf", "identity",
          "_copy", "BlockGrad", "stop_gradient", "softsign", "reciprocal", "sin", "cos")
def _unary(n):
    op = {"relu": "Relu", "sigmoid": "Sigmoid", "tanh": "Tanh", "exp": "Exp", "log": "Log", "sqrt": "Sqrt",
          "abs": "Abs", "negative": "Neg", "floor": "Floor", "ceil": "Ceil", "erf": "Erf", "identity": "Identity",
          "_copy": "Identity", "BlockGrad": "Identity", "stop_gradient": "Identity", "softsign": "Softsign",
          "reciprocal": "Reciprocal", "sin": "Sin", "cos": "Cos"}[n.op]
    return n.graph.add(op, n.inputs[:1], n.name)


@converts("LeakyReLU")
def _leaky(n):
    a = n.attrs
    g = n.graph
    act = a.get("act_type", "leaky")
    slope = float(a.get("slope", 0.25))
    if act == "leaky":
        return g.add("LeakyRelu", n.inputs[:1], n.name, alpha=slope)
    if act == "elu":
        return g.add("Elu", n.inputs[:1], n.name, alpha=slope)
    if act == "selu":
        return g.add("Selu", n.inputs[:1], n.name)
    if act == "prelu":
        gamma = n.param(1)
        ndim = len(n.input_shape(0))
        if gamma is not None:
            slope_in = g.const(gamma.reshape((-1,) + (1,) * (ndim - 2)) if gamma.size > 1 else gamma, n.name + "_slope")
        else:
            slope_in = g.add("Reshape", [n.inputs[1], g.ints([-1] + [1] * (ndim - 2), "shape")], n.name)
        return g.add("PRelu", [n.inputs[0], slope_in], n.name)
    if act == "gelu":
        x = n.inputs[0]
        erf = g.add("Erf", [g.add("Mul", [x, g.const(1.0 / np.sqrt(2.0), "c")], n.name)], n.name)
        half = g.add("Mul", [x, g.const(0.5, "c")], n.name)
        return g.add("Mul", [half, g.add("Add", [erf, g.const(1.0, "c")], n.name)], n.name)
    n.fail("act_type=%s has no ONNX equivalent" % act)


@converts("BatchNorm")
def _batchnorm(n):
    a = n.attrs
    if int(a.get("axis", 1)) != 1:
        n.fail("only axis=1 is converted, got axis=%s" % a.get("axis"))
    g = n.graph
    inputs = list(n.inputs)
    if a.bool("fix_gamma", True):
        channels = n.input_shape(1)[0]
        inputs[1] = g.const(np.ones(channels, np.float32), n.name + "_gamma_fixed")
    return g.add("BatchNormalization", inputs, n.name, epsilon=float(a.get("eps", 1e-3)),
                 momentum=float(a.get("momentum", 0.9)))


@converts("Pooling")
def _pooling(n):
    a = n.attrs
    g = n.graph
    pool = a.get("pool_type", "max")
    if a.bool("global_pool"):
        if pool == "max":
            return g.add("GlobalMaxPool", n.inputs[:1], n.name)
        if pool == "avg":
            return g.add("GlobalAveragePool", n.inputs[:1], n.name)
        if pool == "lp":
            return g.add("GlobalLpPool", n.inputs[:1], n.name, p=int(a.get("p_value", 2)))
        n.fail("global pool_type=%s has no ONNX equivalent" % pool)
    kernel = a.tuple("kernel")
    nd_ = len(kernel)
    convention = a.get("pooling_convention", "valid")
    if convention not in ("valid", "full"):
        n.fail("pooling_convention=%s has no ONNX equivalent" % convention)
    common = dict(kernel_shape=list(kernel), strides=list(a.tuple("stride") or (1,) * nd_),
                  pads=_pads(a.tuple("pad"), nd_))
    if pool == "max":
        return g.add("MaxPool", n.inputs[:1], n.name, ceil_mode=int(convention == "full"), **common)
    if pool in ("avg", "sum"):
        y = g.add("AveragePool", n.inputs[:1], n.name, ceil_mode=int(convention == "full"),
                  count_include_pad=int(a.bool("count_include_pad", True) or pool == "sum"), **common)
        return y if pool == "avg" else g.add("Mul", [y, g.const(float(np.prod(kernel)), "area")], n.name)
    if pool == "lp":
        return g.add("LpPool", n.inputs[:1], n.name, p=int(a.get("p_value", 2)), **common)
    n.fail("pool_type=%s has no ONNX equivalent" % pool)


@converts("Flatten", "flatten")
def _flatten(n):
    return n.graph.add("Flatten", n.inputs[:1], n.name, axis=1)


@converts("SoftmaxOutput", "Softmax")
def _softmax_output(n):
    a = n.attrs
    axis = 1 if (a.bool("multi_output") or len(n.input_shape(0)) == 2) else -1
    if len(n.input_shape(0)) > 2 and not a.bool("multi_output"):
        flat = n.graph.add("Flatten", n.inputs[:1], n.name, axis=1)
        y = n.graph.add("Softmax", [flat], n.name, axis=1)
        return n.graph.add("Reshape", [y, n.graph.ints(n.input_shape(0), "shape")], n.name)
    return n.graph.add("Softmax", n.inputs[:1], n.name, axis=axis)


@converts("LinearRegressionOutput", "LogisticRegressionOutput", "MAERegressionOutput")
def _regression_output(n):
    if n.op == "LogisticRegressionOutput":
        return n.graph.add("Sigmoid", n.inputs[:1], n.name)
    return n.graph.add("Identity", n.inputs[:1], n.name)


def _softmax_input(n):
    x = n.inputs[0]
    t = n.attrs.get("temperature")
    if t not in (None, 1, 1.0):
        x = n.graph.add("Div", [x, n.graph.const(float(t), "temperature")], n.name)
    return x


@converts("softmax")
def _softmax(n):
    return n.graph.add("Softmax", [_softmax_input(n)], n.name, axis=int(n.attrs.get("axis", -1)))


@converts("log_softmax")
def _log_softmax(n):
    return n.graph.add("LogSoftmax", [_softmax_input(n)], n.name, axis=int(n.attrs.get("axis", -1)))


@converts("Concat", "concat")
def _concat(n):
    return n.graph.add("Concat", n.inputs, n.name, axis=int(n.attrs.get("dim", 1)))


_BINARY = {"elemwise_add": "Add", "_plus": "Add", "_Plus": "Add", "broadcast_add": "Add", "broadcast_plus": "Add",
           "elemwise_sub": "Sub", "_minus": "Sub", "_Minus": "Sub", "broadcast_sub": "Sub", "broadcast_minus": "Sub",
           "elemwise_mul": "Mul", "_mul": "Mul", "_Mul": "Mul", "broadcast_mul": "Mul",
           "elemwise_div": "Div", "_div": "Div", "_Div": "Div", "broadcast_div": "Div",
           "broadcast_maximum": "Max", "_maximum": "Max", "broadcast_minimum": "Min", "_minimum": "Min",
           "broadcast_power": "Pow", "_power": "Pow", "_Power": "Pow"}


@converts(*_BINARY)
def _binary(n):
    return n.graph.add(_BINARY[n.op], n.inputs[:2], n.name)


_SCALAR = {"_plus_scalar": ("Add", False), "_minus_scalar": ("Sub", False), "_rminus_scalar": ("Sub", True),
           "_mul_scalar": ("Mul", False), "_div_scalar": ("Div", False), "_rdiv_scalar": ("Div", True),
           "_power_scalar": ("Pow", False), "_rpower_scalar": ("Pow", True), "_maximum_scalar": ("Max", False),
           "_minimum_scalar": ("Min", False)}


@converts(*_SCALAR)
def _scalar(n):
    op, reverse = _SCALAR[n.op]
    c = n.graph.const(float(n.attrs.get("scalar", 0.0)), "scalar")
    inputs = [c, n.inputs[0]] if reverse else [n.inputs[0], c]
    return n.graph.add(op, inputs, n.name)


@converts("add_n", "ElementWiseSum")
def _add_n(n):
    return n.graph.add("Sum", n.inputs, n.name)


@converts("Dropout")
def _dropout(n):
    return n.graph.add("Identity", n.inputs[:1], n.name)


@converts("Reshape", "reshape")
def _reshape(n):
    a = n.attrs
    shape = a.tuple("shape")
    if a.bool("reverse") or any(d < -1 for d in shape) or not shape:
        shape = n.output_shape()
    return n.graph.add("Reshape", [n.inputs[0], n.graph.ints(shape, "shape")], n.name)


@converts("transpose")
def _transpose(n):
    axes = n.attrs.tuple("axes")
    ndim = len(n.input_shape(0))
    perm = [a % ndim for a in axes] if axes else list(reversed(range(ndim)))
    return n.graph.add("Transpose", n.inputs[:1], n.name, perm=perm)


@converts("SwapAxis", "swapaxes")
def _swapaxes(n):
    ndim = len(n.input_shape(0))
    perm = list(range(ndim))
    d1, d2 = int(n.attrs.get("dim1", 0)) % ndim, int(n.attrs.get("dim2", 0)) % ndim
    perm[d1], perm[d2] = perm[d2], perm[d1]
    return n.graph.add("Transpose", n.inputs[:1], n.name, perm=perm)


@converts("expand_dims")
def _expand_dims(n):
    return n.graph.add("Unsqueeze", [n.inputs[0], n.graph.ints([int(n.attrs.get("axis"))], "axes")], n.name)


@converts("squeeze")
def _squeeze(n):
    axis = n.attrs.tuple("axis")
    inputs = [n.inputs[0]] + ([n.graph.ints(list(axis), "axes")] if axis else [])
    return n.graph.add("Squeeze", inputs, n.name)


@converts("clip")
def _clip(n):
    g = n.graph
    return g.add("Clip", [n.inputs[0], g.const(float(n.attrs.get("a_min")), "min"),
                          g.const(float(n.attrs.get("a_max")), "max")], n.name)


@converts("slice_axis")
def _slice_axis(n):
    g = n.graph
    axis = int(n.attrs.get("axis"))
    begin = int(n.attrs.get("begin", 0))
    end = n.attrs.get("end")
    end = np.iinfo(np.int64).max if end is None else int(end)
    return g.add("Slice", [n.inputs[0], g.ints([begin], "starts"), g.ints([end], "ends"), g.ints([axis], "axes")],
                 n.name)


@converts("slice")
def _slice(n):
    g = n.graph
    begin, end, step = n.attrs.tuple("begin"), n.attrs.tuple("end"), n.attrs.tuple("step")
    big = np.iinfo(np.int64).max
    starts = [0 if b is None else b for b in begin]
    steps = [1 if (not step or step[i] is None) else step[i] for i in range(len(begin))]
    ends = [(big if steps[i] > 0 else -big) if e is None else e for i, e in enumerate(end)]
    starts = [(0 if steps[i] > 0 else big) if begin[i] is None else starts[i] for i in range(len(begin))]
    return g.add("Slice", [n.inputs[0], g.ints(starts, "starts"), g.ints(ends, "ends"),
                           g.ints(list(range(len(begin))), "axes"), g.ints(steps, "steps")], n.name)


def _reduce(n, onnx_op):
    a = n.attrs
    axis = a.tuple("axis")
    if a.bool("exclude"):
        ndim = len(n.input_shape(0))
        axis = tuple(d for d in range(ndim) if d not in [x % ndim for x in axis])
    keep = int(a.bool("keepdims"))
    if onnx_op == "ReduceSum":
        inputs = [n.inputs[0]] + ([n.graph.ints(list(axis), "axes")] if axis else [])
        return n.graph.add("ReduceSum", inputs, n.name, keepdims=keep)
    return n.graph.add(onnx_op, n.inputs[:1], n.name, keepdims=keep, axes=list(axis) if axis else None)


@converts("mean")
def _mean(n):
    return _reduce(n, "ReduceMean")


@converts("sum", "sum_axis")
def _sum(n):
    return _reduce(n, "ReduceSum")


@converts("max", "max_axis")
def _max(n):
    return _reduce(n, "ReduceMax")


@converts("min", "min_axis")
def _min(n):
    return _reduce(n, "ReduceMin")


@converts("Embedding")
def _embedding(n):
    idx = n.graph.add("Cast", n.inputs[:1], n.name, to=n.graph.onnx.TensorProto.INT64)
    return n.graph.add("Gather", [n.inputs[1], idx], n.name, axis=0)


@converts("LRN")
def _lrn(n):
    a = n.attrs
    return n.graph.add("LRN", n.inputs[:1], n.name, size=int(a.get("nsize")), alpha=float(a.get("alpha", 1e-4)),
                       beta=float(a.get("beta", 0.75)), bias=float(a.get("knorm", 2.0)))


@converts("Pad", "pad")
def _pad(n):
    a = n.attrs
    g = n.graph
    width = a.tuple("pad_width")
    pads = list(width[0::2]) + list(width[1::2])
    mode = a.get("mode", "constant")
    inputs = [n.inputs[0], g.ints(pads, "pads")]
    if mode == "constant":
        inputs.append(g.const(float(a.get("constant_value", 0.0)), "value"))
    return g.add("Pad", inputs, n.name, mode=mode)


@converts("RNN")
def _rnn(n):
    """MXNet's fused RNN (packed parameters) as ONNX LSTM/GRU/RNN nodes, one per layer."""
    a = n.attrs
    g = n.graph
    mode = a.get("mode")
    layers = int(a.get("num_layers", 1))
    dirs = 2 if a.bool("bidirectional") else 1
    hidden = int(a.get("state_size"))
    if a.get("projection_size") is not None:
        n.fail("LSTM projections (projection_size) have no ONNX equivalent")
    if a.bool("use_sequence_length"):
        n.fail("use_sequence_length is not converted")
    params = n.param(1)
    if params is None:
        n.fail("the packed parameters must be model parameters (constants)")
    gates = {"lstm": 4, "gru": 3, "rnn_tanh": 1, "rnn_relu": 1}[mode]
    # Gate order: Weft and MXNet pack LSTM as i, f, g, o and GRU as r, z, n; ONNX wants
    # i, o, f, g and z, r, n.
    order = {"lstm": [0, 3, 1, 2], "gru": [1, 0, 2]}.get(mode, [0])
    seq, batch, feat = n.input_shape(0)
    weights, biases, pos = [], [], 0
    for layer in range(layers):
        in_size = feat if layer == 0 else hidden * dirs
        for _ in range(dirs):
            w = params[pos:pos + gates * hidden * in_size].reshape(gates, hidden, in_size)
            pos += w.size
            r = params[pos:pos + gates * hidden * hidden].reshape(gates, hidden, hidden)
            pos += r.size
            weights.append((w, r))
    for layer in range(layers):
        for _ in range(dirs):
            bw = params[pos:pos + gates * hidden].reshape(gates, hidden)
            pos += bw.size
            br = params[pos:pos + gates * hidden].reshape(gates, hidden)
            pos += br.size
            biases.append((bw, br))
    if pos != params.size:
        n.fail("packed parameters have %d values, expected %d" % (params.size, pos))
    onnx_op = {"lstm": "LSTM", "gru": "GRU", "rnn_tanh": "RNN", "rnn_relu": "RNN"}[mode]
    x = n.inputs[0]
    h_all = n.inputs[2] if len(n.inputs) > 2 else None
    c_all = n.inputs[3] if mode == "lstm" and len(n.inputs) > 3 else None
    out_h, out_c = [], []
    for layer in range(layers):
        sl = slice(layer * dirs, (layer + 1) * dirs)
        W = np.stack([w[order].reshape(-1, w.shape[2]) for w, _ in weights[sl]])
        R = np.stack([r[order].reshape(-1, hidden) for _, r in weights[sl]])
        B = np.stack([np.concatenate([bw[order].ravel(), br[order].ravel()]) for bw, br in biases[sl]])
        inputs = [x, g.const(W, n.name + "_W"), g.const(R, n.name + "_R"), g.const(B, n.name + "_B"), ""]
        for state in (h_all, c_all):
            if state is None:
                continue
            inputs.append(g.add("Slice", [state, g.ints([layer * dirs], "s"), g.ints([(layer + 1) * dirs], "e"),
                                          g.ints([0], "a")], n.name))
        kwargs = {"hidden_size": hidden, "direction": "bidirectional" if dirs == 2 else "forward"}
        if mode == "gru":
            kwargs["linear_before_reset"] = 1
        if mode in ("rnn_tanh", "rnn_relu"):
            kwargs["activations"] = ["Tanh" if mode == "rnn_tanh" else "Relu"] * dirs
        outs = g.add(onnx_op, inputs, n.name, num_outputs=3 if mode == "lstm" else 2, **kwargs)
        y = g.add("Transpose", [outs[0]], n.name, perm=[0, 2, 1, 3])
        x = g.add("Reshape", [y, g.ints([0, 0, -1], "shape")], n.name)
        out_h.append(outs[1])
        if mode == "lstm":
            out_c.append(outs[2])
    results = [x]
    if a.bool("state_outputs"):
        results.append(out_h[0] if layers == 1 else g.add("Concat", out_h, n.name, axis=0))
        if mode == "lstm":
            results.append(out_c[0] if layers == 1 else g.add("Concat", out_c, n.name, axis=0))
    return results


@converts("UpSampling")
def _upsampling(n):
    a = n.attrs
    if a.get("sample_type", "nearest") != "nearest" or len(n.inputs) != 1:
        n.fail("only nearest upsampling of one input is converted")
    s = float(a.get("scale"))
    g = n.graph
    return g.add("Resize", [n.inputs[0], "", g.const([1.0, 1.0, s, s], "scales")], n.name, mode="nearest",
                 nearest_mode="floor", coordinate_transformation_mode="asymmetric")


@converts("zeros_like", "ones_like")
def _fill_like(n):
    g = n.graph
    value = n.graph.onnx.helper.make_tensor("value", n.graph.onnx.TensorProto.FLOAT, [1],
                                            [0.0 if n.op == "zeros_like" else 1.0])
    return g.add("ConstantOfShape", [g.add("Shape", n.inputs[:1], n.name)], n.name, value=value)


@converts("broadcast_axis", "broadcast_axes")
def _broadcast_axis(n):
    ndim = len(n.input_shape(0))
    target = [1] * ndim
    for axis, size in zip(n.attrs.tuple("axis"), n.attrs.tuple("size")):
        target[axis % ndim] = size
    return n.graph.add("Expand", [n.inputs[0], n.graph.ints(target, "shape")], n.name)


@converts("broadcast_to")
def _broadcast_to(n):
    target = [1 if d == 0 else d for d in n.attrs.tuple("shape")]
    return n.graph.add("Expand", [n.inputs[0], n.graph.ints(target, "shape")], n.name)


@converts("broadcast_like")
def _broadcast_like(n):
    if n.attrs.get("lhs_axes") is not None or n.attrs.get("rhs_axes") is not None:
        n.fail("lhs_axes/rhs_axes are not converted")
    return n.graph.add("Expand", [n.inputs[0], n.graph.add("Shape", [n.inputs[1]], n.name)], n.name)


@converts("Cast", "cast", "amp_cast")
def _cast(n):
    onnx = n.graph.onnx
    dtype = np.dtype(n.attrs.get("dtype"))
    to = onnx.helper.np_dtype_to_tensor_dtype(dtype) if hasattr(onnx.helper, "np_dtype_to_tensor_dtype") \
        else onnx.mapping.NP_TYPE_TO_TENSOR_TYPE[dtype]
    return n.graph.add("Cast", n.inputs[:1], n.name, to=to)
