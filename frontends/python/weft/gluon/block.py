"""Blocks, as MXNet 1.x's `gluon.Block`, `HybridBlock` and `SymbolBlock`.

A Block is a piece of a network with parameters and child blocks; `forward` runs it on
arrays. A HybridBlock writes its computation once, as `hybrid_forward(F, x, ...)` with F
either `weft.nd` (run now) or `weft.sym` (build a graph). `hybridize()` makes later calls
trace the block into a Symbol and run it through a bound executor (memory planning,
fusion), cached per input shapes, dtypes, context and training mode.

Every call of a hybridized block traces it again (symbol composition only, nothing runs)
and compares the graph with the cached one: when Python control flow in hybrid_forward took
another path than when the graph was cached (a flag flipped, say), the call raises an error
naming the first differing node instead of silently running the stale graph. Trees made only
of Weft's own layers (their hybrid_forward marked `_fixed_graph`) skip that trace while no
block has changed since their graph was last checked.
"""
import os
import re
import threading
import warnings
import weakref
from collections import OrderedDict

import numpy as np

from .. import autograd
from .. import name as _name
from .. import ndarray
from .. import symbol
from ..base import MXNetError, _api
from ..context import _param_context
from ..ndarray import NDArray
from ..symbol import Symbol
from .parameter import Parameter, ParameterDict, DeferredInitializationError, ParameterLoadError, arrays_version
from .utils import _brief_print_list

__all__ = ["Block", "HybridBlock", "SymbolBlock"]


class _BlockScope:
    """The naming scope of a block: children created inside `with block.name_scope()` get
    the block's prefix and a counter per kind (dense0_, dense1_, ...)."""
    _current = threading.local()
    _global_counter = {}
    _global_lock = threading.Lock()

    def __init__(self, block, owned=False):
        # owned: the block's own scope (Block.__init__), which holds its block weakly: a strong
        # link back would make every block a reference cycle, freed only by the cyclic
        # collector, which runs by object counts and not by bytes: dropped networks kept their
        # cached graphs' arrays (gigabytes in MXNet 1.9.1's test_gluon.py slice tests) until it
        # happened to run. A scope made for another object (MXNet's `_BlockScope(obj)` with an
        # object only the scope refers to) holds it strongly.
        self._owned = owned
        self._hold(block)
        self._counter = {}
        self._old_scope = None
        self._name_scope = None

    def _hold(self, block):
        self._block_ref = weakref.ref(block) if self._owned else (lambda: block)

    @property
    def _block(self):
        return self._block_ref()

    # Copies (copy.deepcopy, pickle) carry the block itself, so that a copied block's scope
    # names the copy, not the original.
    def __getstate__(self):
        state = dict(self.__dict__)
        state["_block_ref"] = self._block
        return state

    def __setstate__(self, state):
        state = dict(state)
        block = state.pop("_block_ref")
        self.__dict__.update(state)
        self._hold(block)

    @staticmethod
    def create(prefix, params, hint):
        current = getattr(_BlockScope._current, "value", None)
        if current is None:
            if prefix is None:
                with _BlockScope._global_lock:
                    count = _BlockScope._global_counter.get(hint, 0)
                    _BlockScope._global_counter[hint] = count + 1
                prefix = "%s%d_" % (hint, count)
            params = ParameterDict(prefix) if params is None else ParameterDict(params.prefix, params)
            return prefix, params
        if prefix is None:
            count = current._counter.get(hint, 0)
            prefix = "%s%d_" % (hint, count)
            current._counter[hint] = count + 1
        if params is None:
            parent = current._block.params
            params = ParameterDict(parent.prefix + prefix, parent._shared)
        else:
            params = ParameterDict(params.prefix, params)
        return current._block.prefix + prefix, params

    def __enter__(self):
        if self._block._empty_prefix:
            return self
        self._old_scope = getattr(_BlockScope._current, "value", None)
        _BlockScope._current.value = self
        self._name_scope = _name.Prefix(self._block.prefix)
        self._name_scope.__enter__()
        return self

    def __exit__(self, *exc):
        if self._block._empty_prefix:
            return
        self._name_scope.__exit__(*exc)
        self._name_scope = None
        _BlockScope._current.value = self._old_scope
        # A child's scope is entered inside its parent's whenever the parent runs: kept, the
        # link would hold the last parent (and the arrays of its cached graph) alive as long
        # as the child, past the parent's own end.
        self._old_scope = None


# Moves at every change to any block that a trace can depend on: an attribute set, a child
# added, a hook registered or removed. Weft's layers set nothing while they run, so in a
# training loop it stands still.
_blocks_version = 0


def _touch_blocks():
    global _blocks_version
    _blocks_version += 1


def _fixed_graph(hybrid_forward):
    """Marks a hybrid_forward whose graph is a function of its block's attributes and
    children and of the inputs alone: it reads no global state, calls no method a subclass
    could override, and calls only registered children. The trace of a tree of such blocks
    cannot take another path while no block has changed (_blocks_version)."""
    hybrid_forward._weft_fixed_graph = True
    return hybrid_forward


def _flatten(args):
    """The arrays (or Symbols) of `args`, which may nest lists as MXNet's blocks allow
    (`layer(data, [state])`), in order, and the nesting: None for an array, a list of
    nestings for a list."""
    flat, fmt = [], []
    for a in args:
        if isinstance(a, (list, tuple)):
            f, sub = _flatten(a)
            flat.extend(f)
            fmt.append(sub)
        else:
            flat.append(a)
            fmt.append(None)
    return flat, fmt


def _split_outputs(out):
    """A traced output with the Symbols of several outputs (a Custom operator's, a Group)
    given as lists of their outputs: the block then returns a list of arrays for each, as
    MXNet's blocks do."""
    if isinstance(out, (list, tuple)):
        return [_split_outputs(o) for o in out]
    if isinstance(out, symbol.Symbol) and len(out) > 1:
        return list(out)
    return out


def _regroup(fmt, flat):
    """Inverse of _flatten: the values of `flat` nested as `fmt` says."""
    values = iter(flat)
    return [_regroup_one(f, values) for f in fmt]


# Module-level rather than nested: a nested recursive function is a reference cycle, which
# would keep the arrays it reaches alive until Python's cyclic collector runs.
def _regroup_one(f, values):
    return next(values) if f is None else [_regroup_one(sub, values) for sub in f]


def _holds_block(value):
    if isinstance(value, Block):
        return True
    if isinstance(value, (list, tuple)):
        return any(_holds_block(v) for v in value)
    if isinstance(value, dict):
        return any(_holds_block(v) for v in value.values())
    return False


