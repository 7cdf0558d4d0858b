#include "core/op/fused/fused_codegen.h"

#include <functional>
#include <sstream>

#include "core/base/error.h"
#include "core/op/elemwise/math.h"

namespace weft {
namespace op {
namespace {

// The device side of core/op/elemwise/math.h: the `math::` overloads the functors' kCuda
// bodies call, for float and double, mapped onto CUDA's math library (which NVRTC provides
// without includes). T is the element type of the kernel. erfinv and lgamma, which the host
// computes its own way, are plain CUDA calls here.
#define WEFT_DEVICE_UNARY(name, float_fn, double_fn)                                             \
  "__device__ __forceinline__ float " #name "(float x) { return ::" #float_fn "(x); }\n"       \
  "__device__ __forceinline__ double " #name "(double x) { return ::" #double_fn "(x); }\n"
#define WEFT_DEVICE_BINARY(name, float_fn, double_fn)                                                     \
  "__device__ __forceinline__ float " #name "(float x, float y) { return ::" #float_fn "(x, y); }\n"     \
  "__device__ __forceinline__ double " #name "(double x, double y) { return ::" #double_fn "(x, y); }\n"
constexpr const char* kPrelude =
    "namespace weft_fused {\n"
    "typedef WEFT_FUSED_T T;\n"
    "namespace math {\n"
    "constexpr double kPi = 3.14159265358979323846;\n"
    WEFT_MATH_FUNCTIONS(WEFT_DEVICE_UNARY, WEFT_DEVICE_BINARY)
    WEFT_DEVICE_UNARY(erfinv, erfinvf, erfinv)
    WEFT_DEVICE_UNARY(lgamma, lgammaf, lgamma)
    "}  // namespace math\n";
#undef WEFT_DEVICE_UNARY
#undef WEFT_DEVICE_BINARY

bool HasScalar(const FusedProgram::Step& s) { return !s.binary && s.fn.scalar != nullptr; }

}  // namespace

std::vector<double> FusedScalars(const FusedProgram& program) {
  std::vector<double> scalars;
  for (const auto& s : program.steps)
    if (HasScalar(s)) scalars.push_back(s.scalar);
  return scalars;
}

std::string FusedCudaSource(const FusedProgram& program, DType dtype, bool add_to, const std::string& name) {
  WEFT_CHECK(dtype == DType::kFloat32 || dtype == DType::kFloat64, kType, "_fused_pointwise '", name,
             "': GPU kernels are generated for float32 and float64, got ", DTypeName(dtype));
  WEFT_CHECK(!program.steps.empty(), kInternal, "_fused_pointwise '", name, "': the program has no steps");
  // The node's name stays out of the source (NVRTC's messages get it as the file name), so
  // that chains of the same operators share one compiled kernel.
  std::ostringstream src;
  src << "#define WEFT_FUSED_T " << (dtype == DType::kFloat32 ? "float" : "double") << "\n" << kPrelude;
  for (size_t i = 0; i < program.steps.size(); ++i) {
    const auto& s = program.steps[i];
    WEFT_CHECK(!s.cuda.empty(), kUnsupported, "_fused_pointwise '", name, "': step ", i, " (operator ",
               s.op.empty() ? std::string("?") : s.op, ") has no CUDA code (FPointwiseCuda), so the chain cannot run on a GPU");
    src << "// step " << i << ": " << s.op << "\n";
    src << "__device__ __forceinline__ T step" << i << "(T a, T b) { " << s.cuda << " }\n";
  }
  src << "}  // namespace weft_fused\n\n";

  src << "extern \"C\" __global__ void " << kFusedKernelName << "(long long n, weft_fused::T* out";
  for (int k = 0; k < program.num_inputs; ++k) src << ", const weft_fused::T* in" << k;
  for (size_t i = 0; i < program.steps.size(); ++i)
    if (HasScalar(program.steps[i])) src << ", double s" << i;
  src << ") {\n";
  src << "  typedef weft_fused::T T;\n";
  src << "  const long long stride = (long long)gridDim.x * blockDim.x;\n";
  src << "  long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;\n";
  // The steps of one element: it reads input k as `input(k)`, names its values
  // v<step><suffix> and writes its result to out[index].
  auto element = [&](const std::function<std::string(int)>& input, const std::string& suffix,
                     const std::string& index, const char* indent) {
    auto value = [&](const FusedProgram::Ref& r, size_t step) {
      if (r.input) {
        WEFT_CHECK(r.index >= 0 && r.index < program.num_inputs, kInternal, "_fused_pointwise '", name, "': step ",
                   step, " reads input ", r.index, " of ", program.num_inputs);
        return input(r.index);
      }
      WEFT_CHECK(r.index >= 0 && static_cast<size_t>(r.index) < step, kInternal, "_fused_pointwise '", name,
                 "': step ", step, " reads the result of step ", r.index);
      return "v" + std::to_string(r.index) + suffix;
    };
    for (size_t i = 0; i < program.steps.size(); ++i) {
      const auto& s = program.steps[i];
      std::string b = s.binary ? value(s.b, i) : HasScalar(s) ? "T(s" + std::to_string(i) + ")" : "T(0)";
      src << indent << "const T v" << i << suffix << " = weft_fused::step" << i << "(" << value(s.a, i) << ", " << b
          << ");\n";
    }
    src << indent << "out[" << index << "] " << (add_to ? "+=" : "=") << " v" << program.steps.size() - 1 << suffix
        << ";\n";
  };
  // kFusedUnroll elements a stride apart per pass, every load issued before the first
  // store: a thread then keeps that many elements' bytes in flight, which large arrays need
  // to come near the memory's bandwidth (the compiler cannot hoist the loads itself, since
  // the output may alias an input; the elements' indices differ, so loading first is safe).
  const int u_max = kFusedUnroll;
  auto at = [](int u) { return u == 0 ? std::string("i") : "i + " + std::to_string(u) + " * stride"; };
  src << "  for (; i + " << u_max - 1 << " * stride < n; i += " << u_max << " * stride) {\n";
  for (int u = 0; u < u_max; ++u)
    for (int k = 0; k < program.num_inputs; ++k)
      src << "    const T x" << k << "_" << u << " = in" << k << "[" << at(u) << "];\n";
  for (int u = 0; u < u_max; ++u)
    element([&](int k) { return "x" + std::to_string(k) + "_" + std::to_string(u); }, "_" + std::to_string(u), at(u),
            "    ");
  src << "  }\n";
  // The rest, one element per pass.
  src << "  for (; i < n; i += stride) {\n";
  element([](int k) { return "in" + std::to_string(k) + "[i]"; }, "", "i", "    ");
  src << "  }\n}\n";
  return src.str();
}

}  // namespace op
}  // namespace weft
