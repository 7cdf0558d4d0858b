"""Quantization (MXNet 1.9's mx.contrib.quantization): float32 models made into int8 ones.

The pieces, in the order a model goes through them:
- `_quantize_symbol` rewrites the float32 graph (Python over its JSON, as amp does): every
  node whose operator has a quantized form (`_RULES`; the form must be registered in this
  build), is not excluded and is chosen by `quantize_mode` becomes `quantized_<name>`
  (`_contrib_quantized_*`), fed by `_contrib_quantize_v2` nodes where float values come in,
  followed by `_contrib_requantize` where it gives int32, and read back through
  `_contrib_dequantize` by float nodes and at the outputs. MXNet's oneDNN subgraph nodes
  (`_sg_mkldnn_*`, from get_backend_symbol('MKLDNN_QUANTIZE')) become their own int8 form
  (`_SubgraphRule`, quantized=True). Parameters (`offline_params`)
  become int8 variables `<name>_quantize` with `_min`/`_max` companions. It returns the
  names of the float values to calibrate.
- Calibration runs the float32 model on the calibration data with a monitor on its executor
  (bound with the fusion and oneDNN region passes off, so that every value is seen) and a
  collector: `_LayerOutputMinMaxCollector` (naive: min and max) or `_LayerHistogramCollector`
  (entropy: histograms, then the threshold of least KL divergence per value through
  `_contrib_calibrate_entropy`). `_calibrate_quantized_sym` writes the ranges as
  min_calib_range/max_calib_range on the quantize and requantize nodes.
- `_quantize_params` quantizes the parameters to int8 with their own ranges; with
  `quantize_granularity='channel-wise'` the weights of quantized convolutions and dense
  layers get one range per output channel (the layers' `channel_wise=True`), as MXNet's
  oneDNN backend quantizes them.
`quantize_model` does all three on a (symbol, params) model, `quantize_graph` + `calib_graph`
split them around the user's own forward passes, `quantize_net_v2` on a Gluon HybridBlock.
`quantize_model_mkldnn` and `quantize_net_v2` on the CPU do what MXNet's oneDNN backend does
around them: each BatchNorm after a Convolution is folded into it first (`_fold_batch_norm`),
quantized convolutions take over an addition and relu after them and dense layers a relu
(`_fusions`), and after calibration each requantize goes into the product before it
(`_fuse_requantize`), which then writes 8 bits itself, and each dequantize after one goes
into it too (`_fuse_dequantize`: enable_float_output). `quantize_net_v2` on the CPU then
puts its 2-D quantized convolutions in layout NHWC (`_channels_last`), the layout of
oneDNN's int8 kernels, with transposes only where those values meet other nodes.
"""
import contextlib
import inspect
import json
import logging
import os
import tempfile
import warnings

import numpy as np

from .. import ndarray, symbol
from ..context import Context, cpu
from ..io import DataBatch, DataDesc, DataIter
from ..module import Module
from ..ndarray import NDArray
from ..ndarray import load as nd_load
from ..ndarray import save as nd_save
from ..symbol import Symbol
from ..symbol import load as sym_load

__all__ = ["quantize_model", "quantize_model_mkldnn", "quantize_graph", "calib_graph", "quantize_net",
           "quantize_net_v2", "combine_histogram", "CalibrationCollector",
           # MXNet's module has no __all__: `from mxnet.contrib.quantization import *` also gives
           # the names it imports, and scripts use them (example/quantization calls cpu()).
           "cpu", "Context", "Module", "NDArray", "Symbol", "DataIter", "DataDesc", "DataBatch", "ndarray",
           "nd_load", "nd_save", "sym_load"]


# ------------------------------------------------------------------ what can be quantized

# The quantized layers that take channel-wise weight ranges.
_CHANNEL_WISE = ("_contrib_quantized_conv", "_contrib_quantized_fully_connected")

def _flag(attrs, key, default):
    return str(attrs.get(key, default)).lower() in ("true", "1")


class _Rule:
    """How a float operator becomes quantized: the quantized operator, whether it is one that
    must be quantized for anything around it to be ('smart' mode quantizes the others only
    between such nodes), whether its int32 output needs a requantize, and which of its nodes
    qualify (by their attributes). An operator with `float_out` writes float32 outputs (no
    range, no dequantize after it); the inputs in `float_inputs` stay float32 and those in
    `asym_inputs` are quantized by _contrib_quantize_asym (uint8 with a scale and shift,
    which take the place of the range inputs)."""

    def __init__(self, qop, must=False, requantize=False, accepts=None, float_out=False, float_inputs=(),
                 asym_inputs=()):
        self.qop, self.must, self.requantize = qop, must, requantize
        self.accepts = accepts or (lambda attrs: True)
        self.float_out, self.float_inputs, self.asym_inputs = float_out, set(float_inputs), set(asym_inputs)


def _quantizable_lstm(attrs):
    # MXNet's int8 RNN is an LSTM without projection, state clipping or sequence lengths.
    return attrs.get("mode") == "lstm" and attrs.get("projection_size", "None") == "None" and \
        attrs.get("lstm_state_clip_min", "None") == "None" and attrs.get("lstm_state_clip_max", "None") == "None" \
        and not _flag(attrs, "use_sequence_length", False)


_RULES = {
    "Convolution": _Rule("_contrib_quantized_conv", must=True, requantize=True),
    "FullyConnected": _Rule("_contrib_quantized_fully_connected", must=True, requantize=True),
    "Pooling": _Rule("_contrib_quantized_pooling",
                     accepts=lambda a: a.get("pool_type", "max") in ("max", "avg")),
    "Flatten": _Rule("_contrib_quantized_flatten"),
    "Concat": _Rule("_contrib_quantized_concat", accepts=lambda a: int(a.get("dim", 1)) > 0),
    "elemwise_add": _Rule("_contrib_quantized_elemwise_add", requantize=True),
    "Activation": _Rule("_contrib_quantized_act", accepts=lambda a: a.get("act_type") == "relu"),
    "RNN": _Rule("_contrib_quantized_rnn", must=True, accepts=_quantizable_lstm, float_out=True,
                 float_inputs=(1, 2, 3), asym_inputs=(0,)),
}


# MXNet's oneDNN subgraph nodes (what get_backend_symbol('MKLDNN' or 'MKLDNN_QUANTIZE')
# makes) become their own int8 form, quantized=True with MXNet's spelling of the flag, named
# quantized_<name> and followed by a requantize, as MXNet's quantize pass makes them.
_SG_QUANTIZED = {"_sg_mkldnn_conv": "true", "_sg_mkldnn_fully_connected": "True",
                 "_sg_mkldnn_selfatt_qk": "True", "_sg_mkldnn_selfatt_valatt": "True"}


class _SubgraphRule(_Rule):
    """The rule of a oneDNN subgraph node: it stays its own operator."""

    def __init__(self, op):
        super().__init__(op, must=True, requantize=True)
        self.subgraph = True

    @staticmethod
    def kept_float(node, granularity):
        """The inputs that stay float32: the convolution's parameters (its weights, bias and
        BatchNorm, which it quantizes and folds itself; not the data and the residual sum),
        and with channel-wise ranges the dense layer's weight and bias (MXNet's
        FAvoidQuantizeInput)."""
        n = len(node.get("inputs", []))
        if node["op"] == "_sg_mkldnn_conv":
            return set(range(1, n - 1 if _flag(node.get("attrs", {}), "with_sum", False) else n))
        if node["op"] == "_sg_mkldnn_fully_connected" and granularity == "channel-wise":
            return set(range(1, n))
        return set()


def _registered(op):
    return hasattr(ndarray._internal, op)


def _rule(node):
    if node["op"] in _SG_QUANTIZED:
        quantized = _flag(node.get("attrs", {}), "quantized", False)
        return None if quantized or not _registered(node["op"]) else _SubgraphRule(node["op"])
    rule = _RULES.get(node["op"])
    if rule is None or not _registered(rule.qop) or not rule.accepts(node.get("attrs", {})):
        return None
    return rule


