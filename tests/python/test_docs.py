"""The documentation site: it builds with warnings as errors, its operator reference covers
the registry, its environment-variable page names every variable the code reads, and the
Python getting-started page runs as written."""
import json
import os
import re
import subprocess
import sys

import pytest

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
DOCS = os.path.join(REPO, "docs")


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    out = tmp_path_factory.mktemp("docs-html")
    proc = subprocess.run([sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q", "-b", "html",
                           "-d", str(out / ".doctrees"), DOCS, str(out)], capture_output=True, text=True)
    assert proc.returncode == 0, "sphinx failed:\n" + proc.stdout + proc.stderr
    return out


def test_site_builds_with_every_page(site):
    for page in ("index", "operators", "env_vars", "migration", "architecture", "security",
                 "getting_started/python", "getting_started/c", "frontends/r", "frontends/go", "frontends/julia"):
        assert (site / (page + ".html")).is_file(), page
    index = (site / "index.html").read_text()
    assert 'href="migration.html"' in index and 'href="operators.html"' in index


def test_operator_reference_covers_the_registry(site):
    with open(os.path.join(REPO, "frontends", "registry.json"), encoding="utf-8") as f:
        ops = json.load(f)["operators"]
    html = (site / "operators.html").read_text()
    rubrics = re.findall(r'<p class="rubric">([^<]+)</p>', html)
    assert sorted(rubrics) == sorted(o["name"] for o in ops)
    # A parameter's default and documentation reach the page.
    conv = next(o for o in ops if o["name"] == "Convolution")
    start = html.index('<p class="rubric">Convolution</p>')
    entry = html[start:html.index('class="rubric"', start + 30)]
    for p in conv["params"]:
        assert ">%s<" % p["name"] in entry


def _variables_read_by_the_code():
    pattern = re.compile(r'"((?:WEFT|MXNET|DMLC|PS)_[A-Z0-9_]+)"')
    roots = ["core", "c_api", "frontends/python/weft", "frontends/go", "frontends/r/weft/R", "tools"]
    found = {}
    for root in roots:
        for folder, _, files in os.walk(os.path.join(REPO, root)):
            for name in files:
                if not name.endswith((".cc", ".h", ".cu", ".c", ".py", ".go", ".R", ".sh")):
                    continue
                path = os.path.join(folder, name)
                with open(path, encoding="utf-8", errors="replace") as f:
                    for var in pattern.findall(f.read()):
                        found.setdefault(var, os.path.relpath(path, REPO))
    # Names in quotes that are not environment variables: the public header's macros and
    # enumerators (the code generators and the R package spell them), and the compile
    # definitions runtime.Features() reports.
    with open(os.path.join(REPO, "c_api", "include", "weft", "c_api.h"), encoding="utf-8") as f:
        header = set(re.findall(r"\b(WEFT_[A-Z0-9_]+)", f.read()))
    # Compile definitions CMake gives (a test's path to a library it builds) are macros too.
    for folder, _, files in os.walk(REPO):
        if "CMakeLists.txt" in files and not folder.startswith(os.path.join(REPO, "build")):
            with open(os.path.join(folder, "CMakeLists.txt"), encoding="utf-8") as f:
                header |= set(re.findall(r"target_compile_definitions\([^)]*?\b(WEFT_[A-Z0-9_]+)=", f.read(), re.S))
    return {v: p for v, p in found.items()
            if v not in header and not v.endswith("_") and not (v.startswith("WEFT_USE_") and p.endswith("runtime.py"))}


def test_env_var_page_names_every_variable_the_code_reads():
    with open(os.path.join(DOCS, "env_vars.md"), encoding="utf-8") as f:
        page = f.read()
    variables = _variables_read_by_the_code()
    assert "WEFT_ENGINE_TYPE" in variables and "DMLC_ROLE" in variables
    missing = sorted("%s (read in %s)" % (v, p) for v, p in variables.items() if "`%s`" % v not in page)
    assert not missing, "docs/env_vars.md does not name: " + ", ".join(missing)


def test_python_getting_started_runs_as_written(tmp_path):
    with open(os.path.join(DOCS, "getting_started", "python.md"), encoding="utf-8") as f:
        blocks = re.findall(r"```python\n(.*?)```", f.read(), re.S)
    assert len(blocks) >= 4
    script = tmp_path / "getting_started.py"
    script.write_text("\n".join(blocks))
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=600, cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "epoch 4" in proc.stdout
