#!/usr/bin/env python3
"""Checks that no file reaches up the layer tables of docs/architecture.md.

The two tables between the `<!-- layers:... -->` markers of docs/architecture.md are this
script's input, so the document and the check cannot drift apart:

- `layers:native`: rows of folders, top first. A C, C++ or CUDA file (cgo preambles of Go
  files and the R package's C glue included) may `#include` files of its own row and of the
  rows below it. A row whose "may include" cell says `only <folder>` may include that
  folder (and its own) and nothing else of the repository: the front ends reach the core
  through the C API alone. Folders the table does not name (tests/, bench/, tools/) are not
  checked: tests and benchmarks may reach inside.
- `layers:python`: rows of modules of the Python package `weft`, top first, checked the
  same way on every import (function-level ones too), relative or absolute. A module not
  in the table is an error, so a new module has to be given its place.

    python3 tools/check_layers.py            # exit 1 listing each violation
    python3 tools/check_layers.py --root R   # check the tree at R instead of this one
"""
import argparse
import ast
import os
import re
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DOC = "docs/architecture.md"
NATIVE_EXT = (".h", ".hpp", ".c", ".cc", ".cpp", ".cu", ".cuh", ".go")
PY_PACKAGE = "frontends/python/weft"

_INCLUDE = re.compile(r'^\s*(?://\s*)?#\s*include\s*[<"]([^>"]+)[>"]', re.M)
_CODE = re.compile(r"`([^`]+)`")


class Table:
    def __init__(self, rows):
        # rows: [(row number, [names], only-or-None)], top first.
        self.rows = rows
        self.rank = {}
        for rank, (_, names, _) in enumerate(rows):
            for n in names:
                if n in self.rank:
                    raise SystemExit("check_layers: %s names %s twice" % (DOC, n))
                self.rank[n] = rank


def read_table(text, tag):
    m = re.search(r"<!-- layers:%s -->(.*?)<!-- /layers:%s -->" % (tag, tag), text, re.S)
    if not m:
        raise SystemExit("check_layers: %s has no <!-- layers:%s --> table" % (DOC, tag))
    rows = []
    for line in m.group(1).splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) < 3 or not cells[0].isdigit():
            continue
        names = _CODE.findall(cells[1])
        only = None
        if cells[2].startswith("only"):
            only = _CODE.findall(cells[2])
        rows.append((int(cells[0]), names, only))
    if not rows:
        raise SystemExit("check_layers: the layers:%s table of %s has no rows" % (tag, DOC))
    return Table(rows)


def folder_of(path, table):
    """The table's longest folder that contains `path`, or None."""
    best = None
    for name in table.rank:
        if path.startswith(name) and (best is None or len(name) > len(best)):
            best = name
    return best


def resolve_include(inc, src):
    """The repository path an include names, or None for a system header."""
    if inc.startswith(("core/", "c_api/", "frontends/", "tests/", "bench/")):
        return inc
    if inc.startswith("weft/"):
        return "c_api/include/" + inc
    beside = os.path.normpath(os.path.join(os.path.dirname(src), inc))
    if os.path.exists(os.path.join(REPO, beside)):
        return beside
    return None


def allowed(table, src_folder, dst_folder):
    src_rank, dst_rank = table.rank[src_folder], table.rank[dst_folder]
    only = table.rows[src_rank][2]
    if only is not None:
        return src_rank == dst_rank or any(dst_folder.startswith(o) for o in only)
    return dst_rank >= src_rank


