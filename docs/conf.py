"""Sphinx configuration of Weft's documentation site (tools/build_docs.sh builds it).

The pages are the Markdown files of docs/, read through MyST; the operator reference is
generated at build time from frontends/registry.json by _ext/weft_operators.py, so it
lists exactly what the registry holds (the codegen check keeps that file current)."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "_ext"))

project = "Weft"
author = "The Weft developers"
copyright = "2026, The Weft developers"

extensions = ["myst_parser", "weft_operators"]
source_suffix = {".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build", "Thumbs.db", ".DS_Store"]
myst_heading_anchors = 3
# Pages link to the code they describe (../core/...): those are files of the repository,
# not pages of the site, so MyST leaves them as plain links.
myst_url_schemes = ["http", "https", "mailto"]
suppress_warnings = ["myst.header"]

html_theme = "alabaster"
html_title = "Weft documentation"
html_static_path = []
