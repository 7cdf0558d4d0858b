"""Automatic mixed precision (MXNet 1.x's mx.contrib.amp).

Two ways in, as in MXNet:
- `init(target_dtype)` wraps the generated operator functions of `weft.nd` and `weft.sym`, so
  that models built afterwards (imperative, Gluon, hybridized) cast the inputs of the
  operators of the lists in `lists/`: low-precision ops get their inputs cast to the target
  type, float32 ops to float32, and the widest-type ops get an amp_multicast.
  `init_trainer`, `scale_loss` and `unscale` add dynamic loss scaling (needed for float16,
  harmless for bfloat16, whose range is float32's).
- `convert_symbol` / `convert_model` / `convert_hybrid_block` rewrite a float32 graph for
  inference, inserting amp_cast and amp_multicast nodes by the same lists.
"""
import contextlib
import json
import logging
from collections import OrderedDict

import numpy as np

from ... import ndarray, symbol
from ...ndarray import NDArray
from ...ndarray.ndarray import bfloat16, dtype_id, dtype_np
from ...symbol import Symbol
from . import lists
from .loss_scaler import LossScaler

__all__ = ["init", "init_trainer", "scale_loss", "unscale", "convert_symbol", "convert_model",
           "convert_hybrid_block", "convert_bucketing_module", "list_lp16_ops", "list_fp32_ops", "list_lp16_fp32_ops",
           "list_conditional_fp32_ops", "list_widest_type_cast", "list_loss_output_functions",
           "list_lp16_use_fp32_params", "bfloat16"]

_FLOAT_IDS = (dtype_id("float32"), dtype_id("float16"), dtype_id("bfloat16"))
_ID_TO_NAME = {dtype_id(n): n for n in ("float32", "float64", "float16", "bfloat16", "uint8", "int8", "int32", "int64",
                                        "bool")}


def _dtype_name(target_dtype):
    """'float16' or 'bfloat16' for any spelling MXNet accepts; anything else is an error."""
    if isinstance(target_dtype, str) and target_dtype in ("float16", "bfloat16"):
        return target_dtype
    if target_dtype is bfloat16 or (isinstance(target_dtype, np.dtype) and target_dtype == bfloat16):
        return "bfloat16"
    try:
        if np.dtype(target_dtype) == np.float16:
            return "float16"
    except TypeError:
        pass
    raise ValueError("amp: target_dtype must be 'float16' or 'bfloat16', got %r" % (target_dtype,))


def _registered(names):
    return [n for n in names if hasattr(ndarray._internal, n)]


def _lists(target_dtype):
    return lists.symbol_bf16 if _dtype_name(target_dtype) == "bfloat16" else lists.symbol_fp16


def list_lp16_ops(target_dtype):
    """Operators run in the low-precision type."""
    mod = _lists(target_dtype)
    return _registered(mod.BF16_FUNCS if mod is lists.symbol_bf16 else mod.FP16_FUNCS)


def list_fp32_ops(target_dtype):
    """Operators run in float32."""
    return _registered(_lists(target_dtype).FP32_FUNCS)


def list_lp16_fp32_ops(target_dtype):
    """Operators that run in whichever floating type their inputs have."""
    mod = _lists(target_dtype)
    return _registered(mod.BF16_FP32_FUNCS if mod is lists.symbol_bf16 else mod.FP16_FP32_FUNCS)


def list_conditional_fp32_ops(target_dtype):
    """(operator, parameter, values) run in float32 when the parameter has one of the values."""
    return [c for c in _lists(target_dtype).CONDITIONAL_FP32_FUNCS if hasattr(ndarray._internal, c[0])]


def list_widest_type_cast(target_dtype):
    """Operators whose inputs an amp_multicast brings to the widest type present."""
    return _registered(_lists(target_dtype).WIDEST_TYPE_CASTS)


def list_loss_output_functions(target_dtype):
    """Loss output operators whose grad_scale the loss scaler multiplies."""
    return _registered(_lists(target_dtype).LOSS_OUTPUT_FUNCTIONS)


