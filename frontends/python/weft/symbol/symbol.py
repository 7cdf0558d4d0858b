"""The Symbol class: a handle on a graph of operators and variables (weft_symbol_t)."""
import json
import logging
import warnings

import numpy as np

from ..base import _api, MXNetError, ERR_NOT_FOUND as _STATUS_NOT_FOUND
from .. import attribute as _attribute
from .. import util as _util
from ..ndarray.ndarray import dtype_id, _ID_TO_NP

# A variable's "__storage_type__" attribute holds MXNet's storage type code.
_STYPE_OF_CODE = {"0": "default", "1": "row_sparse", "2": "csr"}

__all__ = ["Symbol", "Variable", "var", "Group", "load", "load_json", "fromjson"]

_ARGUMENTS, _OUTPUTS, _AUXILIARY, _INPUTS = 0, 1, 2, 3


# The default node names of Symbol's operators: MXNet's come from the internal functions its
# operators call (_Plus, _MulScalar, ...), lowercased, and scripts find nodes by them
# (example/ssd's feature layers '_plus12', '_plus15' of a ResNet).
_OPERATOR_NAMES = {"elemwise_add": "_plus", "_plus_scalar": "_plusscalar", "elemwise_sub": "_minus",
                   "_minus_scalar": "_minusscalar", "_rminus_scalar": "_rminusscalar", "elemwise_mul": "_mul",
                   "_mul_scalar": "_mulscalar", "elemwise_div": "_div", "_div_scalar": "_divscalar",
                   "_rdiv_scalar": "_rdivscalar", "_mod_scalar": "_modscalar", "_rmod_scalar": "_rmodscalar",
                   "_power_scalar": "_powerscalar"}


def _may_hold_amp_cast(text):
    """Whether a graph's JSON may hold amp_cast/amp_multicast nodes: a cheap test that spares
    tojson and save the rewrite for the graphs without them."""
    return '"amp_cast"' in text or '"amp_multicast"' in text


def _np_type(type_id):
    """The numpy type of a type id, as MXNet gives it: bfloat16, a structured dtype whose
    scalar type (np.void) would name no dtype, is given as the dtype itself."""
    d = _ID_TO_NP[type_id]
    return d if d.names else d.type


