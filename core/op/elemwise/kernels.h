// CPU loops of the elementwise operators, generic in the functor (functors.h): out = OP(x),
// OP(a, b), OP(a, s) or OP(s, b) over contiguous arrays, honouring the write request.
//
// Each loop is a `#pragma omp simd` run over a contiguous range; ranges are spread over
// OpenMP threads only past kElemGrain elements, because waking the thread team costs
// microseconds while a small array takes nanoseconds. Values are loaded as the compute
// type (float for float16 and bfloat16), computed and stored back once.
#pragma once

#include <cstdint>
#include <type_traits>

#include "core/base/dtype.h"
#include "core/op/op_util.h"
#include "core/op/registry.h"

namespace weft {
namespace op {

template <typename T>
using ComputeT = typename AccType<T>::type;

// out[k] = value(k) for k in [0, n), or out[k] += value(k) for kAddTo. kNullOp is the
// caller's business.
template <typename T, typename F>
inline void StoreRun(T* out, int64_t n, OpReq req, F&& value) {
  using A = ComputeT<T>;
  if (req == OpReq::kAddTo) {
#pragma omp simd
    for (int64_t k = 0; k < n; ++k) out[k] = static_cast<T>(static_cast<A>(out[k]) + value(k));
  } else {
#pragma omp simd
    for (int64_t k = 0; k < n; ++k) out[k] = static_cast<T>(value(k));
  }
}

// out = OP(x) over n elements.
template <typename OP, typename T>
void UnaryMap(const T* x, T* out, int64_t n, OpReq req) {
  using A = ComputeT<T>;
  if (req == OpReq::kNullOp) return;
  ParallelFor(n, kElemGrain, [&](int64_t begin, int64_t end) {
    const T* xb = x + begin;
    StoreRun(out + begin, end - begin, req, [&](int64_t k) { return OP::Map(static_cast<A>(xb[k])); });
  });
}

// Element k of p as the compute type A. A bool element is read by its byte: memory no
// kernel wrote (raw host bytes, an array nothing has filled yet) may hold values other than
// 0 and 1, and loading those as bool is undefined.
template <typename A, typename T>
inline A LoadAs(const T* p, int64_t k) {
  if constexpr (std::is_same_v<T, bool>) {
    return static_cast<A>(reinterpret_cast<const unsigned char*>(p)[k] != 0);
  } else {
    return static_cast<A>(p[k]);
  }
}

// out = OP(a, b) over n elements.
template <typename OP, typename T>
void BinaryMap(const T* a, const T* b, T* out, int64_t n, OpReq req) {
  using A = ComputeT<T>;
  if (req == OpReq::kNullOp) return;
  ParallelFor(n, kElemGrain, [&](int64_t begin, int64_t end) {
    const T* ab = a + begin;
    const T* bb = b + begin;
    StoreRun(out + begin, end - begin, req,
             [&](int64_t k) { return OP::Map(LoadAs<A>(ab, k), LoadAs<A>(bb, k)); });
  });
}

// out = OP(a, s): a scalar (or a size-1 array) on the right.
template <typename OP, typename T>
void ScalarRightMap(const T* a, ComputeT<T> s, T* out, int64_t n, OpReq req) {
  using A = ComputeT<T>;
  if (req == OpReq::kNullOp) return;
  ParallelFor(n, kElemGrain, [&](int64_t begin, int64_t end) {
    const T* ab = a + begin;
    StoreRun(out + begin, end - begin, req, [&](int64_t k) { return OP::Map(static_cast<A>(ab[k]), s); });
  });
}

// out = OP(s, b): a size-1 array on the left.
template <typename OP, typename T>
void ScalarLeftMap(ComputeT<T> s, const T* b, T* out, int64_t n, OpReq req) {
  using A = ComputeT<T>;
  if (req == OpReq::kNullOp) return;
  ParallelFor(n, kElemGrain, [&](int64_t begin, int64_t end) {
    const T* bb = b + begin;
    StoreRun(out + begin, end - begin, req, [&](int64_t k) { return OP::Map(s, static_cast<A>(bb[k])); });
  });
}

}  // namespace op
}  // namespace weft