def list_lp16_use_fp32_params(target_dtype):
    """Per low-precision operator, the inputs (by position) that stay float32."""
    mod = _lists(target_dtype)
    return dict(getattr(mod, "BF16_USE_FP32_PARAMS", {})) if mod is lists.symbol_bf16 else {}


# ------------------------------------------------------------------ imperative wrapping

def _is_variable(s):
    return len(s.list_outputs()) == 1 and s.get_children() is None


def _cast_value(x, dtype, keep_fp32_vars):
    """x cast to dtype when it is a floating NDArray or a Symbol; anything else unchanged.
    keep_fp32_vars: a Symbol variable without a declared dtype is already float32 (params
    and data of a float32 model), so a cast to float32 of it is left out; this also keeps
    auxiliary states (BatchNorm's moving statistics) plain variables, as they must be."""
    if isinstance(x, NDArray):
        if dtype_id(x.dtype) in _FLOAT_IDS and x.dtype != dtype_np(dtype):
            return ndarray.amp_cast(x, dtype=dtype)
        return x
    if isinstance(x, Symbol):
        if keep_fp32_vars and _is_variable(x) and x.attr("__dtype__") in (None, str(dtype_id("float32"))):
            return x
        return symbol.amp_cast(x, dtype=dtype)
    return x


def _casting_wrapper(f, dtype, keep=(), cond=None):
    """f with its array arguments cast to dtype; `keep`: keyword names left as they are;
    cond: (parameter, values) that must hold for the cast to happen."""
    keep_fp32_vars = dtype == "float32"

    def wrapped(*args, **kwargs):
        if cond is not None and str(kwargs.get(cond[0])) not in cond[1]:
            return f(*args, **kwargs)
        args = tuple(_cast_value(a, dtype, keep_fp32_vars) for a in args)
        kwargs = {k: (v if k in keep or k in ("out", "name") else _cast_value(v, dtype, keep_fp32_vars))
                  for k, v in kwargs.items()}
        return f(*args, **kwargs)
    wrapped.__name__, wrapped.__doc__ = f.__name__, f.__doc__
    wrapped.__wrapped__ = f
    return wrapped


def _widest_wrapper(f):
    """f with its floating inputs brought to one type: float32 when any is float32."""
    def wrapped(*args, **kwargs):
        slots = [(None, i) for i, a in enumerate(args) if isinstance(a, (NDArray, Symbol))]
        slots += [(k, None) for k, v in kwargs.items() if isinstance(v, (NDArray, Symbol)) and k != "out"]
        if len(slots) < 2:
            return f(*args, **kwargs)
        args = list(args)
        values = [args[i] if k is None else kwargs[k] for k, i in slots]
        if any(isinstance(v, Symbol) for v in values):
            cast = symbol.amp_multicast(*values, num_outputs=len(values))
            values = [cast[j] for j in range(len(values))]
        else:
            floats = [v for v in values if dtype_id(v.dtype) in _FLOAT_IDS]
            if any(v.dtype == np.float32 for v in floats) and len({dtype_id(v.dtype) for v in floats}) > 1:
                values = [_cast_value(v, "float32", False) for v in values]
        for (k, i), v in zip(slots, values):
            if k is None:
                args[i] = v
            else:
                kwargs[k] = v
        return f(*args, **kwargs)
    wrapped.__name__, wrapped.__doc__ = f.__name__, f.__doc__
    wrapped.__wrapped__ = f
    return wrapped


def _wrap_module(module, name, make):
    """Replaces the operator `name` in the public module, its `op`/`_internal` tables and
    its contrib/linalg namespaces, wherever the generated function sits."""
    homes = [module, getattr(module, "_internal", None), getattr(module, "op", None)]
    for prefix in ("_contrib_", "_linalg_"):
        if name.startswith(prefix):
            homes.append(getattr(module, prefix[1:-1], None))
    done = False
    for home, attr in [(h, name) for h in homes if h is not None] + \
            [(h, name[len(p):]) for p in ("_contrib_", "_linalg_") if name.startswith(p)
             for h in [getattr(module, p[1:-1], None)] if h is not None]:
        f = getattr(home, attr, None)
        if callable(f) and not hasattr(f, "__wrapped__"):
            setattr(home, attr, make(f))
            done = True
    return done