class Symbol:
    """A symbolic graph: the outputs of operator nodes and variables."""

    __slots__ = ("handle", "__weakref__")

    def __init__(self, handle):
        self.handle = handle

    def __del__(self):
        if getattr(self, "handle", None) is not None:
            _api.weft_symbol_free(self.handle)
            self.handle = None

    # ------------------------------------------------------------- structure
    @property
    def name(self):
        """The node's name, or None for a grouped symbol."""
        return _api.weft_symbol_get_name(self.handle) or None

    def _list(self, kind):
        return json.loads(_api.weft_symbol_list(self.handle, kind))

    def list_arguments(self):
        return self._list(_ARGUMENTS)

    def list_outputs(self):
        return self._list(_OUTPUTS)

    def list_auxiliary_states(self):
        return self._list(_AUXILIARY)

    def list_inputs(self):
        return self._list(_INPUTS)

    def __len__(self):
        return len(self.list_outputs())

    def __iter__(self):
        return (self[i] for i in range(len(self)))

    def __getitem__(self, index):
        if isinstance(index, str):
            names = self.list_outputs()
            if index not in names:
                raise ValueError("Symbol has no output named %r; its outputs are %s" % (index, names))
            index = names.index(index)
        if not isinstance(index, int):
            raise TypeError("Symbol index must be an int or an output name, got %r" % (index,))
        return Symbol(_api.weft_symbol_get_output(self.handle, index))

    def get_internals(self):
        return Symbol(_api.weft_symbol_get_internals(self.handle))

    def get_children(self):
        """The inputs of this symbol's nodes, or None for a variable."""
        children = Symbol(_api.weft_symbol_get_children(self.handle))
        return children if len(children) else None

    def __copy__(self):
        return Symbol(_api.weft_symbol_copy(self.handle))

    def __deepcopy__(self, memo):
        return self.__copy__()

    copy = __copy__

    # ------------------------------------------------------------- composition
    def __call__(self, *args, **kwargs):
        """A copy of this symbol with its free variables replaced (positionally in
        list_arguments order, or by name)."""
        s = self.__copy__()
        s._compose(*args, **kwargs)
        return s

    def _compose(self, *args, **kwargs):
        name = kwargs.pop("name", None)
        if args and kwargs:
            raise TypeError("compose takes positional or keyword inputs, not both")
        for v in list(args) + list(kwargs.values()):
            if not isinstance(v, Symbol):
                raise TypeError("compose: inputs must be Symbols, got %s" % type(v).__name__)
        if kwargs:
            keys = list(kwargs)
            _api.weft_symbol_compose(self.handle, name, len(keys), keys, [kwargs[k].handle for k in keys])
        else:
            _api.weft_symbol_compose(self.handle, name, len(args), None, [a.handle for a in args])

    # ------------------------------------------------------------- attributes
    def attr(self, key):
        """The attribute `key` of this (one-output) symbol's node, or None; MXNet's hidden
        keys may be named without their underscores (attr('ctx_group'))."""
        value, found = _api.weft_symbol_get_attr(self.handle, key)
        if not found and _attribute.hidden_key(key) != key:
            value, found = _api.weft_symbol_get_attr(self.handle, _attribute.hidden_key(key))
        return value if found else None

    def list_attr(self, recursive=False):
        if recursive:
            raise ValueError("list_attr(recursive=True) is attr_dict() in MXNet 1.x; use that")
        return dict(self.attr_dict().get(self.name, {})) if self.name else {}

    def attr_dict(self):
        """{node name: {key: value}} of every node; MXNet's hidden keys, stored as
        "__lr_mult__", are listed under both names, as MXNet lists them."""
        nodes = json.loads(_api.weft_symbol_attr_dict(self.handle))
        for attrs in nodes.values():
            for key, value in list(attrs.items()):
                plain = key[2:-2]
                if key.startswith("__") and key.endswith("__") and _attribute.hidden_key(plain) == key:
                    attrs.setdefault(plain, value)
        return nodes

    def _set_attr(self, **kwargs):
        for k, v in kwargs.items():
            if not isinstance(v, str):
                raise ValueError("attribute values must be strings, got %r for %r" % (v, k))
            _api.weft_symbol_set_attr(self.handle, k, v)

    # ------------------------------------------------------------- inference
    def _known(self, args, kwargs, convert):
        names = self.list_arguments()
        if len(args) > len(names):
            raise ValueError("expected at most %d positional values (for %s), got %d" % (len(names), names, len(args)))
        known = {}
        for n, v in zip(names, args):
            if v is not None:
                known[n] = convert(v)
        for n, v in kwargs.items():
            if v is not None:
                known[n] = convert(v)
        return json.dumps(known)

    def _infer_shape(self, args, kwargs):
        np_shape = _util.is_np_shape()

        def convert(shape):
            # MXNet 1.x writes unknown dims as 0; under NumPy shape semantics 0 is a
            # zero-size dim and -1 (or None) is unknown.
            if np_shape:
                return [-1 if d is None else int(d) for d in shape]
            return [-1 if d in (0, None) else int(d) for d in shape]
        return json.loads(_api.weft_symbol_infer_shape(self.handle, self._known(args, kwargs, convert)))

    def infer_shape(self, *args, **kwargs):
        """(arg_shapes, out_shapes, aux_shapes) from known input shapes; three Nones when
        some shape cannot be inferred."""
        r = self._infer_shape(args, kwargs)
        if not r["complete"]:
            return None, None, None
        return tuple([tuple(s) for s in r[k]] for k in ("arguments", "outputs", "auxiliary"))

    def infer_shape_partial(self, *args, **kwargs):
        """As infer_shape, with what stays unknown as () (unknown rank) or 0 dims; under NumPy
        shape semantics (weft.util.np_shape) as None and -1 dims."""
        r = self._infer_shape(args, kwargs)
        if _util.is_np_shape():
            fix = lambda s: None if s is None else tuple(s)  # noqa: E731
        else:
            fix = lambda s: () if s is None else tuple(0 if d < 0 else d for d in s)  # noqa: E731
        return tuple([fix(s) for s in r[k]] for k in ("arguments", "outputs", "auxiliary"))

    def infer_type(self, *args, **kwargs):
        """(arg_types, out_types, aux_types) as numpy types; three Nones when incomplete."""
        r = json.loads(_api.weft_symbol_infer_type(self.handle, self._known(args, kwargs, dtype_id)))
        if not r["complete"]:
            return None, None, None
        return tuple([_np_type(t) for t in r[k]] for k in ("arguments", "outputs", "auxiliary"))

    def infer_type_partial(self, *args, **kwargs):
        """As infer_type, but what cannot be inferred is None instead of all three lists
        being None."""
        r = json.loads(_api.weft_symbol_infer_type(self.handle, self._known(args, kwargs, dtype_id)))
        return tuple([None if t < 0 else _np_type(t) for t in r[k]]
                     for k in ("arguments", "outputs", "auxiliary"))

    # ------------------------------------------------------------- binding
    def _arrays(self, values, names, what, allow_missing=False):
        if values is None:
            values = {} if allow_missing else None
        if values is None:
            raise ValueError("bind: %s are required (%s)" % (what, names))
        if isinstance(values, dict):
            # As in MXNet, names the graph does not have are ignored (a loop body that
            # does not read a variable drops it from the arguments; a dict of every
            # parameter of a model binds any part of it).
            missing = [n for n in names if n not in values]
            if missing and not allow_missing:
                # MXNet's wording first, then every missing name
                raise ValueError("bind: key `%s` is missing in `%s` (%s lacks %s)" % (missing[0], what, what, missing))
            return [values.get(n) for n in names]
        values = list(values)
        if len(values) != len(names):
            raise ValueError("bind: Length of %s does not match the number of arguments: expected %d %s (%s), got %d"
                             % (what, len(names), what, names, len(values)))
        return values

    def bind(self, ctx, args, args_grad=None, grad_req="write", aux_states=None, group2ctx=None,
             shared_exec=None):
        """Binds arrays (lists in list_arguments order, or dicts by name) and returns an
        Executor. grad_req is "write", "add", "null", or a list/dict of them. group2ctx
        ({group: Context}) runs the nodes made in `AttrScope(ctx_group=group)` on that
        context; the arrays may then be on several contexts, and values crossing contexts
        are copied automatically (debug_str shows the placement and the copies)."""
        from ..executor import Executor
        from ..context import Context
        if shared_exec is not None:
            raise NotImplementedError("bind: shared_exec is not supported")
        names = self.list_arguments()
        args = self._arrays(args, names, "args")
        grads = self._arrays(args_grad, names, "args_grad", allow_missing=True)
        aux = self._arrays(aux_states or [], self.list_auxiliary_states(), "aux_states")
        if isinstance(grad_req, str):
            reqs = [grad_req if g is not None else "null" for g in grads]
        elif isinstance(grad_req, dict):
            reqs = [grad_req.get(n, "null") if g is not None else "null" for n, g in zip(names, grads)]
        else:
            reqs = list(grad_req)
        ctx = Context(ctx)
        handle = _api.weft_executor_bind_ex(self.handle, ctx._as_tuple(), _group2ctx_json(group2ctx), len(args), args,
                                            grads, reqs, len(aux), aux)
        return Executor(handle, self, ctx, group2ctx, (args, grads, aux))

    def simple_bind(self, ctx, grad_req="write", type_dict=None, stype_dict=None, group2ctx=None,
                    shared_arg_names=None, shared_exec=None, shared_buffer=None, **kwargs):
        """Infers every shape from the given input shapes (and dtypes from type_dict,
        float32 by default), allocates zeroed arrays and gradients, and binds. With
        group2ctx, each variable's arrays are on its ctx_group's context."""
        from ..executor import Executor
        from ..context import Context
        if shared_exec is not None or shared_buffer is not None or shared_arg_names is not None:
            raise NotImplementedError("simple_bind: shared_exec, shared_buffer and shared_arg_names are not supported")
        # As in MXNet, only tuples are shapes: other keywords (MXNet's tests pass the
        # operator's parameters along) are ignored.
        kwargs = {k: v for k, v in kwargs.items() if isinstance(v, (tuple, list))}
        names = self.list_arguments()
        if isinstance(grad_req, (list, tuple)):
            if len(grad_req) != len(names):
                raise ValueError("simple_bind: expected %d grad_req values (%s), got %d"
                                 % (len(names), names, len(grad_req)))
            grad_req = dict(zip(names, grad_req))
        stypes = self._arg_stypes(stype_dict)
        grad_stypes = self._grad_stypes(stypes)
        wants = (lambda n: grad_req != "null") if isinstance(grad_req, str) else \
            (lambda n: grad_req.get(n, "null") != "null")
        if any(t != "default" for t in stypes.values()) or \
                any(t != "default" and wants(n) for n, t in grad_stypes.items()):
            return self._sparse_simple_bind(ctx, grad_req, type_dict, stypes, grad_stypes, kwargs, group2ctx)
        reqs = json.dumps(grad_req) if isinstance(grad_req, dict) else grad_req
        shapes = json.dumps({k: [int(d) for d in v] for k, v in kwargs.items()})
        types = json.dumps({k: dtype_id(v) for k, v in (type_dict or {}).items()})
        ctx = Context(ctx)
        handle = _api.weft_executor_simple_bind(self.handle, ctx._as_tuple(), _group2ctx_json(group2ctx), shapes,
                                                types, reqs)
        return Executor(handle, self, ctx, group2ctx)

    def _arg_stypes(self, stype_dict):
        """Each argument's storage type: the variable's `stype` attribute, then stype_dict."""
        names = self.list_arguments()
        unknown = set(stype_dict or {}) - set(names)
        if unknown:
            raise ValueError("simple_bind: stype_dict names %s, which are not arguments (%s)"
                             % (sorted(unknown), names))
        attrs = self.attr_dict()
        stypes = {}
        for n in names:
            code = attrs.get(n, {}).get("__storage_type__")
            stypes[n] = _STYPE_OF_CODE.get(code, "default")
        for n, t in (stype_dict or {}).items():
            if t not in ("default", "row_sparse", "csr"):
                raise ValueError("simple_bind: stype_dict[%r] must be 'default', 'row_sparse' or 'csr', got %r"
                                 % (n, t))
            stypes[n] = t
        return stypes

    def _grad_stypes(self, stypes):
        """The storage type of each argument's gradient, as MXNet's storage inference of the
        backward graph gives it for the cases sparse models use: row_sparse for a row_sparse
        argument (but dense for the weight of an Embedding without sparse_grad), for the
        weight of an Embedding(sparse_grad=True) and for the dense right
        operand of dot(csr, x) without transposes; the others dense."""
        grads = {n: ("row_sparse" if t == "row_sparse" else "default") for n, t in stypes.items()}
        nodes = json.loads(_api.weft_symbol_to_json(self.handle))["nodes"]

        def variable(entry):
            node = nodes[entry[0]]
            return node["name"] if node["op"] == "null" else None
        for node in nodes:
            attrs = node.get("attrs", {})
            truthy = lambda k: attrs.get(k, "False") in ("True", "true", "1")  # noqa: E731
            if node["op"] == "Embedding" and len(node["inputs"]) > 1:
                # Embedding's backward gives its weight a row_sparse gradient with
                # sparse_grad and a dense one without, whatever the weight's storage.
                weight = variable(node["inputs"][1])
                if weight in grads:
                    grads[weight] = "row_sparse" if truthy("sparse_grad") else "default"
            elif node["op"] == "dot" and not truthy("transpose_a") and not truthy("transpose_b"):
                lhs, rhs = (variable(e) for e in node["inputs"][:2])
                if stypes.get(lhs) == "csr" and stypes.get(rhs) == "default" and rhs in grads:
                    grads[rhs] = "row_sparse"
        return grads

    def _sparse_simple_bind(self, ctx, grad_req, type_dict, stypes, grad_stypes, shapes, group2ctx):
        """simple_bind with some csr or row_sparse argument: the arrays are made here (zeros
        of each storage type, each on its variable's ctx_group's context) and bound; the
        executor runs through the sparse kernels."""
        from ..ndarray import ndarray as _nd
        from ..context import Context
        names = self.list_arguments()
        arg_shapes, _, aux_shapes = self.infer_shape(**shapes)
        if arg_shapes is None:
            raise ValueError("simple_bind: the shapes given (%s) leave some shape of the graph unknown"
                             % sorted(shapes))
        arg_types, _, aux_types = self.infer_type(**{k: v for k, v in (type_dict or {}).items()})
        if arg_types is None:
            arg_types = [np.float32] * len(names)
            aux_types = [np.float32] * len(aux_shapes)
        ctx = Context(ctx)
        attrs = self.attr_dict() if group2ctx else {}

        def where(name):
            # A variable of a group group2ctx does not map stays on ctx, as MXNet's simple_bind has it.
            group = attrs.get(name, {}).get("__ctx_group__")
            return Context(group2ctx[group]) if group in (group2ctx or {}) else ctx

        args = [_nd.zeros(s, ctx=where(n), dtype=t, stype=stypes[n])
                for n, s, t in zip(names, arg_shapes, arg_types)]
        aux = [_nd.zeros(s, ctx=where(n), dtype=t)
               for n, s, t in zip(self.list_auxiliary_states(), aux_shapes, aux_types)]
        if isinstance(grad_req, str):
            reqs = {n: grad_req for n in names}
        else:
            reqs = {n: grad_req.get(n, "null") for n in names}
        grads = {n: _nd.zeros(a.shape, ctx=a.context, dtype=a.dtype, stype=grad_stypes[n])
                 for n, a in zip(names, args) if reqs[n] != "null"}
        return self.bind(ctx, args, args_grad=grads, grad_req=reqs, aux_states=aux, group2ctx=group2ctx)

    def eval(self, ctx=None, **kwargs):
        """Binds the given arrays and runs forward; returns the outputs."""
        from ..context import current_context
        ex = self.bind(ctx or current_context(), kwargs, grad_req="null")
        return ex.forward()

    # ------------------------------------------------------------- files
    def _same_graph(self, other):
        """True when `other` is the same graph (operators, parameters, names, wiring and
        outputs), compared in C++: cheaper than comparing tojson() texts."""
        return bool(_api.weft_symbol_same_graph(self.handle, other.handle))

    def tojson(self, remove_amp_cast=True):
        """MXNet JSON. As in MXNet, the mixed-precision casts (amp_cast, amp_multicast) are
        left out unless remove_amp_cast=False. Under NumPy shape semantics
        (weft.util.np_shape) its top-level attrs say so with "is_np_shape", as MXNet's do
        (MXNet then reads a 0 in the file's shapes as a zero-size dim rather than an unknown
        one)."""
        text = _api.weft_symbol_to_json(self.handle)
        if remove_amp_cast and _may_hold_amp_cast(text):
            plain = self.remove_amp_cast()  # held: its handle dies with it
            text = _api.weft_symbol_to_json(plain.handle)
        if not _util.is_np_shape():
            return text
        graph = json.loads(text)
        graph.setdefault("attrs", {})["is_np_shape"] = ["int", 1]
        return json.dumps(graph, indent=2)

    def save(self, fname, remove_amp_cast=True):
        """Writes the symbol's JSON (tojson) to the file `fname`; as in MXNet, without the
        mixed-precision casts unless remove_amp_cast=False."""
        if _util.is_np_shape():
            with open(fname, "w") as f:
                f.write(self.tojson(remove_amp_cast))
        elif remove_amp_cast and _may_hold_amp_cast(_api.weft_symbol_to_json(self.handle)):
            plain = self.remove_amp_cast()
            _api.weft_symbol_save_file(plain.handle, fname)
        else:
            _api.weft_symbol_save_file(self.handle, fname)

    def _gen_atomic_symbol(self):
        """A new, unconnected symbol of the operator (and attributes) of this symbol's
        first output's node, as MXNet's."""
        graph = json.loads(self.tojson(remove_amp_cast=False))
        node = graph["nodes"][graph["heads"][0][0]]
        if node["op"] == "null":
            raise ValueError("_gen_atomic_symbol: %r is a variable, not an operator" % node["name"])
        attrs = node.get("attrs", {})
        return Symbol(_api.weft_symbol_create_atomic(_op_handle(node["op"]), len(attrs), list(attrs),
                                                     [str(v) for v in attrs.values()]))

    def get_backend_symbol(self, backend):
        """This graph partitioned for the subgraph backend `backend`, as MXNet's: 'MKLDNN'
        makes each convolution (with the BatchNorm, residual sum and activation after it) one
        _sg_mkldnn_conv node and each fully connected layer (with the elementwise operator
        after it) one _sg_mkldnn_fully_connected node, for inference. The result computes
        what this graph computes. 'MKLDNN_QUANTIZE', for a graph quantized by
        mx.contrib.quantization, also folds calibrated requantize nodes (and dequantize nodes
        after dense layers) into the quantized operators before them, removes identities and
        makes the self-attention products oneDNN nodes (docs/design/quantization.md). A
        backend Weft does not have raises MXNetError."""
        if not isinstance(backend, str):
            raise TypeError("get_backend_symbol: expected the backend name as a str, got %s" % type(backend).__name__)
        return Symbol(_api.weft_symbol_get_backend_symbol(self.handle, backend))

    def optimize_for(self, backend, args=None, aux=None, ctx=None, shape_dict=None, type_dict=None, stype_dict=None,
                     skip_infer=False, **kwargs):
        """This graph partitioned for `backend` (see get_backend_symbol), as MXNet's
        optimize_for. `args` and `aux` (dicts of name -> NDArray, optional) lose the arrays
        the new graph no longer reads. As in MXNet, a backend Weft does not have is logged
        as an error and the graph comes back unchanged. The shape, type and storage type
        hints and the backend options (kwargs) are accepted; the MKLDNN partitioning does
        not need them."""
        if not isinstance(backend, str):
            raise AssertionError("optimize_for: expected the backend name as a str, got %s" % type(backend).__name__)
        for what, value in (("args", args), ("aux", aux)):
            if value is not None and not isinstance(value, dict):
                raise AssertionError("optimize_for: expected %s as a dict of name -> NDArray (or None), got %s"
                                     % (what, type(value).__name__))
        try:
            new = self.get_backend_symbol(backend)
        except MXNetError as err:
            if err.status != _STATUS_NOT_FOUND:
                raise
            logging.error("Error optimizing for backend '%s' cannot be found", backend)
            new = self.__copy__()
        for given, before, after in ((args, self.list_arguments(), new.list_arguments()),
                                     (aux, self.list_auxiliary_states(), new.list_auxiliary_states())):
            gone = set(before) - set(after)
            if gone and given is None:
                warnings.warn("optimize_for: the partitioned graph no longer reads %s; no dict was given to drop "
                              "their arrays from" % sorted(gone))
            for name in gone if given is not None else ():
                given.pop(name, None)
        return new

    def remove_amp_cast(self):
        """The graph without its amp_cast and amp_multicast nodes (what automatic mixed
        precision inserted): each of their outputs is replaced by the input it was cast from."""
        graph = json.loads(self.tojson(remove_amp_cast=False))
        nodes, row = graph["nodes"], graph["node_row_ptr"]
        cast = {"amp_cast", "amp_multicast"}
        # Resolved entries, in node order (a cast's input comes before it).
        source = {}

        def resolve(entry):
            return source.get((entry[0], entry[1]), entry)

        kept, new_id = [], {}
        for i, node in enumerate(nodes):
            node["inputs"] = [resolve(e) for e in node.get("inputs", [])]
            if node["op"] in cast:
                for k in range(row[i + 1] - row[i]):
                    source[(i, k)] = node["inputs"][k]
                continue
            new_id[i] = len(kept)
            kept.append((i, node))
        if not source:
            return self

        def renumber(entry):
            return [new_id[entry[0]]] + list(entry[1:])

        for _, node in kept:
            node["inputs"] = [renumber(e) for e in node["inputs"]]
        graph["heads"] = [renumber(resolve(e)) for e in graph["heads"]]
        graph["nodes"] = [node for _, node in kept]
        graph["arg_nodes"] = [new_id[i] for i in graph["arg_nodes"] if i in new_id]
        graph["node_row_ptr"] = [0]
        for i, _ in kept:
            graph["node_row_ptr"].append(graph["node_row_ptr"][-1] + row[i + 1] - row[i])
        return load_json(json.dumps(graph))

    def debug_str(self):
        return _api.weft_symbol_debug_str(self.handle)

    def __repr__(self):
        name = self.name
        # A group lists its outputs' node names, as MXNet's repr does (split0, not split0_output0).
        return "<Symbol %s>" % name if name else "<Symbol group [%s]>" % ", ".join(s.name for s in self)

    def __getstate__(self):
        return {"json": self.tojson(remove_amp_cast=False)}

    def __setstate__(self, state):
        self.handle = _api.weft_symbol_from_json(state["json"])

    # ------------------------------------------------------------- arithmetic
    def _binary(self, other, op, scalar_op, reverse=False):
        from . import _ops
        if isinstance(other, Symbol):
            lhs, rhs = (other, self) if reverse else (self, other)
            return _ops.get(op)(lhs, rhs, _name_hint=_OPERATOR_NAMES.get(op, op))
        if isinstance(other, (int, float, np.generic)):
            return _ops.get(scalar_op)(self, scalar=_scalar_param(other),
                                       _name_hint=_OPERATOR_NAMES.get(scalar_op, scalar_op))
        return NotImplemented

    def __add__(self, o): return self._binary(o, "elemwise_add", "_plus_scalar")  # noqa: E704
    __radd__ = __add__
    def __sub__(self, o): return self._binary(o, "elemwise_sub", "_minus_scalar")  # noqa: E704
    def __rsub__(self, o): return self._binary(o, "elemwise_sub", "_rminus_scalar", True)  # noqa: E704
    def __mul__(self, o): return self._binary(o, "elemwise_mul", "_mul_scalar")  # noqa: E704
    __rmul__ = __mul__
    def __truediv__(self, o): return self._binary(o, "elemwise_div", "_div_scalar")  # noqa: E704
    def __rtruediv__(self, o): return self._binary(o, "elemwise_div", "_rdiv_scalar", True)  # noqa: E704
    def __mod__(self, o): return self._binary(o, "_mod", "_mod_scalar")  # noqa: E704
    def __rmod__(self, o): return self._binary(o, "_mod", "_rmod_scalar", True)  # noqa: E704
    def __pow__(self, o): return self._binary(o, "_power", "_power_scalar")  # noqa: E704
    def __rpow__(self, o): return self._binary(o, "_power", "_rpower_scalar", True)  # noqa: E704

    # Python 2's names for / and reflected /, which MXNet's Symbol still defines.
    __div__ = __truediv__
    __rdiv__ = __rtruediv__

    def __neg__(self):
        # MXNet builds -x as x * -1.0 (a _mul_scalar node), and saved graphs show it so.
        return self.__mul__(-1.0)

    def __abs__(self):
        from . import _ops
        return _ops.get("abs")(self)

    # Comparisons build graph nodes (1 where true, 0 elsewhere), as MXNet's Symbol, `==` and
    # `!=` included. Symbols stay hashable by identity (dictionary keys), and a truth test is
    # an error, as in MXNet: `if a == b` on symbols would otherwise always pass.
    def __eq__(self, o):
        r = self._binary(o, "_equal", "_equal_scalar")
        if r is NotImplemented:
            raise TypeError("Symbol == %s: expected a Symbol or a number" % type(o).__name__)
        return r

    def __ne__(self, o):
        r = self._binary(o, "_not_equal", "_not_equal_scalar")
        if r is NotImplemented:
            raise TypeError("Symbol != %s: expected a Symbol or a number" % type(o).__name__)
        return r

    __hash__ = object.__hash__

    def __bool__(self):
        from ..base import NotImplementedForSymbol
        raise NotImplementedForSymbol(self.__bool__, "bool")

    # NDArray methods a Symbol has no values for: MXNet's Symbol raises for each by name.
    def _values_only(self, method):
        from ..base import NotImplementedForSymbol
        raise NotImplementedForSymbol(method, None)

    def wait_to_read(self):
        self._values_only(self.wait_to_read)

    def asnumpy(self):
        self._values_only(self.asnumpy)

    def asscalar(self):
        self._values_only(self.asscalar)

    def as_in_context(self, context=None):
        self._values_only(self.as_in_context)

    def detach(self):
        self._values_only(self.detach)

    def backward(self, *args, **kwargs):
        self._values_only(self.backward)

    def __gt__(self, o): return self._binary(o, "_greater", "_greater_scalar")  # noqa: E704
    def __ge__(self, o): return self._binary(o, "_greater_equal", "_greater_equal_scalar")  # noqa: E704
    def __lt__(self, o): return self._binary(o, "_lesser", "_lesser_scalar")  # noqa: E704
    def __le__(self, o): return self._binary(o, "_lesser_equal", "_lesser_equal_scalar")  # noqa: E704

    def reshape(self, *shape, **kwargs):
        """The reshape operator on this symbol; MXNet's codes 0, -1, -2, -3, -4 and `reverse` apply."""
        from . import _ops
        if "shape" in kwargs:
            shape = kwargs.pop("shape")
        elif len(shape) == 1 and isinstance(shape[0], (list, tuple)):
            shape = shape[0]
        return _ops.get("reshape")(self, shape=tuple(shape), **kwargs)

    def astype(self, dtype):
        from . import _ops
        from ..ndarray.ndarray import _dtype_name
        return _ops.get("cast")(self, dtype=_dtype_name(dtype))

    def split_v2(self, *args, **kwargs):
        """split_v2(self, ...): see the function weft.symbol.split_v2."""
        from . import split_v2
        return split_v2(self, *args, **kwargs)

    def __getattr__(self, name):
        # Operators as methods (s.sum(axis=1), s.transpose(), ...), as MXNet's Symbol has.
        if name.startswith("_"):
            raise AttributeError("'Symbol' object has no attribute '%s'" % name)
        from . import _ops
        fn = _ops._functions.get(name)
        if fn is None:
            raise AttributeError("'Symbol' object has no attribute '%s'" % name)
        return lambda *args, **kwargs: fn(self, *args, **kwargs)


