"""The parameters of Weft's operators are MXNet 1.9.1's: every parameter MXNet declares for a
legacy operator exists, with MXNet's default (or required where MXNet requires it) and at
least MXNet's enum choices. The MXNet side is tests/python/data/mxnet191_op_params.txt, made
by tools/mxnet_op_params.py from MXNet's sources (its header says how); the scanner itself is
tested here on a small source tree. Weft may add parameters and choices of its own.

The defaults that were wrong in Weft's registry are also checked by calling the operators."""
import ast
import math
import os
import subprocess
import sys

import numpy as np
import pytest

import weft as mx
from weft.ndarray import _ops as nd_ops

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DATA = os.path.join(REPO, "tests", "python", "data", "mxnet191_op_params.txt")
SCANNER = os.path.join(REPO, "tools", "mxnet_op_params.py")

# Deliberate differences from MXNet 1.9.1, (operator, parameter) -> why. Each must still be a
# difference (test_allowed_differences_are_still_differences).
ALLOWED = {
    # MXNet's Custom has no parameter struct (it parses its keys itself) and fails without
    # op_type all the same; Weft declares op_type so that it is listed and checked.
    ("Custom", "op_type"): "declared and required where MXNet's parser requires it",
    # MXNet requires a mode; Weft defaults to 'constant'. Every call MXNet accepts names a
    # mode, so none of them changes.
    ("Pad", "mode"): "default 'constant' where MXNet requires a mode",
    ("pad", "mode"): "default 'constant' where MXNet requires a mode",
    # MXNet's range is an optional tuple (None); Weft's is a tuple whose empty value means
    # "not given", printed (): the same calls mean the same thing.
    ("_histogram", "range"): "empty tuple () for MXNet's None",
}

DTYPE_NAMES = {"float16", "float32", "float64", "bfloat16", "uint8", "int8", "int32", "int64", "bool"}


def mxnet_params():
    """{op: {param: (default, choices)}}; an operator without parameters maps to {}."""
    ops = {}
    with open(DATA, encoding="utf-8") as f:
        for line in f:
            if line.startswith("#") or not line.strip():
                continue
            op, param, default, choices = line.rstrip("\n").split("\t")
            ops.setdefault(op, {})
            if param != "-":
                ops[op][param] = (default, set() if choices == "-" else set(choices.split(",")))
    return ops


def weft_params():
    """{op or alias: {param: (type, default, required)}} from the registry."""
    ops = {}
    for info in nd_ops.list_ops():
        params = {name: (ptype, default, required) for name, ptype, default, _doc, required in info.params}
        for n in [info.name] + list(info.aliases):
            ops[n] = params
    return ops


def mxnet_value(text):
    if text == "REQUIRED":
        return text
    v = ast.literal_eval(text)
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else v


def weft_value(ptype, default, required):
    """A registry default as the Python value MXNet's file would write for it."""
    if required:
        return "REQUIRED"
    if default == "None":
        return None
    if ptype.startswith("boolean"):
        return {"True": True, "False": False, "1": True, "0": False}[default]
    if ptype.startswith("{"):
        return default
    if ptype.startswith(("Shape", "tuple")) or default.startswith(("(", "[")):
        v = ast.literal_eval(default.replace("[", "(").replace("]", ")"))
        return v if isinstance(v, tuple) else (v,)
    try:
        return float(default)
    except ValueError:
        return default


def same(a, b):
    if isinstance(a, tuple) and isinstance(b, tuple):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    numbers = (int, float)
    if isinstance(a, numbers) and isinstance(b, numbers) and not isinstance(a, bool) and not isinstance(b, bool):
        return math.isclose(a, b, rel_tol=1e-6) or (math.isnan(a) and math.isnan(b))
    return a == b


def weft_choices(ptype):
    """The choices of an enum type ({'a', 'b'}), every dtype for a dtype field, else None."""
    if ptype.startswith("{"):
        return {c.strip().strip("'") for c in ptype[1:ptype.index("}")].split(",")} - {"None"}
    if ptype.startswith("dtype"):
        return DTYPE_NAMES
    return None