def _wrap_functions(module, target, target_precision_ops, conditional_fp32_ops, fp32_ops):
    fp32_params = list_lp16_use_fp32_params(target)
    for name in target_precision_ops:
        keep = tuple(k for k in fp32_params.get(name, []) if k)
        _wrap_module(module, name, lambda f, keep=keep: _casting_wrapper(f, target, keep))
    for name in fp32_ops:
        _wrap_module(module, name, lambda f: _casting_wrapper(f, "float32"))
    for name, param, values in conditional_fp32_ops:
        _wrap_module(module, name, lambda f, c=(param, [str(v) for v in values]): _casting_wrapper(f, "float32", cond=c))
    for name in list_widest_type_cast(target):
        _wrap_module(module, name, _widest_wrapper)


def _wrap_loss_outputs(module, scaler, target):
    for name in list_loss_output_functions(target):
        def make(f):
            def wrapped(*args, **kwargs):
                if module is symbol:
                    logging.warning("amp: %s in a symbolic or hybridized graph does not follow the dynamic loss "
                                    "scale", name)
                else:
                    kwargs["grad_scale"] = kwargs.get("grad_scale", 1.0) * scaler.loss_scale
                return f(*args, **kwargs)
            wrapped.__name__, wrapped.__doc__ = f.__name__, f.__doc__
            wrapped.__wrapped__ = f
            return wrapped
        _wrap_module(module, name, make)


_amp_initialized = False
_amp_loss_scale_initialized = False
_loss_scaler = None
_target = None


def init(target_dtype='float16', target_precision_ops=None, conditional_fp32_ops=None, fp32_ops=None):
    """Turns automatic mixed precision on for the operator functions of weft.nd and
    weft.sym (call it before building the model). Lists left None are the defaults of
    target_dtype ('float16' or 'bfloat16'). A second call does nothing."""
    global _amp_initialized, _loss_scaler, _target
    target = _dtype_name(target_dtype)
    if _amp_initialized:
        if target != _target:
            raise RuntimeError("amp.init: already initialized for %s, cannot switch to %s" % (_target, target))
        return
    lp16 = list(target_precision_ops) if target_precision_ops is not None else list_lp16_ops(target)
    fp32 = list(fp32_ops) if fp32_ops is not None else list_fp32_ops(target)
    cond = list(conditional_fp32_ops) if conditional_fp32_ops is not None else list_conditional_fp32_ops(target)
    _check_lists(target, lp16, fp32, cond)
    logging.info("Using AMP with %s", target)
    _wrap_functions(symbol, target, lp16, cond, fp32)
    _wrap_functions(ndarray, target, lp16, cond, fp32)
    _loss_scaler = LossScaler()
    _wrap_loss_outputs(ndarray, _loss_scaler, target)
    _wrap_loss_outputs(symbol, _loss_scaler, target)
    _amp_initialized, _target = True, target


def init_trainer(optimizer_or_trainer):
    """Gives a Gluon Trainer a dynamic loss scaler: its step() skips updates whose
    gradients overflowed and adjusts the scale (see LossScaler)."""
    global _amp_loss_scale_initialized
    from ...gluon.trainer import Trainer
    from ...optimizer import Optimizer
    if not _amp_initialized:
        raise RuntimeError("amp.init_trainer: call amp.init() first")
    if isinstance(optimizer_or_trainer, Trainer):
        scaler = _loss_scaler if not _amp_loss_scale_initialized else LossScaler()
        _amp_loss_scale_initialized = True
        optimizer_or_trainer._amp_loss_scaler = scaler
        optimizer_or_trainer._amp_original_scale = optimizer_or_trainer._scale
    elif isinstance(optimizer_or_trainer, Optimizer):
        raise TypeError("amp.init_trainer: AMP works with a Gluon Trainer, not a bare Optimizer")
    else:
        raise TypeError("amp.init_trainer: expected a Gluon Trainer, got %s" % type(optimizer_or_trainer).__name__)