def _group2ctx_json(group2ctx):
    """group2ctx ({group: Context}) as the C API takes it: {group: [device_type, device_id]}."""
    from ..context import Context
    if not group2ctx:
        return None
    return json.dumps({g: list(Context(c)._as_tuple()) for g, c in group2ctx.items()})


def Variable(name, attr=None, shape=None, lr_mult=None, wd_mult=None, dtype=None, init=None, stype=None, **kwargs):
    """A variable symbol; the keywords become its "__shape__", "__dtype__", ... attributes,
    after those of the AttrScope in effect."""
    if not isinstance(name, str) or not name:
        raise TypeError("Variable: expected a non-empty name, got %r" % (name,))
    s = Symbol(_api.weft_symbol_create_variable(name))
    attrs = _attribute.current().get(attr)
    if shape is not None:
        # A bare integer is a 1-d shape (MXNet writes str(shape), so shape=(1) works there).
        attrs["__shape__"] = str((int(shape),) if isinstance(shape, (int, np.integer)) else tuple(shape))
    if lr_mult is not None:
        attrs["__lr_mult__"] = str(lr_mult)
    if wd_mult is not None:
        attrs["__wd_mult__"] = str(wd_mult)
    if dtype is not None:
        attrs["__dtype__"] = str(dtype_id(dtype))
    if init is not None:
        attrs["__init__"] = init if isinstance(init, str) else init.dumps()
    if stype is not None:
        attrs["__storage_type__"] = {"default": "0", "row_sparse": "1", "csr": "2"}[stype]
    for k, v in kwargs.items():
        if not (k.startswith("__") and k.endswith("__")):
            raise ValueError("Variable: extra attributes must be named __like_this__, got %r" % k)
        attrs[k] = str(v)
    s._set_attr(**attrs)
    return s


