"""Every operator name (and alias) MXNet 1.9.1 registers for its legacy nd/sym API is in
Weft's registry, but for the groups listed in NOT_YET below. The MXNet list is
tests/python/data/mxnet191_legacy_ops.txt, made by tools/mxnet_legacy_ops.py from MXNet's
sources (its header says how); the scanner itself is tested here on a small source tree."""
import os
import subprocess
import sys

from weft.ndarray import _ops as nd_ops

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DATA = os.path.join(REPO, "tests", "python", "data", "mxnet191_legacy_ops.txt")
SCANNER = os.path.join(REPO, "tools", "mxnet_legacy_ops.py")

# Names Weft does not register yet. Shrink this as the branches that add them merge;
# test_not_yet_lists_only_missing_names fails when a name here has arrived.
NOT_YET = set()

# MXNet's pre-Custom Python operators (mx.operator.NDArrayOp / NumpyOp), which take C
# callback pointers as a parameter; Weft's Custom operator replaces them.
NOT_YET |= {"_NDArray", "_Native"}


def mxnet_names():
    with open(DATA, encoding="utf-8") as f:
        return [line.strip() for line in f if line.strip() and not line.startswith("#")]


def weft_names():
    names = set()
    for info in nd_ops.list_ops():
        names.add(info.name)
        names.update(info.aliases)
    return names


def not_yet(name):
    return name in NOT_YET


def test_data_file_is_the_scanners_kind_of_list():
    names = mxnet_names()
    assert len(names) > 500 and names == sorted(set(names))
    assert not [n for n in names if n.startswith(("_np", "_backward_"))]
    for expected in ("FullyConnected", "_contrib_fft", "_random_pdf_normal", "_sample_uniform", "linalg_gemm2",
                     "_contrib_interleaved_matmul_selfatt_qk", "_contrib_intgemm_fully_connected"):
        assert expected in names


def test_every_mxnet_legacy_operator_is_registered():
    have = weft_names()
    missing = [n for n in mxnet_names() if n not in have and not not_yet(n)]
    assert not missing, "MXNet 1.9.1 operators missing from Weft's registry: %s" % missing


def test_not_yet_lists_only_missing_names():
    have = weft_names()
    names = set(mxnet_names())
    assert NOT_YET <= names, "NOT_YET names that MXNet does not register: %s" % sorted(NOT_YET - names)
    arrived = sorted(n for n in names if not_yet(n) and n in have)
    assert not arrived, "now registered; take them out of NOT_YET: %s" % arrived


def test_scanner_expands_macros_and_leaves_out_what_it_should(tmp_path):
    ops = tmp_path / "src" / "operator"
    (ops / "sub").mkdir(parents=True)
    (ops / "a.cc").write_text(
        '#define REG_UNARY(name) \\\n  NNVM_REGISTER_OP(name) \\\n  .add_alias("_alias_" #name)\n'
        '#define REG_PDF(distr, n) NNVM_REGISTER_OP(_pdf_##distr).set_num_inputs(n)\n'
        "REG_UNARY(relu6)\n.describe(\"x\");\n"
        "REG_PDF(normal,\n        2);\n"
        "NNVM_REGISTER_OP(_backward_relu6);\n"
        "NNVM_REGISTER_OP(_npi_add).add_alias(\"_np_add\");\n"
        "/* NNVM_REGISTER_OP(commented_out) */\n"
        "#if MXNET_USE_CUDNN == 1\nNNVM_REGISTER_OP(CuDNNOnly);\n#else\nNNVM_REGISTER_OP(NotCuDNN);\n#endif\n")
    (ops / "sub" / "b.cu").write_text("NNVM_REGISTER_OP(GpuOnly);\nNNVM_REGISTER_OP(relu6);\n")
    (ops / "sub" / "c.h").write_text("MXNET_REGISTER_OP_PROPERTY(LegacyProp, LegacyPropType)\n.add_alias(\"legacy\");\n")
    r = subprocess.run([sys.executable, SCANNER, str(tmp_path)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    names = [line for line in r.stdout.splitlines() if not line.startswith("#")]
    assert names == ["LegacyProp", "NotCuDNN", "_alias_relu6", "_pdf_normal", "legacy", "relu6"]
    r = subprocess.run([sys.executable, SCANNER, str(tmp_path / "nowhere")], capture_output=True, text=True)
    assert r.returncode == 2 and "usage" in r.stderr
