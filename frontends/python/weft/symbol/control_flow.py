"""weft.symbol.control_flow: the Symbol forms of contrib.foreach, while_loop and cond.

Each call traces the user's Python functions once, on placeholder variables, into graphs,
and returns the outputs of one node of the registry operator `_foreach`, `_while_loop` or
`_cond` (core/executor/control_flow.cc), which holds those graphs as its subgraphs, as
MXNet's JSON does. As in MXNet, every node made while a function is traced is marked
(`__subgraph_name__`); the graph is cut where it reads a value computed outside the trace
(an outer operator's output becomes a subgraph input, so it is computed once, outside), and
the node's inputs are the loop's data and states, then those cut values and the variables
the graphs read (weights captured from outside). Its parameters say where each subgraph
input comes from (MXNet's in_data_locs, cond_input_locs, ...). The operator runs the graphs
step by step and has a gradient, so such symbols bind, hybridize, differentiate and save to
MXNet's JSON like any other."""
import json

from ..ndarray.contrib import _regroup, _scalar
from .. import attribute as _attribute
from . import _ops, symbol as _sym
from .symbol import Symbol

# Traces in progress on this thread, for names that differ between a loop and the loops
# traced inside its body, yet are the same each time a block is traced again (hybridize
# compares the graphs of successive traces).
_depth = [0]


class UnusedInputError(ValueError, AssertionError):
    """A loop body that does not read one of the loop's own inputs. MXNet raises an
    AssertionError there, which scripts catch; it is a ValueError as well."""


def _flatten(nested, what):
    if isinstance(nested, Symbol):
        return [nested], None
    if nested is None:
        return [], 0
    if not isinstance(nested, (list, tuple)):
        raise ValueError("%s must be a Symbol or a nested list of Symbols, got %s" % (what, type(nested).__name__))
    flat, fmt = [], []
    for item in nested:
        f, sub = _flatten(item, what)
        flat.extend(f)
        fmt.append(sub)
    return flat, fmt


def _as_list(x):
    return [x] if isinstance(x, Symbol) else list(x)


class _Trace:
    """A `with` block tracing one function: nodes made inside get the trace's mark;
    `placeholders` makes the variables standing for the loop's own inputs."""

    def __init__(self, name):
        # The mark is unique, as MXNet makes it (the enclosing trace's mark, "$", the name, a
        # count kept in AttrScope._subgraph_names); it is dropped from the subgraph once cut.
        # The variables the trace makes are named after the depth instead, so that tracing
        # the same code again gives the same graph.
        outer = _attribute.current().get(None).get("__subgraph_name__", "")
        unique = outer + "$" + name if outer else name
        self.mark = unique + str(_attribute.AttrScope._subgraph_names[unique])
        _attribute.AttrScope._subgraph_names[unique] += 1
        self.prefix = "%s%d" % (name, _depth[0])
        self._scope = _attribute.AttrScope(__subgraph_name__=self.mark)

    def __enter__(self):
        _depth[0] += 1
        self._scope.__enter__()
        return self

    def __exit__(self, *exc):
        self._scope.__exit__(*exc)
        _depth[0] -= 1

    def placeholders(self, what, n):
        names = ["__%s_%s%d__" % (self.prefix, what, i) for i in range(n)]
        return names, [_sym.var(name) for name in names]

    def graph(self, outputs):
        """The traced outputs as one graph whose outputs are all operators made in the trace
        (an identity where a function returns an input or an outer value, as MXNet does)."""
        inputs = set(_sym.Group(outputs).list_inputs()) if outputs else set()
        fixed = []
        for o in outputs:
            if o.name in inputs or o.list_attr().get("__subgraph_name__") != self.mark:
                with _attribute.AttrScope(__subgraph_name__=self.mark):
                    o = _ops.get("identity")(o)
            fixed.append(o)
        return _sym.Group(fixed)


def _outer_entries(graph, nodes, row_ptr):
    """The Symbol of each (node position, output index) of `graph`'s JSON nodes: its
    internals list each node's visible outputs, node after node."""
    internals = graph.get_internals()
    entries, k = {}, 0
    for i, node in enumerate(nodes):
        for idx in range(row_ptr[i + 1] - row_ptr[i]):
            if k >= len(internals):
                break
            sym = internals[k]
            if sym.name != node["name"]:
                break
            entries[(i, idx)] = sym
            k += 1
    return entries