# ------------------------------------------------------------------ graph JSON helpers

def _output_names(sym):
    """node name -> the names of its visible outputs, as the monitor and list_outputs give them."""
    names = {}
    for entry in sym.get_internals():
        names.setdefault(entry.name, []).append(entry.list_outputs()[0])
    return names


def _entry_name(nodes, out_names, entry):
    node = nodes[entry[0]]
    if node["op"] == "null":
        return node["name"]
    outs = out_names.get(node["name"], [])
    return outs[entry[1]] if entry[1] < len(outs) else "%s_output%d" % (node["name"], entry[1])


def _compact(graph, nodes, num_out, heads):
    """The graph JSON of `nodes` (inputs as [node, index, version]) keeping what the heads reach."""
    # Depth-first, inputs before readers, in the order of inputs and heads (as MXNet writes it).
    order, done, stack = [], set(), [(h[0], False) for h in reversed(heads)]
    while stack:
        n, expanded = stack.pop()
        if n in done:
            continue
        if expanded:
            done.add(n)
            order.append(n)
            continue
        stack.append((n, True))
        stack.extend((e[0], False) for e in reversed(nodes[n].get("inputs", [])) if e[0] not in done)
    new = {old: k for k, old in enumerate(order)}
    out = []
    for old in order:
        n = dict(nodes[old])
        n["inputs"] = [[new[e[0]], e[1], 0] for e in n.get("inputs", [])]
        out.append(n)
    ptr = [0]
    for old in order:
        ptr.append(ptr[-1] + num_out[old])
    graph = dict(graph)
    graph.update(nodes=out, arg_nodes=[k for k, n in enumerate(out) if n["op"] == "null"], node_row_ptr=ptr,
                 heads=[[new[h[0]], h[1], 0] for h in heads])
    return graph


def _to_symbol(graph, nodes, num_out, heads):
    return symbol.load_json(json.dumps(_compact(graph, nodes, num_out, heads)))


def _consumers(nodes, heads):
    """(node, output) -> the nodes reading it; heads count as a reader -1."""
    readers = {}
    for i, n in enumerate(nodes):
        for e in n.get("inputs", []):
            readers.setdefault((e[0], e[1]), []).append(i)
    for h in heads:
        readers.setdefault((h[0], h[1]), []).append(-1)
    return readers


# ------------------------------------------------------------------ the graph rewrite

def _choose(nodes, excluded_symbols, excluded_operators, quantize_mode):
    """index -> rule of the nodes to quantize."""
    chosen = {}
    for i, n in enumerate(nodes):
        if n["op"] == "null" or n["name"] in excluded_symbols or n["op"] in excluded_operators:
            continue
        # A oneDNN subgraph node also stays float when an operator inside it is excluded by
        # name (as in MXNet, whose users name the layers of the float model).
        if any(m.get("op") != "null" and m.get("name") in excluded_symbols
               for g in n.get("subgraphs", []) for m in g.get("nodes", [])):
            continue
        rule = _rule(n)
        if rule is not None:
            chosen[i] = rule
    if quantize_mode == "full":
        return chosen
    # smart: a node that need not be quantized is, only when it lies between nodes that must
    # (it reaches one through its inputs and one through its outputs, over quantizable nodes
    # only), so that no int8 value is made just to be converted back.
    readers = {}
    for i, n in enumerate(nodes):
        for e in n.get("inputs", []):
            readers.setdefault(e[0], []).append(i)
    optional = {i for i, r in chosen.items() if not r.must}

    def reach(step):
        seen, stack = set(), [i for i, r in chosen.items() if r.must]
        while stack:
            for j in step(stack.pop()):
                if j in optional and j not in seen:
                    seen.add(j)
                    stack.append(j)
        return seen

    upstream = reach(lambda i: [e[0] for e in nodes[i].get("inputs", [])])
    downstream = reach(lambda i: readers.get(i, []))
    return {i: r for i, r in chosen.items() if r.must or (i in upstream and i in downstream)}


def _takes(op, param):
    """Whether the registered operator `op` has the parameter `param`."""
    f = getattr(ndarray._internal, op, None)
    return f is not None and param in inspect.signature(f).parameters


class _Fusion:
    """A quantized Convolution or FullyConnected that also does what follows it: the addition
    of `sum` (the other input of an elemwise_add reading only it) and a relu."""

    def __init__(self, head):
        self.head, self.sum, self.relu, self.members = head, None, False, [head]


def _fusions(nodes, heads, chosen, excluded_symbols, excluded_operators):
    """last fused node's index -> _Fusion, for the quantized convolutions and fully connected
    layers whose only reader is an addition (convolutions) and/or a relu that the quantized
    operator can take over (MXNet's oneDNN backend fuses the same patterns)."""
    readers = _consumers(nodes, heads)
    taken = set()

    def only_reader(i, op, qparam, qop):
        r = readers.get((i, 0), [])
        if len(r) != 1 or r[0] < 0 or r[0] in taken:
            return None
        n = nodes[r[0]]
        if n["op"] != op or n["name"] in excluded_symbols or op in excluded_operators or not _takes(qop, qparam):
            return None
        return r[0]

    fusions = {}
    for i, rule in sorted(chosen.items()):
        if nodes[i]["op"] not in ("Convolution", "FullyConnected"):
            continue
        f, last = _Fusion(i), i
        add = only_reader(i, "elemwise_add", "with_sum", rule.qop) if nodes[i]["op"] == "Convolution" else None
        if add is not None:
            other = [e for e in nodes[add]["inputs"] if e[0] != i]
            if len(other) == 1:
                f.sum, last = other[0], add
                f.members.append(add)
        relu = only_reader(last, "Activation", "with_relu", rule.qop)
        if relu is not None and nodes[relu].get("attrs", {}).get("act_type") == "relu":
            f.relu, last = True, relu
            f.members.append(relu)
        if last != i:
            taken.update(f.members)
            fusions[last] = f
    return fusions


def _quantize_symbol(sym, ctx=None, excluded_symbols=None, excluded_operators=None, offline_params=None,
                     quantized_dtype="int8", quantize_mode="smart", quantize_granularity="tensor-wise", fuse=False,
                     logger=None):
    """The quantized symbol of `sym` and the names of the float values its quantize and
    requantize nodes need calibrated ranges of (see the module's doc). fuse: let quantized
    convolutions and fully connected layers take over the addition and relu after them."""
    graph, calib = _quantize_json(sym, excluded_symbols, excluded_operators, offline_params, quantized_dtype,
                                  quantize_mode, quantize_granularity, fuse, logger)
    return symbol.load_json(json.dumps(graph)), calib


