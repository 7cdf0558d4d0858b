#!/usr/bin/env python3
"""Lists the parameters MXNet's sources declare for each legacy (nd/sym) operator: name,
default (or that it is required) and enum choices, for
tests/python/test_op_param_defaults_mx191.py to hold Weft's registry against.

    python3 tools/mxnet_op_params.py /path/to/mxnet-1.9.1 > tests/python/data/mxnet191_op_params.txt

Like tools/mxnet_legacy_ops.py (whose macro expansion it reuses) it reads src/operator/**
without a compiler:
  - every dmlc parameter struct (DMLC_DECLARE_PARAMETER(X) { ... }): each
    DMLC_DECLARE_FIELD(f) with its set_default(...) and add_enum("name", value) calls (lists
    of choices behind a macro, MXNET_ADD_ALL_TYPES, substituted); of two structs with one
    name (CropParam and image::CropParam) an operator gets the one defined nearest its file;
  - every operator registration (NNVM_REGISTER_OP(name) or MXNET_REGISTER_OP_PROPERTY(name,
    ...) up to the ';' ending its chain, macros expanded, #if lines ignored): the struct that
    parses its calls (ParamParser<X>), else those it lists (add_arguments(X::__FIELDS__())),
    and its aliases (add_alias, in that chain or another of the same name).
Operators are those of tests/python/data/mxnet191_legacy_ops.txt (the same rules: no _np*,
no _backward_*). A default of mxnet::TShape() (a shape of unknown rank) is written None;
TShape(0, v) and an empty Tuple are ().

Each output line is  operator <TAB> parameter <TAB> default <TAB> choices, where default is
a Python literal (False, None, (1, 1), 0.001, 'max', ...) or REQUIRED, and choices the enum
names joined by ',' (or '-'); an operator without parameters has one line with '-' for
the parameter. A C++ default the script cannot evaluate is written as
?<expression>, which the test reports rather than guesses; none is left for 1.9.1.
"""
import ast
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import mxnet_legacy_ops as legacy  # noqa: E402

HEADER = """\
# Parameters of MXNet 1.9.1's legacy operators: operator, parameter, default, enum choices.
# Produced by: python3 tools/mxnet_op_params.py <MXNet 1.9.1 source tree>  (tag 1.9.1)
# from the dmlc parameter structs (DMLC_DECLARE_FIELD, set_default, add_enum) that each
# NNVM_REGISTER_OP / MXNET_REGISTER_OP_PROPERTY names (add_arguments, ParamParser), for the
# operators of mxnet191_legacy_ops.txt. default: a Python literal or REQUIRED.
# Read by tests/python/test_op_param_defaults_mx191.py.
"""

# Named constants that defaults use, with the values MXNet gives them.
CONSTANTS = {
    "mxnet::op::batchnorm::DEFAULT_AXIS": 1,
    "MSHADOW_DEFAULT_DTYPE": "float32",
}
# mshadow's dtype flags, which dtype fields use both as defaults and as enum values.
DTYPES = {"kFloat32": "float32", "kFloat64": "float64", "kFloat16": "float16", "kBfloat16": "bfloat16",
          "kUint8": "uint8", "kInt8": "int8", "kInt32": "int32", "kInt64": "int64", "kBool": "bool"}


def literal_end(text, i):
    """Index of the last character of the string or character literal starting at i
    (raw strings R"delim( ... )delim" included)."""
    if text[i] == "'":
        j = i + 1
        while text[j] != "'":
            j += 2 if text[j] == "\\" else 1
        return j
    if i > 0 and text[i - 1] == "R":
        delim = text[i + 1:text.index("(", i)]
        return text.index(")" + delim + '"', i) + len(delim) + 1
    j = i + 1
    while text[j] != '"':
        j += 2 if text[j] == "\\" else 1
    return j


