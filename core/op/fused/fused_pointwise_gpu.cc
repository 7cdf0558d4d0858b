// The GPU compute function of "_fused_pointwise" (CUDA builds only): the program becomes
// one generated kernel (fused_codegen.h), compiled by NVRTC on first use and launched on
// the worker's stream.
#ifdef WEFT_USE_CUDA

#include <cuda_runtime.h>

#include "core/base/cuda_utils.h"
#include "core/op/fused/fused_codegen.h"
#include "core/op/fused/fused_nvrtc.h"
#include "core/op/fused/fused_pointwise.h"

namespace weft {
namespace op {
namespace {

// The compute capability of device `dev` as major * 10 + minor, asked once per device.
int DeviceArch(int dev) {
  static std::mutex mu;
  static std::vector<int> archs;
  std::lock_guard<std::mutex> lock(mu);
  if (static_cast<int>(archs.size()) <= dev) archs.resize(dev + 1, 0);
  if (archs[dev] == 0) {
    Context ctx = Context::GPU(dev);
    int major = 0, minor = 0;
    WEFT_CUDA_CALL_ON(ctx, cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev));
    WEFT_CUDA_CALL_ON(ctx, cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev));
    archs[dev] = major * 10 + minor;
  }
  return archs[dev];
}

const void* KernelFor(const FusedProgram& p, const std::string& name, DType dtype, bool add_to, int arch) {
  int64_t key = (static_cast<int64_t>(arch) << 16) | (static_cast<int64_t>(dtype) << 1) | (add_to ? 1 : 0);
  std::lock_guard<std::mutex> lock(p.gpu_kernels.mu);
  for (const auto& k : p.gpu_kernels.kernels)
    if (k.first == key) return k.second;
  const void* kernel = FusedKernel(FusedCudaSource(p, dtype, add_to, name), name, arch);
  p.gpu_kernels.kernels.emplace_back(key, kernel);
  return kernel;
}

void FusedComputeGPU(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                     const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  if (req[0] == OpReq::kNullOp) return;
  WEFT_CHECK(attrs.parsed != nullptr, kUnsupported,
             "_fused_pointwise is made by the executor's fusion pass from a chain of operators; it cannot be "
             "called or composed directly");
  const FusedProgram& p = *static_cast<const FusedProgram*>(attrs.parsed.get());
  WEFT_CHECK(static_cast<int>(in.size()) == p.num_inputs, kInternal, "_fused_pointwise '", attrs.name, "': expected ",
             p.num_inputs, " inputs, got ", in.size());
  long long n = out[0].Size();
  if (n == 0) return;
  const int dev = ctx.run_ctx.ctx.dev_id;
  cuda::DeviceGuard guard(dev);
  const void* kernel = KernelFor(p, attrs.name, out[0].dtype, req[0] == OpReq::kAddTo, DeviceArch(dev));

  // The kernel's parameters in order: n, out, the inputs, the scalars (fused_codegen.h).
  void* out_ptr = out[0].dptr;
  std::vector<const void*> in_ptrs;
  for (const auto& b : in) in_ptrs.push_back(b.dptr);
  std::vector<double> scalars = FusedScalars(p);
  std::vector<void*> args{&n, &out_ptr};
  for (auto& ptr : in_ptrs) args.push_back(&ptr);
  for (auto& s : scalars) args.push_back(&s);
  const long long threads = (n + kFusedUnroll - 1) / kFusedUnroll;
  WEFT_CUDA_CALL_ON(ctx.run_ctx.ctx, cudaLaunchKernel(kernel, dim3(cuda::GridFor(threads)), dim3(cuda::kBlockThreads),
                                                      args.data(), 0, cuda::StreamOf(ctx.run_ctx.stream)));
}

}  // namespace

WEFT_REGISTER_OP(_fused_pointwise).SetAttr<FCompute>("FCompute<gpu>", FusedComputeGPU);

}  // namespace op
}  // namespace weft

#endif  // WEFT_USE_CUDA
