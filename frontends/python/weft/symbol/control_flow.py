"""weft.symbol.control_flow: the Symbol forms of contrib.foreach, while_loop and cond.

Each call traces the user's Python functions once into a body graph and returns the outputs
of one `Custom` node that holds the body as JSON (op_type `_weft_foreach`, `_weft_while_loop`
or `_weft_cond`). Its inputs are the loop's data and states followed by every free variable
the body reads (weights captured from outside). The node's operator runs the body through
an executor per step; its backward replays the steps in reverse, recomputing each step's
forward from the loop state kept by the forward, so gradients reach the data, the initial
states and the captured variables. A graph holding these nodes saves to and loads from JSON
like any other; it is Weft's own encoding, not MXNet's `subgraphs` field."""
import json

import numpy as np


from .. import operator
from ..ndarray.contrib import _regroup, _scalar
from ..ndarray import _ops as _nd_ops, ndarray as _nd
from . import _ops, symbol as _sym
from .symbol import Symbol


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


def _placeholders(prefix, n):
    return ["__%s%d__" % (prefix, i) for i in range(n)]


def _free_variables(graphs, bound):
    """The arguments the traced graphs read besides their placeholders, in first-seen
    order, with the variable symbols themselves (so the outer graph shares them)."""
    names, syms = [], []
    for g in graphs:
        internals = g.get_internals()
        if g.list_auxiliary_states():
            raise ValueError("control flow: operators with auxiliary states (%s) are not supported in a loop body"
                             % g.list_auxiliary_states())
        for name in g.list_arguments():
            if name not in bound and name not in names:
                names.append(name)
                syms.append(internals[name + "_output"] if name + "_output" in internals.list_outputs()
                            else internals[name])
    return names, syms


class _Graph(object):
    """A traced body bound for one input signature; runs forward and backward per step."""

    def __init__(self, sym, ctx):
        self.sym, self.ctx, self.exe, self.key = sym, ctx, None, None
        self.args = set(sym.list_arguments())

    def _bind(self, feed, need_grad):
        # a placeholder the body never reads is not an argument of its graph
        feed = {k: v for k, v in feed.items() if k in self.args}
        key = tuple((k, v.shape, v.dtype) for k, v in sorted(feed.items())) + (need_grad,)
        if key != self.key:
            args = {k: v.copy() for k, v in feed.items()}
            grads = {k: _nd.zeros(v.shape, ctx=self.ctx, dtype=v.dtype) for k, v in feed.items()} if need_grad \
                else None
            self.exe = self.sym.bind(self.ctx, args, args_grad=grads, grad_req="write" if need_grad else "null")
            self.key = key
        for k, v in feed.items():
            v.copyto(self.exe.arg_dict[k])
        return self.exe

    def forward(self, feed, is_train=False):
        return self._bind(feed, False).forward(is_train=is_train)

    def backward(self, feed, head_grads):
        """Gradients of every fed array (zeros for those the graph does not read)."""
        exe = self._bind(feed, True)
        outs = exe.forward(is_train=True)
        exe.backward([g if g is not None else _nd.zeros(o.shape, ctx=self.ctx, dtype=o.dtype)
                      for g, o in zip(head_grads, outs)])
        return {k: exe.grad_dict[k].copy() if k in self.args else _nd.zeros(v.shape, ctx=self.ctx, dtype=v.dtype)
                for k, v in feed.items()}


def _parse_graph(text):
    return _sym.load_json(text)


def _infer_shapes(graph, feed, names):
    """Output shapes of the graph and the shapes of the named arguments, from those known."""
    args = set(graph.list_arguments())
    arg_shapes, out_shapes, _ = graph.infer_shape_partial(**{k: v for k, v in feed.items() if v and k in args})
    shape_of = dict(zip(graph.list_arguments(), arg_shapes))
    return [tuple(s) for s in out_shapes], [tuple(shape_of.get(n, feed.get(n)) or ()) for n in names]


def _infer_types(graph, feed, names):
    """Output dtypes of the graph and the dtypes of the named arguments (float32 when
    nothing says otherwise, as for any variable)."""
    known = {k: v for k, v in feed.items() if v is not None and k in graph.list_arguments()}
    arg_types, out_types, _ = graph.infer_type(**known)
    if arg_types is None:
        arg_types, out_types, _ = graph.infer_type(**dict(known, **{
            n: np.float32 for n in graph.list_arguments() if n not in known}))
    type_of = dict(zip(graph.list_arguments(), arg_types))
    return list(out_types), [type_of.get(n, feed.get(n, np.float32)) for n in names]


