// The kernel that sums several arrays on one GPU for the "device" store: it reads up to
// kMaxInputs sources per pass, so each element of the result is written once per pass
// instead of once per source.
// (Only the base headers here: device_comm.h, which declares LaunchSum, brings in the
// NDArray, which nvcc need not see.)
#include <algorithm>
#include <vector>

#include "core/base/cuda_utils.h"
#include "core/base/dtype.h"

namespace weft {
namespace kvstore {
namespace {

constexpr int kMaxInputs = 8;

template <typename T>
struct Inputs {
  const T* p[kMaxInputs];
  int count;
};

// out[i] = (accumulate ? out[i] : 0) + sum of in.p[k][i], summed in the accumulation type.
template <typename T>
__global__ void SumKernel(Inputs<T> in, T* __restrict__ out, int64_t n, bool accumulate) {
  using A = typename AccType<T>::type;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(blockDim.x) * gridDim.x) {
    A s = accumulate ? static_cast<A>(out[i]) : A(0);
    for (int k = 0; k < in.count; ++k) s += static_cast<A>(in.p[k][i]);
    out[i] = static_cast<T>(s);
  }
}

template <typename T>
void LaunchSum(const std::vector<const void*>& srcs, void* out, int64_t n, cudaStream_t stream) {
  for (size_t first = 0; first < srcs.size(); first += kMaxInputs) {
    Inputs<T> in;
    in.count = static_cast<int>(std::min<size_t>(kMaxInputs, srcs.size() - first));
    for (int k = 0; k < in.count; ++k) in.p[k] = static_cast<const T*>(srcs[first + k]);
    SumKernel<T><<<cuda::GridFor(n), cuda::kBlockThreads, 0, stream>>>(in, static_cast<T*>(out), n, first > 0);
    cuda::CheckLaunch("the kvstore device reduce");
  }
}

}  // namespace

void LaunchSum(const std::vector<const void*>& srcs, void* out, int64_t n, DType dtype, void* stream) {
  WEFT_CHECK(dtype != DType::kBool, kType, "kvstore: cannot sum bool arrays");
  WEFT_TYPE_SWITCH(dtype, T, { LaunchSum<T>(srcs, out, n, cuda::StreamOf(stream)); });
}

}  // namespace kvstore
}  // namespace weft
