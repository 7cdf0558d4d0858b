"""What this build of Weft has, as MXNet 1.x's `mxnet.runtime` reports it.

    import weft as mx
    features = mx.runtime.Features()
    features.is_enabled("MKLDNN")      # True when the CPU kernels use oneDNN

The C API has no feature query, so each feature is found from what can be known for sure:
`weft/_build_info.py`, written by CMake when the library was built (the core's compile
definitions, the libraries it links and the instruction-set macros the compiler defined for
its -m options), the entry points the loaded library exports, and probes of the library.
A feature Weft has no way to have, or that nothing tells, is reported as not enabled, with
the reason beside it below.
"""
import collections
import json

from .base import _api

__all__ = ["Feature", "Features", "feature_list"]

try:
    from . import _build_info
except ImportError:  # a package assembled by hand, without CMake's file: nothing is known
    _build_info = None


# MXNet 1.9's features, in its order (the order of its libinfo enum).
_NAMES = ("CUDA", "CUDNN", "NCCL", "CUDA_RTC", "TENSORRT", "CPU_SSE", "CPU_SSE2", "CPU_SSE3",
          "CPU_SSE4_1", "CPU_SSE4_2", "CPU_SSE4A", "CPU_AVX", "CPU_AVX2", "OPENMP", "SSE", "F16C",
          "JEMALLOC", "BLAS_OPEN", "BLAS_ATLAS", "BLAS_MKL", "BLAS_APPLE", "LAPACK", "MKLDNN",
          "OPENCV", "CAFFE", "PROFILER", "DIST_KVSTORE", "CXX14", "INT64_TENSOR_SIZE",
          "SIGNAL_HANDLER", "DEBUG", "TVM_OP")


class Feature(object):
    """One compile-time feature: `name` and whether it is `enabled`."""

    __slots__ = ("_name", "_enabled")

    def __init__(self, name, enabled):
        self._name = name
        self._enabled = bool(enabled)

    @property
    def name(self):
        """The feature's name, as MXNet spells it ("CUDA", "MKLDNN", ...)."""
        return self._name

    @property
    def enabled(self):
        """Whether this build has it."""
        return self._enabled

    def __repr__(self):
        return ("\u2714 " if self._enabled else "\u2716 ") + self._name


def _defined(name):
    if _build_info is None:
        return False
    return any(d == name or d.startswith(name + "=") and d[len(name) + 1:] not in ("0", "") for d in
               _build_info.DEFINITIONS)


def _linked(*fragments):
    # Whether the core links a library whose name holds one of the fragments.
    if _build_info is None:
        return False
    libs = [lib.lower() for lib in _build_info.LINK_LIBRARIES]
    return any(f in lib for f in fragments for lib in libs)


def _isa(macro):
    return _build_info is not None and macro in _build_info.ISA_MACROS


def _int64_shapes():
    # Shapes cross the C API as int64 in every build; check that the library keeps a
    # dimension past 2^31 through shape inference (no memory is allocated for it).
    big = 3 * 2 ** 31
    sym = _api.weft_symbol_create_variable("x")
    try:
        r = json.loads(_api.weft_symbol_infer_shape(sym, json.dumps({"x": [big, 2]})))
    finally:
        _api.weft_symbol_free(sym)
    return r.get("complete") and list(r["arguments"][0]) == [big, 2]


def _detect():
    cpp_std = int(_build_info.CXX_STANDARD or 0) if _build_info is not None else 0
    found = {
        "CUDA": _defined("WEFT_USE_CUDA"),
        # CUDA builds that link cuDNN compile the core with WEFT_USE_CUDNN=1.
        "CUDNN": _defined("WEFT_USE_CUDNN") or _linked("cudnn"),
        "NCCL": _defined("WEFT_USE_NCCL"),
        # CUDA builds link NVRTC, which compiles the fused pointwise kernels at run time.
        "CUDA_RTC": _defined("WEFT_USE_CUDA") and _linked("nvrtc"),
        # No TensorRT integration exists in Weft.
        "TENSORRT": _linked("nvinfer"),
        "CPU_SSE": _isa("__SSE__"),
        "CPU_SSE2": _isa("__SSE2__"),
        "CPU_SSE3": _isa("__SSE3__"),
        "CPU_SSE4_1": _isa("__SSE4_1__"),
        "CPU_SSE4_2": _isa("__SSE4_2__"),
        "CPU_SSE4A": _isa("__SSE4A__"),
        "CPU_AVX": _isa("__AVX__"),
        "CPU_AVX2": _isa("__AVX2__"),
        "OPENMP": _build_info is not None and _build_info.OPENMP and _linked("openmp"),
        # MXNet's SSE is its SIMD code path, compiled in where the compiler targets SSE2.
        "SSE": _isa("__SSE2__"),
        "F16C": _isa("__F16C__"),
        "JEMALLOC": _linked("jemalloc"),
        # CPU GEMMs go through oneDNN, not a BLAS library: these are false unless one is
        # linked.
        "BLAS_OPEN": _linked("openblas"),
        "BLAS_ATLAS": _linked("atlas"),
        "BLAS_MKL": _linked("mkl_rt", "libmkl"),
        "BLAS_APPLE": _linked("accelerate"),
        "LAPACK": _linked("lapack"),
        "MKLDNN": _defined("WEFT_USE_ONEDNN"),
        # Images are decoded with libjpeg and libpng, not OpenCV.
        "OPENCV": _linked("opencv"),
        # Caffe plugins do not exist in Weft.
        "CAFFE": _linked("caffe"),
        # MXNet's PROFILER means the profiler API (mx.profiler) works: the C API would
        # export weft_profiler_* entry points for it.
        "PROFILER": any(n.startswith("weft_profiler") for n in dir(_api)),
        "DIST_KVSTORE": _defined("WEFT_USE_DIST"),
        "CXX14": cpp_std >= 14,
        "INT64_TENSOR_SIZE": _int64_shapes(),
        # Weft installs no handler that prints a stack trace on a crash signal; a build
        # with one would say so in its definitions.
        "SIGNAL_HANDLER": _defined("WEFT_USE_SIGNAL_HANDLER"),
        "DEBUG": _build_info is not None and _build_info.BUILD_TYPE.lower() == "debug",
        # TVM-generated operators do not exist in Weft.
        "TVM_OP": _linked("tvm"),
    }
    return [Feature(n, found[n]) for n in _NAMES]


_features = None


def feature_list():
    """The features of this build, as a list of Feature, in MXNet's order."""
    global _features  # pylint: disable=global-statement
    if _features is None:
        _features = _detect()
    return list(_features)


class Features(collections.OrderedDict):
    """The features of this build by name: Features()["CUDA"].enabled."""

    instance = None

    def __new__(cls):
        # One instance, as MXNet's: the build does not change while the process runs.
        if cls.instance is None:
            cls.instance = super(Features, cls).__new__(cls)
            super(Features, cls.instance).__init__([(f.name, f) for f in feature_list()])
        return cls.instance

    def __init__(self):  # pylint: disable=super-init-not-called
        pass

    def __repr__(self):
        return str(list(self.values()))

    def is_enabled(self, feature_name):
        """Whether the feature `feature_name` (any case) is enabled; an unknown name raises
        RuntimeError listing the known ones."""
        name = feature_name.upper()
        if name not in self:
            raise RuntimeError("Feature '{}' is unknown, known features are: {}".format(name, list(self.keys())))
        return self[name].enabled