def differences():
    """[(op, param, what)] for every parameter of an operator both register that differs."""
    weft = weft_params()
    out = []
    for op, params in mxnet_params().items():
        if op not in weft:
            continue  # test_op_sweep_registry.py holds the names
        w = weft[op]
        for name, (default, choices) in params.items():
            if name not in w:
                out.append((op, name, "missing (MXNet's default %s)" % default))
                continue
            ptype, wdefault, required = w[name]
            mine, theirs = weft_value(ptype, wdefault, required), mxnet_value(default)
            if not same(mine, theirs):
                out.append((op, name, "default %r, MXNet's %r" % (mine, theirs)))
            wanted = choices - {"None"}
            have = weft_choices(ptype)
            if wanted and (have is None or not wanted <= have):
                out.append((op, name, "choices %s lack MXNet's %s" % (ptype, sorted(wanted - (have or set())))))
        for name, (ptype, wdefault, required) in w.items():
            if name not in params and required:
                out.append((op, name, "required, and MXNet has no such parameter"))
    return out


def test_data_file_is_the_scanners_kind_of_list():
    ops = mxnet_params()
    assert len(ops) > 500
    assert not [op for op in ops if op.startswith(("_np", "_backward_"))]
    with open(DATA, encoding="utf-8") as f:
        assert "\t?" not in f.read(), "a default the scanner could not evaluate"
    # facts about MXNet 1.9.1 that the scanner must have read right
    assert ops["Pooling"]["pool_type"] == ("'max'", {"avg", "lp", "max", "sum"})
    assert ops["Pooling"]["pooling_convention"][0] == "'valid'"
    assert ops["Pooling"]["kernel"][0] == "()"
    assert ops["softmax"]["axis"][0] == "-1"
    assert ops["topk"]["ret_typ"] == ("'indices'", {"both", "indices", "mask", "value"})
    assert ops["Convolution"]["cudnn_tune"] == ("None", {"fastest", "limited_workspace", "off"})
    assert ops["Convolution"]["num_filter"][0] == "REQUIRED"
    assert ops["BatchNorm"]["axis"][0] == "1"  # a named constant
    assert ops["_contrib_Proposal"]["scales"][0] == "(4.0, 8.0, 16.0, 32.0)"  # filled element by element
    assert ops["Crop"]["num_args"][0] == "REQUIRED"  # not image::CropParam's fields
    assert "step" not in ops["_linspace"] and "num" in ops["_linspace"]  # the parser's struct
    assert ops["_random_uniform"]["shape"][0] == "None" and ops["_zeros"]["shape"][0] == "()"
    assert ops["Cast"]["dtype"][1] >= {"float32", "int8", "bool"}  # choices from a macro
    assert ops["pad"] == ops["Pad"] and ops["BlockGrad"] == {}


def test_registry_matches_mxnet_parameters():
    found = [d for d in differences() if (d[0], d[1]) not in ALLOWED]
    assert not found, "parameters that differ from MXNet 1.9.1's:\n" + "\n".join("%s.%s: %s" % d for d in found)


def test_allowed_differences_are_still_differences():
    found = {(op, name) for op, name, _ in differences()}
    stale = sorted(set(ALLOWED) - found)
    assert not stale, "no longer differ; take them out of ALLOWED: %s" % stale


