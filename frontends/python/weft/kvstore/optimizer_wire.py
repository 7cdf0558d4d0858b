"""Optimizers as data: how a dist store's workers hand their optimizer to the servers.

The description is JSON: the name of one of Weft's registered optimizers, its constructor
parameters, its multipliers and its learning-rate schedule (one of Weft's schedulers, by
name, with its parameters). The servers rebuild the optimizer from it and from nothing
else: no pickle (whose loading runs whatever code the sender chose) crosses the wire.

Every value is checked on the way in: a known parameter of that optimizer or scheduler,
of the kind its default has (number, bool, text, list of numbers), numbers finite, texts
and lists short. An optimizer or scheduler that this cannot describe (a class of the
user's, a parameter holding an object) is refused with an error naming it.

What is not carried: per-parameter update counts and states (the servers start them
fresh, as set_optimizer is called before training), Gluon Parameters (their lr_mult and
wd_mult are carried, by index) and the symbol (its multipliers are carried).
"""
import inspect
import json
import math

from .. import lr_scheduler as _lrs
from .. import optimizer as _opt

__all__ = ["describe", "rebuild", "FORMAT", "MAX_BYTES"]

FORMAT = "weft.optimizer/1"
# Limits on a description: its size, a text value, a list (a scheduler's steps) and the
# multiplier tables (one entry per parameter of the model).
MAX_BYTES = 16 << 20
MAX_TEXT = 1024
MAX_LIST = 100000

# Constructor parameters that the object keeps under another attribute name.
_ALIASES = {"learning_rate": "lr", "param_idx2name": "idx2name", "eps": "float_stable_eps", "pwr": "power"}
# Constructor parameters carried in their own fields of the description (or, for sym and
# param_dict, through the multipliers they set).
_OWN_FIELDS = {"lr_scheduler", "param_idx2name", "sym", "param_dict"}
_SCHEDULERS = {k.__name__: k for k in (_lrs.FactorScheduler, _lrs.MultiFactorScheduler, _lrs.PolyScheduler,
                                       _lrs.CosineScheduler)}
_FIELDS = {"format", "name", "params", "state", "lr_mult", "wd_mult", "idx2name", "lr_scheduler"}


def _constructor_params(klass):
    """{name: default} over the __init__ of klass and its bases (the subclass's default
    first); inspect.Parameter.empty marks a required one."""
    params = {}
    for k in klass.__mro__:
        init = vars(k).get("__init__")
        if init is None or k is object:
            continue
        for p in list(inspect.signature(init).parameters.values())[1:]:
            if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY):
                params.setdefault(p.name, p.default)
    return params


def _kind(v):
    if v is None:
        return "none"
    if isinstance(v, bool):
        return "bool"
    if isinstance(v, (int, float)):
        return "number"
    if isinstance(v, str):
        return "text"
    if isinstance(v, (list, tuple)):
        return "list"
    return type(v).__name__


def _plain(value, what):
    """value as a JSON value, or ValueError naming `what` when it is not a plain one."""
    kind = _kind(value)
    if kind == "number":
        if not math.isfinite(value):
            raise ValueError("%s is %r: only finite numbers can be sent" % (what, value))
        return value if isinstance(value, int) else float(value)
    if kind in ("none", "bool"):
        return value
    if kind == "text" and len(value) <= MAX_TEXT:
        return value
    if kind == "list" and len(value) <= MAX_LIST and all(_kind(x) == "number" and math.isfinite(x) for x in value):
        return list(value)
    raise ValueError("%s holds %s, which cannot be described as data (a number, bool, text of at most %d characters, "
                     "or a list of finite numbers)" % (what, _short(value), MAX_TEXT))


def _short(value):
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _describe_object(obj, what, skip=()):
    """(params, state) of an optimizer or scheduler: its constructor parameters read back
    from its attributes, and its other plain public attributes (counters, derived rates)."""
    params, used = {}, set()
    for name in _constructor_params(type(obj)):
        if name in _OWN_FIELDS:
            continue
        attr = _ALIASES.get(name, name)
        # An alias is a usual spelling, not a rule: LARS keeps its eps as `eps`.
        if not hasattr(obj, attr) and hasattr(obj, name):
            attr = name
        if not hasattr(obj, attr):
            raise ValueError("%s: parameter '%s' cannot be read back (no attribute '%s'), so it cannot be described "
                             "as data" % (what, name, attr))
        params[name] = _plain(getattr(obj, attr), "%s parameter '%s'" % (what, name))
        used.add(attr)
    state = {}
    for attr, value in vars(obj).items():
        if attr.startswith("_") or attr in used or attr in skip or _kind(value) not in ("none", "bool", "number",
                                                                                        "text", "list"):
            continue
        state[attr] = _plain(value, "%s attribute '%s'" % (what, attr))
    return params, state


