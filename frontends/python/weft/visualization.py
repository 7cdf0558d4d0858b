"""Pictures and summaries of symbolic graphs (`mx.viz`): `print_summary` prints a table of
the layers with their output shapes and parameter counts, `plot_network` returns a
`graphviz.Digraph` of the graph drawn as MXNet draws it (one coloured box per operator,
weights hidden, edges labelled with shapes when the input shapes are given).

`tools/plot_symbol.py` renders a saved `-symbol.json` file to SVG or PNG from the command
line.
"""
import collections
import json
import warnings

from .base import WeftError

__all__ = ["print_summary", "plot_network"]

# Variables that hold learned or running state rather than data; plot_network hides them
# (hide_weights) and print_summary counts them as parameters of the layer they feed.
_WEIGHT_SUFFIXES = ("_weight", "_bias", "_beta", "_gamma", "_moving_var", "_moving_mean", "_running_var",
                    "_running_mean")

# MXNet's palette, one colour per family of operators.
_COLORS = ("#8dd3c7", "#fb8072", "#ffffb3", "#bebada", "#80b1d3", "#fdb462", "#b3de69", "#fccde5")


def _graph(symbol):
    if not hasattr(symbol, "tojson"):
        raise TypeError("expected a Symbol, got %s" % type(symbol).__name__)
    conf = json.loads(symbol.tojson(remove_amp_cast=False))
    return conf["nodes"], {h[0] for h in conf["heads"]}


def _is_weight(name):
    return name.endswith(_WEIGHT_SUFFIXES)


def _shapes(symbol, shape, dtype=None):
    """{output or variable name: shape} of every value of the graph, or {} without shapes."""
    if not shape:
        return {}
    internals = symbol.get_internals()
    known = dict(shape)
    arg_shapes, out_shapes, aux_shapes = internals.infer_shape(**known)
    if out_shapes is None:
        raise WeftError("cannot infer the shapes of every layer from %s" % (known,))
    shapes = dict(zip(internals.list_outputs(), out_shapes))
    shapes.update(zip(internals.list_arguments(), arg_shapes))
    shapes.update(zip(internals.list_auxiliary_states(), aux_shapes))
    return shapes


def _value_shape(shapes, node, index=0):
    """The shape of output `index` of `node` (names as list_outputs() gives them), or None."""
    if node["op"] == "null":
        return shapes.get(node["name"])
    return shapes.get("%s_output" % node["name"]) if index == 0 and "%s_output" % node["name"] in shapes \
        else shapes.get("%s_output%d" % (node["name"], index))


def print_summary(symbol, shape=None, line_length=120, positions=(.44, .64, .74, 1.)):
    """Prints one row per layer: its name and operator, its output shape (without the
    batch axis), its parameter count (the elements of the weights, biases and scales it
    reads) and the layers it reads; then the total.

    Parameters
    ----------
    symbol : Symbol
    shape : dict, optional
        Input shapes ({"data": (1, 3, 224, 224)}); without it no shape or count is known.
    line_length : int
        Width of the table.
    positions : tuple of float
        Right edges of the four columns, as fractions of line_length (or in characters when
        the last is above 1).
    """
    nodes, heads = _graph(symbol)
    shapes = _shapes(symbol, shape)
    # Running statistics are state the layer updates, not parameters it learns.
    state = set(symbol.list_auxiliary_states())
    if positions[-1] <= 1:
        positions = [int(line_length * p) for p in positions]
    columns = ["Layer (type)", "Output Shape", "Param #", "Previous Layer"]

    def row(fields):
        line = ""
        for i, f in enumerate(fields):
            line += str(f)
            line = line[:positions[i]]
            line += " " * (positions[i] - len(line))
        print(line)

    print("_" * line_length)
    row(columns)
    print("=" * line_length)
    total = 0
    shown = [i for i, n in enumerate(nodes) if n["op"] != "null" or (i in heads or not _is_weight(n["name"]))]
    for k, i in enumerate(shown):
        node = nodes[i]
        op = node["op"]
        previous, params = [], 0
        for entry in node["inputs"]:
            src = nodes[entry[0]]
            if src["op"] == "null" and _is_weight(src["name"]):
                dims = shapes.get(src["name"]) if src["name"] not in state else None
                if dims:
                    count = 1
                    for d in dims:
                        count *= d
                    params += count
            else:
                previous.append(src["name"])
        total += params
        out = _value_shape(shapes, node)
        out_text = "x".join(str(d) for d in out[1:]) if out else ""
        first = previous[0] if previous else ""
        row(["%s(%s)" % (node["name"], op), out_text, params, first])
        for name in previous[1:]:
            row(["", "", "", name])
        print(("=" if k == len(shown) - 1 else "_") * line_length)
    print("Total params: %d" % total)
    print("_" * line_length)