def logical_lines(text):
    """The file's lines without comments, continuation lines joined. Unlike
    mxnet_legacy_ops.logical_lines this keeps string literals whole: operator docs are raw
    strings that contain '//' (URLs) and quotes."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if c in "\"'" and not (c == "'" and i > 0 and (text[i - 1].isalnum())):
            end = literal_end(text, i) + 1
            # newlines inside a raw string must not end the logical line
            out.append(text[i:end].replace("\n", " "))
            i = end
        elif text.startswith("//", i):
            i = text.find("\n", i)
            i = n if i < 0 else i
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            end = n if end < 0 else end + 2
            out.append("\n" * text.count("\n", i, end))
            i = end
        else:
            out.append(c)
            i += 1
    return re.sub(r"\\[ \t]*\n", " ", "".join(out)).split("\n")


def balanced(text, open_at, pair="{}"):
    """Index just after the bracket matching the one at open_at (strings skipped)."""
    depth, i = 0, open_at
    while i < len(text):
        c = text[i]
        if c in "\"'":
            i = literal_end(text, i)
        elif c == pair[0]:
            depth += 1
        elif c == pair[1]:
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    return len(text)


def statements(body):
    """The body's top-level statements (split at ';' outside brackets and strings)."""
    out, depth, current, i = [], 0, "", 0
    while i < len(body):
        c = body[i]
        if c in "\"'":
            end = literal_end(body, i)
            current += body[i:end + 1]
            i = end + 1
            continue
        if c in "({[":
            depth += 1
        elif c in ")}]":
            depth -= 1
        if c == ";" and depth == 0:
            out.append(current.strip())
            current = ""
        else:
            current += c
        i += 1
    if current.strip():
        out.append(current.strip())
    return out


def chain_calls(stmt):
    """[(method, [args])] of a chain such as DMLC_DECLARE_FIELD(x).set_default(1).add_enum(...)."""
    calls = []
    for m in re.finditer(r"\.\s*(\w+)\s*\(", stmt):
        # only calls at the chain's own level: those whose '.' is outside every bracket
        prefix = stmt[:m.start()]
        if prefix.count("(") != prefix.count(")") or prefix.count("{") != prefix.count("}"):
            continue
        args, _ = legacy.call_arguments(stmt, m.end() - 1)
        calls.append((m.group(1), args or []))
    return calls


def c_string(arg):
    parts = re.findall(r'"((?:[^"\\]|\\.)*)"', arg)
    return "".join(parts)


def number(expr):
    e = expr.strip()
    e = re.sub(r"^\((.*)\)$", r"\1", e)
    e = re.sub(r"^static_cast<\w+>\((.*)\)$", r"\1", e)
    m = re.fullmatch(r"([-+]?)\s*(\d+\.?\d*(?:[eE][-+]?\d+)?|\.\d+(?:[eE][-+]?\d+)?)[fFlLuU]*", e)
    if not m:
        return None
    text = m.group(1) + m.group(2)
    if re.fullmatch(r"[-+]?\d+", text):
        return int(text)
    return float(text)


class Struct:
    def __init__(self, name, members, fields):
        self.name = name
        self.members = members  # field -> C++ type
        # [(field, default expr or None, [(enum name, value expr)], {local array: values})]
        self.fields = fields