def _repr_children(name, children):
    """`name(`, a line `  (key): repr` per child (its own lines indented), and `)`."""
    body = "\n".join("  (%s): %s" % (key, repr(child).replace("\n", "\n  ")) for key, child in children)
    return "%s(\n%s\n)" % (name, body)


class Block:
    """The base of every layer and model: parameters, children, naming and (de)serialisation."""

    def __init__(self, prefix=None, params=None):
        self._empty_prefix = prefix == ""
        self._prefix, self._params = _BlockScope.create(prefix, params, self._alias())
        self._name = self._prefix[:-1] if self._prefix.endswith("_") else self._prefix
        self._scope = _BlockScope(self, owned=True)
        self._children = OrderedDict()
        self._reg_params = {}
        self._forward_hooks = OrderedDict()
        self._forward_pre_hooks = OrderedDict()

    def __repr__(self):
        # MXNet's layout: the blocks held in attributes, by attribute name, between a line
        # with the class name and a closing line (a block without any shows an empty line).
        return _repr_children(type(self).__name__,
                              ((k, v) for k, v in self.__dict__.items() if isinstance(v, Block)))

    def __setattr__(self, name, value):
        _touch_blocks()
        if hasattr(self, "_children"):
            existing = self.__dict__.get(name)
            if isinstance(existing, (Block, Parameter)) and not isinstance(value, type(existing)):
                raise TypeError("Changing attribute '%s' of %s from %s to %s is not allowed"
                                % (name, self.name, type(existing).__name__, type(value).__name__))
            if isinstance(value, Block):
                self.register_child(value, name)
            elif isinstance(value, Parameter):
                if name in self._reg_params and self._reg_params[name] is not value:
                    raise ValueError("Overriding Parameter attribute '%s' of %s is not allowed" % (name, self.name))
                self._reg_params[name] = value
        super().__setattr__(name, value)

    def _alias(self):
        return type(self).__name__.lower()

    @property
    def prefix(self):
        return self._prefix

    @property
    def name(self):
        return self._name

    @property
    def params(self):
        """This block's own ParameterDict (children's parameters not included)."""
        return self._params

    def name_scope(self):
        """Context manager in which children and parameters get this block's prefix."""
        return self._scope

    def _warn_unregistered_blocks(self):
        """Warns about blocks kept in a list, tuple or dict attribute: they are not children,
        so their parameters are not collected, saved or trained."""
        for name, value in self.__dict__.items():
            if isinstance(value, (list, tuple, dict)) and not name.startswith("_") and _holds_block(value):
                warnings.warn('"%s" is an unregistered container with Blocks. Note that Blocks inside the list, '
                              'tuple or dict will not be registered automatically. Make sure to register them '
                              'using register_child() or switching to nn.Sequential/nn.HybridSequential instead.'
                              % (self.__class__.__name__ + "." + name), stacklevel=3)

    def collect_params(self, select=None):
        """A ParameterDict of this block's and all its children's parameters, optionally
        filtered by a regular expression on the names."""
        self._warn_unregistered_blocks()
        ret = ParameterDict(self._params.prefix)
        if select is None:
            ret.update(self._params)
            for p in self._reg_params.values():
                if p.name not in ret:
                    ret._params[p.name] = p
        else:
            rx = re.compile(select)
            ret.update({k: v for k, v in self._params.items() if rx.match(k)})
            for p in self._reg_params.values():
                if rx.match(p.name) and p.name not in ret:
                    ret._params[p.name] = p
        for child in self._children.values():
            ret.update(child.collect_params(select))
        return ret

    def _collect_params_with_prefix(self, prefix=""):
        if prefix:
            prefix += "."
        ret = {prefix + key: p for key, p in self._reg_params.items()}
        for name, child in self._children.items():
            ret.update(child._collect_params_with_prefix(prefix + name))
        return ret

    def register_child(self, block, name=None):
        """Adds `block` as a child (attribute assignment does this too)."""
        if name is None:
            name = str(len(self._children))
        self._children[name] = block
        _touch_blocks()

    def register_forward_pre_hook(self, hook):
        key = object()
        self._forward_pre_hooks[key] = hook
        _touch_blocks()
        return _HookHandle(self._forward_pre_hooks, key)

    def register_forward_hook(self, hook):
        key = object()
        self._forward_hooks[key] = hook
        _touch_blocks()
        return _HookHandle(self._forward_hooks, key)

    def register_op_hook(self, callback, monitor_all=False):
        """Installs callback(name, op_name, array) on the operators the hybridized blocks
        below run (see HybridBlock.register_op_hook)."""
        for child in self._children.values():
            child.register_op_hook(callback, monitor_all)

    def apply(self, fn):
        """Calls fn on every child, recursively, then on this block; returns self."""
        for child in self._children.values():
            child.apply(fn)
        fn(self)
        return self

    def initialize(self, init=None, ctx=None, verbose=False, force_reinit=False):
        """Initialises every parameter (default init: Uniform) on `ctx`."""
        from .. import initializer
        self.collect_params().initialize(initializer.Uniform() if init is None else init, ctx, verbose,
                                         force_reinit)

    def hybridize(self, active=True, **kwargs):
        """Turns hybridization on (or off) for every HybridBlock among the children."""
        for child in self._children.values():
            child.hybridize(active, **kwargs)

    def cast(self, dtype):
        """Converts every parameter to `dtype`."""
        for child in self._children.values():
            child.cast(dtype)
        for p in self._reg_params.values():
            p.cast(dtype)

    def reset_ctx(self, ctx):
        self.collect_params().reset_ctx(ctx)

    def zero_grad(self):
        self.collect_params().zero_grad()

    # ---------------------------------------------------------------- files
    def save_parameters(self, filename, deduplicate=False):
        """Saves the parameters under structural names ('features.0.weight'), as MXNet."""
        params = self._collect_params_with_prefix()
        arrays = {}
        seen = {}
        for key, p in params.items():
            if deduplicate and id(p) in seen:
                continue
            seen[id(p)] = key
            arrays[key] = p.data() if p._stype == "default" else p._reduce()
        ndarray.save(filename, arrays)

    def load_parameters(self, filename, ctx=None, allow_missing=False, ignore_extra=False, cast_dtype=False,
                        dtype_source="current"):
        """Loads parameters saved by save_parameters (or, for files with prefixed names, by
        save_params / ParameterDict.save)."""
        loaded = ndarray.load(filename)
        params = self._collect_params_with_prefix()
        if not loaded and not params:
            return  # an empty file (saved from an empty dict it loads as an empty list)
        if not isinstance(loaded, dict):
            raise ValueError("load_parameters: %s holds an unnamed array list; expected named parameters" % filename)
        if not any("." in k for k in loaded):
            # Files written with full names (save_params, ParameterDict.save, Module checkpoints).
            self.collect_params().load(filename, ctx, allow_missing, ignore_extra, self.prefix, cast_dtype=cast_dtype,
                                       dtype_source=dtype_source)
            return
        if not allow_missing:
            # A parameter shared by several blocks has several structural names; a file saved
            # with deduplicate=True holds it under one of them, which is enough.
            names_of = {}
            for name, p in params.items():
                names_of.setdefault(id(p), []).append(name)
            for name, p in params.items():
                if not any(n in loaded for n in names_of[id(p)]):
                    raise ParameterLoadError("Parameter '%s' is missing in file '%s', which contains parameters: "
                                             "%s. Set allow_missing=True to ignore missing parameters."
                                             % (name, filename, _brief_print_list(loaded.keys())))
        for name, value in loaded.items():
            if name not in params:
                if not ignore_extra:
                    # A plain ValueError here, as MXNet's.
                    raise ValueError("Parameter '%s' loaded from file '%s' is not present in this block, which "
                                     "contains parameters %s. Set ignore_extra=True to ignore."
                                     % (name, filename, _brief_print_list(params.keys())))
                continue
            p = params[name]
            if cast_dtype and dtype_source == "saved":
                p.cast(value.dtype)
            elif cast_dtype:
                value = value.astype(p.dtype)
            if p._data is None and p._deferred_init is None:
                p.shape = value.shape
                p.initialize(ctx=ctx)
            elif p._data is None:
                p.shape = value.shape
            p.set_data(value)

    def _structure(self):
        """The tree of blocks in the form MXNet 1.9's save writes: per block its name, for a
        HybridBlock whether it is hybridized, and its children by the names they have here."""
        mdl = {"orig_name": self.name, "children": []}
        if isinstance(self, HybridBlock):
            mdl["hybridized"] = self._active
        for ch_name, child in self._children.items():
            mdl["children"].append([ch_name, type(child).__name__.lower(), child._structure()])
        return mdl

    def save(self, prefix):
        """Writes the block tree to <prefix>-model.json and the parameters to
        <prefix>-model.params. `load` on a block built by the same code restores both."""
        import json  # pylint: disable=import-outside-toplevel
        with open(prefix + "-model.json", "w") as f:
            json.dump({type(self).__name__.lower(): self._structure()}, f)
        self.save_parameters(prefix + "-model.params")

    def load(self, prefix):
        """Loads what `save` wrote into this block, which must have the same tree of blocks
        (the same classes in the same places): the parameters, and hybridization where the
        saved blocks were hybridized. The graphs are traced again at the first call."""
        import json  # pylint: disable=import-outside-toplevel
        with open(prefix + "-model.json") as f:
            model = json.load(f)

        def restore(blk, kind, mdl, where):
            if kind != type(blk).__name__.lower():
                raise ValueError("Block.load: %s is a %s, but %s-model.json has a %s there"
                                 % (where, type(blk).__name__, prefix, kind))
            # Children are matched in order: a block built again gets new names.
            if len(mdl["children"]) != len(blk._children):
                raise ValueError("Block.load: %s has %d children, but %s-model.json has %d there"
                                 % (where, len(blk._children), prefix, len(mdl["children"])))
            if isinstance(blk, HybridBlock) and mdl.get("hybridized"):
                blk._active = True
                blk._cached = {}
            for child, (_, ch_kind, ch_mdl) in zip(blk._children.values(), mdl["children"]):
                restore(child, ch_kind, ch_mdl, where + "." + child.name)
            # The saved parameter names follow the children's names at save time.
            blk._children = OrderedDict((name, child) for (name, _, _), child
                                        in zip(mdl["children"], blk._children.values()))

        if len(model) != 1:
            raise ValueError("Block.load: %s-model.json must hold one top-level block, got %d" % (prefix, len(model)))
        (kind, mdl), = model.items()
        restore(self, kind, mdl, type(self).__name__)
        self.load_parameters(prefix + "-model.params")

    def save_params(self, filename):
        """Saves with full parameter names (MXNet's older form); prefer save_parameters."""
        self.collect_params().save(filename, strip_prefix=self.prefix)

    def load_params(self, filename, ctx=None, allow_missing=False, ignore_extra=False):
        self.load_parameters(filename, ctx, allow_missing, ignore_extra)

    # ---------------------------------------------------------------- running
    def __call__(self, *args):
        for hook in self._forward_pre_hooks.values():
            hook(self, args)
        out = self.forward(*args)
        for hook in self._forward_hooks.values():
            hook(self, args, out)
        return out

    def forward(self, *args):
        raise NotImplementedError("%s must define forward" % type(self).__name__)

    def summary(self, *inputs):
        """Runs one forward on `inputs` and prints, as MXNet does, a row per layer (not the
        Sequential containers) with its output shape and parameter count, then the totals:
        all, trainable (grad_req not 'null'), and those counted again by a layer sharing them.
        The blocks must be initialized and not hybridized (a graph hides its layers' outputs)."""
        from .nn.basic_layers import HybridSequential, Sequential

        def shapes(x):
            if isinstance(x, (list, tuple)):
                return [shapes(v) for v in x]
            return x.shape if isinstance(x, NDArray) else x

        def shape_text(x):
            got = shapes(x)
            return str(got)[1:-1] if isinstance(got, list) else str(got)

        rows = [("Input", shape_text(list(inputs)), 0, 0, 0)]
        seen = set()

        def hook(block, _, out):
            total = trainable = shared = 0
            for p in block.params.values():
                size = p.data().size
                total += size
                trainable += 0 if p.grad_req == "null" else size
                if id(p) in seen:
                    shared += size
                seen.add(id(p))
            rows.append(("%s-%d" % (type(block).__name__, len(rows)), shape_text(out), total, trainable, shared))

        handles = []

        def register(block):
            if isinstance(block, HybridBlock) and block._active:
                raise AssertionError("summary: block '%s' is hybridized, and a hybridized block's layers are not "
                                     "run one by one; call summary before hybridize()" % block.name)
            if not isinstance(block, (Sequential, HybridSequential)):
                handles.append(block.register_forward_hook(hook))

        try:
            self.apply(register)
            self(*inputs)
        finally:
            for h in handles:
                h.detach()
        row = "{:>20}  {:>42} {:>15}"
        print("-" * 80)
        print(row.format("Layer (type)", "Output Shape", "Param #"))
        print("=" * 80)
        for name, shape, total, _, _ in rows:
            print(row.format(name, shape, total))
        total = sum(r[2] for r in rows)
        trainable = sum(r[3] for r in rows)
        shared = sum(r[4] for r in rows)
        print("=" * 80)
        print("Parameters in forward computation graph, duplicate included")
        print("   Total params: %d" % total)
        print("   Trainable params: %d" % trainable)
        print("   Non-trainable params: %d" % (total - trainable))
        print("Shared params in forward computation graph: %d" % shared)
        print("Unique parameters in model: %d" % (total - shared))
        print("-" * 80)


