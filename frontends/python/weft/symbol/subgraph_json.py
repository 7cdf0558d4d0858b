"""weft.symbol.subgraph_json: MXNet's JSON for control-flow nodes.

MXNet 1.9 writes `contrib.foreach`, `while_loop` and `cond` as nodes of op `_foreach`,
`_while_loop` and `_cond` whose `subgraphs` field holds the body graphs, with attributes that
locate each subgraph input among the node's inputs. Weft runs them as `Custom` nodes
(`_weft_foreach`, ...) carrying the bodies as JSON strings (see control_flow.py). These
functions translate between the two on the JSON text, so `tojson`/`save` write MXNet's form
and `load_json`/`load` read it. A body variable is renamed after what feeds it: `__data<k>__`,
`__state<k>__` or `__var<k>__` for the loop's own inputs, `__in<k>__` for node input k."""
import json


_WEFT_OPS = ("_weft_foreach", "_weft_while_loop", "_weft_cond")


def _tuple(values):
    return "[" + ",".join(str(v) for v in values) + "]"


def _parse_tuple(text):
    text = text.strip().strip("[]()")
    return [int(v) for v in text.split(",") if v.strip()]


def _arg_names(graph):
    return [graph["nodes"][i]["name"] for i in graph["arg_nodes"]]


def _renamed(graph, mapping):
    graph = json.loads(json.dumps(graph))
    for i in graph["arg_nodes"]:
        node = graph["nodes"][i]
        node["name"] = mapping.get(node["name"], node["name"])
    return graph


def _locs(graph, position_of):
    """Where each argument of `graph` comes from among the node's inputs, or None when an
    argument is not among them."""
    locs = [position_of.get(n) for n in _arg_names(graph)]
    return None if any(p is None for p in locs) else locs


# ------------------------------------------------------------------------------ Weft -> MXNet
def _foreach_to_mxnet(node, attrs):
    nd, ns, no = int(attrs["num_data"]), int(attrs["num_states"]), int(attrs["num_outputs"])
    free = json.loads(attrs["free"])
    body = json.loads(attrs["body"])
    names = _arg_names(body)
    data = ["__data%d__" % i for i in range(nd)]
    states = ["__state%d__" % i for i in range(ns)]
    if any(n not in names for n in data + states):
        return None  # MXNet requires the body to read every data array and state
    return {"op": "_foreach", "name": node["name"], "inputs": node["inputs"],
            "attrs": {"num_args": str(len(node["inputs"]) + 1), "num_outputs": str(no + ns),
                      "num_out_data": str(no), "in_data_locs": _tuple(names.index(n) for n in data),
                      "in_state_locs": _tuple(names.index(n) for n in states),
                      "remain_locs": _tuple(names.index(n) for n in free)},
            "subgraphs": [body]}


def _while_to_mxnet(node, attrs):
    nv, no = int(attrs["num_vars"]), int(attrs["num_outputs"])
    free = json.loads(attrs["free"])
    cond, func = json.loads(attrs["cond"]), json.loads(attrs["func"])
    position = {"__var%d__" % i: i for i in range(nv)}
    position.update({n: nv + i for i, n in enumerate(free)})
    cond_locs, func_locs = _locs(cond, position), _locs(func, position)
    func_names = _arg_names(func)
    if cond_locs is None or func_locs is None or any("__var%d__" % i not in func_names for i in range(nv)):
        return None
    return {"op": "_while_loop", "name": node["name"], "inputs": node["inputs"],
            "attrs": {"num_args": str(len(node["inputs"]) + 2), "num_outputs": str(no + nv),
                      "num_out_data": str(no), "max_iterations": attrs["max_iterations"],
                      "cond_input_locs": _tuple(cond_locs), "func_input_locs": _tuple(func_locs),
                      "func_var_locs": _tuple(func_names.index("__var%d__" % i) for i in range(nv))},
            "subgraphs": [cond, func]}


def _cond_to_mxnet(node, attrs):
    free = json.loads(attrs["free"])
    graphs = [json.loads(attrs[k]) for k in ("pred", "then_graph", "else_graph")]
    position = {n: i for i, n in enumerate(free)}
    locs = [_locs(g, position) for g in graphs]
    if any(loc is None for loc in locs):
        return None
    return {"op": "_cond", "name": node["name"], "inputs": node["inputs"],
            "attrs": {"num_args": str(len(node["inputs"]) + 3), "num_outputs": attrs["num_outputs"],
                      "cond_input_locs": _tuple(locs[0]), "then_input_locs": _tuple(locs[1]),
                      "else_input_locs": _tuple(locs[2])},
            "subgraphs": graphs}


