// _shuffle (MXNet 1.x): a random permutation of the input along its first axis; each row
// (the sub-array at one first-axis index) moves whole.
#include <cstring>
#include <numeric>
#include <vector>

#include "core/op/op_util.h"
#include "core/op/random/sampler.h"

namespace weft {
namespace op {
namespace {

bool ShuffleType(const NodeAttrs& attrs, std::vector<DType>* in, std::vector<DType>* out) {
  AssignType(attrs, out, 0, (*in)[0], "output");
  AssignType(attrs, in, 0, (*out)[0], "input");
  return (*in)[0] != DType::kUnknown;
}

void ShuffleCompute(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                    const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  if (req[0] == OpReq::kNullOp) return;
  const TBlob& x = in[0];
  // A 0-d array is a single row.
  const int64_t rows = x.shape.ndim() == 0 ? 1 : x.shape[0];
  if (rows == 0 || x.Size() == 0) return;
  const int64_t row_size = x.Size() / rows;

  // One counter, the permutation sampler.h shares with the GPU kernel (shuffle_gpu.cu).
  std::vector<int64_t> perm(static_cast<size_t>(rows));
  std::iota(perm.begin(), perm.end(), int64_t{0});
  random::ElementStream s = random::Reserve(attrs, ctx, 1).Stream(0);
  random::ShufflePermutation(s, perm.data(), rows);

  const size_t row_bytes = static_cast<size_t>(row_size) * DTypeSize(x.dtype);
  // In place, rows would overwrite ones not yet moved: read from a copy.
  std::vector<char> copy;
  const char* src = static_cast<const char*>(x.dptr);
  if (x.dptr == out[0].dptr) {
    copy.assign(src, src + static_cast<size_t>(rows) * row_bytes);
    src = copy.data();
  }
  if (req[0] == OpReq::kAddTo) {
    WEFT_TYPE_SWITCH(x.dtype, T, {
      const T* xs = reinterpret_cast<const T*>(src);
      T* y = out[0].ptr<T>();
      ParallelFor(rows, std::max<int64_t>(1, kElemGrain / row_size), [&](int64_t b, int64_t e) {
        for (int64_t r = b; r < e; ++r)
          for (int64_t j = 0; j < row_size; ++j)
            Store(y + r * row_size + j, req[0], static_cast<AccType<T>::type>(xs[perm[r] * row_size + j]));
      });
    });
    return;
  }
  char* dst = static_cast<char*>(out[0].dptr);
  ParallelFor(rows, std::max<int64_t>(1, kElemGrain / row_size), [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r) std::memcpy(dst + r * row_bytes, src + perm[r] * row_bytes, row_bytes);
  });
}

}  // namespace

WEFT_REGISTER_OP(_shuffle)
    .AddAlias("shuffle")
    .Describe("Randomly permutes the input along its first axis; rows move whole.")
    .SetNumInputs(1)
    .AddArgument("data", "NDArray-or-Symbol", "The array to shuffle")
    .SetAttr<FInferShape>("FInferShape", SameShape)
    .SetAttr<FInferType>("FInferType", ShuffleType)
    // Temporary space for the GPU's permutation and in-place copy (the CPU uses vectors).
    .SetAttr<FResourceRequest>("FResourceRequest",
                               [](const NodeAttrs&) {
                                 return std::vector<ResourceRequest>{{ResourceType::kRandom},
                                                                     {ResourceType::kTempSpace}};
                               })
    .SetAttr<TOpPattern>("TOpPattern", OpPattern::kOpaque)
    .SetAttr<FCompute>("FCompute<cpu>", ShuffleCompute);

}  // namespace op
}  // namespace weft
