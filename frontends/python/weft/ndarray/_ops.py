"""Python functions for every registered operator, generated at import from the registry.

Each function gets a real signature (the operator's inputs, then its parameters as
keyword arguments defaulting to None, which leaves the core's default in place, then
`out` and `name`) and a docstring built from the registry's docs. Operators taking a
variable number of inputs (concat, stack, add_n, ...) take them as *args and fill
their counting parameter by themselves.
"""
import keyword

from .. import _fast
from ..base import _api
from .ndarray import _param_str

# name -> function, for every operator and alias.
_functions = {}


class OpInfo:
    """What the registry says about one operator."""

    __slots__ = ("handle", "name", "doc", "aliases", "inputs", "params", "key_var_num_args")

    def __init__(self, handle):
        self.handle = handle
        self.name = _api.weft_op_get_name(handle)
        self.doc = _api.weft_op_get_doc(handle) or ""
        self.aliases = [_api.weft_op_get_alias(handle, i) for i in range(_api.weft_op_get_num_aliases(handle))]
        self.inputs = [tuple(_api.weft_op_get_input(handle, i)) for i in range(_api.weft_op_get_num_inputs(handle))]
        self.params = [tuple(_api.weft_op_get_param(handle, i)) for i in range(_api.weft_op_get_num_params(handle))]
        self.key_var_num_args = _api.weft_op_get_key_var_num_args(handle) or ""

    @property
    def variadic(self):
        return any(t.endswith("[]") for _, t, _ in self.inputs)


def list_ops():
    """OpInfo of every registered operator, in order of name."""
    return [OpInfo(_api.weft_op_get_by_index(i)) for i in range(_api.weft_op_count())]


class _NullType:
    """The default of a parameter that takes None as a value: "not given"."""

    __slots__ = ()

    def __repr__(self):
        return "_Null"


_Null = _NullType()


def optional_params(info):
    """Names of the parameters of `info` for which None is a value ("int or None",
    "Shape or None", a choice that includes None: "{None, ...}"), rather than "not given"."""
    return {p[0] for p in info.params if " or None" in p[1] or p[1].startswith("{None")}


def _docstring(info, fname):
    lines = [info.doc.strip() or info.name, ""]
    if info.inputs or info.params:
        lines += ["Parameters", "----------"]
    for iname, itype, idoc in info.inputs:
        lines.append("%s : %s" % (iname, "NDArray[]" if itype.endswith("[]") else "NDArray"))
        if idoc:
            lines.append("    " + idoc)
    for pname, ptype, pdefault, pdoc, required in info.params:
        if pname == info.key_var_num_args:
            continue
        lines.append("%s : %s, %s" % (pname, ptype, "required" if required else "optional, default=%s" % pdefault))
        if pdoc:
            lines.append("    " + pdoc)
    lines += ["out : NDArray, optional", "    The output array to write into.", "",
              "Returns", "-------", "NDArray or list of NDArrays"]
    if fname != info.name:
        lines += ["", "Alias of %s." % info.name]
    return "\n".join(lines)


def _safe(name):
    # A parameter named like a Python keyword keeps its name for the core but gets a
    # trailing underscore in the signature.
    return name + "_" if keyword.iskeyword(name) else name


def _make_function(info, fname):
    """Generates the Python function of operator `info` under the name `fname`."""
    input_names = []
    for n, _, _ in info.inputs:
        py = _safe(n)
        # `out` and `name` are the function's own keywords; backward operators also
        # have inputs named like them.
        while py in ("out", "name") or py in input_names:
            py += "_"
        input_names.append(py)
    params = [(p[0], _safe(p[0])) for p in info.params if p[0] != info.key_var_num_args]
    taken = set(input_names)
    params = [(core, py) for core, py in params if py not in taken and py not in ("out", "name")]
    sig, body = [], []
    if info.variadic:
        sig.append("*data")
        body.append("    inputs = list(data)")
        if info.key_var_num_args:
            body.append("    keys = [%r]; vals = [str(len(inputs))]" % info.key_var_num_args)
        else:
            body.append("    keys = []; vals = []")
    else:
        sig += ["%s=None" % n for n in input_names]
        body.append("    inputs = [x for x in (%s) if x is not None]" % "".join(n + ", " for n in input_names))
        body.append("    keys = []; vals = []")
    optional = optional_params(info)
    for core, py in params:
        if core in optional:
            # None is a value of these parameters (axis=None: every axis), as in MXNet: it
            # is passed on; leaving the parameter out keeps the operator's default.
            sig.append("%s=_Null" % py)
            body.append("    if %s is not _Null: keys.append(%r); vals.append(_param_str(%s))" % (py, core, py))
        else:
            sig.append("%s=None" % py)
            body.append("    if %s is not None: keys.append(%r); vals.append(_param_str(%s))" % (py, core, py))
    sig += ["out=None", "name=None", "**kwargs"]
    body.append("    for k, v in kwargs.items():")
    body.append("        if v is not None: keys.append(k); vals.append(_param_str(v))")
    body.append("    return _invoke(_handle, inputs, keys, vals, out)")
    src = "def %s(%s):\n%s\n" % ("_generated", ", ".join(sig), "\n".join(body))
    scope = {"_param_str": _param_str, "_invoke": _fast.invoke, "_handle": info.handle, "_Null": _Null}
    exec(compile(src, "<weft operator %s>" % info.name, "exec"), scope)
    fn = scope["_generated"]
    fn.__name__ = fname
    fn.__qualname__ = fname
    fn.__doc__ = _docstring(info, fname)
    fn.__module__ = "weft.ndarray"
    return fn