@contextlib.contextmanager
def scale_loss(loss, optimizer_or_trainer):
    """Yields the loss (or list of losses) multiplied by the current loss scale and sets the
    trainer to divide the gradients by it again at its next step."""
    scaler = getattr(optimizer_or_trainer, "_amp_loss_scaler", None)
    if scaler is None:
        raise RuntimeError("amp.scale_loss: the trainer has no loss scaler; call amp.init_trainer(trainer) first")
    optimizer_or_trainer._scale = optimizer_or_trainer._amp_original_scale / scaler.loss_scale
    if isinstance(loss, (list, tuple)):
        yield [l * scaler.loss_scale for l in loss]
    else:
        yield loss * scaler.loss_scale


def unscale(optimizer_or_trainer):
    """Divides the gradients by the loss scale now (e.g. before clipping them) and sets the
    trainer's scale back to its own."""
    from ...gluon.trainer import Trainer
    if not isinstance(optimizer_or_trainer, Trainer):
        raise TypeError("amp.unscale: expected a Gluon Trainer, got %s" % type(optimizer_or_trainer).__name__)
    scale = optimizer_or_trainer._scale / optimizer_or_trainer._amp_original_scale
    for p in optimizer_or_trainer._params:
        if p.grad_req != "null" and p._grad is not None:
            for g in p.list_grad():
                g[:] *= scale
    optimizer_or_trainer._scale = optimizer_or_trainer._amp_original_scale


# ------------------------------------------------------------------ graph conversion

class OpListError(ValueError, AssertionError):
    """convert_symbol's operator lists conflict or name an operator no list of the target
    type holds. MXNet refuses these with an assert, which scripts catch as AssertionError;
    it is a ValueError as well."""


def _check_lists(target, lp16, fp32, cond):
    cond_names = [c[0] for c in cond]
    for a, b, what in ((lp16, fp32, "target_dtype_ops and fp32_ops"),
                       (lp16, cond_names, "target_dtype_ops and conditional_fp32_ops"),
                       (fp32, cond_names, "fp32_ops and conditional_fp32_ops")):
        common = set(a) & set(b)
        if common:
            raise OpListError("amp: operators cannot be in two lists; %s share %s" % (what, sorted(common)))
    known = set(list_lp16_ops(target) + list_fp32_ops(target) + list_lp16_fp32_ops(target) +
                [c[0] for c in list_conditional_fp32_ops(target)])
    unknown = set(lp16 + fp32 + cond_names) - known
    if unknown:
        raise OpListError("amp: operators %s are in none of the lists (list_lp16_ops, list_fp32_ops, "
                         "list_lp16_fp32_ops, list_conditional_fp32_ops) of %s" % (sorted(unknown), target))