var = Variable


def Group(symbols, create_fn=None):
    """The outputs of several symbols as one, made by create_fn (a Symbol class, Symbol by
    default: MXNet's argument for its NumPy symbols) from the group's handle."""
    symbols = list(symbols)
    if not symbols or not all(isinstance(s, Symbol) for s in symbols):
        raise TypeError("Group: expected a non-empty list of Symbols")
    return (create_fn or Symbol)(_api.weft_symbol_group(len(symbols), [s.handle for s in symbols]))


def _cached_op(*args, subgraph=None, name=None):
    """MXNet's `_CachedOp` node: the graph of `subgraph` (its JSON) applied to `args`, one
    Symbol per input of the subgraph in list_inputs() order. Weft composes the subgraph's
    nodes into the calling graph in its place (what the node would run), so the result
    computes, and differentiates, as the node does."""
    if subgraph is None:
        raise ValueError("_CachedOp needs subgraph= (the JSON of the graph it runs)")
    inner = load_json(subgraph)
    names = inner.list_inputs()
    if len(args) != len(names):
        raise ValueError("_CachedOp: the subgraph has %d inputs %s; got %d Symbols" % (len(names), names, len(args)))
    for a in args:
        if not isinstance(a, Symbol):
            raise TypeError("_CachedOp: inputs must be Symbols, got %s" % type(a).__name__)
    inner._compose(name=name, **dict(zip(names, args)))
    return inner