def evaluate(expr, ctype, enums, arrays):
    """The default's value as a Python literal's text, or '?expr'."""
    e = " ".join(expr.split())
    for name, value in enums:
        if value.strip() == e or value.strip().split("::")[-1] == e.split("::")[-1]:
            # dtype fields spell "no dtype" as an enum choice named None
            return "None" if name == "None" else repr(name)
    bare = e.split("::")[-1]
    if e in CONSTANTS:
        return repr(CONSTANTS[e])
    if bare in DTYPES:
        return repr(DTYPES[bare])
    if e in ("true", "false"):
        return repr(e == "true")
    n = number(e)
    if n is not None:
        if "bool" in ctype:
            return repr(bool(n))
        if "float" in ctype or "double" in ctype:
            return repr(float(n))
        return repr(n)
    if re.fullmatch(r'"(?:[^"\\]|\\.)*"(\s*"(?:[^"\\]|\\.)*")*', e):
        return repr(c_string(e))
    if re.fullmatch(r"'.'", e):
        return repr(e[1])
    m = re.fullmatch(r"dmlc::optional<.*>\s*\((.*)\)", e)
    if m:
        inner = m.group(1).strip()
        if inner == "":
            return "None"
        inner_type = re.sub(r"^dmlc::optional<(.*)>$", r"\1", ctype)
        return evaluate(inner, inner_type, enums, arrays)
    # shapes and tuples: TShape(ndim, value), TShape(ptr, ptr + n), Tuple<T>(...), {a, b}
    m = re.fullmatch(r"(?:mxnet::)?(?:TShape|Tuple<[^()]*>)\s*\((.*)\)", e) or \
        re.fullmatch(r"(?:mxnet::Tuple<[^{}]*>\s*)?\{(.*)\}", e)
    if m:
        inner = m.group(1).strip()
        is_float = "float" in e or "double" in e or "float" in ctype or "double" in ctype
        if inner == "":
            # TShape() has an unknown number of axes (printed None); an empty Tuple has none
            return "None" if e.startswith(("TShape", "mxnet::TShape")) else "()"
        ptr = re.fullmatch(r"(\w+)\s*,\s*\1\s*\+\s*(\d+)", inner)
        if ptr and ptr.group(1) in arrays:
            values = arrays[ptr.group(1)][:int(ptr.group(2))]
        elif e.startswith(("TShape", "mxnet::TShape")) and "{" not in e:
            ndim, value = (number(x) for x in inner.split(","))
            if ndim is None or value is None:
                return "?" + e
            if ndim < 0:
                return "None"
            values = [value] * ndim
        else:
            values = [number(x) for x in inner.split(",")]
            if any(v is None for v in values):
                return "?" + e
        if is_float:
            values = [float(v) for v in values]
        return repr(tuple(values))
    return "?" + e


def parse_structs(path, text, structs):
    for m in re.finditer(r"DMLC_DECLARE_PARAMETER\(\s*(\w+)\s*\)\s*\{", text):
        name = m.group(1)
        start = m.end() - 1
        body = text[start + 1:balanced(text, start) - 1]
        # the member declarations between the struct's own '{' (the last one before the
        # body) and DMLC_DECLARE_PARAMETER give the fields' C++ types
        heads = list(re.finditer(r"struct\s+%s\b[^{;]*\{" % name, text[:m.start()]))
        head = heads[-1] if heads else None
        members = {}
        decl_text = text[head.end():m.start()] if head else ""
        for d in statements(decl_text):
            dm = re.fullmatch(r"(.+?)\s+(\w+)(?:\s*=.*)?", d.strip(), flags=re.S)
            if dm:
                members[dm.group(2)] = " ".join(dm.group(1).split())
        arrays = {}
        for am in re.finditer(r"\w+\s+(\w+)\s*\[\s*\d*\s*\]\s*=\s*\{([^}]*)\}", body):
            arrays[am.group(1)] = [number(x) for x in am.group(2).split(",")]
        fields = []
        for stmt in statements(body):
            # ProposalParam fills one array between its fields: tmp[0] = 4.0f; ...
            am = re.fullmatch(r"(\w+)\s*\[\s*(\d+)\s*\]\s*=\s*(.+)", stmt)
            if am and am.group(1) in arrays:
                values, k = arrays[am.group(1)], int(am.group(2))
                values += [0] * (k + 1 - len(values))
                values[k] = number(am.group(3))
                continue
            fm = re.match(r"DMLC_DECLARE_FIELD\(\s*(\w+)\s*\)", stmt)
            if not fm:
                continue
            default, enums = None, []
            for method, args in chain_calls(stmt[fm.end():]):
                if method == "set_default":
                    # call_arguments splits at commas inside braces too: {0.1f, 0.2f}
                    default = ", ".join(args)
                elif method == "add_enum":
                    enums.append((c_string(args[0]), args[1]))
            # the value of the array at this point of the body, not at its end
            fields.append((fm.group(1), default, enums, {k: list(v) for k, v in arrays.items()}))
        structs.setdefault(name, []).append((path, Struct(name, members, fields)))