class _HookHandle:
    def __init__(self, hooks, key):
        self._hooks = hooks
        self._key = key

    def detach(self):
        self._hooks.pop(self._key, None)
        _touch_blocks()


class _CachedGraph:
    """One traced graph of a hybridized block bound to an executor, for one input signature.
    `grads`: bind the parameters' gradients (calls under autograd.record()). Without them
    the executor is an inference one: in predict mode it runs its oneDNN regions (BatchNorm
    folded into the convolutions, weights reordered once, not at every call)."""

    def __init__(self, block, sym, input_names, num_outputs, out_fmt, args, ctx, input_grads, grads,
                 param_inputs=()):
        self.sym = sym  # the trace, which later traces are checked against
        self.ctx = ctx
        # Parameters given as inputs at each call (a spare's): their gradients go back through
        # autograd, which adds them up with the other calls' (see spare()).
        self.param_inputs = list(param_inputs)
        self.spares = []
        # What is bound and exported: the trace partitioned for the block's backend, if any.
        if block._backend:
            sym = sym.optimize_for(block._backend, **block._backend_opts)
        self.run_sym = sym
        self.input_names = input_names
        self.num_outputs = num_outputs
        self.out_fmt = out_fmt  # how the flat outputs nest (_regroup)
        # The _blocks_version at which a trace last matched this graph, when the block's
        # whole tree is made of _fixed_graph layers; None otherwise.
        self.checked_at = None
        self.arrays_version = arrays_version()
        params = {p.name: p for p in block.collect_params().values()}
        arg_arrays, grad_arrays, reqs = {}, {}, {}
        bound_params = []
        for i, name in enumerate(input_names):
            arg_arrays[name] = ndarray.empty(args[i].shape, ctx=ctx, dtype=args[i].dtype)
            if input_grads[i]:
                grad_arrays[name] = ndarray.zeros(args[i].shape, ctx=ctx, dtype=args[i].dtype)
                reqs[name] = "write"
            else:
                reqs[name] = "null"
        for name in sym.list_arguments():
            if name in arg_arrays:
                continue
            if name not in params:
                raise RuntimeError("hybridize: the graph of %s reads a variable '%s' that is neither an input nor one "
                                   "of its parameters" % (block.name, name))
            p = params[name]
            arg_arrays[name] = p.data(ctx)
            bound_params.append(arg_arrays[name])
            reqs[name] = p.grad_req if grads else "null"
            if reqs[name] != "null":
                grad_arrays[name] = p.grad(ctx)
        aux = {}
        for name in sym.list_auxiliary_states():
            aux[name] = params[name].data(ctx)
            bound_params.append(aux[name])
        self.exe = sym.bind(ctx, arg_arrays, args_grad=grad_arrays, grad_req=reqs, aux_states=aux)
        self.bound_inputs = [arg_arrays[n] for n in input_names]
        self.input_grads = [grad_arrays.get(n) for n in input_names]
        self.bound_params = bound_params

    def set_op_hook(self, hook):
        """Routes the executor's monitor to hook = (callback, monitor_all) (None: off)."""
        if hook is None:
            self.exe.set_monitor_callback(None)
            return
        import json
        callback, monitor_all = hook
        nodes = json.loads(self.run_sym.tojson(remove_amp_cast=False))["nodes"]
        ops = {n["name"]: n["op"] for n in nodes if n["op"] != "null"}
        variables = {n["name"] for n in nodes if n["op"] == "null"}

        outputs = _hook_output_names(self.sym, ops)

        def on_value(name, array):
            # The executor also reports variable inputs by their own name; a CachedOp does not.
            if name in variables:
                return
            node = max((n for n in ops if name.startswith(n + "_")), key=len, default=None)
            callback(outputs.get(name, name).encode("utf-8"), (ops[node] if node else "").encode("utf-8"), array)
        self.exe.set_monitor_callback(on_value, monitor_all)

    def still_bound(self):
        # Casting or moving parameters replaces their arrays: the executor must be rebuilt.
        return self.arrays_version == arrays_version()

    def backward_pending(self):
        """Whether a recorded call of this graph still awaits its backward."""
        return self.exe._backward_pending()

    def spare(self, block, args, input_grads):
        """A graph for a recorded call made while this one's last recorded call still awaits
        its backward (`net(x) + net(x)` in one record()): the executor keeps one call's state,
        so the call runs on a spare executor, as MXNet's CachedOp takes another state. A spare
        takes the parameters as inputs, so their gradients go back through autograd, which
        adds them to what the other calls' backwards wrote."""
        for g in self.spares:
            if not g.backward_pending():
                return g
        params = {p.name: p for p in block.collect_params().values()}
        aux = set(self.sym.list_auxiliary_states())
        taken = [params[n] for n in self.sym.list_arguments() if n not in self.input_names and n not in aux]
        g = _CachedGraph(block, self.sym, self.input_names + [p.name for p in taken], self.num_outputs,
                         self.out_fmt, list(args) + [p.data(self.ctx) for p in taken], self.ctx,
                         tuple(input_grads) + tuple(p.grad_req != "null" for p in taken), True, taken)
        g.set_op_hook(block._op_hook)
        self.spares.append(g)
        return g

    def run(self, args, is_train):
        # One C call copies the inputs in, runs forward, copies the outputs out and, while
        # autograd records, records the call with the executor's backward as its gradient.
        args = list(args) + [p.data(self.ctx) for p in self.param_inputs]
        return [NDArray(h) for h in _api.weft_executor_invoke(
            self.exe.handle, len(args), args, self.bound_inputs, self.input_grads, len(self.bound_params),
            self.bound_params, 1 if is_train else 0)]