def convert_symbol(sym, target_dtype="float16", target_dtype_ops=None, fp32_ops=None, conditional_fp32_ops=None,
                   excluded_sym_names=None, data_names=None, cast_optional_params=False):
    """The float32 graph `sym` with amp_cast / amp_multicast nodes inserted: inputs of the
    target_dtype_ops cast to target_dtype, of the fp32_ops (and of the conditional ones whose
    parameter matches, and of the nodes named in excluded_sym_names) to float32, inputs of
    the widest-type ops through one amp_multicast. Casts are shared by all readers of an
    entry and left out where the entry already has the type. data_names: the graph's data
    inputs (float32); the other variables are parameters. cast_optional_params: a parameter
    read only through casts to target_dtype becomes a target_dtype variable (its
    "__dtype__" attribute says so; convert_model casts its value)."""
    if not isinstance(sym, Symbol):
        raise TypeError("convert_symbol: the first argument must be a Symbol, got %s" % type(sym).__name__)
    target = _dtype_name(target_dtype)
    lp16 = list(target_dtype_ops) if target_dtype_ops is not None else list_lp16_ops(target)
    fp32 = list(fp32_ops) if fp32_ops is not None else list_fp32_ops(target)
    cond = list(conditional_fp32_ops) if conditional_fp32_ops is not None else list_conditional_fp32_ops(target)
    for c in cond:
        if not (isinstance(c, (list, tuple)) and len(c) == 3 and isinstance(c[0], str) and isinstance(c[1], str)
                and isinstance(c[2], list)):
            raise ValueError("convert_symbol: conditional_fp32_ops entries are (op name, parameter, list of "
                             "values), got %r" % (c,))
    _check_lists(target, lp16, fp32, cond)
    excluded = set(excluded_sym_names or [])
    widest = set(list_widest_type_cast(target))
    fp32_params = list_lp16_use_fp32_params(target)
    lp16, fp32 = set(lp16), set(fp32)
    cond = {c[0]: (c[1], [str(v) for v in c[2]]) for c in cond}

    graph = json.loads(sym.tojson(remove_amp_cast=False))
    nodes, row = graph["nodes"], graph["node_row_ptr"]
    if data_names is None:
        data_names = [n["name"] for n in nodes if n["op"] == "null" and "__dtype__" not in n.get("attrs", {})]
    data_names = set(data_names)

    out_nodes, num_out, known = [], [], {}   # known: (node, index) -> dtype name, where certain
    new_id, casts, consumers = {}, {}, {}

    def add(node, outputs):
        out_nodes.append(node)
        num_out.append(outputs)
        return len(out_nodes) - 1

    aux_names = set(sym.list_auxiliary_states())

    def cast(entry, dtype, even_variables=False):
        # even_variables: cast a variable of the type too, but never an auxiliary state, which
        # its operator updates in place.
        var = out_nodes[entry[0]]
        forced = even_variables and var["op"] == "null" and var["name"] not in aux_names
        if known.get(entry) == dtype and not forced:
            return list(entry) + [0]
        key = (entry, dtype)
        if key not in casts:
            nid = add({"op": "amp_cast", "name": "%s_amp_cast_%s" % (out_nodes[entry[0]]["name"], dtype),
                       "attrs": {"dtype": dtype}, "inputs": [list(entry) + [0]]}, 1)
            known[(nid, 0)] = dtype
            casts[key] = nid
        consumers.setdefault(entry, []).append(casts[key])
        return [casts[key], 0, 0]

    for i, node in enumerate(nodes):
        inputs = [(new_id[e[0]], e[1]) for e in node.get("inputs", [])]
        outputs = row[i + 1] - row[i]
        if node["op"] == "null":
            nid = add(node, 1)
            declared = node.get("attrs", {}).get("__dtype__")
            if declared is not None:
                known[(nid, 0)] = _ID_TO_NAME.get(int(declared))
            else:
                # A float32 model: its data and parameters are float32 unless declared otherwise.
                known[(nid, 0)] = "float32"
            new_id[i] = nid
            continue
        op, attrs = node["op"], node.get("attrs", {})
        if node["name"] in excluded or op in fp32:
            new_inputs, out_type = [cast(e, "float32") for e in inputs], "float32"
        elif op in cond and attrs.get(cond[op][0]) in cond[op][1]:
            # As MXNet's pass does, a conditional float32 operator casts its variable inputs
            # too (the unconditional ones take variables as float32 already).
            new_inputs, out_type = [cast(e, "float32", even_variables=True) for e in inputs], "float32"
        elif op in lp16:
            keep = fp32_params.get(op, [])
            new_inputs = [cast(e, "float32") if k < len(keep) and keep[k] else cast(e, target)
                          for k, e in enumerate(inputs)]
            out_type = target
        elif op in widest and len(inputs) > 1:
            types = {known.get(e) for e in inputs}
            if len(types) == 1 and None not in types:
                new_inputs, out_type = [list(e) + [0] for e in inputs], types.pop()
            elif None not in types and types <= set(_WIDTH):
                # Every input's type is known: cast the narrower ones to the widest, as MXNet's
                # pass does (an amp_multicast only where some type is known at run time alone).
                out_type = max(types, key=_WIDTH.index)
                new_inputs = [cast(e, out_type) for e in inputs]
            else:
                mc = add({"op": "amp_multicast", "name": "%s_amp_multicast" % node["name"],
                          "attrs": {"num_outputs": str(len(inputs))}, "inputs": [list(e) + [0] for e in inputs]},
                         len(inputs))
                new_inputs, out_type = [[mc, k, 0] for k in range(len(inputs))], None
        elif op in fp32_params:
            # Takes its data in whichever type comes and keeps its parameters float32: the
            # output has the data's type.
            new_inputs, out_type = [list(e) + [0] for e in inputs], None
            if inputs and known.get(inputs[0]) is not None:
                known[(len(out_nodes), 0)] = known[inputs[0]]
        else:
            new_inputs = [list(e) + [0] for e in inputs]
            types = {known.get(e) for e in inputs}
            out_type = types.pop() if len(types) == 1 else None
        copy = dict(node)
        copy["inputs"] = new_inputs
        nid = add(copy, outputs)
        if out_type is not None:
            for k in range(outputs):
                known[(nid, k)] = out_type
        new_id[i] = nid

    heads = [[new_id[h[0]], h[1], 0] for h in graph["heads"]]
    declared = set()
    if cast_optional_params:
        declared |= _fold_param_casts(out_nodes, heads, consumers, casts, data_names, target)
    declared |= _declare_param_types(out_nodes, data_names, target, cast_optional_params)
    return _declare_inferred_param_types(_to_symbol(graph, out_nodes, num_out, heads), data_names, declared)


