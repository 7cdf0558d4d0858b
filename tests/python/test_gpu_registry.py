"""Every operator with GPU code is checked against the CPU by some GPU test module.

Each tests/python/test_gpu_*.py module names the operators (forward and `_backward_*`) its
CPU-against-GPU tests cover in a module-level GPU_OPS set. This test fails when an
operator has GPU code but is in no module's set, and prints how much of issue 20's list
of training operators has GPU code.

Which operators have GPU code: in a CUDA build, the registry says
(weft.operator._gpu_operators(), from weft_op_get_has_gpu). A build without CUDA registers
no GPU code, so there the sources say: every WEFT_REGISTER_OP(name) chain that sets an
attribute "...<gpu>", and every use of a macro whose definition sets one. Either way the
test runs, and means something, on a machine without a GPU.
"""
import glob
import importlib
import os
import re
import sys

import weft as mx
from weft.base import _api

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))

# Issue 20's operators of a real training loop (forward names; their gradients are
# covered by the modules' GPU_OPS like any other operator).
TRAINING_OPS = (
    "Convolution", "Deconvolution", "BatchNorm", "Pooling", "Activation", "LeakyReLU", "FullyConnected",
    "softmax", "log_softmax", "SoftmaxOutput", "LinearRegressionOutput", "LogisticRegressionOutput",
    "MAERegressionOutput", "softmax_cross_entropy", "pick", "Dropout", "Embedding", "take", "LayerNorm",
    "GroupNorm", "InstanceNorm", "Concat", "split", "slice", "slice_axis", "transpose", "where", "clip",
    "argmax", "one_hot", "topk", "Flatten", "Reshape", "expand_dims", "Cast", "_random_uniform",
    "_random_normal", "RNN", "sgd_update", "sgd_mom_update", "mp_sgd_update", "mp_sgd_mom_update",
    "nag_mom_update", "mp_nag_mom_update", "adam_update", "_adamw_update", "_mp_adamw_update", "rmsprop_update",
    "adagrad_update", "lamb_update_phase1", "lamb_update_phase2", "mp_lamb_update_phase1",
    "mp_lamb_update_phase2", "multi_sgd_update", "multi_sgd_mom_update", "multi_mp_sgd_update",
    "multi_mp_sgd_mom_update",
)


def _gpu_test_modules():
    mods = []
    sys.path.insert(0, HERE)
    try:
        for path in sorted(glob.glob(os.path.join(HERE, "test_gpu_*.py"))):
            name = os.path.splitext(os.path.basename(path))[0]
            if name == "test_gpu_registry":
                continue
            mods.append(importlib.import_module(name))
    finally:
        sys.path.remove(HERE)
    return mods


def _registered(name):
    try:
        _api.weft_op_get(name)
        return True
    except mx.base.MXNetError:
        return False


def _canonical(name):
    return _api.weft_op_get_name(_api.weft_op_get(name))


def _gpu_ops_from_sources():
    sources = []
    for ext in ("cc", "cu", "cuh", "h"):
        sources += glob.glob(os.path.join(REPO, "core", "**", "*." + ext), recursive=True)
    texts = {}
    for path in sources:
        with open(path, encoding="utf-8", errors="replace") as f:
            texts[path] = f.read()
    # Macros whose definition (continued lines included) sets a "...<gpu>" attribute.
    define = re.compile(r"^[ \t]*#[ \t]*define[ \t]+(\w+)\(((?:[^\n\\]|\\\n)*)", re.M)
    gpu_macros = {m.group(1) for t in texts.values() for m in define.finditer(t) if '<gpu>"' in m.group(2)}
    chain = re.compile(r"WEFT_REGISTER_OP\((\w+)\)((?:(?!WEFT_REGISTER_OP)[^;])*);")
    names = set()
    for path, text in texts.items():
        for m in chain.finditer(text):
            if '<gpu>"' in m.group(2):
                names.add(m.group(1))
        for macro in gpu_macros:
            for m in re.finditer(r"(?<![\w#])" + macro + r"\(\s*(\w+)\s*[,)]", text):
                names.add(m.group(1))
    return {n for n in names if _registered(n)}


def _operators_with_gpu_code():
    found = set(mx.operator._gpu_operators())
    if not mx.runtime.Features().is_enabled("CUDA"):
        found |= _gpu_ops_from_sources()
    return {_canonical(n) for n in found}


def _print_training_coverage(gpu_ops):
    registered = [n for n in TRAINING_OPS if _registered(n)]
    not_registered = [n for n in TRAINING_OPS if not _registered(n)]
    lacking = [n for n in registered if _canonical(n) not in gpu_ops]
    print("\nGPU coverage of issue 20's training operators: %d of %d have GPU code"
          % (len(registered) - len(lacking), len(registered)))
    print("  without GPU code: " + (", ".join(lacking) if lacking else "none"))
    if not_registered:
        print("  not registered in this build: " + ", ".join(not_registered))


def test_every_gpu_operator_has_a_consistency_test():
    modules = _gpu_test_modules()
    assert modules, "no tests/python/test_gpu_*.py module found"
    covered = set()
    unknown = []
    for mod in modules:
        ops = getattr(mod, "GPU_OPS", None)
        assert isinstance(ops, (set, frozenset)), "%s has no module-level GPU_OPS set" % mod.__name__
        for name in ops:
            if _registered(name):
                covered.add(_canonical(name))
            else:
                unknown.append("%s (in %s)" % (name, mod.__name__))
    assert not unknown, "GPU_OPS names operators that are not registered: " + ", ".join(sorted(unknown))
    gpu_ops = _operators_with_gpu_code()
    _print_training_coverage(gpu_ops)
    missing = sorted(gpu_ops - covered)
    assert not missing, ("%d operator(s) have GPU code but no CPU-against-GPU test (add them to a "
                         "tests/python/test_gpu_*.py module's GPU_OPS with tests): %s"
                         % (len(missing), ", ".join(missing)))