def test_scanner_reads_structs_registrations_and_aliases(tmp_path):
    ops = tmp_path / "src" / "operator"
    (ops / "image").mkdir(parents=True)
    (ops / "a-inl.h").write_text(
        "#define ADD_TYPES .add_enum(\"float32\", kFloat32) .add_enum(\"int8\", kInt8)\n"
        "struct CropParam : public dmlc::Parameter<CropParam> {\n"
        "  int num_args; mxnet::TShape offset; int mode; dmlc::optional<int> dtype; float eps;\n"
        "  mxnet::Tuple<float> scales; bool flag; mxnet::TShape shape;\n"
        "  DMLC_DECLARE_PARAMETER(CropParam) {\n"
        "    float tmp[] = {0, 0};\n"
        "    DMLC_DECLARE_FIELD(num_args).set_range(1, 3).describe(\"a; b\");  // required\n"
        "    DMLC_DECLARE_FIELD(offset).set_default(mxnet::TShape(2, 0));\n"
        "    DMLC_DECLARE_FIELD(mode).add_enum(\"edge\", pad::kEdge).add_enum(\"constant\", pad::kConstant)\n"
        "      .set_default(pad::kConstant);\n"
        "    DMLC_DECLARE_FIELD(dtype).add_enum(\"None\", -1) ADD_TYPES .set_default(-1);\n"
        "    DMLC_DECLARE_FIELD(eps).set_default(1e-3f).describe(R\"code(see http://x \"y\")code\");\n"
        "    tmp[0] = 0.5f; tmp[1] = 2.0f;\n"
        "    DMLC_DECLARE_FIELD(scales).set_default(mxnet::Tuple<float>(tmp, tmp + 2));\n"
        "    DMLC_DECLARE_FIELD(flag).set_default(1);\n"
        "    DMLC_DECLARE_FIELD(shape).set_default(mxnet::TShape());\n"
        "  }\n};\n")
    (ops / "image" / "crop-inl.h").write_text(
        "namespace image {\nstruct CropParam : public dmlc::Parameter<CropParam> {\n  int x;\n"
        "  DMLC_DECLARE_PARAMETER(CropParam) { DMLC_DECLARE_FIELD(x); }\n};\n}\n")
    (ops / "image" / "crop.cc").write_text(
        "NNVM_REGISTER_OP(_image_crop).set_attr_parser(ParamParser<CropParam>)\n"
        ".add_arguments(CropParam::__FIELDS__());\n")
    (ops / "a.cc").write_text(
        "#define REG(name) NNVM_REGISTER_OP(name).add_arguments(CropParam::__FIELDS__())\n"
        "MXNET_REGISTER_OP_PROPERTY(Crop, CropProp)\n"
        "#if MXNET_USE_MKLDNN == 1\n.set_attr<int>(\"x\", 1)\n#endif\n"
        ".set_attr<F>(\"f\", [](int a) { return a; })\n"
        ".add_arguments(CropParam::__FIELDS__());\n"
        "NNVM_REGISTER_OP(Crop).add_alias(\"crop\");\n"
        "REG(crop_again);\n"
        "NNVM_REGISTER_OP(_linspace).set_attr_parser(ParamParser<LinParam>)\n"
        ".add_arguments(CropParam::__FIELDS__());\n"
        "NNVM_REGISTER_OP(plain);\n")
    (ops / "lin-inl.h").write_text(
        "struct LinParam : public dmlc::Parameter<LinParam> {\n  int num;\n"
        "  DMLC_DECLARE_PARAMETER(LinParam) { DMLC_DECLARE_FIELD(num).set_default(50); }\n};\n")
    r = subprocess.run([sys.executable, SCANNER, str(tmp_path)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    rows = [line.split("\t") for line in r.stdout.splitlines() if not line.startswith("#")]
    crop = [
        ["Crop", "num_args", "REQUIRED", "-"],
        ["Crop", "offset", "(0, 0)", "-"],
        ["Crop", "mode", "'constant'", "constant,edge"],
        ["Crop", "dtype", "None", "None,float32,int8"],
        ["Crop", "eps", "0.001", "-"],
        ["Crop", "scales", "(0.5, 2.0)", "-"],
        ["Crop", "flag", "True", "-"],
        ["Crop", "shape", "None", "-"],
    ]
    assert rows == (crop + [["_image_crop", "x", "REQUIRED", "-"], ["_linspace", "num", "50", "-"]]
                    + [["crop"] + row[1:] for row in crop] + [["crop_again"] + row[1:] for row in crop]
                    + [["plain", "-", "-", "-"]])


# The defaults that were wrong in the registry, called.

def test_broadcast_to_shape_defaults_to_the_empty_shape():
    args = mx.operator.get_operator_arguments("broadcast_to")
    assert args.types[args.names.index("shape")] == "Shape(tuple), optional, default=()"
    # () takes no input with axes: MXNet's "cannot be broadcasted", not a missing parameter
    with pytest.raises(mx.base.MXNetError, match=r"cannot broadcast an input of shape \(2,3\) to shape \(\)"):
        mx.nd.broadcast_to(mx.nd.ones((2, 3))).wait_to_read()
    with mx.util.np_shape(True):
        out = mx.nd.broadcast_to(mx.nd.array(np.array(4.5, dtype=np.float32)))
        assert out.shape == () and out.asnumpy() == np.float32(4.5)
    explicit = mx.nd.broadcast_to(mx.nd.array([[1.0], [2.0]]), shape=(2, 3))
    np.testing.assert_array_equal(explicit.asnumpy(), [[1, 1, 1], [2, 2, 2]])


@pytest.mark.parametrize("op", ["_random_uniform", "_random_normal", "_random_gamma", "_random_exponential",
                                "_random_poisson", "_random_negative_binomial",
                                "_random_generalized_negative_binomial", "_random_randint", "_full",
                                "_zeros_without_dtype", "_sample_unique_zipfian"])
def test_shape_defaults_to_unknown(op):
    args = mx.operator.get_operator_arguments(op)
    assert args.types[args.names.index("shape")] == "Shape(tuple), optional, default=None"


def test_full_without_shape_takes_the_graphs_shape():
    # MXNet's _full without a shape is sized by the graph, as a zeros_like would be; a
    # scalar shape () could not be added to a (2, 3) array
    x = mx.sym.var("x")
    y = mx.sym._internal._full(value=3.0) + x
    _, out_shapes, _ = y.infer_shape(x=(2, 3))
    assert out_shapes == [(2, 3)]
    data = np.arange(6, dtype=np.float32).reshape(2, 3)
    ex = y.bind(mx.cpu(), {"x": mx.nd.array(data)})
    np.testing.assert_array_equal(ex.forward()[0].asnumpy(), data + 3)
    z = mx.sym._internal._zeros_without_dtype() + x
    ex = z.bind(mx.cpu(), {"x": mx.nd.array(data)})
    np.testing.assert_array_equal(ex.forward()[0].asnumpy(), data)
    # with no graph to size it, the call says it cannot infer the shape, as MXNet's fails
    with pytest.raises(mx.base.MXNetError, match="_full"):
        mx.nd._internal._full(value=3.0).wait_to_read()


def test_random_without_shape_takes_the_graphs_shape():
    x = mx.sym.var("x")
    y = mx.sym._internal._random_uniform(low=2.0, high=3.0) + 0 * x
    ex = y.bind(mx.cpu(), {"x": mx.nd.zeros((4, 5))})
    out = ex.forward()[0].asnumpy()
    assert out.shape == (4, 5) and out.min() >= 2.0 and out.max() < 3.0
    assert mx.nd.random.uniform(2.0, 3.0, shape=(3,)).shape == (3,)


def test_unique_zipfian_needs_a_shape():
    with pytest.raises(mx.base.MXNetError, match="expected \\(batch_size, num_sampled\\)"):
        mx.nd._internal._sample_unique_zipfian(range_max=10)[0].wait_to_read()
    out, tries = mx.nd._internal._sample_unique_zipfian(range_max=10, shape=(2, 4))
    assert out.shape == (2, 4) and tries.shape == (2,)
    assert all(len(set(row)) == 4 for row in out.asnumpy().tolist())


# A few defaults MXNet scripts lean on, called without and with MXNet's value.

def test_pooling_softmax_topk_defaults_are_mxnets():
    x = mx.nd.array(np.random.RandomState(0).rand(1, 2, 5, 5).astype(np.float32))
    np.testing.assert_array_equal(
        mx.nd.Pooling(x, kernel=(2, 2)).asnumpy(),
        mx.nd.Pooling(x, kernel=(2, 2), pool_type="max", pooling_convention="valid", stride=(1, 1),
                      pad=(0, 0)).asnumpy())
    assert mx.nd.Pooling(x, kernel=(2, 2)).shape == (1, 2, 4, 4)
    v = mx.nd.array([[1.0, 3.0, 2.0], [0.5, 0.1, 0.2]])
    e = np.exp(v.asnumpy())
    np.testing.assert_allclose(mx.nd.softmax(v).asnumpy(), e / e.sum(axis=-1, keepdims=True), rtol=1e-6)
    np.testing.assert_array_equal(mx.nd.topk(v).asnumpy(), [[1], [0]])  # k=1, indices, descending
    np.testing.assert_array_equal(mx.nd.topk(v).asnumpy(), mx.nd.topk(v, axis=-1, k=1, ret_typ="indices").asnumpy())