# --------------------------------------------------------------------------------- foreach
class _ForeachProp(operator.CustomOpProp):
    def __init__(self, body, num_data, num_states, num_outputs, free):
        super().__init__(need_top_grad=True)
        self.body_json, self.body = body, _parse_graph(body)
        self.nd, self.ns, self.no = int(num_data), int(num_states), int(num_outputs)
        self.free = json.loads(free)

    def list_arguments(self):
        return ["data%d" % i for i in range(self.nd)] + ["state%d" % i for i in range(self.ns)] + self.free

    def list_outputs(self):
        return ["output%d" % i for i in range(self.no)] + ["state%d_out" % i for i in range(self.ns)]

    def _feed_names(self):
        return _placeholders("data", self.nd) + _placeholders("state", self.ns) + self.free

    def infer_shape(self, in_shape):
        steps = in_shape[0][0]
        slices = [tuple(s[1:]) for s in in_shape[:self.nd]]
        feed = dict(zip(self._feed_names(), slices + [tuple(s) for s in in_shape[self.nd:]]))
        out_shapes, filled = _infer_shapes(self.body, feed, self._feed_names())
        outs = [(steps,) + s for s in out_shapes[:self.no]] + out_shapes[self.no:]
        return list(in_shape[:self.nd]) + filled[self.nd:], outs, []

    def infer_type(self, in_type):
        feed = dict(zip(self._feed_names(), in_type))
        out_types, filled = _infer_types(self.body, feed, self._feed_names())
        return filled, out_types, []

    def create_operator(self, ctx, in_shapes, in_dtypes):
        return _ForeachOp(self, ctx)


class _ForeachOp(operator.CustomOp):
    def __init__(self, prop, ctx):
        super().__init__()
        self.p, self.graph = prop, _Graph(prop.body, ctx)

    def _feed(self, in_data, t, states):
        p = self.p
        values = [d[t] for d in in_data[:p.nd]] + list(states) + list(in_data[p.nd + p.ns:])
        return dict(zip(p._feed_names(), values))

    def forward(self, is_train, req, in_data, out_data, aux):
        p = self.p
        steps = in_data[0].shape[0]
        states = list(in_data[p.nd:p.nd + p.ns])
        self.saved_states = []
        per_step = []
        for t in range(steps):
            self.saved_states.append([s.copy() for s in states])
            outs = self.graph.forward(self._feed(in_data, t, states), is_train)
            per_step.append([o.copy() for o in outs[:p.no]])
            states = [o.copy() for o in outs[p.no:]]
        for k in range(p.no):
            self.assign(out_data[k], req[k], _nd_ops.get("stack")(*[s[k] for s in per_step], axis=0)
                        if steps else out_data[k])
        for j in range(p.ns):
            self.assign(out_data[p.no + j], req[p.no + j], states[j])

    def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
        p = self.p
        steps = in_data[0].shape[0]
        names = p._feed_names()
        state_grads = list(out_grad[p.no:])
        data_grads = [[None] * steps for _ in range(p.nd)]
        free_grads = [None] * len(p.free)
        for t in reversed(range(steps)):
            grads = self.graph.backward(self._feed(in_data, t, self.saved_states[t]),
                                        [g[t] for g in out_grad[:p.no]] + state_grads)
            for i in range(p.nd):
                data_grads[i][t] = grads[names[i]]
            state_grads = [grads[names[p.nd + j]] for j in range(p.ns)]
            for i, n in enumerate(p.free):
                free_grads[i] = grads[n] if free_grads[i] is None else free_grads[i] + grads[n]
        for i in range(p.nd):
            self.assign(in_grad[i], req[i], _nd_ops.get("stack")(*data_grads[i], axis=0))
        for j in range(p.ns):
            self.assign(in_grad[p.nd + j], req[p.nd + j], state_grads[j])
        for i, g in enumerate(free_grads):
            k = p.nd + p.ns + i
            self.assign(in_grad[k], req[k], g if g is not None else _nd.zeros(in_grad[k].shape,
                                                                                 dtype=in_grad[k].dtype))


def foreach(body, data, init_states, name="foreach"):
    """Symbol form of weft.nd.contrib.foreach: `body(data_slice, states)` is traced once on
    placeholder Symbols and runs once per slice along axis 0 of `data` when the graph runs."""
    data_flat, _ = _flatten(data, "foreach data")
    state_flat, state_fmt = _flatten(init_states, "foreach init_states")
    if not data_flat:
        raise ValueError("foreach: data must hold at least one Symbol")
    data_ph = [_sym.var(n) for n in _placeholders("data", len(data_flat))]
    state_ph = [_sym.var(n) for n in _placeholders("state", len(state_flat))]
    outs, new_states = body(data_ph[0] if isinstance(data, Symbol) else data_ph,
                            _regroup(state_ph, state_fmt)[0] if state_flat else init_states)
    out_flat, out_fmt = _flatten(outs, "foreach output")
    new_flat, _ = _flatten(new_states, "foreach states")
    if len(new_flat) != len(state_flat):
        raise ValueError("foreach: body returned %d states, init_states has %d" % (len(new_flat), len(state_flat)))
    graph = _sym.Group(out_flat + new_flat)
    free, free_syms = _free_variables([graph], set(_placeholders("data", len(data_flat)) +
                                                   _placeholders("state", len(state_flat))))
    node = _ops.get("Custom")(*(data_flat + state_flat + free_syms), op_type="_weft_foreach", name=name,
                       body=graph.tojson(), num_data=len(data_flat), num_states=len(state_flat),
                       num_outputs=len(out_flat), free=json.dumps(free))
    results = [node[i] for i in range(len(out_flat) + len(state_flat))]
    outputs = _regroup(results[:len(out_flat)], out_fmt)[0] if out_flat else []
    states = _regroup(results[len(out_flat):], state_fmt)[0] if state_flat else init_states
    return outputs, states