_OP_HANDLES = {}


def _op_handle(name):
    if not _OP_HANDLES:
        from ..ndarray._ops import list_ops  # pylint: disable=import-outside-toplevel
        _OP_HANDLES.update((info.name, info.handle) for info in list_ops())
    return _OP_HANDLES[name]


def load(fname):
    """A symbol from an MXNet JSON file (any MXNet version; control-flow nodes with their
    subgraphs included)."""
    return Symbol(_api.weft_symbol_load_file(fname))


def load_json(json_str):
    """A symbol from MXNet JSON text (control-flow nodes with subgraphs included)."""
    return Symbol(_api.weft_symbol_from_json(json_str))


fromjson = load_json



# -------------------------------------------------------------------- module-level functions
# MXNet's sym.pow, sym.maximum, sym.zeros, ...: nodes of the registered operators. The
# generated functions live in _ops, which imports this module, hence the late imports.
def _op(name):
    from . import _ops  # pylint: disable=import-outside-toplevel
    return _ops.get(name)


_NUMBERS = (int, float, np.generic)


def _scalar_param(value):
    # The scalar as MXNet writes it into the graph: the number's own text ("2" for 2, "2.5"
    # for 2.5), so saved JSON and debug_str read as MXNet's; a bool becomes 0.0 or 1.0.
    return float(value) if isinstance(value, (bool, np.bool_)) else value