# The operators MXNet 1.9.1 gives output names (FListOutputNames, or a legacy operator's
# ListOutputs): its CachedOp hook calls their outputs "<node>_<name>" ("<node>_output"),
# and those of every other operator "<node>_<index>" ("<node>_0").
_MXNET_NAMED_OUTPUTS = frozenset("""
    Activation BatchNorm BatchNorm_v1 BilinearSampler Concat Convolution Convolution_v1 Correlation Crop
    CuDNNBatchNorm Custom Deconvolution Dropout FullyConnected GridGenerator GroupNorm IdentityAttachKLSparseReg
    InstanceNorm L2Normalization LRN LayerNorm LeakyReLU MakeLoss Pad Pooling Pooling_v1 RNN ROIPooling SVMOutput
    SequenceLast SequenceMask SequenceReverse SliceChannel SoftmaxActivation SoftmaxOutput SpatialTransformer
    SwapAxis UpSampling _CrossDeviceCopy _contrib_BatchNormWithReLU _contrib_DeformableConvolution
    _contrib_DeformablePSROIPooling _contrib_MultiBoxDetection _contrib_MultiBoxPrior _contrib_MultiBoxTarget
    _contrib_MultiProposal _contrib_PSROIPooling _contrib_Proposal _contrib_ROIAlign _contrib_RROIAlign
    _contrib_SyncBatchNorm _contrib_calibrate_entropy _contrib_count_sketch _contrib_fft _contrib_hawkesll
    _contrib_ifft _contrib_index_array _contrib_interleaved_matmul_encdec_qk
    _contrib_interleaved_matmul_encdec_valatt _contrib_interleaved_matmul_selfatt_qk
    _contrib_interleaved_matmul_selfatt_valatt _contrib_quantize_asym _contrib_quantized_act
    _contrib_quantized_batch_norm _contrib_quantized_concat _contrib_quantized_conv _contrib_quantized_elemwise_add
    _contrib_quantized_elemwise_mul _contrib_quantized_embedding _contrib_quantized_flatten
    _contrib_quantized_fully_connected _contrib_quantized_pooling _contrib_quantized_rnn _rnn_param_concat col2im
    elemwise_add im2col make_loss softmax softmin _CachedOp
""".split())


