// GPU version of _shuffle (shuffle.cc): the same permutation of the rows for the same seed.
// One thread draws it with sampler.h's ShufflePermutation from the one counter the CPU
// reserves (Fisher-Yates is sequential: this costs O(rows) on one thread, small next to the
// copy for arrays of many elements per row), then every element is gathered from its row's
// source. In place, the input is first copied into temporary space, as the CPU copies it.
#include <cstdint>

#include "core/base/convert.h"
#include "core/op/elemwise/elemwise_kernels.cuh"
#include "core/op/random/sampler.h"
#include "core/resource/resource.h"

namespace weft {
namespace op {
namespace {

struct PermutationFn {
  Philox4x32 gen;
  uint64_t first;
  int64_t* perm;
  int64_t rows;
  __device__ void operator()(int64_t) const {
    for (int64_t r = 0; r < rows; ++r) perm[r] = r;
    random::ElementStream s(gen, first);
    random::ShufflePermutation(s, perm, rows);
  }
};

// y[r, j] = x[perm[r], j], moving elements as words of the dtype's size.
template <typename U>
struct GatherRowsFn {
  const U* x;
  const int64_t* perm;
  int64_t row_size;
  U* y;
  __device__ void operator()(int64_t i) const {
    const int64_t r = i / row_size;
    y[i] = x[perm[r] * row_size + (i - r * row_size)];
  }
};

// y[r, j] += x[perm[r], j] in the dtype's accumulation type, as the CPU's Store adds.
template <typename T>
struct GatherRowsAddFn {
  const T* x;
  const int64_t* perm;
  int64_t row_size;
  T* y;
  __device__ void operator()(int64_t i) const {
    using A = typename AccType<T>::type;
    const int64_t r = i / row_size;
    y[i] = ConvertValue<T>(static_cast<A>(y[i]) + static_cast<A>(x[perm[r] * row_size + (i - r * row_size)]));
  }
};

void ShuffleGPU(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  if (req[0] == OpReq::kNullOp) return;
  const char* name = attrs.op->name.c_str();
  const TBlob& x = in[0];
  if (out[0].Size() != x.Size() || out[0].dtype != x.dtype)
    Throw(ErrorKind::kShape, "Operator '", name, "': output: expected ", DTypeName(x.dtype), " of shape ",
          x.shape.ToString(), ", got ", DTypeName(out[0].dtype), " of shape ", out[0].shape.ToString());
  // A 0-d array is a single row.
  const int64_t rows = x.shape.ndim() == 0 ? 1 : x.shape[0];
  if (rows == 0 || x.Size() == 0) return;
  const int64_t n = x.Size();
  const int64_t row_size = n / rows;
  const random::Draw draw = random::Reserve(attrs, ctx, 1);
  WEFT_CHECK(ctx.requested.size() > 1 && ctx.requested[1].temp != nullptr, kInternal, "Operator '", name,
             "': expected a temporary-space resource, got none (FResourceRequest not honoured)");
  cuda::DeviceGuard guard(ctx.run_ctx.ctx.dev_id);
  cudaStream_t s = cuda::StreamOf(ctx.run_ctx.stream);
  const bool in_place = x.dptr == out[0].dptr;
  const size_t bytes = static_cast<size_t>(n) * DTypeSize(x.dtype);
  // The permutation, then (in place) the copy of the input, 256-byte aligned.
  const size_t perm_bytes = (sizeof(int64_t) * static_cast<size_t>(rows) + 255) / 256 * 256;
  char* tmp = static_cast<char*>(ctx.requested[1].temp->Get(perm_bytes + (in_place ? bytes : 0)));
  int64_t* perm = reinterpret_cast<int64_t*>(tmp);
  cuda::ForEach(1, s, PermutationFn{draw.gen, draw.first, perm, rows}, name);
  const void* src = x.dptr;
  if (in_place) {
    cuda::Check(cudaMemcpyAsync(tmp + perm_bytes, x.dptr, bytes, cudaMemcpyDeviceToDevice, s), "cudaMemcpyAsync");
    src = tmp + perm_bytes;
  }
  if (req[0] == OpReq::kAddTo) {
    WEFT_TYPE_SWITCH(x.dtype, T, {
      cuda::ForEach(n, s, GatherRowsAddFn<T>{static_cast<const T*>(src), perm, row_size, out[0].ptr<T>()}, name);
    });
    return;
  }
  switch (DTypeSize(x.dtype)) {
    case 1:
      cuda::ForEach(n, s, GatherRowsFn<uint8_t>{static_cast<const uint8_t*>(src), perm, row_size,
                                                static_cast<uint8_t*>(out[0].dptr)}, name);
      break;
    case 2:
      cuda::ForEach(n, s, GatherRowsFn<uint16_t>{static_cast<const uint16_t*>(src), perm, row_size,
                                                 static_cast<uint16_t*>(out[0].dptr)}, name);
      break;
    case 4:
      cuda::ForEach(n, s, GatherRowsFn<uint32_t>{static_cast<const uint32_t*>(src), perm, row_size,
                                                 static_cast<uint32_t*>(out[0].dptr)}, name);
      break;
    case 8:
      cuda::ForEach(n, s, GatherRowsFn<uint64_t>{static_cast<const uint64_t*>(src), perm, row_size,
                                                 static_cast<uint64_t*>(out[0].dptr)}, name);
      break;
    default:
      Throw(ErrorKind::kUnsupported, "Operator '", name, "': on GPUs, unsupported dtype ", DTypeName(x.dtype));
  }
}

}  // namespace

WEFT_REGISTER_OP(_shuffle).SetAttr<FCompute>("FCompute<gpu>", ShuffleGPU);

}  // namespace op
}  // namespace weft