def _pair(left, right, array_op, scalar_op, rscalar_op, numbers_fn, what):
    if isinstance(left, Symbol) and isinstance(right, Symbol):
        return _op(array_op)(left, right)
    if isinstance(left, Symbol) and isinstance(right, _NUMBERS):
        return _op(scalar_op)(left, scalar=_scalar_param(right))
    if isinstance(left, _NUMBERS) and isinstance(right, Symbol):
        return _op(rscalar_op)(right, scalar=_scalar_param(left))
    if isinstance(left, _NUMBERS) and isinstance(right, _NUMBERS):
        return numbers_fn(left, right)
    raise TypeError("%s: types (%s, %s) not supported" % (what, type(left).__name__, type(right).__name__))


def pow(base, exp):  # pylint: disable=redefined-builtin
    """base ** exp where each is a Symbol (same shapes) or a number (two numbers give a number)."""
    return _pair(base, exp, "_Power", "_PowerScalar", "_RPowerScalar", lambda x, y: x ** y, "pow")


def power(base, exp):
    """The same as pow."""
    return pow(base, exp)


def maximum(left, right):
    """The elementwise maximum of Symbols (broadcast against each other) and numbers."""
    return _pair(left, right, "broadcast_maximum", "_MaximumScalar", "_MaximumScalar",
                 lambda x, y: x if x > y else y, "maximum")