def _cut(graph, trace):
    """`graph` with every value computed outside `trace` replaced by a new input variable,
    and the trace's marks dropped: returns the graph and, for each such input, its name and
    the outer Symbol."""
    g = json.loads(graph.tojson(remove_amp_cast=False))
    nodes = g["nodes"]
    inside = [n["op"] == "null" or n.get("attrs", {}).get("__subgraph_name__") == trace.mark for n in nodes]
    for n in nodes:
        n.get("attrs", {}).pop("__subgraph_name__", None)
    outer = _outer_entries(graph, nodes, g["node_row_ptr"]) if not all(inside) else {}
    kept, cut_ids, cuts, new_nodes = {}, {}, [], []
    for i, node in enumerate(nodes):
        if not inside[i]:
            continue
        inputs = []
        for entry in node["inputs"]:
            src, idx = entry[0], entry[1]
            if src in kept:
                inputs.append([kept[src], idx, 0])
                continue
            if (src, idx) not in cut_ids:
                name = "__%s_cut%d__" % (trace.prefix, len(cuts))
                cut_ids[(src, idx)] = len(new_nodes)
                new_nodes.append({"op": "null", "name": name, "inputs": []})
                cuts.append((name, outer[(src, idx)]))
            inputs.append([cut_ids[(src, idx)], 0, 0])
        node = dict(node, inputs=inputs)
        if "control_deps" in node:
            node["control_deps"] = [kept[d] for d in node["control_deps"] if d in kept]
        kept[i] = len(new_nodes)
        new_nodes.append(node)
    cut = {"nodes": new_nodes, "arg_nodes": [i for i, n in enumerate(new_nodes) if n["op"] == "null"],
           "heads": [[kept[h[0]], h[1], 0] for h in g["heads"]], "attrs": g.get("attrs", {})}
    return _sym.load_json(json.dumps(cut)), cuts


def _free_inputs(graphs, bound):
    """The inputs of the cut graphs besides the placeholders named in `bound`, in first-seen
    order, as (name, outer Symbol): a cut value's outer Symbol, or the variable itself (so
    the outer graph shares it). `graphs`: (original graph, cut graph, cuts)."""
    found = {}
    for original, graph, cuts in graphs:
        cut_of = dict(cuts)
        internals = original.get_internals()
        outputs = internals.list_outputs()
        for name in graph.list_inputs():
            if name in bound or name in found:
                continue
            found[name] = cut_of[name] if name in cut_of else internals[outputs.index(name)]
    return list(found.items())


def _input_locs(graph, position):
    """Where each input of `graph` is among the node's inputs (`position`: name -> index)."""
    return [position[name] for name in graph.list_inputs()]


def _tuple(values):
    return "[" + ",".join(str(v) for v in values) + "]"


def foreach(body, data, init_states, name="foreach"):
    """Symbol form of weft.nd.contrib.foreach: `body(data_slice, states)` is traced once on
    placeholder Symbols and runs once per slice along axis 0 of `data` when the graph runs.
    As in MXNet, the body must read every data array and every state."""
    data_flat, _ = _flatten(data, "foreach data")
    state_flat, state_fmt = _flatten(init_states, "foreach init_states")
    if not data_flat:
        raise ValueError("foreach: data must hold at least one Symbol")

    with _Trace(name) as tr:
        data_names, data_ph = tr.placeholders("data", len(data_flat))
        state_names, state_ph = tr.placeholders("state", len(state_flat))
        outs, new_states = body(data_ph[0] if isinstance(data, Symbol) else data_ph,
                                _regroup(state_ph, state_fmt)[0] if state_flat else init_states)
        out_flat, out_fmt = _flatten(outs, "foreach output")
        new_flat, _ = _flatten(new_states, "foreach states")
        if len(new_flat) != len(state_flat):
            raise ValueError("foreach: body returned %d states, init_states has %d" % (len(new_flat), len(state_flat)))
        original = tr.graph(out_flat + new_flat)
    graph, cuts = _cut(original, tr)
    inputs = graph.list_inputs()
    for what, names in (("data arrays", data_names), ("states", state_names)):
        unused = [i for i, n in enumerate(names) if n not in inputs]
        if unused:
            raise UnusedInputError("foreach: the loop body must read all the %s (as in MXNet); it does not read "
                                   "%s %s" % (what, what, unused))
    free = _free_inputs([(original, graph, cuts)], set(data_names + state_names))
    node = _ops.get("_foreach")(graph, *(data_flat + state_flat + [s for _, s in free]),
                                num_outputs=len(out_flat) + len(state_flat), num_out_data=len(out_flat),
                                in_data_locs=_tuple(inputs.index(n) for n in data_names),
                                in_state_locs=_tuple(inputs.index(n) for n in state_names),
                                remain_locs=_tuple(inputs.index(n) for n, _ in free))
    results = [node[i] for i in range(len(out_flat) + len(state_flat))]
    outputs = _regroup(results[:len(out_flat)], out_fmt)[0] if out_flat else []
    states = _regroup(results[len(out_flat):], state_fmt)[0] if state_flat else init_states
    return outputs, states


