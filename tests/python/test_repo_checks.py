"""The repository's own checks (tools/check_layers.py): they pass on this tree and fail,
naming the file and the rule, on a tree that breaks a rule."""
import os
import shutil
import subprocess
import sys

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CHECK = os.path.join(REPO, "tools", "check_layers.py")


def run_check(root):
    return subprocess.run([sys.executable, CHECK, "--root", str(root)], capture_output=True, text=True)


@pytest.fixture
def tree(tmp_path):
    """A copy of the parts of the repository the check reads."""
    for folder in ("core", "c_api", "frontends/python/weft"):
        shutil.copytree(os.path.join(REPO, folder), tmp_path / folder,
                        ignore=shutil.ignore_patterns("__pycache__", "*.so"))
    (tmp_path / "docs").mkdir()
    shutil.copy(os.path.join(REPO, "docs", "architecture.md"), tmp_path / "docs")
    return tmp_path


def test_this_tree_follows_its_layer_tables():
    r = run_check(REPO)
    assert r.returncode == 0, r.stdout + r.stderr


def test_copy_passes_before_any_change(tree):
    r = run_check(tree)
    assert r.returncode == 0, r.stdout + r.stderr


def test_an_include_up_the_table_fails(tree):
    path = tree / "core" / "graph" / "layer_break.cc"
    path.write_text('#include "core/base/error.h"\n#include "core/imperative/imperative.h"\n')
    r = run_check(tree)
    assert r.returncode == 1
    assert "core/graph/layer_break.cc:2: includes core/imperative/imperative.h" in r.stdout
    assert "core/graph/ (row 7) may not use core/imperative/ (row 6)" in r.stdout


def test_a_front_end_reaching_into_the_core_fails(tree):
    (tree / "frontends" / "r").mkdir(parents=True)
    (tree / "frontends" / "r" / "glue.c").write_text(
        '#include <R.h>\n#include "weft/c_api.h"\n#include "core/ndarray/ndarray.h"\n')
    r = run_check(tree)
    assert r.returncode == 1
    assert "frontends/r/glue.c:3: includes core/ndarray/ndarray.h" in r.stdout
    # The C API header and system headers are fine.
    assert "glue.c:1" not in r.stdout and "glue.c:2" not in r.stdout


def test_the_public_header_may_not_include_the_core(tree):
    header = tree / "c_api" / "include" / "weft" / "c_api.h"
    header.write_text(header.read_text() + '\n#include "core/base/shape.h"\n')
    r = run_check(tree)
    assert r.returncode == 1
    assert "c_api/include/weft/c_api.h" in r.stdout and "core/base/shape.h" in r.stdout


def test_a_python_import_up_the_table_fails_even_inside_a_function(tree):
    path = tree / "frontends" / "python" / "weft" / "metric.py"
    path.write_text(path.read_text() + "\n\ndef _late():\n    from .gluon import nn\n    return nn\n")
    r = run_check(tree)
    assert r.returncode == 1
    assert "frontends/python/weft/metric.py" in r.stdout
    assert "imports weft.gluon.nn: weft.metric (row 7) may not use weft.gluon (row 3)" in r.stdout


def test_a_python_module_without_a_row_fails(tree):
    (tree / "frontends" / "python" / "weft" / "newthing.py").write_text("from . import base\n")
    r = run_check(tree)
    assert r.returncode == 1
    assert "module weft.newthing has no row in the python layer table" in r.stdout