def minimum(left, right):
    """The elementwise minimum of Symbols (broadcast against each other) and numbers."""
    return _pair(left, right, "broadcast_minimum", "_MinimumScalar", "_MinimumScalar",
                 lambda x, y: x if x < y else y, "minimum")


def hypot(left, right):
    """sqrt(left**2 + right**2) elementwise, each a Symbol (same shapes) or a number."""
    return _pair(left, right, "_Hypot", "_HypotScalar", "_HypotScalar", np.hypot, "hypot")


def zeros(shape, dtype=None, **kwargs):
    """A node of zeros of `shape` (float32 by default)."""
    return _op("_zeros")(shape=shape, dtype=np.float32 if dtype is None else dtype, **kwargs)


def ones(shape, dtype=None, **kwargs):
    """A node of ones of `shape` (float32 by default)."""
    return _op("_ones")(shape=shape, dtype=np.float32 if dtype is None else dtype, **kwargs)


def full(shape, val, dtype=None, **kwargs):
    """A node of `shape` filled with `val` (float32 by default)."""
    return _op("_full")(shape=shape, dtype=np.float32 if dtype is None else dtype, value=float(val), **kwargs)


def eye(N, M=0, k=0, dtype=None, **kwargs):
    """An N x M (M=0: N x N) node with ones on diagonal `k`."""
    return _op("_eye")(N=N, M=M, k=k, dtype=np.float32 if dtype is None else dtype, **kwargs)


