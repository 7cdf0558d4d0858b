#!/usr/bin/env python3
"""Dumps Weft's operator and data-iterator registries, read through the C API, as JSON.

The front-end generators (generate.py) read this file instead of the library, so that
the generated R, Go and Julia code is a function of committed data: CI dumps the registry
again and fails when the committed dump, or any file generated from it, differs.

    python3 tools/codegen/dump_registry.py build/libweft.so > frontends/registry.json

Only the C API is used (weft_op_*, weft_dataiter_type_*, weft_get_version), through
ctypes, so the dump sees exactly what every front end sees.
"""
import ctypes
import json
import sys


def _open(path):
    lib = ctypes.CDLL(path)
    lib.weft_get_last_error.restype = ctypes.c_char_p
    return lib


def _check(lib, status, what):
    if status != 0:
        raise RuntimeError("%s failed (status %d): %s" % (what, status, lib.weft_get_last_error().decode()))


def _str(p):
    return p.value.decode("utf-8") if p.value is not None else ""


def _params(lib, get_param, owner, count):
    """The `count` parameters of an operator or iterator type, read with its get_param
    function (weft_op_get_param or weft_dataiter_type_param: same out-parameters)."""
    params = []
    for k in range(count):
        pname, ptype, pdef, pdoc = (ctypes.c_char_p() for _ in range(4))
        req = ctypes.c_int()
        _check(lib, get_param(owner, k, ctypes.byref(pname), ctypes.byref(ptype), ctypes.byref(pdef),
                              ctypes.byref(pdoc), ctypes.byref(req)), get_param.__name__)
        params.append({"name": _str(pname), "type": _str(ptype), "default": _str(pdef), "doc": _str(pdoc),
                       "required": bool(req.value)})
    return params


def dump_ops(lib):
    count = ctypes.c_int()
    _check(lib, lib.weft_op_count(ctypes.byref(count)), "weft_op_count")
    ops = []
    for i in range(count.value):
        op = ctypes.c_void_p()
        _check(lib, lib.weft_op_get_by_index(i, ctypes.byref(op)), "weft_op_get_by_index")
        s = ctypes.c_char_p()
        _check(lib, lib.weft_op_get_name(op, ctypes.byref(s)), "weft_op_get_name")
        name = _str(s)
        _check(lib, lib.weft_op_get_doc(op, ctypes.byref(s)), "weft_op_get_doc")
        doc = _str(s)
        n = ctypes.c_int()
        _check(lib, lib.weft_op_get_num_aliases(op, ctypes.byref(n)), "weft_op_get_num_aliases")
        aliases = []
        for k in range(n.value):
            _check(lib, lib.weft_op_get_alias(op, k, ctypes.byref(s)), "weft_op_get_alias")
            aliases.append(_str(s))
        _check(lib, lib.weft_op_get_num_inputs(op, ctypes.byref(n)), "weft_op_get_num_inputs")
        inputs = []
        for k in range(n.value):
            iname, itype, idoc = ctypes.c_char_p(), ctypes.c_char_p(), ctypes.c_char_p()
            _check(lib, lib.weft_op_get_input(op, k, ctypes.byref(iname), ctypes.byref(itype), ctypes.byref(idoc)),
                   "weft_op_get_input")
            inputs.append({"name": _str(iname), "type": _str(itype), "doc": _str(idoc)})
        _check(lib, lib.weft_op_get_key_var_num_args(op, ctypes.byref(s)), "weft_op_get_key_var_num_args")
        key_var_num_args = _str(s)
        _check(lib, lib.weft_op_get_num_params(op, ctypes.byref(n)), "weft_op_get_num_params")
        params = _params(lib, lib.weft_op_get_param, op, n.value)
        ops.append({"name": name, "aliases": sorted(aliases), "doc": doc, "inputs": inputs,
                    "key_var_num_args": key_var_num_args, "params": params})
    return sorted(ops, key=lambda o: o["name"])


def dump_iters(lib):
    count = ctypes.c_int()
    _check(lib, lib.weft_dataiter_type_count(ctypes.byref(count)), "weft_dataiter_type_count")
    iters = []
    for i in range(count.value):
        s = ctypes.c_char_p()
        _check(lib, lib.weft_dataiter_type_name(i, ctypes.byref(s)), "weft_dataiter_type_name")
        name = _str(s)
        _check(lib, lib.weft_dataiter_type_doc(name.encode(), ctypes.byref(s)), "weft_dataiter_type_doc")
        doc = _str(s)
        n = ctypes.c_int()
        _check(lib, lib.weft_dataiter_type_num_params(name.encode(), ctypes.byref(n)), "weft_dataiter_type_num_params")
        params = _params(lib, lib.weft_dataiter_type_param, name.encode(), n.value)
        iters.append({"name": name, "doc": doc, "params": params})
    return sorted(iters, key=lambda it: it["name"])


def dump(path):
    lib = _open(path)
    major, minor, patch, abi = (ctypes.c_int() for _ in range(4))
    _check(lib, lib.weft_get_version(ctypes.byref(major), ctypes.byref(minor), ctypes.byref(patch), ctypes.byref(abi)),
           "weft_get_version")
    for fn in ("weft_op_get_by_index",):
        getattr(lib, fn).argtypes = [ctypes.c_int, ctypes.POINTER(ctypes.c_void_p)]
    for fn in ("weft_op_get_name", "weft_op_get_doc", "weft_op_get_key_var_num_args"):
        getattr(lib, fn).argtypes = [ctypes.c_void_p, ctypes.POINTER(ctypes.c_char_p)]
    for fn in ("weft_op_get_num_aliases", "weft_op_get_num_inputs", "weft_op_get_num_params"):
        getattr(lib, fn).argtypes = [ctypes.c_void_p, ctypes.POINTER(ctypes.c_int)]
    lib.weft_op_get_alias.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.POINTER(ctypes.c_char_p)]
    lib.weft_op_get_input.argtypes = [ctypes.c_void_p, ctypes.c_int] + [ctypes.POINTER(ctypes.c_char_p)] * 3
    lib.weft_op_get_param.argtypes = ([ctypes.c_void_p, ctypes.c_int] + [ctypes.POINTER(ctypes.c_char_p)] * 4 +
                                      [ctypes.POINTER(ctypes.c_int)])
    return {
        "generated_by": "tools/codegen/dump_registry.py: do not edit; regenerate with tools/codegen/generate.py",
        "version": "%d.%d.%d" % (major.value, minor.value, patch.value),
        "abi_version": abi.value,
        "operators": dump_ops(lib),
        "data_iterators": dump_iters(lib),
    }


def main(argv):
    if len(argv) != 2:
        sys.stderr.write("usage: dump_registry.py PATH/TO/libweft.so > registry.json\n")
        return 2
    json.dump(dump(argv[1]), sys.stdout, indent=1, sort_keys=True)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
