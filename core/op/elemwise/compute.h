// FCompute functions of the elementwise operator families, generic in the functor: one
// line per operator registration (`UnaryCompute<exp_op>`), every dtype dispatched here.
#pragma once

#include <string>
#include <type_traits>
#include <vector>

#include "core/op/elemwise/broadcast_kernel.h"
#include "core/op/elemwise/functors.h"
#include "core/op/elemwise/kernels.h"
#include "core/op/elemwise/math.h"
#include "core/op/elemwise/scalar_param.h"
#include "core/op/registry.h"

namespace weft {
namespace op {

template <typename OP>
void UnaryCompute(const NodeAttrs&, const OpContext&, const std::vector<TBlob>& in, const std::vector<OpReq>& req,
                  const std::vector<TBlob>& out) {
  WEFT_TYPE_SWITCH(out[0].dtype, T, { UnaryMap<OP, T>(in[0].ptr<T>(), out[0].ptr<T>(), out[0].Size(), req[0]); });
}

// Two inputs of one shape.
template <typename OP>
void BinaryCompute(const NodeAttrs&, const OpContext&, const std::vector<TBlob>& in, const std::vector<OpReq>& req,
                   const std::vector<TBlob>& out) {
  WEFT_TYPE_SWITCH(out[0].dtype, T, {
    BinaryMap<OP, T>(in[0].ptr<T>(), in[1].ptr<T>(), out[0].ptr<T>(), out[0].Size(), req[0]);
  });
}

// out = OP(x, scalar); the scalar is converted to the compute type first.
template <typename OP>
void ScalarCompute(const NodeAttrs& attrs, const OpContext&, const std::vector<TBlob>& in,
                   const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  double scalar = attrs.Params<ScalarParam>().scalar;
  WEFT_TYPE_SWITCH(out[0].dtype, T, {
    ScalarRightMap<OP, T>(in[0].ptr<T>(), SaturateCast<ComputeT<T>>(scalar), out[0].ptr<T>(), out[0].Size(), req[0]);
  });
}

template <typename OP>
void BroadcastCompute(const NodeAttrs&, const OpContext&, const std::vector<TBlob>& in,
                      const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  WEFT_TYPE_SWITCH(out[0].dtype, T, { BroadcastMap<OP, T>(in[0], in[1], out[0], req[0]); });
}

// The FPointwise attribute of an elementwise operator: kind 0 unary, 1 binary, 2 with a
// scalar. The same functor and compute type as the operator's own kernel, so a fused
// chain gives the unfused results.
enum class PointwiseKind { kUnary, kBinary, kScalar };

template <typename OP, PointwiseKind kKind>
struct PointwiseTile {
  template <typename T>
  static void Run(const T* a, const T* b, double s, T* out, int64_t n) {
    if constexpr (kKind == PointwiseKind::kUnary) {
      (void)b, (void)s;
#pragma omp simd
      for (int64_t k = 0; k < n; ++k) out[k] = OP::Map(a[k]);
    } else if constexpr (kKind == PointwiseKind::kBinary) {
      (void)s;
#pragma omp simd
      for (int64_t k = 0; k < n; ++k) out[k] = OP::Map(a[k], b[k]);
    } else {
      (void)b;
      T scalar = SaturateCast<T>(s);
#pragma omp simd
      for (int64_t k = 0; k < n; ++k) out[k] = OP::Map(a[k], scalar);
    }
  }
  static double Scalar(const NodeAttrs& attrs) { return attrs.Params<ScalarParam>().scalar; }
  static PointwiseFn Fn() {
    PointwiseFn f;
    f.f32 = &Run<float>;
    f.f64 = &Run<double>;
    if constexpr (kKind == PointwiseKind::kScalar) f.scalar = &Scalar;
    return f;
  }
};

// The FPointwiseCuda attribute beside FPointwise: the functor's kCuda (functors.h), with the
// arguments swapped for Reversed<OP>; empty for a functor without one.
template <typename OP, typename = void>
struct CudaBodyOf {
  static std::string Get() { return {}; }
};
template <typename OP>
struct CudaBodyOf<OP, std::void_t<decltype(OP::kCuda)>> {
  static std::string Get() { return OP::kCuda; }
};
template <typename OP>
struct CudaBodyOf<Reversed<OP>> {
  static std::string Get() {
    std::string body = CudaBodyOf<OP>::Get();
    return body.empty() ? body : "T swapped_ = a; a = b; b = swapped_; " + body;
  }
};

}  // namespace op
}  // namespace weft