def _quantize_json(sym, excluded_symbols, excluded_operators, offline_params, quantized_dtype, quantize_mode,
                   quantize_granularity, fuse=False, logger=None):
    if quantize_mode not in ("smart", "full"):
        raise ValueError("unknown quantize_mode %r, expected 'smart' or 'full'" % (quantize_mode,))
    if quantized_dtype not in ("int8", "uint8", "auto"):
        raise ValueError("unknown quantized_dtype %r, expected 'int8', 'uint8' or 'auto'" % (quantized_dtype,))
    if quantize_granularity not in ("tensor-wise", "channel-wise"):
        raise ValueError("unknown quantize_granularity %r, expected 'tensor-wise' or 'channel-wise'"
                         % (quantize_granularity,))
    graph = json.loads(sym.tojson(remove_amp_cast=False))
    nodes, row, heads = graph["nodes"], graph["node_row_ptr"], graph["heads"]
    out_names = _output_names(sym)
    offline = set(offline_params or [])
    excluded_symbols, excluded_operators = set(excluded_symbols or []), set(excluded_operators or [])
    chosen = _choose(nodes, excluded_symbols, excluded_operators, quantize_mode)
    fusions = _fusions(nodes, heads, chosen, excluded_symbols, excluded_operators) if fuse else {}
    absorbed = {m for f in fusions.values() for m in f.members}
    for last, f in fusions.items():
        for m in f.members:
            chosen.pop(m, None)
        chosen[last] = _RULES[nodes[f.head]["op"]]

    new_nodes, num_out, calib = [], [], []
    mirror = {}        # old index -> new index (for a quantized node: what gives its int8 value and range)
    quantized_in = {}  # old (node, output) -> the new (data, min, max) entries of its int8 form
    float_of = {}      # old (node, output) of a quantized node -> the new entry of its dequantized value

    def add(node, outputs, calib_name=None):
        new_nodes.append(node)
        num_out.append(outputs)
        if calib_name is not None and calib_name not in calib:
            calib.append(calib_name)
        return len(new_nodes) - 1

    def variable(name):
        # No __dtype__, as in MXNet (whose attr_dict() then lists no such variables): the
        # quantized layers' type inference gives the int8 weights and float32 ranges.
        return add({"op": "null", "name": name, "attrs": {}, "inputs": []}, 1)

    def int8_input(entry):
        """The (data, min, max) entries of an old entry's int8 form, made once per entry."""
        key = (entry[0], entry[1])
        if key in quantized_in:
            return quantized_in[key]
        src = nodes[entry[0]]
        if entry[0] in chosen and not chosen[entry[0]].float_out:
            m = mirror[entry[0]]
            quantized_in[key] = ([m, entry[1], 0], [m, 1, 0], [m, 2, 0])
        elif src["op"] == "null" and src["name"] in offline:
            name = src["name"] + "_quantize"
            quantized_in[key] = tuple([variable(n), 0, 0] for n in (name, name + "_min", name + "_max"))
        else:
            float_name = _entry_name(nodes, out_names, entry)
            suffix = "" if src["op"] == "null" else float_name[len(src["name"]):]
            q = add({"op": "_contrib_quantize_v2", "name": src["name"] + suffix + "_quantize",
                     "attrs": {"out_type": quantized_dtype}, "inputs": [[mirror[entry[0]], entry[1], 0]]},
                    3, calib_name=float_name)
            quantized_in[key] = ([q, 0, 0], [q, 1, 0], [q, 2, 0])
        return quantized_in[key]

    def asym_input(entry):
        """The (data, scale, shift) entries of an old entry quantized by quantize_asym."""
        key = ("asym", entry[0], entry[1])
        if key not in quantized_in:
            src = nodes[entry[0]]
            float_name = _entry_name(nodes, out_names, entry)
            suffix = "" if src["op"] == "null" else float_name[len(src["name"]):]
            q = add({"op": "_contrib_quantize_asym", "name": src["name"] + suffix + "_quantize", "attrs": {},
                     "inputs": [float_input(entry)]}, 3, calib_name=float_name)
            quantized_in[key] = ([q, 0, 0], [q, 1, 0], [q, 2, 0])
        return quantized_in[key]

    def float_input(entry):
        key = (entry[0], entry[1])
        if entry[0] not in chosen or chosen[entry[0]].float_out:
            return [mirror[entry[0]], entry[1], 0]
        if key not in float_of:
            data, lo, hi = int8_input(entry)
            d = add({"op": "_contrib_dequantize", "name": nodes[entry[0]]["name"] + "_dequantize", "attrs": {},
                     "inputs": [data, lo, hi]}, 1)
            float_of[key] = [d, 0, 0]
        return float_of[key]

    for i, node in enumerate(nodes):
        inputs = node.get("inputs", [])
        if node["op"] == "null":
            mirror[i] = add(dict(node), 1)
            continue
        if i in absorbed and i not in fusions:
            continue  # made by the fused node at the last of its members
        if i not in chosen:
            copy = dict(node)
            copy["inputs"] = [float_input(e) for e in inputs]
            mirror[i] = add(copy, row[i + 1] - row[i])
            continue
        rule = chosen[i]
        if getattr(rule, "subgraph", False):
            kept = rule.kept_float(node, quantize_granularity)
            data, ranges = [], []
            for k, e in enumerate(inputs):
                if k in kept:
                    data.append(float_input(e))
                    continue
                d, lo, hi = int8_input(e)
                data.append(d)
                ranges += [lo, hi]
            attrs = dict(node.get("attrs", {}), quantized=_SG_QUANTIZED[node["op"]])
            if node["op"] == "_sg_mkldnn_fully_connected" and quantize_granularity == "channel-wise":
                attrs["channel_wise_quantize"] = "True"
            q = add(dict(node, name="quantized_" + node["name"], attrs=attrs, inputs=data + ranges), 3)
            mirror[i] = add({"op": "_contrib_requantize", "name": "requantize_" + node["name"],
                             "attrs": {"out_type": quantized_dtype}, "inputs": [[q, 0, 0], [q, 1, 0], [q, 2, 0]]},
                            3, calib_name=_entry_name(nodes, out_names, [i, 0]))
            continue
        f = fusions.get(i)
        source = nodes[f.head] if f else node
        source_inputs = source.get("inputs", [])
        if rule.float_inputs or rule.asym_inputs:
            # Float inputs go in as they are; each quantized input brings two range (or scale
            # and shift) inputs, after all the data inputs.
            data, ranges = [], []
            for k, e in enumerate(source_inputs):
                if k in rule.float_inputs:
                    data.append(float_input(e))
                    continue
                d, lo, hi = asym_input(e) if k in rule.asym_inputs else int8_input(e)
                data.append(d)
                ranges += [lo, hi]
            attrs = dict(source.get("attrs", {}), quantized="true")
            mirror[i] = add({"op": rule.qop, "name": "quantized_" + node["name"], "attrs": attrs,
                             "inputs": data + ranges}, 3 if _flag(attrs, "state_outputs", False) else 1)
            continue
        ins = [int8_input(e) for e in source_inputs]
        attrs = dict(source.get("attrs", {}))
        extra = []
        if f and f.sum is not None:
            attrs["with_sum"] = "True"
            extra = list(int8_input(f.sum))
        if f and f.relu:
            attrs["with_relu"] = "True"
        if quantize_granularity == "channel-wise" and rule.qop in _CHANNEL_WISE:
            attrs["channel_wise"] = "True"
        q = add({"op": rule.qop, "name": "quantized_" + node["name"], "attrs": attrs,
                 "inputs": [d for d, _, _ in ins] + [r for _, lo, hi in ins for r in (lo, hi)] + extra}, 3)
        if rule.requantize:
            q = add({"op": "_contrib_requantize", "name": "requantize_" + node["name"],
                     "attrs": {"out_type": quantized_dtype}, "inputs": [[q, 0, 0], [q, 1, 0], [q, 2, 0]]},
                    3, calib_name=_entry_name(nodes, out_names, [i, 0]))
        mirror[i] = q

    new_heads = [float_input(h) for h in heads]
    if logger:
        for i, node in enumerate(nodes):
            if node["op"] != "null":
                logger.info("%s is %squantized.", node["name"], "" if i in chosen or i in absorbed else "NOT ")
    return _compact(graph, new_nodes, num_out, new_heads), calib


