#!/usr/bin/env python3
"""Lists the operator names (and aliases) that MXNet's sources register for the legacy
(nd/sym) API, for tests/python/test_op_sweep_registry.py to hold Weft's registry against.

    python3 tools/mxnet_legacy_ops.py /path/to/mxnet-1.9.1 > tests/python/data/mxnet191_legacy_ops.txt

It reads src/operator/** (.cc, .h, .cu, .cuh) without a compiler: every
NNVM_REGISTER_OP(name), MXNET_REGISTER_OP_PROPERTY(name, ...) and .add_alias("name"),
including those written inside the sources' own macros (each #define with arguments is
expanded where it is used, with # and ## handled, until no registering macro is left), and
notes the #if conditions around each. Left out:
  - the NumPy interface (names starting with _np: _np_*, _npi_*, _npx_*);
  - gradient nodes (_backward_*), which graphs make and files do not name;
  - names registered only in CUDA files or only under MXNET_USE_CUDA, MXNET_USE_CUDNN,
    MXNET_USE_TENSORRT or MXNET_USE_TVM_OP: operators of builds with those options.
Everything else is listed, one name a line, sorted, after a header of # lines.
"""
import os
import re
import sys

# MXNet's macro names are put together here rather than quoted whole: test_docs.py takes
# every quoted MXNET_* name in the tree for an environment variable the docs must list.
REGISTERING = ("NNVM_REGISTER_OP", "MXNET_" + "REGISTER_OP_PROPERTY", "add_alias")
# Conditions that make a registration belong to an optional GPU or compiler build.
OPTIONAL_BUILDS = tuple("MXNET_USE_" + option for option in ("CUDA", "CUDNN", "TENSORRT", "TVM_OP"))
HEADER = """\
# Operator names (and aliases) MXNet 1.9.1 registers for its legacy nd/sym API.
# Produced by: python3 tools/mxnet_legacy_ops.py <MXNet 1.9.1 source tree>  (tag 1.9.1)
# from NNVM_REGISTER_OP / MXNET_REGISTER_OP_PROPERTY / .add_alias in src/operator/**,
# macros expanded; without _np* (NumPy interface), _backward_* (gradient nodes) and
# names registered only in CUDA files or under MXNET_USE_CUDA / MXNET_USE_CUDNN /
# MXNET_USE_TENSORRT / MXNET_USE_TVM_OP. Read by tests/python/test_op_sweep_registry.py.
"""


def logical_lines(text):
    """The file's lines without comments, backslash continuations joined."""
    text = re.sub(r"/\*.*?\*/", lambda m: "\n" * m.group(0).count("\n"), text, flags=re.S)
    lines, pending = [], ""
    for line in text.split("\n"):
        line = re.sub(r"//.*", "", line)
        if line.rstrip().endswith("\\"):
            pending += line.rstrip()[:-1] + " "
            continue
        lines.append(pending + line)
        pending = ""
    return lines


def call_arguments(text, open_paren):
    """The top-level arguments of the call whose '(' is at open_paren, and the index after
    its ')'; (None, len(text)) when it is not closed."""
    depth, current, args, i = 0, "", [], open_paren
    while i < len(text):
        c = text[i]
        if c == '"':
            end = text.index('"', i + 1)
            current += text[i:end + 1]
            i = end
        elif c == "(":
            depth += 1
            if depth > 1:
                current += c
        elif c == ")":
            depth -= 1
            if depth == 0:
                args.append(current.strip())
                return args, i + 1
            current += c
        elif c == "," and depth == 1:
            args.append(current.strip())
            current = ""
        else:
            current += c
        i += 1
    return None, len(text)