# ------------------------------------------------------------------------------ while_loop
class _WhileLoopProp(operator.CustomOpProp):
    def __init__(self, cond, func, num_vars, num_outputs, max_iterations, free):
        super().__init__(need_top_grad=True)
        self.cond, self.func = _parse_graph(cond), _parse_graph(func)
        self.nv, self.no, self.max_iter = int(num_vars), int(num_outputs), int(max_iterations)
        self.free = json.loads(free)

    def list_arguments(self):
        return ["var%d" % i for i in range(self.nv)] + self.free

    def list_outputs(self):
        return ["output%d" % i for i in range(self.no)] + ["var%d_out" % i for i in range(self.nv)]

    def _feed_names(self):
        return _placeholders("var", self.nv) + self.free

    def infer_shape(self, in_shape):
        feed = dict(zip(self._feed_names(), [tuple(s) for s in in_shape]))
        out_shapes, filled = _infer_shapes(self.func, feed, self._feed_names())
        _, filled_cond = _infer_shapes(self.cond, feed, self._feed_names())
        filled = [a if all(d > 0 for d in a) else b for a, b in zip(filled, filled_cond)]
        outs = [(self.max_iter,) + s for s in out_shapes[:self.no]] + out_shapes[self.no:]
        return filled, outs, []

    def infer_type(self, in_type):
        out_types, filled = _infer_types(self.func, dict(zip(self._feed_names(), in_type)), self._feed_names())
        return filled, out_types, []

    def create_operator(self, ctx, in_shapes, in_dtypes):
        return _WhileLoopOp(self, ctx)


class _WhileLoopOp(operator.CustomOp):
    def __init__(self, prop, ctx):
        super().__init__()
        self.p, self.ctx = prop, ctx
        self.cond, self.func = _Graph(prop.cond, ctx), _Graph(prop.func, ctx)

    def _feed(self, in_data, loop_vars):
        return dict(zip(self.p._feed_names(), list(loop_vars) + list(in_data[self.p.nv:])))

    def forward(self, is_train, req, in_data, out_data, aux):
        p = self.p
        loop_vars = list(in_data[:p.nv])
        self.saved_vars, per_step = [], []
        while len(per_step) < p.max_iter and \
                _scalar(self.cond.forward(self._feed(in_data, loop_vars))[0], bool, "the return value of cond"):
            self.saved_vars.append([v.copy() for v in loop_vars])
            outs = self.func.forward(self._feed(in_data, loop_vars), is_train)
            per_step.append([o.copy() for o in outs[:p.no]])
            loop_vars = [o.copy() for o in outs[p.no:]]
        for k in range(p.no):
            # MXNet leaves the rows past the last step undefined; they are zeros here.
            full = _nd.zeros(out_data[k].shape, ctx=self.ctx, dtype=out_data[k].dtype)
            if per_step:
                full[:len(per_step)] = _nd_ops.get("stack")(*[s[k] for s in per_step], axis=0)
            self.assign(out_data[k], req[k], full)
        for j in range(p.nv):
            self.assign(out_data[p.no + j], req[p.no + j], loop_vars[j])

    def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
        p = self.p
        names = p._feed_names()
        var_grads = list(out_grad[p.no:])
        free_grads = [_nd.zeros(a.shape, ctx=self.ctx, dtype=a.dtype) for a in in_data[p.nv:]]
        for t in reversed(range(len(self.saved_vars))):
            grads = self.func.backward(self._feed(in_data, self.saved_vars[t]),
                                       [g[t] for g in out_grad[:p.no]] + var_grads)
            var_grads = [grads[names[j]] for j in range(p.nv)]
            free_grads = [acc + grads[n] for acc, n in zip(free_grads, p.free)]
        for k, g in enumerate(var_grads + free_grads):
            self.assign(in_grad[k], req[k], g)


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
    names = _placeholders("var", len(var_flat))
    ph = [_sym.var(n) for n in names]
    cond_sym = cond(*ph)
    if not isinstance(cond_sym, Symbol):
        raise ValueError("while_loop: cond must return a Symbol, got %s" % type(cond_sym).__name__)
    step_output, new_vars = func(*ph)
    out_flat, out_fmt = _flatten([] if step_output is None else step_output, "while_loop step output")
    new_flat, _ = _flatten([] if new_vars is None else _as_list(new_vars), "while_loop loop_vars")
    if len(new_flat) != len(var_flat):
        raise ValueError("while_loop: func returned %d loop variables, expected %d (the length of loop_vars must "
                         "stay the same)" % (len(new_flat), len(var_flat)))
    func_sym = _sym.Group(out_flat + new_flat)
    free, free_syms = _free_variables([cond_sym, func_sym], set(names))
    node = _ops.get("Custom")(*(var_flat + free_syms), op_type="_weft_while_loop", name=name,
                              cond=cond_sym.tojson(), func=func_sym.tojson(), num_vars=len(var_flat),
                              num_outputs=len(out_flat), max_iterations=max_iterations, free=json.dumps(free))
    results = [node[i] for i in range(len(out_flat) + len(var_flat))]
    outputs = _regroup(results[:len(out_flat)], out_fmt)[0] if out_flat else []
    final = results[len(out_flat):]
    return outputs, (final[0] if single else final)