def _calibrate_quantized_sym(qsym, th_dict):
    """qsym with the ranges of th_dict (float value name -> (min, max)) set on the nodes that
    narrow those values: quantize nodes by the value they read, requantize nodes by the
    value of the float node they follow."""
    if not th_dict:
        return qsym
    graph = json.loads(qsym.tojson(remove_amp_cast=False))
    nodes = graph["nodes"]
    out_names = _output_names(qsym)

    def float_name(entry):
        name = _entry_name(nodes, out_names, entry)
        return name[len("quantized_"):] if nodes[entry[0]]["name"].startswith("quantized_") else name

    for node in nodes:
        if node["op"] not in ("_contrib_quantize_v2", "_contrib_requantize", "_contrib_quantize_asym"):
            continue
        key = float_name(node["inputs"][0])
        if key in th_dict:
            lo, hi = (float(v) for v in th_dict[key])
            attrs = node.setdefault("attrs", {})
            # The quantized layers read uint8 with a zero point of 0: a non-negative value
            # quantized to uint8 takes the range [0, max], and so does a value with negatives
            # that quantized_dtype='uint8' forces to uint8 (its negatives clip to 0, as MXNet's
            # oneDNN quantize_v2 clips them).
            out_type = attrs.get("out_type")
            if node["op"] == "_contrib_quantize_v2" and (out_type == "uint8" or (out_type == "auto" and lo >= 0)):
                lo = 0.0
                hi = max(hi, 0.0)
            attrs.update(min_calib_range=repr(lo), max_calib_range=repr(hi))
    return symbol.load_json(json.dumps(graph))


def _fuse_requantize(qsym):
    """qsym with each calibrated requantize that alone reads a quantized convolution or fully
    connected layer folded into it: the product writes 8 bits itself (MXNet's oneDNN backend
    does the same after calibration)."""
    graph = json.loads(qsym.tojson(remove_amp_cast=False))
    nodes, row, heads = graph["nodes"], graph["node_row_ptr"], graph["heads"]
    readers = _consumers(nodes, heads)
    replace = {}
    for i, n in enumerate(nodes):
        attrs = n.get("attrs", {})
        if n["op"] != "_contrib_requantize" or "min_calib_range" not in attrs:
            continue
        src = n["inputs"][0][0]
        q = nodes[src]
        if q["op"] not in ("_contrib_quantized_conv", "_contrib_quantized_fully_connected") or \
                "min_calib_range" in q.get("attrs", {}) or not _takes(q["op"], "min_calib_range") or \
                [e[:2] for e in n["inputs"]] != [[src, 0], [src, 1], [src, 2]] or \
                any(readers.get((src, k)) != [i] for k in range(3)):
            continue
        q.setdefault("attrs", {}).update(min_calib_range=attrs["min_calib_range"],
                                         max_calib_range=attrs["max_calib_range"])
        replace[i] = src
    if not replace:
        return qsym

    def redirect(e):
        return [replace[e[0]], e[1], 0] if e[0] in replace else e

    for n in nodes:
        n["inputs"] = [redirect(e) for e in n.get("inputs", [])]
    return _to_symbol(graph, nodes, [row[k + 1] - row[k] for k in range(len(nodes))], [redirect(h) for h in heads])


def _channel_wise_weights(qsym):
    """Names of the quantized weight arguments of qsym's channel-wise layers."""
    nodes = json.loads(qsym.tojson(remove_amp_cast=False))["nodes"]
    return {nodes[n["inputs"][1][0]]["name"] for n in nodes
            if n["op"] in _CHANNEL_WISE and n.get("attrs", {}).get("channel_wise") in ("True", "true", "1")}


def _quantize_per_channel(value):
    """int8 weights with one range per output channel (axis 0): each channel scaled by
    127 / r, r = its largest magnitude, rounded half away from zero as quantize_v2 does; the
    ranges (-r, r) as two float32 arrays of shape (channels,)."""
    w = value.asnumpy().astype(np.float64)
    flat = w.reshape(w.shape[0], -1)
    r = np.abs(flat).max(axis=1)
    scale = np.where(r > 0, 127.0 / np.where(r > 0, r, 1.0), 0.0)
    q = np.sign(flat) * np.minimum(np.floor(np.abs(flat) * scale[:, None] + 0.5), 127.0)
    return (ndarray.array(q.reshape(w.shape), dtype="int8"), ndarray.array(-r, dtype="float32"),
            ndarray.array(r, dtype="float32"))


def _fuse_dequantize(qsym):
    """qsym with each dequantize that alone reads a quantized convolution or fully connected
    layer folded into it (enable_float_output, its calibrated range dropped): the layer
    writes its float values directly, as MXNet's oneDNN backend does for the last dense
    layer, so a classifier's logits are not rounded to 8 bits."""
    graph = json.loads(qsym.tojson(remove_amp_cast=False))
    nodes, row, heads = graph["nodes"], graph["node_row_ptr"], graph["heads"]
    readers = _consumers(nodes, heads)
    num_out = [row[k + 1] - row[k] for k in range(len(nodes))]
    replace = {}
    for i, n in enumerate(nodes):
        if n["op"] != "_contrib_dequantize":
            continue
        src = n["inputs"][0][0]
        q = nodes[src]
        if q["op"] not in ("_contrib_quantized_conv", "_contrib_quantized_fully_connected") or \
                not _takes(q["op"], "enable_float_output") or num_out[src] != 3 or \
                [e[:2] for e in n["inputs"]] != [[src, 0], [src, 1], [src, 2]] or \
                any(readers.get((src, k)) != [i] for k in range(3)):
            continue
        attrs = q.setdefault("attrs", {})
        attrs.pop("min_calib_range", None)
        attrs.pop("max_calib_range", None)
        attrs["enable_float_output"] = "True"
        num_out[src] = 1
        replace[i] = src
    if not replace:
        return qsym

    def redirect(e):
        return [replace[e[0]], 0, 0] if e[0] in replace else e

    for n in nodes:
        n["inputs"] = [redirect(e) for e in n.get("inputs", [])]
    return _to_symbol(graph, nodes, num_out, [redirect(h) for h in heads])


def _channels_last(qsym, params):
    """qsym with its 2-D quantized convolutions in layout NHWC, the layout of oneDNN's int8
    kernels, so that the values between them are not reordered at every layer; their int8
    weights (offline parameters in params, read by that convolution alone) transposed to
    (f, kh, kw, c/g) in the returned params. A `transpose` goes where a NHWC value meets
    another reader (pooling, flatten, dequantize, an output) and where a value of another
    node enters such a convolution, once per value."""
    graph = json.loads(qsym.tojson(remove_amp_cast=False))
    nodes, row, heads = graph["nodes"], graph["node_row_ptr"], graph["heads"]
    readers = _consumers(nodes, heads)

    def data_slots(n):
        """The inputs of a quantized convolution that hold activations: data and the sum."""
        slots = [0]
        if _flag(n.get("attrs", {}), "with_sum", False):
            slots.append(len(n["inputs"]) - 3)
        return slots

    def converts(i, n):
        if n["op"] != "_contrib_quantized_conv":
            return False
        attrs = n.get("attrs", {})
        kernel = [int(k) for k in attrs.get("kernel", "()").strip("()").split(",") if k.strip()]
        w = n["inputs"][1][0]
        return len(kernel) == 2 and attrs.get("layout", "None") in ("None", "NCHW") and \
            nodes[w]["op"] == "null" and nodes[w]["name"] in params and readers.get((w, 0)) == [i]

    last = {i for i, n in enumerate(nodes) if converts(i, n)}
    if not last:
        return qsym, params
    params = dict(params)
    nodes = [dict(n) for n in nodes]
    num_out = [row[k + 1] - row[k] for k in range(len(nodes))]
    made = {}

    def transpose(entry, axes, tag):
        key = (entry[0], entry[1], axes)
        if key not in made:
            nodes.append({"op": "transpose", "name": "%s_%s" % (nodes[entry[0]]["name"], tag),
                          "attrs": {"axes": str(axes)}, "inputs": [[entry[0], entry[1], 0]]})
            num_out.append(1)
            made[key] = [len(nodes) - 1, 0, 0]
        return made[key]

    def is_last(entry):
        return entry[0] in last and entry[1] == 0

    for i in range(len(nodes)):
        n = nodes[i]
        if n["op"] == "null":
            continue
        slots = data_slots(n) if i in last else []
        inputs = []
        for k, e in enumerate(n.get("inputs", [])):
            if k in slots and not is_last(e):
                e = transpose(e, (0, 2, 3, 1), "nhwc")
            elif k not in slots and is_last(e):
                e = transpose(e, (0, 3, 1, 2), "nchw")
            inputs.append(e)
        n["inputs"] = inputs
        if i in last:
            n["attrs"] = dict(n.get("attrs", {}), layout="NHWC")
            w = nodes[n["inputs"][1][0]]["name"]
            params[w] = ndarray.array(params[w].asnumpy().transpose(0, 2, 3, 1), dtype=params[w].dtype)
    heads = [transpose(h, (0, 3, 1, 2), "nchw") if is_last(h) else h for h in heads]
    return _to_symbol(graph, nodes, num_out, heads), params