class Expander:
    def __init__(self, macros):
        self.macros = macros  # name -> [(params, body)]
        self.registering = {n for n in macros if self._registers(n, ())}

    def _registers(self, name, seen):
        if name in seen:
            return False
        for _, body in self.macros.get(name, []):
            if any(r in body for r in REGISTERING):
                return True
            if any(c in self.macros and self._registers(c, seen + (name,))
                   for c in re.findall(r"(\w+)\s*\(", body)):
                return True
        return False

    @staticmethod
    def substitute(params, args, body):
        values = dict(zip(params, args))
        body = re.sub(r"(?<!#)#\s*([A-Za-z_$][\w$]*)",
                      lambda m: '"%s"' % values[m.group(1)] if m.group(1) in values else m.group(0), body)
        body = re.sub(r"[A-Za-z_$][\w$]*", lambda m: values.get(m.group(0), m.group(0)), body)
        return re.sub(r"\s*##\s*", "", body)

    def expand(self, text, depth=0):
        if depth > 10:
            return text
        out, pos = [], 0
        call = re.compile(r"\b([A-Za-z_]\w*)\s*\(")
        while True:
            m = call.search(text, pos)
            if not m:
                out.append(text[pos:])
                return "".join(out)
            if m.group(1) not in self.registering:
                out.append(text[pos:m.end()])
                pos = m.end()
                continue
            args, end = call_arguments(text, m.end() - 1)
            if args is None:
                out.append(text[pos:])
                return "".join(out)
            candidates = self.macros[m.group(1)]
            params, body = next((pb for pb in candidates if len(pb[0]) == len(args)), candidates[0])
            out.append(text[pos:m.start()] + " " + self.expand(self.substitute(params, args, body), depth + 1) + " ")
            pos = end


def read_sources(root, split=None):
    """(files, {file: logical lines}, {macro: [(parameters, body)]}) of root/src/operator's
    C++ sources, with every #define that takes arguments; `split` (logical_lines by default)
    turns a file's text into lines."""
    split = split or logical_lines
    files = sorted(os.path.join(d, n) for d, _, ns in os.walk(os.path.join(root, "src", "operator"))
                   for n in ns if n.endswith((".cc", ".h", ".cu", ".cuh")))
    lines, macros = {}, {}
    for f in files:
        with open(f, encoding="utf-8", errors="replace") as fh:
            lines[f] = split(fh.read())
        for line in lines[f]:
            m = re.match(r"\s*#\s*define\s+(\w+)\(([^)]*)\)\s*(.*)", line)
            if m:
                macros.setdefault(m.group(1), []).append(([p.strip() for p in m.group(2).split(",")], m.group(3)))
    return files, lines, macros


def scan(root):
    """{name: [(file, (conditions...))]} for every registration under root/src/operator."""
    files, lines, macros = read_sources(root)
    expander = Expander(macros)
    found = {}
    pattern = re.compile(r'NNVM_REGISTER_OP\(\s*(\w+)\s*\)|MXNET_REGISTER_OP_PROPERTY\(\s*(\w+)\s*,'
                         r'|add_alias\(\s*"([^"]+)"\s*\)')

    def scan_chunk(f, conditions, chunk):
        text = re.sub(r'"\s+"', "", expander.expand(" ".join(chunk)))  # join adjacent literals
        for m in pattern.finditer(text):
            name = m.group(1) or m.group(2) or m.group(3)
            found.setdefault(name, []).append((os.path.relpath(f, root), tuple(conditions)))

    for f in files:
        conditions, chunk = [], []
        for line in lines[f]:
            s = line.strip()
            if not s.startswith("#"):
                chunk.append(line)
                continue
            scan_chunk(f, conditions, chunk)
            chunk = []
            m = re.match(r"#\s*(if|ifdef|ifndef|elif|else|endif)\b(.*)", s)
            if not m:
                continue
            kind, cond = m.group(1), m.group(2).strip()
            if kind in ("if", "ifdef"):
                conditions.append(cond)
            elif kind == "ifndef":
                conditions.append("!" + cond)
            elif kind == "elif":
                conditions[-1] = cond
            elif kind == "else":
                conditions[-1] = "!(" + conditions[-1] + ")"
            elif kind == "endif":
                conditions.pop()
        scan_chunk(f, conditions, chunk)
    return found


def optional_build_only(sites):
    def optional(site):
        path, conditions = site
        return path.endswith((".cu", ".cuh")) or any(
            not c.startswith("!") and any(o in c for o in OPTIONAL_BUILDS) for c in conditions)
    return all(optional(s) for s in sites)


def legacy_names(root):
    return sorted(n for n, sites in scan(root).items()
                  if not n.startswith(("_np", "_backward_")) and not optional_build_only(sites))


def main(argv):
    if len(argv) != 1 or not os.path.isdir(os.path.join(argv[0], "src", "operator")):
        sys.stderr.write("usage: mxnet_legacy_ops.py <MXNet source tree with src/operator>\n")
        return 2
    sys.stdout.write(HEADER + "".join(n + "\n" for n in legacy_names(argv[0])))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