def _tuple(text):
    return tuple(int(v) for v in text.strip("()[] ").replace(" ", "").split(",") if v)


def _label_and_color(node):
    op, attrs, name = node["op"], node.get("attrs", {}), node["name"]
    if op == "null":
        return name, _COLORS[0]
    if op == "Convolution":
        kernel = "x".join(str(v) for v in _tuple(attrs.get("kernel", "()")))
        stride = "x".join(str(v) for v in _tuple(attrs.get("stride", "(1,)"))) if "stride" in attrs else "1"
        return "Convolution\\n%s/%s, %s" % (kernel, stride, attrs.get("num_filter", "")), _COLORS[1]
    if op == "FullyConnected":
        return "FullyConnected\\n%s" % attrs.get("num_hidden", ""), _COLORS[1]
    if op == "BatchNorm":
        return op, _COLORS[3]
    if op in ("Activation", "LeakyReLU"):
        return "%s\\n%s" % (op, attrs.get("act_type", "leaky" if op == "LeakyReLU" else "")), _COLORS[2]
    if op == "Pooling":
        if attrs.get("global_pool", "False") in ("True", "true", "1"):
            return "Pooling\\n%s, global" % attrs.get("pool_type", "max"), _COLORS[4]
        kernel = "x".join(str(v) for v in _tuple(attrs.get("kernel", "()")))
        stride = "x".join(str(v) for v in _tuple(attrs.get("stride", "(1,)"))) if "stride" in attrs else "1"
        return "Pooling\\n%s, %s/%s" % (attrs.get("pool_type", "max"), kernel, stride), _COLORS[4]
    if op in ("Concat", "Flatten", "Reshape", "reshape", "concat"):
        return op, _COLORS[5]
    if op in ("Softmax", "SoftmaxOutput", "softmax", "log_softmax", "SoftmaxActivation"):
        return op, _COLORS[6]
    return op, _COLORS[7]


def plot_network(symbol, title="plot", save_format="pdf", shape=None, dtype=None, node_attrs=None,
                 hide_weights=True):
    """The graph of `symbol` as a `graphviz.Digraph`: one box per operator labelled with its
    main parameters and coloured by family, variables as ovals (weights hidden unless
    hide_weights=False), edges from each input to its reader, labelled with the value's
    shape (without the batch axis) when `shape` ({input name: shape}) is given. Render it
    with `.render()`, or view it in a notebook.
    """
    try:
        from graphviz import Digraph
    except ImportError as e:
        raise ImportError("plot_network draws with the graphviz Python package (Debian: python3-graphviz)") from e
    nodes, heads = _graph(symbol)
    # Graphviz draws one box per name: nodes sharing a name (two layers both called 'fc'
    # make two fc_weight variables) merge into one and can draw a cycle. MXNet warns.
    counts = collections.Counter(node["name"] for node in nodes)
    repeated = sorted(name for name, n in counts.items() if n > 1)
    if repeated:
        warnings.warn("There are multiple variables with the same name in your graph, this may "
                      "result in cyclic graph. Repeated names: " + ",".join(repeated), RuntimeWarning)
    shapes = _shapes(symbol, shape, dtype)
    style = {"shape": "box", "fixedsize": "true", "width": "1.3", "height": "0.8034", "style": "filled"}
    style.update(node_attrs or {})
    dot = Digraph(name=title, format=save_format)
    hidden = set()
    for i, node in enumerate(nodes):
        attrs = dict(style)
        if node["op"] == "null":
            if hide_weights and _is_weight(node["name"]) and i not in heads:
                hidden.add(i)
                continue
            attrs["shape"] = "oval"
        label, color = _label_and_color(node)
        attrs["fillcolor"] = color
        dot.node(name=node["name"], label=label, **attrs)
    for i, node in enumerate(nodes):
        if node["op"] == "null":
            continue
        for entry in node["inputs"]:
            if entry[0] in hidden:
                continue
            src = nodes[entry[0]]
            edge = {"dir": "back", "arrowtail": "open"}
            value = _value_shape(shapes, src, entry[1])
            if value:
                edge["label"] = "x".join(str(d) for d in value[1:])
            dot.edge(tail_name=node["name"], head_name=src["name"], **edge)
    return dot