def while_loop(cond, func, loop_vars, max_iterations=None, name="while_loop"):
    """Symbol form of weft.nd.contrib.while_loop: `cond(*loop_vars)` and
    `func(*loop_vars) -> (step_output, new_loop_vars)` are traced once; the step outputs are
    stacked into max_iterations rows (zeros past the last step)."""
    if max_iterations is None:
        raise ValueError("max_iterations should be specified")
    max_iterations = _scalar(max_iterations, int, "max_iterations")
    single = isinstance(loop_vars, Symbol)
    var_flat, _ = _flatten(_as_list(loop_vars), "while_loop loop_vars")
    if not var_flat:
        raise ValueError("loop_vars should contain at least one element")
    with _Trace(name + "_cond") as ctr:
        names, ph = ctr.placeholders("var", len(var_flat))
        cond_sym = cond(*ph)
        if not isinstance(cond_sym, Symbol):
            raise ValueError("while_loop: cond must return a Symbol, got %s" % type(cond_sym).__name__)
        cond_orig = ctr.graph([cond_sym])
    with _Trace(name + "_func") as ftr:
        # func reads the same placeholders as cond: they stand for the same loop variables
        step_output, new_vars = func(*ph)
        out_flat, out_fmt = _flatten([] if step_output is None else step_output, "while_loop step output")
        new_flat, _ = _flatten([] if new_vars is None else _as_list(new_vars), "while_loop loop_vars")
        if len(new_flat) != len(var_flat):
            raise ValueError("while_loop: func returned %d loop variables, expected %d (the length of loop_vars "
                             "must stay the same)" % (len(new_flat), len(var_flat)))
        func_orig = ftr.graph(out_flat + new_flat)
    cond_g, cond_cuts = _cut(cond_orig, ctr)
    func_g, func_cuts = _cut(func_orig, ftr)
    func_inputs = func_g.list_inputs()
    unused = [i for i, n in enumerate(names) if n not in func_inputs]
    if unused:
        raise UnusedInputError("while_loop: func must read every loop variable (as in MXNet); it does not read "
                               "loop_vars %s" % unused)
    free = _free_inputs([(cond_orig, cond_g, cond_cuts), (func_orig, func_g, func_cuts)], set(names))
    position = {n: i for i, n in enumerate(names + [n for n, _ in free])}
    node = _ops.get("_while_loop")(cond_g, func_g, *(var_flat + [s for _, s in free]),
                                   num_outputs=len(out_flat) + len(var_flat), num_out_data=len(out_flat),
                                   max_iterations=max_iterations,
                                   cond_input_locs=_tuple(_input_locs(cond_g, position)),
                                   func_input_locs=_tuple(_input_locs(func_g, position)),
                                   func_var_locs=_tuple(func_inputs.index(n) for n in names))
    results = [node[i] for i in range(len(out_flat) + len(var_flat))]
    outputs = _regroup(results[:len(out_flat)], out_fmt)[0] if out_flat else []
    final = results[len(out_flat):]
    return outputs, (final[0] if single else final)


def cond(pred, then_func, else_func, name="cond"):
    """Symbol form of weft.nd.contrib.cond: `pred` is a Symbol with one element; the
    branches are functions of no argument, traced once, and only the branch that `pred`
    selects runs. As in MXNet, `pred` itself is computed outside the node, which reads it
    through an identity subgraph."""
    if not isinstance(pred, Symbol):
        raise ValueError("cond: pred must be a Symbol, got %s" % type(pred).__name__)
    graphs, flats = [], []
    for kind, fn in (("pred", lambda: pred), ("then", then_func), ("else", else_func)):
        with _Trace("%s_%s" % (name, kind)) as tr:
            flat, fmt = _flatten(fn(), "cond %s output" % kind)
            original = tr.graph(flat)
        graphs.append((original,) + _cut(original, tr))
        flats.append((flat, fmt))
    if len(flats[0][0]) != 1:
        raise ValueError("cond: pred must be a single Symbol")
    then_flat, then_fmt = flats[1]
    if len(then_flat) != len(flats[2][0]) or not then_flat:
        raise ValueError("cond: then_func and else_func must return the same number of Symbols (at least one), "
                         "got %d and %d" % (len(then_flat), len(flats[2][0])))
    free = _free_inputs(graphs, set())
    position = {n: i for i, (n, _) in enumerate(free)}
    subs = [g for _, g, _ in graphs]
    node = _ops.get("_cond")(*subs, *[s for _, s in free], num_outputs=len(then_flat),
                             cond_input_locs=_tuple(_input_locs(subs[0], position)),
                             then_input_locs=_tuple(_input_locs(subs[1], position)),
                             else_input_locs=_tuple(_input_locs(subs[2], position)))
    return _regroup([node[i] for i in range(len(then_flat))], then_fmt)[0]