def _hook_output_names(sym, ops):
    """The name MXNet's CachedOp hook gives each operator output of `sym` (by the name the
    executor's monitor uses): "<node>_<index>" for an operator MXNet names no outputs of."""
    names = {}
    counts = {}
    for out in sym.get_internals().list_outputs():
        node = max((n for n in ops if out.startswith(n + "_")), key=len, default=None)
        if node is None:
            continue
        i = counts.get(node, 0)
        counts[node] = i + 1
        names[out] = out if ops[node] in _MXNET_NAMED_OUTPUTS else "%s_%d" % (node, i)
    return names


def _first_difference(json_a, json_b):
    import json
    na = json.loads(json_a)["nodes"]
    nb = json.loads(json_b)["nodes"]
    for i in range(max(len(na), len(nb))):
        a = na[i] if i < len(na) else None
        b = nb[i] if i < len(nb) else None
        if a != b:
            def show(n):
                return "none" if n is None else "%s '%s' %s" % (n["op"], n["name"], n.get("attrs", {}))
            return "node %d: cached %s, now %s" % (i, show(a), show(b))
    heads_a, heads_b = json.loads(json_a)["heads"], json.loads(json_b)["heads"]
    return "outputs: cached %s, now %s" % (heads_a, heads_b)


class HybridBlock(Block):
    """A block written as hybrid_forward(F, x, *args, **params) that runs imperatively or,
    after hybridize(), as a cached, planned graph."""

    def __init__(self, prefix=None, params=None):
        super().__init__(prefix, params)
        self._active = False
        self._cached = {}
        # Which flattened inputs the first hybridized call gave (False for None): later calls
        # must give the same ones (_check_given).
        self._given = None
        self._op_hook = None  # (callback, monitor_all) of register_op_hook
        self._backend = None  # the subgraph backend its graph is partitioned for (hybridize)
        self._backend_opts = {}
        self._flags = {}  # MXNet's CachedOp flags given to hybridize (static_alloc, inline_limit, ...)

    def hybridize(self, active=True, backend=None, backend_opts=None, **kwargs):
        """As Block.hybridize; `backend` (MXNet's subgraph backend, e.g. 'MKLDNN') partitions
        this block's graph for it (Symbol.optimize_for, with `backend_opts`) before it is
        bound. The backend applies to this block's graph, not to its children's own."""
        self._active = active
        self._backend = backend
        if backend_opts is not None:
            self._backend_opts = dict(backend_opts)
        self._cached = {}
        self._given = None
        self._flags = dict(kwargs)
        super().hybridize(active, **kwargs)

    def optimize_for(self, x, *args, backend=None, clear=False, **kwargs):
        """Hybridizes this block for `backend` and builds its graph for inputs (x, *args)
        without running it, as MXNet's: afterwards `export` writes the partitioned graph and
        calls run it. kwargs are the backend's options (MXNet's static_alloc and the other
        hybridize flags are accepted and need nothing in Weft)."""
        if not backend:
            raise ValueError('Must specify "backend" to optimize_for')
        flags = ("static_alloc", "static_shape", "inline_limit", "forward_bulk_size", "backward_bulk_size")
        opts = {k: v for k, v in kwargs.items() if k not in flags}
        self.hybridize(True, backend=backend, backend_opts=opts if opts or clear else None)
        flat, fmt = _flatten((x,) + args)
        if not any(isinstance(a, NDArray) for a in flat):
            raise ValueError("%s: optimize_for needs NDArray inputs to build the graph for, got %s"
                             % (self.name, ", ".join(type(a).__name__ for a in flat)))
        self._cached_graph_for(flat, fmt)

    def cast(self, dtype):
        self._cached = {}
        super().cast(dtype)

    def register_op_hook(self, callback, monitor_all=False):
        """Calls callback(name, op_name, array) for every operator output of this block's
        hybridized graph as it runs (and, with monitor_all, for every operator input
        first), as MXNet's CachedOp does: names are "<node>_output" / "<node>_<input>" in
        bytes, op_name the operator's name in bytes; variables are not reported. As in
        MXNet, the hook goes on this block and its direct children."""
        for block in [self] + list(self._children.values()):
            if isinstance(block, HybridBlock):
                block._op_hook = (callback, monitor_all)
                for graph in block._cached.values():
                    graph.set_op_hook(block._op_hook)

    def register_child(self, block, name=None):
        if not isinstance(block, HybridBlock):
            raise ValueError("Children of a HybridBlock must be HybridBlocks too, but %s has type %s; use Block "
                             "(or HybridLambda) instead" % (block.name if isinstance(block, Block) else block,
                                                            type(block).__name__))
        super().register_child(block, name)
        self._cached = {}

    def hybrid_forward(self, F, x, *args, **kwargs):
        raise NotImplementedError("%s must define hybrid_forward" % type(self).__name__)

    # ---------------------------------------------------------------- tracing
    def _input_names(self, n):
        return ["data"] if n == 1 else ["data%d" % i for i in range(n)]

    def _get_graph(self, *args, fmt=None):
        """The traced graph for inputs `args` (nested as `fmt` says, when given): input names,
        the symbol of its flattened outputs, their number and their nesting."""
        # None inputs (optional arguments left out) stay None in the trace and get no variable.
        names = self._input_names(sum(a is not None for a in args))
        variables = iter([symbol.var(n) for n in names])
        inputs = [None if a is None else next(variables) for a in args]
        with self.name_scope():
            params = {k: v.var() for k, v in self._reg_params.items()}
            out = self.hybrid_forward(symbol, *(_regroup(fmt, inputs) if fmt else inputs), **params)
        outs, out_fmt = _flatten([_split_outputs(out)])
        return names, (symbol.Group(outs) if len(outs) > 1 else outs[0]), len(outs), out_fmt

    def infer_shape(self, *args):
        """Fills in the unknown parameter shapes from the shapes of `args`."""
        flat, fmt = _flatten(args)
        names, sym, _, _ = self._get_graph(*flat, fmt=fmt)
        known = {n: tuple(a.shape) for n, a in zip(names, [a for a in flat if a is not None])}
        arg_shapes, _, aux_shapes = sym.infer_shape(**known)
        if arg_shapes is None:
            raise ValueError("%s: cannot infer the parameter shapes from inputs %s" % (self.name, known))
        shapes = dict(zip(sym.list_arguments(), arg_shapes))
        shapes.update(zip(sym.list_auxiliary_states(), aux_shapes))
        for p in self.collect_params().values():
            if p.name in shapes:
                p.shape = shapes[p.name]

    def infer_type(self, *args):
        """Sets the parameters' dtypes to those that type inference gives for inputs of the
        dtypes of `args` (as MXNet's, it sets the attribute only: data already made keeps
        its dtype until cast)."""
        flat, fmt = _flatten(args)
        names, sym, _, _ = self._get_graph(*flat, fmt=fmt)
        known = {n: a.dtype for n, a in zip(names, [a for a in flat if a is not None])}
        arg_types, _, aux_types = sym.infer_type(**known)
        if arg_types is None:
            raise ValueError("%s: cannot infer the parameter dtypes from inputs %s" % (self.name, known))
        types = dict(zip(sym.list_arguments(), arg_types))
        types.update(zip(sym.list_auxiliary_states(), aux_types))
        for p in self.collect_params().values():
            if p.name in types:
                p.dtype = types[p.name]

    def _finish_deferred(self, *args):
        params = self.collect_params().values()
        if any(p._data is None and p._deferred_init is not None for p in params):
            self.infer_shape(*args)
            for p in params:
                p._finish_deferred_init()

    # ---------------------------------------------------------------- running
    def forward(self, x, *args):
        args = (x,) + args
        flat, fmt = _flatten(args)
        has_symbol = any(isinstance(a, Symbol) for a in flat)
        arrays = [a for a in flat if isinstance(a, NDArray)]
        if has_symbol and arrays:
            raise ValueError("%s: the inputs mix NDArrays and Symbols; give all inputs as one or the other"
                             % self.name)
        if not has_symbol and not arrays:
            raise ValueError("%s: no NDArray or Symbol among the inputs (got %s)"
                             % (self.name, ", ".join(type(a).__name__ for a in flat)))
        if has_symbol:
            with self.name_scope():
                params = {k: v.var() for k, v in self._reg_params.items()}
                return self.hybrid_forward(symbol, *args, **params)
        if self._active:
            contexts = []
            for a in arrays:
                # Host memory of any kind is one device (a cpu_shared batch with a cpu label).
                ctx = _param_context(a.context)
                if ctx not in contexts:
                    contexts.append(ctx)
            if len(contexts) > 1:
                raise ValueError("%s: a hybridized block runs on one context, but its inputs are on %s"
                                 % (self.name, ", ".join(str(c) for c in contexts)))
            return self._call_cached(flat, fmt)
        return self._call_imperative(args, arrays[0].context)

    def _call_imperative(self, args, ctx):
        try:
            params = {k: v.data(ctx) for k, v in self._reg_params.items()}
        except DeferredInitializationError:
            self._finish_deferred(*args)
            params = {k: v.data(ctx) for k, v in self._reg_params.items()}
        return self.hybrid_forward(ndarray, *args, **params)

    def _check_given(self, given):
        """Refuses a call that gives other inputs than the first hybridized call did, as
        MXNet's cached graph does: the graph has no variable for an input that was None.
        Inputs left out at the end count as None (an argument's default)."""
        if self._given is None:
            self._given = given
            return
        stored = self._given
        if stored == given or (all(stored) and all(given)):
            return
        n = min(len(stored), len(given))
        if stored[:n] == given[:n] and not any(stored[n:]) and not any(given[n:]):
            return
        def show(g):
            return "(%s)" % ", ".join("array" if x else "None" for x in g)
        raise ValueError("%s: the inputs given, %s, do not match those the block was hybridized with, %s; call "
                         "hybridize() again to change which inputs are None" % (self.name, show(given), show(stored)))

    def _call_cached(self, flat, fmt):
        graph = self._cached_graph_for(flat, fmt)
        args = [a for a in flat if a is not None]
        if graph is None:
            return self._call_imperative(_regroup(fmt, flat), args[0].context)
        return _regroup(graph.out_fmt, graph.run(args, autograd.is_training()))[0]

    def _cached_graph_for(self, flat, fmt):
        """The bound graph for inputs `flat` (checked against the trace), or None when the
        block must run operator by operator."""
        for i, a in enumerate(flat):
            if a is not None and not isinstance(a, NDArray):
                raise ValueError("%s: a hybridized block takes NDArrays (or None), but input %d is %s"
                                 % (self.name, i, type(a).__name__))
        given = tuple(a is not None for a in flat)
        self._check_given(given)
        # The graph's inputs are the arrays given; the Nones are only in the trace.
        args = [a for a in flat if a is not None]
        # Bound on the CPU for inputs in other host memory (a DataLoader's cpu_shared batch):
        # the inputs are copied in, the parameters are the CPU's.
        ctx = _param_context(args[0].context)
        recording = autograd.is_recording()
        if any(a.stype != "default" for a in args) or (recording and self._sparse_grads()):
            # A graph over sparse arrays runs node by node anyway (a sparse executor), and
            # one executor keeps the state of its latest call only: operator by operator,
            # autograd keeps each call's, so that a block called twice in one record()
            # accumulates both gradients, as MXNet's CachedOp does.
            return None
        input_grads = tuple(recording and a._has_history() for a in args)
        key = (tuple((a.shape, np.dtype(a.dtype).str) for a in args), repr(fmt), given, ctx, autograd.is_training(),
               input_grads, recording)
        if recording and self._inlines(key, flat, fmt):
            # As MXNet's CachedOp, a graph of at most inline_limit operators (2 unless
            # hybridize says otherwise) is inlined while autograd records, unless static_alloc:
            # its operators are recorded one by one (get_symbol shows them, not one _CachedOp).
            return None
        graph = self._cached.get(key)
        if graph is not None and graph.checked_at == _blocks_version and graph.still_bound():
            # Nothing a trace reads has changed since one matched this graph: it would again.
            return graph.spare(self, args, input_grads) if recording and graph.backward_pending() else graph
        names, sym, num_outputs, out_fmt = self._get_graph(*flat, fmt=fmt)
        if graph is not None:
            if not graph.sym._same_graph(sym):
                raise RuntimeError(
                    "hybridized block %s: the Python code of hybrid_forward took another path than when its graph was "
                    "traced for these input shapes (%s). The cached graph would be stale, so it is not run. First "
                    "difference: %s. Call hybridize() again after changing the block's behaviour."
                    % (self.name, ", ".join(str(s) for s, _ in key[0]),
                       _first_difference(graph.sym.tojson(remove_amp_cast=False), sym.tojson(remove_amp_cast=False))))
            if not graph.still_bound():
                graph = None
        if graph is None:
            self._finish_deferred(*_regroup(fmt, flat))
            known = {p.name: p.shape for p in self.collect_params().values() if p._data is not None}
            known.update((n, a.shape) for n, a in zip(names, args))
            arguments = set(sym.list_arguments()) | set(sym.list_auxiliary_states())
            if sym.infer_shape(**{n: v for n, v in known.items() if n in arguments})[0] is None:
                # An operator whose output shape depends on the data (boolean_mask) leaves the
                # graph's shapes open: it cannot be bound, so the block runs operator by
                # operator, as MXNet's CachedOp does for dynamic shapes.
                return None
            graph = _CachedGraph(self, sym, names, num_outputs, out_fmt, args, ctx, input_grads, recording)
            graph.set_op_hook(self._op_hook)
            self._cached[key] = graph
        graph.checked_at = _blocks_version if self._fixed_tree() else None
        return graph.spare(self, args, input_grads) if recording and graph.backward_pending() else graph

    def _inlines(self, key, flat, fmt):
        """Whether a recorded call with these inputs (`key`) runs inlined: no static_alloc and
        at most inline_limit operators in the traced graph (counted once per key until a
        block changes)."""
        if self._flags.get("static_alloc", False):
            return False
        # Stored around __setattr__, which would count as a change of the block.
        version, counts = self.__dict__.get("_op_counts", (None, None))
        if version != _blocks_version:
            counts = {}
            self.__dict__["_op_counts"] = (_blocks_version, counts)
        if key not in counts:
            import json
            sym = self._get_graph(*flat, fmt=fmt)[1]
            nodes = json.loads(sym.tojson(remove_amp_cast=False))["nodes"]
            # Control-flow nodes (_foreach, _while_loop, _cond) hold graphs that a call by name
            # cannot carry: such a graph always runs as one cached graph.
            ops = float("inf") if any("subgraphs" in n and not _holds_one_fused_graph(n) for n in nodes) \
                else sum(n["op"] != "null" for n in nodes)
            counts[key] = (ops, sym)
        ops, sym = counts[key]
        if ops > int(self._flags.get("inline_limit", 2)):
            return False
        self.__dict__["_inlined_sym"] = sym  # for export
        return True

    def _traced_symbol(self):
        """The graph of an earlier hybridized call (MXNet's _cached_graph), None before one.
        A recorded call that ran inlined was traced too."""
        if self._cached:
            return next(iter(self._cached.values())).sym
        return self.__dict__.get("_inlined_sym")

    def _sparse_grads(self):
        """Whether some parameter of the tree takes a row_sparse gradient (cached until a
        block or a parameter's arrays change)."""
        version = (_blocks_version, arrays_version())
        cached = self.__dict__.get("_sparse_grads_cache")
        if cached is None or cached[0] != version:
            # Stored around __setattr__, which would count as a change of the block.
            cached = (version, any(p._grad_stype != "default" and p.grad_req != "null"
                                   for p in self.collect_params().values()))
            self.__dict__["_sparse_grads_cache"] = cached
        return cached[1]

    def _fixed_tree(self):
        """Whether every block of this tree traces through _fixed_graph code alone: no
        subclass's forward or __call__ in the way, and no hooks (they run in the trace)."""
        cls = type(self)
        if not getattr(cls.hybrid_forward, "_weft_fixed_graph", False) or cls.forward is not HybridBlock.forward \
                or cls.__call__ is not Block.__call__ or cls._get_graph is not HybridBlock._get_graph \
                or self._forward_hooks or self._forward_pre_hooks:
            return False
        return all(c._fixed_tree() for c in self._children.values())

    def export(self, path, epoch=0, remove_amp_cast=True):
        """Writes path-symbol.json and path-%04d.params (arg:/aux: names), loadable by the
        Module API, SymbolBlock.imports and MXNet 1.x. Needs one earlier forward."""
        sym = self._traced_symbol()
        if sym is None:
            raise RuntimeError("export: run a forward pass of the hybridized block %s first, so that its graph "
                               "is known" % self.name)
        if self._cached:  # the graph as it runs: partitioned when hybridized for a backend
            sym = next(iter(self._cached.values())).run_sym
        sym.save("%s-symbol.json" % path, remove_amp_cast=remove_amp_cast)
        arg_names = set(sym.list_arguments())
        aux_names = set(sym.list_auxiliary_states())
        arrays = {}
        for p in self.collect_params().values():
            if p.name in arg_names:
                arrays["arg:%s" % p.name] = p.data()
            elif p.name in aux_names:
                arrays["aux:%s" % p.name] = p.data()
        ndarray.save("%s-%04d.params" % (path, epoch), arrays)
        return "%s-symbol.json" % path, "%s-%04d.params" % (path, epoch)