def _quantize_params(qsym, params, th_dict):
    """The arguments of qsym from the float params: `<name>_quantize` is `name` quantized to
    int8 over its own range (with `_quantize_min`/`_quantize_max`), or over each output
    channel's range for the weights of channel-wise layers; other parameters are kept;
    `<value>_min`/`<value>_max` arguments take calibrated ranges from th_dict."""
    quantized = {}
    per_channel = _channel_wise_weights(qsym)
    for name in qsym.list_arguments():
        if name in per_channel and name[:-len("_quantize")] in params:
            data, qmin, qmax = _quantize_per_channel(params[name[:-len("_quantize")]])
            quantized[name], quantized[name + "_min"], quantized[name + "_max"] = data, qmin, qmax
        elif name.endswith("_quantize") and name[:-len("_quantize")] in params:
            value = params[name[:-len("_quantize")]]
            lo, hi = float(ndarray.min(value).asscalar()), float(ndarray.max(value).asscalar())
            data, qmin, qmax = ndarray.contrib.quantize_v2(value, out_type="int8", min_calib_range=lo,
                                                           max_calib_range=hi)
            quantized[name], quantized[name + "_min"], quantized[name + "_max"] = data, qmin, qmax
        elif name in params:
            quantized[name] = params[name]
        elif name.endswith("_min") and name[:-4] in th_dict:
            quantized[name] = ndarray.array([th_dict[name[:-4]][0]])
        elif name.endswith("_max") and name[:-4] in th_dict:
            quantized[name] = ndarray.array([th_dict[name[:-4]][1]])
    return quantized


# ------------------------------------------------------------------ BatchNorm folding

def _fold_batch_norm(sym, arg_params, aux_params):
    """sym with each inference BatchNorm that alone reads a Convolution's output folded into
    that convolution's weights and bias (new arrays; the originals are left alone); the
    BatchNorm's parameters drop out."""
    graph = json.loads(sym.tojson(remove_amp_cast=False))
    nodes, row, heads = graph["nodes"], graph["node_row_ptr"], graph["heads"]
    readers = _consumers(nodes, heads)
    arg_params, aux_params = dict(arg_params), dict(aux_params)
    names = {n["name"] for n in nodes}
    replace = {}  # BatchNorm index -> its Convolution's index
    extra = []
    for i, bn in enumerate(nodes):
        if bn["op"] != "BatchNorm" or int(bn.get("attrs", {}).get("axis", 1)) != 1:
            continue
        src = bn["inputs"][0]
        conv = nodes[src[0]]
        if conv["op"] != "Convolution" or readers.get((src[0], 0)) != [i]:
            continue
        if any(readers.get((i, k)) for k in range(1, row[i + 1] - row[i])):
            continue
        gamma, beta, mean, var = (nodes[e[0]]["name"] for e in bn["inputs"][1:5])
        weight = nodes[conv["inputs"][1][0]]["name"]
        no_bias = _flag(conv.get("attrs", {}), "no_bias", False)
        bias = None if no_bias else nodes[conv["inputs"][2][0]]["name"]
        if weight not in arg_params or (bias is not None and bias not in arg_params) or \
                beta not in arg_params or gamma not in arg_params or mean not in aux_params or var not in aux_params:
            continue
        a = bn.get("attrs", {})
        g = np.ones(arg_params[gamma].shape, np.float32) if _flag(a, "fix_gamma", True) else \
            arg_params[gamma].asnumpy()
        scale = g / np.sqrt(aux_params[var].asnumpy() + float(a.get("eps", 1e-3)))
        w = arg_params[weight].asnumpy()
        b = np.zeros(w.shape[0], np.float32) if bias is None else arg_params[bias].asnumpy()
        arg_params[weight] = ndarray.array(w * scale.reshape((-1,) + (1,) * (w.ndim - 1)))
        new_bias = (b - aux_params[mean].asnumpy()) * scale + arg_params[beta].asnumpy()
        if bias is None:
            bias = conv["name"] + "_bias"
            while bias in names:
                bias += "_folded"
            names.add(bias)
            extra.append((src[0], bias))
        arg_params[bias] = ndarray.array(new_bias.astype(np.float32))
        conv.setdefault("attrs", {})["no_bias"] = "False"
        replace[i] = src[0]
    if not replace:
        return sym, arg_params, aux_params
    new_nodes, num_out = list(nodes), [row[i + 1] - row[i] for i in range(len(nodes))]
    for conv_index, bias in extra:
        new_nodes.append({"op": "null", "name": bias, "attrs": {}, "inputs": []})
        num_out.append(1)
        new_nodes[conv_index] = dict(nodes[conv_index], inputs=nodes[conv_index]["inputs"][:2] +
                                     [[len(new_nodes) - 1, 0, 0]])

    def redirect(e):
        return [replace[e[0]], 0, 0] if e[0] in replace else e

    for k, n in enumerate(new_nodes):
        new_nodes[k] = dict(n, inputs=[redirect(e) for e in n.get("inputs", [])])
    folded = _to_symbol(graph, new_nodes, num_out, [redirect(h) for h in heads])
    used = set(folded.list_arguments()) | set(folded.list_auxiliary_states())
    return (folded, {k: v for k, v in arg_params.items() if k in used},
            {k: v for k, v in aux_params.items() if k in used})


# ------------------------------------------------------------------ calibration

class CalibrationCollector:
    """The base of the collectors of float values for calibration (MXNet 2's name; 1.9's
    collectors share no base). `collect(name, arr)` is an executor monitor callback;
    `post_collect()` returns the ranges, {name: (min, max)}. A collector of one's own passed to
    quantize_graph / quantize_net_v2 with calib_mode='customize' subclasses it."""

    def __init__(self, include_layer=None, logger=None):
        self.include_layer = include_layer
        self.logger = logger
        self.min_max_dict = {}

    def _wanted(self, name):
        return self.include_layer is None or name in self.include_layer

    def collect(self, name, arr):
        """Receives the value `arr` (an NDArray) named `name`."""
        raise NotImplementedError("%s.collect: a collector must say what it keeps of each value"
                                  % type(self).__name__)

    def post_collect(self):
        """The ranges found, {name: (min, max)}."""
        return self.min_max_dict


