"""Checkpoints and the parameter-update helpers shared by the Module API (MXNet 1.x's mx.model).

A checkpoint is two files, as MXNet writes them: `prefix-symbol.json` (the graph) and
`prefix-%04d.params` (an NDArray dict whose keys are "arg:<name>" for arguments and
"aux:<name>" for auxiliary states), so MXNet loads Weft's checkpoints and the other way round.
"""
import collections
import importlib.util
import os

import numpy as np

from . import ndarray as nd
from . import symbol as sym
from .context import cpu

__all__ = ["BatchEndParam", "save_checkpoint", "load_checkpoint", "load_params"]

BatchEndParam = collections.namedtuple("BatchEndParams", ["epoch", "nbatch", "eval_metric", "locals"])


def _params_dict(arg_params, aux_params):
    # Copies to the CPU so a checkpoint never names a device that may be absent when loading.
    save_dict = {"arg:%s" % k: v.as_in_context(cpu()) for k, v in arg_params.items()}
    save_dict.update({"aux:%s" % k: v.as_in_context(cpu()) for k, v in aux_params.items()})
    return save_dict


def save_checkpoint(prefix, epoch, symbol, arg_params, aux_params, remove_amp_cast=True):
    """Writes `prefix-symbol.json` (when symbol is not None) and `prefix-%04d.params` % epoch.

    remove_amp_cast drops the mixed-precision cast nodes (amp_cast, amp_multicast) from the
    saved graph, as MXNet's does."""
    if symbol is not None:
        (symbol.remove_amp_cast() if remove_amp_cast else symbol).save("%s-symbol.json" % prefix)
    nd.save("%s-%04d.params" % (prefix, epoch), _params_dict(arg_params, aux_params))


def _split_params(save_dict, fname):
    arg_params, aux_params = {}, {}
    if not isinstance(save_dict, dict):
        raise ValueError("%s holds an unnamed list of arrays; a parameter file names each array "
                         "'arg:<name>' or 'aux:<name>'" % fname)
    for key, value in save_dict.items():
        kind, _, name = key.partition(":")
        if kind == "arg" and name:
            arg_params[name] = value
        elif kind == "aux" and name:
            aux_params[name] = value
        else:
            raise ValueError("%s: the key %r is neither 'arg:<name>' nor 'aux:<name>'" % (fname, key))
    return arg_params, aux_params


def _load_params_file(fname):
    if not os.path.isfile(fname):
        raise FileNotFoundError("parameter file %s does not exist" % fname)
    return _split_params(nd.load(fname), fname)


def load_params(prefix, epoch):
    """(arg_params, aux_params) from `prefix-%04d.params` % epoch."""
    return _load_params_file("%s-%04d.params" % (prefix, epoch))


def load_checkpoint(prefix, epoch):
    """(symbol, arg_params, aux_params) written by save_checkpoint."""
    fname = "%s-symbol.json" % prefix
    if not os.path.isfile(fname):
        raise FileNotFoundError("symbol file %s does not exist" % fname)
    symbol = sym.load(fname)
    arg_params, aux_params = load_params(prefix, epoch)
    return symbol, arg_params, aux_params


# ----------------------------------------------------------------------------- kvstore helpers
def _update_on_kvstore_default():
    value = os.getenv("WEFT_UPDATE_ON_KVSTORE", os.getenv("MXNET_UPDATE_ON_KVSTORE", "1"))
    return bool(int(value))


def _create_kvstore(kvstore, num_device, arg_params):
    """(kvstore or None, update_on_kvstore) as MXNet decides them: a local store only pays off
    with several devices; very large parameters are updated on the devices instead."""
    update_on_kvstore = _update_on_kvstore_default()
    if kvstore is None:
        kv = None
    elif isinstance(kvstore, str):
        if num_device == 1 and "dist" not in kvstore:
            kv = None
        elif kvstore == "local" and importlib.util.find_spec(__package__ + ".kvstore") is None:
            # A build without the KVStore package sums the devices' gradients in
            # _update_params instead.
            kv = None
        else:
            from . import kvstore as kvs
            kv = kvs.create(kvstore)
            if kvstore == "local" and arg_params:
                max_size = max(int(np.prod(p.shape)) for p in arg_params.values())
                if max_size > 1024 * 1024 * 16:
                    update_on_kvstore = False
    elif hasattr(kvstore, "push") and hasattr(kvstore, "pull"):
        kv = kvstore
    else:
        raise TypeError("kvstore must be a KVStore, a str or None, got %s" % type(kvstore).__name__)
    if kv is None:
        update_on_kvstore = False
    else:
        capable = getattr(kv, "is_capable", None)
        if not hasattr(kv, "set_optimizer"):
            update_on_kvstore = False
        elif capable is not None:
            base = getattr(type(kv), "OPTIMIZER", "optimizer")
            update_on_kvstore &= bool(capable(base))
    return kv, update_on_kvstore


def _initialize_kvstore(kvstore, param_arrays, arg_params, param_names, update_on_kvstore):
    """Stores each parameter's initial value; with updates on the store, every device then
    starts from the stored value."""
    for idx, param_on_devs in enumerate(param_arrays):
        name = param_names[idx]
        kvstore.init(name, arg_params[name])
        if update_on_kvstore:
            kvstore.pull(name, param_on_devs, priority=-idx)


def _update_params_on_kvstore(param_arrays, grad_arrays, kvstore, param_names):
    """Pushes every device's gradient (the store sums them and runs the optimizer) and pulls
    the updated weight back to every device."""
    for index, (arg_list, grad_list) in enumerate(zip(param_arrays, grad_arrays)):
        if grad_list[0] is None:
            continue
        name = param_names[index]
        kvstore.push(name, grad_list, priority=-index)
        kvstore.pull(name, arg_list, priority=-index)


def _reduce_grads(grad_list):
    # Without a store the devices' gradients are summed here and the sum is written back to
    # every device, so each device's copy of the weight takes the same step.
    total = grad_list[0].copy()
    for g in grad_list[1:]:
        total += g.as_in_context(total.context)
    for g in grad_list:
        total.copyto(g)


def _update_params(param_arrays, grad_arrays, updater, num_device, kvstore=None, param_names=None,
                   param_index=None):
    """Sums the gradients across devices (through the store when there is one) and runs the
    updater on every device's copy. The updater's index is param_index[name] * num_device + k,
    so each device's copy has its own optimizer state, as in MXNet; each device's parameters
    go to the updater in one call, so a multi-tensor optimizer updates them together."""
    updates = [[] for _ in range(num_device)]
    for i, (arg_list, grad_list) in enumerate(zip(param_arrays, grad_arrays)):
        if grad_list[0] is None:
            continue
        name = param_names[i] if param_names is not None else None
        if kvstore is not None:
            kvstore.push(name, grad_list, priority=-i)
            kvstore.pull(name, grad_list, priority=-i)
        elif num_device > 1:
            _reduce_grads(grad_list)
        index = param_index[name] if param_index is not None else i
        for k, (w, g) in enumerate(zip(arg_list, grad_list)):
            updates[k].append((index * num_device + k, g, w))
    for dev_updates in updates:
        if dev_updates:
            indices, grads, weights = zip(*dev_updates)
            updater(list(indices), list(grads), list(weights))