def arange(start, stop=None, step=1.0, repeat=1, infer_range=False, name=None, dtype=None):
    """Evenly spaced values in [start, stop), each `repeat` times; with infer_range and no
    stop, the length comes from the shape the output must have."""
    return _op("_arange")(start=start, stop=stop, step=step, repeat=repeat, infer_range=infer_range, name=name,
                          dtype=np.float32 if dtype is None else dtype)


def linspace(start, stop, num, endpoint=True, name=None, dtype=None):
    """`num` evenly spaced values from start to stop (included unless endpoint=False)."""
    return _op("_linspace")(start=start, stop=stop, num=num, endpoint=endpoint, name=name,
                            dtype=np.float32 if dtype is None else dtype)


def split_v2(ary, indices_or_sections, axis=0, squeeze_axis=False):
    """Splits `ary` along `axis` into `indices_or_sections` near-equal pieces (an int) or at
    the given indices (a tuple: ary[:i0], ary[i0:i1], ..., ary[ik:])."""
    if isinstance(indices_or_sections, int):
        return _op("_split_v2")(ary, indices=(), axis=axis, squeeze_axis=squeeze_axis,
                                sections=indices_or_sections)
    if isinstance(indices_or_sections, tuple):
        return _op("_split_v2")(ary, indices=(0,) + indices_or_sections, axis=axis, squeeze_axis=squeeze_axis)
    raise ValueError("split_v2: indices_or_sections must be an int or a tuple of ints, got %r" % (indices_or_sections,))


def histogram(a, bins=10, range=None, **kwargs):  # pylint: disable=redefined-builtin
    """Counts and bin edges of `a`: `bins` equal bins over `range`, or a Symbol of edges."""
    if isinstance(bins, Symbol):
        return _op("_histogram")(data=a, bins=bins, **kwargs)
    if isinstance(bins, int):
        if range is None:
            raise ValueError("histogram: a symbol needs a range with an int bins")
        return _op("_histogram")(data=a, bin_cnt=bins, range=tuple(range), **kwargs)
    raise ValueError("histogram: bins must be an int or a Symbol, got %r" % (bins,))


def get_symbol(x):
    """The recorded autograd history of NDArray `x` as a Symbol (MXNet's
    autograd.get_symbol, which weft.autograd re-exports): a node per recorded call, a
    variable var0, var1, ... per marked array and per constant array a call read."""
    return Symbol(_api.weft_autograd_get_symbol(x))