def check_native(table):
    errors = []
    for top in sorted({n.split("/")[0] for n in table.rank}):
        for root, dirs, files in os.walk(os.path.join(REPO, top)):
            dirs[:] = [d for d in dirs if d not in ("node_modules", "build") and not d.startswith(".")]
            for f in sorted(files):
                if not f.endswith(NATIVE_EXT):
                    continue
                src = os.path.relpath(os.path.join(root, f), REPO)
                src_folder = folder_of(src, table)
                if src_folder is None:
                    continue
                with open(os.path.join(REPO, src), encoding="utf-8", errors="replace") as fh:
                    text = fh.read()
                for m in _INCLUDE.finditer(text):
                    dst = resolve_include(m.group(1), src)
                    if dst is None:
                        continue
                    dst_folder = folder_of(dst, table)
                    if dst_folder is None:
                        errors.append("%s:%d: includes %s, which no row of the native layer table holds"
                                      % (src, text[:m.start()].count("\n") + 1, m.group(1)))
                    elif not allowed(table, src_folder, dst_folder):
                        errors.append("%s:%d: includes %s: %s (row %d) may not use %s (row %d)"
                                      % (src, text[:m.start()].count("\n") + 1, m.group(1), src_folder,
                                         table.rows[table.rank[src_folder]][0], dst_folder,
                                         table.rows[table.rank[dst_folder]][0]))
    return errors


def python_modules():
    mods = {}
    base = os.path.join(REPO, PY_PACKAGE)
    for root, dirs, files in os.walk(base):
        dirs[:] = [d for d in dirs if d != "__pycache__"]
        for f in files:
            if f.endswith(".py"):
                rel = os.path.relpath(os.path.join(root, f), os.path.dirname(base))[:-3].replace(os.sep, ".")
                if rel.endswith(".__init__"):
                    rel = rel[: -len(".__init__")]
                mods[rel] = os.path.join(root, f)
    return mods


def module_row(name, table):
    """The table's longest module name that is `name` or a subpackage holding it (the root
    package's row holds the root module alone, so a new module is not silently put on top)."""
    best = None
    for n in table.rank:
        holds = name == n or ("." in n and name.startswith(n + "."))
        if holds and (best is None or len(n) > len(best)):
            best = n
    return best


def check_python(table):
    errors = []
    mods = python_modules()
    for mod, path in sorted(mods.items()):
        src_row = module_row(mod, table)
        rel = os.path.relpath(path, REPO)
        if src_row is None:
            errors.append("%s: module %s has no row in the python layer table" % (rel, mod))
            continue
        is_pkg = path.endswith("__init__.py")
        pkg = mod if is_pkg else mod.rpartition(".")[0]
        tree = ast.parse(open(path, encoding="utf-8").read(), rel)
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                if node.level:
                    parts = pkg.split(".")
                    parts = parts[: len(parts) - node.level + 1]
                    target = ".".join(parts + ([node.module] if node.module else []))
                else:
                    target = node.module or ""
                # `from pkg import name` imports the submodule pkg.name when there is one.
                targets = []
                for alias in node.names:
                    sub = target + "." + alias.name
                    targets.append(sub if sub in mods or sub in table.rank else target)
            elif isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            else:
                continue
            for t in targets:
                if t != "weft" and not t.startswith("weft."):
                    continue
                dst_row = module_row(t, table)
                if dst_row is None:
                    errors.append("%s:%d: imports %s, which has no row in the python layer table"
                                  % (rel, node.lineno, t))
                elif not allowed(table, src_row, dst_row):
                    errors.append("%s:%d: imports %s: %s (row %d) may not use %s (row %d)"
                                  % (rel, node.lineno, t, src_row, table.rows[table.rank[src_row]][0], dst_row,
                                     table.rows[table.rank[dst_row]][0]))
    return errors


def main(argv):
    global REPO
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--root", default=REPO, help="the repository to check (default: this one)")
    REPO = os.path.abspath(ap.parse_args(argv).root)
    text = open(os.path.join(REPO, DOC), encoding="utf-8").read()
    native, python = read_table(text, "native"), read_table(text, "python")
    errors = check_native(native) + check_python(python)
    for e in errors:
        print(e)
    if errors:
        print("check_layers: %d include(s) or import(s) run up the layer tables of %s" % (len(errors), DOC))
        return 1
    print("check_layers: every include and import follows the layer tables of %s" % DOC)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