# Floating types from narrowest to widest, for the widest-type operators.
_WIDTH = ["float16", "bfloat16", "float32", "float64"]


def _fold_param_casts(nodes, heads, consumers, casts, data_names, target):
    """A parameter variable read only through its cast to target becomes a target-typed
    variable: the readers of the cast read it directly, and the cast is left unreachable.
    Returns the names of the variables so declared."""
    head_ids = {h[0] for h in heads}
    declared = set()
    for (entry, dtype), cid in casts.items():
        var = nodes[entry[0]]
        if dtype != target or var["op"] != "null" or var["name"] in data_names or entry[0] in head_ids:
            continue
        readers = [n for n in nodes if any(e[0] == entry[0] for e in n.get("inputs", []))]
        if any(r["op"] != "amp_cast" or r["attrs"].get("dtype") != target for r in readers):
            continue
        var.setdefault("attrs", {})["__dtype__"] = str(dtype_id(target))
        declared.add(var["name"])
        for n in nodes:
            n["inputs"] = [[entry[0], 0, 0] if e[0] == cid else e for e in n.get("inputs", [])]
    return declared


def _declare_param_types(nodes, data_names, target, cast_optional_params):
    """With cast_optional_params, a parameter (a variable that is not data) that all its
    readers take in target is declared target-typed, whatever type it declared before (as
    in MXNet, where a declared type is what makes a variable a parameter, one that may be
    stored in target). A reader takes it in target when it is an amp_cast to target (the
    user's own too) or an amp_multicast of variables alone: MXNet reads such a multicast,
    whose inputs no computed value ties to float32, as one that can run in target.
    Returns the names of the variables so declared."""
    declared = set()
    if not cast_optional_params:
        return declared

    def takes_target(reader):
        if reader["op"] == "amp_cast":
            return reader.get("attrs", {}).get("dtype") == target
        if reader["op"] == "amp_multicast":
            return all(nodes[e[0]]["op"] == "null" for e in reader.get("inputs", []))
        return False

    for i, var in enumerate(nodes):
        if var["op"] != "null" or var["name"] in data_names:
            continue
        readers = [n for n in nodes if any(e[0] == i for e in n.get("inputs", []))]
        if readers and all(takes_target(r) for r in readers):
            var.setdefault("attrs", {})["__dtype__"] = str(dtype_id(target))
            declared.add(var["name"])
    return declared


