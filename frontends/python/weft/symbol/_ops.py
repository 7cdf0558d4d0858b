"""Symbol functions for every registered operator, generated at import from the registry.

A call builds one node: positional Symbols are the operator's inputs in order, keyword
Symbols name inputs, other keywords are parameters (None leaves the default), `name`
names the node (else the thread's NameManager makes one from the operator's name) and
`attr` adds user attributes ("__lr_mult__", ...). Missing inputs become variables named
"<name>_<input>", as in MXNet.
"""
import inspect
import keyword

from ..base import _api
from ..ndarray import _ops as _nd_ops
from ..ndarray._ops import _docstring, _safe
from ..ndarray.ndarray import _param_str
from .. import name as _name
from .. import attribute as _attribute
from .symbol import Symbol

_functions = {}


def _make_function(info, fname):
    handle = info.handle
    # As MXNet, the default node name comes from the name the function is called by (an
    # alias names its nodes after itself: broadcast_axes0, not broadcast_axis0).
    hint = fname.lower().lstrip("_")
    count_key = info.key_var_num_args
    input_names = [] if info.variadic else [i[0] for i in info.inputs]
    optional = _nd_ops.optional_params(info)

    param_names = [p[0] for p in info.params if p[0] != count_key]

    def fn(*args, **kwargs):
        name = kwargs.pop("name", None)
        # Symbol's operators (+, *, ==, ...) name their nodes as MXNet's do (_plus0, _mulscalar0).
        node_hint = kwargs.pop("_name_hint", hint)
        attr = _attribute.current().get(kwargs.pop("attr", None))
        if "out" not in input_names and "out" not in param_names:
            # MXNet's symbol functions take and ignore the NDArray functions' out=.
            kwargs.pop("out", None)
        if not info.variadic and len(args) > len(input_names):
            # As in MXNet, values after the inputs are the parameters in order:
            # sym.clip(x, 0.2, 0.8) is clip(x, a_min=0.2, a_max=0.8).
            extra = args[len(input_names):]
            if any(isinstance(a, Symbol) for a in extra) or len(extra) > len(param_names):
                raise TypeError("%s: expected at most %d inputs (%s) then %d parameters (%s) by position, got %d "
                                "arguments" % (fname, len(input_names), ", ".join(input_names), len(param_names),
                                               ", ".join(param_names), len(args)))
            for pname, value in zip(param_names, extra):
                if pname in kwargs:
                    raise TypeError("%s: parameter %r given by position and by keyword" % (fname, pname))
                kwargs[pname] = value
            args = args[:len(input_names)]
        for i, a in enumerate(args):
            if not isinstance(a, Symbol) and not (a is None and not info.variadic):
                raise TypeError("%s: positional input %d must be a Symbol, got %s (parameters go by keyword)"
                                % (fname, i, type(a).__name__))
        if any(a is None for a in args):
            # As in MXNet, an input given as None is left out (Convolution(data, w, None,
            # no_bias=True)); the others go by their names.
            for n, a in zip(input_names, args):
                if a is not None:
                    if n in kwargs:
                        raise TypeError("%s: input %r given by position and by keyword" % (fname, n))
                    kwargs[n] = a
            args = ()
        inputs, keys, vals = {}, [], []
        for k, v in kwargs.items():
            if isinstance(v, Symbol):
                inputs[k] = v
            elif v is not None or k in optional:
                # None is a value of the optional parameters (axis=None), as in MXNet.
                # A parameter named like a Python keyword is passed with a trailing "_";
                # MXNet's hidden keys (lr_mult, ctx_group, ...) become node attributes.
                keys.append(k[:-1] if k.endswith("_") and keyword.iskeyword(k[:-1]) else _attribute.hidden_key(k))
                vals.append(_param_str(v))
        if count_key and count_key not in keys:
            keys.append(count_key)
            vals.append(str(len(args)))
        for k, v in attr.items():
            keys.append(k)
            vals.append(str(v))
        if args and inputs:
            # Positional and keyword inputs together: the positional ones take the first
            # input names, so that one call by name fills them all.
            if len(args) > len(input_names):
                raise TypeError("%s: expected at most %d positional inputs (%s), got %d"
                                % (fname, len(input_names), ", ".join(input_names), len(args)))
            for n, a in zip(input_names, args):
                if n in inputs:
                    raise TypeError("%s: input %r given by position and by keyword" % (fname, n))
                inputs[n] = a
            args = ()
        s = Symbol(_api.weft_symbol_create_atomic(handle, len(keys), keys, vals))
        s._compose(*args, name=_name.current().get(name, node_hint), **inputs)
        return s

    # The signature shown by help(): inputs, then parameters, then name and attr.
    seen = {"name", "attr"}
    params = []
    for pname, kind in [(_safe(i[0]), inspect.Parameter.POSITIONAL_OR_KEYWORD) for i in info.inputs] + \
            [(_safe(p[0]), inspect.Parameter.KEYWORD_ONLY) for p in info.params if p[0] != count_key]:
        if pname not in seen:
            seen.add(pname)
            params.append(inspect.Parameter(pname, kind, default=None))
    params.sort(key=lambda p: p.kind)
    params += [inspect.Parameter("name", inspect.Parameter.KEYWORD_ONLY, default=None),
               inspect.Parameter("attr", inspect.Parameter.KEYWORD_ONLY, default=None)]
    fn.__signature__ = inspect.Signature(params)
    fn.__name__ = fname
    fn.__qualname__ = fname
    fn.__doc__ = _docstring(info, fname).replace("NDArray", "Symbol")
    fn.__module__ = "weft.symbol"
    return fn


def populate(public, internal):
    """Puts every operator's symbol function into `public` (names without a leading
    underscore) and `internal` (all names)."""
    _nd_ops.populate(public, internal, _make_function, _functions)


def populate_namespace(namespace, prefix):
    """Puts the symbol function of every operator named `prefix`* into `namespace` under
    the name without the prefix (see the NDArray version)."""
    _nd_ops.populate_namespace(namespace, prefix, _functions)


def get(name):
    """The symbol function of operator `name` (or alias); KeyError when none is registered."""
    return _functions[name]
