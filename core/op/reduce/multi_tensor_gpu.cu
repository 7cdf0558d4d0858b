// GPU versions of the multi-array helpers of mixed precision and LARS (multi_tensor.cc):
// all_finite, multi_all_finite, multi_sum_sq, multi_lars and reset_arrays. Each looks at
// all its arrays in one launch (per kMaxTensors arrays) through the multi-tensor table of
// core/op/optimizer/optimizer_gpu.cuh; nothing waits for the device.
#include <algorithm>
#include <cmath>
#include <vector>

#include "core/op/optimizer/optimizer_gpu.cuh"
#include "core/op/reduce/multi_tensor_params.h"

namespace weft {
namespace op {
namespace optim_gpu {

// The arrays must share one floating dtype (as type inference makes them).
DType CommonFloatType(const NodeAttrs& attrs, const std::vector<TBlob>& in) {
  for (size_t i = 0; i < in.size(); ++i)
    if (in[i].dtype != in[0].dtype || !IsFloatDType(in[i].dtype))
      Throw(ErrorKind::kType, "Operator '", attrs.op->name, "': expected arrays of one floating dtype, got ",
            DTypeName(in[i].dtype), " for input ", i, " and ", DTypeName(in[0].dtype), " for input 0");
  return in[0].dtype;
}

std::vector<TensorEntry> Entries(const std::vector<TBlob>& in) {
  std::vector<TensorEntry> e;
  for (size_t i = 0; i < in.size(); ++i) {
    TensorEntry t{};
    t.ptr[0] = in[i].dptr;
    t.size = in[i].Size();
    t.index = static_cast<int>(i);
    e.push_back(t);
  }
  return e;
}

// The flag is set to 1 first (when asked) by a one-thread kernel ordered before the
// check on the stream; the check then only ever writes 0, so its blocks need no order.
void AllFiniteGPU(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in, OpReq req,
                  const TBlob& out, bool init) {
  if (req == OpReq::kNullOp) return;
  const char* name = attrs.op->name.c_str();
  if (out.dtype != DType::kFloat32 || out.Size() != 1)
    Throw(ErrorKind::kShape, "Operator '", name, "': expected a float32 output of one value, got ",
          DTypeName(out.dtype), " of shape ", out.shape.ToString());
  const DType t = CommonFloatType(attrs, in);
  cuda::DeviceGuard guard(ctx.run_ctx.ctx.dev_id);
  cudaStream_t s = cuda::StreamOf(ctx.run_ctx.stream);
  float* flag = out.ptr<float>();
  if (init) ForEach(1, s, [=] __device__(int64_t) { *flag = 1.0f; }, name);
  WEFT_GPU_UPDATE_TYPE_SWITCH(t, T, name, {
    LaunchMulti<1>(Entries(in), s, [=] __device__(const Table<1>& tb, int k, int64_t i) {
      const double v = static_cast<double>(static_cast<typename AccType<T>::type>(static_cast<const T*>(tb.ptr[k][0])[i]));
      if (!isfinite(v)) *flag = 0.0f;
    }, name);
  });
}

void AllFiniteCompute(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                      const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  AllFiniteGPU(attrs, ctx, in, req[0], out[0], attrs.Params<AllFiniteParam>().init_output);
}

void MultiAllFiniteCompute(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                           const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  AllFiniteGPU(attrs, ctx, in, req[0], out[0], attrs.Params<MultiArraysParam>().init_output);
}

// multi_sum_sq: block b sums the squares of array first + b in double (as the CPU does),
// a shared-memory tree over the block's threads, and stores the float32 result as the
// request says. One block per array keeps the result free of atomics and run-to-run
// reproducible.
constexpr int kSumSqArrays = 128;
struct SumSqTable {
  const void* ptr[kSumSqArrays];
  int64_t size[kSumSqArrays];
};

template <typename T>
__global__ void __launch_bounds__(cuda::kBlockThreads) SumSqKernel(const SumSqTable t, float* y, bool add) {
  __shared__ double part[cuda::kBlockThreads];
  const T* x = static_cast<const T*>(t.ptr[blockIdx.x]);
  const int64_t n = t.size[blockIdx.x];
  double acc = 0;
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x) {
    const double v = static_cast<double>(static_cast<typename AccType<T>::type>(x[i]));
    acc += v * v;
  }
  part[threadIdx.x] = acc;
  __syncthreads();
  for (int stride = blockDim.x / 2; stride > 0; stride /= 2) {
    if (static_cast<int>(threadIdx.x) < stride) part[threadIdx.x] += part[threadIdx.x + stride];
    __syncthreads();
  }
  if (threadIdx.x == 0) {
    float* o = y + blockIdx.x;
    *o = add ? static_cast<float>(static_cast<double>(*o) + part[0]) : static_cast<float>(part[0]);
  }
}

void MultiSumSqCompute(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                       const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  if (req[0] == OpReq::kNullOp) return;
  const char* name = attrs.op->name.c_str();
  if (out[0].dtype != DType::kFloat32 || out[0].Size() != static_cast<int64_t>(in.size()))
    Throw(ErrorKind::kShape, "Operator '", name, "': expected a float32 output of ", in.size(), " values, got ",
          DTypeName(out[0].dtype), " of shape ", out[0].shape.ToString());
  const DType t = CommonFloatType(attrs, in);
  cuda::DeviceGuard guard(ctx.run_ctx.ctx.dev_id);
  cudaStream_t s = cuda::StreamOf(ctx.run_ctx.stream);
  const bool add = req[0] == OpReq::kAddTo;
  for (size_t first = 0; first < in.size(); first += kSumSqArrays) {
    SumSqTable tb{};
    const size_t count = std::min<size_t>(kSumSqArrays, in.size() - first);
    for (size_t j = 0; j < count; ++j) {
      tb.ptr[j] = in[first + j].dptr;
      tb.size[j] = in[first + j].Size();
    }
    float* y = out[0].ptr<float>() + first;
    WEFT_GPU_UPDATE_TYPE_SWITCH(t, T, name, {
      SumSqKernel<T><<<static_cast<unsigned>(count), cuda::kBlockThreads, 0, s>>>(tb, y, add);
    });
    cuda::CheckLaunch(name);
  }
}

void MultiLARSCompute(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                      const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  if (req[0] == OpReq::kNullOp) return;
  const auto& p = attrs.Params<LARSParam>();
  const char* name = attrs.op->name.c_str();
  for (size_t i = 0; i < in.size(); ++i)
    if (in[i].shape != out[0].shape || in[i].dtype != DType::kFloat32)
      Throw(ErrorKind::kShape, "Operator '", name, "': input ", i, " is ", DTypeName(in[i].dtype), " of shape ",
            in[i].shape.ToString(), " but the operator expects float32 of shape ", out[0].shape.ToString());
  if (out[0].dtype != DType::kFloat32)
    Throw(ErrorKind::kType, "Operator '", name, "': expected a float32 output, got ", DTypeName(out[0].dtype));
  cuda::DeviceGuard guard(ctx.run_ctx.ctx.dev_id);
  cudaStream_t s = cuda::StreamOf(ctx.run_ctx.stream);
  const float* lrs = in[0].ptr<float>();
  const float* wss = in[1].ptr<float>();
  const float* gss = in[2].ptr<float>();
  const float* wds = in[3].ptr<float>();
  float* y = out[0].ptr<float>();
  const double eta = p.eta, eps = p.eps, rescale = p.rescale_grad;
  const bool add = req[0] == OpReq::kAddTo;
  // The CPU's arithmetic, in double, term for term.
  ForEach(out[0].Size(), s, [=] __device__(int64_t i) {
    const double w = sqrt(static_cast<double>(wss[i]));
    const bool valid = w > 0 && gss[i] > 0;
    const double lr =
        valid ? lrs[i] * eta * w / (sqrt(static_cast<double>(gss[i])) * rescale + wds[i] * w + eps) : lrs[i];
    y[i] = add ? static_cast<float>(static_cast<double>(y[i]) + lr) : static_cast<float>(lr);
  }, name);
}

void ResetArraysCompute(const NodeAttrs&, const OpContext& ctx, const std::vector<TBlob>& in,
                        const std::vector<OpReq>&, const std::vector<TBlob>&) {
  cuda::DeviceGuard guard(ctx.run_ctx.ctx.dev_id);
  cudaStream_t s = cuda::StreamOf(ctx.run_ctx.stream);
  for (const auto& b : in) {
    const size_t bytes = static_cast<size_t>(b.Size()) * DTypeSize(b.dtype);
    if (bytes == 0) continue;
    Context c = ctx.run_ctx.ctx;
    cuda::Check(cudaMemsetAsync(b.dptr, 0, bytes, s), "cudaMemsetAsync (reset_arrays)", &c);
  }
}

}  // namespace optim_gpu

WEFT_REGISTER_OP(all_finite).SetAttr<FCompute>("FCompute<gpu>", optim_gpu::AllFiniteCompute);
WEFT_REGISTER_OP(multi_all_finite).SetAttr<FCompute>("FCompute<gpu>", optim_gpu::MultiAllFiniteCompute);
WEFT_REGISTER_OP(multi_sum_sq).SetAttr<FCompute>("FCompute<gpu>", optim_gpu::MultiSumSqCompute);
WEFT_REGISTER_OP(multi_lars).SetAttr<FCompute>("FCompute<gpu>", optim_gpu::MultiLARSCompute);
WEFT_REGISTER_OP(reset_arrays).SetAttr<FCompute>("FCompute<gpu>", optim_gpu::ResetArraysCompute);

}  // namespace op
}  // namespace weft
