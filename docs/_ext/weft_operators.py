"""The `weft-operators` directive: the operator reference, built from the registry.

It reads frontends/registry.json (written by tools/codegen/generate.py from libweft's
registry and checked current by CI) and renders each operator as an entry: its name and
aliases, its documentation, its inputs and a table of its parameters with types, defaults
and documentation. The registry's text is inserted as plain text, never parsed as markup,
so that no operator's documentation can break the page."""
import json
import os

from docutils import nodes
from docutils.parsers.rst import Directive


def _registry_path(app):
    return os.path.normpath(os.path.join(app.srcdir, "..", "frontends", "registry.json"))


def _paragraphs(text):
    return [nodes.paragraph(text=p.strip()) for p in text.split("\n\n") if p.strip()]


def _table(header, rows, widths):
    table = nodes.table()
    group = nodes.tgroup(cols=len(header))
    table += group
    for w in widths:
        group += nodes.colspec(colwidth=w)
    head = nodes.thead()
    group += head
    body = nodes.tbody()
    group += body
    for target, cells in ((head, [header]), (body, rows)):
        for cells_of_row in cells:
            row = nodes.row()
            for c in cells_of_row:
                entry = nodes.entry()
                entry += nodes.paragraph(text=c)
                row += entry
            target += row
    return table


def operator_id(name):
    return "op-" + name.strip("_").replace("_", "-").lower() + ("-internal" if name.startswith("_") else "")


class WeftOperators(Directive):
    """Renders every operator of the registry (no arguments)."""

    has_content = False

    def run(self):
        env = self.state.document.settings.env
        path = _registry_path(env.app)
        env.note_dependency(path)
        with open(path, encoding="utf-8") as f:
            ops = sorted(json.load(f)["operators"], key=lambda o: (o["name"].startswith("_"), o["name"].lower()))
        out = []
        index = nodes.paragraph()
        for i, op in enumerate(ops):
            if i:
                index += nodes.Text(" · ")
            ref = nodes.reference("", op["name"], refid=operator_id(op["name"]))
            index += nodes.literal("", "", ref)
        out.append(nodes.paragraph(text="%d operators. Public names first, then internal ones "
                                        "(a leading underscore: backward operators and helpers)." % len(ops)))
        out.append(index)
        for op in ops:
            box = nodes.container(ids=[operator_id(op["name"])], classes=["weft-operator"])
            box += nodes.rubric(text=op["name"])
            if op.get("aliases"):
                box += nodes.paragraph(text="Aliases: " + ", ".join(op["aliases"]))
            box += _paragraphs(op.get("doc") or "No documentation.")
            if op.get("inputs"):
                box += nodes.paragraph(text="Inputs:")
                box += _table(["name", "type", "description"],
                              [[i["name"], i["type"], i.get("doc", "")] for i in op["inputs"]], [2, 2, 6])
            params = [p for p in op.get("params", []) if p["name"] != op.get("key_var_num_args")]
            if params:
                box += nodes.paragraph(text="Parameters:")
                box += _table(["name", "type", "default", "description"],
                              [[p["name"], p["type"], "required" if p.get("required") else str(p.get("default", "")),
                                p.get("doc", "")] for p in params], [2, 2, 2, 6])
            out.append(box)
        return out


def setup(app):
    app.add_directive("weft-operators", WeftOperators)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