# ------------------------------------------------------------------------------------ cond
class _CondProp(operator.CustomOpProp):
    def __init__(self, pred, then_graph, else_graph, num_outputs, free):
        super().__init__(need_top_grad=True)
        self.pred = _parse_graph(pred)
        self.branches = [_parse_graph(then_graph), _parse_graph(else_graph)]
        self.no, self.free = int(num_outputs), json.loads(free)

    def list_arguments(self):
        return list(self.free)

    def list_outputs(self):
        return ["output%d" % i for i in range(self.no)]

    def infer_shape(self, in_shape):
        feed = dict(zip(self.free, [tuple(s) for s in in_shape]))
        then_shapes, filled = _infer_shapes(self.branches[0], feed, self.free)
        else_shapes, _ = _infer_shapes(self.branches[1], feed, self.free)
        if then_shapes != else_shapes:
            raise ValueError("cond: then_func gives shapes %s but else_func gives %s" % (then_shapes, else_shapes))
        return filled, then_shapes, []

    def infer_type(self, in_type):
        out_types, filled = _infer_types(self.branches[0], dict(zip(self.free, in_type)), self.free)
        return filled, out_types, []

    def create_operator(self, ctx, in_shapes, in_dtypes):
        return _CondOp(self, ctx)


class _CondOp(operator.CustomOp):
    def __init__(self, prop, ctx):
        super().__init__()
        self.p = prop
        self.pred = _Graph(prop.pred, ctx)
        self.branches = [_Graph(g, ctx) for g in prop.branches]

    def forward(self, is_train, req, in_data, out_data, aux):
        feed = dict(zip(self.p.free, in_data))
        self.taken = 0 if _scalar(self.pred.forward(feed)[0], bool, "pred") else 1
        outs = self.branches[self.taken].forward(feed, is_train)
        for k in range(self.p.no):
            self.assign(out_data[k], req[k], outs[k])

    def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
        grads = self.branches[self.taken].backward(dict(zip(self.p.free, in_data)), list(out_grad))
        for k, n in enumerate(self.p.free):
            self.assign(in_grad[k], req[k], grads[n])


def cond(pred, then_func, else_func, name="cond"):
    """Symbol form of weft.nd.contrib.cond: `pred` is a Symbol with one element; the
    branches are functions of no argument, traced once, and only the branch that `pred`
    selects runs."""
    if not isinstance(pred, Symbol):
        raise ValueError("cond: pred must be a Symbol, got %s" % type(pred).__name__)
    then_flat, then_fmt = _flatten(then_func(), "cond then_func output")
    else_flat, _ = _flatten(else_func(), "cond else_func output")
    if len(then_flat) != len(else_flat) or not then_flat:
        raise ValueError("cond: then_func and else_func must return the same number of Symbols (at least one), "
                         "got %d and %d" % (len(then_flat), len(else_flat)))
    then_sym, else_sym = _sym.Group(then_flat), _sym.Group(else_flat)
    free, free_syms = _free_variables([pred, then_sym, else_sym], set())
    node = _ops.get("Custom")(*free_syms, op_type="_weft_cond", name=name, pred=pred.tojson(),
                              then_graph=then_sym.tojson(), else_graph=else_sym.tojson(),
                              num_outputs=len(then_flat), free=json.dumps(free))
    return _regroup([node[i] for i in range(len(then_flat))], then_fmt)[0]


operator.register("_weft_foreach")(_ForeachProp)
operator.register("_weft_while_loop")(_WhileLoopProp)
operator.register("_weft_cond")(_CondProp)