def _declare_inferred_param_types(sym, data_names, declared):
    """Every parameter but those cast_optional_params `declared` declares its type, as
    MXNet's pass gives them: the type inferred with float32 data (a dense layer left out of
    the low-precision ops but reading bf16 takes bf16 weights), float32 where nothing says;
    so binding the converted graph needs only the data's types. As in MXNet, a type the
    parameter declared before (a Gluon parameter declares float32) does not take part: it
    is what the conversion may change."""
    graph = json.loads(sym.tojson(remove_amp_cast=False))
    params = [n for n in graph["nodes"] if n["op"] == "null" and n["name"] not in data_names
              and n["name"] not in declared]
    if not params:
        return sym
    for n in params:
        n.get("attrs", {}).pop("__dtype__", None)
    free = symbol.load_json(json.dumps(graph))
    inputs = free.list_inputs()
    arg_names, aux_names = free.list_arguments(), free.list_auxiliary_states()
    args, _, aux = free.infer_type_partial(**{d: "float32" for d in data_names if d in arg_names})
    inferred = dict(zip(arg_names, args or []))
    inferred.update(zip(aux_names, aux or []))
    for n in params:
        t = inferred.get(n["name"]) if n["name"] in inputs else None
        n.setdefault("attrs", {})["__dtype__"] = str(dtype_id(t if t is not None else "float32"))
    return symbol.load_json(json.dumps(graph))


def _to_symbol(graph, nodes, num_out, heads):
    """The symbol of `nodes`, keeping only what the heads reach (folded casts drop out)."""
    reach, stack = set(), [h[0] for h in heads]
    while stack:
        n = stack.pop()
        if n not in reach:
            reach.add(n)
            stack.extend(e[0] for e in nodes[n].get("inputs", []))
    order = sorted(reach)
    new = {old: k for k, old in enumerate(order)}
    out = []
    for old in order:
        n = dict(nodes[old])
        n["inputs"] = [[new[e[0]], e[1], 0] for e in n.get("inputs", [])]
        out.append(n)
    graph = dict(graph)
    graph["nodes"] = out
    graph["arg_nodes"] = [k for k, n in enumerate(out) if n["op"] == "null"]
    ptr = [0]
    for old in order:
        ptr.append(ptr[-1] + num_out[old])
    graph["node_row_ptr"] = ptr
    graph["heads"] = [[new[h[0]], h[1], 0] for h in heads]
    return symbol.load_json(json.dumps(graph))


def _cast_params(sym, params):
    """params with each array whose variable declares a dtype (__dtype__) cast to it."""
    attrs = sym.attr_dict()
    out = {}
    for name, value in params.items():
        declared = attrs.get(name, {}).get("__dtype__")
        if declared is not None and int(declared) != dtype_id(value.dtype):
            value = ndarray.amp_cast(value, dtype=_ID_TO_NAME[int(declared)])
        out[name] = value
    return out


def convert_model(sym, arg_params, aux_params, target_dtype="float16", target_dtype_ops=None, fp32_ops=None,
                  conditional_fp32_ops=None, excluded_sym_names=None, cast_optional_params=False):
    """(converted symbol, arg_params, aux_params) of a float32 model: the graph from
    convert_symbol (the variables that are not parameters are its data) and the parameters
    cast to the types the converted graph declares for them."""
    if excluded_sym_names is not None and not isinstance(excluded_sym_names, list):
        raise ValueError("convert_model: excluded_sym_names must be a list of names, got %s"
                         % type(excluded_sym_names).__name__)
    if not isinstance(sym, Symbol):
        raise TypeError("convert_model: the first argument must be a Symbol, got %s" % type(sym).__name__)
    if not isinstance(arg_params, dict) or not isinstance(aux_params, dict):
        raise TypeError("convert_model: arg_params and aux_params must be dicts of name to NDArray")
    params = set(arg_params) | set(aux_params)
    data_names = [n for n in sym.list_inputs() if n not in params]
    converted = convert_symbol(sym, target_dtype, target_dtype_ops, fp32_ops, conditional_fp32_ops,
                               excluded_sym_names, data_names, cast_optional_params)
    return converted, _cast_params(converted, arg_params), _cast_params(converted, aux_params)