def _table(mapping, what):
    """A multiplier table (name or index -> number) as [[key, value], ...]: JSON objects
    would turn integer keys into text."""
    out = []
    for k, v in mapping.items():
        if _kind(k) not in ("number", "text") or isinstance(k, float):
            raise ValueError("%s: key %s is neither a parameter name nor an index" % (what, _short(k)))
        out.append([k, _plain(v, "%s[%r]" % (what, k))])
    return out


def describe(optimizer):
    """The JSON text (bytes) that describes `optimizer` for the servers; ValueError naming
    what cannot be described."""
    klass = type(optimizer)
    name = klass.__name__.lower()
    if _opt.Optimizer.opt_registry.get(name) is not klass or not klass.__module__.startswith("weft."):
        raise ValueError("kvstore set_optimizer: %s.%s cannot be sent to the servers: they rebuild only Weft's "
                         "registered optimizers (%s) from a description, never run code sent to them"
                         % (klass.__module__, klass.__name__, ", ".join(sorted(_opt.Optimizer.opt_registry))))
    what = "optimizer %s" % klass.__name__
    params, state = _describe_object(optimizer, what, skip=("lr_mult", "wd_mult", "idx2name", "lr_scheduler",
                                                                       "sym_info"))
    lr_mult, wd_mult = dict(optimizer.lr_mult), dict(optimizer.wd_mult)
    # Gluon Parameters' multipliers, which take precedence, become entries by index.
    for index, param in (optimizer.param_dict or {}).items():
        lr_mult[index] = getattr(param, "lr_mult", 1.0)
        wd_mult[index] = getattr(param, "wd_mult", 1.0)
    sched = optimizer.lr_scheduler
    if sched is not None:
        if _SCHEDULERS.get(type(sched).__name__) is not type(sched):
            raise ValueError("kvstore set_optimizer: the lr_scheduler %s.%s cannot be sent to the servers: only "
                             "Weft's schedulers (%s) can be described as data"
                             % (type(sched).__module__, type(sched).__name__, ", ".join(sorted(_SCHEDULERS))))
        sp, ss = _describe_object(sched, "lr_scheduler %s" % type(sched).__name__)
        sched = {"name": type(sched).__name__, "params": sp, "state": ss}
    desc = {"format": FORMAT, "name": name, "params": params, "state": state,
            "lr_mult": _table(lr_mult, "lr_mult"), "wd_mult": _table(wd_mult, "wd_mult"),
            "idx2name": _table(optimizer.idx2name, "param_idx2name"), "lr_scheduler": sched}
    text = json.dumps(desc, allow_nan=False).encode()
    if len(text) > MAX_BYTES:
        raise ValueError("kvstore set_optimizer: the description of %s is %d bytes, over the limit of %d"
                         % (what, len(text), MAX_BYTES))
    return text


_ABSENT = object()


def _refuse_constant(name):
    raise ValueError("%s is not a finite number" % name)


def _check_fields(d, fields, what):
    if not isinstance(d, dict):
        raise ValueError("%s: expected a JSON object, got %s" % (what, _kind(d)))
    unknown = sorted(set(d) - set(fields))
    if unknown:
        raise ValueError("%s: unknown field(s) %s; expected %s" % (what, ", ".join(map(repr, unknown)),
                                                                   ", ".join(sorted(fields))))