def registrations(text):
    """[(op name, [struct names], [aliases])] of the registrations in expanded text."""
    out = []
    for m in re.finditer(r"NNVM_REGISTER_OP\(\s*(\w+)\s*\)|MXNET_REGISTER_OP_PROPERTY\(\s*(\w+)\s*,", text):
        start = m.start()
        # the chain ends at the first ';' outside brackets (lambdas' bodies are in braces)
        depth, i = 0, m.end()
        while i < len(text):
            c = text[i]
            if c in "\"'":
                i = literal_end(text, i)
            elif c in "({[":
                depth += 1
            elif c in ")}]":
                depth -= 1
            elif c == ";" and depth <= 0:
                break
            i += 1
        block = text[start:i]
        # the struct that parses the call is what the operator accepts; add_arguments only
        # documents (MXNet's _linspace parses LinspaceParam but lists RangeParam's fields)
        names = re.findall(r"ParamParser<\s*(\w+)\s*>", block) or re.findall(r"(\w+)::__FIELDS__\(\)", block)
        aliases = re.findall(r'add_alias\(\s*"([^"]+)"\s*\)', block)
        out.append((m.group(1) or m.group(2), names, aliases))
    return out


def scan(root):
    files, lines, macros = legacy.read_sources(root, logical_lines)
    structs, alias_of, enum_macros = {}, {}, {}
    for f in files:
        for line in lines[f]:
            m = re.match(r"\s*#\s*define\s+(\w+)\s+(\.\s*add_enum.*)", line)
            if m:  # lists of choices fields share: MXNET_ADD_ALL_TYPES
                enum_macros[m.group(1)] = m.group(2)
    expander = legacy.Expander(macros)
    # macros that add arguments or a parser to a chain are expanded too
    expander.registering |= {n for n, defs in macros.items()
                             if any("__FIELDS__" in b or "ParamParser" in b for _, b in defs)}
    ops = {}
    for f in files:
        # preprocessor lines are dropped, not split at: chains often carry #if'd attributes
        text = "\n".join(line for line in lines[f] if not line.strip().startswith("#"))
        if enum_macros:
            text_with_enums = re.sub(r"\b(%s)\b" % "|".join(enum_macros), lambda m: enum_macros[m.group(1)], text)
        else:
            text_with_enums = text
        parse_structs(f, text_with_enums, structs)
        expanded = re.sub(r'"\s+"', "", expander.expand(text))
        for name, names, aliases in registrations(expanded):
            ops.setdefault(name, [])
            ops[name] += [(s, f) for s in names if (s, f) not in ops[name]]
            for a in aliases:
                alias_of[a] = name
    # an alias may be added in another chain than the one giving the arguments:
    # MXNET_REGISTER_OP_PROPERTY(Pad, ...) with arguments, NNVM_REGISTER_OP(Pad).add_alias("pad")
    for a, name in alias_of.items():
        ops.setdefault(a, [])
        ops[a] += [s for s in ops.get(name, []) if s not in ops[a]]
    return ops, structs


def nearest(definitions, site):
    """Of the structs of one name (image::CropParam and CropParam), the one defined
    nearest the registering file: most leading path components in common."""
    def shared(path):
        a, b = path.split(os.sep), site.split(os.sep)
        n = 0
        while n < min(len(a), len(b)) and a[n] == b[n]:
            n += 1
        return n
    return max(definitions, key=lambda d: shared(d[0]))[1]


def rows(root, legacy_names):
    ops, structs = scan(root)
    out = []
    for op in legacy_names:
        seen = set()
        for sname, site in ops.get(op, []):
            if sname not in structs:
                seen.add(sname)
                out.append((op, "?struct", "?" + sname, "-"))
                continue
            st = nearest(structs[sname], site)
            for field, default, enums, arrays in st.fields:
                if field in seen:
                    continue
                seen.add(field)
                ctype = st.members.get(field, "")
                if default is None:
                    value = "REQUIRED"
                else:
                    value = evaluate(default, ctype, enums, arrays)
                    if not value.startswith("?"):
                        ast.literal_eval(value)  # every value written must read back
                choices = ",".join(sorted(n for n, _ in enums)) or "-"
                out.append((op, field, value, choices))
        if not seen:
            out.append((op, "-", "-", "-"))
    return out


def main(argv):
    if len(argv) != 1 or not os.path.isdir(os.path.join(argv[0], "src", "operator")):
        sys.stderr.write("usage: mxnet_op_params.py <MXNet source tree with src/operator>\n")
        return 2
    names = legacy.legacy_names(argv[0])
    sys.stdout.write(HEADER + "".join("\t".join(r) + "\n" for r in rows(argv[0], names)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