def to_mxnet(text):
    """Weft's JSON with its control-flow Custom nodes written as MXNet's subgraph nodes."""
    if not any(op in text for op in _WEFT_OPS):
        return text
    graph = json.loads(text)
    convert = {"_weft_foreach": _foreach_to_mxnet, "_weft_while_loop": _while_to_mxnet, "_weft_cond": _cond_to_mxnet}
    for i, node in enumerate(graph["nodes"]):
        attrs = node.get("attrs", {})
        if node["op"] == "Custom" and attrs.get("op_type") in convert:
            new = convert[attrs["op_type"]](node, attrs)
            if new is not None:
                graph["nodes"][i] = new
    return json.dumps(graph, indent=2)


# ------------------------------------------------------------------------------ MXNet -> Weft
def _foreach_from_mxnet(node, attrs, sub):
    body = sub[0]
    names = _arg_names(body)
    data, states, remain = (_parse_tuple(attrs[k]) for k in ("in_data_locs", "in_state_locs", "remain_locs"))
    mapping = {names[loc]: "__data%d__" % k for k, loc in enumerate(data)}
    mapping.update({names[loc]: "__state%d__" % k for k, loc in enumerate(states)})
    free = ["__in%d__" % (len(data) + len(states) + k) for k in range(len(remain))]
    mapping.update({names[loc]: f for loc, f in zip(remain, free)})
    # the node's inputs are data, states, then the remaining inputs in remain_locs order
    num_out_data = int(attrs["num_out_data"])
    return {"op_type": "_weft_foreach", "body": json.dumps(_renamed(body, mapping)), "num_data": str(len(data)),
            "num_states": str(len(states)), "num_outputs": str(num_out_data), "free": json.dumps(free)}, None


def _while_from_mxnet(node, attrs, sub):
    cond, func = sub
    cond_locs, func_locs, var_locs = (_parse_tuple(attrs[k]) for k in
                                      ("cond_input_locs", "func_input_locs", "func_var_locs"))
    var_inputs = [func_locs[v] for v in var_locs]  # node input of each loop variable
    others = [k for k in range(len(node["inputs"])) if k not in var_inputs]
    name_of = {k: "__var%d__" % j for j, k in enumerate(var_inputs)}
    name_of.update({k: "__in%d__" % k for k in others})
    cond = _renamed(cond, {n: name_of[k] for n, k in zip(_arg_names(cond), cond_locs)})
    func = _renamed(func, {n: name_of[k] for n, k in zip(_arg_names(func), func_locs)})
    return {"op_type": "_weft_while_loop", "cond": json.dumps(cond), "func": json.dumps(func),
            "num_vars": str(len(var_inputs)), "num_outputs": attrs["num_out_data"],
            "max_iterations": attrs["max_iterations"], "free": json.dumps(["__in%d__" % k for k in others])}, \
        var_inputs + others


def _cond_from_mxnet(node, attrs, sub):
    graphs = []
    for g, key in zip(sub, ("cond_input_locs", "then_input_locs", "else_input_locs")):
        graphs.append(_renamed(g, {n: "__in%d__" % k for n, k in zip(_arg_names(g), _parse_tuple(attrs[key]))}))
    n = len(node["inputs"])
    return {"op_type": "_weft_cond", "pred": json.dumps(graphs[0]), "then_graph": json.dumps(graphs[1]),
            "else_graph": json.dumps(graphs[2]), "num_outputs": attrs["num_outputs"],
            "free": json.dumps(["__in%d__" % k for k in range(n)])}, None


def from_mxnet(text):
    """MXNet's JSON with its `_foreach`/`_while_loop`/`_cond` subgraph nodes made Weft's
    control-flow Custom nodes; other nodes (and other JSON) are left as they are."""
    if '"subgraphs"' not in text:
        return text
    graph = json.loads(text)
    convert = {"_foreach": _foreach_from_mxnet, "_while_loop": _while_from_mxnet, "_cond": _cond_from_mxnet}
    for node in graph["nodes"]:
        if "subgraphs" not in node or node["op"] not in convert:
            continue  # the core's reader takes the oneDNN fusions (_sg_mkldnn_*) and refuses the rest
        sub = node.pop("subgraphs")
        attrs = node.get("attrs", node.get("attr", node.get("param", {})))
        new_attrs, order = convert[node["op"]](node, attrs, sub)
        if order is not None:
            node["inputs"] = [node["inputs"][k] for k in order]
        node["op"], node["attrs"] = "Custom", new_attrs
        node.pop("attr", None)
        node.pop("param", None)
    return json.dumps(graph)