def _build(klass, params, state, what, extra=None):
    """klass(**params) then the state attributes, each checked against what klass knows."""
    known = {k: v for k, v in _constructor_params(klass).items() if k not in _OWN_FIELDS}
    _check_fields(params, known, "%s parameters" % what)
    kwargs = {}
    for name, value in params.items():
        default = known[name]
        kind = _kind(value)
        if kind not in ("none", "bool", "number", "text", "list"):
            raise ValueError("%s parameter '%s': %s is not a plain value" % (what, name, kind))
        _plain(value, "%s parameter '%s'" % (what, name))
        if default is not inspect.Parameter.empty and default is not None and kind not in (_kind(default), "none"):
            raise ValueError("%s parameter '%s': expected a %s (as its default %r), got a %s"
                             % (what, name, _kind(default), default, kind))
        kwargs[name] = value
    missing = [k for k, v in known.items() if v is inspect.Parameter.empty and k not in kwargs]
    if missing:
        raise ValueError("%s: missing required parameter(s) %s" % (what, ", ".join(missing)))
    try:
        obj = klass(**dict(kwargs, **(extra or {})))
    except (TypeError, ValueError) as e:
        raise ValueError("%s: %s" % (what, e))
    if not isinstance(state, dict):
        raise ValueError("%s state: expected a JSON object, got %s" % (what, _kind(state)))
    for attr, value in state.items():
        current = vars(obj).get(attr, _ABSENT)
        if attr.startswith("_") or current is _ABSENT:
            raise ValueError("%s: unknown attribute '%s' in its state" % (what, attr))
        _plain(value, "%s attribute '%s'" % (what, attr))
        if _kind(current) not in (_kind(value), "none") and _kind(value) != "none":
            raise ValueError("%s attribute '%s': expected a %s, got a %s" % (what, attr, _kind(current), _kind(value)))
        setattr(obj, attr, value)
    return obj


def _pairs(value, what, key_kinds, value_kind):
    if not isinstance(value, list) or len(value) > MAX_LIST:
        raise ValueError("%s: expected a list of at most %d [key, value] pairs" % (what, MAX_LIST))
    out = {}
    for pair in value:
        if (not isinstance(pair, list) or len(pair) != 2 or _kind(pair[0]) not in key_kinds
                or isinstance(pair[0], float) or _kind(pair[1]) != value_kind):
            raise ValueError("%s: expected [key, %s] pairs, got %s" % (what, value_kind, _short(pair)))
        _plain(pair[1], "%s[%r]" % (what, pair[0]))
        out[pair[0]] = pair[1]
    return out


def rebuild(text):
    """The optimizer `text` (bytes, from describe) describes; ValueError saying what is
    wrong with it. Nothing in `text` is run: it only selects a registered class and
    gives it checked values."""
    if len(text) > MAX_BYTES:
        raise ValueError("the optimizer description is %d bytes, over the limit of %d" % (len(text), MAX_BYTES))
    try:
        d = json.loads(bytes(text).decode("utf-8"), parse_constant=_refuse_constant)
    except (UnicodeDecodeError, ValueError, RecursionError) as e:
        raise ValueError("expected a JSON optimizer description (%s), got %d bytes that are not one (%s); pickled "
                         "optimizers are refused" % (FORMAT, len(text), str(e)[:100]))
    _check_fields(d, _FIELDS, "the optimizer description")
    if d.get("format") != FORMAT:
        raise ValueError("the optimizer description has format %s, expected %r" % (_short(d.get("format")), FORMAT))
    name = d.get("name")
    klass = _opt.Optimizer.opt_registry.get(name) if isinstance(name, str) else None
    if klass is None or not klass.__module__.startswith("weft."):
        raise ValueError("unknown optimizer %s; expected one of %s"
                         % (_short(name), ", ".join(sorted(_opt.Optimizer.opt_registry))))
    what = "optimizer %s" % klass.__name__
    idx2name = _pairs(d.get("idx2name", []), "param_idx2name", ("number",), "text")
    optimizer = _build(klass, d.get("params", {}), d.get("state", {}), what, extra={"param_idx2name": idx2name})
    optimizer.set_lr_mult(_pairs(d.get("lr_mult", []), "lr_mult", ("number", "text"), "number"))
    optimizer.set_wd_mult(_pairs(d.get("wd_mult", []), "wd_mult", ("number", "text"), "number"))
    sched = d.get("lr_scheduler")
    if sched is not None:
        _check_fields(sched, {"name", "params", "state"}, "the lr_scheduler description")
        sklass = _SCHEDULERS.get(sched.get("name")) if isinstance(sched.get("name"), str) else None
        if sklass is None:
            raise ValueError("unknown lr_scheduler %s; expected one of %s"
                             % (_short(sched.get("name")), ", ".join(sorted(_SCHEDULERS))))
        # Attached as it is: the worker's optimizer has already reconciled its learning
        # rate with the scheduler's base_lr, and the description carries both.
        optimizer.lr_scheduler = _build(sklass, sched.get("params", {}), sched.get("state", {}),
                                        "lr_scheduler %s" % sklass.__name__)
    return optimizer