def populate(public, internal, make=None, functions=None):
    """Puts every operator's function, made by `make(info, name)` (default: the NDArray
    functions of this module), into the module dicts `public` (names without a leading
    underscore) and `internal` (all names), and into `functions` by name."""
    make = make or _make_function
    functions = _functions if functions is None else functions
    for info in list_ops():
        for fname in [info.name] + info.aliases:
            if not fname.isidentifier():
                continue
            fn = make(info, fname)
            functions[fname] = fn
            internal[fname] = fn
            if not fname.startswith("_") and fname not in public:
                public[fname] = fn


def populate_namespace(namespace, prefix, functions=None):
    """Puts every operator whose name (or alias) starts with `prefix` into the module dict
    `namespace` under the name without the prefix, as MXNet's `nd.contrib`, `nd.linalg` and
    `nd.image` hold `_contrib_*`, `_linalg_*` and `_image_*`. Call after `populate`."""
    functions = _functions if functions is None else functions
    for fname, fn in functions.items():
        if fname.startswith(prefix) and len(fname) > len(prefix):
            namespace.setdefault(fname[len(prefix):], fn)


# The operators MXNet 1.9's NDArray and Symbol classes define as methods ("fluent" methods:
# a.sum(axis=1) is nd.sum(a, axis=1)). They are installed on the classes (install_fluent),
# so that NDArray.sum exists, help() and inspect find them, and a call skips __getattr__.
FLUENT_METHODS = (
    "abs", "arccos", "arccosh", "arcsin", "arcsinh", "arctan", "arctanh", "argmax", "argmax_channel", "argmin",
    "argsort", "broadcast_axes", "broadcast_like", "broadcast_to", "cbrt", "ceil", "clip", "cos", "cosh", "degrees",
    "depth_to_space", "diag", "exp", "expand_dims", "expm1", "fix", "flatten", "flip", "floor", "log", "log10",
    "log1p", "log2", "log_softmax", "max", "mean", "min", "nanprod", "nansum", "norm", "one_hot", "ones_like", "pad",
    "pick", "prod", "radians", "rcbrt", "reciprocal", "relu", "repeat", "reshape_like", "rint", "round", "rsqrt",
    "shape_array", "sigmoid", "sign", "sin", "sinh", "size_array", "slice", "slice_axis", "slice_like", "softmax",
    "softmin", "sort", "space_to_depth", "split", "sqrt", "square", "squeeze", "sum", "swapaxes", "take", "tan",
    "tanh", "tile", "topk", "transpose", "trunc", "zeros_like")


def _fluent_method(fn):
    def fluent(self, *args, **kwargs):
        return fn(self, *args, **kwargs)
    return fluent


def install_fluent(cls, functions):
    """Gives `cls` a method for each of FLUENT_METHODS it does not define itself, calling
    the operator function of that name in `functions` with the object as first input."""
    for name in FLUENT_METHODS:
        fn = functions.get(name)
        if fn is None or hasattr(cls, name):
            continue

        fluent = _fluent_method(fn)
        fluent.__name__ = name
        fluent.__qualname__ = "%s.%s" % (cls.__name__, name)
        fluent.__doc__ = "%s.%s(*args, **kwargs): the operator %s with this %s as its first input.\n\n%s" % (
            cls.__name__, name, name, cls.__name__, fn.__doc__ or "")
        setattr(cls, name, fluent)


def method(name):
    """The operator function usable as NDArray method `name`, or None."""
    if name.startswith("_"):
        return None
    return _functions.get(name)


def get(name):
    """The function of operator `name` (or alias); KeyError when none is registered."""
    return _functions[name]