def combine_histogram(old_hist, arr, new_min, new_max, new_th):
    """old_hist, a (hist, edges, min, max, threshold) tuple over [-threshold, threshold], with
    the values of arr added; a larger new_th widens it by whole bins on both sides, so the old
    counts keep their bins."""
    hist, edges, old_min, old_max, old_th = old_hist
    if new_th <= old_th:
        counts, _ = np.histogram(arr, bins=len(hist), range=(-old_th, old_th))
        return hist + counts, edges, min(old_min, new_min), max(old_max, new_max), old_th
    step = 2.0 * old_th / len(hist)
    grow = int((new_th - old_th) // step + 1)
    th = old_th + grow * step
    counts, edges = np.histogram(arr, bins=len(hist) + 2 * grow, range=(-th, th))
    counts[grow:grow + len(hist)] += hist
    return counts, edges, min(old_min, new_min), max(old_max, new_max), th


def _values(arr):
    return arr.asnumpy() if isinstance(arr, NDArray) else np.asarray(arr)


class _LayerHistogramCollector(CalibrationCollector):
    """Entropy calibration: a histogram of num_bins bins per value over [-t, t] (t its largest
    magnitude so far), widened as larger values come; post_collect gives each the range of
    least KL divergence."""

    def __init__(self, num_bins=8001, include_layer=None, logger=None, quantized_dtype="int8"):
        super().__init__(include_layer, logger)
        self.hist_dict = {}
        self.num_bins = num_bins
        self.quantized_dtype = quantized_dtype

    def collect(self, name, arr):
        if not self._wanted(name):
            return
        arr = _values(arr)
        if self.logger:
            self.logger.debug("Collecting layer %s histogram of shape %s", name, arr.shape)
        lo, hi = float(arr.min()), float(arr.max())
        th = max(abs(lo), abs(hi))
        if name in self.hist_dict:
            self.hist_dict[name] = combine_histogram(self.hist_dict[name], arr, lo, hi, th)
        else:
            hist, edges = np.histogram(arr, bins=self.num_bins, range=(-th, th))
            self.hist_dict[name] = (hist, edges, lo, hi, th)

    def post_collect(self):
        self.min_max_dict = _get_optimal_thresholds(self.hist_dict, self.quantized_dtype, logger=self.logger)
        return self.min_max_dict


class _LayerOutputMinMaxCollector(CalibrationCollector):
    """Naive calibration: the smallest and largest value seen of each value."""

    def __init__(self, quantized_dtype="int8", include_layer=None, logger=None):
        super().__init__(include_layer, logger)
        self.quantized_dtype = quantized_dtype

    def collect(self, name, arr):
        if not self._wanted(name):
            return
        if isinstance(arr, NDArray):
            lo, hi = float(ndarray.min(arr).asscalar()), float(ndarray.max(arr).asscalar())
        else:
            lo, hi = float(np.min(arr)), float(np.max(arr))
        if name in self.min_max_dict:
            old = self.min_max_dict[name]
            self.min_max_dict[name] = (min(old[0], lo), max(old[1], hi))
        else:
            self.min_max_dict[name] = (lo, hi)
        if self.logger:
            self.logger.debug("Collecting layer %s min_range=%f, max_range=%f", name, lo, hi)


def _smooth_distribution(p, eps=0.0001):
    """p with its zeros made eps, taken evenly off the other entries."""
    zeros = p == 0
    nonzeros = p.size - int(zeros.sum())
    if not nonzeros:
        raise ValueError("The discrete probability distribution is malformed. All entries are 0.")
    taken = eps * float(zeros.sum()) / float(nonzeros)
    if taken >= 1.0:
        raise ValueError("cannot smooth a distribution of %d zeros and %d non-zero entries with eps=%g"
                         % (int(zeros.sum()), nonzeros, eps))
    out = p.astype(np.float32) + np.where(zeros, eps, -taken).astype(np.float32)
    if (out <= 0).any():
        raise ValueError("smoothing made an entry non-positive (an entry below %g)" % taken)
    return out


def _get_optimal_threshold(hist_data, quantized_dtype, num_quantized_bins=255):
    """(min, max, threshold, divergence) of one value's histogram: the threshold of least KL
    divergence (uint8 targets of non-negative values use twice the levels on the positive half)."""
    hist, edges, min_val, max_val, _ = hist_data
    if len(hist) % 2 != 1:
        raise ValueError("expected an odd number of histogram bins, got %d" % len(hist))
    if min_val >= 0 and quantized_dtype in ("auto", "uint8"):
        num_quantized_bins = num_quantized_bins * 2 + 1
    threshold, divergence = ndarray.contrib.calibrate_entropy(
        ndarray.array(hist, ctx=cpu()), ndarray.array(edges, ctx=cpu()),
        num_quantized_bins=min(num_quantized_bins, len(hist)))
    return min_val, max_val, threshold.asscalar(), divergence.asscalar()


def _get_optimal_thresholds(hist_dict, quantized_dtype, num_quantized_bins=255, logger=None):
    """{name: (min, max)} from the histograms of hist_dict (which it empties as it goes)."""
    if logger:
        logger.info("Calculating optimal thresholds for quantization using KL divergence with "
                    "num_quantized_bins=%d", num_quantized_bins)
    th_dict = {}
    for name in list(hist_dict):
        lo, hi, th, divergence = _get_optimal_threshold(hist_dict[name], quantized_dtype, num_quantized_bins)
        th_dict[name] = (0.0, th) if lo >= 0 and quantized_dtype in ("auto", "uint8") else (-th, th)
        del hist_dict[name]
        if logger:
            logger.debug("layer=%s, min_val=%f, max_val=%f, th=%f, divergence=%f", name, lo, hi, th, divergence)
    return th_dict


# Executors bound while these are "0" run each node as its own step, so that a monitor sees
# every value (a fused chain or oneDNN region reports only its last output), and keep the
# oneDNN subgraph nodes whole (inlined, their values would bear the inner operators' names).
_FUSION_SWITCHES = ("WEFT_EXEC_FUSE", "WEFT_EXEC_DNNL_FUSE", "WEFT_EXEC_INLINE_SUBGRAPHS")


@contextlib.contextmanager
def _unfused():
    saved = {k: os.environ.get(k) for k in _FUSION_SWITCHES}
    os.environ.update({k: "0" for k in _FUSION_SWITCHES})
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def _monitor(mod, callback):
    execs = list(mod._exec_group.execs)
    for exe in execs:
        exe.set_monitor_callback(callback, monitor_all=True)
    return execs


def _collect_layer_statistics(mod, data, collector, max_num_examples=None, logger=None, max_num_batches=None):
    """Runs data's batches through mod (bound for inference) with collector.collect as its
    monitor (each value once per batch, however many nodes read it); returns the number of
    examples seen."""
    if not isinstance(data, DataIter):
        raise ValueError("Only supports data as a type of DataIter, while received type %s" % type(data).__name__)
    seen = set()

    def once(name, arr):
        if name not in seen:
            seen.add(name)
            collector.collect(name, arr)

    num_batches = num_examples = 0
    if hasattr(data, "reset"):
        data.reset()
    with _unfused():
        for batch in data:
            seen.clear()
            execs = _monitor(mod, once)
            mod.forward(batch, is_train=False)
            if execs != mod._exec_group.execs:
                # The batch's shape re-bound the executors, which came without the monitor.
                seen.clear()
                _monitor(mod, once)
                mod.forward(batch, is_train=False)
            num_batches += 1
            num_examples += batch.data[0].shape[0] - (batch.pad or 0)
            if (max_num_examples is not None and num_examples >= max_num_examples) or \
                    (max_num_batches is not None and num_batches >= max_num_batches):
                break
    _monitor(mod, None)
    if logger is not None:
        logger.info("Collected statistics from %d batches with batch_size=%d", num_batches,
                    getattr(data, "batch_size", 0))
    return num_examples


def _collector(calib_mode, calib_layer, quantized_dtype, logger, custom=None):
    if calib_mode == "entropy":
        return _LayerHistogramCollector(include_layer=calib_layer, logger=logger, quantized_dtype=quantized_dtype)
    if calib_mode == "naive":
        return _LayerOutputMinMaxCollector(quantized_dtype=quantized_dtype, include_layer=calib_layer, logger=logger)
    if calib_mode == "customize" and custom is not None:
        return custom
    raise ValueError("unknown calibration mode %s received, expected `none`, `naive`, `entropy` or `customize` "
                     "(with a LayerOutputCollector)" % (calib_mode,))


def _thresholds(collector, calib_mode, quantized_dtype, logger):
    if calib_mode == "entropy":
        if logger:
            logger.info("Calculating optimal thresholds for quantization")
        return _get_optimal_thresholds(collector.hist_dict, quantized_dtype, logger=logger)
    if calib_mode in ("naive", "customize"):
        post = getattr(collector, "post_collect", None)
        return post() if post is not None else collector.min_max_dict
    raise ValueError("unknown calibration mode %s received, expected `naive`, `entropy` or `customize`"
                     % (calib_mode,))


def _check_names(value, what):
    if value is None:
        return []
    if not isinstance(value, list):
        raise ValueError("%s must be a list of strings representing the names of the %s that will not be "
                         "quantized, while received type %s" % (what, what.split("_")[1], type(value).__name__))
    return value


def _check_ctx(ctx):
    if not isinstance(ctx, Context):
        raise ValueError("currently only supports single ctx, while received %s" % str(ctx))


def quantize_model(sym, arg_params, aux_params, data_names=("data",), label_names=("softmax_label",), ctx=cpu(),
                   excluded_sym_names=None, excluded_op_names=None, calib_mode="entropy", calib_data=None,
                   num_calib_examples=None, quantized_dtype="int8", quantize_mode="smart",
                   quantize_granularity="tensor-wise", logger=None):
    """The int8 model (symbol, arg_params, aux_params) of a float32 one, calibrated on
    calib_data (a DataIter) when calib_mode is 'naive' (min/max of each value) or 'entropy'
    (the range of least KL divergence); with 'none' the quantized operators measure their
    ranges at run time. excluded_sym_names / excluded_op_names keep nodes (by name) or
    operators (by type) in float32; quantized_dtype is the type of quantized data ('int8',
    'uint8', or 'auto': uint8 where the calibrated minimum is >= 0); quantize_mode 'smart'
    quantizes pooling, flatten, concat, relu and additions only between convolutions and fully
    connected layers, 'full' wherever possible; num_calib_examples bounds the examples used."""
    return _quantize_model(sym, arg_params, aux_params, data_names, label_names, ctx, excluded_sym_names,
                           excluded_op_names, calib_mode, calib_data, num_calib_examples, quantized_dtype,
                           quantize_mode, quantize_granularity, logger, fuse=False)


def _quantize_model(sym, arg_params, aux_params, data_names, label_names, ctx, excluded_sym_names, excluded_op_names,
                    calib_mode, calib_data, num_calib_examples, quantized_dtype, quantize_mode, quantize_granularity,
                    logger, fuse):
    excluded_sym_names = _check_names(excluded_sym_names, "excluded_sym_names")
    excluded_op_names = _check_names(excluded_op_names, "excluded_op_names")
    if logger:
        logger.info("Quantizing symbol")
    qsym, calib_layer = _quantize_symbol(sym, ctx, excluded_symbols=excluded_sym_names,
                                         excluded_operators=excluded_op_names, offline_params=list(arg_params),
                                         quantized_dtype=quantized_dtype, quantize_mode=quantize_mode,
                                         quantize_granularity=quantize_granularity, fuse=fuse, logger=logger)
    th_dict = {}
    if calib_mode is not None and calib_mode != "none":
        if calib_mode not in ("naive", "entropy"):
            raise ValueError("unknown calibration mode %s received, expected `none`, `naive`, or `entropy`"
                             % (calib_mode,))
        _check_ctx(ctx)
        if calib_data is None:
            raise ValueError("calib_data must be provided when calib_mode=%s" % calib_mode)
        if not isinstance(calib_data, DataIter):
            raise ValueError("calib_data must be of DataIter type when calib_mode=%s, while received type %s"
                             % (calib_mode, type(calib_data).__name__))
        args = set(sym.list_arguments())
        labels = [n for n in label_names if n in args] if label_names else []
        mod = Module(symbol=sym, data_names=data_names, label_names=labels or None, context=ctx)
        with _unfused():
            if labels and calib_data.provide_label:
                mod.bind(for_training=False, data_shapes=calib_data.provide_data, label_shapes=calib_data.provide_label)
            else:
                mod.bind(for_training=False, data_shapes=calib_data.provide_data)
        mod.set_params(arg_params, aux_params)
        collector = _collector(calib_mode, calib_layer, quantized_dtype, logger)
        num_examples = _collect_layer_statistics(mod, calib_data, collector, num_calib_examples, logger)
        if logger:
            logger.info("Collected layer outputs from FP32 model using %d examples", num_examples)
        th_dict = _thresholds(collector, calib_mode, quantized_dtype, logger)
        qsym = _calibrate_quantized_sym(qsym, th_dict)
        if fuse:
            qsym = _fuse_dequantize(_fuse_requantize(qsym))
    if logger:
        logger.info("Quantizing parameters")
    return qsym, _quantize_params(qsym, arg_params, th_dict), aux_params


def quantize_model_mkldnn(sym, arg_params, aux_params, data_names=("data",), label_names=("softmax_label",),
                          ctx=cpu(), excluded_sym_names=None, excluded_op_names=None, calib_mode="entropy",
                          calib_data=None, num_calib_examples=None, quantized_dtype="int8", quantize_mode="smart",
                          quantize_granularity="tensor-wise", logger=None):
    """quantize_model for the CPU's oneDNN operators, with MXNet's oneDNN fusions: each
    BatchNorm after a Convolution is folded into it, quantized convolutions take over the
    addition (a residual) and relu after them, fully connected layers the relu, and after
    calibration they write 8 bits themselves instead of through a requantize node."""
    _check_ctx(ctx)
    if ctx.device_type != "cpu":
        raise ValueError("quantize_model_mkldnn only support Intel cpu platform with MKL-DNN Backend")
    sym, arg_params, aux_params = _fold_batch_norm(sym, arg_params, aux_params)
    return _quantize_model(sym, arg_params, aux_params, data_names, label_names, ctx, excluded_sym_names,
                           excluded_op_names, calib_mode, calib_data, num_calib_examples, quantized_dtype,
                           quantize_mode, quantize_granularity, logger, fuse=True)


def quantize_graph(sym, arg_params, aux_params, ctx=cpu(), excluded_sym_names=None, excluded_op_names=None,
                   calib_mode="entropy", quantized_dtype="int8", quantize_mode="full",
                   quantize_granularity="tensor-wise", LayerOutputCollector=None, logger=None):
    """The quantized (uncalibrated) symbol, its arguments, aux_params, and a collector for
    calib_mode ('naive', 'entropy', or 'customize' with LayerOutputCollector; None for
    'none'). Fill the collector by running the float32 model with `collector.collect` as the
    executor's monitor (`exe.set_monitor_callback(collector.collect, monitor_all=True)`, on an
    executor bound under `_unfused()` so that fused nodes do not hide values), then pass it to
    calib_graph."""
    return _quantize_graph(sym, arg_params, aux_params, ctx, excluded_sym_names, excluded_op_names, calib_mode,
                           quantized_dtype, quantize_mode, quantize_granularity, LayerOutputCollector, logger,
                           fuse=False)


def _quantize_graph(sym, arg_params, aux_params, ctx, excluded_sym_names, excluded_op_names, calib_mode,
                    quantized_dtype, quantize_mode, quantize_granularity, LayerOutputCollector, logger, fuse):
    excluded_sym_names = _check_names(excluded_sym_names, "excluded_sym_names")
    excluded_op_names = _check_names(excluded_op_names, "excluded_op_names")
    _check_ctx(ctx)
    if logger:
        logger.info("Quantizing graph")
    qsym, calib_layer = _quantize_symbol(sym, ctx, excluded_symbols=excluded_sym_names,
                                         excluded_operators=excluded_op_names, offline_params=list(arg_params),
                                         quantized_dtype=quantized_dtype, quantize_mode=quantize_mode,
                                         quantize_granularity=quantize_granularity, fuse=fuse, logger=logger)
    collector = None
    if calib_mode is not None and calib_mode != "none":
        collector = _collector(calib_mode, calib_layer, quantized_dtype, logger, LayerOutputCollector)
        if calib_mode == "customize" and collector.include_layer is None:
            collector.include_layer = calib_layer
        if logger:
            logger.info("Collector created, please use set_monitor_callback to collect calibration information.")
    if logger:
        logger.info("Quantizing parameters")
    return qsym, _quantize_params(qsym, arg_params, {}), aux_params, collector


def calib_graph(qsym, arg_params, aux_params, collector, calib_mode="entropy", quantized_dtype="int8",
                logger=logging):
    """qsym calibrated with the ranges of a filled collector (see quantize_graph), and its
    arguments from the float32 arg_params; returns (symbol, arg_params, aux_params)."""
    if calib_mode is None or calib_mode == "none":
        raise ValueError("please set calibration mode to naive or entropy.")
    th_dict = _thresholds(collector, calib_mode, quantized_dtype, logger)
    qsym = _calibrate_quantized_sym(qsym, th_dict)
    if logger:
        logger.info("Quantizing parameters")
    return qsym, _quantize_params(qsym, arg_params, th_dict), aux_params


class _DataIterWrapper(DataIter):
    """A DataIter over any iterable of batches (a Gluon DataLoader): each batch an array or a
    tuple/list of arrays, the first `num_inputs` of which are the network's inputs."""

    def __init__(self, calib_data, num_inputs=None):
        super().__init__()
        self._data = calib_data
        try:
            first = next(iter(calib_data))
        except TypeError as e:
            raise TypeError("calib_data is not a valid iterator. {}".format(e))
        first = list(first) if isinstance(first, (list, tuple)) else [first]
        self._num = len(first) if num_inputs is None else num_inputs
        names = ["data"] if self._num == 1 else ["data%d" % i for i in range(self._num)]
        self.provide_data = [DataDesc(n, tuple(x.shape)) for n, x in zip(names, first[:self._num])]
        self.provide_label = []
        self.batch_size = first[0].shape[0]
        self.reset()

    def reset(self):
        self._iter = iter(self._data)

    def next(self):
        batch = next(self._iter)
        batch = list(batch) if isinstance(batch, (list, tuple)) else [batch]
        return DataBatch(data=[b if isinstance(b, NDArray) else ndarray.array(b) for b in batch[:self._num]])


def _as_data_iter(calib_data, num_inputs=None):
    """calib_data as a DataIter and its provide_data."""
    if isinstance(calib_data, DataIter):
        return calib_data, calib_data.provide_data
    calib_data = _DataIterWrapper(calib_data, num_inputs)
    return calib_data, calib_data.provide_data


def quantize_net_v2(network, quantized_dtype="auto", quantize_mode="full", quantize_granularity="tensor-wise",
                    exclude_layers=None, exclude_layers_match=None, exclude_operators=None, calib_data=None,
                    data_shapes=None, calib_mode="none", num_calib_examples=None, ctx=cpu(),
                    LayerOutputCollector=None, logger=None, num_calib_batches=None):
    """A quantized SymbolBlock from a float32 HybridBlock. calib_data: a DataIter or any
    iterable of batches (a DataLoader; the network's inputs first); data_shapes (DataDesc or
    shapes) when there is none. exclude_layers names nodes, exclude_layers_match substrings of
    node names, exclude_operators operator types to keep in float32. num_calib_examples or
    num_calib_batches (MXNet 2's option) bound the calibration. On the CPU each BatchNorm
    after a Convolution is folded into it first."""
    if logger:
        logger.info("Export HybridBlock")
    _check_ctx(ctx)
    network.hybridize()
    if data_shapes is not None:
        data_shapes = [d if isinstance(d, DataDesc) else
                       DataDesc("data" if len(data_shapes) == 1 else "data%d" % i, tuple(d))
                       for i, d in enumerate(data_shapes)]
    if calib_data is not None:
        calib_data, dshapes = _as_data_iter(calib_data, len(data_shapes) if data_shapes else None)
        data_shapes = data_shapes or dshapes
    if not data_shapes:
        raise ValueError("data_shapes required")
    inputs = [ndarray.zeros(d.shape, ctx=ctx) for d in data_shapes]
    # As MXNet: inputs the network does not take (a DataLoader's labels) are dropped.
    while True:
        try:
            network(*inputs)
            break
        except TypeError:
            if len(inputs) <= 1:
                raise
            inputs.pop()
            data_shapes = data_shapes[:len(inputs)]
    if isinstance(calib_data, _DataIterWrapper) and len(calib_data.provide_data) != len(inputs):
        calib_data = _DataIterWrapper(calib_data._data, len(inputs))

    from ..model import load_checkpoint
    with tempfile.TemporaryDirectory() as tmp:
        prefix = os.path.join(tmp, "net")
        network.export(prefix, epoch=0)
        symnet, args, auxs = load_checkpoint(prefix, 0)
    data_names = [n for n in symnet.list_arguments() if n not in args and n not in auxs]
    data_shapes = [DataDesc(n, d.shape) for n, d in zip(data_names, data_shapes)]

    exclude_layers = list(exclude_layers or [])
    for pattern in exclude_layers_match or []:
        exclude_layers += [n["name"] for n in json.loads(symnet.tojson(remove_amp_cast=False))["nodes"]
                           if n["op"] != "null" and pattern in n["name"]]
    if logger:
        logger.info("These layers have been excluded %s", exclude_layers)
    fuse = ctx.device_type == "cpu"
    if fuse:
        symnet, args, auxs = _fold_batch_norm(symnet, args, auxs)

    qsym, qarg_params, aux_params, collector = _quantize_graph(
        symnet, args, auxs, ctx, exclude_layers, list(exclude_operators or []), calib_mode, quantized_dtype,
        quantize_mode, quantize_granularity, LayerOutputCollector, logger, fuse)

    if calib_mode is not None and calib_mode != "none":
        if calib_data is None:
            raise ValueError("calib_data must be provided when calib_mode=%s" % calib_mode)
        mod = Module(symbol=symnet, context=ctx, data_names=data_names, label_names=None)
        with _unfused():
            mod.bind(for_training=False, data_shapes=data_shapes)
        mod.set_params(args, auxs, allow_missing=False, force_init=True)
        num_examples = _collect_layer_statistics(mod, calib_data, collector, num_calib_examples, logger,
                                                 max_num_batches=num_calib_batches)
        if logger:
            logger.info("Collected layer output values from FP32 model using %d examples", num_examples)
        qsym, qarg_params, aux_params = calib_graph(qsym=qsym, arg_params=args, aux_params=auxs,
                                                    collector=collector, calib_mode=calib_mode,
                                                    quantized_dtype=quantized_dtype, logger=logger)
        if fuse:
            qsym = _fuse_dequantize(_fuse_requantize(qsym))
    if fuse:
        qsym, qarg_params = _channels_last(qsym, qarg_params)

    from ..gluon import SymbolBlock
    net = SymbolBlock(qsym, [symbol.var(n) for n in data_names])
    params = net.collect_params()
    for name, p in params.items():
        p._load_init(qarg_params[name] if name in qarg_params else aux_params[name], ctx)
    return net


def quantize_net(network, quantized_dtype="auto", quantize_mode="full", exclude_layers=None,
                 exclude_layers_match=None, exclude_operators=None, calib_data=None, data_shapes=None,
                 calib_mode="none", num_calib_examples=None, ctx=cpu(), logger=None):
    """quantize_net_v2 with tensor-wise ranges (deprecated in MXNet after 2.0)."""
    warnings.warn("WARNING: This will be deprecated after MXNet 2.0, please use quantize_net_v2.")
    return quantize_net_v2(network=network, quantized_dtype=quantized_dtype, quantize_mode=quantize_mode,
                           quantize_granularity="tensor-wise", exclude_layers=exclude_layers,
                           exclude_layers_match=exclude_layers_match, exclude_operators=exclude_operators,
                           calib_data=calib_data, data_shapes=data_shapes, calib_mode=calib_mode,
                           num_calib_examples=num_calib_examples, ctx=ctx, LayerOutputCollector=None, logger=logger)