def convert_hybrid_block(block, target_dtype="float16", target_dtype_ops=None, fp32_ops=None,
                         conditional_fp32_ops=None, excluded_sym_names=None, ctx=None, cast_optional_params=False):
    """A SymbolBlock running the converted graph of a hybridized block (which must have
    run forward once, so that its graph is known), with its parameters cast as the graph
    declares and placed on ctx (the parameters' own context when None)."""
    from ...gluon import HybridBlock, SymbolBlock
    if not isinstance(block, HybridBlock):
        raise TypeError("convert_hybrid_block: expected a HybridBlock, got %s" % type(block).__name__)
    if not block._cached:
        raise RuntimeError("convert_hybrid_block: call block.hybridize() and run one forward pass first, so that "
                           "the graph of %s is known" % block.name)
    graph = next(iter(block._cached.values()))
    converted = convert_symbol(graph.sym, target_dtype, target_dtype_ops, fp32_ops, conditional_fp32_ops,
                               excluded_sym_names, data_names=list(graph.input_names),
                               cast_optional_params=cast_optional_params)
    arg_names, aux_names = set(converted.list_arguments()), set(converted.list_auxiliary_states())
    values = {}
    for p in block.collect_params().values():
        if p.name in arg_names or p.name in aux_names:
            values[p.name] = p.data() if ctx is None else p.data().as_in_context(ctx)
    values = _cast_params(converted, values)
    ret = SymbolBlock(converted, [symbol.var(n) for n in graph.input_names])
    for name, p in ret.collect_params().items():
        value = values[name]
        # The converted block is for inference: its parameters take the arrays as they are,
        # in the types the graph declares (bfloat16 has no numpy scalar type to cast() to).
        p._shape, p.dtype, p._deferred_init = tuple(value.shape), value.dtype, None
        p._data = OrderedDict([(value.context, value.copy())])
        p._init_grad()
    return ret


def convert_bucketing_module(bucketing_mod, target_dtype="float16", target_dtype_ops=None, fp32_ops=None,
                             conditional_fp32_ops=None, excluded_sym_names=None, cast_optional_params=False):
    """A new BucketingModule running the converted graph (convert_model) of every bucket the
    given one has bound, with its parameters (initialised) cast as the graphs declare; it
    keeps the original's sym_gen, default bucket, contexts and settings, and is bound like
    the original (bind, then switch_bucket for each bucket it is to run)."""
    from ...module.bucketing_module import BucketingModule
    if not isinstance(bucketing_mod, BucketingModule):
        raise TypeError("convert_bucketing_module: expected a BucketingModule, got %s" % type(bucketing_mod).__name__)
    if not bucketing_mod._buckets:
        raise ValueError("convert_bucketing_module: the BucketingModule has no bucket: bind it first")
    if not bucketing_mod.params_initialized:
        raise ValueError("convert_bucketing_module: the BucketingModule's parameters are not initialised "
                         "(call init_params first)")
    arg_params, aux_params = bucketing_mod.get_params()
    symbols = {}
    for key, module in bucketing_mod._buckets.items():
        symbols[key], new_args, new_aux = convert_model(
            module.symbol, arg_params, aux_params, target_dtype=target_dtype, target_dtype_ops=target_dtype_ops,
            fp32_ops=fp32_ops, conditional_fp32_ops=conditional_fp32_ops, excluded_sym_names=excluded_sym_names,
            cast_optional_params=cast_optional_params)
    return BucketingModule.load_dict(symbols, sym_gen=bucketing_mod._sym_gen,
                                     default_bucket_key=bucketing_mod._default_bucket_key, arg_params=new_args,
                                     aux_params=new_aux, logger=bucketing_mod.logger, context=bucketing_mod._context,
                                     work_load_list=bucketing_mod._work_load_list,
                                     fixed_param_names=bucketing_mod._fixed_param_names,
                                     state_names=bucketing_mod._state_names, group2ctxs=bucketing_mod._group2ctxs,
                                     compression_params=bucketing_mod._compression_params)