def _holds_one_fused_graph(node):
    """Whether a graph JSON node is one of MXNet's oneDNN fusions (_sg_mkldnn_*), whose one
    graph is its "subgraph" parameter, unlike the control-flow nodes' graphs."""
    return node["op"].startswith("_sg_") and len(node.get("subgraphs", ())) == 1


class SymbolBlock(HybridBlock):
    """A block made from a Symbol: its free variables other than `inputs` become parameters."""

    def __init__(self, outputs, inputs, params=None):
        super().__init__(prefix="", params=None)
        self._prefix = ""
        self._params = ParameterDict("", params)
        if isinstance(inputs, Symbol) and len(inputs.list_outputs()) == 1:
            inputs = [inputs]
        if isinstance(outputs, (list, tuple)):
            outputs = symbol.Group(list(outputs))
        self._input_names_given = [i.name for i in inputs]
        self._sym = outputs
        for name, attrs in outputs.attr_dict().items():
            # Its executor would need the weight whole; a row_sparse one lives in a kvstore.
            if attrs.get("__storage_type__") == "1":
                raise AssertionError("SymbolBlock: variable '%s' has storage type row_sparse, which a SymbolBlock "
                                     "does not support (expected default storage)" % name)
        arg_types, aux_types = self._param_types(inputs, outputs)
        def typed(dtype):
            return {} if dtype is None else {"dtype": dtype}
        for name in outputs.list_arguments():
            if name not in self._input_names_given:
                self._reg_params[name] = self._params.get(name, allow_deferred_init=True, **typed(arg_types[name]))
        for name in outputs.list_auxiliary_states():
            self._reg_params[name] = self._params.get(name, grad_req="null", allow_deferred_init=True,
                                                      **typed(aux_types[name]))
        # Structural names (save_parameters' keys) drop what every parameter name starts with,
        # as MXNet's do, so that the same network made under another name scope (net3_ then
        # net4_) loads the file.
        cut = len(os.path.commonprefix(list(self._reg_params)))
        self._reg_params = {k[cut:]: v for k, v in self._reg_params.items()}

    @staticmethod
    def _param_types(inputs, outputs):
        """The dtypes of the graph's arguments and auxiliary states, by name, inferred from the
        inputs' declared dtypes (var(..., dtype=)) as MXNet's SymbolBlock does, so that a graph
        exported in float64 gets float64 parameters; None (the Parameter's default, float32, or
        a shared parameter's own) where nothing is declared or the inference fails."""
        args, aux = outputs.list_arguments(), outputs.list_auxiliary_states()
        known = {}
        for i in inputs:
            declared = i.infer_type()[0]
            if not declared:
                known = None
                break
            known[i.name] = declared[0]
        arg_types = aux_types = None
        if known is not None:
            try:
                arg_types, _, aux_types = outputs.infer_type(**known)
            except MXNetError:
                pass
        arg_types = arg_types if arg_types and len(arg_types) == len(args) else [None] * len(args)
        aux_types = aux_types if aux_types and len(aux_types) == len(aux) else [None] * len(aux)
        return dict(zip(args, arg_types)), dict(zip(aux, aux_types))

    def __repr__(self):
        # MXNet's SymbolBlock shows its graph and how many inputs and outputs it has.
        return "%s(\n%r : %d -> %d\n)" % (type(self).__name__, self._sym, len(self._input_names_given),
                                          len(self._sym.list_outputs()))

    @staticmethod
    def imports(symbol_file, input_names, param_file=None, ctx=None, allow_missing=False, ignore_extra=False):
        """A SymbolBlock from files written by export (or Module.save_checkpoint).
        allow_missing: parameters of the symbol absent from param_file stay uninitialised
        rather than raising; ignore_extra: parameters of the file the symbol does not use are
        skipped rather than raising (MXNet's defaults: both False)."""
        sym = symbol.load(symbol_file)
        if isinstance(input_names, str):
            input_names = [input_names]
        inputs = [symbol.var(n) for n in input_names]
        block = SymbolBlock(sym, inputs)
        if param_file is not None:
            block.collect_params().load(param_file, ctx=ctx, allow_missing=allow_missing, ignore_extra=ignore_extra,
                                        cast_dtype=True, dtype_source="saved")
        return block

    def _input_names(self, n):
        if n != len(self._input_names_given):
            raise ValueError("SymbolBlock: expected %d inputs (%s), got %d"
                             % (len(self._input_names_given), ", ".join(self._input_names_given), n))
        return list(self._input_names_given)

    def _get_graph(self, *args, fmt=None):
        names = self._input_names(len(args))
        n = len(self._sym.list_outputs())
        return names, self._sym, n, [[None] * n] if n > 1 else [None]

    def forward(self, x, *args):
        args, fmt = _flatten((x,) + args)
        if any(a is None for a in args):
            raise ValueError("SymbolBlock: every input of the symbol must be given, got None")
        if isinstance(args[0], Symbol):
            return self._sym(**dict(zip(self._input_names_given, args)))
        # A SymbolBlock always runs its graph: it has no Python hybrid_forward.
        return self._call_cached(args, fmt)

    def hybrid_forward(self, F, x, *args, **kwargs):
        raise NotImplementedError("SymbolBlock runs its symbol; hybrid_forward is not used")

    def _call_imperative(self, args, ctx):
        """Runs the symbol operator by operator (recorded one by one while autograd records),
        as MXNet's CachedOp runs a graph it inlines: what a SymbolBlock does instead of a
        Python hybrid_forward."""
        import json
        flat, _ = _flatten(args)
        params = {p.name: p for p in self._params.values()}
        try:
            held = {n: p.data(ctx) for n, p in params.items()}
        except DeferredInitializationError:
            self._finish_deferred(*args)
            held = {n: p.data(ctx) for n, p in params.items()}
        given = dict(zip(self._input_names_given, flat))
        graph = json.loads(self._sym.tojson(remove_amp_cast=False))
        values = []
        for node in graph["nodes"]:
            if node["op"] == "null":
                values.append([given[node["name"]] if node["name"] in given else held[node["name"]]])
                continue
            inputs = [values[i][k] for i, k, *_ in node["inputs"]]
            # "__...__" entries are user attributes (shapes, lr_mult, ...), not parameters.
            attrs = {k: v for k, v in node.get("attrs", {}).items() if not k.startswith("__")}
            if _holds_one_fused_graph(node):
                # A oneDNN fusion node's graph is its parameter "subgraph" when called by name.
                attrs["subgraph"] = json.dumps(node["subgraphs"][0])
            out = getattr(ndarray._internal, node["op"])(*inputs, **attrs)
            values.append(list(out) if isinstance(out, (list, tuple)) else [out])
        outs = [values[i][k] for i, k, *_ in graph["heads"]]
        return outs[0] if len(outs) == 1 else outs

    def cast(self, dtype):
        self._cached = {}
        for p in self._reg_params.values():
            p.cast(dtype)
