"""Reads c_api/include/weft/c_api.h into plain data for the front-end generators.

The header is the one public contract, written in a regular style (see its preamble):
each function is one `WEFT_API <return> <name>(<params>);` declaration, possibly spread
over several lines, preceded by its comment. This module parses exactly that style and
fails loudly on anything else, so a header change that the generators would misread is
caught instead of silently dropped.

    header = parse(path)
    header.abi_version          -> int (WEFT_ABI_VERSION; None in a header without it)
    header.functions            -> [Function(name, ret, params=[Param(name, ctype)], doc)]
    header.enums                -> {enum name: [(constant, value)]}
    header.callbacks            -> {typedef name: Function} (function-pointer typedefs)
    header.handles              -> [struct typedef names, e.g. "weft_ndarray_t"]
"""
import re
from collections import namedtuple

Param = namedtuple("Param", "name ctype")
Function = namedtuple("Function", "name ret params doc")
Header = namedtuple("Header", "abi_version version functions enums callbacks handles structs")

_COMMENT = re.compile(r"/\*(.*?)\*/", re.S)
_FUNC = re.compile(r"WEFT_API\s+(?P<ret>[\w\s\*]+?)\s*(?P<name>weft_\w+)\s*\((?P<params>[^;]*?)\)\s*;", re.S)
_CALLBACK = re.compile(r"typedef\s+(?P<ret>[\w\s\*]+?)\s*\(\s*\*\s*(?P<name>\w+)\s*\)\s*\((?P<params>[^;]*?)\)\s*;", re.S)
_ENUM = re.compile(r"typedef\s+enum\s+\w+\s*\{(?P<body>[^}]*)\}\s*(?P<name>\w+)\s*;", re.S)
_HANDLE = re.compile(r"typedef\s+struct\s+\w+\s+(?P<name>weft_\w+_t)\s*;")
_STRUCT = re.compile(r"typedef\s+struct\s+\w+\s*\{(?P<body>[^}]*)\}\s*(?P<name>\w+)\s*;", re.S)
_DEFINE = re.compile(r"#define\s+(WEFT_\w+)\s+(\d+)")


def _split_param(text, where):
    text = " ".join(text.split())
    m = re.match(r"^(?P<ctype>.*?[\s\*])(?P<name>\w+)$", text)
    if not m:
        raise ValueError("c_header: cannot read parameter %r of %s" % (text, where))
    ctype = re.sub(r"\s*\*", "*", m.group("ctype").strip())
    return Param(m.group("name"), ctype)


def _params(text, where):
    text = " ".join(text.split())
    if text in ("", "void"):
        return []
    return [_split_param(p, where) for p in text.split(",")]


def _doc_before(src, pos):
    """The comment block that ends right before `pos` (only blank space between)."""
    head = src[:pos].rstrip()
    if not head.endswith("*/"):
        return ""
    start = head.rfind("/*")
    body = head[start + 2:-2]
    lines = [re.sub(r"^\s*\*\s?", "", line).rstrip() for line in body.splitlines()]
    return "\n".join(line for line in lines).strip()


def parse(path):
    with open(path, encoding="utf-8") as f:
        src = f.read()
    defines = {k: int(v) for k, v in _DEFINE.findall(src)}
    functions = []
    for m in _FUNC.finditer(src):
        ret = " ".join(m.group("ret").split())
        ret = re.sub(r"\s*\*", "*", ret)
        functions.append(Function(m.group("name"), ret, _params(m.group("params"), m.group("name")),
                                  _doc_before(src, m.start())))
    declared = len(re.findall(r"^\s*WEFT_API\b", src, re.M))
    if declared != len(functions):
        raise ValueError("c_header: %d WEFT_API declarations but %d parsed" % (declared, len(functions)))
    callbacks = {}
    for m in _CALLBACK.finditer(src):
        ret = re.sub(r"\s*\*", "*", " ".join(m.group("ret").split()))
        callbacks[m.group("name")] = Function(m.group("name"), ret, _params(m.group("params"), m.group("name")),
                                              _doc_before(src, m.start()))
    enums = {}
    for m in _ENUM.finditer(src):
        values = []
        for item in _COMMENT.sub("", m.group("body")).split(","):
            item = item.strip()
            if item:
                k, v = (s.strip() for s in item.split("="))
                values.append((k, int(v)))
        enums[m.group("name")] = values
    structs = {}
    for m in _STRUCT.finditer(src):
        fields = []
        for decl in _COMMENT.sub("", m.group("body")).split(";"):
            if decl.strip():
                fields.append(_split_param(decl, m.group("name")))
        structs[m.group("name")] = fields
    handles = sorted(set(_HANDLE.findall(src)))
    # A header that includes c_api.h (c_predict_api.h) declares no versions of its own.
    version = None
    if "WEFT_VERSION_MAJOR" in defines:
        version = "%d.%d.%d" % (defines["WEFT_VERSION_MAJOR"], defines["WEFT_VERSION_MINOR"],
                                defines["WEFT_VERSION_PATCH"])
    return Header(defines.get("WEFT_ABI_VERSION"), version, functions, enums, callbacks, handles, structs)


if __name__ == "__main__":
    import sys
    h = parse(sys.argv[1] if len(sys.argv) > 1 else "c_api/include/weft/c_api.h")
    print("ABI", h.abi_version, "version", h.version, "-", len(h.functions), "functions")
    for fn in h.functions:
        print(" ", fn.ret, fn.name, "(" + ", ".join("%s %s" % (p.ctype, p.name) for p in fn.params) + ")")
    print("callbacks:", ", ".join(h.callbacks))
    print("enums:", ", ".join(h.enums))
    print("structs:", h.structs)
    print("handles:", ", ".join(h.handles))
